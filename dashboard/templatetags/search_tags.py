"""What the queue page's search box offers (templates/dashboard/search/_search.html)."""

from __future__ import annotations

from django import template

from dashboard.acting.actions import MAX_IDS_PER_SET
from dashboard.shared.action_bars import search_buttons

register = template.Library()
register.simple_tag(search_buttons, name="search_actions")


@register.simple_tag
def search_limit() -> int:
    return MAX_IDS_PER_SET
