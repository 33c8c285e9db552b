#!/usr/bin/env python3
"""The driver behind scripts/torture: kill -9 rangefetch at random instants and check what it leaves behind.

Run it through scripts/torture. It builds rangefetch and rangeserver (debug, or release with --release), starts
`rangeserver --port 0 --quiet --journal-file .build/torture/journal.jsonl`, and then:

* kill mode (default): runs `rangefetch -j 8 --json` on 8 downloads through faulty URLs (rate-limited bodies,
  drop-after, reset-after, no ETag, a 2-hop redirect, two scenario URLs) and kills it with SIGKILL after a random
  delay, restarting the same command with the same state directory, KILLS times; then one uninterrupted run
  (with a timeout) and one more run that must find everything done and make no request. It checks every
  file's SHA-256 (expected digests come from the clean, fault-free /bytes URLs), that a file at a destination
  always had the right digest (polled during and between runs), that each restart resumed from the partial
  file's actual length, that the state directory ends with exactly one completed record per download and no
  partial, temporary or corrupt file, and it reports the bytes fetched twice per kill from the journal.
* --write-failure: runs rangefetch under `ulimit -f` so that the partial file cannot be completed; rangefetch must
  exit 1 with a clear error (not die from SIGXFSZ) and keep the partial; a run without the limit must finish with
  the right digest and resume with a Range request at the partial's length.

Every process it starts is stopped by PID (on success, failure or interruption). Every loop is bounded in count
and in time. Exit status 0 when every check passed, 1 otherwise.
"""

import argparse
import datetime
import hashlib
import json
import os
import random
import re
import select
import shutil
import signal
import subprocess
import sys
import threading
import time
import urllib.parse
import urllib.request

MIB = 1 << 20
WORK = ".build/torture"

# Processes started by this driver (PID -> Popen), stopped by PID on the way out.
STARTED = {}


def say(message):
    print(message, file=sys.stderr, flush=True)


def stop_started():
    for pid, process in list(STARTED.items()):
        if process.poll() is None:
            try:
                os.kill(pid, signal.SIGTERM)
                process.wait(timeout=5)
            except (ProcessLookupError, subprocess.TimeoutExpired):
                try:
                    os.kill(pid, signal.SIGKILL)
                    process.wait(timeout=5)
                except (ProcessLookupError, subprocess.TimeoutExpired):
                    pass
        STARTED.pop(pid, None)


def on_signal(number, _frame):
    stop_started()
    sys.exit(128 + number)


def spawn(arguments, **options):
    process = subprocess.Popen(arguments, **options)
    STARTED[process.pid] = process
    return process


def reap(process):
    STARTED.pop(process.pid, None)


# MARK: Building and the server


def build(release):
    configuration = ["-c", "release"] if release else []
    for product in ("rangefetch", "rangeserver"):
        say(f"torture: swift build {' '.join(configuration + ['--product', product])}")
        result = subprocess.run(["swift", "build", *configuration, "--product", product], timeout=3600)
        if result.returncode != 0:
            raise SystemExit(f"torture: building {product} failed")
    path = subprocess.run(
        ["swift", "build", *configuration, "--show-bin-path"], capture_output=True, text=True, timeout=600, check=True
    ).stdout.strip()
    return path + "/rangefetch", path + "/rangeserver"


