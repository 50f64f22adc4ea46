from __future__ import annotations

import json
import re
import time
from collections.abc import Callable
from typing import Any

import pytest
from redis import Redis

from queues import discovery
from queues.queue import now_ms
from queues.read.cohorts import recent_cohorts
from queues.read.refs import QueueRef
from tests.dashboard_seed import seed_events, seed_job, seed_jobs

KEYS = QueueRef("bull", "emails").keys
QUEUE_URL = "/queues/bull/emails/"


@pytest.fixture
def viewer(dashboard_redis: Redis, client_as: Callable[[str | None], Any]) -> Any:
    return client_as("viewer")


def _html(response: Any) -> str:
    assert response.status_code == 200, response.content[:500]
    return str(response.content.decode())


def test_overview_lists_every_queue_with_counts_paused_and_hooks(
    dashboard_redis: Redis, viewer: Any
) -> None:
    seed_jobs(dashboard_redis, KEYS, "failed", 3)
    seed_job(dashboard_redis, KEYS, "w", state="wait")
    dashboard_redis.hset(KEYS.meta, "paused", 1)
    dashboard_redis.lpush(KEYS.metrics_data("completed"), 4, 9)
    seed_job(dashboard_redis, QueueRef("bull", "a-quiet-one").keys, "1", state="completed")
    html = _html(viewer.get("/"))
    assert 'data-queue="bull:emails"' in html
    assert 'data-queue="bull:a-quiet-one"' in html
    row = html[html.index('data-queue="bull:emails"') :]
    assert re.search(r'data-count-state="failed" title="3 failed">3<', row)
    assert "paused</span>" in row
    assert 'class="spark-completed"' in row
    # Sorting by failed puts the failing queue first.
    by_failed = _html(viewer.get("/?sort=failed"))
    assert by_failed.index("bull:emails") < by_failed.index("bull:a-quiet-one")
    assert html.index("bull:a-quiet-one") < html.index('data-queue="bull:emails"')


def test_a_queue_without_meta_or_id_is_listed_and_opens_when_it_holds_jobs(
    dashboard_redis: Redis, viewer: Any
) -> None:
    """A queue another tool wrote, or ours after a hand DEL of meta and id."""
    keys = QueueRef("bull", "imports").keys
    seed_jobs(dashboard_redis, keys, "failed", 2)
    seed_job(dashboard_redis, keys, "3", state="wait")
    dashboard_redis.delete(keys.meta, keys.id)
    html = _html(viewer.get("/"))
    row = html[html.index('data-queue="bull:imports"') :]
    assert re.search(r'data-count-state="failed" title="2 failed">2<', row)
    page = _html(viewer.get("/queues/bull/imports/?state=failed"))
    assert re.search(r'data-count-state="failed" title="2">2<', page)
    assert 'data-job-id="1"' in page
    assert viewer.get("/queues/bull/imports/job/1").status_code == 200
    answer = viewer.get("/api/queues/bull/imports/jobs/?state=wait")
    assert answer.status_code == 200
    assert [job["id"] for job in answer.json()["jobs"]] == ["3"]


def test_overview_without_queues_says_so(dashboard_redis: Redis, viewer: Any) -> None:
    assert "No queues yet" in _html(viewer.get("/"))


def test_queue_page_opens_on_failed_with_tabs_rows_and_pagination(
    dashboard_redis: Redis, viewer: Any
) -> None:
    for n in range(1, 61):
        seed_job(
            dashboard_redis,
            KEYS,
            str(n),
            state="failed",
            score=n,
            fields={"failedReason": f"Timeout {n}\nat line"},
        )
    seed_job(dashboard_redis, KEYS, "w1", state="wait")
    html = _html(viewer.get(QUEUE_URL))
    assert 'data-queue="bull:emails"' in html
    assert 'data-state="failed"' in html
    assert re.search(r'data-count-state="failed" title="60">60<', html)
    assert re.search(r'data-count-state="wait" title="1">1<', html)
    assert "1\u201350 of 60" in html
    assert html.count("data-job-id=") == 50
    assert 'data-job-id="60"' in html  # newest first
    assert "Timeout 60" in html
    assert "1/1" in html  # attempts made / allowed
    page2 = _html(viewer.get(QUEUE_URL + "?state=failed&page=2"))
    assert "51\u201360 of 60" in page2
    assert 'data-job-id="1"' in page2
    small = _html(viewer.get(QUEUE_URL + "?state=failed&size=20"))
    assert small.count("data-job-id=") == 20


def test_job_rows_show_progress_as_bar_and_percent_or_json_and_full_names_on_hover(
    dashboard_redis: Redis, viewer: Any
) -> None:
    long_name = "nightly-export-" + "x" * 80
    seed_job(dashboard_redis, KEYS, "bar", name=long_name, fields={"progress": 42})
    seed_job(
        dashboard_redis, KEYS, "obj", name="", fields={"progress": '{"step": "upload", "of": 3}'}
    )
    html = _html(viewer.get(QUEUE_URL + "?state=wait"))
    bar = html[html.index('data-job-id="bar"') :]
    assert re.search(r'<progress max="100" value="42"[^>]*></progress> <span class="pct">42%<', bar)
    assert f'<td class="name" title="{long_name}">{long_name}</td>' in bar
    obj = html[html.index('data-job-id="obj"') :]
    # Object progress reads as JSON, like the job page, not as a Python dict.
    assert "{&quot;step&quot;: &quot;upload&quot;, &quot;of&quot;: 3}" in obj
    assert "{&#x27;step&#x27;" not in obj
    assert '<span class="muted">(no name)</span>' in obj


