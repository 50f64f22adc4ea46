"""The protocol's house rules, checked on every shipped script file."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from queues.scripts import MEMORY_GUARD, SCRIPTS_DIR, library

SCRIPT_FILES = sorted(SCRIPTS_DIR.glob("*.lua"))
ALL_LUA = SCRIPT_FILES + sorted((SCRIPTS_DIR / "includes").glob("*.lua"))


def _flags_line_and_rest(path: Path) -> tuple[str, str]:
    first, _, rest = path.read_text().partition("\n")
    return first, rest


@pytest.mark.parametrize("path", SCRIPT_FILES, ids=lambda p: p.name)
def test_each_script_header_documents_every_key_its_name_promises(path: Path) -> None:
    arity = int(path.stem.rsplit("-", 1)[1])
    flags_line, text = _flags_line_and_rest(path)
    assert flags_line.startswith("#!lua"), f"{path.name} must declare its flags first"
    header = text.split("]]", 1)[0]
    assert header.startswith("--[["), f"{path.name} must open with a header comment"
    documented = {int(n) for n in re.findall(r"KEYS\[(\d+)\]", header)}
    assert documented == set(range(1, arity + 1)), f"{path.name}: KEYS documented {documented}"
    body = text.split("]]", 1)[1]
    used_argv = {int(n) for n in re.findall(r"ARGV\[(\d+)\]", body)}
    documented_argv = {int(n) for n in re.findall(r"ARGV\[(\d+)\]", header)}
    assert used_argv <= documented_argv, f"{path.name}: ARGV used but not documented"
    assert re.search(r"(?i)returns?", header), f"{path.name}: header lists no return values"
    assert re.search(r"(?i)events?", header), f"{path.name}: header lists no events"


@pytest.mark.parametrize("path", SCRIPT_FILES, ids=lambda p: p.name)
def test_the_header_says_what_a_full_redis_does_as_the_flags_decide(path: Path) -> None:
    """Without allow-oom (or no-writes) Redis 7 refuses the script over
    maxmemory, and the legacy source opens with the memory guard."""
    script = library()[path.stem.rsplit("-", 1)[0]]
    header = _flags_line_and_rest(path)[1].split("]]", 1)[0]
    runs_when_full = bool(script.flags & {"allow-oom", "no-writes"})
    assert "Memory:" in header, f"{path.name}: header says nothing about a full Redis"
    refused = "refused when Redis is over maxmemory" in " ".join(header.split())
    assert refused != runs_when_full, f"{path.name}: header and flags disagree"
    guard = MEMORY_GUARD.read_text()
    assert script.legacy_source.startswith(guard) != runs_when_full
    assert "#!lua" not in script.legacy_source


@pytest.mark.parametrize("path", ALL_LUA, ids=lambda p: p.name)
def test_failures_stay_inside_the_closed_set(path: Path) -> None:
    codes = {int(c) for c in re.findall(r"return\s+(-\d+)", path.read_text())}
    assert codes <= set(range(-11, 0)), f"{path.name} returns {sorted(codes)}"


def test_no_script_reaches_keys_beyond_its_arity() -> None:
    for script in library().values():
        used = {int(n) for n in re.findall(r"KEYS\[(\d+)\]", script.source)}
        assert not used or max(used) <= script.num_keys, script.name


def test_no_script_builds_a_key_from_outside_its_queue() -> None:
    """Cluster safety: keys come from KEYS or from the queue's key prefix ARGV;
    a literal key name (e.g. "bull:...") would land in another slot."""
    literal_key = re.compile(r"redis\.call\(\s*\"\w+\"\s*,\s*\"[\w{}-]+:")
    for script in library().values():
        assert not literal_key.search(script.source), script.name
