"""The workers tab of a queue (its connected workers and its limits), its
JSON, and the global concurrency action. A worker connecting or leaving
writes no event, so the tab's live part is also polled (workers.js).
"""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest, HttpResponse
from msgspec import UNSET
from redis import Redis

from dashboard.acting import actions
from dashboard.core.answers import ActionResult
from dashboard.core.operations import ACT_ERRORS, READ_ERRORS
from dashboard.core.permissions import user_label
from dashboard.shared import bodies, presenters
from dashboard.shared.formatting import span
from dashboard.shared.web import (
    BadInput,
    api_view,
    form_view,
    is_htmx,
    page_view,
    queue_context,
    render_page,
    whole_number,
)
from queues.commands.admin import MAX_GLOBAL_CONCURRENCY
from queues.read import answers, counts
from queues.read.limits import Limits, read_limits
from queues.read.refs import QueueRef
from queues.read.workers import queue_workers

# How often the tab asks for its workers again while it is visible (ms).
POLL_MS = 3000


# --------------------------------------------------------------------------- display


def _number(value: int | float) -> str:
    return f"{value:,}" if isinstance(value, int) else f"{value:,.3f}".rstrip("0")


def limit_lines(limits: Limits) -> dict[str, str]:
    """The limits in words, one line each (what the tab's list shows)."""
    if limits.concurrency is not None:
        cap = _number(limits.concurrency)
        concurrency = f"{cap} at once across all workers ({limits.active:,} active now)"
        if limits.concurrency < 1:
            concurrency += ": no job starts"
    elif limits.concurrency_garbage:
        concurrency = (
            f"“{limits.concurrency_raw}” is stored, which is not a number: EchoMQ workers"
            " take it as no limit, BullMQ's fail to take jobs. Set or clear it."
        )
    else:
        concurrency = "none: each worker runs up to its own concurrency"
    if limits.rate_max is not None and limits.rate_duration_ms is not None:
        rate = f"{_number(limits.rate_max)} jobs per {span(int(limits.rate_duration_ms))}"
    elif limits.rate_garbage:
        rate = (
            f"max “{limits.rate_max_raw or ''}” per “{limits.rate_duration_raw or ''}”: not"
            " numbers a worker can use, so no limit"
        )
    else:
        rate = "none stored (workers may carry their own)"
    if limits.rate_limited_ms > 0:
        now = "rate-limited: no job starts for " + span(limits.rate_limited_ms)
    elif limits.window_count is not None and limits.window_left_ms > 0:
        now = (
            f"{limits.window_count:,} jobs started in this window, which ends in "
            f"{span(limits.window_left_ms)}"
        )
    else:
        now = "not rate-limited"
    return {"concurrency": concurrency, "rate": rate, "now": now}


@page_view(fragments=True)
def workers_page(request: HttpRequest, client: Redis, ref: QueueRef) -> HttpResponse:
    workers, clients = queue_workers(client, ref)
    limits = read_limits(client, ref)
    context: dict[str, Any] = {
        "workers": workers or [],
        "workers_known": workers is not None,
        "workers_error": clients.error or "",
        "on_cluster": bool(clients.nodes),
        "nodes": clients.nodes,
        "limits": limits,
        "limit_lines": limit_lines(limits),
        "limited_until": presenters.exact_time(limits.rate_limited_until_ms),
        "poll_ms": POLL_MS,
        "max_concurrency": MAX_GLOBAL_CONCURRENCY,
    }
    if is_htmx(request):
        context["ref"] = ref
        return render_page(request, "dashboard/workers/_workers_live.html", context)
    (summary,) = counts.queue_summaries(client, [ref], metrics_points=0)
    context.update(queue_context(ref, summary, "workers"))
    return render_page(request, "dashboard/workers/workers.html", context)


def _limit_from(value: Any) -> int | None:
    """A global concurrency from a form or JSON: 1 up; JSON null or "none"
    clears it. An empty field is bad input, never a silent clear."""
    if value is None or (isinstance(value, str) and value.strip() == "none"):
        return None
    must = (
        f"concurrency must be a whole number from 1 to {MAX_GLOBAL_CONCURRENCY:,},"
        " or null to clear it"
    )
    within = f"concurrency must be between 1 and {MAX_GLOBAL_CONCURRENCY:,}"
    return whole_number(value, 1, MAX_GLOBAL_CONCURRENCY, must=must, within=within)


@form_view("dashboard:workers", act=True)
def global_concurrency_action(
    request: HttpRequest, client: Redis, ref: QueueRef
) -> tuple[str, bool]:
    wanted = None if request.POST.get("action") == "clear" else request.POST.get("concurrency", "")
    limit = _limit_from(wanted)
    result = actions.set_global_concurrency(client, ref, limit, user=user_label(request.user))
    return result.message, True


# --------------------------------------------------------------------------- JSON


@api_view("listWorkers", ["workers"], ("The workers", answers.WorkerList), READ_ERRORS)
def workers_json(request: HttpRequest, client: Redis, ref: QueueRef) -> answers.WorkerList:
    """The workers connected to the queue, on every node

    Found by the names workers give their Redis connections (BullMQ's scheme),
    from one CLIENT LIST per node.
    """
    workers, clients = queue_workers(client, ref)
    return answers.WorkerList(
        queue=ref.qualified,
        known=workers is not None,
        refusal=clients.error,
        nodes=list(clients.nodes),
        count=None if workers is None else len(workers),
        workers=[worker.as_json() for worker in workers or []],
    )


@api_view("getLimits", ["workers"], ("The limits", answers.Limits), READ_ERRORS)
def limits_json(request: HttpRequest, client: Redis, ref: QueueRef) -> answers.Limits:
    """Global concurrency, rate limit, and whether the queue is rate-limited"""
    return read_limits(client, ref).as_json()


@api_view(
    "setGlobalConcurrency",
    ["actions"],
    ("Done", ActionResult),
    (*ACT_ERRORS, "NotFound", "CorruptKey"),
    body=bodies.GlobalConcurrencyRequest,
    example={"concurrency": 5},
)
def global_concurrency_json(
    request: HttpRequest, client: Redis, ref: QueueRef, body: bodies.GlobalConcurrencyRequest
) -> ActionResult:
    """Set or clear the queue's global concurrency"""
    # {"concurrency": 5} sets it, {"concurrency": null} clears it.
    if body.concurrency is UNSET:
        raise BadInput("concurrency is required: a whole number, or null to clear it")
    result = actions.set_global_concurrency(
        client, ref, _limit_from(body.concurrency), user=user_label(request.user)
    )
    return result.answer(ActionResult)
