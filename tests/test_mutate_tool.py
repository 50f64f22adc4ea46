"""bench/mutate.py's mutators (./run.sh mutate): what they change and what
they leave alone. The mutation runs themselves are not part of the suite
(minutes per module); docs/mutation.md has their results."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def mutate() -> ModuleType:
    spec = importlib.util.spec_from_file_location("bench_mutate", ROOT / "bench" / "mutate.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["bench_mutate"] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


LUA = """--[[
  A header: a < b, KEYS[1] and 3 are words here.
]]
local count = tonumber(ARGV[5])  -- a comment: x > 2
if #ids == count and not paused then
  redis.call("ZADD", KEYS[2], 0, "a < b")
end
emit_event(events, cap, "waiting",
  "jobId", job_id)
"""


def test_the_lua_mutator_changes_code_only_never_comments_or_strings(mutate: ModuleType) -> None:
    found = {(m.line, m.operator, m.mutated) for m in mutate.lua_mutants("x.lua", LUA)}
    assert found == {
        (5, "compare", "if #ids ~= count and not paused then"),
        (5, "and/or", "if #ids == count or not paused then"),
        (5, "drop not", "if #ids == count and paused then"),
        (6, "number+1", 'redis.call("ZADD", KEYS[2], 1, "a < b")'),
        (6, "delete call", ""),
        (8, "delete call", ""),
    }
    deleted = next(m for m in mutate.lua_mutants("x.lua", LUA) if m.line == 8)
    assert deleted.source.split("\n")[7:9] == ["", ""]  # both lines of the call, numbering kept


PYTHON = """from __future__ import annotations

LIMIT = 50


def kept(reasons: dict[str, int], cap: int = 3) -> bool:
    return len(reasons) < LIMIT and cap > 0
"""


def test_the_python_mutator_leaves_annotations_and_constant_values_alone(
    mutate: ModuleType,
) -> None:
    found = {(m.line, m.mutated) for m in mutate.python_mutants("x.py", PYTHON)}
    assert (7, "return len(reasons) <= LIMIT and cap > 0") in found
    assert (7, "return len(reasons) < LIMIT or cap > 0") in found
    assert (7, "return len(reasons) < LIMIT and cap > 1") in found
    assert not any(line in (3, 6) for line, _ in found), found
