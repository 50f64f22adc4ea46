"""The flow a job belongs to, for display: root, parents and children across queues.

A job names its parent in its hash (``parentKey``, or the ``queueKey`` and
``id`` of its ``parent`` JSON); a parent knows its children by four keys
(docs/protocol.md): ``:dependencies`` (set, pending), ``:processed``
(hash, completed → return value), ``:failed`` (hash, failed but ignored or
continued past) and ``:unsuccessful`` (zset, failed and failed the parent).

Bounded whatever the keyspace holds:

- up the tree at most MAX_DEPTH parents (one round trip each); a parent that
  is gone, is not a job, or closes a loop ends the walk, and the tree is shown
  from the highest job reached with a problem saying why;
- down the tree at most MAX_DEPTH levels (at most three round trips per level,
  about three commands per node: see "reading nodes" below) and
  NODE_BUDGET nodes in all; each parent shows at most PAGE_SIZE children
  (failed ones first), read with ZSCAN / HSCAN / SSCAN, so a parent of a
  100,000 children costs one page; :func:`children_page` reads the next page
  from the token a node gives.

A node's state comes from the sorted sets and the active list; a job in none
of them is shown as waiting without searching the (possibly huge) ready lists.
Nothing here raises on malformed data: a key of the wrong type becomes a
problem on its node.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from typing import Any

from redis import Redis
from redis.exceptions import ResponseError

from queues import codec
from queues.keys import InvalidName, QueueKeys, validate_job_id
from queues.numerals import UNSIGNED_64, NotWholeNumber, parse_whole
from queues.read import answers
from queues.read.refs import DEFAULT_CONNECTION, QueueRef
from queues.read.states import BY_ATTENTION, KEY_STATES

# Declared with the answers that carry them (queues.read.answers.Flow).
MAX_DEPTH = answers.FLOW_MAX_DEPTH
PAGE_SIZE = answers.FLOW_PAGE_SIZE

NODE_BUDGET = 200
# Scan calls one page of children may make (a sparse set can answer empty batches).
_SCANS_PER_PAGE = 8
_NODE_FIELDS = (
    "name",
    "timestamp",
    "processedOn",
    "finishedOn",
    "failedReason",
    "parentKey",
    "parent",
)
_ZSET_STATES = tuple(key.name for key in KEY_STATES if not key.is_list)
# The parent's keys holding children, in the order a page lists them: failed
# ones first (what the on-call engineer looks for), then the pending, the
# completed. (suffix, Redis type, scan command, what a child there is.)
_CHILD_KINDS = (
    ("unsuccessful", "zset", "zscan", "failed the parent"),
    ("failed", "hash", "hscan", "failed, ignored"),
    ("dependencies", "set", "sscan", "pending"),
    ("processed", "hash", "hscan", "completed"),
)
_COUNT_COMMANDS = {"zset": "zcard", "hash": "hlen", "set": "scard"}
# A kind holding at most this many children is read whole and sorted, so its
# pages are exact and stable: a scan's cursor can go on after the last member
# (a page then offered "More children" that found none, seen in CI), and a
# scan's order changes as the set grows.
_WHOLE_UP_TO = 4 * PAGE_SIZE
_WHOLE_READS: dict[str, tuple[str, tuple[int, ...]]] = {
    "zset": ("zrange", (0, -1)),
    "hash": ("hkeys", ()),
    "set": ("smembers", ()),
}


@functools.lru_cache(maxsize=1024)
def _keys_of(ref: QueueRef) -> QueueKeys:
    # A tree's nodes share a few queues: their key names are built once each
    # (QueueRef.keys validates and builds them afresh on every call).
    return ref.keys


class JobNotInKeyspace(LookupError):
    """The job asked about is gone (or its key holds no job)."""


def _replies(pipe: Any) -> list[Any]:
    # A key of the wrong type answers an error for its command only.
    return list(pipe.execute(raise_on_error=False))


def _ok(reply: Any) -> bool:
    return not isinstance(reply, Exception)


def split_job_key(key: str, connection: str = DEFAULT_CONNECTION) -> tuple[QueueRef, str] | None:
    """``<prefix>:<queue>:<id>`` → (queue on ``connection``, id); None for
    anything else. A flow's jobs are all on one server: the one read."""
    queue_key, _, job_id = key.rpartition(":")
    try:
        return QueueRef.parse(queue_key).on(connection), validate_job_id(job_id)
    except (InvalidName, ValueError):
        return None


