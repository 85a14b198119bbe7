#!/usr/bin/env bash
# docs/API.md and docs/DESIGN.md are copies of the contract and the design kept beside the repository
# (../shared/), so that a clone carries them; where that folder exists, the copies must be the same.
set -euo pipefail
cd "$(dirname "$0")/.."
shared=../shared
if [ ! -d "$shared" ]; then
    echo "check-docs: no $shared beside the repository; docs/ is taken as it is"
    exit 0
fi
status=0
for name in API.md DESIGN.md; do
    if [ -f "$shared/$name" ] && ! cmp -s "$shared/$name" "docs/$name"; then
        echo "check-docs: docs/$name differs from $shared/$name: copy it (cp $shared/$name docs/$name)" >&2
        status=1
    fi
done
[ $status -eq 0 ] && echo "check-docs: docs/API.md and docs/DESIGN.md match $shared"
exit $status
