"""The pure builder of the addFlow script (priv/scripts/addFlow-1.lua)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

from queues import scripts
from queues.commands.admin import job_args
from queues.job_options import PreparedJob
from queues.keys import QueueKeys
from queues.scripts import ScriptArg, ScriptCall


class FlowNodeCall(NamedTuple):
    """One node as addFlow receives it: its queue, whether it has children,
    and its addJob arguments (its id always set)."""

    keys: QueueKeys
    has_children: bool
    job: PreparedJob


def add_flow(nodes: Sequence[FlowNodeCall]) -> ScriptCall:
    """The whole tree in one call, parents before their children."""
    if not nodes:
        raise ValueError("a flow has at least one job")
    args: list[ScriptArg] = []
    for node in nodes:
        args.extend((node.keys.base, "1" if node.has_children else "0", *job_args(node.job)))
    return scripts.call("addFlow", (nodes[0].keys.meta,), tuple(args))
