"""The OpenAPI 3.1 description of the JSON API, served as JSON at ``<API root>schema/``.

One source per fact: the paths are the API's own URL patterns (wherever the
app is mounted, the server URL is reversed), the operations are keyed here by
URL name, and the enums and limits come from the modules that enforce them.
tests/test_openapi.py calls every operation against a real Redis and checks
each answer against this document, and that every API URL has an operation.

The document is behind the API's own rule (a logged-in staff user with
``dashboard.view_queues``): it reveals nothing secret, but the rule of the
dashboard is that nothing answers anonymous users; they get the API's JSON 401.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Iterator
from importlib import metadata
from typing import Any

import msgspec
from django.conf import settings
from django.http import HttpRequest, HttpResponse
from django.urls import URLPattern, URLResolver, get_resolver, reverse
from django.views.decorators.http import require_GET

from dashboard.browse import api
from dashboard.cohorts import views as cohorts
from dashboard.core import answers as dashboard_answers
from dashboard.core.jsonresponse import JsonResponse
from dashboard.core.permissions import api_permission
from dashboard.search import views as search
from dashboard.shared import actions, job_edits
from queues.commands.admin import MAX_GLOBAL_CONCURRENCY
from queues.errors import ErrorCode
from queues.job_options import MAX_PRIORITY
from queues.keys import MAX_JOB_ID_LENGTH
from queues.read import answers, flows
from queues.read import error_groups as read_error_groups
from queues.read import schedulers as read_schedulers
from queues.read import search as read_search
from queues.read.answers import MAX_RANGE
from queues.read.refs import DEFAULT_CONNECTION
from queues.read.states import STATES

Schema = dict[str, Any]

# --------------------------------------------------------------------------- building blocks


def _ref(kind: str, name: str) -> Schema:
    return {"$ref": f"#/components/{kind}/{name}"}


def _schema(name: str) -> Schema:
    return _ref("schemas", name)


def _or_null(schema: Schema) -> Schema:
    return {"anyOf": [schema, {"type": "null"}]}


def _object(
    properties: dict[str, Schema], *, optional: Collection[str] = (), description: str = ""
) -> Schema:
    """A closed object: every property but the optional ones is always there,
    and nothing else is (so a new field the document lacks fails the tests)."""
    schema: Schema = {
        "type": "object",
        "properties": properties,
        "required": [name for name in properties if name not in optional],
        "additionalProperties": False,
    }
    if description:
        schema["description"] = description
    return schema


def _array(items: Schema, **limits: int) -> Schema:
    return {"type": "array", "items": items, **limits}


def _map(values: Schema) -> Schema:
    return {"type": "object", "additionalProperties": values}


_STRING: Schema = {"type": "string"}
_TEXT: Schema = {"type": "string", "minLength": 1}
_BOOLEAN: Schema = {"type": "boolean"}
_INTEGER: Schema = {"type": "integer"}
_COUNT: Schema = {"type": "integer", "minimum": 0}
_NUMBER: Schema = {"type": "number"}
_ANY: Schema = {"description": "Any JSON value, as the job's writer stored it"}
_MOMENT: Schema = {
    "type": ["integer", "null"],
    "description": "Milliseconds since the epoch; null when not set (or not a number)",
}
_STATE: Schema = {"type": "string", "enum": list(STATES)}
_FINISHED_STATE: Schema = {"type": "string", "enum": list(actions.FINISHED_STATES)}
# keys.validate_job_id: printable, no ':' (the key separator), at most 512
# characters; or a job scheduler's run, repeat:<scheduler id>:<ms>.
_JOB_ID: Schema = {
    "type": "string",
    "minLength": 1,
    "maxLength": MAX_JOB_ID_LENGTH,
    "pattern": "^([^:\\u0000-\\u001f\\u007f]+|repeat:[^\\u0000-\\u001f\\u007f]+:[0-9]{1,16})$",
}
_STREAM_ID: Schema = {"type": "string", "pattern": "^[0-9]+-[0-9]+$"}

# --------------------------------------------------------------------------- answers


def _schemas() -> dict[str, Schema]:
    action_result = {
        "action": {
            "type": "string",
            "enum": [*actions.JOB_ACTIONS, *actions.QUEUE_ACTIONS, *actions.LIMIT_ACTIONS],
        },
        "queue": _TEXT,
        "count": {**_COUNT, "description": "Jobs moved"},
        "message": {**_STRING, "description": "What happened, in the words the page shows"},
        "results": _array(_schema("JobOutcome"), maxItems=actions.MAX_JOBS_PER_ACTION),
        "skipped": _array(_schema("SkippedJob")),
    }
    return {
        "JobOutcome": _object(
            {
                "id": _JOB_ID,
                "ok": _BOOLEAN,
                "code": {
                    "type": "string",
                    "enum": ["ok", *_refusal_codes(upper=True)],
                    "description": "`ok`, or why the job was not moved",
                },
                "message": _TEXT,
            }
        ),
        "SkippedJob": _object(
            {
                "id": {**_STRING, "description": "As the queue's key holds it"},
                "reason": {**_TEXT, "description": "Why, in words"},
                "code": {
                    **_TEXT,
                    "description": "`missing`, `not_a_job`, `type:<type>`, `field:<name>`, "
                    "`key:<name>` or `states:<a>,<b>`",
                },
            },
            description="A job a bulk action left where it was because its keys are broken",
        ),
        "ActionResult": _object(action_result),
        "ActionRefused": _object(
            {**action_result, "error": _schema("ErrorDetail")},
            description="Nothing moved: `error` says why, `results` has one entry per id",
        ),
        "JobActionRequest": {
            **_object(
                {
                    "action": {"type": "string", "enum": list(actions.JOB_ACTIONS)},
                    "ids": {
                        "anyOf": [
                            _array(_JOB_ID, minItems=1, maxItems=actions.MAX_JOBS_PER_ACTION),
                            _JOB_ID,
                        ]
                    },
                    "id": {**_JOB_ID, "description": "One job, instead of `ids`"},
                    "state": {
                        **_FINISHED_STATE,
                        "default": "failed",
                        "description": "Which finished set `retry` takes the jobs from",
                    },
                    "reason": {
                        **_STRING,
                        "description": "For `fail`: the reason the jobs get (a long one is cut)",
                    },
                },
                optional=("ids", "id", "state", "reason"),
            ),
            "anyOf": [{"required": ["ids"]}, {"required": ["id"]}],
        },
        "QueueActionRequest": {
            **_object(
                {
                    "action": {"type": "string", "enum": list(actions.QUEUE_ACTIONS)},
                    "state": {
                        **_FINISHED_STATE,
                        "default": "failed",
                        "description": "The finished set `retry_all` and `clean` work on",
                    },
                    "grace_ms": {
                        "description": "For `clean`: remove only jobs finished longer ago "
                        "(milliseconds; a JSON integer, or digits in a form)",
                        "anyOf": [
                            {"type": "integer", "minimum": 0, "maximum": api.MAX_MILLISECONDS},
                            {"type": "string", "pattern": "^\\s*[0-9]{1,16}\\s*$"},
                        ],
                    },
                },
                optional=("state", "grace_ms"),
            ),
            "if": {"properties": {"action": {"const": "clean"}}},
            "then": {"required": ["grace_ms"]},
        },
        **_worker_schemas(),
        **_cohort_schemas(),
        **_change_schemas(),
        "OpenAPIDocument": {
            "type": "object",
            "required": ["openapi", "info", "paths"],
            "properties": {"openapi": {"type": "string", "pattern": "^3\\.1\\."}},
        },
        **_scheduler_schemas(),
        **_search_schemas(action_result),
        **_error_group_schemas(),
    }


_GROUP_KEY: Schema = {
    "type": "string",
    "pattern": f"^([0-9a-f]{{16}}|{read_error_groups.OTHER})$",
    "description": "16 hex digits of the folded text's SHA-1, or `other` for the kinds "
    f"beyond the {read_error_groups.MAX_GROUPS} kept",
}


def _error_group_schemas() -> dict[str, Schema]:
    """The failed tab grouped by error (queues.read.error_groups, dashboard.error_groups.views)."""
    outcome = _object(
        {
            "id": _JOB_ID,
            "ok": _BOOLEAN,
            "code": {"type": "string", "enum": ["ok", *_refusal_codes(upper=True)]},
            "message": _TEXT,
        }
    )
    return {
        "ErrorGroupActionRequest": _object(
            {"action": {"type": "string", "enum": ["retry", "remove"]}, "group": _GROUP_KEY}
        ),
        "ErrorGroupActionResult": _object(
            {
                "action": {"type": "string", "enum": ["retry", "remove"]},
                "queue": _TEXT,
                "group": _GROUP_KEY,
                "count": {**_COUNT, "description": "Jobs moved"},
                "asked": {**_COUNT, "description": "Jobs of the group this call tried"},
                "moved_meanwhile": {
                    **_COUNT,
                    "description": "Jobs no longer failed when their turn came: left alone",
                },
                "broken": {
                    **_array(_JOB_ID, maxItems=20),
                    "description": "Jobs whose keys are broken, left in failed (the first 20)",
                },
                "left": {**_COUNT, "description": "Jobs of the group beyond this call's share"},
                "message": _STRING,
                "results": {
                    **_array(outcome, maxItems=20),
                    "description": "The first 20 jobs that were not moved, and why",
                },
                "skipped": _array(_schema("SkippedJob"), maxItems=0),
            }
        ),
    }


_SCHEDULER_CODES = ["SCHEDULER_NOT_EXIST", "SCHEDULER_BROKEN"]


def _search_schemas(action_result: dict[str, Schema]) -> dict[str, Schema]:
    """A search's steps and acting on its matches (dashboard.search.views)."""
    return {
        "SearchActRequest": _object(
            {
                "action": {"type": "string", "enum": list(actions.SET_ACTIONS)},
                "state": {**_STATE, "description": "The state the search ran in"},
                "ids": _array(_JOB_ID, minItems=1, maxItems=actions.MAX_IDS_PER_SET),
            }
        ),
        "SearchActResult": _object(
            {
                **action_result,
                "moved_meanwhile": {
                    **_COUNT,
                    "description": "Jobs no longer in the state (moved or gone): skipped",
                },
            },
            description="`results` lists only the jobs refused for another reason",
        ),
    }


