#!/usr/bin/env bash
# Benchmark of issue 6: durable `PUT` of one attribute on Bindery (release) with `--fsync batch` and
# `--fsync always`, side by side with etcd v2 `PUT` (which fsyncs its WAL per commit) on the same machine, measured
# with wrk in alternation, on loopback only. Also prints the journal bytes per simple change.
#
#   bash Benchmarks/bench-durable-writes.sh
#
# Environment (defaults in brackets):
#   ROUNDS [2]         rounds of (batch, always, etcd)
#   DURATION [10]      seconds per wrk run
#   WRK_THREADS [2]    wrk -t
#   CONNECTIONS [64]   wrk -c
#   TARGET [3]         the ratio batch/etcd the issue asks for; the script exits 1 below it when STRICT=1
#   STRICT [0]
#   SKIP_BUILD [0]     1: use the binary already in .build-release/
#   BINDERY_BINARY     another bindery executable to measure; implies no Swift build
#   DATA_ROOT [$TMPDIR or /tmp]  where the data directories go (the disk that is measured)
#   WITH_CONTROLLERS [0]  1: serve Fixtures/employees as it is; 0: a copy without controllers.json and
#                      defaults.json, so the figure is the store and its journal (controllers react to every commit)
#   BINDERY_THREADS [cores]  bindery --threads (the server's default): a request waiting for its flush is suspended
#                      and holds no thread, so one group commit serves every connection that wrote meanwhile
#
# Every request changes a value (wrk's Lua script never repeats one), so every request is a journaled commit.
set -euo pipefail

ROUNDS=${ROUNDS:-2}
DURATION=${DURATION:-10}
WRK_THREADS=${WRK_THREADS:-2}
CONNECTIONS=${CONNECTIONS:-64}
TARGET=${TARGET:-3}
STRICT=${STRICT:-0}
SKIP_BUILD=${SKIP_BUILD:-0}
BINDERY_THREADS=${BINDERY_THREADS:-$(nproc)}
WITH_CONTROLLERS=${WITH_CONTROLLERS:-0}

cd "$(dirname "$0")/.."
ROOT=$(pwd)
SCRATCH="$ROOT/.build-release"

# shellcheck source=Benchmarks/lib.sh
. Benchmarks/lib.sh
prepare_bindery wrk etcd-server
require_command wrk
require_command etcd etcd-server

bench_init bench-durable

FIXTURE=Fixtures/employees
if [ "$WITH_CONTROLLERS" != 1 ]; then
    FIXTURE="$WORK/fixture"
    mkdir -p "$FIXTURE"
    cp Fixtures/employees/model.json Fixtures/employees/data.json "$FIXTURE/"
fi
echo "== fixture $FIXTURE; bindery --threads $BINDERY_THREADS"
echo "== data directories under $WORK ($(df -T "$WORK" | awk 'NR == 2 { print $2 }'))"

# start_bindery POLICY: starts a server on a fresh data directory; sets PORT and PID.
start_bindery() {
    local policy=$1 log="$WORK/bindery-$1.out"
    rm -rf "$WORK/data-$policy"
    "$BINDERY" serve --fixture "$FIXTURE" --data "$WORK/data-$policy" --port 0 --fsync "$policy" \
        --public Public --threads "$BINDERY_THREADS" >"$log" 2>&1 &
    PID=$!
    PIDS+=("$PID")
    for _ in $(seq 100); do
        PORT=$(sed -n 's/.*listening on http:\/\/127.0.0.1:\([0-9]*\).*/\1/p' "$log" 2>/dev/null || true)
        [ -n "$PORT" ] && return 0
        sleep 0.05
    done
    echo "bindery did not start: $(cat "$log")" >&2
    exit 2
}

start_etcd() {
    etcd --name bench --data-dir "$WORK/etcd" --enable-v2=true \
        --listen-client-urls http://127.0.0.1:23790 --advertise-client-urls http://127.0.0.1:23790 \
        --listen-peer-urls http://127.0.0.1:23800 --initial-advertise-peer-urls http://127.0.0.1:23800 \
        --initial-cluster bench=http://127.0.0.1:23800 --log-level error >"$WORK/etcd.out" 2>&1 &
    PID=$!
    PIDS+=("$PID")
    for _ in $(seq 100); do
        curl -sf -X PUT http://127.0.0.1:23790/v2/keys/bench/k0 -d value=0 >/dev/null && return 0
        sleep 0.1
    done
    echo "etcd did not start: $(cat "$WORK/etcd.out")" >&2
    exit 2
}

# measure TARGET URL: one wrk run; prints and returns requests/s in RPS.
measure() {
    local output
    output=$(BENCH_TARGET=$1 wrk -t"$WRK_THREADS" -c"$CONNECTIONS" -d"${DURATION}s" -s Benchmarks/durable-put.lua "$2")
    RPS=$(echo "$output" | awk '/Requests\/sec/ { print $2 }')
    local latency errors
    latency=$(echo "$output" | awk '/Latency/ { print $2; exit }')
    errors=$(echo "$output" | awk '/non-2xx or socket errors/ { print $NF }')
    printf "  %-14s %10s req/s   mean latency %8s   errors %s\n" "$3" "$RPS" "$latency" "$errors"
}

declare -A RESULTS
for round in $(seq "$ROUNDS"); do
    echo "== round $round"
    for policy in batch always; do
        start_bindery "$policy"
        measure bindery "http://127.0.0.1:$PORT" "bindery $policy"
        RESULTS[$policy]+="$RPS "
        if [ "$round" = 1 ] && [ "$policy" = batch ]; then
            seq_now=$(curl -sI "http://127.0.0.1:$PORT/healthz" | awk -F': ' 'tolower($1) == "x-store-seq" { print $2 }' | tr -d '\r')
            segment=$(ls "$WORK/data-$policy" | grep '^journal-' | sort | tail -n 1)
            first=$((10#$(echo "$segment" | sed 's/journal-0*\([0-9]*\)\.log/\1/')))
            bytes=$(stat -c %s "$WORK/data-$policy/$segment")
            records=$((seq_now - first + 1))
            [ "$records" -gt 0 ] && JOURNAL="journal: $bytes bytes for $records records = $((bytes / records)) bytes per change"
        fi
        stop_server "$PID"
    done
    rm -rf "$WORK/etcd"
    start_etcd
    measure etcd "http://127.0.0.1:23790" "etcd v2"
    RESULTS[etcd]+="$RPS "
    stop_server "$PID"
done

median() { tr ' ' '\n' | grep -v '^$' | sort -n | awk '{ a[NR] = $1 } END { print (NR % 2 ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2) }'; }
batch=$(echo "${RESULTS[batch]}" | median)
always=$(echo "${RESULTS[always]}" | median)
etcd=$(echo "${RESULTS[etcd]}" | median)
echo "== medians: bindery batch $batch, bindery always $always, etcd v2 $etcd req/s"
echo "== ${JOURNAL:-journal: not measured}"
ratio=$(awk -v a="$batch" -v b="$etcd" 'BEGIN { printf "%.2f", a / b }')
ratio_always=$(awk -v a="$always" -v b="$etcd" 'BEGIN { printf "%.2f", a / b }')
echo "== batch / etcd = $ratio (target >= $TARGET); always / etcd = $ratio_always"
if [ "$STRICT" = 1 ] && awk -v r="$ratio" -v t="$TARGET" 'BEGIN { exit !(r < t) }'; then
    exit 1
fi