class Server:
    """rangeserver on a free port, its journal in a JSON Lines file."""

    def __init__(self, binary, journal):
        self.journal = journal
        self.log = open(os.path.join(WORK, "server.err"), "wb")
        self.process = spawn(
            [binary, "--port", "0", "--quiet", "--threads", "8", "--journal-file", journal,
             "--scenarios", "fixtures/scenarios"],
            stdout=subprocess.PIPE, stderr=self.log,
        )
        line = self._first_line(timeout=30)
        match = re.match(r"^rangeserver listening on (http://(.+):(\d+))\s*$", line)
        if not match:
            raise SystemExit(f"torture: unexpected first line from rangeserver: {line!r}")
        self.base = match.group(1)
        self.port = int(match.group(3))
        # Keep draining stdout so the server never blocks on a full pipe.
        threading.Thread(target=self._drain, daemon=True).start()

    def _first_line(self, timeout):
        deadline = time.monotonic() + timeout
        data = b""
        fd = self.process.stdout.fileno()
        while b"\n" not in data:
            left = deadline - time.monotonic()
            if left <= 0 or self.process.poll() is not None:
                raise SystemExit("torture: rangeserver did not start (see .build/torture/server.err)")
            ready, _, _ = select.select([fd], [], [], left)
            if ready:
                chunk = os.read(fd, 4096)
                if not chunk:
                    break
                data += chunk
        return data.split(b"\n", 1)[0].decode()

    def _drain(self):
        try:
            while self.process.stdout.read(4096):
                pass
        except (OSError, ValueError):
            pass

    def stop(self):
        if self.process.poll() is None:
            os.kill(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                os.kill(self.process.pid, signal.SIGKILL)
                self.process.wait(timeout=10)
        reap(self.process)

    def entries(self, after_seq=0):
        """The journal's entries with seq > after_seq (a line being written at this instant is skipped)."""
        result = []
        try:
            with open(self.journal, "rb") as handle:
                for line in handle:
                    if not line.endswith(b"\n"):
                        break
                    entry = json.loads(line)
                    if entry["seq"] > after_seq:
                        result.append(entry)
        except FileNotFoundError:
            pass
        return result

    def last_seq(self):
        entries = self.entries()
        return entries[-1]["seq"] if entries else 0

    def settle(self, quiet=0.3, timeout=5.0):
        """Waits until the journal file has not grown for `quiet` seconds (bounded by `timeout`)."""
        deadline = time.monotonic() + timeout
        size, since = -1, time.monotonic()
        while time.monotonic() < deadline:
            current = os.path.getsize(self.journal) if os.path.exists(self.journal) else 0
            if current != size:
                size, since = current, time.monotonic()
            elif time.monotonic() - since >= quiet:
                return
            time.sleep(0.05)


def sha256_of_url(url):
    digest = hashlib.sha256()
    with urllib.request.urlopen(url, timeout=60) as response:
        while True:
            chunk = response.read(MIB)
            if not chunk:
                break
            digest.update(chunk)
    return digest.hexdigest()


def sha256_of_file(path):
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        while True:
            chunk = handle.read(MIB)
            if not chunk:
                break
            digest.update(chunk)
    return digest.hexdigest()


def target_of(url):
    """The request target (path and query) of an absolute URL, as the journal records it."""
    parts = urllib.parse.urlsplit(url)
    return parts.path + ("?" + parts.query if parts.query else "")


def journal_time(text):
    return datetime.datetime.strptime(text, "%Y-%m-%dT%H:%M:%S.%fZ").replace(
        tzinfo=datetime.timezone.utc).timestamp()


def range_start(entry):
    header = entry["requestHeaders"].get("range")
    if not header:
        return None
    match = re.match(r"^bytes=(\d+)-$", header)
    return int(match.group(1)) if match else None


# MARK: The downloads


class Download:
    def __init__(self, name, url, clean, size):
        self.name = name          # the file name rangefetch gives it in the output directory
        self.url = url            # the faulty URL handed to rangefetch
        self.clean = clean        # a fault-free URL of the same content, for the expected digest
        self.size = size
        self.sha256 = None


def plan_downloads(base, kills, mean_delay):
    """Eight downloads whose throttled bodies last a little longer than the kill phase's running time, so that
    nearly every kill lands mid-transfer and the final run has something left to do."""
    seconds = max(4.0, kills * mean_delay * 1.2)
    stamp = str(int(time.time()))

    def rate(size):
        return max(16 * 1024, int(size / seconds))

    downloads = []
    for size_mib, seed, extra in [
        (6, 11, ""),                        # rate-limited only
        (4, 12, "drop-after={drop}"),       # every response closes cleanly after a fifth of the file
        (5, 13, "reset-after={drop}"),      # every response is aborted with a TCP RST after a fifth
        (3, 14, "no-etag"),                 # If-Range must use Last-Modified
    ]:
        size = size_mib * MIB
        query = f"seed={seed}&rate={rate(size)}" + ("&" + extra.format(drop=size // 5) if extra else "")
        downloads.append(Download(f"{size_mib}M", f"{base}/bytes/{size_mib}M?{query}",
                                  f"{base}/bytes/{size_mib}M?seed={seed}", size))
    for size_mib, seed, extra in [(7, 15, ""), (10, 16, "&drop-after={drop}")]:
        size = size_mib * MIB
        query = f"seed={seed}&rate={rate(size)}" + extra.format(drop=size // 5)
        downloads.append(Download(f"{size_mib}M", f"{base}/redirect/2/bytes/{size_mib}M?{query}",
                                  f"{base}/bytes/{size_mib}M?seed={seed}", size))
    for scenario in ("drop-then-resume", "slow-body"):
        with open(f"fixtures/scenarios/{scenario}.json") as handle:
            resource = json.load(handle)["resource"]
        size_text = re.match(r"^/bytes/(\d+)M", resource).group(1)
        run = f"torture-{scenario}-{stamp}"
        downloads.append(Download(run, f"{base}/scenario/{scenario}/{run}", base + resource,
                                  int(size_text) * MIB))
    return downloads


# MARK: Kill mode


class KillTorture:
    def __init__(self, arguments, rangefetch, server):
        self.arguments = arguments
        self.rangefetch = rangefetch
        self.server = server
        self.random = random.Random(arguments.seed)
        self.failures = []
        self.output = os.path.abspath(os.path.join(WORK, "out"))
        self.state = os.path.join(self.output, ".rangefetch")
        self.logs = os.path.join(WORK, "logs")
        self.seen = {}            # destination name -> (inode, size, mtime) already checked
        self.runs = []            # one dict per rangefetch run: start, end, how, exit
        self.snapshots = []       # after kill k: record id -> {targets, partial, validators, state}
        self.unrecorded = {}      # after kill k: targets of the URLs that had no record yet
        self.temporaries_after_kills = 0
        self.commit_window_kills = 0
        self.unrecorded_restarts = 0  # first requests after a kill of tasks never written down (checked: no Range)

    def fail(self, message):
        if message not in self.failures:
            say("torture: FAIL " + message)
        self.failures.append(message)

    def command(self):
        return [self.rangefetch, "-j", "8", "--json", "-o", self.output] + [d.url for d in self.downloads]

    def run(self):
        arguments = self.arguments
        mean_delay = (arguments.min_delay + arguments.max_delay) / 2
        self.downloads = plan_downloads(self.server.base, arguments.kills, mean_delay)
        for download in self.downloads:
            download.sha256 = sha256_of_url(download.clean)
        self.expected = {d.name: d for d in self.downloads}
        self.server.settle(quiet=0.2)
        self.first_seq = self.server.last_seq()
        os.makedirs(self.output)
        os.makedirs(self.logs)

        started = time.monotonic()
        kills = 0
        unexpected_exits = 0
        finished_early = False
        for run_index in range(arguments.kills * 2 + 10):
            if kills >= arguments.kills:
                break
            if time.monotonic() - started > arguments.time_limit:
                self.fail(f"time limit of {arguments.time_limit:.0f}s reached after {kills} kills")
                break
            process, start = self.start(run_index)
            delay = self.random.uniform(arguments.min_delay, arguments.max_delay)
            while time.monotonic() < start + delay and process.poll() is None:
                self.check_destinations()
                time.sleep(0.03)
            if process.poll() is None:
                os.kill(process.pid, signal.SIGKILL)
                process.wait()
                reap(process)
                kills += 1
                self.runs[-1].update(end=time.time(), how="killed", exit=-9, delay=delay)
                self.snapshot_state()
                self.check_destinations()
                time.sleep(arguments.settle)
                continue
            reap(process)
            self.runs[-1].update(end=time.time(), how="exited", exit=process.returncode, delay=delay)
            self.check_destinations()
            if process.returncode == 0:
                finished_early = True
                say(f"torture: every download finished after {kills} kills; no more kills possible")
                break
            unexpected_exits += 1
            self.fail(f"run {run_index} exited with {process.returncode} (see {self.logs}/run-{run_index:03}.*)")
            if unexpected_exits >= 5:
                break
            self.snapshot_state()
            time.sleep(arguments.settle)
        kill_phase = time.monotonic() - started

        # The final, uninterrupted run, then a run that must find everything done and make no request.
        final_index = len(self.runs)
        process, _ = self.start(final_index)
        deadline = time.monotonic() + arguments.final_timeout
        while process.poll() is None and time.monotonic() < deadline:
            self.check_destinations()
            time.sleep(0.05)
        if process.poll() is None:
            os.kill(process.pid, signal.SIGKILL)
            process.wait()
            self.fail(f"the final run did not finish within {arguments.final_timeout:.0f}s")
        reap(process)
        self.runs[-1].update(end=time.time(), how="final", exit=process.returncode, delay=None)
        if process.returncode != 0:
            self.fail(f"the final run exited with {process.returncode} (see {self.logs}/run-{final_index:03}.*)")
        total = time.monotonic() - started
        self.server.settle()
        before = self.server.last_seq()
        check_index = len(self.runs)
        process, _ = self.start(check_index)
        try:
            process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            os.kill(process.pid, signal.SIGKILL)
            process.wait()
        reap(process)
        self.runs[-1].update(end=time.time(), how="rerun", exit=process.returncode, delay=None)
        self.server.settle()
        if process.returncode != 0:
            self.fail(f"the rerun after completion exited with {process.returncode}")
        again = [e for e in self.server.entries(before) if e["method"] == "GET"]
        if again:
            self.fail(f"the rerun after completion made {len(again)} requests (expected none)")

        self.check_destinations(final=True)
        records = self.check_state_directory()
        self.check_logs()
        figures = self.analyse_journal(records)
        figures.update(kills=kills, runs=len(self.runs), kill_phase=kill_phase, total=total,
                       finished_early=finished_early)
        return figures

    def start(self, index):
        log = os.path.join(self.logs, f"run-{index:03}")
        start = time.monotonic()
        with open(log + ".out", "wb") as out, open(log + ".err", "wb") as err:
            process = spawn(self.command(), stdout=out, stderr=err)
        self.runs.append({"start": time.time(), "index": index})
        return process, start

    def check_destinations(self, final=False):
        """Any file in the output directory must be one of the downloads, complete, with the right digest."""
        try:
            names = os.listdir(self.output)
        except FileNotFoundError:
            return
        for name in names:
            path = os.path.join(self.output, name)
            if name == ".rangefetch":
                continue
            download = self.expected.get(name)
            if download is None:
                self.fail(f"unexpected file in the output directory: {name}")
                continue
            try:
                st = os.stat(path)
            except FileNotFoundError:
                continue
            key = (st.st_ino, st.st_size, st.st_mtime_ns)
            if self.seen.get(name) == key:
                continue
            self.seen[name] = key
            digest = sha256_of_file(path)
            if digest != download.sha256:
                self.fail(f"{name} at its destination with {st.st_size} bytes and a wrong SHA-256 {digest}")
        if final:
            for name, download in self.expected.items():
                path = os.path.join(self.output, name)
                if not os.path.exists(path):
                    self.fail(f"{name} missing at the end")
                elif sha256_of_file(path) != download.sha256:
                    self.fail(f"{name} has a wrong SHA-256 at the end")

    def read_records(self):
        records = {}
        temporaries = 0
        for name in sorted(os.listdir(self.state)) if os.path.isdir(self.state) else []:
            path = os.path.join(self.state, name)
            if name.endswith(".json"):
                try:
                    with open(path) as handle:
                        records[name[:-5]] = json.load(handle)
                except (OSError, ValueError) as error:
                    self.fail(f"record {name} unreadable: {error}")
            elif name.endswith(".tmp"):
                temporaries += 1
        return records, temporaries

    def read_task_log(self, records):
        """The task log's records that no record file supersedes: last line per URL and destination."""
        path = os.path.join(self.state, "tasks.jsonl")
        filed = {(r.get("url"), r.get("destination")) for r in records.values()}
        logged = {}
        if os.path.exists(path):
            with open(path) as handle:
                for line in handle:
                    try:
                        record = json.loads(line)
                    except ValueError:
                        continue  # a line cut short by the kill; the engine reports and drops it
                    target = (record.get("url"), record.get("destination"))
                    if record.get("id") not in records and target not in filed:
                        logged[target] = record
        return {record["id"]: record for record in logged.values()}

    def snapshot_state(self):
        """After a kill: each task's partial length, what the next run should ask for."""
        records, temporaries = self.read_records()
        self.temporaries_after_kills += temporaries
        # A task that never had a record file yet (the first 256 KiB) is written down in the task log.
        records.update(self.read_task_log(records))
        snapshot = {}
        for task, record in records.items():
            partial = os.path.join(self.state, record.get("partial", task + ".part"))
            size = os.path.getsize(partial) if os.path.exists(partial) else 0
            destination = os.path.normpath(os.path.join(self.state, record.get("destination", "")))
            snapshot[task] = {
                "url": record["url"], "partial": size, "state": record.get("state"),
                "validators": bool(record.get("etag") or record.get("lastModified")),
                "placed": os.path.exists(destination),
            }
            if record.get("state") == "completed" and not os.path.exists(destination):
                # Killed between saving the completed record and the rename: the next run must finish it.
                self.commit_window_kills += 1
        self.snapshots.append((len(self.runs) - 1, snapshot))
        # A task killed before it was written down (its response head had not arrived) left at most an orphan
        # partial file, which the next run deletes: that run must fetch the body from the start.
        recorded = {record["url"] for record in records.values()}
        self.unrecorded[len(self.runs) - 1] = {target_of(d.url) for d in self.downloads if d.url not in recorded}

    def check_state_directory(self):
        """At the end: one completed record per download, consistent with docs/engine.md; nothing else."""
        records, _ = self.read_records()
        names = sorted(os.listdir(self.state))
        # `lock` is the state directory's lock file (docs/engine.md), left in place, empty, by the last run.
        extra = [n for n in names
                 if not (n.endswith(".json") and n[:-5] in records) and n not in ("tasks.jsonl", "lock")]
        unsuperseded = self.read_task_log(records)
        if unsuperseded:
            extra.append(f"tasks.jsonl lines for {', '.join(sorted(r.get('url', '?') for r in unsuperseded.values()))}")
        if extra:
            self.fail(f"leftover files in the state directory: {', '.join(extra)}")
        by_url = {}
        for task, record in records.items():
            problems = []
            if record.get("format") != "rangefetch-task" or record.get("version") != 1:
                problems.append("format/version")
            if record.get("id") != task or record.get("partial") != task + ".part":
                problems.append("id/partial name")
            if record.get("state") != "completed":
                problems.append(f"state {record.get('state')}")
            destination = record.get("destination", "")
            if destination.startswith("/"):
                problems.append("absolute destination")
            name = os.path.basename(destination)
            download = self.expected.get(name)
            if download is None or os.path.normpath(os.path.join(self.state, destination)) != os.path.join(
                    self.output, name):
                problems.append(f"destination {destination}")
            else:
                if record.get("url") != download.url:
                    problems.append("url")
                if record.get("sha256") != download.sha256:
                    problems.append("sha256")
                if record.get("recordedLength") != download.size or record.get("totalLength") != download.size:
                    problems.append("lengths")
                if "/redirect/" in download.url and (
                        len(record.get("redirects") or []) != 2
                        or target_of(record.get("resolvedURL") or "").startswith("/redirect/")):
                    problems.append("redirect hops")
            if record.get("error") is not None:
                problems.append("error set")
            if problems:
                self.fail(f"record {task}: {', '.join(problems)}")
            by_url.setdefault(record.get("url"), []).append(task)
        for download in self.downloads:
            if len(by_url.get(download.url, [])) != 1:
                self.fail(f"{len(by_url.get(download.url, []))} records for {download.name} (expected 1)")
        return records

    def check_logs(self):
        failed_events = 0
        warnings = 0
        for name in sorted(os.listdir(self.logs)):
            path = os.path.join(self.logs, name)
            with open(path, "rb") as handle:
                text = handle.read().decode(errors="replace")
            if name.endswith(".out"):
                for line in text.splitlines():
                    if '"event":"failed"' in line:
                        failed_events += 1
                        if failed_events <= 3:
                            self.fail(f"{name}: {line}")
            elif "warning:" in text or "Fatal" in text:
                warnings += 1
                self.fail(f"{name}: {text.strip().splitlines()[0]}")
        self.failed_events = failed_events

    def analyse_journal(self, records):
        """Overlaps: for each GET with a body, its start vs the bytes already sent for that resource."""
        targets_of = {}
        for task, record in records.items():
            targets = {target_of(record["url"])}
            for hop in record.get("redirects") or []:
                targets.add(target_of(hop["to"]))
                targets.add(target_of(hop["from"]))
            targets_of[task] = targets
        task_of_target = {t: task for task, targets in targets_of.items() for t in targets}
        entries = [e for e in self.server.entries(self.first_seq) if e["method"] == "GET"]
        starts = [run["start"] for run in self.runs]

        def run_of(entry):
            moment = journal_time(entry["time"])
            index = 0
            for i, start in enumerate(starts):
                if start <= moment + 0.0005:
                    index = i
            return index

        reach = {}                     # task -> the furthest byte the server sent
        first_in_run = set()           # (task, run) whose first GET was seen
        first_body_in_run = set()      # (task, run) whose first GET with a body was seen
        per_kill = {}                  # run index of the kill -> bytes fetched twice on resuming after it
        per_resume = []                # bytes fetched twice by each transfer resumed after a kill
        fault_overlap = 0
        unknown = 0
        snapshots = dict(self.snapshots)
        for entry in sorted(entries, key=lambda e: e["seq"]):
            task = task_of_target.get(entry["target"])
            if task is None:
                unknown += 1
                continue
            run = run_of(entry)
            first = (task, run) not in first_in_run
            first_in_run.add((task, run))
            start = range_start(entry)
            if first and run - 1 in snapshots and task in snapshots[run - 1]:
                self.check_resume(entry, task, run, snapshots[run - 1][task], start)
            elif first and target_of(records[task]["url"]) in self.unrecorded.get(run - 1, ()):
                self.unrecorded_restarts += 1
                if start is not None:
                    self.fail(f"run {run}: {entry['target']} asked from {start}, but the task had no record")
            if entry["status"] == 200:
                start = 0
            elif entry["status"] != 206:
                continue
            if start is None:
                start = 0
            content_range = entry["responseHeaders"].get("content-range", "")
            match = re.match(r"^bytes (\d+)-", content_range)
            if match:
                start = int(match.group(1))
            overlap = max(0, reach.get(task, 0) - start)
            first_body = (task, run) not in first_body_in_run
            first_body_in_run.add((task, run))
            if first_body and run > 0 and self.runs[run - 1]["how"] == "killed":
                per_kill[run - 1] = per_kill.get(run - 1, 0) + overlap
                per_resume.append((overlap, task))
            else:
                fault_overlap += overlap
            reach[task] = max(reach.get(task, 0), start + entry["bodyBytesSent"])
        if unknown:
            self.fail(f"{unknown} journal GETs matched no task")
        kills = [i for i, run in enumerate(self.runs) if run["how"] == "killed"]
        twice = [per_kill.get(i, 0) for i in kills]
        sent = sum(e["bodyBytesSent"] for e in entries)
        return {
            "gets": len(entries),
            "sent": sent,
            "content": sum(d.size for d in self.downloads),
            "twice_total": sum(twice),
            "twice_mean": sum(twice) / len(twice) if twice else 0.0,
            "twice_max": max(twice) if twice else 0,
            "fault_overlap": fault_overlap,
            "resumes": len(per_resume),
            "resume_max": max(per_resume)[0] if per_resume else 0,
            "resume_max_name": os.path.basename(records[max(per_resume)[1]]["destination"]) if per_resume else "-",
            "temporaries": self.temporaries_after_kills,
            "commit_window": self.commit_window_kills,
            "unrecorded": self.unrecorded_restarts,
        }

    def check_resume(self, entry, task, run, snapshot, start):
        """The first request of a run must ask from the partial file's actual length when it can resume."""
        if snapshot["state"] == "completed" and snapshot["placed"]:
            self.fail(f"run {run} requested {entry['target']} again after it completed")
            return
        size = snapshot["partial"]
        expected = size if size > 0 and snapshot["validators"] else None
        if start != expected:
            self.fail(f"run {run}: {entry['target']} asked from {start}, partial file held {size} bytes"
                      f" (validators: {snapshot['validators']})")


# MARK: Write-failure mode


def write_failure(rangefetch, server, limit_blocks):
    """rangefetch under `ulimit -f`: a clear error, the partial kept, then a resume without the limit."""
    failures = []
    directory = os.path.abspath(os.path.join(WORK, "write-failure"))
    os.makedirs(directory)
    destination = os.path.join(directory, "out.bin")
    state = os.path.join(directory, ".rangefetch")
    url = server.base + "/bytes/4M?seed=31"
    expected = sha256_of_url(url)
    limit = limit_blocks * 512
    server.settle(quiet=0.2)
    before = server.last_seq()

    # /bin/sh's ulimit -f counts 512-byte blocks (dash, and bash in POSIX mode; bash itself counts 1024).
    wrapped = ["/bin/sh", "-c", f'ulimit -f {limit_blocks} && exec "$0" "$@"', rangefetch, url, "-o", destination,
               "--json"]
    limited = subprocess.run(wrapped, capture_output=True, text=True, timeout=120)
    said = limited.stdout + limited.stderr
    partials = [n for n in os.listdir(state) if n.endswith(".part")] if os.path.isdir(state) else []
    partial_size = os.path.getsize(os.path.join(state, partials[0])) if partials else None
    say(f"torture: limited run exited with {limited.returncode}; partial {partial_size} bytes; limit {limit}")
    if limited.returncode < 0:
        failures.append(f"rangefetch was killed by signal {-limited.returncode} (SIGXFSZ not ignored?)")
    elif limited.returncode != 1:
        failures.append(f"rangefetch exited with {limited.returncode}, expected 1 (file-system failure)")
    if "File too large" not in said or '"kind":"file-system"' not in said:
        failures.append(f"no clear error (File too large, kind file-system) in: {said.strip()[-300:]!r}")
    if os.path.exists(destination):
        failures.append("a destination file exists after the failed run")
    if partial_size != limit:
        failures.append(f"partial file holds {partial_size} bytes, expected the limit {limit}")

    free = subprocess.run([rangefetch, url, "-o", destination, "--json"], capture_output=True, text=True,
                          timeout=120)
    if free.returncode != 0:
        failures.append(f"the run without the limit exited with {free.returncode}: {free.stderr.strip()[-300:]}")
    elif sha256_of_file(destination) != expected:
        failures.append("wrong SHA-256 after the resumed run")
    server.settle()
    gets = [e for e in server.entries(before) if e["method"] == "GET" and e["target"] == target_of(url)]
    ranges = [e["requestHeaders"].get("range") for e in gets]
    say(f"torture: requests: {ranges}")
    if len(gets) != 2 or ranges[1] != f"bytes={limit}-" or gets[1]["status"] != 206:
        failures.append(f"expected a second request with Range bytes={limit}- answered 206, got {ranges}")
    # tasks.jsonl holds the task's first line, written before its record file existed (superseded by it); lock is
    # the state directory's lock file (docs/engine.md).
    leftovers = [n for n in os.listdir(state) if not n.endswith(".json") and n not in ("tasks.jsonl", "lock")] \
        if os.path.isdir(state) else []
    if leftovers:
        failures.append(f"leftover files in the state directory: {leftovers}")
    return failures, partial_size


# MARK: Main


def main():
    parser = argparse.ArgumentParser(prog="scripts/torture", description=__doc__.split("\n\n")[0])
    parser.add_argument("kills", nargs="?", type=int, default=50, help="SIGKILLs before the final run (50)")
    parser.add_argument("--release", action="store_true", help="build and run the release binaries")
    parser.add_argument("--write-failure", action="store_true", help="run the ulimit -f check instead")
    parser.add_argument("--seed", type=int, default=None, help="random seed for the kill delays")
    parser.add_argument("--min-delay", type=float, default=0.05, help="shortest delay before a kill (s)")
    parser.add_argument("--max-delay", type=float, default=1.5, help="longest delay before a kill (s)")
    parser.add_argument("--settle", type=float, default=0.2, help="pause after a kill before restarting (s)")
    parser.add_argument("--final-timeout", type=float, default=180, help="bound on the final run (s)")
    parser.add_argument("--time-limit", type=float, default=900, help="bound on the kill phase (s)")
    parser.add_argument("--limit-blocks", type=int, default=2048, help="ulimit -f for --write-failure (512 B)")
    parser.add_argument("--no-build", action="store_true", help="use the binaries already built")
    arguments = parser.parse_args()
    if arguments.kills < 0 or not 0 <= arguments.min_delay <= arguments.max_delay:
        parser.error("KILLS must be >= 0 and 0 <= --min-delay <= --max-delay")
    if arguments.seed is None:
        arguments.seed = random.randrange(1 << 32)

    signal.signal(signal.SIGINT, on_signal)
    signal.signal(signal.SIGTERM, on_signal)
    if arguments.no_build:
        configuration = ["-c", "release"] if arguments.release else []
        path = subprocess.run(["swift", "build", *configuration, "--show-bin-path"], capture_output=True,
                              text=True, check=True).stdout.strip()
        rangefetch, rangeserver = path + "/rangefetch", path + "/rangeserver"
    else:
        rangefetch, rangeserver = build(arguments.release)
    shutil.rmtree(WORK, ignore_errors=True)
    os.makedirs(WORK)
    server = None
    try:
        server = Server(rangeserver, os.path.join(WORK, "journal.jsonl"))
        say(f"torture: rangeserver pid {server.process.pid} at {server.base}")
        if arguments.write_failure:
            started = time.monotonic()
            failures, partial = write_failure(rangefetch, server, arguments.limit_blocks)
            for failure in failures:
                say("torture: FAIL " + failure)
            verdict = "PASS" if not failures else "FAIL"
            print(f"torture write-failure: {verdict}: ulimit -f {arguments.limit_blocks} -> exit 1 with EFBIG, "
                  f"partial kept at {partial} bytes, resumed with Range bytes={partial}-, digest ok "
                  f"({time.monotonic() - started:.1f}s)" if not failures else
                  f"torture write-failure: FAIL ({len(failures)} problems)")
            return 0 if not failures else 1
        torture = KillTorture(arguments, rangefetch, server)
        figures = torture.run()
        verdict = "PASS" if not torture.failures else f"FAIL ({len(torture.failures)} problems)"
        print(
            f"torture: {verdict}: {figures['kills']} kills survived, {figures['runs']} runs, "
            f"{len(torture.downloads)} files ({figures['content'] / MIB:.0f} MiB) verified; "
            f"bytes fetched twice per kill: mean {figures['twice_mean'] / 1024:.1f} KiB, "
            f"max {figures['twice_max'] / 1024:.1f} KiB (total {figures['twice_total'] / 1024:.1f} KiB over "
            f"{figures['resumes']} resumed transfers, at most {figures['resume_max'] / 1024:.1f} KiB for one, "
            f"{figures['resume_max_name']}); "
            f"refetched after faults {figures['fault_overlap'] / 1024:.1f} KiB; "
            f"{figures['gets']} GETs, {figures['sent'] / MIB:.1f} MiB sent; "
            f"{figures['temporaries']} record temp files seen after kills; "
            f"{figures['commit_window']} kills between the completed record and the rename; "
            f"{figures['unrecorded']} restarts of tasks killed before their response head; "
            f"kill phase {figures['kill_phase']:.1f}s, total {figures['total']:.1f}s; seed {arguments.seed}"
        )
        return 0 if not torture.failures else 1
    finally:
        if server is not None:
            server.stop()
        stop_started()


if __name__ == "__main__":
    sys.exit(main())
