"""The job states are defined once (queues/read/states.py) and everything
else derives from that table: every state is a tab, counted, pageable and
found by the state lookup; templates and the page script get the states from
the server; no other module writes its own list of them."""

from __future__ import annotations

import ast
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, get_args

import pytest
from redis import Redis

from dashboard.acting import actions
from queues.commands.admin import CleanableState, FinishedState
from queues.queue import Queue
from queues.read.counts import queue_summaries
from queues.read.job import job_detail
from queues.read.lists import job_page
from queues.read.refs import QueueRef
from queues.read.states import (
    BY_ATTENTION,
    COUNTED_KEYS,
    EVENT_TONES,
    KEY_STATE,
    KEY_STATES,
    LABELS,
    STATES,
    TAB,
    TAB_OF_KEY,
    TABS,
)
from tests.dashboard_seed import seed_job

ROOT = Path(__file__).resolve().parent.parent
REF = QueueRef("bull", "emails")
KEYS = REF.keys
QUEUE_URL = "/queues/bull/emails/"
STATE_NAMES = frozenset(KEY_STATE) | frozenset(TAB)


def _one_job_in_every_key_state(client: Redis) -> None:
    for state in KEY_STATES:
        seed_job(client, KEYS, f"in-{state.name}", state=state.name)


def test_every_key_state_shows_under_exactly_one_tab() -> None:
    shown = [key.name for tab in TABS for key in tab.keys]
    assert sorted(shown) == sorted(KEY_STATE)
    assert len(shown) == len(set(shown))
    assert set(TAB_OF_KEY) == set(KEY_STATE)
    assert tuple(tab.name for tab in TABS) == STATES
    # A tab's keys are of one structure: a page reads them with one kind of range.
    assert all(len({key.structure for key in tab.keys}) == 1 for tab in TABS)


def test_the_attention_order_orders_every_tab_once_failed_first_completed_last() -> None:
    assert sorted(BY_ATTENTION) == sorted(STATES)
    assert len(BY_ATTENTION) == len(set(BY_ATTENTION))
    assert (BY_ATTENTION[0], BY_ATTENTION[-1]) == ("failed", "completed")


def test_every_state_is_counted_pageable_and_found(redis_client: Redis) -> None:
    _one_job_in_every_key_state(redis_client)
    (summary,) = queue_summaries(redis_client, [REF])
    expected = {tab.name: len(tab.keys) for tab in TABS}
    assert summary.counts == expected
    for tab in TABS:
        page = job_page(redis_client, REF, tab.name)
        assert page.total == len(tab.keys)
        assert sorted(row.job.id for row in page.rows) == sorted(f"in-{k.name}" for k in tab.keys)
    for state in KEY_STATES:
        detail = job_detail(redis_client, REF, f"in-{state.name}")
        assert detail is not None
        assert detail.state == TAB_OF_KEY[state.name]


def test_the_queue_getters_know_every_key_state(redis_client: Redis) -> None:
    _one_job_in_every_key_state(redis_client)
    queue = Queue("emails", redis_client)
    counts = queue.get_counts()
    assert list(counts) == list(KEY_STATE)
    for state in KEY_STATES:
        assert queue.get_state(f"in-{state.name}") == state.name
        expected = [
            f"in-{key.name}" for key in (TAB[state.name].keys if state.name in TAB else (state,))
        ]
        assert sorted(job.id for job in queue.get_jobs(state.name)) == sorted(expected)
        assert counts[state.name] == len(expected)


def test_the_counts_script_reads_the_keys_in_the_definitions_order() -> None:
    script = (ROOT / "priv/scripts/queueCounts-0.lua").read_text()
    read = re.findall(r'size\("(LLEN|ZCARD)", base \.\. "([a-z-]+)"\)', script)
    expected = [("LLEN" if key.is_list else "ZCARD", key.name) for key in COUNTED_KEYS]
    assert read == expected


def test_every_tab_is_a_tab_of_the_queue_page_in_order(
    dashboard_redis: Redis, client_as: Callable[[str | None], Any]
) -> None:
    seed_job(dashboard_redis, KEYS, "1", state="wait")
    viewer = client_as("viewer")
    page = viewer.get(QUEUE_URL).content.decode()
    tabs = page[page.index('id="queue-tabs"') : page.index("</nav>", page.index('id="queue-tabs"'))]
    assert re.findall(r'data-count-state="([a-z-]+)"', tabs) == list(STATES)
    for tab in TABS:
        response = viewer.get(f"{QUEUE_URL}?state={tab.name}")
        assert response.status_code == 200
        html = response.content.decode()
        assert f'data-state="{tab.name}"' in html
    overview = viewer.get("/").content.decode()
    head = overview[overview.index("<thead>") : overview.index("</thead>")]
    assert re.findall(r'class="dot state-([a-z-]+)"', head) == list(STATES)
    assert [LABELS[name] in head for name in STATES] == [True] * len(STATES)