def test_htmx_request_gets_only_the_table_fragment(dashboard_redis: Redis, viewer: Any) -> None:
    seed_jobs(dashboard_redis, KEYS, "wait", 3)
    html = _html(viewer.get(QUEUE_URL + "?state=wait", headers={"HX-Request": "true"}))
    assert "<html" not in html
    assert html.count("data-job-id=") == 3


@pytest.mark.parametrize(
    "url",
    ["/", QUEUE_URL + "?state=wait&page=2&size=20", QUEUE_URL + "events/", QUEUE_URL + "job/1"],
)
def test_pages_that_answer_htmx_with_a_fragment_vary_on_it_and_restore_history_whole(
    dashboard_redis: Redis, viewer: Any, url: str
) -> None:
    """Back to a URL htmx pushed must never paint the bare fragment as the page:
    the browser's cache keeps the two answers apart, and htmx 2's history
    restore (which sends HX-Request as well) gets the whole page."""
    seed_jobs(dashboard_redis, KEYS, "wait", 30)
    plain = viewer.get(url)
    swap = viewer.get(url, headers={"HX-Request": "true"})
    restore = viewer.get(url, headers={"HX-Request": "true", "HX-History-Restore-Request": "true"})
    for response in (plain, swap, restore):
        assert response.status_code == 200
        assert "HX-Request" in response.get("Vary", ""), url
    assert "<html" in _html(plain)
    assert "<html" in _html(restore)
    assert '<header class="topbar">' in _html(restore)


def test_empty_tab_says_something_useful(dashboard_redis: Redis, viewer: Any) -> None:
    seed_jobs(dashboard_redis, KEYS, "completed", 2)
    html = _html(viewer.get(QUEUE_URL + "?state=failed"))
    assert re.search(r"No failed jobs\.\s+2 completed jobs are kept\.", html)
    dashboard_redis.lpush(KEYS.metrics_data("completed"), *([200] * 70))
    html = _html(viewer.get(QUEUE_URL + "?state=failed"))
    assert re.search(r"No failed jobs\.\s+12,000 completed in the last hour\.", html)
    overview = _html(viewer.get("/"))
    assert ">200/min<" in overview
    completed = _html(viewer.get(QUEUE_URL + "?state=completed&page=9"))
    # A page past the end is not an empty list.
    assert "No completed jobs." not in completed
    assert "Nothing on this page: the completed list has 2 jobs." in completed


def test_empty_active_tab_asks_about_workers_or_says_paused(
    dashboard_redis: Redis, viewer: Any
) -> None:
    seed_jobs(dashboard_redis, KEYS, "wait", 3)
    html = _html(viewer.get(QUEUE_URL + "?state=active"))
    assert re.search(r"No active jobs\. 3 waiting: are the workers running\?", html)
    dashboard_redis.hset(KEYS.meta, "paused", 1)
    html = _html(viewer.get(QUEUE_URL + "?state=active"))
    assert "No active jobs. The queue is paused: workers take no new jobs." in html


@pytest.mark.parametrize(
    ("url", "status"),
    [
        ("/queues/bull/nope/", 404),
        ("/queues/other/emails/", 404),
        ("/queues/bull/emails/?state=bogus", 400),
        ("/queues/bull/emails/job/missing", 404),
        ("/queues/bull/emails/events/?before=xyz", 400),
    ],
)
def test_unknown_queue_state_job_or_cursor(
    dashboard_redis: Redis, viewer: Any, url: str, status: int
) -> None:
    seed_job(dashboard_redis, KEYS, "1")
    assert viewer.get(url).status_code == status


def test_job_page_shows_state_reason_traces_logs_lock_and_timeline(
    dashboard_redis: Redis, viewer: Any
) -> None:
    seed_job(
        dashboard_redis,
        KEYS,
        "42",
        state="failed",
        name="send-welcome",
        data={"to": "ann@example.com"},
        opts={"attempts": 3},
        fields={
            "failedReason": "SMTP 550 mailbox unavailable",
            "stacktrace": '["Error: first\\n at a.js:1", "Error: second\\n at b.js:2"]',
            "atm": 2,
            "pb": "worker-7",
            "progress": "40",
            "returnvalue": "null",
        },
    )
    dashboard_redis.rpush(KEYS.logs("42"), *[f"log line {n}" for n in range(60)])
    seed_events(dashboard_redis, KEYS, [("failed", {"jobId": "42", "failedReason": "SMTP 550"})])
    html = _html(viewer.get(QUEUE_URL + "job/42"))
    assert 'data-job-state="failed"' in html
    assert 'data-job-id="42"' in html
    assert "send-welcome" in html
    assert "SMTP 550 mailbox unavailable" in html
    # Latest attempt first and open; the older one collapsed.
    assert html.index("Error: second") < html.index("Error: first")
    assert "<details open>\n    <summary>Attempt 2 (latest)" in html
    assert "2/3" in html
    assert "worker-7" in html
    assert (
        '<span class="j-key">&quot;to&quot;</span>: '
        '<span class="j-str">&quot;ann@example.com&quot;</span>'
    ) in html
    assert "log line 49" in html
    assert "log line 50" not in html
    assert "Later →" in html
    later = _html(viewer.get(QUEUE_URL + "job/42?logs=2"))
    assert "log line 59" in later
    logs_fragment = _html(
        viewer.get(QUEUE_URL + "job/42?logs=2&fragment=logs", headers={"HX-Request": "true"})
    )
    assert "<html" not in logs_fragment
    assert "log line 55" in logs_fragment
    assert "Created" in html
    assert "Finished" in html
    assert "data-job-events" in html


