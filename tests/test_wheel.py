"""The built wheel holds the app, its templates and static files, and the Lua
scripts, each where the installed code looks for it; the runtime finds its
scripts both in the checkout and in an installed wheel."""

from __future__ import annotations

import subprocess
import zipfile
from pathlib import Path

import pytest

from queues.scripts import SCRIPTS_DIR
from tests.e2e.server import ROOT
from tests.hosting import host_env

pytestmark = [pytest.mark.host, pytest.mark.timeout(1500)]

# Where each of the checkout's folders goes in the wheel (pyproject.toml).
PLACES = {
    "dashboard/": "dashboard/",
    "queues/": "queues/",
    "templates/dashboard/": "dashboard/templates/dashboard/",
    "static/dashboard/": "dashboard/static/dashboard/",
    "priv/scripts/": "queues/priv/scripts/",
}


def tracked(folder: str) -> list[str]:
    listed = subprocess.run(
        ["git", "ls-files", "-z", folder], cwd=ROOT, check=True, capture_output=True
    ).stdout.split(b"\0")
    return [name.decode() for name in listed if name and (ROOT / name.decode()).is_file()]


def expected_contents() -> dict[str, Path]:
    """The wheel's path of each file that belongs in it -> the checkout's file."""
    expected: dict[str, Path] = {}
    for folder, place in PLACES.items():
        for name in tracked(folder):
            # Of the packages, their code; their data comes from the top-level folders.
            if place in ("dashboard/", "queues/") and not name.endswith(".py"):
                continue
            expected[place + name.removeprefix(folder)] = ROOT / name
    return expected


def test_the_wheel_holds_the_app_templates_static_files_and_scripts_and_nothing_else(
    built_wheel: Path,
) -> None:
    with zipfile.ZipFile(built_wheel) as wheel:
        contents = {
            name: wheel.read(name)
            for name in wheel.namelist()
            if ".dist-info/" not in name and not name.endswith("/")
        }
    expected = expected_contents()
    assert "dashboard/templates/dashboard/base.html" in expected
    assert "dashboard/static/dashboard/live.js" in expected
    assert "queues/priv/scripts/includes/memoryGuard.lua" in expected
    assert sorted(contents) == sorted(expected)
    changed = [name for name, path in expected.items() if contents[name] != path.read_bytes()]
    assert changed == []
    # The stand-alone site's own pages stay in the checkout: a project has its own.
    assert not any(name.endswith(("/404.html", "/login.html")) for name in contents)


def test_an_installed_wheel_loads_its_scripts_from_inside_the_package(
    host_python: Path, tmp_path: Path
) -> None:
    probe = (
        "import queues.scripts as s; print(s.SCRIPTS_DIR); print(len(s.library())); "
        "print(s.script('moveToActive').sha)"
    )
    done = subprocess.run(
        [host_python, "-c", probe],
        cwd=tmp_path,
        env=host_env(),
        capture_output=True,
        text=True,
        check=True,
    )
    where, count, sha = done.stdout.split()
    venv = host_python.parent.parent
    assert Path(where) == next(venv.glob("lib/python*/site-packages/queues/priv/scripts"))
    checkout_scripts = sorted(SCRIPTS_DIR.glob("*.lua"))
    assert int(count) == len(checkout_scripts)
    # The same source as the checkout's, includes inlined alike.
    from queues.scripts import script

    assert sha == script("moveToActive").sha


def test_a_checkout_loads_its_scripts_from_the_top_level_priv_folder() -> None:
    assert SCRIPTS_DIR == ROOT / "priv" / "scripts"
    assert (SCRIPTS_DIR / "includes" / "memoryGuard.lua").is_file()
