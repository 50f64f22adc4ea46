"""What became of an action: the queue page's "Recent actions" panel, a
cohort's page and their JSON. A look asks Redis where each recorded job is
now (acting/cohort_record.py wrote them): nothing is computed while nobody
looks, and one look breaks down at most :data:`IDS_PER_LOOK` jobs in all.
"""

from __future__ import annotations

import datetime as dt
import math
import time
from dataclasses import dataclass

from django.http import Http404, HttpRequest, HttpResponse
from redis import Redis

from dashboard.core import answers
from dashboard.core.answers import COHORT_IDS_MAX, COHORT_PARTS, COHORTS_MAX, FAILED_SAME
from dashboard.core.lookup import int_param
from dashboard.core.operations import GARBAGE, READ_ERRORS, query_param, size_param
from dashboard.core.queue_urls import queue_url
from dashboard.shared import presenters
from dashboard.shared.web import BadInput, api_view, page_view, render_page
from queues.queue import now_ms
from queues.read.answers import Count
from queues.read.cohorts import (
    GONE,
    Breakdown,
    Cohort,
    CohortUnreadable,
    Unreadable,
    breakdown,
    load_cohort,
    recent_cohorts,
)
from queues.read.job import load_jobs
from queues.read.refs import QueueRef
from queues.read.states import FAILED, TAB_OF_KEY, WAIT, label

# Jobs one look breaks down, all cohorts together (about 7 ms of Redis and
# 12 ms in all per 1,000): the newest cohorts first; older ones beyond it are listed without
# their breakdown ("open it").
IDS_PER_LOOK = 200_000
# The panel's cohorts and the ids a cohort page or its JSON lists at once.
PANEL_COHORTS = 5
PAGE_SIZE = 50
# How often the panel may ask again while events keep coming (ms), and at
# most which share of a viewer's time its looks may take: a look at big
# cohorts (about 1.25 s at 100,000 jobs) spaces the next one out to 14 s.
REFRESH_MS = 2000
LOOK_DUTY = 0.1
_FAILED_TAB = TAB_OF_KEY[FAILED.name]
# The action as its line starts (another by its name, "_" read as a space).
_PAST = {
    "retry": "retried",
    "promote": "promoted",
    "retry_all": "retried all",
    "promote_all": "promoted all",
}
_PART_LABELS = {
    GONE: "gone (removed since)",
    _FAILED_TAB: "failed again",
    FAILED_SAME: "of them with the same reason as before",
}


def part_label(part: str, *, standalone: bool = False) -> str:
    """Words for a part: beside the failed part's badge, the same-reason one
    says "of them"; as a page's heading (``standalone``) it names itself."""
    if part == FAILED_SAME and standalone:
        return "failed again with the same reason as before"
    return _PART_LABELS.get(part) or label(part)


# What a part's page says about how its jobs were found.
_PART_NOTES = {
    GONE: "Their job hashes are gone: removed since the action, by removeOnComplete or"
    " removeOnFail, or by someone. Whether they completed first cannot be known.",
    TAB_OF_KEY[WAIT.name]: "Found in no other state with their hash still there: ready to run"
    " (waiting or paused). The ready lists are not walked, so a job another writer left in no"
    " state at all is counted here too.",
}


@dataclass(frozen=True, slots=True)
class Part:
    """A part of a cohort's breakdown, as its badge shows it."""

    name: str  # a tab name, "gone" or "failed-same"
    label: str
    count: int
    url: str
    words: str  # "2 failed again", "1 of them with the same reason as before"
    tone: str  # the state colour of its badge (gone: none)
    within_failed: bool  # the same-reason part, drawn dashed beside the failed one


