#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# Install the Debian packages that building and testing need.
# Idempotent: only missing packages are installed. Needs root for apt-get.
#
# The tests need QEMU >= 10.0: Debian 12's 7.2 runs under multi-threaded TCG
# a stale int3 after the kernel patches its own text, and hangs or oopses the
# guest with or without our module (tests/vm/repro/mttcg-int3/README.md has
# both versions' figures).  On Debian 12 (VERSION_CODENAME=bookworm in
# /etc/os-release) it comes from bookworm-backports, whose apt source is added
# if `apt-cache policy` shows no source for that suite (with the URI of the
# archive that apt's sources name for bookworm); on any other release it
# comes from the release's own suites, and an installed QEMU older than 10.0
# is an error.
set -eu

# libmicrohttpd-dev: energystat --listen's HTTP server, GNU libmicrohttpd, a
# small C library made to embed an HTTP server (thread per connection or
# select/epoll; it parses requests, handles keep-alive, limits and timeouts).
# zlib1g-dev: energystat --listen gzips its answers with zlib (deflateInit2's
# gzip wrapper), the reference deflate, instead of compression by hand.
# libgnutls28-dev, libyaml-dev, libcrypt-dev: energystat --web.config.file
# (TLS and basic auth of --listen): GnuTLS, the TLS of libmicrohttpd, checks
# the certificate and a client's; libyaml parses the file; libxcrypt checks
# passwords against their bcrypt hashes.
# apache2-utils: htpasswd -B, the bcrypt hashes of those tests (made by
# Apache's bcrypt, another than the libxcrypt that energystat uses).
# prometheus-node-exporter: the textfile route's test serves the file that
# dist/systemd/cgroup-energy-textfile.service writes with a real node_exporter.
# fdisk (sfdisk) and e2fsprogs (mke2fs -d): the package test's server disk
# (tests/vm/server.py), partitioned and filled with no loop device.
# libglib2.0-dev and pkgconf: make bench's QEMU plugin (bench/insncount.c),
# whose API header includes glib.h.
# libjansson-dev: energystat's names (userspace/names.c) parse the container
# runtimes' config.json with Jansson, a small strict JSON parser (RFC 8259:
# invalid UTF-8 and NUL refused, duplicate keys refused on request).
# python3-yaml: tests/test_deploy.py and tests/test_docs.py parse the
# Kubernetes manifests and write promtool's rule tests (PyYAML, Debian's
# YAML library for Python).
# strace: what energystat does while it serves, against the filters of
# energystat-exporter.service (tests/test_exporter_service.py), as systemd
# cannot run the unit on the host.
# tmux: tests/test_energystat.py runs the interactive live view in a real
# terminal of 80 and 200 columns, sends it keys and reads the screen back.
PKGS="gcc make perl bc flex bison libelf-dev libssl-dev dwarves cpio kmod \
xz-utils zstd rsync busybox-static python3 python3-pytest \
linux-source-6.1 valgrind prometheus dkms openssl systemd \
linux-perf rt-tests bpftrace debootstrap debhelper dh-dkms lintian libmicrohttpd-dev \
iproute2 prometheus-node-exporter fdisk e2fsprogs libglib2.0-dev pkgconf \
libjansson-dev python3-yaml zlib1g-dev strace tmux \
libgnutls28-dev libyaml-dev libcrypt-dev apache2-utils"
QEMU_PKG=qemu-system-x86
QEMU_MIN=1:10.0
BPO=/etc/apt/sources.list.d/cgroup-energy-bookworm-backports.sources
WHY="QEMU 7.2's multi-threaded TCG runs a stale int3 after the kernel\
 patches its text (see tests/vm/repro/mttcg-int3/)"

missing=""
for p in $PKGS; do
	dpkg-query -W -f='${Status}\n' "$p" 2>/dev/null | grep -q ' ok installed$' ||
		missing="$missing $p"
done
qver=$(dpkg-query -W -f='${Status} ${Version}\n' $QEMU_PKG 2>/dev/null |
	sed -n 's/^[a-z]* ok installed //p')
qemu_ok=0
[ -n "$qver" ] && dpkg --compare-versions "$qver" ge "$QEMU_MIN" && qemu_ok=1
[ -z "$missing" ] && [ $qemu_ok = 1 ] && exit 0

codename=$(sed -n 's/^VERSION_CODENAME=//p' /etc/os-release 2>/dev/null |
	tr -d "\"'")
