"""A headless Chromium that opens the built documentation site as a reader's browser would.

It speaks the Chrome DevTools Protocol over ``--remote-debugging-pipe`` (file descriptors 3 and 4,
NUL-terminated JSON messages), so it needs nothing beyond Debian's ``chromium`` package: no
websocket library, no Selenium or Playwright. :func:`check_page` loads one page, waits for MathJax,
and names every problem a reader would meet there: an image that did not load, a JavaScript error
(thrown or logged), a resource that failed to load, an equation MathJax did not render.
:func:`broken_links` then checks the links every page holds against the site's files and anchors.
"""
from __future__ import annotations

import base64
import contextlib
import fcntl
import functools
import http.server
import json
import os
import queue
import shutil
import subprocess
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urldefrag, urlsplit


def chromium_path() -> str | None:
    """The Chromium executable (``SFL_SIM_CHROMIUM``, else ``chromium`` or ``chromium-browser`` on PATH)."""
    return os.environ.get("SFL_SIM_CHROMIUM") or shutil.which("chromium") or shutil.which("chromium-browser")


class Browser:
    """One headless Chromium with one tab, driven over the DevTools pipe."""

    def __init__(self, executable: str, profile: Path, width: int = 1280, height: int = 900) -> None:
        to_child_r, self._to_child = os.pipe()
        self._from_child, from_child_w = os.pipe()

        def wire() -> None:  # in the child: the pipe ends where Chromium expects them (via fds >= 10,
            # so that neither end is overwritten when it already is 3 or 4)
            high_r, high_w = fcntl.fcntl(to_child_r, fcntl.F_DUPFD, 10), fcntl.fcntl(from_child_w, fcntl.F_DUPFD, 10)
            os.dup2(high_r, 3)
            os.dup2(high_w, 4)

        self._proc = subprocess.Popen(
            [executable, "--headless=new", "--remote-debugging-pipe", "--no-sandbox", "--disable-gpu",
             "--no-first-run", "--no-default-browser-check", "--disable-extensions",
             f"--user-data-dir={profile}", f"--window-size={width},{height}", "about:blank"],
            preexec_fn=wire, pass_fds=(3, 4),  # kept open past preexec_fn stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL)
        os.close(to_child_r)
        os.close(from_child_w)
        self._next_id = 0
        self._replies: dict[int, queue.Queue[dict[str, Any]]] = {}
        self._lock = threading.Lock()
        self.events: queue.Queue[dict[str, Any]] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()
        target = self.call("Target.createTarget", url="about:blank")["targetId"]
        self._session = self.call("Target.attachToTarget", targetId=target, flatten=True)["sessionId"]
        for domain in ("Page", "Runtime", "Log", "Network"):
            self.send(f"{domain}.enable")
        self.send("Emulation.setDeviceMetricsOverride", width=width, height=height, deviceScaleFactor=1,
                  mobile=False)

    def _read(self) -> None:
        buffer = b""
        with os.fdopen(self._from_child, "rb", buffering=0) as pipe:
            while chunk := pipe.read(65536):
                buffer += chunk
                while b"\0" in buffer:
                    raw, buffer = buffer.split(b"\0", 1)
                    message = json.loads(raw)
                    if "id" in message:
                        with self._lock:
                            box = self._replies.get(message["id"])
                        if box is not None:
                            box.put(message)
                    else:
                        self.events.put(message)

    def call(self, method: str, timeout_s: float = 30, session: bool = False, **params: Any) -> dict[str, Any]:
        """Send one command and wait for its result; an error reply raises ``RuntimeError``."""
        with self._lock:
            self._next_id += 1
            ident = self._next_id
            box: queue.Queue[dict[str, Any]] = queue.Queue()
            self._replies[ident] = box
        message: dict[str, Any] = {"id": ident, "method": method, "params": params}
        if session:
            message["sessionId"] = self._session
        os.write(self._to_child, json.dumps(message).encode() + b"\0")
        reply = box.get(timeout=timeout_s)
        if "error" in reply:
            raise RuntimeError(f"{method}: {reply['error']}")
        return dict(reply.get("result", {}))

    def send(self, method: str, **params: Any) -> dict[str, Any]:
        """:meth:`call` in the tab's session."""
        return self.call(method, session=True, **params)

    def close(self) -> None:
        with contextlib.suppress(Exception):  # already gone: nothing to close
            self.call("Browser.close", timeout_s=5)
        os.close(self._to_child)
        try:
            self._proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self._proc.kill()

    def screenshot(self, path: Path) -> None:
        """The whole page (past the window's height) as a PNG."""
        data = self.send("Page.captureScreenshot", format="png", captureBeyondViewport=True)["data"]
        path.write_bytes(base64.b64decode(data))


#: Run in the page once it has loaded: waits for MathJax, then reports what a reader would see.
_INSPECT = """(async () => {
  if (window.MathJax && MathJax.startup && MathJax.startup.promise) {
    await MathJax.startup.promise;
    if (MathJax.typesetPromise) await MathJax.typesetPromise();
  }
  const broken = [...document.images].filter(i => !i.complete || i.naturalWidth === 0)
    .map(i => i.getAttribute('src'));
  const unrendered = [...document.querySelectorAll('.arithmatex')]
    .filter(e => !e.querySelector('mjx-container')).map(e => e.textContent.trim().slice(0, 60));
  const raw = [...document.querySelectorAll('article p, article li, article td')]
    .filter(e => /\\\\\\(|\\\\\\[|\\$\\$/.test(e.textContent) && !e.querySelector('code, mjx-container, .arithmatex'))
    .map(e => e.textContent.trim().slice(0, 60));
  const links = [...document.querySelectorAll('a[href]')].map(a => a.href);
  const ids = [...document.querySelectorAll('[id]')].map(e => e.id);
  return {broken, unrendered: unrendered.concat(raw), links, ids, images: document.images.length,
          equations: document.querySelectorAll('mjx-container').length};
})()"""


@dataclass
class PageReport:
    """What one page showed: its problems, links, element ids and how many images and equations."""

    url: str
    problems: list[str] = field(default_factory=list)
    links: list[str] = field(default_factory=list)
    ids: set[str] = field(default_factory=set)
    images: int = 0
    equations: int = 0


def _drain(browser: Browser) -> list[dict[str, Any]]:
    found = []
    while True:
        try:
            found.append(browser.events.get_nowait())
        except queue.Empty:
            return found


def check_page(browser: Browser, url: str, timeout_s: float = 30) -> PageReport:
    """Load ``url`` in ``browser`` and name every problem a reader would meet on it."""
    _drain(browser)
    browser.send("Page.navigate", url=url)
    events: list[dict[str, Any]] = []
    while True:
        event = browser.events.get(timeout=timeout_s)
        events.append(event)
        if event.get("method") == "Page.loadEventFired":
            break
    seen = browser.send("Runtime.evaluate", expression=_INSPECT, awaitPromise=True, returnByValue=True,
                        timeout=timeout_s * 1000)
    if "exceptionDetails" in seen:
        raise RuntimeError(f"{url}: inspecting the page failed: {seen['exceptionDetails']}")
    value = seen["result"]["value"]
    events += _drain(browser)
    report = PageReport(url, links=value["links"], ids=set(value["ids"]), images=value["images"],
                        equations=value["equations"])
    report.problems += [f"image did not load: {src}" for src in value["broken"]]
    report.problems += [f"equation not rendered: {text!r}" for text in value["unrendered"]]
    requested = {e["params"]["requestId"]: e["params"]["request"]["url"] for e in events
                 if e.get("method") == "Network.requestWillBeSent"}
    for event in events:
        method, params = event.get("method"), event.get("params", {})
        if method == "Runtime.exceptionThrown":
            details = params["exceptionDetails"]
            text = details.get("exception", {}).get("description") or details.get("text")
            report.problems.append(f"JavaScript error: {str(text).splitlines()[0]}")
        elif method == "Runtime.consoleAPICalled" and params.get("type") == "error":
            args = " ".join(str(a.get("value", a.get("description", ""))) for a in params.get("args", ()))
            report.problems.append(f"console error: {args[:200]}")
        elif method == "Log.entryAdded" and params["entry"].get("level") == "error":
            entry = params["entry"]
            report.problems.append(f"browser error: {entry.get('text')} {entry.get('url', '')}".strip())
        elif method == "Network.loadingFailed" and not params.get("canceled"):
            url_failed = requested.get(params.get("requestId"), params.get("requestId"))
            report.problems.append(f"failed to load ({params.get('errorText')}): {url_failed}")
    return report


def broken_links(reports: list[PageReport], root: Path, base_url: str) -> list[str]:
    """Every link of ``reports`` into the site (``base_url`` served from ``root``) whose file or
    anchor is missing; links out of the site are not followed (the check runs offline)."""
    ids = {urldefrag(r.url)[0]: r.ids for r in reports}
    problems = []
    for report in reports:
        for link in report.links:
            target, fragment = urldefrag(link)
            if not target.startswith(base_url):
                continue
            path = root / unquote(urlsplit(target).path).lstrip("/")
            if path.is_dir():
                path = path / "index.html"
            if not path.is_file():
                problems.append(f"{report.url}: broken link {link}")
            elif fragment and target in ids and unquote(fragment) not in ids[target]:
                problems.append(f"{report.url}: broken anchor {link}")
    return problems


@contextmanager
def serve(root: Path) -> Iterator[str]:
    """Serve ``root`` over HTTP on a free local port (the search's web worker needs http, not file://);
    yields the base URL."""
    handler = functools.partial(_QuietHandler, directory=str(root))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the base class's name
        pass
