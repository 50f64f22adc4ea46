"""Node.js peers of the benches, installed from npm into a scratch folder.

A peer is a folder of bench/ holding a package.json (exact versions) and the
scripts Node runs. Its packages are installed once into
``~/.cache/echomq-bench/<folder>`` (``ECHOMQ_BENCH_CACHE`` says where else) and
reinstalled when the package.json changes; the scripts are copied there on
every run. Where Node or npm is missing, or the registry cannot be reached,
:func:`prepare` says why and the bench prints our figures alone.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Sequence
from pathlib import Path


def prepare(source: Path, scripts: Sequence[str]) -> tuple[Path | None, str]:
    """The scratch folder with ``source``'s packages installed and ``scripts``
    copied, or None and the reason."""
    node, npm = shutil.which("node"), shutil.which("npm")
    if not node or not npm:
        return None, "Node.js or npm is not installed: the Node peer is not run"
    cache = Path(os.environ.get("ECHOMQ_BENCH_CACHE", Path.home() / ".cache" / "echomq-bench"))
    folder = cache / source.name
    folder.mkdir(parents=True, exist_ok=True)
    wanted = (source / "package.json").read_text()
    installed = folder / "package.json"
    if (
        not installed.exists()
        or installed.read_text() != wanted
        or not (folder / "node_modules").is_dir()
    ):
        installed.write_text(wanted)
        done = subprocess.run(
            [npm, "install", "--no-audit", "--no-fund", "--silent"],
            cwd=folder,
            capture_output=True,
            text=True,
            timeout=600,
        )
        if done.returncode != 0:
            installed.unlink(missing_ok=True)
            return None, f"npm install failed: {done.stderr.strip()[-300:]}"
    for script in scripts:
        shutil.copyfile(source / script, folder / script)
    return folder, ""
