"""What the queue page offers above its job table, tab by tab: labels, weight and
confirmations decided once. A confirmation is a question for the page's dialog,
which fills in ``{selected}``, ``{count}``, ``{n}``, ``{age}`` and ``{query}``
(queue names cannot hold braces). Destructive actions always ask; retry and
promote ask past :data:`HANDFUL` jobs.
"""

from __future__ import annotations

from dataclasses import dataclass

from dashboard.acting.actions import ACTIONS_BY_STATE
from dashboard.core.answers import SET_ACTIONS
from queues.read.refs import QueueRef
from queues.read.states import TAB

DAY_MS = 86_400_000
# "Clean jobs older than": label, milliseconds. The default is a week: a slip
# of the hand then removes only what nobody has looked at for days.
CLEAN_AGES = (
    ("1 hour", 3_600_000),
    ("1 day", DAY_MS),
    ("7 days", 7 * DAY_MS),
    ("30 days", 30 * DAY_MS),
    ("any age", 0),
)
DEFAULT_CLEAN_AGE_MS = 7 * DAY_MS
# A retry or promote of more jobs than this asks first: a few ticked rows are a
# choice, hundreds from one big button may be a slip.
HANDFUL = 5


@dataclass(frozen=True, slots=True)
class Button:
    """A submit button; ``confirm`` "" acts at once, ``many`` asks only past a
    handful; the label is ``verb`` and ``tail`` (a phone shows the verb)."""

    action: str
    verb: str
    tail: str = ""
    style: str = ""
    confirm: str = ""
    many: bool = False

    @property
    def label(self) -> str:
        words = f"{self.verb} {self.tail}" if self.tail else self.verb
        return words + ("…" if self.confirm and not self.many else "")


@dataclass(frozen=True, slots=True)
class BulkButton:
    """An action on every job of a tab: "Retry all 25 failed", the count kept
    current by the page; it asks past a handful."""

    action: str
    verb: str
    noun: str
    style: str
    confirm: str


@dataclass(frozen=True, slots=True)
class ActionBar:
    bulk: tuple[BulkButton, ...]
    clean: Button | None  # the destructive bulk action, behind the "More" menu
    selection: tuple[Button, ...]

    @property
    def hint(self) -> str:
        if self.bulk or self.clean or not self.selection:
            return ""
        verbs = [button.action for button in self.selection]
        return f"Tick jobs to {' or '.join(verbs)} them."


def _selection_button(ref: QueueRef, state: str, action: str) -> Button:
    queue = ref.name
    if action == "retry" and state == "completed":
        # Re-running finished work repeats its side effects (a password-reset
        # job sends another email): secondary, and it asks first.
        return Button(
            action,
            "Run again",
            confirm=f"Run {{selected}} of {queue} again? Each completed job runs once more,"
            " side effects included (an email job sends its email again).",
        )
    if action == "retry":
        return Button(
            action,
            "Retry",
            "selected",
            "btn-primary",
            f"Retry {{selected}} of {queue}? Each moves back to waiting and runs again.",
            many=True,
        )
    if action == "promote":
        return Button(
            action,
            "Promote",
            "selected",
            confirm=f"Promote {{selected}} of {queue}? Each runs now instead of at its time.",
            many=True,
        )
    if action == "fail":
        return Button(
            action,
            "Fail",
            "selected",
            "btn-danger",
            f"Fail {{selected}} of {queue}? They move to failed with your reason;"
            " a worker still running one loses its result.",
        )
    return Button(
        action,
        "Remove",
        "selected",
        "btn-danger",
        f"Remove {{selected}} of {queue}? Their data and logs are deleted. This cannot be undone.",
    )


def action_bar(ref: QueueRef, state: str) -> ActionBar:
    bulk: tuple[BulkButton, ...] = ()
    if state == "failed":
        bulk = (
            BulkButton(
                "retry_all",
                "Retry all",
                "failed",
                "btn-primary",
                f"Retry all {{n}} failed jobs of {ref.name}? Each moves back to waiting"
                " and runs again.",
            ),
        )
    elif state == "delayed":
        bulk = (
            BulkButton(
                "promote_all",
                "Promote all",
                "delayed",
                "",
                f"Promote all {{n}} delayed jobs of {ref.name}? Each runs now instead of"
                " at its time.",
            ),
        )
    clean = None
    if state in ("failed", "completed"):
        clean = Button(
            "clean",
            "Clean",
            style="btn-danger",
            confirm=f"Delete the {state} jobs of {ref.name} older than {{age}}? At most {{count}},"
            " with their logs. This cannot be undone.",
        )
    selection = tuple(
        _selection_button(ref, state, action) for action in ACTIONS_BY_STATE.get(state, ())
    )
    return ActionBar(bulk, clean, selection)


# A search's buttons ("Retry all 12 matching"): {count} the matches and {query}
# the search, filled in by the page as it asks (it knows both then).
_SEARCH_VERBS = {"retry": "Retry", "promote": "Promote", "remove": "Remove"}
_SEARCH_CONFIRMS = {
    "retry": "Retry {count} of {queue}? They matched the search “{query}”: each one still {state} "
    "goes back to waiting; jobs that moved meanwhile are skipped and counted.",
    "promote": "Promote {count} of {queue}? They matched the search “{query}”: each one still "
    "delayed runs now; jobs that moved meanwhile are skipped and counted.",
    "remove": "Remove {count} of {queue}? They matched the search “{query}”: each one still "
    "{state} is deleted with its logs; this cannot be undone.",
}


def search_buttons(ref: QueueRef, state: str) -> list[Button]:
    """The tab's row actions that act on a search's matches."""
    tab = TAB[state]
    return [
        Button(
            action,
            _SEARCH_VERBS[action],
            style="btn-danger" if action == "remove" else "",
            confirm=_SEARCH_CONFIRMS[action]
            .replace("{state}", tab.label)
            .replace("{queue}", ref.name),
            many=action != "remove",
        )
        for action in tab.actions
        if action in SET_ACTIONS
    ]