def parent_key_of(parent_key: Any, parent_json: Any) -> str | None:
    """The parent's job key from the ``parentKey`` and ``parent`` fields."""
    key = codec.text(parent_key)
    if key:
        return key
    info = codec.loads(parent_json)
    if isinstance(info, dict) and isinstance(info.get("queueKey"), str):
        job_id = info.get("id")
        if isinstance(job_id, str | int) and not isinstance(job_id, bool):
            return f"{info['queueKey']}:{job_id}"
    return None


@dataclass(slots=True)
class Dependencies:
    """A parent's children by kind (BullMQ's getDependencies names them
    unprocessed, processed, ignored and failed)."""

    pending: int = 0
    processed: int = 0
    ignored: int = 0  # failed, recorded in :failed (ignoreDependency / continueParent)
    failed: int = 0  # failed and failed the parent (:unsuccessful)

    @property
    def total(self) -> int:
        return self.pending + self.processed + self.ignored + self.failed

    def as_json(self) -> answers.FlowDependencies:
        return answers.FlowDependencies(
            pending=self.pending,
            processed=self.processed,
            ignored=self.ignored,
            failed=self.failed,
        )


@dataclass(slots=True)
class TreeNode:
    ref: QueueRef
    id: str
    missing: bool = False  # named by a parent, but its hash is gone
    not_a_job: bool = False  # its key holds something else
    name: str = ""
    state: str | None = None
    timestamp: int | None = None
    processed_on: int | None = None
    finished_on: int | None = None
    failed_reason: str | None = None
    # Why its parent lists it (a child kind), None for the root.
    relation: str | None = None
    dependencies: Dependencies = field(default_factory=Dependencies)
    children: list[TreeNode] = field(default_factory=list)
    # Where the next page of children starts; None when all are shown.
    next_page: str | None = None
    # Children exist below the depth or node budget: not read.
    children_not_read: bool = False
    problems: list[str] = field(default_factory=list)
    # Its keys of children that hold another type (they count as no children).
    broken_keys: list[str] = field(default_factory=list)
    on_path: bool = False  # the page's job or one of its parents

    @property
    def key(self) -> str:
        return _keys_of(self.ref).job(self.id)

    @property
    def duration_ms(self) -> int | None:
        if self.processed_on is None or self.finished_on is None:
            return None
        return max(0, self.finished_on - self.processed_on)

    def as_json(self) -> answers.FlowNode:
        return answers.FlowNode(
            queue=self.ref.qualified,
            id=self.id,
            name=self.name,
            state=self.state,
            missing=self.missing,
            not_a_job=self.not_a_job,
            relation=self.relation,
            timestamp=self.timestamp,
            processed_on=self.processed_on,
            finished_on=self.finished_on,
            duration_ms=self.duration_ms,
            failed_reason=self.failed_reason,
            dependencies=self.dependencies.as_json(),
            children=[child.as_json() for child in self.children],
            next_page=self.next_page,
            children_not_read=self.children_not_read,
            problems=self.problems,
        )


@dataclass(slots=True)
class FlowTree:
    """The tree the job ``focus`` belongs to, shown from ``root``."""

    focus: tuple[QueueRef, str]
    root: TreeNode
    path: list[TreeNode]  # root ... the focus job
    problems: list[str] = field(default_factory=list)
    deeper_not_shown: bool = False

    @property
    def parent(self) -> TreeNode | None:
        return self.path[-2] if len(self.path) > 1 else None

    def as_json(self) -> answers.Flow:
        return answers.Flow(
            job=answers.JobRef(queue=self.focus[0].qualified, id=self.focus[1]),
            root=self.root.as_json(),
            path=[answers.JobRef(queue=node.ref.qualified, id=node.id) for node in self.path],
            problems=self.problems,
            deeper_not_shown=self.deeper_not_shown,
            max_depth=MAX_DEPTH,
            page_size=PAGE_SIZE,
        )


