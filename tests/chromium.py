"""Headless Chromium for the picture tests (Debian's `chromium`; no browser is downloaded).

`browser_or_skip()` finds it (a skip without it, a failure on CI, which installs it);
`label_problems` asks Chromium's own layout whether every text of every SVG on a page lies inside
its picture and clear of the others; `Page` drives a page through the DevTools protocol over
`--remote-debugging-pipe` (JSON messages on fds 3 and 4, NUL-terminated), so a test can type into
an input and press keys as a user does, with the standard library only.
"""

from __future__ import annotations

import fcntl
import html
import json
import os
import re
import shutil
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

FLAGS = ["--headless=new", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--force-device-scale-factor=1",
         "--no-first-run", "--disable-extensions"]


def find_browser() -> str | None:
    return next((shutil.which(n) for n in ("chromium", "chromium-browser", "google-chrome") if shutil.which(n)), None)


def browser_or_skip() -> str:
    """Chromium, or a skip on a contributor's machine without it; CI (.ci/run installs it) must look."""
    browser = find_browser()
    if browser is None:
        if os.environ.get("CI"):
            pytest.fail("CI must render the pictures: chromium is missing (.ci/run installs Debian's chromium)")
        pytest.skip("chromium not installed (Debian: apt-get install chromium)")
    return browser


# For every <svg> on the page (nested ones included): each of its own texts (those whose nearest
# svg is it) must lie inside its width and height, and clear of its other texts.
_MEASURE = """<script>
const out = [];
let measured = 0;
for (const svg of document.querySelectorAll('svg')) {
  const W = +svg.getAttribute('width'), H = +svg.getAttribute('height');
  const own = [...svg.querySelectorAll('text')].filter(t => t.closest('svg') === svg);
  const boxes = own.map(t => [t, t.getBBox()]);
  measured += boxes.length;
  for (const [t, b] of boxes) {
    if (b.x < 0 || b.y < 0 || b.x + b.width > W || b.y + b.height > H) out.push('outside: ' + t.textContent);
  }
  for (let i = 0; i < boxes.length; i++) for (let j = i + 1; j < boxes.length; j++) {
    const [s, a] = boxes[i], [t, b] = boxes[j];
    const overlap = a.x < b.x + b.width - 1 && b.x < a.x + a.width - 1 && a.y < b.y + b.height - 1
      && b.y < a.y + a.height - 1;
    if (overlap) out.push('overlap: ' + s.textContent + ' | ' + t.textContent);
  }
}
document.body.setAttribute('data-problems', JSON.stringify(out));
document.body.setAttribute('data-measured', String(measured));
</script>"""


def dump_dom(browser: str, page: Path, tmp_path: Path) -> str:
    done = subprocess.run([browser, *FLAGS, "--dump-dom", page.as_uri()], capture_output=True, text=True,
                          timeout=120, check=False, env=dict(os.environ, HOME=str(tmp_path)))
    return done.stdout


def label_problems(browser: str, markup: str, tmp_path: Path) -> tuple[int, list[str], list[str]]:
    """(texts measured, problems, every text drawn) for an SVG or an HTML page, as Chromium lays it out."""
    body = markup.split("<body>", 1)[1].rsplit("</body>", 1)[0] if "<body>" in markup else markup
    page = tmp_path / "measure.html"
    page.write_text(f'<!DOCTYPE html><html><body style="margin:0">{body}{_MEASURE}</body></html>')
    dom = dump_dom(browser, page, tmp_path)
    measured = re.search(r'data-measured="(\d+)"', dom)
    problems = re.search(r"data-problems=\"([^\"]*)\"", dom)
    assert measured and problems, dom[-2000:]
    texts = [html.unescape(t) for t in re.findall(r"<text[^>]*>([^<]*)</text>", dom)]
    return int(measured.group(1)), json.loads(html.unescape(problems.group(1))), texts


def _high(fd: int) -> int:
    """`fd` moved above 9, so putting the pipes at 3 and 4 in the child clobbers neither."""
    moved = fcntl.fcntl(fd, fcntl.F_DUPFD, 10)
    os.close(fd)
    return moved


class Page:
    """One page in a headless Chromium driven over the DevTools pipe (use as a context manager)."""

    def __init__(self, browser: str, url: str, profile: Path) -> None:
        to_child, from_us = map(_high, os.pipe())
        from_child, to_us = map(_high, os.pipe())

        def fds() -> None:  # in the child: Chromium reads commands on fd 3, writes on fd 4
            os.dup2(to_child, 3)
            os.dup2(to_us, 4)

        self._proc = subprocess.Popen(
            [browser, *FLAGS, "--remote-debugging-pipe", f"--user-data-dir={profile}", "about:blank"],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, pass_fds=(3, 4),
            preexec_fn=fds, env=dict(os.environ, HOME=str(profile)))
        os.close(to_child)
        os.close(to_us)
        self._out, self._in = from_us, from_child
        self._buffer = b""
        self._next = 0
        target = self._call("Target.createTarget", {"url": url})["targetId"]
        self._session = self._call("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
        deadline = time.monotonic() + 30
        while self.evaluate("location.href + ' ' + document.readyState") != f"{url} complete":
            assert time.monotonic() < deadline, "the page did not load"
            time.sleep(0.05)

    def _call(self, method: str, params: dict[str, Any], session: str | None = None) -> dict[str, Any]:
        self._next += 1
        message: dict[str, Any] = {"id": self._next, "method": method, "params": params}
        if session:
            message["sessionId"] = session
        os.write(self._out, json.dumps(message).encode() + b"\0")
        deadline = time.monotonic() + 30
        while True:
            while b"\0" not in self._buffer:
                assert time.monotonic() < deadline, f"no answer to {method}"
                chunk = os.read(self._in, 65536)
                assert chunk, f"chromium closed the pipe during {method}"
                self._buffer += chunk
            raw, self._buffer = self._buffer.split(b"\0", 1)
            reply = json.loads(raw)
            if reply.get("id") == self._next:
                assert "error" not in reply, reply["error"]
                return dict(reply.get("result", {}))

    def evaluate(self, expression: str) -> Any:
        result = self._call("Runtime.evaluate", {"expression": expression, "returnByValue": True}, self._session)
        return result.get("result", {}).get("value")

    def type_text(self, text: str) -> None:
        """Text typed into the focused element, as a keyboard would (an `input` event)."""
        self._call("Input.insertText", {"text": text}, self._session)

    def press(self, key: str, code: int) -> None:
        for kind in ("keyDown", "keyUp"):
            self._call("Input.dispatchKeyEvent", {"type": kind, "key": key, "code": key,
                                                  "windowsVirtualKeyCode": code, "nativeVirtualKeyCode": code},
                       self._session)

    def __enter__(self) -> Page:
        return self

    def __exit__(self, *_: object) -> None:
        try:
            self._call("Browser.close", {})
        except AssertionError:
            pass
        try:
            self._proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self._proc.kill()
            self._proc.wait()
        os.close(self._out)
        os.close(self._in)
