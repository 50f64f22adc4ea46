"""The job states, defined once: everything else derives from this table.

Two kinds of names live here. A *key state* is one Redis structure holding
job ids (``<prefix>:<queue>:<name>``): its name is the key's suffix and the
name the Lua scripts take in ARGV and write in events (``prev``). A *tab* is
what the dashboard shows, counts and pages: one or more key states read one
after the other ("wait" shows the wait list, then the paused list, where 5.x
keeps ready jobs while the queue is paused; 6.x leaves them in wait).

Labels, tab order, the tone (the CSS class ``state-<tone>`` that colours it,
see static/dashboard/dashboard.css), the time a list shows, which action bar
applies and the order the counts script reads its keys in all come from
:data:`KEY_STATES` and :data:`TABS`; templates and the page script get them
from the server (tests/test_read_states.py fails on a state name written
anywhere else in them). Plain data, importing nothing: ``queues.keys`` builds
state keys from it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Structure = Literal["list", "zset"]
# Which moment a list row shows: when the job was created, when it is due
# (a delayed job's zset score), or when it finished.
RowTime = Literal["created", "due", "finished"]


@dataclass(frozen=True, slots=True)
class KeyState:
    """One Redis structure of a queue holding job ids."""

    name: str  # key suffix, script-facing name
    structure: Structure

    @property
    def is_list(self) -> bool:
        return self.structure == "list"


@dataclass(frozen=True, slots=True)
class Tab:
    """A state as the dashboard shows it: counted, paged, one tab."""

    name: str  # in URLs (?state=), the JSON API, the CLI
    label: str  # words on the page ("waiting children")
    keys: tuple[KeyState, ...]  # read one after the other, as one list
    row_time: RowTime
    # Ready to run: what a queue with no active job and no worker leaves waiting.
    ready: bool = False
    # Its jobs will run (again) later: ready ones and delayed ones.
    will_run: bool = False
    # Its rows carry a failure reason worth a column.
    shows_reason: bool = False
    # The single-job actions its jobs can take (the scripts' start states).
    actions: tuple[str, ...] = ("remove",)
    # Why a person may not edit its jobs' data (a worker holds them, or they
    # are done); "" when they may: no worker has the job and it has not
    # completed (updateData-8.lua enforces the same).
    not_editable: str = ""

    @property
    def tone(self) -> str:
        """The CSS class suffix colouring it (``state-<tone>``)."""
        return self.name

    @property
    def structure(self) -> Structure:
        return self.keys[0].structure

    @property
    def time_heading(self) -> str:
        return {"created": "Created", "due": "Due", "finished": "Finished"}[self.row_time]


WAIT = KeyState("wait", "list")
PAUSED = KeyState("paused", "list")
ACTIVE = KeyState("active", "list")
PRIORITIZED = KeyState("prioritized", "zset")
DELAYED = KeyState("delayed", "zset")
WAITING_CHILDREN = KeyState("waiting-children", "zset")
COMPLETED = KeyState("completed", "zset")
FAILED = KeyState("failed", "zset")

# Every key state, in the order BullMQ's getState and Queue.get_counts() list them.
KEY_STATES: tuple[KeyState, ...] = (
    WAIT,
    PAUSED,
    ACTIVE,
    PRIORITIZED,
    DELAYED,
    COMPLETED,
    FAILED,
    WAITING_CHILDREN,
)
KEY_STATE: dict[str, KeyState] = {state.name: state for state in KEY_STATES}

# The tabs of a queue, in the order a job usually travels through them.
_UNFINISHED = ("fail", "remove")
_FINISHED = ("retry", "remove")
TABS: tuple[Tab, ...] = (
    Tab(
        "wait", "waiting", (WAIT, PAUSED), "created", ready=True, will_run=True, actions=_UNFINISHED
    ),
    Tab(
        "prioritized",
        "prioritized",
        (PRIORITIZED,),
        "created",
        ready=True,
        will_run=True,
        actions=_UNFINISHED,
    ),
    Tab("delayed", "delayed", (DELAYED,), "due", will_run=True, actions=("promote", *_UNFINISHED)),
    Tab(
        "active",
        "active",
        (ACTIVE,),
        "created",
        actions=_UNFINISHED,
        not_editable="a worker took it (it is active now)",
    ),
    Tab(
        "waiting-children",
        "waiting children",
        (WAITING_CHILDREN,),
        "created",
        not_editable="it is waiting for its children",
    ),
    Tab(
        "completed",
        "completed",
        (COMPLETED,),
        "finished",
        actions=_FINISHED,
        not_editable="it has completed",
    ),
    Tab("failed", "failed", (FAILED,), "finished", shows_reason=True, actions=_FINISHED),
)
TAB: dict[str, Tab] = {tab.name: tab for tab in TABS}
STATES: tuple[str, ...] = tuple(TAB)
READY: tuple[str, ...] = tuple(tab.name for tab in TABS if tab.ready)
# The tab showing each key state's jobs (paused jobs show under "wait").
TAB_OF_KEY: dict[str, str] = {key.name: tab.name for tab in TABS for key in tab.keys}
# The key states the counts read, in order: each tab's keys, tab after tab
# (priv/scripts/queueCounts-0.lua reads them in this order too).
COUNTED_KEYS: tuple[KeyState, ...] = tuple(key for tab in TABS for key in tab.keys)

# The tabs in the order a list of a parent's children reads them: what went
# wrong first (failed), then what is under way (active), what will run, in
# the order it will (ready, prioritized, delayed), a parent still waiting on
# its own children, and the completed, done with, last.
BY_ATTENTION: tuple[str, ...] = (
    "failed",
    "active",
    "wait",
    "prioritized",
    "delayed",
    "waiting-children",
    "completed",
)

# Words for every name a page labels: the tabs, a queue's paused flag, the events tab.
LABELS: dict[str, str] = {**{tab.name: tab.label for tab in TABS}, "paused": "paused"}

# Every event of a queue's stream (docs/protocol.md, Events) in the events filter's
# order, and its colour: an event leading a job into a state shares that state's;
# "paused" colours the queue's paused event; the rest move no job: none ("other").
EVENT_TONES: dict[str, str] = {
    "added": "wait",
    "waiting": "wait",
    "delayed": "delayed",
    "active": "active",
    "progress": "active",
    "completed": "completed",
    "failed": "failed",
    "retries-exhausted": "failed",
    "stalled": "active",
    "removed": "other",
    "waiting-children": "waiting-children",
    "duplicated": "other",
    "deduplicated": "other",
    "cleaned": "other",
    "paused": "paused",
    "resumed": "other",
    "drained": "other",
}


def label(name: str | None) -> str:
    return LABELS.get(name or "", name or "unknown")
