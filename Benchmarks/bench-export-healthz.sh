#!/usr/bin/env bash
# `/healthz` while many clients export the store: `GET /healthz` latency (wrk -c1 --latency) during CLIENTS clients
# looping `GET /store` on a store of OBJECTS extra employees, and the exports per second; side by side with
# another build (OTHER_BINARY, e.g. one before exports moved off the request threads) when given. Loopback only.
#
#   bash Benchmarks/bench-export-healthz.sh
#
# Environment (defaults in brackets):
#   OBJECTS [12000]    employees added to the employees fixture (a ~3 MB export)
#   CLIENTS [50]       concurrent exporting clients (wrk -c)
#   DURATION [8]       seconds of /healthz measurement (the exports run 4 s longer)
#   SKIP_BUILD [0]     1: use the binary already in .build-release/
#   BINDERY_BINARY     another bindery executable to measure; implies no Swift build
#   OTHER_BINARY       a second executable measured right after, for a side-by-side figure
set -euo pipefail

OBJECTS=${OBJECTS:-12000}
CLIENTS=${CLIENTS:-50}
DURATION=${DURATION:-8}

cd "$(dirname "$0")/.."
ROOT=$(pwd)
SCRATCH="$ROOT/.build-release"

# shellcheck source=Benchmarks/lib.sh
. Benchmarks/lib.sh
prepare_bindery wrk
require_command wrk
require_command python3
bench_init bench-export

mkdir -p "$WORK/fixture"
cp Fixtures/employees/model.json "$WORK/fixture/"
python3 - "$OBJECTS" "$WORK/fixture/data.json" <<'PY'
import json, sys
count, path = int(sys.argv[1]), sys.argv[2]
data = json.load(open("Fixtures/employees/data.json"))
objects = data["objects"] if isinstance(data, dict) else data
departments = [o["$id"] for o in objects if o["$id"].startswith("Department/")]
for i in range(count):
    objects.append({"$id": f"Employee/x{i}", "firstName": f"First{i}", "lastName": f"Last{i}", "salary": 50000 + i,
                    "department": {"$ref": departments[i % len(departments)]}, "hireDate": "2020-01-01T00:00:00Z"})
json.dump({"objects": objects}, open(path, "w"))
PY

measure() {
    local binary=$1 name=$2 exports health
    rm -rf "$WORK/data"
    start "$name" "$WORK/$name.log" "$binary" serve --fixture "$WORK/fixture" --data "$WORK/data" --public Public \
        --host 127.0.0.1 --port 0
    local pid=${PIDS[-1]}
    wrk -t2 -c"$CLIENTS" -d"$((DURATION + 4))s" "http://127.0.0.1:$PORT/store" >"$WORK/$name.exports" 2>&1 &
    local exporter=$!
    sleep 2
    health=$(wrk -t1 -c1 -d"${DURATION}s" --latency "http://127.0.0.1:$PORT/healthz" 2>&1)
    wait "$exporter" || true
    exports=$(awk '/Requests\/sec/ { print $2 }' "$WORK/$name.exports")
    printf '  %-8s exports/s %-8s /healthz: %s req/s, p50 %s, p99 %s\n' "$name" "$exports" \
        "$(awk '/Requests\/sec/ { print $2 }' <<<"$health")" "$(awk '$1 == "50%" { print $2 }' <<<"$health")" \
        "$(awk '$1 == "99%" { print $2 }' <<<"$health")"
    stop_server "$pid"
}

echo "== $OBJECTS extra employees, $CLIENTS clients looping GET /store, /healthz measured for ${DURATION}s"
measure "$BINDERY" bindery
if [ -n "${OTHER_BINARY:-}" ]; then measure "$OTHER_BINARY" other; fi
