"""bull-board 9.10 as the peer the dashboard bench runs side by side.

The npm packages pinned in bench/bullboard/package.json are installed once
into a scratch folder (bench/npm_peer.py) and bench/bullboard/server.js is
served from there by Node. Where Node or npm is missing, or the registry
cannot be reached, :func:`prepare` says why and the bench prints our figures
alone.

Same questions for both: the overview's JSON (every queue's counts: bull-board's
``/api/queues`` without an active queue) and a page of 50 failed jobs of one
queue (``/api/queues?activeQueue=<queue>&status=failed``, which its UI asks
for, and which also brings every queue's counts: that is its answer).
"""

from __future__ import annotations

import os
import socket
import subprocess
import time
import urllib.request
from collections.abc import Sequence
from pathlib import Path

import npm_peer  # bench/, on the path as the script's folder

SOURCE = Path(__file__).resolve().parent / "bullboard"
OVERVIEW = "/api/queues?page=1&jobsPerPage=10"


def failed_page(queue: str) -> str:
    return f"/api/queues?activeQueue={queue}&status=failed&page=1&jobsPerPage=50"


def prepare() -> tuple[Path | None, str]:
    """The scratch folder with bull-board installed, or None and the reason."""
    return npm_peer.prepare(SOURCE, ["server.js"])


def start(
    folder: Path, redis_url: str, queues: Sequence[str], port: int
) -> subprocess.Popen[bytes]:
    """bull-board on ``port`` over ``queues`` (prefix "bull"), once it answers."""
    env = {**os.environ, "REDIS_URL": redis_url, "QUEUES": ",".join(queues), "PORT": str(port)}
    server = subprocess.Popen(["node", "server.js"], cwd=folder, env=env, stdout=subprocess.DEVNULL)
    listening(server, port, "bull-board")
    # Listening is not answering: bull-board waits for its Redis without a
    # bound, so a Redis it cannot reach would hang the bench's first request.
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{OVERVIEW}", timeout=30) as answer:
            answer.read()
    except OSError as error:
        server.kill()
        raise RuntimeError(f"bull-board does not answer: {error}") from error
    return server


def listening(server: subprocess.Popen[bytes], port: int, name: str) -> subprocess.Popen[bytes]:
    """``server`` once it accepts connections on ``port`` (killed if it never does)."""
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and server.poll() is None:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return server
        except OSError:
            time.sleep(0.1)
    server.kill()
    raise RuntimeError(f"{name} did not start")
