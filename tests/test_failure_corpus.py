"""The error folding on reasons as real services word them (tests/failure_corpus.py):
every kind of failure folds into exactly one group, and no two kinds share one."""

from __future__ import annotations

from collections import defaultdict

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from queues import codec
from queues.read.error_folding import fold, fold_field, group_key
from tests.failure_corpus import KINDS, samples

SAMPLES = 40
CORPUS = {kind: samples(kind, SAMPLES) for kind in KINDS}


def test_the_corpus_holds_forty_kinds_of_twenty_varied_samples_or_more() -> None:
    assert len(CORPUS) >= 40
    varied = [kind for kind, reasons in CORPUS.items() if len(set(reasons)) >= 20]
    # A few kinds are worded the same every time (the service puts nothing
    # of the job in them); they are here to stay apart from the others.
    assert len(varied) >= 40, sorted(set(CORPUS) - set(varied))


def _groups_of(reasons: list[str]) -> dict[str, list[str]]:
    groups: dict[str, list[str]] = defaultdict(list)
    for reason in reasons:
        groups[fold(reason)].append(reason)
    return groups


def test_every_kind_folds_into_exactly_one_group() -> None:
    shattered = {
        kind: groups for kind, reasons in CORPUS.items() if len(groups := _groups_of(reasons)) > 1
    }
    report = [
        f"{kind}: {len(groups)} groups, e.g. {sorted(groups)[:3]}"
        for kind, groups in shattered.items()
    ]
    assert not shattered, f"{len(shattered)} of {len(CORPUS)} kinds shatter:\n" + "\n".join(report)


def test_no_two_kinds_share_a_group() -> None:
    kinds_of: dict[str, set[str]] = defaultdict(set)
    for kind, reasons in CORPUS.items():
        for reason in reasons:
            kinds_of[fold(reason)].add(kind)
    shared = {text: kinds for text, kinds in kinds_of.items() if len(kinds) > 1}
    assert not shared, shared


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_a_kind_keeps_its_words(kind: str) -> None:
    """What folding leaves is the words a person wrote: no placeholder eats
    the whole reason, and a word of the reason's own (one with no digit)
    outside any id, quote, URL or path is still in the folded text."""
    folded = fold(CORPUS[kind][0])
    assert len(folded.replace("<", " ").split()) >= 2, folded
    assert any(len(word) >= 4 and word.isalpha() for word in folded.split()), folded


ALL_SAMPLES = [reason for reasons in CORPUS.values() for reason in reasons]


@settings(max_examples=300, deadline=None)
@given(st.sampled_from(ALL_SAMPLES), st.sampled_from(["plain", "json", "bytes"]), st.data())
def test_a_corpus_reason_folds_the_same_by_the_fast_path(
    reason: str, form: str, data: st.DataObject
) -> None:
    """fold_field reads a field with its digits as "1" and caches that form:
    on every corpus sample, in each way a field reaches it (text, bytes,
    JSON-quoted by bullmq's Python port), and with its digits changed, it
    answers what the decoded reason folds to."""
    digits = data.draw(st.lists(st.sampled_from("0123456789"), min_size=1, max_size=8))
    changed = "".join(
        digits[at % len(digits)] if char.isdigit() and char.isascii() else char
        for at, char in enumerate(reason)
    )
    for text in (reason, changed):
        raw: bytes | str = {
            "plain": text,
            "json": codec.dumps(text).encode(),
            "bytes": text.encode(),
        }[form]
        folded = fold(codec.failure_reason(raw))
        assert fold_field(raw) == (group_key(folded), folded)
