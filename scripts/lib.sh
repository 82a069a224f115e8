# shellcheck shell=bash
# Shared by the scripts in this directory: `. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"`.
# Messages go to stderr, prefixed with the script's name; stdout is for results only.

script_name="$(basename "$0" .sh)"

log() { printf '%s: %s\n' "$script_name" "$*" >&2; }
die() { log "error: $*"; exit 1; }
# usage prints the script's usage line (line $usage_line of its header, default 4) and exits.
usage() { sed -n "${usage_line:-4}p" "$0" | sed 's/^# //' >&2; exit "${1:-2}"; }
sha256_of() { sha256sum "$1" | cut -d' ' -f1; }

# parse_out_only sets $out from the only option these fetchers take, --out DIR (default $1),
# and handles --help and anything unknown.
# shellcheck disable=SC2034 # out is set for the sourcing script
parse_out_only() {
  out="$1"
  shift
  while [ $# -gt 0 ]; do
    case "$1" in
      --out) [ $# -ge 2 ] || usage; out="$2"; shift 2 ;;
      --out=*) out="${1#--out=}"; shift ;;
      -h|--help) usage 0 ;;
      *) log "unknown argument: $1"; usage ;;
    esac
  done
}

# repo_cache NAME prints <repo root>/.cache/NAME, the default home of what a script fetches
# or builds (the root from git, else the parent of scripts/).
repo_cache() {
  local scripts root
  scripts="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
  root="$(git -C "$scripts" rev-parse --show-toplevel 2>/dev/null)" || root="$(dirname "$scripts")"
  printf '%s/.cache/%s\n' "$root" "$1"
}
