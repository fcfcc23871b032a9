"""A small DevTools-protocol driver for headless Chromium, standard library only.

Chromium started with --remote-debugging-pipe reads commands from its file descriptor 3
and writes replies and events to descriptor 4, each a JSON text ended by a NUL byte: no
websocket, no npm. Used by tests/browser/view_test.py.
"""
import base64
import json
import os
import select
import shutil
import subprocess
import tempfile
import time


def find_chromium():
    env = os.environ.get("MEMSNAP_CHROMIUM")
    if env:
        return env
    for name in ("chromium", "chromium-browser", "google-chrome"):
        p = shutil.which(name)
        if p:
            return p
    return None


class Browser:
    def __init__(self, chromium, width=1440, height=900):
        self.profile = tempfile.mkdtemp(prefix="memsnap-cdp-")
        to_child_r, self.to_child = os.pipe()
        self.from_child, from_child_w = os.pipe()

        def fds():
            # The child's 3 reads our commands, its 4 carries its replies. Copies first:
            # a pipe may already sit on 3 or 4, and dup2 onto itself keeps close-on-exec.
            r, w = os.dup(to_child_r), os.dup(from_child_w)
            os.dup2(r, 3)
            os.dup2(w, 4)

        args = [chromium, "--headless", "--no-sandbox", "--disable-gpu",
                "--disable-background-networking", "--disable-component-update",
                "--disable-sync", "--no-first-run", "--disable-extensions",
                "--user-data-dir=" + self.profile,
                # Every host name fails to resolve: a page that asks for something
                # reaches nothing, and the request still shows in the events.
                "--host-resolver-rules=MAP * ~NOTFOUND",
                "--remote-debugging-pipe", "--window-size=%d,%d" % (width, height),
                "about:blank"]
        # Popen closes descriptors after preexec_fn runs; 3 and 4 must survive it.
        self.proc = subprocess.Popen(args, preexec_fn=fds, close_fds=False,
                                     stdout=subprocess.DEVNULL, stderr=open(os.path.join(self.profile, "chromium.log"), "w"))
        os.close(to_child_r)
        os.close(from_child_w)
        self.buf = b""
        self.next_id = 0
        self.events = []
        self.session = None
        self.width, self.height = width, height

    def close(self):
        try:
            self.call("Browser.close", timeout=5)
        except Exception:
            pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        os.close(self.to_child)
        os.close(self.from_child)
        shutil.rmtree(self.profile, ignore_errors=True)

    def _read(self, deadline):
        while b"\0" not in self.buf:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError("no reply from chromium")
            r, _, _ = select.select([self.from_child], [], [], left)
            if r:
                chunk = os.read(self.from_child, 1 << 20)
                if not chunk:
                    raise EOFError("chromium closed its pipe")
                self.buf += chunk
        msg, self.buf = self.buf.split(b"\0", 1)
        return json.loads(msg)

    def call(self, method, params=None, session=True, timeout=60):
        self.next_id += 1
        msg = {"id": self.next_id, "method": method, "params": params or {}}
        if session and self.session:
            msg["sessionId"] = self.session
        data = json.dumps(msg).encode() + b"\0"
        while data:
            n = os.write(self.to_child, data)
            data = data[n:]
        deadline = time.monotonic() + timeout
        while True:
            m = self._read(deadline)
            if m.get("id") == self.next_id:
                if "error" in m:
                    raise RuntimeError("%s: %s" % (method, m["error"]))
                return m.get("result", {})
            self.events.append(m)

    def wait_event(self, method, timeout=60):
        deadline = time.monotonic() + timeout
        for i, m in enumerate(self.events):
            if m.get("method") == method:
                return self.events.pop(i)
        while True:
            m = self._read(deadline)
            if m.get("method") == method:
                return m
            self.events.append(m)

    def attach(self):
        targets = self.call("Target.getTargets", session=False)["targetInfos"]
        page = [t for t in targets if t["type"] == "page"][0]
        self.session = self.call("Target.attachToTarget",
                                 {"targetId": page["targetId"], "flatten": True},
                                 session=False)["sessionId"]
        self.call("Emulation.setDeviceMetricsOverride",
                  {"width": self.width, "height": self.height, "deviceScaleFactor": 1,
                   "mobile": False})
        for domain in ("Page", "Network", "Runtime", "Log"):
            self.call(domain + ".enable")

    def navigate(self, url, timeout=60):
        t0 = time.monotonic()
        self.call("Page.navigate", {"url": url})
        self.wait_event("Page.loadEventFired", timeout)
        return time.monotonic() - t0

    def eval(self, expr, timeout=60):
        r = self.call("Runtime.evaluate", {"expression": expr, "returnByValue": True,
                                           "awaitPromise": True}, timeout=timeout)
        if "exceptionDetails" in r:
            raise RuntimeError("page script failed: %s" % r["exceptionDetails"])
        return r["result"].get("value")

    def mouse(self, kind, x, y, button="none", clicks=0):
        self.call("Input.dispatchMouseEvent", {"type": kind, "x": x, "y": y,
                                               "button": button, "clickCount": clicks})

    def click(self, x, y):
        self.mouse("mouseMoved", x, y)
        self.mouse("mousePressed", x, y, "left", 1)
        self.mouse("mouseReleased", x, y, "left", 1)

    def drag(self, x0, y0, x1, y1, steps=8):
        self.mouse("mouseMoved", x0, y0)
        self.mouse("mousePressed", x0, y0, "left", 1)
        for i in range(1, steps + 1):
            self.mouse("mouseMoved", x0 + (x1 - x0) * i / steps, y0 + (y1 - y0) * i / steps,
                       "left")
        self.mouse("mouseReleased", x1, y1, "left", 1)

    def key(self, key, code=None):
        for kind in ("keyDown", "keyUp"):
            self.call("Input.dispatchKeyEvent", {"type": kind, "key": key,
                                                 "code": code or key})

    def screenshot(self, path):
        data = self.call("Page.captureScreenshot", {"format": "png"})["data"]
        with open(path, "wb") as f:
            f.write(base64.b64decode(data))

    def drain(self):
        """Reads whatever events are waiting, without blocking."""
        while True:
            r, _, _ = select.select([self.from_child], [], [], 0.2)
            if not r and b"\0" not in self.buf:
                return
            try:
                self.events.append(self._read(time.monotonic() + 1))
            except TimeoutError:
                return
