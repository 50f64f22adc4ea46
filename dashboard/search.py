"""Searching a queue from its page and the API: one bounded step per poll.

The page asks ``search/?state=&q=`` and then, with the cursor each answer
carries, asks again until the answer says ``done`` (or the person cancels,
or leaves). Each request runs one step of :func:`queues.read.search.search_step`:
at most :data:`STEP_MS` of wall time, Redis busy a bounded share of it.

Polling rather than the live WebSocket, because it is simpler to bound: the
server holds nothing between polls (the cursor travels with the page), so a
search that nobody polls any more costs nothing, with no timer to reap it and
no per-socket task to cancel; and any dashboard process can answer the next
poll. Per user, one search at a time: starting one replaces the previous one
(its next poll is answered 409 ``search_replaced``), and the steps of one
user never run side by side (a second waits up to a second, then 429).
Both hold per process; a deployment of several processes bounds a user to
one step per process.

Acting on the matches (``search/act/``) sends the ids the page collected, at
most :data:`dashboard.actions.MAX_IDS_PER_SET`; each job's own script checks
it is still where the search found it.
"""

from __future__ import annotations

import secrets
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from django.http import HttpRequest, HttpResponse
from django.views.decorators.http import require_GET, require_POST

from dashboard import actions, presenters
from dashboard.api import BadInput, _body, _json_errors, _text
from dashboard.errors import json_error
from dashboard.jsonresponse import JsonResponse
from dashboard.lookup import int_param, queue_or_404
from dashboard.permissions import api_permission, page_permission, user_label
from dashboard.redis import get_client
from queues.read.lists import JobPage, job_rows
from queues.read.search import Cursor, QueryError, SearchError, parse_query, search_step
from queues.read.states import TAB

# One step's wall time: long enough to amortise a request, short enough that
# the page shows progress several times a second and a cancel is felt at once.
STEP_MS = 200.0
# Rows (with their fields) one answer carries: the first page of hits.
MAX_ROWS = 50
# How long a poll waits for the same user's previous step to finish.
BUSY_WAIT_S = 1.0


@dataclass(slots=True)
class _UserSearch:
    search_id: str
    running: threading.Lock = field(default_factory=threading.Lock)


class _Searches:
    """The current search of each user of this process: its id, and a lock
    that lets one of its steps run at a time. One small entry per user."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._by_user: dict[str, _UserSearch] = {}

    def start(self, user: str) -> str:
        search_id = secrets.token_urlsafe(9)
        with self._lock:
            previous = self._by_user.get(user)
            running = previous.running if previous else threading.Lock()
            self._by_user[user] = _UserSearch(search_id, running)
        return search_id

    @contextmanager
    def step(self, user: str, search_id: str) -> Iterator[bool]:
        """Yields False when ``search_id`` is no longer the user's search."""
        with self._lock:
            current = self._by_user.get(user)
        if current is None or current.search_id != search_id:
            yield False
            return
        if not current.running.acquire(timeout=BUSY_WAIT_S):
            raise _Busy
        try:
            yield True
        finally:
            current.running.release()


class _Busy(Exception):
    pass


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
    try:
        with SEARCHES.step(user, search_id) as current:
            if not current:
                return json_error(409, "search_replaced", "A newer search replaced this one")
            step = search_step(
                client, ref, state, query, cursor, budget_ms=STEP_MS, around=rows_wanted
            )
    except _Busy:
        return json_error(429, "search_busy", "Your previous search step is still running")
    except QueryError as error:
        return json_error(400, "bad_query", str(error))
    except SearchError as error:
        return json_error(409, "corrupt_key", str(error))
    rows = job_rows(client, ref.keys, state, step.hits[:rows_wanted]) if rows_wanted else []
    answer: dict[str, Any] = {
        "search": search_id,
        "query": query.text,
        "state": state,
        "hits": step.hits,
        "rows": [row.as_json() for row in rows],
        # Why each row matched: its field's text around the match.
        "found": {
            row.job.id: step.found[row.job.id].as_json() for row in rows if row.job.id in step.found
        },
        "searched": step.searched,
        "total": step.total,
        "unchecked": step.unchecked,
        "cursor": step.cursor.encode() if step.cursor else None,
        "done": step.done,
    }
    if markup:
        page = JobPage(ref, state, 0, len(rows), len(rows), rows)
        answer["rows_html"] = str(
            presenters.job_rows_html(page, selectable=False, found=step.found)
        )
    return JsonResponse(answer)


@require_GET
@api_permission()
@_json_errors
def api_search(request: HttpRequest, prefix: str, name: str) -> HttpResponse:
    """``?state=failed&q=reason ~ timeout`` starts a search; then
    ``&search=<id>&cursor=<cursor>`` goes on. ``rows`` (0-50): how many of
    this step's hits to send with their fields."""
    return _answer_step(request, prefix, name, markup=False)


@require_GET
@page_permission()
@_json_errors
def page_search(request: HttpRequest, prefix: str, name: str) -> HttpResponse:
    """The queue page's search box: :func:`api_search` plus ``rows_html``."""
    return _answer_step(request, prefix, name, markup=True)


@require_POST
@api_permission(act=True)
@_json_errors
def api_act(request: HttpRequest, prefix: str, name: str) -> HttpResponse:
    """``{"action": "retry" | "promote" | "remove", "state": "failed", "ids": [...]}``:
    the matches of a search, each job moved by its own script if it is still there."""
    client = get_client()
    ref = queue_or_404(client, prefix, name)
    body = _body(request)
    ids = body.get("ids")
    if not isinstance(ids, list) or not all(isinstance(i, str) for i in ids):
        raise BadInput("ids must be a list of job ids")
    result = actions.act_on_ids(
        client,
        ref,
        _text(body, "action"),
        ids,
        user=user_label(request.user),
        state=_text(body, "state", "failed"),
    )
    return JsonResponse(result.as_set_json())
