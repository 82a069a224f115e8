#!/usr/bin/env bash
# Every fleet check on the real engines, as root: Debian 12 booted under systemd-nspawn
# (systemd 252, Debian's node_exporter, Debian's ansible-core inside), the host's Prometheus
# and promtool, and a release build (make dist). What each step proves: docs/fleet.md.
#
# Usage: fleet-check.sh DIST-DIR
#
# Everything it writes is under one temporary prefix, removed at exit (and the cgroups it
# made); every command is bounded in time; every container and Prometheus it started is
# stopped by its pid on any exit. Needs scripts/ci-deps.sh's packages (systemd-container,
# debootstrap, prometheus, curl, util-linux) and .cache/bwraps (scripts/get-test-bwraps.sh).
set -euo pipefail
exec </dev/null
# shellcheck source=scripts/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

[ $# -eq 1 ] || usage
[ "$(id -u)" = 0 ] || die "must run as root (systemd-nspawn)"
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
dist=$(cd "$1" && pwd) || die "no release directory $1 (make dist)"
binary=$dist/bwrapkit-linux-amd64
[ "$(dpkg --print-architecture)" = amd64 ] || die "the guests run the amd64 release binary"
[ -x "$binary" ] || die "$binary missing: make dist"
for tool in systemd-nspawn nsenter prometheus promtool curl setpriv debootstrap; do
  command -v "$tool" >/dev/null || die "$tool missing: run scripts/ci-deps.sh"
done
asset=$repo/.cache/bwraps/bwrap-0.12.0-linux-amd64.tar.gz
[ -f "$asset" ] || die "$asset missing: run scripts/get-test-bwraps.sh"
pinned_sha256=$(sed -n '/"arch": "amd64"/,/"sha256"/s/.*"sha256": "\([0-9a-f]*\)".*/\1/p' "$repo/install/default-manifest.json" | head -1)
[ ${#pinned_sha256} = 64 ] || die "cannot read the amd64 pin from install/default-manifest.json"
binary_sha256=$(sha256_of "$binary")
doc=$repo/docs/fleet.md

# Outside /tmp: the guests' trees are large, and nothing here may hide under a tmpfs.
# The guest's systemd, as PID 1, raises fs.file-max (and would raise fs.nr_open) to the
# maximum at boot, and these are not per-namespace: the host's values are written back after
# every boot and at exit.
host_sysctls=()
for key in fs.file-max fs.nr_open; do host_sysctls+=("$key=$(sysctl -n "$key")"); done
restore_sysctls() {
  local pair
  for pair in "${host_sysctls[@]}"; do
    [ "$(sysctl -n "${pair%%=*}")" = "${pair#*=}" ] || sysctl -q -w "$pair" || log "error: cannot write back $pair"
  done
}
prefix=$(mktemp -d /var/tmp/bwrapkit-fleet.XXXXXX)
chmod 0755 "$prefix"
tag=bwrapkit-fleet-$$
guests=()     # names of the guests started
prom_pid=""
cgroup_roots=()
for hierarchy in /sys/fs/cgroup/systemd /sys/fs/cgroup/unified; do
  [ -d "$hierarchy" ] && cgroup_roots+=("$hierarchy")
done
[ -f /sys/fs/cgroup/cgroup.controllers ] && cgroup_roots+=(/sys/fs/cgroup)
[ ${#cgroup_roots[@]} -gt 0 ] || die "no cgroup hierarchy for systemd at /sys/fs/cgroup"

declare -A nspawn_pid leader_pid
stop_guest() { # stop_guest NAME: halt it (SIGTERM), at most 30 s, then SIGKILL
  local name=$1 pid=${nspawn_pid[$1]:-} i
  [ -n "$pid" ] || return 0
  if kill -0 "$pid" 2>/dev/null; then
    kill -TERM "$pid" 2>/dev/null || true
    for ((i = 0; i < 300; i++)); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$pid" 2>/dev/null || true
  fi
  wait "$pid" 2>/dev/null || true
  nspawn_pid[$name]=""
  local root
  for root in "${cgroup_roots[@]}"; do
    [ -d "$root/$tag-$name" ] && find "$root/$tag-$name" -depth -type d -exec rmdir {} + 2>/dev/null
  done
  rm -rf "${prefix:?}/$name/root"
}
cleanup() {
  local status=$? name
  if [ -n "$prom_pid" ]; then kill "$prom_pid" 2>/dev/null || true; wait "$prom_pid" 2>/dev/null || true; fi
  for name in "${guests[@]}"; do stop_guest "$name"; done
  restore_sysctls
  rm -rf "$prefix"
  exit "$status"
}
trap cleanup EXIT
trap 'exit 130' INT TERM HUP

bounded() { local secs=$1; shift; timeout --kill-after=5 "$secs" "$@"; }
step_started=
step() {
  [ -z "$step_started" ] || log "ok ($(($(date +%s) - step_started)) s)"
  log "== $*"
  step_started=$(date +%s)
}
expect_fail() { # expect_fail WHAT CMD...: CMD must fail; its output in $prefix/expect.out
  local what=$1
  shift
  local out=${expect_out:-$prefix/expect.out}
  if "$@" >"$out" 2>&1; then cat "$out" >&2; die "$what: succeeded, expected a failure"; fi
}
# block NAME: the docs/fleet.md code block after <!-- fleet:NAME -->, as written there.
block() {
  local text
  text=$(sed -n "/^<!-- fleet:$1 -->\$/,/^\`\`\`\$/p" "$doc" | sed '1,2d;$d')
  [ -n "$text" ] || die "docs/fleet.md has no <!-- fleet:$1 --> block"
  printf '%s\n' "$text"
}

# boot NAME TREE: a fresh copy of TREE booted under systemd-nspawn, network private, the
# repository (read-only) at /mnt/src, the release at /mnt/dist, $prefix/share at /mnt/share.
boot() {
  local name=$1 tree=$2 root=$prefix/$1/root pid leader i state root_cg
  mkdir -p "$prefix/$name"
  cp -a --reflink=auto "$tree" "$root"
  chmod 0755 "$root"
  local cgroups=()
  for root_cg in "${cgroup_roots[@]}"; do
    mkdir "$root_cg/$tag-$name"
    cgroups+=("$root_cg/$tag-$name")
  done
  guests+=("$name")
  # shellcheck disable=SC2016 # expanded by the inner sh
  SYSTEMD_NSPAWN_API_VFS_WRITABLE=1 sh -c 'for cg in $0; do echo $$ >"$cg/cgroup.procs"; done; exec "$@"' "${cgroups[*]}" \
    systemd-nspawn --quiet --register=no --keep-unit --boot --directory="$root" --machine="$tag-$name" \
    --private-network --console=passive --bind-ro="$repo:/mnt/src" --bind-ro="$dist:/mnt/dist" \
    --bind-ro="$prefix/share:/mnt/share" >"$prefix/$name/nspawn.log" 2>&1 &
  pid=$!
  nspawn_pid[$name]=$pid
  leader=
  for ((i = 0; i < 300; i++)); do
    kill -0 "$pid" 2>/dev/null || { cat "$prefix/$name/nspawn.log" >&2; die "systemd-nspawn for $name exited"; }
    # The guest's PID 1 is nspawn's child once it runs systemd (before that, the child
    # may be nspawn's own intermediate process, which exits).
    # shellcheck disable=SC2013 # the file is one line of pids
    for leader in $(cat /proc/"$pid"/task/*/children 2>/dev/null); do
      [ "$(cat /proc/"$leader"/comm 2>/dev/null)" = systemd ] &&
        [ "$(readlink /proc/"$leader"/ns/pid)" != "$(readlink /proc/self/ns/pid)" ] && break 2
    done
    leader=
    sleep 0.1
  done
  [ -n "$leader" ] || die "the container $name has no init process after 30 s"
  leader_pid[$name]=$leader
  for ((i = 0; i < 120; i++)); do
    state=$(guest "$name" 5 systemctl is-system-running 2>/dev/null) || true
    case $state in running) restore_sysctls; return 0 ;; degraded) break ;; esac
    sleep 0.5
  done
  guest "$name" 10 systemctl --failed --no-pager >&2 || true
  die "the container $name did not reach running (state: ${state:-none})"
}
# guest NAME SECS CMD...: CMD as root in the guest, a clean environment, at most SECS.
guest() {
  local name=$1 secs=$2
  shift 2
  bounded "$secs" nsenter --target "${leader_pid[$name]}" --mount --uts --ipc --net --pid --root --wd -- \
    env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin HOME=/root LANG=C.UTF-8 "$@"
}
# in_guest_net NAME SECS CMD...: a host command in the guest's network namespace only.
in_guest_net() {
  local name=$1 secs=$2
  shift 2
  bounded "$secs" nsenter --target "${leader_pid[$name]}" --net -- "$@"
}
# doctor_run NAME: start the doctor's service once; its textfile lands in $prefix/NAME/prom.
doctor_run() {
  local name=$1 status=0
  guest "$name" 150 systemctl start bwrapkit-doctor.service >"$prefix/$name/start.out" 2>&1 || status=$?
  guest "$name" 10 cat /var/lib/bwrapkit-doctor/bwrapkit.prom >"$prefix/$name/prom"
  return "$status"
}
healthy() { grep -qx 'bwrapkit_doctor_healthy 1' "$1"; }
every_check_ok() { # every_check_ok FILE: every check the doctor knows is 1 in FILE
  local check
  for check in $checks; do
    grep -qx "bwrapkit_doctor_check_ok{check=\"$check\"} 1" "$1" || { log "  $1: $check is not ok"; return 1; }
  done
}

mkdir -p "$prefix/share"
checks=$("$binary" doctor --help | sed -n 's/^Checks: //p' | sed 's/\.$//' | tr ',' ' ')
[ -n "$checks" ] || die "cannot read the check ids from bwrapkit doctor --help"

step "Debian 12 trees (cached; debootstrap from this host's mirror on the first run)"
# Both at once (cold, each is a debootstrap and an apt-get run).
bounded 1500 "$repo/scripts/debian-rootfs.sh" --include systemd,systemd-sysv,dbus,prometheus-node-exporter --apt ansible-core \
  >"$prefix/tree-exporter" &
exporter_tree_pid=$!
bounded 1500 "$repo/scripts/debian-rootfs.sh" --include systemd,systemd-sysv,dbus --apt ansible-core >"$prefix/tree-plain" ||
  die "cannot make the Debian 12 tree without node_exporter"
wait "$exporter_tree_pid" || die "cannot make the Debian 12 tree with node_exporter"
with_exporter=$(cat "$prefix/tree-exporter")
without_exporter=$(cat "$prefix/tree-plain")
for tree in "$with_exporter" "$without_exporter"; do
  [ ! -e "$tree/usr/bin/bwrap" ] || die "$tree has a bwrap; the guests must start without one"
done

step "promtool: check and unit-test the rules; each rule's test fails on a broken rule"
rules=$repo/contrib/prometheus
bounded 30 promtool check rules "$rules/bwrapkit.rules.yml" >/dev/null
(cd "$rules" && bounded 30 promtool test rules bwrapkit.rules.test.yml >/dev/null)
mkdir "$prefix/rules" && cp "$rules/bwrapkit.rules.test.yml" "$prefix/rules/"
for mutation in 's/bwrapkit_doctor_healthy == 0/bwrapkit_doctor_healthy == 2/' 's/2 \* 15 \* 60/3 * 15 * 60/' \
  's/unless on (job, instance)/and on (job, instance)/' 's/|1\[01\]//'; do
  sed "$mutation" "$rules/bwrapkit.rules.yml" >"$prefix/rules/bwrapkit.rules.yml"
  ! cmp -s "$rules/bwrapkit.rules.yml" "$prefix/rules/bwrapkit.rules.yml" || die "mutation $mutation changed nothing"
  # shellcheck disable=SC2016 # expanded by the inner sh
  expect_fail "promtool test rules with $mutation" sh -c 'cd "$0" && exec promtool test rules bwrapkit.rules.test.yml' "$prefix/rules"
done

step "units: boot Debian 12 with node_exporter; the release binary, bwrapkit install (offline), docs/fleet.md's timer block as written"
block timer >"$prefix/share/timer.sh"
boot units "$with_exporter"
booted_at=$(date +%s)
guest units 30 install -m 0755 /mnt/dist/bwrapkit-linux-amd64 /usr/local/bin/bwrapkit
guest units 120 bwrapkit install >"$prefix/units/install.out" 2>&1 || { cat "$prefix/units/install.out" >&2; die "bwrapkit install failed in the guest"; }
guest units 200 sh -c 'cd /mnt/src && exec sh /mnt/share/timer.sh' >"$prefix/units/timer.out" 2>&1 ||
  { cat "$prefix/units/timer.out" >&2; guest units 10 journalctl -u bwrapkit-doctor.service --no-pager >&2 || true; die "docs/fleet.md's timer block failed"; }
guest units 10 cat /var/lib/bwrapkit-doctor/bwrapkit.prom >"$prefix/units/prom"
healthy "$prefix/units/prom" || { cat "$prefix/units/prom" >&2; die "the unit as shipped is not healthy under systemd"; }
every_check_ok "$prefix/units/prom" || die "a check failed under the unit as shipped"
[ "$(guest units 10 stat -c '%U %a' /var/lib/bwrapkit-doctor/bwrapkit.prom)" = "bwrapkit-doctor 644" ] ||
  die "the textfile is not the service user's, 0644"
[ -z "$(guest units 10 find /var/lib/bwrapkit-doctor -name '.bwrapkit.prom.tmp-*')" ] || die "a temp file was left behind"
[ "$(guest units 10 readlink /var/lib/prometheus/node-exporter/bwrapkit.prom)" = /var/lib/bwrapkit-doctor/bwrapkit.prom ] ||
  die "no textfile link in node_exporter's directory"
[ "$(guest units 10 systemctl is-enabled bwrapkit-doctor.timer)" = enabled ] || die "the timer is not enabled"

step "units: systemd-analyze verify is silent on both units, and not on a broken one"
verify_out=$(guest units 60 systemd-analyze verify /etc/systemd/system/bwrapkit-doctor.service /etc/systemd/system/bwrapkit-doctor.timer 2>&1) ||
  { echo "$verify_out" >&2; die "systemd-analyze verify failed"; }
[ -z "$verify_out" ] || { echo "$verify_out" >&2; die "systemd-analyze verify warned"; }
sed 's/^ProtectSystem=strict$/ProtectSystem=stricter/' "$repo/contrib/systemd/bwrapkit-doctor.service" >"$prefix/share/bwrapkit-doctor.service"
! cmp -s "$repo/contrib/systemd/bwrapkit-doctor.service" "$prefix/share/bwrapkit-doctor.service" || die "the verify mutation changed nothing"
verify_out=$(guest units 60 systemd-analyze verify /mnt/share/bwrapkit-doctor.service 2>&1) || true
[ -n "$verify_out" ] || die "systemd-analyze verify said nothing of ProtectSystem=stricter"

step "units: each hardening option the unit leaves out, as a drop-in, breaks the doctor"
dropins=/etc/systemd/system/bwrapkit-doctor.service.d
guest units 10 mkdir -p "$dropins"
with_dropin() { # with_dropin LINE...: the doctor's service run once with these [Service] lines
  printf '[Service]\n' >"$prefix/share/fleet.conf"
  printf '%s\n' "$@" >>"$prefix/share/fleet.conf"
  guest units 10 cp /mnt/share/fleet.conf "$dropins/fleet.conf"
  guest units 30 systemctl daemon-reload
  local status=0
  doctor_run units || status=$?
  guest units 10 rm -f "$dropins/fleet.conf"
  guest units 30 systemctl daemon-reload
  return "$status"
}
for option in LockPersonality=yes ProtectKernelTunables=yes ProcSubset=pid; do
  expect_fail "the doctor under $option" with_dropin "$option"
  ! healthy "$prefix/units/prom" || die "the doctor is healthy under $option"
  log "  $option: failing $(sed -n 's/^bwrapkit_doctor_check_ok{check="\(.*\)"} 0$/\1/p' "$prefix/units/prom" | head -3 | paste -sd, -)"
  if [ "$option" = LockPersonality=yes ]; then
    grep -qx 'bwrapkit_doctor_check_ok{check="selftest.seccomp"} 0' "$prefix/units/prom" || die "LockPersonality=yes did not fail selftest.seccomp"
  fi
done
doctor_run units || die "the doctor is not healthy again without the drop-ins"
healthy "$prefix/units/prom" || die "the doctor is not healthy again without the drop-ins"

step "units: an --output the service cannot write fails the run, says why in the journal, leaves the textfile alone"
before=$(sha256sum <"$prefix/units/prom")
expect_fail "the doctor with a read-only --output" with_dropin ExecStart= \
  "ExecStart=/usr/local/bin/bwrapkit doctor --format prometheus --output /var/lib/prometheus/node-exporter/bwrapkit-other.prom"
[ "$(sha256sum <"$prefix/units/prom")" = "$before" ] || die "a failed run changed the textfile"
guest units 10 journalctl -u bwrapkit-doctor.service --no-pager -o cat >"$prefix/units/journal"
grep -q 'bwrapkit: --output: .*/var/lib/prometheus/node-exporter.*: read-only file system' "$prefix/units/journal" ||
  { tail -5 "$prefix/units/journal" >&2; die "the journal does not name the file and the cause"; }

step "units: the guest's node_exporter serves the doctor's metrics (its network namespace, loopback)"
for ((i = 0; i < 100; i++)); do
  in_guest_net units 5 curl -fsS -m 2 -o "$prefix/units/metrics" http://127.0.0.1:9100/metrics 2>/dev/null && break
  sleep 0.2
done
grep -qx 'node_textfile_scrape_error 0' "$prefix/units/metrics" || die "node_textfile_scrape_error is not 0"
healthy "$prefix/units/metrics" || die "node_exporter does not serve bwrapkit_doctor_healthy 1"
every_check_ok "$prefix/units/metrics" || die "node_exporter does not serve every check ok"

step "units: Prometheus (the host's, in the guest's network namespace) loads the rules and scrapes node_exporter"
mkdir "$prefix/prometheus"
cp "$rules/bwrapkit.rules.yml" "$prefix/prometheus/"
cat >"$prefix/prometheus/prometheus.yml" <<'EOF'
global:
  scrape_interval: 2s
  evaluation_interval: 2s
rule_files: [bwrapkit.rules.yml]
scrape_configs:
  - job_name: node
    static_configs: [{targets: ["127.0.0.1:9100"]}]
EOF
in_guest_net units 900 prometheus --config.file="$prefix/prometheus/prometheus.yml" \
  --storage.tsdb.path="$prefix/prometheus/data" --web.listen-address=127.0.0.1:9090 \
  >"$prefix/prometheus/log" 2>&1 &
prom_pid=$!
api() { in_guest_net units 10 curl -fsS -m 5 "http://127.0.0.1:9090$1"; }
ready=
for ((i = 0; i < 150; i++)); do
  api /-/ready >/dev/null 2>&1 && { ready=1; break; }
  sleep 0.2
done
[ -n "$ready" ] || { tail -20 "$prefix/prometheus/log" >&2; die "Prometheus did not become ready"; }
api /api/v1/rules >"$prefix/prometheus/rules.json"
for alert in BwrapkitCannotSandbox BwrapkitDoctorStale BwrapkitDoctorAbsent BwrapkitBwrapOutdated; do
  grep -q "\"name\":\"$alert\"" "$prefix/prometheus/rules.json" || die "Prometheus did not load $alert"
done
! grep -q '"health":"err"' "$prefix/prometheus/rules.json" || die "a rule does not evaluate: $(cat "$prefix/prometheus/rules.json")"
# wait_query QUERY WANT SECS: until the instant query's first value is WANT
wait_query() {
  local i got
  for ((i = 0; i < $3; i++)); do
    got=$(api "/api/v1/query?query=$1" 2>/dev/null | /usr/bin/python3 -c '
import json, sys
result = json.load(sys.stdin)["data"]["result"]
print(result[0]["value"][1] if result else "")') || got=
    [ "$got" = "$2" ] && return 0
    sleep 1
  done
  die "Prometheus: $1 is '${got:-no data}' after $3 s, want $2"
}
# alert_state NAME: firing, pending, or empty
alert_state() {
  api /api/v1/alerts | /usr/bin/python3 -c '
import json, sys
states = [a["state"] for a in json.load(sys.stdin)["data"]["alerts"] if a["labels"].get("alertname") == sys.argv[1]]
print(states[0] if states else "")' "$1"
}
wait_query bwrapkit_doctor_healthy 1 60
log "  scraped: bwrapkit_doctor_healthy 1"

step "units: BwrapkitCannotSandbox fires when the doctor is made to fail, and resolves after"
printf '[Service]\nEnvironment=BWRAPKIT_BWRAP=/nonexistent/bwrap\n' >"$prefix/share/fleet.conf"
guest units 10 cp /mnt/share/fleet.conf "$dropins/fleet.conf"
guest units 30 systemctl daemon-reload
doctor_run units && die "the doctor passed with BWRAPKIT_BWRAP=/nonexistent/bwrap"
wait_query bwrapkit_doctor_healthy 0 60
state=
for ((i = 0; i < 120; i++)); do
  state=$(alert_state BwrapkitCannotSandbox)
  [ "$state" = firing ] && break
  sleep 1
done
[ "$state" = firing ] || die "BwrapkitCannotSandbox is '${state:-inactive}' 2 minutes after the doctor failed"
log "  BwrapkitCannotSandbox firing"
guest units 10 rm -f "$dropins/fleet.conf"
guest units 30 systemctl daemon-reload
doctor_run units || die "the doctor is not healthy again"
wait_query bwrapkit_doctor_healthy 1 60
for ((i = 0; i < 60; i++)); do
  state=$(alert_state BwrapkitCannotSandbox)
  [ -z "$state" ] && break
  sleep 1
done
[ -z "$state" ] || die "BwrapkitCannotSandbox still $state after the doctor is healthy again"
log "  BwrapkitCannotSandbox resolved"
kill "$prom_pid" 2>/dev/null || true
wait "$prom_pid" 2>/dev/null || true
prom_pid=""
# The units guest stays up: its timer is checked at the end, when OnBootSec= has passed.

ansible_env=(ANSIBLE_ROLES_PATH=/mnt/src/contrib/ansible/roles ANSIBLE_NOCOLOR=1 ANSIBLE_RETRY_FILES_ENABLED=0
  ANSIBLE_LOCALHOST_WARNING=0 ANSIBLE_INVENTORY_UNPARSED_WARNING=0 ANSIBLE_HOME=/root/.ansible
  ANSIBLE_PYTHON_INTERPRETER=/usr/bin/python3 ANSIBLE_GATHERING=explicit) # the role reads no gathered fact
printf '[agents]\nlocalhost ansible_connection=local\n' >"$prefix/share/inventory"
block ansible >"$prefix/share/site.yml"
# The docs' playbook with the release binary and the cached asset (a directory mirror) on top.
# The preflight is off but where it is tested: it runs the doctor as the play's user, root,
# and root's doctor cannot pass launch in these guests (see root_doctor below); the timer's
# doctor, the unprivileged one agents meet, is what verify.yml judges.
cat >"$prefix/share/vars.json" <<EOF
{"bwrapkit_binary_url": "file:///mnt/dist/bwrapkit-linux-amd64", "bwrapkit_binary_sha256": "$binary_sha256",
 "bwrapkit_install_mirror": "/mnt/src/.cache/bwraps", "ansible_become": false, "bwrapkit_preflight": false}
EOF
playbook() { # playbook NAME LOG ARGS...: ansible-playbook in the guest
  local name=$1 out=$2
  shift 2
  guest "$name" 600 env "${ansible_env[@]}" ansible-playbook -i /mnt/share/inventory -e @/mnt/share/vars.json "$@" >"$out" 2>&1
}
recap_changed() { sed -n 's/^localhost *: .* changed=\([0-9]*\) .*/\1/p' "$1"; }
verify() { # verify NAME: tests/verify.yml
  playbook "$1" "$prefix/$1/verify.log" /mnt/src/contrib/ansible/tests/verify.yml -e "bwrapkit_pinned_sha256=$pinned_sha256" \
    -e bwrapkit_state_dir=/var/lib/bwrapkit-doctor -e bwrapkit_bin_path=/usr/local/bin/bwrapkit \
    -e bwrapkit_home=/usr/local/lib/bwrapkit -e bwrapkit_systemd_dir=/etc/systemd/system \
    -e bwrapkit_sysusers_dir=/etc/sysusers.d -e bwrapkit_textfile_dir=/var/lib/prometheus/node-exporter ||
    { cat "$prefix/$1/verify.log" >&2; die "$1: tests/verify.yml failed"; }
}
snapshot() { # what the role may write, with modes and times
  guest "$1" 60 sh -c 'find /usr/local /etc/systemd/system /etc/sysusers.d /var/lib/prometheus /var/lib/bwrapkit-doctor /var/cache/bwrapkit /etc/passwd \
    -printf "%p %y %m %s %T@\n" 2>/dev/null | sort'
}
converge_twice() { # converge_twice NAME: first converge, second changed=0, verify
  playbook "$1" "$prefix/$1/converge.log" /mnt/share/site.yml || { cat "$prefix/$1/converge.log" >&2; die "$1: the first converge failed"; }
  [ "$(recap_changed "$prefix/$1/converge.log")" -gt 0 ] || die "$1: the first converge changed nothing"
  playbook "$1" "$prefix/$1/second.log" /mnt/share/site.yml || { cat "$prefix/$1/second.log" >&2; die "$1: the second run failed"; }
  [ "$(recap_changed "$prefix/$1/second.log")" = 0 ] || { grep -B3 '^changed:' "$prefix/$1/second.log" >&2; die "$1: the second run changed something"; }
  verify "$1"
}

step "Ansible, two fresh hosts at once: without node_exporter (a wrong sha256 changes nothing; converge; changed=0; verify; the preflight) and with it (--check passes and changes nothing; converge; changed=0; verify)"
boot role "$without_exporter"
boot role2 "$with_exporter"
role_plain() {
  expect_out=$prefix/role/expect.out
  local before
  before=$(snapshot role)
  expect_fail "the role with a wrong sha256" playbook role "$prefix/role/wrong.log" /mnt/share/site.yml -e "bwrapkit_binary_sha256=$(printf '%064d' 0)"
  grep -q 'sha256\|checksum' "$prefix/role/wrong.log" || die "the failure does not name the sha256: $(tail -5 "$prefix/role/wrong.log")"
  [ "$(snapshot role)" = "$before" ] || die "a wrong sha256 changed files"
  converge_twice role
  log "  role: converge, changed=0 and verify passed; now the preflight, on a host that cannot sandbox"
  expect_fail "the role where bwrap is not a bwrap" playbook role "$prefix/role/preflight.log" /mnt/share/site.yml \
    -e bwrapkit_doctor_bwrap=/bin/false -e bwrapkit_doctor_fix=true -e bwrapkit_preflight=true
  grep -q 'doctor --fix` ran first and left these failing' "$prefix/role/preflight.log" || die "--fix did not run before the preflight"
  grep -q 'cannot sandbox: bwrapkit doctor' "$prefix/role/preflight.log" || die "no preflight message: $(tail -20 "$prefix/role/preflight.log")"
  grep -q 'remedy: ' "$prefix/role/preflight.log" || die "the preflight gives no remedy"
}
role_exporter() {
  expect_out=$prefix/role2/expect.out
  local before i
  before=$(snapshot role2)
  playbook role2 "$prefix/role2/check.log" /mnt/share/site.yml --check || { cat "$prefix/role2/check.log" >&2; die "--check failed on a fresh host"; }
  [ "$(snapshot role2)" = "$before" ] || die "--check changed files"
  log "  role2: --check passed and changed nothing"
  converge_twice role2
  for ((i = 0; i < 50; i++)); do
    in_guest_net role2 5 curl -fsS -m 2 -o "$prefix/role2/metrics" http://127.0.0.1:9100/metrics 2>/dev/null && break
    sleep 0.2
  done
  healthy "$prefix/role2/metrics" || die "node_exporter does not serve the role's doctor as healthy"
}
role_plain >"$prefix/role/run.log" 2>&1 &
plain_pid=$!
role_exporter >"$prefix/role2/run.log" 2>&1 &
exporter_pid=$!
plain_status=0 exporter_status=0
wait "$plain_pid" || plain_status=$?
wait "$exporter_pid" || exporter_status=$?
cat "$prefix/role/run.log" "$prefix/role2/run.log" >&2
[ "$plain_status" = 0 ] || die "the role on a fresh host without node_exporter (above)"
[ "$exporter_status" = 0 ] || die "the role on a fresh host with node_exporter (above)"
stop_guest role
stop_guest role2

# root_doctor NAME: root's doctor in the guest finds root's install and passes every check
# but launch, which nspawn's read-only /proc/sys fails for root alone (bwrap cannot set
# max_user_namespaces for --disable-userns; the doctor says so and names the remedy). Making
# /proc/sys writable (SYSTEMD_NSPAWN_API_VFS_WRITABLE=1) would let the guest's systemd raise
# the host's fs.file-max at boot, so the check does not.
root_doctor() {
  guest "$1" 150 bwrapkit doctor --json >"$prefix/$1/root-doctor.json" 2>"$prefix/$1/root-doctor.err" || true
  /usr/bin/python3 - "$prefix/$1/root-doctor.json" <<'PY' || die "$1: root's doctor failed for another reason (above)"
import json, sys
report = json.load(open(sys.argv[1]))
failing = [c for c in report["checks"] if c["status"] == "fail"]
ok = (report["bwrap"]["path"].startswith("/usr/local/lib/bwrapkit/versions/")
      and all(c["id"] == "launch" and "max_user_namespaces: Read-only file system" in c["summary"] for c in failing))
for c in failing:
    print(f'  root: {c["id"]}: {c["summary"]}', file=sys.stderr)
sys.exit(0 if ok else 1)
PY
}
user_doctor() { # user_doctor NAME: the doctor as an ordinary user of the guest passes, judging root's install
  guest "$1" 10 sh -c 'id agent >/dev/null 2>&1 || useradd --create-home agent'
  guest "$1" 150 runuser -u agent -- env HOME=/home/agent bwrapkit doctor --json >"$prefix/$1/user-doctor.json" 2>&1 ||
    { cat "$prefix/$1/user-doctor.json" >&2; die "$1: the doctor fails as a user after root's install"; }
  grep -q '"path": "/usr/local/lib/bwrapkit/versions/' "$prefix/$1/user-doctor.json" || die "$1: the user's doctor did not judge root's install"
}

step "offline provisioning: no network, no bubblewrap, the release binary only: install, then doctor as root and as a user"
boot offline "$without_exporter"
guest offline 10 sh -c '! command -v bwrap && [ ! -e /usr/bin/bwrap ]' >/dev/null || die "the offline guest has a bwrap"
guest offline 10 install -m 0755 /mnt/dist/bwrapkit-linux-amd64 /usr/local/bin/bwrapkit
guest offline 120 bwrapkit install >"$prefix/offline/install.out" 2>&1 || { cat "$prefix/offline/install.out" >&2; die "offline install failed"; }
grep -q 'using the bwrap embedded in this build' "$prefix/offline/install.out" || die "install did not use the embedded bwrap"
root_doctor offline
user_doctor offline
stop_guest offline

step "offline provisioning: doctor --fix on its own, on another fresh host"
boot offline2 "$without_exporter"
guest offline2 10 install -m 0755 /mnt/dist/bwrapkit-linux-amd64 /usr/local/bin/bwrapkit
expect_fail "the user's doctor before any install" guest offline2 150 runuser -u nobody -- env HOME=/tmp bwrapkit doctor
guest offline2 300 bwrapkit doctor --fix >"$prefix/offline2/fix.out" 2>&1 || true
grep -q 'using the bwrap embedded in this build' "$prefix/offline2/fix.out" || { cat "$prefix/offline2/fix.out" >&2; die "doctor --fix did not install the embedded bwrap"; }
root_doctor offline2
user_doctor offline2
stop_guest offline2

step "docs/fleet.md: the install-time preflight, on this host as an unprivileged user"
block preflight >"$prefix/preflight.sh"
mkdir -p "$prefix/preflight-bin" "$prefix/preflight-home"
ln -s "$binary" "$prefix/preflight-bin/bwrapkit"
chown 65534:65534 "$prefix/preflight-home"
as_nobody=(setpriv --reuid=65534 --regid=65534 --clear-groups env HOME="$prefix/preflight-home"
  PATH="$prefix/preflight-bin:/usr/bin:/bin")
bounded 150 "${as_nobody[@]}" sh "$prefix/preflight.sh" >"$prefix/preflight.out" 2>&1 ||
  { cat "$prefix/preflight.out" >&2; die "the preflight failed on a host that can sandbox"; }
grep -q 'installing' "$prefix/preflight.out" || die "the preflight did not go on"
expect_fail "the preflight where bwrap is /bin/false" bounded 150 "${as_nobody[@]}" BWRAPKIT_BWRAP=/bin/false sh "$prefix/preflight.sh"
grep -q 'cannot sandbox' "$prefix/expect.out" || die "the preflight's failure says nothing: $(cat "$prefix/expect.out")"
! grep -q 'installing' "$prefix/expect.out" || die "the preflight went on installing on a host that cannot sandbox"

step "units: the timer fired on its own (OnBootSec=2min, RandomizedDelaySec=1min, AccuracySec=1min)"
fired=
while :; do
  last=$(guest units 10 systemctl show --property=LastTriggerUSecMonotonic --value bwrapkit-doctor.timer)
  if [ -n "$last" ] && [ "$last" != 0 ]; then fired=1; break; fi
  [ $(($(date +%s) - booted_at)) -lt 330 ] || break
  sleep 5
done
[ -n "$fired" ] || die "the timer did not fire within 5.5 minutes of boot"
for ((i = 0; i < 60; i++)); do
  [ "$(guest units 10 systemctl is-active bwrapkit-doctor.service)" = activating ] || break
  sleep 1
done
[ "$(guest units 10 systemctl show --property=Triggers --value bwrapkit-doctor.timer)" = bwrapkit-doctor.service ] ||
  die "the timer does not trigger bwrapkit-doctor.service"
guest units 10 cat /var/lib/bwrapkit-doctor/bwrapkit.prom >"$prefix/units/prom"
healthy "$prefix/units/prom" || die "the timer's run is not healthy"
log "  next run: $(guest units 10 systemctl show --property=NextElapseUSecMonotonic --value bwrapkit-doctor.timer)"
stop_guest units
step "done"
