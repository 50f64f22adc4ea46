"""Every page kind, light and dark, audited by axe-core in Chromium.

axe-core comes from npm at test time (``./run.sh test`` installs the pinned
version into ``.cache/axe``, which git ignores); without it these tests fail
with the command that installs it, they never skip. A serious or critical
violation fails the page's test with each rule, its help text and the nodes it
found, so the report says what to fix.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Browser

from tests.e2e.scene import PAGE_KINDS, Scene, visit
from tests.e2e.server import ROOT, DashboardServer

# The version run.sh installs (one pin, there).
_PIN = re.search(r"^AXE_CORE_VERSION=(\S+)$", (ROOT / "run.sh").read_text(), re.MULTILINE)
AXE_VERSION = _PIN.group(1) if _PIN else "(no AXE_CORE_VERSION in run.sh)"
AXE_DIR = Path(os.environ.get("ECHOMQ_AXE_DIR") or ROOT / ".cache" / "axe")
AXE_PACKAGE = AXE_DIR / "node_modules" / "axe-core"
BLOCKING = ("serious", "critical")


@pytest.fixture(scope="session")
def axe_source() -> str:
    """axe-core's script, at the pinned version: missing or another version fails
    every accessibility test with the command that installs it."""
    install = (
        "./run.sh test installs it; or run: npm install --no-save --no-package-lock "
        f"--prefix {AXE_DIR} axe-core@{AXE_VERSION}"
    )
    try:
        installed = json.loads((AXE_PACKAGE / "package.json").read_text())["version"]
        source = (AXE_PACKAGE / "axe.min.js").read_text()
    except (OSError, ValueError, KeyError):
        pytest.fail(f"axe-core is missing ({AXE_PACKAGE}): {install}", pytrace=False)
    if installed != AXE_VERSION:
        pytest.fail(f"axe-core {installed} is installed, the tests pin {AXE_VERSION}: {install}",
                    pytrace=False)  # fmt: skip
    return source


def audit(page: Any, axe_source: str) -> list[dict[str, Any]]:
    """axe's violations of the page as it is now. The script is evaluated over
    the DevTools protocol, so the page's CSP (no inline script) stays on."""
    page.evaluate(axe_source)
    result: dict[str, Any] = page.evaluate("() => axe.run(document, {resultTypes: ['violations']})")
    violations: list[dict[str, Any]] = result["violations"]
    return violations


def describe(violations: list[dict[str, Any]]) -> str:
    lines = []
    for violation in violations:
        lines.append(f"{violation['impact']} {violation['id']}: {violation['help']}")
        for node in violation["nodes"][:8]:
            lines.append(f"    {' '.join(node['target'])}: {node['failureSummary']!r}"[:400])
        if len(violation["nodes"]) > 8:
            lines.append(f"    ... and {len(violation['nodes']) - 8} more nodes")
    return "\n".join(lines)


@pytest.mark.parametrize("scheme", ["light", "dark"])
@pytest.mark.parametrize("kind", PAGE_KINDS)
def test_no_serious_or_critical_accessibility_violation(
    axe_source: str,
    browser: Browser,
    fresh_scene: Scene,
    scene_server: DashboardServer,
    auth_state: str,
    kind: str,
    scheme: str,
) -> None:
    viewport = {"width": 1280, "height": 860}
    with visit(
        browser,
        scene_server.url,
        auth_state,
        fresh_scene,
        kind,
        color_scheme=scheme,
        viewport=viewport,
    ) as page:
        blocking = [v for v in audit(page, axe_source) if v["impact"] in BLOCKING]
        assert not blocking, f"{kind} ({scheme}):\n{describe(blocking)}"
