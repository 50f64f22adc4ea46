"""Changing what a job is: edit its data, duplicate it, add one, for pages
and the API alike, audited with a before/after ``diff``. They need
``dashboard.change_jobs`` apart from acting: a retry reruns what a producer
wrote, an edit makes the next run do something nobody wrote. Everything is
checked before Redis; the edit is one script (``updateData-8.lua``, which
refuses a job taken or finished since)."""

from __future__ import annotations

import difflib
import json
import math
import re
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from redis import Redis
from redis.exceptions import OutOfMemoryError, ResponseError

from dashboard.acting.actions import ActionRefused, ActionResult, record_audit, refusal_for
from dashboard.core import answers, conf, json_input
from dashboard.models import AuditEntry
from queues import codec, errors
from queues.job_options import MAX_PRIORITY, InvalidJobOptions, to_json
from queues.queue import Queue
from queues.read.refs import QueueRef
from queues.read.states import TAB, TABS

EDIT_ACTIONS = answers.EDIT_ACTIONS
# The states (as the pages name them) a job's data may be edited in: no
# worker holds it and it has not completed. updateData-8.lua enforces it.
EDITABLE_STATES = tuple(tab.name for tab in TABS if not tab.not_editable)
# Options of a job that its duplicate does not take over (BullMQ's stored
# names): its id and deduplication id would make the add a no-op, a parent
# would count the copy as a child it never asked for, a scheduler's options
# belong to the scheduler's own iterations.
NOT_DUPLICATED = ("jobId", "de", "parent", "fpof", "cpof", "idof", "rdof", "repeat", "timestamp")
MAX_NAME_LENGTH = 1000
# Control characters (C0, DEL, C1) and lone surrogates: a name is one line of
# text shown everywhere, and UTF-8 (so Redis) cannot hold half a character.
_UNPRINTABLE = re.compile(r"[\x00-\x1f\x7f-\x9f\ud800-\udfff]")
MAX_ATTEMPTS = 1_000_000
MAX_DELAY_MS = 100 * 365 * 86_400_000  # a century, as the API's other limits
# The options that are whole numbers, and their bounds (the add form's fields).
WHOLE_OPTIONS = {
    "attempts": (1, MAX_ATTEMPTS),
    "delay": (0, MAX_DELAY_MS),
    "priority": (0, MAX_PRIORITY),
}
_KEEP_JOBS = ("removeOnComplete", "removeOnFail")
# The options a person gives a job added by hand (BullMQ's names). Others,
# a parent above all, could make the add write outside the queue.
ADD_OPTIONS = (*WHOLE_OPTIONS, "lifo", "backoff", *_KEEP_JOBS)
# A diff is stored and shown whole up to this many characters, and computed
# only for texts up to DIFF_INPUT_LIMIT (difflib's cost grows faster than the
# text); larger changes are summed up by their sizes.
DIFF_LIMIT = 20_000
DIFF_INPUT_LIMIT = 64 * 1024
# How many changes of one job its page lists.
CHANGES_SHOWN = 10
CLOCK_MARGIN_MS = 1_000
_MISSING = object()


# --------------------------------------------------------------------------- input


def check_size(data_json: str) -> None:
    """Refuse data over ``ECHOMQ_MAX_JOB_DATA_BYTES`` (413), before Redis."""
    limit = conf.max_job_data_bytes()
    size = len(data_json.encode("utf-8", errors="surrogatepass"))
    if size > limit:
        raise ActionRefused(
            f"The data is {size:,} bytes; the dashboard writes at most {limit:,} "
            "(ECHOMQ_MAX_JOB_DATA_BYTES). Nothing was changed.",
            "data_too_large",
        )


def parse_data(text: str) -> Any:
    """The JSON value typed into an editor (a form field), checked."""
    check_size(text)
    try:
        return json_input.loads(text, "The data")
    except json_input.JsonRefused as error:
        raise ActionRefused(f"{error}: nothing was changed") from None


def _encode(data: Any) -> str:
    try:
        data_json = to_json(data)
    except InvalidJobOptions:
        raise ActionRefused("The data cannot be written as JSON") from None
    try:
        data_json.encode()
    except UnicodeEncodeError:  # "\ud800": half a character, which Redis cannot store as UTF-8
        raise ActionRefused("The data holds text that is not valid Unicode") from None
    check_size(data_json)
    return data_json


def _is_whole(value: Any, low: int = 0, high: float = math.inf) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and low <= value <= high


