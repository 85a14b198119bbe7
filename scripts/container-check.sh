#!/usr/bin/env bash
# Checks the Dockerfile without a Docker engine (issue 8); part of `make test`, also `make container-check`.
#
# Proves what can be proven on a Debian 12 machine with the Swift toolchain:
#   - the Dockerfile's structure: named stages, known instructions, COPY --from naming an earlier stage, the base
#     images the issue asks for, a non-root USER, STOPSIGNAL SIGTERM, a HEALTHCHECK without curl/wget, SWIFT_BACKTRACE;
#   - the release binary built with --static-swift-stdlib (scratch path .build-static) needs no shared library beyond
#     glibc and the runtime stage's `apt-get install` packages and their dependencies (ldd -> dpkg -S -> Depends);
#   - CMD, HEALTHCHECK and EXPOSE agree on the port, CMD listens on 0.0.0.0 and keeps --data on the VOLUME;
#   - every COPY source exists in the repository and is not excluded by .dockerignore; .dockerignore keeps .build*/
#     and data/ out; the files CMD names (fixture, public folder) are among those copied;
#   - the binary, started with CMD's arguments (mapped to this checkout, a temporary data folder and a free loopback
#     port), is judged healthy by the HEALTHCHECK command itself.
# Prints PASS/FAIL per check and exits 1 when any check fails. SKIP_BUILD=1 uses the binary already built.
set -uo pipefail

cd "$(dirname "$0")/.."
# Reading the package's targets needs python3, which a fresh Debian may lack (`make test` runs this before the browser
# tests install it).
command -v python3 >/dev/null 2>&1 || bash scripts/install-deps.sh python3
# shellcheck source=scripts/dockerfile-lib.sh
. scripts/dockerfile-lib.sh
DOCKERFILE=${DOCKERFILE:-Dockerfile}
DOCKERIGNORE=${DOCKERIGNORE:-.dockerignore}
SCRATCH=${SCRATCH:-.build-static}
SWIFT=${SWIFT:-swift}
failures=0
pass() { printf 'PASS  %s\n' "$*"; }
fail() { printf 'FAIL  %s\n' "$*"; failures=$((failures + 1)); }
info() { printf '      %s\n' "$*"; }
check() { # check DESCRIPTION CONDITION-COMMAND...
    local description=$1
    shift
    if "$@"; then pass "$description"; else fail "$description"; fi
}

[ -f "$DOCKERFILE" ] || { fail "$DOCKERFILE exists"; exit 1; }

# ---- the Dockerfile as logical instructions: "STAGE<TAB>INSTRUCTION<TAB>ARGUMENTS" -------------------------------------
PARSED=$(parse_dockerfile "$DOCKERFILE")

# instructions STAGE NAME: the arguments of every NAME instruction in stage STAGE, one per line.
instructions() { awk -F'\t' -v s="$1" -v i="$2" '$1 == s && $2 == i { print $3 }' <<<"$PARSED"; }

echo "== Dockerfile structure"
known='^(FROM|RUN|CMD|LABEL|MAINTAINER|EXPOSE|ENV|ADD|COPY|ENTRYPOINT|VOLUME|USER|WORKDIR|ARG|ONBUILD|STOPSIGNAL|HEALTHCHECK|SHELL)$'
unknown=$(awk -F'\t' -v k="$known" '$2 !~ k { print $2 }' <<<"$PARSED" | sort -u | tr '\n' ' ')
check "every instruction is a Dockerfile instruction${unknown:+ (unknown: $unknown)}" test -z "$unknown"
first=$(awk -F'\t' '$2 != "ARG" { print $2; exit }' <<<"$PARSED")
check "the first instruction (after ARGs) is FROM" test "$first" = FROM
stages=$(awk -F'\t' '$2 == "FROM"' <<<"$PARSED" | wc -l)
check "multi-stage: $stages stages" test "$stages" -ge 2
unnamed=0
declare -a STAGE_NAMES=() STAGE_IMAGES=()
while IFS=$'\t' read -r stage _ arguments; do
    read -r -a words <<<"$arguments"
    image="" name=""
    for ((w = 0; w < ${#words[@]}; w++)); do
        case "${words[w]}" in
            --*) ;;
            [Aa][Ss]) name=${words[w + 1]:-}; break ;;
            *) [ -z "$image" ] && image=${words[w]} ;;
        esac
    done
    STAGE_IMAGES[stage]=$image
    STAGE_NAMES[stage]=$name
    [ -n "$name" ] || unnamed=$((unnamed + 1))
