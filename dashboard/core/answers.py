"""The JSON shapes of the answers the dashboard itself makes (its errors, a
search's steps, a job's changes...), each declared once as a msgspec Struct, as queues.read.answers
declares the read model's: the views build them, msgspec encodes them, and
the OpenAPI document describes them (dashboard/openapi.py)."""

from __future__ import annotations

from typing import Annotated

import msgspec
from msgspec import Meta

from queues.errors import ErrorCode
from queues.read import search as read_search
from queues.read.answers import Answer, Count, GroupKey, JobId, JobRow, SearchFound, State, Text
from queues.read.cohorts import GONE
from queues.read.states import STATES

# Rows (with their fields) a search step carries: the first page of hits.
SEARCH_ROWS_MAX = 50
# The changes to a job the dashboard makes (dashboard.acting.job_edits).
EDIT_ACTIONS = ("edit_data", "duplicate", "add")
# The actions of dashboard.acting.actions, by what they act on.
JOB_ACTIONS = ("retry", "promote", "fail", "remove")
QUEUE_ACTIONS = ("retry_all", "promote_all", "clean", "pause", "resume")
LIMIT_ACTIONS = ("set_global_concurrency", "clear_global_concurrency")
SCHEDULER_ACTIONS = ("run_now", "remove")
SET_ACTIONS = ("retry", "promote", "remove")  # a search's matches, an error group, a cohort
GROUP_ACTIONS = ("retry", "remove")
MAX_JOBS_PER_ACTION = 500
# Refusals an error group's action lists one by one (the rest are counted).
LISTED_REFUSALS = 20
# Why a job action left a job where it was: a script's error code, or its keys broken.
JOB_REFUSALS = (*(code.name for code in ErrorCode), "JOB_BROKEN")
SCHEDULER_REFUSALS = ("SCHEDULER_NOT_EXIST", "SCHEDULER_BROKEN")
_NOT_FOUND = ("JOB_NOT_EXIST", "SCHEDULER_NOT_EXIST")


def _one_of(values: tuple[str, ...], description: str | None = None) -> Meta:
    return Meta(extra_json_schema={"enum": list(values)}, description=description)


class ErrorDetail(Answer):
    code: Text
    message: Text


class Error(Answer):
    """Every error under the API, whoever answered it."""

    error: ErrorDetail


class SearchStep(Answer):
    search: Annotated[
        str, Meta(min_length=1, description="This search's id: send it with `cursor`")
    ]
    query: Annotated[str, Meta(min_length=1, description="The query as understood, normalised")]
    state: State
    hits: Annotated[
        list[JobId],
        Meta(
            description="Ids this step found, newest first (a job sharing its finish time with "
            "one that left meanwhile may come again: drop repeats)"
        ),
    ]
    rows: Annotated[list[JobRow], Meta(max_length=SEARCH_ROWS_MAX)]
    found: Annotated[
        dict[str, SearchFound],
        Meta(
            description="Why each row matched, by job id: its field's text around the match "
            f"({read_search.AROUND_BYTES} bytes each side). None for a search by id or by a "
            "JSON path's value"
        ),
    ]
    searched: Annotated[int, Meta(ge=0, description="Jobs looked at so far")]
    total: Annotated[int, Meta(ge=0, description="Jobs in the state now")]
    unchecked: Annotated[
        int,
        Meta(
            ge=0,
            description="Jobs this step passed over: the field is over "
            f"{read_search.MAX_FIELD_BYTES:,} bytes",
        ),
    ]
    cursor: Annotated[
        Text | None,
        Meta(description="Where the next step goes on; null when the search is done"),
    ]
    done: bool
    rows_html: (
        Annotated[
            str,
            Meta(description="Only with `markup=1` (the page's own calls): the rows, rendered"),
        ]
        | msgspec.UnsetType
    ) = msgspec.UNSET