def test_every_tone_has_its_colour_in_light_and_dark() -> None:
    css = (ROOT / "static/dashboard/dashboard.css").read_text()
    dark = css[css.index("prefers-color-scheme: dark") :]
    for tone in {*(tab.tone for tab in TABS), *EVENT_TONES.values(), "paused"}:
        if tone == "other":
            continue
        assert f".state-{tone} " in css, tone
        assert f"--st-{tone}:" in css[: css.index("prefers-color-scheme: dark")], tone
        assert f"--st-{tone}:" in dark, tone


def test_what_derives_from_the_states_agrees_with_them() -> None:
    assert set(actions.ACTIONS_BY_STATE) == set(STATES)
    assert set(get_args(CleanableState)) <= set(KEY_STATE)
    assert set(get_args(FinishedState)) <= set(TAB)
    assert set(EVENT_TONES.values()) - {"other"} <= set(LABELS)


# ---------------------------------------------------------------- nothing else lists them

# Where a state name may still be written: the definition itself, and the
# typing Literal of the clean script's ARGV (mypy needs the words; checked
# above against the definition).
_DEFINITION = ROOT / "queues/read/states.py"
_TYPING_ONLY = {ROOT / "queues/commands/admin.py"}


def _python_files() -> Iterator[Path]:
    for folder in ("queues", "dashboard"):
        yield from sorted((ROOT / folder).rglob("*.py"))


def _state_lists(path: Path) -> list[int]:
    """Lines of literal tuples, lists, sets or dict keys made of three or more
    state names and nothing else: a list of states written out again."""
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Tuple | ast.List | ast.Set):
            items = node.elts
        elif isinstance(node, ast.Dict):
            items = [key for key in node.keys if key is not None]
        else:
            continue
        names = [i.value for i in items if isinstance(i, ast.Constant) and isinstance(i.value, str)]
        if len(names) >= 3 and len(names) == len(items) and set(names) <= STATE_NAMES:
            found.append(node.lineno)
    return found


def test_no_python_module_writes_its_own_list_of_states() -> None:
    offenders = {
        str(path.relative_to(ROOT)): lines
        for path in _python_files()
        if path != _DEFINITION and path not in _TYPING_ONLY
        for lines in [_state_lists(path)]
        if lines
    }
    assert offenders == {}


def test_the_list_check_catches_a_list_of_states(tmp_path: Path) -> None:
    written = tmp_path / "copy.py"
    written.write_text(
        'TABS = ("wait", "active", "failed")\nBY = {"wait": 1, "delayed": 2, "active": 3}\n'
    )
    assert _state_lists(written) == [1, 2]


# A state name in a template or the page script: as a quoted word, in a
# class or data attribute, or compared with a variable.
_NAMES = "|".join(map(re.escape, sorted(STATE_NAMES, key=len, reverse=True)))
_STATE_WORD = re.compile(rf"""["']({_NAMES})["']|state-({_NAMES})(?![\w-])""")
# The queue's paused flag (not a job's state) is a badge in the paused colour.
_ALLOWED = {'<span class="badge state-paused"'}


def _hard_coded(text: str) -> list[str]:
    for allowed in _ALLOWED:
        text = text.replace(allowed, "")
    # The overview sorts by its failed column: "?sort=failed" names a column, not a state.
    text = re.sub(r"""sort(=| [!=]= )["']?failed["']?""", "", text)
    return [m.group(0) for m in _STATE_WORD.finditer(text)]


def _page_sources() -> Iterator[Path]:
    yield from sorted((ROOT / "templates").rglob("*.html"))
    yield from sorted((ROOT / "static").rglob("*.js"))


def test_templates_and_the_page_script_get_the_states_from_the_server() -> None:
    offenders = {
        str(path.relative_to(ROOT)): words
        for path in _page_sources()
        for words in [_hard_coded(path.read_text())]
        if words
    }
    assert offenders == {}


@pytest.mark.parametrize(
    "text",
    [
        '{% if tab == "delayed" %}Due{% endif %}',
        '<span class="dot state-failed"></span>',
        "if (state === 'waiting-children') {}",
    ],
)
def test_the_template_check_catches_a_state_written_out(text: str) -> None:
    assert _hard_coded(text)


def test_the_counts_decoder_adds_up_each_tabs_keys_in_the_definitions_order() -> None:
    from queues.read.counts import _counts_from

    lengths = [10**n for n in range(len(COUNTED_KEYS))]
    by_key = dict(zip((key.name for key in COUNTED_KEYS), lengths, strict=True))
    expected = {tab.name: sum(by_key[key.name] for key in tab.keys) for tab in TABS}
    assert _counts_from([*lengths, 1]) == (expected, True)
    # A key of the wrong type reads as None from a cluster pipeline: as empty.
    assert _counts_from([None] * len(COUNTED_KEYS) + [0]) == (dict.fromkeys(STATES, 0), False)
