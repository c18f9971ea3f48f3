#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# make dkms-install / make dkms-uninstall: register cgroup_energy.ko with DKMS
# so that it is rebuilt for every kernel the machine installs.
#
#   sh dist/dkms.sh install     copy the module sources to
#                               $SRCTREE/cgroup-energy-<version>, then
#                               dkms add, build and install for $KVER.
#                               Another registered version (an upgrade or a
#                               downgrade) or the same one (a reinstall from
#                               the current sources) is removed first.
#   sh dist/dkms.sh uninstall   dkms remove every registered version, delete
#                               their sources. A loaded module stays loaded
#                               until `umount /sys/fs/cgroup_energy; rmmod
#                               cgroup_energy` or the next boot.
#   sh dist/dkms.sh sources DIR copy the module sources to
#                               DIR/cgroup-energy-<version>, nothing else
#                               (the Debian package's build: debian/rules).
#
# Environment (all optional):
#   KVER       kernel to build for now (default: the running one, uname -r);
#              later kernels are built by DKMS's autoinstall when installed
#   KDIR       that kernel's build tree (default: DKMS looks in
#              /lib/modules/$KVER/build), passed as --kernelsourcedir
#   SRCTREE    where the sources go (default /usr/src, DKMS's source tree)
#   DKMS       the dkms command (default: dkms)
#   DKMS_ARGS  extra arguments for every dkms call, e.g. a private tree for
#              tests: "--dkmstree DIR --installtree DIR --no-depmod"
#   mok_signing_key, mok_certificate, sign_file
#              DKMS's own signing settings (default: /var/lib/dkms/mok.key
#              and mok.pub, created on first use; /etc/dkms/framework.conf)
set -eu

NAME=cgroup-energy
MODULE=cgroup_energy
REPO=$(cd "$(dirname "$0")/.." && pwd)
KVER=${KVER:-$(uname -r)}
KDIR=${KDIR:-}
SRCTREE=${SRCTREE:-/usr/src}
DKMS=${DKMS:-dkms}
DKMS_ARGS=${DKMS_ARGS:-}

say() { echo "cgroup-energy: $*"; }
die() { echo "cgroup-energy: $*" >&2; exit 1; }

# The module's sources, exactly what DKMS needs to build it: Kbuild at the
# top (no Makefile: kbuild reads Kbuild), kmod/ (with the feature probes,
# probes.mk) and include/, dkms.conf. The test build's emulated hardware
# lives in tests/emu/, not here.
FILES="Kbuild dkms.conf include/*.h kmod/*.c kmod/*.h kmod/*.mk"

version() {
	sed -n 's/^PACKAGE_VERSION="\{0,1\}\([^"]*\)"\{0,1\}$/\1/p' "$REPO/dkms.conf"
}

dkms_() {
	# shellcheck disable=SC2086
	$DKMS $DKMS_ARGS --sourcetree "$SRCTREE" "$@"
}

# Versions of $NAME that DKMS knows, one per line. dkms 3 prints
# "name/version, kver, arch: state" or "name/version: added"; dkms 2 printed
# "name, version, kver, arch: state".
registered() {
	dkms_ status -m "$NAME" 2>/dev/null |
		sed -n -e "s|^$NAME/\([^,:]*\)[,:].*|\1|p" \
		       -e "s|^$NAME, \([^,:]*\)[,:].*|\1|p" | sort -u
}

remove_version() { # remove_version VERSION
	say "dkms remove $NAME/$1"
	dkms_ remove -m "$NAME" -v "$1" --all ||
		die "dkms remove -m $NAME -v $1 --all failed"
	rm -rf "${SRCTREE:?}/$NAME-$1"
}

# copy_sources DIR: the module sources (FILES) into
# DIR/$NAME-<version>, replacing what was there; sets ver and dst.
copy_sources() {
	ver=$(version)
	[ -n "$ver" ] || die "no PACKAGE_VERSION in $REPO/dkms.conf"
	hver=$(sed -n 's/^#define CGE_VERSION[[:space:]]*"\(.*\)"/\1/p' \
		"$REPO/include/cgroup_energy.h")
	[ "$ver" = "$hver" ] ||
		die "dkms.conf PACKAGE_VERSION $ver != CGE_VERSION $hver"
	dst=$1/$NAME-$ver
	say "copying the module sources to $dst"
	rm -rf "$dst"
	mkdir -p "$dst"
	(cd "$REPO" && for f in $FILES; do
		[ -e "$f" ] || die "missing source file $f"
		mkdir -p "$dst/$(dirname "$f")"
		cp -p "$f" "$dst/$f"
	done)
}

need_dkms() {
	command -v "${DKMS%% *}" >/dev/null 2>&1 ||
		die "dkms not found: apt-get install dkms"
}

do_install() {
	need_dkms
	kdir=${KDIR:-/lib/modules/$KVER/build}
	if [ ! -d "$kdir" ]; then
		die "no kernel build tree for $KVER at $kdir; install it: " \
			"apt-get install linux-headers-$KVER"
	fi
	for v in $(registered); do
		remove_version "$v"
	done
	copy_sources "$SRCTREE"
	set -- -m "$NAME" -v "$ver" -k "$KVER"
	[ -n "$KDIR" ] && set -- "$@" --kernelsourcedir "$KDIR"
	dkms_ add -m "$NAME" -v "$ver"
	dkms_ build "$@" || {
		rc=$?
		[ $rc = 77 ] && die "DKMS skipped $KVER: this kernel lacks what" \
			"the module needs (BUILD_EXCLUSIVE in dkms.conf);" \
			"the sources stay registered for other kernels"
		die "dkms build failed for $KVER (exit $rc); see its make.log above"
	}
	dkms_ install "$@"
	say "installed $NAME $ver for $KVER; DKMS rebuilds it for new kernels"
	say "load it: modprobe $MODULE; mount it: systemctl enable --now" \
		"sys-fs-cgroup_energy.mount (after make install)"
	if command -v mokutil >/dev/null 2>&1 &&
	   mokutil --sb-state 2>/dev/null | grep -q 'SecureBoot enabled'; then
		say "Secure Boot is on: the module is signed with DKMS's MOK key;" \
			"enroll it once if not done yet (docs/install.md: Secure Boot)"
	fi
}

do_uninstall() {
	need_dkms
	vers=$(registered)
	[ -n "$vers" ] || say "no $NAME version registered with DKMS"
	for v in $vers; do
		remove_version "$v"
	done
	# sources copied by an install whose dkms add never ran
	ver=$(version)
	[ -f "$SRCTREE/$NAME-$ver/dkms.conf" ] && rm -rf "${SRCTREE:?}/$NAME-$ver"
	if [ -d "/sys/module/$MODULE" ] && [ -z "$DKMS_ARGS" ]; then
		say "the module is still loaded: umount /sys/fs/cgroup_energy;" \
			"rmmod $MODULE (or reboot)"
	fi
	return 0
}

case "${1:-}" in
install) do_install ;;
uninstall) do_uninstall ;;
sources) [ $# = 2 ] || die "usage: sh dist/dkms.sh sources DIR"
	copy_sources "$2" ;;
*) die "usage: sh dist/dkms.sh install|uninstall|sources DIR" ;;
esac
