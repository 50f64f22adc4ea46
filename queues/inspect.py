"""``python -m queues.inspect``: the dashboard's read model as JSON on stdout.

Only the command line: every answer is a ``queues.read`` result's ``as_json()``,
the same data the pages and the JSON API show.
"""

from __future__ import annotations

import argparse
import json
import os
from collections.abc import Sequence
from typing import Any

import msgspec

from queues.connection import connect
from queues.discovery import scan_queues
from queues.keys import DEFAULT_PREFIX
from queues.read.counts import queue_summaries
from queues.read.events import event_json, events_page, job_events
from queues.read.job import job_detail
from queues.read.lists import job_page
from queues.read.refs import QueueRef
from queues.read.states import STATES


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m queues.inspect``: the dashboard's read model as JSON on stdout."""
    parser = argparse.ArgumentParser(prog="python -m queues.inspect", description=main.__doc__)
    parser.add_argument("queue", nargs="?", help="queue name (omit: every queue with counts)")
    parser.add_argument("--url", default=os.environ.get("REDIS_URL", "redis://localhost:6379/0"))
    parser.add_argument("--prefix", default=DEFAULT_PREFIX)
    parser.add_argument("--state", choices=STATES, help="list jobs of this state")
    parser.add_argument("--start", type=int, default=0)
    parser.add_argument("--count", type=int, default=20)
    parser.add_argument("--job", help="show one job")
    parser.add_argument("--events", action="store_true", help="newest events")
    args = parser.parse_args(argv)
    client = connect(args.url)
    answer: Any
    if args.queue is None:
        refs = scan_queues(client, [args.prefix])  # one whole pass: a command runs once
        answer = [summary.as_json() for summary in queue_summaries(client, refs)]
    else:
        ref = QueueRef(args.prefix, args.queue)
        if args.job:
            detail = job_detail(client, ref, args.job)
            latest = [event_json(e) for e in job_events(client, ref, args.job, size=30)]
            answer = detail.as_json(latest) if detail else {"error": f"no job {args.job}"}
        elif args.events:
            answer = events_page(client, ref, size=args.count).as_json()
        elif args.state:
            answer = job_page(client, ref, args.state, start=args.start, size=args.count).as_json()
        else:
            answer = queue_summaries(client, [ref])[0].as_json()
    print(json.dumps(msgspec.to_builtins(answer, enc_hook=str), indent=2, ensure_ascii=False))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
