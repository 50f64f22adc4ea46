"""The flow reader (queues.read.flows) against a real Redis: the tree of a job
across queues, its counts, pages of children at O(page), bounded depth, and
every kind of bad link shown as a problem, never raised."""

from __future__ import annotations

import json

import pytest
from msgspec import to_builtins
from redis import Redis

from queues.flow import FlowJob, FlowProducer
from queues.keys import QueueKeys
from queues.read import flows
from queues.read.flows import JobNotInKeyspace, children_page, read_flow
from queues.read.refs import QueueRef
from tests.dashboard_seed import seed_job
from tests.round_trips import counted_sends

ORDERS, ITEMS = QueueRef("bull", "orders"), QueueRef("bull", "items")


def _child_of(
    client: Redis, keys: QueueKeys, job_id: str, parent: QueueKeys, parent_id: str
) -> None:
    seed_job(client, keys, job_id, fields={"parentKey": parent.job(parent_id)})
    client.sadd(parent.dependencies(parent_id), keys.job(job_id))


def test_a_childs_tree_shows_its_root_parents_and_children_across_queues(
    redis_client: Redis,
) -> None:
    pick = FlowJob("pick", "parts")
    flow = FlowJob(
        "ship",
        "orders",
        children=[FlowJob("pack", "items", children=[pick]), FlowJob("pack2", "items")],
    )
    root = FlowProducer(redis_client).add(flow)
    pack = root.children[0]
    pick_node = pack.children[0]
    tree = read_flow(redis_client, pick_node.ref, pick_node.id)
    assert tree is not None
    assert [(node.ref.name, node.id) for node in tree.path] == [
        ("orders", root.id),
        ("items", pack.id),
        ("parts", pick_node.id),
    ]
    assert tree.parent is not None
    assert tree.parent.id == pack.id
    shown = tree.root
    assert (shown.name, shown.state) == ("ship", "waiting-children")
    assert to_builtins(shown.dependencies.as_json()) == {
        "pending": 2,
        "processed": 0,
        "ignored": 0,
        "failed": 0,
    }
    assert {child.id for child in shown.children} == {pack.id, root.children[1].id}
    [pack_shown] = [child for child in shown.children if child.id == pack.id]
    assert pack_shown.state == "waiting-children"
    assert pack_shown.relation == "pending"
    assert [(c.ref.name, c.state) for c in pack_shown.children] == [("parts", "wait")]
    assert tree.problems == []
    assert not tree.deeper_not_shown
    # The JSON the API gives is the same tree.
    body = to_builtins(tree.as_json())
    assert body["root"]["children"][0]["queue"] in ("bull:items",)
    assert body["path"][-1] == {"queue": "bull:parts", "id": pick_node.id}


def test_counts_and_relations_follow_each_childs_fate(redis_client: Redis) -> None:
    orders = ORDERS.keys
    seed_job(redis_client, orders, "p", state="waiting-children")
    parent = orders.job("p")
    for child, relation_key in (
        ("done", "processed"),
        ("ignored", "failed"),
        ("bad", "unsuccessful"),
    ):
        seed_job(
            redis_client,
            orders,
            child,
            state="completed" if child == "done" else "failed",
            fields={"parentKey": parent},
        )
        if relation_key == "unsuccessful":
            redis_client.zadd(f"{parent}:unsuccessful", {orders.job(child): 1})
        else:
            redis_client.hset(f"{parent}:{relation_key}", orders.job(child), json.dumps("x"))
    _child_of(redis_client, orders, "waiting", orders, "p")
    tree = read_flow(redis_client, ORDERS, "p")
    assert tree is not None
    assert to_builtins(tree.root.dependencies.as_json()) == {
        "pending": 1,
        "processed": 1,
        "ignored": 1,
        "failed": 1,
    }
    # Failed children first: what the on-call engineer looks for.
    assert [(c.id, c.relation) for c in tree.root.children] == [
        ("bad", "failed the parent"),
        ("ignored", "failed, ignored"),
        ("waiting", "pending"),
        ("done", "completed"),
    ]


