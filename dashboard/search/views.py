"""Searching a queue from its page and the API: one bounded step
(:data:`STEP_MS`) per poll, each answer's cursor asking for the next. Polls
rather than the live socket because they are simpler to bound: the server
holds nothing between them and any process can answer the next. Per user at
most :data:`MAX_SEARCHES_PER_USER` searches (a new one replaces the oldest),
their steps in a pool of their own (dashboard.site.http)."""

from __future__ import annotations

import secrets
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

from django.http import HttpRequest, HttpResponse
from redis import Redis

from dashboard.acting import actions
from dashboard.core import answers
from dashboard.core.jsonresponse import JsonResponse
from dashboard.core.lookup import int_param
from dashboard.core.operations import ACT_ERRORS, GARBAGE, READ_ERRORS, parameter, query_param
from dashboard.core.permissions import user_label
from dashboard.shared import bodies, presenters
from dashboard.shared.web import BadInput, api_view, json_errors, page_view, queue_of
from dashboard.site.http import PAGES_IN_FLIGHT, runs_as_search_step
from queues.read.answers import State
from queues.read.lists import JobPage, job_rows
from queues.read.refs import QueueRef
from queues.read.search import (
    MAX_QUERY_LENGTH,
    Cursor,
    Pacing,
    QueryError,
    SearchError,
    parse_query,
    search_step,
)
from queues.read.states import TAB

# One step's wall time: long enough to amortise a request, short enough that
# the page shows progress several times a second and a cancel is felt at once.
STEP_MS = 200.0
MAX_ROWS = answers.SEARCH_ROWS_MAX
# A user's searches at once (a tab each); a new one replaces the oldest.
# dashboard.site.http admits one step more than this per session.
MAX_SEARCHES_PER_USER = 2
# How much longer than its pacing a step rests while pages are being served.
MAX_YIELD_S = 0.05


def _rest_behind_pages(seconds: float) -> None:
    """A step's rest between calls, made longer while the pages' pool serves a
    request (at most MAX_YIELD_S), so that its Redis commands do not queue
    behind the search's calls (docs/benchmarks.md, bench/abuse.py phase d)."""
    time.sleep(seconds)
    until = time.monotonic() + MAX_YIELD_S
    while PAGES_IN_FLIGHT.count and time.monotonic() < until:
        time.sleep(0.002)


_PACING = Pacing(sleep=_rest_behind_pages)


@dataclass(slots=True)
class _Search:
    """One running search: a lock held by its step, and the flag that stops it."""

    stepping: threading.Lock = field(default_factory=threading.Lock)
    replaced: threading.Event = field(default_factory=threading.Event)


def _replaced() -> actions.ActionRefused:
    # json_errors answers it (as the API's other refusals), in both views.
    return actions.ActionRefused("A newer search replaced this one", "search_replaced")


