"""Where bench/live.py's pages spend their main threads, per unit of work.

    python bench/live_trace.py [--tree PATH] [--pages 20] [--rate 1000] [--seconds 8]

bench/live.py's setup (a private redis-server, the dashboard under daphne,
``--pages`` Chromium pages on one queue's Events tab, a warm-up at 200
events/s), serving the code of ``--tree`` (a worktree of another commit; the
harness stays this one), then ``--seconds`` of ``--rate`` events/s under
Chromium's tracing. Printed: the thread CPU time of the pages' main threads
by trace event (self time, nested events subtracted), each with its count and
its time per occurrence, and the counts the work scales with (socket messages,
flushes, frames, rows drawn).

Why per occurrence: on a shared machine Chromium's CPU a second follows the CPU
it is given (a starved page draws fewer frames, gets bigger batches and draws
fewer rows), so two trees' totals differ with the load; what one message, one
flush, one layout costs does not (thread time, not wall time).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import threading
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.cdp import Browser  # noqa: E402
from queues.connection import connect  # noqa: E402
from queues.queue import Queue  # noqa: E402
from queues.redis_server import LocalRedisServer, server_binary  # noqa: E402
from tests.e2e.server import CHROMIUM, CHROMIUM_ARGS, DashboardServer, free_port, prepare  # noqa: E402

CATEGORIES = ",".join(
    [
        "devtools.timeline",
        "disabled-by-default-devtools.timeline",
        "disabled-by-default-devtools.timeline.frame",
        "v8.execute",
        "blink",
        "cc",
        "toplevel",
        "__metadata",
    ]
)
# The units the pages' work scales with, by the trace event that marks each.
UNITS = {
    "socket messages": "FunctionCall socket.onmessage",
    "frames": "ProxyMain::BeginMainFrame",
    "layouts": "LocalFrameView::performLayout",
    "paints": "Paint",
    "style recalcs": "Document::recalcStyle",
    "IPC messages": "Receive mojo message",
}
RESET = """Object.assign(window.echomqLive,
    {latencies: [], arrivals: [], rendered: 0, flushes: 0, flushMs: 0}) && null"""


class Trace:
    """Collects Tracing.dataCollected events from the browser's pipe."""

    def __init__(self) -> None:
        self.events: list[dict[str, Any]] = []
        self.complete = threading.Event()

    def __call__(self, message: dict[str, Any]) -> None:
        if message.get("method") == "Tracing.dataCollected":
            self.events.extend(message["params"]["value"])
        elif message.get("method") == "Tracing.tracingComplete":
            self.complete.set()


def event_name(event: dict[str, Any]) -> str:
    """A trace event's name, a script call also by its function (file names differ by tree)."""
    name = str(event["name"])
    data = event.get("args", {}).get("data", {})
    if name == "FunctionCall":
        return f"FunctionCall {data.get('functionName') or '(anonymous)'}"
    if name in ("TimerFire", "EventDispatch"):
        return f"{name} {data.get('type', '')}".rstrip()
    return name


def main_thread_self_times(events: list[dict[str, Any]]) -> dict[str, list[float]]:
    """{name: [count, self ms]} over the renderers' main threads, thread CPU time."""
    mains = {
        (e["pid"], e["tid"])
        for e in events
        if e.get("ph") == "M"
        and e.get("name") == "thread_name"
        and e["args"].get("name") == "CrRendererMain"
    }
    by_thread: dict[tuple[int, int], list[dict[str, Any]]] = defaultdict(list)
    for e in events:
        if e.get("ph") == "X" and "tdur" in e and (e["pid"], e["tid"]) in mains:
            by_thread[(e["pid"], e["tid"])].append(e)
    totals: dict[str, list[float]] = defaultdict(lambda: [0, 0.0])
    for thread in by_thread.values():
        thread.sort(key=lambda e: (e["ts"], -e.get("dur", 0)))
        stack: list[tuple[int, str]] = []  # (end, name) of the events open around this one
        for e in thread:
            while stack and stack[-1][0] <= e["ts"]:
                stack.pop()
            name = event_name(e)
            ms = e["tdur"] / 1000
            totals[name][0] += 1
            totals[name][1] += ms
            if stack:
                totals[stack[-1][1]][1] -= ms
            stack.append((e["ts"] + e.get("dur", 0), name))
    return dict(totals)


