#!/usr/bin/env bash
# One entry point for a fresh Debian/Ubuntu machine with Python 3.11+:
#   ./run.sh dashboard   install what is missing, start the dashboard with demo traffic
#   ./run.sh test        install what is missing, run ruff, mypy and the whole test suite
#   ./run.sh mutate      mutation testing of the costliest modules (bench/mutate.py; not in CI)
#
# Python packages go into a virtual environment, never into the system Python
# (Debian 12 and Ubuntu 24.04 refuse that anyway, PEP 668): the one already
# active ($VIRTUAL_ENV), else the project's own .venv, made with $PYTHON
# (default python3: the system's, or pyenv's when pyenv is in use).
set -euo pipefail
cd "$(dirname "$0")"
PYTHON=${PYTHON:-python3}
VENV=.venv
# The accessibility tests' auditor (tests/e2e/test_accessibility.py reads this pin).
AXE_CORE_VERSION=4.14.1
AXE_DIR=.cache/axe

say() { echo "run.sh: $*" >&2; }

# Install Debian packages that are missing (root only; otherwise say what to run).
apt_install() {
    [ $# -eq 0 ] && return 0
    if [ "$(id -u)" -ne 0 ]; then
        say "missing: $* (as root: apt-get install -y $*)"
        return 1
    fi
    if ! command -v apt-get >/dev/null; then
        say "missing: $* (no apt-get here: install them with your package manager)"
        return 1
    fi
    say "installing $*"
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@" >/dev/null
}

need_system() {  # the servers and browser the commands use, when missing
    local missing=()
    command -v redis-server >/dev/null || missing+=(redis-server)
    if [ "${1:-}" = browser ]; then
        command -v chromium >/dev/null || missing+=(chromium)
        command -v npm >/dev/null || missing+=(npm)
    fi
    # Without redis-server the dashboard falls back to the embedded Valkey, so
    # a non-root user can still go on; the browser tests cannot.
    apt_install "${missing[@]}" || [ "${1:-}" != browser ]
}

python_version_ok() {
    "$1" -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null
}

make_venv() {
    command -v "$PYTHON" >/dev/null || { apt_install python3 || exit 1; }
    if ! python_version_ok "$PYTHON"; then
        say "$PYTHON is $("$PYTHON" -V 2>&1); Python 3.11 or newer is needed (set PYTHON=/path/to/python3.11)"
        exit 1
    fi
    # Debian and Ubuntu ship venv's pip bootstrap (ensurepip) in a separate package.
    if ! "$PYTHON" -c 'import ensurepip, venv' 2>/dev/null; then
        local minor
        minor=$("$PYTHON" -c 'import sys; print(f"{sys.version_info[0]}.{sys.version_info[1]}")')
        apt_install "python$minor-venv" || exit 1
    fi
    say "creating $VENV with $("$PYTHON" -V 2>&1)"
    "$PYTHON" -m venv "$VENV"
}

# The interpreter of the environment the project runs in, with the project installed.
# Reinstalls only when pyproject.toml changed since the last install.
python_env() {
    local python stamp
    if [ -n "${VIRTUAL_ENV:-}" ]; then
        python="$VIRTUAL_ENV/bin/python"
    else
        [ -x "$VENV/bin/python" ] || make_venv
        python="$VENV/bin/python"
    fi
    stamp="$("$python" -c 'import sys; print(sys.prefix)')/.echomq-installed"
    if ! cmp -s pyproject.toml "$stamp" 2>/dev/null; then
        say "installing the project and its dependencies into $("$python" -c 'import sys; print(sys.prefix)')"
        # pip's own output goes to stderr: this function's stdout is the interpreter's path.
        # Checked here: errexit does not reach into the $(python_env) that calls us,
        # and a failed install must neither run the app nor be marked done.
        if ! "$python" -m pip install -q --disable-pip-version-check -e '.[dev]' >&2; then
            say "installing the dependencies failed (pip said why, above); nothing was started"
            exit 1
        fi
        cp pyproject.toml "$stamp"
    fi
    echo "$python"
}

need_axe() {  # axe-core from npm into $AXE_DIR (git ignores it), at the pinned version
    local installed="$AXE_DIR/node_modules/axe-core/package.json"
    grep -qs "\"version\": \"$AXE_CORE_VERSION\"" "$installed" && return 0
    if ! command -v npm >/dev/null; then
        say "missing: npm (for axe-core; the accessibility tests will say so)"
        return 0
    fi
    local output
    if ! output=$(npm install --loglevel=error --no-save --no-package-lock --no-audit --no-fund \
        --prefix "$AXE_DIR" "axe-core@$AXE_CORE_VERSION" 2>&1); then
        # Not fatal: the other checks and tests still run; the accessibility
        # tests then fail saying axe-core is missing and how to install it.
        say "installing axe-core $AXE_CORE_VERSION with npm failed (the accessibility tests will say it is missing); npm said:"
        printf '%s\n' "$output" | tail -n 15 >&2
    fi
}

case "${1:-}" in
    dashboard)
        shift
        need_system
        python=$(python_env)
        exec "$python" manage.py demo "$@"
        ;;
    test)
        shift
        need_system browser
        python=$(python_env)
        need_axe
        "$python" -m ruff check .
        "$python" -m ruff format --check .
        "$python" -m mypy queues dashboard
        # Two test processes (pytest-xdist): the suite mostly waits on browsers,
        # servers and live feeds, so two of them fill CI's 2 cores. Each has its
        # own Redis, daphne and Chromium; a test file stays in one process, so its
        # module fixtures are built once. Files go out in collection order (not
        # largest first, xdist's default): the browser tests must come last in
        # each process (tests/conftest.py). `./run.sh test -n 0`: one process.
        exec "$python" -m pytest -n 2 --dist loadfile --no-loadscope-reorder "$@"
        ;;
    mutate)
        # CPU-heavy for minutes per module: niced, so the machine stays usable.
        shift
        need_system
        python=$(python_env)
        exec nice -n 10 "$python" bench/mutate.py "$@"
        ;;
    *)
        echo "usage: $0 dashboard|test|mutate [args...]" >&2
        exit 2
        ;;
esac
