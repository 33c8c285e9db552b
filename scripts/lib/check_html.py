#!/usr/bin/env python3
"""Renders HTML files in headless Chromium and fails on any console error or load failure (used by
scripts/check-html; stdlib only).

Chromium is driven over the DevTools protocol on a pipe (--remote-debugging-pipe: JSON messages ending in NUL on
file descriptors 3 and 4), which needs no WebSocket client. Chromium's own --enable-logging output was not enough:
it logs every console message at one level, so an error cannot be told from a log line, and it does not log a
resource that failed to load. The protocol reports both: Runtime.exceptionThrown, Runtime.consoleAPICalled of type
error or assert, Log.entryAdded at level error (the browser's own errors, "Failed to load resource" among them),
Network.loadingFailed, and a navigation that fails.

With --evaluate EXPRESSION, once a page has loaded, the expression is evaluated in it (awaited when it is a
promise) and must give a positive number: docs/results/index.html offers rangecheckDrawEveryRun(), which builds every
run's detail and picture once, away from the page, and errors it throws fail the page. With --visit-links SELECTOR, once a page has loaded, every link it matches whose href is a fragment is followed in
turn (location.hash set, then the page's hashchange handlers given their turn): a page that draws what a cell links
to (docs/results/index.html draws each run's picture in its script) is checked for every drawing, not only its
first view. The visit has its own bound, --visit-timeout seconds.

Every wait is bounded: --timeout seconds per page, then the page fails; the browser is closed and, if it lingers,
killed by its PID.
"""

import argparse
import json
import os
import pathlib
import select
import shutil
import subprocess
import sys
import tempfile
import time


class Browser:
    """One headless Chromium and the pipe to it."""

    def __init__(self, executable):
        self.profile = tempfile.mkdtemp(prefix="check-html.")
        to_browser_read, self.to_browser = os.pipe()
        self.from_browser, from_browser_write = os.pipe()
        # The pipe ends Chromium reads and writes must be its descriptors 3 and 4. Copied out of the way first, as
        # either end may itself be 3 or 4; dup2 makes the copies inheritable, and every other descriptor of ours is
        # not (PEP 446), so close_fds can stay off without leaking anything.
        def arrange():
            reading, writing = os.dup(to_browser_read), os.dup(from_browser_write)
            os.dup2(reading, 3)
            os.dup2(writing, 4)

        self.process = subprocess.Popen(
            [
                executable,
                "--headless",
                # Root in a container cannot use Chromium's sandbox; the pages are our own local files.
                "--no-sandbox",
                "--disable-gpu",
                "--disable-dev-shm-usage",
                "--no-first-run",
                "--no-default-browser-check",
                "--disable-extensions",
                "--remote-debugging-pipe",
                f"--user-data-dir={self.profile}",
                "about:blank",
            ],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            preexec_fn=arrange,
            close_fds=False,
        )
        os.close(to_browser_read)
        os.close(from_browser_write)
        self.buffer = b""
        self.next_id = 0
        self.events = []

    def send(self, method, params=None, session=None):
        self.next_id += 1
        message = {"id": self.next_id, "method": method, "params": params or {}}
        if session:
            message["sessionId"] = session
        os.write(self.to_browser, json.dumps(message).encode() + b"\0")
        return self.next_id

    def receive(self, deadline):
        """The next message, or None when the deadline passes first."""
        while b"\0" not in self.buffer:
            left = deadline - time.monotonic()
            if left <= 0:
                return None
            ready, _, _ = select.select([self.from_browser], [], [], left)
            if not ready:
                return None
            chunk = os.read(self.from_browser, 65536)
            if not chunk:
                raise RuntimeError("Chromium closed its DevTools pipe (did it crash?)")
            self.buffer += chunk
        message, self.buffer = self.buffer.split(b"\0", 1)
        return json.loads(message)

    def call(self, method, params=None, session=None, timeout=10.0):
        """Sends a command and waits for its answer; events that arrive meanwhile are kept."""
        wanted = self.send(method, params, session)
        deadline = time.monotonic() + timeout
        while True:
            message = self.receive(deadline)
            if message is None:
                raise RuntimeError(f"no answer to {method} within {timeout:.0f} s")
            if message.get("id") == wanted:
                if "error" in message:
                    raise RuntimeError(f"{method}: {message['error'].get('message')}")
                return message.get("result", {})
            if "method" in message:
                self.events.append(message)

    def close(self):
        try:
            self.send("Browser.close")
        except OSError:
            pass
        try:
            self.process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(timeout=5)
        for descriptor in (self.to_browser, self.from_browser):
            try:
                os.close(descriptor)
            except OSError:
                pass
        shutil.rmtree(self.profile, ignore_errors=True)


