#!/usr/bin/env bash
# Long-poll benchmarks of issue 4 (API.md section 7), on loopback only; clients in Benchmarks/longpoll_bench.py.
#
#   bash Benchmarks/bench-longpoll.sh
#
# 1. hold:   WAITERS [10000] concurrent long-polls on one observer; server VmRSS before and while they wait (target:
#            growth < 16 KB per waiter); /healthz latency while they wait; one PUT: every waiter answered within 2 s.
# 2. fanout: FANOUT_WAITERS [1000] waiters re-polling after each answer, CHANGES [100] writes to one key, each sent
#            after the previous one was acknowledged (+ PACE ms; PACES [0 20] are run); latency from the PUT's
#            acknowledgement to each waiter's answer (target p99 < 50 ms), Bindery and etcd v2 (`?wait=true`)
#            alternately, on fresh servers, in the same run.
#
# Environment: WAITERS, FANOUT_WAITERS, CHANGES, PACES, ROUNDS [1] (fan-out rounds), SKIP_BUILD [0], SKIP_ETCD [0],
#   FANOUT_CLIENT [c] (c: the fan-out waiters of Benchmarks/fanout_client.c; python: those of longpoll_bench.py),
#   BINDERY_BINARY (another bindery executable). Every benchmark is bounded by `timeout` (120 s); servers are stopped
# on exit (also Ctrl-C). Exit status 1 when a target is missed.
set -euo pipefail

WAITERS=${WAITERS:-10000}
FANOUT_WAITERS=${FANOUT_WAITERS:-1000}
CHANGES=${CHANGES:-100}
PACES=${PACES:-"0 20"}
ROUNDS=${ROUNDS:-1}
SKIP_BUILD=${SKIP_BUILD:-0}
SKIP_ETCD=${SKIP_ETCD:-0}

cd "$(dirname "$0")/.."
ROOT=$(pwd)
SCRATCH="$ROOT/.build-release"

# shellcheck source=Benchmarks/lib.sh
. "$ROOT/Benchmarks/lib.sh"

# File descriptors: each side holds one per waiter. Ask for 65536; a container may cap the hard limit (20000 here).
ulimit -n 65536 2>/dev/null || ulimit -n "$(ulimit -Hn)"
if [ "$(ulimit -n)" != unlimited ] && [ "$(ulimit -n)" -lt $((WAITERS + 500)) ]; then
    echo "open-file limit $(ulimit -n) is too low for $WAITERS waiters (hard limit $(ulimit -Hn))" >&2
    exit 2
fi

prepare_bindery etcd-server
if [ "$SKIP_ETCD" != 1 ]; then require_command etcd etcd-server; fi

# The fan-out waiters run in C (Benchmarks/fanout_client.c) unless FANOUT_CLIENT=python: the Python loop costs about
# 20 us per answer, on the same 2 cores as the server, and its backlog ends up in every answer's timestamp.
CLIENT_ARGS=()
if [ "${FANOUT_CLIENT:-c}" != python ]; then
    build_c fanout_client
    CLIENT_ARGS=(--client "$SCRATCH/fanout_client")
fi

bench_init bench-longpoll
PY="python3 $ROOT/Benchmarks/longpoll_bench.py"
STATUS=0
RESULTS="$WORK/results"

# stop_last: stops the most recently started server and forgets it.
stop_last() {
    stop_server "${PIDS[-1]}"
    unset 'PIDS[-1]'
}

start_bindery() {
    local data
    data=$(mktemp -d "$WORK/data.XXXXXX")
    start bindery "$WORK/bindery.log" "$BINDERY" serve --port 0 --host 127.0.0.1 --data "$data" \
        --fixture Fixtures/employees --max-waiters 20000
    SERVER_PID=${PIDS[-1]}
}

free_port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

