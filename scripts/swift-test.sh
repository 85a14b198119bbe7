#!/usr/bin/env bash
# Runs the Swift tests (already built: `swift build --build-tests`) within a time limit, so that a test that hangs
# fails the run instead of keeping it going until CI gives up. On a timeout it names the tests that started and did
# not finish.
#
#   SWIFT_TEST_TIMEOUT   the limit for the whole run, as `timeout` reads it (default 20m; the suite takes ~2 min)
#   arguments            passed on to `swift test` (e.g. --filter Journal)
set -uo pipefail
cd "$(dirname "$0")/.."

SWIFT="${SWIFT:-swift}"
limit="${SWIFT_TEST_TIMEOUT:-20m}"
log="$(mktemp)"
session="$(mktemp)"
trap 'rm -f "$log" "$session"' EXIT

# In a session of its own: `swift test` runs the test binary in another process group, which a timeout's signal
# does not reach, so on a timeout everything left in the session (the test binary, the servers it started) is killed.
setsid --wait bash -c 'echo $$ >"$0"; exec timeout -k 30s "$1" stdbuf -oL -eL "$2" test --skip-build --parallel "${@:3}"' \
    "$session" "$limit" "$SWIFT" "$@" 2>&1 | tee "$log"
status=${PIPESTATUS[0]}
if [ "$status" -eq 124 ] || [ "$status" -eq 137 ]; then
    # What is left of the session (pkill is procps', not in a minimal Debian): field 6 of /proc/PID/stat.
    sid="$(cat "$session")"
    for stat in /proc/[0-9]*/stat; do
        fields="$(cat "$stat" 2>/dev/null)" || continue
        read -r _ _ _ process_session _ <<<"${fields##*) }"
        [ "$process_session" = "$sid" ] && kill -KILL "${stat//[^0-9]/}" 2>/dev/null
    done
    echo
    echo "FAIL: the Swift tests did not finish within $limit (SWIFT_TEST_TIMEOUT); started and not finished:"
    # Swift Testing prints "◇ Test NAME started." and "✔/✘ Test NAME [with N test cases ]passed/failed after ..."
    # (a parametrized test's cases only start).
    sed -n -E \
        -e '/^◇ Test (case |run started)/d' \
        -e 's/^◇ Test (.*) started\.$/+ \1/p' \
        -e 's/^[^ ]+ Test (.*) with [0-9]+ test cases? (passed|failed) .*/- \1/p' \
        -e 's/^[^ ]+ Test (.*) (passed|failed) after .*/- \1/p' "$log" |
        awk '{ sign = substr($0, 1, 1); name = substr($0, 3); count[name] += (sign == "+") ? 1 : -1 }
             END { for (name in count) if (count[name] > 0) print "  " name }' | sort
    exit 1
fi
exit "$status"