def test_the_job_page_s_events_leave_out_the_job_column_the_events_tab_keeps(
    dashboard_redis: Redis, viewer: Any
) -> None:
    """On the job page every event is this job's: a Job column repeated its id
    on every line."""
    seed_job(dashboard_redis, KEYS, "42", state="failed")
    dashboard_redis.xadd(KEYS.events, {"event": "failed", "jobId": "42", "failedReason": "x"})
    page = _html(viewer.get(QUEUE_URL + "job/42"))
    events = page[page.index('data-block="events"') :]
    events = events[: events.index("</section>")]
    assert 'data-event="failed"' in events
    assert 'class="id"' not in events
    assert ">Job<" not in events
    feed = _html(viewer.get(QUEUE_URL + "events/"))
    assert '<td class="id"><a href="/queues/bull/emails/job/42">42</a></td>' in feed


def test_active_job_shows_lock_holder_and_ttl(dashboard_redis: Redis, viewer: Any) -> None:
    seed_job(dashboard_redis, KEYS, "7", state="active", fields={"pb": "w1"})
    dashboard_redis.set(KEYS.lock("7"), "tok-123", px=25_000)
    html = _html(viewer.get(QUEUE_URL + "job/7"))
    assert 'data-job-state="active"' in html
    assert "tok-123" in html
    # Seconds for humans, the exact milliseconds on hover.
    assert re.search(r'<span title="2\d,\d{3} ms">expires in 2\d(\.\d)? s</span>', html)


def test_job_timeline_shows_delay_and_how_long_ago_with_exact_times(
    dashboard_redis: Redis, viewer: Any
) -> None:
    now = int(time.time() * 1000)
    seed_job(
        dashboard_redis,
        KEYS,
        "t",
        state="completed",
        fields={
            "timestamp": now - 3 * 3_600_000,
            "delay": 90_000,
            "processedOn": now - 3 * 3_600_000 + 120_000,
            "finishedOn": now - 3 * 3_600_000 + 124_500,
        },
    )
    html = _html(viewer.get(QUEUE_URL + "job/t"))
    timeline = html[html.index("<h2>Timeline</h2>") : html.index("</ol>")]
    assert "3 h ago" in timeline
    assert re.search(r"Delayed</span> 1 min, until <time title=\"[^\"]+ UTC\">", timeline)
    assert "2 min after creation" in timeline
    assert "took 4.5 s" in timeline


def test_big_data_is_truncated_with_load_all(dashboard_redis: Redis, viewer: Any) -> None:
    seed_job(dashboard_redis, KEYS, "big", data={"blob": "x" * 100_000, "tail": "THE-END"})
    html = _html(viewer.get(QUEUE_URL + "job/big"))
    assert "Load all" in html
    assert "THE-END" not in html
    htmx = {"HX-Request": "true"}
    full = _html(viewer.get(QUEUE_URL + "job/big?full=1&fragment=data", headers=htmx))
    assert "THE-END" in full
    assert "<html" not in full


def test_missing_job_page_is_a_friendly_404(dashboard_redis: Redis, viewer: Any) -> None:
    seed_job(dashboard_redis, KEYS, "1")
    response = viewer.get(QUEUE_URL + "job/gone")
    assert response.status_code == 404
    assert "No job gone in emails" in response.content.decode()


def test_events_tab_newest_first_with_feed_hooks_and_filters(
    dashboard_redis: Redis, viewer: Any
) -> None:
    seed_job(dashboard_redis, KEYS, "1")
    ids = seed_events(
        dashboard_redis,
        KEYS,
        [
            ("added", {"jobId": "1", "name": "x"}),
            ("active", {"jobId": "1", "prev": "waiting"}),
            ("failed", {"jobId": "1", "failedReason": "kaput"}),
            ("added", {"jobId": "2", "name": "y"}),
        ],
    )
    html = _html(viewer.get(QUEUE_URL + "events/?type=all"))
    assert f'id="event-feed" data-last-id="{ids[-1]}"' in html
    positions = [html.index(f'data-event-id="{i}"') for i in reversed(ids)]
    assert positions == sorted(positions)
    assert "kaput" in html
    failed_only = _html(viewer.get(QUEUE_URL + "events/?type=failed"))
    assert failed_only.count('data-event-id="1') == 1
    job2 = _html(viewer.get(QUEUE_URL + "events/?type=all&job=2"))
    assert job2.count('data-event-id="1') == 1


def test_events_tab_shows_state_changes_by_default(dashboard_redis: Redis, viewer: Any) -> None:
    """Progress (many a second), "added" (always followed by the state entered)
    and other events that move nothing would bury the failures."""
    seed_job(dashboard_redis, KEYS, "1")
    ids = seed_events(
        dashboard_redis,
        KEYS,
        [
            ("added", {"jobId": "1", "name": "x"}),
            ("waiting", {"jobId": "1"}),
            ("active", {"jobId": "1", "prev": "waiting"}),
            *[("progress", {"jobId": "1", "data": str(n)}) for n in range(150)],
            ("failed", {"jobId": "1", "failedReason": "kaput"}),
            ("drained", {}),
        ],
    )
    html = _html(viewer.get(QUEUE_URL + "events/"))
    shown = re.findall(r'data-event="([^"]+)"', html)
    assert shown == ["failed", "active", "waiting"]
    assert f'data-last-id="{ids[-1]}"' in html  # the live feed resumes after every event
    assert 'data-quiet-events="progress added duplicated deduplicated drained"' in html
    assert re.search(r'<option value="" selected[^>]*>state changes</option>', html)
    every = _html(viewer.get(QUEUE_URL + "events/?type=all"))
    assert every.count('data-event-id="1') == 100  # one page of all 155
    progress = _html(viewer.get(QUEUE_URL + "events/?type=progress"))
    assert set(re.findall(r'data-event="([^"]+)"', progress)) == {"progress"}


