"""The page scripts are ES modules importing each other by relative path. In
the production profile with STATIC_ROOT (docs/deploy.md, nginx serving the
collected files) collectstatic writes them under hashed names and rewrites
every import statement to its module's hashed name, so a page's whole module
graph is one release's; before collectstatic the plain names stay."""

from __future__ import annotations

import json
import re
from pathlib import Path

from tests.test_deploy import documented_environment, run_manage

ROOT = Path(__file__).resolve().parent.parent
MODULES = sorted((ROOT / "static" / "dashboard").glob("*.js"))
IMPORT = re.compile(r'import\s*\{[^}]*\}\s*from\s*"\./([\w.-]+\.js)";')


def static_url(variables: dict[str, str], name: str) -> str:
    code = f"from django.templatetags.static import static; print(static({name!r}))"
    done = run_manage(variables, "shell", "--no-imports", "-c", code)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def test_collected_modules_import_each_other_by_their_hashed_names(tmp_path: Path) -> None:
    variables = documented_environment() | {"STATIC_ROOT": str(tmp_path)}
    done = run_manage(variables, "collectstatic", "--noinput")
    assert done.returncode == 0, done.stderr
    manifest = json.loads((tmp_path / "staticfiles.json").read_text())["paths"]
    imports = 0
    for module in MODULES:
        wanted = IMPORT.findall(module.read_text())
        hashed = (tmp_path / manifest[f"dashboard/{module.name}"]).read_text()
        named = IMPORT.findall(hashed)
        # Each import names its module's hashed file, as collected.
        assert named == [Path(manifest[f"dashboard/{name}"]).name for name in wanted], module.name
        assert all((tmp_path / "dashboard" / name).is_file() for name in named)
        imports += len(named)
    assert imports >= 20  # the graph is there: live.js alone imports eight modules
    # The pages name the hashed entry points.
    live = static_url(variables, "dashboard/live.js")
    assert live == "/static/" + manifest["dashboard/live.js"]
    assert re.fullmatch(r"/static/dashboard/live\.[0-9a-f]{12}\.js", live)


def test_before_collectstatic_the_plain_names_stay(tmp_path: Path) -> None:
    variables = documented_environment() | {"STATIC_ROOT": str(tmp_path)}
    assert static_url(variables, "dashboard/live.js") == "/static/dashboard/live.js"
