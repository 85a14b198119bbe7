# Helpers shared by the benchmark scripts (source it; it sets `set -euo pipefail` expectations on the caller).
#
#   . "$(dirname "$0")/lib.sh"
#   prepare_bindery APT_PACKAGE...        # unless SKIP_BUILD=1: installs the packages and builds bindery (release,
#                                         # in $SCRATCH) unless BINDERY_BINARY names one; sets and checks BINDERY
#   build_c NAME [CC_ARGS...]             # compiles Benchmarks/NAME.c into $SCRATCH/NAME (with SKIP_BUILD=1 only when
#                                         # missing or older than the source)
#   build_bare_mhd                        # build_c of bare_mhd (the bare libmicrohttpd baseline); sets BARE
#   require_command NAME [PACKAGE]        # exits 2 naming the Debian package when NAME is not installed
#   stop_server PID                       # SIGTERM, then SIGKILL after 5 s
#   bench_init NAME                       # temporary directory in $WORK (under DATA_ROOT, else TMPDIR or /tmp);
#                                         # servers in PIDS stopped on exit/Ctrl-C
#   start NAME LOGFILE COMMAND...         # starts a server printing "listening on http://HOST:PORT"; sets PORT
#   start_fixture_bindery                 # starts $BINDERY on Fixtures/employees (data in $WORK/data, log
#                                         # $WORK/bindery.log) on 127.0.0.1; sets BINDERY_PORT
#   http_get PORT PATH                    # prints "STATUS BODY" of a GET over bash's /dev/tcp (no curl needed)
#   run_wrk URL SECONDS [PID]             # prints "REQUESTS_PER_SECOND SERVER_CPU_MICROSECONDS_PER_REQUEST"
#   median VALUE...                       # prints the median
#   ab_compare BINDERY_URL BARE_URL       # the A/B rounds of bench-healthz.sh and bench-keypath.sh (see below)
#
# run_wrk reads WRK_THREADS and CONNECTIONS (defaults 2 and 64). Loopback only.

WRK_THREADS=${WRK_THREADS:-2}
CONNECTIONS=${CONNECTIONS:-64}
PIDS=()
WORK=""

prepare_bindery() {
    if [ "${SKIP_BUILD:-0}" != 1 ]; then
        bash scripts/install-deps.sh "$@"
        if [ -z "${BINDERY_BINARY:-}" ]; then
            echo "== building Bindery (release, scratch path ${SCRATCH#"$ROOT"/})"
            swift build -c release --product bindery --scratch-path "$SCRATCH" 2>&1 | tail -n 3
        fi
    fi
    BINDERY=${BINDERY_BINARY:-$SCRATCH/release/bindery}
    [ -x "$BINDERY" ] || { echo "missing $BINDERY (run without SKIP_BUILD=1)" >&2; exit 2; }
}

build_c() {
    local name=$1
    shift
    if [ "${SKIP_BUILD:-0}" != 1 ] || [ ! -x "$SCRATCH/$name" ] || [ "Benchmarks/$name.c" -nt "$SCRATCH/$name" ]; then
        echo "== compiling Benchmarks/$name.c"
        mkdir -p "$SCRATCH"
        cc -O2 -o "$SCRATCH/$name" "Benchmarks/$name.c" "$@"
    fi
}

build_bare_mhd() {
    # shellcheck disable=SC2046  # pkg-config output is meant to be split into words
    build_c bare_mhd $(pkg-config --cflags --libs libmicrohttpd) -lpthread
    BARE="$SCRATCH/bare_mhd"
}

require_command() {
    command -v "$1" >/dev/null || { echo "$1 is not installed${2:+ ($2)}" >&2; exit 2; }
}

stop_server() {
    local pid=$1
    kill -TERM "$pid" 2>/dev/null || true
    for _ in $(seq 50); do
        case "$(ps -o stat= -p "$pid" 2>/dev/null)" in "" | Z*) break ;; esac
        sleep 0.1
    done
    kill -KILL "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
}

bench_cleanup() {
    local pid
    # TERM them all first, so that they stop in parallel; stop_server then waits for each (KILL after 5 s).
    for pid in "${PIDS[@]}"; do
        kill -TERM "$pid" 2>/dev/null || true
    done
    for pid in "${PIDS[@]}"; do
        stop_server "$pid"
    done
    [ -n "$WORK" ] && rm -rf "$WORK"
}

bench_init() {
    WORK=$(mktemp -d "${DATA_ROOT:-${TMPDIR:-/tmp}}/$1.XXXXXX")
    trap bench_cleanup EXIT
    trap 'exit 130' INT TERM
}

# start NAME LOGFILE COMMAND... — starts a server that prints "... listening on http://HOST:PORT" and sets PORT.
# (Not to be called in a command substitution: PIDS must be recorded in the calling shell for the trap.)
start() {
    local name=$1 log=$2
    shift 2
    "$@" >"$log" 2>"$log.err" &
    local pid=$!
    PIDS+=("$pid")
    PORT=""
    for _ in $(seq 300); do
        PORT=$(sed -n 's|.*listening on http://[^ ]*:\([0-9][0-9]*\).*|\1|p' "$log" 2>/dev/null | head -n 1)
        [ -n "$PORT" ] && return 0
        kill -0 "$pid" 2>/dev/null || break
        sleep 0.1
    done
    echo "$name did not start:" >&2
    cat "$log" "$log.err" >&2
    return 1
}