def test_goto_box_jumps_to_the_job_or_explains(dashboard_redis: Redis, viewer: Any) -> None:
    seed_job(dashboard_redis, KEYS, "a b/ü")
    response = viewer.get(QUEUE_URL + "goto/", {"job": "a b/ü"})
    assert response.status_code == 302
    assert _html(viewer.get(response["Location"])).count("a b/ü") >= 1
    bad = viewer.get(QUEUE_URL + "goto/", {"job": "x:y"}, follow=True)
    assert "is not a job id" in bad.content.decode()


def test_pages_send_csp_without_inline_script_and_deny_framing(
    dashboard_redis: Redis, viewer: Any
) -> None:
    seed_job(dashboard_redis, KEYS, "1", state="failed")
    for url in ("/", QUEUE_URL, QUEUE_URL + "job/1", QUEUE_URL + "events/"):
        response = viewer.get(url)
        csp = response["Content-Security-Policy"]
        assert "script-src 'self'" in csp
        assert "unsafe-inline" not in csp
        assert response["X-Frame-Options"] == "DENY"
        html = response.content.decode()
        # Every <script> loads a file; none carries code inline.
        assert re.findall(r"<script(?![^>]*\ssrc=)[^>]*>", html) == []
        assert " style=" not in html
        assert "/static/django_htmx/htmx-2.min.js" in html


@pytest.mark.parametrize(
    ("value", "short", "exact"),
    [
        (0, "0", "0"),
        (999, "999", "999"),
        (3_200, "3.2k", "3,200"),
        (1_204_331, "1.2M", "1,204,331"),
    ],
)
def test_numbers_for_humans(value: int, short: str, exact: str) -> None:
    from dashboard.shared.formatting import compact, thousands

    assert (compact(value), thousands(value)) == (short, exact)


def test_times_for_humans() -> None:
    from dashboard.shared.presenters import exact_time, relative_time

    now = 1_700_000_000_000
    assert relative_time(now - 180_000, now) == "3 min ago"
    assert relative_time(now + 7_200_000, now) == "in 2 h"
    assert relative_time(now - 1_500, now) == "1.5 s ago"
    assert relative_time(now - 340, now) == "just now"
    assert relative_time("yesterday", now) == "—"
    assert exact_time(now) == "2023-11-14 22:13:20.000 UTC"
    assert exact_time(10**20) == str(10**20)


@pytest.mark.parametrize(
    ("ms", "exact"),
    [
        # Times the events tab shows to the millisecond, from the live feed and
        # the page alike: a millisecond is never lost to a float's rounding.
        (1_764_893_581_219, "2025-12-05 00:13:01.219 UTC"),
        (-1, "1969-12-31 23:59:59.999 UTC"),
        (253_402_300_799_999, "9999-12-31 23:59:59.999 UTC"),
        (203_716_219_437_219, "8425-07-05 14:43:57.219 UTC"),
        (253_402_300_800_000, "253402300800000"),
    ],
)
def test_exact_times_keep_every_millisecond(ms: int, exact: str) -> None:
    from dashboard.shared.presenters import exact_time

    assert exact_time(ms) == exact


def test_json_highlighting_escapes_everything() -> None:
    from dashboard.shared.presenters import highlight_json

    text = '{"a\\"<b>": "x</pre><script>", "n": -1.5e3, "ok": true, "none": null}'
    html = str(highlight_json(text))
    assert "<script>" not in html
    assert "</pre>" not in html
    assert '<span class="j-key">&quot;a\\&quot;&lt;b&gt;&quot;</span>:' in html
    assert '<span class="j-num">-1.5e3</span>' in html
    assert '<span class="j-lit">true</span>' in html
    assert str(highlight_json("<b>" * 30_000)).startswith("&lt;b&gt;")


def _overview_row(html: str, queue: str) -> str:
    start = html.index(f'data-queue="{queue}"')
    return html[start : html.index("</tr>", start)]


def test_overview_queue_without_metrics_says_so(dashboard_redis: Redis, viewer: Any) -> None:
    seed_job(dashboard_redis, KEYS, "w", state="wait")
    row = _overview_row(_html(viewer.get("/")), "bull:emails")
    assert "no metrics" in row
    assert "<svg" not in row


