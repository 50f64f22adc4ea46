"""What an action says when it does not do all it was asked (acting/actions.py),
at the edges bench/mutate.py's eighteenth pass found its tests silent on: a
set action's refusals named (three, then how many more), the bulk actions'
refusal of a state they cannot take, the global concurrency's words for one
job (before: "at most 1 job run at once"), and a scheduler refusal's code.
Real Redis; jobs and schedulers written by our runtime as a producer would."""

from __future__ import annotations

import json

import pytest
from redis import Redis

from dashboard.acting import actions
from dashboard.acting.actions import ActionRefused
from dashboard.core.answers import MAX_JOBS_PER_ACTION, ActionResult
from dashboard.core.answers import ActionRefused as ActionRefusedAnswer
from dashboard.core.jsonresponse import JsonResponse
from dashboard.models import AuditEntry
from queues.commands.admin import MAX_GLOBAL_CONCURRENCY
from queues.queue import Queue
from queues.read.refs import QueueRef
from queues.schedulers import JobSchedulers, Repeat

REF = QueueRef("bull", "reports")

pytestmark = pytest.mark.django_db


def _delayed_with_scheduler_runs(client: Redis, runs: int) -> tuple[list[str], list[str]]:
    """Two delayed report jobs and ``runs`` schedulers' pending runs."""
    queue = Queue(REF.name, client)
    plain = [
        queue.add("render-report", {"report": f"rpt_{n}"}, {"delay": 3_600_000}) for n in (1, 2)
    ]
    schedulers = JobSchedulers(REF.name, client)
    pending = [
        schedulers.upsert(f"nightly-{team}", Repeat(pattern="0 3 * * *"), name="render-report")
        for team in ("sales", "ops", "finance", "legal")[:runs]
    ]
    return plain, pending


@pytest.mark.parametrize(("runs", "more"), [(3, ""), (4, "; and 1 more")])
def test_a_set_action_names_its_first_three_refusals_and_counts_the_rest(
    dashboard_redis: Redis, runs: int, more: str
) -> None:
    """Removing a search's delayed matches: a scheduler's pending run is
    refused with the way out ("remove the scheduler instead"), the others go."""
    plain, pending = _delayed_with_scheduler_runs(dashboard_redis, runs)
    result = actions.act_on_ids(
        dashboard_redis, REF, "remove", plain + pending, user="oncall", state="delayed"
    )
    named = "; ".join(
        f"Job {job_id} belongs to a job scheduler; remove the scheduler instead"
        for job_id in pending[:3]
    )
    assert result.count == 2
    assert result.message == (f"2 of {2 + runs} jobs removed; {runs} refused: {named}{more}")
    assert [o.code for o in result.outcomes] == ["JOB_BELONGS_TO_JOB_SCHEDULER"] * runs


@pytest.mark.parametrize(("action", "verb"), [("retry_all", "retried"), ("clean", "cleaned")])
def test_a_bulk_action_on_a_state_it_cannot_take_says_which_it_can(
    dashboard_redis: Redis, action: str, verb: str
) -> None:
    with pytest.raises(ActionRefused) as refused:
        actions.queue_action(dashboard_redis, REF, action, user="oncall", state="wait")
    assert str(refused.value) == f"Only failed or completed jobs can be {verb}"


@pytest.mark.parametrize(("limit", "jobs"), [(1, "1 job runs"), (8, "8 jobs run")])
def test_the_global_concurrency_says_how_many_jobs_run_at_once(
    dashboard_redis: Redis, limit: int, jobs: str
) -> None:
    Queue(REF.name, dashboard_redis).add("render-report", {"report": "rpt_1"})
    result = actions.set_global_concurrency(dashboard_redis, REF, limit, user="oncall")
    assert result.message == (
        f"Global concurrency of reports set to {limit} (there was none): at most {jobs}"
        " at once, across all workers"
    )


def test_a_scheduler_refusal_says_whether_it_is_gone_or_broken(dashboard_redis: Redis) -> None:
    schedulers = JobSchedulers(REF.name, dashboard_redis)
    schedulers.upsert("nightly-sales", Repeat(pattern="0 3 * * *"), name="render-report")
    dashboard_redis.hset(REF.keys.repeat_scheduler("nightly-sales"), "data", "{not json")
    codes = {
        scheduler_id: actions.scheduler_action(
            dashboard_redis, REF, "run_now", scheduler_id, user="oncall"
        )
        .outcomes[0]
        .code
        for scheduler_id in ("nightly-ops", "nightly-sales")
    }
    assert codes == {"nightly-ops": "SCHEDULER_NOT_EXIST", "nightly-sales": "SCHEDULER_BROKEN"}


@pytest.mark.parametrize("scheduler_id", ["", "x" * (actions.MAX_SCHEDULER_ID_LENGTH + 1)])
def test_a_scheduler_id_that_cannot_be_one_is_refused_before_redis_is_asked(
    dashboard_redis: Redis, scheduler_id: str
) -> None:
    """An empty id (a form posted without one) and one past the longest."""
    with pytest.raises(ActionRefused, match=r"^Not a job scheduler id$"):
        actions.scheduler_action(dashboard_redis, REF, "remove", scheduler_id, user="oncall")


def test_a_scheduler_id_of_the_longest_length_is_looked_up(dashboard_redis: Redis) -> None:
    longest = "x" * actions.MAX_SCHEDULER_ID_LENGTH
    result = actions.scheduler_action(dashboard_redis, REF, "remove", longest, user="oncall")
    assert result.outcomes[0].code == "SCHEDULER_NOT_EXIST"


