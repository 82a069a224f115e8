# shellcheck shell=bash
# Shared by the scripts in this directory: `. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"`.
# Messages go to stderr, prefixed with the script's name; stdout is for results only.

script_name="$(basename "$0" .sh)"

log() { printf '%s: %s\n' "$script_name" "$*" >&2; }
die() { log "error: $*"; exit 1; }
# usage prints the script's usage line (line $usage_line of its header, default 4) and exits.
usage() { sed -n "${usage_line:-4}p" "$0" | sed 's/^# //' >&2; exit "${1:-2}"; }
sha256_of() { sha256sum "$1" | cut -d' ' -f1; }