if [ $qemu_ok = 0 ] && [ -n "$qver" ] && [ "$codename" != bookworm ]; then
	echo "cgroup-energy: QEMU >= 10.0 is needed (installed: $QEMU_PKG" \
		"$qver on ${codename:-an unknown release}; this script fetches" \
		"10.0 only on Debian 12 bookworm, from bookworm-backports) because" \
		"$WHY." >&2
	exit 1
fi

if [ "$(id -u)" != 0 ]; then
	echo "cgroup-energy: missing packages:$missing" \
		"$([ $qemu_ok = 1 ] || echo "$QEMU_PKG (>= $QEMU_MIN)")" >&2
	echo "cgroup-energy: run as root: sh tests/deps.sh" >&2
	exit 1
fi
export DEBIAN_FRONTEND=noninteractive
# On a freshly booted machine apt-daily and unattended-upgrades hold apt's
# locks for a while: installs wait up to LOCK_WAIT s for dpkg's lock
# (DPkg::Lock::Timeout); apt-get update, which fails at once on the lists
# lock whatever that option says, is retried every 5 s as long.
LOCK_WAIT=120
apt_update() {
	waited=0
	while ! err=$(apt-get update -q 2>&1 >/dev/null); do
		case $err in
		*/lists/lock*) [ $waited -lt $LOCK_WAIT ] ;;
		*) false ;;
		esac || { echo "$err" >&2; return 1; }
		[ $waited = 0 ] && echo "cgroup-energy: another apt holds" \
			"apt's lists; waiting up to $LOCK_WAIT s" >&2
		sleep 5
		waited=$((waited + 5))
	done
}
apt_install() {
	apt-get install -y -q --no-install-recommends \
		-o DPkg::Lock::Timeout=$LOCK_WAIT "$@" >/dev/null
}
apt_update
# apt-cache policy lists the sources whose indexes apt has fetched (hence
# after apt-get update), each with a "release" line giving its archive (a=)
# and codename (n=).
has_bpo() {
	apt-cache policy | grep -Eq \
		'^[[:space:]]*release .*[ ,][an]=bookworm-backports(,|$)'
}
# The URI of Debian's archive as apt's sources name it, by the rule of
# tests/vm/archive.py (python3 may not be installed yet): CGE_ARCHIVE, else
# the first deb source of suite $1, else of $1-updates, else of $1-backports.
archive_uri() {
	if [ -n "${CGE_ARCHIVE:-}" ]; then
		echo "$CGE_ARCHIVE"
		return
	fi
	# shellcheck disable=SC2016 # apt's format fields, not the shell's
	apt-get indextargets --no-release-info \
		--format '$(TARGET_OF) $(RELEASE) $(REPO_URI)' |
		awk -v c="$1" '$1 == "deb" && !($2 in u) && $3 !~ /^cdrom:/ {
			u[$2] = $3
		}
		END {
			n = split(c " " c "-updates " c "-backports", s, " ")
			for (i = 1; i <= n; i++)
				if (s[i] in u) {
					sub(/\/$/, "", u[s[i]])
					print u[s[i]]
					exit
				}
		}'
}
if [ $qemu_ok = 0 ] && [ "$codename" = bookworm ] && ! has_bpo; then
	uri=$(archive_uri bookworm)
	if [ -z "$uri" ]; then
		echo "cgroup-energy: apt's sources name no Debian archive for" \
			"bookworm (nor -updates, -backports) to add" \
			"bookworm-backports from; set CGE_ARCHIVE to its URI" >&2
		exit 1
	fi
	echo "cgroup-energy: adding bookworm-backports to apt's sources ($BPO)"
	cat >"$BPO" <<SRC
Types: deb
URIs: $uri
Suites: bookworm-backports
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
SRC
	apt_update
fi
if [ -n "$missing" ]; then
	echo "cgroup-energy: installing$missing"
	# shellcheck disable=SC2086
	apt_install $missing
fi
if [ $qemu_ok = 0 ]; then
	if [ "$codename" = bookworm ]; then
		echo "cgroup-energy: installing $QEMU_PKG from bookworm-backports" \
			"(installed: ${qver:-none})"
		apt_install -t bookworm-backports $QEMU_PKG
	else
		echo "cgroup-energy: installing $QEMU_PKG"
		apt_install $QEMU_PKG
	fi
	qver=$(dpkg-query -W -f='${Version}' $QEMU_PKG)
	if ! dpkg --compare-versions "$qver" ge "$QEMU_MIN"; then
		echo "cgroup-energy: QEMU >= 10.0 is needed (installed:" \
			"$QEMU_PKG $qver) because $WHY." >&2
		exit 1
	fi
fi
