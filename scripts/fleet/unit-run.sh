#!/usr/bin/env bash
# Run a unit's ExecStart= for real, as root, under an emulation of the hardening it sets.
#
# Usage: unit-run.sh [--output FILE] UNIT BINARY STATE-DIR [ENV-OVERRIDE=VALUE...]
#
# No systemd as PID 1 is needed: the options are rebuilt from the same kernel parts
# systemd uses, in a private mount, network and UTS namespace (the host's mounts are
# untouched), then setpriv (User=/Group= as a uid, no capabilities, no_new_privs) and
# seccomp-exec.py (systemd's syscall groups, from the installed systemd-analyze).
# BINARY is bound over ExecStart='s program and STATE-DIR (chowned to the user, as
# systemd does) over StateDirectory=, so nothing is written on the host outside
# STATE-DIR. User= is the account of that name if it exists, else a free system uid.
# A [Service] setting this script does not reproduce is refused: the test can only
# pass for the unit as it is written. --output replaces ExecStart='s --output (a
# drop-in pointing it elsewhere); ENV-OVERRIDE pairs replace or add Environment=
# entries. Exit status: ExecStart's.
set -euo pipefail
exec </dev/null
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
die() { echo "unit-run: $*" >&2; exit 2; }

output_override=
if [ "${1:-}" = --output ]; then output_override=$2; shift 2; fi
[ $# -ge 3 ] || die "usage: unit-run.sh [--output FILE] UNIT BINARY STATE-DIR [NAME=VALUE...]"
unit=$1 binary=$2 state=$3
shift 3
[ "$(id -u)" = 0 ] || die "must run as root (it builds mount namespaces)"
[ -f "$unit" ] || die "no unit file $unit"
[ -x "$binary" ] || die "BINARY $binary is not executable"
[ -d "$state" ] || die "STATE-DIR $state is not a directory"
binary=$(realpath "$binary") state=$(realpath "$state")

# The [Service] settings, one "Key=Value" per line, comments and continuations aside.
settings=$(awk '/^\[/{s=($0=="[Service]")} s && /^[A-Za-z]+=/' "$unit")
get() { printf '%s\n' "$settings" | sed -n "s/^$1=//p" | tail -1; }

# Every setting must be one this script reproduces, with the value it reproduces.
declare -A want=(
  [CapabilityBoundingSet]="" [AmbientCapabilities]="" [NoNewPrivileges]=yes
  [ProtectSystem]=strict [ProtectHome]=yes [PrivateTmp]=yes [PrivateMounts]=yes [PrivateDevices]=yes
  [ProtectProc]=invisible [ProtectControlGroups]=yes [PrivateNetwork]=yes
  [SystemCallErrorNumber]=EPERM [SystemCallArchitectures]=native [LockPersonality]=yes
  [MemoryDenyWriteExecute]=yes [RestrictRealtime]=yes [ProtectHostname]=yes
  # Not reproduced, and needs not be: it acts only after the run.
  [RemoveIPC]=yes
)
# Not hardening; read below or irrelevant to a one-shot run here.
free='^(Type|ExecStart|Environment|User|Group|StateDirectory|StateDirectoryMode|CacheDirectory|CacheDirectoryMode|TimeoutStartSec|Nice|IOSchedulingClass|UMask|RestrictAddressFamilies|SystemCallFilter)$'
while IFS= read -r line; do
  key=${line%%=*} value=${line#*=}
  if [[ $key =~ $free ]]; then continue; fi
  [ -n "${want[$key]+set}" ] || die "the unit sets $key=$value, which this emulation does not reproduce: add it here first"
  [ "$value" = "${want[$key]}" ] || die "the unit sets $key=$value; this emulation reproduces $key=${want[$key]}"
done <<<"$settings"
for key in "${!want[@]}"; do
  grep -q "^$key=" <<<"$settings" || die "the unit no longer sets $key: update want[] here"
done
[ "$(get Type)" = oneshot ] || die "Type= must be oneshot"

read -r -a exec_start <<<"$(get ExecStart)"
program=${exec_start[0]}
output=
for ((i = 0; i < ${#exec_start[@]}; i++)); do
  if [ "${exec_start[i]}" = --output ]; then
    output=${exec_start[i + 1]}
    [ -n "$output_override" ] && exec_start[i + 1]=$output_override
  fi
done
[ -n "$output" ] || die "ExecStart= has no --output FILE"
state_dir=/var/lib/$(get StateDirectory)
cache=/var/cache/$(get CacheDirectory)
[ "$(dirname "$output")" = "$state_dir" ] || die "ExecStart='s --output ($output) is not in StateDirectory= ($state_dir)"
[ "$(get User)" = "$(get Group)" ] || die "User= and Group= differ; this emulation uses one name for both"
if uid=$(id -u "$(get User)" 2>/dev/null); then
  gid=$(getent group "$(get Group)" | cut -d: -f3)
else
  # Like systemd-sysusers: the highest free system id below 1000.
  for ((uid = 999; uid > 100; uid--)); do
    getent passwd "$uid" >/dev/null || getent group "$uid" >/dev/null || break
  done
  gid=$uid
fi
chown "$uid:$gid" "$state" && chmod "$(get StateDirectoryMode)" "$state"

# Environment=: space-separated NAME=VALUE pairs (no quoting in this unit), then overrides.
declare -A envmap=()
read -r -a pairs <<<"$(printf '%s\n' "$settings" | sed -n 's/^Environment=//p' | tr '\n' ' ')"
for pair in "${pairs[@]}" "$@"; do envmap[${pair%%=*}]=${pair#*=}; done
env_args=()
for name in "${!envmap[@]}"; do env_args+=(--env "$name=${envmap[$name]}"); done

scratch=$(mktemp -d /tmp/bwrapkit-unit-run.XXXXXX)
# A mount point for StateDirectory= if the host has none, removed afterwards.
made_state_dir=
if [ ! -e "$state_dir" ]; then mkdir "$state_dir" && made_state_dir=$state_dir; fi
trap 'rm -rf "$scratch"; [ -z "$made_state_dir" ] || rmdir "$made_state_dir"' EXIT
mkdir -p "$scratch/bin" "$scratch/olddev"
cp "$binary" "$scratch/bin/$(basename "$program")"

# The namespace side, run by unshare below as root with a private mount table.
# shellcheck disable=SC2317 # called through the inner bash's declarations
inner() {
  set -euo pipefail
  mount --make-rprivate /
  ip link set lo up                                            # PrivateNetwork=yes
  # ExecStart='s program and StateDirectory=, bound before / goes read-only.
  mount --bind "$scratch/bin" "$(dirname "$program")"
  mount --bind "$state" "$state_dir"
  # CacheDirectory=: a fresh tmpfs at /var/cache for the run, so the host's stays as it is.
  mount -t tmpfs -o mode=0755 tmpfs /var/cache
  mkdir -m "$(get CacheDirectoryMode)" "$cache" && chown "$uid:$gid" "$cache"
  for dir in /home /root /run/user; do                        # ProtectHome=yes
    [ -d "$dir" ] && mount -t tmpfs -o mode=000,size=4k tmpfs "$dir"
  done
  # PrivateDevices=yes: a tmpfs /dev with systemd's nodes bound from the host's.
  mount --rbind /dev "$scratch/olddev"
  mount -t tmpfs -o mode=0755,nosuid,noexec tmpfs /dev
  for node in null zero full random urandom tty; do
    touch "/dev/$node" && mount --bind "$scratch/olddev/$node" "/dev/$node"
  done
  umount -l "$scratch/olddev"
  mkdir /dev/pts /dev/shm
  mount -t devpts -o newinstance,ptmxmode=0666,mode=0620 devpts /dev/pts
  mount -t tmpfs -o mode=1777,nosuid,nodev tmpfs /dev/shm
  ln -s pts/ptmx /dev/ptmx && ln -s /proc/self/fd /dev/fd
  ln -s /proc/self/fd/0 /dev/stdin && ln -s /proc/self/fd/1 /dev/stdout && ln -s /proc/self/fd/2 /dev/stderr
  # PrivateTmp=yes, after /dev: the scratch directory is under /tmp.
  mount -t tmpfs -o mode=1777 tmpfs /tmp
  mount -t tmpfs -o mode=1777 tmpfs /var/tmp
  mount -t proc -o hidepid=invisible,nosuid,nodev,noexec proc /proc   # ProtectProc=invisible
  # ProtectSystem=strict (then ProtectControlGroups=yes): every mount read-only but the
  # API trees and the writable paths above.
  local target
  while read -r target; do
    case $target in
      /dev | /dev/* | /proc | /proc/* | /tmp | /var/tmp | /var/cache | "$state_dir") continue ;;
      /sys | /sys/*) case $target in /sys/fs/cgroup | /sys/fs/cgroup/*) ;; *) continue ;; esac ;;
    esac
    mount -o remount,bind,ro "$target" 2>/dev/null || mount -o remount,ro,bind "$target"
  done < <(findmnt -rn -o TARGET | sed 's/\\x20/ /g')
  # User=/Group= with no capabilities and no_new_privs, then the seccomp settings,
  # then ExecStart= with exactly Environment=.
  exec setpriv --reuid="$uid" --regid="$gid" --clear-groups \
    --no-new-privs --bounding-set=-all --inh-caps=-all --ambient-caps=-all -- \
    /usr/bin/python3 "$here/seccomp-exec.py" \
      --syscall-filter "$(get SystemCallFilter)" --errno "$(get SystemCallErrorNumber)" --native \
      --address-families "$(get RestrictAddressFamilies)" \
      --mdwe --lock-personality --restrict-realtime \
      "${env_args[@]}" -- "${exec_start[@]}"
}
# The inner bash gets the functions and variables it needs as declarations.
inner_cmd="$(declare -p exec_start env_args scratch program state state_dir cache uid gid here settings)
$(declare -f inner die get)
inner"
# --uts: ProtectHostname=yes (its seccomp half, no sethostname, is SystemCallFilter='s).
set +e
unshare --mount --net --uts --propagation private -- bash -c "$inner_cmd"
status=$?
set -e
exit "$status"
