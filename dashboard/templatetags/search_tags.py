"""What the queue page's search box offers (templates/dashboard/search/_search.html)."""

from __future__ import annotations

from dataclasses import dataclass

from django import template

from dashboard.acting.actions import MAX_IDS_PER_SET
from dashboard.core.answers import SET_ACTIONS
from queues.read.refs import QueueRef
from queues.read.states import TAB

register = template.Library()


@dataclass(frozen=True, slots=True)
class SearchAction:
    action: str
    verb: str
    style: str
    confirm: str
    many: bool  # asks only for more than a handful (dashboard.shared.action_bars.HANDFUL)


_VERBS = {"retry": "Retry", "promote": "Promote", "remove": "Remove"}
# What each does, said in the confirmation: {count} the matches and {query}
# the search, filled in by dashboard.js as it asks (the page knows both then).
_CONFIRMS = {
    "retry": "Retry {count} of {queue}? They matched the search “{query}”: each one still {state} "
    "goes back to waiting; jobs that moved meanwhile are skipped and counted.",
    "promote": "Promote {count} of {queue}? They matched the search “{query}”: each one still "
    "delayed runs now; jobs that moved meanwhile are skipped and counted.",
    "remove": "Remove {count} of {queue}? They matched the search “{query}”: each one still "
    "{state} is deleted with its logs; this cannot be undone.",
}


@register.simple_tag
def search_actions(ref: QueueRef, state: str) -> list[SearchAction]:
    """The actions on a search's matches in this tab: those of the tab's own
    row actions that act_on_ids runs (retry, promote, remove)."""
    tab = TAB[state]
    return [
        SearchAction(
            action,
            _VERBS[action],
            "btn-danger" if action == "remove" else "",
            _CONFIRMS[action].replace("{state}", tab.label).replace("{queue}", ref.name),
            action != "remove",
        )
        for action in tab.actions
        if action in SET_ACTIONS
    ]


@register.simple_tag
def search_limit() -> int:
    """How many matches the page keeps for acting on."""
    return MAX_IDS_PER_SET