def _scheduler_schemas() -> dict[str, Schema]:
    """The schedulers tab's answers (queues.read.schedulers, actions.scheduler_action)."""
    result = {
        "action": {"type": "string", "enum": list(actions.SCHEDULER_ACTIONS)},
        "queue": _TEXT,
        "count": {**_COUNT, "description": "1 when the action ran, else 0"},
        "message": {**_STRING, "description": "What happened, in the words the page shows"},
        "results": _array(
            _object(
                {
                    "id": {
                        **_TEXT,
                        "description": "`run_now`: the new job's id; `remove`: the scheduler's",
                    },
                    "ok": _BOOLEAN,
                    "code": {"type": "string", "enum": ["ok", *_SCHEDULER_CODES]},
                    "message": _TEXT,
                }
            ),
            minItems=1,
            maxItems=1,
        ),
        "skipped": _array(_schema("SkippedJob"), maxItems=0),
    }
    return {
        "SchedulerActionRequest": _object(
            {
                "action": {"type": "string", "enum": list(actions.SCHEDULER_ACTIONS)},
                "id": {
                    **_TEXT,
                    "maxLength": actions.MAX_SCHEDULER_ID_LENGTH,
                    "description": "The scheduler's id (`id` of a listed scheduler)",
                },
            }
        ),
        "SchedulerActionResult": _object(result),
        "SchedulerActionRefused": _object(
            {**result, "error": _schema("ErrorDetail")},
            description="Nothing changed: `error` says why",
        ),
    }


def _worker_schemas() -> dict[str, Schema]:
    """The workers tab's requests (its answers: queues.read.answers)."""
    return {
        "GlobalConcurrencyRequest": _object(
            {
                "concurrency": {
                    "description": "A whole number, or null (or the text `none`) to clear it",
                    "anyOf": [
                        {"type": "integer", "minimum": 1, "maximum": MAX_GLOBAL_CONCURRENCY},
                        {"type": "string", "pattern": "^\\s*([0-9]{1,9}|none)\\s*$"},
                        {"type": "null"},
                    ],
                }
            }
        ),
    }


