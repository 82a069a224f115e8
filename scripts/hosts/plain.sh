#!/usr/bin/env bash
# make hosts, the plain shapes (no daemon): the doctor's verdict against what bwrap itself can
# do there, checked by hand in the same shape, as root and as nobody. Prints a table; exit 1
# when any verdict is wrong. The engine shapes (Docker, Podman, nspawn, LXC) are listed as
# absent with the reason until their part of the matrix lands.
#
# Usage: scripts/hosts/plain.sh BWRAPKIT [ROOTFS]   (as root; ROOTFS is not used)
set -euo pipefail
exec </dev/null
bk=$(realpath "${1:?usage: plain.sh BWRAPKIT}")
[ "$(id -u)" = 0 ] || { echo "hosts: must run as root" >&2; exit 1; }
nobody=(setpriv --reuid=65534 --regid=65534 --clear-groups)
chroot_bin=$(command -v chroot)
work=$(mktemp -d /var/tmp/bwrapkit-hosts.XXXXXX)
cleanup() { umount -l "$work/chroot-proc/proc" 2>/dev/null || true; rm -rf "$work"; }
trap cleanup EXIT
chmod 0755 "$work"
cp "$bk" "$work/bwrapkit" && chmod 0755 "$work/bwrapkit"
rows=()
wrong=0

# judge SHAPE USER PREFIX...: the doctor's exit (0 can sandbox, 1 cannot) against bwrap's own
# answer to a minimal sandbox in the same shape.
judge() {
  local shape=$1 user=$2; shift 2
  local verdict bwrap_can cause out home=/tmp
  [ "$user" = root ] && home=/root
  set +e
  out=$(env -i HOME="$home" PATH=/usr/bin:/bin "$@" "$work/bwrapkit" doctor --format json 2>/dev/null)
  verdict=$?
  env -i PATH=/usr/bin:/bin "$@" /usr/bin/bwrap --unshare-all --unshare-user --ro-bind / / --proc /proc --dev /dev -- /bin/true >/dev/null 2>&1
  bwrap_can=$?
  set -e
  cause=$(printf '%s' "$out" | python3 -c 'import json,sys
try:
  d=json.load(sys.stdin)
  print(next((c["id"]+": "+c["summary"][:70] for c in d["checks"] if c["status"]=="fail"), "-"))
except Exception as e: print("no report: %s" % e)' 2>/dev/null || echo "no report")
  local ok=right
  if { [ "$bwrap_can" = 0 ] && [ "$verdict" != 0 ]; } || { [ "$bwrap_can" != 0 ] && [ "$verdict" != 1 ]; }; then
    ok=WRONG; wrong=$((wrong + 1))
  fi
  rows+=("$(printf '%-34s %-7s doctor=%-2s bwrap=%-2s %-6s %s' "$shape" "$user" "$verdict" "$bwrap_can" "$ok" "$cause")")
}

judge "host" root
judge "host" nobody "${nobody[@]}"
judge "unshare -U -r" root unshare -U -r
judge "unshare -U -r" nobody "${nobody[@]}" unshare -U -r
judge "unshare -m -p -f --mount-proc" root unshare -m -p -f --mount-proc
judge "bwrap inside bwrap" nobody "${nobody[@]}" /usr/bin/bwrap --unshare-user --ro-bind / / --proc /proc --dev /dev --tmpfs /tmp --ro-bind "$work" "$work" --
judge "bwrap inside bwrap, uid 0 inside" nobody "${nobody[@]}" /usr/bin/bwrap --unshare-user --uid 0 --gid 0 --ro-bind / / --proc /proc --dev /dev --tmpfs /tmp --ro-bind "$work" "$work" --
judge "bwrap --disable-userns outside" nobody "${nobody[@]}" /usr/bin/bwrap --unshare-user --disable-userns --ro-bind / / --proc /proc --dev /dev --tmpfs /tmp --ro-bind "$work" "$work" --

# A chroot without /proc, and with one: the kernel refuses user namespaces in a chroot.
for variant in chroot-noproc chroot-proc; do
  root="$work/$variant"
  mkdir -p "$root"/{usr/bin,usr/local/bin,tmp,proc,dev}
  chmod 1777 "$root/tmp"
  mknod "$root/dev/null" c 1 3 && chmod 0666 "$root/dev/null"
  cp "$work/bwrapkit" "$root/usr/local/bin/bwrapkit"
  static="$(dirname "$0")/../../.cache/bwraps/bwrap-0.12.0"
  cp "$static" "$root/usr/bin/bwrap"
done
mount -t proc proc "$work/chroot-proc/proc"
for variant in chroot-noproc chroot-proc; do
  set +e
  out=$(env -i PATH=/usr/bin:/bin HOME=/tmp "$chroot_bin" "$work/$variant" /usr/local/bin/bwrapkit doctor --format json 2>/dev/null)
  verdict=$?
  env -i PATH=/usr/bin:/bin "$chroot_bin" "$work/$variant" /usr/bin/bwrap --unshare-all --unshare-user --ro-bind / / --proc /proc --dev /dev -- /usr/bin/bwrap --version >/dev/null 2>&1
  bwrap_can=$?
  set -e
  cause=$(printf '%s' "$out" | python3 -c 'import json,sys
d=json.load(sys.stdin); print(next((c["id"]+": "+c["summary"][:70] for c in d["checks"] if c["status"]=="fail"), "-"))' 2>/dev/null || echo "no report")
  ok=right
  if { [ "$bwrap_can" = 0 ] && [ "$verdict" != 0 ]; } || { [ "$bwrap_can" != 0 ] && [ "$verdict" != 1 ]; } || [ "$cause" = "no report" ]; then
    ok=WRONG; wrong=$((wrong + 1))
  fi
  rows+=("$(printf '%-34s %-7s doctor=%-2s bwrap=%-2s %-6s %s' "$variant" root "$verdict" "$bwrap_can" "$ok" "$cause")")
done

echo "== make hosts: plain shapes (shape, user inside, doctor exit, bwrap's own exit, judgement, the failing check)"
printf '%s\n' "${rows[@]}"
echo "== $wrong wrong or partly right"
[ "$wrong" = 0 ]
