#!/usr/bin/env bash
# A fresh clone's first `go test` of eight of this module's packages whose tests need no
# privilege (live tests would skip inside a sandbox, root-only ones fail there without
# capabilities), sandboxed with the caller's caches as lower layers, against the same
# direct: both start from the caller's warm Go caches.
# usage: bench-fresh-clone.sh BWRAPKIT BWRAP BENCHCMP [ROUNDS]
set -euo pipefail
exec </dev/null
# shellcheck source=scripts/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

[ $# -ge 3 ] || usage
bwrapkit=$(realpath "$1") bwrap=$(realpath "$2") benchcmp=$(realpath "$3") rounds=${4:-5}
go=$(command -v go || echo /usr/local/go/bin/go)
gocache=$("$go" env GOCACHE) gomodcache=$("$go" env GOMODCACHE)
repo=$(git -C "$(dirname "${BASH_SOURCE[0]}")" rev-parse --show-toplevel)

work=$(mktemp -d "$repo/.cache/scratch/bench-clone-XXXXXX")
cleanup() {
  # The project HOMEs the sandboxed rounds made, then the clones.
  XDG_CACHE_HOME="$work/xdg" "$bwrapkit" home prune --all >/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT
mkdir -p "$work/src" "$work/xdg"
git -C "$repo" archive HEAD | tar -x -C "$work/src"
"$go" -C "$work/src" mod download # the caller's module cache holds every dependency
pkgs="./internal/version ./internal/pathlist ./internal/environ ./internal/capped ./doctor/render ./doctor/remedy ./doctor/diagnose ./netproxy"
# shellcheck disable=SC2086 # a list of packages
"$go" -C "$work/src" test -count=1 $pkgs >/dev/null # and its build cache is warm

# shellcheck disable=SC2016 # expanded by the sh -c of each round, not here
clone='d=$(mktemp -d ./clone-XXXXXX) && cp -r src/. "$d" && git init -q "$d" && cd "$d"'
sandboxed="$clone && XDG_CACHE_HOME=$work/xdg GOCACHE=$gocache GOMODCACHE=$gomodcache $bwrapkit --bwrap $bwrap run --path $(dirname "$go") --env GOPROXY=off -- go test -count=1 $pkgs"
direct="$clone && GOPROXY=off $go test -count=1 $pkgs"
cd "$work"
"$benchcmp" -rounds "$rounds" -warmup 1 -unit "of direct (goal: at most 1.5)" \
  -name-a "fresh clone: bwrapkit run -- go test" -name-b "fresh clone: go test" \
  -a "$(printf '["sh","-c",%s]' "$(printf '%s' "$sandboxed" | python3 -c 'import json,sys; print(json.dumps(sys.stdin.read()))')")" \
  -b "$(printf '["sh","-c",%s]' "$(printf '%s' "$direct" | python3 -c 'import json,sys; print(json.dumps(sys.stdin.read()))')")"
