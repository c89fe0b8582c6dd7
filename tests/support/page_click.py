#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Clicks in a page as a user would, in headless Chromium (Debian's), over
the DevTools protocol on a pipe (--remote-debugging-pipe: no port, no extra
package): load URL; for each SELECTOR UNTIL pair, wait for SELECTOR, click
it, wait until the JavaScript expression UNTIL is true; print the DOM. Exit 1
with the reason when a wait runs out or the page logs an error or throws;
every wait is bounded.

Usage: page_click.py URL PROFILE_DIR SELECTOR UNTIL [SELECTOR UNTIL]..."""
import json
import os
import subprocess
import sys
import time


def main():
    if len(sys.argv) < 5 or len(sys.argv) % 2 == 0:
        sys.exit("usage: page_click.py URL PROFILE_DIR SELECTOR UNTIL [SELECTOR UNTIL]...")
    url, profile = sys.argv[1:3]
    steps = list(zip(sys.argv[3::2], sys.argv[4::2]))
    to_chrome_r, to_chrome_w = os.pipe()
    from_chrome_r, from_chrome_w = os.pipe()
    log = open(os.path.join(profile, "chromium-click.log"), "ab")
    # Chromium reads commands on fd 3 and writes answers on fd 4.
    cmd = ("exec chromium --headless --no-sandbox --disable-gpu --no-first-run --remote-debugging-pipe "
           f"--user-data-dir='{profile}' about:blank 3<&{to_chrome_r} 4>&{from_chrome_w}")
    proc = subprocess.Popen(["sh", "-c", cmd], pass_fds=(to_chrome_r, from_chrome_w), stdout=log, stderr=log)
    os.close(to_chrome_r)
    os.close(from_chrome_w)
    buf = b""
    events = []
    next_id = [0]

    def call(method, params=None, session=None, timeout=20):
        nonlocal buf
        next_id[0] += 1
        msg = {"id": next_id[0], "method": method, "params": params or {}}
        if session:
            msg["sessionId"] = session
        os.write(to_chrome_w, json.dumps(msg).encode() + b"\0")
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            while b"\0" in buf:
                raw, buf = buf.split(b"\0", 1)
                m = json.loads(raw)
                if m.get("id") == next_id[0]:
                    if "error" in m:
                        raise RuntimeError(f"{method}: {m['error']}")
                    return m.get("result", {})
                if "method" in m:
                    events.append(m)
            chunk = os.read(from_chrome_r, 65536)
            if not chunk:
                raise RuntimeError("chromium went away")
            buf += chunk
        raise RuntimeError(f"{method}: no answer within {timeout} s")

    def evaluate(session, expr):
        r = call("Runtime.evaluate", {"expression": expr, "returnByValue": True}, session)
        if "exceptionDetails" in r:
            raise RuntimeError(f"{expr}: {r['exceptionDetails'].get('text')}")
        return r["result"].get("value")

    def wait(session, expr, what, seconds):
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            if evaluate(session, expr):
                return
            time.sleep(0.2)
        raise RuntimeError(f"{what}: not within {seconds} s")

    try:
        target = [t for t in call("Target.getTargets")["targetInfos"] if t["type"] == "page"][0]
        session = call("Target.attachToTarget", {"targetId": target["targetId"], "flatten": True})["sessionId"]
        call("Runtime.enable", session=session)
        call("Page.enable", session=session)
        call("Page.navigate", {"url": url}, session)
        for selector, until in steps:
            wait(session, f"document.querySelector({json.dumps(selector)}) !== null", "no " + selector, 20)
            evaluate(session, f"document.querySelector({json.dumps(selector)}).click(), true")
            wait(session, until, until, 60)
        print(evaluate(session, "document.documentElement.outerHTML"))
        bad = [e for e in events if e["method"] == "Runtime.exceptionThrown" or
               (e["method"] == "Runtime.consoleAPICalled" and e["params"].get("type") in ("error", "warning"))]
        if bad:
            raise RuntimeError("the page logged: " + json.dumps(bad[0]["params"])[:500])
        return 0
    except RuntimeError as e:
        print(f"page_click: {e}", file=sys.stderr)
        return 1
    finally:
        try:
            call("Browser.close", timeout=5)
        except RuntimeError:
            pass
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


if __name__ == "__main__":
    sys.exit(main())
