"""Live updates under load: XADD-to-DOM latency in real Chromium pages.

    python bench/live.py [--pages 20] [--rate 200] [--seconds 10]
                         [--burst-rate 1000] [--burst-seconds 10]
                         [--warm-up 3] [--browser-nice 10] [--draw-all]
                         [--sockets-only]

A private redis-server and the dashboard under daphne on it. First
``--pages`` plain WebSocket clients (autobahn, no browser) measure the
server's part: XADD to the frame arriving, and daphne's CPU
(``--sockets-only`` stops there: a quick check of the server). Then
``--pages`` Chromium pages on one queue's Events tab, each visible, 1280x720,
in the system Chromium driven over its DevTools pipe (bench/cdp.py: no
Playwright, whose per-page network reporting would load the machine under
test). After ``--warm-up`` seconds of events (3, not measured: a page's
first updates compile its script and build its first rows and layers, a
one-off that would count as the steady feed's slowest events), a producer
XADDs ``progress`` events at ``--rate`` per second; each page records, when it
inserts an event's row, now minus the event's stream-id time (the XADD moment,
same machine clock). Printed: p50 / p99 / max over every page,
the share of events that got a row, and how often the pages touched the DOM.

Then how many frames each page draws. Chromium draws the page it shows (the
window's active tab) at up to 60 frames/s; every other page runs its scripts
and takes every event as it comes, but is drawn only about once a second
(Chromium throttles frames nobody sees), and so keeps only the newest few rows
of a fast feed (live.js, UNSEEN_ROWS); printed: the rows each page holds. The
latency of the shown page is printed on its own. ``--draw-all`` lifts that
throttle so every page is drawn on every update, as if each were on its own
screen: that is 20 users' worth of rendering on one machine.

Chromium starts at nice ``--browser-nice`` (10): here the 20 simulated users'
browsers share two CPUs with the server they measure, where in use each has a
machine of its own, and a load generator must not starve the system under test.
Run as root, Chromium then sets its own threads' priorities (its IO and
compositor threads higher, the pages nobody sees lower); printed: how many of
its threads run at each niceness. ``--browser-nice 0`` starts it at the
server's.

Then ``--burst-rate`` events/s: the pages' main threads are probed (long
tasks, lateness of a 50 ms timer, frames drawn) and the CPU of the daphne
process and of Chromium is printed. The machine's load average is printed
first: the figures only mean something on a quiet machine.

Targets: p50 <= 50 ms, p99 <= 250 ms at 200 events/s with 20 pages.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from autobahn.asyncio.websocket import (  # noqa: E402
    WebSocketClientFactory,
    WebSocketClientProtocol,
)

from bench.cdp import Browser, Tab, proc_stat, thread_niceness  # noqa: E402
from queues.connection import connect  # noqa: E402
from queues.keys import QueueKeys  # noqa: E402
from queues.queue import Queue  # noqa: E402
from queues.redis_server import LocalRedisServer, server_binary  # noqa: E402
from tests.e2e.server import (  # noqa: E402
    CHROMIUM,
    CHROMIUM_ARGS,
    DashboardServer,
    free_port,
    login_cookie,
    prepare,
)

QUEUE = "bench"
# Counts the frames a page draws (a requestAnimationFrame loop): run only in a
# short sample of its own, since the loop itself asks for a frame every time.
COUNT_FRAMES = """(() => {
  const counter = window.__frameCounter = {frames: 0, running: true};
  const tick = () => {
    if (!counter.running) return;
    counter.frames += 1;
    requestAnimationFrame(tick);
  };
  requestAnimationFrame(tick);
})()"""
STOP_COUNTING = "(window.__frameCounter.running = false) || window.__frameCounter.frames"
ROWS_HELD = "document.querySelectorAll('#event-feed tr.live-new').length"
RESET = """Object.assign(window.echomqLive,
    {latencies: [], arrivals: [], rendered: 0, flushes: 0, flushMs: 0}) && null"""
PROBE = """(() => {
  const probe = window.__probe = {longTasks: 0, maxTimerLag: 0};
  new PerformanceObserver((list) => { probe.longTasks += list.getEntries().length; })
    .observe({type: "longtask"});
  let due = performance.now() + 50;
  const timer = () => {
    probe.maxTimerLag = Math.max(probe.maxTimerLag, performance.now() - due);
    due = performance.now() + 50;
    setTimeout(timer, 50);
  };
  setTimeout(timer, 50);
})()"""


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process, from /proc (0 when it is gone)."""
    fields = proc_stat(pid)
    if not fields:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def produce(
    client: Any,
    rate: int,
    seconds: float,
    *,
    queue: str = QUEUE,
    data: Callable[[int], str] = lambda n: str(n % 100),
) -> int:
    """XADD ``rate`` progress events a second for ``seconds``, in 2 ms ticks, the
    n-th with ``data(n)``; returns how many."""
    stream = QueueKeys(queue).events
    started = time.monotonic()
    sent = 0
    while (elapsed := time.monotonic() - started) < seconds:
        due = int(rate * elapsed) + 1
        if due > sent:
            with client.pipeline(transaction=False) as pipe:
                for n in range(sent, due):
                    fields = {"event": "progress", "jobId": str(n), "data": data(n)}
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
    page_latencies: list[list[float]]
    arrivals: list[float]
    rendered: int
    flushes: int
    server_cpu: float
    chromium_cpu: float
    rows_held: list[int]  # live rows in each page's feed as the events stop

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


