"""A bare Chromium driven over the DevTools protocol pipe, for bench/live.py.

Why not Playwright here: Playwright enables the Network domain on every page
(it reports requests and WebSocket frames to its driver), so each WebSocket
frame a page receives is also serialised by the browser process and shipped to
the Node driver. With 20 busy pages that reporting costs a large share of the
machine the bench measures, and no user's browser pays it. This client enables
no domain: it opens tabs, runs a script in them now and then, and that is all
(bench/live_trace.py adds tracing, through ``on_event``).

The browser is started with ``--remote-debugging-pipe``: it reads commands on
fd 3 and writes answers on fd 4, each a JSON object followed by a NUL byte.
"""

from __future__ import annotations

import contextlib
import fcntl
import itertools
import json
import os
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

VIEWPORT = {"width": 1280, "height": 720, "deviceScaleFactor": 1, "mobile": False}
# The switches Playwright starts its test browser with (less the ones only other
# platforms need). Without them every headless window also runs browser services
# and pre-renders its omnibox popups, which cost more CPU than the pages do.
AUTOMATION_SWITCHES = [
    "--disable-field-trial-config",
    "--disable-background-timer-throttling",
    "--disable-backgrounding-occluded-windows",
    "--disable-back-forward-cache",
    "--disable-breakpad",
    "--disable-component-extensions-with-background-pages",
    "--no-default-browser-check",
    "--disable-default-apps",
    "--disable-dev-shm-usage",
    "--disable-extensions",
    "--disable-features="
    + ",".join(
        [
            "AvoidUnnecessaryBeforeUnloadCheckSync",
            "DestroyProfileOnBrowserClose",
            "HttpsUpgrades",
            "HttpsFirstBalancedModeAutoEnable",
            "LensOverlay",
            "MediaRouter",
            "PaintHolding",
            "ThirdPartyStoragePartitioning",
            "OptimizationHints",
            "NetworkTimeServiceQuerying",
            "AimEnabled",
            "PreconnectToSearch",
        ]
    ),
    "--allow-pre-commit-input",
    "--disable-hang-monitor",
    "--disable-ipc-flooding-protection",
    "--disable-popup-blocking",
    "--disable-prompt-on-repost",
    "--disable-renderer-backgrounding",
    "--force-color-profile=srgb",
    "--metrics-recording-only",
    "--password-store=basic",
    "--use-mock-keychain",
    "--no-service-autorun",
    "--disable-search-engine-choice-screen",
    "--disable-infobars",
    "--hide-scrollbars",
    "--mute-audio",
    "--blink-settings=primaryHoverType=2,availableHoverTypes=2,"
    "primaryPointerType=4,availablePointerTypes=4",
]


class ProtocolError(RuntimeError):
    pass


