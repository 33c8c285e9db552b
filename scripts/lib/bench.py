#!/usr/bin/env python3
"""The driver behind scripts/bench: starts the servers, runs the cases, prints a table, writes a JSON report.

Run it through scripts/bench, which installs the tools, builds the release binaries and passes their paths.
Every process this driver starts is recorded (PID and executable) in <work>/pids, and stopped by PID when the
driver ends, whether it finished, failed or was interrupted; scripts/bench's trap uses the same file as a
second line of defence. Every load is bounded: wrk and h2load's timed runs by -d / -D, downloads and h2load's
counted runs by --max-time or a subprocess timeout.

Comparisons are run as interleaved pairs (A B A B ...) after one warm-up pair; the table shows each side's
median and the median of the per-pair ratios, so drift in machine load during the run hits both sides alike.
"""

import argparse
import datetime
import hashlib
import json
import os
import random
import re
import resource
import selectors
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import time
import urllib.request

GIB = 1 << 30
MIB = 1 << 20
KIB = 1 << 10
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


def log(message):
    print(f"bench: {message}", file=sys.stderr, flush=True)


# MARK: - Processes


class Processes:
    """Every process the driver started, stopped by PID only."""

    def __init__(self, pid_file):
        self.pid_file = pid_file
        self.running = {}  # pid -> Popen

    def start(self, command, **kwargs):
        process = subprocess.Popen(command, **kwargs)
        self.running[process.pid] = process
        self._write()
        return process

    def forget(self, process):
        self.running.pop(process.pid, None)
        self._write()

    def stop(self, process, sig=signal.SIGTERM, grace=5.0):
        if process.poll() is None:
            try:
                os.kill(process.pid, sig)
            except ProcessLookupError:
                pass
            try:
                process.wait(timeout=grace)
            except subprocess.TimeoutExpired:
                os.kill(process.pid, signal.SIGKILL)
                process.wait(timeout=10)
        self.forget(process)

    def stop_all(self):
        for process in list(self.running.values()):
            try:
                self.stop(process)
            except Exception as error:  # keep stopping the others
                log(f"could not stop PID {process.pid}: {error}")

    def _write(self):
        lines = []
        for pid in self.running:
            try:
                lines.append(f"{pid} {os.readlink(f'/proc/{pid}/exe')}\n")
            except OSError:
                lines.append(f"{pid} ?\n")
        with open(self.pid_file + ".tmp", "w") as file:
            file.writelines(lines)
        os.replace(self.pid_file + ".tmp", self.pid_file)