def test_siblings_read_failed_first_then_by_state_then_by_id_as_numbers(
    redis_client: Redis,
) -> None:
    """Redis hands a parent's children back in its own set order, which moves
    as the set grows; the tree and its next pages sort each page of siblings."""
    orders, items = ORDERS.keys, ITEMS.keys
    seed_job(redis_client, orders, "p", state="waiting-children")
    pending = [
        (orders, "10", "wait"),
        (orders, "2", "wait"),
        (orders, "9", "completed"),  # finished, its parent not told yet
        (orders, "11", "delayed"),
        (orders, "3", "active"),
        (orders, "1", "failed"),  # failed with no policy: still a dependency
        (items, "1", "wait"),
        (orders, "5", "prioritized"),
        (orders, "4", "waiting-children"),
    ]
    for keys, job_id, state in pending:
        seed_job(redis_client, keys, job_id, state=state, fields={"parentKey": orders.job("p")})
        redis_client.sadd(orders.dependencies("p"), keys.job(job_id))
    redis_client.sadd(orders.dependencies("p"), orders.job("gone"))
    expected = [
        ("orders", "1", "failed"),
        ("orders", "gone", None),
        ("orders", "3", "active"),
        ("items", "1", "wait"),
        ("orders", "2", "wait"),
        ("orders", "10", "wait"),
        ("orders", "5", "prioritized"),
        ("orders", "11", "delayed"),
        ("orders", "4", "waiting-children"),
        ("orders", "9", "completed"),
    ]
    tree = read_flow(redis_client, ORDERS, "p")
    assert tree is not None
    assert [(c.ref.name, c.id, c.state) for c in tree.root.children] == expected
    page = children_page(redis_client, ORDERS, "p", None)
    assert [(c.ref.name, c.id, c.state) for c in page.children] == expected


def test_a_small_parent_s_pages_follow_its_integer_ids_by_value(redis_client: Redis) -> None:
    orders = ORDERS.keys
    seed_job(redis_client, orders, "p", state="waiting-children")
    for n in range(120):
        seed_job(redis_client, orders, str(n), state="completed")
        redis_client.hset(orders.processed("p"), orders.job(str(n)), "1")
    first = children_page(redis_client, ORDERS, "p", None)
    second = children_page(redis_client, ORDERS, "p", first.next_page)
    assert [child.id for child in first.children] == [str(n) for n in range(50)]
    assert [child.id for child in second.children] == [str(n) for n in range(50, 100)]


def test_integer_ids_sort_by_value_of_any_length_and_other_ids_as_text() -> None:
    ids = ["6d3e", "10", "42a1", "2", "002", "job-2", "9" * 5000, "8" * 5000, "0c63", "²"]
    assert sorted(ids, key=flows.id_order) == [
        "2",
        "002",
        "10",
        "8" * 5000,
        "9" * 5000,
        "0c63",
        "42a1",
        "6d3e",
        "job-2",
        "²",
    ]


def test_a_job_in_no_flow_has_no_tree_and_a_gone_job_says_so(redis_client: Redis) -> None:
    seed_job(redis_client, ORDERS.keys, "alone")
    assert read_flow(redis_client, ORDERS, "alone") is None
    with pytest.raises(JobNotInKeyspace):
        read_flow(redis_client, ORDERS, "gone")


