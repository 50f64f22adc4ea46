"""``python -m queues.inspect``: the read model's answers as JSON on stdout."""

from __future__ import annotations

import json

import pytest
from msgspec import to_builtins
from redis import Redis

from queues import inspect
from queues.read import counts
from queues.read.refs import QueueRef
from tests.dashboard_seed import seed_job

REF = QueueRef("bull", "emails")
KEYS = REF.keys


def test_command_line_prints_the_same_json(
    redis_client: Redis, redis_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    seed_job(redis_client, KEYS, "9", state="failed")
    inspect.main(["--url", redis_url])
    (queue,) = json.loads(capsys.readouterr().out)
    assert queue == to_builtins(counts.queue_summaries(redis_client, [REF])[0].as_json())
    inspect.main(["emails", "--url", redis_url, "--state", "failed"])
    assert json.loads(capsys.readouterr().out)["jobs"][0]["id"] == "9"
    inspect.main(["emails", "--url", redis_url, "--job", "9"])
    assert json.loads(capsys.readouterr().out)["state"] == "failed"
