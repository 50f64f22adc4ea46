"""The bodies the API's POSTs take, each declared once as a msgspec Struct:
web.request_body converts a JSON object or a form into one (a wrong type is
refused in the words of ``refusals``), and the OpenAPI document describes them
from these declarations. What a value may be (an action's name, a range) is
checked where it is used, in the pages' words: here it is only described for
the document (``extra_json_schema``, and ``whole`` for the body as a whole).
Fields the API does not know are ignored.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Annotated, Any, ClassVar

import msgspec
from msgspec import UNSET, Meta, UnsetType

from dashboard.acting import job_edits
from dashboard.acting.actions import FINISHED_STATES, MAX_IDS_PER_SET, MAX_SCHEDULER_ID_LENGTH
from dashboard.core import answers
from dashboard.core.answers import JOB_ACTIONS, MAX_JOBS_PER_ACTION, QUEUE_ACTIONS, SET_ACTIONS
from queues.commands.admin import MAX_GLOBAL_CONCURRENCY
from queues.job_options import MAX_PRIORITY
from queues.read.answers import ERROR_GROUP_OTHER, JobId
from queues.read.states import STATES

Schema = dict[str, Any]
# The most milliseconds an age may be: a century.
MAX_MILLISECONDS = 100 * 365 * 86_400_000

_JOB_ID: Schema = msgspec.json.schema(JobId)


def _doc(schema: Schema, description: str | None = None) -> Meta:
    return Meta(extra_json_schema=schema, description=description)


class Words:
    """Marks a text field read as the pages read theirs: left out, null or
    empty, it is its default ("" when it has none); half a character in it is
    refused (Redis stores UTF-8 only)."""


def _one_of(values: Iterable[str], description: str | None = None) -> Meta:
    return _doc({"enum": list(values)}, description)


def _ids(most: int) -> Meta:
    return _doc({"items": _JOB_ID, "minItems": 1, "maxItems": most})


class Body(msgspec.Struct, kw_only=True):
    # The words a field of the wrong type is refused with ("<name> must be a string").
    refusals: ClassVar[dict[str, str]] = {}
    # What the body as a whole needs, for the document.
    whole: ClassVar[Schema] = {}


class JobActionRequest(Body):
    action: Annotated[str, Words(), _one_of(JOB_ACTIONS)]
    ids: (
        Annotated[list[str], _ids(MAX_JOBS_PER_ACTION)] | Annotated[str, _doc(_JOB_ID)] | UnsetType
    ) = UNSET
    # Any: read only when ids is left out, and then as ids is.
    id: Annotated[Any, _doc(_JOB_ID, "One job, instead of `ids`")] = UNSET
    state: Annotated[
        str, Words(), _one_of(FINISHED_STATES, "Which finished set `retry` takes the jobs from")
    ] = "failed"
    reason: Annotated[
        str, Words(), Meta(description="For `fail`: the reason the jobs get (a long one is cut)")
    ] = ""
    refusals = {"ids": "ids must be a list of job ids", "id": "ids must be a list of job ids"}
    whole = {"anyOf": [{"required": ["ids"]}, {"required": ["id"]}]}


class QueueActionRequest(Body):
    action: Annotated[str, Words(), _one_of(QUEUE_ACTIONS)]
    state: Annotated[
        str, Words(), _one_of(FINISHED_STATES, "The finished set `retry_all` and `clean` work on")
    ] = "failed"
    grace_ms: Annotated[
        Annotated[int, _doc({"minimum": 0, "maximum": MAX_MILLISECONDS})]
        | Annotated[str, _doc({"pattern": "^\\s*[0-9]{1,16}\\s*$"})]
        | None,
        Meta(
            description="For `clean`: remove only jobs finished longer ago (milliseconds; "
            "a JSON integer, or digits in a form)"
        ),
    ] = None
    refusals = {"grace_ms": "grace_ms must be an integer (milliseconds)"}
    whole = {
        "if": {"properties": {"action": {"const": "clean"}}},
        "then": {"required": ["grace_ms"]},
    }


class GlobalConcurrencyRequest(Body):
    concurrency: Annotated[
        Annotated[int, _doc({"minimum": 1, "maximum": MAX_GLOBAL_CONCURRENCY})]
        | Annotated[str, _doc({"pattern": "^\\s*([0-9]{1,9}|none)\\s*$"})]
        | UnsetType
        | None,
        Meta(description="A whole number, or null (or the text `none`) to clear it"),
    ] = UNSET
    refusals = {
        "concurrency": f"concurrency must be a whole number from 1 to "
        f"{MAX_GLOBAL_CONCURRENCY:,}, or null to clear it"
    }
    whole = {"required": ["concurrency"]}


class SchedulerActionRequest(Body):
    action: Annotated[str, Words(), _one_of(answers.SCHEDULER_ACTIONS)]
    id: Annotated[
        str,
        Words(),
        _doc(
            {"minLength": 1, "maxLength": MAX_SCHEDULER_ID_LENGTH},
            "The scheduler's id (`id` of a listed scheduler)",
        ),
    ]


class ErrorGroupActionRequest(Body):
    action: Annotated[str, Words(), _one_of(answers.GROUP_ACTIONS)]
    group: Annotated[str, _doc({"pattern": f"^([0-9a-f]{{16}}|{ERROR_GROUP_OTHER})$"})]
    refusals = {"group": "group must be the key of an error group (a string)"}


class SearchActRequest(Body):
    action: Annotated[str, Words(), _one_of(SET_ACTIONS)]
    ids: Annotated[list[str], _ids(MAX_IDS_PER_SET)]
    state: Annotated[str, Words(), _one_of(STATES, "The state the search ran in")] = "failed"
    refusals = {"ids": "ids must be a list of job ids"}


_DATA = (
    "Any JSON value: the job's data (in a form: its JSON text). At most "
    "`ECHOMQ_MAX_JOB_DATA_BYTES` (1 MiB by default) once encoded"
)
_WHOLE: Schema = {"type": "integer", "minimum": 0}
_KEEP: Schema = {
    "anyOf": [{"type": "boolean"}, _WHOLE],
    "description": "true, false or how many to keep",
}
# The options a job added by hand may have (dashboard.acting.job_edits checks them).
ADD_OPTIONS: dict[str, Schema] = {
    "attempts": {"type": "integer", "minimum": 1, "maximum": job_edits.MAX_ATTEMPTS},
    "delay": {**_WHOLE, "maximum": job_edits.MAX_DELAY_MS, "description": "Milliseconds"},
    "priority": {**_WHOLE, "maximum": MAX_PRIORITY, "description": "0 = none; 1 runs first"},
    "lifo": {"type": "boolean"},
    "backoff": {
        "anyOf": [
            _WHOLE,
            {
                "type": "object",
                "properties": {"type": {"enum": ["fixed", "exponential"]}, "delay": _WHOLE},
                "required": ["type"],
                "additionalProperties": False,
            },
        ]
    },
    "removeOnComplete": _KEEP,
    "removeOnFail": _KEEP,
}
assert set(ADD_OPTIONS) == set(job_edits.ADD_OPTIONS)


class EditDataRequest(Body):
    id: Annotated[str, Words(), _doc(_JOB_ID)]
    data: Annotated[Any, Meta(description=_DATA)] = UNSET
    whole = {"required": ["data"]}


class DuplicateJobRequest(Body):
    id: Annotated[str, Words(), _doc(_JOB_ID)]


class AddJobRequest(Body):
    name: Annotated[str, Words(), _doc({"minLength": 1, "maxLength": job_edits.MAX_NAME_LENGTH})]
    data: Annotated[Any, Meta(description=_DATA)] = UNSET
    opts: Annotated[
        Any,
        _doc(
            {
                "anyOf": [
                    {"type": "object", "properties": ADD_OPTIONS, "additionalProperties": False},
                    {"type": "string"},
                ]
            },
            "The job's options (in a form: their JSON text); only these",
        ),
    ] = UNSET


# Every body above, in the order declared.
BODIES: tuple[type[Body], ...] = tuple(Body.__subclasses__())
