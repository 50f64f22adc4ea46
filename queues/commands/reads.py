"""Builders for the read-only scripts behind the read model (``queues.read``)."""

from __future__ import annotations

from collections.abc import Sequence

from queues import scripts, throughput
from queues.keys import QueueKeys
from queues.read.states import COUNTED_KEYS, KeyState

# Replies per queue from queueCounts: the length of every counted key and the
# paused flag, then throughput.REPLIES if asked.
COUNT_REPLIES = len(COUNTED_KEYS) + 1


def queue_counts(
    queues: Sequence[QueueKeys], *, metrics_points: int, windows: throughput.Windows
) -> scripts.ScriptCall:
    """Counts, paused flag, metrics and recent finishes of many queues (single-node
    Redis only); ``windows`` says where "recent" and "previous" start."""
    bases = tuple(keys.base for keys in queues)
    argv: tuple[int | str, ...] = (
        max(0, metrics_points),
        windows.recent_start,
        windows.previous_start,
        *bases,
    )
    return scripts.call("queueCounts", (), argv)


def job_rows(
    keys: QueueKeys, fields: Sequence[bytes], job_ids: Sequence[str]
) -> scripts.ScriptCall:
    """The ``fields`` of each of ``job_ids``' hashes (single-node Redis only)."""
    return scripts.call("jobRows", (), (keys.base, len(fields), *fields, *job_ids))


def search_slice(
    keys: QueueKeys,
    key_state: str,
    structure: str,
    *,
    start: str,
    anchor: str,
    count: int,
    field: str,
    how: str,
    wanted: str,
    fold_case: bool,
    max_bytes: int,
    around: int = 0,
    context_bytes: int = 0,
    extra: Sequence[str] = (),
) -> scripts.ScriptCall:
    """One bounded slice of a search through one key state (priv/scripts/
    searchJobs-1.lua documents every argument); ``around``: how many of the
    first matches come with ``context_bytes`` of the field each side of the
    match; ``extra``: the other texts that match, or the JSON path's segments."""
    argv: tuple[scripts.ScriptArg, ...] = (
        keys.base,
        structure,
        start,
        anchor,
        count,
        field,
        how,
        wanted,
        int(fold_case),
        max_bytes,
        around,
        context_bytes,
        *extra,
    )
    return scripts.call("searchJobs", (keys.state(key_state),), argv)


def cohort_states(
    keys: QueueKeys,
    states: Sequence[KeyState],
    job_ids: Sequence[str],
    *,
    failed: KeyState,
    reason_bytes: int,
) -> scripts.ScriptCall:
    """Where each of ``job_ids`` is now, looked up in ``states`` (one key
    each, in this order); for those in ``failed``, the first ``reason_bytes``
    of their failedReason. Read-only (priv/scripts/cohortStates-6.lua)."""
    return scripts.call(
        "cohortStates",
        tuple(keys.state(state.name) for state in states),
        (keys.base, reason_bytes, list(states).index(failed) + 1, *job_ids),
    )


def last_finished(queues: Sequence[QueueKeys]) -> scripts.ScriptCall:
    """The newest completed and failed scores of many queues and their oldest
    waiting job's timestamp (single-node Redis only)."""
    return scripts.call("lastFinished", (), tuple(keys.base for keys in queues))


def history_minutes(bases: Sequence[str], *, first_minute: int, minutes: int) -> scripts.ScriptCall:
    """Completed and failed per minute of many queues' metrics history (single-node
    Redis only); ``bases``: their ``HistoryKeys.base``."""
    return scripts.call("historyMinutes", (), (first_minute, minutes, *bases))