def test_overview_filter_box_is_labelled_and_has_a_no_match_message(
    dashboard_redis: Redis, viewer: Any
) -> None:
    seed_job(dashboard_redis, KEYS, "w", state="wait")
    seed_job(dashboard_redis, QueueRef("bull", "reports").keys, "w", state="wait")
    html = _html(viewer.get("/"))
    assert re.search(r'<span class="visually-hidden">Filter queues by name</span>\s*<input', html)
    assert 'name="q"' in html
    assert "data-slash-focus" in html
    assert "data-filter-empty" not in html
    # A long name is cut by CSS; the whole name is on hover.
    assert 'class="queue-name" title="bull:emails">emails</a>' in html
    # The live connection's state shows in the header (CSS reads html[data-live]).
    assert '<span class="live-status" aria-hidden="true"></span>' in html
    # On a phone each count carries its word (a CSS ::after reads data-label).
    assert 'data-label="waiting" data-count-state="wait" title="1 waiting">1<' in html
    # The filter is the server's (a page holds a hundred queues of any number),
    # case-blind on "prefix:name", and says so when nothing matches.
    found = _html(viewer.get("/?q=EMA"))
    assert 'data-queue="bull:emails"' in found
    assert "bull:reports" not in found
    assert re.search(r"data-queue-total>\s*1 of 2\s*<", found)
    none = _html(viewer.get("/?q=%3Cb%3Ezzz"))
    assert "data-queue=" not in none
    assert "No queue name contains \u201c&lt;b&gt;zzz\u201d." in none
    # A filter too long to be a name is cut, never an error.
    assert "No queue name contains" in _html(viewer.get("/?q=" + "x" * 100_000))


def _seed_queues(client: Redis, count: int) -> None:
    pipe = client.pipeline(transaction=False)
    for n in range(count):
        keys = QueueRef("bull", f"q-{n:04d}").keys
        pipe.hset(keys.job("1"), mapping={"name": "task", "timestamp": 1, "data": "{}"})
        pipe.lpush(keys.wait, "1")
        pipe.set(keys.id, 1)
    pipe.execute()
    discovery.clear_discovery_cache()  # seen now, not after the next walk


def test_overview_pages_a_hundred_queues_at_a_time(dashboard_redis: Redis, viewer: Any) -> None:
    _seed_queues(dashboard_redis, 250)
    # The last queue by name has the most failures: sorted by failed it leads
    # page 1 though it sits on page 3 by name.
    seed_jobs(dashboard_redis, QueueRef("bull", "q-0249").keys, "failed", 3)
    seed_jobs(dashboard_redis, QueueRef("bull", "q-0100").keys, "failed", 1)
    first = _html(viewer.get("/"))
    assert first.count("data-queue=") == 100
    assert "1\u2013100 of 250 queues" in first
    assert 'href="?page=2">Next' in first
    assert re.search(r"data-queue-total>\s*250\s*<", first)
    last = _html(viewer.get("/?page=3"))
    assert last.count("data-queue=") == 50
    assert "201\u2013250 of 250 queues" in last
    assert "Next" not in last
    assert 'href="?page=2">\u2190 Previous' in last
    # Past the end shows the last page, not an empty one.
    assert _html(viewer.get("/?page=99")).count("data-queue=") == 50
    by_failed = _html(viewer.get("/?sort=failed"))
    rows = re.findall(r'<tr data-queue="([^"]+)"', by_failed)
    assert rows[:3] == ["bull:q-0249", "bull:q-0100", "bull:q-0000"]
    assert "most failed first" in by_failed
    assert 'href="?sort=failed&amp;page=2">Next' in by_failed
    # The filter and the sort travel together through the pager.
    filtered = _html(viewer.get("/?q=q-01&sort=failed"))
    assert re.findall(r'<tr data-queue="([^"]+)"', filtered)[0] == "bull:q-0100"
    assert filtered.count("data-queue=") == 100
    assert 'href="?q=q-01&amp;sort=failed&amp;page=2">Next' not in filtered  # 100 match: one page


def test_overview_costs_a_page_however_many_queues(dashboard_redis: Redis, viewer: Any) -> None:
    _seed_queues(dashboard_redis, 100)
    hundred = len(_html(viewer.get("/")))
    _seed_queues(dashboard_redis, 1000)
    thousand = _html(viewer.get("/"))
    assert thousand.count("data-queue=") == 100
    assert len(thousand) < hundred * 1.05


JS_TRACE = "Error: card declined\n    at charge (billing.js:12:5)"


def _block(html: str, name: str) -> str:
    """The markup of the job page's data-block ``name`` (up to the next top-level block)."""
    start = html.index(f'data-block="{name}"')
    ends = [html.find(f"\n<{tag}", start) for tag in ("section", "dl", "div")]
    return html[start : min(end for end in ends if end != -1)]


def _job_html(viewer: Any, job_id: str) -> str:
    return _html(viewer.get(QUEUE_URL + "job/" + job_id))


@pytest.fixture
def actor(dashboard_redis: Redis, client_as: Callable[[str | None], Any]) -> Any:
    return client_as("actor")


def test_a_failed_job_shows_its_failure_in_red_latest_attempt_open(
    dashboard_redis: Redis, actor: Any
) -> None:
    seed_job(
        dashboard_redis,
        KEYS,
        "f",
        state="failed",
        opts={"attempts": 2},
        fields={
            "atm": 2,
            "ats": 2,
            "failedReason": "card declined",
            "stacktrace": json.dumps(["Error: gateway timeout\n    at a.js:1", JS_TRACE]),
        },
    )
    html = _job_html(actor, "f")
    failures = _block(html, "failures")
    assert '<section class="card failure" data-block="failures"' in html
    assert '<h2 id="failure-title">Failed: card declined</h2>' in failures
    assert "<details open>\n    <summary>Attempt 2 (latest)</summary>" in failures
    assert "<details>\n    <summary>Attempt 1: Error: gateway timeout</summary>" in failures
    assert "failed on attempt 2 of 2" in _block(html, "title")
    # A failed job is retried from the page's main button, without a question.
    actions = _block(html, "actions")
    retry = actions[: actions.index("</form>")]
    assert 'class="btn btn-primary">Retry</button>' in retry
    assert "data-confirm" not in retry


