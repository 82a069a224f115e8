#!/usr/bin/env bash
# make hosts, Podman: the doctor inside real Podman containers (Debian's podman 4.3) of the
# debootstrapped rootfs, rootful and rootless, as root and as nobody inside. Rootful storage
# is a scratch --root/--runroot; rootless runs as nobody with a scratch HOME, which needs a
# subordinate id range: this script appends "nobody:<range>" to /etc/subuid and /etc/subgid
# for its run and removes exactly that line at its end.
#
# Usage: scripts/hosts/podman.sh BWRAPKIT ROOTFS   (as root)
set -euo pipefail
exec </dev/null
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=scripts/hosts/lib.sh
. "$here/lib.sh"
bk=$(realpath "${1:?usage: podman.sh BWRAPKIT ROOTFS}")
rootfs=$(realpath "${2:?usage: podman.sh BWRAPKIT ROOTFS}")
shapes=("default|" "unmask=ALL|--security-opt unmask=ALL")
image=bwrapkit-hosts:local
subid_line="nobody:1879048192:65536"

scratch=$(mktemp -d /var/tmp/bwrapkit-hosts-podman.XXXXXX)
chmod 0755 "$scratch"
mkdir -p "$scratch/bin" "$scratch/home" "$scratch/xdg"
cp "$bk" "$scratch/bin/bwrapkit"
chmod 0755 "$scratch/bin" "$scratch/bin/bwrapkit"
chown 65534:65534 "$scratch/home" "$scratch/xdg"
chmod 0700 "$scratch/xdg"
mode=rootful
cleanup() {
  remove_subids
  # Every container and image of both stores (system reset removes the store itself).
  mode=rootless; pm system reset -f >/dev/null 2>&1 || true
  mode=rootful; pm system reset -f >/dev/null 2>&1 || true
  unmount_scratch "$scratch"
  rm -rf "$scratch"
}
trap cleanup EXIT

# pm ARGS...: podman in the current mode, storage in the scratch directory.
pm() {
  if [ "$mode" = rootful ]; then
    podman --root "$scratch/root" --runroot "$scratch/run" --tmpdir "$scratch/tmp" --cgroup-manager cgroupfs --events-backend none "$@"
  else
    (cd "$scratch" && setpriv --reuid=65534 --regid=65534 --clear-groups env HOME="$scratch/home" XDG_RUNTIME_DIR="$scratch/xdg" \
      PATH=/usr/bin:/bin podman --cgroup-manager cgroupfs --events-backend none "$@")
  fi
}
# This machine kind's VM cannot raise RLIMIT_NOFILE/NPROC for runc: podman's defaults fail there.
start() { pm run -d --network none --ulimit nofile=4096:4096 --ulimit nproc=4096:4096 -v "$scratch/bin:/opt/bk:ro" "$@" "$image" sleep infinity; }
doctor_in() { pm exec --user "$2" -e HOME=/tmp "$1" /opt/bk/bwrapkit doctor --format json 2>/dev/null; }
hand_in() { pm exec --user "$2" "$1" "${HAND_BWRAP[@]}" >/dev/null 2>&1; }
stop() { pm rm -f "$1" >/dev/null 2>&1 || true; }

if ! command -v podman >/dev/null; then
  for m in rootful rootless; do for s in "${shapes[@]}"; do absent "podman $m ${s%%|*}" "podman is not installed (scripts/ci-deps.sh)"; done; done
  print_table podman; exit 0
fi

mode=rootful
if tar -C "$rootfs" -c . | pm import - "$image" >"$scratch/import.log" 2>&1; then
  run_shapes "podman rootful" podman "${shapes[@]}"
else
  for s in "${shapes[@]}"; do absent "podman rootful ${s%%|*}" "import failed: $(tail -1 "$scratch/import.log")"; done
fi

mode=rootless
if grep -q '^nobody:' /etc/subuid /etc/subgid 2>/dev/null; then
  echo "hosts: nobody already has subordinate ids; using them" >&2
else
  add_subids "$subid_line"
fi
if tar -C "$rootfs" -c . | pm import - "$image" >"$scratch/import.log" 2>&1; then
  run_shapes "podman rootless" podman "${shapes[@]}"
else
  for s in "${shapes[@]}"; do absent "podman rootless ${s%%|*}" "import failed: $(tail -1 "$scratch/import.log")"; done
fi
print_table podman
[ "$WRONG" = 0 ]
