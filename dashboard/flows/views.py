"""The flow views: a job's flow tree on its page, its next pages of children
(an htmx fragment), and both as JSON under the API. One reader feeds all of
them (queues.read.flows)."""

from __future__ import annotations

from typing import Any

from django.http import Http404, HttpRequest, HttpResponse, HttpResponseBadRequest
from redis import Redis

from dashboard.core.lookup import job_id_or_404
from dashboard.core.operations import READ_ERRORS, parameter
from dashboard.flows import html as flow_html
from dashboard.shared.web import api_view, page_view
from queues.keys import InvalidName
from queues.read import answers, flows
from queues.read.refs import QueueRef

# How many queues (and job ids in all) a job page follows live for its tree:
# the server bounds what a socket may ask (dashboard.live.consumer).
MAX_WATCHED_QUEUES = 20
MAX_WATCHED_JOBS = 100


def watched_jobs(tree: flows.FlowTree) -> dict[str, list[str]]:
    """The tree's shown nodes by queue, for the page's live updates: when one
    of them has an event the page refreshes. Bounded, the path first."""
    watched: dict[str, list[str]] = {}
    count = 0
    pending = [*tree.path, tree.root]
    while pending and count < MAX_WATCHED_JOBS:
        node = pending.pop(0)
        queue = node.ref.address  # the live socket's name for it
        if queue not in watched and len(watched) >= MAX_WATCHED_QUEUES:
            continue
        ids = watched.setdefault(queue, [])
        if node.id not in ids:
            ids.append(node.id)
            count += 1
        pending.extend(node.children)
    return watched


def flow_context(client: Redis, ref: QueueRef, job_id: str) -> dict[str, Any]:
    """What the job page's Flow section needs (``flow`` None: in no flow)."""
    try:
        tree = flows.read_flow(client, ref, job_id)
    except flows.JobNotInKeyspace:
        tree = None  # removed since the page read it: the page says so
    return {
        "flow": tree,
        "flow_tree_html": flow_html.tree_html(tree) if tree else "",
        "flow_watch": watched_jobs(tree) if tree else {},
        "flow_max_depth": flows.MAX_DEPTH,
    }


def _page_token(request: HttpRequest) -> str | None:
    token = request.GET.get("page", "").strip()
    if token:
        flows.parse_page_token(token)  # InvalidName for anything else
    return token or None


@page_view()
def flow_children(request: HttpRequest, client: Redis, ref: QueueRef, job_id: str) -> HttpResponse:
    """The next page of a node's children, as the list items the tree shows."""
    job_id = job_id_or_404(job_id)
    try:
        page = flows.children_page(client, ref, job_id, _page_token(request))
    except InvalidName as error:
        return HttpResponseBadRequest(str(error))
    return HttpResponse(flow_html.children_page_html(page))


@api_view(
    "getJobFlow",
    ["jobs"],
    ("The tree", answers.FlowTree),
    READ_ERRORS,
    description=f"At most {flows.MAX_DEPTH} levels and {flows.NODE_BUDGET} jobs; bad links "
    "(a parent gone, a loop, a key of the wrong type) are `problems`.",
)
def api_flow(request: HttpRequest, client: Redis, ref: QueueRef, job_id: str) -> answers.FlowTree:
    """The flow a job belongs to: root, parents and children across queues"""
    # {"flow": null} when it is in none.
    job_id = job_id_or_404(job_id)
    try:
        tree = flows.read_flow(client, ref, job_id)
    except flows.JobNotInKeyspace:
        raise Http404(f"No job {job_id} in {ref.qualified}") from None
    return answers.FlowTree(flow=tree.as_json() if tree else None)


@api_view(
    "listFlowChildren",
    ["jobs"],
    ("The page", answers.FlowChildrenPage),
    ("BadRequest", *READ_ERRORS),
    parameters=(
        parameter(
            "query",
            "page",
            "A node's `next_page` (left out: the first page)",
            {"type": "string", "pattern": "^[0-9]+\\.[0-9]+\\.[0-9]+$"},
        ),
    ),
)
def api_flow_children(
    request: HttpRequest, client: Redis, ref: QueueRef, job_id: str
) -> answers.FlowChildrenPage:
    """A page of a flow parent's children, failed ones first"""
    job_id = job_id_or_404(job_id)
    page = flows.children_page(client, ref, job_id, _page_token(request))
    if page.parent.missing:
        raise Http404(f"No job {job_id} in {ref.qualified}")
    return page.as_json()
