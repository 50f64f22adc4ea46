"""Searching a queue from its page and the API: one bounded step per poll.

The page asks ``search/?state=&q=``, then again with each answer's cursor
until ``done``; each request runs one :func:`queues.read.search.search_step`
of at most :data:`STEP_MS`. Polling rather than the live socket because it is
simpler to bound: the server holds nothing between polls, an abandoned search
costs nothing, and any process can answer the next poll. Per user (and
process) at most :data:`MAX_SEARCHES_PER_USER` searches: another replaces the
oldest (its polls get 409 ``search_replaced``), and a search's steps never run
side by side (429). Under dashboard.site.http the steps run in a small pool of
their own, so they never hold the threads that serve pages. ``search/act/``
acts on the ids the page collected (at most ``MAX_IDS_PER_SET``); each job's
script checks it is still where the search found it.
"""

from __future__ import annotations

import secrets
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

from django.http import HttpRequest, HttpResponse
from django.views.decorators.http import require_GET, require_POST

from dashboard.acting import actions
from dashboard.core import answers
from dashboard.core.errors import json_error
from dashboard.core.jsonresponse import JsonResponse
from dashboard.core.lookup import int_param, queue_or_404
from dashboard.core.permissions import api_permission, page_permission, user_label
from dashboard.core.redis import get_client
from dashboard.shared import bodies, presenters
from dashboard.shared.web import BadInput, json_errors, request_body
from dashboard.site.http import PAGES_IN_FLIGHT, runs_as_search_step
from queues.read.lists import JobPage, job_rows
from queues.read.search import (
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
    behind the search's calls. With forty searches from one viewer, another
    user's API p50 was 1.1-3.2x its figure alone without it and 0.4-1.4x with
    it, in runs on the shared 2-CPU VM at load 7-24 (bench/abuse.py, phase d)."""
    time.sleep(seconds)
    until = time.monotonic() + MAX_YIELD_S
    while PAGES_IN_FLIGHT.count and time.monotonic() < until:
        time.sleep(0.002)


_PACING = Pacing(sleep=_rest_behind_pages)


@dataclass(slots=True)
class _Search:
    """One running search: a lock held by its step, and the flag that stops it."""

    search_id: str
    stepping: threading.Lock = field(default_factory=threading.Lock)
    replaced: threading.Event = field(default_factory=threading.Event)


class _Replaced(Exception):
    pass


class _Busy(Exception):
    pass


class _Searches:
    """The searches of each user of this process, oldest first: at most
    MAX_SEARCHES_PER_USER small entries per user, each gone when its search
    ends or is replaced."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._by_user: dict[str, list[_Search]] = {}

    def start(self, user: str) -> str:
        search = _Search(secrets.token_urlsafe(9))
        with self._lock:
            searches = self._by_user.setdefault(user, [])
            while len(searches) >= MAX_SEARCHES_PER_USER:
                searches.pop(0).replaced.set()  # its running step stops at its next call
            searches.append(search)
        return search.search_id

    def _find(self, user: str, search_id: str) -> _Search | None:
        with self._lock:
            return next((s for s in self._by_user.get(user, ()) if s.search_id == search_id), None)

    def end(self, user: str, search_id: str) -> None:
        with self._lock:
            searches = self._by_user.get(user, [])
            searches[:] = [s for s in searches if s.search_id != search_id]
            if not searches:
                self._by_user.pop(user, None)

    @contextmanager
    def step(self, user: str, search_id: str) -> Iterator[threading.Event]:
        """The running search's ``replaced`` flag, while its step runs;
        _Replaced when it is no longer one of the user's, _Busy when
        another of its steps is running (both at once, without waiting)."""
        search = self._find(user, search_id)
        if search is None:
            raise _Replaced
        if not search.stepping.acquire(blocking=False):
            raise _Busy
        try:
            yield search.replaced
        finally:
            search.stepping.release()


SEARCHES = _Searches()


def _state(raw: str) -> str:
    if raw not in TAB:
        raise BadInput(f"state must be one of {', '.join(TAB)}")
    return raw


def _answer_step(request: HttpRequest, prefix: str, name: str, *, markup: bool) -> HttpResponse:
    """One step, as JSON; with ``markup`` the rows also as the job table's
    rows (the page shows them exactly like its table, escaped server-side)."""
    client = get_client()
    ref = queue_or_404(client, prefix, name)
    state = _state(request.GET.get("state", "failed"))
    user = user_label(request.user)
    rows_wanted = min(int_param(request.GET.get("rows"), MAX_ROWS, lowest=0), MAX_ROWS)
    try:
        query = parse_query(request.GET.get("q", ""))
        raw_cursor = request.GET.get("cursor")
        cursor = Cursor.decode(raw_cursor, TAB[state]) if raw_cursor else None
    except QueryError as error:
        return json_error(400, "bad_query", str(error))
    search_id = request.GET.get("search") or ""
    if cursor is None:
        search_id = SEARCHES.start(user)
    replaced = json_error(409, "search_replaced", "A newer search replaced this one")
    try:
        with SEARCHES.step(user, search_id) as stop:
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
            if stop.is_set():
                return replaced
    except _Replaced:
        return replaced
    except _Busy:
        return json_error(429, "search_busy", "This search's previous step is still running")
    except QueryError as error:
        SEARCHES.end(user, search_id)
        return json_error(400, "bad_query", str(error))
    except SearchError as error:
        SEARCHES.end(user, search_id)
        return json_error(409, "corrupt_key", str(error))
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
@require_GET
@api_permission()
@json_errors
def api_search(request: HttpRequest, prefix: str, name: str) -> HttpResponse:
    """``?state=failed&q=reason ~ timeout`` starts a search; then
    ``&search=<id>&cursor=<cursor>`` goes on. ``rows`` (0-50): how many of
    this step's hits to send with their fields."""
    return _answer_step(request, prefix, name, markup=False)


@runs_as_search_step
@require_GET
@page_permission()
@json_errors
def page_search(request: HttpRequest, prefix: str, name: str) -> HttpResponse:
    """The queue page's search box: :func:`api_search` plus ``rows_html``."""
    return _answer_step(request, prefix, name, markup=True)


@require_POST
@api_permission(act=True)
@json_errors
def api_act(request: HttpRequest, prefix: str, name: str) -> HttpResponse:
    """``{"action": "retry" | "promote" | "remove", "state": "failed", "ids": [...]}``:
    the matches of a search, each job moved by its own script if it is still there."""
    client = get_client()
    ref = queue_or_404(client, prefix, name)
    body = request_body(request, bodies.SearchActRequest)
    result = actions.act_on_ids(
        client, ref, body.action, body.ids, user=user_label(request.user), state=body.state
    )
    return JsonResponse(
        result.answer(answers.SearchActResult, moved_meanwhile=result.moved_meanwhile)
    )
