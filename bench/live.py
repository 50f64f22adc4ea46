"""Live updates under load: XADD-to-DOM latency in real Chromium pages.

    python bench/live.py [--pages 20] [--rate 200] [--seconds 10]
                         [--burst-rate 1000] [--burst-seconds 10]

A private redis-server and the dashboard under daphne (channels-redis layer on
the same Redis). First ``--pages`` plain WebSocket clients (autobahn, no
browser) measure the server's part: XADD to the frame arriving. Then
``--pages`` Chromium pages on one queue's Events tab. A
producer XADDs ``progress`` events at ``--rate`` per second; each page records,
when it inserts an event's row, now minus the event's stream-id time (the
XADD moment, same machine clock). Printed: p50 / p99 / max over every page,
the share of events that got a row, and how often the pages touched the DOM.

Then ``--burst-rate`` events/s: the pages' main threads are probed (long
tasks, lateness of a 50 ms timer; frame rate and longest frame gap on the
first page) and the CPU of the daphne process and of Chromium is printed. The machine's load
average is printed first: the figures only mean something on a quiet machine.

Targets: p50 <= 50 ms, p99 <= 250 ms at 200 events/s with 20 pages.
"""

from __future__ import annotations

import argparse
import asyncio
import http.cookiejar
import json
import os
import re
import statistics
import sys
import tempfile
import time
import urllib.parse
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from autobahn.asyncio.websocket import (  # noqa: E402
    WebSocketClientFactory,
    WebSocketClientProtocol,
)
from playwright.sync_api import BrowserContext, Page, sync_playwright  # noqa: E402

from queues.connection import connect  # noqa: E402
from queues.keys import QueueKeys  # noqa: E402
from queues.queue import Queue  # noqa: E402
from queues.redis_server import LocalRedisServer, server_binary  # noqa: E402
from tests.e2e.server import (  # noqa: E402
    CHROMIUM,
    CHROMIUM_ARGS,
    PASSWORD,
    USERNAME,
    DashboardServer,
    free_port,
    prepare,
)

QUEUE = "bench"
RESET = """() => Object.assign(window.echomqLive,
    {latencies: [], arrivals: [], rendered: 0, flushes: 0, flushMs: 0})"""
PROBE = """(withFrames) => {
  const probe = window.__probe = {maxFrameGap: 0, frames: 0, longTasks: 0, maxTimerLag: 0};
  if (withFrames) {  // one page only: a rAF loop is itself work for the compositor
    let last = performance.now();
    const frame = (t) => {
      probe.maxFrameGap = Math.max(probe.maxFrameGap, t - last);
      last = t;
      probe.frames += 1;
      requestAnimationFrame(frame);
    };
    requestAnimationFrame(frame);
  }
  new PerformanceObserver((list) => { probe.longTasks += list.getEntries().length; })
    .observe({type: "longtask"});
  let due = performance.now() + 50;
  const timer = () => {
    probe.maxTimerLag = Math.max(probe.maxTimerLag, performance.now() - due);
    due = performance.now() + 50;
    setTimeout(timer, 50);
  };
  setTimeout(timer, 50);
}"""


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process, from /proc (0 when it is gone)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def chromium_pids() -> list[int]:
    """The Chromium processes this bench started (descendants of this process only:
    other Chromiums on a shared machine must not count, nor make the figure negative)."""
    parents: dict[int, int] = {}
    browsers = set()
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                parents[int(entry.name)] = int(
                    (entry / "stat").read_text().rsplit(")", 1)[1].split()[1]
                )
                if (entry / "cmdline").read_bytes().startswith(b"/usr/lib/chromium/"):
                    browsers.add(int(entry.name))
            except (OSError, ValueError, IndexError):
                continue
    ours = {os.getpid()}
    grew = True
    while grew:
        grew = False
        for pid, parent in parents.items():
            if parent in ours and pid not in ours:
                ours.add(pid)
                grew = True
    return sorted(browsers & ours)


