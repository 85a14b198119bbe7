#!/usr/bin/env bash
# `make container-smoke`: the Dockerfile's runtime stage, assembled without a Docker engine and run (issue 8).
#
#   1. debootstrap --variant=minbase bookworm into .build-static/container-rootfs (what debian:bookworm-slim is made
#      from; kept for later runs, FRESH=1 starts again), with the image's apt sources (bookworm, -updates, -security);
#   2. checks that the bookworm-slim library list of scripts/container-check.sh holds in that root filesystem;
#   3. replays the runtime stage in a copy of it: RUN with chroot, COPY from the repository (and, for COPY --from=build,
#      from .build-static and this machine's toolchain), ENV, WORKDIR, USER;
#   4. starts CMD in the chroot as the image's USER, as PID 1 of its own PID namespace (like `docker run`), on a free
#      loopback port instead of 8080 (the host's network is shared), runs the HEALTHCHECK command in the chroot,
#      fetches /healthz, then sends the STOPSIGNAL and wants a clean exit within 5 s;
#   5. starts it again, sends SIGSEGV and wants swift-backtrace-static's crash report on standard error.
# Needs root, debootstrap (installed when missing) and Debian's mirror (MIRROR, default: the first Debian URI in
# /etc/apt/sources.list*). Prints PASS/FAIL per step; exits 1 on failure. SKIP_BUILD=1 uses .build-static as it is.
set -uo pipefail

cd "$(dirname "$0")/.."
# shellcheck source=scripts/dockerfile-lib.sh
. scripts/dockerfile-lib.sh
ROOT_DIR=$(pwd)
DOCKERFILE=${DOCKERFILE:-Dockerfile}
SCRATCH=${SCRATCH:-.build-static}
SWIFT=${SWIFT:-swift}
BASE="$ROOT_DIR/$SCRATCH/container-rootfs"
failures=0
pass() { printf 'PASS  %s\n' "$*"; }
fail() { printf 'FAIL  %s\n' "$*"; failures=$((failures + 1)); }
info() { printf '      %s\n' "$*"; }
die() { fail "$*"; echo "container-smoke: stopped"; exit 1; }

[ "$(id -u)" -eq 0 ] || die "container-smoke needs root (debootstrap and chroot)"
command -v debootstrap >/dev/null || bash scripts/install-deps.sh debootstrap >/dev/null || die "install debootstrap"

