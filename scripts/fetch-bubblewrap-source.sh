#!/usr/bin/env bash
# Fetch bubblewrap 0.12.0's source tarball offline-friendly, from Debian's source packages.
#
# Usage: fetch-bubblewrap-source.sh [--out DIR]        (default DIR: .)
#
# Debian's bubblewrap_0.12.0.orig.tar.xz is byte-identical to upstream's bubblewrap-0.12.0.tar.xz.
# The system's apt state is left alone: a throw-away sources list, list dir and cache dir in a
# temp dir hold one line, `deb-src <mirror URI of the bookworm stanza of
# /etc/apt/sources.list.d/debian.sources> trixie main`. The tarball is downloaded with
# `apt-get source --download-only bubblewrap=0.12.0-1~deb13u1` (a 404 on the .dsc is tolerated when
# the tarball arrived), its sha256 is checked, and only then is it moved to
# DIR/bubblewrap_0.12.0.orig.tar.xz. The path is printed on stdout (everything else goes to stderr).
# Already present with the right hash: nothing is downloaded.
set -euo pipefail
exec </dev/null
# shellcheck source=scripts/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

readonly DEB_VERSION="0.12.0-1~deb13u1"
readonly TARBALL="bubblewrap_0.12.0.orig.tar.xz"
readonly SHA256="9760d007363e3abba7c747489910f9f82d9fca53ba3bd3282e396fa3c97a3314"
readonly SOURCES_FILE="/etc/apt/sources.list.d/debian.sources"

parse_out_only "." "$@"

mkdir -p "$out"
out="$(cd "$out" && pwd)"
dest="$out/$TARBALL"

if [ -f "$dest" ] && [ "$(sha256_of "$dest")" = "$SHA256" ]; then
  log "already present and verified: $dest"
  printf '%s\n' "$dest"
  exit 0
fi

command -v apt-get >/dev/null || die "apt-get not found (this script needs a Debian-based system)"
[ -r "$SOURCES_FILE" ] || die "cannot read $SOURCES_FILE"

# URIs: of the deb822 stanza whose Suites: has the word "bookworm" (not bookworm-security etc.).
mirror="$(awk '
  BEGIN { RS = ""; FS = "\n" }
  {
    uris = ""; hit = 0
    for (i = 1; i <= NF; i++) {
      line = $i
      if (line ~ /^[ \t]*#/) continue
      if (line ~ /^URIs:/) { sub(/^URIs:[ \t]*/, "", line); split(line, u, /[ \t]+/); uris = u[1] }
      if (line ~ /^Suites:/) {
        sub(/^Suites:[ \t]*/, "", line); n = split(line, s, /[ \t]+/)
        for (j = 1; j <= n; j++) if (s[j] == "bookworm") hit = 1
      }
    }
    if (hit && uris != "") { print uris; exit }
  }' "$SOURCES_FILE")"
[ -n "$mirror" ] || die "no stanza with Suites: bookworm and a URIs: line in $SOURCES_FILE"
log "mirror: $mirror"

tmp="$(mktemp -d "${TMPDIR:-/tmp}/bwrap-src.XXXXXXXX")"
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/lists/partial" "$tmp/cache/archives/partial" "$tmp/dl"
printf 'deb-src %s trixie main\n' "$mirror" >"$tmp/sources.list"
# Let apt's unprivileged download user (_apt) write where it downloads, so apt keeps its sandbox.
if [ "$(id -u)" = 0 ] && id _apt >/dev/null 2>&1; then
  chmod 0755 "$tmp"
  chown _apt "$tmp/lists/partial" "$tmp/cache/archives/partial" "$tmp/dl"
fi

apt_opts=(
  -o "Dir::Etc::SourceList=$tmp/sources.list"
  -o "Dir::Etc::SourceParts=-"
  -o "Dir::State::Lists=$tmp/lists"
  -o "Dir::Cache=$tmp/cache"
  -o "Acquire::Retries=2"
  -o "Acquire::http::Timeout=60"
  -o "Acquire::https::Timeout=60"
)

log "apt-get update (private lists in $tmp)"
timeout 600 apt-get "${apt_opts[@]}" -q update >&2 || die "apt-get update on the trixie deb-src list failed"

log "apt-get source --download-only bubblewrap=$DEB_VERSION"
rc=0
(cd "$tmp/dl" && timeout 600 apt-get "${apt_opts[@]}" -q source --download-only "bubblewrap=$DEB_VERSION") >&2 || rc=$?
if [ ! -s "$tmp/dl/$TARBALL" ]; then
  die "apt-get source exited $rc and $TARBALL did not arrive"
fi
[ "$rc" = 0 ] || log "apt-get source exited $rc (e.g. the .dsc 404s); fine, the tarball arrived"

got="$(sha256_of "$tmp/dl/$TARBALL")"
[ "$got" = "$SHA256" ] || die "sha256 mismatch for $TARBALL: got $got, want $SHA256"

install -m 0644 "$tmp/dl/$TARBALL" "$dest.tmp.$$"
mv -f "$dest.tmp.$$" "$dest"
log "verified sha256 $SHA256"
printf '%s\n' "$dest"
