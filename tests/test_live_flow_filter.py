"""A job page in a flow follows the jobs of its tree: a subscription's job
filter may list several ids (dashboard.live.consumer), bounded."""

from __future__ import annotations

import pytest
from redis import Redis

from dashboard.live.consumer import MAX_JOBS_PER_FILTER
from tests.test_live_consumer import add_event, hub, received_ids, subscribe, viewer_socket

pytestmark = pytest.mark.django_db(transaction=True)
__all__ = ["hub"]  # the fixture, used by name


@pytest.mark.usefixtures("hub")
async def test_a_filter_of_several_jobs_sends_those_jobs_events_only(redis_client: Redis) -> None:
    communicator = await viewer_socket()
    assert (await subscribe(communicator, job=["parent", "child-2"]))["type"] == "subscribed"
    add_event(redis_client, "child-1", "completed")
    child = add_event(redis_client, "child-2", "completed")
    add_event(redis_client, "other")
    parent = add_event(redis_client, "parent", "waiting", prev="waiting-children")
    assert await received_ids(communicator, 2) == [child, parent]
    await communicator.disconnect()


@pytest.mark.usefixtures("hub")
@pytest.mark.parametrize(
    "job",
    [[], ["a:b"], [7], [f"j{n}" for n in range(MAX_JOBS_PER_FILTER + 1)], {"id": "1"}],
    ids=["empty", "bad-id", "not-text", "too-many", "object"],
)
async def test_a_filter_that_is_not_a_short_list_of_job_ids_is_refused(
    redis_client: Redis, job: object
) -> None:
    communicator = await viewer_socket()
    assert await subscribe(communicator, job=job) == {
        "type": "error",
        "queue": "bull:emails",
        "message": "bad filter",
    }
    await communicator.disconnect()
