#!/usr/bin/env bash
# Benchmark of issue 2: `GET /healthz` on Bindery (release) against a bare C libmicrohttpd server with the same daemon
# flags and options (Benchmarks/bare_mhd.c), measured with wrk in alternation A B A B, on loopback only.
#
#   bash Benchmarks/bench-healthz.sh            # or: make bench-healthz
#
# Environment (defaults in brackets):
#   ROUNDS [10]        A/B pairs measured (req/s moves by ±25% between runs on a shared 2-core machine)
#   DURATION [5]       seconds per wrk run
#   WARMUP [3]         seconds of warm-up per server before the first round
#   WRK_THREADS [2]    wrk -t
#   CONNECTIONS [64]   wrk -c
#   BARE_HEADERS [0]   1: the bare server also sends Bindery's two extra headers (X-Store-Seq, CORS)
#   TARGET [0.9]       the ratio Bindery/bare the issue asks for; the script exits 1 below it when STRICT=1
#   STRICT [0]
#   SKIP_BUILD [0]     1: use the binaries already in .build-release/
#   BINDERY_BINARY     another bindery executable to measure (e.g. a patched build); implies no Swift build
#
# Prints requests/s of every run, the median of each server and the ratio Bindery/bare.
set -euo pipefail

ROUNDS=${ROUNDS:-10}
DURATION=${DURATION:-5}
WARMUP=${WARMUP:-3}
WRK_THREADS=${WRK_THREADS:-2}
CONNECTIONS=${CONNECTIONS:-64}
BARE_HEADERS=${BARE_HEADERS:-0}
TARGET=${TARGET:-0.9}
STRICT=${STRICT:-0}
SKIP_BUILD=${SKIP_BUILD:-0}

cd "$(dirname "$0")/.."
ROOT=$(pwd)
SCRATCH="$ROOT/.build-release"

# shellcheck source=Benchmarks/lib.sh
. Benchmarks/lib.sh
prepare_bindery wrk
build_bare_mhd
require_command wrk

bench_init bench-healthz

start_fixture_bindery
BARE_ARGS=(0)
[ "$BARE_HEADERS" = 1 ] && BARE_ARGS+=(--headers)
start bare_mhd "$WORK/bare.log" "$BARE" "${BARE_ARGS[@]}"
BARE_PORT=$PORT
BINDERY_URL="http://127.0.0.1:$BINDERY_PORT/healthz"
BARE_URL="http://127.0.0.1:$BARE_PORT/healthz"

# A sanity check that both answer 200 with the expected body.
check() {
    local reply
    reply=$(http_get "$1" /healthz)
    [ "$reply" = '200 {"status":"ok"}' ] || {
        echo "port $1 did not answer /healthz with 200 {\"status\":\"ok\"}: $reply" >&2
        return 1
    }
}
check "$BINDERY_PORT"
check "$BARE_PORT"

echo "== bindery on :$BINDERY_PORT, bare_mhd on :$BARE_PORT$([ "$BARE_HEADERS" = 1 ] && echo ' (with Bindery headers)')"
echo "== $(nproc) cores; wrk -t$WRK_THREADS -c$CONNECTIONS -d${DURATION}s, $ROUNDS rounds A B (A = bindery, B = bare)"

ab_compare "$BINDERY_URL" "$BARE_URL"
