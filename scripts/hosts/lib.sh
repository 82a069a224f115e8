#!/usr/bin/env bash
# Shared by the make hosts scripts: judge one shape from the doctor's JSON and bwrap's own
# attempt, and keep the table rows. Sourced, not run.

# The boundary bwrap must be able to build for the doctor to be right in saying "can
# sandbox": every namespace, nested user namespaces disabled, a fresh proc, a read-only root.
# Not --die-with-parent: Debian's 0.8.0 as root in a Docker container then reports its child
# killed (137) in about one run of three, which would judge bwrap, not the host.
# shellcheck disable=SC2034
HAND_BWRAP=(bwrap --unshare-all --unshare-user --disable-userns --ro-bind / / --proc /proc --dev /dev --tmpfs /tmp -- /bin/true)

ROWS=()
WRONG=0

# summary JSON: "verdict-exit<TAB>failing check: summary<TAB>remedy command lines joined by ' ;; '"
doctor_summary() {
  python3 -c '
import json, sys
try:
    d = json.loads(sys.stdin.read())
except Exception as e:
    print("no report (%s)" % e); sys.exit(0)
fails = [c for c in d["checks"] if c["status"] == "fail"]
if not fails:
    print("-\t"); sys.exit(0)
# The launch check carries the cause when there is one; else the first failure.
c = next((c for c in fails if c["id"] == "launch"), fails[0])
print("%s: %s\t%s" % (c["id"], c["summary"].replace("\t", " ")[:110], " ;; ".join(c.get("remedy_commands") or [])))
'
}

# judge SHAPE USER DOCTOR_EXIT BWRAP_EXIT JSON [REMEDY_NOTE]: one row; a verdict that does not
# match bwrap's own, or a failure that names no cause, counts as wrong.
judge() {
  local shape=$1 user=$2 verdict=$3 bwrap_can=$4 json=$5 note=${6:-}
  local summary cause ok=right
  summary=$(printf '%s' "$json" | doctor_summary)
  cause=${summary%%$'\t'*}
  if { [ "$bwrap_can" = 0 ] && [ "$verdict" != 0 ]; } || { [ "$bwrap_can" != 0 ] && [ "$verdict" != 1 ]; }; then
    ok=WRONG
  fi
  case "$cause" in
    "no report"*) ok=WRONG ;;
    *"could not build the sandbox:"*|*"bwrapkit refused"*|*"another sandbox"*) [ "$verdict" = 1 ] && ok=PARTLY ;;
  esac
  [ "$ok" = right ] || WRONG=$((WRONG + 1))
  ROWS+=("$(printf '%-40s %-6s doctor=%-3s bwrap=%-3s %-6s %s%s' "$shape" "$user" "$verdict" "$bwrap_can" "$ok" "$cause" "${note:+  [$note]}")")
}

# absent SHAPE REASON: a shape this machine cannot build, said so.
absent() {
  ROWS+=("$(printf '%-40s %-6s absent: %s' "$1" "-" "$2")")
}

# remedy_flags JSON CLI: the --security-opt and --cap-add options of the doctor's
# "CLI run ... <image>" remedy command, one per line.
remedy_flags() {
  local cli=$2
  printf '%s' "$1" | doctor_summary | cut -f2 | tr ';' '\n' | sed -n "s/^ *$cli run \\(.*\\) <image>.*/\\1/p" | head -1
}

print_table() {
  echo "== make hosts: $1 (shape, user inside, doctor exit, bwrap's own exit, judgement, the failing check)"
  printf '%s\n' "${ROWS[@]}"
  echo "== $WRONG wrong or partly right"
}

# run_shapes ENGINE CLI SHAPE...: each SHAPE is "name|options"; the caller defines
# start OPTIONS... (prints a running container's id), doctor_in ID USER, hand_in ID USER and
# stop ID. As root and as nobody inside: the doctor's verdict, bwrap's own, and where the
# doctor says no, its remedy's options added to the shape's and the next doctor checked.
run_shapes() {
  local engine=$1 cli=$2 s name id user label json verdict can note fixed next next_can
  shift 2
  for s in "$@"; do
    name=${s%%|*}
    local -a opts=() flags=()
    read -r -a opts <<<"${s#*|}"
    if ! id=$(start "${opts[@]}" 2>&1); then
      absent "$engine $name" "the container did not start: $(printf '%s' "$id" | tail -1)"
      continue
    fi
    for user in 0 65534; do
      label=root; [ "$user" = 0 ] || label=nobody
      set +e
      json=$(doctor_in "$id" "$user"); verdict=$?
      hand_in "$id" "$user"; can=$?
      set -e
      note=""
      if [ "$verdict" = 1 ]; then
        read -r -a flags <<<"$(remedy_flags "$json" "$cli")"
        if [ "${#flags[@]}" -gt 0 ] && fixed=$(start "${opts[@]}" "${flags[@]}" 2>&1); then
          set +e
          doctor_in "$fixed" "$user" >/dev/null; next=$?
          hand_in "$fixed" "$user"; next_can=$?
          set -e
          stop "$fixed"
          note="remedy ${flags[*]}: next doctor=$next bwrap=$next_can"
          if [ "$next" != 0 ] || [ "$next_can" != 0 ]; then note="$note REMEDY FAILS"; WRONG=$((WRONG + 1)); fi
        else
          note="no $cli run remedy"
        fi
      fi
      judge "$engine $name" "$label" "$verdict" "$can" "$json" "$note"
    done
    stop "$id"
  done
}

# Subordinate ids for one run (rootless Podman, Docker's userns-remap, unprivileged LXC):
# add_subids LINE appends LINE ("user:start:count") to /etc/subuid and /etc/subgid;
# remove_subids, from the caller's EXIT trap, takes out exactly that line again, whatever
# else was added meanwhile.
added_subid=""
add_subids() {
  added_subid=$1
  echo "$added_subid" >>/etc/subuid
  echo "$added_subid" >>/etc/subgid
}
remove_subids() {
  local f
  [ -n "$added_subid" ] || return 0
  for f in /etc/subuid /etc/subgid; do
    grep -vxF "$added_subid" "$f" >"$f.bwrapkit-hosts" || true
    cat "$f.bwrapkit-hosts" >"$f" && rm -f "$f.bwrapkit-hosts"
  done
}

# unmount_scratch DIR: whatever an engine left mounted under DIR, deepest first.
unmount_scratch() {
  grep -o " $1/[^ ]*" /proc/self/mountinfo | sort -r | xargs -r -n1 umount -l 2>/dev/null || true
}
