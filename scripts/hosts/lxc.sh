#!/usr/bin/env bash
# make hosts, LXC: the doctor inside real LXC 5.0 containers (Debian's lxc) of the
# debootstrapped rootfs, privileged and unprivileged (root's own id map, files shifted into
# it), without and with nesting.conf, as root and as nobody inside. Where the doctor says no,
# its remedy commands are run as written, with the container's name and config path put in
# for the placeholders, and the next doctor must pass. The lxcpath is a scratch directory;
# every container is stopped and removed at the end; no network (lxc.net.0.type = empty).
# LXC maps ids through newuidmap even for root: "root:<range>" is appended to /etc/subuid and
# /etc/subgid for the run and exactly that line removed at the end.
#
# Usage: scripts/hosts/lxc.sh BWRAPKIT ROOTFS   (as root)
set -euo pipefail
exec </dev/null
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=scripts/hosts/lib.sh
. "$here/lib.sh"
bk=$(realpath "${1:?usage: lxc.sh BWRAPKIT ROOTFS}")
rootfs=$(realpath "${2:?usage: lxc.sh BWRAPKIT ROOTFS}")

scratch=$(mktemp -d /var/tmp/bwrapkit-hosts-lxc.XXXXXX)
chmod 0755 "$scratch"
mkdir -p "$scratch/bin" "$scratch/lxc"
shift_base=1879179264
subid_line="root:$shift_base:65536"
cp "$bk" "$scratch/bin/bwrapkit"
chmod 0755 "$scratch/bin" "$scratch/bin/bwrapkit"
cleanup() {
  local c
  for c in "$scratch"/lxc/*/; do
    if [ -d "$c" ]; then lxc-stop -P "$scratch/lxc" -n "$(basename "$c")" -k >/dev/null 2>&1 || true; fi
  done
  unmount_scratch "$scratch"
  rm -rf "$scratch"
  remove_subids
}
trap cleanup EXIT

if ! command -v lxc-start >/dev/null; then
  for s in privileged "privileged, nesting.conf" unprivileged "unprivileged, nesting.conf"; do absent "lxc $s" "lxc is not installed (scripts/ci-deps.sh)"; done
  print_table lxc; exit 0
fi

# container NAME SHIFT [CONFIG-LINES...]: a stopped container over an overlay of the rootfs;
# SHIFT > 0 makes it unprivileged, its files shifted into root's id map at SHIFT.
container() {
  local name=$1 shift_by=$2 dir="$scratch/$1"
  shift 2
  mkdir -p "$dir/upper" "$dir/work" "$dir/merged" "$scratch/lxc/$name"
  mount -t overlay overlay -o "lowerdir=$rootfs,upperdir=$dir/upper,workdir=$dir/work" "$dir/merged"
  # The bind's mount point, made now: a shifted root cannot write the overlay's upper layer.
  mkdir -p "$dir/merged/opt/bk"
  if [ "$shift_by" != 0 ]; then
    python3 - "$dir/merged" "$shift_by" <<'PY'
import os, sys
top, by = sys.argv[1], int(sys.argv[2])
# Each name once: the top, then every entry as its directory lists it (os.walk's root is
# already one of its parent's dirs).
for root, dirs, files in os.walk(top):
    for name in ([top] if root == top else []) + [os.path.join(root, n) for n in dirs + files]:
        st = os.lstat(name)
        os.lchown(name, st.st_uid + by, st.st_gid + by)
        if not os.path.islink(name):
            os.chmod(name, st.st_mode & 0o7777)  # chown clears setuid bits
PY
  fi
  {
    echo "lxc.uts.name = $name"
    echo "lxc.rootfs.path = dir:$dir/merged"
    echo "lxc.include = /usr/share/lxc/config/common.conf"
    echo "lxc.net.0.type = empty"
    echo "lxc.apparmor.profile = unconfined"
    echo "lxc.init.cmd = /bin/sleep infinity"
    echo "lxc.mount.entry = $scratch/bin opt/bk none bind,ro 0 0"
    if [ "$shift_by" != 0 ]; then
      echo "lxc.idmap = u 0 $shift_by 65536"
      echo "lxc.idmap = g 0 $shift_by 65536"
    fi
    printf '%s\n' "$@"
  } >"$scratch/lxc/$name/config"
}
lxc_start() { timeout 60 lxc-start -P "$scratch/lxc" -n "$1" -o "$scratch/$1.log" -l INFO; }
lxc_stop() { timeout 60 lxc-stop -P "$scratch/lxc" -n "$1" -k >/dev/null 2>&1 || true; }
doctor_in() { timeout 120 lxc-attach -P "$scratch/lxc" -n "$1" --uid "$2" --gid "$2" --clear-env -v HOME=/tmp -v PATH=/usr/bin:/bin -- /opt/bk/bwrapkit doctor --format json 2>/dev/null; }
hand_in() { timeout 60 lxc-attach -P "$scratch/lxc" -n "$1" --uid "$2" --gid "$2" --clear-env -v PATH=/usr/bin:/bin -- "${HAND_BWRAP[@]}" >/dev/null 2>&1; }

# apply NAME JSON: the doctor's remedy commands, placeholders filled, run on this host.
apply() {
  local name=$1 commands
  commands=$(printf '%s' "$2" | doctor_summary | cut -f2 | sed 's/ ;; /\n/g')
  [ -n "$commands" ] || return 1
  printf '%s\n' "$commands" | grep -q "lxc" || return 1
  printf '%s\n' "$commands" | sed -e "s#/var/lib/lxc/<container>/config#$scratch/lxc/$name/config#g" \
    -e "s#-n <container>#-P $scratch/lxc -n $name#g" -e 's/^sudo //; s/| sudo /| /g' >"$scratch/$name.remedy"
  [ -n "$(cat "$scratch/$name.remedy")" ] || return 1
  # lxc-stop of a running container waits for its init; sleep does not answer SIGPWR: -k.
  sed -i 's/lxc-stop \(.*\)$/lxc-stop \1 -k/' "$scratch/$name.remedy"
  sh -eu "$scratch/$name.remedy" >/dev/null 2>&1
}

shape() {
  local label=$1 name=$2 user json verdict can note next next_can
  lxc_start "$name" || { absent "lxc $label" "lxc-start failed: $(grep -m1 -i error "$scratch/$name.log" || echo see the log)"; return; }
  for user in 0 65534; do
    local who=root; [ "$user" = 0 ] || who=nobody
    set +e
    json=$(doctor_in "$name" "$user"); verdict=$?
    hand_in "$name" "$user"; can=$?
    set -e
    note=""
    if [ "$verdict" = 1 ]; then
      # A copy of the container for the remedy, so the next user starts from the shape.
      cp "$scratch/lxc/$name/config" "$scratch/$name.config.orig"
      if apply "$name" "$json"; then
        set +e
        doctor_in "$name" "$user" >/dev/null; next=$?
        hand_in "$name" "$user"; next_can=$?
        set -e
        note="remedy applied as printed: next doctor=$next bwrap=$next_can"
        if [ "$next" != 0 ] || [ "$next_can" != 0 ]; then note="$note REMEDY FAILS"; WRONG=$((WRONG + 1)); fi
      else
        note="no remedy CI can apply here"
      fi
      lxc_stop "$name"
      cp "$scratch/$name.config.orig" "$scratch/lxc/$name/config"
      lxc_start "$name" || true
    fi
    judge "lxc $label" "$who" "$verdict" "$can" "$json" "$note"
  done
  lxc_stop "$name"
}

container priv 0
shape privileged priv
container privnest 0 "lxc.include = /usr/share/lxc/config/nesting.conf"
shape "privileged, nesting.conf" privnest
add_subids "$subid_line"
container unpriv "$shift_base"
shape unprivileged unpriv
container unprivnest "$shift_base" "lxc.include = /usr/share/lxc/config/nesting.conf"
shape "unprivileged, nesting.conf" unprivnest
print_table lxc
[ "$WRONG" = 0 ]