def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def wait_for_port(port, process, timeout=20.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"server exited with {process.returncode} before listening on {port}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError(f"nothing listening on {port} after {timeout}s")


def cpu_seconds(pid):
    """utime + stime of a process (all its threads), from /proc/PID/stat."""
    with open(f"/proc/{pid}/stat") as file:
        fields = file.read().rsplit(")", 1)[1].split()
    # After the command name: state is field 3, utime 14, stime 15 (1-based in proc(5)).
    return (int(fields[11]) + int(fields[12])) / CLOCK_TICKS


def threads_cpu_seconds(pid):
    """Nanosecond-precise CPU time of a process's live threads (/proc/PID/task/*/schedstat), where the 10 ms ticks
    of /proc/PID/stat are too coarse (a round of case 6 costs the server about 0.1 s)."""
    total = 0
    for task in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{task}/schedstat") as file:
                total += int(file.read().split()[0])
        except OSError:
            pass
    return total / 1e9


def tree_cpu_seconds(pid):
    """CPU seconds of a process and its direct children (nginx's master and its workers)."""
    total = cpu_seconds(pid)
    for child in child_pids(pid):
        try:
            total += cpu_seconds(child)
        except OSError:
            pass
    return total


def peak_rss_kib(pid):
    with open(f"/proc/{pid}/status") as file:
        for line in file:
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    return 0


# MARK: - Statistics


def median(values):
    return statistics.median(values) if values else float("nan")


def pair_ratios(a_values, b_values):
    return [a / b for a, b in zip(a_values, b_values) if b]


# MARK: - The bench


class Bench:
    def __init__(self, options):
        self.options = options
        self.repo = options.repo
        self.work = os.path.abspath(options.work)
        # Fixtures are shared between runs (the 1 GiB file takes a while to write); everything else is per run.
        self.files = os.path.abspath(options.files)
        self.big = os.path.join(self.files, "big.bin")
        self.processes = Processes(os.path.join(self.work, "pids"))
        self.results = []
        self.pairs = options.pairs or (3 if options.quick else 5)
        self.load_seconds = options.duration or (5 if options.quick else 20)
        self.random = random.Random(options.seed)
        self.load_samples = []

    # MARK: fixtures

    def prepare_files(self, need_small):
        os.makedirs(self.files, exist_ok=True)
        if not os.path.exists(self.big) or os.path.getsize(self.big) != GIB:
            log("writing the 1 GiB fixture (random bytes)")
            temporary = self.big + f".tmp{os.getpid()}"
            with open(temporary, "wb") as file:
                block = os.urandom(4 * MIB)
                for index in range(GIB // len(block)):
                    # Vary each block a little so no two 4 MiB blocks are equal.
                    file.write(index.to_bytes(8, "little") + block[8:])
            os.replace(temporary, self.big)
        if need_small:
            small = os.path.join(self.files, "small")
            os.makedirs(small, exist_ok=True)
            for index in range(500):
                path = os.path.join(small, f"f{index:03d}.bin")
                if not os.path.exists(path) or os.path.getsize(path) != 256 * KIB:
                    with open(path + f".tmp{os.getpid()}", "wb") as file:
                        file.write(os.urandom(256 * KIB))
                    os.replace(path + f".tmp{os.getpid()}", path)
        self.warm_cache(self.big)

    def warm_cache(self, path):
        with open(path, "rb", buffering=0) as file:
            buffer = bytearray(8 * MIB)
            while file.readinto(buffer):
                pass

    def sample_load(self, label):
        """Records the load average and other engineers' compiler processes, for the report's honesty note."""
        with open("/proc/loadavg") as file:
            load = file.read().split()[:3]
        compilers = 0
        for entry in os.listdir("/proc"):
            if not entry.isdigit():
                continue
            try:
                with open(f"/proc/{entry}/comm") as file:
                    name = file.read().strip()
            except OSError:
                continue
            if name.startswith(("swift-frontend", "swift-build", "swiftc", "clang", "ld")):
                compilers += 1
        self.load_samples.append({"at": label, "loadavg": [float(x) for x in load], "compilerProcesses": compilers})

    # MARK: servers

    def start_rangeserver(self, extra=()):
        port = free_port()
        command = [
            self.options.rangeserver, "--host", "127.0.0.1", "--port", str(port), "--root", self.files,
            "--threads", str(self.options.threads), "--quiet", *extra,
        ]
        process = self.processes.start(command, cwd=self.work, stdout=subprocess.DEVNULL)
        wait_for_port(port, process)
        return process, f"http://127.0.0.1:{port}"

    def start_nginx(self, tls=None, http2=False):
        """Starts nginx on a free port; with `tls` (certificate and key paths), also an HTTPS server block on a
        second port, TLS 1.3 only, which with `http2` offers h2 by ALPN (`listen ... ssl http2`, nginx 1.22's
        form). Returns (process, http base URL, https base URL or None)."""
        port = free_port()
        tls_port = free_port() if tls else None
        tls_block = ""
        if tls:
            certificate, key = tls
            tls_block = (
                "    server {\n"
                f"        listen 127.0.0.1:{tls_port} ssl{' http2' if http2 else ''} reuseport;\n"
                "        server_name localhost;\n"
                f"        ssl_certificate {certificate};\n"
                f"        ssl_certificate_key {key};\n"
                "        ssl_protocols TLSv1.3;\n"
                "        ssl_session_cache shared:bench:1m;\n"
                f"        location /files/ {{ alias {self.files}/; }}\n"
                "    }"
            )
        prefix = os.path.join(self.work, "nginx")
        os.makedirs(prefix, exist_ok=True)
        with open(os.path.join(self.repo, "bench", "nginx.conf.template")) as file:
            template = file.read()
        config = (
            template.replace("@USER_DIRECTIVE@", "user root;" if os.getuid() == 0 else "")
            .replace("@WORKERS@", "2")
            .replace("@PREFIX@", prefix)
            .replace("@PORT@", str(port))
            .replace("@ROOT@", self.files)
            .replace("@TLS_SERVER@", tls_block)
        )
        config_path = os.path.join(prefix, "nginx.conf")
        with open(config_path, "w") as file:
            file.write(config)
        command = ["nginx", "-p", prefix, "-e", os.path.join(prefix, "error.log"), "-c", config_path]
        process = self.processes.start(command, stdout=subprocess.DEVNULL)
        wait_for_port(port, process)
        if tls_port:
            wait_for_port(tls_port, process)
        return process, f"http://127.0.0.1:{port}", (f"https://127.0.0.1:{tls_port}" if tls_port else None)

    def stop(self, process):
        # nginx's master stops its workers on SIGTERM ("fast shutdown"); rangeserver stops on SIGTERM too.
        self.processes.stop(process)

    # MARK: clients

    def curl_get(self, url, output="/dev/null", timeout=180):
        """One full GET with curl; returns (bytes, seconds) as curl measured them."""
        result = subprocess.run(
            ["curl", "-sS", "--fail", "--max-time", str(timeout), "-o", output,
             "-w", "%{size_download} %{time_total}", url],
            capture_output=True, text=True, timeout=timeout + 10, check=True,
        )
        size, seconds = result.stdout.split()
        return int(size), float(seconds)

    def timed_get(self, url, server_pid, expected):
        cpu_before = tree_cpu_seconds(server_pid)
        size, seconds = read_body(url)
        cpu = tree_cpu_seconds(server_pid) - cpu_before
        if size != expected:
            raise RuntimeError(f"{url}: got {size} bytes, expected {expected}")
        return {"mibPerSecond": size / seconds / MIB, "seconds": seconds, "serverCpuSeconds": cpu}

    def run_wrk(self, url, seconds, connections=64, threads=2):
        command = [
            "wrk", f"-t{threads}", f"-c{connections}", f"-d{seconds}s", "--timeout", "5s",
            "-s", os.path.join(self.repo, "bench", "random-range.lua"), url, "--", str(GIB), "1",
        ]
        result = subprocess.run(command, capture_output=True, text=True, timeout=seconds + 60)
        for line in result.stdout.splitlines():
            if line.startswith("BENCH-JSON "):
                data = json.loads(line[len("BENCH-JSON "):])
                data["bytesPerRequest"] = data["bytes"] / max(1, data["requests"])
                return data
        raise RuntimeError(f"wrk printed no summary: {result.stdout}\n{result.stderr}")

    # MARK: reporting

    def record(self, case, title, rows, target, passed, notes=None, samples=None, skipped=None):
        entry = {"case": case, "title": title, "rows": rows, "target": target, "passed": passed}
        if notes:
            entry["notes"] = notes
        if samples is not None:
            entry["samples"] = samples
        if skipped:
            entry["skipped"] = skipped
        self.results.append(entry)
        verdict = "skipped" if skipped else ("PASS" if passed else ("MISS" if passed is False else "-"))
        log(f"case {case}: {verdict}")
        for row in rows:
            log(f"  {row['metric']}: A={fmt(row.get('a'))} B={fmt(row.get('b'))} ratio={fmt(row.get('ratio'))}")

    def interleave(self, label, a, b):
        """Runs a warm-up pair, then `pairs` pairs of a() and b(); returns the two lists of samples."""
        log(f"{label}: warm-up pair")
        a()
        b()
        a_samples, b_samples = [], []
        for index in range(self.pairs):
            a_samples.append(a())
            b_samples.append(b())
            log(f"{label}: pair {index + 1}/{self.pairs}")
        return a_samples, b_samples

    # MARK: - Cases

    def case1(self):
        """Full GET of the 1 GiB file: rangeserver sendfile vs nginx sendfile."""
        rs, rs_url = self.start_rangeserver()
        ngx, ngx_url, _ = self.start_nginx()
        try:
            a, b = self.interleave(
                "case 1",
                lambda: self.timed_get(rs_url + "/files/big.bin", rs.pid, GIB),
                lambda: self.timed_get(ngx_url + "/files/big.bin", ngx.pid, GIB),
            )
        finally:
            self.stop(rs)
            self.stop(ngx)
        ratio = median(pair_ratios([s["mibPerSecond"] for s in a], [s["mibPerSecond"] for s in b]))
        rows = [
            row("throughput MiB/s (rangeserver / nginx)", a, b, "mibPerSecond", ratio),
            row("server CPU s per GiB", a, b, "serverCpuSeconds", None),
        ]
        self.record(1, "GET 1 GiB file, page cache warm", rows, "ratio >= 1.0", ratio >= 1.0,
                    samples={"rangeserver": a, "nginx": b})

    def case8(self):
        """Full GET of the 1 GiB file over TLS 1.3: rangeserver (libmicrohttpd + GnuTLS) vs nginx (OpenSSL), the same
        certificate, curl as the client."""
        title = "GET 1 GiB file over TLS 1.3 with curl --cacert, page cache warm"
        tls_dir = os.path.join(self.work, "tls")
        tls_port = free_port()
        rs, _ = self.start_rangeserver(["--tls-port", str(tls_port), "--tls-dir", tls_dir])
        wait_for_port(tls_port, rs)
        rs_url = f"https://127.0.0.1:{tls_port}"
        # nginx presents the leaf rangeserver issued from its CA, so one --cacert serves both sides.
        ngx, _, ngx_url = self.start_nginx(
            tls=(os.path.join(tls_dir, "server.pem"), os.path.join(tls_dir, "server-key.pem")))
        authority = os.path.join(tls_dir, "ca.pem")

        self.tls_file_case(8, title, "throughput MiB/s over TLS 1.3 (rangeserver / nginx)", (rs, rs_url),
                           (ngx, ngx_url), authority, http2=False)

    def tls_file_case(self, number, title, metric, rangeserver, nginx, authority, http2):
        """Cases 8 and 10: interleaved GETs of the 1 GiB file by curl over TLS 1.3 from each server (over HTTP/2 when
        `http2`, checked from curl's own report of the version), the server's CPU per fetch; stops both servers."""
        (rs, rs_url), (ngx, ngx_url) = rangeserver, nginx
        version_flags = ["--http2"] if http2 else ["--http1.1"]

        def fetch(url, server_pid):
            cpu_before = tree_cpu_seconds(server_pid)
            result = subprocess.run(
                ["curl", "-sS", "--fail", *version_flags, "--tlsv1.3", "--cacert", authority, "--max-time", "300",
                 "-o", "/dev/null", "-w", "%{http_version} %{size_download} %{time_total} %{ssl_verify_result}",
                 url + "/files/big.bin"],
                capture_output=True, text=True, timeout=320, check=True)
            version, size, seconds, verify = result.stdout.split()
            expected = "2" if http2 else "1.1"
            if version != expected or int(size) != GIB or verify != "0":
                raise RuntimeError(f"{url}: HTTP version {version}, {size} bytes, certificate verification result "
                                   f"{verify} (expected {expected}, {GIB}, 0)")
            cpu = tree_cpu_seconds(server_pid) - cpu_before
            return {"mibPerSecond": int(size) / float(seconds) / MIB, "seconds": float(seconds),
                    "serverCpuSeconds": cpu}

        try:
            a, b = self.interleave(f"case {number}", lambda: fetch(rs_url, rs.pid), lambda: fetch(ngx_url, ngx.pid))
        finally:
            self.stop(rs)
            self.stop(ngx)
        ratio = median(pair_ratios([s["mibPerSecond"] for s in a], [s["mibPerSecond"] for s in b]))
        rows = [
            row(metric, a, b, "mibPerSecond", ratio),
            row("server CPU s per GiB", a, b, "serverCpuSeconds", None),
        ]
        self.record(number, title, rows, "ratio >= 1.0", ratio >= 1.0, samples={"rangeserver": a, "nginx": b})

    # MARK: HTTP/2 (cases 10-12)

    def start_rangeserver_h2(self):
        """rangeserver with its HTTPS port (which issues server.pem from ca.pem in the run's tls directory) and its
        HTTP/2-over-TLS port. Returns (process, h2 base URL, tls directory)."""
        tls_dir = os.path.join(self.work, "tls")
        tls_port, h2_port = free_port(), free_port()
        rs, _ = self.start_rangeserver(["--tls-port", str(tls_port), "--tls-dir", tls_dir, "--h2-port", str(h2_port)])
        wait_for_port(tls_port, rs)
        wait_for_port(h2_port, rs)
        return rs, f"https://127.0.0.1:{h2_port}", tls_dir

    def start_h2floor(self, tls_dir):
        """h2floor (scripts/lib/h2floor) with rangeserver's leaf certificate, serving the fixtures. Returns (process,
        base URL), or None when scripts/bench did not build it."""
        if not self.options.h2floor:
            return None
        port = free_port()
        command = [self.options.h2floor, "--port", str(port), "--certificate", os.path.join(tls_dir, "server.pem"),
                   "--key", os.path.join(tls_dir, "server-key.pem"), "--root", self.files]
        process = self.processes.start(command, cwd=self.work, stdout=subprocess.DEVNULL)
        wait_for_port(port, process)
        return process, f"https://127.0.0.1:{port}"

    def start_nginx_h2(self, tls_dir):
        """nginx with an HTTP/2-over-TLS server block presenting the leaf rangeserver issued in `tls_dir`."""
        ngx, _, ngx_url = self.start_nginx(
            tls=(os.path.join(tls_dir, "server.pem"), os.path.join(tls_dir, "server-key.pem")), http2=True)
        return ngx, ngx_url

    def curl_h2_probe(self, url, authority, headers=()):
        """One curl --http2 request; returns (status, HTTP version, bytes) and fails unless it came over HTTP/2."""
        command = ["curl", "-sS", "--http2", "--tlsv1.3", "--cacert", authority, "--max-time", "30", "-o", "/dev/null",
                   "-w", "%{http_code} %{http_version} %{size_download} %{ssl_verify_result}"]
        for header in headers:
            command += ["-H", header]
        result = subprocess.run(command + [url], capture_output=True, text=True, timeout=40, check=True)
        status, version, size, verify = result.stdout.split()
        if version != "2" or verify != "0":
            raise RuntimeError(f"{url}: HTTP version {version}, certificate verification result {verify}")
        return int(status), version, int(size)

    def run_h2load(self, arguments, timeout):
        """Runs h2load (recorded and stopped by PID like every other process) and parses its summary."""
        command = ["h2load", *arguments]
        process = self.processes.start(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            stdout, stderr = process.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.processes.stop(process, signal.SIGKILL)
            raise RuntimeError(f"h2load did not finish within {timeout}s: {' '.join(command)}")
        self.processes.forget(process)
        if process.returncode != 0:
            raise RuntimeError(f"h2load exited {process.returncode}: {stdout[-2000:]}{stderr[-2000:]}")
        summary = parse_h2load(stdout)
        if summary.get("protocol") != "h2":
            raise RuntimeError(f"h2load did not negotiate h2 (protocol {summary.get('protocol')}): {stdout[-2000:]}")
        return summary

    def case10(self):
        """Full GET of the 1 GiB file over HTTP/2 and TLS 1.3: rangeserver's --h2-port (SwiftNIO, NIOSSL) vs nginx
        (listen ... ssl http2, OpenSSL), the same certificate, curl --http2 as the client."""
        title = "GET 1 GiB file over HTTP/2 (TLS 1.3) with curl --http2 --cacert, page cache warm"
        rs, rs_url, tls_dir = self.start_rangeserver_h2()
        ngx, ngx_url = self.start_nginx_h2(tls_dir)
        authority = os.path.join(tls_dir, "ca.pem")
        self.tls_file_case(10, title, "throughput MiB/s over HTTP/2 and TLS 1.3 (rangeserver / nginx)",
                           (rs, rs_url), (ngx, ngx_url), authority, http2=True)

    def case11(self):
        """4 KiB ranges over HTTP/2 and TLS with h2load, 4 connections x 16 streams, over the 500 small files.

        h2load sends the same fields with every request (-H), so a run cannot give each request its own Range. The
        many URIs are the 500 files of 256 KiB instead (the same files on both servers), in a shuffled order, all
        with one unaligned 4 KiB range; each pair draws a new offset, used by both sides of the pair.

        When scripts/bench built h2floor, each pair is followed by the same load against it, with the same offset: the
        stack rangeserver must use (SwiftNIO, NIOSSL, swift-nio-http2) answering with none of rangeserver's own
        work, so the report shows how much of the gap to nginx is the stack's. It is not judged."""
        connections, streams = 4, 16
        seconds = self.load_seconds
        rs, rs_url, tls_dir = self.start_rangeserver_h2()
        ngx, ngx_url = self.start_nginx_h2(tls_dir)
        floor = self.start_h2floor(tls_dir)
        authority = os.path.join(tls_dir, "ca.pem")
        names = [f"f{index:03d}.bin" for index in range(500)]
        self.random.shuffle(names)
        lists = os.path.join(self.work, "lists")
        os.makedirs(lists, exist_ok=True)
        uri_files = {}
        sides = [("rangeserver", rs_url), ("nginx", ngx_url)] + ([("h2floor", floor[1])] if floor else [])
        for side, base in sides:
            uri_files[side] = os.path.join(lists, f"h2load-{side}.txt")
            with open(uri_files[side], "w") as file:
                file.writelines(f"{base}/files/small/{name}\n" for name in names)

        def load(side, pid, first, run_seconds):
            range_field = f"range: bytes={first}-{first + 4095}"
            cpu_before = tree_cpu_seconds(pid)
            sample = self.run_h2load(
                ["-c", str(connections), "-m", str(streams), "-t", "2", "-D", str(run_seconds),
                 "-H", range_field, "-i", uri_files[side]], timeout=run_seconds + 60)
            used = tree_cpu_seconds(pid) - cpu_before
            # h2load counts 2xx only; a 206 of the asked range is what makes every body 4096 bytes (a 200 would
            # carry the whole 256 KiB file).
            done = sample["succeeded"]
            if sample["failed"] or sample["errored"] or sample["timeout"] or not done \
                    or sample["status2xx"] != done or sample["dataBytes"] != done * 4096:
                raise RuntimeError(f"case 11: {side}: not every request succeeded with a 4 KiB 206: {sample}")
            sample["rangeStart"] = first
            sample["rps"] = done / sample["seconds"]
            sample["serverCpuSeconds"] = used
            sample["serverCpuMicrosPerRequest"] = 1e6 * used / done
            sample["loadAverage"] = os.getloadavg()[0]
            return sample

        def offset():
            return self.random.randrange(0, 256 * KIB - 4096 + 1)

        try:
            # Each server answers one range of a file with 206 over HTTP/2, and exactly that many bytes.
            for side, base in sides:
                status, _, size = self.curl_h2_probe(f"{base}/files/small/{names[0]}", authority,
                                                     ["Range: bytes=4097-8192"])
                if status != 206 or size != 4096:
                    raise RuntimeError(f"case 11: {side}: a 4 KiB range got status {status}, {size} bytes")
            warm = min(5, seconds)
            log(f"case 11: warm-up pair ({warm} s each)")
            first = offset()
            load("rangeserver", rs.pid, first, warm)
            load("nginx", ngx.pid, first, warm)
            if floor:
                load("h2floor", floor[0].pid, first, warm)
            a, b, c = [], [], []
            for index in range(self.pairs):
                first = offset()
                a.append(load("rangeserver", rs.pid, first, seconds))
                b.append(load("nginx", ngx.pid, first, seconds))
                log_load_pair("case 11", index, self.pairs, a[-1], b[-1])
                if floor:
                    c.append(load("h2floor", floor[0].pid, first, seconds))
                    log(f"case 11: pair {index + 1}/{self.pairs}: h2floor {c[-1]['rps']:.0f} req/s, "
                        f"{c[-1]['serverCpuMicrosPerRequest']:.1f} CPU us/request")
            rs_rss = peak_rss_kib(rs.pid)
        finally:
            self.stop(rs)
            self.stop(ngx)
            if floor:
                self.stop(floor[0])
        rps_ratio = median(pair_ratios([s["rps"] for s in a], [s["rps"] for s in b]))
        cpu_ratio = median(pair_ratios([s["serverCpuMicrosPerRequest"] for s in a],
                                       [s["serverCpuMicrosPerRequest"] for s in b]))
        rows = [
            row("requests/s over HTTP/2 (rangeserver / nginx)", a, b, "rps", rps_ratio),
            row("server CPU us per request (rangeserver / nginx, lower is better; not judged)", a, b,
                "serverCpuMicrosPerRequest", cpu_ratio),
            row("mean time per request ms (h2load)", a, b, "meanRequestMicros", None, scale=1e-3),
            row("load average (1 min) after each run", a, b, "loadAverage", None),
        ]
        samples = {"rangeserver": a, "nginx": b}
        if c:
            # The floor against the same pair's nginx run: what the required stack reaches with no work of ours.
            rows.append(row("requests/s over HTTP/2 (h2floor / nginx: the stack alone; not judged)", c, b, "rps",
                            median(pair_ratios([s["rps"] for s in c], [s["rps"] for s in b]))))
            rows.append(row("server CPU us per request (h2floor / nginx; not judged)", c, b,
                            "serverCpuMicrosPerRequest",
                            median(pair_ratios([s["serverCpuMicrosPerRequest"] for s in c],
                                               [s["serverCpuMicrosPerRequest"] for s in b]))))
            samples["h2floor"] = c
        self.record(11, f"4 KiB ranges over HTTP/2 (TLS), h2load -c {connections} -m {streams}, 500 files, {seconds} s",
                    rows, "req/s ratio >= 0.8", rps_ratio >= 0.8,
                    notes={"rangeserverPeakRssKiB": rs_rss}, samples=samples)

    def case12(self):
        """rangeserver's peak RSS while 64 HTTP/2 streams on one connection each read a 64 MiB file."""
        streams, size = 64, 64 * MIB
        path = os.path.join(self.files, "h2-64m.bin")
        write_random_fixture(path, size)
        self.warm_cache(path)
        title = f"peak RSS of rangeserver, {streams} HTTP/2 streams on one connection each reading a 64 MiB file"
        # A fresh process, so the peak (VmHWM) is this case's own.
        rs, rs_url, _ = self.start_rangeserver_h2()
        try:
            before = peak_rss_kib(rs.pid)
            cpu_before = tree_cpu_seconds(rs.pid)
            # h2load's windows are 2^30 - 1 bytes for the stream and the connection (-w 30 -W 30, its defaults,
            # given so it is visible): flow control never holds the server back, so what it keeps in memory is
            # bounded by its own buffering alone.
            sample = self.run_h2load(
                ["-n", str(streams), "-c", "1", "-m", str(streams), "-t", "1", "-w", "30", "-W", "30",
                 "-N", "60", rs_url + "/files/h2-64m.bin"], timeout=900)
            sample["serverCpuSeconds"] = tree_cpu_seconds(rs.pid) - cpu_before
            peak = peak_rss_kib(rs.pid)
        finally:
            self.stop(rs)
        if sample["succeeded"] != streams or sample["status2xx"] != streams or sample["dataBytes"] != streams * size:
            raise RuntimeError(f"case 12: expected {streams} answers of {size} bytes: {sample}")
        sample["peakRssKiB"] = peak
        sample["startRssKiB"] = before
        rows = [
            {"metric": "rangeserver peak RSS MiB (VmHWM) after the streams", "a": peak / KIB},
            {"metric": "rangeserver peak RSS MiB (VmHWM) before the streams", "a": before / KIB},
            {"metric": "streams answered 2xx with the whole file", "a": sample["succeeded"]},
            {"metric": "MiB delivered (expected 4,096)", "a": sample["dataBytes"] / MIB},
            {"metric": "throughput MiB/s, all streams (h2load)", "a": sample["dataBytes"] / sample["seconds"] / MIB},
            {"metric": "server CPU s per GiB", "a": sample["serverCpuSeconds"] / (sample["dataBytes"] / GIB)},
        ]
        self.record(12, title, rows, "peak RSS < 128 MiB", peak < 128 * KIB, samples=sample)

    def case2(self):
        """Random 4 KiB ranges, 64 keep-alive connections."""
        rs, rs_url = self.start_rangeserver()
        ngx, ngx_url, _ = self.start_nginx()
        seconds = self.load_seconds
        try:
            log("case 2: warm-up pair (5 s each)")
            self.run_wrk(rs_url + "/files/big.bin", min(5, seconds))
            self.run_wrk(ngx_url + "/files/big.bin", min(5, seconds))
            a, b = [], []
            for index in range(self.pairs):
                for side, pid, cpu_of in ((a, rs.pid, cpu_seconds), (b, ngx.pid, tree_cpu_seconds)):
                    cpu = cpu_of(pid)
                    sample = self.run_wrk((rs_url if side is a else ngx_url) + "/files/big.bin", seconds)
                    used = cpu_of(pid) - cpu
                    sample["serverCpuPercent"] = 100 * used / sample["seconds"]
                    # CPU per request does not depend on how much CPU the load generator left the server, so it
                    # compares the two servers' own work even when the machine is busy.
                    sample["serverCpuMicrosPerRequest"] = 1e6 * used / max(1, sample["requests"])
                    sample["loadAverage"] = os.getloadavg()[0]
                    side.append(sample)
                log_load_pair("case 2", index, self.pairs, a[-1], b[-1])
            rs_rss = peak_rss_kib(rs.pid)
        finally:
            self.stop(rs)
            self.stop(ngx)
        for sample in a + b:
            if sample["errors"] or not 4096 <= sample["bytesPerRequest"] < 4096 + 1024:
                raise RuntimeError(f"case 2: errors or wrong response size: {sample}")
        rps_ratio = median(pair_ratios([s["rps"] for s in a], [s["rps"] for s in b]))
        p99_ratio = median(pair_ratios([s["p99us"] for s in a], [s["p99us"] for s in b]))
        cpu_ratio = median(pair_ratios([s["serverCpuMicrosPerRequest"] for s in a],
                                       [s["serverCpuMicrosPerRequest"] for s in b]))
        rows = [
            row("requests/s (rangeserver / nginx)", a, b, "rps", rps_ratio),
            row("p99 latency ms (rangeserver / nginx, lower is better)", a, b, "p99us", p99_ratio, scale=1e-3),
            row("p50 latency ms", a, b, "p50us", None, scale=1e-3),
            row("server CPU % of one core", a, b, "serverCpuPercent", None),
            row("server CPU us per request (rangeserver / nginx, lower is better; not judged)", a, b,
                "serverCpuMicrosPerRequest", cpu_ratio),
            row("load average (1 min) after each run", a, b, "loadAverage", None),
        ]
        self.record(2, f"random 4 KiB ranges, 64 connections, {seconds} s, rangeserver --threads {self.options.threads}",
                    rows, "req/s ratio >= 0.8", rps_ratio >= 0.8,
                    notes={"rangeserverPeakRssKiB": rs_rss}, samples={"rangeserver": a, "nginx": b})

    def threads_sweep(self):
        """Case 2 against rangeserver alone with several --threads values, to pick the default for case 2."""
        counts = [int(x) for x in self.options.sweep.split(",")]
        seconds = min(self.load_seconds, 5)
        samples = {count: [] for count in counts}
        for round_index in range(max(2, self.pairs - 2)):
            for count in counts:
                saved = self.options.threads
                self.options.threads = count
                rs, url = self.start_rangeserver()
                self.options.threads = saved
                try:
                    self.run_wrk(url + "/files/big.bin", 2)  # warm-up
                    samples[count].append(self.run_wrk(url + "/files/big.bin", seconds)["rps"])
                finally:
                    self.stop(rs)
            log(f"threads sweep round {round_index + 1}: " + ", ".join(f"{c}:{samples[c][-1]:.0f}" for c in counts))
        rows = [{"metric": f"--threads {count}: requests/s", "a": median(samples[count])} for count in counts]
        self.record("threads", f"rangeserver --threads sweep, case 2 load, {seconds} s per run", rows, "-", None,
                    samples={str(c): samples[c] for c in counts})

    def case3(self):
        """/bytes/1G (content reader + generator) vs /files/big.bin (sendfile), both on rangeserver."""
        rs, url = self.start_rangeserver()
        try:
            a, b = self.interleave(
                "case 3",
                lambda: self.timed_get(url + "/bytes/1G", rs.pid, GIB),
                lambda: self.timed_get(url + "/files/big.bin", rs.pid, GIB),
            )
        finally:
            self.stop(rs)
        ratio = median(pair_ratios([s["mibPerSecond"] for s in a], [s["mibPerSecond"] for s in b]))
        rows = [
            row("throughput MiB/s (/bytes/1G / /files 1 GiB)", a, b, "mibPerSecond", ratio),
            row("server CPU s per GiB", a, b, "serverCpuSeconds", None),
        ]
        self.record(3, "GET /bytes/1G (generated) vs 1 GiB file (sendfile), both rangeserver", rows,
                    "ratio >= 0.5", ratio >= 0.5, samples={"bytes": a, "files": b})

    def case4(self):
        """200 connections paced at 64 KiB/s: the server's CPU time."""
        connections = 200
        seconds = self.load_seconds
        rs, url = self.start_rangeserver()
        port = int(url.rsplit(":", 1)[1])
        try:
            # Idle baseline first, same length, so the figure can be read against the server doing nothing.
            idle_before = cpu_seconds(rs.pid)
            time.sleep(min(5, seconds))
            idle = (cpu_seconds(rs.pid) - idle_before) / min(5, seconds)
            result = paced_load(port, connections, seconds, "/bytes/64M?rate=64K", rs.pid)
        finally:
            self.stop(rs)
        percent = 100 * result["serverCpuSeconds"] / result["seconds"]
        rows = [
            {"metric": "server CPU % of one core (utime+stime)", "a": percent},
            {"metric": "server CPU % of one core when idle", "a": 100 * idle},
            {"metric": "delivered KiB/s per connection (expected 64)", "a": result["bytesPerConnectionPerSecond"] / KIB},
            {"metric": "connections that ended early", "a": result["closedEarly"]},
        ]
        passed = percent < 10 and result["closedEarly"] == 0
        self.record(4, f"{connections} connections at rate=64K for {seconds} s", rows, "CPU < 10% of one core",
                    passed, samples=result)

    def rangefetch_missing(self, case, title):
        if self.options.rangefetch:
            return False
        print(f"case {case}: skipped: rangefetch not built", flush=True)
        self.record(case, title, [], "-", None, skipped="rangefetch not built")
        return True

    def downloads_dir(self, name):
        path = os.path.join(self.work, "downloads", name)
        shutil.rmtree(path, ignore_errors=True)
        os.makedirs(path)
        return path

    def timed_run(self, command, timeout, cwd=None):
        """Runs a client under /usr/bin/time -v; returns wall seconds, peak RSS in KiB and CPU seconds (user +
        system, from this process's children's usage, to the microsecond where /usr/bin/time prints hundredths; it
        includes /usr/bin/time's own, well under a millisecond)."""
        report = os.path.join(self.work, "time-v.txt")
        usage = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.monotonic()
        process = self.processes.start(["/usr/bin/time", "-v", "-o", report, *command], cwd=cwd,
                                       stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        try:
            _, stderr = process.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.processes.stop(process, signal.SIGKILL)
            raise RuntimeError(f"{command[0]} did not finish within {timeout}s")
        seconds = time.monotonic() - start
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu = after.ru_utime - usage.ru_utime + after.ru_stime - usage.ru_stime
        self.processes.forget(process)
        if process.returncode != 0:
            raise RuntimeError(f"{' '.join(command[:3])}... exited {process.returncode}: {stderr.decode()[-2000:]}")
        with open(report) as file:
            text = file.read()
        rss = int(re.search(r"Maximum resident set size \(kbytes\): (\d+)", text).group(1))
        return {"seconds": seconds, "peakRssKiB": rss, "cpuSeconds": cpu}

    def rounds(self, label, sides):
        """A warm-up round of every side, then `pairs` rounds of each side in order; returns samples per side."""
        log(f"{label}: warm-up round")
        for fetch in sides.values():
            fetch()
        samples = {name: [] for name in sides}
        for index in range(self.pairs):
            for name, fetch in sides.items():
                samples[name].append(fetch())
            log(f"{label}: round {index + 1}/{self.pairs}")
        return samples

    def case5(self):
        title = "rangefetch (--no-digest and SHA-256 verified) vs curl -o, 1 GiB /files to disk"
        if self.rangefetch_missing(5, title):
            return
        rs, url = self.start_rangeserver()

        def fetch(tool, *flags):
            directory = self.downloads_dir(tool + "".join(flags))
            output = os.path.join(directory, "big.bin")
            if tool == "rangefetch":
                command = [self.options.rangefetch, *flags, "-o", output, url + "/files/big.bin"]
            else:
                command = ["curl", "-sS", "--fail", "--max-time", "300", "-o", output, url + "/files/big.bin"]
            sample = self.timed_run(command, 320)
            size = os.path.getsize(output)
            if size != GIB:
                raise RuntimeError(f"{tool} {' '.join(flags)} wrote {size} bytes")
            sample["mibPerSecond"] = size / sample["seconds"] / MIB
            shutil.rmtree(directory)
            return sample

        try:
            # The three sides interleaved in every round, so load drift hits them alike. curl -o does not hash, so
            # the verdict is on --no-digest; the default (SHA-256 computed and checked against Repr-Digest) is
            # reported against the same curl runs.
            samples = self.rounds("case 5", {
                "rangefetchNoDigest": lambda: fetch("rangefetch", "--no-digest"),
                "rangefetch": lambda: fetch("rangefetch"),
                "curl": lambda: fetch("curl"),
            })
            # Peak memory must not grow with the size: 4 GiB of generated content, once, with the SHA-256 (its
            # hash thread may hold parts, so this is the larger footprint).
            directory = self.downloads_dir("rangefetch-4g")
            output = os.path.join(directory, "4g.bin")
            big = self.timed_run([self.options.rangefetch, "-o", output, url + "/bytes/4G"], 600)
            big["mibPerSecond"] = os.path.getsize(output) / big["seconds"] / MIB
            shutil.rmtree(directory)
        finally:
            self.stop(rs)
        fast, verified, curl = samples["rangefetchNoDigest"], samples["rangefetch"], samples["curl"]
        throughput = lambda side: [s["mibPerSecond"] for s in side]
        ratio = median(pair_ratios(throughput(fast), throughput(curl)))
        verified_ratio = median(pair_ratios(throughput(verified), throughput(curl)))
        peak = max(s["peakRssKiB"] for s in fast + verified + [big])
        rows = [
            row("throughput MiB/s, wall clock incl. start-up (rangefetch --no-digest / curl)", fast, curl,
                "mibPerSecond", ratio),
            row("throughput MiB/s, SHA-256 verified (rangefetch / curl; not judged)", verified, curl,
                "mibPerSecond", verified_ratio),
            row("peak RSS MiB, 1 GiB (rangefetch --no-digest / curl)", fast, curl, "peakRssKiB", None, scale=1 / KIB),
            row("peak RSS MiB, 1 GiB (rangefetch verified / curl)", verified, curl, "peakRssKiB", None, scale=1 / KIB),
            {"metric": "rangefetch peak RSS MiB, 4 GiB /bytes (verified)", "a": big["peakRssKiB"] / KIB},
            {"metric": "rangefetch MiB/s, 4 GiB /bytes (verified)", "a": big["mibPerSecond"]},
        ]
        passed = ratio >= 0.9 and peak <= 64 * KIB
        self.record(5, title, rows, "--no-digest ratio >= 0.9 and peak RSS <= 64 MiB", passed,
                    samples={"rangefetchNoDigest": fast, "rangefetch": verified, "curl": curl, "rangefetch4G": big})

    def case6(self):
        title = ("500 files of 256 KiB, concurrency 8: rangefetch (--no-digest and SHA-256 verified) vs aria2c vs "
                 "curl --parallel")
        if self.rangefetch_missing(6, title):
            return
        rs, url = self.start_rangeserver()
        urls = [f"{url}/files/small/f{index:03d}.bin" for index in range(500)]
        lists = os.path.join(self.work, "lists")
        os.makedirs(lists, exist_ok=True)
        aria_list = os.path.join(lists, "aria2.txt")
        with open(aria_list, "w") as file:
            file.writelines(u + "\n" for u in urls)
        curl_config = os.path.join(lists, "curl.txt")
        with open(curl_config, "w") as file:
            file.writelines(f'url = "{u}"\n' for u in urls)

        def fetch(tool, *flags):
            directory = self.downloads_dir(tool + "".join(flags))
            if tool == "rangefetch":
                command = [self.options.rangefetch, *flags, "-j", "8", "-o", directory, *urls]
            elif tool == "aria2c":
                command = ["aria2c", "-q", "-j", "8", "-x", "1", "-s", "1", "--file-allocation=none",
                           "--auto-file-renaming=false", "--max-tries=1", "-d", directory, "-i", aria_list]
            else:
                command = ["curl", "-sS", "--fail", "--parallel", "--parallel-max", "8", "--max-time", "120",
                           "--output-dir", directory, "--remote-name-all", "-K", curl_config]
            server_before = threads_cpu_seconds(rs.pid)
            sample = self.timed_run(command, 180)
            # The server's CPU for this client's 500 requests (the time its threads ran), per request.
            sample["serverMicrosPerRequest"] = (threads_cpu_seconds(rs.pid) - server_before) / 500 * 1e6
            names = [n for n in os.listdir(directory) if n.endswith(".bin")]
            sizes = {os.path.getsize(os.path.join(directory, n)) for n in names}
            if len(names) != 500 or sizes != {256 * KIB}:
                raise RuntimeError(f"{tool} {' '.join(flags)}: {len(names)} files, sizes {sizes}")
            shutil.rmtree(directory)
            return sample

        # Where the clients write (a tmpfs with --tmpfs).
        probes = os.path.join(self.work, "downloads", "creation-probes")

        def probe():
            # What one file creation costs on this file system right now: on ext4 without a journal it grows with
            # every inode freed in the last minute or more (`recently_deleted` in the inode allocator), and this
            # case frees 2,000 per round. The probe's files are kept until the end (freeing them would add to it).
            directory = os.path.join(probes, str(len(os.listdir(probes)) if os.path.isdir(probes) else 0))
            os.makedirs(directory)
            start = time.monotonic()
            for index in range(100):
                os.close(os.open(os.path.join(directory, f"p{index}"), os.O_CREAT | os.O_WRONLY, 0o644))
            seconds = time.monotonic() - start
            return {"seconds": seconds, "microsPerCreate": seconds / 100 * 1e6}

        try:
            samples = self.rounds("case 6", {
                "fileCreation": probe,
                "rangefetchNoDigest": lambda: fetch("rangefetch", "--no-digest"),
                "rangefetch": lambda: fetch("rangefetch"),
                "aria2c": lambda: fetch("aria2c"),
                "curl": lambda: fetch("curl"),
            })
        finally:
            self.stop(rs)

        def speedups(side):
            return [
                min(samples["aria2c"][i]["seconds"], samples["curl"][i]["seconds"]) / samples[side][i]["seconds"]
                for i in range(self.pairs)
            ]

        def wall(side):
            return median([s["seconds"] for s in samples[side]])

        def server_micros(side):
            return median([s["serverMicrosPerRequest"] for s in samples[side]])

        def cpu_millis_per_file(side):
            return median([s["cpuSeconds"] for s in samples[side]]) / 500 * 1000

        # The most any client that verifies could gain on this machine in these rounds. Such a client does at least
        # the faster peer's work (the same bytes read from the sockets and written to files, measured as that peer's
        # CPU) plus SHA-256 of every byte (`hash_seconds`), and the server does what it did for that peer; spread
        # perfectly over every core, that CPU takes at least its sum divided by the cores. Below 1.0, no verifying
        # client that reads and writes the bytes as the peer does can match the peer here.
        hash_seconds = self.hash_cost(urls)
        cores = os.cpu_count() or 1

        def ceilings():
            result = []
            for i in range(self.pairs):
                peer = min((samples[name][i] for name in ("aria2c", "curl")), key=lambda s: s["seconds"])
                least = (peer["cpuSeconds"] + hash_seconds + peer["serverMicrosPerRequest"] * 500 / 1e6) / cores
                result.append(peer["seconds"] / least)
            return result

        ratio = median(speedups("rangefetchNoDigest"))
        verified_ratio = median(speedups("rangefetch"))
        rows = [
            {"metric": "wall s, rangefetch --no-digest -j 8", "a": wall("rangefetchNoDigest")},
            {"metric": "wall s, rangefetch -j 8 (SHA-256 verified)", "a": wall("rangefetch")},
            {"metric": "wall s, aria2c -j 8 -i list", "a": wall("aria2c")},
            {"metric": "wall s, curl --parallel --parallel-max 8", "a": wall("curl")},
            {"metric": "speed-up of --no-digest vs the faster peer, per round (>1 is faster; not judged)", "ratio": ratio},
            {"metric": "speed-up of the verified run vs the faster peer (judged; the rounds: "
             + ", ".join(f"{r:.2f}" for r in speedups("rangefetch")) + ")", "ratio": verified_ratio},
            {"metric": "µs per file creation before each round (median; the rounds: "
             + ", ".join(f"{s['microsPerCreate']:.0f}" for s in samples["fileCreation"]) + ")",
             "a": median([s["microsPerCreate"] for s in samples["fileCreation"]])},
            {"metric": "peak RSS MiB, rangefetch --no-digest / verified",
             "a": median([s["peakRssKiB"] for s in samples["rangefetchNoDigest"]]) / KIB,
             "b": median([s["peakRssKiB"] for s in samples["rangefetch"]]) / KIB},
            {"metric": "client CPU ms per file (user + system): rangefetch verified / curl",
             "a": cpu_millis_per_file("rangefetch"), "b": cpu_millis_per_file("curl")},
            {"metric": "client CPU ms per file (user + system): rangefetch --no-digest / aria2c",
             "a": cpu_millis_per_file("rangefetchNoDigest"), "b": cpu_millis_per_file("aria2c")},
            {"metric": "ms of SHA-256 for the 500 files in memory, on one core (hashlib)", "a": hash_seconds * 1000},
            {"metric": f"ceiling: the speed-up a verifying client doing the faster peer's work plus SHA-256 on {cores} "
             "cores could reach, per round (not judged; the rounds: " + ", ".join(f"{r:.2f}" for r in ceilings())
             + ")", "ratio": median(ceilings())},
            {"metric": "rangeserver CPU µs per request, serving rangefetch verified / curl",
             "a": server_micros("rangefetch"), "b": server_micros("curl")},
            {"metric": "rangeserver CPU µs per request, serving rangefetch --no-digest / aria2c",
             "a": server_micros("rangefetchNoDigest"), "b": server_micros("aria2c")},
        ]
        # Judged on the verified run (issue 31): a download that is not checked is not what rangefetch does by default.
        self.record(6, title, rows, "verified speed-up >= 1.0", verified_ratio >= 1.0, samples=samples)

    def hash_cost(self, urls):
        """Seconds of CPU that SHA-256 of case 6's files costs on one core, in memory (the best of three passes):
        OpenSSL's through hashlib, with the same SHA extensions rangefetch's BoringSSL uses."""
        small = os.path.join(self.files, "small")
        bodies = []
        for url in urls:
            with open(os.path.join(small, url.rsplit("/", 1)[1]), "rb") as file:
                bodies.append(file.read())
        best = None
        for _ in range(3):
            start = time.process_time()
            for body in bodies:
                hashlib.sha256(body).digest()
            spent = time.process_time() - start
            best = spent if best is None else min(best, spent)
        return best

    def journal_overlap(self, base, target_prefix):
        """Bytes the server sent more than once for `target_prefix`, from the journal."""
        with urllib.request.urlopen(base + "/_control/journal", timeout=30) as response:
            document = json.load(response)
        intervals = []
        requests = 0
        for entry in document["entries"]:
            if entry["method"] != "GET" or not entry["target"].startswith(target_prefix):
                continue
            requests += 1
            first = 0
            if entry["status"] == 206:
                match = re.match(r"bytes=(\d+)-", entry["requestHeaders"].get("range", ""))
                first = int(match.group(1)) if match else 0
            sent = int(entry["bodyBytesSent"])
            if sent:
                intervals.append((first, first + sent))
        total = sum(end - start for start, end in intervals)
        union = 0
        covered_to = 0
        for start, end in sorted(intervals):
            if end <= covered_to:
                continue
            union += end - max(start, covered_to)
            covered_to = end
        return {"requests": requests, "bytesSent": total, "uniqueBytes": union, "duplicateBytes": total - union}

    def case9(self):
        title = ("segmented: 256 MiB /bytes at rate=8M per connection, rangefetch -x 8 vs aria2c -x 8 -s 8 vs axel -n 8; "
                 "the same behind connection-cap=4; peak RSS of -x 16 at 4 GiB")
        if self.rangefetch_missing(9, title):
            return
        rs, url = self.start_rangeserver()
        size = 256 * MIB

        def fetch(tool, query):
            directory = self.downloads_dir(tool)
            output = os.path.join(directory, "seg.bin")
            target = url + "/bytes/256M?seed=9&rate=8M" + query
            if tool == "rangefetch":
                command = [self.options.rangefetch, "-x", "8", "-o", output, target]
            elif tool == "aria2c":
                command = ["aria2c", "-x", "8", "-s", "8", "-k", "1M", "--file-allocation=none", "--allow-overwrite=true",
                           "--summary-interval=0", "--console-log-level=warn", "--download-result=hide",
                           "-d", directory, "-o", "seg.bin", target]
            else:
                command = ["axel", "-q", "-n", "8", "-o", output, target]
            sample = self.timed_run(command, 300)
            written = os.path.getsize(output)
            if written != size:
                raise RuntimeError(f"{tool} wrote {written} bytes")
            sample["mibPerSecond"] = written / sample["seconds"] / MIB
            shutil.rmtree(directory)
            return sample

        try:
            samples = self.rounds("case 9", {
                "rangefetch": lambda: fetch("rangefetch", ""),
                "aria2c": lambda: fetch("aria2c", ""),
                "axel": lambda: fetch("axel", ""),
            })
            # A server that refuses a fifth connection with 503 + Retry-After: rangefetch must finish with four.
            capped = [fetch("rangefetch", "&connection-cap=4") for _ in range(self.pairs)]
            directory = self.downloads_dir("rangefetch-x16")
            output = os.path.join(directory, "4g.bin")
            big = self.timed_run([self.options.rangefetch, "-x", "16", "-o", output, url + "/bytes/4G?seed=9"], 600)
            big["mibPerSecond"] = os.path.getsize(output) / big["seconds"] / MIB
            shutil.rmtree(directory)
        finally:
            self.stop(rs)
        rf, aria, axel = samples["rangefetch"], samples["aria2c"], samples["axel"]
        throughput = lambda side: [s["mibPerSecond"] for s in side]
        faster = aria if median(throughput(aria)) >= median(throughput(axel)) else axel
        faster_name = "aria2c" if faster is aria else "axel"
        ratio = median(pair_ratios(throughput(rf), throughput(faster)))
        of_line = median(throughput(rf)) / (8 * 8)
        capped_of_line = median(throughput(capped)) / (4 * 8)
        rows = [
            row(f"throughput MiB/s (rangefetch -x 8 / {faster_name}, the faster peer)", rf, faster, "mibPerSecond", ratio),
            row("throughput MiB/s (rangefetch -x 8 / aria2c -x 8 -s 8)", rf, aria, "mibPerSecond",
                median(pair_ratios(throughput(rf), throughput(aria)))),
            row("throughput MiB/s (rangefetch -x 8 / axel -n 8)", rf, axel, "mibPerSecond",
                median(pair_ratios(throughput(rf), throughput(axel)))),
            {"metric": "rangefetch -x 8 median MiB/s / (8 x 8 MiB/s)", "a": of_line},
            {"metric": "rangefetch -x 8 behind connection-cap=4, median MiB/s / (4 x 8 MiB/s)", "a": capped_of_line},
            {"metric": "rangefetch -x 16 peak RSS MiB, 4 GiB /bytes (verified)", "a": big["peakRssKiB"] / KIB},
            {"metric": "rangefetch -x 16 MiB/s, 4 GiB /bytes (verified)", "a": big["mibPerSecond"]},
        ]
        passed = ratio >= 1.0 and of_line >= 0.9 and capped_of_line >= 0.9 and big["peakRssKiB"] <= 96 * KIB
        self.record(9, title, rows,
                    "ratio to the faster peer >= 1.0, >= 0.9 of 8 x 8 MiB/s, capped >= 0.9 of 4 x 8 MiB/s, "
                    "-x 16 peak RSS <= 96 MiB", passed,
                    samples={"rangefetch": rf, "aria2c": aria, "axel": axel, "capped": capped, "rangefetch4G": big})

    def case7(self):
        title = "resume waste: 10 kill -9 during a 1 GiB download (rate=64M), rangefetch vs aria2c"
        if self.rangefetch_missing(7, title):
            return
        kills = 10
        rs, url = self.start_rangeserver()
        source = url + "/files/big.bin?rate=64M"
        results = {}
        try:
            for tool in ["rangefetch", "aria2c"]:
                urllib.request.urlopen(urllib.request.Request(url + "/_control/journal", method="DELETE"), timeout=10).read()
                directory = self.downloads_dir("resume-" + tool)
                output = os.path.join(directory, "big.bin")
                if tool == "rangefetch":
                    command = [self.options.rangefetch, "-o", output, source]
                else:
                    command = ["aria2c", "-q", "-x", "1", "-s", "1", "-c", "--file-allocation=none",
                               "--auto-file-renaming=false", "-d", directory, "-o", "big.bin", source]
                done_kills = 0
                moments = []
                finished_early = False
                for _ in range(kills):
                    process = self.processes.start(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                    moment = self.random.uniform(0.3, 1.5)
                    time.sleep(moment)
                    if process.poll() is not None:
                        finished_early = True
                        self.processes.forget(process)
                        break
                    self.processes.stop(process, signal.SIGKILL)
                    done_kills += 1
                    moments.append(round(moment, 3))
                    time.sleep(0.3)  # let the server notice the dead peer and journal the exchange
                if not finished_early:
                    process = self.processes.start(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                    try:
                        process.wait(timeout=120)
                    finally:
                        self.processes.stop(process, signal.SIGKILL)
                    if process.returncode != 0:
                        raise RuntimeError(f"case 7: {tool} final run exited {process.returncode}")
                size = os.path.getsize(output) if os.path.exists(output) else -1
                identical = size == GIB and subprocess.run(["cmp", "-s", output, self.big]).returncode == 0
                time.sleep(0.5)
                overlap = self.journal_overlap(url, "/files/big.bin")
                overlap.update({
                    "kills": done_kills, "killMoments": moments, "finalSize": size, "identical": identical,
                    "duplicatePerKill": overlap["duplicateBytes"] / max(1, done_kills),
                })
                results[tool] = overlap
                shutil.rmtree(directory)
                log(f"case 7: {tool}: {overlap}")
        finally:
            self.stop(rs)
        rf = results["rangefetch"]
        rows = [
            {"metric": "bytes fetched twice per kill, KiB (rangefetch)", "a": rf["duplicatePerKill"] / KIB},
            {"metric": "bytes fetched twice per kill, KiB (aria2c)", "a": results["aria2c"]["duplicatePerKill"] / KIB},
            {"metric": "requests (rangefetch / aria2c)", "a": rf["requests"], "b": results["aria2c"]["requests"]},
            {"metric": "final file identical to source (rangefetch / aria2c)", "a": rf["identical"],
             "b": results["aria2c"]["identical"]},
        ]
        passed = rf["duplicatePerKill"] <= 64 * KIB and rf["identical"]
        self.record(7, title, rows, "<= 64 KiB per kill", passed, samples=results)

    def micro(self):
        if not self.options.rangebench:
            self.record("micro", "microbenchmarks", [], "-", None, skipped="RangeBench not built")
            return
        command = [self.options.rangebench] + (["--quick"] if self.options.quick else [])
        result = subprocess.run(command, capture_output=True, text=True, timeout=900, check=True)
        rows = []
        samples = []
        for line in result.stdout.splitlines():
            data = json.loads(line)
            samples.append(data)
            metric = f"{data['name']}: ns/op"
            if "gigabytesPerSecond" in data:
                metric += f" ({data['gigabytesPerSecond']:.2f} GB/s)"
            rows.append({"metric": metric, "a": data["nsPerOp"]})
        self.record("micro", "RangeBench microbenchmarks (median of rounds)", rows, "-", None, samples=samples)


def read_body(url, timeout=120):
    """GETs `url` and discards the body; returns (body bytes, seconds).

    A plain blocking reader with a 1 MiB buffer: about 0.2 s of CPU per GiB here, against curl's 0.35 s to
    /dev/null, so the client is further from being the bottleneck on a 2-core machine.
    """
    match = re.match(r"http://([^:/]+):(\d+)(/.*)", url)
    host, port, target = match.group(1), int(match.group(2)), match.group(3)
    buffer = bytearray(MIB)
    view = memoryview(buffer)
    start = time.monotonic()
    with socket.create_connection((host, port), timeout=timeout) as connection:
        connection.sendall(f"GET {target} HTTP/1.1\r\nHost: {host}:{port}\r\nConnection: close\r\n\r\n".encode())
        head = b""
        while b"\r\n\r\n" not in head:
            count = connection.recv_into(buffer)
            if not count:
                raise RuntimeError(f"{url}: connection closed in the response head")
            head += bytes(view[:count])
        head, _, rest = head.partition(b"\r\n\r\n")
        status = int(head.split(b" ", 2)[1])
        length = re.search(rb"(?i)\r\ncontent-length: *(\d+)", head)
        if status != 200 or not length:
            raise RuntimeError(f"{url}: status {status}, content-length {length}")
        remaining = int(length.group(1)) - len(rest)
        received = len(rest)
        deadline = start + timeout
        while remaining > 0:
            count = connection.recv_into(buffer, min(remaining, len(buffer)))
            if not count:
                break
            received += count
            remaining -= count
            if time.monotonic() > deadline:
                raise RuntimeError(f"{url}: slower than {timeout}s")
    return received, time.monotonic() - start


def log_load_pair(label, index, pairs, a, b):
    """One pair of a load case (2, 11): each side's requests per second and server CPU per request, and the load."""
    log(f"{label}: pair {index + 1}/{pairs}: {a['rps']:.0f} vs {b['rps']:.0f} req/s, "
        f"{a['serverCpuMicrosPerRequest']:.1f} vs {b['serverCpuMicrosPerRequest']:.1f} "
        f"CPU us/request, load {a['loadAverage']:.1f}")


def write_random_fixture(path, size):
    """Writes `size` random bytes to `path` once (a file of that size already there is kept)."""
    if os.path.exists(path) and os.path.getsize(path) == size:
        return
    log(f"writing {os.path.basename(path)} ({size // MIB} MiB of random bytes)")
    os.makedirs(os.path.dirname(path), exist_ok=True)
    temporary = path + f".tmp{os.getpid()}"
    with open(temporary, "wb") as file:
        for _ in range(size // MIB):
            file.write(os.urandom(MIB))
    os.replace(temporary, path)


def parse_h2load(text):
    """h2load's summary: negotiated protocol, measured seconds, request counts, status classes, traffic bytes."""
    summary = {}
    match = re.search(r"^Application protocol: (\S+)", text, re.M)
    summary["protocol"] = match.group(1) if match else None
    match = re.search(r"^finished in ([\d.]+)(us|ms|s), ([\d.]+) req/s", text, re.M)
    if not match:
        raise RuntimeError(f"h2load printed no summary: {text[-2000:]}")
    summary["seconds"] = float(match.group(1)) * {"us": 1e-6, "ms": 1e-3, "s": 1.0}[match.group(2)]
    summary["h2loadRps"] = float(match.group(3))
    match = re.search(r"^requests: (\d+) total, (\d+) started, (\d+) done, (\d+) succeeded, (\d+) failed, "
                      r"(\d+) errored, (\d+) timeout", text, re.M)
    if not match:
        raise RuntimeError(f"h2load printed no request counts: {text[-2000:]}")
    for key, value in zip(["total", "started", "done", "succeeded", "failed", "errored", "timeout"], match.groups()):
        summary[key] = int(value)
    match = re.search(r"^status codes: (\d+) 2xx, (\d+) 3xx, (\d+) 4xx, (\d+) 5xx", text, re.M)
    if not match:
        raise RuntimeError(f"h2load printed no status codes: {text[-2000:]}")
    for key, value in zip(["status2xx", "status3xx", "status4xx", "status5xx"], match.groups()):
        summary[key] = int(value)
    match = re.search(r"^traffic: \S+ \((\d+)\) total, \S+ \((\d+)\) headers .*?, \S+ \((\d+)\) data", text, re.M)
    if not match:
        raise RuntimeError(f"h2load printed no traffic line: {text[-2000:]}")
    summary["trafficBytes"], summary["headerBytes"], summary["dataBytes"] = (int(x) for x in match.groups())
    match = re.search(r"^time for request:\s+\S+\s+\S+\s+([\d.]+)(us|ms|s)\b", text, re.M)
    summary["meanRequestMicros"] = (
        float(match.group(1)) * {"us": 1.0, "ms": 1e3, "s": 1e6}[match.group(2)] if match else float("nan"))
    return summary


def child_pids(pid):
    children = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as file:
                    if int(file.read().rsplit(")", 1)[1].split()[1]) == pid:
                        children.append(int(entry))
            except (OSError, ValueError, IndexError):
                pass
    return children


def paced_load(port, connections, seconds, target, server_pid):
    """Opens `connections` connections that each GET `target`, reads everything for `seconds`, then closes."""
    selector = selectors.DefaultSelector()
    sockets = []
    request = f"GET {target} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n".encode()
    received = {}
    cpu_before = cpu_seconds(server_pid)
    start = time.monotonic()
    for _ in range(connections):
        connection = socket.create_connection(("127.0.0.1", port), timeout=5)
        connection.sendall(request)
        connection.setblocking(False)
        selector.register(connection, selectors.EVENT_READ)
        sockets.append(connection)
        received[connection.fileno()] = 0
    closed_early = 0
    buffer = bytearray(256 * KIB)
    deadline = start + seconds
    while True:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            break
        for key, _ in selector.select(timeout=min(remaining, 0.5)):
            try:
                count = key.fileobj.recv_into(buffer)
            except BlockingIOError:
                continue
            if count == 0:
                closed_early += 1
                selector.unregister(key.fileobj)
                continue
            received[key.fileobj.fileno()] += count
    elapsed = time.monotonic() - start
    for connection in sockets:
        connection.close()
    selector.close()
    time.sleep(0.5)  # the server finds the closed sockets on its next paced write
    cpu = cpu_seconds(server_pid) - cpu_before
    elapsed_with_teardown = time.monotonic() - start
    total = sum(received.values())
    return {
        "seconds": elapsed_with_teardown, "loadSeconds": elapsed, "serverCpuSeconds": cpu, "bytes": total,
        "bytesPerConnectionPerSecond": total / connections / elapsed, "closedEarly": closed_early,
    }


def row(metric, a, b, key, ratio, scale=1.0):
    return {
        "metric": metric,
        "a": median([s[key] for s in a]) * scale,
        "b": median([s[key] for s in b]) * scale,
        "ratio": ratio,
    }


def fmt(value):
    if value is None:
        return ""
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int):
        return str(value)
    if abs(value) >= 100:
        return f"{value:,.0f}"
    if abs(value) >= 1:
        return f"{value:.2f}"
    return f"{value:.3f}"


def print_table(results):
    print("| case | metric | A | B | median ratio | target | verdict |")
    print("|---|---|---:|---:|---:|---|---|")
    for result in results:
        verdict = "skipped" if result.get("skipped") else {True: "PASS", False: "MISS", None: "-"}[result["passed"]]
        if result.get("skipped"):
            print(f"| {result['case']} | {result['title']}: {result['skipped']} | | | | {result['target']} | skipped |")
            continue
        for index, entry in enumerate(result["rows"]):
            print(
                f"| {result['case'] if index == 0 else ''} | {entry['metric']} | {fmt(entry.get('a'))} | "
                f"{fmt(entry.get('b'))} | {fmt(entry.get('ratio'))} | {result['target'] if index == 0 else ''} | "
                f"{verdict if index == 0 else ''} |"
            )


def machine_facts():
    with open("/proc/meminfo") as file:
        memory = int(file.readline().split()[1]) * KIB
    model = "?"
    with open("/proc/cpuinfo") as file:
        for line in file:
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    def version(command):
        try:
            result = subprocess.run(command, capture_output=True, text=True, timeout=10)
            return (result.stdout + result.stderr).strip().splitlines()[0]
        except Exception:
            return "?"
    return {
        "nproc": os.cpu_count(), "memoryGiB": round(memory / GIB, 1), "cpu": model, "kernel": os.uname().release,
        "nginx": version(["nginx", "-v"]), "wrk": version(["wrk", "-v"]), "curl": version(["curl", "--version"]),
        "aria2c": version(["aria2c", "--version"]), "h2load": version(["h2load", "--version"]),
    }


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("cases", nargs="*", help="1..12, threads, micro (default: 1-12 and micro)")
    parser.add_argument("--repo", required=True)
    parser.add_argument("--work", required=True)
    parser.add_argument("--files", required=True)
    parser.add_argument("--report", required=True)
    parser.add_argument("--rangeserver", required=True)
    parser.add_argument("--rangefetch", default="")
    parser.add_argument("--rangebench", default="")
    parser.add_argument("--h2floor", default="")
    parser.add_argument("--command-line", default="")
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--pairs", type=int, default=0)
    parser.add_argument("--duration", type=int, default=0)
    parser.add_argument("--threads", type=int, default=4)
    parser.add_argument("--sweep", default="1,2,4,8")
    parser.add_argument("--seed", type=int, default=20261121)
    options = parser.parse_args()

    numbered = [str(number) for number in range(1, 13)]
    cases = options.cases or numbered + ["micro"]
    known = set(numbered) | {"threads", "micro"}
    unknown = [c for c in cases if c not in known]
    if unknown:
        parser.error(f"unknown case(s) {' '.join(unknown)}; choose from {' '.join(numbered + ['threads', 'micro'])}")

    os.makedirs(options.work, exist_ok=True)
    bench = Bench(options)

    def on_signal(number, _frame):
        raise KeyboardInterrupt(f"signal {number}")

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGHUP, on_signal)

    started = datetime.datetime.now(datetime.timezone.utc)
    status = 0
    try:
        needs_files = any(c in cases for c in ["1", "2", "3", "5", "6", "7", "8", "10", "11", "threads"])
        if needs_files:
            bench.prepare_files(need_small="6" in cases or "11" in cases)
        for case in cases:
            bench.sample_load(f"before case {case}")
            method = getattr(bench, "case" + case if case.isdigit() else {"threads": "threads_sweep", "micro": "micro"}[case])
            try:
                method()
            except (KeyboardInterrupt, SystemExit):
                raise
            except Exception as error:  # one broken case must not cost the others' numbers
                log(f"case {case} failed: {error}")
                bench.processes.stop_all()
                bench.record(case, f"case {case}", [], "-", False, skipped=f"error: {error}")
                status = 1
        bench.sample_load("end")
    except KeyboardInterrupt as error:
        log(f"interrupted ({error}); stopping what was started")
        status = 130
    except Exception as error:
        log(f"failed: {error}")
        status = 1
    finally:
        bench.processes.stop_all()

    def git(*arguments):
        try:
            return subprocess.run(["git", "-C", options.repo, *arguments], capture_output=True, text=True,
                                  timeout=10).stdout.strip()
        except Exception:
            return "?"

    report = {
        "date": started.isoformat(timespec="seconds"),
        "commit": git("rev-parse", "HEAD"),
        "uncommittedSourceFiles": len([l for l in git("status", "--short", "--", "Sources").splitlines() if l]),
        "finished": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "command": options.command_line,
        "machine": machine_facts(),
        "settings": {"pairs": bench.pairs, "loadSeconds": bench.load_seconds, "rangeserverThreads": options.threads,
                     "quick": options.quick, "nginxWorkers": 2},
        "load": bench.load_samples,
        "cases": bench.results,
        "complete": status == 0,
    }
    os.makedirs(os.path.dirname(options.report), exist_ok=True)
    with open(options.report, "w") as file:
        json.dump(report, file, indent=2)
    print()
    print(f"rangeserver benchmarks, {report['date']}, {report['machine']['nproc']} cores, "
          f"{report['machine']['memoryGiB']} GiB; A/B per row, ratio = median of per-pair A/B")
    print()
    print_table(bench.results)
    print()
    print(f"report: {options.report}")
    return status


if __name__ == "__main__":
    sys.exit(main())