def test_a_job_that_completed_after_a_retry_keeps_its_failure_as_history(
    dashboard_redis: Redis, viewer: Any
) -> None:
    # Retried by an admin after attempt 1 failed (failedReason cleared), then completed.
    seed_job(
        dashboard_redis,
        KEYS,
        "c",
        state="completed",
        opts={"attempts": 1},
        fields={"atm": 2, "ats": 2, "stacktrace": json.dumps([JS_TRACE])},
    )
    html = _job_html(viewer, "c")
    assert 'class="card failure"' not in html
    assert "Failed:" not in html
    assert "completed on attempt 2" in _block(html, "title")
    history = _block(html, "failures")
    assert '<section class="card history" data-block="failures"' in html
    assert "<details>\n    <summary>attempt 1 failed: Error: card declined</summary>" in history
    assert "<details open" not in history
    # BullMQ's own retries keep failedReason after the job completes: history too.
    seed_job(
        dashboard_redis,
        KEYS,
        "b",
        state="completed",
        opts={"attempts": 3},
        fields={
            "atm": 2,
            "ats": 2,
            "failedReason": "card declined",
            "stacktrace": json.dumps([JS_TRACE]),
        },
    )
    html = _job_html(viewer, "b")
    assert "Failed:" not in html
    assert "attempt 1 failed: card declined</summary>" in _block(html, "failures")


@pytest.mark.parametrize("state", ["wait", "delayed", "prioritized"])
def test_a_job_waiting_for_its_retry_says_so_and_why(
    dashboard_redis: Redis, viewer: Any, state: str
) -> None:
    seed_job(
        dashboard_redis,
        KEYS,
        "r",
        state=state,
        opts={"attempts": 5},
        fields={"atm": 1, "ats": 1, "failedReason": "card declined", "stacktrace": "[]"},
    )
    html = _job_html(viewer, "r")
    assert "retrying: attempt 2 of 5, attempt 1 failed: card declined" in _block(html, "title")
    assert "Failed:" not in html
    assert "attempt 1 failed: card declined</summary>" in _block(html, "failures")


def test_an_active_job_says_how_long_it_has_run_and_what_failed_before(
    dashboard_redis: Redis, viewer: Any
) -> None:
    now = int(time.time() * 1000)
    seed_job(
        dashboard_redis,
        KEYS,
        "a",
        state="active",
        opts={"attempts": 5},
        fields={
            "processedOn": now - 42_400,
            "atm": 1,
            "ats": 2,
            "stacktrace": json.dumps([JS_TRACE]),
        },
    )
    title = _block(_job_html(viewer, "a"), "title")
    assert re.search(
        r'<span class="running" data-running-ms="4\d{4}" title="started [^"]+ UTC">'
        r"running 4\d s</span> · attempt 2 of 5, attempt 1 failed: Error: card declined",
        title,
    )
    # A job that never failed and has one attempt: just the running time.
    seed_job(dashboard_redis, KEYS, "b", state="active", fields={"processedOn": now - 3_000})
    title = _block(_job_html(viewer, "b"), "title")
    assert re.search(
        r'data-job-status><span class="running" [^>]+>running [34] s</span></p>', title
    )


def test_a_job_retried_by_hand_past_its_attempts_says_so_and_never_shows_2_of_1(
    dashboard_redis: Redis, actor: Any
) -> None:
    """One attempt allowed, it failed, the on-call retried it from the page and
    it failed again: two made, one allowed. A manual retry keeps the counters,
    so every place that shows made/allowed read "2/1"."""
    seed_job(
        dashboard_redis,
        KEYS,
        "h",
        state="failed",
        opts={"attempts": 1},
        fields={"failedReason": "card declined", "stacktrace": json.dumps([JS_TRACE])},
    )
    assert actor.post(QUEUE_URL + "actions/", {"action": "retry", "ids": ["h"]}).status_code == 302
    waiting = _job_html(actor, "h")
    assert (
        "retrying: attempt 2 (1 allowed; retried by hand), attempt 1 failed: Error: card declined"
    ) in _block(waiting, "title")
    # Its second run fails too (what the worker's moveToFinished leaves behind).
    pipe = dashboard_redis.pipeline()
    pipe.lrem(KEYS.wait, 0, "h").zadd(KEYS.failed, {"h": now_ms()})
    pipe.hset(KEYS.job("h"), mapping={"atm": 2, "ats": 2, "failedReason": "card declined"})
    pipe.hset(KEYS.job("h"), "stacktrace", json.dumps([JS_TRACE, JS_TRACE]))
    pipe.execute()
    page = _job_html(actor, "h")
    over = '2 <span class="muted">(1 allowed; retried by hand)</span>'
    assert over in _block(page, "facts")
    assert "failed on attempt 2 (1 allowed; retried by hand)" in _block(page, "title")
    row = _html(actor.get(QUEUE_URL + "?state=failed"))
    row = row[row.index('data-job-id="h"') :]
    assert over in row[: row.index("</tr>")]
    (cohort,) = recent_cohorts(dashboard_redis, KEYS, now_ms())
    listed = _html(actor.get(f"{QUEUE_URL}cohorts/{cohort.id}/?part=failed"))
    assert over in listed
    for html in (page, row, listed):
        assert "2/1" not in html


