from __future__ import annotations

import hashlib
from pathlib import Path

import pytest
from redis import Redis

from queues import scripts
from queues.scripts import Script, ScriptCall, ScriptLoadError, load_scripts


def _write(directory: Path, name: str, text: str) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    (directory / name).write_text(text)


def test_arity_comes_from_the_file_name_and_includes_are_inlined_once(tmp_path: Path) -> None:
    _write(tmp_path / "includes", "helper.lua", "local function helper() return 1 end\n")
    _write(
        tmp_path,
        "doThing-3.lua",
        '#!lua\n--- @include "helper"\n--- @include "helper"\nreturn helper()\n',
    )
    loaded = load_scripts(tmp_path)
    assert loaded["doThing"].num_keys == 3
    assert loaded["doThing"].source.count("local function helper") == 1


def test_misnamed_files_and_missing_includes_fail_loudly(tmp_path: Path) -> None:
    _write(tmp_path, "noArity.lua", "return 1")
    with pytest.raises(ScriptLoadError, match=r"noArity\.lua"):
        load_scripts(tmp_path)
    other = tmp_path / "other"
    _write(other, "x-0.lua", '#!lua\n--- @include "nope"\n')
    with pytest.raises(ScriptLoadError, match="nope"):
        load_scripts(other)


@pytest.mark.parametrize(
    ("text", "error"),
    [
        ("return 1\n", "must open with '#!lua'"),
        ("#!lua flags=allow-oom,go-faster\nreturn 1\n", "unknown flags"),
    ],
)
def test_a_script_must_declare_known_flags_on_its_first_line(
    tmp_path: Path, text: str, error: str
) -> None:
    _write(tmp_path, "x-0.lua", text)
    with pytest.raises(ScriptLoadError, match=error):
        load_scripts(tmp_path)


def test_the_legacy_source_drops_the_shebang_and_guards_unless_it_may_run_full(
    tmp_path: Path,
) -> None:
    _write(tmp_path, "writes-0.lua", "#!lua\nreturn 1\n")
    _write(tmp_path, "deletes-0.lua", "#!lua flags=allow-oom\nreturn 2\n")
    _write(tmp_path, "reads-0.lua", "#!lua flags=no-writes\nreturn 3\n")
    loaded = load_scripts(tmp_path)
    guard = scripts.MEMORY_GUARD.read_text()
    assert loaded["writes"].legacy_source == guard + "return 1\n"
    assert loaded["deletes"].legacy_source == "return 2\n"
    assert loaded["reads"].legacy_source == "return 3\n"
    assert loaded["reads"].flags == frozenset({"no-writes"})
    assert loaded["writes"].legacy_sha != loaded["writes"].sha


def test_a_call_with_the_wrong_number_of_keys_is_refused_before_redis() -> None:
    two_keys = Script("t", 2, "return 1", "0" * 40)
    with pytest.raises(ValueError, match="takes 2 keys"):
        ScriptCall(two_keys, ("a",), ())


def test_evalsha_falls_back_to_loading_on_noscript(redis_client: Redis) -> None:
    source = "return {KEYS[1], ARGV[1]}"
    sha = hashlib.sha1(source.encode(), usedforsecurity=False).hexdigest()
    c = ScriptCall(Script("echo", 1, source, sha), ("k",), ("v",))
    redis_client.script_flush()
    assert scripts.run(redis_client, c) == [b"k", b"v"]
    assert redis_client.script_exists(sha) == [True]
    assert scripts.run(redis_client, c) == [b"k", b"v"]


def test_every_shipped_script_loads_with_an_arity() -> None:
    for script in scripts.library().values():
        assert script.num_keys >= 0
        assert len(script.sha) == 40
