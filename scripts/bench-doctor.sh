#!/usr/bin/env bash
# The doctor on its defaults against one raw bwrap launch, with each bwrap given, as root and
# as nobody (setpriv): interleaved rounds, CPU from the cgroup (benchcmp, every process).
# usage: bench-doctor.sh BWRAPKIT BENCHCMP ROUNDS BWRAP... [-- BWRAPKIT-BEFORE]
set -euo pipefail
exec </dev/null
# shellcheck source=scripts/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

[ $# -ge 4 ] || usage
[ "$(id -u)" = 0 ] || die "run as root: the nobody rounds use setpriv, and the CPU a cgroup"
bwrapkit=$(realpath "$1") benchcmp=$(realpath "$2") rounds=$3
shift 3
bwraps=() before=""
while [ $# -gt 0 ]; do
  case "$1" in
    --) before=$(realpath "$2"); shift 2 ;;
    *) bwraps+=("$(realpath "$1")"); shift ;;
  esac
done
repo=$(git -C "$(dirname "${BASH_SOURCE[0]}")" rev-parse --show-toplevel)
mkdir -p "$repo/.cache/scratch"
work=$(mktemp -d "$repo/.cache/scratch/bench-doctor-XXXXXX")
trap 'rm -rf "$work"' EXIT
chmod 0755 "$work"
nobody=(setpriv --reuid=65534 --regid=65534 --clear-groups env "HOME=$work/nobody-home")

# json prints its arguments as one JSON array of strings (none holds a quote here).
json() { local out="" arg; for arg in "$@"; do out+="${out:+,}\"$arg\""; done; printf '[%s]' "$out"; }

for bwrap in "${bwraps[@]}"; do
  for user in root nobody; do
    # The workdir, and the filter beside it (never inside: the sandbox writes the workdir).
    dir="$work/$user/work" filter="$work/$user/filter.bpf"
    mkdir -p "$dir" "$work/nobody-home"
    prefix=()
    if [ "$user" = nobody ]; then
      chown nobody "$work/$user" "$dir" "$work/nobody-home"
      prefix=("${nobody[@]}")
    fi
    raw=$(cd "$dir" && ${prefix[@]+"${prefix[@]}"} "$bwrapkit" argv --bwrap "$bwrap" --workdir . --seccomp-file "$filter" -- /bin/true)
    if [ "$user" = nobody ]; then
      raw="$(json "${prefix[@]}" | sed 's/]$/,/')${raw#[}"
    fi
    also=()
    if [ -n "$before" ]; then
      also=(-also "the doctor before=$(json ${prefix[@]+"${prefix[@]}"} "$before" doctor --bwrap "$bwrap" --output /dev/null)")
    fi
    echo "== $bwrap as $user"
    (cd "$dir" && "$benchcmp" -rounds "$rounds" -warmup 2 -fd3 "$filter" -unit "launches per doctor" \
      -name-a "bwrapkit doctor" -name-b "one raw bwrap launch" \
      -a "$(json ${prefix[@]+"${prefix[@]}"} "$bwrapkit" doctor --bwrap "$bwrap" --output /dev/null)" -b "$raw" \
      ${also[@]+"${also[@]}"})
  done
done