def run_phase(
    pages: list[Tab], browser: Browser, client: Any, server_pid: int, rate: int, seconds: float
) -> Phase:
    for page in pages:
        page.evaluate(RESET)
    browsers = browser.pids()
    cpu_before = cpu_seconds(server_pid), sum(cpu_seconds(pid) for pid in browsers)
    started = time.monotonic()
    sent = produce(client, rate, seconds)
    rows_held = [int(page.evaluate(ROWS_HELD)) for page in pages]
    time.sleep(1.5)  # let the last batches land
    wall = time.monotonic() - started
    server_cpu = (cpu_seconds(server_pid) - cpu_before[0]) / wall
    chromium_cpu = (sum(cpu_seconds(pid) for pid in browsers) - cpu_before[1]) / wall
    results = [page.evaluate("window.echomqLive") for page in pages]
    return Phase(
        pages=len(pages),
        rate=rate,
        seconds=seconds,
        sent=sent,
        latencies=[value for r in results for value in r["latencies"]],
        page_latencies=[r["latencies"] for r in results],
        arrivals=[value for r in results for value in r["arrivals"]],
        rendered=sum(r["rendered"] for r in results),
        flushes=sum(r["flushes"] for r in results),
        server_cpu=server_cpu,
        chromium_cpu=chromium_cpu,
        rows_held=rows_held,
    )


def frame_rates(pages: list[Tab], client: Any, rate: int, seconds: float = 3.0) -> list[float]:
    """Frames per second each page draws while the producer runs at ``rate``."""
    for page in pages:
        page.evaluate(COUNT_FRAMES)
    started = time.monotonic()
    produce(client, rate, seconds)
    counts = [page.evaluate(STOP_COUNTING) for page in pages]
    return [count / (time.monotonic() - started) for count in counts]


def shown_page(rates: list[float]) -> int:
    """The index of the page the browser shows: the one drawing the most frames."""
    return max(range(len(rates)), key=rates.__getitem__)


def describe_rows(rows: list[int], rates: list[float]) -> str:
    shown = shown_page(rates)
    others = [n for i, n in enumerate(rows) if i != shown]
    text = f"the page the browser shows {rows[shown]}"
    if others:
        median = statistics.median(others)
        text += f", the other {len(others)}: median {median:.0f} ({min(others)}-{max(others)})"
    return text


def describe_niceness(pids: list[int]) -> str:
    counts = Counter(nice for pid in pids for nice in thread_niceness(pid))
    return ", ".join(f"{n} at {nice}" for nice, n in sorted(counts.items()))


def describe_frames(rates: list[float]) -> str:
    shown = shown_page(rates)
    others = [r for i, r in enumerate(rates) if i != shown]
    text = f"page {shown + 1} (the one the browser shows) draws {rates[shown]:.0f} frames/s"
    if others:
        text += (
            f"; the other {len(others)}: median {statistics.median(others):.0f} "
            f"({min(others):.0f}-{max(others):.0f}) frames/s"
        )
    return text


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


