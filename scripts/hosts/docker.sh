#!/usr/bin/env bash
# make hosts, Docker: the doctor inside real Docker containers (Debian's docker.io) of the
# debootstrapped rootfs, as root and as nobody inside, in each shape the issue names; where the
# doctor says no, its remedy's --security-opt flags are added and the next doctor must pass.
# dockerd is this script's own: no iptables, no bridge, no forwarding, a scratch data and exec
# root and socket, containers with --network none; all of it is removed at the end. A second
# daemon runs with --userns-remap (nobody's subordinate ids, added for the run and removed).
#
# Usage: scripts/hosts/docker.sh BWRAPKIT ROOTFS   (as root)
set -euo pipefail
exec </dev/null
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=scripts/hosts/lib.sh
. "$here/lib.sh"
bk=$(realpath "${1:?usage: docker.sh BWRAPKIT ROOTFS}")
rootfs=$(realpath "${2:?usage: docker.sh BWRAPKIT ROOTFS}")

scratch=$(mktemp -d /var/tmp/bwrapkit-hosts-docker.XXXXXX)
chmod 0755 "$scratch"
cp "$bk" "$scratch/bwrapkit"
image=bwrapkit-hosts:local
subid_line="nobody:1879310336:65536"
dockerd_pid=""
dk=()
stop_dockerd() {
  if [ -n "$dockerd_pid" ]; then
    "${dk[@]}" ps -aq 2>/dev/null | xargs -r "${dk[@]}" rm -f >/dev/null 2>&1 || true
    kill "$dockerd_pid" 2>/dev/null || true
    for _ in $(seq 1 40); do kill -0 "$dockerd_pid" 2>/dev/null || break; sleep 0.5; done
    kill -9 "$dockerd_pid" 2>/dev/null || true
    dockerd_pid=""
  fi
}
cleanup() {
  stop_dockerd
  # Whatever dockerd left mounted under its own roots, then the roots.
  unmount_scratch "$scratch"
  rm -rf "$scratch"
  remove_subids
}
trap cleanup EXIT

shapes=("default|" "seccomp=unconfined|--security-opt seccomp=unconfined" "--cap-add SYS_ADMIN|--cap-add SYS_ADMIN"
  "systempaths=unconfined|--security-opt systempaths=unconfined"
  "seccomp + systempaths unconfined|--security-opt seccomp=unconfined --security-opt systempaths=unconfined")
remap_shapes=("default|" "seccomp + systempaths unconfined|--security-opt seccomp=unconfined --security-opt systempaths=unconfined")

if ! command -v dockerd >/dev/null || [ ! -x /usr/bin/docker ]; then
  for s in "${shapes[@]}"; do absent "docker ${s%%|*}" "docker.io is not installed (scripts/ci-deps.sh installs it)"; done
  for s in "${remap_shapes[@]}"; do absent "docker userns-remap ${s%%|*}" "docker.io is not installed"; done
  print_table docker; exit 0
fi

# start_dockerd NAME [DOCKERD-OPTIONS...]: a daemon of this script's own, its image imported;
# fails (with the reason in $scratch/NAME/dockerd.log) when it does not come up.
start_dockerd() {
  local name=$1 root="$scratch/$1"
  shift
  mkdir -p "$root"
  dk=(/usr/bin/docker -H "unix://$root/docker.sock")
  dockerd --iptables=false --ip6tables=false --ip-forward=false --bridge=none \
    --data-root "$root/data" --exec-root "$root/exec" -H "unix://$root/docker.sock" --pidfile "$root/dockerd.pid" \
    --containerd-namespace "bwrapkit-hosts-$name" --containerd-plugins-namespace "bwrapkit-hosts-$name-plugins" "$@" \
    >"$root/dockerd.log" 2>&1 &
  dockerd_pid=$!
  for _ in $(seq 1 60); do
    if "${dk[@]}" version >/dev/null 2>&1; then
      tar -C "$rootfs" -c . | "${dk[@]}" import - "$image" >/dev/null
      return 0
    fi
    kill -0 "$dockerd_pid" 2>/dev/null || break
    sleep 0.5
  done
  stop_dockerd
  return 1
}

doctor_in() { "${dk[@]}" exec --user "$2" -e HOME=/tmp "$1" /opt/bwrapkit doctor --format json 2>/dev/null; }
hand_in() { "${dk[@]}" exec --user "$2" "$1" "${HAND_BWRAP[@]}" >/dev/null 2>&1; }
start() { "${dk[@]}" run -d --network none -v "$scratch/bwrapkit:/opt/bwrapkit:ro" "$@" "$image" sleep infinity; }
stop() { "${dk[@]}" rm -f "$1" >/dev/null 2>&1 || true; }

if start_dockerd plain; then
  run_shapes docker docker "${shapes[@]}"
  stop_dockerd
else
  for s in "${shapes[@]}"; do absent "docker ${s%%|*}" "dockerd did not start: $(tail -1 "$scratch/plain/dockerd.log")"; done
fi

# userns-remap: the containers' root is an unprivileged user of the host (nobody's
# subordinate range, added to /etc/subuid and /etc/subgid for this run and removed after).
if ! grep -q '^nobody:' /etc/subuid /etc/subgid 2>/dev/null; then
  add_subids "$subid_line"
fi
if start_dockerd remap --userns-remap=nobody:nogroup; then
  run_shapes "docker userns-remap" docker "${remap_shapes[@]}"
  stop_dockerd
else
  for s in "${remap_shapes[@]}"; do absent "docker userns-remap ${s%%|*}" "dockerd did not start: $(tail -1 "$scratch/remap/dockerd.log")"; done
fi
print_table docker
[ "$WRONG" = 0 ]