def test_children_page_by_page_each_page_costs_one_page(redis_client: Redis) -> None:
    orders = ORDERS.keys
    seed_job(redis_client, orders, "big", state="waiting-children")
    total = 20_000
    pipe = redis_client.pipeline(transaction=False)
    for n in range(total):
        pipe.sadd(orders.dependencies("big"), orders.job(f"c{n}"))
    for n in range(120):
        pipe.hset(orders.job(f"c{n}"), mapping={"name": "child", "timestamp": 1})
    pipe.execute()
    redis_client.config_resetstat()
    tree = read_flow(redis_client, ORDERS, "big")
    assert tree is not None
    assert len(tree.root.children) <= flows.PAGE_SIZE
    assert tree.root.next_page is not None
    stats = redis_client.info("commandstats")
    looked_at = stats.get("cmdstat_hmget", {}).get("calls", 0)
    assert looked_at <= flows.PAGE_SIZE + 2, stats
    assert "cmdstat_smembers" not in stats
    # Page after page, nothing repeated, until every child was seen once.
    seen = {child.id for child in tree.root.children}
    token = tree.root.next_page
    pages = 1
    while token is not None and pages < 10:
        page = children_page(redis_client, ORDERS, "big", token)
        assert len(page.children) <= flows.PAGE_SIZE + 128  # one scan batch at most
        ids = {child.id for child in page.children}
        assert not ids & seen
        seen |= ids
        token = page.next_page
        pages += 1
    assert len(seen) >= 9 * flows.PAGE_SIZE // 2


def test_a_small_parent_pages_exactly(redis_client: Redis) -> None:
    orders = ORDERS.keys
    seed_job(redis_client, orders, "p", state="waiting-children")
    for n in range(120):
        redis_client.hset(orders.processed("p"), orders.job(f"c{n}"), "1")
    first = children_page(redis_client, ORDERS, "p", None)
    second = children_page(redis_client, ORDERS, "p", first.next_page)
    third = children_page(redis_client, ORDERS, "p", second.next_page)
    assert [len(page.children) for page in (first, second, third)] == [50, 50, 20]
    assert third.next_page is None
    ids = [child.id for page in (first, second, third) for child in page.children]
    assert sorted(ids) == sorted(f"c{n}" for n in range(120))
    assert all(child.missing for child in first.children)  # listed, hashes gone
    with pytest.raises(flows.InvalidName):
        children_page(redis_client, ORDERS, "p", "9.0.0")


def test_depth_is_bounded_both_ways(redis_client: Redis) -> None:
    orders = ORDERS.keys
    seed_job(redis_client, orders, "j0", state="waiting-children")
    for n in range(1, 15):
        _child_of(redis_client, orders, f"j{n}", orders, f"j{n - 1}")
    bottom = read_flow(redis_client, ORDERS, "j14")
    assert bottom is not None
    assert len(bottom.path) == flows.MAX_DEPTH + 1
    assert bottom.root.id == "j4"
    assert any("levels of parents" in problem for problem in bottom.problems)
    top = read_flow(redis_client, ORDERS, "j0")
    assert top is not None
    assert top.deeper_not_shown
    node, depth = top.root, 0
    while node.children:
        node, depth = node.children[0], depth + 1
    assert depth == flows.MAX_DEPTH
    assert node.children_not_read


def test_a_missing_parent_is_a_problem_and_the_tree_starts_below_it(redis_client: Redis) -> None:
    items = ITEMS.keys
    seed_job(redis_client, items, "orphan", fields={"parentKey": "bull:orders:gone"})
    tree = read_flow(redis_client, ITEMS, "orphan")
    assert tree is not None
    assert tree.root.id == "orphan"
    assert tree.problems == [
        "the parent bull:orders #gone of #orphan is gone: shown from the highest job that exists"
    ]


def test_a_parent_key_naming_no_job_is_a_problem(redis_client: Redis) -> None:
    items = ITEMS.keys
    redis_client.set("bull:orders:text", "not a hash")
    redis_client.hset("bull:orders:meta", "paused", "1")
    seed_job(redis_client, items, "a", fields={"parentKey": "bull:orders:text"})
    seed_job(redis_client, items, "b", fields={"parentKey": "bull:orders:meta"})
    seed_job(redis_client, items, "c", fields={"parentKey": "nonsense"})
    seed_job(redis_client, items, "d", fields={"parent": "{not json"})
    for job_id, words in (("a", "is not a job"), ("b", "is not a job"), ("c", "not a job key")):
        tree = read_flow(redis_client, ITEMS, job_id)
        assert tree is not None
        assert words in tree.problems[0]
    assert read_flow(redis_client, ITEMS, "d") is None  # an unreadable parent field names none


