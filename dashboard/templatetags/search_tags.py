"""What the queue page's search box offers (templates/dashboard/_search.html)."""

from __future__ import annotations

from dataclasses import dataclass

from django import template

from dashboard.actions import MAX_IDS_PER_SET, SET_ACTIONS
from queues.read.states import TAB

register = template.Library()


@dataclass(frozen=True, slots=True)
class SearchAction:
    action: str
    verb: str
    style: str
    confirm: str


_VERBS = {"retry": "Retry", "promote": "Promote", "remove": "Remove"}
# What each does, said in the confirmation ({count}: the matches, filled in by
# dashboard.js from the button's count when it asks).
_CONFIRMS = {
    "retry": "Retry {count} found by this search? Each one still {state} goes back to waiting; "
    "jobs that moved meanwhile are skipped and counted.",
    "promote": "Promote {count} found by this search? Each one still delayed runs now; jobs that "
    "moved meanwhile are skipped and counted.",
    "remove": "Remove {count} found by this search? Each one still {state} is deleted with "
    "its logs; this cannot be undone.",
}


@register.simple_tag
def search_actions(state: str) -> list[SearchAction]:
    """The actions on a search's matches in this tab: those of the tab's own
    row actions that act_on_ids runs (retry, promote, remove)."""
    tab = TAB[state]
    return [
        SearchAction(
            action,
            _VERBS[action],
            "btn-danger" if action == "remove" else "",
            _CONFIRMS[action].replace("{state}", tab.label),
        )
        for action in tab.actions
        if action in SET_ACTIONS
    ]


@register.simple_tag
def search_limit() -> int:
    """How many matches the page keeps for acting on."""
    return MAX_IDS_PER_SET
