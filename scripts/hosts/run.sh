#!/usr/bin/env bash
# make hosts: the doctor on the container runtimes people use, built here from a
# debootstrapped Debian 12 rootfs (cached, with Debian's bubblewrap inside): the plain shapes,
# Docker, Podman, systemd-nspawn and LXC, each as root and as nobody inside. Each script
# prints its table; the whole table is repeated at the end. Exit 1 when any verdict is
# wrong, a failure names no cause, or a remedy the doctor printed did not make the next
# doctor pass. Every container, image, daemon and mount is removed by the script that made it.
#
# Usage: scripts/hosts/run.sh BWRAPKIT   (as root; BWRAPKIT static, as make build makes it)
set -euo pipefail
exec </dev/null
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
bk=$(realpath "${1:?usage: run.sh BWRAPKIT}")
[ "$(id -u)" = 0 ] || { echo "hosts: must run as root" >&2; exit 1; }
rootfs=$("$here/../debian-rootfs.sh" --include bubblewrap)
out=$(mktemp -d /var/tmp/bwrapkit-hosts-out.XXXXXX)
trap 'rm -rf "$out"' EXIT
status=0
for part in plain docker podman nspawn lxc; do
  began=$(date +%s)
  echo "== hosts: $part" >&2
  if "$here/$part.sh" "$bk" "$rootfs" >"$out/$part" 2>"$out/$part.err"; then :; else status=1; fi
  cat "$out/$part"
  echo "   ($part: $(( $(date +%s) - began )) s)"
  # A script that died before its table says why here.
  grep -q '^== make hosts' "$out/$part" || { echo "hosts: $part printed no table:"; tail -5 "$out/$part.err"; status=1; }
done
echo
echo "== make hosts: the whole table"
grep -h -v '^== ' "$out"/plain "$out"/docker "$out"/podman "$out"/nspawn "$out"/lxc
grep -h '^== .* wrong' "$out"/* | sed 's/^/   /'
exit "$status"