@dataclass(slots=True)
class ChildrenPage:
    parent: TreeNode
    children: list[TreeNode]
    next_page: str | None

    def as_json(self) -> answers.FlowChildrenPage:
        return answers.FlowChildrenPage(
            queue=self.parent.ref.qualified,
            id=self.parent.id,
            dependencies=self.parent.dependencies.as_json(),
            children=[child.as_json() for child in self.children],
            next_page=self.next_page,
            problems=self.parent.problems,
        )


# -- reading nodes ---------------------------------------------------------------
#
# A level of the tree is read in one round trip whatever its size, and with few
# commands per node (redis-py packs and parses each command in Python: at 12
# commands a node they were most of the read's time): each node's fields
# (HMGET), its place in the active list (LPOS) and whether it has children
# (one EXISTS over its four keys of children); per queue of the level, one
# ZMSCORE per state set for all its nodes. A second round trip asks only what
# the first left open: the children counts of the nodes that have children,
# and the type of a key that gave no job fields (gone, or not a job).


def _child_count_keys(node: TreeNode) -> list[str]:
    key = node.key
    return [f"{key}:{suffix}" for suffix, _kind, _scan, _label in _CHILD_KINDS]


def _ask_counts(pipe: Any, node: TreeNode) -> None:
    for (_suffix, kind, _scan, _label), key in zip(
        _CHILD_KINDS, _child_count_keys(node), strict=True
    ):
        getattr(pipe, _COUNT_COMMANDS[kind])(key)


def _apply_fields(node: TreeNode, fields: list[Any]) -> str | None:
    """Fill ``node`` from its HMGET reply; returns its parent's key (or None)."""
    name, timestamp, processed_on, finished_on, reason, parent_key, parent = fields
    node.name = codec.text(name) or ""
    node.timestamp = codec.integer(timestamp)
    node.processed_on = codec.integer(processed_on)
    node.finished_on = codec.integer(finished_on)
    node.failed_reason = codec.failure_reason(reason)
    return parent_key_of(parent_key, parent)


def _apply_state(node: TreeNode, scores: list[Any], active: Any) -> None:
    """The node's state from its score in each state set and its place in active."""
    found = [
        s for s, score in zip(_ZSET_STATES, scores, strict=True) if _ok(score) and score is not None
    ]
    if _ok(active) and active is not None:
        found.append("active")
    node.state = found[0] if found else "wait"
    if len(found) > 1:
        node.problems.append(f"it is in more than one state ({' and '.join(found)})")


def _apply_counts(node: TreeNode, replies: list[Any]) -> None:
    values = []
    for (suffix, kind, _scan, _label), reply in zip(_CHILD_KINDS, replies, strict=True):
        if _ok(reply):
            values.append(int(reply or 0))
        else:
            values.append(0)
            node.broken_keys.append(suffix)
            node.problems.append(f"its {suffix} key is not a {kind}")
    node.dependencies = Dependencies(
        failed=values[0], ignored=values[1], pending=values[2], processed=values[3]
    )


def _apply_not_a_job(node: TreeNode, key_type: Any, read_as_hash: bool) -> None:
    """A key that gave no job fields: gone, another type (its HMGET failed:
    ``read_as_hash`` False), or a hash without them."""
    kind = codec.text(key_type) if _ok(key_type) else "none"
    if kind == "none":
        node.missing = True
        node.problems.append("its hash is gone")
    elif kind != "hash" or not read_as_hash:
        node.not_a_job = True
        node.problems.append(f"its key is a {kind}, not a job")
    else:
        node.not_a_job = True
        node.problems.append("its hash has no job fields (neither name nor timestamp)")


def _ask_states(pipe: Any, nodes: list[TreeNode]) -> list[list[int]]:
    """One ZMSCORE per state set per queue, for all of its ``nodes``; returns
    the nodes' indexes by queue, in the order asked."""
    by_queue: dict[QueueRef, list[int]] = {}
    for index, node in enumerate(nodes):
        by_queue.setdefault(node.ref, []).append(index)
    for ref, indexes in by_queue.items():
        ids = [nodes[index].id for index in indexes]
        for state in _ZSET_STATES:
            pipe.zmscore(_keys_of(ref).state(state), ids)
    return list(by_queue.values())