done < <(awk -F'\t' '$2 == "FROM"' <<<"$PARSED")
check "every FROM names its stage (FROM image AS name): ${STAGE_NAMES[*]}" test "$unnamed" -eq 0
duplicates=$(printf '%s\n' "${STAGE_NAMES[@]}" | sort | uniq -d | tr '\n' ' ')
check "stage names are unique${duplicates:+ (duplicated: $duplicates)}" test -z "$duplicates"
RUNTIME=$((stages - 1))
check "the build stage is swift:6.3-bookworm (${STAGE_IMAGES[0]})" test "${STAGE_IMAGES[0]}" = swift:6.3-bookworm
check "the runtime (last) stage is debian:bookworm-slim (${STAGE_IMAGES[RUNTIME]})" \
    test "${STAGE_IMAGES[RUNTIME]}" = debian:bookworm-slim
bad_from=""
while IFS=$'\t' read -r stage _ arguments; do
    from=$(grep -o -- '--from=[^ ]*' <<<"$arguments" | cut -d= -f2)
    [ -z "$from" ] && continue
    found=no
    for ((s = 0; s < stage; s++)); do [ "${STAGE_NAMES[s]}" = "$from" ] && found=yes; done
    [ "$found" = yes ] || bad_from+="$from "
done < <(awk -F'\t' '$2 == "COPY"' <<<"$PARSED")
check "every COPY --from names an earlier stage${bad_from:+ (unknown: $bad_from)}" test -z "$bad_from"
build_run=$(instructions 0 RUN | tr '\n' ' ')
resolve_line=$(awk -F'\t' '$1 == 0 && $2 == "RUN" && $3 ~ /swift package resolve/ { print NR; exit }' <<<"$PARSED")
sources_line=$(awk -F'\t' '$1 == 0 && $2 == "COPY" && $3 ~ /Sources/ { print NR; exit }' <<<"$PARSED")
check "the build stage resolves dependencies before copying Sources (a cached layer)" \
    test -n "$resolve_line" -a -n "$sources_line" -a "${resolve_line:-0}" -lt "${sources_line:-0}"
check "the build stage builds with: swift build -c release --static-swift-stdlib" \
    grep -q -- 'swift build -c release --static-swift-stdlib' <<<"$build_run"
for package in libmicrohttpd-dev libjansson-dev pkg-config; do
    check "the build stage installs $package" grep -qw -- "$package" <<<"$build_run"
done
user=$(instructions "$RUNTIME" USER | tail -n 1)
check "the runtime stage runs as a non-root USER (${user:-none})" \
    bash -c '[ -n "$1" ] && [[ ! "$1" =~ ^(root|0)(:.*)?$ ]]' _ "$user"
check "STOPSIGNAL SIGTERM" test "$(instructions "$RUNTIME" STOPSIGNAL | tail -n 1)" = SIGTERM
env_text=$(instructions "$RUNTIME" ENV | tr '\n' ' ')
check "SWIFT_BACKTRACE=enable=yes,sanitize=yes,threads=all,cache=no is set" \
    grep -q 'SWIFT_BACKTRACE=enable=yes,sanitize=yes,threads=all,cache=no' <<<"$env_text"
backtracer=$(awk -F'\t' -v s="$RUNTIME" '$1 == s && $2 == "COPY" && $3 ~ /swift-backtrace-static/ { print $3 }' <<<"$PARSED")
backtracer_target=$(awk '{ print $NF }' <<<"$backtracer")
check "swift-backtrace-static is copied from the build stage ($backtracer_target)" test -n "$backtracer"
if grep -q 'swift-backtrace=' <<<"$env_text"; then
    configured=$(grep -o 'swift-backtrace=[^ ,"]*' <<<"$env_text" | cut -d= -f2)
    check "SWIFT_BACKTRACE's swift-backtrace= is where the backtracer is copied ($configured)" \
        test "$configured" = "$backtracer_target"
fi
toolchain_backtracer=$(dirname "$(dirname "$(command -v "$SWIFT")")")/libexec/swift/linux/swift-backtrace-static
check "the toolchain ships swift-backtrace-static ($toolchain_backtracer)" test -x "$toolchain_backtracer"

