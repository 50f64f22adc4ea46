"""Loads the Lua transition scripts of ``priv/scripts`` and runs them by SHA.

Each file is ``<command>-<KEYS count>.lua``; the count in the name is taken as
the script's arity so a builder passing the wrong number of keys fails loudly
here, before Redis sees it. ``--- @include "<name>"`` lines pull a fragment from
``priv/scripts/includes/`` (each fragment once per script, recursively); an
include inside a function body defines its functions only when that function
runs, which is how the per-job scripts keep their rare paths from costing
every call (includes/takeNextJob.lua). Scripts
are read and hashed once per process; EVALSHA is tried first and a NOSCRIPT
answer (a restarted or different server) loads the source and retries.

Every file opens with ``#!lua`` and its flags (Redis 7+ script flags). Without
``allow-oom`` (or ``no-writes``) Redis refuses the script before it starts
when it is over ``maxmemory``, with an ``OOM`` error: a full Redis moves
nothing. Older servers (Redis < 7) cannot compile a shebang: the first such
answer switches this process to each script's legacy source, which has no
shebang and, unless the flags let it run when full, opens with
``includes/memoryGuard.lua``: the same refusal, asked of ``INFO memory``.
The switch is per process, not per server; the legacy sources are correct on
every version, only a little slower (one INFO per call).

A script that refuses because one of the queue's keys has the wrong type
answers an error reply naming the key; the runners raise it as
:class:`queues.errors.CorruptKey`.

Builders elsewhere (``queues.commands``) are pure functions returning a
:class:`ScriptCall`; this module only knows how to execute one.
"""

from __future__ import annotations

import hashlib
import logging
import re
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from redis import Redis
from redis.asyncio import Redis as AsyncRedis
from redis.exceptions import NoScriptError, ResponseError

from queues.errors import raise_refusal

log = logging.getLogger("echomq.scripts")


def _scripts_dir() -> Path:
    """Where ``priv/scripts`` is: inside this package when installed from the
    wheel (pyproject.toml maps it to ``queues/priv``), else at the top of the
    checkout this package sits in."""
    package = Path(__file__).resolve().parent
    installed = package / "priv" / "scripts"
    return installed if installed.is_dir() else package.parent / "priv" / "scripts"


SCRIPTS_DIR = _scripts_dir()
MEMORY_GUARD = SCRIPTS_DIR / "includes" / "memoryGuard.lua"
_FILE_NAME = re.compile(r"^(?P<name>[A-Za-z][A-Za-z0-9]*)-(?P<keys>\d+)\.lua$")
_INCLUDE = re.compile(r'^\s*---\s*@include\s+"(?P<name>[A-Za-z0-9_\-]+)"\s*$', re.MULTILINE)
_SHEBANG = re.compile(r"^#!lua(?: flags=(?P<flags>[a-z-]+(?:,[a-z-]+)*))?\n")
# The flags Redis 7 knows for EVAL scripts.
KNOWN_FLAGS = frozenset(
    {"no-writes", "allow-oom", "allow-stale", "no-cluster", "allow-cross-slot-keys"}
)
# With either flag Redis runs the script over maxmemory (no-writes implies
# allow-oom), so its legacy source gets no memory guard either.
RUNS_WHEN_FULL = frozenset({"no-writes", "allow-oom"})

ScriptArg = str | bytes | int | float


class ScriptLoadError(RuntimeError):
    """A script file is misnamed, lacks its flags line, or includes a fragment
    that does not exist."""


@dataclass(frozen=True, slots=True)
class Script:
    """A script as Redis 7+ runs it (``source``, with its shebang) and as older
    servers run it (``legacy_source``; empty: the same text)."""

    name: str
    num_keys: int
    source: str
    sha: str
    flags: frozenset[str] = frozenset()
    legacy_source: str = ""
    legacy_sha: str = ""


@dataclass(frozen=True, slots=True)
class ScriptCall:
    """One script invocation, fully built: what a builder returns."""

    script: Script
    keys: tuple[str, ...]
    args: tuple[ScriptArg, ...]

    def __post_init__(self) -> None:
        if len(self.keys) != self.script.num_keys:
            raise ValueError(
                f"{self.script.name} takes {self.script.num_keys} keys, got {len(self.keys)}"
            )


def _sha(source: str) -> str:
    return hashlib.sha1(source.encode(), usedforsecurity=False).hexdigest()


def _inline_includes(source: str, includes_dir: Path, seen: set[str]) -> str:
    def replace(match: re.Match[str]) -> str:
        name = match.group("name")
        if name in seen:
            return ""
        seen.add(name)
        path = includes_dir / f"{name}.lua"
        if not path.is_file():
            raise ScriptLoadError(f"missing include {name!r} ({path})")
        return _inline_includes(path.read_text(), includes_dir, seen)

    return _INCLUDE.sub(replace, source)