def describe(event):
    """A problem the event reports, or None."""
    method, params = event.get("method"), event.get("params", {})
    if method == "Runtime.exceptionThrown":
        details = params.get("exceptionDetails", {})
        text = details.get("exception", {}).get("description") or details.get("text", "exception")
        return f"uncaught exception: {text.splitlines()[0]} (line {details.get('lineNumber', 0) + 1})"
    if method == "Runtime.consoleAPICalled" and params.get("type") in ("error", "assert"):
        words = [str(arg.get("value", arg.get("description", ""))) for arg in params.get("args", [])]
        return f"console.{params['type']}: {' '.join(words)}"
    if method == "Log.entryAdded" and params.get("entry", {}).get("level") == "error":
        entry = params["entry"]
        where = f" ({entry['url']})" if entry.get("url") else ""
        return f"{entry.get('source', 'browser')} error: {entry.get('text', '')}{where}"
    if method == "Network.loadingFailed" and not params.get("canceled"):
        return f"load failed: {params.get('errorText', '?')} ({params.get('type', 'resource')})"
    return None


# Follows every fragment link the selector matches, one after the other, waiting for each hashchange to be handled;
# resolves to how many were visited. Errors thrown by the page's handlers surface as Runtime.exceptionThrown.
VISIT_LINKS = """
(async function (selector) {
  const links = Array.from(document.querySelectorAll(selector))
    .map(function (link) { return link.getAttribute('href'); })
    .filter(function (href) { return href && href.charAt(0) === '#'; });
  for (const href of links) {
    await new Promise(function (resolve) {
      window.addEventListener('hashchange', function () { setTimeout(resolve, 0); }, { once: true });
      location.hash = href;
    });
  }
  return links.length;
})
"""


def visit_links(browser, session, selector, timeout):
    """Follows the page's fragment links; returns how many, or a problem."""
    expression = VISIT_LINKS.strip() + "(" + json.dumps(selector) + ")"
    result = browser.call(
        "Runtime.evaluate",
        {"expression": expression, "awaitPromise": True, "returnByValue": True},
        session=session,
        timeout=timeout,
    )
    if "exceptionDetails" in result:
        return None, "visiting the links threw: " + result["exceptionDetails"].get("text", "exception")
    return result.get("result", {}).get("value"), None


def evaluate(browser, session, expression, timeout):
    """Evaluates an expression in the page; returns its value, or a problem."""
    result = browser.call(
        "Runtime.evaluate",
        {"expression": expression, "awaitPromise": True, "returnByValue": True},
        session=session,
        timeout=timeout,
    )
    if "exceptionDetails" in result:
        details = result["exceptionDetails"]
        text = details.get("exception", {}).get("description") or details.get("text", "exception")
        return None, f"{expression} threw: {text.splitlines()[0]}"
    return result.get("result", {}).get("value"), None