_COHORT_ID: Schema = {"type": "string", "pattern": "^[0-9]{13}-[0-9a-f]{8}$"}


def _cohort_schemas() -> dict[str, Schema]:
    """What became of recent actions (dashboard.cohorts.views, queues.read.cohorts)."""
    parts = {"type": "string", "enum": list(cohorts.PARTS)}
    return {
        "Cohort": {
            "description": "A recent retry or promote and where its jobs are now; "
            "an unreadable record has only `id`, `at_ms` and `problem`",
            "oneOf": [
                _object(
                    {
                        "id": _COHORT_ID,
                        "action": {**_TEXT, "description": "retry, promote, retry_all, ..."},
                        "source": {**_STRING, "description": "The state the jobs came from"},
                        "user": _STRING,
                        "at_ms": _COUNT,
                        "at": {**_STRING, "description": "The same moment in UTC, for people"},
                        "count": {**_COUNT, "description": "Jobs the action moved"},
                        "tracked": {
                            **_COUNT,
                            "description": "Of those, the ones followed (the first 100,000)",
                        },
                        "audit_id": _or_null(
                            {**_INTEGER, "description": "The action's AuditEntry (its record)"}
                        ),
                        "breakdown": _or_null(
                            _object(
                                {
                                    "parts": {
                                        **_map(_COUNT),
                                        "propertyNames": parts,
                                        "description": "Tracked jobs per state now, and `gone`"
                                        " (their hash removed since)",
                                    },
                                    "failed_same": _or_null(
                                        {
                                            **_COUNT,
                                            "description": "Failed again with the kind of reason"
                                            " they had before (folded as the error groups fold"
                                            " it); null when none was recorded",
                                        }
                                    ),
                                    "failed_reason": _or_null(
                                        {
                                            **_STRING,
                                            "description": "The commonest kind of reason now",
                                        }
                                    ),
                                    "failed_sample": _or_null(
                                        {**_STRING, "description": "A reason of that kind"}
                                    ),
                                },
                                description="null when this answer's budget of jobs to look"
                                " at was spent on newer cohorts (ask for the cohort itself)",
                            )
                        ),
                        "previous_reason": _or_null(
                            {
                                **_STRING,
                                "description": "The commonest kind of reason the jobs had"
                                " failed with before",
                            }
                        ),
                        "previous_sample": _or_null(
                            {**_STRING, "description": "One of the jobs' own reasons of it"}
                        ),
                        "problem": {"type": "null"},
                    }
                ),
                _object({"id": _COHORT_ID, "at_ms": _COUNT, "problem": _TEXT}),
            ],
        },
        "CohortList": _object(
            {"queue": _TEXT, "cohorts": _array(_schema("Cohort"), maxItems=20)},
        ),
        "CohortJobs": _object(
            {
                "queue": _TEXT,
                "cohort": _schema("Cohort"),
                "part": parts,
                "start": _COUNT,
                "total": {**_COUNT, "description": "Tracked jobs in this part"},
                "ids": _array(_JOB_ID, maxItems=cohorts.MAX_PAGE_SIZE),
            }
        ),
    }


def _change_schemas() -> dict[str, Schema]:
    """Editing a job's data, duplicating a job, adding a job (dashboard.shared.job_edits)."""
    data = {
        "description": "Any JSON value: the job's data (in a form: its JSON text). At most "
        "`ECHOMQ_MAX_JOB_DATA_BYTES` (1 MiB by default) once encoded"
    }
    whole = {"type": "integer", "minimum": 0}
    keep = {"anyOf": [_BOOLEAN, whole], "description": "true, false or how many to keep"}
    options: dict[str, Schema] = {
        "attempts": {"type": "integer", "minimum": 1, "maximum": job_edits.MAX_ATTEMPTS},
        "delay": {**whole, "maximum": job_edits.MAX_DELAY_MS, "description": "Milliseconds"},
        "priority": {**whole, "maximum": MAX_PRIORITY, "description": "0 = none; 1 runs first"},
        "lifo": _BOOLEAN,
        "backoff": {
            "anyOf": [
                whole,
                _object(
                    {"type": {"enum": ["fixed", "exponential"]}, "delay": whole},
                    optional=("delay",),
                ),
            ]
        },
        "removeOnComplete": keep,
        "removeOnFail": keep,
    }
    assert set(options) == set(job_edits.ADD_OPTIONS)
    return {
        "EditDataRequest": _object({"id": _JOB_ID, "data": data}),
        "DuplicateJobRequest": _object({"id": _JOB_ID}),
        "AddJobRequest": _object(
            {
                "name": {"type": "string", "minLength": 1, "maxLength": job_edits.MAX_NAME_LENGTH},
                "data": {**data, "default": {}},
                "opts": {
                    "description": "The job's options (in a form: their JSON text); only these",
                    "anyOf": [_object(options, optional=tuple(options)), _STRING],
                },
            },
            optional=("data", "opts"),
        ),
    }


def _refusal_codes(*, upper: bool) -> list[str]:
    """Why a job action left a job where it was: a script's error code, or its
    keys being broken. Upper case in ``results``, lower case as the error code."""
    names = [code.name for code in ErrorCode] + ["JOB_BROKEN"]
    return names if upper else [name.lower() for name in names]


def _with_codes(schema_name: str, codes: Collection[str]) -> Schema:
    return {
        "allOf": [
            _schema(schema_name),
            {"properties": {"error": {"properties": {"code": {"enum": list(codes)}}}}},
        ]
    }


def _error(
    description: str,
    codes: Collection[str],
    *,
    refused_codes: Collection[str] = (),
    refused_schema: str = "ActionRefused",
    headers: Collection[str] = (),
) -> Schema:
    """An error answer: ``Error`` with one of ``codes``; with ``refused_codes``,
    alternatively an ``ActionRefused`` (per-id results beside the error)."""
    schema = _with_codes("Error", codes)
    if refused_codes:
        schema = {"oneOf": [schema, _with_codes(refused_schema, refused_codes)]}
    answer: Schema = {
        "description": description,
        "content": {"application/json": {"schema": schema}},
    }
    if headers:
        answer["headers"] = {name: _ref("headers", name) for name in headers}
    return answer


