#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# Install the Debian packages that building and testing need.
# Idempotent: only missing packages are installed. Needs root for apt-get.
set -eu

PKGS="gcc make perl bc flex bison libelf-dev libssl-dev dwarves cpio kmod \
xz-utils zstd rsync qemu-system-x86 busybox-static python3 python3-pytest \
linux-source-6.1 valgrind prometheus dkms openssl systemd \
linux-perf rt-tests bpftrace debootstrap"

missing=""
for p in $PKGS; do
	dpkg-query -W -f='${Status}\n' "$p" 2>/dev/null | grep -q '^install ok installed' ||
		missing="$missing $p"
done
[ -z "$missing" ] && exit 0

if [ "$(id -u)" != 0 ]; then
	echo "cgroup-energy: missing packages:$missing" >&2
	echo "cgroup-energy: run as root, or: sudo apt-get install$missing" >&2
	exit 1
fi
echo "cgroup-energy: installing$missing"
export DEBIAN_FRONTEND=noninteractive
apt-get update -q >/dev/null
# shellcheck disable=SC2086
apt-get install -y -q --no-install-recommends $missing >/dev/null
