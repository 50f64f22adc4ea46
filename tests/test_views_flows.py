"""The job page's Flow section and its pages of children (dashboard.flows.views):
the tree with links, the way up to parent and root, the live watch list,
and bad links shown in words (never a 500)."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

import pytest
from django.urls import reverse
from redis import Redis

from queues.flow import FlowJob, FlowProducer
from queues.read.refs import QueueRef
from tests.dashboard_seed import seed_job
from tests.template_work import counted_lookups

ORDERS, ITEMS = QueueRef("bull", "orders"), QueueRef("bull", "items")
XSS = "<script>alert(1)</script>"
XSS_ESCAPED = "&lt;script&gt;alert(1)&lt;/script&gt;"


@pytest.fixture
def viewer(dashboard_redis: Redis, client_as: Callable[[str | None], Any]) -> Any:
    return client_as("viewer")


def _page(viewer: Any, ref: QueueRef, job_id: str) -> str:
    response = viewer.get(reverse("dashboard:job", args=[ref.prefix, ref.name, job_id]))
    assert response.status_code == 200, response.content[:500]
    return str(response.content.decode())


def _flow_section(html: str) -> str:
    start = html.index('id="job-flow"')
    return html[start : html.index("</section>", start)]


def test_a_childs_page_shows_the_tree_and_leads_to_its_parent_and_root(
    dashboard_redis: Redis, viewer: Any
) -> None:
    pick = FlowJob("pick", "parts")
    root = FlowProducer(dashboard_redis).add(
        FlowJob("ship", "orders", children=[FlowJob("pack", "items", children=[pick])])
    )
    pack = root.children[0]
    pick_node = pack.children[0]
    section = _flow_section(_page(viewer, pick_node.ref, pick_node.id))
    parent_url = reverse("dashboard:job", args=["bull", "items", pack.id])
    root_url = reverse("dashboard:job", args=["bull", "orders", root.id])
    assert re.search(rf'Parent: <a href="{parent_url}" data-flow-parent>pack #', section)
    assert re.search(rf'Root: <a href="{root_url}" data-flow-root>ship #', section)
    # Every node links to its page, with its state and queue; this job is marked.
    for node, state in (
        (root, "waiting children"),
        (pack, "waiting children"),
        (pick_node, "waiting"),
    ):
        url = reverse("dashboard:job", args=[node.ref.prefix, node.ref.name, node.id])
        line = section[section.index(f'data-flow-job="{node.id}"') :]
        line = line[: line.index("</div>")]
        assert f">{state}</span>" in line
        assert f'href="{url}"' in line
        assert node.ref.qualified in line
    assert 'class="flow-node on-path focus"' in section
    assert 'aria-current="page"' in section
    assert "1 pending · 0 done" in section
    # The live updates follow every job shown, by queue.
    watch = json.loads(
        re.search(r'id="flow-watch" type="application/json">(.*?)</script>', section).group(1)
    )  # type: ignore[union-attr]
    assert watch == {
        "bull:orders": [root.id],
        "bull:items": [pack.id],
        "bull:parts": [pick_node.id],
    }


def test_the_root_says_it_is_the_root_and_a_job_in_no_flow_has_no_section(
    dashboard_redis: Redis, viewer: Any
) -> None:
    root = FlowProducer(dashboard_redis).add(
        FlowJob("ship", "orders", children=[FlowJob("a", "items")])
    )
    assert "This job is the root of its flow." in _flow_section(_page(viewer, ORDERS, root.id))
    seed_job(dashboard_redis, ORDERS.keys, "alone")
    assert 'id="job-flow"' not in _page(viewer, ORDERS, "alone")


def test_more_children_load_page_by_page(dashboard_redis: Redis, viewer: Any) -> None:
    keys = ORDERS.keys
    seed_job(dashboard_redis, keys, "big", state="waiting-children")
    for n in range(120):
        seed_job(dashboard_redis, keys, f"c{n}", fields={"parentKey": keys.job("big")})
        dashboard_redis.hset(keys.processed("big"), keys.job(f"c{n}"), "1")
    section = _flow_section(_page(viewer, ORDERS, "big"))
    assert section.count('class="flow-node"') == 50
    more = re.search(r'hx-get="([^"]+)"', section)
    assert more is not None
    assert "More children" in section
    fragment = viewer.get(more.group(1).replace("&amp;", "&"))
    assert fragment.status_code == 200
    assert fragment.content.decode().count('class="flow-node"') == 50
    bad = viewer.get(reverse("dashboard:flow_children", args=["bull", "orders", "big"]) + "?page=x")
    assert bad.status_code == 400


@pytest.mark.parametrize(
    ("setup", "words"),
    [
        ("missing", "is gone: shown from the highest job that exists"),
        ("not-a-job", "is not a job"),
        ("cycle", "the parents loop back to bull:orders"),
        ("corrupt", "its dependencies key is not a set"),
    ],
)
def test_bad_links_are_said_in_words_on_the_page_and_in_the_api(
    dashboard_redis: Redis, viewer: Any, setup: str, words: str
) -> None:
    keys = ORDERS.keys
    if setup == "missing":
        seed_job(dashboard_redis, keys, "j", fields={"parentKey": keys.job("gone")})
    elif setup == "not-a-job":
        dashboard_redis.set(keys.job("text"), "x")
        seed_job(dashboard_redis, keys, "j", fields={"parentKey": keys.job("text")})
    elif setup == "cycle":
        seed_job(dashboard_redis, keys, "j", fields={"parentKey": keys.job("k")})
        seed_job(dashboard_redis, keys, "k", fields={"parentKey": keys.job("j")})
        dashboard_redis.sadd(keys.dependencies("k"), keys.job("j"))
        dashboard_redis.sadd(keys.dependencies("j"), keys.job("k"))
    else:
        seed_job(dashboard_redis, keys, "j", state="waiting-children")
        dashboard_redis.set(keys.dependencies("j"), "garbage")
    assert words in _flow_section(_page(viewer, ORDERS, "j"))
    answer = viewer.get(reverse("dashboard:api:flow", args=["bull", "orders", "j"]))
    assert answer.status_code == 200
    assert words in json.dumps(answer.json())


def _parent_with_children(client: Redis, parent_id: str, children: int) -> None:
    """``parent_id`` in orders waiting for ``children`` jobs of items."""
    seed_job(client, ORDERS.keys, parent_id, state="waiting-children", name="fan-out")
    for n in range(children):
        child = f"{parent_id}-{n}"
        seed_job(client, ITEMS.keys, child, fields={"parentKey": ORDERS.keys.job(parent_id)})
        client.sadd(ORDERS.keys.dependencies(parent_id), ITEMS.keys.job(child))


def test_the_tree_costs_the_template_engine_the_same_at_3_nodes_and_at_50(
    dashboard_redis: Redis, viewer: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A template included once per node was most of a 50-child page's time
    # (docs/benchmarks.md): the nodes are built in Python (dashboard.flows.html).
    _parent_with_children(dashboard_redis, "small", 3)
    _parent_with_children(dashboard_redis, "large", 49)
    lookups = {}
    for parent_id in ("small", "large"):
        _page(viewer, ORDERS, parent_id)  # warm: the first render loads templates
        with counted_lookups(monkeypatch) as count:
            section = _flow_section(_page(viewer, ORDERS, parent_id))
        lookups[parent_id] = count[0]
        assert section.count('class="flow-node"') == (3 if parent_id == "small" else 49)
    assert lookups["large"] == lookups["small"]


def test_markup_in_a_flow_is_escaped_in_the_tree_and_in_its_next_pages(
    dashboard_redis: Redis, viewer: Any
) -> None:
    odd = QueueRef("bull", "<i>q</i>")
    seed_job(dashboard_redis, ORDERS.keys, "p", state="waiting-children", name=XSS)
    for n in range(55):
        child = f"<b>\"c{n}'"
        seed_job(
            dashboard_redis,
            odd.keys,
            child,
            state="failed",
            name=XSS,
            fields={"parentKey": ORDERS.keys.job("p"), "failedReason": XSS},
        )
        dashboard_redis.hset(ORDERS.keys.processed("p"), odd.keys.job(child), "1")
    dashboard_redis.hset(ORDERS.keys.processed("p"), f"bull:orders:{XSS}x", "1")
    section = _flow_section(_page(viewer, ORDERS, "p"))
    more = re.search(r'hx-get="([^"]+)"', section)
    assert more is not None
    fragment = viewer.get(more.group(1).replace("&amp;", "&")).content.decode()
    for html in (section, fragment):
        assert "<script>" not in html
        assert "<b>" not in html
        assert "<i>" not in html
    assert section.count(XSS_ESCAPED) >= 50 * 2  # each child's name and reason
    assert "&lt;i&gt;q&lt;/i&gt;" in section
    assert 'data-flow-job="&lt;b&gt;&quot;c' in section
    # A child key naming no job is a problem on the parent, said on the page where it falls.
    assert "&lt;script&gt;alert(1)&lt;/script&gt;x" in section + fragment
