"""No module of the app or the runtime uses another module's underscore names.

A name with a leading underscore is its module's own: when a second module
needs it, it belongs in a public module (the views' shared helpers are
``dashboard.shared.web``), or the two modules grow into each other and the import
graph stacks the user above what it borrows from. Ruff's rule for this
(PLC2701, import-private-name, preview only) passes imports from the project's
own package, which are the ones that matter here, so this walks the code.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("dashboard", "queues")


def _is_private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def private_uses(source: str) -> list[tuple[int, str]]:
    """(line, what) for each underscore name that ``source`` takes from another
    module: ``from m import _x``, or ``m._x`` where ``m`` is a module it imported."""
    tree = ast.parse(source)
    modules: set[str] = set()
    found: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            modules.update((alias.asname or alias.name).split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            for alias in node.names:
                if _is_private(alias.name):
                    found.append((node.lineno, f"from {node.module} import {alias.name}"))
                else:
                    # A name imported from a package may be a module (from dashboard import views).
                    modules.add(alias.asname or alias.name)
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Attribute)
            and _is_private(node.attr)
            and isinstance(node.value, ast.Name)
            and node.value.id in modules
        ):
            found.append((node.lineno, f"{node.value.id}.{node.attr}"))
    return sorted(found)


def test_no_module_imports_another_modules_underscore_names() -> None:
    offences = [
        f"{path.relative_to(ROOT)}:{line}: {what}"
        for package in PACKAGES
        for path in sorted((ROOT / package).rglob("*.py"))
        for line, what in private_uses(path.read_text())
    ]
    assert offences == [], "underscore names used outside their module:\n" + "\n".join(offences)


def test_the_walk_sees_both_ways_of_reaching_a_private_name() -> None:
    source = (
        "from dashboard.browse.api import BadInput, _body\n"
        "from dashboard import views\n"
        "import queues.commands.admin as admin\n"
        "views._page(request, 'x.html', {})\n"
        "admin._job_args(job)\n"
        "request._messages\n"  # a variable's attribute, not a module's: not counted
        "views.__name__\n"
    )
    assert private_uses(source) == [
        (1, "from dashboard.browse.api import _body"),
        (4, "views._page"),
        (5, "admin._job_args"),
    ]