_JOB_REFUSALS = [code for code in _refusal_codes(upper=False) if code != "job_not_exist"]
# Every error answer: its status and what it holds (components.responses).
_ERRORS: dict[str, tuple[str, Schema]] = {
    "BadRequest": (
        "400",
        _error(
            "Bad input: not JSON, nested too deep, `NaN`/`Infinity`/`1e400`, a field of the "
            "wrong type, an unknown action or state, an invalid job id or stream id",
            ["bad_request"],
        ),
    ),
    "Unauthenticated": ("401", _error("Not logged in", ["unauthenticated"])),
    "Forbidden": (
        "403",
        _error("The user may not view queues (staff with `dashboard.view_queues`)", ["forbidden"]),
    ),
    "ForbiddenToAct": (
        "403",
        _error(
            "The user may not act (`dashboard.act_on_queues`), the dashboard is read-only, "
            "or the CSRF check failed (`csrf_failed`: the message says how to send the token)",
            ["forbidden", "csrf_failed"],
        ),
    ),
    "ForbiddenToChange": (
        "403",
        _error(
            "The user may not change jobs (`dashboard.change_jobs`), the dashboard is "
            "read-only, or the CSRF check failed (`csrf_failed`)",
            ["forbidden", "csrf_failed"],
        ),
    ),
    "NotFound": ("404", _error("No such queue, job or API path", ["not_found"])),
    "ChangeNotFound": (
        "404",
        _error(
            "No such queue (`not_found`), or no job with that id", ["not_found", "job_not_exist"]
        ),
    ),
    "ChangeRefused": (
        "409",
        _error(
            "Nothing was changed: the job is in a state its data may not be edited in (a "
            "worker took it, it completed: `job_not_in_state`), its key is not a job hash or "
            "its data is not JSON (`job_broken`), or a key of the queue has the wrong type "
            "(`corrupt_key`)",
            ["job_not_in_state", "job_broken", "corrupt_key"],
        ),
    ),
    "ChangeTooLarge": (
        "413",
        _error(
            "A body over Django's `DATA_UPLOAD_MAX_MEMORY_SIZE` (`body_too_large`), or data "
            "over `ECHOMQ_MAX_JOB_DATA_BYTES` (`data_too_large`): nothing was changed",
            ["body_too_large", "data_too_large"],
        ),
    ),
    "JobNotFound": (
        "404",
        _error(
            "No such queue (`not_found`), or no job with that id (`job_not_exist`, with "
            "the per-id results)",
            ["not_found"],
            refused_codes=["job_not_exist"],
        ),
    ),
    "MethodNotAllowed": (
        "405",
        _error(
            "A method the path does not take (any path, any method not listed)",
            ["method_not_allowed"],
            headers=["Allow"],
        ),
    ),
    "JobRefused": (
        "409",
        _error(
            "Nothing moved: the job is not in the state the action starts from "
            "(`job_not_in_state`), its keys are broken (`job_broken`), a worker holds it... "
            "with the per-id results; or a key of the queue has the wrong type (`corrupt_key`)",
            ["corrupt_key"],
            refused_codes=_JOB_REFUSALS,
        ),
    ),
    "SchedulerNotFound": (
        "404",
        _error(
            "No such queue (`not_found`), or no such job scheduler (`scheduler_not_exist`)",
            ["not_found"],
            refused_codes=["scheduler_not_exist"],
            refused_schema="SchedulerActionRefused",
        ),
    ),
    "SchedulerRefused": (
        "409",
        _error(
            "Nothing changed: the scheduler's definition is broken (`scheduler_broken`: no "
            "template to run, its pending run's keys broken...); or a key of the queue has the "
            "wrong type (`corrupt_key`)",
            ["corrupt_key"],
            refused_codes=["scheduler_broken"],
            refused_schema="SchedulerActionRefused",
        ),
    ),
    "SearchBadQuery": (
        "400",
        _error(
            "A query that cannot run (`bad_query`: the message says why, e.g. too long, no "
            "operator, an unknown field, a forged cursor) or an unknown state (`bad_request`)",
            ["bad_query", "bad_request"],
        ),
    ),
    "SearchConflict": (
        "409",
        _error(
            "A newer search of the same user replaced this one (`search_replaced`), or the "
            "state's key has the wrong type (`corrupt_key`)",
            ["search_replaced", "corrupt_key"],
        ),
    ),
    "SearchBusy": (
        "429",
        _error(
            "This search's previous step is still running, or the session has as many steps"
            " running as it may",
            ["search_busy"],
        ),
    ),
    "CorruptKey": (
        "409",
        _error("A key of the queue has the wrong type: nothing was changed", ["corrupt_key"]),
    ),
    "BodyTooLarge": (
        "413",
        _error(
            "A body over Django's `DATA_UPLOAD_MAX_MEMORY_SIZE` (2.5 MB by default)",
            ["body_too_large"],
        ),
    ),
    "ServerError": (
        "500",
        _error("A bug: it has been logged (the API answers JSON even then)", ["server_error"]),
    ),
    "RedisUnavailable": (
        "503",
        _error(
            "Redis cannot be reached (`redis_failing_over`: behind Redis Sentinel, the "
            "sentinels are replacing the master); an action may or may not have run "
            "(the message says); or, for a search step, the server has as many steps "
            "waiting as it takes (`busy`)",
            ["redis_unavailable", "redis_failing_over", "busy"],
            headers=["Retry-After"],
        ),
    ),
    "RedisOutOfMemory": (
        "507",
        _error(
            "Redis is over its `maxmemory`: nothing was changed, or (a bulk action) the "
            "message says what its earlier batches moved",
            ["redis_out_of_memory"],
        ),
    ),
}


_HEADERS: dict[str, Schema] = {
    "Allow": {
        "description": "The methods the path takes",
        "required": True,
        "schema": {"type": "string"},
    },
    "Retry-After": {
        "description": "Seconds to wait before trying again",
        "required": True,
        "schema": {"type": "integer", "minimum": 0},
    },
}


