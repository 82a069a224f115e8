#!/usr/bin/env bash
# Build bubblewrap 0.12.0 as a static, reproducible binary (the recipe is this script; the
# pins it must reproduce are in install/default-manifest.json).
#
# Usage: build-static-bwrap.sh [--arch amd64|arm64] [--source FILE] [--out DIR]   (DIR: ./dist)
#
#   --arch ARCH    target: amd64 (default) or arm64. A target other than the host's dpkg
#                  architecture is cross-compiled with Debian's <triplet>-gcc and a generated
#                  meson cross file; its --version is then checked under qemu-<cpu>-static.
#   --source FILE  local bubblewrap-0.12.0.tar.xz (or Debian's bubblewrap_0.12.0.orig.tar.xz);
#                  default: download the upstream release tarball with curl.
#   --out DIR      where DIR/bwrap and DIR/bwrap-0.12.0-linux-<arch>.tar.gz are written.
#
# The tarball's sha256 is checked before anything is unpacked. The build runs in a temp dir that
# is removed on exit. Build dependencies are checked, never installed (the missing package names
# are printed). On Debian 12 (gcc 12.2.0, glibc 2.36, libcap-dev 1:2.66) the binary is
# sha256 253c70372599ac19851ffcc923acca01fe1bcf6b4b03fce789fd9fb3e2ff6270, 945328 bytes.
# arm64 cross-built on Debian 12 amd64 (gcc-aarch64-linux-gnu 12.2.0-14cross1,
# libc6-dev-arm64-cross 2.36-8cross1, libcap-dev:arm64 1:2.66-4+deb12u3+b1): sha256
# a5f501710e34a0391c1c49ed3db4fca250911d2cfbb19d899c5f7ea461bb0a5a, 731544 bytes.
# stdout: the binary's sha256, its size and a bwrapkit.manifest/v1 artifact entry; logs: stderr.
set -euo pipefail
exec </dev/null
usage_line=5
# shellcheck source=scripts/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

readonly VERSION="0.12.0"
readonly SRC_URL="https://github.com/containers/bubblewrap/releases/download/v${VERSION}/bubblewrap-${VERSION}.tar.xz"
readonly SRC_SHA256="9760d007363e3abba7c747489910f9f82d9fca53ba3bd3282e396fa3c97a3314"
readonly RELEASE_BASE="https://github.com/bwrapkit/bwrapkit/releases/download/bwrap-${VERSION}"

source_file=""
out="./dist"
arch="amd64"
while [ $# -gt 0 ]; do
  case "$1" in
    --arch) [ $# -ge 2 ] || usage; arch="$2"; shift 2 ;;
    --arch=*) arch="${1#--arch=}"; shift ;;
    --source) [ $# -ge 2 ] || usage; source_file="$2"; shift 2 ;;
    --source=*) source_file="${1#--source=}"; shift ;;
    --out) [ $# -ge 2 ] || usage; out="$2"; shift 2 ;;
    --out=*) out="${1#--out=}"; shift ;;
    -h|--help) usage 0 ;;
    *) log "unknown argument: $1"; usage ;;
  esac
done

# ---- target architecture: native or cross ------------------------------------------------------
case "$arch" in
  amd64) triplet=x86_64-linux-gnu; cpu=x86_64; machine="Advanced Micro Devices X86-64"
         gcc_pkg=gcc-x86-64-linux-gnu; binutils_pkg=binutils-x86-64-linux-gnu
         libc_pkg=libc6-dev-amd64-cross ;;
  arm64) triplet=aarch64-linux-gnu; cpu=aarch64; machine="AArch64"
         gcc_pkg=gcc-aarch64-linux-gnu; binutils_pkg=binutils-aarch64-linux-gnu
         libc_pkg=libc6-dev-arm64-cross ;;
  *) log "unsupported --arch '$arch' (want amd64 or arm64)"; usage ;;
