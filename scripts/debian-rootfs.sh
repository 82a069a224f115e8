#!/usr/bin/env bash
# A Debian 12 (bookworm) root file system for the real-engine tests (make hosts, make fleet),
# made with debootstrap from the package mirror this host's apt already uses, and cached.
#
# Usage: debian-rootfs.sh [--include PKG,PKG...] [--apt PKG,PKG...] [--out DIR]   (prints the rootfs path)
#
# --include goes to debootstrap; --apt is installed afterwards by apt-get inside the new tree
# (for packages whose dependencies debootstrap's resolver cannot follow, such as
# ansible-core's python3-cryptography), with no service started. The cache key is the package list: DIR/bookworm-<sha256 of the sorted list, 12 hex> holds one
# finished tree (a half-made one is never used: debootstrap runs into a temporary sibling that
# is renamed only when it succeeded). Default DIR: <repo root>/.cache/rootfs. The mirror is read
# from /etc/apt/sources.list.d/*.sources or /etc/apt/sources.list, never written down here, so
# the tree comes from exactly where this host's packages come from. Needs root and debootstrap.
set -euo pipefail
exec </dev/null
# shellcheck source=scripts/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

include=""
apt=""
out=""
while [ $# -gt 0 ]; do
  case "$1" in
    --include) [ $# -ge 2 ] || usage; include="$2"; shift 2 ;;
    --apt) [ $# -ge 2 ] || usage; apt="$2"; shift 2 ;;
    --out) [ $# -ge 2 ] || usage; out="$2"; shift 2 ;;
    -h|--help) usage 0 ;;
    *) log "unknown argument: $1"; usage ;;
  esac
done
[ "$(id -u)" = 0 ] || die "must run as root (debootstrap)"
command -v debootstrap >/dev/null || die "debootstrap missing: run scripts/ci-deps.sh"
[ -n "$out" ] || out=$(repo_cache rootfs)
mkdir -p "$out"

# The first bookworm mirror of this host's apt configuration (deb822 first, then one-line).
mirror() {
  local f
  for f in /etc/apt/sources.list.d/*.sources; do
    [ -r "$f" ] || continue
    awk 'BEGIN{RS=""} /Types:[^\n]*deb( |\n|$)/ && /Suites:[^\n]*bookworm( |\n|$)/ {
           for (i = 1; i <= NF; i++) if ($i == "URIs:") { print $(i+1); exit } }' "$f"
  done | head -1
  if [ -r /etc/apt/sources.list ]; then
    awk '$1 == "deb" && $3 == "bookworm" { for (i = 2; i <= NF; i++) if ($i ~ /^[a-z]+:\/\//) { print $i; exit } }' \
      /etc/apt/sources.list
  fi
}
url=$(mirror | head -1)
[ -n "$url" ] || die "no bookworm mirror in this host's apt sources"

sorted=$(printf '%s' "$include" | tr ',' '\n' | sed '/^$/d' | sort -u | paste -sd, -)
apt_sorted=$(printf '%s' "$apt" | tr ',' '\n' | sed '/^$/d' | sort -u | paste -sd, -)
# Without --apt the key is the one earlier trees were cached under.
key=$(printf '%s' "$sorted${apt_sorted:+;apt:$apt_sorted}" | sha256sum | cut -c1-12)
tree="$out/bookworm-$key"
if [ -f "$tree/.bwrapkit-rootfs-done" ]; then
  printf '%s\n' "$tree"
  exit 0
fi

tmp=$(mktemp -d "$out/.bookworm-$key.XXXXXX")
chmod 0755 "$tmp" # the guest's /: mktemp made it 0700, which no user but root could enter
trap 'rm -rf "$tmp" "$tmp.log"' EXIT
log "debootstrap bookworm (variant minbase${sorted:+, with $sorted}) into $tree"
args=(--variant=minbase)
[ -n "$sorted" ] && args+=("--include=$sorted")
if ! timeout 900 debootstrap "${args[@]}" bookworm "$tmp" "$url" >"$tmp.log" 2>&1; then
  tail -20 "$tmp.log" >&2
  rm -f "$tmp.log"
  die "debootstrap failed (log above)"
fi
rm -f "$tmp.log"
# The guest's apt uses the same mirror, for tests that install inside it.
printf 'deb %s bookworm main\n' "$url" >"$tmp/etc/apt/sources.list"
if [ -n "$apt_sorted" ]; then
  log "apt-get install ${apt_sorted//,/ } inside the tree"
  # No maintainer script may start a service in the chroot; the host's resolver for the mirror.
  printf '#!/bin/sh\nexit 101\n' >"$tmp/usr/sbin/policy-rc.d" && chmod 0755 "$tmp/usr/sbin/policy-rc.d"
  cp -L /etc/resolv.conf "$tmp/etc/resolv.conf"
  IFS=, read -r -a apt_pkgs <<<"$apt_sorted"
  if ! { timeout 300 chroot "$tmp" env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin DEBIAN_FRONTEND=noninteractive apt-get -q update &&
    timeout 900 chroot "$tmp" env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin DEBIAN_FRONTEND=noninteractive \
      apt-get -q install -y --no-install-recommends "${apt_pkgs[@]}"; } >"$tmp.log" 2>&1; then
    tail -20 "$tmp.log" >&2
    rm -f "$tmp.log"
    die "apt-get install inside the tree failed (log above)"
  fi
  rm -f "$tmp.log" "$tmp/usr/sbin/policy-rc.d" "$tmp/etc/resolv.conf"
  chroot "$tmp" apt-get clean
fi
touch "$tmp/.bwrapkit-rootfs-done"
rm -rf "$tree"
mv "$tmp" "$tree"
trap - EXIT
printf '%s\n' "$tree"
