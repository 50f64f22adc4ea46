"""The job page's flow tree in a real Chromium against daphne: from a child one
click to its parent and to its root, more children on demand, the tree
following a node that finishes in another process, and how it looks (light,
dark, phone: screenshots in build/screenshots/flows/)."""

from __future__ import annotations

from playwright.sync_api import Browser, Page, expect
from redis import Redis

from queues.flow import FlowJob, FlowNode, FlowProducer
from tests.e2e.conftest import SHOTS_ROOT, Processes, wait_live
from tests.e2e.server import DashboardServer

SHOTS = SHOTS_ROOT / "flows"
ORDERS, ITEMS, PARTS = "e2e-flow-orders", "e2e-flow-items", "e2e-flow-parts"


def job_path(node: FlowNode) -> str:
    return f"/queues/{node.ref.prefix}/{node.ref.name}/job/{node.id}"


def three_levels(client: Redis, extra_items: int = 0) -> FlowNode:
    """ship (orders) <- pack, pack-2 .. (items) <- pick (parts), under the first pack."""
    packs = [FlowJob("pack", ITEMS, {"box": 1}, children=[FlowJob("pick", PARTS, {"shelf": "B4"})])]
    packs += [FlowJob(f"pack-{n}", ITEMS, {"box": n}) for n in range(2, 2 + extra_items)]
    return FlowProducer(client).add(FlowJob("ship", ORDERS, {"order": 77}, children=packs))


def test_from_a_child_one_click_leads_to_its_parent_and_one_to_its_root(
    page: Page, processes: Processes, redis_client: Redis
) -> None:
    root = three_levels(redis_client)
    pack = root.children[0]
    pick = pack.children[0]
    page.goto(job_path(pick))
    flow = page.locator("#job-flow")
    expect(flow.get_by_role("heading", name="Flow")).to_be_visible()
    expect(flow.locator(".flow-node.focus > .flow-line")).to_contain_text("pick")
    expect(flow.locator(f'[data-flow-job="{root.id}"] > .flow-line')).to_contain_text(
        "waiting children"
    )
    # One click to the root from the child.
    flow.locator("[data-flow-root]").click()
    page.wait_for_url(f"**{job_path(root)}")
    expect(page.locator("#job-flow")).to_contain_text("This job is the root of its flow.")
    # Back on the child: one click to its parent, and from there to the root.
    page.goto(job_path(pick))
    page.locator("#job-flow [data-flow-parent]").click()
    page.wait_for_url(f"**{job_path(pack)}")
    expect(page.locator("#job-flow .flow-node.focus > .flow-line")).to_contain_text("pack")
    page.locator("#job-flow [data-flow-root]").click()
    page.wait_for_url(f"**{job_path(root)}")
    # Any node links to its own page.
    page.locator(f'#job-flow [data-flow-job="{pick.id}"] > .flow-line a').click()
    page.wait_for_url(f"**{job_path(pick)}")


def test_more_children_load_on_demand(
    page: Page, processes: Processes, redis_client: Redis
) -> None:
    root = three_levels(redis_client, extra_items=59)
    page.goto(job_path(root))
    nodes = page.locator(f'#job-flow [data-flow-job="{root.id}"] > ul > li.flow-node')
    expect(nodes).to_have_count(50)
    # Once subscribed the page refetches itself, and a refresh shows the first
    # page of children again (pages loaded by hand go: a known limit, in
    # docs/pages.md): let that happen before loading more.
    wait_live(page)
    page.wait_for_load_state("networkidle")
    page.get_by_role("button", name="More children").click()
    expect(nodes).to_have_count(60)
    expect(page.get_by_role("button", name="More children")).to_have_count(0)


def test_the_tree_follows_a_node_that_finishes_in_another_process(
    page: Page, processes: Processes, redis_client: Redis
) -> None:
    root = three_levels(redis_client)
    pick = root.children[0].children[0]
    page.goto(job_path(root))
    wait_live(page)
    pick_line = page.locator(f'#job-flow [data-flow-job="{pick.id}"] > .flow-line')
    expect(pick_line).to_contain_text("waiting")
    processes.our_worker(PARTS)
    # The worker completes the leaf in the parts queue: this page, of a job in
    # the orders queue, shows it without a reload, and its parent moving on.
    expect(pick_line).to_contain_text("completed", timeout=15_000)
    pack_line = page.locator(f'#job-flow [data-flow-job="{root.children[0].id}"] > .flow-line')
    expect(pack_line).to_contain_text("0 pending · 1 done", timeout=15_000)


def test_how_the_flow_tree_looks(
    browser: Browser, processes: Processes, redis_client: Redis, dashboard_server: DashboardServer,
    auth_state: str,
) -> None:  # fmt: skip
    root = three_levels(redis_client, extra_items=3)
    pick = root.children[0].children[0]
    SHOTS.mkdir(parents=True, exist_ok=True)
    looks = {
        "light": {"viewport": {"width": 1280, "height": 860}},
        "dark": {"viewport": {"width": 1280, "height": 860}, "color_scheme": "dark"},
        "phone": {"viewport": {"width": 390, "height": 844}, "is_mobile": True},
    }
    for look, options in looks.items():
        context = browser.new_context(
            base_url=dashboard_server.url, storage_state=auth_state, **options
        )
        try:
            page = context.new_page()
            page.goto(job_path(pick))
            flow = page.locator("#job-flow")
            expect(flow).to_be_visible()
            flow.scroll_into_view_if_needed()
            # Nothing of the tree sticks out of the page, phone included.
            overflow = page.evaluate(
                "document.documentElement.scrollWidth - document.documentElement.clientWidth"
            )
            assert overflow <= 0, f"{look}: the page scrolls sideways by {overflow}px"
            flow.screenshot(path=SHOTS / f"flow-{look}.png")
            page.screenshot(path=SHOTS / f"job-page-{look}.png", full_page=True)
        finally:
            context.close()


# The long blocks of a job page.
BELOW = ('[data-block="data"]', '[data-block="options"]', '[data-block="logs"]')


def test_the_flow_comes_after_the_jobs_own_story_and_before_its_long_blocks(
    page: Page, redis_client: Redis
) -> None:
    """It sat at the bottom of a long job page, below the data, the options and
    the logs: the parent a job holds up and the children it waits for say why
    it is where it is, so they come right after its failure and timeline."""
    root = three_levels(redis_client)
    page.set_viewport_size({"width": 390, "height": 844})
    page.goto(job_path(root.children[0]))

    # Read in one go: a live refresh may swap a block between two separate reads.
    tops = page.evaluate(
        """(selectors) => selectors.map((s) => {
          const el = document.querySelector(s);
          return el ? el.getBoundingClientRect().top : null;
        })""",
        ["#job-flow", '[data-block="timeline"]', *BELOW],
    )
    assert None not in tops, tops
    flow, timeline, *below = tops
    assert timeline < flow
    for selector, top in zip(BELOW, below, strict=True):
        assert flow < top, f"the flow is below {selector}"