def open_pages(browser: Browser, base_url: str, count: int) -> list[Tab]:
    """``count`` tabs on the bench queue's Events tab, logged in, their sockets open.

    Each must be visible: a hidden tab would skip rendering and flatter the figures.
    """
    browser.set_cookies(base_url, login_cookie(base_url))
    # Every event: the tab's default hides progress, which is what the producer sends.
    pages = [browser.open(f"{base_url}/queues/bull/{QUEUE}/events/?type=all") for _ in range(count)]
    for page in pages:
        page.wait_for("document.documentElement.dataset.live === 'open'")
        state = page.evaluate("document.visibilityState")
        if state != "visible":
            raise SystemExit(f"a bench page is {state}, not visible: its figures would not count")
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
    parser.add_argument(
        "--warm-up",
        type=float,
        default=3.0,
        help="seconds of events at --rate, not measured, after the pages open",
    )
    parser.add_argument(
        "--browser-nice",
        type=int,
        default=10,
        help="the niceness Chromium runs at (0: the same priority as the server)",
    )
    parser.add_argument(
        "--sockets-only",
        action="store_true",
        help="measure the server's part only: the WebSocket clients, no Chromium",
    )
    parser.add_argument(
        "--draw-all",
        action="store_true",
        help="make Chromium draw every page on every update (--disable-frame-rate-limit)",
    )
    args = parser.parse_args()

    print(f"load average before: {load_average()} on {os.cpu_count()} CPUs")
    redis = LocalRedisServer(server_binary()[0]).start()
    workdir = Path(tempfile.mkdtemp(prefix="echomq-bench-live-"))
    # Every page and socket signs in as one user, standing for --pages people.
    sockets = str(2 * args.pages + 10)
    env = prepare(redis.url, workdir, ECHOMQ_LIVE_SOCKETS_PER_USER=sockets)
    server = DashboardServer(env, free_port(), workdir / "daphne.log")
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
        if args.sockets_only:
            return
        extra = ["--disable-frame-rate-limit"] if args.draw_all else []
        browser = Browser(CHROMIUM, [*CHROMIUM_ARGS, *extra], nice=args.browser_nice)
        print(
            f"Chromium started at nice {args.browser_nice}, the server and the producer at 0; "
            f"{args.warm_up:g} s of events before measuring"
        )
        try:
            pages = open_pages(browser, server.url, args.pages)
            # Warm-up, not measured: the first updates of a page compile its
            # script and build its first rows and layers, a one-off that would
            # otherwise count as the steady feed's slowest events.
            if args.warm_up > 0:
                produce(client, args.rate, args.warm_up)
            time.sleep(1.0)

            steady = run_phase(pages, browser, client, server.process.pid, args.rate, args.seconds)
            print(steady.report())
            rates = frame_rates(pages, client, args.rate)
            shown = steady.page_latencies[shown_page(rates)]
            print(f"frames drawn at {args.rate} events/s: {describe_frames(rates)}")
            print(f"live rows held: {describe_rows(steady.rows_held, rates)}")
            print(f"Chromium's threads by niceness: {describe_niceness(browser.pids())}")
            if shown and len(pages) > 1:
                p50, p99 = statistics.median(shown), percentile(shown, 0.99)
                print(f"the page the browser shows: XADD-to-DOM p50 {p50:.0f} ms, p99 {p99:.0f} ms")
            met = (
                bool(steady.latencies)
                and statistics.median(steady.latencies) <= 50
                and percentile(steady.latencies, 0.99) <= 250
            )
            print(f"target p50 <= 50 ms, p99 <= 250 ms: {'met' if met else 'NOT met'}")

            for page in pages:
                page.evaluate(PROBE)
            burst = run_phase(
                pages, browser, client, server.process.pid, args.burst_rate, args.burst_seconds
            )
            probes = [page.evaluate("window.__probe") for page in pages]
            print(burst.report())
            print(
                f"main thread at {args.burst_rate} events/s: "
                f"50 ms timer at most {max(p['maxTimerLag'] for p in probes):.0f} ms late, "
                f"{sum(p['longTasks'] for p in probes)} long tasks over all pages; "
                f"frames: {describe_frames(frame_rates(pages, client, args.burst_rate))}"
            )
        finally:
            browser.close()
    finally:
        server.stop()
        client.close()
        redis.stop()
    print(f"load average after: {load_average()}")


if __name__ == "__main__":
    main()