# Debian's mirror as apt knows it here (deb822 "URIs:" or one-line "deb URI suite").
if [ -z "${MIRROR:-}" ]; then
    MIRROR=$(cat /etc/apt/sources.list /etc/apt/sources.list.d/*.list /etc/apt/sources.list.d/*.sources 2>/dev/null |
        grep -Eo '(URIs:[[:space:]]*|^deb[[:space:]]+(\[[^]]*\][[:space:]]+)?)https?://[^[:space:]]*/debian/?([[:space:]]|$)' |
        grep -Eo 'https?://[^[:space:]]*' | head -n 1)
    MIRROR=${MIRROR:-http://deb.debian.org/debian}
fi
MIRROR=${MIRROR%/}
SECURITY_MIRROR=${SECURITY_MIRROR:-${MIRROR}-security}

# ---- the Dockerfile's runtime stage (the last one) ------------------------------------------------------------------
PARSED=$(parse_dockerfile "$DOCKERFILE")
RUNTIME=$(awk -F'\t' '$2 == "FROM" { s = $1 } END { print s }' <<<"$PARSED")
RUNTIME_STAGE=$(awk -F'\t' -v s="$RUNTIME" '$1 == s' <<<"$PARSED")
image=$(awk -F'\t' 'NR == 1 { split($3, w, " "); print w[1] }' <<<"$RUNTIME_STAGE")
[ "$image" = debian:bookworm-slim ] || die "the runtime stage is FROM debian:bookworm-slim (it is $image)"

# ---- the release binary -------------------------------------------------------------------------------------------
BINARY="$ROOT_DIR/$SCRATCH/release/bindery"
if [ "${SKIP_BUILD:-0}" != 1 ]; then
    info "swift build -c release --static-swift-stdlib --scratch-path $SCRATCH --product bindery"
    "$SWIFT" build -c release --static-swift-stdlib --scratch-path "$SCRATCH" --product bindery >/dev/null 2>&1 ||
        die "swift build -c release --static-swift-stdlib"
fi
[ -x "$BINARY" ] || die "the release binary exists ($BINARY)"
TOOLCHAIN=$(dirname "$(dirname "$(dirname "$(readlink -f "$(command -v "$SWIFT")")")")")

# ---- 1. the base root filesystem ----------------------------------------------------------------------------------
MOUNTS=()
WORK=""
cleanup() {
    local i
    for ((i = ${#MOUNTS[@]} - 1; i >= 0; i--)); do umount -l "${MOUNTS[i]}" 2>/dev/null; done
    [ -n "$WORK" ] && rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

if [ "${FRESH:-0}" = 1 ] || [ ! -f "$BASE/.complete" ]; then
    rm -rf "$BASE"
    mkdir -p "$BASE"
    info "debootstrap --variant=minbase bookworm $BASE $MIRROR (takes a few minutes)"
    started=$(date +%s)
    if ! timeout 1200 debootstrap --variant=minbase bookworm "$BASE" "$MIRROR" >"$BASE.log" 2>&1; then
        tail -n 20 "$BASE.log"
        die "debootstrap --variant=minbase bookworm (log: $BASE.log)"
    fi
    # The apt sources of the debian:bookworm-slim image.
    rm -f "$BASE/etc/apt/sources.list"
    cat >"$BASE/etc/apt/sources.list.d/debian.sources" <<EOF
Types: deb
URIs: $MIRROR
Suites: bookworm bookworm-updates
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg

Types: deb
URIs: $SECURITY_MIRROR
Suites: bookworm-security
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
EOF
    chroot "$BASE" dpkg-query -W -f='${Package}\n' | sort >"$BASE/.packages"
    touch "$BASE/.complete"
    pass "debootstrap --variant=minbase bookworm ($(wc -l <"$BASE/.packages") packages, $(($(date +%s) - started)) s)"
else
    pass "debootstrap --variant=minbase bookworm (reused $BASE; FRESH=1 to rebuild)"
fi

# ---- 2. the bookworm-slim library list of container-check.sh ----------------------------------------------------
eval "$(sed -n '/^SLIM_LIBRARIES=/,/"$/p' scripts/container-check.sh)"
absent=""
for package in ${SLIM_LIBRARIES:-}; do grep -qx "$package" "$BASE/.packages" || absent+="$package "; done
if [ -n "${SLIM_LIBRARIES:-}" ] && [ -z "$absent" ]; then
    pass "every library container-check.sh assumes in bookworm-slim is in the minbase root filesystem"
else
    fail "container-check.sh's SLIM_LIBRARIES are in the minbase root filesystem (absent: ${absent:-the list is empty})"
fi

# ---- 3. the runtime stage replayed ----------------------------------------------------------------------------------
WORK=$(mktemp -d "${TMPDIR:-/tmp}/container-smoke.XXXXXX")
ROOTFS="$WORK/rootfs"
cp -a "$BASE" "$ROOTFS"
cp -L /etc/resolv.conf "$ROOTFS/etc/resolv.conf"
# /proc and /dev for apt and the program; the image gets them from the container runtime.
mount --bind /dev "$ROOTFS/dev" && MOUNTS+=("$ROOTFS/dev")
mount -t proc proc "$ROOTFS/proc" && MOUNTS+=("$ROOTFS/proc")

declare -a ENVIRONMENT=("PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin" "HOME=/root")
WORKDIR=/
USER_SPEC=root
CMD_JSON=""
HEALTH=""
replay_ok=yes
while IFS=$'\t' read -r _ instruction arguments; do
    case "$instruction" in
        RUN)
            info "RUN ${arguments:0:100}..."
            if ! (cd / && chroot "$ROOTFS" /usr/bin/env -i "${ENVIRONMENT[@]}" /bin/sh -c "cd '$WORKDIR' && $arguments") \
                >"$WORK/run.log" 2>&1; then
                tail -n 20 "$WORK/run.log"
                fail "RUN $arguments"
                replay_ok=no
            fi
            ;;
        COPY | ADD)
            read -r -a words <<<"$arguments"
            from=""
            sources=()
            for word in "${words[@]}"; do
                case "$word" in
                    --from=*) from=${word#--from=} ;;
                    --*) ;;
                    *) sources+=("$word") ;;
                esac
            done
            destination=${sources[-1]}
            unset 'sources[-1]'
            [[ "$destination" == /* ]] || destination="${WORKDIR%/}/${destination#./}"
            for source in "${sources[@]}"; do
                if [ -n "$from" ]; then
                    case "$source" in
                        */bindery) local_source=$BINARY ;;           # the build stage's `swift build` product
                        /usr/*) local_source="$TOOLCHAIN$source" ;;   # the build image's toolchain lives in /usr
                        *) local_source="" ;;
                    esac
                else
                    local_source="$ROOT_DIR/$source"
                fi
                if [ -z "$local_source" ] || [ ! -e "$local_source" ]; then
                    fail "COPY $arguments: no local counterpart of $source"
                    replay_ok=no
                    continue
                fi
                if [[ "$destination" == */ ]] || [ -d "$local_source" ]; then
                    mkdir -p "$ROOTFS$destination"
                    if [ -d "$local_source" ]; then cp -a "$local_source/." "$ROOTFS$destination/"; else cp -a "$local_source" "$ROOTFS$destination"; fi
                else
                    mkdir -p "$(dirname "$ROOTFS$destination")"
                    cp -a "$local_source" "$ROOTFS$destination"
                fi
            done
            ;;
        ENV)
            # ENV KEY=VALUE ... (the form this Dockerfile uses; values without spaces)
            for pair in $arguments; do ENVIRONMENT+=("$pair"); done
            ;;
        WORKDIR) WORKDIR=$arguments; mkdir -p "$ROOTFS$WORKDIR" ;;
        USER) USER_SPEC=$arguments ;;
        CMD) CMD_JSON=$arguments ;;
        HEALTHCHECK) HEALTH=$arguments ;;
        VOLUME)
            for volume in $(tr -d '[]",' <<<"$arguments"); do mkdir -p "$ROOTFS$volume"; done
            ;;
    esac
