"""Flows: a tree of jobs across queues, added atomically, in BullMQ 5.x's layout.

A job with children waits in its queue's ``waiting-children`` set until all of
them have finished; each child names its parent in its hash (``parentKey``,
``parent``) and is a member of the parent's ``:dependencies`` set. When a child
completes, its return value is recorded in the parent's ``:processed`` hash;
when the last one has, the parent moves to wait (or delayed) and a worker runs
it, reading its children's values with :func:`children_values`. A failed child
leaves the parent waiting unless the child's options say otherwise (the same
option names as BullMQ):

- ``failParentOnFailure``: the parent fails too (recorded in ``:unsuccessful``),
  and so on up the tree for parents that say the same;
- ``continueParentOnFailure``: the parent runs at once (recorded in ``:failed``);
- ``ignoreDependencyOnFailure``: the child counts as done (recorded in ``:failed``);
- ``removeDependencyOnFailure``: the child counts as done, nothing recorded.

One script call (priv/scripts/addFlow-1.lua) adds the whole tree: it checks
every queue and id first, so a refused flow writes nothing. Jobs without a
``jobId`` get a random one, as BullMQ's flow producers give them (the parent's
id must be known before the call to name it in its children). On a cluster
every queue of a flow must share the prefix's hash tag.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from redis import Redis
from redis.asyncio import Redis as AsyncRedis
from redis.exceptions import ResponseError

from queues import codec, scripts
from queues.commands.flows import FlowNodeCall, add_flow
from queues.errors import raise_for_code, raise_refusal
from queues.job_options import JobOptions, prepare_job
from queues.keys import DEFAULT_PREFIX, QueueKeys
from queues.read.refs import QueueRef

# BullMQ's four parent options: at most one per child.
PARENT_OPTIONS = (
    "failParentOnFailure",
    "continueParentOnFailure",
    "ignoreDependencyOnFailure",
    "removeDependencyOnFailure",
)


class InvalidFlow(ValueError):
    """A flow no runtime could run as given (refused before Redis sees it)."""


class FlowJobIdTaken(ValueError):
    """A job id of the flow is already used: nothing was added."""

    def __init__(self, queue: str, job_id: str) -> None:
        self.queue = queue
        self.job_id = job_id
        super().__init__(
            f"job {job_id} of {queue} already exists (or its keys are left over): "
            "the flow was not added"
        )


@dataclass(frozen=True, slots=True)
class FlowJob:
    """One job of a flow and its children. ``queue`` is the queue's name;
    ``prefix`` None means the producer's."""

    name: str
    queue: str
    data: Any = None
    opts: JobOptions | Mapping[str, Any] | None = None
    children: Sequence[FlowJob] = ()
    prefix: str | None = None


@dataclass(slots=True)
class FlowNode:
    """What was added: a job's queue and id, and its children's nodes."""

    ref: QueueRef
    id: str
    name: str
    children: list[FlowNode] = field(default_factory=list)

    @property
    def key(self) -> str:
        return self.ref.keys.job(self.id)


def _new_job_id() -> str:
    # A custom id may not look like a counter's (an integer).
    while True:
        candidate = uuid.uuid4().hex
        if not candidate.isdigit():
            return candidate


def _node_options(job: FlowJob, parent: FlowNode | None) -> dict[str, Any]:
    opts = dict(job.opts or {})
    if parent is not None and "parent" in opts:
        raise InvalidFlow(f"job {job.name!r}: a child's parent is the flow's, not an option")
    if "deduplication" in opts:
        # A deduplicated child would not be added, and its parent would wait for it for ever.
        raise InvalidFlow(f"job {job.name!r}: deduplication is not available in a flow")
    chosen = [name for name in PARENT_OPTIONS if opts.get(name)]
    if len(chosen) > 1:
        raise InvalidFlow(f"job {job.name!r}: {' and '.join(chosen)} cannot be used together")
    if chosen and parent is None and "parent" not in opts:
        raise InvalidFlow(f"job {job.name!r}: {chosen[0]} needs a parent")
    if parent is not None:
        opts["parent"] = {"id": parent.id, "queue": parent.ref.qualified}
    if not opts.get("jobId"):
        opts["jobId"] = _new_job_id()
    return opts


class FlowProducer:
    """Adds flows through a synchronous client (``redis.Redis`` or a cluster)."""

    def __init__(self, connection: Redis, *, prefix: str = DEFAULT_PREFIX) -> None:
        self.connection = connection
        self.prefix = prefix

    def add(self, flow: FlowJob) -> FlowNode:
        """Add the whole tree; returns its nodes with their ids. Raises
        InvalidFlow / InvalidJobOptions (nothing sent), ParentJobNotExist
        (the root's parent is gone), FlowJobIdTaken, CorruptKey."""
        root, calls = self._prepare(flow)
        try:
            answer = scripts.run(self.connection, add_flow(calls))
        except ResponseError as error:
            raise_refusal(error)
        if isinstance(answer, int):
            raise_for_code(answer, "addFlow", root.id)
        # {"taken", index}: the index is a number, where the ids are all text.
        if isinstance(answer, list) and len(answer) == 2 and isinstance(answer[1], int):
            taken = calls[answer[1] - 1]
            raise FlowJobIdTaken(f"{taken.keys.prefix}:{taken.keys.name}", taken.job.job_id)
        return root

    def _prepare(self, flow: FlowJob) -> tuple[FlowNode, list[FlowNodeCall]]:
        """The nodes in the order the script adds them (parents first) and the
        tree of results. Walks iteratively: a deep flow cannot overflow the stack."""
        calls: list[FlowNodeCall] = []
        seen: set[int] = set()
        root: FlowNode | None = None
        pending: list[tuple[FlowJob, FlowNode | None]] = [(flow, None)]
        while pending:
            job, parent = pending.pop()
            if id(job) in seen:
                raise InvalidFlow(f"job {job.name!r} appears twice in the flow (a cycle?)")
            seen.add(id(job))
            keys = QueueKeys(job.queue, job.prefix or self.prefix)
            prepared = prepare_job(job.name, job.data, _node_options(job, parent))
            node = FlowNode(QueueRef(keys.prefix, keys.name), prepared.job_id, job.name)
            if parent is None:
                root = node
            else:
                parent.children.append(node)
            calls.append(FlowNodeCall(keys, bool(job.children), prepared))
            # Reversed: children are added (and listed) in the order given.
            pending.extend((child, node) for child in reversed(job.children))
        assert root is not None
        return root, calls


async def children_values(client: AsyncRedis, keys: QueueKeys, job_id: str) -> dict[str, Any]:
    """A parent's completed children's return values, by child key
    (``<prefix>:<queue>:<id>``), as a worker reads them while running the
    parent. A value that is not JSON is given as its text."""
    # Any: redis-py types it as sync-or-async before 8.0 and as awaitable since.
    answer: Any = client.hgetall(keys.processed(job_id))
    raw: dict[bytes | str, bytes | str] = await answer
    values: dict[str, Any] = {}
    for child, value in raw.items():
        text = codec.text(value)
        values[codec.text(child) or ""] = codec.loads(text, text)
    return values