def _parameter(where: str, name: str, description: str, schema: Schema) -> Schema:
    return {
        "name": name,
        "in": where,
        "required": where == "path",  # every query parameter may be left out
        "description": description,
        "schema": schema,
    }


_SEGMENT = "a `/` in it is written `~s`, a `~` as `~~`"
_PARAMETERS: dict[str, Schema] = {
    "cohort_id": _parameter("path", "cohort_id", "A recent action's cohort", _COHORT_ID),
    "prefix": _parameter("path", "prefix", f"The queue's key prefix (`bull`); {_SEGMENT}", _TEXT),
    "name": _parameter("path", "name", f"The queue's name; {_SEGMENT}", _TEXT),
    "group": _parameter("path", "group", "An error group's `key`", _GROUP_KEY),
    "job_id": _parameter(
        "path",
        "job_id",
        "The job's id (it may contain `/`: it takes the rest of the path)",
        _JOB_ID,
    ),
}


def _query(name: str, description: str, schema: Schema) -> Schema:
    return _parameter("query", name, description, schema)


def _page_size(default: int) -> Schema:
    return {"type": "integer", "minimum": 1, "maximum": MAX_RANGE, "default": default}


# --------------------------------------------------------------------------- operations

_READ: list[dict[str, list[str]]] = [{"session": []}]
_ACT: list[dict[str, list[str]]] = [{"session": [], "csrfCookie": [], "csrfHeader": []}]
_GARBAGE = " (anything not a number reads as the default)"


def _answer(description: str, schema_name: str) -> Schema:
    return {
        "description": description,
        "content": {"application/json": {"schema": _schema(schema_name)}},
    }


def _errors(*names: str) -> dict[str, Schema]:
    return {_ERRORS[name][0]: _ref("responses", name) for name in names}


_VIEW_ERRORS = ("Unauthenticated", "Forbidden", "ServerError")
_READ_ERRORS = (*_VIEW_ERRORS, "NotFound", "RedisUnavailable")
_ACT_ERRORS = (
    "BadRequest",
    "Unauthenticated",
    "ForbiddenToAct",
    "BodyTooLarge",
    "ServerError",
    "RedisUnavailable",
    "RedisOutOfMemory",
)


_CHANGE_ERRORS = (
    "BadRequest",
    "Unauthenticated",
    "ForbiddenToChange",
    "ChangeNotFound",
    "ChangeRefused",
    "ChangeTooLarge",
    "ServerError",
    "RedisUnavailable",
    "RedisOutOfMemory",
)


def _change(
    operation_id: str, summary: str, request: str, example: dict[str, Any], status: str
) -> tuple[str, Schema]:
    form = {"schema": _schema(request)}
    return (
        "post",
        {
            "operationId": operation_id,
            "tags": ["changes"],
            "summary": summary,
            "description": "Needs `dashboard.change_jobs`; audited with a before/after diff.",
            "security": _ACT,
            "requestBody": {
                "required": True,
                "description": "JSON, or the same fields as a form (JSON values as their text)",
                "content": {
                    "application/json": {"schema": _schema(request), "example": example},
                    "application/x-www-form-urlencoded": form,
                },
            },
            "responses": {
                status: _answer("Done", "JobChange"),
                **_errors(*_CHANGE_ERRORS),
            },
        },
    )


def _body(schema_name: str, example: dict[str, Any]) -> Schema:
    return {
        "required": True,
        "description": "JSON, or the same fields as a form (`ids` repeated)",
        "content": {
            "application/json": {"schema": _schema(schema_name), "example": example},
            "application/x-www-form-urlencoded": {
                "schema": _schema(schema_name),
                "encoding": {"ids": {"style": "form", "explode": True}},
            },
        },
    }


