#!/usr/bin/env python3
"""REDbot over rangeserver's URLs (used by scripts/check-external; stdlib only).

For each URL: `redbot -o text` is printed for people, `redbot -o har` is parsed for the level of each note.
A URL fails when any note is BAD. The URLs with faults carry only faults that change timing, framing or
which optional headers are sent, so a correct HTTP/1.1 server stays correct under them.
"""

import argparse
import json
import subprocess
import sys

# (path and query, why it is here)
URLS = [
    ("/files/hello.txt", "a file"),
    ("/bytes/64K", "generated content"),
    ("/bytes/64K?seed=3&version=2", "another seed and version"),
    ("/bytes/64K?delay=100ms", "a late status line"),
    ("/bytes/64K?rate=1M", "a paced body"),
    ("/bytes/64K?stall-after=16K&stall-for=200ms", "a short stall"),
    ("/bytes/64K?chunked=1", "chunked transfer coding"),
    ("/bytes/64K?encoding=gzip", "gzip content coding"),
    ("/files/sample.bin?encoding=gzip", "gzip content coding of a file"),
    ("/bytes/64K?no-last-modified=1", "no Last-Modified"),
    ("/bytes/64K?weak-etag=1", "a weak ETag"),
]


def run(redbot, url, form, timeout=60):
    result = subprocess.run([redbot, "-o", form, url], capture_output=True, text=True, timeout=timeout)
    if result.returncode != 0:
        raise RuntimeError(f"redbot -o {form} {url} exited {result.returncode}: {result.stderr.strip()[-300:]}")
    return result.stdout


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--base", help="the server's base URL, e.g. http://127.0.0.1:8080")
    parser.add_argument("--redbot", default="redbot", help="the redbot executable")
    parser.add_argument("--list", action="store_true", help="print the URLs and exit")
    parser.add_argument("--url", action="append", default=[], metavar="PATH",
                        help="check this path (with its query) instead of the built-in list; repeatable")
    args = parser.parse_args()
    urls = [(path, "given with --url") for path in args.url] or URLS
    if args.list:
        for path, why in urls:
            print(f"{path}  ({why})")
        return 0
    if not args.base:
        parser.error("--base is required")

    failed = []
    for path, why in urls:
        url = args.base + path
        print(f"=== {path} ({why})", flush=True)
        try:
            print(run(args.redbot, url, "text").rstrip())
            har = json.loads(run(args.redbot, url, "har"))
        except (RuntimeError, subprocess.TimeoutExpired, json.JSONDecodeError) as error:
            failed.append(f"{path}: {error}")
            continue
        notes = [note for entry in har["log"]["entries"] for note in entry.get("_red_messages", [])]
        if not notes:
            failed.append(f"{path}: REDbot reported no notes (did it reach the server?)")
        for note in notes:
            if note.get("level") == "BAD":
                failed.append(f"{path}: BAD {note.get('note_id')}: {note.get('summary')}")
        counts = {}
        for note in notes:
            counts[note.get("level")] = counts.get(note.get("level"), 0) + 1
        print("levels: " + ", ".join(f"{level} {count}" for level, count in sorted(counts.items())), flush=True)

    print()
    if failed:
        for line in failed:
            print(f"FAIL {line}")
        print(f"check-external: {len(failed)} problem(s) in {len(urls)} URLs")
        return 1
    print(f"check-external: REDbot found nothing bad in {len(urls)} URLs")
    return 0


if __name__ == "__main__":
    sys.exit(main())
