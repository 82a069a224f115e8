#!/usr/bin/env bash
# The bwrap-based peers make bench compares bwrapkit with, each from the registries this
# project's machines reach, pinned to the versions the figures were taken with.
#
# Usage: get-peers.sh [--out DIR]        (default DIR: <repo root>/.cache/peers)
#
#   DIR/codex      Codex's CLI (`codex sandbox -- CMD` is its Linux sandbox), extracted from
#                  `npm pack @openai/codex@0.171.0-linux-x64` (about 170 MB, kept in DIR)
#   DIR/srt/       Anthropic's sandbox-runtime 0.0.83 (npm), run as DIR/srt/node_modules/.bin/srt;
#                  it needs socat and ripgrep on Linux
#   firejail       Debian's firejail (not bwrap-based; a familiar reference point)
# Debian's packages are installed with apt-get when this runs as root; otherwise the missing
# ones are named and those peers left out. Each peer's path is printed on stdout as
# NAME=PATH; logs go to stderr. nsjail and minijail are not packaged for Debian 12.
set -euo pipefail
exec </dev/null
# shellcheck source=scripts/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

readonly CODEX_PKG="@openai/codex@0.171.0-linux-x64"
readonly CODEX_MEMBER="package/vendor/x86_64-unknown-linux-musl/bin/codex"
readonly SRT_PKG="@anthropic-ai/sandbox-runtime@0.0.83"

parse_out_only "" "$@"
[ -n "$out" ] || out=$(repo_cache peers)
mkdir -p "$out"
out="$(cd "$out" && pwd)"

missing=()
for pkg in socat ripgrep firejail; do
  dpkg-query -W -f '${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
done
if [ ${#missing[@]} -gt 0 ]; then
  if [ "$(id -u)" = 0 ]; then
    log "apt-get install ${missing[*]}"
    DEBIAN_FRONTEND=noninteractive apt-get -q install -y --no-install-recommends "${missing[@]}" >&2
  else
    log "not root: ${missing[*]} missing (apt-get install ${missing[*]}); peers needing them are left out"
  fi
fi

if [ "$(dpkg --print-architecture)" = amd64 ]; then
  if [ ! -x "$out/codex" ]; then
    command -v npm >/dev/null || die "npm missing (apt-get install npm)"
    tmp=$(mktemp -d "$out/.codex.XXXXXX")
    trap 'rm -rf "$tmp"' EXIT
    log "npm pack $CODEX_PKG (about 170 MB)"
    (cd "$tmp" && timeout 600 npm pack --silent --cache "$tmp/npm-cache" "$CODEX_PKG" >/dev/null)
    tar -xzf "$tmp"/openai-codex-*.tgz -C "$tmp" "$CODEX_MEMBER"
    chmod 0755 "$tmp/$CODEX_MEMBER"
    mv "$tmp/$CODEX_MEMBER" "$out/codex"
    rm -rf "$tmp"
    trap - EXIT
  fi
  printf 'codex=%s\n' "$out/codex"
else
  log "codex: only the amd64 build is fetched here"
fi

if [ ! -x "$out/srt/node_modules/.bin/srt" ]; then
  command -v npm >/dev/null || die "npm missing (apt-get install npm)"
  log "npm install $SRT_PKG"
  rm -rf "$out/srt.tmp" && mkdir -p "$out/srt.tmp"
  timeout 600 npm install --silent --no-audit --no-fund --cache "$out/srt.tmp/.npm-cache" --prefix "$out/srt.tmp" "$SRT_PKG" >&2
  rm -rf "$out/srt.tmp/.npm-cache" "$out/srt"
  mv "$out/srt.tmp" "$out/srt"
fi
command -v socat >/dev/null && printf 'srt=%s\n' "$out/srt/node_modules/.bin/srt"
command -v firejail >/dev/null && printf 'firejail=%s\n' "$(command -v firejail)"
exit 0
