#!/usr/bin/env bash
# Install what CI needs on a fresh Debian 12 (bookworm), as root. Idempotent.
#
# Usage: ci-deps.sh
#
#   bubblewrap                      Debian's bwrap 0.8.0 (/usr/bin/bwrap), the system bwrap under test
#   meson ninja-build gcc libc6-dev  static bwrap build (build-static-bwrap.sh); libc6-dev: libc.a
#   libcap-dev pkg-config binutils   libcap.a + libcap.pc; strip/readelf
#   xz-utils curl ca-certificates    source tarball handling and downloads
#   prometheus                       promtool (checks the doctor's --format prometheus output, the rules)
#   prometheus-node-exporter         make fleet scrapes the doctor's textfile with it (on loopback)
#   ansible-core                     Debian's ansible-core on the host, as the role's README assumes
#                                    (make fleet runs the same package inside its guests)
#   systemd systemd-container        systemd-nspawn: make fleet boots Debian 12 guests with it
#   python3-seccomp strace           Debian's seccomp bindings and strace, for tracing the sandbox
#   iproute2 util-linux              ip; setpriv/unshare for the as-nobody and namespace tests
#   git make                         repo root lookup, Makefile targets
#   debootstrap                      scripts/debian-rootfs.sh: the Debian rootfs make hosts and make fleet boot
#   docker.io podman lxc uidmap      make hosts runs the doctor inside real containers of each engine
#   systemd-container                (uidmap: newuidmap for rootless Podman and unprivileged LXC;
#                                    systemd-nspawn). No service of theirs is started: a
#                                    policy-rc.d refuses it during the install, and make hosts
#                                    starts its own dockerd on a scratch socket
#   python3-pytest                   the pytest workload test (run's live workloads; node is
#                                    used wherever it already is, see the npm note below)
#   the shellcheck package          make lint checks the scripts with it
#   gcc-aarch64-linux-gnu binutils-aarch64-linux-gnu libc6-dev-arm64-cross libcap-dev:arm64
#   qemu-user-static                 the arm64 static build (cross) and its --version check
#   npm (only if no npm on PATH)     fetch-codex-bwrap.sh's `npm pack`. Not installed when npm is
#                                    already there: NodeSource's nodejs package conflicts with
#                                    Debian's npm (it ships its own).
# Not installed here: the Go toolchain (go.mod wants a newer Go than Debian 12's golang-go 1.19;
# this project's machines have it at /usr/local/go, which .ci/run puts on PATH).
set -euo pipefail
exec </dev/null
# shellcheck source=scripts/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

case "${1:-}" in
  "") ;;
  -h|--help) sed -n '2,4p' "$0" | sed 's/^# //' >&2; exit 0 ;;
  *) die "unknown argument: $1 (usage: ci-deps.sh)" ;;
esac

[ "$(id -u)" = 0 ] || die "must run as root (apt-get install)"
if [ -r /etc/os-release ]; then
  # shellcheck source=/dev/null
  . /etc/os-release
  if [ "${ID:-}" != debian ] || [ "${VERSION_CODENAME:-}" != bookworm ]; then
    log "warning: written for Debian 12 (bookworm), this is ${PRETTY_NAME:-unknown}"
  fi
fi

pkgs=(
  bubblewrap
  meson ninja-build gcc libc6-dev libcap-dev pkg-config binutils
  xz-utils curl ca-certificates
  prometheus prometheus-node-exporter ansible-core
  systemd systemd-container python3-seccomp strace
  iproute2 util-linux
  git make
  debootstrap
  docker.io podman lxc uidmap systemd-container
  python3-pytest python3-pip
  shellcheck
)
command -v npm >/dev/null 2>&1 || pkgs+=(npm)

# The arm64 static bwrap is cross-built (build-static-bwrap.sh --arch arm64) to prove its pin.
if [ "$(dpkg --print-architecture)" = amd64 ] && ! dpkg --print-foreign-architectures | grep -qx arm64; then
  log "dpkg --add-architecture arm64 (for libcap-dev:arm64)"
  dpkg --add-architecture arm64
fi
if dpkg --print-foreign-architectures | grep -qx arm64; then
  pkgs+=(gcc-aarch64-linux-gnu binutils-aarch64-linux-gnu libc6-dev-arm64-cross libcap-dev:arm64 qemu-user-static)
fi

export DEBIAN_FRONTEND=noninteractive
log "apt-get update"
apt-get -q update
exporter_was_installed=$(dpkg-query -W -f '${Status}' prometheus-node-exporter 2>/dev/null || true)
# Packages whose services must not start here (docker.io, lxc): Debian's own mechanism.
own_policy=0
if [ ! -e /usr/sbin/policy-rc.d ]; then
  printf '#!/bin/sh\n# bwrapkit ci-deps: no service starts during this install\nexit 101\n' >/usr/sbin/policy-rc.d
  chmod 0755 /usr/sbin/policy-rc.d
  own_policy=1
fi
log "apt-get install ${pkgs[*]}"
installed=1
apt-get -q install -y --no-install-recommends "${pkgs[@]}" || installed=0
if [ "$own_policy" = 1 ]; then rm -f /usr/sbin/policy-rc.d; fi
[ "$installed" = 1 ] || die "apt-get install failed"
# Debian's package starts node_exporter on every interface (:9100) where systemd runs; make
# fleet starts its own on loopback, so one this script brought in is stopped and disabled.
if [ "$exporter_was_installed" != "install ok installed" ] && [ -d /run/systemd/system ]; then
  log "stopping and disabling the packaged prometheus-node-exporter.service (make fleet runs its own)"
  systemctl disable --now prometheus-node-exporter.service
fi

for c in bwrap meson ninja gcc pkg-config strip xz curl promtool prometheus-node-exporter ansible-playbook \
  systemd-analyze systemd-nspawn nsenter strace ip setpriv git make shellcheck npm dockerd podman lxc-start newuidmap; do
  command -v "$c" >/dev/null 2>&1 || die "$c still missing after install"
done
/usr/bin/python3 -c 'import seccomp' || die "python3-seccomp still missing after install"
log "ok: $(bwrap --version), meson $(meson --version), npm $(npm --version)"