# Keyed by URL name (dashboard/urls.py): the method and the operation.
OPERATIONS: dict[str, tuple[str, Schema]] = {
    "queues": (
        "get",
        {
            "operationId": "listQueues",
            "tags": ["queues"],
            "summary": "Every queue the dashboard shows, with counts and metrics",
            "responses": {
                "200": _answer("The queues", "QueueList"),
                **_errors(*_VIEW_ERRORS, "RedisUnavailable"),
            },
        },
    ),
    "queue": (
        "get",
        {
            "operationId": "getQueue",
            "tags": ["queues"],
            "summary": "One queue, shaped like an entry of the list",
            "responses": {"200": _answer("The queue", "QueueSummary"), **_errors(*_READ_ERRORS)},
        },
    ),
    "jobs": (
        "get",
        {
            "operationId": "listJobs",
            "tags": ["jobs"],
            "summary": "One page of the jobs in a state, newest first",
            "parameters": [
                _query("state", "The state listed", {**_STATE, "default": "wait"}),
                _query("start", "Position of the first job" + _GARBAGE, {**_COUNT, "default": 0}),
                _query(
                    "end",
                    f"Position of the last job, inclusive (default `start` + 49; at "
                    f"most {MAX_RANGE} jobs a page)" + _GARBAGE,
                    _COUNT,
                ),
            ],
            "responses": {
                "200": _answer("The page", "JobPage"),
                **_errors("BadRequest", *_READ_ERRORS),
            },
        },
    ),
    "job": (
        "get",
        {
            "operationId": "getJob",
            "tags": ["jobs"],
            "summary": "Everything about one job: data, options, attempts, logs, family, events",
            "parameters": [
                _query("logs_start", "First log line" + _GARBAGE, {**_COUNT, "default": 0}),
                _query("logs_size", "Log lines" + _GARBAGE, _page_size(50)),
                _query(
                    "full", "`1`: the whole data, however large", {"type": "string", "enum": ["1"]}
                ),
            ],
            "responses": {"200": _answer("The job", "JobDetail"), **_errors(*_READ_ERRORS)},
        },
    ),
    "flow": (
        "get",
        {
            "operationId": "getJobFlow",
            "tags": ["jobs"],
            "summary": "The flow a job belongs to: root, parents and children across queues",
            "description": f"At most {flows.MAX_DEPTH} levels and {flows.NODE_BUDGET} jobs; "
            "bad links (a parent gone, a loop, a key of the wrong type) are `problems`.",
            "responses": {"200": _answer("The tree", "FlowTree"), **_errors(*_READ_ERRORS)},
        },
    ),
    "flow_children": (
        "get",
        {
            "operationId": "listFlowChildren",
            "tags": ["jobs"],
            "summary": "A page of a flow parent's children, failed ones first",
            "parameters": [
                _query(
                    "page",
                    "A node's `next_page` (left out: the first page)",
                    {"type": "string", "pattern": "^[0-9]+\\.[0-9]+\\.[0-9]+$"},
                ),
            ],
            "responses": {
                "200": _answer("The page", "FlowChildrenPage"),
                **_errors("BadRequest", *_READ_ERRORS),
            },
        },
    ),
    "events": (
        "get",
        {
            "operationId": "listEvents",
            "tags": ["events"],
            "summary": "The queue's events, newest first",
            "parameters": [
                _query(
                    "before",
                    "Only events older than this stream id (`next_before` of the previous page)",
                    {"type": "string", "pattern": "^[0-9]+(-[0-9]+)?$"},
                ),
                _query("type", "Only events of this type (e.g. `failed`)", _STRING),
                _query("job", "Only this job's events", _STRING),
                _query("count", "Events a page" + _GARBAGE, _page_size(50)),
            ],
            "responses": {
                "200": _answer("The page", "EventPage"),
                **_errors("BadRequest", *_READ_ERRORS),
            },
        },
    ),
    "job_actions": (
        "post",
        {
            "operationId": "actOnJobs",
            "tags": ["actions"],
            "summary": "Retry, promote, fail or remove jobs by id",
            "description": "Each job moves by itself; the answer is 200 when any moved, with "
            "one result per id. When none moved, the status and `error` are the first "
            "refusal's, the results beside them.",
            "security": _ACT,
            "requestBody": _body(
                "JobActionRequest", {"action": "retry", "ids": ["42"], "state": "failed"}
            ),
            "responses": {
                "200": _answer("Done (for some ids at least)", "ActionResult"),
                **_errors(*_ACT_ERRORS, "JobNotFound", "JobRefused"),
            },
        },
    ),
    "queue_actions": (
        "post",
        {
            "operationId": "actOnQueue",
            "tags": ["actions"],
            "summary": "Retry all, promote all, clean, pause or resume a queue",
            "description": "Bulk moves run in bounded batches; jobs whose keys are broken stay "
            "where they are and are listed in `skipped`.",
            "security": _ACT,
            "requestBody": _body(
                "QueueActionRequest", {"action": "clean", "state": "completed", "grace_ms": 3600000}
            ),
            "responses": {
                "200": _answer("Done", "ActionResult"),
                **_errors(*_ACT_ERRORS, "NotFound", "CorruptKey"),
            },
        },
    ),
    "workers": (
        "get",
        {
            "operationId": "listWorkers",
            "tags": ["workers"],
            "summary": "The workers connected to the queue, on every node",
            "description": "Found by the names workers give their Redis connections "
            "(BullMQ's scheme), from one CLIENT LIST per node.",
            "responses": {"200": _answer("The workers", "WorkerList"), **_errors(*_READ_ERRORS)},
        },
    ),
    "limits": (
        "get",
        {
            "operationId": "getLimits",
            "tags": ["workers"],
            "summary": "Global concurrency, rate limit, and whether the queue is rate-limited",
            "responses": {"200": _answer("The limits", "Limits"), **_errors(*_READ_ERRORS)},
        },
    ),
    "cohorts": (
        "get",
        {
            "operationId": "listCohorts",
            "tags": ["actions"],
            "summary": "What became of the queue's recent retries and promotes (24 h)",
            "description": "Newest first. Each breakdown looks up where every tracked job is "
            "now (O(jobs), only when asked); one answer looks at 200,000 jobs at most.",
            "parameters": [
                _query(
                    "count",
                    "How many cohorts" + _GARBAGE,
                    {"type": "integer", "minimum": 1, "maximum": 20, "default": 5},
                )
            ],
            "responses": {"200": _answer("The cohorts", "CohortList"), **_errors(*_READ_ERRORS)},
        },
    ),
    "cohort": (
        "get",
        {
            "operationId": "getCohort",
            "tags": ["actions"],
            "summary": "One recent action's cohort and the ids of one part of it",
            "parameters": [
                _query(
                    "part",
                    "Which jobs: a state, `gone` or `failed-same` (default: the first it has)",
                    {"type": "string"},
                ),
                _query("start", "The first id's offset" + _GARBAGE, {**_COUNT, "default": 0}),
                _query(
                    "count",
                    "Ids at most" + _GARBAGE,
                    {**_page_size(cohorts.PAGE_SIZE), "maximum": cohorts.MAX_PAGE_SIZE},
                ),
            ],
            "responses": {
                "200": _answer("The cohort", "CohortJobs"),
                **_errors(*_READ_ERRORS, "BadRequest"),
            },
        },
    ),
    "global_concurrency": (
        "post",
        {
            "operationId": "setGlobalConcurrency",
            "tags": ["actions"],
            "summary": "Set or clear the queue's global concurrency",
            "security": _ACT,
            "requestBody": _body("GlobalConcurrencyRequest", {"concurrency": 5}),
            "responses": {
                "200": _answer("Done", "ActionResult"),
                **_errors(*_ACT_ERRORS, "NotFound", "CorruptKey"),
            },
        },
    ),
    "schedulers": (
        "get",
        {
            "operationId": "listSchedulers",
            "tags": ["schedulers"],
            "summary": "One page of the queue's job schedulers and legacy repeatable jobs, "
            "soonest next run first",
            "description": "A definition that is broken (fields missing or malformed, an "
            "unreadable pattern, a template that is not JSON) is listed with `notes` saying "
            "what is wrong.",
            "parameters": [
                _query("start", "Position of the first one" + _GARBAGE, {**_COUNT, "default": 0}),
                _query(
                    "end",
                    f"Position of the last one, inclusive (default `start` + 49; at most "
                    f"{read_schedulers.MAX_PAGE_SIZE} a page)" + _GARBAGE,
                    _COUNT,
                ),
            ],
            "responses": {
                "200": _answer("The page", "SchedulerPage"),
                **_errors("BadRequest", *_READ_ERRORS),
            },
        },
    ),
    "scheduler_actions": (
        "post",
        {
            "operationId": "actOnScheduler",
            "tags": ["actions", "schedulers"],
            "summary": "Run a job scheduler now, or remove it with its pending run",
            "description": "`run_now` adds a job from the template, ready at once; the "
            "schedule stays as it was. `remove` deletes the scheduler and its pending run "
            "(unless a worker has taken it). One script each; nothing changes when refused.",
            "security": _ACT,
            "requestBody": _body("SchedulerActionRequest", {"action": "run_now", "id": "nightly"}),
            "responses": {
                "200": _answer("Done", "SchedulerActionResult"),
                **_errors(*_ACT_ERRORS, "SchedulerNotFound", "SchedulerRefused"),
            },
        },
    ),
    "error_groups": (
        "get",
        {
            "operationId": "listErrorGroups",
            "tags": ["jobs"],
            "summary": "The queue's failed jobs grouped by their folded reason, most first",
            "description": "Kept in Redis by the dashboard and caught up on each call (the "
            "first call counts every failed job, in bounded batches).",
            "responses": {
                "200": _answer("The groups", "ErrorGroups"),
                **_errors(*_READ_ERRORS, "CorruptKey"),
            },
        },
    ),
    "error_group_jobs": (
        "get",
        {
            "operationId": "listErrorGroupJobs",
            "tags": ["jobs"],
            "summary": "One page of an error group's jobs, newest failure first",
            "parameters": [
                _query("start", "Position of the first one" + _GARBAGE, {**_COUNT, "default": 0}),
                _query("size", "How many" + _GARBAGE, _page_size(50)),
            ],
            "responses": {
                "200": _answer("The page", "ErrorGroupJobs"),
                **_errors(*_READ_ERRORS),
            },
        },
    ),
    "error_group_actions": (
        "post",
        {
            "operationId": "actOnErrorGroup",
            "tags": ["actions"],
            "summary": "Retry or remove every failed job of an error group",
            "description": "Each job through its own script, re-checked there: one that "
            "moved meanwhile is left alone and counted, a broken one is reported.",
            "security": _ACT,
            "requestBody": _body(
                "ErrorGroupActionRequest", {"action": "retry", "group": "0123456789abcdef"}
            ),
            "responses": {
                "200": _answer("Done", "ErrorGroupActionResult"),
                **_errors(*_ACT_ERRORS, "NotFound", "CorruptKey"),
            },
        },
    ),
    "edit_job_data": _change(
        "editJobData",
        "Replace the data of a waiting, prioritized, delayed or failed job",
        "EditDataRequest",
        {"id": "42", "data": {"to": "ops@example.com"}},
        "200",
    ),
    "duplicate_job": _change(
        "duplicateJob",
        "Add a new job with a job's name, data and options",
        "DuplicateJobRequest",
        {"id": "42"},
        "201",
    ),
    "add_job": _change(
        "addJob",
        "Add a job: name, data and options",
        "AddJobRequest",
        {"name": "send", "data": {"to": "ops@example.com"}, "opts": {"delay": 5000}},
        "201",
    ),
    "search": (
        "get",
        {
            "operationId": "searchJobs",
            "tags": ["jobs"],
            "summary": "One step of a search through a state, newest first",
            "description": "Without `cursor`, starts a search (replacing the user's previous "
            "one); then send `search` and `cursor` from each answer until `done`. A step "
            f"works for about {search.STEP_MS:.0f} ms or until it has "
            f"{search.MAX_ROWS} hits. Queries: `id = 42`, `name ~ mail`, `reason ~ timeout`, "
            "`name = exact`, `data ~ text`, `data.user.id = 42`.",
            "parameters": [
                _query("state", "The state to search", {**_STATE, "default": "failed"}),
                _query(
                    "q",
                    "`<field> <op> <value>`",
                    {"type": "string", "maxLength": read_search.MAX_QUERY_LENGTH},
                ),
                _query("search", "The search's id, with `cursor`", _STRING),
                _query("cursor", "Where to go on (from the last answer)", _STRING),
                _query(
                    "rows",
                    "How many of this step's hits to send as rows" + _GARBAGE,
                    {**_COUNT, "maximum": search.MAX_ROWS, "default": search.MAX_ROWS},
                ),
            ],
            "responses": {
                "200": _answer("What this step found", "SearchStep"),
                **_errors("SearchBadQuery", "SearchConflict", "SearchBusy", *_READ_ERRORS),
            },
        },
    ),
    "search_act": (
        "post",
        {
            "operationId": "actOnSearch",
            "tags": ["actions"],
            "summary": "Retry, promote or remove the jobs a search found",
            "description": "Each job moves by its own script, which checks it is still in "
            "`state`: one that moved meanwhile is skipped and counted. One audit entry.",
            "security": _ACT,
            "requestBody": {
                "required": True,
                "content": {
                    "application/json": {
                        "schema": _schema("SearchActRequest"),
                        "example": {"action": "retry", "state": "failed", "ids": ["41", "42"]},
                    }
                },
            },
            "responses": {
                "200": _answer("Done", "SearchActResult"),
                **_errors(*_ACT_ERRORS, "NotFound", "CorruptKey"),
            },
        },
    ),
    "schema": (
        "get",
        {
            "operationId": "getSchema",
            "tags": ["schema"],
            "summary": "This document",
            "responses": {
                "200": _answer("The OpenAPI document", "OpenAPIDocument"),
                **_errors(*_VIEW_ERRORS),
            },
        },
    ),
}