start_etcd() {
    local data client peer
    data=$(mktemp -d "$WORK/etcd.XXXXXX")
    client=$(free_port)
    peer=$(free_port)
    etcd --name bench --data-dir "$data" --listen-client-urls "http://127.0.0.1:$client" \
        --advertise-client-urls "http://127.0.0.1:$client" --listen-peer-urls "http://127.0.0.1:$peer" \
        --initial-advertise-peer-urls "http://127.0.0.1:$peer" --initial-cluster "bench=http://127.0.0.1:$peer" \
        --enable-v2=true --log-level error >"$WORK/etcd.log" 2>&1 &
    PIDS+=("$!")
    SERVER_PID=$!
    PORT=$client
    for _ in $(seq 100); do
        case "$(http_get "$PORT" /health 2>/dev/null || true)" in
            "200 "*true*) return 0 ;;
        esac
        kill -0 "$SERVER_PID" 2>/dev/null || break
        sleep 0.1
    done
    echo "etcd did not start:" >&2
    cat "$WORK/etcd.log" >&2
    return 1
}

run() { # run LABEL COMMAND... — bounded to 120 s; keeps the RESULT line
    local label=$1 rc=0
    shift
    timeout --kill-after=5 120 "$@" | tee "$WORK/out" || rc=$?
    [ "$rc" -eq 0 ] || { echo "!! $label exited $rc" >&2; STATUS=1; }
    sed -n "s/^RESULT /$label /p" "$WORK/out" >>"$RESULTS"
}

echo "== $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg), open-file limit $(ulimit -n), $(python3 --version)"
echo "== bindery: $BINDERY; etcd: $(etcd --version 2>/dev/null | head -n 1)"
: >"$RESULTS"

echo
echo "== 1. $WAITERS concurrent long-polls on one observer"
start_bindery
echo "bindery on :$PORT (pid $SERVER_PID)"
run hold $PY hold --port "$PORT" --pid "$SERVER_PID" --waiters "$WAITERS"
stop_last

for pace in $PACES; do
    for round in $(seq "$ROUNDS"); do
        echo
        echo "== 2. fan-out: $FANOUT_WAITERS waiters, $CHANGES changes in a row, pace $pace ms after each ack (round $round)"
        start_bindery
        echo "bindery on :$PORT (pid $SERVER_PID)"
        run "fanout-bindery-pace$pace" $PY fanout --kind bindery --port "$PORT" --pid "$SERVER_PID" \
            --waiters "$FANOUT_WAITERS" --changes "$CHANGES" --pace-ms "$pace" "${CLIENT_ARGS[@]}"
        stop_last
        if [ "$SKIP_ETCD" != 1 ]; then
            start_etcd
            echo "etcd v2 on :$PORT (pid $SERVER_PID)"
            run "fanout-etcd-pace$pace" $PY fanout --kind etcd --port "$PORT" --pid "$SERVER_PID" \
                --waiters "$FANOUT_WAITERS" --changes "$CHANGES" --pace-ms "$pace" "${CLIENT_ARGS[@]}"
            stop_last
        fi
    done
done

echo
echo "== summary (p50 / p99 in ms from the PUT acknowledgement to each waiter's answer)"
python3 - "$RESULTS" <<'EOF'
import json, sys
for line in open(sys.argv[1]):
    label, _, payload = line.partition(" ")
    r = json.loads(payload)
    if r["bench"] == "hold":
        a = r["answer_after_ack_ms"]
        print("%-22s %d/%d answered, %d within 2 s, last %.3f s after the PUT; RSS +%d B/waiter; "
              "/healthz while waiting p50 %.2f p99 %.2f ms -> %s" % (
                  label, r["answered"], r["waiters"], r["within_2s"], r["last_answer_after_put_s"] or -1,
                  r["rss_growth_bytes_per_waiter"], r["healthz_waiting_ms"]["p50"], r["healthz_waiting_ms"]["p99"],
                  "PASS" if r["pass"] else "FAIL"))
    else:
        a, s = r["ack_to_answer_ms"], r["send_to_answer_ms"]
        print("%-22s p50 %7.2f  p99 %7.2f  max %7.2f  (from send: p50 %7.2f p99 %7.2f)  writes %.2f s, "
              "missing %d, dup %d, errors %d" % (label, a["p50"], a["p99"], a["max"], s["p50"], s["p99"],
                                                 r["write_span_s"], r["missing"], r["duplicates"], r["errors"]))
EOF
exit "$STATUS"
