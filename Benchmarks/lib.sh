# Helpers shared by the wrk A/B benchmark scripts (source it; it sets `set -euo pipefail` expectations on the caller).
#
#   . "$(dirname "$0")/lib.sh"
#   bench_init NAME                       # temporary directory in $WORK, servers stopped on exit/Ctrl-C
#   start NAME LOGFILE COMMAND...         # starts a server printing "listening on http://HOST:PORT"; sets PORT
#   http_get PORT PATH                    # prints "STATUS BODY" of a GET over bash's /dev/tcp (no curl needed)
#   run_wrk URL SECONDS [PID]             # prints "REQUESTS_PER_SECOND SERVER_CPU_MICROSECONDS_PER_REQUEST"
#   median VALUE...                       # prints the median
#
# run_wrk reads WRK_THREADS and CONNECTIONS (defaults 2 and 64). Loopback only.

WRK_THREADS=${WRK_THREADS:-2}
CONNECTIONS=${CONNECTIONS:-64}
PIDS=()
WORK=""

bench_cleanup() {
    local pid
    for pid in "${PIDS[@]}"; do
        kill -TERM "$pid" 2>/dev/null || true
    done
    for pid in "${PIDS[@]}"; do
        # Give each server 5 s to stop cleanly, then kill it.
        for _ in $(seq 50); do
            case "$(ps -o stat= -p "$pid" 2>/dev/null)" in "" | Z*) break ;; esac
            sleep 0.1
        done
        kill -KILL "$pid" 2>/dev/null || true
        wait "$pid" 2>/dev/null || true
    done
    [ -n "$WORK" ] && rm -rf "$WORK"
}

bench_init() {
    WORK=$(mktemp -d "${TMPDIR:-/tmp}/$1.XXXXXX")
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
