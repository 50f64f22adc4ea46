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
    ("took 1.5s", "took <n>s"),
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
    ("connect ECONNREFUSED 10.0.0.12:6379", "connect ECONNREFUSED <n>:<n>"),
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
    ("user 'alice' not found", "user 'bob' not found"),
    ("open /srv/a/b.txt failed", "open /home/x/y/z.json failed"),
    ("id 0x1f bad", "id 0xdeadbeef bad"),
]
OTHER_GROUP = [
    ("timeout after 30012 ms", "connection refused after 30012 ms"),
    ("user 'alice' not found", "user 'alice' was found"),
    ("deadline exceeded", "Deadline exceeded!"),
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