def test_every_greyed_out_button_of_the_queue_page_says_why_where_it_stands(
    dashboard_redis: Redis, actor: Any
) -> None:
    """A disabled button either names its zero count in its own words ("Retry
    0 failed") or is described (aria-describedby) by words on the page: the
    clean menu's note, the search's progress line and message."""
    seed_job(dashboard_redis, KEYS, "w1", state="wait")
    html = _html(actor.get(QUEUE_URL + "?state=failed"))
    buttons = re.findall(r"<button\b[^>]*\bdisabled\b[^>]*>.*?</button>", html, re.DOTALL)
    described = 0
    for button in buttons:
        ids = re.search(r'aria-describedby="([^"]+)"', button)
        if ids is None:
            words = re.sub(r"<[^>]+>", "", button)
            assert re.search(r"\b0\b", words), f"greyed out with no reason: {button}"
            continue
        described += 1
        for words_id in ids.group(1).split():
            assert html.count(f'id="{words_id}"') == 1, words_id
    assert described >= 2  # the clean button and the search's act buttons
    assert (
        '<p class="muted menu-note" id="clean-note">At most <span data-count-exact="failed">0'
    ) in html


def test_a_completed_job_offers_run_again_as_a_secondary_action_that_asks_first(
    dashboard_redis: Redis, actor: Any
) -> None:
    seed_job(dashboard_redis, KEYS, "pw-1", state="completed", name="password-reset")
    actions = _block(_job_html(actor, "pw-1"), "actions")
    again = actions[: actions.index("</form>")]
    assert 'class="btn">Run again</button>' in again
    assert 'value="retry"' in again
    assert (
        'data-confirm="Run job pw-1 (password-reset) again? It completed already: whatever it'
        ' does (an email, a charge) is done a second time."'
    ) in again
    assert "btn-primary" not in actions
    assert ">Retry<" not in actions


@pytest.mark.parametrize(
    ("progress", "bar", "label"),
    [
        ('{"step": 1, "of": 5}', 20, "1 of 5"),
        ('{"current": 3, "total": 8}', 37, "3 of 8"),
        ('{"done": 1200, "total": 4000}', 30, "1,200 of 4,000"),
        ('{"value": 30, "max": 120}', 25, "30 of 120"),
        ("42", 42, "42%"),
    ],
)
def test_progress_of_a_known_shape_is_a_bar_on_rows_and_the_job_page(
    dashboard_redis: Redis, viewer: Any, progress: str, bar: int, label: str
) -> None:
    seed_job(dashboard_redis, KEYS, "p", state="wait", fields={"progress": progress})
    row = _html(viewer.get(QUEUE_URL + "?state=wait"))
    assert (
        f'<td class="progress"><progress max="100" value="{bar}" aria-hidden="true"></progress>'
        f' <span class="pct">{label}</span></td>'
    ) in row
    page = _block(_job_html(viewer, "p"), "progress")
    assert f'<progress max="100" value="{bar}" data-job-progress' in page
    assert f'<span class="pct">{label}</span>' in page
    assert "{&quot;" not in row


def test_progress_of_another_shape_stays_short_json_and_nan_is_no_error(
    dashboard_redis: Redis, viewer: Any
) -> None:
    seed_job(dashboard_redis, KEYS, "o", state="wait", fields={"progress": '{"phase": "upload"}'})
    seed_job(dashboard_redis, KEYS, "n", state="wait", fields={"progress": "NaN"})
    rows = _html(viewer.get(QUEUE_URL + "?state=wait"))
    assert '<span class="muted" title="{&quot;phase&quot;: &quot;upload&quot;}">' in rows
    assert '<span class="muted" title="NaN">NaN</span>' in rows
    assert "<progress" not in rows
    page = _block(_job_html(viewer, "n"), "progress")
    assert '<pre class="json" data-job-progress>NaN</pre>' in page


def test_active_rows_show_how_long_each_job_has_run(dashboard_redis: Redis, viewer: Any) -> None:
    now = int(time.time() * 1000)
    seed_job(
        dashboard_redis,
        KEYS,
        "a",
        state="active",
        fields={"processedOn": now - 125_000, "progress": '{"step": 2, "of": 4}'},
    )
    seed_job(dashboard_redis, KEYS, "quiet", state="active", fields={"processedOn": now - 9_000})
    html = _html(viewer.get(QUEUE_URL + "?state=active"))
    row = html[html.index('data-job-id="a"') : html.index("</tr>", html.index('data-job-id="a"'))]
    assert re.search(
        r'<span class="pct">2 of 4</span> <span class="running" data-running-ms="12\d{4}"'
        r' title="started [^"]+">running 2 min</span>',
        row,
    )
    assert re.search(r'<td class="progress"><span class="running" [^>]+>running \d+ s</span>', html)
    # Waiting jobs have not run: no running time.
    seed_job(dashboard_redis, KEYS, "w", state="wait", fields={"processedOn": now - 5_000})
    assert "running" not in _html(viewer.get(QUEUE_URL + "?state=wait"))


def test_running_time_reads_in_whole_seconds_then_coarser_units() -> None:
    from dashboard.shared.presenters import running_label

    assert running_label(400) == "running 0 s"
    assert running_label(42_900) == "running 42 s"
    assert running_label(125_000) == "running 2 min"
    assert running_label(2 * 3_600_000 + 5) == "running 2 h"
    assert running_label(-5_000) == "running 0 s"  # a worker's clock ahead of ours


