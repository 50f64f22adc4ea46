"""The JSON shapes of the read model's answers, each declared once as a
msgspec Struct: the API answers them (encoded by msgspec), ``python -m
queues.inspect`` prints them, and the API's OpenAPI document describes them
from these declarations (dashboard/openapi.py, msgspec.json.schema_components).

A Struct is a closed object: every field is always there (nullable ones as
null) and nothing else is, which the document says and its tests check
against every real answer. The constraints here (minimum, maximum length)
are what the answers hold, written for the document's readers.
"""

from __future__ import annotations

from typing import Annotated, Any

import msgspec
from msgspec import Meta

from queues.keys import MAX_JOB_ID_LENGTH
from queues.read.states import STATES

# The most rows one answer holds (the API's windows are cut to it).
MAX_RANGE = 500
# The most full minutes a queue's series holds (queues.read.counts reads them).
METRICS_POINTS = 30
# A page of job schedulers holds at most this many (queues.read.schedulers).
SCHEDULER_PAGE_MAX = 500
# Templates bigger than this are not read for a list: its size is said instead.
TEMPLATE_DISPLAY_LIMIT = 4 * 1024
# A flow is read at most this many levels below its root (queues.read.flows)...
FLOW_MAX_DEPTH = 10
# ... and at most this many children of one parent at a time.
FLOW_PAGE_SIZE = 50
# The kinds of error a queue's failed jobs are grouped into (queues.read.error_groups);
# the failures beyond them count in one more group, keyed OTHER.
ERROR_GROUPS_MAX = 200
ERROR_GROUP_OTHER = "other"
# A group's sample keeps this much of its reason and of its stack trace.
ERROR_SAMPLE_REASON_MAX = 2_000
ERROR_SAMPLE_TRACE_MAX = 8_000
# Job data past this many characters is cut in a job's answer (queues.read.job).
DATA_DISPLAY_LIMIT = 64 * 1024

Text = Annotated[str, Meta(min_length=1)]
Count = Annotated[int, Meta(ge=0)]
Moment = Annotated[
    int | None,
    Meta(description="Milliseconds since the epoch; null when not set (or not a number)"),
]
StreamId = Annotated[str, Meta(pattern="^[0-9]+-[0-9]+$")]
State = Annotated[str, Meta(extra_json_schema={"enum": list(STATES)})]
# keys.validate_job_id: printable, no ':' (the key separator), at most
# MAX_JOB_ID_LENGTH characters; or a job scheduler's run, repeat:<scheduler id>:<ms>.
JobId = Annotated[
    str,
    Meta(
        min_length=1,
        max_length=MAX_JOB_ID_LENGTH,
        pattern="^([^:\\u0000-\\u001f\\u007f]+|repeat:[^\\u0000-\\u001f\\u007f]+:[0-9]{1,16})$",
    ),
]
AnyJson = Annotated[Any, Meta(description="Any JSON value, as the job's writer stored it")]


