"""The queue page's history chart, as a fragment the page loads after itself.

The queue page holds a placeholder (templates/dashboard/_history_slot.html)
that htmx replaces with this view's figure once the page is up, so the page
itself reads nothing more; the range links swap the figure for another range
the same way. A read is one pipeline of at most 1,440 small hashes
(queues.read.history), whatever the queue's size.
"""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.utils.html import format_html, format_html_join
from django.utils.safestring import SafeString
from django.views.decorators.http import require_GET

from dashboard.history_chart import history_chart, markers_for
from dashboard.lookup import queue_or_404
from dashboard.permissions import page_permission
from dashboard.redis import get_client
from dashboard.templatetags.dashboard_tags import queue_url
from queues.read.history import DEFAULT_RANGE, RANGES, history
from queues.read.refs import QueueRef


def range_links(ref: QueueRef, chosen: str) -> SafeString:
    base = queue_url(ref, "history")
    links = format_html_join(
        "",
        '<a class="btn btn-small{}" href="{}?range={}" hx-get="{}?range={}"'
        ' hx-target="closest [data-history-chart]" hx-swap="outerHTML"{}>{}</a>',
        (
            (
                " active" if name == chosen else "",
                base,
                name,
                base,
                name,
                SafeString(' aria-current="true"') if name == chosen else "",
                name,
            )
            for name in RANGES
        ),
    )
    return format_html(
        '<span class="history-ranges" role="group" aria-label="Range">{}</span>', links
    )


@require_GET
@page_permission()
def history_fragment(request: HttpRequest, prefix: str, name: str) -> HttpResponse:
    client = get_client()
    ref = queue_or_404(client, prefix, name)
    chosen = request.GET.get("range", DEFAULT_RANGE)
    if chosen not in RANGES:
        chosen = DEFAULT_RANGE
    read = history(client, ref, chosen)
    return HttpResponse(history_chart(read, markers_for(read), range_links(ref, chosen)))
