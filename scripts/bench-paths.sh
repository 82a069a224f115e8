#!/usr/bin/env bash
# How `bwrapkit run` grows with the number of --ro paths, against bwrap's own growth with
# the same argv (bwrapkit argv): at 10 and at 500 read-only directories, all four commands
# interleaved in the same rounds (benchcmp). growth = (run at 500 - run at 10) /
# (bwrap at 500 - bwrap at 10), from the medians; the goal is at most 1.1.
# usage: bench-paths.sh BWRAPKIT BENCHCMP ROUNDS
set -euo pipefail
exec </dev/null
# shellcheck disable=SC2034 # read by lib.sh's usage
usage_line=7
# shellcheck source=scripts/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

[ $# -eq 3 ] || usage
bwrapkit=$(realpath "$1") benchcmp=$(realpath "$2") rounds=$3
repo=$(git -C "$(dirname "${BASH_SOURCE[0]}")" rev-parse --show-toplevel)
mkdir -p "$repo/.cache/scratch"
work=$(mktemp -d "$repo/.cache/scratch/bench-paths-XXXXXX")
trap 'rm -rf "$work"' EXIT
chmod 0755 "$work"
mkdir -p "$work/wd"
for n in 10 500; do
  list=""
  for i in $(seq 0 $((n - 1))); do
    mkdir -p "$work/ro/$i"
    list+="${list:+,}\"$work/ro/$i\""
  done
  printf '{"schema":"bwrapkit.policy/v1","ro":[%s]}\n' "$list" > "$work/ro$n.json"
done
cd "$work/wd"
"$bwrapkit" argv --workdir . --seccomp-file ../filter.bpf -- /bin/true >/dev/null
run() { printf '["%s","run","--policy","%s","--workdir",".","--","/bin/true"]' "$bwrapkit" "$work/ro$1.json"; }
raw() { "$bwrapkit" argv --policy "$work/ro$1.json" --workdir . --seccomp-file ../filter.bpf -- /bin/true; }
out=$("$benchcmp" -rounds "$rounds" -warmup 2 -fd3 ../filter.bpf \
  -name-a "run, 500 --ro" -name-b "bwrap, 500 --ro" -a "$(run 500)" -b "$(raw 500)" \
  -also "run, 10 --ro=$(run 10)" -also "bwrap, 10 --ro=$(raw 10)" 2>&1 | grep -v '^bwrapkit: warning')
printf '%s\n' "$out"
median() { printf '%s\n' "$out" | grep -F "$1 " | head -1 | sed -n 's/.*median *\([0-9.]*\) ms.*/\1/p'; }
awk -v r500="$(median "run, 500 --ro")" -v b500="$(median "bwrap, 500 --ro")" \
    -v r10="$(median "run, 10 --ro")" -v b10="$(median "bwrap, 10 --ro")" \
  'BEGIN { printf "growth from 10 to 500 --ro paths: run %.1f ms, bwrap %.1f ms, ratio %.3f (goal: at most 1.1)\n", r500 - r10, b500 - b10, (r500 - r10) / (b500 - b10) }'