class _Searches:
    """The searches of each user of this process, oldest first: at most
    MAX_SEARCHES_PER_USER small entries per user, each gone when its search
    ends or is replaced."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._by_user: dict[str, dict[str, _Search]] = {}  # by id, oldest first

    def start(self, user: str) -> str:
        search_id = secrets.token_urlsafe(9)
        with self._lock:
            searches = self._by_user.setdefault(user, {})
            while len(searches) >= MAX_SEARCHES_PER_USER:
                # Its running step stops at its next call.
                searches.pop(next(iter(searches))).replaced.set()
            searches[search_id] = _Search()
        return search_id

    def end(self, user: str, search_id: str) -> None:
        with self._lock:
            searches = self._by_user.get(user, {})
            searches.pop(search_id, None)
            if not searches:
                self._by_user.pop(user, None)

    @contextmanager
    def step(self, user: str, search_id: str) -> Iterator[threading.Event]:
        """The running search's ``replaced`` flag, while its step runs; refused
        (at once, without waiting) when it is no longer one of the user's or
        another of its steps is running."""
        with self._lock:
            search = self._by_user.get(user, {}).get(search_id)
        if search is None:
            raise _replaced()
        if not search.stepping.acquire(blocking=False):
            busy = "This search's previous step is still running"
            raise actions.ActionRefused(busy, "search_busy")
        try:
            yield search.replaced
        finally:
            search.stepping.release()


SEARCHES = _Searches()


def _answer_step(
    request: HttpRequest, client: Redis, ref: QueueRef, *, markup: bool
) -> HttpResponse:
    """One step, as JSON; with ``markup`` the rows also as the job table's
    rows (the page shows them exactly like its table, escaped server-side)."""
    state = request.GET.get("state", "failed")
    if state not in TAB:
        raise BadInput(f"state must be one of {', '.join(TAB)}")
    user = user_label(request.user)
    rows_wanted = min(int_param(request.GET.get("rows"), MAX_ROWS, lowest=0), MAX_ROWS)
    try:
        query = parse_query(request.GET.get("q", ""))
        raw_cursor = request.GET.get("cursor")
        cursor = Cursor.decode(raw_cursor, TAB[state]) if raw_cursor else None
    except QueryError as error:
        raise actions.ActionRefused(str(error), code="bad_query") from None
    search_id = request.GET.get("search") or ""
    if cursor is None:
        search_id = SEARCHES.start(user)
    with SEARCHES.step(user, search_id) as stop:
        try:
            step = search_step(
                client,
                ref,
                state,
                query,
                cursor,
                budget_ms=STEP_MS,
                around=rows_wanted,
                pacing=_PACING,
                stopped=stop.is_set,
            )
        except SearchError as error:  # a QueryError is one too
            SEARCHES.end(user, search_id)
            code = "bad_query" if isinstance(error, QueryError) else "corrupt_key"
            raise actions.ActionRefused(str(error), code) from None
        if stop.is_set():
            raise _replaced()
    if step.done:
        SEARCHES.end(user, search_id)
    rows = job_rows(client, ref.keys, state, step.hits[:rows_wanted]) if rows_wanted else []
    answer = answers.SearchStep(
        search=search_id,
        query=query.text,
        state=state,
        hits=step.hits,
        rows=[row.as_json() for row in rows],
        # Why each row matched: its field's text around the match.
        found={
            row.job.id: step.found[row.job.id].as_json() for row in rows if row.job.id in step.found
        },
        searched=step.searched,
        total=step.total,
        unchecked=step.unchecked,
        cursor=step.cursor.encode() if step.cursor else None,
        done=step.done,
    )
    if markup:
        page = JobPage(ref, state, 0, len(rows), len(rows), rows)
        answer.rows_html = str(presenters.job_rows_html(page, selectable=False, found=step.found))
    return JsonResponse(answer)


@runs_as_search_step
@api_view(
    "searchJobs",
    ["jobs"],
    ("What this step found", answers.SearchStep),
    ("SearchBadQuery", "SearchConflict", "SearchBusy", *READ_ERRORS),
    description="Without `cursor`, starts a search (replacing the user's previous one); "
    "then send `search` and `cursor` from each answer until `done`. A step works for about "
    f"{STEP_MS:.0f} ms or until it has {MAX_ROWS} hits. Queries: `id = 42`, "
    "`name ~ mail`, `reason ~ timeout`, `name = exact`, `data ~ text`, `data.user.id = 42`.",
    parameters=(
        query_param("state", "The state to search", State, default="failed"),
        parameter(
            "query",
            "q",
            "`<field> <op> <value>`",
            {"type": "string", "maxLength": MAX_QUERY_LENGTH},
        ),
        query_param("search", "The search's id, with `cursor`", str),
        query_param("cursor", "Where to go on (from the last answer)", str),
        parameter(
            "query",
            "rows",
            "How many of this step's hits to send as rows" + GARBAGE,
            {"type": "integer", "minimum": 0, "maximum": MAX_ROWS, "default": MAX_ROWS},
        ),
    ),
)
def api_search(request: HttpRequest, client: Redis, ref: QueueRef) -> HttpResponse:
    """One step of a search through a state, newest first"""
    return _answer_step(request, client, ref, markup=False)


@runs_as_search_step
@page_view(queue=False)
@json_errors
def page_search(request: HttpRequest, prefix: str, name: str) -> HttpResponse:
    """The queue page's search box: :func:`api_search` plus ``rows_html``."""
    return _answer_step(request, *queue_of(prefix, name), markup=True)


@api_view(
    "actOnSearch",
    ["actions"],
    ("Done", answers.SearchActResult),
    (*ACT_ERRORS, "NotFound", "CorruptKey"),
    body=bodies.SearchActRequest,
    example={"action": "retry", "state": "failed", "ids": ["41", "42"]},
)
def api_act(
    request: HttpRequest, client: Redis, ref: QueueRef, body: bodies.SearchActRequest
) -> answers.SearchActResult:
    """Retry, promote or remove the jobs a search found

    Each job moves by its own script, which checks it is still in `state`: one
    that moved meanwhile is skipped and counted. One audit entry.
    """
    result = actions.act_on_ids(
        client, ref, body.action, body.ids, user=user_label(request.user), state=body.state
    )
    return result.answer(answers.SearchActResult, moved_meanwhile=result.moved_meanwhile)