esac
host_arch="$(dpkg --print-architecture 2>/dev/null || true)"
if [ -z "$host_arch" ]; then
  case "$(uname -m)" in
    x86_64) host_arch=amd64 ;; aarch64) host_arch=arm64 ;; *) host_arch="$(uname -m)" ;;
  esac
fi
if [ "$arch" = "$host_arch" ]; then
  cross=0; cc="gcc"; strip_cmd="strip"
else
  cross=1; cc="$triplet-gcc"; strip_cmd="$triplet-strip"; qemu="qemu-$cpu-static"
  cross_pc_libdir="/usr/lib/$triplet/pkgconfig:/usr/share/pkgconfig"
fi

# ---- build dependencies (checked, not installed) ----------------------------------------------
missing=()
need_cmd() { command -v "$1" >/dev/null 2>&1 || missing+=("$2"); }
need_cmd meson meson
need_cmd ninja ninja-build
need_cmd pkg-config pkg-config
need_cmd readelf binutils
if [ "$cross" = 0 ]; then
  need_cmd gcc gcc
  need_cmd strip binutils
else
  need_cmd "$cc" "$gcc_pkg"
  need_cmd "$strip_cmd" "$binutils_pkg"
  need_cmd "$qemu" qemu-user-static
fi
need_cmd xz xz-utils
need_cmd tar tar
need_cmd gzip gzip
need_cmd sha256sum coreutils
[ -n "$source_file" ] || need_cmd curl curl
if command -v "$cc" >/dev/null 2>&1; then
  libc_a="$("$cc" -print-file-name=libc.a)"
  if [ "$cross" = 0 ]; then
    [ -f "$libc_a" ] || missing+=(libc6-dev)
  else
    [ -f "$libc_a" ] || missing+=("$libc_pkg")
  fi
fi
libcap_ok=0
if [ "$cross" = 0 ]; then
  if command -v pkg-config >/dev/null 2>&1 && pkg-config --exists libcap 2>/dev/null; then
    libdir="$(pkg-config --variable=libdir libcap)"
    [ -f "$libdir/libcap.a" ] && libcap_ok=1
  fi
  [ "$libcap_ok" = 1 ] || missing+=(libcap-dev)
else
  if command -v pkg-config >/dev/null 2>&1 &&
     PKG_CONFIG_LIBDIR="$cross_pc_libdir" pkg-config --exists libcap 2>/dev/null; then
    libdir="$(PKG_CONFIG_LIBDIR="$cross_pc_libdir" pkg-config --variable=libdir libcap)"
    [ -f "$libdir/libcap.a" ] && libcap_ok=1
  fi
  [ "$libcap_ok" = 1 ] || missing+=("libcap-dev:$arch")
