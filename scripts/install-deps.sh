#!/usr/bin/env bash
# Installs the Debian packages Bindery builds against, when any is missing. Works as root without a TTY;
# uses sudo when not root. Extra package names may be given as arguments (e.g. wrk for the benchmarks).
set -euo pipefail
packages=(libmicrohttpd-dev libjansson-dev pkg-config "$@")
missing=()
for p in "${packages[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
echo "installing: ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" </dev/null
