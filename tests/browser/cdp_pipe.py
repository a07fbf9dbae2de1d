"""A minimal Chrome DevTools Protocol client over --remote-debugging-pipe (standard library only).

Headless Chromium reads CDP commands from fd 3 and writes replies and events to fd 4, each a JSON
message ended by a NUL byte. Used by tests/browser/report_browser_test.py and
bench/report_bench.py to load report pages from file://, watch the console and the network, run
a script in the page and take screenshots.
"""

import base64
import fcntl
import json
import os
import select
import shutil
import subprocess
import tempfile
import time


def find_chromium():
    """The chromium binary (Debian's `chromium` package), or None."""
    for name in ("chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name)
        if path:
            return path
    return None


class CdpError(RuntimeError):
    pass


class Browser:
    """One headless Chromium with one page; `events` collects every event of that page."""

    def __init__(self, binary, width=1200, height=900, timeout=60.0):
        self.timeout = timeout
        self.profile = tempfile.mkdtemp(prefix="libreyolo-chromium-")
        cmd_r, cmd_w = os.pipe()
        resp_r, resp_w = os.pipe()
        # Park the child's ends above 10 so dup2 onto 3 and 4 cannot clobber one another.
        hi_cmd = fcntl.fcntl(cmd_r, fcntl.F_DUPFD, 10)
        hi_resp = fcntl.fcntl(resp_w, fcntl.F_DUPFD, 10)

        def child_fds():
            os.dup2(hi_cmd, 3)
            os.dup2(hi_resp, 4)

        args = [binary, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
                "--no-default-browser-check", "--disable-background-networking",
                "--disable-component-update", "--disable-sync", "--disable-extensions",
                "--hide-scrollbars", "--mute-audio", f"--user-data-dir={self.profile}",
                f"--window-size={width},{height}", "--remote-debugging-pipe", "about:blank"]
        self.proc = subprocess.Popen(args, preexec_fn=child_fds, close_fds=False,
                                     stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                     stderr=subprocess.DEVNULL)
        for fd in (cmd_r, resp_w, hi_cmd, hi_resp):
            os.close(fd)
        self.wfd, self.rfd = cmd_w, resp_r
        self.buf = b""
        self.next_id = 0
        self.events = []
        self.session = None
        targets = self.call("Target.getTargets")["targetInfos"]
        pages = [t for t in targets if t["type"] == "page"]
        target = pages[0]["targetId"] if pages else self.call(
            "Target.createTarget", url="about:blank")["targetId"]
        self.session = self.call("Target.attachToTarget", targetId=target,
                                 flatten=True)["sessionId"]
        for domain in ("Page", "Runtime", "Log", "Network"):
            self.page(f"{domain}.enable")
        self.page("Emulation.setDeviceMetricsOverride", width=width, height=height,
                  deviceScaleFactor=1, mobile=False)

    def _send(self, msg):
        data = json.dumps(msg).encode() + b"\0"
        while data:
            n = os.write(self.wfd, data)
            data = data[n:]

    def _recv(self, deadline):
        while b"\0" not in self.buf:
            left = deadline - time.monotonic()
            if left <= 0:
                raise CdpError("no answer from chromium in time")
            ready, _, _ = select.select([self.rfd], [], [], left)
            if not ready:
                continue
            chunk = os.read(self.rfd, 1 << 20)
            if not chunk:
                raise CdpError("chromium closed the debugging pipe (did it crash?)")
            self.buf += chunk
        msg, self.buf = self.buf.split(b"\0", 1)
        return json.loads(msg)

    def _call(self, method, session, params):
        self.next_id += 1
        msg = {"id": self.next_id, "method": method, "params": params}
        if session:
            msg["sessionId"] = session
        self._send(msg)
        deadline = time.monotonic() + self.timeout
        while True:
            reply = self._recv(deadline)
            if reply.get("id") == self.next_id:
                if "error" in reply:
                    raise CdpError(f"{method}: {reply['error']}")
                return reply.get("result", {})
            if "method" in reply and reply.get("sessionId") == self.session:
                self.events.append(reply)

    def call(self, method, **params):
        """A browser-level command."""
        return self._call(method, None, params)

    def page(self, method, **params):
        """A command to the page."""
        return self._call(method, self.session, params)

    def wait_event(self, method, timeout=None):
        deadline = time.monotonic() + (timeout or self.timeout)
        for e in self.events:
            if e["method"] == method:
                return e
        while True:
            reply = self._recv(deadline)
            if "method" in reply and reply.get("sessionId") == self.session:
                self.events.append(reply)
                if reply["method"] == method:
                    return reply

    def load(self, url):
        """Navigates and waits for the load event; returns the seconds it took."""
        self.events = []
        start = time.monotonic()
        result = self.page("Page.navigate", url=url)
        if result.get("errorText"):
            raise CdpError(f"{url}: {result['errorText']}")
        self.wait_event("Page.loadEventFired")
        return time.monotonic() - start

    def evaluate(self, expression):
        r = self.page("Runtime.evaluate", expression=expression, returnByValue=True,
                      awaitPromise=True)
        if "exceptionDetails" in r:
            raise CdpError(f"script failed: {r['exceptionDetails']}")
        return r["result"].get("value")

    def screenshot(self, path, full_page=True):
        params = {"format": "png"}
        if full_page:
            params["captureBeyondViewport"] = True
            size = self.page("Page.getLayoutMetrics")["cssContentSize"]
            params["clip"] = {"x": 0, "y": 0, "width": size["width"],
                              "height": min(size["height"], 16000), "scale": 1}
        data = base64.b64decode(self.page("Page.captureScreenshot", **params)["data"])
        with open(path, "wb") as f:
            f.write(data)
        return data

    def console_errors(self):
        """Console errors, uncaught exceptions and browser log errors (CSP violations included)."""
        out = []
        for e in self.events:
            p = e.get("params", {})
            if e["method"] == "Runtime.consoleAPICalled" and p.get("type") in ("error", "assert"):
                out.append("console." + p["type"] + ": " +
                           " ".join(str(a.get("value", a.get("description", "")))
                                    for a in p.get("args", [])))
            elif e["method"] == "Runtime.exceptionThrown":
                out.append("exception: " + json.dumps(p.get("exceptionDetails", {}))[:500])
            elif e["method"] == "Log.entryAdded" and p["entry"]["level"] == "error":
                out.append("log: " + p["entry"].get("text", ""))
        return out

    def network_requests(self):
        """Every request the page attempted other than the file:// page itself and data: URLs."""
        out = []
        for e in self.events:
            if e["method"] == "Network.requestWillBeSent":
                url = e["params"]["request"]["url"]
                if not url.startswith(("file://", "data:")):
                    out.append(url)
        return out

    def close(self):
        try:
            self.call("Browser.close")
        except (CdpError, OSError):
            pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        for fd in (self.wfd, self.rfd):
            try:
                os.close(fd)
            except OSError:
                pass
        shutil.rmtree(self.profile, ignore_errors=True)
