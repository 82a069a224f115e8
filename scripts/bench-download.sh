#!/usr/bin/env bash
# A real download of about 100 MB, direct and through `bwrapkit run --net-allow` (the
# sandbox's bridge and bwrapkit's allowlist proxy), alternating: the speeds curl itself
# reports, their medians and ratio. The file is the smallest package of 100 MiB or more
# in this host's own apt sources (nothing here names a mirror); no mirror, no figure.
# usage: bench-download.sh BWRAPKIT [ROUNDS]
set -euo pipefail
exec </dev/null
# shellcheck source=scripts/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
usage_line=6

[ $# -ge 1 ] || usage
bwrapkit=$(realpath "$1") rounds=${2:-10}
if ! command -v curl >/dev/null || ! command -v apt-cache >/dev/null; then
  log "skipped: needs curl and apt"
  exit 0
fi

package=$(apt-cache dumpavail 2>/dev/null | awk -v arch="$(dpkg --print-architecture)" '
  /^Package:/ {p = $2} /^Architecture:/ {a = $2}
  /^Size:/ && a == arch && $2 >= 104857600 {print $2, p}' | sort -n | head -1 | cut -d' ' -f2)
[ -n "$package" ] || { log "skipped: apt knows no package of 100 MiB or more (apt-get update?)"; exit 0; }
url=$(apt-get download --print-uris "$package" 2>/dev/null | awk '{print $1}' | tr -d "'")
case "$url" in
  http://*) ;;
  *) log "skipped: $package comes from ${url%%:*}, not a plain http mirror"; exit 0 ;;
esac
authority=${url#http://}
authority=${authority%%/*}

work=$(mktemp -d)
trap 'XDG_CACHE_HOME=$work/xdg "$bwrapkit" home prune --all >/dev/null 2>&1 || true; rm -rf "$work"' EXIT
mkdir -p "$work/xdg" "$work/project" # the project apart from bwrapkit's own state
cd "$work/project"
# -f: a refusal or an error ends the benchmark, never counts as a fast round; the output is curl's own
# speed of the body, bytes a second, so neither side counts the sandbox's start.
fetch=(-s -f -o /dev/null -w '%{speed_download}')
direct() { env -u http_proxy -u HTTP_PROXY curl "${fetch[@]}" "$url"; }
sandboxed() { XDG_CACHE_HOME=$work/xdg "$bwrapkit" run --workdir . --net-allow "$authority" -- curl "${fetch[@]}" "$url" 2>/dev/null; }
# The mirror's cache warm for both, and the sandbox's path proven before timing.
direct >/dev/null || { log "skipped: the mirror did not serve $package"; exit 0; }
sandboxed >/dev/null || die "the download through bwrapkit run --net-allow failed: $bwrapkit run --workdir . --net-allow $authority -- curl -f $url"

: >"$work/direct"
: >"$work/sandboxed"
for _ in $(seq "$rounds"); do
  { direct || die "a direct round failed"; echo; } >>"$work/direct"
  { sandboxed || die "a round through bwrapkit run --net-allow failed"; echo; } >>"$work/sandboxed"
done
median() { sort -n "$1" | awk '{v[NR] = $1} END {print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}'; }
md=$(median "$work/direct") ms=$(median "$work/sandboxed")
size=$(apt-cache show --no-all-versions "$package" | awk '/^Size:/ {print $2; exit}')
awk -v d="$md" -v s="$ms" -v n="$rounds" -v size="$size" 'BEGIN {
  printf "a %.0f MB package from this host'"'"'s apt mirror, %d rounds each, alternating (curl'"'"'s own speed of the body):\n", size / 1e6, n
  printf "  direct                                    median %7.1f MB/s\n", d / 1e6
  printf "  bwrapkit run --net-allow (bridge, proxy)  median %7.1f MB/s\n", s / 1e6
  printf "  through the proxy: %.2f of direct (goal: at least 0.8)\n", s / d
}'
