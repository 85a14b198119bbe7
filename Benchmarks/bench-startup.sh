#!/usr/bin/env bash
# Benchmark of issue 6: start-up time of Bindery (release) on a store of 1,000,000 objects from a snapshot plus a
# journal, killed with -9 (so no shutdown snapshot shortens the journal).
#
#   bash Benchmarks/bench-startup.sh
#
# Environment (defaults in brackets):
#   OBJECTS [1000000]   objects in the store: 1,000 departments, the rest employees (5 attributes, a department)
#   JOURNAL [45000]     journaled changes after the snapshot (one-attribute PUTs; below the 50,000-record snapshot
#                       interval, so they are all replayed at start)
#   RUNS [3]            timed starts (the median is reported)
#   TARGET [3]          seconds the issue allows; exits 1 above it when STRICT=1
#   STRICT [0]
#   SKIP_BUILD [0], BINDERY_BINARY, DATA_ROOT: as in bench-durable-writes.sh
set -euo pipefail

OBJECTS=${OBJECTS:-1000000}
JOURNAL=${JOURNAL:-45000}
RUNS=${RUNS:-3}
TARGET=${TARGET:-3}
STRICT=${STRICT:-0}
SKIP_BUILD=${SKIP_BUILD:-0}

cd "$(dirname "$0")/.."
ROOT=$(pwd)
SCRATCH="$ROOT/.build-release"
# shellcheck source=Benchmarks/lib.sh
. Benchmarks/lib.sh
prepare_bindery wrk

WORK=$(mktemp -d "${DATA_ROOT:-${TMPDIR:-/tmp}}/bench-startup.XXXXXX")
PID=""
cleanup() {
    [ -n "$PID" ] && kill -KILL "$PID" 2>/dev/null || true
    wait 2>/dev/null || true
    rm -rf "$WORK"
}
trap cleanup EXIT

echo "== generating a fixture of $OBJECTS objects"
mkdir -p "$WORK/fixture"
cp Fixtures/employees/model.json "$WORK/fixture/"
python3 - "$OBJECTS" "$WORK/fixture/data.json" <<'PY'
import sys
count, path = int(sys.argv[1]), sys.argv[2]
departments = 1000
with open(path, "w") as out:
    out.write('{"objects": [\n')
    for d in range(1, departments + 1):
        out.write('{"$id": "Department/%d", "name": "Department %d", "budget": %d.5},\n' % (d, d, d * 1000))
    for e in range(1, count - departments + 1):
        sep = ",\n" if e < count - departments else "\n"
        out.write('{"$id": "Employee/%d", "firstName": "First%d", "lastName": "Last%d", "salary": %d, '
                  '"hireDate": {"$date": "2020-01-%02dT09:00:00.000Z"}, "active": true, '
                  '"department": {"$ref": "Department/%d"}}%s' % (e, e % 997, e, 50000 + e % 100000, e % 28 + 1,
                                                                 e % departments + 1, sep))
    out.write(']}\n')
PY

# start: launches the server on the data directory; sets PID and SECONDS_TO_LISTEN.
start() {
    local log="$WORK/serve.out" begin end
    : >"$log"
    begin=$(date +%s.%N)
    "$BINDERY" serve --fixture "$WORK/fixture" --data "$WORK/data" --port 0 --fsync batch --public Public \
        >"$log" 2>&1 &
    PID=$!
    until grep -q listening "$log"; do
        kill -0 "$PID" 2>/dev/null || { echo "bindery exited: $(cat "$log")" >&2; exit 2; }
        sleep 0.005
    done
    end=$(date +%s.%N)
    SECONDS_TO_LISTEN=$(awk -v a="$begin" -v b="$end" 'BEGIN { printf "%.2f", b - a }')
    # CPU seconds (user + system) the process had used when it listened: independent of other load on the machine.
    CPU_TO_LISTEN=$(awk -v hz="$(getconf CLK_TCK)" '{ printf "%.2f", ($14 + $15) / hz }' "/proc/$PID/stat")
    PORT=$(sed -n 's/.*listening on http:\/\/127.0.0.1:\([0-9]*\).*/\1/p' "$log" 2>/dev/null || true)
}

start
echo "== seeded $OBJECTS objects from data.json in ${SECONDS_TO_LISTEN}s (not the figure measured)"
echo "== journaling $JOURNAL one-attribute changes"
BENCH_LIMIT=$((JOURNAL / 2)) BENCH_TARGET=bindery wrk -t2 -c32 -d45s -s Benchmarks/durable-put.lua \
    "http://127.0.0.1:$PORT" | grep -E "requests in|Requests/sec"
kill -KILL "$PID"
wait "$PID" 2>/dev/null || true
PID=""
ls -l "$WORK/data" | awk 'NR > 1 { printf "   %12d  %s\n", $5, $9 }'

times=()
cpus=()
for run in $(seq "$RUNS"); do
    start
    seq_now=$(curl -sI "http://127.0.0.1:$PORT/healthz" | awk -F': ' 'tolower($1) == "x-store-seq" { print $2 }' | tr -d '\r')
    echo "  start $run: ${SECONDS_TO_LISTEN}s to listening, ${CPU_TO_LISTEN}s of CPU (store seq $seq_now)"
    times+=("$SECONDS_TO_LISTEN")
    cpus+=("$CPU_TO_LISTEN")
    kill -KILL "$PID"
    wait "$PID" 2>/dev/null || true
    PID=""
done
median=$(printf '%s\n' "${times[@]}" | sort -n | awk '{ a[NR] = $1 } END { print (NR % 2 ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2) }')
cpu=$(printf '%s\n' "${cpus[@]}" | sort -n | awk '{ a[NR] = $1 } END { print (NR % 2 ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2) }')
echo "== start-up with $OBJECTS objects (snapshot + journal): median ${median}s wall, ${cpu}s CPU (target < ${TARGET}s)"
if [ "$STRICT" = 1 ] && awk -v m="$median" -v t="$TARGET" 'BEGIN { exit !(m >= t) }'; then
    exit 1
fi
