#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# Install the Debian packages that building and testing need.
# Idempotent: only missing packages are installed. Needs root for apt-get.
#
# QEMU comes from bookworm-backports (10.0): Debian 12's 7.2 runs under
# multi-threaded TCG a stale int3 after the kernel patches its own text, and
# hangs or oopses the guest with or without our module
# (tests/vm/repro/mttcg-int3/README.md has both versions' figures).
set -eu

PKGS="gcc make perl bc flex bison libelf-dev libssl-dev dwarves cpio kmod \
xz-utils zstd rsync busybox-static python3 python3-pytest \
linux-source-6.1 valgrind prometheus dkms openssl systemd \
linux-perf rt-tests bpftrace debootstrap"
QEMU_PKG=qemu-system-x86
QEMU_MIN=1:10.0
BPO=/etc/apt/sources.list.d/cgroup-energy-bookworm-backports.sources

missing=""
for p in $PKGS; do
	dpkg-query -W -f='${Status}\n' "$p" 2>/dev/null | grep -q '^install ok installed' ||
		missing="$missing $p"
done
qver=$(dpkg-query -W -f='${Status} ${Version}\n' $QEMU_PKG 2>/dev/null |
	sed -n 's/^install ok installed //p')
qemu_ok=0
[ -n "$qver" ] && dpkg --compare-versions "$qver" ge "$QEMU_MIN" && qemu_ok=1
[ -z "$missing" ] && [ $qemu_ok = 1 ] && exit 0

if [ "$(id -u)" != 0 ]; then
	echo "cgroup-energy: missing packages:$missing" \
		"$([ $qemu_ok = 1 ] || echo "$QEMU_PKG (>= $QEMU_MIN)")" >&2
	echo "cgroup-energy: run as root: sh tests/deps.sh" >&2
	exit 1
fi
export DEBIAN_FRONTEND=noninteractive
if [ $qemu_ok = 0 ] && ! grep -rqs '^[^#]*bookworm-backports' \
	/etc/apt/sources.list /etc/apt/sources.list.d/; then
	echo "cgroup-energy: adding bookworm-backports to apt's sources ($BPO)"
	cat >"$BPO" <<SRC
Types: deb
URIs: http://deb.debian.org/debian
Suites: bookworm-backports
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
SRC
fi
apt-get update -q >/dev/null
if [ -n "$missing" ]; then
	echo "cgroup-energy: installing$missing"
	# shellcheck disable=SC2086
	apt-get install -y -q --no-install-recommends $missing >/dev/null
fi
if [ $qemu_ok = 0 ]; then
	echo "cgroup-energy: installing $QEMU_PKG from bookworm-backports" \
		"(installed: ${qver:-none})"
	apt-get install -y -q --no-install-recommends -t bookworm-backports \
		$QEMU_PKG >/dev/null
	qver=$(dpkg-query -W -f='${Version}' $QEMU_PKG)
	if ! dpkg --compare-versions "$qver" ge "$QEMU_MIN"; then
		echo "cgroup-energy: $QEMU_PKG $qver installed; the tests need" \
			">= $QEMU_MIN (bookworm-backports)" >&2
		exit 1
	fi
fi