def test_a_cycle_is_shown_once_and_named(redis_client: Redis) -> None:
    orders = ORDERS.keys
    _child_of(redis_client, orders, "a", orders, "b")
    _child_of(redis_client, orders, "b", orders, "a")
    tree = read_flow(redis_client, ORDERS, "a")
    assert tree is not None
    assert [node.id for node in tree.path] == ["b", "a"]
    assert "loop back" in tree.problems[0]
    [a] = tree.root.children
    assert a.id == "a"
    assert a.children == []
    assert "again (a loop)" in a.problems[0]


def test_corrupt_dependency_keys_are_problems_on_their_node(redis_client: Redis) -> None:
    orders = ORDERS.keys
    seed_job(redis_client, orders, "p", state="waiting-children")
    redis_client.set(orders.dependencies("p"), "garbage")
    redis_client.hset(orders.processed("p"), mapping={orders.job("c"): "1", "not a key": "2"})
    seed_job(redis_client, orders, "c", state="completed", fields={"parentKey": orders.job("p")})
    tree = read_flow(redis_client, ORDERS, "c")
    assert tree is not None
    problems = tree.root.problems
    assert "its dependencies key is not a set" in problems
    assert "lists 'not a key', which is not a job key" in problems
    assert [child.id for child in tree.root.children] == ["c"]
    body = to_builtins(tree.as_json())
    assert body["root"]["problems"] == problems


def test_a_level_of_children_costs_three_commands_a_node_in_one_round_trip(
    redis_client: Redis, monkeypatch: pytest.MonkeyPatch
) -> None:
    # redis-py packs and parses every command in Python: at twelve commands a
    # node they were most of a 50-child tree's read. Now a leaf costs HMGET,
    # LPOS and one EXISTS over its keys of children; each state set one
    # ZMSCORE per queue of the level.
    orders, items = ORDERS.keys, ITEMS.keys
    seed_job(redis_client, orders, "p", state="waiting-children")
    for n in range(flows.PAGE_SIZE):
        seed_job(redis_client, items, f"c{n}", state="completed" if n % 2 else "wait")
        redis_client.sadd(orders.dependencies("p"), items.job(f"c{n}"))
    redis_client.lpush(items.active, "c1")  # in two states: said, as before
    redis_client.config_resetstat()
    with counted_sends(monkeypatch) as sends:
        tree = read_flow(redis_client, ORDERS, "p")
    stats = redis_client.info("commandstats")
    assert tree is not None
    children = tree.root.children
    assert len(children) == flows.PAGE_SIZE
    by_id = {child.id: child for child in children}
    assert (by_id["c2"].state, by_id["c2"].problems) == ("wait", [])
    assert by_id["c3"].state == "completed"
    assert by_id["c1"].state == "completed"
    assert by_id["c1"].problems == ["it is in more than one state (completed and active)"]
    # The root (read alone, its counts at once), its first page of children,
    # the children: three round trips.
    assert len(sends) == 3
    calls = sum(
        entry["calls"]
        for name, entry in stats.items()
        if not name.startswith(("cmdstat_config", "cmdstat_info"))
    )
    assert calls <= 3 * flows.PAGE_SIZE + 30, stats


def test_a_hash_without_job_fields_is_told_from_a_gone_job_and_other_types(
    redis_client: Redis,
) -> None:
    orders = ORDERS.keys
    seed_job(redis_client, orders, "p", state="waiting-children")
    redis_client.hset(orders.job("fieldless"), "paused", "1")
    redis_client.rpush(orders.job("listed"), "x")
    for child in ("fieldless", "listed", "gone"):
        redis_client.sadd(orders.dependencies("p"), orders.job(child))
    tree = read_flow(redis_client, ORDERS, "p")
    assert tree is not None
    said = {
        child.id: (child.missing, child.not_a_job, child.problems) for child in tree.root.children
    }
    assert said == {
        "fieldless": (
            False,
            True,
            ["its hash has no job fields (neither name nor timestamp)"],
        ),
        "listed": (False, True, ["its key is a list, not a job"]),
        "gone": (True, False, ["its hash is gone"]),
    }