@dataclass(frozen=True, slots=True)
class CohortView:
    cohort: Cohort
    ref: QueueRef
    counted: Breakdown | None  # None: beyond this look's budget

    @property
    def url(self) -> str:
        return queue_url("dashboard:cohort", self.ref, self.cohort.id)

    @property
    def headline(self) -> str:
        """E.g. "retried 1,204 failed jobs at 10:42 UTC by oncall"."""
        c = self.cohort
        jobs = "job" if c.count == 1 else "jobs"
        clock = dt.datetime.fromtimestamp(c.at_ms / 1000, tz=dt.UTC).strftime("%H:%M UTC")
        action = _PAST.get(c.action, c.action.replace("_", " "))
        return f"{action} {c.count:,} {label(c.source)} {jobs} at {clock} by {c.user}"

    problem = ""  # an Unreadable cohort has one

    @property
    def tracking(self) -> str:
        """ "first 100,000 tracked" when the action moved more than that."""
        c = self.cohort
        return f"first {c.tracked:,} tracked" if c.tracked < c.count else ""

    @property
    def parts(self) -> list[Part]:
        if self.counted is None:
            return []
        shown = []
        for name, ids in self.counted.parts.items():
            shown.append(self._part(name, len(ids)))
            if name == _FAILED_TAB and self.cohort.reasons:
                same = len(self.counted.failed_same)
                # Every job of the failed part beside it: "all of them ...", not
                # a second count the reader must compare.
                shown.append(self._part(FAILED_SAME, same, all_of_them=same == len(ids) > 1))
        return shown

    def _part(self, name: str, count: int, *, all_of_them: bool = False) -> Part:
        named = part_label(name)
        words = f"all {named}" if all_of_them else f"{count:,} {named}"
        tone = "other" if name == GONE else _FAILED_TAB if name == FAILED_SAME else name
        return Part(name, named, count, f"{self.url}?part={name}", words, tone, name == FAILED_SAME)

    @property
    def fails_as_before(self) -> bool:
        """Its failed jobs fail most with the kind they failed most with before."""
        now = self.counted.top_failed_reason if self.counted else ""
        return bool(now) and now == self.cohort.top_previous_reason


def _answer(view: CohortView | Unreadable) -> answers.Cohort:
    """A cohort's JSON; an unreadable record's says why."""
    if isinstance(view, Unreadable):
        return answers.Cohort(id=view.id, at_ms=view.at_ms, problem=f"not readable: {view.problem}")
    c, counted = view.cohort, view.counted
    return answers.Cohort(
        id=c.id,
        action=c.action,
        source=c.source,
        user=c.user,
        at_ms=c.at_ms,
        at=presenters.exact_time(c.at_ms),
        count=c.count,
        tracked=c.tracked,
        audit_id=c.audit_id,
        breakdown=None
        if counted is None
        else answers.CohortBreakdown(
            parts={name: len(ids) for name, ids in counted.parts.items()},
            failed_same=len(counted.failed_same) if c.reasons else None,
            failed_reason=counted.top_failed_reason or None,
            failed_sample=counted.top_failed_sample or None,
        ),
        previous_reason=c.top_previous_reason or None,
        previous_sample=c.top_previous_sample or None,
        problem=None,
    )


def _views(client: Redis, ref: QueueRef, limit: int) -> list[CohortView | Unreadable]:
    """The newest ``limit`` cohorts, broken down while the look's budget lasts."""
    budget = IDS_PER_LOOK
    shown: list[CohortView | Unreadable] = []
    for cohort in recent_cohorts(client, ref.keys, now_ms())[:limit]:
        if isinstance(cohort, Unreadable):
            shown.append(cohort)
            continue
        counted = None
        if cohort.tracked <= budget:
            budget -= cohort.tracked
            counted = breakdown(client, ref.keys, cohort)
        shown.append(CohortView(cohort, ref, counted))
    return shown


@page_view()
def panel(request: HttpRequest, client: Redis, ref: QueueRef) -> HttpResponse:
    """The "Recent actions" panel's fragment (empty when there is none)."""
    started = time.monotonic()
    shown = _views(client, ref, PANEL_COHORTS)
    took_ms = (time.monotonic() - started) * 1000
    context = {
        "ref": ref,
        "cohorts": shown,
        # Whole steps of REFRESH_MS: the same cohorts answer the same markup.
        "next_ms": REFRESH_MS * max(1, math.ceil(took_ms / LOOK_DUTY / REFRESH_MS)),
    }
    return render_page(request, "dashboard/cohorts/_recent_actions.html", context)