def produce(client: Any, rate: int, seconds: float) -> int:
    """XADD ``rate`` events a second for ``seconds``, in 2 ms ticks; returns how many."""
    stream = QueueKeys(QUEUE).events
    started = time.monotonic()
    sent = 0
    while (elapsed := time.monotonic() - started) < seconds:
        due = int(rate * elapsed) + 1
        if due > sent:
            with client.pipeline(transaction=False) as pipe:
                for n in range(sent, due):
                    fields = {"event": "progress", "jobId": str(n), "data": str(n % 100)}
                    pipe.xadd(stream, fields, maxlen=10_000, approximate=True)
                pipe.execute()
            sent = due
        time.sleep(0.002)
    return sent


def load_average() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]


@dataclass
class Phase:
    pages: int
    rate: int
    seconds: float
    sent: int
    latencies: list[float]
    arrivals: list[float]
    rendered: int
    flushes: int
    server_cpu: float
    chromium_cpu: float

    def report(self) -> str:
        if not self.latencies:
            return f"{self.pages} pages, {self.rate} events/s: no event reached a page"
        lat = self.latencies
        return (
            f"{self.pages} pages, {self.rate} events/s for {self.seconds:.0f} s "
            f"({self.sent} events): "
            f"XADD-to-DOM p50 {statistics.median(lat):.0f} ms, p99 {percentile(lat, 0.99):.0f} ms, "
            f"max {max(lat):.0f} ms "
            f"(XADD-to-socket p50 {statistics.median(self.arrivals):.0f} ms); "
            f"{self.rendered / (self.sent * self.pages):.0%} of events got a row; "
            f"{self.flushes / self.pages / self.seconds:.0f} DOM updates/s per page; "
            f"CPU: daphne {self.server_cpu:.0%}, Chromium {self.chromium_cpu:.0%} of one core"
        )


def run_phase(pages: list[Page], client: Any, server_pid: int, rate: int, seconds: float) -> Phase:
    for page in pages:
        page.evaluate(RESET)
    browsers = chromium_pids()
    cpu_before = cpu_seconds(server_pid), sum(cpu_seconds(pid) for pid in browsers)
    started = time.monotonic()
    sent = produce(client, rate, seconds)
    time.sleep(1.5)  # let the last batches land
    wall = time.monotonic() - started
    server_cpu = (cpu_seconds(server_pid) - cpu_before[0]) / wall
    chromium_cpu = (sum(cpu_seconds(pid) for pid in browsers) - cpu_before[1]) / wall
    results = [page.evaluate("() => window.echomqLive") for page in pages]
    return Phase(
        pages=len(pages),
        rate=rate,
        seconds=seconds,
        sent=sent,
        latencies=[value for r in results for value in r["latencies"]],
        arrivals=[value for r in results for value in r["arrivals"]],
        rendered=sum(r["rendered"] for r in results),
        flushes=sum(r["flushes"] for r in results),
        server_cpu=server_cpu,
        chromium_cpu=chromium_cpu,
    )


def login_cookie(base_url: str) -> str:
    """Log in through the form over plain HTTP; the Cookie header a socket sends."""
    jar = http.cookiejar.CookieJar()
    opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(jar))
    # Our own http:// server URL, never user input.
    form = opener.open(base_url + "/login/").read().decode()
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', form)
    assert token is not None
    body = urllib.parse.urlencode(
        {"username": USERNAME, "password": PASSWORD, "csrfmiddlewaretoken": token.group(1)}
    ).encode()
    login = urllib.request.Request(  # noqa: S310 (see above)
        base_url + "/login/", body, {"Referer": base_url + "/login/"}
    )
    opener.open(login)
    return "; ".join(f"{c.name}={c.value}" for c in jar)


class LatencyClient(WebSocketClientProtocol):  # type: ignore[misc]
    """A socket like a page's: subscribes to the bench queue, records XADD-to-socket."""

    latencies: list[float]

    def onOpen(self) -> None:
        subscribe = {"type": "subscribe", "queues": [{"queue": f"bull:{QUEUE}", "last_id": None}]}
        self.sendMessage(json.dumps(subscribe).encode())

    def onMessage(self, payload: bytes, is_binary: bool) -> None:
        message = json.loads(payload)
        if message["type"] == "events":
            now = time.time() * 1000
            self.latencies.extend(now - int(e["id"].split("-")[0]) for e in message["events"])


