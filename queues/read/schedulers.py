"""A queue's job schedulers for display: BullMQ 5.x job schedulers and legacy
repeatable jobs, told apart, one page at a time.

Both kinds are members of the ``repeat`` zset (score = next run, ms). A job
scheduler's hash ``repeat:<id>`` has an iteration count ``ic``; a legacy
repeatable job's hash has none, and the oldest ones have no hash at all, only
a member spelling the definition (``name:id:endDate:tz:pattern-or-every``).
Layout: queues/schedulers.py and docs/protocol.md.

A page costs three round trips whatever the number of schedulers: the count
and the page's members; each member's small fields and the sizes of its
template; the templates small enough to show. Nothing read is trusted: a
field that is missing or malformed is shown as it is, with a note saying
what is wrong, and never makes the page fail.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from croniter import croniter
from redis import Redis

from queues import codec
from queues.keys import is_scheduler_run_id
from queues.read import answers
from queues.read.answers import SCHEDULER_PAGE_MAX
from queues.read.answers import TEMPLATE_DISPLAY_LIMIT as TEMPLATE_DISPLAY_LIMIT
from queues.read.lists import PagePosition
from queues.read.refs import QueueRef
from queues.schedulers import is_legacy_repeat_key, legacy_run_ids

MAX_PAGE_SIZE = SCHEDULER_PAGE_MAX

# The small fields of a definition, read with one HMGET per scheduler.
_FIELDS = ("name", "pattern", "every", "tz", "limit", "startDate", "endDate", "ic", "offset")
_TEMPLATE_FIELDS = ("data", "opts")

JOB_SCHEDULER = "job scheduler"
LEGACY_REPEATABLE = "legacy repeatable"


@dataclass(slots=True)
class Template:
    """A template field (``data`` or ``opts``) as stored: its text when small
    enough to show, its size always."""

    text: str | None  # None: absent (an empty template) or too big to read here
    size: int

    @property
    def too_big(self) -> bool:
        return self.text is None and self.size > TEMPLATE_DISPLAY_LIMIT


@dataclass(slots=True)
class SchedulerRow:
    scheduler_id: str
    kind: str  # JOB_SCHEDULER or LEGACY_REPEATABLE
    next_run_ms: int | None
    name: str | None = None
    pattern: str | None = None
    every_ms: int | None = None
    tz: str | None = None
    limit: int | None = None
    iterations: int | None = None
    start_ms: int | None = None
    end_ms: int | None = None
    data: Template = field(default_factory=lambda: Template(None, 0))
    opts: Template = field(default_factory=lambda: Template(None, 0))
    # What is wrong with the definition, in plain words (empty when sound).
    notes: list[str] = field(default_factory=list)
    # A legacy key's pending run, found among the ids it may have (its id is
    # a checksum, not the key: queues.schedulers.legacy_run_ids).
    legacy_run_id: str | None = None

    @property
    def pending_job_id(self) -> str | None:
        """The id of the run the scheduler waits for (it may have been taken
        by a worker already, or be gone)."""
        if self.next_run_ms is None:
            return None
        if is_legacy_repeat_key(self.scheduler_id):
            return self.legacy_run_id
        run_id = f"repeat:{self.scheduler_id}:{self.next_run_ms}"
        return run_id if is_scheduler_run_id(run_id) else None

    @property
    def is_legacy(self) -> bool:
        return self.kind == LEGACY_REPEATABLE

    @property
    def can_run_now(self) -> bool:
        """Whether "run now" has a sound template to add a job from."""
        return self.kind == JOB_SCHEDULER and not self.notes

    @property
    def schedule(self) -> str:
        """ "every 5 s", "cron 0 * * * *", or "" when neither is readable."""
        if self.pattern:
            return f"cron {self.pattern}"
        if self.every_ms is not None:
            return f"every {_duration(self.every_ms)}"
        return ""

    def as_json(self) -> answers.Scheduler:
        return answers.Scheduler(
            id=self.scheduler_id,
            kind="legacy" if self.is_legacy else "scheduler",
            name=self.name,
            pattern=self.pattern,
            every=self.every_ms,
            tz=self.tz,
            next_run=self.next_run_ms,
            pending_job_id=self.pending_job_id,
            iterations=self.iterations,
            limit=self.limit,
            start_date=self.start_ms,
            end_date=self.end_ms,
            template=answers.Template(
                data=self.data.text,
                data_size=self.data.size,
                opts=self.opts.text,
                opts_size=self.opts.size,
            ),
            notes=list(self.notes),
            can_run_now=self.can_run_now,
        )


@dataclass(slots=True)
class SchedulerPage(PagePosition):
    ref: QueueRef
    start: int
    size: int
    total: int
    rows: list[SchedulerRow]

    def as_json(self) -> answers.SchedulerPage:
        return answers.SchedulerPage(
            queue=self.ref.qualified,
            start=self.start,
            end=self.end,
            total=self.total,
            schedulers=[row.as_json() for row in self.rows],
        )


def _duration(ms: int) -> str:
    """ "5 min", "1.5 s", "250 ms": whole units where they fit, tenths of a second
    below a minute, else milliseconds."""
    for size, unit in ((86_400_000, "d"), (3_600_000, "h"), (60_000, "min"), (1000, "s")):
        if ms >= size and ms % size == 0:
            return f"{ms // size} {unit}"
    if 1000 < ms < 60_000 and ms % 100 == 0:
        return f"{ms / 1000:.1f} s"
    return f"{ms:,} ms"


def _replies(pipe: Any) -> list[Any]:
    # A key of the wrong type (WRONGTYPE) reads as None: one bad key is a
    # note on its row, not a failed page.
    return [None if isinstance(r, Exception) else r for r in pipe.execute(raise_on_error=False)]


def _whole(raw: Any, label: str, notes: list[str], *, lowest: int = 0) -> int | None:
    """An integer field; a note when present but not one (or below ``lowest``)."""
    if raw is None:
        return None
    text = codec.text(raw) or ""
    try:
        number = float(text)
    except ValueError:
        number = math.nan
    if not math.isfinite(number) or number != int(number) or number < lowest:
        notes.append(f"{label} is not a valid number ({text[:40]!r})")
        return None
    return int(number)


def _check_schedule(row: SchedulerRow, notes: list[str]) -> None:
    if row.pattern and row.every_ms is not None:
        notes.append("it has both a cron pattern and an every; BullMQ refuses such a definition")
    elif not row.pattern and row.every_ms is None:
        notes.append("it has neither a cron pattern nor an every: it cannot compute its next run")
    if row.pattern and not croniter.is_valid(row.pattern, second_at_beginning=True):
        notes.append(f"its cron pattern {row.pattern!r} cannot be read")
    if row.tz:
        try:
            ZoneInfo(row.tz)
        except (ZoneInfoNotFoundError, ValueError):
            notes.append(f"its time zone {row.tz!r} is unknown")


def _check_template(row: SchedulerRow, notes: list[str]) -> None:
    if row.data.text is not None and not codec.is_json(row.data.text):
        notes.append("its template data is not valid JSON")
    if row.opts.text is not None and not isinstance(codec.loads(row.opts.text), dict):
        notes.append("its template options are not a JSON object")


def _from_hash(
    scheduler_id: str, score: int | None, values: Sequence[Any], sizes: Sequence[Any]
) -> SchedulerRow:
    notes: list[str] = []
    fields = dict(zip(_FIELDS, values, strict=True))
    # Legacy repeatable jobs keep no template and no count: a hash with a
    # template but no count is a job scheduler that lost its count.
    has_template = bool(sizes[0] or sizes[1])
    kind = JOB_SCHEDULER if fields["ic"] is not None or has_template else LEGACY_REPEATABLE
    if kind == JOB_SCHEDULER and fields["ic"] is None:
        notes.append("its iteration count (ic) is missing")
    row = SchedulerRow(scheduler_id, kind, score)
    name = codec.text(fields["name"])
    if not name:
        notes.append("its definition has no job name")
    row.name = name
    row.pattern = codec.text(fields["pattern"]) or None
    row.every_ms = _whole(fields["every"], "every", notes, lowest=1)
    row.tz = codec.text(fields["tz"]) or None
    row.limit = _whole(fields["limit"], "limit", notes)
    row.iterations = _whole(fields["ic"], "the iteration count", notes)
    row.start_ms = _whole(fields["startDate"], "the start date", notes)
    row.end_ms = _whole(fields["endDate"], "the end date", notes)
    _whole(fields["offset"], "the offset", notes)
    row.data = Template(None, int(sizes[0] or 0))
    row.opts = Template(None, int(sizes[1] or 0))
    _check_schedule(row, notes)
    row.notes = notes
    return row


def _from_legacy_key(scheduler_id: str, score: int | None) -> SchedulerRow:
    """The oldest legacy repeatable jobs keep no hash: the member spells it."""
    name, _job_id, end, tz, rest = scheduler_id.split(":", 4)
    notes: list[str] = []
    row = SchedulerRow(scheduler_id, LEGACY_REPEATABLE, score, name=name or None, tz=tz or None)
    row.end_ms = _whole(end or None, "the end date", notes)
    if rest.isdigit():
        row.every_ms = int(rest)
    else:
        row.pattern = rest
    _check_schedule(row, notes)
    row.notes = notes
    return row


def _missing_definition(scheduler_id: str, score: int | None, wrong_type: bool) -> SchedulerRow:
    why = (
        "its definition key repeat:{id} holds something other than a hash"
        if wrong_type
        else "its definition hash repeat:{id} is missing"
    )
    return SchedulerRow(scheduler_id, JOB_SCHEDULER, score, notes=[why.format(id=scheduler_id)])


def scheduler_page(
    client: Redis, ref: QueueRef, *, start: int = 0, size: int = 50
) -> SchedulerPage:
    """One page of the queue's schedulers, soonest next run first, with the
    total: three round trips (count and members; fields and template sizes;
    the templates small enough to show, and whether the keys that gave
    nothing at all exist). Three commands a scheduler, then one for its
    templates: redis-py packs and parses each in Python, so at six a row the
    read was a third of the tab's time."""
    start = max(0, start)
    size = max(1, min(size, MAX_PAGE_SIZE))
    keys = ref.keys
    pipe = client.pipeline(transaction=False)
    pipe.zcard(keys.repeat)
    pipe.zrange(keys.repeat, start, start + size - 1, withscores=True)
    total, scored = _replies(pipe)
    members: list[tuple[str, int | None]] = []
    for raw, score in scored or []:
        number = float(score)
        members.append((codec.text(raw) or "", int(number) if math.isfinite(number) else None))

    pipe = client.pipeline(transaction=False)
    for scheduler_id, _ in members:
        definition = keys.repeat_scheduler(scheduler_id)
        pipe.hmget(definition, list(_FIELDS))
        pipe.hstrlen(definition, "data")
        pipe.hstrlen(definition, "opts")
    replies = _replies(pipe) if members else []

    rows: list[SchedulerRow | None] = []
    # Neither a field nor a template: a hash holding none of them, or no hash.
    empty: list[tuple[int, str, int | None, Sequence[Any]]] = []
    for index, (scheduler_id, score) in enumerate(members):
        values, data_size, opts_size = replies[index * 3 : index * 3 + 3]
        if values is None:  # WRONGTYPE: the key holds no hash
            rows.append(_missing_definition(scheduler_id, score, wrong_type=True))
        elif not data_size and not opts_size and all(value is None for value in values):
            rows.append(None)
            empty.append((index, scheduler_id, score, values))
        else:
            rows.append(_from_hash(scheduler_id, score, values, (data_size, opts_size)))
    _read_templates_and_empty_keys(client, ref, rows, empty, _legacy_candidates(members))
    shown = [row for row in rows if row is not None]
    for row in shown:
        _check_template(row, row.notes)
    return SchedulerPage(ref, start, size, int(total or 0), shown)