start_fixture_bindery() {
    start bindery "$WORK/bindery.log" \
        "$BINDERY" serve --fixture Fixtures/employees --data "$WORK/data" --public Public --host 127.0.0.1 --port 0
    BINDERY_PORT=$PORT
}

# http_get PORT PATH — prints the status code, a space and the body of `GET PATH` (Connection: close).
http_get() {
    local port=$1 path=$2 reply
    exec 3<>"/dev/tcp/127.0.0.1/$port"
    printf 'GET %s HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n' "$path" >&3
    reply=$(timeout 5 cat <&3)
    exec 3<&-
    local status=${reply#HTTP/1.1 }
    printf '%s %s\n' "${status%% *}" "${reply#*$'\r\n\r\n'}"
}

# cpu_ticks PID: user+system clock ticks the process has used so far.
cpu_ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }

# run_wrk URL SECONDS [PID] — prints "REQUESTS_PER_SECOND CPU_MICROSECONDS_PER_REQUEST" (the server's user+system CPU,
# from /proc, divided by the requests served: steadier than req/s when the machine is shared); complains on stderr
# about socket errors and non-2xx answers.
run_wrk() {
    local url=$1 seconds=$2 pid=${3:-} out before=0 after=0 tick
    tick=$(getconf CLK_TCK)
    [ -n "$pid" ] && before=$(cpu_ticks "$pid")
    out=$(timeout $((seconds + 30)) wrk -t"$WRK_THREADS" -c"$CONNECTIONS" -d"${seconds}s" --latency "$url")
    [ -n "$pid" ] && after=$(cpu_ticks "$pid")
    if grep -qE 'Socket errors|Non-2xx' <<<"$out"; then
        grep -E 'Socket errors|Non-2xx' <<<"$out" | sed 's/^/    warning: /' >&2
    fi
    awk -v ticks=$((after - before)) -v hz="$tick" '
        /requests in/ { requests = $1 }
        /^Requests\/sec:/ { rps = $2 }
        END { printf "%s %.2f\n", rps, (requests > 0 ? ticks / hz / requests * 1e6 : 0) }' <<<"$out"
}

median() {
    printf '%s\n' "$@" | sort -g | awk '{ v[NR] = $1 } END { if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}

# ab_compare BINDERY_URL BARE_URL — warms both up (WARMUP seconds), runs ROUNDS pairs of DURATION-second wrk runs in
# alternation (A = bindery = PIDS[0], B = bare = PIDS[1]), prints every run, the medians, the per-round ratios and
# the ratio of the medians against TARGET; exits 1 below it when STRICT=1.
ab_compare() {
    local bindery_url=$1 bare_url=$2 round a a_cpu b b_cpu
    if [ "$WARMUP" -gt 0 ]; then
        echo "== warm-up ${WARMUP}s each"
        run_wrk "$bindery_url" "$WARMUP" >/dev/null
        run_wrk "$bare_url" "$WARMUP" >/dev/null
    fi
    local bindery_results=() bare_results=() bindery_cpu=() bare_cpu=() ratios=()
    for round in $(seq "$ROUNDS"); do
        read -r a a_cpu < <(run_wrk "$bindery_url" "$DURATION" "${PIDS[0]}")
        printf 'round %d  A bindery   %10.0f req/s   server CPU %6.2f us/request\n' "$round" "$a" "$a_cpu"
        read -r b b_cpu < <(run_wrk "$bare_url" "$DURATION" "${PIDS[1]}")
        printf 'round %d  B bare      %10.0f req/s   server CPU %6.2f us/request\n' "$round" "$b" "$b_cpu"
        bindery_results+=("$a")
        bare_results+=("$b")
        bindery_cpu+=("$a_cpu")
        bare_cpu+=("$b_cpu")
        ratios+=("$(awk -v a="$a" -v b="$b" 'BEGIN { printf "%.3f", (b > 0 ? a / b : 0) }')")
    done
    local bindery_median bare_median bindery_cpu_median bare_cpu_median ratio cpu_ratio verdict
    bindery_median=$(median "${bindery_results[@]}")
    bare_median=$(median "${bare_results[@]}")
    bindery_cpu_median=$(median "${bindery_cpu[@]}")
    bare_cpu_median=$(median "${bare_cpu[@]}")
    ratio=$(awk -v a="$bindery_median" -v b="$bare_median" 'BEGIN { printf "%.3f", (b > 0 ? a / b : 0) }')
    cpu_ratio=$(awk -v a="$bindery_cpu_median" -v b="$bare_cpu_median" 'BEGIN { printf "%.2f", (b > 0 ? a / b : 0) }')
    verdict=$(awk -v r="$ratio" -v t="$TARGET" 'BEGIN { print (r >= t ? "meets" : "BELOW") }')
    echo "--"
    printf 'median   bindery   %10.0f req/s   server CPU %6.2f us/request\n' "$bindery_median" "$bindery_cpu_median"
    printf 'median   bare      %10.0f req/s   server CPU %6.2f us/request\n' "$bare_median" "$bare_cpu_median"
    echo "per-round ratios: ${ratios[*]} (median $(median "${ratios[@]}"))"
    echo "ratio of medians bindery/bare = $ratio ($verdict the target $TARGET);" \
        "server CPU per request bindery/bare = $cpu_ratio"
    echo "load average now: $(cut -d' ' -f1-3 /proc/loadavg) (req/s is only comparable on an otherwise idle machine)"
    if [ "$STRICT" = 1 ] && [ "$verdict" = BELOW ]; then return 1; fi
}
