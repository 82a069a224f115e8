#!/usr/bin/env bash
# Release binaries with the pinned static bwrap embedded (build tag embedbwrap).
#
# Usage: build-dist.sh [--out DIR]     (default DIR: <repo root>/dist; GO and VERSION from env)
#
# The embedded bytes are the very files scripts/get-test-bwraps.sh rebuilt from source and
# checked against the pin (.cache/bwraps/bwrap-0.12.0 and bwrap-0.12.0-arm64). They are
# copied into install/embedded/ for the build only, checked there against the default
# manifest's pins by a test, and removed afterwards: they are never committed.
set -euo pipefail
exec </dev/null
# shellcheck source=scripts/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(dirname "$here")"
parse_out_only "" "$@"
out="${out:-$root/dist}"
# Absolute: the builds below run from the repository root, whatever the caller's directory.
case "$out" in /*) ;; *) out="$PWD/$out" ;; esac
GO="${GO:-go}"
VERSION="${VERSION:-dev}"
bwraps="$root/.cache/bwraps"
embed="$root/install/embedded"

for f in "$bwraps/bwrap-0.12.0" "$bwraps/bwrap-0.12.0-arm64"; do
  [ -f "$f" ] || die "$f is missing: run scripts/get-test-bwraps.sh (make test-bwraps)"
done

trap 'rm -rf "$embed"' EXIT
rm -rf "$embed" && mkdir -p "$embed"
install -m 0644 "$bwraps/bwrap-0.12.0" "$embed/bwrap-amd64"
install -m 0644 "$bwraps/bwrap-0.12.0-arm64" "$embed/bwrap-arm64"
# The pins, before anything is built: a wrong file fails here, not on a user's host.
(cd "$root" && "$GO" test -count=1 -tags embedbwrap -run 'Embedded' ./install >&2)

rm -rf "$out" && mkdir -p "$out"
for arch in amd64 arm64; do
  (cd "$root" && CGO_ENABLED=0 GOOS=linux GOARCH="$arch" "$GO" build -tags embedbwrap -trimpath \
    -ldflags "-s -w -X main.version=$VERSION" -o "$out/bwrapkit-linux-$arch" ./cmd/bwrapkit)
  # The lean keeper, network bridge and doctor's probe, installed beside bwrapkit as
  # bwrapkit-helper; of the same version, since the probe serves only its own build's doctor.
  (cd "$root" && CGO_ENABLED=0 GOOS=linux GOARCH="$arch" "$GO" build -trimpath \
    -ldflags "-s -w -X main.version=$VERSION" -o "$out/bwrapkit-helper-linux-$arch" ./cmd/bwrapkit-helper)
done
# Every file in the release but the list itself, in a stable order.
sums="$(cd "$out" && find . -type f ! -name SHA256SUMS -printf '%P\n' | LC_ALL=C sort | xargs sha256sum)"
printf '%s\n' "$sums" >"$out/SHA256SUMS"
log "built in $out:"
sed 's/^/  /' "$out/SHA256SUMS" >&2
