"""The app's layout holds: one room (a package) per feature, standing on a
shared core, and no room reaching into another (docs/architecture.md, The
rooms).

``dashboard/core/`` is the plumbing and imports nothing else of the app;
``dashboard/acting/`` (every change, audited) stands on it and the model;
``dashboard/shared/`` (web helpers, presenters) on both; a feature's room
imports those three, the model and the runtime, never another room, save the
few crossings named here with their reason. The top of
``dashboard/`` keeps only what Django or a deployment names by its path, so a
new module has to choose its room.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
APP = ROOT / "dashboard"

# What Django or a deployment finds by its dotted path, and the two tables
# over every room (the URLs and the API's description).
FRAME = {
    "__init__.py",
    "apps.py",
    "asgi.py",
    "checks.py",
    "middleware.py",
    "models.py",
    "openapi.py",
    "settings.py",
    "settings_production.py",
    "site_urls.py",
    "urls.py",
}
FRAME_PACKAGES = {"management", "migrations", "templatetags"}
BASE = {
    "core": {"core"},
    "acting": {"core", "acting", "models"},
    "shared": {"core", "acting", "shared", "models"},
}
ROOMS = {
    "browse",
    "cohorts",
    "edits",
    "error_groups",
    "flows",
    "history",
    "live",
    "metrics",
    "schedulers",
    "search",
    "site",
    "workers",
}
# room -> rooms it may use beyond the base, and why.
CROSSINGS = {
    ("browse", "flows"): "the job page shows the job's flow section (flows.views.flow_context)",
    ("search", "site"): "a search runs in the HTTP layer's own pool (site.http)",
}


def room_of(module: str) -> str | None:
    """The room (first part under ``dashboard.``) of a dotted module name, or
    None outside the app; the frame's own modules are rooms of their own name."""
    parts = module.split(".")
    if parts[0] != "dashboard" or len(parts) == 1:
        return None
    return parts[1]


def imported_rooms(source: str, package: str | None = None) -> set[str]:
    """The app's rooms that ``source`` imports, at any depth of the code
    (``package``: the importing module's package, for relative imports)."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level and package:
                base = package.rsplit(".", node.level - 1)[0]
                module = base + ("." + node.module if node.module else "")
            else:
                module = node.module or ""
            # from dashboard import core: the room is the name imported.
            names = (
                [module + "." + alias.name for alias in node.names]
                if module == "dashboard"
                else [module]
            )
        else:
            continue
        found.update(room for name in names if (room := room_of(name)) is not None)
    return found


def offences(room: str, uses: set[str]) -> set[str]:
    """The rooms ``room`` may not use, of those it does."""
    if room in BASE:
        allowed = BASE[room]
    elif room in ROOMS:
        allowed = BASE["shared"] | {room} | {to for (by, to) in CROSSINGS if by == room}
    else:  # the frame: anything
        return set()
    return uses - allowed


def test_the_top_of_the_app_holds_only_the_frame_and_the_rooms() -> None:
    modules = {path.name for path in APP.glob("*.py")}
    packages = {path.name for path in APP.iterdir() if (path / "__init__.py").is_file()}
    assert modules - FRAME == set(), "a new module belongs in a room (dashboard/<room>/)"
    assert packages == FRAME_PACKAGES | set(BASE) | ROOMS


def test_core_acting_shared_and_each_room_import_only_what_stands_below() -> None:
    found = []
    for room in sorted(set(BASE) | ROOMS):
        for path in sorted((APP / room).rglob("*.py")):
            package = ".".join(path.relative_to(ROOT).parent.parts)
            bad = offences(room, imported_rooms(path.read_text(), package))
            found += [f"{path.relative_to(ROOT)} -> dashboard.{other}" for other in sorted(bad)]
    assert found == [], "imports across the rooms:\n" + "\n".join(found)


def test_every_crossing_named_is_still_taken() -> None:
    """A crossing that the code no longer takes is struck from the list."""
    taken = {
        (by, to)
        for (by, to) in CROSSINGS
        if any(to in imported_rooms(path.read_text()) for path in (APP / by).rglob("*.py"))
    }
    assert taken == set(CROSSINGS)


def test_the_check_sees_a_room_reaching_into_another() -> None:
    source = (
        "from dashboard.core.lookup import queue_or_404\n"
        "from dashboard.shared import presenters\n"
        "from dashboard import models\n"
        "from queues.read import counts\n"
        "def later():\n"
        "    from dashboard.workers import views\n"  # inside a function: still an import
        "    import dashboard.browse.api\n"
    )
    uses = imported_rooms(source)
    assert uses == {"core", "shared", "models", "workers", "browse"}
    assert offences("cohorts", uses) == {"workers", "browse"}
    assert offences("core", {"shared"}) == {"shared"}  # the core stands on nothing of the app
    assert offences("shared", {"search"}) == {"search"}
    assert offences("acting", {"shared"}) == {"shared"}  # acting knows no page
    assert offences("browse", {"flows"}) == set()  # a crossing named above
    assert offences("urls.py", {"browse"}) == set()  # the frame ties the rooms together


def test_the_apis_description_reads_no_room() -> None:
    """Each API view declares its own operation (shared.web.api_view), so the
    document's writer stands on the base alone: a new endpoint changes its
    room, not openapi.py."""
    uses = imported_rooms((APP / "openapi.py").read_text(), "dashboard")
    assert uses - set(BASE) == set(), "openapi.py reads a room"