def check_options(options: Any) -> dict[str, Any]:
    """The options of a job added by hand: an object of :data:`ADD_OPTIONS`."""
    if options is None:
        return {}
    if not isinstance(options, Mapping):
        raise ActionRefused("opts must be a JSON object")
    unknown = sorted(set(options) - set(ADD_OPTIONS))
    if unknown:
        raise ActionRefused(
            f"Options the dashboard does not add: {', '.join(unknown)[:200]} "
            f"(it takes {', '.join(ADD_OPTIONS)})"
        )
    for name, (low, high) in WHOLE_OPTIONS.items():
        if options.get(name) is not None and not _is_whole(options[name], low, high):
            raise ActionRefused(f"{name} must be a whole number from {low:,} to {high:,}")
    if "lifo" in options and not isinstance(options["lifo"], bool):
        raise ActionRefused("lifo must be true or false")
    backoff = options.get("backoff")
    if not (
        backoff is None
        or _is_whole(backoff)
        or (
            isinstance(backoff, Mapping)
            and backoff.get("type") in ("fixed", "exponential")
            and _is_whole(backoff.get("delay", 0))
            and set(backoff) <= {"type", "delay"}
        )
    ):
        raise ActionRefused(
            'backoff must be milliseconds or {"type": "fixed" | "exponential", "delay": ms}'
        )
    for name in _KEEP_JOBS:
        value = options.get(name)
        if not (value is None or isinstance(value, bool) or _is_whole(value)):
            raise ActionRefused(f"{name} must be true, false or how many jobs to keep (0 or more)")
    return {key: value for key, value in options.items() if value is not None}


def check_name(name: Any) -> str:
    if not isinstance(name, str) or not name.strip():
        raise ActionRefused("A job needs a name")
    if len(name) > MAX_NAME_LENGTH:
        raise ActionRefused(f"A job's name may be at most {MAX_NAME_LENGTH:,} characters")
    if _UNPRINTABLE.search(name):
        raise ActionRefused(
            "A job's name may not hold control characters (NUL, a tab, a line break…)"
            " or half characters"
        )
    return name


# --------------------------------------------------------------------------- diffs


def _pretty(text: str) -> list[str]:
    """A stored JSON text as indented lines (as it was, when it is not JSON)."""
    value = codec.loads(text, _MISSING)
    if value is _MISSING:
        return text.splitlines() or [""]
    return json.dumps(value, indent=2, ensure_ascii=False).splitlines()


def _snapshot(fields: Mapping[str, str]) -> list[str]:
    lines: list[str] = []
    for name, text in fields.items():
        lines.append(f"{name}:")
        lines.extend(f"  {line}" for line in _pretty(text))
    return lines


def diff(before: Mapping[str, str], after: Mapping[str, str]) -> str:
    """A unified diff of a job's fields (name, data, opts: JSON texts) before
    and after; ``before`` empty for a new job. Bounded (:data:`DIFF_LIMIT`)."""
    size_before = sum(len(text) for text in before.values())
    size_after = sum(len(text) for text in after.values())
    if max(size_before, size_after) > DIFF_INPUT_LIMIT:
        return f"(too large to compare line by line: {size_before:,} → {size_after:,} characters)"
    lines = difflib.unified_diff(
        _snapshot(before), _snapshot(after), "before", "after", lineterm="", n=2
    )
    text = "\n".join(lines)
    if len(text) > DIFF_LIMIT:
        return text[:DIFF_LIMIT] + f"\n… (cut at {DIFF_LIMIT:,} characters)"
    return text


# --------------------------------------------------------------------------- the changes


def _changed(
    user: str, action: str, ref: QueueRef, job_id: str, message: str, diff: str, source: str = ""
) -> answers.JobChange:
    """The audit entry of a change, and the change as the API answers it."""
    result = ActionResult(action, ref, count=1, message=message)
    copied = f" source={source}" if source else ""
    record_audit(user, result, job_id, f"changed=1{copied}", diff=diff, job=job_id)
    return answers.JobChange(
        action=action,
        queue=ref.qualified,
        id=job_id,
        source=source or None,
        message=message,
        diff=diff,
    )


def _refused_edit(queue: Queue, job_id: str, error: Exception) -> ActionRefused:
    if isinstance(error, errors.JobNotExist):
        return ActionRefused(f"Job {job_id} no longer exists — it was removed", "job_not_exist")
    if isinstance(error, errors.JobBroken):
        return ActionRefused(
            f"Job {job_id}'s data was not changed: {errors.describe_reason(error.reason)}",
            "job_broken",
        )
    if isinstance(error, errors.ScriptError):
        state = queue.get_state(job_id) or "gone"
        tab = TAB.get(state)
        why = (
            tab.not_editable
            if tab and tab.not_editable
            else f"it is in no state it can be edited in ({state})"
        )
        return ActionRefused(
            f"Job {job_id}'s data was not changed: {why}. Only waiting, prioritized, "
            "delayed and failed jobs can be edited.",
            "job_not_in_state",
        )
    return refusal_for(error, "")


