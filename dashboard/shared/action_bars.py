"""What the queue page, a search and the job page offer as buttons, tab by tab: labels,
weight and confirmations decided once. A confirmation is a question for the
page's dialog, which fills in ``{selected}``, ``{count}``, ``{n}``, ``{age}``
and ``{query}`` (queue names cannot hold braces). Destructive actions always
ask; retry and promote ask past :data:`HANDFUL` jobs.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from dashboard.acting.actions import ACTIONS_BY_STATE
from dashboard.core.answers import SET_ACTIONS
from dashboard.shared.formatting import truncate
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
    handful; its words are ``verb`` and ``tail`` (a phone shows the verb; a
    bulk button puts the tab's count between them)."""

    action: str
    verb: str
    tail: str = ""
    style: str = ""
    confirm: str = ""
    many: bool = False


@dataclass(frozen=True, slots=True)
class ActionBar:
    bulk: tuple[Button, ...]  # on every job of the tab: "Retry all 25 failed"
    clean: Button | None  # the destructive bulk action, behind the "More" menu
    selection: tuple[Button, ...]

    @property
    def hint(self) -> str:
        if self.bulk or self.clean or not self.selection:
            return ""
        verbs = [button.action for button in self.selection]
        return f"Tick jobs to {' or '.join(verbs)} them."


# Each action on ticked jobs: its verb and style, and its question ({queue} is
# the queue's name); retry and promote ask only past a handful.
_SELECTION = {
    "retry": ("Retry", "btn-primary"),
    "promote": ("Promote", ""),
    "fail": ("Fail", "btn-danger"),
    "remove": ("Remove", "btn-danger"),
}
_QUESTIONS = {
    "retry": "Retry {selected} of {queue}? Each moves back to waiting and runs again.",
    "promote": "Promote {selected} of {queue}? Each runs now instead of at its time.",
    "fail": "Fail {selected} of {queue}? They move to failed with your reason;"
    " a worker still running one loses its result.",
    "remove": "Remove {selected} of {queue}? Their data and logs are deleted."
    " This cannot be undone.",
}
# Re-running finished work repeats its side effects (a password-reset job sends
# another email): secondary, and it asks first.
_RUN_AGAIN = Button(
    "retry",
    "Run again",
    confirm="Run {selected} of {queue} again? Each completed job runs once more,"
    " side effects included (an email job sends its email again).",
)
# A tab's button on all its jobs ("Retry all 25 failed": the count between verb
# and tail) asks what its action asks of ticked jobs, of "all {n} failed jobs".
_BULK = {"failed": "retry", "delayed": "promote"}


def _selection_button(state: str, action: str) -> Button:
    if action == "retry" and state == "completed":
        return _RUN_AGAIN
    verb, style = _SELECTION[action]
    many = action in ("retry", "promote")
    return Button(action, verb, "selected", style, _QUESTIONS[action], many=many)


def _naming(button: Button, queue: str) -> Button:
    return replace(button, confirm=button.confirm.replace("{queue}", queue))


def action_bar(ref: QueueRef, state: str) -> ActionBar:
    bulk: tuple[Button, ...] = ()
    if state in _BULK:
        action = _BULK[state]
        verb, style = _SELECTION[action]
        asks = _QUESTIONS[action].replace("{selected}", f"all {{n}} {state} jobs")
        button = Button(f"{action}_all", f"{verb} all", state, style, asks, many=True)
        bulk = (_naming(button, ref.name),)
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
        _naming(_selection_button(state, action), ref.name)
        for action in ACTIONS_BY_STATE.get(state, ())
    )
    return ActionBar(bulk, clean, selection)


# A search's buttons ("Retry all 12 matching"): {count} the matches and {query}
# the search, filled in by the page as it asks (it knows both then).
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
            _SELECTION[action][0],
            style="btn-danger" if action == "remove" else "",
            confirm=_SEARCH_CONFIRMS[action]
            .replace("{state}", tab.label)
            .replace("{queue}", ref.name),
            many=action != "remove",
        )
        for action in tab.actions
        if action in SET_ACTIONS
    ]


# The job page's buttons on its one job: the tab's verbs, each primary unless it
# destroys, and only what cannot be taken back asks ({job} is "job 42"). Running
# a completed job again repeats its work: it names the job as it asks.
_JOB_QUESTIONS = {
    "fail": "Fail {job}? Its worker's result will be discarded.",
    "remove": "Remove {job}? Its data and logs are deleted.",
    "run_again": "Run {job} again? It completed already: whatever it does (an email, a charge)"
    " is done a second time.",
}


def job_buttons(job_id: str, name: str, state: str | None, actions: Sequence[str]) -> list[Button]:
    buttons = []
    for action in actions:
        if action == "retry" and state == "completed":
            named = f"job {job_id} ({truncate(name, 60)})" if name else f"job {job_id}"
            asks = _JOB_QUESTIONS["run_again"].format(job=named)
            buttons.append(replace(_RUN_AGAIN, confirm=asks))
            continue
        verb, style = _SELECTION[action]
        asks = _JOB_QUESTIONS.get(action, "").format(job=f"job {job_id}")
        buttons.append(Button(action, verb, style=style or "btn-primary", confirm=asks))
    return buttons
