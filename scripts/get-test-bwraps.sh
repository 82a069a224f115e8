#!/usr/bin/env bash
# Produce the two real static bwraps the tests use, and prove the reproducible-build pin.
#
# Usage: get-test-bwraps.sh [--out DIR]       (default DIR: <repo root>/.cache/bwraps)
#
#   DIR/bwrap-0.12.0   static build of bubblewrap 0.12.0 (build-static-bwrap.sh), from the source
#                      tarball cached in DIR or fetched with fetch-bubblewrap-source.sh; must be
#                      sha256 253c7037...6270, 945328 bytes, or this script fails loudly.
#                      (DIR/bwrap-0.12.0-linux-<arch>.tar.gz, the release archive, is kept too.)
#   DIR/bwrap-codex    from fetch-codex-bwrap.sh ("bubblewrap built for Codex").
# Cached results are re-verified, never rebuilt; a cached bwrap-0.12.0 with the wrong hash is an
# error (delete it to rebuild). Paths and hashes are printed on stdout; logs go to stderr.
set -euo pipefail
exec </dev/null
# shellcheck source=scripts/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

readonly PIN_SHA256="253c70372599ac19851ffcc923acca01fe1bcf6b4b03fce789fd9fb3e2ff6270"
readonly PIN_SIZE=945328
readonly SRC_SHA256="9760d007363e3abba7c747489910f9f82d9fca53ba3bd3282e396fa3c97a3314"

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"

parse_out_only "" "$@"
[ -n "$out" ] || out=$(repo_cache bwraps)
mkdir -p "$out"
out="$(cd "$out" && pwd)"

pin_fail() {
  log "================================================================================"
  log "PIN MISMATCH: $1"
  log "  got  sha256 $2, $3 bytes"
  log "  want sha256 $PIN_SHA256, $PIN_SIZE bytes"
  log "The static bubblewrap 0.12.0 build is not reproducible on this host (toolchain"
  log "gcc/glibc/libcap-dev/meson differ from Debian 12's?) or the cached file is corrupt."
  log "================================================================================"
  exit 1
}

# ---- bwrap-0.12.0 -----------------------------------------------------------------------------
# The verified source tarball, cached or fetched once, for whichever build needs it.
source_tarball() {
  local f
  for f in "$out/bubblewrap-0.12.0.tar.xz" "$out/bubblewrap_0.12.0.orig.tar.xz"; do
    if [ -f "$f" ] && [ "$(sha256_of "$f")" = "$SRC_SHA256" ]; then printf '%s\n' "$f"; return; fi
  done
  log "no verified source tarball in $out; fetching it from Debian's source packages"
  "$here/fetch-bubblewrap-source.sh" --out "$out" | tail -n 1
}

static="$out/bwrap-0.12.0"
if [ -e "$static" ]; then
  sha="$(sha256_of "$static")"; size="$(stat -c %s "$static")"
  { [ "$sha" = "$PIN_SHA256" ] && [ "$size" = "$PIN_SIZE" ]; } || pin_fail "cached $static" "$sha" "$size"
  chmod 0755 "$static"
  log "cached and verified: $static"
else
  src="$(source_tarball)"
  log "building from $src"
  build="$(mktemp -d "${TMPDIR:-/tmp}/get-test-bwraps.XXXXXXXX")"
  trap 'rm -rf "$build"' EXIT
  "$here/build-static-bwrap.sh" --source "$src" --out "$build" >"$build/build.out"
  cat "$build/build.out" >&2
  sha="$(sha256_of "$build/bwrap")"; size="$(stat -c %s "$build/bwrap")"
  { [ "$sha" = "$PIN_SHA256" ] && [ "$size" = "$PIN_SIZE" ]; } || pin_fail "fresh build" "$sha" "$size"
  for a in "$build"/bwrap-0.12.0-linux-*.tar.gz; do
    [ -f "$a" ] || continue
    install -m 0644 "$a" "$out/.$(basename "$a").tmp.$$"
    mv -f "$out/.$(basename "$a").tmp.$$" "$out/$(basename "$a")"
  done
  install -m 0755 "$build/bwrap" "$out/.bwrap-0.12.0.tmp.$$"
  mv -f "$out/.bwrap-0.12.0.tmp.$$" "$static"
  log "built and verified: $static"
fi
ver="$("$static" --version 2>&1 || true)"
[ "$ver" = "bubblewrap 0.12.0" ] || die "$static --version printed '$ver', want 'bubblewrap 0.12.0'"

# ---- bwrap-0.12.0-arm64 (cross-built; its pin is checked against the embedded manifest by
# install's tests, since this machine cannot run it) -------------------------------------------
arm64="$out/bwrap-0.12.0-arm64"
if [ ! -e "$arm64" ]; then
  src="$(source_tarball)"
  log "cross-building arm64 from $src"
  build_arm64="$(mktemp -d "${TMPDIR:-/tmp}/get-test-bwraps-arm64.XXXXXXXX")"
  trap 'rm -rf "${build:-}" "$build_arm64"' EXIT
  "$here/build-static-bwrap.sh" --arch arm64 --source "$src" --out "$build_arm64" >"$build_arm64/build.out"
  cat "$build_arm64/build.out" >&2
  install -m 0644 "$build_arm64/bwrap-0.12.0-linux-arm64.tar.gz" "$out/.bwrap-0.12.0-linux-arm64.tar.gz.tmp.$$"
  mv -f "$out/.bwrap-0.12.0-linux-arm64.tar.gz.tmp.$$" "$out/bwrap-0.12.0-linux-arm64.tar.gz"
  install -m 0755 "$build_arm64/bwrap" "$out/.bwrap-0.12.0-arm64.tmp.$$"
  mv -f "$out/.bwrap-0.12.0-arm64.tmp.$$" "$arm64"
  log "built: $arm64"
fi

# ---- bwrap-codex (the fetcher re-verifies a cached copy and skips the download) --------------
"$here/fetch-codex-bwrap.sh" --out "$out" >/dev/null
codex="$out/bwrap-codex"
ver="$("$codex" --version 2>&1 || true)"
[ "$ver" = "bubblewrap built for Codex" ] || die "$codex --version printed '$ver'"

printf '%s sha256 %s size %s\n' "$static" "$(sha256_of "$static")" "$(stat -c %s "$static")"
printf '%s sha256 %s size %s\n' "$arm64" "$(sha256_of "$arm64")" "$(stat -c %s "$arm64")"
printf '%s sha256 %s size %s\n' "$codex" "$(sha256_of "$codex")" "$(stat -c %s "$codex")"