def _scores_per_node(replies: list[Any], groups: list[list[int]], count: int) -> list[list[Any]]:
    """Each node's score in each state set (an error where its set is another type)."""
    scores: list[list[Any]] = [[] for _ in range(count)]
    position = 0
    for indexes in groups:
        for _state in _ZSET_STATES:
            reply = replies[position]
            position += 1
            for offset, index in enumerate(indexes):
                scores[index].append(reply[offset] if _ok(reply) else reply)
    return scores


def _read_nodes(client: Redis, nodes: list[TreeNode], *, parents: bool = False) -> list[str | None]:
    """Fill ``nodes`` (one round trip, a second only when the first leaves
    something open); returns each one's parent key. ``parents``: the nodes are
    named as parents by a child, so their children counts are asked at once."""
    if not nodes:
        return []
    pipe = client.pipeline(transaction=False)
    for node in nodes:
        pipe.hmget(node.key, list(_NODE_FIELDS))
        pipe.lpos(_keys_of(node.ref).active, node.id)
        if parents:
            _ask_counts(pipe, node)
        else:
            pipe.exists(*_child_count_keys(node))
    groups = _ask_states(pipe, nodes)
    replies = _replies(pipe)
    per_node = 2 + (len(_CHILD_KINDS) if parents else 1)
    scores = _scores_per_node(replies[len(nodes) * per_node :], groups, len(nodes))
    parent_keys: list[str | None] = [None] * len(nodes)
    # Gave no job fields, with whether HMGET could read the key: gone, or what is it?
    odd: list[tuple[TreeNode, bool]] = []
    to_count: list[TreeNode] = []
    for index, node in enumerate(nodes):
        fields, active, *children = replies[index * per_node : (index + 1) * per_node]
        # Neither name nor timestamp (the first two fields): no job here.
        if not _ok(fields) or (fields[0] is None and fields[1] is None):
            odd.append((node, _ok(fields)))
            continue
        parent_keys[index] = _apply_fields(node, fields)
        _apply_state(node, scores[index], active)
        if parents:
            _apply_counts(node, children)
        elif not _ok(children[0]) or children[0]:
            to_count.append(node)
    if odd or to_count:
        _read_what_is_open(client, odd, to_count)
    return parent_keys


def _read_what_is_open(
    client: Redis, odd: list[tuple[TreeNode, bool]], to_count: list[TreeNode]
) -> None:
    """The second round trip: the type of each key that gave no job fields,
    the children counts of the nodes that have children."""
    pipe = client.pipeline(transaction=False)
    for node, _ in odd:
        pipe.type(node.key)
    for node in to_count:
        _ask_counts(pipe, node)
    replies = _replies(pipe)
    for (node, read_as_hash), key_type in zip(odd, replies[: len(odd)], strict=True):
        _apply_not_a_job(node, key_type, read_as_hash)
    width = len(_CHILD_KINDS)
    for index, node in enumerate(to_count):
        start = len(odd) + index * width
        _apply_counts(node, replies[start : start + width])


# -- the order of siblings ----------------------------------------------------------
#
# Redis gives a parent's children in its own hash or set order, which changes
# as the set grows: the list jumped about between refreshes and a failed child
# could sit under forty completed ones. A page of siblings (at most PAGE_SIZE
# and the path's next job) is sorted once its states are read, so the order
# costs the page, not the parent's children: the failed first, then a child
# whose job is gone or broken (something is wrong there too), then the other
# states by BY_ATTENTION; among equals by queue, then by id: integer ids by
# value (BullMQ's counter: 2 before 10, not after 19), any other id as text
# (a flow's ids are often hex uuids, where "6d3e" before "42a1" would look
# unsorted). The same children always read in the same order.

_ATTENTION_RANK = {state: rank for rank, state in enumerate(BY_ATTENTION)}
# Right after "failed": a child named by its parent whose job is gone or broken.
_BROKEN_RANK = _ATTENTION_RANK["failed"] + 0.5