class Answer(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    """A closed JSON object (the document's ``additionalProperties: false``)."""


# Jobs per state: one field per state of queues.read.states ("waiting-children"
# as waiting_children in Python, its own name in JSON).
Counts = msgspec.defstruct(
    "Counts",
    [(state.replace("-", "_"), Count) for state in STATES],
    bases=(Answer,),
    module=__name__,
    rename={state.replace("-", "_"): state for state in STATES},
)


_COUNTS_FIELD = {state: state.replace("-", "_") for state in STATES}


def counts_of(counts: dict[str, int]) -> Any:
    """A queue's ``counts`` (state -> jobs) as its Counts."""
    return Counts(**{_COUNTS_FIELD[state]: n for state, n in counts.items()})


class Metrics(Answer):
    """Finishes per full minute, oldest first (empty without worker metrics)."""

    completed_per_minute: Annotated[list[Count], Meta(max_length=METRICS_POINTS)]
    failed_per_minute: Annotated[list[Count], Meta(max_length=METRICS_POINTS)]


class QueueSummary(Answer):
    queue: Annotated[str, Meta(min_length=1, description="`prefix:name`")]
    prefix: Text
    name: Text
    connection: Annotated[
        str,
        Meta(
            min_length=1,
            description="The Redis connection it is on (`default`, or a name "
            "from `ECHOMQ_CONNECTIONS`)",
        ),
    ]
    counts: Annotated[Counts, Meta(description="Jobs per state; `wait` holds the paused list too")]  # type: ignore[valid-type]
    paused: bool
    metrics: Metrics


class Connection(Answer):
    """One Redis connection the dashboard serves, the default first."""

    name: Text
    reachable: bool
    error: Annotated[
        Text | None, Meta(description="Why its Redis did not answer (its queues are left out)")
    ]
    failing_over: Annotated[
        bool,
        Meta(
            description="It did not answer because, behind Redis Sentinel, the "
            "sentinels are replacing its master"
        ),
    ]
    queues: Annotated[int, Meta(ge=0, description="How many of its queues are listed")]


class QueueList(Answer):
    queues: list[QueueSummary]
    connections: list[Connection]


class ProgressBar(Answer):
    """A progress value the dashboard can draw as a bar: a percent, or counted
    work (`done` of `total`; null for a plain percent)."""

    percent: Annotated[int, Meta(ge=0, le=100)]
    done: int | float | None
    total: int | float | None


class JobRow(Answer):
    id: JobId
    state: State
    missing: Annotated[bool, Meta(description="Listed in the state, its hash gone")]
    name: str
    timestamp: Moment
    processed_on: Moment
    finished_on: Moment
    attempts_made: int
    attempts: Annotated[int, Meta(ge=1)]
    progress: AnyJson
    progress_bar: ProgressBar | None
    failed_reason: Annotated[str, Meta(description="Its first line")] | None
    priority: int
    delay: int
    due: Annotated[
        int | None,
        Meta(description="When a delayed job becomes ready"),
    ]


class JobPage(Answer):
    queue: Text
    state: State
    start: Count
    end: Annotated[int, Meta(ge=0, description="One-based index of the last job shown")]
    total: Annotated[int, Meta(ge=0, description="Jobs in the state")]
    jobs: Annotated[list[JobRow], Meta(max_length=MAX_RANGE)]


class Event(Answer):
    id: Annotated[str, Meta(pattern="^[0-9]+-[0-9]+$", description="The stream id")]
    event: str
    job_id: str | None
    timestamp: Count
    fields: dict[str, str]


class EventPage(Answer):
    queue: Text
    events: Annotated[list[Event], Meta(max_length=MAX_RANGE)]
    next_before: (
        Annotated[
            str, Meta(pattern="^[0-9]+-[0-9]+$", description="Pass as `before` for older events")
        ]
        | None
    )
    newest_id: StreamId | None


class FailedAttempt(Answer):
    attempt: Annotated[int, Meta(ge=1)] | None
    reason: str
    trace: Annotated[str, Meta(description="The stack trace; empty when none kept")]


class Lock(Answer):
    token: str
    ttl_ms: Count | None


class Logs(Answer):
    start: Count
    total: Count
    lines: list[str]


class Parent(Answer):
    queue: Text
    id: JobId


class Children(Answer):
    pending: list[str]
    pending_total: Count
    processed: dict[str, str]
    processed_total: Count


class JobDetail(Answer):
    queue: Text
    id: JobId
    state: Annotated[
        str | None,
        Meta(
            description="null: the hash exists but no state holds the id",
            extra_json_schema={"enum": [*STATES, None]},
        ),
    ]
    name: str
    data: Annotated[
        Any,
        Meta(description="The job's data; null when truncated or not JSON (then see `data_text`)"),
    ]
    data_text: str | None
    data_truncated: Annotated[
        bool,
        Meta(
            description=f"Over {DATA_DISPLAY_LIMIT // 1024} KB: `data_text` holds the start; "
            "`?full=1` for all"
        ),
    ]
    data_size: Annotated[int, Meta(ge=0, description="Bytes")]
    opts: dict[str, Any] | None
    opts_text: Annotated[str, Meta(description="opts that are not JSON")] | None
    timestamp: Moment
    delay: int
    priority: int
    processed_on: Moment
    finished_on: Moment
    attempts_made: int
    attempts_started: int
    attempts: Annotated[int, Meta(ge=1)]
    stalled_counter: int
    processed_by: str | None
    progress: AnyJson
    progress_bar: ProgressBar | None
    returnvalue: AnyJson
    failed_reason: str | None
    stacktrace: list[str]
    failed_attempts: list[FailedAttempt]
    deferred_failure: str | None
    lock: Lock | None
    logs: Logs
    parent: Parent | None
    children: Children
    extra: Annotated[dict[str, str], Meta(description="Hash fields no runtime defines")]
    events: Annotated[list[Event], Meta(description="Its latest events, newest first")]


class Template(Answer):
    data: Annotated[
        str | None,
        Meta(
            description="JSON text as stored; null when empty or over "
            f"{TEMPLATE_DISPLAY_LIMIT:,} bytes"
        ),
    ]
    data_size: Count
    opts: str | None
    opts_size: Count


class Scheduler(Answer):
    id: Annotated[str, Meta(description="The member of the `repeat` zset")]
    kind: Annotated[
        str,
        Meta(
            description="A 5.x job scheduler, or a legacy repeatable job",
            extra_json_schema={"enum": ["scheduler", "legacy"]},
        ),
    ]
    name: Annotated[str | None, Meta(description="The template's job name")]
    pattern: Annotated[str | None, Meta(description="Cron pattern")]
    every: Annotated[int | None, Meta(description="Milliseconds between runs")]
    tz: str | None
    next_run: Annotated[int | None, Meta(description="When the next run is due (ms)")]
    pending_job_id: Annotated[
        JobId | None,
        Meta(
            description="The next run's job (`repeat:<id>:<ms>`); a worker may have taken it "
            "already"
        ),
    ]
    iterations: Annotated[Count | None, Meta(description="Runs added so far (`ic`)")]
    limit: Count | None
    start_date: Moment
    end_date: Moment
    template: Template
    notes: Annotated[
        list[Text], Meta(description="What is wrong with the definition, in words (empty: sound)")
    ]
    can_run_now: bool


class SchedulerPage(Answer):
    """Soonest next run first."""

    queue: Text
    start: Count
    end: Count
    total: Count
    schedulers: Annotated[list[Scheduler], Meta(max_length=SCHEDULER_PAGE_MAX)]


Seconds = Annotated[int, Meta(ge=0)]
Stored = Annotated[str, Meta(description="As stored (cut at 100 characters)")] | None


class ConnectedWorker(Answer):
    """A worker: its connections of one name, host and node."""

    name: Annotated[str, Meta(description="The worker's name; empty when unnamed")]
    connection_name: Annotated[
        str, Meta(min_length=1, description="Its connections' CLIENT SETNAME")
    ]
    host: str
    addresses: Annotated[list[str], Meta(min_length=1)]
    node: Annotated[str, Meta(description="The cluster node (`host:port`)")] | None
    connections: Annotated[int, Meta(ge=1)]
    connected_s: Annotated[int, Meta(ge=0, description="The oldest connection's age")]
    idle_s: Annotated[int, Meta(ge=0, description="Since its last command (blocked = idle)")]


class WorkerList(Answer):
    queue: Text
    known: Annotated[bool, Meta(description="false: the server refused CLIENT LIST")]
    refusal: (
        Annotated[str, Meta(description="Why the workers are not known (the server's words)")]
        | None
    )
    nodes: Annotated[
        list[str], Meta(description="The cluster's nodes listed (empty on a single server)")
    ]
    count: Count | None
    workers: list[ConnectedWorker]


class RateLimit(Answer):
    max: int | float
    duration_ms: int | float


class StoredRateLimit(Answer):
    max: Stored
    duration: Stored


class Window(Answer):
    """The rate limiter's current window: jobs started in it."""

    started: int
    ends_in_ms: Count


class Limits(Answer):
    queue: Text
    global_concurrency: Annotated[
        int | float | None,
        Meta(
            description="The most jobs active at once across all workers; null when none is "
            "set (or what is stored is not a number)"
        ),
    ]
    global_concurrency_stored: Stored
    active: Count
    rate_limit: RateLimit | None
    rate_limit_stored: StoredRateLimit | None
    window: Window | None
    rate_limited_ms: Annotated[
        int, Meta(ge=0, description="No job starts for this long (0: not rate-limited)")
    ]
    rate_limited_until: Moment
    read_at: Annotated[int, Meta(ge=0, description="When this was read (ms)")]
    problem: Annotated[str, Meta(description="A limits key of the wrong type")] | None


class FlowDependencies(Answer):
    """A parent's children by kind (BullMQ's getDependencies)."""

    pending: Annotated[int, Meta(ge=0, description="Children not finished (`:dependencies`)")]
    processed: Annotated[int, Meta(ge=0, description="Completed children (`:processed`)")]
    ignored: Annotated[
        int, Meta(ge=0, description="Failed children the parent went on without (`:failed`)")
    ]
    failed: Annotated[
        int, Meta(ge=0, description="Failed children that failed the parent (`:unsuccessful`)")
    ]


PageToken = Annotated[
    Annotated[str, Meta(pattern="^[0-9]+\\.[0-9]+\\.[0-9]+$")] | None,
    Meta(description="Pass as `page` to flow-children for the next page; null: all shown"),
]


class FlowNode(Answer):
    queue: Text
    id: JobId
    name: str
    state: Annotated[str | None, Meta(extra_json_schema={"enum": [*STATES, None]})]
    missing: Annotated[bool, Meta(description="Named by its parent, its hash is gone")]
    not_a_job: Annotated[bool, Meta(description="Its key holds no job")]
    relation: (
        Annotated[str, Meta(description="Why its parent lists it: pending, completed...")] | None
    )
    timestamp: Moment
    processed_on: Moment
    finished_on: Moment
    duration_ms: Count | None
    failed_reason: str | None
    dependencies: FlowDependencies
    children: Annotated[
        list[FlowNode],
        Meta(description=f"At most {FLOW_PAGE_SIZE} read per parent (failed first)"),
    ]
    next_page: PageToken
    children_not_read: Annotated[
        bool, Meta(description="Children below the depth or size shown: ask flow-children")
    ]
    problems: list[str]


class JobRef(Answer):
    queue: Text
    id: JobId


class Flow(Answer):
    job: JobRef
    root: FlowNode
    path: Annotated[list[JobRef], Meta(description="The root, its children down to this job")]
    problems: Annotated[
        list[str],
        Meta(description="A parent gone, not a job, a loop: shown from the highest job reached"),
    ]
    deeper_not_shown: bool
    max_depth: Count
    page_size: Count


class FlowTree(Answer):
    """`flow` null: the job has no parent and no children."""

    flow: Flow | None


class FlowChildrenPage(Answer):
    queue: Text
    id: JobId
    dependencies: FlowDependencies
    children: list[FlowNode]
    next_page: PageToken
    problems: list[str]


GroupKey = Annotated[
    str,
    Meta(
        pattern=f"^([0-9a-f]{{16}}|{ERROR_GROUP_OTHER})$",
        description="16 hex digits of the folded text's SHA-1, or `other` for the kinds "
        f"beyond the {ERROR_GROUPS_MAX} kept",
    ),
]


class ErrorSample(Answer):
    """One job of the group, as it was when the group was first seen."""

    job: JobId | None
    reason: Annotated[str, Meta(max_length=ERROR_SAMPLE_REASON_MAX)]
    stacktrace: Annotated[
        str,
        Meta(
            max_length=ERROR_SAMPLE_TRACE_MAX,
            description='Its latest attempt\'s stack trace ("" when none)',
        ),
    ]


class ErrorGroup(Answer):
    key: GroupKey
    text: Annotated[
        str,
        Meta(
            min_length=1,
            description="The folded reason: numbers, ids, hex, quoted values, paths and URLs "
            "replaced by `<n>`, `<uuid>`, `<hex>`, `<str>`, `<path>`, `<url>`",
        ),
    ]
    count: Annotated[int, Meta(ge=0, description="Failed jobs in the group")]
    first_seen: Annotated[
        int | None, Meta(description="The oldest failure counted (ms); null when not set")
    ]
    last_seen: Annotated[
        int | None, Meta(description="The newest failure counted (ms); null when not set")
    ]
    sample: ErrorSample


class ErrorGroups(Answer):
    """Most jobs first."""

    queue: Text
    failed: Annotated[int, Meta(ge=0, description="Failed jobs in the queue")]
    indexed: Annotated[int, Meta(ge=0, description="Failed jobs the groups count")]
    complete: Annotated[
        bool,
        Meta(description="False while the index is being built or catching up (ask again)"),
    ]
    regrouping: Annotated[
        bool,
        Meta(
            description="True while the index is counted again because this dashboard folds "
            "reasons by newer rules (the groups are the old ones, then fill in anew; ask again)"
        ),
    ]
    groups: Annotated[list[ErrorGroup], Meta(max_length=ERROR_GROUPS_MAX + 1)]


class ErrorGroupJobs(Answer):
    """Newest failure first."""

    queue: Text
    group: GroupKey
    start: Count
    total: Annotated[int, Meta(ge=0, description="Jobs in the group")]
    jobs: Annotated[list[JobRow], Meta(max_length=MAX_RANGE)]


class SearchFound(Answer):
    """Why a job matched a search: its field's text around the match."""

    field: Annotated[str, Meta(extra_json_schema={"enum": ["name", "reason", "data"]})]
    before: Annotated[str, Meta(description="The field's text before the match")]
    match: Annotated[str, Meta(description="The text that matched, as stored")]
    after: Annotated[str, Meta(description="The field's text after the match")]
    more_before: Annotated[bool, Meta(description="The field goes on before `before`")]
    more_after: Annotated[bool, Meta(description="The field goes on after `after`")]


SHAPES: tuple[type[Answer], ...] = (
    ErrorGroups,
    ErrorGroupJobs,
    FlowTree,
    FlowChildrenPage,
    WorkerList,
    Limits,
    QueueList,
    QueueSummary,
    JobPage,
    EventPage,
    JobDetail,
    SchedulerPage,
)
