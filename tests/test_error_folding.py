"""The folding rules of error groups, as a table: what two reasons must share
a group, and what must stay apart."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from queues import codec
from queues.read import error_folding
from queues.read.error_folding import (
    MAX_FOLDED,
    NO_REASON,
    fold,
    fold_field,
    group_key,
)

FOLDED = [
    ("timeout after 30012 ms on job 991", "timeout after <n> ms on job <n>"),
    ("timeout after 30,401 ms on job 12", "timeout after <n> ms on job <n>"),
    # A duration with its unit glued on is one value: Go writes 950ms, 2.5s
    # and 1m30.2s for one kind of failure (it was "<n>s", "<n>ms", <n>m<n>s").
    ("took 1.5s", "took <dur>"),
    ("lock wait timed out after 1m30.25s", "lock wait timed out after <dur>"),
    ("timeout of 30000ms exceeded", "timeout of <dur> exceeded"),
    ("worker3 lost its lock", "worker<n> lost its lock"),
    ("user 'alice' not found", "user <str> not found"),
    ('key "orders:42" missing', "key <str> missing"),
    ("column `email` is null", "column <str> is null"),
    ('quoted "with \\" escape" done', "quoted <str> done"),
    ("order 3f2b8c1e-0c4d-4e8a-9b1f-2a3b4c5d6e7f gone", "order <uuid> gone"),
    ("order 3F2B8C1E-0C4D-4E8A-9B1F-2A3B4C5D6E7F gone", "order <uuid> gone"),
    ("segfault at 0x7ffd5e8c", "segfault at <hex>"),
    ("object 5f2b8c1e9a0d4e8a9b1f2a3b not found", "object <hex> not found"),
    ("commit a94a8fe5ccb19ba61c4c0873d391e987982fbbd3", "commit <hex>"),
    ("ENOENT: no such file, open '/tmp/x'", "ENOENT: no such file, open <str>"),
    ("ENOENT: open /var/data/2026/12/01/report.csv", "ENOENT: open <path>"),
    ("cannot read ./config/app.yml", "cannot read <path>"),
    ("bad module /app.py", "bad module <path>"),
    ("C:\\Users\\bob\\file.txt is locked", "<path> is locked"),
    ("GET https://api.example.com/v1/users/42?x=1 failed", "GET <url> failed"),
    # An address reads as one (it was "<n>:<n>": the dotted quad as a number).
    ("connect ECONNREFUSED 10.0.0.12:6379", "connect ECONNREFUSED <ip>:<n>"),
    # Node prints IPv6 unbracketed: its port cannot be told from a group.
    ("connect ECONNREFUSED ::1:6379", "connect ECONNREFUSED <ip>"),
    ("connect ETIMEDOUT 2600:1f18:4a3b::7c8d:443", "connect ETIMEDOUT <ip>"),
    ("upstream [2001:db8::8a2e:370:7334]:8443 reset", "upstream [<ip>]:<n> reset"),
    # Ids after a prefix and "_" (issue 21: \b never matched after "ord_").
    (
        "gateway timeout after 30412 ms (order ord_d3587f749c)",
        "gateway timeout after <n> ms (order ord_<id>)",
    ),
    ("No such customer: cus_NffrFeUfNVbHib", "No such customer: cus_<id>"),
    ("request req_5HwDaHxbTXh6xW failed", "request req_<id> failed"),
    # A hex id that came out all letters (one in 18,000 of ten digits).
    ("(order ord_debfbcdaea)", "(order ord_<id>)"),
    ("account user_01h455vb4pex5vsknk084sn02q locked", "account user_<id> locked"),
    ("org-zxuWeZrxelvFIjkaEuJxxWQA over quota", "org-<id> over quota"),
    ("event 2ILjWaYcm2hyJ6KzG0R8K0sPXfk lost", "event <id> lost"),
    ("job 01ARZ3NDEKTSV4RRFFQ69G5FAV expired", "job <id> expired"),
    ("instance i-0abc123def4567890 stopped", "instance i-<id> stopped"),
    ("host id TW2qeJptLnLL7+0pKGRgdR+t5T/GKN362KnA1JuYa83s=", "host id <id>"),
    ("short id a1b2c retried", "short id <id> retried"),
    # Words a person wrote stay, their numbers folded: snake_case and
    # SCREAMING_CASE names, words glued to a number, CamelCase, headers.
    (
        "max_connections reached for statement_timeout",
        "max_connections reached for statement_timeout",
    ),
    ("ER_LOCK_DEADLOCK: Deadlock found", "ER_LOCK_DEADLOCK: Deadlock found"),
    ("sha256 mismatch on utf8 input", "sha<n> mismatch on utf<n> input"),
    ("i18n key missing", "i<n>n key missing"),
    ("ProvisionedThroughputExceededException", "ProvisionedThroughputExceededException"),
    ("X-RateLimit-Remaining header missing", "X-RateLimit-Remaining header missing"),
    ("ActiveRecord::RecordNotFound at std::vector", "ActiveRecord::RecordNotFound at std::vector"),
    # A short hex-looking word is no id (Mongo's E11000; hex ids have 8+ digits).
    ("E11000 duplicate key error", "E<n> duplicate key error"),
    ("build cafe42 failed", "build cafe<n> failed"),
    ("mail to jane.doe+orders@example.co.uk bounced", "mail to <email> bounced"),
    ("on arn:aws:sqs:us-east-1:123456789012:orders-eu denied", "on <arn> denied"),
    ("expired at 2024-05-17T10:42:13.123Z", "expired at <time>"),
    ("until Fri, 17 May 2024 10:42:13 GMT", "until <time>"),
    ("at Thu Jun 27 2024 23:36:53 GMT-0700 (Pacific Daylight Time)", "at <time>"),
    ("ended 5/17/2024, 3:04:05 PM sharp", "ended <time> sharp"),
    (
        "Signature expired: 20240517T104213Z is now earlier",
        "Signature expired: <time> is now earlier",
    ),
    # pymysql's errors: their message is Python-quoted after the code.
    (
        "(2013, 'Lost connection to MySQL server during query')",
        "(<n>, 'Lost connection to MySQL server during query')",
    ),
    (
        "(1062, \"Duplicate entry 'a@b.io' for key 'users.email'\")",
        '(<n>, "Duplicate entry <str> for key <str>")',
    ),
    ("one-segment GET /health failed", "one-segment GET /health failed"),
    ("expected application/json, got text/html", "expected application/json, got text/html"),
    ("missing exports/2024/05/17/x.csv.gz", "missing <path>"),
    ("url: /v1/orders/42?expand=items (Caused by", "url: <path> (Caused by"),
    ("search /orders?id=42 failed", "search <path> failed"),
    ("  spaces   and\ttabs  ", "spaces and tabs"),
    ("first line 1\nsecond line 2", "first line <n>"),
    ("\n\nreason on the third line 7", "reason on the third line <n>"),
    ("", NO_REASON),
    (None, NO_REASON),
    ("   \n  ", NO_REASON),
    ("plain words stay as they are", "plain words stay as they are"),
    ("Ünïcödé 42 ☃", "Ünïcödé <n> ☃"),
    ("rate 30/s then 40/s", "rate <n>/s then <n>/s"),
]


@pytest.mark.parametrize(("reason", "folded"), FOLDED)
def test_fold_replaces_what_varies_per_job(reason: str | None, folded: str) -> None:
    assert fold(reason) == folded


SAME_GROUP = [
    ("timeout after 30012 ms on job 991", "timeout after 30401 ms on job 12"),
    ("timeout (order ord_d3587f749c)", "timeout (order ord_3587749123)"),
    ("render took 950ms", "render took 1m2.5s"),
    ("user 'alice' not found", "user 'bob' not found"),
    ("open /srv/a/b.txt failed", "open /home/x/y/z.json failed"),
    ("id 0x1f bad", "id 0xdeadbeef bad"),
]
OTHER_GROUP = [
    ("timeout after 30012 ms", "connection refused after 30012 ms"),
    ("user 'alice' not found", "user 'alice' was found"),
    ("deadline exceeded", "Deadline exceeded!"),
    ("(2013, 'Lost connection to MySQL server')", "(1205, 'Lock wait timeout exceeded')"),
]


@pytest.mark.parametrize(("a", "b"), SAME_GROUP)
def test_reasons_that_differ_only_in_data_share_a_group(a: str, b: str) -> None:
    assert group_key(fold(a)) == group_key(fold(b))


@pytest.mark.parametrize(("a", "b"), OTHER_GROUP)
def test_different_errors_stay_apart(a: str, b: str) -> None:
    assert group_key(fold(a)) != group_key(fold(b))


def test_a_huge_reason_folds_to_a_bounded_text() -> None:
    folded = fold("x" * 1_000_000)
    assert len(folded) == MAX_FOLDED


def test_the_group_key_is_short_hex_and_stable() -> None:
    key = group_key("timeout after <n> ms")
    assert len(key) == 16
    assert int(key, 16) >= 0
    assert key == group_key("timeout after <n> ms")


def test_folding_a_hostile_reason_is_fast() -> None:
    """No catastrophic backtracking: quotes never closed, long runs of hex."""
    import time

    hostile = "'" + "\\'" * 20_000 + " " + "a1" * 20_000 + " /" + "a/" * 20_000
    started = time.perf_counter()
    fold(hostile)
    assert time.perf_counter() - started < 0.5


def test_a_repeated_reason_is_folded_once_and_the_cache_is_bounded() -> None:
    reason = "a reason seen 100,000 times at 10:42"
    first = fold(reason)
    hits = error_folding._fold_line.cache_info().hits
    assert fold(reason) == first == "a reason seen <n> times at <n>:<n>"
    assert error_folding._fold_line.cache_info().hits == hits + 1
    assert error_folding._fold_line.cache_info().maxsize == error_folding._CACHED_LINES
    long = "x" * 10 * MAX_FOLDED + " 1"
    assert fold(long) == "x" * MAX_FOLDED  # only the first 4 * MAX_FOLDED characters are kept


def unshortcut(raw: bytes | str | None) -> tuple[str, str]:
    """What fold_field must answer: the field decoded, folded, keyed."""
    folded = fold(codec.failure_reason(raw))
    return group_key(folded), folded


# Reasons built from the characters the rules look at: digits next to hex
# letters, "0x", dashes (uuids), slashes and backslashes (paths), "://",
# quotes and escapes, separators inside numbers, line breaks, non-ASCII
# digits and letters, and bytes that are not UTF-8.
REASON_PARTS = st.sampled_from(
    [*"0123456789", *"abcdefxXgz", "0x", "0X", "-", "/", "\\", "://", "'", '"', "`", "\\'", "\\u00"]
)
REASON_PARTS |= st.sampled_from(
    [".", ",", ":", " ", "\n", "\t", "٣", "é", "☃", "C:\\", "~/", "./", "deadbeef", "12345678"]
)
# ... and what the id, address, date and duration rules look at.
REASON_PARTS |= st.sampled_from(
    [
        "_",
        "ord_",
        "org-",
        "A",
        "Q",
        "@",
        "x.io",
        "+",
        "=",
        "::",
        "?",
        "(",
        ", ",
        "%",
        "arn:aws:s:::",
    ]
)
REASON_PARTS |= st.sampled_from(
    ["T", "Z", "Mon", "May", " GMT", " AM", "ms", "s", "m", "h", "<", ">", "[", "]"]
)
REASON_BYTES = st.lists(REASON_PARTS, max_size=40).map(lambda parts: "".join(parts).encode()) | (
    st.binary(max_size=60)
)


@settings(max_examples=600, deadline=None)
@given(REASON_BYTES, st.data())
def test_a_field_folds_as_its_decoded_reason_whatever_its_digits(
    raw: bytes, data: st.DataObject
) -> None:
    """fold_field folds a field with its digits read as "1" (a cache of the
    forms reasons share): the answer is the decoded reason's, and a field
    that differs only in its digits gets its own right answer."""
    assert fold_field(raw) == unshortcut(raw)
    other = bytes(
        data.draw(st.sampled_from(b"0123456789")) if byte in b"0123456789" else byte for byte in raw
    )
    assert fold_field(other) == unshortcut(other)


@pytest.mark.parametrize(
    "raw",
    [
        b"segfault at 0x7ffd5e8c",  # "0x" is the one digit the rules tell apart
        b"1x5 and 0X1F",
        b'"quoted by bullmq\'s Python port: \\u0031 is a 1, 2"',
        json.dumps("caf\u00e9 42", ensure_ascii=True).encode(),
        b"x" * 5 * MAX_FOLDED + b" 1",  # too long to cache as a field
        b"\xff\xfe 12 not utf-8",
        "already text 42",
        None,
    ],
)
def test_fields_the_digit_form_cannot_stand_for_are_folded_as_they_are(
    raw: bytes | str | None,
) -> None:
    assert fold_field(raw) == unshortcut(raw)


def test_reasons_differing_in_their_numbers_are_folded_once() -> None:
    error_folding._fold_field.cache_clear()
    for n in range(10_000, 10_500):
        key, folded = fold_field(f"timeout after {n} ms on job {n * 7}".encode())
        assert folded == "timeout after <n> ms on job <n>"
        assert key == group_key(folded)
    # bullmq's Python port stores the reason JSON-quoted: one form more.
    for n in range(10_000, 10_500):
        assert fold_field(json.dumps(f"timeout after {n} ms on job {n * 7}").encode()) == (
            group_key("timeout after <n> ms on job <n>"),
            "timeout after <n> ms on job <n>",
        )
    assert error_folding._fold_field.cache_info().misses == 2
    assert error_folding._fold_field.cache_info().maxsize == error_folding._CACHED_LINES


@pytest.mark.parametrize("pad", range(error_folding._LONGEST_ESCAPE))
def test_a_json_quoted_reason_cut_inside_an_escape_folds_as_its_text(pad: int) -> None:
    """The index reads a reason's first error_folding.REASON_BYTES only: a JSON-quoted one
    (bullmq's Python port) loses its closing quote there, maybe in the middle
    of an escape, and still folds as its text, not as raw JSON."""
    text = "card declined " + "a" * pad + "\U0001f600" * 2_000  # each "\ud83d\ude00" in JSON
    raw = json.dumps(text).encode()
    assert len(raw) > error_folding.REASON_BYTES
    assert fold_field(raw) == (group_key(fold(text)), fold(text))
    assert fold_field(raw[: error_folding.REASON_BYTES]) == fold_field(raw)


def test_a_plain_reason_is_folded_from_its_first_reason_bytes_read_whole_or_cut() -> None:
    raw = ("timeout after 30012 ms " + "x" * 20_000).encode()
    assert (
        fold_field(raw) == fold_field(raw[: error_folding.REASON_BYTES]) == fold_field(raw.decode())
    )
    assert fold_field(raw)[1] == fold(raw.decode())
