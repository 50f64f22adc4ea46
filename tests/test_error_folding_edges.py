"""Error folding at edges its table did not reach, found by mutation testing
(issue 26, docs/mutation.md): an IPv6 address written in full with nothing
else holding a colon, and a JSON-quoted reason cut at exactly the bytes a
cohort reads of it."""

from __future__ import annotations

import json

from queues.read.cohorts import REASON_BYTES, fold_reason
from queues.read.error_folding import fold, fold_field


def test_an_ipv6_address_written_in_full_is_folded_when_it_holds_the_only_colons() -> None:
    """Eight groups are seven colons: the rule's cheap test ("::" or seven
    colons) must let such a reason through, or each host is its own group."""
    for reason in (
        "connect ETIMEDOUT 2a05:d018:1a2b:3c00:9f1e:2b3c:4d5e:6f70",
        "connect ETIMEDOUT 2600:1f18:4a3:6902:c5c0:bd4e:b2f1:9a10",
    ):
        assert fold(reason) == "connect ETIMEDOUT <ip>"


def test_a_json_quoted_reason_cut_at_the_bytes_a_cohort_reads_folds_as_the_whole() -> None:
    """bullmq's Python port stores a reason JSON-quoted; httpx's 414 names
    the whole URL, so the field is longer than the REASON_BYTES a cohort
    reads. Cut there by the script (exactly REASON_BYTES bytes, no closing
    quote) or read whole, it is the same kind of failure, unquoted."""
    url = "https://api.example.com/v1/search?" + "&".join(f"sku={n:08d}" for n in range(120))
    raw = json.dumps(f"Client error '414 URI Too Long' for url '{url}'").encode()
    assert len(raw) > REASON_BYTES
    assert b"\\" not in raw
    cut = raw[:REASON_BYTES]
    assert fold_reason(cut) == fold_reason(raw) == "Client error <str> for url '<url>"
    assert fold_field(cut, read=REASON_BYTES) == fold_field(raw, read=REASON_BYTES)
