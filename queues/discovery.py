"""Which queues a Redis holds, found at a bounded cost however large its keyspace.

A queue has no entry in any registry: it is the set of keys under
``<prefix>:<name>:``. Walking the keyspace to find them (SCAN for the ``meta``
and ``id`` keys and the job states', TRACE_SUFFIXES) costs Redis time in
proportion to every key it holds, the application's own included: on a
production Redis with ten million unrelated keys one full walk is seconds of
Redis time. So discovery has two sources:

- **Connections.** Workers name their Redis connections after their queue
  (BullMQ for Node.js: ``<prefix>:<base64 of the name>``, the Python port:
  ``<prefix>:<name>``, followed by ``:w:<worker name>`` for a named worker;
  BullMQ's event listeners add ``:qe``). Producers do not name theirs. CLIENT LIST
  costs in proportion to the clients, not the keys, so it is read every
  ``CONNECTIONS_INTERVAL_S``: a queue that a running application works on
  appears within seconds, whatever the keyspace holds.
- **The keyspace.** A background thread walks it with SCAN in small steps and
  sleeps between them so that its calls take at most ``SCAN_DUTY`` of the
  wall-clock time (each step is timed from the client, which counts the
  round trip too, so Redis's own share is lower). The walk never ends: each
  completed pass replaces the previous one, so a queue whose keys are gone
  drops out, and a queue nobody is connected to appears within one pass. A
  small keyspace (up to ``SMALL_KEYSPACE`` keys) is walked at once on first
  use and then at most every ``MIN_PASS_S``; the first walk of a larger one
  runs at ``FIRST_WALK_DUTY``, since the pages miss its queues until then.

``bench/discovery.py`` measures both with ten million other keys.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from operator import attrgetter
from typing import Any

from redis import Redis
from redis.asyncio import Redis as AsyncRedis
from redis.exceptions import RedisClusterException, RedisError

from queues import codec
from queues.connection import REDIS_FAILURES, is_cluster
from queues.connection_names import queue_names_of
from queues.keys import InvalidName, validate_prefix
from queues.read.refs import QueueRef
from queues.read.states import KEY_STATES
from queues.read.workers import recent_client_list

# QueueRef's own order (prefix, then name) as a C-level key: the dataclass's
# generated __lt__ made sorting a thousand queues a visible part of a page.
_BY_NAME = attrgetter("prefix", "name")

log = logging.getLogger("echomq.discovery")

# The keyspace walk's share of wall-clock time spent in its SCAN calls. The
# first walk of a large keyspace, until which its queues nobody is connected
# to are missing from the pages, takes twice that, and still at most 1% of
# Redis's time: at 5% it showed them in minutes instead of tens of minutes at
# ten million keys (bench/discovery.py), but for those minutes it cost a
# production Redis 3.5% of its time, more than a dashboard may take.
SCAN_DUTY = 0.005
FIRST_WALK_DUTY = 0.01
SCAN_COUNT = 1_000  # keys looked at per SCAN call: each call blocks Redis briefly
SMALL_KEYSPACE = 50_000  # up to this many keys, the first pass runs at once
# What the background walk survives (and tries again after).
OUTAGES = REDIS_FAILURES
MIN_PASS_S = 10.0  # a pass of a small keyspace starts at most this often
MAX_PAUSE_S = 2.0  # the longest pause after one SCAN call
CONNECTIONS_INTERVAL_S = 5.0
# The keys whose existence says a queue exists: the ones our runtime and
# BullMQ write first (meta, the id counter), and every key state, since a
# queue another tool wrote, or one whose meta and id a person deleted, may
# have none of those two and still hold jobs.
TRACE_SUFFIXES = ("meta", "id", *(state.name for state in KEY_STATES))


def _glob_escape(text: str) -> str:
    return "".join("\\" + ch if ch in "*?[]\\" else ch for ch in text)


def _letters(position: int) -> str:
    return "".join(sorted({suffix[position] for suffix in TRACE_SUFFIXES}))


# One pattern for every suffix (a SCAN per pattern would walk the keyspace
# once each): their first two letters. It lets some other keys through (a
# job's dependencies, the metrics, ids starting so), which queue_from_key drops.
_SUFFIX_GLOB = f"*:[{_letters(0)}][{_letters(1)}]*"


def _scan_pattern(prefix: str) -> str:
    return _glob_escape(prefix + ":") + _SUFFIX_GLOB


def queue_from_key(key: str, prefixes: Iterable[str]) -> QueueRef | None:
    """The queue whose trace key (``meta``, ``id``, a state) this is, or None."""
    for prefix in prefixes:
        head = prefix + ":"
        if not key.startswith(head):
            continue
        for suffix in TRACE_SUFFIXES:
            if key.endswith(":" + suffix):
                with contextlib.suppress(InvalidName):
                    # A job's own key (bull:q:7:failed would name a queue
                    # "q:7", and no queue name holds ':') or a name we could
                    # never address safely is skipped.
                    return QueueRef(prefix, key[len(head) : -len(suffix) - 1])
    return None


def queues_named_by_connection(name: str, prefixes: Iterable[str]) -> list[QueueRef]:
    """The queues a connection name may stand for (queues.connection_names)."""
    found = []
    for prefix in prefixes:
        for candidate in queue_names_of(name, prefix):
            with contextlib.suppress(InvalidName):
                found.append(QueueRef(prefix, candidate))
    return found


def queue_exists(client: Redis, ref: QueueRef) -> bool:
    """True when the queue has left any trace (meta, id or a state's key)."""
    return queues_exist(client, [ref])[0]


def trace_keys(refs: Sequence[QueueRef]) -> list[str]:
    """The keys whose existence says a queue exists, TRACE_SUFFIXES' per queue
    (EXISTS each; :func:`any_per_queue` reads the answers)."""
    return [
        key
        for ref in refs
        for key in (ref.keys.meta, ref.keys.id, *(ref.keys.state(s.name) for s in KEY_STATES))
    ]


def any_per_queue(found: list[int]) -> list[bool]:
    size = len(TRACE_SUFFIXES)
    return [any(found[start : start + size]) for start in range(0, len(found), size)]


def queues_exist(client: Redis, refs: Sequence[QueueRef]) -> list[bool]:
    """:func:`queue_exists` for each of ``refs``, in one round trip."""
    with client.pipeline(transaction=False) as pipe:
        for key in trace_keys(refs):
            pipe.exists(key)  # one key per EXISTS: a queue's keys need not share a cluster slot
        return any_per_queue(pipe.execute())


async def queues_exist_async(client: AsyncRedis, refs: Sequence[QueueRef]) -> list[bool]:
    """:func:`queues_exist` on an asyncio client (the live socket's)."""
    async with client.pipeline(transaction=False) as pipe:
        for key in trace_keys(refs):
            pipe.exists(key)
        return any_per_queue(await pipe.execute())


def _nodes(client: Redis) -> list[Any]:
    """Where keys live: every primary of a cluster, else the one server (None)."""
    if is_cluster(client):
        return list(client.get_primaries())  # type: ignore[attr-defined]
    return [None]


def _on(node: Any) -> dict[str, Any]:
    return {} if node is None else {"target_nodes": node}


def _client_names(client: Redis) -> list[str]:
    """The names of every connection, on every node (CLIENT LIST); a refusal
    raises, as Redis gave it."""
    clients = recent_client_list(client, max_age_s=0)  # read now, and kept for the pages
    if clients.refusal is not None:
        raise clients.refusal
    return [connection.name for connection in clients.connections]


def _keyspace_size(client: Redis) -> int:
    total = 0
    for node in _nodes(client):
        size: Any = client.dbsize(**_on(node))
        total += sum(size.values()) if isinstance(size, dict) else int(size)
    return total


@dataclass
class _Walk:
    """A SCAN pass over every (node, pattern), one call at a time."""

    targets: list[tuple[Any, str]]
    index: int = 0
    cursor: int = 0
    found: set[QueueRef] = field(default_factory=set)

    def step(self, client: Redis, prefixes: Sequence[str]) -> bool:
        """One SCAN call; True when the pass is complete."""
        node, pattern = self.targets[self.index]
        reply: Any = client.scan(self.cursor, match=pattern, count=SCAN_COUNT, **_on(node))
        cursor, keys = reply
        if isinstance(cursor, dict):  # a cluster client answers {node name: cursor}
            cursor = next(iter(cursor.values()))
        for raw in keys:
            ref = queue_from_key(codec.text(raw) or "", prefixes)
            if ref is not None:
                self.found.add(ref)
        self.cursor = int(cursor)
        if self.cursor == 0:
            self.index += 1
        return self.index >= len(self.targets)


class Discovery:
    """The queues of one Redis under some prefixes, kept current in the background."""

    def __init__(self, client: Redis, prefixes: Sequence[str]) -> None:
        for prefix in prefixes:
            validate_prefix(prefix)
        self.client = client
        self.prefixes = tuple(prefixes)
        self._lock = threading.Lock()
        self._scanned: set[QueueRef] = set()  # the last complete pass
        self._walk: _Walk | None = None
        self._connected: set[QueueRef] = set()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        # The last complete pass: how long it took and how many SCAN calls it made.
        self.last_pass_s: float | None = None
        self.last_pass_calls = 0

    # ------------------------------------------------------------------ reading

    def queues(self) -> list[QueueRef]:
        """Every queue known now, sorted (never waits for Redis after start())."""
        with self._lock:
            partial = self._walk.found if self._walk is not None else set()
            return sorted(self._scanned | partial | self._connected, key=_BY_NAME)

    # ------------------------------------------------------------------ running

    def start(self) -> None:
        """Learn what is cheap to learn now, then keep walking in the background."""
        self._poll_connections()
        walked = _keyspace_size(self.client) <= SMALL_KEYSPACE
        if walked:
            self.scan_pass()
        self._thread = threading.Thread(
            target=self._run, args=(walked,), name="echomq-discovery", daemon=True
        )
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()

    def scan_pass(self, *, duty: float | None = None) -> None:
        """One whole pass; with a duty, it sleeps between calls to keep to it."""
        nodes = _nodes(self.client)
        if not nodes:
            # A cluster client that lost every node knows no primary: a pass over
            # nothing would "find" no queues and empty the list shown until the
            # next pass, so it is an outage, and the last pass's queues stay.
            raise RedisClusterException("no primary node known: the cluster is unreachable")
        walk = _Walk([(node, _scan_pattern(p)) for p in self.prefixes for node in nodes])
        with self._lock:
            self._walk = walk
        began_pass = time.monotonic()
        next_poll = began_pass + CONNECTIONS_INTERVAL_S
        done, calls = False, 0
        while not done:
            if self._stop.is_set():
                return
            began = time.monotonic()
            done = walk.step(self.client, self.prefixes)
            calls += 1
            if duty is not None:
                # Idle (1 - duty) / duty times as long as the call took, at most
                # MAX_PAUSE_S: the time is the wall clock's, which in a busy
                # server holds GIL waits too, and one call that waited 0.2 s
                # for it paused the walk 40 s (a new queue took that long to
                # show on the overview).
                pause = (time.monotonic() - began) * (1 - duty) / duty
                self._stop.wait(min(pause, MAX_PAUSE_S))
                if time.monotonic() >= next_poll:
                    self._poll_connections()
                    next_poll = time.monotonic() + CONNECTIONS_INTERVAL_S
        with self._lock:
            self._scanned, self._walk = walk.found, None
        self.last_pass_s, self.last_pass_calls = time.monotonic() - began_pass, calls

    def _poll_connections(self) -> None:
        try:
            candidates = {
                ref
                for name in _client_names(self.client)
                for ref in queues_named_by_connection(name, self.prefixes)
            }
        except RedisError as error:
            # Some managed Redis services refuse CLIENT LIST: the walk still finds them.
            log.debug("discovery: CLIENT LIST refused: %r", error)
            return
        with self._lock:
            known = self._scanned | self._connected
        fresh = sorted(candidates - known)
        found = queues_exist(self.client, fresh) if fresh else []
        existing = {ref for ref, exists in zip(fresh, found, strict=True) if exists}
        with self._lock:
            self._connected = (self._connected & candidates) | existing

    def _run(self, walked: bool) -> None:
        if walked:
            self._stop.wait(MIN_PASS_S)
        while not self._stop.is_set():
            began = time.monotonic()
            try:
                self._poll_connections()
                self.scan_pass(duty=SCAN_DUTY if self.last_pass_s is not None else FIRST_WALK_DUTY)
            except OUTAGES as error:
                log.warning("discovery: %r; retrying in %.0f s", error, MIN_PASS_S)
            except Exception:  # a defect must not end the walk for the life of the process
                log.exception("discovery: the pass failed; retrying in %.0f s", MIN_PASS_S)
            self._stop.wait(max(0.0, began + MIN_PASS_S - time.monotonic()))


_registry: dict[tuple[int, tuple[str, ...]], Discovery] = {}
_registry_lock = threading.Lock()


def discovery_for(client: Redis, prefixes: Sequence[str]) -> Discovery:
    """The one Discovery of this process for a client and its prefixes (started on first use)."""
    key = (id(client), tuple(prefixes))
    with _registry_lock:
        found = _registry.get(key)
        if found is None:
            found = Discovery(client, prefixes)
            found.start()  # Redis unreachable: raises, and the next call tries again
            _registry[key] = found
    return found


def scan_queues(client: Redis, prefixes: Sequence[str]) -> list[QueueRef]:
    """One whole unpaced pass (a command-line tool, which runs once)."""
    discovery = Discovery(client, prefixes)
    discovery.scan_pass()
    return discovery.queues()


def discover_queues(
    client: Redis, prefixes: Sequence[str], configured: Iterable[QueueRef] = ()
) -> list[QueueRef]:
    """Configured queues plus those found under ``prefixes``, sorted."""
    found = discovery_for(client, prefixes).queues()
    configured = set(configured).difference(found)
    return sorted([*found, *configured], key=_BY_NAME) if configured else found


def clear_discovery_cache() -> None:
    """Forget every Discovery (tests, or after changing the settings): the next use starts over."""
    with _registry_lock:
        for discovery in _registry.values():
            discovery.stop()
        _registry.clear()