def _read_templates_and_empty_keys(
    client: Redis,
    ref: QueueRef,
    rows: list[SchedulerRow | None],
    empty: list[tuple[int, str, int | None, Sequence[Any]]],
    legacy: list[tuple[str, list[str]]],
) -> None:
    """The third round trip: each row's templates small enough to show (one
    command for both), for each key that gave nothing whether it exists (the
    rows of those are filled in here), and which of the ids each legacy key's
    pending run may have (``legacy``) is a job."""
    keys = ref.keys
    pipe = client.pipeline(transaction=False)
    showable: list[tuple[SchedulerRow, list[str]]] = []
    for row in rows:
        if row is None:
            continue
        names = [
            name
            for name, template in (("data", row.data), ("opts", row.opts))
            if 0 < template.size <= TEMPLATE_DISPLAY_LIMIT
        ]
        if names:
            definition = keys.repeat_scheduler(row.scheduler_id)
            if len(names) == 1:
                pipe.hget(definition, names[0])
            else:
                pipe.hmget(definition, names)
            showable.append((row, names))
    for _index, scheduler_id, _score, _values in empty:
        pipe.exists(keys.repeat_scheduler(scheduler_id))
    for _, candidates in legacy:
        for job_id in candidates:
            pipe.exists(keys.job(job_id))
    if not showable and not empty and not legacy:
        return
    replies = _replies(pipe)
    for (row, names), reply in zip(showable, replies[: len(showable)], strict=True):
        texts = [reply] if len(names) == 1 else (reply or [None] * len(names))
        for name, raw in zip(names, texts, strict=True):
            getattr(row, name).text = codec.text(raw)
    found_runs = iter(replies[len(showable) + len(empty) :])
    run_of: dict[str, str] = {}
    for scheduler_id, candidates in legacy:
        present = [job_id for job_id in candidates if next(found_runs)]
        if present:
            run_of[scheduler_id] = present[0]
    for (index, scheduler_id, score, values), exists in zip(
        empty, replies[len(showable) : len(showable) + len(empty)], strict=True
    ):
        if exists:
            rows[index] = _from_hash(scheduler_id, score, values, (0, 0))
        elif is_legacy_repeat_key(scheduler_id):
            rows[index] = _from_legacy_key(scheduler_id, score)
        else:
            rows[index] = _missing_definition(scheduler_id, score, wrong_type=False)
    for row in rows:
        if row is not None and row.scheduler_id in run_of:
            row.legacy_run_id = run_of[row.scheduler_id]


def _legacy_candidates(members: list[tuple[str, int | None]]) -> list[tuple[str, list[str]]]:
    """(legacy key, the ids its pending run may have) for each legacy key of
    the page with a next run, whether it has a hash or only its member."""
    return [
        (scheduler_id, legacy_run_ids(scheduler_id, score))
        for scheduler_id, score in members
        if score is not None and is_legacy_repeat_key(scheduler_id)
    ]


def template_preview(template: Template, limit: int = 200) -> str:
    """A template's text cut for a table cell ("{}" for an empty one)."""
    if template.text is None:
        return "{}" if template.size == 0 else f"({template.size:,} bytes, not shown here)"
    compact = template.text
    parsed = codec.loads(compact, None)
    if parsed is not None:
        compact = json.dumps(parsed, separators=(",", ":"), ensure_ascii=False)
    return compact if len(compact) <= limit else compact[: limit - 1] + "…"
