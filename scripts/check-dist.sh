#!/usr/bin/env bash
# Check a `make dist` release: SHA256SUMS covers every file and holds; this host's binary
# names its embedded pin and installs it with no network, then locate finds it.
#
# Usage: check-dist.sh [--out DIR]     (default DIR: <repo root>/dist)
set -euo pipefail
exec </dev/null
# shellcheck source=scripts/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
parse_out_only "" "$@"
out="${out:-$(dirname "$here")/dist}"
# Absolute before the cd below: every later path is built from it.
out="$(cd "$out" && pwd)" || die "no release directory $out (make dist builds it)"
cd "$out"

sha256sum --quiet -c SHA256SUMS || die "SHA256SUMS does not match the files in $out"
listed="$(awk '{print $2}' SHA256SUMS | LC_ALL=C sort)"
present="$(find . -type f ! -name SHA256SUMS -printf '%P\n' | LC_ALL=C sort)"
[ "$listed" = "$present" ] || die "SHA256SUMS lists '$listed' but $out holds '$present'"

case "$(uname -m)" in
  x86_64) arch=amd64 ;;
  aarch64) arch=arm64 ;;
  *) log "no release binary for $(uname -m) to run; sums checked only"; exit 0 ;;
esac
bin="$out/bwrapkit-linux-$arch"
# The helper refuses direct use with its one line (status 2): it is there and runs here.
helper_status=0
"$out/bwrapkit-helper-linux-$arch" 2>/dev/null || helper_status=$?
[ "$helper_status" = 2 ] || die "$out/bwrapkit-helper-linux-$arch did not run as the helper (status $helper_status)"
version="$("$bin" version --json)"
# The doctor's probe, which the helper is, serves only a doctor of its own build.
build="$(printf '%s\n' "$version" | sed -n 's/.*"version": *"\([^"]*\)".*/\1/p' | head -n 1)"
[ -n "$build" ] || die "$bin version --json names no version: $version"
"$out/bwrapkit-helper-linux-$arch" __selftest-probe "build=$build" noop ||
  die "$out/bwrapkit-helper-linux-$arch is not of $bin's build ($build)"
printf '%s\n' "$version" | grep -q '"matches_pin": true' || die "$bin names no matching embedded pin: $version"

scratch="$(mktemp -d "${TMPDIR:-/tmp}/check-dist.XXXXXXXX")"
trap 'rm -rf "$scratch"' EXIT
# No network: in a network namespace of its own where that is allowed (root), else with
# every proxy pointing at a closed port; the default manifest's only source is remote.
offline=(env -i PATH=/usr/bin:/bin HOME="$scratch" https_proxy=http://127.0.0.1:9 http_proxy=http://127.0.0.1:9)
if unshare --net true 2>/dev/null; then offline=(unshare --net "${offline[@]}"); fi
result="$("${offline[@]}" "$bin" install --home "$scratch/home" --json)" || die "offline install failed"
printf '%s\n' "$result" | grep -q '"method": "embedded"' || die "install did not use the embedded bwrap: $result"
# PATH without a bwrap, so locate can only find the managed install.
found="$(env -i PATH=/nonexistent HOME="$scratch" "$bin" --home "$scratch/home" locate)" || die "locate after install failed"
[ "$found" = "$scratch/home/versions/$(printf '%s\n' "$version" | sed -n 's/.*"sha256": "\(.\{16\}\).*/\1/p')/bwrap" ] \
  || die "locate printed $found, not the installed embedded bwrap"
log "dist ok: $(wc -l <SHA256SUMS) files summed; $bin installed its embedded bwrap offline"