_DESCRIPTION = """\
The data and actions of the dashboard's pages, as JSON: same login, same
permissions, same read model.

**Access.** A logged-in, active staff user (the session cookie); reading needs
the permission `dashboard.view_queues`, every POST also `dashboard.act_on_queues`,
except the changes to jobs (edit data, duplicate, add), which need
`dashboard.change_jobs` instead (every POST is refused for everyone when the
dashboard is read-only). A POST needs the
CSRF token: the CSRF cookie's value in the CSRF header (see the security schemes).

**Errors.** Every answer is JSON, also those Django gives itself. Errors are
`{"error": {"code", "message"}}`. Besides the statuses each operation lists, any
path below the API root answers `404 not_found` when unknown, and any method an
operation does not list answers `405 method_not_allowed` with `Allow`
(components: `NotFound`, `MethodNotAllowed`).

**Queues in paths.** `{prefix}/{name}`, each segment with `/` written `~s` and
`~` written `~~`.

**Several Redis servers.** Each queue path is served for the `default`
connection (`REDIS_URL`) at the API root, and for any connection at
`c/{connection}/` below it (the second server of those paths):
`c/staging/queues/bull/emails/` is the queue `bull:emails` on the connection
`staging`. `queues/` lists every connection's queues and says which connections
answered.
"""