def id_order(job_id: str) -> tuple[int, int, str]:
    """A sort key for job ids: integer ids first and by value (compared by
    length then digits, never made an int: an id may hold thousands of
    digits), then the others as text."""
    if job_id.isascii() and job_id.isdigit():
        digits = job_id.lstrip("0")
        return 0, len(digits), digits
    return 1, 0, job_id


def _key_order(job_key: str) -> tuple[str, tuple[int, int, str]]:
    queue_key, _, job_id = job_key.rpartition(":")
    return queue_key, id_order(job_id)


def _sibling_key(node: TreeNode) -> tuple[float, str, tuple[int, int, str]]:
    rank: float
    if node.missing or node.not_a_job:
        rank = _BROKEN_RANK
    else:
        rank = _ATTENTION_RANK.get(node.state or "", len(BY_ATTENTION))
    return rank, node.ref.qualified, id_order(node.id)


def in_reading_order(siblings: list[TreeNode]) -> list[TreeNode]:
    """A page of siblings as the on-call engineer reads them (see above)."""
    return sorted(siblings, key=_sibling_key)


# -- pages of children -------------------------------------------------------------


def _page_token(kind: int, cursor: int, skip: int) -> str:
    return f"{kind}.{cursor}.{skip}"


def parse_page_token(token: str) -> tuple[int, int, int]:
    """``kind.cursor.skip`` → numbers; InvalidName when it is not one."""
    parts = token.split(".")
    if len(parts) != 3:
        raise InvalidName("not a page of children")
    try:
        kind = parse_whole(parts[0], len(_CHILD_KINDS) - 1)
        cursor = parse_whole(parts[1], UNSIGNED_64)  # a SCAN cursor
        skip = parse_whole(parts[2], 10_000)
    except NotWholeNumber:
        raise InvalidName("not a page of children") from None
    return kind, cursor, skip


# One scan answer: the cursor to go on from (0: done) and the members read.
Batch = tuple[int, list[str]]


def _scan_key(parent: TreeNode, kind: int) -> tuple[str, str]:
    suffix, _type, scan, _label = _CHILD_KINDS[kind]
    return scan, f"{parent.key}:{suffix}"


def _batch(reply: Any) -> Batch:
    if not _ok(reply):
        return 0, []  # a key of the wrong type: its count said so already
    next_cursor, items = reply
    if isinstance(items, dict):
        members = list(items)
    else:
        members = [item[0] if isinstance(item, tuple) else item for item in items]
    return int(next_cursor), [codec.text(member) or "" for member in members]


def _kind_count(parent: TreeNode, kind: int) -> int:
    deps = parent.dependencies
    return (deps.failed, deps.ignored, deps.pending, deps.processed)[kind]


def _has_kind(parent: TreeNode, kind: int) -> bool:
    """Whether the parent's count says there are children of this kind (none:
    no scan is sent for it)."""
    return _kind_count(parent, kind) > 0


def _reads_whole(parent: TreeNode, kind: int, cursor: int) -> bool:
    return cursor == 0 and _kind_count(parent, kind) <= _WHOLE_UP_TO


def _ask(target: Any, parent: TreeNode, kind: int, cursor: int) -> Any:
    """The command reading one batch of a kind: the whole key when it is small
    (answered as a finished scan, sorted), else one scan call."""
    scan, key = _scan_key(parent, kind)
    if _reads_whole(parent, kind, cursor):
        command, args = _WHOLE_READS[_CHILD_KINDS[kind][1]]
        return getattr(target, command)(key, *args)
    return getattr(target, scan)(key, cursor, count=PAGE_SIZE)


def _whole_batch(reply: Any) -> Batch:
    if not _ok(reply):
        return 0, []
    return 0, sorted((codec.text(member) or "" for member in reply), key=_key_order)


def _first_batches(client: Redis, parents: list[TreeNode]) -> dict[str, list[Batch | None]]:
    """The first scan of every kind of children of every parent: one round trip."""
    pipe = client.pipeline(transaction=False)
    asked: list[tuple[TreeNode, int]] = []
    for parent in parents:
        for kind in range(len(_CHILD_KINDS)):
            if _has_kind(parent, kind):
                _ask(pipe, parent, kind, 0)
                asked.append((parent, kind))
    replies = _replies(pipe) if asked else []
    batches: dict[str, list[Batch | None]] = {
        parent.key: [None] * len(_CHILD_KINDS) for parent in parents
    }
    for (parent, kind), reply in zip(asked, replies, strict=True):
        whole = _reads_whole(parent, kind, 0)
        batches[parent.key][kind] = _whole_batch(reply) if whole else _batch(reply)
    return batches


