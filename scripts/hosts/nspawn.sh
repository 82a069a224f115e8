#!/usr/bin/env bash
# make hosts, systemd-nspawn: the doctor inside real nspawn containers (systemd 252, PID 1 of
# this machine is not systemd, so --register=no) over an overlay of the debootstrapped rootfs
# (the cached tree is never written), as root and as nobody inside. Where the doctor's remedy
# is a command run inside as root (a remount), it is run before the next doctor; where it is
# the host's (an environment variable of nspawn), nspawn is started with it. --boot is the
# fleet checks' (make fleet). Everything is unmounted and removed at the end.
#
# Usage: scripts/hosts/nspawn.sh BWRAPKIT ROOTFS   (as root)
set -euo pipefail
exec </dev/null
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=scripts/hosts/lib.sh
. "$here/lib.sh"
bk=$(realpath "${1:?usage: nspawn.sh BWRAPKIT ROOTFS}")
rootfs=$(realpath "${2:?usage: nspawn.sh BWRAPKIT ROOTFS}")

scratch=$(mktemp -d /var/tmp/bwrapkit-hosts-nspawn.XXXXXX)
chmod 0755 "$scratch"
mkdir -p "$scratch/bin"
cp "$bk" "$scratch/bin/bwrapkit"
chmod 0755 "$scratch/bin" "$scratch/bin/bwrapkit"
cleanup() {
  unmount_scratch "$scratch"
  rm -rf "$scratch"
}
trap cleanup EXIT

if ! command -v systemd-nspawn >/dev/null; then
  for s in plain "--private-users=pick" "--private-users=pick, files shifted"; do absent "nspawn $s" "systemd-container is not installed (scripts/ci-deps.sh)"; done
  print_table nspawn; exit 0
fi

# tree NAME: a fresh writable overlay of the rootfs.
tree() {
  local dir="$scratch/$1"
  mkdir -p "$dir/upper" "$dir/work" "$dir/merged"
  mount -t overlay overlay -o "lowerdir=$rootfs,upperdir=$dir/upper,workdir=$dir/work" "$dir/merged"
  mkdir -p "$dir/merged/opt/bk"
  printf '%s\n' "$dir/merged"
}

# in_nspawn DIR ENV USER NSPAWN-OPTIONS -- CMD...: one container, one command.
in_nspawn() {
  local dir=$1 env=$2 user=$3
  shift 3
  local -a opts=()
  while [ "$1" != -- ]; do opts+=("$1"); shift; done
  shift
  # A user other than root is entered with setpriv from root, not nspawn's --user: --user
  # makes the user's home first, which fails where the tree's owners are unmapped
  # (--private-users=pick with ownership off), and the row would be lost.
  local -a as=()
  [ "$user" = root ] || as=(setpriv --reuid="$(id -u "$user")" --regid="$(id -g "$user")" --clear-groups)
  # shellcheck disable=SC2086 # env is a list of NAME=VALUE words or empty
  timeout 120 env $env systemd-nspawn -q --register=no --keep-unit -D "$dir" "${opts[@]}" --bind-ro="$scratch/bin:/opt/bk" \
    --setenv=HOME=/tmp -- "${as[@]}" "$@" 2>>"$scratch/nspawn.log"
}

shape() {
  local name=$1 dir=$2 user json verdict can note fix next next_can
  shift 2
  for user in root nobody; do
    set +e
    json=$(in_nspawn "$dir" "" "$user" "$@" -- /opt/bk/bwrapkit doctor --format json); verdict=$?
    in_nspawn "$dir" "" "$user" "$@" -- "${HAND_BWRAP[@]}" >/dev/null 2>&1; can=$?
    set -e
    if [ -z "$json" ] && grep -q -e "Child died too early" -e "Failed to make home" "$scratch/nspawn.log"; then
      # nspawn itself could not start the container as this user (nobody's home where the
      # unshifted root is not the container root's to write): no doctor to judge.
      absent "nspawn $name ($user)" "nspawn could not start it: $(grep -m1 -e "Failed" -e "died" "$scratch/nspawn.log")"
      : >"$scratch/nspawn.log"
      continue
    fi
    : >"$scratch/nspawn.log"
    note=""
    if [ "$verdict" = 1 ]; then
      fix=$(printf '%s' "$json" | doctor_summary | cut -f2)
      set +e
      case "$fix" in
        *"mount -o remount,rw /proc/sys"*)
          # The remedy's own command, as root inside, then the doctor as the user.
          local -a as=()
          [ "$user" = root ] || as=(setpriv --reuid=65534 --regid=65534 --clear-groups)
          in_nspawn "$dir" "" root "$@" -- /bin/sh -c 'mount -o remount,rw /proc/sys && exec "$@"' sh "${as[@]}" env HOME=/tmp /opt/bk/bwrapkit doctor --format json >/dev/null; next=$?
          in_nspawn "$dir" "" root "$@" -- /bin/sh -c 'mount -o remount,rw /proc/sys && exec "$@"' sh "${as[@]}" "${HAND_BWRAP[@]}" >/dev/null 2>&1; next_can=$?
          note="remedy inside: mount -o remount,rw /proc/sys: next doctor=$next bwrap=$next_can"
          if [ "$next" != 0 ] || [ "$next_can" != 0 ]; then note="$note REMEDY FAILS"; WRONG=$((WRONG + 1)); fi
          ;;
        *) note="remedy is not one CI applies here" ;;
      esac
      set -e
      # The host's remedy as well, where the doctor names it (not with --private-users).
      if printf '%s' "$json" | grep -q 'SYSTEMD_NSPAWN_API_VFS_WRITABLE=1 in systemd-nspawn' && ! printf '%s' "$json" | grep -q 'cannot be fixed from inside'; then
        set +e
        in_nspawn "$dir" SYSTEMD_NSPAWN_API_VFS_WRITABLE=1 "$user" "$@" -- /opt/bk/bwrapkit doctor --format json >/dev/null; next=$?
        set -e
        note="$note; on the host SYSTEMD_NSPAWN_API_VFS_WRITABLE=1: next doctor=$next"
        if [ "$next" != 0 ]; then note="$note REMEDY FAILS"; WRONG=$((WRONG + 1)); fi
      fi
    fi
    judge "nspawn $name" "$user" "$verdict" "$can" "$json" "$note"
  done
}

shape plain "$(tree plain)"
shape "--private-users=pick" "$(tree pick)" --private-users=pick --private-users-ownership=off
# Shifted files: idmapped mounts are not available on an overlay here, so chown (a copy-up).
shape "--private-users=pick, files chowned" "$(tree chowned)" --private-users=pick --private-users-ownership=chown
# Listed so the table names every shape: the booted guest is make fleet's (it boots
# Debian 12's systemd under nspawn and judges the doctor there), not repeated here.
absent "nspawn --boot" "in make fleet (scripts/fleet-check.sh): booted Debian 12, the user's doctor passes; root's fails launch, named (nspawn's read-only /proc/sys: bwrap cannot set max_user_namespaces for --disable-userns)"
print_table nspawn
[ "$WRONG" = 0 ]