class Browser:
    """One headless Chromium process; ``call`` sends a command and waits for its answer."""

    def __init__(
        self,
        executable: str,
        args: Sequence[str],
        nice: int = 0,
        on_event: Callable[[dict[str, Any]], None] | None = None,
    ) -> None:
        """``on_event``: called on the reader thread with each event the browser sends
        (only a domain a caller enables sends any: bench/live_trace.py's tracing)."""
        self.on_event = on_event
        self.profile = tempfile.mkdtemp(prefix="echomq-bench-chromium-")
        to_browser_read, self._to_browser = os.pipe()
        self._from_browser, from_browser_write = os.pipe()
        # The child must see our pipe ends as its fds 3 and 4.
        self.process = subprocess.Popen(
            [
                executable,
                *AUTOMATION_SWITCHES,
                *args,
                "--remote-debugging-pipe",
                f"--user-data-dir={self.profile}",
                "about:blank",
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            pass_fds=(3, 4),
            preexec_fn=_dup_to(to_browser_read, from_browser_write, nice),
        )
        os.close(to_browser_read)
        os.close(from_browser_write)
        self._ids = itertools.count(1)
        self._context: str | None = None
        self._answers: dict[int, dict[str, Any]] = {}
        self._arrived = threading.Condition()
        self._reader = threading.Thread(target=self._read_answers, daemon=True)
        self._reader.start()

    def _read_answers(self) -> None:
        buffer = b""
        while chunk := os.read(self._from_browser, 1 << 16):
            buffer += chunk
            *messages, buffer = buffer.split(b"\0")
            for raw in messages:
                message = json.loads(raw)
                if "id" in message:
                    with self._arrived:
                        self._answers[message["id"]] = message
                        self._arrived.notify_all()
                elif self.on_event is not None:
                    self.on_event(message)

    def call(
        self, method: str, params: dict[str, Any] | None = None, session: str | None = None
    ) -> dict[str, Any]:
        ident = next(self._ids)
        command: dict[str, Any] = {"id": ident, "method": method, "params": params or {}}
        if session is not None:
            command["sessionId"] = session
        os.write(self._to_browser, json.dumps(command).encode() + b"\0")
        with self._arrived:
            if not self._arrived.wait_for(lambda: ident in self._answers, timeout=30):
                raise ProtocolError(f"{method}: no answer in 30 s")
            answer = self._answers.pop(ident)
        if "error" in answer:
            raise ProtocolError(f"{method}: {answer['error']}")
        result: dict[str, Any] = answer["result"]
        return result

    def context(self) -> str:
        """The browser context of the bench's tabs (created once, like a Playwright context)."""
        if self._context is None:
            self._context = self.call("Target.createBrowserContext")["browserContextId"]
        return self._context

    def set_cookies(self, url: str, cookie_header: str) -> None:
        cookies = []
        for pair in cookie_header.split("; "):
            name, _, value = pair.partition("=")
            cookies.append({"name": name, "value": value, "url": url})
        self.call("Storage.setCookies", {"cookies": cookies, "browserContextId": self.context()})

    def open(self, url: str) -> Tab:
        target = self.call("Target.createTarget", {"url": url, "browserContextId": self.context()})[
            "targetId"
        ]
        session = self.call("Target.attachToTarget", {"targetId": target, "flatten": True})[
            "sessionId"
        ]
        # As Playwright does for each page: the tab is focused and visible to its
        # scripts (otherwise every tab but the active one is hidden and gets no
        # frames at all), with a 1280x720 viewport. Chromium still draws only
        # the active tab at full rate (bench/live.py prints how often each is drawn).
        self.call("Emulation.setFocusEmulationEnabled", {"enabled": True}, session)
        self.call("Emulation.setDeviceMetricsOverride", VIEWPORT, session)
        return Tab(self, session)

    def pids(self) -> list[int]:
        """The browser process and all its descendants (renderers, GPU, utilities)."""
        children: dict[int, list[int]] = {}
        for entry in Path("/proc").iterdir():
            if entry.name.isdigit():
                fields = proc_stat(int(entry.name))
                if fields:
                    children.setdefault(int(fields[1]), []).append(int(entry.name))
        found, todo = [], [self.process.pid]
        while todo:
            pid = todo.pop()
            found.append(pid)
            todo.extend(children.get(pid, []))
        return found

    def close(self) -> None:
        with contextlib.suppress(ProtocolError, OSError):
            self.call("Browser.close")
        try:
            self.process.wait(10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        os.close(self._to_browser)


class Tab:
    """One page; ``evaluate`` runs an expression in it and returns its JSON value."""

    def __init__(self, browser: Browser, session: str) -> None:
        self.browser = browser
        self.session = session

    def evaluate(self, expression: str) -> Any:
        answer = self.browser.call(
            "Runtime.evaluate",
            {"expression": expression, "returnByValue": True, "awaitPromise": True},
            self.session,
        )
        if "exceptionDetails" in answer:
            raise ProtocolError(f"{expression[:60]}: {answer['exceptionDetails']}")
        return answer["result"].get("value")

    def wait_for(self, expression: str, timeout: float = 30.0) -> None:
        """Polls until ``expression`` is truthy; it may throw while the page is still loading."""
        deadline = time.monotonic() + timeout
        last_error: ProtocolError | None = None
        while time.monotonic() < deadline:
            try:
                if self.evaluate(expression):
                    return
            except ProtocolError as error:
                last_error = error
            time.sleep(0.1)
        raise ProtocolError(f"still false after {timeout:.0f} s: {expression} ({last_error})")


def proc_stat(pid: int, tid: str | None = None) -> list[str]:
    """The fields of ``/proc/<pid>/stat`` (or of its thread ``tid``) after the
    command name, from state on (empty when the process or thread is gone).
    The name is cut off at its last ``)``: it may hold spaces and parentheses
    itself."""
    path = f"/proc/{pid}/stat" if tid is None else f"/proc/{pid}/task/{tid}/stat"
    try:
        return Path(path).read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return []


def thread_niceness(pid: int) -> list[int]:
    """The niceness of each thread of a process (empty when it is gone)."""
    try:
        threads = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return []
    # Field 19 of stat(5), the 17th after the name; a thread that ended meanwhile is skipped.
    return [int(fields[16]) for tid in threads if (fields := proc_stat(pid, tid))]


def _dup_to(read_end: int, write_end: int, nice: int) -> Any:
    def place() -> None:
        os.nice(nice)  # inherited by every process Chromium starts
        # Copies above 9 first, so neither end is overwritten if it already is fd 3 or 4.
        high_read = fcntl.fcntl(read_end, fcntl.F_DUPFD, 10)
        high_write = fcntl.fcntl(write_end, fcntl.F_DUPFD, 10)
        os.dup2(high_read, 3)
        os.dup2(high_write, 4)

    return place
