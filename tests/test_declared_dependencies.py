"""Every package the app (dashboard/) and the runtime (queues/) import is
declared in pyproject.toml: an import that works only because another
dependency happens to pull its package in (autobahn through daphne, hiredis
through an extra of redis) breaks the day that one stops, or in a slimmer
install."""

from __future__ import annotations

import ast
import importlib.metadata
import re
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FIRST_PARTY = {"dashboard", "queues"}


def normalized(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def declared() -> set[str]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    return {
        normalized(re.split(r"[\s\[<>=!~;]", req, maxsplit=1)[0]) for req in project["dependencies"]
    }


def imported() -> dict[str, set[str]]:
    """Top-level names imported anywhere in the two packages -> the files importing them."""
    found: dict[str, set[str]] = {}
    for package in sorted(FIRST_PARTY):
        for path in (ROOT / package).rglob("*.py"):
            for node in ast.walk(ast.parse(path.read_text(), str(path))):
                if isinstance(node, ast.Import):
                    names = [alias.name for alias in node.names]
                elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                    names = [node.module]
                else:
                    continue
                for name in names:
                    top = name.split(".")[0]
                    if top not in sys.stdlib_module_names and top not in FIRST_PARTY:
                        found.setdefault(top, set()).add(str(path.relative_to(ROOT)))
    return found


def test_every_imported_package_is_declared_in_pyproject() -> None:
    owners = importlib.metadata.packages_distributions()
    wanted = declared()
    undeclared = {
        name: sorted(files)
        for name, files in imported().items()
        if not {normalized(dist) for dist in owners.get(name, [])} & wanted
    }
    assert undeclared == {}


def test_the_check_sees_the_imports_it_is_about() -> None:
    names = imported()
    assert {"django", "redis", "rapidjson", "channels"} <= names.keys()
    assert "dashboard/live/outbox.py" in names["autobahn"]
