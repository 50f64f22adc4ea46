"""The JSON shapes of the answers the dashboard itself makes (its errors, a
search's steps, a job's changes...), each declared once as a msgspec Struct, as queues.read.answers
declares the read model's: the views build them, msgspec encodes them, and
the OpenAPI document describes them (dashboard/openapi.py)."""

from __future__ import annotations

from typing import Annotated

import msgspec
from msgspec import Meta

from queues.read import search as read_search
from queues.read.answers import Answer, JobId, JobRow, SearchFound, State, Text

# Rows (with their fields) a search step carries: the first page of hits.
SEARCH_ROWS_MAX = 50
# The changes to a job the dashboard makes (dashboard.shared.job_edits).
EDIT_ACTIONS = ("edit_data", "duplicate", "add")


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


SHAPES: tuple[type[Answer], ...] = (Error, SearchStep, JobChange)