class JobChange(Answer):
    action: Annotated[str, Meta(extra_json_schema={"enum": list(EDIT_ACTIONS)})]
    queue: Text
    id: Annotated[JobId, Meta(description="The job edited, or the new job")]
    source: Annotated[JobId | None, Meta(description="The job a duplicate copied")]
    message: Annotated[str, Meta(description="What happened, as the page says it")]
    diff: Annotated[
        str,
        Meta(
            description="The job's name, data and options before and after, as a unified diff "
            "(as the audit trail keeps it)"
        ),
    ]


class JobOutcome(Answer, kw_only=False):
    # Positional fields, here and in the action answers below: a subclass's
    # fields then follow its base's in the JSON (keyword-only ones go first).
    id: JobId
    ok: bool
    code: Annotated[str, _one_of(("ok", *JOB_REFUSALS), "`ok`, or why the job was not moved")]
    message: Text

    @property
    def status(self) -> int:
        """The API's status for this job alone."""
        return 200 if self.ok else 404 if self.code in _NOT_FOUND else 409


class SchedulerOutcome(JobOutcome):
    id: Annotated[
        str,
        Meta(min_length=1, description="`run_now`: the new job's id; `remove`: the scheduler's"),
    ]
    code: Annotated[str, _one_of(("ok", *SCHEDULER_REFUSALS))]


class SkippedJob(Answer):
    """A job a bulk action left where it was because its keys are broken."""

    id: Annotated[str, Meta(description="As the queue's key holds it")]
    reason: Annotated[str, Meta(min_length=1, description="Why, in words")]
    code: Annotated[
        str,
        Meta(
            min_length=1,
            description="`missing`, `not_a_job`, `type:<type>`, `field:<name>`, "
            "`key:<name>` or `states:<a>,<b>`",
        ),
    ]


Said = Annotated[str, Meta(description="What happened, in the words the page shows")]
Moved = Annotated[int, Meta(ge=0, description="Jobs moved")]


class ActionResult(Answer, kw_only=False):
    action: Annotated[str, _one_of((*JOB_ACTIONS, *QUEUE_ACTIONS, *LIMIT_ACTIONS))]
    queue: Text
    count: Moved
    message: Said
    results: Annotated[list[JobOutcome], Meta(max_length=MAX_JOBS_PER_ACTION)]
    skipped: list[SkippedJob]


class ActionRefused(ActionResult):
    """Nothing moved: `error` says why, `results` has one entry per id."""

    error: ErrorDetail


class SearchActResult(ActionResult):
    """`results` lists only the jobs refused for another reason."""

    moved_meanwhile: Annotated[
        int, Meta(ge=0, description="Jobs no longer in the state (moved or gone): skipped")
    ]


class ErrorGroupActionResult(ActionResult):
    action: Annotated[str, _one_of(GROUP_ACTIONS)]
    results: Annotated[
        list[JobOutcome],
        Meta(
            max_length=LISTED_REFUSALS,
            description=f"The first {LISTED_REFUSALS} jobs that were not moved, and why",
        ),
    ]
    group: GroupKey
    asked: Annotated[int, Meta(ge=0, description="Jobs of the group this call tried")]
    moved_meanwhile: Annotated[
        int, Meta(ge=0, description="Jobs no longer failed when their turn came: left alone")
    ]
    broken: Annotated[
        list[JobId],
        Meta(
            max_length=LISTED_REFUSALS,
            description=f"Jobs whose keys are broken, left in failed (the first {LISTED_REFUSALS})",
        ),
    ]
    left: Annotated[int, Meta(ge=0, description="Jobs of the group beyond this call's share")]


class SchedulerActionResult(Answer, kw_only=False):
    action: Annotated[str, _one_of(SCHEDULER_ACTIONS)]
    queue: Text
    count: Annotated[int, Meta(ge=0, description="1 when the action ran, else 0")]
    message: Said
    results: Annotated[list[SchedulerOutcome], Meta(min_length=1, max_length=1)]
    skipped: Annotated[list[SkippedJob], Meta(max_length=0)]


class SchedulerActionRefused(SchedulerActionResult):
    """Nothing changed: `error` says why."""

    error: ErrorDetail


