#!/usr/bin/env python3
"""Counts what a schemathesis run did, from its NDJSON events (st run --report ndjson): the HTTP requests it
recorded, the test cases, and the checks run and failed. Prints one line, for scripts/check-api."""
import json
import sys

requests = cases = checks = failed = 0
with open(sys.argv[1]) as events:
    for line in events:
        event = json.loads(line)
        finished = event.get("ScenarioFinished")
        if not finished:
            continue
        recorder = finished.get("recorder") or {}
        requests += len(recorder.get("interactions") or {})
        cases += len(recorder.get("cases") or {})
        for results in (recorder.get("checks") or {}).values():
            checks += len(results)
            failed += sum(1 for result in results if result.get("status") == "failure")
print(f"{requests} requests recorded, {cases} test cases, {checks} checks ({failed} failed)")
