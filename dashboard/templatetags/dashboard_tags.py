"""Template access to the presenters' formatting, and URL tags."""

from __future__ import annotations

from typing import Any

from django import template
from django.conf import settings
from django.shortcuts import resolve_url
from django.urls import reverse
from django.utils.html import format_html
from django.utils.safestring import SafeString, mark_safe

from dashboard.acting.actions import MAX_IDS_PER_SET
from dashboard.core import conf, connections, queue_urls
from dashboard.shared import action_bars, formatting, presenters
from queues.events import Event
from queues.read.refs import QueueRef
from queues.read.states import label

register = template.Library()

register.filter("thousands", formatting.thousands)
register.filter("compact", formatting.compact)
register.filter("ms_datetime", presenters.exact_time)
register.filter("json_highlight", presenters.highlight_json)
register.filter("ago", presenters.relative_time)
register.filter("failure_label", presenters.failure_label)
register.filter("state_label", label)
register.filter("p95", lambda durations: formatting.format_ms(durations.percentile(0.95)))
register.filter("seconds", lambda value: formatting.span(value * 1000))
register.filter("attempts", lambda job: presenters.attempts_html(job.attempts_made, job.attempts))
register.simple_tag(presenters.job_table_head_html, name="job_table_head")
register.simple_tag(action_bars.search_buttons, name="search_actions")
register.simple_tag(lambda: MAX_IDS_PER_SET, name="search_limit")
register.simple_tag(lambda: action_bars.HANDFUL, name="handful")
register.simple_tag(lambda: presenters.LIVE_DOT_MEANING, name="live_dot_meaning")
register.simple_tag(lambda: presenters.EVENT_ROW_TEMPLATE, name="event_row_template")
# The URLs the page script needs, reversed here so that it never pastes paths
# together (queue names may hold "/" or "~", the app may be mounted anywhere).
register.simple_tag(lambda: reverse("dashboard:live"), name="live_socket_url")
register.simple_tag(lambda: resolve_url(settings.LOGIN_URL), name="login_url")


@register.simple_tag
def duration(start: Any, end: Any) -> str:
    if not isinstance(start, int) or not isinstance(end, int):
        return ""
    return formatting.span(end - start)


@register.simple_tag
def queue_url(ref: QueueRef, view: str = "queue", *rest: str) -> str:
    return queue_urls.queue_url(f"dashboard:{view}", ref, *rest)


@register.simple_tag
def connection_badge(ref: QueueRef) -> SafeString:
    """The queue's Redis connection when the dashboard serves several."""
    if not connections.several():
        return mark_safe("")
    return format_html(
        '<span class="badge connection" title="Redis connection">{}</span>', ref.connection
    )


@register.simple_tag
def job_url(ref: QueueRef, job_id: str) -> str:
    """As the job rows build it, so that an id reverse() refuses ("a\\nb", which no
    job can have) still links to the page saying so."""
    return presenters.job_url(presenters.job_url_prefix(ref), job_id)


@register.simple_tag
def logout_url() -> str:
    """Where "Log out" posts, or "" for no button."""
    configured = conf.logout_url()
    return resolve_url(configured) if configured else ""


@register.simple_tag
def event_row(event: Event, ref: QueueRef, one_job: bool = False) -> SafeString:
    return presenters.event_row_html(event, presenters.job_url_prefix(ref), one_job=one_job)