def test_a_span_of_years_reads_in_years_not_thousands_of_days() -> None:
    from dashboard.shared.formatting import span

    day = 86_400_000
    assert span(5 * day) == "5 d"
    assert span(400 * day) == "400 d"
    assert span(730 * day) == "2 years"
    # A schedule's next run on 2100-01-01, seen from 2026-12-02: once "in 26692 d".
    assert span(26_692 * day) == "73 years"


def test_load_all_and_log_pages_put_what_they_show_in_the_address(
    dashboard_redis: Redis, viewer: Any
) -> None:
    """The live refresh refetches the page's address: a log page or the full
    data loaded by a click must be in it, or the next refresh takes it back."""
    seed_job(dashboard_redis, KEYS, "big", data={"blob": "x" * 100_000})
    dashboard_redis.rpush(KEYS.logs("big"), *[f"line {n}" for n in range(120)])
    html = _job_html(viewer, "big")
    assert (
        'href="?logs=1&amp;full=1" hx-get="?logs=1&amp;full=1&amp;fragment=data"'
        ' hx-replace-url="?logs=1&amp;full=1"'
    ) in html
    assert 'href="?logs=2" hx-get="?logs=2&amp;fragment=logs" hx-replace-url="?logs=2"' in html
    page2 = _html(viewer.get(QUEUE_URL + "job/big?logs=2&full=1"))
    assert 'hx-replace-url="?logs=1&amp;full=1"' in page2
    assert 'hx-replace-url="?logs=3&amp;full=1"' in page2
    assert "Load all" not in page2
    truncated_page2 = _html(viewer.get(QUEUE_URL + "job/big?logs=2"))
    assert 'hx-replace-url="?logs=2&amp;full=1"' in truncated_page2


def test_an_exactly_full_page_has_no_older_link(dashboard_redis: Redis, viewer: Any) -> None:
    seed_jobs(dashboard_redis, KEYS, "failed", 40)
    first = _html(viewer.get(QUEUE_URL + "?state=failed&size=20"))
    assert "1\u201320 of 40" in first
    assert "Older →" in first
    last = _html(viewer.get(QUEUE_URL + "?state=failed&size=20&page=2"))
    assert "21\u201340 of 40" in last
    assert last.count("data-job-id=") == 20
    assert "Older →" not in last
    assert "← Newer" in last


def test_the_tick_hint_shows_only_where_there_are_rows_to_tick(
    dashboard_redis: Redis, actor: Any
) -> None:
    """An empty tab said "Tick jobs to promote or remove them." over no rows."""
    seed_jobs(dashboard_redis, KEYS, "completed", 1)  # the queue exists
    empty = _html(actor.get(QUEUE_URL + "?state=wait"))
    assert "No waiting jobs." in empty
    assert "Tick jobs" not in empty
    seed_jobs(dashboard_redis, KEYS, "wait", 2)
    assert "Tick jobs to " in _html(actor.get(QUEUE_URL + "?state=wait"))


def test_the_chart_and_an_empty_tab_give_the_same_last_hour(
    dashboard_redis: Redis, viewer: Any
) -> None:
    """The header's chart counted this minute so far and the empty tab did not:
    "606 completed in the last hour" above "563 completed in the last hour"."""
    seed_jobs(dashboard_redis, KEYS, "completed", 1)
    dashboard_redis.lpush(KEYS.metrics_data("completed"), *([10] * 70))
    seconds, _ = dashboard_redis.time()
    if seconds % 60 >= 58:  # the page must be read in the minute prevTS names
        time.sleep(60.5 - seconds % 60)
    now_ms = int(dashboard_redis.time()[0]) * 1000
    # BullMQ's metrics: the count so far, and the minute the list last closed.
    dashboard_redis.hset(
        KEYS.metrics("completed"), mapping={"count": 1000, "prevTS": now_ms, "prevCount": 993}
    )
    html = _html(viewer.get(QUEUE_URL + "?state=failed"))
    said = re.findall(r"([\d,]+) completed(?:, \d+ failures?)? in the last hour", html)
    assert len(said) >= 2, said  # the chart's readout and the empty tab, at least
    assert set(said) == {"607"}  # 60 full minutes of 10, and 7 so far this minute


def _directive(policy: str, name: str) -> list[str]:
    (found,) = (part.split()[1:] for part in policy.split(";") if part.split()[:1] == [name])
    return found


def test_the_live_socket_may_connect_to_this_site_and_its_trusted_origins_only(
    dashboard_redis: Redis, viewer: Any, settings: Any
) -> None:
    """connect-src named "ws: wss:", any host (issue 22): now the origins the
    socket's own Origin check accepts (dashboard.live.routing)."""
    settings.ALLOWED_HOSTS = ["queues.example.com"]
    settings.CSRF_TRUSTED_ORIGINS = ["https://ops.example.com", "https://*.example.org"]
    plain = viewer.get("/", HTTP_HOST="queues.example.com:8000")
    assert _directive(plain["Content-Security-Policy"], "connect-src") == [
        "'self'", "ws://queues.example.com:8000", "wss://ops.example.com", "wss://*.example.org",
    ]  # fmt: skip
    secure = viewer.get("/", HTTP_HOST="queues.example.com", secure=True)
    assert _directive(secure["Content-Security-Policy"], "connect-src")[:2] == [
        "'self'",
        "wss://queues.example.com",
    ]
    assert "ws:" not in plain["Content-Security-Policy"].split()
