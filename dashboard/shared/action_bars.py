"""What the queue page offers above its job table, tab by tab.

The bulk actions (retry all, promote all, clean) while no row is ticked, the
actions on the ticked rows once one is: labels, weight and confirmations are
decided here once, and the template only places them. A confirmation is a
question for the page's dialog (static/dashboard/dashboard.js), which fills
in ``{selected}``, ``{count}``, ``{n}``, ``{age}`` and ``{query}`` when the
button is pressed (queue names cannot hold braces). Destructive actions always
ask; retry and promote ask past :data:`HANDFUL` jobs wherever they start
(here, a search's matches, an error group).
"""

from __future__ import annotations

from dataclasses import dataclass

from dashboard.acting.actions import ACTIONS_BY_STATE
from queues.read.refs import QueueRef

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
# "More than a handful": a retry or promote of more jobs than this asks first,
# with the count and the queue; up to this many act at once, as one job's
# retry does (a few ticked rows are a deliberate choice, hundreds from one
# big button may be a slip). The page reads it from body[data-handful].
HANDFUL = 5


@dataclass(frozen=True, slots=True)
class Button:
    """A submit button: ``action`` is its value, ``style`` an extra CSS class
    (``btn-primary``, ``btn-danger`` or ""), ``confirm`` the dialog's question
    ("" acts at once; a button that asks ends in "…"), asked only for more
    than a handful of jobs when ``many``. Its label is ``verb`` and ``tail``
    ("Retry" "selected"); a phone shows the verb alone."""

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
    """An action on every job of a tab; its label holds the tab's count
    (``verb`` count ``noun``: "Retry all 25 failed"), kept current by the page.
    It asks ``confirm`` when that count is more than a handful."""

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
        """What the bulk side says when the tab has no bulk action of its own."""
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
    """The actions a user allowed to act gets above the ``state`` tab."""
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