# "failed again, same reason": a part of a cohort's failed jobs, linked on its own.
FAILED_SAME = "failed-same"
# What a cohort's jobs are split into: where they are now, or gone.
COHORT_PARTS = (*STATES, GONE, FAILED_SAME)
COHORTS_MAX = 20
COHORT_IDS_MAX = 500
CohortPart = Annotated[str, _one_of(COHORT_PARTS)]


CohortId = Annotated[str, Meta(pattern="^[0-9]{13}-[0-9a-f]{8}$")]


class CohortBreakdown(Answer):
    parts: Annotated[
        dict[CohortPart, Count],
        Meta(description="Tracked jobs per state now, and `gone` (their hash removed since)"),
    ]
    failed_same: Annotated[
        Count | None,
        Meta(
            description="Failed again with the kind of reason they had before (folded as the "
            "error groups fold it); null when none was recorded"
        ),
    ]
    failed_reason: Annotated[str | None, Meta(description="The commonest kind of reason now")]
    failed_sample: Annotated[str | None, Meta(description="A reason of that kind")]


class Cohort(Answer, kw_only=True):
    """A recent retry or promote and where its jobs are now; an unreadable
    record has only `id`, `at_ms` and `problem`."""

    id: CohortId
    action: Annotated[str, Meta(min_length=1, description="retry, promote, retry_all, ...")] | (
        msgspec.UnsetType
    ) = msgspec.UNSET
    source: Annotated[str, Meta(description="The state the jobs came from")] | (
        msgspec.UnsetType
    ) = msgspec.UNSET
    user: str | msgspec.UnsetType = msgspec.UNSET
    at_ms: Count
    at: Annotated[str, Meta(description="The same moment in UTC, for people")] | (
        msgspec.UnsetType
    ) = msgspec.UNSET
    count: Annotated[int, Meta(ge=0, description="Jobs the action moved")] | (
        msgspec.UnsetType
    ) = msgspec.UNSET
    tracked: (
        Annotated[int, Meta(ge=0, description="Of those, the ones followed (the first 100,000)")]
        | msgspec.UnsetType
    ) = msgspec.UNSET
    audit_id: (
        Annotated[int | None, Meta(description="The action's AuditEntry (its record)")]
        | msgspec.UnsetType
    ) = msgspec.UNSET
    breakdown: (
        Annotated[
            CohortBreakdown | None,
            Meta(
                description="null when this answer's budget of jobs to look at was spent on newer "
                "cohorts (ask for the cohort itself)"
            ),
        ]
        | msgspec.UnsetType
    ) = msgspec.UNSET
    previous_reason: (
        Annotated[
            str | None,
            Meta(description="The commonest kind of reason the jobs had failed with before"),
        ]
        | msgspec.UnsetType
    ) = msgspec.UNSET
    previous_sample: (
        Annotated[str | None, Meta(description="One of the jobs' own reasons of it")]
        | msgspec.UnsetType
    ) = msgspec.UNSET
    problem: Annotated[str | None, Meta(description="Why the record cannot be read")]


# The two kinds of cohort apart, for the document: a readable one has every
# field and no problem, an unreadable one its id, moment and problem only.
ACohort = Annotated[
    Cohort,
    Meta(
        extra_json_schema={
            "oneOf": [
                {
                    "required": list(Cohort.__struct_fields__),
                    "properties": {"problem": {"type": "null"}},
                },
                {
                    "properties": {"problem": {"type": "string", "minLength": 1}},
                    "maxProperties": 3,
                },
            ]
        }
    ),
]


class CohortList(Answer):
    queue: Text
    cohorts: Annotated[list[ACohort], Meta(max_length=COHORTS_MAX)]


class CohortJobs(Answer):
    queue: Text
    cohort: ACohort
    part: CohortPart
    start: Count
    total: Annotated[int, Meta(ge=0, description="Tracked jobs in this part")]
    ids: Annotated[list[JobId], Meta(max_length=COHORT_IDS_MAX)]


SHAPES: tuple[type[Answer], ...] = (
    CohortList,
    CohortJobs,
    Error,
    SearchStep,
    JobChange,
    ActionResult,
    ActionRefused,
    SearchActResult,
    ErrorGroupActionResult,
    SchedulerActionResult,
    SchedulerActionRefused,
)
