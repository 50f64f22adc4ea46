"""The OpenAPI 3.1 description of the JSON API, served as JSON at ``<API root>schema/``.

Only what no declaration says is written here: the paths are the API's own URL
patterns (the server URL reversed wherever the app is mounted), each operation
is declared beside its view (shared.web.api_view) and every schema is generated
by msgspec from the Structs; tests/test_openapi.py checks every answer against
it. Behind the API's own login: it reveals nothing secret, but nothing answers
anonymous users.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from importlib import metadata
from typing import Annotated, Any

import msgspec
from django.conf import settings
from django.http import HttpRequest
from django.urls import URLPattern, get_resolver, reverse
from msgspec import Meta

from dashboard.core import answers as dashboard_answers
from dashboard.core.answers import ActionRefused, CohortId, SchedulerActionRefused
from dashboard.core.operations import VIEW_ERRORS, Operation, Schema, of, parameter
from dashboard.shared import bodies
from dashboard.shared.web import api_view
from queues.read import answers
from queues.read.answers import Answer, Count, GroupKey, JobId, Text
from queues.read.refs import DEFAULT_CONNECTION

Shape = type[msgspec.Struct]
_REF = "#/components/{kind}/{name}"


class OpenAPIDocument(Answer):
    openapi: Annotated[str, Meta(pattern="^3\\.1\\.")]
    info: dict[str, Any]
    servers: list[dict[str, Any]]
    security: list[dict[str, list[str]]]
    tags: list[dict[str, str]]
    paths: dict[str, Any]
    components: dict[str, Any]


def _ref(kind: str, name: str) -> Schema:
    return {"$ref": _REF.format(kind=kind, name=name)}


# --------------------------------------------------------------------------- errors


def _error(
    status_codes: str,
    description: str,
    refused: tuple[Shape, list[str]] | None = None,
    headers: tuple[str, ...] = (),
) -> tuple[str, Schema]:
    """An error answer: its status, then ``Error`` with one of its codes; with
    ``refused``, alternatively that Struct (the per-id results beside the error)
    with one of its codes."""

    def coded(shape: Shape, codes: list[str]) -> Schema:
        only = {"properties": {"error": {"properties": {"code": {"enum": codes}}}}}
        return {"allOf": [of(shape), only]}

    status, *codes = status_codes.split()
    schema = coded(dashboard_answers.Error, codes)
    if refused:
        schema = {"oneOf": [schema, coded(*refused)]}
    answer: Schema = {
        "description": description,
        "content": {"application/json": {"schema": schema}},
    }
    if headers:
        answer["headers"] = {name: _ref("headers", name) for name in headers}
    return status, answer


_JOB_REFUSALS = [code.lower() for code in dashboard_answers.JOB_REFUSALS if code != "JOB_NOT_EXIST"]
# Every error answer: its status and what it holds (components.responses).
_ERRORS: dict[str, tuple[str, Schema]] = {
    "BadRequest": _error(
        "400 bad_request",
        "Bad input: not JSON, nested too deep, `NaN`/`Infinity`/`1e400`, a field of the "
        "wrong type, an unknown action or state, an invalid job id or stream id",
    ),
    "Unauthenticated": _error("401 unauthenticated", "Not logged in"),
    "Forbidden": _error(
        "403 forbidden", "The user may not view queues (staff with `dashboard.view_queues`)"
    ),
    "ForbiddenToAct": _error(
        "403 forbidden csrf_failed",
        "The user may not act (`dashboard.act_on_queues`), the dashboard is read-only, "
        "or the CSRF check failed (`csrf_failed`: the message says how to send the token)",
    ),
    "ForbiddenToChange": _error(
        "403 forbidden csrf_failed",
        "The user may not change jobs (`dashboard.change_jobs`), the dashboard is "
        "read-only, or the CSRF check failed (`csrf_failed`)",
    ),
    "NotFound": _error("404 not_found", "No such queue, job or API path"),
    "ChangeNotFound": _error(
        "404 not_found job_not_exist", "No such queue (`not_found`), or no job with that id"
    ),
    "ChangeRefused": _error(
        "409 job_not_in_state job_broken corrupt_key",
        "Nothing was changed: the job is in a state its data may not be edited in (a "
        "worker took it, it completed: `job_not_in_state`), its key is not a job hash or "
        "its data is not JSON (`job_broken`), or a key of the queue has the wrong type "
        "(`corrupt_key`)",
    ),
    "ChangeTooLarge": _error(
        "413 body_too_large data_too_large",
        "A body over Django's `DATA_UPLOAD_MAX_MEMORY_SIZE` (`body_too_large`), or data "
        "over `ECHOMQ_MAX_JOB_DATA_BYTES` (`data_too_large`): nothing was changed",
    ),
    "JobNotFound": _error(
        "404 not_found",
        "No such queue (`not_found`), or no job with that id (`job_not_exist`, with "
        "the per-id results)",
        (ActionRefused, ["job_not_exist"]),
    ),
    "MethodNotAllowed": _error(
        "405 method_not_allowed",
        "A method the path does not take (any path, any method not listed)",
        headers=("Allow",),
    ),
    "JobRefused": _error(
        "409 corrupt_key",
        "Nothing moved: the job is not in the state the action starts from "
        "(`job_not_in_state`), its keys are broken (`job_broken`), a worker holds it... "
        "with the per-id results; or a key of the queue has the wrong type (`corrupt_key`)",
        (ActionRefused, _JOB_REFUSALS),
    ),
    "SchedulerNotFound": _error(
        "404 not_found",
        "No such queue (`not_found`), or no such job scheduler (`scheduler_not_exist`)",
        (SchedulerActionRefused, ["scheduler_not_exist"]),
    ),
    "SchedulerRefused": _error(
        "409 corrupt_key",
        "Nothing changed: the scheduler's definition is broken (`scheduler_broken`: no "
        "template to run, its pending run's keys broken...); or a key of the queue has the "
        "wrong type (`corrupt_key`)",
        (SchedulerActionRefused, ["scheduler_broken"]),
    ),
    "SearchBadQuery": _error(
        "400 bad_query bad_request",
        "A query that cannot run (`bad_query`: the message says why, e.g. too long, no "
        "operator, an unknown field, a forged cursor) or an unknown state (`bad_request`)",
    ),
    "SearchConflict": _error(
        "409 search_replaced corrupt_key",
        "A newer search of the same user replaced this one (`search_replaced`), or the "
        "state's key has the wrong type (`corrupt_key`)",
    ),
    "SearchBusy": _error(
        "429 search_busy",
        "This search's previous step is still running, or the session has as many steps"
        " running as it may",
    ),
    "CorruptKey": _error(
        "409 corrupt_key", "A key of the queue has the wrong type: nothing was changed"
    ),
    "BodyTooLarge": _error(
        "413 body_too_large",
        "A body over Django's `DATA_UPLOAD_MAX_MEMORY_SIZE` (2.5 MB by default)",
    ),
    "ServerError": _error(
        "500 server_error", "A bug: it has been logged (the API answers JSON even then)"
    ),
    "RedisUnavailable": _error(
        "503 redis_unavailable redis_failing_over busy",
        "Redis cannot be reached (`redis_failing_over`: behind Redis Sentinel, the "
        "sentinels are replacing the master); an action may or may not have run "
        "(the message says); or, for a search step, the server has as many steps "
        "waiting as it takes (`busy`)",
        headers=("Retry-After",),
    ),
    "RedisOutOfMemory": _error(
        "507 redis_out_of_memory",
        "Redis is over its `maxmemory`: nothing was changed, or (a bulk action) the "
        "message says what its earlier batches moved",
    ),
}
_HEADERS: dict[str, Schema] = {
    "Allow": {"description": "The methods the path takes", "required": True, "schema": of(str)},
    "Retry-After": {
        "description": "Seconds to wait before trying again",
        "required": True,
        "schema": of(Count),
    },
}


# --------------------------------------------------------------------------- parameters

_SEGMENT = "a `/` in it is written `~s`, a `~` as `~~`"
_PARAMETERS: dict[str, Schema] = {
    name: parameter("path", name, description, of(shape))
    for name, description, shape in (
        ("cohort_id", "A recent action's cohort", CohortId),
        ("prefix", f"The queue's key prefix (`bull`); {_SEGMENT}", Text),
        ("name", f"The queue's name; {_SEGMENT}", Text),
        ("group", "An error group's `key`", GroupKey),
        ("job_id", "The job's id (it may contain `/`: it takes the rest of the path)", JobId),
    )
}

# --------------------------------------------------------------------------- operations

_READ: list[dict[str, list[str]]] = [{"session": []}]
_ACT: list[dict[str, list[str]]] = [{"session": [], "csrfCookie": [], "csrfHeader": []}]


def _operation(declared: Operation, path_parameters: Iterable[str]) -> tuple[str, Schema]:
    """The method and the operation of an API view (shared.web.api_view)."""
    operation: Schema = {
        "operationId": declared.id,
        "tags": declared.tags,
        "summary": declared.summary,
    }
    if declared.description:
        operation["description"] = declared.description
    parameters = [*(_ref("parameters", name) for name in path_parameters), *declared.parameters]
    if declared.parameters:
        operation["parameters"] = parameters
    request = declared.body
    if request is not None:
        schema = of(request, **getattr(request, "whole", {}))
        form: Schema = {"schema": schema}
        if "ids" in request.__struct_fields__:
            form["encoding"] = {"ids": {"style": "form", "explode": True}}
        operation["security"] = _ACT
        operation["requestBody"] = {
            "required": True,
            "description": "JSON, or the same fields as a form ("
            + ("`ids` repeated)" if "encoding" in form else "JSON values as their text)"),
            "content": {
                "application/json": {"schema": schema, "example": declared.example},
                "application/x-www-form-urlencoded": form,
            },
        }
    words, shape = declared.answer
    answered = {"description": words, "content": {"application/json": {"schema": of(shape)}}}
    errors = {_ERRORS[name][0]: _ref("responses", name) for name in declared.errors}
    operation["responses"] = dict(sorted({declared.status: answered, **errors}.items()))
    operation.setdefault("parameters", parameters)  # after the responses where none is declared
    return ("post" if request is not None else "get"), operation


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


_TAGS = "queues jobs events workers actions schedulers changes schema"
_SESSION = "The login session (log in at the dashboard)"
_CSRF_COOKIE = "The CSRF cookie the pages set"
_CSRF_HEADER = "The CSRF cookie's value, on every POST"
_CONVERTED = re.compile(r"<(?:\w+:)?(\w+)>")


def operation_of(pattern: URLPattern) -> Operation | None:
    """The operation an API view declares (shared.web.api_view)."""
    declared: Operation | None = getattr(pattern.callback, "operation", None)
    return declared


def _version() -> str:
    try:
        return metadata.version("echomq-dashboard")
    except metadata.PackageNotFoundError:  # running from a checkout that was never installed
        return "0+unknown"


def document(namespace: str, urlconf: str | None = None) -> Schema:
    """The OpenAPI document of the API under URL ``namespace``
    (``"dashboard:api"``, or ``"<instance>:api"`` where a project includes the
    app under an instance namespace of its own)."""
    # Where the API is mounted (script prefix included): this document's own
    # URL less its route (dashboard.urls).
    root = reverse(f"{namespace}:schema", urlconf=urlconf).removesuffix("schema/")
    root = root.rstrip("/") or "/"
    # A queue path's servers: the default connection's at the API root, any
    # connection's below c/{connection}/ (dashboard.urls).
    connection = {
        "default": DEFAULT_CONNECTION,
        "description": "The Redis connection: `default` or a name from "
        "`ECHOMQ_CONNECTIONS` (letters, digits, `-`, `_`)",
    }
    queue_servers = [
        {"url": root},
        {"url": root.rstrip("/") + "/c/{connection}", "variables": {"connection": connection}},
    ]
    resolver = get_resolver(urlconf)
    for part in namespace.split(":"):
        resolver = resolver.namespace_dict[part][1]
    paths: dict[str, Schema] = {}
    for pattern in resolver.url_patterns:
        declared = operation_of(pattern) if isinstance(pattern, URLPattern) else None
        converters = getattr(pattern.pattern, "converters", {})  # the path's parameters
        if declared is None:
            continue  # undocumented: tests/test_openapi.py fails on it
        if "connection" in converters:
            continue  # the same operation at a second server (queue_servers)
        method, operation = _operation(declared, converters)
        path = "/" + _CONVERTED.sub(r"{\1}", str(pattern.pattern))
        paths[path] = {method: operation}
        if "prefix" in converters:
            paths[path]["servers"] = queue_servers
    return {
        "openapi": "3.1.0",
        "info": {
            "title": "EchoMQ Dashboard API",
            "version": _version(),
            "description": _DESCRIPTION,
        },
        "servers": [{"url": root}],
        "security": _READ,
        "tags": [{"name": name} for name in _TAGS.split()],
        "paths": paths,
        "components": {
            "schemas": _declared_schemas(),
            "responses": {name: answer for name, (_, answer) in _ERRORS.items()},
            "parameters": _PARAMETERS,
            "headers": _HEADERS,
            "securitySchemes": {
                scheme: {"type": "apiKey", "in": where, "name": name, "description": words}
                for scheme, where, name, words in (
                    ("session", "cookie", settings.SESSION_COOKIE_NAME, _SESSION),
                    ("csrfCookie", "cookie", settings.CSRF_COOKIE_NAME, _CSRF_COOKIE),
                    ("csrfHeader", "header", _csrf_header(), _CSRF_HEADER),
                )
            },
        },
    }


def _declared_schemas() -> dict[str, Schema]:
    """Every Struct an operation names, and those they hold, as msgspec describes them."""
    shapes = (*answers.SHAPES, *dashboard_answers.SHAPES, *bodies.BODIES, OpenAPIDocument)
    return msgspec.json.schema_components(
        shapes, ref_template=_REF.format(kind="schemas", name="{name}")
    )[1]


def _csrf_header() -> str:
    """The CSRF header's name. The setting holds it as a WSGI META key, which
    has lost its case: Django's default is named as Django's documentation
    spells it, another one as its META key gives it (header names ignore case)."""
    meta: str = settings.CSRF_HEADER_NAME
    if meta == "HTTP_X_CSRFTOKEN":
        return "X-CSRFToken"
    return meta.removeprefix("HTTP_").replace("_", "-")


@api_view(
    "getSchema", ["schema"], ("The OpenAPI document", OpenAPIDocument), VIEW_ERRORS, queue=False
)
def schema(request: HttpRequest) -> OpenAPIDocument:
    """This document"""
    # For the API this request reached, wherever it is mounted.
    match = request.resolver_match
    assert match is not None  # a view is only called through the resolver
    return OpenAPIDocument(**document(match.namespace, getattr(request, "urlconf", None)))
