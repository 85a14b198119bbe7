#!/usr/bin/env bash
# The demo page (Public/) end to end: headless Chromium driven by Selenium against a real server.
#
# Installs what is missing (Debian's chromium, chromium-driver and netbase, Python's selenium and pytest), builds
# the server if its binary is absent, starts it on a free port with a fresh data directory, runs
# Tests/browser with pytest, and stops the server whatever happens. Exits non-zero when a test fails.
# Screenshots land in .build/ (demo.png, demo-narrow.png).
#
#   BINDERY_BINARY   the server to test (default .build/debug/bindery, built with `swift build` if absent)
#   PYTEST_ARGS      extra pytest arguments (e.g. "-k filter -x")
set -euo pipefail
cd "$(dirname "$0")/.."

BIN="${BINDERY_BINARY:-.build/debug/bindery}"
SWIFT="${SWIFT:-swift}"

# netbase writes /etc/hosts, without which (a minimal chroot) `localhost` does not resolve and Selenium cannot reach
# chromedriver.
extra=(chromium chromium-driver netbase)
command -v python3 >/dev/null 2>&1 || extra+=(python3)
bash scripts/install-deps.sh "${extra[@]}"

if ! python3 -c 'import selenium, pytest' 2>/dev/null; then
    echo "installing selenium and pytest from PyPI"
    if ! python3 -m pip --version >/dev/null 2>&1; then
        bash scripts/install-deps.sh python3-pip
    fi
    # Debian's own python3 refuses system-wide pip installs (PEP 668) unless told otherwise.
    python3 -m pip install --quiet --disable-pip-version-check --root-user-action=ignore selenium pytest 2>/dev/null ||
        python3 -m pip install --quiet --disable-pip-version-check --break-system-packages selenium pytest
fi

if [ ! -x "$BIN" ]; then
    if [ -n "${BINDERY_BINARY:-}" ]; then
        echo "BINDERY_BINARY=$BIN is not an executable" >&2
        exit 1
    fi
    echo "building $BIN"
    "$SWIFT" build --product bindery
fi

DATA="$(mktemp -d)"
LOG="$DATA.log"
# Chromium leaves a directory with its singleton socket in TMPDIR after every run: give it one removed at the end.
BROWSER_TMP="$(mktemp -d)"
SERVER_PID=""
cleanup() {
    if [ -n "$SERVER_PID" ] && kill -0 "$SERVER_PID" 2>/dev/null; then
        kill -TERM "$SERVER_PID" 2>/dev/null || true
        for _ in $(seq 50); do kill -0 "$SERVER_PID" 2>/dev/null || break; sleep 0.1; done
        kill -KILL "$SERVER_PID" 2>/dev/null || true
    fi
    rm -rf "$DATA" "$LOG" "$BROWSER_TMP"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

"$BIN" serve --host 127.0.0.1 --port 0 --data "$DATA" --fixture Fixtures/employees --public Public >"$LOG" 2>&1 &
SERVER_PID=$!

URL=""
for _ in $(seq 300); do
    URL="$(sed -n 's/^bindery listening on \(http:[^ ]*\).*/\1/p' "$LOG" | head -n 1)"
    [ -n "$URL" ] && break
    if ! kill -0 "$SERVER_PID" 2>/dev/null; then
        echo "the server exited before listening:" >&2
        cat "$LOG" >&2
        exit 1
    fi
    sleep 0.1
done
if [ -z "$URL" ]; then
    echo "the server did not print its address within 30 s:" >&2
    cat "$LOG" >&2
    exit 1
fi
echo "browser test against $URL ($BIN)"

mkdir -p .build
status=0
# SE_OFFLINE: the test names chromium and chromedriver itself; Selenium Manager must not download any.
# shellcheck disable=SC2086 # PYTEST_ARGS is split into words on purpose
SE_OFFLINE=true PYTHONDONTWRITEBYTECODE=1 TMPDIR="$BROWSER_TMP" BINDERY_URL="$URL" BINDERY_BINARY="$(realpath "$BIN")" \
    BINDERY_SCREENSHOTS="$PWD/.build" \
    timeout 600 python3 -m pytest -q -p no:cacheprovider --rootdir Tests/browser Tests/browser ${PYTEST_ARGS:-} ||
    status=$?

if [ "$status" -ne 0 ]; then
    echo "browser test failed (exit $status); server log:" >&2
    tail -n 50 "$LOG" >&2 || true
else
    echo "screenshots: .build/demo.png .build/demo-narrow.png"
fi
exit "$status"