def _flags(file_name: str, source: str) -> tuple[frozenset[str], str]:
    """The flags a script's first line declares, and the text after that line."""
    match = _SHEBANG.match(source)
    if match is None:
        raise ScriptLoadError(f"{file_name} must open with '#!lua' or '#!lua flags=...'")
    flags = frozenset((match.group("flags") or "").split(",")) - {""}
    unknown = flags - KNOWN_FLAGS
    if unknown:
        raise ScriptLoadError(f"{file_name} declares unknown flags {sorted(unknown)}")
    return flags, source[match.end() :]


def load_scripts(directory: Path = SCRIPTS_DIR) -> dict[str, Script]:
    """Read every ``<command>-<N>.lua`` of ``directory`` with includes resolved."""
    scripts: dict[str, Script] = {}
    includes_dir = directory / "includes"
    guard = MEMORY_GUARD.read_text()
    for path in sorted(directory.glob("*.lua")):
        match = _FILE_NAME.match(path.name)
        if match is None:
            raise ScriptLoadError(f"script file {path.name} is not <command>-<KEYS>.lua")
        name = match.group("name")
        if name in scripts:
            raise ScriptLoadError(f"two files define script {name}")
        source = _inline_includes(path.read_text(), includes_dir, set())
        flags, body = _flags(path.name, source)
        legacy = body if flags & RUNS_WHEN_FULL else guard + body
        scripts[name] = Script(
            name, int(match.group("keys")), source, _sha(source), flags, legacy, _sha(legacy)
        )
    return scripts


@cache
def library() -> dict[str, Script]:
    """The scripts of ``priv/scripts``, read once per process."""
    return load_scripts()


def script(name: str) -> Script:
    try:
        return library()[name]
    except KeyError:
        raise ScriptLoadError(f"no script named {name!r} in {SCRIPTS_DIR}") from None


def call(name: str, keys: tuple[str, ...], args: tuple[ScriptArg, ...]) -> ScriptCall:
    """Shorthand for builders: ``call("moveToActive", keys, args)``."""
    return ScriptCall(script(name), keys, args)


# -- which source this process sends ------------------------------------------


@dataclass(slots=True)
class _Sources:
    legacy: bool = False


_SOURCES = _Sources()


def use_legacy_sources(enabled: bool) -> None:
    """Send the legacy sources (no shebang, memory guard in front) from now on.
    Switched on by itself when a server cannot compile a shebang."""
    _SOURCES.legacy = enabled


def code(s: Script) -> tuple[str, str]:
    """The (sha, source) this process sends for ``s``."""
    if _SOURCES.legacy and s.legacy_source:
        return s.legacy_sha, s.legacy_source
    return s.sha, s.source


def fell_back_to_legacy(error: ResponseError, s: Script) -> bool:
    """Whether ``error`` is a server without script flags failing to compile
    the shebang; if so this process now sends the legacy sources, and the
    caller sends its call again."""
    message = str(error)
    if _SOURCES.legacy or not s.legacy_source:
        return False
    if "Error compiling script" not in message or "'#'" not in message:
        return False
    log.warning("Redis does not understand script flags (Redis < 7): sending guarded sources")
    use_legacy_sources(True)
    return True


def run(client: Redis, c: ScriptCall) -> Any:
    """Execute a built call on a synchronous client (a cluster client works too)."""
    params: Any = (*c.keys, *c.args)
    sha, source = code(c.script)
    try:
        try:
            return client.evalsha(sha, len(c.keys), *params)
        except NoScriptError:
            return client.eval(source, len(c.keys), *params)
    except ResponseError as error:
        if fell_back_to_legacy(error, c.script):
            return run(client, c)
        raise_refusal(error)


async def arun(client: AsyncRedis, c: ScriptCall) -> Any:
    """Execute a built call on an asyncio client."""
    params: Any = (*c.keys, *c.args)
    sha, source = code(c.script)
    # Any: redis-py types these as sync-or-async before 8.0 and as awaitable since.
    answer: Any
    try:
        try:
            answer = client.evalsha(sha, len(c.keys), *params)
            return await answer
        except NoScriptError:
            answer = client.eval(source, len(c.keys), *params)
            return await answer
    except ResponseError as error:
        if fell_back_to_legacy(error, c.script):
            return await arun(client, c)
        raise_refusal(error)


def queue_in_pipeline(pipe: Any, c: ScriptCall) -> None:
    """Add a call to a pipeline; pair with :func:`ensure_loaded` beforehand,
    since a NOSCRIPT inside a pipeline cannot be retried call by call.
    Sent as a raw command: redis-py's cluster pipeline refuses ``evalsha()``
    but routes a raw EVALSHA by its keys."""
    pipe.execute_command("EVALSHA", code(c.script)[0], len(c.keys), *c.keys, *c.args)


def ensure_loaded(client: Redis, names: tuple[str, ...]) -> None:
    """SCRIPT LOAD the named scripts (cheap when already cached by the server)."""
    for name in names:
        s = script(name)
        try:
            client.script_load(code(s)[1])
        except ResponseError as error:
            if not fell_back_to_legacy(error, s):
                raise
            client.script_load(code(s)[1])