done < <(tail -n +2 <<<"$RUNTIME_STAGE")
if [ "$replay_ok" = yes ]; then pass "the runtime stage replayed in a chroot (RUN, COPY, ENV, WORKDIR, USER)"; else die "the runtime stage replayed"; fi
info "installed beyond minbase: $(chroot "$ROOTFS" dpkg-query -W -f='${Package}\n' | sort | comm -13 "$BASE/.packages" - | tr '\n' ' ')"
info "root filesystem: $(du -sh --exclude=proc --exclude=dev "$ROOTFS" | cut -f1) (minbase $(du -sh "$BASE" | cut -f1))"
missing=$(chroot "$ROOTFS" /usr/bin/env -i "${ENVIRONMENT[@]}" ldd /usr/local/bin/bindery 2>&1 | grep 'not found')
if [ -z "$missing" ]; then pass "ldd in the chroot finds every library of /usr/local/bin/bindery"; else fail "ldd in the chroot: $missing"; fi

# ---- 4. CMD as PID 1, HEALTHCHECK, /healthz, STOPSIGNAL ----------------------------------------------------------
mapfile -t CMD_WORDS < <(json_words "$CMD_JSON")
mapfile -t HEALTH_WORDS < <(json_words "${HEALTH#*CMD }")
image_port=""
for ((i = 0; i < ${#CMD_WORDS[@]}; i++)); do [ "${CMD_WORDS[i]}" = --port ] && image_port=${CMD_WORDS[i + 1]}; done
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])' 2>/dev/null ||
    echo 18080)
run_args=()
for word in "${CMD_WORDS[@]}"; do [ "$word" = "$image_port" ] && word=$port; run_args+=("$word"); done
user_spec=$USER_SPEC
[[ "$user_spec" == *:* ]] || user_spec="$user_spec:$user_spec"