def _look_at_part(
    request: HttpRequest, client: Redis, ref: QueueRef, cohort_id: str, bad: type[Exception]
) -> tuple[CohortView, str, list[str]]:
    """The cohort broken down, the part its ``part`` names (none: the first it
    has) and its ids; Http404 for an unknown cohort, ``bad`` for a bad part."""
    try:
        cohort = load_cohort(client, ref.keys, cohort_id)
    except CohortUnreadable as problem:
        raise Http404(f"Cohort {cohort_id} cannot be read: {problem}") from None
    if cohort is None:
        raise Http404(f"No cohort {cohort_id}: it was never recorded or is over 24 hours old")
    counted = breakdown(client, ref.keys, cohort)
    part = request.GET.get("part", "") or next(iter(counted.parts), GONE)
    if part not in COHORT_PARTS:
        raise bad(f"part must be one of {', '.join(COHORT_PARTS)}")
    ids = counted.failed_same if part == FAILED_SAME else counted.parts.get(part, [])
    return CohortView(cohort, ref, counted), part, ids


@page_view()
def cohort_page(request: HttpRequest, client: Redis, ref: QueueRef, cohort_id: str) -> HttpResponse:
    """One cohort: its breakdown and the jobs of one part, a page at a time."""
    view, part, ids = _look_at_part(request, client, ref, cohort_id, Http404)
    page_number = int_param(request.GET.get("page"), 1, lowest=1)
    start = (page_number - 1) * PAGE_SIZE
    shown_ids = ids[start : start + PAGE_SIZE]
    jobs = {job.id: job for job in load_jobs(client, ref.keys, shown_ids)}
    context = {
        "ref": ref,
        "view": view,
        "part": part,
        "part_label": part_label(part, standalone=True),
        "part_note": _PART_NOTES.get(part, ""),
        "rows": [(job_id, jobs.get(job_id)) for job_id in shown_ids],
        "total": len(ids),
        "first": start + 1 if shown_ids else 0,
        "last": start + len(shown_ids),
        "previous_page": page_number - 1 if page_number > 1 else None,
        "next_page": page_number + 1 if start + PAGE_SIZE < len(ids) else None,
        "shows_reason": part in (_FAILED_TAB, FAILED_SAME),
    }
    return render_page(request, "dashboard/cohorts/cohort.html", context)


@api_view(
    "listCohorts",
    ["actions"],
    ("The cohorts", answers.CohortList),
    READ_ERRORS,
    parameters=(size_param("count", "How many cohorts", PANEL_COHORTS, COHORTS_MAX),),
)
def api_list(request: HttpRequest, client: Redis, ref: QueueRef) -> answers.CohortList:
    """What became of the queue's recent retries and promotes (24 h)

    Newest first. Each breakdown looks up where every tracked job is now
    (O(jobs), only when asked); one answer looks at 200,000 jobs at most.
    """
    limit = int_param(request.GET.get("count"), PANEL_COHORTS, lowest=1, highest=COHORTS_MAX)
    return answers.CohortList(
        queue=ref.qualified, cohorts=[_answer(item) for item in _views(client, ref, limit)]
    )


@api_view(
    "getCohort",
    ["actions"],
    ("The cohort", answers.CohortJobs),
    (*READ_ERRORS, "BadRequest"),
    parameters=(
        query_param(
            "part", "Which jobs: a state, `gone` or `failed-same` (default: the first it has)", str
        ),
        query_param("start", "The first id's offset" + GARBAGE, Count, default=0),
        size_param("count", "Ids at most", PAGE_SIZE, COHORT_IDS_MAX),
    ),
)
def api_one(
    request: HttpRequest, client: Redis, ref: QueueRef, cohort_id: str
) -> answers.CohortJobs:
    """One recent action's cohort and the ids of one part of it"""
    view, part, ids = _look_at_part(request, client, ref, cohort_id, BadInput)
    start = int_param(request.GET.get("start"), 0)
    count = int_param(request.GET.get("count"), PAGE_SIZE, lowest=1, highest=COHORT_IDS_MAX)
    return answers.CohortJobs(
        queue=ref.qualified,
        cohort=_answer(view),
        part=part,
        start=start,
        total=len(ids),
        ids=ids[start : start + count],
    )
