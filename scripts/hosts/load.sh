#!/usr/bin/env bash
# The doctor under load (issue 19 item 8): 60 doctors, 3 lanes of 20, while HOGS busy loops
# (started here, and only these killed at the end, by pid) keep the load far past the cores.
# Not part of make hosts: it takes minutes and loads the whole machine. Prints how many
# doctors failed a healthy host, with the failing checks, and the load they ran under.
#
# Usage: scripts/hosts/load.sh BWRAPKIT OUTDIR [HOGS]
set -u
bk=${1:?usage: load.sh BWRAPKIT OUTDIR [HOGS]}; out=${2:?usage: load.sh BWRAPKIT OUTDIR [HOGS]}; hogs=${3:-40}
mkdir -p "$out"
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done; }
trap cleanup EXIT
for _ in $(seq 1 "$hogs"); do sh -c 'while :; do :; done' & pids+=($!); done
sleep 60
echo "load before: $(cut -d' ' -f1-3 /proc/loadavg)"
lane() {
  for i in $(seq 1 20); do
    env -i HOME=/root PATH=/usr/sbin:/usr/bin:/sbin:/bin "$bk" doctor --format json >"$out/$1-$i.json" 2>"$out/$1-$i.err"
    echo "$? $(cut -d' ' -f1 /proc/loadavg)" >"$out/$1-$i.rc"
  done
}
start=$(date +%s)
lane a & l1=$!; lane b & l2=$!; lane c & l3=$!
wait $l1 $l2 $l3
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg); $(( $(date +%s) - start )) s"
fails=$(grep -L '^0 ' "$out"/*.rc | wc -l)
echo "failed doctors: $fails of $(find "$out" -name '*.rc' | wc -l)"
grep -L '^0 ' "$out"/*.rc | while read -r f; do
  j=${f%.rc}.json
  python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); [print("  ", sys.argv[1].split("/")[-1], c["id"], c["summary"][:150]) for c in d["checks"] if c["status"]=="fail"]' "$j" 2>/dev/null || echo "   $j: no report"
done
awk '{print $2}' "$out"/*.rc | sort -n | awk '{a[NR]=$1} END {print "1-min load at the doctors'"'"' ends: min " a[1] ", median " a[int(NR/2)] ", max " a[NR]}'