async def socket_phase(
    server: DashboardServer, client: Any, count: int, rate: int, seconds: float
) -> list[float]:
    """``count`` raw WebSocket clients (no browser) during ``seconds`` of ``rate`` events/s."""
    latencies: list[float] = []
    factory = WebSocketClientFactory(
        f"ws://127.0.0.1:{server.port}/ws/live/",
        origin=server.url,
        headers={"Cookie": login_cookie(server.url)},
    )
    LatencyClient.latencies = latencies
    factory.protocol = LatencyClient
    loop = asyncio.get_running_loop()
    connections = [
        await loop.create_connection(factory, "127.0.0.1", server.port) for _ in range(count)
    ]
    await asyncio.sleep(1.0)
    await asyncio.to_thread(produce, client, rate, seconds)
    await asyncio.sleep(1.0)
    for transport, _ in connections:
        transport.close()
    return latencies


def open_pages(context: BrowserContext, base_url: str, count: int) -> list[Page]:
    login = context.new_page()
    login.goto("/login/")
    login.fill("#id_username", USERNAME)
    login.fill("#id_password", PASSWORD)
    login.click("button[type=submit]")
    login.wait_for_url(base_url + "/")
    login.close()
    pages = [context.new_page() for _ in range(count)]
    for page in pages:
        page.goto(f"/queues/bull/{QUEUE}/events/")
    for page in pages:
        page.wait_for_selector("html[data-live=open]")
    return pages


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--pages", type=int, default=20)
    parser.add_argument("--rate", type=int, default=200)
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--burst-rate", type=int, default=1000)
    parser.add_argument("--burst-seconds", type=float, default=10.0)
    args = parser.parse_args()

    print(f"load average before: {load_average()} on {os.cpu_count()} CPUs")
    redis = LocalRedisServer(server_binary()[0]).start()
    workdir = Path(tempfile.mkdtemp(prefix="echomq-bench-live-"))
    server = DashboardServer(prepare(redis.url, workdir), free_port(), workdir / "daphne.log")
    client = connect(redis.url)
    Queue(QUEUE, client).add("seed")  # the queue exists, so its pages answer
    server.start()
    assert server.process is not None
    try:
        cpu_before, wall_before = cpu_seconds(server.process.pid), time.monotonic()
        raw = asyncio.run(socket_phase(server, client, args.pages, args.rate, args.seconds))
        cpu = (cpu_seconds(server.process.pid) - cpu_before) / (time.monotonic() - wall_before)
        print(
            f"{args.pages} WebSocket clients without a browser, {args.rate} events/s: "
            f"XADD-to-socket p50 {statistics.median(raw):.0f} ms, "
            f"p99 {percentile(raw, 0.99):.0f} ms, {len(raw) / args.pages:.0f} events each; "
            f"daphne CPU {cpu:.0%} of one core"
        )
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(
                executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True
            )
            pages = open_pages(browser.new_context(base_url=server.url), server.url, args.pages)
            time.sleep(1.0)

            steady = run_phase(pages, client, server.process.pid, args.rate, args.seconds)
            print(steady.report())
            met = (
                bool(steady.latencies)
                and statistics.median(steady.latencies) <= 50
                and percentile(steady.latencies, 0.99) <= 250
            )
            print(f"target p50 <= 50 ms, p99 <= 250 ms: {'met' if met else 'NOT met'}")

            for index, page in enumerate(pages):
                page.evaluate(PROBE, index == 0)
            burst = run_phase(
                pages, client, server.process.pid, args.burst_rate, args.burst_seconds
            )
            probes = [page.evaluate("() => window.__probe") for page in pages]
            print(burst.report())
            first = probes[0]
            print(
                f"main thread at {args.burst_rate} events/s: "
                f"50 ms timer at most {max(p['maxTimerLag'] for p in probes):.0f} ms late, "
                f"{sum(p['longTasks'] for p in probes)} long tasks over all pages; "
                f"page 1: {first['frames'] / (args.burst_seconds + 1.5):.0f} frames/s, "
                f"longest frame gap {first['maxFrameGap']:.0f} ms"
            )
            browser.close()
    finally:
        server.stop()
        client.close()
        redis.stop()
    print(f"load average after: {load_average()}")


if __name__ == "__main__":
    main()
