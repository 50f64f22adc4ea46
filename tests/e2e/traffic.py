"""Live traffic for the browser tests that look at pages under updates, from its own process.

    python tests/e2e/traffic.py QUEUE [--touch ID ...] [--mover ID] [--interval S]

Every interval, until terminated, with our runtime (every change is one script):

- each ``--touch`` job gets a progress update (``{"step": n, "of": 5}``) and a
  log line: the events of the very job a page shows;
- the ``--mover`` job changes state: failed by an operator, then retried,
  back and forth (failed and waiting events, the wait and failed counts move);
- one new job is added (added and waiting events, the wait list grows).

Prints "ready" once it runs and "tick N" after each round (flushed).
The Redis URL comes from REDIS_URL.
"""

from __future__ import annotations

import argparse
import os
import signal
import threading

from queues.connection import connect
from queues.errors import ScriptError
from queues.queue import Queue


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("queue")
    parser.add_argument("--touch", nargs="*", default=[])
    parser.add_argument("--mover")
    parser.add_argument("--interval", type=float, default=0.2)
    args = parser.parse_args()
    queue = Queue(args.queue, connect(os.environ["REDIS_URL"]))
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    print("ready", flush=True)
    tick = 0
    while not stop.is_set():
        tick += 1
        for job_id in args.touch:
            queue.update_progress(job_id, {"step": tick % 5 + 1, "of": 5})
            queue.add_log(job_id, f"tick {tick}: step {tick % 5 + 1} of 5")
        if args.mover:
            try:
                if tick % 2:
                    queue.fail(args.mover, f"declined on tick {tick}")
                else:
                    queue.retry(args.mover)
            except ScriptError as error:  # someone else moved it: say so, keep going
                print("mover", error, flush=True)
        queue.add("tick", {"tick": tick})
        print("tick", tick, flush=True)
        stop.wait(args.interval)


if __name__ == "__main__":
    main()