def _scan(client: Redis, parent: TreeNode, kind: int, cursor: int) -> Batch:
    whole = _reads_whole(parent, kind, cursor)
    try:
        reply = _ask(client, parent, kind, cursor)
    except ResponseError as error:
        reply = error
    return _whole_batch(reply) if whole else _batch(reply)


def _child_keys_page(
    client: Redis, parent: TreeNode, token: str | None, first: list[Batch | None] | None = None
) -> tuple[list[tuple[str, str]], str | None]:
    """Up to PAGE_SIZE (child key, relation) pairs from ``token`` on (None: the
    first page), and the token of the page after (None: the last). ``first``:
    the answers of the scans from cursor 0, already read (_first_batches).
    Kinds the parent's counts say are empty are not scanned."""
    kind, cursor, skip = parse_page_token(token) if token else (0, 0, 0)
    found: list[tuple[str, str]] = []
    scans = 0
    while kind < len(_CHILD_KINDS) and len(found) < PAGE_SIZE:
        if cursor == 0 and not _has_kind(parent, kind):
            kind += 1
            continue
        prefetched = first[kind] if first is not None and cursor == 0 else None
        if prefetched is None:
            if scans == _SCANS_PER_PAGE:
                break
            scans += 1
            prefetched = _scan(client, parent, kind, cursor)
        next_cursor, members = prefetched
        members = members[skip:]
        room = PAGE_SIZE - len(found)
        label = _CHILD_KINDS[kind][3]
        found.extend((member, label) for member in members[:room])
        if len(members) > room:
            # The batch goes on past the page: the next page reads it again.
            return found, _page_token(kind, cursor, skip + room)
        kind, cursor, skip = (kind, next_cursor, 0) if next_cursor else (kind + 1, 0, 0)
    while kind < len(_CHILD_KINDS) and cursor == 0 and not _has_kind(parent, kind):
        kind += 1
    return found, _page_token(kind, cursor, 0) if kind < len(_CHILD_KINDS) else None


def _child_node(key: str, relation: str, connection: str) -> TreeNode | None:
    split = split_job_key(key, connection)
    if split is None:
        return None
    return TreeNode(split[0], split[1], relation=relation)


def _children_of(
    client: Redis, parent: TreeNode, token: str | None, first: list[Batch | None] | None = None
) -> tuple[list[TreeNode], str | None, list[str]]:
    pairs, next_page = _child_keys_page(client, parent, token, first)
    children, odd = [], []
    for key, relation in pairs:
        child = _child_node(key, relation, parent.ref.connection)
        if child is None:
            odd.append(key[:200])
        else:
            children.append(child)
    problems = [f"lists {key!r}, which is not a job key" for key in odd]
    return children, next_page, problems


def children_page(client: Redis, ref: QueueRef, job_id: str, token: str | None) -> ChildrenPage:
    """One page of a parent's children (each with its state and counts), from
    ``token`` (a node's ``next_page``) on. Raises InvalidName for a bad token."""
    if token is not None:
        parse_page_token(token)
    parent = TreeNode(ref, validate_job_id(job_id))
    _read_nodes(client, [parent], parents=True)
    children, next_page, problems = _children_of(client, parent, token)
    parent.problems.extend(problems)
    _read_nodes(client, children)
    for child in children:
        child.children_not_read = child.dependencies.total > 0
    return ChildrenPage(parent, in_reading_order(children), next_page)


# -- the whole tree ------------------------------------------------------------------


