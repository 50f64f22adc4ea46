"""Searching a queue (queues.read.search + searchJobs-1.lua) against a real
Redis, with jobs written by our runtime and by the bullmq 2.20.1 peer: every
field and operator, unicode, JSON paths, hostile text; the matches are
compared with the same rule applied in Python to every job."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import bullmq
import pytest
from redis import Redis

from queues.keys import MAX_JOB_ID_LENGTH, validate_job_id
from queues.queue import Queue
from queues.read.refs import QueueRef
from queues.read.search import (
    AROUND_BYTES,
    MAX_BATCH,
    MAX_FIELD_BYTES,
    MIN_BATCH,
    Cursor,
    FoundText,
    Pacing,
    Query,
    QueryError,
    SearchError,
    parse_query,
    search_all,
    search_step,
)
from queues.read.states import TAB

NAME = "hunt"
REF = QueueRef("bull", NAME)
NO_REST = Pacing(sleep=lambda _: None)

REASONS = [
    "Timeout after 30012 ms on job 991",
    "connection RESET by peer",
    "Ünïcødé failure: naïve café ✉",
    "bad input: .* [a-z]+ %d (x) 100% *star*",
]


def _data(i: int) -> dict[str, Any]:
    return {
        "user_id": i % 7,
        "email": f"user{i}@example.com",
        "note": "café ✉" if i % 4 == 0 else "plain",
        "flags": {"vip": i % 5 == 0, "tier": None if i % 3 else "gold"},
        "items": [{"sku": f"S-{i % 4}"}, {"sku": "X"}],
        "weird": ".*%[]" if i % 6 == 0 else "",
    }


@pytest.fixture
def ours(redis_client: Redis) -> Queue:
    return Queue(NAME, redis_client)


@pytest.fixture
def failed_jobs(ours: Queue) -> dict[str, tuple[str, dict[str, Any], str]]:
    """60 failed jobs of our runtime: id -> (name, data, reason)."""
    names = ["send-mail", "Send-Mail", "resize ✂", "bill"]
    specs = [(names[i % 4], _data(i), None) for i in range(60)]
    ids = ours.add_bulk(specs)
    jobs = {}
    for i, job_id in enumerate(ids):
        reason = REASONS[i % len(REASONS)]
        ours.fail(job_id, reason)
        jobs[job_id] = (names[i % 4], _data(i), reason)
    return jobs


def _search(client: Redis, text: str, state: str = "failed", pacing: Pacing = NO_REST) -> list[str]:
    hits: list[str] = []
    for step in search_all(client, REF, state, parse_query(text), pacing=pacing):
        hits.extend(step.hits)
    return _once(hits)


def _once(hits: list[str]) -> list[str]:
    """Hits without repeats, as the page keeps them (a slice may look again
    at jobs sharing a score with one that left: repeats, never gaps)."""
    return list(dict.fromkeys(hits))


def _newest_first(client: Redis, state: str) -> list[str]:
    return [job.id for job in Queue(NAME, client).get_jobs(state)]


def _expect(
    client: Redis, jobs: dict[str, tuple[str, dict[str, Any], str]], rule: Callable[..., bool]
) -> list[str]:
    return [i for i in _newest_first(client, "failed") if rule(*jobs[i])]


def _at(data: Any, *path: str | int) -> Any:
    for part in path:
        data = data[part]
    return data


CASES: list[tuple[str, Callable[[str, dict[str, Any], str], bool]]] = [
    ("reason ~ timeout", lambda n, d, r: "timeout" in r.lower()),
    ("reason ~ TIMEOUT AFTER", lambda n, d, r: "timeout after" in r.lower()),
    ("reason ~ reset by", lambda n, d, r: "reset by" in r.lower()),
    ("reason = connection RESET by peer", lambda n, d, r: r == "connection RESET by peer"),
    ("reason = connection reset by peer", lambda n, d, r: False),
    ("name ~ mail", lambda n, d, r: "mail" in n.lower()),
    ("name = Send-Mail", lambda n, d, r: n == "Send-Mail"),
    ("name ~ ✂", lambda n, d, r: "✂" in n),
    ("data ~ user1@", lambda n, d, r: "user1@" in d["email"]),
    ('data ~ "user_id":3', lambda n, d, r: d["user_id"] == 3),
    ("data ~ café ✉", lambda n, d, r: d["note"] == "café ✉"),
    ("data.user_id = 3", lambda n, d, r: d["user_id"] == 3),
    ('data.user_id = "3"', lambda n, d, r: False),
    ("data.flags.vip = true", lambda n, d, r: d["flags"]["vip"] is True),
    ("data.flags.tier = null", lambda n, d, r: d["flags"]["tier"] is None),
    ("data.flags.tier = gold", lambda n, d, r: d["flags"]["tier"] == "gold"),
    ("data.items.0.sku = S-2", lambda n, d, r: _at(d, "items", 0, "sku") == "S-2"),
    ("data.items.1.sku = X", lambda n, d, r: True),
    ("data.note = café ✉", lambda n, d, r: d["note"] == "café ✉"),
    ("data.missing.deeper = 1", lambda n, d, r: False),
    # Hostile text: every character is itself, no pattern, no wildcard.
    ("reason ~ .*", lambda n, d, r: ".*" in r),
    ("reason ~ [a-z]+", lambda n, d, r: "[a-z]+" in r),
    ("reason ~ %d", lambda n, d, r: "%d" in r),
    ("reason ~ 100%", lambda n, d, r: "100%" in r),
    ("reason ~ *star*", lambda n, d, r: "*star*" in r),
    ("reason ~ (x)", lambda n, d, r: "(x)" in r),
    ("reason ~ %", lambda n, d, r: "%" in r),
    ("name ~ *", lambda n, d, r: False),
    ("data ~ .*%[]", lambda n, d, r: d["weird"] == ".*%[]"),
    ("data.weird = .*%[]", lambda n, d, r: d["weird"] == ".*%[]"),
]


@pytest.mark.parametrize(("text", "rule"), CASES, ids=[text for text, _ in CASES])
def test_each_field_and_operator_matches_exactly_the_jobs_the_rule_picks_newest_first(
    redis_client: Redis,
    failed_jobs: dict[str, tuple[str, dict[str, Any], str]],
    text: str,
    rule: Callable[[str, dict[str, Any], str], bool],
) -> None:
    expected = _expect(redis_client, failed_jobs, rule)
    assert _search(redis_client, text) == expected


def test_a_job_id_is_found_exactly_and_only_in_the_state_that_holds_it(
    redis_client: Redis, failed_jobs: dict[str, Any], ours: Queue
) -> None:
    some = next(iter(failed_jobs))
    waiting = ours.add("later", {})
    assert _search(redis_client, f"id = {some}") == [some]
    assert _search(redis_client, f"id = {waiting}") == []
    assert _search(redis_client, f"id = {waiting}", state="wait") == [waiting]
    assert _search(redis_client, "id = 99999") == []
    assert _search(redis_client, "id = a:b") == []  # never a job id: no match, no error


def test_small_slices_carried_by_cursor_find_the_same_jobs_as_one_pass(
    redis_client: Redis, failed_jobs: dict[str, Any]
) -> None:
    slow = Pacing(target_call_ms=0.001, sleep=lambda _: None)  # the smallest slices
    query = parse_query("reason ~ e")
    steps = []
    cursor: Cursor | None = Cursor(batch=10)
    while True:
        step = search_step(redis_client, REF, "failed", query, cursor, budget_ms=0, pacing=slow)
        steps.append(step)
        if step.cursor is None:
            break
        # The page hands the cursor back as text.
        cursor = Cursor.decode(step.cursor.encode(), TAB["failed"])
    assert len(steps) > 2
    assert [hit for step in steps for hit in step.hits] == _search(redis_client, "reason ~ e")
    assert steps[-1].searched == steps[-1].total == 60


def test_jobs_leaving_the_state_mid_search_do_not_make_it_skip_the_rest(
    redis_client: Redis, failed_jobs: dict[str, Any], ours: Queue
) -> None:
    """The cursor is a score, not a rank: retrying jobs already looked at
    (they leave the failed set) must not shift unseen ones past it."""
    query = parse_query("reason ~ e")
    everything = _search(redis_client, "reason ~ e")
    first = search_step(
        redis_client,
        REF,
        "failed",
        query,
        Cursor(batch=10),
        budget_ms=0,
        pacing=Pacing(target_call_ms=1e9, sleep=lambda _: None),
    )
    assert first.cursor is not None
    assert 0 < first.searched < 60
    seen = _newest_first(redis_client, "failed")[: first.searched]
    for job_id in seen:
        ours.retry(job_id)
    rest: list[str] = []
    cursor: Cursor | None = first.cursor
    while cursor is not None:
        step = search_step(redis_client, REF, "failed", query, cursor, pacing=NO_REST)
        rest.extend(step.hits)
        cursor = step.cursor
    assert _once(first.hits + rest) == everything


def test_the_wait_tab_searches_the_wait_list_then_the_paused_one(
    redis_client: Redis, ours: Queue
) -> None:
    before = ours.add_bulk([("early", {"k": i}, None) for i in range(5)])
    ours.pause()  # 5.x layout: the ready jobs are in "paused" now
    after = ours.add_bulk([("late", {"k": i}, None) for i in range(5)])
    found = _search(redis_client, "data ~ k", state="wait")
    assert sorted(found, key=int) == sorted(before + after, key=int)
    assert _search(redis_client, "name = early", state="wait") == list(reversed(before))


def test_a_field_too_large_to_look_into_is_counted_not_read(
    redis_client: Redis, ours: Queue
) -> None:
    big = ours.add("big", {"blob": "needle" + "x" * MAX_FIELD_BYTES})
    small = ours.add("small", {"blob": "needle"})
    query = parse_query("data ~ needle")
    steps = list(search_all(redis_client, REF, "wait", query, pacing=NO_REST))
    assert [hit for step in steps for hit in step.hits] == [small]
    assert sum(step.unchecked for step in steps) == 1
    assert big not in steps[-1].hits


def test_broken_jobs_and_a_wrong_typed_state_key_never_crash_a_search(
    redis_client: Redis, failed_jobs: dict[str, Any]
) -> None:
    redis_client.zadd(f"bull:{NAME}:failed", {"ghost": 1, "stringy": 2})
    redis_client.set(f"bull:{NAME}:stringy", "not a hash")
    redis_client.hset(f"bull:{NAME}:bad-json", mapping={"data": "{nope", "name": "x"})
    redis_client.zadd(f"bull:{NAME}:failed", {"bad-json": 3})
    assert len(_search(redis_client, "data.user_id = 3")) == sum(
        1 for _, d, _ in failed_jobs.values() if d["user_id"] == 3
    )
    redis_client.set(f"bull:{NAME}:delayed", "garbage")
    with pytest.raises(SearchError, match="holds a string"):
        _search(redis_client, "name ~ x", state="delayed")


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("r" * 10_240, "10,240 characters long; at most 1,000"),
        ("timeout", "Write a field"),
        ("colour ~ red", "Unknown field"),
        ("reason ~ ", "Give a value"),
        ("id ~ 4", "matched exactly"),
        ("name.x = 1", "Only data has a path"),
        ("data.x ~ 1", "compares with ="),
        ("data.x = [1]", "one value"),
        ("data.x = 1e400", "too large"),
        ("data = 1", "searched with ~"),
        ('reason ~ "unterminated\\"', "not a valid JSON string"),
        ("data." + ".".join("a" * 17) + " = 1", "at most 16 parts"),
        ("reason ~ \ud800", "not valid Unicode"),
    ],
)
def test_a_malformed_or_hostile_query_is_refused_in_plain_words(text: str, words: str) -> None:
    with pytest.raises(QueryError, match=words.replace("(", r"\(")):
        parse_query(text)


@pytest.mark.parametrize(
    "forged",
    [
        "",
        "x",
        "9||0|200|",
        "0|abc|0|200|5",
        "0|inf|0|200|5",
        "0|1e999|0|200|5",
        "0|1764953100000.5.5|0|200|5",  # score characters, no number
        "0|(5|0|200|5",
        "0|5|0|200|",
        "0||0|200|5",
        "0|5|0|200|" + "x" * 600,
    ],
)
def test_a_forged_cursor_is_refused(forged: str) -> None:
    with pytest.raises(QueryError, match="not valid"):
        Cursor.decode(forged, TAB["failed"])


def test_a_cursor_anchored_on_a_job_id_of_the_longest_length_is_taken() -> None:
    """A slice may end on a job whose id is as long as ids go (an
    idempotency key of 512 characters): its cursor must come back whole;
    one character more is no job id, so a forgery."""
    longest = ("order-2026-12-05-" + "9f86d081884c7d65" * 40)[:MAX_JOB_ID_LENGTH]
    validate_job_id(longest)
    cursor = Cursor(key=0, start="1764953100000", anchor=longest, searched=200, batch=400)
    assert Cursor.decode(cursor.encode(), TAB["failed"]) == cursor
    with pytest.raises(QueryError, match="not valid"):
        Cursor.decode(cursor.encode() + "a", TAB["failed"])


def test_a_list_cursor_must_be_an_index() -> None:
    with pytest.raises(QueryError):
        Cursor.decode("0|+inf|0|200|", TAB["wait"])
    with pytest.raises(QueryError):
        Cursor.decode("0|4|0|200|7", TAB["wait"])
    assert Cursor.decode("1|40|40|99999|", TAB["wait"]).batch == 5000
    assert Cursor.decode("0|17.5|3|10|a|b", TAB["failed"]).anchor == "a|b"


def test_each_slice_stays_short_and_the_search_rests_between_slices(
    redis_client: Redis, ours: Queue
) -> None:
    ours.add_bulk([("n", {"i": i, "pad": "p" * 150}, None) for i in range(3000)])
    rests: list[float] = []
    pacing = Pacing(target_call_ms=2.0, duty=0.5, sleep=rests.append)
    steps = list(search_all(redis_client, REF, "wait", parse_query("data ~ zzz"), pacing=pacing))
    calls = sum(step.calls for step in steps)
    assert steps[-1].searched == 3000
    assert calls > 3
    # Slices grow from the first size toward the target, and each call is
    # followed by a rest as long as it (duty 0.5), bar the last.
    assert len(rests) == calls - 1
    assert sum(rests) * 1000 == pytest.approx(sum(s.busy_ms for s in steps), rel=0.5)


def test_a_slice_grows_or_shrinks_toward_the_target_call_time_within_bounds() -> None:
    # Wall-clock call times are the bench's to measure (bench/search.py); here
    # the rule that keeps calls short: a slice's size follows the time its
    # last call took, at most doubling or halving, within fixed bounds.
    pacing = Pacing(target_call_ms=3.0)
    assert pacing.next_batch(400, 1.5) == 800  # fast: double
    assert pacing.next_batch(400, 0.01) == 800  # far faster: still only double
    assert pacing.next_batch(400, 6.0) == 200  # slow: halve
    assert pacing.next_batch(400, 600.0) == 200  # far slower: still only halve
    assert pacing.next_batch(MAX_BATCH, 0.1) == MAX_BATCH
    assert pacing.next_batch(MIN_BATCH, 100.0) == MIN_BATCH


def test_query_text_round_trips() -> None:
    assert parse_query("  data.user_id   =  42 ") == Query("data", "=", 42, ("user_id",))
    assert parse_query('reason ~ "  padded "').value == "  padded "
    assert parse_query("FailedReason ~ x").field == "reason"
    assert parse_query("data.a = 42").text == "data.a = 42"


@pytest.mark.peer
@pytest.mark.filterwarnings("ignore::ResourceWarning")
async def test_jobs_the_peer_wrote_are_found_by_data_name_path_and_reason(
    redis_url: str, redis_client: Redis
) -> None:
    """bullmq 2.20.1 (Python) writes data with json.dumps: "é" as \\u00e9."""
    peer = bullmq.Queue(NAME, {"connection": redis_url})
    try:
        accented = await peer.add("Crème ✉", {"note": "café au lait", "user": {"id": 42}})
        plain = await peer.add("plain", {"note": "tea", "user": {"id": "42"}})
    finally:
        await peer.close()
    raw = redis_client.hget(f"bull:{NAME}:{accented.id}", "data")
    assert raw is not None
    assert b"\\u00e9" in raw  # the escaped form is what is searched
    assert _search(redis_client, "data ~ café", "wait") == [accented.id]
    assert _search(redis_client, "data ~ au lait", "wait") == [accented.id]
    assert _search(redis_client, "name ~ CRÈME", "wait") == []  # only ASCII letters fold
    assert _search(redis_client, "name ~ CRèME ✉", "wait") == [accented.id]
    assert _search(redis_client, "data.user.id = 42", "wait") == [accented.id]
    assert _search(redis_client, 'data.user.id = "42"', "wait") == [plain.id]

    async def fails(job: Any, token: str) -> Any:
        raise ValueError(f'gateway said: "{job.data["note"]}" ✗')

    worker = bullmq.Worker(NAME, fails, {"connection": redis_url, "drainDelay": 1})
    try:
        ours = Queue(NAME, redis_client)
        deadline = 200
        while ours.get_counts("failed")["failed"] < 2 and deadline:
            deadline -= 1
            await asyncio.sleep(0.05)
    finally:
        await worker.close()
    # The peer stores the reason JSON-encoded ("\u2717"): found as typed all the same.
    assert sorted(_search(redis_client, "reason ~ GATEWAY SAID")) == sorted([plain.id, accented.id])
    assert sorted(_search(redis_client, "reason ~ ✗")) == sorted([plain.id, accented.id])
    assert _search(redis_client, "reason ~ tea") == [plain.id]
    assert _search(redis_client, 'reason ~ "café au' + '"') == [accented.id]
    assert _search(redis_client, 'reason ~ said: "café') == [accented.id]


# --------------------------------------------------------------------------- why a job matched


def _failed_with(ours: Queue, reasons: list[str]) -> list[str]:
    """One failed charge job per reason, in order: their ids."""
    ids = ours.add_bulk([("charge", {"n": n}, None) for n in range(len(reasons))])
    for job_id, reason in zip(ids, reasons, strict=True):
        ours.fail(job_id, reason)
    return ids


def _found(client: Redis, text: str, around: int = 50) -> tuple[list[str], dict[str, FoundText]]:
    step = search_step(client, REF, "failed", parse_query(text), around=around, pacing=NO_REST)
    assert step.done
    return step.hits, step.found


def test_each_hit_shows_its_fields_text_around_the_match_so_a_false_hit_is_visible(
    ours: Queue, redis_client: Redis
) -> None:
    """`data ~ c-42` finds card c-42 and, as "contains" should, c-420 and c-429:
    only the text after the match tells them apart."""
    cards = ["c-42", "c-420", "c-429", "c-7"]
    ids = ours.add_bulk([("charge", {"card": card, "amount": 1999}, None) for card in cards])
    for job_id in ids:
        ours.fail(job_id, "card_declined: insufficient_funds")

    hits, found = _found(redis_client, "data ~ c-42")

    assert hits == ids[2::-1]
    shown = {job_id: (f.before, f.match, f.after) for job_id, f in found.items()}
    assert shown == {
        ids[0]: ('{"card":"', "c-42", '","amount":1999}'),
        ids[1]: ('{"card":"', "c-420"[:4], '0","amount":1999}'),
        ids[2]: ('{"card":"', "c-42", '9","amount":1999}'),
    }
    assert not any(f.more_before or f.more_after for f in found.values())
    assert {f.name for f in found.values()} == {"data"}


def test_the_text_is_a_bounded_window_of_the_field_as_stored_cut_between_characters(
    ours: Queue, redis_client: Redis
) -> None:
    """A long stack-like reason: 40 bytes each side, the case as stored (the
    search ignores ASCII case), and no character cut in half at the edges
    (each "é" and "✉" is several bytes)."""
    reason = "é" * 100 + " Gateway TIMEOUT after 30412 ms " + "✉" * 100
    (job_id,) = ours.add_bulk([("charge", {"n": 1}, None)])
    ours.fail(job_id, reason)

    _, found = _found(redis_client, "reason ~ gateway timeout")

    text = found[job_id]
    assert text.name == "reason"
    assert text.match == "Gateway TIMEOUT"
    assert (text.more_before, text.more_after) == (True, True)
    assert text.before.endswith("é ")
    assert set(text.before[:-1]) == {"é"}
    assert text.after.startswith(" after 30412 ms ")
    assert set(text.after[16:]) == {"✉"}
    assert len(text.before.encode()) <= AROUND_BYTES
    assert len(text.after.encode()) <= AROUND_BYTES
    assert "\ufffd" not in text.before + text.after


def test_a_window_starting_inside_a_character_drops_each_continuation_byte(
    ours: Queue, redis_client: Redis
) -> None:
    """Russian reasons whose window (40 bytes before "timeout") starts on the
    second byte of a two-byte letter: pe (D0 BF) and er (D1 80), the two
    ends of the continuation bytes. The half letter is left out, never shown
    as U+FFFD."""
    reasons = [
        "Провайдер платежей 42 не ответил: timeout",
        "Ошибка сервера 318: превышено время, timeout",
    ]
    ids = _failed_with(ours, reasons)

    _, found = _found(redis_client, "reason ~ timeout")

    shown = {job_id: (f.before, f.more_before, f.match) for job_id, f in found.items()}
    assert shown == {
        ids[0]: ("латежей 42 не ответил: ", True, "timeout"),
        ids[1]: ("а 318: превышено время, ", True, "timeout"),  # noqa: RUF001 (a Cyrillic letter)
    }


def test_a_window_starting_on_a_byte_that_is_no_half_character_shows_it(
    ours: Queue, redis_client: Redis
) -> None:
    """Only continuation bytes (0x80-0xBF) are dropped at a cut start. A DEL
    (0x7F) typed into a file name is text; an "À" from a worker that writes
    Latin-1 (0xC0, never part of UTF-8) is shown as U+FFFD, so the reader
    sees the field holds a byte that is not UTF-8. Each sits exactly
    AROUND_BYTES before the match, where the window starts."""
    reasons = [
        b'sftp upload failed: no such file "/incoming/report\x7f.csv"'
        b" on sftp.partner-bank.example:22, timeout",
        "Erreur SMTP 451 sur mx2.exemple.fr: délai dépassé À 14:00:31,"
        " fin de session SMTP (4 s) : timeout".encode("latin-1"),
    ]
    ids = ours.add_bulk([("deliver", {"n": n}, None) for n in range(len(reasons))])
    for job_id, reason in zip(ids, reasons, strict=True):
        ours.fail(job_id, "placeholder")
        redis_client.hset(REF.keys.job(job_id), "failedReason", reason)
        assert reason[reason.index(b"timeout") - AROUND_BYTES] in (0x7F, 0xC0)

    _, found = _found(redis_client, "reason ~ timeout")

    shown = {job_id: (f.before, f.more_before) for job_id, f in found.items()}
    assert shown == {
        ids[0]: ('\x7f.csv" on sftp.partner-bank.example:22, ', True),
        ids[1]: ("\ufffd 14:00:31, fin de session SMTP (4 s) : ", True),
    }


def test_a_window_cut_inside_a_character_at_its_end_leaves_that_character_out(
    ours: Queue, redis_client: Redis
) -> None:
    """The 40 bytes after the match end on the first byte of a two-byte
    Cyrillic letter: the half letter is left out, never shown as U+FFFD."""
    reason = "Gateway TIMEOUT after 30412 ms: ответ не получен, повтор через 60 с"  # noqa: RUF001
    (job_id,) = ours.add_bulk([("charge", {"n": 1}, None)])
    ours.fail(job_id, reason)

    _, found = _found(redis_client, "reason ~ gateway timeout")

    text = found[job_id]
    assert (text.match, text.after, text.more_after) == (
        "Gateway TIMEOUT",
        " after 30412 ms: ответ не пол",
        True,
    )


def test_only_the_rows_asked_for_get_their_text_and_a_path_or_an_id_has_none(
    failed_jobs: dict[str, Any], redis_client: Redis
) -> None:
    hits, found = _found(redis_client, "name ~ mail", around=3)
    assert len(hits) == 30
    assert list(found) == hits[:3]
    assert all(f.match.lower() == "mail" for f in found.values())

    hits, found = _found(redis_client, "data.user_id = 3")
    assert hits
    assert found == {}
    job_id = next(iter(failed_jobs))
    assert _found(redis_client, f"id = {job_id}") == ([job_id], {})


def test_a_step_of_several_calls_asks_each_only_for_the_texts_still_wanted(
    failed_jobs: dict[str, Any], redis_client: Redis
) -> None:
    """Slices of 10 jobs, 5 of them mail jobs: the first call's 5 texts leave
    3 of the 8 a page wants for the next call, and none after."""
    slow = Pacing(target_call_ms=0.001, sleep=lambda _: None)  # the smallest slices
    step = search_step(
        redis_client,
        REF,
        "failed",
        parse_query("name ~ mail"),
        Cursor(batch=10),
        budget_ms=60_000,
        around=8,
        pacing=slow,
    )
    assert step.done
    assert step.calls > 2
    assert len(step.hits) == 30
    assert list(step.found) == step.hits[:8]


def test_a_long_match_is_cut_too(ours: Queue, redis_client: Redis) -> None:
    """The query may be 1,000 characters: what a row shows stays bounded."""
    reason = "x" * 900
    (job_id,) = ours.add_bulk([("charge", {"n": 1}, None)])
    ours.fail(job_id, reason)
    _, found = _found(redis_client, "reason = " + reason)
    text = found[job_id]
    assert text.before == ""
    assert len((text.match + text.after).encode()) <= 3 * AROUND_BYTES
    assert text.more_after
    # Exactly: the match cut at twice the bytes each side, then one side's worth.
    assert (text.match, text.after) == ("x" * 2 * AROUND_BYTES, "x" * AROUND_BYTES)


def test_the_text_says_it_is_cut_before_from_the_first_byte_left_out(
    ours: Queue, redis_client: Redis
) -> None:
    """Node's refusal text, its address one character longer: a match exactly
    AROUND_BYTES bytes in shows the whole field before it; one byte further
    and the window leaves the field's first byte out, which it says."""
    reasons = [
        "connect ECONNREFUSED 10.0.31.17:6379 at TCPConnectWrap.afterConnect",
        "connect ECONNREFUSED 10.0.31.175:6379 at TCPConnectWrap.afterConnect",
    ]
    ids = _failed_with(ours, reasons)

    _, found = _found(redis_client, "reason ~ tcpconnectwrap")

    whole, cut = found[ids[0]], found[ids[1]]
    assert len(reasons[0].split("TCP")[0]) == AROUND_BYTES
    assert (whole.before, whole.more_before) == (reasons[0].split("TCP")[0], False)
    assert (cut.before, cut.more_before) == (reasons[1].split("TCP")[0][1:], True)
    assert cut.match == whole.match == "TCPConnectWrap"