def edit_data(
    client: Redis, ref: QueueRef, job_id: str, data: Any, *, user: str
) -> answers.JobChange:
    """Replace a job's data, if it is still waiting, prioritized, delayed or failed."""
    data_json = _encode(data)
    queue = Queue(ref.name, client, prefix=ref.prefix)
    try:
        done = queue.update_data(job_id, data)
    except (errors.ScriptError, errors.JobBroken, OutOfMemoryError, errors.CorruptKey) as error:
        refusal = _refused_edit(queue, job_id, error)
        result = ActionResult("edit_data", ref, message=str(refusal))
        record_audit(user, result, job_id, f"changed=0 refused:{refusal.code}", job=job_id)
        raise refusal from error
    state = "waiting" if done.state in ("wait", "paused") else done.state
    message = (
        f"Job {job_id}'s data was changed (the job is {state}); its next run reads the new data"
    )
    changed = diff({"data": done.previous}, {"data": data_json})
    return _changed(user, "edit_data", ref, job_id, message, changed)


def _add(
    queue: Queue, ref: QueueRef, user: str, name: str, data: Any, opts: Any, source: str = ""
) -> answers.JobChange:
    """Add the job (through the runtime's add, as a producer would), a copy of
    job ``source`` when given, audited with its fields as the diff."""
    data_json = _encode(data)
    try:
        job_id = queue.add(name, data, opts)
    except InvalidJobOptions as error:
        raise ActionRefused(str(error)) from None
    except (OutOfMemoryError, errors.CorruptKey) as error:
        raise refusal_for(error, "") from error
    after = {"name": json.dumps(name), "data": data_json, "opts": to_json(opts)}
    if source:
        message = f"Job {source} duplicated as job {job_id}"
        return _changed(user, "duplicate", ref, job_id, message, diff({}, after), source)
    message = f"Job {job_id} ({name[:100]}) added to {ref.name}"
    return _changed(user, "add", ref, job_id, message, diff({}, after))


def add_job(
    client: Redis, ref: QueueRef, name: Any, data: Any, opts: Any, *, user: str
) -> answers.JobChange:
    """Add a job by hand."""
    name, options = check_name(name), check_options(opts)
    return _add(Queue(ref.name, client, prefix=ref.prefix), ref, user, name, data, options)


def _source(queue: Queue, job_id: str) -> tuple[str, Any, dict[str, Any]]:
    """The name, data and options of the job to copy, or why it cannot be."""
    try:
        job = queue.get_job(job_id)
    except ResponseError:  # the key is not a hash
        job = None
        if queue.connection.exists(queue.keys.job(job_id)):
            raise ActionRefused(
                f"Job {job_id} was not duplicated: its key is not a job hash", "job_broken"
            ) from None
    if job is None:
        raise ActionRefused(f"Job {job_id} does not exist", "job_not_exist")
    data = codec.loads(job.data_text, _MISSING) if job.data_text else {}
    opts = codec.loads(job.opts_text, None) if job.opts_text else {}
    if data is _MISSING or not isinstance(opts, dict):
        which = "data is not valid JSON" if data is _MISSING else "options are not a JSON object"
        raise ActionRefused(
            f"Job {job_id} was not duplicated: its {which} (edit its data first)", "job_broken"
        )
    kept = {key: value for key, value in opts.items() if key not in NOT_DUPLICATED}
    return job.name, data, kept


def duplicate_job(client: Redis, ref: QueueRef, job_id: str, *, user: str) -> answers.JobChange:
    """A new job with the same name, data and options as ``job_id`` (less its id,
    deduplication, parent and scheduler: :data:`NOT_DUPLICATED`)."""
    queue = Queue(ref.name, client, prefix=ref.prefix)
    name, data, opts = _source(queue, job_id)
    return _add(queue, ref, user, name, data, opts, job_id)


def changes_of_job(ref: QueueRef, job_id: str, created_ms: int | None) -> list[AuditEntry]:
    """The edits, duplications and adds that made or changed this job, newest
    first: none from before it was created (``created_ms``, its timestamp),
    which were made to an earlier job of the same id (a queue whose id counter
    started over, or a custom id used again)."""
    since = None
    if created_ms is not None:
        # The producer's clock wrote the timestamp, ours the entries: a second's
        # margin keeps the entry of the add that made the job.
        try:
            since = datetime.fromtimestamp((created_ms - CLOCK_MARGIN_MS) / 1000, tz=UTC)
        except (OverflowError, OSError, ValueError):
            since = None  # a timestamp no clock wrote (year 3,000,000): no bound
    return AuditEntry.changes_of_job(
        ref.qualified, job_id, EDIT_ACTIONS, CHANGES_SHOWN, connection=ref.connection, since=since
    )
