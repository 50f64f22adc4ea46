"""What the OpenAPI document says of one API view, declared beside the view
(``shared.web.api_view``) so that a view and its description change together;
``dashboard.openapi`` turns each into the document's operation. The errors are
named by their ``components.responses`` entries (``dashboard.openapi``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import msgspec

from queues.read.answers import MAX_RANGE, Count

Schema = dict[str, Any]

VIEW_ERRORS = ("Unauthenticated", "Forbidden", "ServerError")
READ_ERRORS = (*VIEW_ERRORS, "NotFound", "RedisUnavailable")
# Any POST: refused before it runs, or failing as it runs.
_POSTED = ("BadRequest", "Unauthenticated")
_FAILED = ("ServerError", "RedisUnavailable", "RedisOutOfMemory")
ACT_ERRORS = (*_POSTED, "ForbiddenToAct", "BodyTooLarge", *_FAILED)
CHANGE_ERRORS = (
    *_POSTED,
    "ForbiddenToChange",
    "ChangeNotFound",
    "ChangeRefused",
    "ChangeTooLarge",
    *_FAILED,
)
GARBAGE = " (anything not a number reads as the default)"


@dataclass(frozen=True, slots=True)
class Operation:
    """A GET, or with ``body`` (its Struct, and ``example`` of it) a POST,
    answering ``answer`` (its words and Struct) with ``status`` or one of
    ``errors``. ``shared.web.api_view`` takes the summary and description from
    the view's docstring, unless a description is given (a figure from the code)."""

    id: str
    tags: list[str]
    answer: tuple[str, type[msgspec.Struct]]
    errors: tuple[str, ...]
    parameters: tuple[Schema, ...] = ()
    body: type[msgspec.Struct] | None = None
    example: Schema | None = None
    status: str = "200"
    summary: str = ""
    description: str = ""


def of(shape: Any, **more: Any) -> Schema:
    """The schema of a declared type (a Struct: a reference to its component)."""
    if isinstance(shape, type) and issubclass(shape, msgspec.Struct):
        return {"$ref": f"#/components/schemas/{shape.__name__}", **more}
    return {**msgspec.json.schema(shape), **more}


def parameter(where: str, name: str, description: str, schema: Schema) -> Schema:
    # Every query parameter may be left out.
    return {
        "name": name,
        "in": where,
        "required": where == "path",
        "description": description,
        "schema": schema,
    }


def query_param(name: str, description: str, shape: Any, **more: Any) -> Schema:
    return parameter("query", name, description, of(shape, **more))


def start_param(what: str) -> Schema:
    return query_param("start", f"Position of the first {what}" + GARBAGE, Count, default=0)


def size_param(name: str, description: str, default: int, most: int = MAX_RANGE) -> Schema:
    schema = {"type": "integer", "minimum": 1, "maximum": most, "default": default}
    return parameter("query", name, description + GARBAGE, schema)
