"""Loads the Lua transition scripts of ``priv/scripts`` and runs them by SHA.

Each file is ``<command>-<KEYS count>.lua``; the count in the name is taken as
the script's arity so a builder passing the wrong number of keys fails loudly
here, before Redis sees it. ``--- @include "<name>"`` lines pull a fragment from
``priv/scripts/includes/`` (each fragment once per script, recursively). Scripts
are read and hashed once per process; EVALSHA is tried first and a NOSCRIPT
answer (a restarted or different server) loads the source and retries.

Builders elsewhere (``queues.commands``) are pure functions returning a
:class:`ScriptCall`; this module only knows how to execute one.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from redis import Redis
from redis.asyncio import Redis as AsyncRedis
from redis.exceptions import NoScriptError

SCRIPTS_DIR = Path(__file__).resolve().parent.parent / "priv" / "scripts"
_FILE_NAME = re.compile(r"^(?P<name>[A-Za-z][A-Za-z0-9]*)-(?P<keys>\d+)\.lua$")
_INCLUDE = re.compile(r'^\s*---\s*@include\s+"(?P<name>[A-Za-z0-9_\-]+)"\s*$', re.MULTILINE)

ScriptArg = str | bytes | int | float


class ScriptLoadError(RuntimeError):
    """A script file is misnamed, or includes a fragment that does not exist."""


@dataclass(frozen=True, slots=True)
class Script:
    name: str
    num_keys: int
    source: str
    sha: str


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


def load_scripts(directory: Path = SCRIPTS_DIR) -> dict[str, Script]:
    """Read every ``<command>-<N>.lua`` of ``directory`` with includes resolved."""
    scripts: dict[str, Script] = {}
    includes_dir = directory / "includes"
    for path in sorted(directory.glob("*.lua")):
        match = _FILE_NAME.match(path.name)
        if match is None:
            raise ScriptLoadError(f"script file {path.name} is not <command>-<KEYS>.lua")
        name = match.group("name")
        if name in scripts:
            raise ScriptLoadError(f"two files define script {name}")
        source = _inline_includes(path.read_text(), includes_dir, set())
        sha = hashlib.sha1(source.encode(), usedforsecurity=False).hexdigest()
        scripts[name] = Script(name, int(match.group("keys")), source, sha)
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


def run(client: Redis, c: ScriptCall) -> Any:
    """Execute a built call on a synchronous client (a cluster client works too)."""
    params: Any = (*c.keys, *c.args)
    try:
        return client.evalsha(c.script.sha, len(c.keys), *params)
    except NoScriptError:
        return client.eval(c.script.source, len(c.keys), *params)


async def arun(client: AsyncRedis, c: ScriptCall) -> Any:
    """Execute a built call on an asyncio client."""
    params: Any = (*c.keys, *c.args)
    try:
        return await client.evalsha(c.script.sha, len(c.keys), *params)  # type: ignore[misc]
    except NoScriptError:
        return await client.eval(c.script.source, len(c.keys), *params)  # type: ignore[misc]


def queue_in_pipeline(pipe: Any, c: ScriptCall) -> None:
    """Add a call to a pipeline; pair with :func:`ensure_loaded` beforehand,
    since a NOSCRIPT inside a pipeline cannot be retried call by call.
    Sent as a raw command: redis-py's cluster pipeline refuses ``evalsha()``
    but routes a raw EVALSHA by its keys."""
    pipe.execute_command("EVALSHA", c.script.sha, len(c.keys), *c.keys, *c.args)


def ensure_loaded(client: Redis, names: tuple[str, ...]) -> None:
    """SCRIPT LOAD the named scripts (cheap when already cached by the server)."""
    for name in names:
        client.script_load(script(name).source)