fi
if [ ${#missing[@]} -gt 0 ]; then
  pkgs="$(printf '%s\n' "${missing[@]}" | sort -u | tr '\n' ' ')"
  hint=""
  if [ "$cross" = 1 ] && ! dpkg --print-foreign-architectures 2>/dev/null | grep -qx "$arch"; then
    hint="dpkg --add-architecture $arch && apt-get update && "
  fi
  die "missing build dependencies; install them with: ${hint}apt-get install -y --no-install-recommends ${pkgs% }"
fi

asset="bwrap-${VERSION}-linux-${arch}.tar.gz"

mkdir -p "$out"
out="$(cd "$out" && pwd)"

tmp="$(mktemp -d "${TMPDIR:-/tmp}/bwrap-build.XXXXXXXX")"
trap 'rm -rf "$tmp"' EXIT

# ---- source: fetch or copy, then verify BEFORE unpacking --------------------------------------
tarball="$tmp/bubblewrap-${VERSION}.tar.xz"
if [ -n "$source_file" ]; then
  [ -f "$source_file" ] || die "--source $source_file: no such file"
  cp -- "$source_file" "$tarball"
else
  log "downloading $SRC_URL"
  curl -fsSL --proto '=https' --connect-timeout 20 --max-time 300 --retry 2 \
    -o "$tarball" "$SRC_URL" || die "download failed: $SRC_URL (use --source FILE offline)"
fi
got="$(sha256_of "$tarball")"
[ "$got" = "$SRC_SHA256" ] ||
  die "source tarball sha256 mismatch: got $got, want $SRC_SHA256 (refusing to unpack)"
log "source sha256 OK: $got"

mkdir "$tmp/src"
tar -xJf "$tarball" -C "$tmp/src"
srcdir="$tmp/src/bubblewrap-${VERSION}"
[ -f "$srcdir/meson.build" ] || die "unexpected tarball layout: no bubblewrap-${VERSION}/meson.build"

# ---- build (the pinned recipe; cross: the same plus a generated meson cross file) ---
cross_args=()
if [ "$cross" = 1 ]; then
  cat >"$tmp/cross-$arch.ini" <<EOF
[binaries]
c = '$cc'
ar = '$triplet-ar'
strip = '$strip_cmd'
pkgconfig = 'pkg-config'

[properties]
pkg_config_libdir = ['/usr/lib/$triplet/pkgconfig', '/usr/share/pkgconfig']

[host_machine]
system = 'linux'
cpu_family = '$cpu'
cpu = '$cpu'
endian = 'little'
EOF
  cross_args=(--cross-file "$tmp/cross-$arch.ini")
fi
cd "$srcdir"
export LC_ALL=C TZ=UTC SOURCE_DATE_EPOCH=0
export CFLAGS="-ffile-prefix-map=$PWD=. -O2"
export LDFLAGS="-static -Wl,--build-id=none"
unset CPPFLAGS CXXFLAGS LDLIBS GZIP PKG_CONFIG_PATH PKG_CONFIG_LIBDIR 2>/dev/null || true
log "meson setup for $arch (${cc} $("$cc" -dumpfullversion), meson $(meson --version))"
meson setup build "${cross_args[@]}" --prefer-static -Dselinux=disabled -Dman=disabled \
  -Dbash_completion=disabled -Dzsh_completion=disabled -Dtests=false >&2
ninja -C build >&2
"$strip_cmd" -o bwrap build/bwrap

readelf -lW bwrap | grep -q 'INTERP' && die "built bwrap is not static (has a program interpreter)"
got_machine="$(readelf -hW bwrap | sed -n 's/^ *Machine: *//p')"
[ "$got_machine" = "$machine" ] || die "built bwrap is for '$got_machine', want '$machine' ($arch)"
if [ "$cross" = 1 ]; then
  ver="$("$qemu" ./bwrap --version 2>&1 || true)"
else
  ver="$(./bwrap --version 2>&1 || true)"
fi
[ "$ver" = "bubblewrap $VERSION" ] || die "built bwrap --version printed '$ver', want 'bubblewrap $VERSION'"

# ---- outputs: DIR/bwrap and a deterministic tar.gz holding just bwrap ------------------------
mkdir "$tmp/stage"
install -m 0755 bwrap "$tmp/stage/bwrap"
tar --sort=name --mtime=@0 --owner=0 --group=0 --numeric-owner --format=gnu \
  -C "$tmp/stage" -cf - bwrap | gzip -n -9 >"$tmp/$asset"

install -m 0755 "$tmp/stage/bwrap" "$out/.bwrap.tmp.$$"
mv -f "$out/.bwrap.tmp.$$" "$out/bwrap"
install -m 0644 "$tmp/$asset" "$out/.$asset.tmp.$$"
mv -f "$out/.$asset.tmp.$$" "$out/$asset"

sha="$(sha256_of "$out/bwrap")"
size="$(stat -c %s "$out/bwrap")"
log "wrote $out/bwrap and $out/$asset"
printf 'sha256 %s\n' "$sha"
printf 'size %s\n' "$size"
printf 'archive %s sha256 %s\n' "$asset" "$(sha256_of "$out/$asset")"
printf '{"version":"%s","arch":"%s","sha256":"%s","size":%s,"sources":[{"url":"%s/%s","member":"bwrap"}]}\n' \
  "$VERSION" "$arch" "$sha" "$size" "$RELEASE_BASE" "$asset"