def serve(tree: Path, redis_url: str, workdir: Path, pages: int) -> DashboardServer:
    env = prepare(redis_url, workdir, ECHOMQ_LIVE_SOCKETS_PER_USER=str(2 * pages + 10))
    env["PYTHONPATH"] = str(tree)
    server = DashboardServer(env, free_port(), workdir / "daphne.log", cwd=tree)
    server.start()
    return server


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--tree", type=Path, default=ROOT, help="the code served (a worktree)")
    parser.add_argument("--pages", type=int, default=20)
    parser.add_argument("--rate", type=int, default=1000)
    parser.add_argument("--seconds", type=float, default=8.0)
    parser.add_argument("--browser-nice", type=int, default=10)
    parser.add_argument("--top", type=int, default=25, help="trace events printed")
    args = parser.parse_args()
    # Here, not above: bench.live imports autobahn's asyncio flavour, which a
    # process that already chose Twisted's (the tests, for the arithmetic
    # below) cannot import.
    from bench.live import QUEUE, load_average, open_pages, produce

    print(f"load average before: {load_average()}; serving {args.tree.resolve()}")
    redis = LocalRedisServer(server_binary()[0]).start()
    client = connect(redis.url)
    Queue(QUEUE, client).add("seed")
    workdir = Path(tempfile.mkdtemp(prefix="echomq-bench-trace-"))
    server = serve(args.tree.resolve(), redis.url, workdir, args.pages)
    trace = Trace()
    browser = Browser(CHROMIUM, CHROMIUM_ARGS, nice=args.browser_nice, on_event=trace)
    try:
        pages = open_pages(browser, server.url, args.pages)
        produce(client, 200, 3.0)  # warm-up, as bench/live.py's
        time.sleep(1.0)
        for page in pages:
            page.evaluate(RESET)
        browser.call("Tracing.start", {"categories": CATEGORIES, "transferMode": "ReportEvents"})
        sent = produce(client, args.rate, args.seconds)
        browser.call("Tracing.end")
        if not trace.complete.wait(120):
            raise SystemExit("the trace did not complete in 120 s")
        measured = [page.evaluate("window.echomqLive") for page in pages]
    finally:
        browser.close()
        server.stop()
        client.close()
        redis.stop()

    times = main_thread_self_times(trace.events)
    total = sum(ms for _, ms in times.values())
    rows = sum(m["rendered"] for m in measured)
    flushes = sum(m["flushes"] for m in measured)
    latencies = [value for m in measured for value in m["latencies"]]
    print(
        f"{args.pages} pages, {args.rate} events/s for {args.seconds:g} s ({sent} events): "
        f"main threads {total:.0f} ms of CPU, {rows} rows drawn in {flushes} flushes, "
        f"XADD-to-DOM p50 {statistics.median(latencies) if latencies else 0:.0f} ms; "
        f"load average after: {load_average()}"
    )
    counted = {unit: int(times.get(marker, [0])[0]) for unit, marker in UNITS.items()}
    print("units: " + ", ".join(f"{unit} {n}" for unit, n in counted.items()))
    print(f"{'self ms':>9} {'count':>7} {'us each':>8}  trace event (renderer main threads)")
    ranked = sorted(times.items(), key=lambda item: -item[1][1])
    for name, (n, ms) in ranked[: args.top]:
        print(f"{ms:9.1f} {int(n):7d} {1000 * ms / n:8.1f}  {name}")
    print(json.dumps({"total_ms": round(total, 1), "rows": rows, "flushes": flushes, **counted}))


if __name__ == "__main__":
    main()