def _walk_up(client: Redis, focus: TreeNode) -> tuple[list[TreeNode], list[str]]:
    """The focus job and its parents, highest first, and what ended the walk
    early (a parent gone, not a job, a loop, too deep)."""
    path = [focus]
    seen = {focus.key}
    problems: list[str] = []
    parent_key = _read_nodes(client, [focus], parents=True)[0]
    while parent_key is not None:
        split = split_job_key(parent_key, focus.ref.connection)
        if split is None:
            problems.append(
                f"{path[0].id} names a parent {parent_key[:200]!r} that is not a job key"
            )
            break
        parent = TreeNode(*split)
        if parent.key in seen:
            problems.append(
                f"the parents loop back to {parent.ref.qualified} #{parent.id}: "
                "shown from the highest job before the loop"
            )
            break
        if len(path) > MAX_DEPTH:
            problems.append(
                f"more than {MAX_DEPTH} levels of parents: shown from the {MAX_DEPTH}th"
            )
            break
        grand_key = _read_nodes(client, [parent], parents=True)[0]
        if parent.missing or parent.not_a_job:
            what = "is gone" if parent.missing else "is not a job"
            problems.append(
                f"the parent {parent.ref.qualified} #{parent.id} of #{path[0].id} {what}: "
                "shown from the highest job that exists"
            )
            break
        seen.add(parent.key)
        path.insert(0, parent)
        parent_key = grand_key
    for node in path:
        node.on_path = True
    return path, problems


def read_flow(client: Redis, ref: QueueRef, job_id: str) -> FlowTree | None:
    """The tree ``job_id`` belongs to, or None when it is in no flow (no
    parent, no children); JobNotInKeyspace when it is gone. A bounded
    number of round trips: at most MAX_DEPTH up, three per level down (more
    only for a parent whose first scans came back short of a page, or a
    parent up the tree that is gone or not a job)."""
    focus = TreeNode(ref, validate_job_id(job_id))
    path, problems = _walk_up(client, focus)
    if focus.missing or focus.not_a_job:
        raise JobNotInKeyspace(f"no job {job_id} in {ref.qualified}")
    root = path[0]
    if len(path) == 1 and focus.dependencies.total == 0 and not problems and not focus.broken_keys:
        return None
    tree = FlowTree((ref, job_id), root, path, problems)
    seen = {node.key for node in path}
    path_next = {path[i].key: path[i + 1] for i in range(len(path) - 1)}
    level = [root]
    budget = NODE_BUDGET - 1
    for depth in range(MAX_DEPTH):
        expanded: list[TreeNode] = []
        for parent in level:
            if parent.dependencies.total == 0:
                continue
            if budget <= 0 and parent.key not in path_next:
                parent.children_not_read = True
                continue
            expanded.append(parent)
            budget -= min(parent.dependencies.total, PAGE_SIZE)
        first = _first_batches(client, expanded)
        below: list[TreeNode] = []
        for parent in expanded:
            children, next_page, odd = _children_of(client, parent, None, first[parent.key])
            parent.problems.extend(odd)
            parent.children = _unseen(parent, children, seen, path_next.get(parent.key))
            parent.next_page = next_page
            below.extend(child for child in parent.children if not child.on_path)
        _read_nodes(client, below)
        for parent in expanded:
            parent.children = in_reading_order(parent.children)
        level = [child for parent in level for child in parent.children]
        if depth == MAX_DEPTH - 1 and any(node.dependencies.total for node in level):
            tree.deeper_not_shown = True
            for node in level:
                node.children_not_read = node.dependencies.total > 0
    return tree


def _unseen(
    parent: TreeNode, children: list[TreeNode], seen: set[str], on_path: TreeNode | None
) -> list[TreeNode]:
    """The children to show under ``parent``: each job once in the tree (a job
    met again closes a loop, and is named as a problem instead), and the next
    job of the page's path when this page of children misses it (the page is
    then put in reading order, that job among the others)."""
    kept: list[TreeNode] = []
    for child in children:
        if on_path is not None and child.key == on_path.key:
            on_path.relation = child.relation
            kept.append(on_path)  # already read: keep the node the path holds
        elif child.key in seen:
            parent.problems.append(
                f"lists {child.ref.qualified} #{child.id} again (a loop): not followed"
            )
        else:
            kept.append(child)
    if on_path is not None and on_path not in kept:
        kept.insert(0, on_path)
    seen.update(child.key for child in kept)
    return kept
