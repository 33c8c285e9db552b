#!/usr/bin/env python3
"""Run-token soak (stdlib only, asyncio): drives many distinct run tokens through a running server and checks that
its memory stays bounded.

Two modes:

- server:  one GET (Range: bytes=0-0) of /scenario/SCENARIO/TOKEN per token, against `rangeserver`; each token is a
           new run, so each leaves an attempt count behind (ScenarioCounters) until the run bounds forget it.
- service: per token, POST /_conformance/runs to `rangecheck serve` (a pending run held by the service), then a GET
           (Range: bytes=0-0) of the URL it hands out (an attempt count in its server); every REPORT_EVERY-th run is
           also reported (a verdict: a report cell, a line of --results), under one of LABELS client labels.

RSS (/proc/PID/status) is read once the first WARMUP tokens are done (by then the bounded tables are full and
turning over) and again at the end. Exits 1 when any request got an unexpected answer or when RSS at the end is more
than BOUND KiB above RSS after the warm-up. Used by scripts/soak --tokens; run with --help for the options.
"""

import argparse
import asyncio
import json
import os
import sys
import time


def rss_kib(pid):
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


async def read_response(reader):
    """Reads one response with a Content-Length body; returns (status, body)."""
    head = await reader.readuntil(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    status = int(lines[0].split(" ", 2)[1])
    length = 0
    for line in lines[1:]:
        name, _, value = line.partition(":")
        if name.strip().lower() == "content-length":
            length = int(value.strip())
    body = await reader.readexactly(length) if length else b""
    return status, body


class Run:
    def __init__(self, args):
        self.args = args
        self.next = 0
        self.done = 0
        self.requests = 0
        self.errors = []
        self.statuses = {}
        self.warm_rss = None
        self.warm_at = None
        self.peak_rss = 0
        self.reported = 0
        self.salt = os.urandom(4).hex()

    def error(self, message):
        if len(self.errors) < 20:
            self.errors.append(message)

    def take(self):
        if self.next >= self.args.tokens:
            return None
        index = self.next
        self.next += 1
        return index

    async def exchange(self, reader, writer, method, target, body=None, headers=None):
        lines = [f"{method} {target} HTTP/1.1", f"Host: 127.0.0.1:{self.args.port}"]
        for name, value in (headers or {}).items():
            lines.append(f"{name}: {value}")
        data = body.encode() if body is not None else b""
        if body is not None:
            lines.append("Content-Type: application/json")
            lines.append(f"Content-Length: {len(data)}")
        writer.write(("\r\n".join(lines) + "\r\n\r\n").encode() + data)
        status, payload = await read_response(reader)
        self.requests += 1
        self.statuses[status] = self.statuses.get(status, 0) + 1
        return status, payload

    async def one(self, reader, writer, index):
        token = f"soak-{self.salt}-{index:x}"
        if self.args.mode == "server":
            status, _ = await self.exchange(
                reader, writer, "GET", f"/scenario/{self.args.scenario}/{token}", headers={"Range": "bytes=0-0"})
            if status != 206:
                self.error(f"GET /scenario/{self.args.scenario}/{token}: {status}")
            return
        label = f"soak-{index % self.args.labels}"
        request = json.dumps({"scenario": self.args.scenario, "client": label})
        status, payload = await self.exchange(reader, writer, "POST", "/_conformance/runs", body=request)
        if status != 201:
            self.error(f"POST /_conformance/runs: {status} {payload[:200]!r}")
            return
        created = json.loads(payload)
        url = created["urls"][0]["url"]
        path = "/" + url.split("/", 3)[3]
        status, _ = await self.exchange(reader, writer, "GET", path, headers={"Range": "bytes=0-0"})
        if status != 206:
            self.error(f"GET {path}: {status}")
        if self.args.report_every and index % self.args.report_every == 0:
            report = json.dumps({"outcome": "failure", "outputs": [{"route": "", "exists": False}],
                                 "detail": "soak", "steps-done": []})
            result = "/" + created["result"].split("/", 3)[3]
            status, payload = await self.exchange(reader, writer, "POST", result, body=report)
            if status != 200:
                self.error(f"POST {result}: {status} {payload[:200]!r}")
            self.reported += 1

    async def worker(self):
        reader, writer = await asyncio.open_connection("127.0.0.1", self.args.port)
        try:
            while (index := self.take()) is not None:
                await self.one(reader, writer, index)
                self.done += 1
                if self.warm_rss is None and self.done >= self.args.warmup:
                    self.warm_rss = rss_kib(self.args.pid)
                    self.warm_at = time.monotonic()
        finally:
            writer.close()

    async def sampler(self):
        while True:
            self.peak_rss = max(self.peak_rss, rss_kib(self.args.pid))
            await asyncio.sleep(1)

    async def main(self):
        started = time.monotonic()
        before = rss_kib(self.args.pid)
        sampler = asyncio.create_task(self.sampler())
        await asyncio.gather(*(self.worker() for _ in range(self.args.connections)))
        sampler.cancel()
        elapsed = time.monotonic() - started
        await asyncio.sleep(1)
        after = rss_kib(self.args.pid)
        self.peak_rss = max(self.peak_rss, after)
        warm = self.warm_rss if self.warm_rss is not None else after
        growth = after - warm
        passed = not self.errors and growth <= self.args.bound
        summary = {
            "mode": self.args.mode, "tokens": self.done, "requests": self.requests, "reported": self.reported,
            "seconds": round(elapsed, 1), "rate": round(self.requests / elapsed) if elapsed else 0,
            "statuses": self.statuses, "errors": self.errors, "rss_kib": {
                "before": before, "after_warmup": warm, "peak": self.peak_rss, "after": after, "growth": growth,
                "bound": self.args.bound},
            "result": "pass" if passed else "FAIL",
        }
        print(f"token soak ({self.args.mode}): {self.done:,} tokens, {self.requests:,} requests in {elapsed:.1f} s "
              f"({summary['rate']:,}/s), {self.reported:,} reported; statuses {self.statuses}")
        print(f"  RSS KiB: before {before:,}, after {self.args.warmup:,}-token warm-up {warm:,}, peak "
              f"{self.peak_rss:,}, after {after:,}: growth {growth:+,} KiB (bound {self.args.bound:,}) -> "
              f"{summary['result']}")
        for message in self.errors:
            print(f"  error: {message}")
        if self.args.json:
            with open(self.args.json, "w") as out:
                json.dump(summary, out, indent=2)
        return 0 if passed else 1


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--mode", choices=["server", "service"], required=True)
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--pid", type=int, required=True, help="the server process, for its RSS")
    parser.add_argument("--tokens", type=int, default=1_000_000)
    parser.add_argument("--warmup", type=int, default=200_000, help="tokens before the RSS reference")
    parser.add_argument("--connections", type=int, default=8)
    parser.add_argument("--scenario", default="plain")
    parser.add_argument("--labels", type=int, default=100, help="service: distinct client labels")
    parser.add_argument("--report-every", type=int, default=1000, help="service: report one run in N (0: none)")
    parser.add_argument("--bound", type=int, default=8192, help="KiB RSS may grow after the warm-up")
    parser.add_argument("--json", help="also write the summary here")
    args = parser.parse_args()
    if not 0 < args.warmup < args.tokens:
        parser.error("--warmup must be between 0 and --tokens")
    return asyncio.run(Run(args).main())


if __name__ == "__main__":
    sys.exit(main())