# --------------------------------------------------------------------------- the document

_CONVERTED = re.compile(r"<(?:\w+:)?(\w+)>")


def _api_resolver(namespace: str, urlconf: str | None) -> URLResolver:
    resolver = get_resolver(urlconf)
    for part in namespace.split(":"):
        resolver = resolver.namespace_dict[part][1]
    return resolver


def _endpoints(resolver: URLResolver) -> Iterator[tuple[URLPattern, str]]:
    """Each endpoint of the API and its OpenAPI path (relative to the API root)."""
    for pattern in resolver.url_patterns:
        if isinstance(pattern, URLPattern):
            yield pattern, "/" + _CONVERTED.sub(r"{\1}", str(pattern.pattern))


def _converters(pattern: URLPattern) -> dict[str, object]:
    """The path parameters of a route, by name, in order."""
    converters: dict[str, object] = getattr(pattern.pattern, "converters", {})
    return converters


def _api_root(namespace: str, resolver: URLResolver, urlconf: str | None) -> str:
    """Where the API is mounted (script prefix included): the reversed URL of an
    endpoint without parameters, less that endpoint's own route."""
    for pattern, _ in _endpoints(resolver):
        if pattern.name and not _converters(pattern):
            url = reverse(f"{namespace}:{pattern.name}", urlconf=urlconf)
            return url.removesuffix(str(pattern.pattern))
    raise LookupError(f"the API namespace {namespace!r} has no endpoint without parameters")


def _connection_servers(root: str) -> list[Schema]:
    """A queue path's servers: the default connection's at the API root, any
    connection's below ``c/{connection}/`` (dashboard.urls)."""
    return [
        {"url": root},
        {
            "url": root.rstrip("/") + "/c/{connection}",
            "variables": {
                "connection": {
                    "default": DEFAULT_CONNECTION,
                    "description": "The Redis connection: `default` or a name from "
                    "`ECHOMQ_CONNECTIONS` (letters, digits, `-`, `_`)",
                }
            },
        },
    ]


def _version() -> str:
    try:
        return metadata.version("echomq-dashboard")
    except metadata.PackageNotFoundError:  # running from a checkout that was never installed
        return "0+unknown"


def document(namespace: str, urlconf: str | None = None) -> Schema:
    """The OpenAPI document of the API under URL ``namespace``
    (``"dashboard:api"``, or ``"<instance>:api"`` where a project includes the
    app under an instance namespace of its own)."""
    resolver = _api_resolver(namespace, urlconf)
    root = _api_root(namespace, resolver, urlconf).rstrip("/") or "/"
    paths: dict[str, Schema] = {}
    for pattern, path in _endpoints(resolver):
        if pattern.name not in OPERATIONS:
            continue  # undocumented: tests/test_openapi.py fails on it
        if "connection" in _converters(pattern):
            continue  # the same operation at a second server (_connection_servers)
        method, operation = OPERATIONS[pattern.name]
        parameters = [_ref("parameters", name) for name in _converters(pattern)]
        paths[path] = {
            method: {
                **operation,
                "parameters": parameters + operation.get("parameters", []),
                "responses": dict(sorted(operation["responses"].items())),
            }
        }
        if "prefix" in _converters(pattern):
            paths[path]["servers"] = _connection_servers(root)
    return {
        "openapi": "3.1.0",
        "info": {
            "title": "EchoMQ Dashboard API",
            "version": _version(),
            "description": _DESCRIPTION,
        },
        "servers": [{"url": root}],
        "security": _READ,
        "tags": [
            {"name": name}
            for name in (
                "queues",
                "jobs",
                "events",
                "workers",
                "actions",
                "schedulers",
                "changes",
                "schema",
            )
        ],
        "paths": paths,
        "components": {
            "schemas": {**_schemas(), **_declared_schemas()},
            "responses": {name: answer for name, (_, answer) in _ERRORS.items()},
            "parameters": _PARAMETERS,
            "headers": _HEADERS,
            "securitySchemes": {
                "session": {
                    "type": "apiKey",
                    "in": "cookie",
                    "name": settings.SESSION_COOKIE_NAME,
                    "description": "The login session (log in at the dashboard)",
                },
                "csrfCookie": {
                    "type": "apiKey",
                    "in": "cookie",
                    "name": settings.CSRF_COOKIE_NAME,
                    "description": "The CSRF cookie the pages set",
                },
                "csrfHeader": {
                    "type": "apiKey",
                    "in": "header",
                    "name": _csrf_header(),
                    "description": "The CSRF cookie's value, on every POST",
                },
            },
        },
    }


def _declared_schemas() -> dict[str, Schema]:
    """The answers declared as Structs (queues.read.answers, dashboard.core.answers), as
    msgspec describes them."""
    _, components = msgspec.json.schema_components(
        (*answers.SHAPES, *dashboard_answers.SHAPES), ref_template="#/components/schemas/{name}"
    )
    return components


def _csrf_header() -> str:
    """The CSRF header's name. The setting holds it as a WSGI META key, which
    has lost its case: Django's default is named as Django's documentation
    spells it, another one as its META key gives it (header names ignore case)."""
    meta: str = settings.CSRF_HEADER_NAME
    if meta == "HTTP_X_CSRFTOKEN":
        return "X-CSRFToken"
    return meta.removeprefix("HTTP_").replace("_", "-")


@require_GET
@api_permission()
def schema(request: HttpRequest) -> HttpResponse:
    """This document, for the API this request reached (wherever it is mounted)."""
    match = request.resolver_match
    assert match is not None  # a view is only called through the resolver
    return JsonResponse(document(match.namespace, getattr(request, "urlconf", None)))