def test_the_global_concurrency_takes_1_to_its_largest_and_no_more(dashboard_redis: Redis) -> None:
    Queue(REF.name, dashboard_redis).add("render-report", {"report": "rpt_1"})
    for limit in (1, MAX_GLOBAL_CONCURRENCY):
        assert actions.set_global_concurrency(dashboard_redis, REF, limit, user="oncall").ok
    for limit in (0, MAX_GLOBAL_CONCURRENCY + 1):
        with pytest.raises(ActionRefused):
            actions.set_global_concurrency(dashboard_redis, REF, limit, user="oncall")


def test_ticked_jobs_are_taken_up_to_the_page_s_largest_and_no_more(dashboard_redis: Redis) -> None:
    """Ticked jobs that are gone by now: each is refused by its own script, so
    the action's result is not ok (the API answers it with that refusal), and
    the audit row lists the first 20 ids and says there were more."""
    most = [f"rpt_{n}" for n in range(MAX_JOBS_PER_ACTION)]
    result = actions.job_action(dashboard_redis, REF, "remove", most, user="oncall")
    assert (result.count, result.ok) == (0, False)
    assert AuditEntry.objects.get().jobs == ",".join(most[:20]) + "..."
    with pytest.raises(ActionRefused, match=f"At most {MAX_JOBS_PER_ACTION} jobs per action"):
        actions.job_action(dashboard_redis, REF, "remove", [*most, "rpt_x"], user="oncall")


@pytest.mark.parametrize(("ticked", "more"), [(20, ""), (21, "...")])
def test_an_audit_row_lists_twenty_ids_and_says_when_there_were_more(
    dashboard_redis: Redis, ticked: int, more: str
) -> None:
    ids = [f"rpt_{n}" for n in range(ticked)]
    actions.job_action(dashboard_redis, REF, "remove", ids, user="oncall")
    assert AuditEntry.objects.get().jobs == ",".join(ids[:20]) + more


def test_a_set_of_ids_is_taken_up_to_its_largest_and_no_more(dashboard_redis: Redis) -> None:
    """A search keeps up to MAX_IDS_PER_SET matches for acting; one more is
    refused with the way out, before any script runs."""
    most = [f"rpt_{n}" for n in range(actions.MAX_IDS_PER_SET)]
    result = actions.act_on_ids(dashboard_redis, REF, "remove", most, user="oncall", state="failed")
    assert (result.count, result.moved_meanwhile) == (0, actions.MAX_IDS_PER_SET)
    with pytest.raises(ActionRefused, match="narrow the search"):
        actions.act_on_ids(
            dashboard_redis, REF, "remove", [*most, "rpt_x"], user="oncall", state="failed"
        )


def test_an_action_that_moved_nothing_answers_the_api_with_its_first_refusal(
    dashboard_redis: Redis,
) -> None:
    """Two ticked jobs, both removed by someone else meanwhile: the API's
    answer is the first one's refusal (404, job_not_exist), in JSON."""
    result = actions.job_action(dashboard_redis, REF, "remove", ["rpt_7", "rpt_8"], user="oncall")
    response = result.api_answer(ActionResult, ActionRefusedAnswer)
    assert isinstance(response, JsonResponse)
    assert response.status_code == 404
    assert json.loads(response.content)["error"] == {
        "code": "job_not_exist",
        "message": result.message,
    }


def test_the_audit_line_of_a_bulk_retry_names_the_broken_jobs_it_skipped(
    dashboard_redis: Redis, caplog: pytest.LogCaptureFixture
) -> None:
    """Three failed renders, one of whose keys another writer made a string:
    two retried, the broken one named in the log line; a retry with nothing
    broken says no "skipped"."""
    queue = Queue(REF.name, dashboard_redis)
    ids = [queue.add("render-report", {"report": f"rpt_{n}"}) for n in (1, 2, 3)]
    for job_id in ids:
        queue.fail(job_id, "TimeoutError: render exceeded 120 s")
    dashboard_redis.delete(REF.keys.job(ids[0]))
    dashboard_redis.set(REF.keys.job(ids[0]), "corrupt")
    caplog.set_level("INFO", logger="echomq.audit")
    actions.queue_action(dashboard_redis, REF, "retry_all", user="oncall", state="failed")
    assert f"result=count=2 skipped={ids[0]}" in caplog.text
    caplog.clear()
    dashboard_redis.zrem(REF.keys.failed, ids[0])  # the broken one dealt with by hand
    queue.fail(queue.add("render-report", {"report": "rpt_4"}), "TimeoutError: render exceeded")
    actions.queue_action(dashboard_redis, REF, "retry_all", user="oncall", state="failed")
    assert [line.rsplit(" result=", 1)[1] for line in caplog.text.splitlines()] == ["count=1"]


def test_an_action_that_moved_one_job_of_two_is_ok(dashboard_redis: Redis) -> None:
    """One ticked job removed, the other gone meanwhile: the action did
    something, so the API answers it with 200 and both results."""
    kept = Queue(REF.name, dashboard_redis).add("render-report", {"report": "rpt_1"})
    result = actions.job_action(dashboard_redis, REF, "remove", [kept, "rpt_9"], user="oncall")
    assert (result.count, result.ok) == (1, True)
    assert isinstance(result.api_answer(ActionResult, ActionRefusedAnswer), ActionResult)
