#!/usr/bin/env bash
# One entry point for a fresh Debian/Ubuntu machine with Python 3.11+:
#   ./run.sh dashboard   install what is missing, start the dashboard with demo traffic
#   ./run.sh test        install what is missing, run ruff, mypy and the whole test suite
set -euo pipefail
cd "$(dirname "$0")"
PYTHON=${PYTHON:-python3}

# The accessibility tests' auditor (tests/e2e/test_accessibility.py reads this pin).
AXE_CORE_VERSION=4.14.1
AXE_DIR=.cache/axe

need_apt() {  # install Debian packages whose command is missing (root only)
    local missing=()
    command -v redis-server >/dev/null || missing+=(redis-server)
    [ "${1:-}" = browser ] && { command -v chromium >/dev/null || missing+=(chromium); }
    [ "${1:-}" = browser ] && { command -v npm >/dev/null || missing+=(npm); }
    [ ${#missing[@]} -eq 0 ] && return 0
    if [ "$(id -u)" -ne 0 ]; then
        echo "missing: ${missing[*]} (run as root or: sudo apt-get install -y ${missing[*]})" >&2
        return 0
    fi
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
}

install_python() {
    "$PYTHON" -m pip install -q --disable-pip-version-check --root-user-action=ignore -e '.[dev]'
}

need_axe() {  # axe-core from npm into $AXE_DIR (git ignores it), at the pinned version
    local installed="$AXE_DIR/node_modules/axe-core/package.json"
    grep -qs "\"version\": \"$AXE_CORE_VERSION\"" "$installed" && return 0
    if ! command -v npm >/dev/null; then
        echo "missing: npm (for axe-core; the accessibility tests will say so)" >&2
        return 0
    fi
    npm install --silent --no-save --no-package-lock --no-audit --no-fund \
        --prefix "$AXE_DIR" "axe-core@$AXE_CORE_VERSION" >/dev/null
}

case "${1:-}" in
    dashboard)
        need_apt
        install_python
        shift
        exec "$PYTHON" manage.py demo "$@"
        ;;
    test)
        need_apt browser
        install_python
        need_axe
        shift
        "$PYTHON" -m ruff check .
        "$PYTHON" -m ruff format --check .
        "$PYTHON" -m mypy queues dashboard
        exec "$PYTHON" -m pytest "$@"
        ;;
    *)
        echo "usage: $0 dashboard|test [args...]" >&2
        exit 2
        ;;
esac
