"""queues.numerals: the one parser of whole numbers from outside (issue 22).

ASCII digits only, bounded; what Python's int() also takes ("²" fails later,
"\u0661\u0662" and "1_000" pass as numbers nobody typed) is refused here."""

from __future__ import annotations

import time

import pytest
from hypothesis import given
from hypothesis import strategies as st

from queues.numerals import EXACT, UNSIGNED_64, NotWholeNumber, parse_whole


@pytest.mark.parametrize(
    ("text", "number"), [("0", 0), ("7", 7), ("007", 7), (str(EXACT), EXACT), ("0" * 50 + "1", 1)]
)
def test_ascii_digits_read_as_their_number(text: str, number: int) -> None:
    assert parse_whole(text) == number


@pytest.mark.parametrize(
    "text",
    ["", "²", "³", "\u0661\u0662", "\uff17", "1_000", "+7", "-1", " 7", "7 ", "7\n", "1e3",
     "1.0", "0x10", str(EXACT + 1), "9" * 5000],
)  # fmt: skip
def test_anything_else_is_refused(text: str) -> None:
    with pytest.raises(NotWholeNumber):
        parse_whole(text)


def test_the_bound_is_the_callers() -> None:
    assert parse_whole(str(UNSIGNED_64), UNSIGNED_64) == UNSIGNED_64
    with pytest.raises(NotWholeNumber, match="larger than 10,000"):
        parse_whole("10001", 10_000)


def test_a_million_digits_are_refused_without_reading_them_as_a_number() -> None:
    began = time.perf_counter()
    with pytest.raises(NotWholeNumber):
        parse_whole("9" * 1_000_000)
    assert time.perf_counter() - began < 0.05


@given(st.text())
def test_any_text_is_a_number_written_in_ascii_digits_or_refused(text: str) -> None:
    try:
        number = parse_whole(text)
    except NotWholeNumber:
        assert not (text.isascii() and text.isdigit()) or int(text) > EXACT
        return
    assert 0 <= number <= EXACT
    assert text.lstrip("0") == (str(number) if number else "")


@given(st.integers(min_value=0, max_value=EXACT))
def test_every_number_in_range_reads_back(number: int) -> None:
    assert parse_whole(str(number)) == number