echo "== ports, address and volume"
cmd_json=$(instructions "$RUNTIME" CMD | tail -n 1)
mapfile -t CMD_WORDS < <(json_words "$cmd_json")
check "CMD is in exec form (JSON array): ${CMD_WORDS[*]:-?}" test "${cmd_json:0:1}" = "["
cmd_option() { # cmd_option NAME: the value after --NAME (or --NAME=value) in CMD
    local i
    for ((i = 0; i < ${#CMD_WORDS[@]}; i++)); do
        case "${CMD_WORDS[i]}" in
            "--$1") echo "${CMD_WORDS[i + 1]:-}"; return ;;
            "--$1="*) echo "${CMD_WORDS[i]#*=}"; return ;;
        esac
    done
}
check "CMD runs bindery serve" test "${CMD_WORDS[0]:-}" = bindery -a "${CMD_WORDS[1]:-}" = serve
cmd_port=$(cmd_option port)
cmd_host=$(cmd_option host)
cmd_data=$(cmd_option data)
expose=$(instructions "$RUNTIME" EXPOSE | tr '\n' ' ' | sed 's|/tcp||g')
health=$(instructions "$RUNTIME" HEALTHCHECK | tail -n 1)
health_port=$(grep -o '/dev/tcp/[^/]*/[0-9]*' <<<"$health" | head -n 1 | awk -F/ '{ print $NF }')
[ -z "$health_port" ] && health_port=$(grep -o 'localhost:[0-9]*\|127\.0\.0\.1:[0-9]*' <<<"$health" | head -n 1 | cut -d: -f2)
check "CMD listens on 0.0.0.0 (--host ${cmd_host:-?})" test "$cmd_host" = 0.0.0.0
check "CMD --port, EXPOSE and HEALTHCHECK agree (${cmd_port:-?}, ${expose:-?}, ${health_port:-?})" \
    bash -c '[ -n "$1" ] && [ "$1" = "$3" ] && [[ " $2 " == *" $1 "* ]]' _ "$cmd_port" "$expose" "$health_port"
check "the HEALTHCHECK probes /healthz" grep -q '/healthz' <<<"$health"
check "the HEALTHCHECK needs no curl or wget" bash -c '! grep -Eqw "curl|wget" <<<"$1"' _ "$health"
volumes=$(instructions "$RUNTIME" VOLUME | tr -d '[]",' | tr '\n' ' ')
check "CMD keeps --data (${cmd_data:-?}) on a VOLUME (${volumes:-none})" \
    bash -c '[ -n "$1" ] && [[ " $2 " == *" ${1%/} "* ]]' _ "$cmd_data" "$volumes"

echo "== files"
# ignored PATH: whether .dockerignore excludes PATH (simple patterns: exact, prefix folders, shell globs, ! negation).
ignored() {
    local path=$1 result=no pattern negate
    [ -f "$DOCKERIGNORE" ] || { echo no; return; }
    while IFS= read -r pattern || [ -n "$pattern" ]; do
        pattern=${pattern%%#*}
        pattern=$(sed -e 's/[[:space:]]*$//' -e 's|^/||' -e 's|/$||' <<<"$pattern")
        [ -z "$pattern" ] && continue
        negate=no
        [ "${pattern:0:1}" = "!" ] && { negate=yes; pattern=${pattern:1}; }
        pattern=${pattern//\*\*/*}
        # shellcheck disable=SC2053  # the pattern is meant to glob
        if [[ "$path" == $pattern || "$path" == $pattern/* ]]; then
            [ "$negate" = yes ] && result=no || result=yes
        fi
    done <"$DOCKERIGNORE"
    echo "$result"
}
check "$DOCKERIGNORE exists" test -f "$DOCKERIGNORE"
for path in .build .build-release .build-static/release/bindery data data/journal; do
    check "$DOCKERIGNORE excludes $path" test "$(ignored "$path")" = yes
done
# Every COPY/ADD source from the build context (not --from) in any stage.
declare -A COPIED_TO=()
BUILD_SOURCES=()
while IFS=$'\t' read -r stage instruction arguments; do
    grep -q -- '--from=' <<<"$arguments" && continue
    if [ "${arguments:0:1}" = "[" ]; then mapfile -t words < <(json_words "$arguments"); else read -r -a words <<<"$arguments"; fi
    sources=()
    for word in "${words[@]}"; do [[ "$word" == --* ]] || sources+=("$word"); done
    destination=${sources[-1]}
    unset 'sources[-1]'
    workdir=$(awk -F'\t' -v s="$stage" '$1 == s && $2 == "WORKDIR" { w = $3 } END { print w }' <<<"$PARSED")
    for source in "${sources[@]}"; do
        # shellcheck disable=SC2206  # globs in COPY sources are expanded like the builder does
        matches=($source)
        if [ -e "${matches[0]}" ]; then
            included=yes
            for match in "${matches[@]}"; do [ "$(ignored "${match%/}")" = yes ] && included=no; done
            check "stage ${STAGE_NAMES[stage]}: $instruction $source exists and is not in $DOCKERIGNORE" test "$included" = yes
        else
            fail "stage ${STAGE_NAMES[stage]}: $instruction $source exists in the repository"
        fi
        [ "$stage" -eq 0 ] && BUILD_SOURCES+=("${source%/}")
        if [ "$stage" -eq "$RUNTIME" ]; then
            target=$destination
            [[ "$target" == /* ]] || target="${workdir%/}/${target#./}"
            COPIED_TO["${target%/}"]=${source%/}
        fi
    done
done < <(awk -F'\t' '$2 == "COPY" || $2 == "ADD"' <<<"$PARSED")
# SwiftPM loads every target of the manifest, so the build stage needs each target's folder (a missing custom path
# stops `swift build`, whatever product it is asked for).
if manifest=$("$SWIFT" package dump-package 2>/dev/null) && folders=$(python3 -c '
import json, sys
for target in json.load(sys.stdin)["targets"]:
    default = "Tests" if target["type"] == "test" else "Sources"
    print(target.get("path") or default + "/" + target["name"])' <<<"$manifest") && [ -n "$folders" ]; then
    while IFS= read -r folder; do
        copied=no
        for source in "${BUILD_SOURCES[@]}"; do
            [[ "$folder" == "$source" || "$folder" == "$source"/* ]] && copied=yes
        done
        check "the build stage copies target folder $folder and $DOCKERIGNORE keeps it" \
            test "$copied" = yes -a "$(ignored "$folder")" = no
    done <<<"$folders"
else
    fail "swift package dump-package reads Package.swift, and its targets' folders are listed"
fi
# local_path IMAGE-PATH: the repository path behind a path of the runtime image, if a COPY put it there.
local_path() {
    local wanted=$1 target
    for target in "${!COPIED_TO[@]}"; do
        if [ "$wanted" = "$target" ] || [[ "$wanted" == "$target"/* ]]; then
            echo "${COPIED_TO[$target]}${wanted#"$target"}"
            return
        fi
    done
}
cmd_fixture=$(cmd_option fixture)
cmd_public=$(cmd_option public)
fixture_local=$(local_path "${cmd_fixture:-/nonexistent}")
public_local=$(local_path "${cmd_public:-/nonexistent}")
check "CMD --fixture ${cmd_fixture:-?} is copied from the repository (${fixture_local:-not copied}/model.json)" \
    test -n "$fixture_local" -a -f "$fixture_local/model.json"
check "CMD --public ${cmd_public:-?} is copied from the repository (${public_local:-not copied}/index.html)" \
    test -n "$public_local" -a -f "$public_local/index.html"
binary_target=$(awk -F'\t' -v s="$RUNTIME" '$1 == s && $2 == "COPY" && $3 ~ /--from=/ && $3 ~ /bindery/ { print $NF }' <<<"$PARSED" | awk '{ print $NF }')
check "the runtime stage copies the bindery binary onto the PATH ($binary_target)" \
    bash -c '[[ "$1" == /usr/local/bin/bindery || "$1" == /usr/bin/bindery || "$1" == /usr/local/bin/ ]]' _ "$binary_target"

echo "== shared libraries of the static-stdlib release binary"
BINARY="$SCRATCH/release/bindery"
if [ "${SKIP_BUILD:-0}" != 1 ]; then
    info "swift build -c release --static-swift-stdlib --scratch-path $SCRATCH --product bindery"
    if ! build_log=$("$SWIFT" build -c release --static-swift-stdlib --scratch-path "$SCRATCH" --product bindery 2>&1); then
        tail -n 30 <<<"$build_log"
        fail "the release binary builds with --static-swift-stdlib"
        echo "container-check: $failures check(s) failed"
        exit 1
    fi
fi
check "the release binary exists ($BINARY)" test -x "$BINARY"
[ -x "$BINARY" ] || { echo "container-check: $failures check(s) failed"; exit 1; }

# The runtime stage's apt-get install list.
INSTALL=$(instructions "$RUNTIME" RUN | sed -n 's/.*apt-get install\(.*\)/\1/p' | sed 's/&&.*//; s/;.*//; s/|.*//' |
    tr ' ' '\n' | grep -v '^-' | grep -v '^$' | sort -u)
info "runtime stage installs: $(tr '\n' ' ' <<<"$INSTALL")"
check "the runtime stage installs libmicrohttpd12 and libjansson4" \
    bash -c 'grep -qx libmicrohttpd12 <<<"$1" && grep -qx libjansson4 <<<"$1"' _ "$INSTALL"
if apt-cache show libc6 >/dev/null 2>&1; then
    unknown_packages=""
    for package in $INSTALL; do
        apt-cache show --no-all-versions "$package" >/dev/null 2>&1 || unknown_packages+="$package "
    done
    check "every package of the runtime install list exists in Debian's lists${unknown_packages:+ (unknown: $unknown_packages)}" \
        test -z "$unknown_packages"
else
    info "apt lists missing (apt-get update not run): package names not checked against the archive"
fi

# deps PACKAGE...: the packages and their Depends/Pre-Depends, recursively, as installed here (dpkg, offline).
# Of alternatives (a | b) every installed one counts: this can only widen the set by packages this machine has.
deps() {
    local -A seen=()
    local queue=("$@") package fields dependency
    while [ ${#queue[@]} -gt 0 ]; do
        package=${queue[0]}
        queue=("${queue[@]:1}")
        [ -n "${seen[$package]:-}" ] && continue
        seen[$package]=1
        fields=$(dpkg-query -W -f='${Depends}, ${Pre-Depends}' "$package" 2>/dev/null) || continue
        for dependency in $(tr ',|' '\n\n' <<<"$fields" | sed 's/(.*)//; s/:any//; s/^[[:space:]]*//; s/[[:space:]]*$//' | grep -v '^$'); do
            [ -z "${seen[$dependency]:-}" ] && queue+=("$dependency")
        done
    done
    printf '%s\n' "${!seen[@]}"
}
# Library packages in debian:bookworm-slim whatever the Dockerfile installs: the image is debootstrap's minbase (every
# Priority: required package, plus apt), and apt (C++) brings libstdc++6, libgcc-s1 and libgnutls30 with its chain.
# `make container-smoke` verifies this list against a real minbase. Accepted for libraries not covered otherwise.
SLIM_LIBRARIES="libc6 libgcc-s1 libstdc++6 zlib1g liblzma5 libzstd1 libbz2-1.0 libgnutls30 libp11-kit0 libidn2-0 \
libunistring2 libtasn1-6 libnettle8 libhogweed6 libgmp10 libffi8 libselinux1 libpcre2-8-0 libcrypt1 libsystemd0"
CLOSURE=$(deps $INSTALL)

ldd_output=$(ldd "$BINARY" 2>&1)
missing_libraries=$(grep 'not found' <<<"$ldd_output" | awk '{ print $1 }' | tr '\n' ' ')
check "ldd resolves every library here${missing_libraries:+ (not found: $missing_libraries)}" test -z "$missing_libraries"
swift_libraries=$(grep -Eo 'lib(swift[^ ]*|Foundation[^ ]*|_Foundation[^ ]*|dispatch|BlocksRuntime)\.so[^ ]*' <<<"$ldd_output" | sort -u | tr '\n' ' ')
check "no Swift runtime library is linked dynamically${swift_libraries:+ ($swift_libraries)}" test -z "$swift_libraries"
# package_of PATH: the Debian package owning a library, trying the /usr-merged and unmerged spellings.
package_of() {
    local path=$1 real candidate owner
    real=$(readlink -f "$path")
    for candidate in "$path" "$real" "${path#/usr}" "/usr$path" "${real#/usr}" "/usr$real"; do
        owner=$(dpkg -S "$candidate" 2>/dev/null | grep -v '^diversion' | sed -n '1s/:.*//p')
        [ -n "$owner" ] && { echo "$owner"; return; }
    done
}
uncovered=""
while read -r library path; do
    [ -z "$path" ] && continue
    package=$(package_of "$path")
    if [ -z "$package" ]; then
        info "$library ($path): no Debian package owns it"
        uncovered+="$library "
        continue
    fi
    if [ "$package" = libc6 ]; then how="glibc, in every Debian image"
    elif grep -qx "$package" <<<"$INSTALL"; then how="installed by the runtime stage"
    elif grep -qx "$package" <<<"$CLOSURE"; then how="a dependency of the runtime stage's packages"
    elif [[ " $SLIM_LIBRARIES " == *" $package "* ]]; then how="in the base image debian:bookworm-slim"
    else how="NOT PROVIDED"; uncovered+="$library($package) "
    fi
    [[ "$how" != *bookworm-slim && " $SLIM_LIBRARIES " == *" $package "* ]] && how+="; also in bookworm-slim"
    info "$(printf '%-26s %-16s %s' "$library" "$package" "$how")"
done < <(awk '/=>/ { print $1, $3; next } /^[[:space:]]*\// { print $1, $1 }' <<<"$ldd_output")
check "every shared library is glibc, in bookworm-slim, installed by the runtime stage or a dependency of those${uncovered:+ (missing: $uncovered)}" \
    test -z "$uncovered"
backtracer_libraries=$(ldd "$toolchain_backtracer" 2>/dev/null | awk '/=>/ { print $3 }' | while read -r path; do package_of "$path"; done | sort -u)
backtracer_uncovered=""
for package in $backtracer_libraries; do
    [ "$package" = libc6 ] || grep -qx "$package" <<<"$CLOSURE" || [[ " $SLIM_LIBRARIES " == *" $package "* ]] ||
        backtracer_uncovered+="$package "
done
check "swift-backtrace-static's libraries are provided too ($(tr '\n' ' ' <<<"$backtracer_libraries"))" \
    test -z "$backtracer_uncovered"

echo "== the binary serves with CMD's arguments, and the HEALTHCHECK command judges it healthy"
WORK=$(mktemp -d "${TMPDIR:-/tmp}/container-check.XXXXXX")
SERVER=""
cleanup() {
    if [ -n "$SERVER" ]; then
        kill -TERM "$SERVER" 2>/dev/null
        wait "$SERVER" 2>/dev/null
    fi
    rm -rf "$WORK"
}
trap cleanup EXIT
arguments=()
for ((i = 1; i < ${#CMD_WORDS[@]}; i++)); do
    word=${CMD_WORDS[i]}
    case "${CMD_WORDS[i - 1]}" in
        --host) word=127.0.0.1 ;;
        --port) word=0 ;;
        --data) word="$WORK/data" ;;
        --fixture) word=${fixture_local:-$word} ;;
        --public) word=${public_local:-$word} ;;
    esac
    arguments+=("$word")
done
"$BINARY" "${arguments[@]}" >"$WORK/out" 2>"$WORK/err" &
SERVER=$!
port=""
for _ in $(seq 100); do
    port=$(sed -n 's|^bindery listening on http://[^ ]*:\([0-9][0-9]*\)$|\1|p' "$WORK/out")
    [ -n "$port" ] && break
    kill -0 "$SERVER" 2>/dev/null || break
    sleep 0.1
done
check "bindery ${arguments[*]} prints 'bindery listening on http://HOST:PORT'" test -n "$port"
if [ -n "$port" ]; then
    mapfile -t HEALTH_WORDS < <(json_words "$(sed 's/.*CMD //' <<<"$health")")
    probe=()
    for word in "${HEALTH_WORDS[@]}"; do probe+=("${word//$health_port/$port}"); done
    check "HEALTHCHECK (${probe[*]:0:2} ...) exits 0 against the running binary" timeout 10 "${probe[@]}"
    kill -TERM "$SERVER" 2>/dev/null
    stopped=no
    for _ in $(seq 50); do kill -0 "$SERVER" 2>/dev/null || { stopped=yes; break; }; sleep 0.1; done
    check "SIGTERM (the STOPSIGNAL) stops the server within 5 s" test "$stopped" = yes
    wait "$SERVER" 2>/dev/null
    SERVER=""
else
    cat "$WORK/err"
fi

if [ "$failures" -eq 0 ]; then
    echo "container-check: all checks passed"
else
    echo "container-check: $failures check(s) failed"
    exit 1
fi
