"""The job page's flow tree (and its next pages of children) as HTML built in Python
(a template per node was 68% of the flow page's time: docs/benchmarks.md, "Runs of
2026-12-01, evening"). Every value read from Redis is escaped once; the queue's
names and job URL prefix are escaped and reversed once per tree.
"""

from __future__ import annotations

from functools import cache
from typing import NamedTuple
from urllib.parse import quote

from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe
from django.utils.text import Truncator

from dashboard.core.queue_urls import queue_url
from dashboard.shared import presenters
from dashboard.shared.formatting import span, thousands
from queues.read import states
from queues.read.flows import ChildrenPage, FlowTree, TreeNode
from queues.read.refs import QueueRef

_DEPS_TITLE = "children: pending, completed, failed but ignored, failed the parent"


def _cut(text: str, limit: int) -> str:
    """Django's truncatechars (what the template used, so the words stay the
    same), without its per-character walk for the short ASCII text most
    names and ids are."""
    if len(text) <= limit and text.isascii():
        return text
    return str(Truncator(text).chars(limit))


class _Queue(NamedTuple):
    """What every node of one queue shows alike, escaped once."""

    address: str  # the live updates' name for it
    qualified: str
    job_url_prefix: str  # not escaped: a job's id is added first


def _queue_of(ref: QueueRef) -> _Queue:
    return _Queue(escape(ref.address), escape(ref.qualified), presenters.job_url_prefix(ref))


class _TreeWriter:
    """Writes nodes into one list of strings; remembers what each queue shows."""

    def __init__(self, focus: tuple[QueueRef, str] | None) -> None:
        self.focus = focus
        self.parts: list[str] = []
        self.queue_of = cache(_queue_of)

    def node(self, node: TreeNode) -> None:
        is_focus = (node.ref, node.id) == self.focus
        classes = f"flow-node{' on-path' if node.on_path else ''}{' focus' if is_focus else ''}"
        queue = self.queue_of(node.ref)
        if node.missing or node.not_a_job:
            gone = "gone" if node.missing else "not a job"
            badge = f'<span class="badge badge-muted">{gone}</span>'
            title = f"<span>#{escape(_cut(node.id, 60))}</span>"
        else:
            # A state is one of queues.read.states' names: our own word, like its label.
            state = node.state or "unknown"
            label = states.label(state)
            badge = f'<span class="badge state-{state}">{label}</span>'
            current = ' aria-current="page"' if is_focus else ""
            url = presenters.job_url(queue.job_url_prefix, node.id)
            title = (
                f'<a href="{escape(url)}"{current}>'
                f"{escape(_cut(node.name or '(no name)', 60))}"
                f' <span class="muted">#{escape(_cut(node.id, 40))}</span></a>'
            )
        add = self.parts.append
        add(
            f'<li class="{classes}" data-flow-node="{queue.address}"'
            f' data-flow-job="{escape(node.id)}">\n'
            f'  <div class="flow-line">\n    {badge}\n    {title}\n'
            f'    <span class="muted flow-queue">{queue.qualified}</span>\n'
        )
        took = node.duration_ms
        if took is not None:
            add(f'    <span class="muted" title="{thousands(took)} ms">took {span(took)}</span>\n')
        if node.relation:  # one of queues.read.flows' words for a kind of child
            add(f'    <span class="flow-relation">{node.relation}</span>\n')
        deps = node.dependencies
        if deps.total:
            ignored = f" · {thousands(deps.ignored)} failed, ignored" if deps.ignored else ""
            failed = (
                f' · <strong class="flow-failed">{thousands(deps.failed)}'
                " failed the parent</strong>"
                if deps.failed
                else ""
            )
            add(
                f'    <span class="flow-deps" title="{_DEPS_TITLE}">{thousands(deps.pending)}'
                f" pending · {thousands(deps.processed)} done{ignored}{failed}</span>\n"
            )
        add("  </div>\n")
        if node.failed_reason:
            add(f'  <p class="flow-reason">{escape(_cut(node.failed_reason, 200))}</p>\n')
        if node.problems:
            items = "".join(f"<li>{escape(problem)}</li>" for problem in node.problems)
            add(f'  <ul class="flow-problems">{items}</ul>\n')
        if node.children or node.next_page or node.children_not_read:
            add("  <ul>\n")
            for child in node.children:
                self.node(child)
            if node.next_page or node.children_not_read:
                self.more(node, node.next_page)
            add("  </ul>\n")
        add("</li>\n")

    def more(self, parent: TreeNode, token: str | None) -> None:
        """The button that loads the next page of ``parent``'s children
        (``token`` None: the first page, of a node whose children were not read)."""
        url = queue_url("dashboard:flow_children", parent.ref, parent.id)
        if token:
            url += "?page=" + quote(token, safe="/")
        words = "More children" if token else "Show children"
        self.parts.append(
            f'<li class="flow-more"><button type="button" class="btn" hx-get="{escape(url)}"'
            f' hx-target="closest li" hx-swap="outerHTML">{words}'
            f' <span class="muted">({thousands(parent.dependencies.total)} in all)</span>'
            "</button></li>\n"
        )

    def html(self) -> SafeString:
        return mark_safe("".join(self.parts))  # noqa: S308 - every value read is escaped above


def tree_html(tree: FlowTree) -> SafeString:
    """The tree's nodes from its root down, the page's own job marked as the focus."""
    writer = _TreeWriter(tree.focus)
    writer.node(tree.root)
    return writer.html()


def children_page_html(page: ChildrenPage) -> SafeString:
    """One more page of a parent's children, as the list items that replace
    its "More children" button (the parent's problems, then the next button)."""
    writer = _TreeWriter(None)
    for child in page.children:
        writer.node(child)
    problems = page.parent.problems
    if problems:
        said = "".join(f"{escape(problem)} " for problem in problems)
        writer.parts.append(f'<li class="flow-problems">{said}</li>\n')
    if page.next_page:
        writer.more(page.parent, page.next_page)
    return writer.html()
