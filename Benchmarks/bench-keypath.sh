#!/usr/bin/env bash
# Benchmark of issue 3: key-path reads (`GET /objects/Employee/4/salary`) on Bindery (release) against a bare C
# libmicrohttpd server answering the same path with the same bytes (Benchmarks/bare_mhd.c with a path and a body, the
# same daemon flags and options), measured with wrk in alternation A B A B, on loopback only.
#
#   bash Benchmarks/bench-keypath.sh
#
# Environment (defaults in brackets):
#   ROUNDS [3]         A/B pairs measured
#   DURATION [5]       seconds per wrk run (at most 10 on a shared machine)
#   WARMUP [2]         seconds of warm-up per server before the first round
#   WRK_THREADS [2]    wrk -t
#   CONNECTIONS [64]   wrk -c
#   KEY_PATH [/objects/Employee/4/salary]
#   BARE_HEADERS [0]   1: the bare server also sends Bindery's two extra headers (X-Store-Seq, CORS)
#   TARGET [0.7]       the ratio Bindery/bare the issue asks for; the script exits 1 below it when STRICT=1
#   STRICT [0]
#   SKIP_BUILD [0]     1: use the binaries already in .build-bench/
#   BINDERY_BINARY     another bindery executable to measure (e.g. a baseline build); implies no Swift build
#
# Prints requests/s and server CPU per request of every run, the median of each server and the ratio Bindery/bare.
set -euo pipefail

ROUNDS=${ROUNDS:-3}
DURATION=${DURATION:-5}
WARMUP=${WARMUP:-2}
KEY_PATH=${KEY_PATH:-/objects/Employee/4/salary}
BARE_HEADERS=${BARE_HEADERS:-0}
TARGET=${TARGET:-0.7}
STRICT=${STRICT:-0}
SKIP_BUILD=${SKIP_BUILD:-0}

cd "$(dirname "$0")/.."
ROOT=$(pwd)
SCRATCH="$ROOT/.build-bench"
# shellcheck source=Benchmarks/lib.sh
. Benchmarks/lib.sh
prepare_bindery wrk
build_bare_mhd
require_command wrk

bench_init bench-keypath
start_fixture_bindery

# The bare server answers with exactly the bytes Bindery answers.
read -r status body < <(http_get "$BINDERY_PORT" "$KEY_PATH")
[ "$status" = 200 ] || { echo "bindery answered $status to GET $KEY_PATH: $body" >&2; exit 1; }
BARE_ARGS=(0 "$KEY_PATH" "$body")
[ "$BARE_HEADERS" = 1 ] && BARE_ARGS+=(--headers)
start bare_mhd "$WORK/bare.log" "$BARE" "${BARE_ARGS[@]}"
BARE_PORT=$PORT
read -r bare_status bare_body < <(http_get "$BARE_PORT" "$KEY_PATH")
if [ "$bare_status $bare_body" != "200 $body" ]; then
    echo "bare_mhd answered $bare_status $bare_body, not 200 $body" >&2
    exit 1
fi

BINDERY_URL="http://127.0.0.1:$BINDERY_PORT$KEY_PATH"
BARE_URL="http://127.0.0.1:$BARE_PORT$KEY_PATH"
echo "== GET $KEY_PATH -> 200 $body (${#body} bytes); bindery on :$BINDERY_PORT, bare on :$BARE_PORT" \
    "$([ "$BARE_HEADERS" = 1 ] && echo '(bare with Bindery headers)')"
echo "== $(nproc) cores; wrk -t$WRK_THREADS -c$CONNECTIONS -d${DURATION}s, $ROUNDS rounds A B (A = bindery, B = bare)"
echo "== load average before: $(cut -d' ' -f1-3 /proc/loadavg)"

ab_compare "$BINDERY_URL" "$BARE_URL"