# start_server LOG: CMD in the chroot as USER, PID 1 of a new PID namespace; sets SERVER (the host pid of the program).
start_server() {
    local log=$1 launcher
    # The program's own /proc for its namespace, mounted inside the chroot by unshare.
    unshare --pid --fork --mount --mount-proc="$ROOTFS/proc" \
        chroot --userspec="$user_spec" "$ROOTFS" /usr/bin/env -i "${ENVIRONMENT[@]/#HOME=\/root/HOME=/nonexistent}" \
        /bin/sh -c 'cd "$0" && exec "$@"' "$WORKDIR" "${run_args[@]}" >"$log" 2>"$log.err" &
    launcher=$!
    SERVER=""
    for _ in $(seq 100); do
        SERVER=$(pgrep -P "$launcher" | head -n 1)
        [ -n "$SERVER" ] && grep -q 'listening on' "$log" && return 0
        kill -0 "$launcher" 2>/dev/null || break
        sleep 0.1
    done
    cat "$log" "$log.err"
    return 1
}
stopped_within() { # stopped_within SECONDS PID
    local _
    for _ in $(seq $(($1 * 10))); do kill -0 "$2" 2>/dev/null || return 0; sleep 0.1; done
    return 1
}

if start_server "$WORK/serve.log"; then
    pass "CMD as ${user_spec%%:*} in the chroot, PID 1 of its namespace: $(cat "$WORK/serve.log") (image port $image_port -> $port)"
    info "process: $(ps -o user=,pid=,args= -p "$SERVER")"
    probe=()
    for word in "${HEALTH_WORDS[@]}"; do probe+=("${word//$image_port/$port}"); done
    if timeout 10 chroot --userspec="$user_spec" "$ROOTFS" /usr/bin/env -i "${ENVIRONMENT[@]}" "${probe[@]}"; then
        pass "HEALTHCHECK (${probe[*]:0:2} ...) in the chroot exits 0"
    else
        fail "HEALTHCHECK in the chroot exits 0"
    fi
    reply=$(exec 3<>"/dev/tcp/127.0.0.1/$port" && printf 'GET /healthz HTTP/1.0\r\n\r\n' >&3 && timeout 5 cat <&3)
    if [[ "$reply" == "HTTP/1."?" 200"*'{"status":"ok"}'* ]]; then
        pass "GET /healthz -> 200 {\"status\":\"ok\"}"
    else
        fail "GET /healthz -> 200: $reply"
    fi
    written=$(find "$ROOTFS/data" -mindepth 1 -maxdepth 2 -printf '%u %p\n' 2>/dev/null | sed "s|$ROOTFS||" | head -n 5 | tr '\n' ';')
    info "data volume after start: ${written:-empty}"
    kill -TERM "$SERVER"
    if stopped_within 5 "$SERVER"; then
        pass "SIGTERM to PID 1 stops the server within 5 s"
    else
        fail "SIGTERM to PID 1 stops the server within 5 s"
        kill -KILL "$SERVER" 2>/dev/null
    fi
    wait 2>/dev/null
else
    fail "CMD starts in the chroot"
fi

# ---- 5. a crash prints a backtrace --------------------------------------------------------------------------------
if start_server "$WORK/crash.log"; then
    # A SIGSEGV sent with kill(2) is reported like a crash; the handler then returns (no faulting instruction to
    # re-run), so the process is killed once the report is complete.
    kill -SEGV "$SERVER"
    for _ in $(seq 200); do grep -q 'Backtrace took' "$WORK/crash.log.err" 2>/dev/null && break; sleep 0.1; done
    kill -KILL "$SERVER" 2>/dev/null
    wait 2>/dev/null
    if grep -q 'Program crashed' "$WORK/crash.log.err" 2>/dev/null && grep -q 'Backtrace took' "$WORK/crash.log.err"; then
        pass "SIGSEGV: swift-backtrace-static prints a crash report ($(grep -m1 'Program crashed' "$WORK/crash.log.err" | tr -d '*' | sed 's/^ *//; s/ *$//'))"
        info "$(grep -m1 -A3 'crashed:$' "$WORK/crash.log.err" | grep -v '^$' | sed 's/^ *//' | tr '\n' '|')"
    else
        fail "SIGSEGV: a crash report on standard error"
        head -n 20 "$WORK/crash.log.err"
    fi
else
    fail "CMD starts in the chroot (second run)"
fi

if [ "$failures" -eq 0 ]; then
    echo "container-smoke: all steps passed"
else
    echo "container-smoke: $failures step(s) failed"
    exit 1
fi