def check(browser, path, timeout, visit=None, visit_timeout=120.0, expression=None):
    """The problems of one page: its console errors and load failures (and those of following its links)."""
    url = pathlib.Path(path).resolve().as_uri()
    target = browser.call("Target.createTarget", {"url": "about:blank"})["targetId"]
    session = browser.call("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
    for domain in ("Runtime", "Log", "Network", "Page"):
        browser.call(f"{domain}.enable", session=session)
    browser.events.clear()
    problems = []
    navigation = browser.call("Page.navigate", {"url": url}, session=session, timeout=timeout)
    if navigation.get("errorText"):
        problems.append(f"navigation failed: {navigation['errorText']}")
    deadline = time.monotonic() + timeout
    loaded = False
    settle_until = None
    # Events until the load event, then a short settle for errors raised by late work; bounded by the deadline.
    while True:
        now = time.monotonic()
        if settle_until is not None and now >= settle_until:
            break
        message = browser.receive(min(deadline, settle_until or deadline))
        if message is None:
            if settle_until is None and not problems:
                problems.append(f"the page did not finish loading within {timeout:.0f} s")
            break
        if message.get("sessionId") != session:
            continue
        browser.events.append(message)
        if message.get("method") == "Page.loadEventFired" and not loaded:
            loaded = True
            settle_until = time.monotonic() + 0.3
    if expression and loaded:
        try:
            value, problem = evaluate(browser, session, expression, visit_timeout)
        except RuntimeError as error:
            value, problem = None, f"{expression}: {error}"
        if problem:
            problems.append(problem)
        elif not isinstance(value, (int, float)) or value <= 0:
            problems.append(f"{expression} gave {value!r}, not a positive number")
        else:
            print(f"check-html: {expression} gave {value} in {path}")
    if visit and loaded:
        try:
            visited, problem = visit_links(browser, session, visit, visit_timeout)
        except RuntimeError as error:
            visited, problem = None, f"visiting the links: {error}"
        if problem:
            problems.append(problem)
        elif not visited:
            problems.append(f"no fragment link matches {visit!r}")
        else:
            print(f"check-html: followed {visited} links of {path}")
    for event in browser.events:
        if event.get("sessionId") == session:
            problem = describe(event)
            if problem:
                problems.append(problem)
    browser.call("Target.closeTarget", {"targetId": target})
    return problems


def run(executable, paths, timeout, visit=None, visit_timeout=120.0, expression=None):
    """Checks each page in one browser; returns how many pages failed."""
    browser = Browser(executable)
    failures = 0
    try:
        browser.call("Browser.getVersion", timeout=30)
        for path in paths:
            if not os.path.isfile(path):
                print(f"check-html: FAIL {path}: no such file")
                failures += 1
                continue
            started = time.monotonic()
            problems = check(browser, path, timeout, visit, visit_timeout, expression)
            took = time.monotonic() - started
            if problems:
                failures += 1
                print(f"check-html: FAIL {path} ({took:.1f} s)")
                for problem in problems:
                    print(f"  {problem}")
            else:
                print(f"check-html: ok {path} ({took:.1f} s, no console error, nothing failed to load)")
    finally:
        browser.close()
    return failures


def self_test(executable, timeout):
    """A page with a deliberate script error and a missing image must fail; a clean page must pass."""
    scratch = tempfile.mkdtemp(prefix="check-html-self-test.")
    try:
        broken = os.path.join(scratch, "broken.html")
        clean = os.path.join(scratch, "clean.html")
        with open(broken, "w") as file:
            file.write(
                '<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>broken</title></head><body>'
                '<img src="missing.png" alt="missing"><script>deliberatelyUndefined();</script></body></html>\n'
            )
        with open(clean, "w") as file:
            file.write(
                '<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>clean</title></head><body>'
                '<svg xmlns="http://www.w3.org/2000/svg" width="20" height="10"><rect width="20" height="10"'
                ' fill="#4e79a7"/></svg></body></html>\n'
            )
        drawing = os.path.join(scratch, "drawing.html")
        with open(drawing, "w") as file:
            # Loads cleanly; only following its second link runs the handler's error.
            file.write(
                '<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>drawing</title></head><body>'
                '<a class="cell" href="#fine">fine</a><a class="cell" href="#broken">broken</a><script>'
                "window.addEventListener('hashchange', function () {"
                " if (location.hash === '#broken') { deliberatelyUndrawn(); } });</script></body></html>\n"
            )
        browser = Browser(executable)
        try:
            browser.call("Browser.getVersion", timeout=30)
            broken_problems = check(browser, broken, timeout)
            clean_problems = check(browser, clean, timeout)
            drawing_loaded = check(browser, drawing, timeout)
            drawing_visited = check(browser, drawing, timeout, "a.cell")
            drawing_evaluated = check(browser, drawing, timeout, expression="drawEverything()")
        finally:
            browser.close()
        if not any("drawEverything" in problem for problem in drawing_evaluated):
            print("check-html self-test: FAIL: --evaluate did not report an expression that throws")
            return 1
        if drawing_loaded or not any("deliberatelyUndrawn" in problem for problem in drawing_visited):
            print("check-html self-test: FAIL: an error in a link's handler went unnoticed by --visit-links "
                  "(or the page failed without following its links): " + "; ".join(drawing_loaded + drawing_visited))
            return 1
        caught_script = any("deliberatelyUndefined" in problem for problem in broken_problems)
        caught_load = any("missing.png" in problem or "load failed" in problem for problem in broken_problems)
        print("check-html self-test: the broken page gave:")
        for problem in broken_problems:
            print(f"  {problem}")
        if not (caught_script and caught_load):
            print("check-html self-test: FAIL: the script error or the missing image went unnoticed")
            return 1
        if clean_problems:
            print("check-html self-test: FAIL: the clean page was reported: " + "; ".join(clean_problems))
            return 1
        print("check-html self-test: ok (the script error, the failed load and the error behind a followed link "
              "were caught, the clean page passed)")
        return 0
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("files", nargs="*", help="HTML files to render")
    parser.add_argument("--chromium", default="chromium", help="the Chromium executable")
    parser.add_argument("--timeout", type=float, default=20.0, help="seconds a page may take to load")
    parser.add_argument("--self-test", action="store_true", help="prove a broken page fails and a clean one passes")
    parser.add_argument("--visit-links", metavar="SELECTOR", help="after loading, follow every fragment link matching this")
    parser.add_argument("--visit-timeout", type=float, default=120.0, help="seconds following the links may take")
    parser.add_argument("--evaluate", metavar="EXPRESSION", help="after loading, evaluate this; it must give a positive number")
    arguments = parser.parse_args()
    if arguments.self_test:
        return self_test(arguments.chromium, arguments.timeout)
    if not arguments.files:
        parser.error("name at least one HTML file, or --self-test")
    failed = run(
        arguments.chromium, arguments.files, arguments.timeout, arguments.visit_links, arguments.visit_timeout,
        arguments.evaluate,
    )
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
