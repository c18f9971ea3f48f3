#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# make install / make uninstall: the energystat tool and its man page
# (userspace/Makefile), the boot integration (systemd mount unit,
# modules-load.d entry), the exporter's service, its options file and its
# accounts (sysusers.d), the node_exporter textfile service and timer (none
# of them enabled), an example modprobe.d file, the README and the
# documentation, dashboard and deploy files it links. The module itself is installed with
# DKMS: make dkms-install. The energystat package installs the same files
# (debian/rules).
#
#   sh dist/install.sh install | uninstall
#
# Environment: PREFIX (default /usr/local), DESTDIR (staging root, default
# none), and the directories, each under $PREFIX by default:
#   BINDIR          bin                       energystat
#   MANDIR          share/man/man1            energystat.1
#   SYSTEMDUNITDIR  lib/systemd/system        sys-fs-cgroup_energy.mount,
#                                             energystat-exporter.service,
#                                             cgroup-energy-textfile.service,
#                                             cgroup-energy-textfile.timer
#   MODULESLOADDIR  lib/modules-load.d        cgroup-energy.conf
#   SYSUSERSDIR     lib/sysusers.d            energystat.conf
#   SYSCONFDIR      etc (/etc for PREFIX=/usr) default/energystat-exporter
#   DOCDIR          share/doc/cgroup-energy   modprobe.d/cgroup-energy.conf,
#                                             README.md, docs/*.md, the
#                                             dashboard and deploy files in
#                                             examples/
# systemd reads units, modules-load.d and sysusers.d in /usr/local/lib as in
# /usr/lib and /etc. Without DESTDIR, install runs systemd-sysusers for the
# exporter's accounts (the mount unit names their group); uninstall keeps
# them, as removing a Debian package does. BINDIR and MANDIR are fixed by userspace/Makefile, which installs the
# tool.
#
# $DOCDIR/INSTALLED lists every file installed and every directory install
# created; uninstall removes exactly those (directories only if empty).
set -eu

REPO=$(cd "$(dirname "$0")/.." && pwd)
PREFIX=${PREFIX:-/usr/local}
DESTDIR=${DESTDIR:-}
BINDIR=$PREFIX/bin
MANDIR=$PREFIX/share/man/man1
SYSTEMDUNITDIR=${SYSTEMDUNITDIR:-$PREFIX/lib/systemd/system}
MODULESLOADDIR=${MODULESLOADDIR:-$PREFIX/lib/modules-load.d}
SYSUSERSDIR=${SYSUSERSDIR:-$PREFIX/lib/sysusers.d}
# as meson and autoconf's users do: /usr's configuration is in /etc
if [ "$PREFIX" = /usr ]; then
	SYSCONFDIR=${SYSCONFDIR:-/etc}
else
	SYSCONFDIR=${SYSCONFDIR:-$PREFIX/etc}
fi
DOCDIR=${DOCDIR:-$PREFIX/share/doc/cgroup-energy}
MAKE=${MAKE:-make}
INSTALL=${INSTALL:-install}
UNIT=sys-fs-cgroup_energy.mount
TEXTFILE=cgroup-energy-textfile
EXPORTER=energystat-exporter
MANIFEST=$DOCDIR/INSTALLED

say() { echo "cgroup-energy: $*"; }

# Files installed here (besides the tool and man page): source:destination.
OWN="dist/systemd/$UNIT:$SYSTEMDUNITDIR/$UNIT
dist/systemd/$EXPORTER.service:$SYSTEMDUNITDIR/$EXPORTER.service
dist/default/$EXPORTER:$SYSCONFDIR/default/$EXPORTER
dist/sysusers.d/energystat.conf:$SYSUSERSDIR/energystat.conf
dist/systemd/$TEXTFILE.service:$SYSTEMDUNITDIR/$TEXTFILE.service
dist/systemd/$TEXTFILE.timer:$SYSTEMDUNITDIR/$TEXTFILE.timer
dist/modules-load.d/cgroup-energy.conf:$MODULESLOADDIR/cgroup-energy.conf
dist/modprobe.d/cgroup-energy.conf:$DOCDIR/modprobe.d/cgroup-energy.conf
README.md:$DOCDIR/README.md"

FILES="$BINDIR/energystat $MANDIR/energystat.1 $SYSTEMDUNITDIR/$UNIT
$SYSTEMDUNITDIR/$EXPORTER.service $SYSCONFDIR/default/$EXPORTER
$SYSUSERSDIR/energystat.conf
$SYSTEMDUNITDIR/$TEXTFILE.service $SYSTEMDUNITDIR/$TEXTFILE.timer
$MODULESLOADDIR/cgroup-energy.conf $DOCDIR/modprobe.d/cgroup-energy.conf
$DOCDIR/README.md $MANIFEST"

# What the README links, where its relative links find it from $DOCDIR:
# docs/ as in the tree; the dashboard and the deploy files in examples/
# (Debian's place for files used as they are, which dh_compress leaves
# uncompressed), where the installed README's dist/ links point.
DOCDIRS="$DOCDIR/docs $DOCDIR/examples/grafana $DOCDIR/examples/kubernetes
$DOCDIR/examples/prometheus $DOCDIR/examples/energystat"
linked_docs() {
	for f in "$REPO"/docs/*.md "$REPO"/docs/*.svg; do
		echo "docs/${f##*/}:$DOCDIR/docs/${f##*/}"
	done
	for f in "$REPO"/dist/grafana/*.json "$REPO"/dist/kubernetes/*.yaml \
		 "$REPO"/dist/prometheus/*.yml "$REPO"/dist/energystat/*.yml; do
		echo "dist/${f#"$REPO"/dist/}:$DOCDIR/examples/${f#"$REPO"/dist/}"
	done
}
OWN="$OWN
$(linked_docs)"
FILES="$FILES
$(linked_docs | sed 's/^[^:]*://')"

# Directories that do not exist yet, for each directory the install needs,
# up to the first existing ancestor (DESTDIR itself is never listed).
missing_dirs() {
	for d in "$BINDIR" "$MANDIR" "$SYSTEMDUNITDIR" "$MODULESLOADDIR" \
		 "$SYSUSERSDIR" "$SYSCONFDIR/default" "$DOCDIR/modprobe.d" $DOCDIRS; do
		while [ "$d" != / ] && [ "$d" != . ] && [ ! -d "$DESTDIR$d" ]; do
			echo "$d"
			d=$(dirname "$d")
		done
	done
}

systemd_running() {
	[ -z "$DESTDIR" ] && [ -d /run/systemd/system ] &&
		command -v systemctl >/dev/null 2>&1
}

do_install() {
	case "$PREFIX" in /*) ;; *) say "PREFIX must be absolute" >&2; exit 1 ;; esac
	created=$(missing_dirs)
	# an earlier install's record: keep the directories it created
	if [ -f "$DESTDIR$MANIFEST" ]; then
		created="$created
$(sed -n 's/^dir //p' "$DESTDIR$MANIFEST")"
	fi
	"$MAKE" -C "$REPO/userspace" install PREFIX="$PREFIX" DESTDIR="$DESTDIR"
	# a service names the tool and its options file where this install
	# puts them
	echo "$OWN" | while IFS=: read -r src dst; do
		case $src in
		*.service | dist/default/*)
			"$INSTALL" -d "$DESTDIR$(dirname "$dst")"
			sed -e "s|@BINDIR@|$BINDIR|g" \
				-e "s|@SYSCONFDIR@|$SYSCONFDIR|g" \
				"$REPO/$src" >"$DESTDIR$dst"
			chmod 0644 "$DESTDIR$dst"
			;;
		README.md)
			"$INSTALL" -d "$DESTDIR$(dirname "$dst")"
			sed 's|](dist/|](examples/|g' "$REPO/$src" >"$DESTDIR$dst"
			chmod 0644 "$DESTDIR$dst"
			;;
		*) "$INSTALL" -D -m 0644 "$REPO/$src" "$DESTDIR$dst" ;;
		esac
	done
	{
		echo "# cgroup-energy: installed by make install; make uninstall" \
			"removes these"
		for f in $FILES; do echo "file $f"; done
		echo "$created" | sed '/^$/d' | sort -u | sed 's/^/dir /'
	} >"$DESTDIR$MANIFEST"
	chmod 0644 "$DESTDIR$MANIFEST"
	for f in $FILES; do say "installed $DESTDIR$f"; done
	if [ -z "$DESTDIR" ] && command -v systemd-sysusers >/dev/null 2>&1
	then
		systemd-sysusers "$SYSUSERSDIR/energystat.conf"
	elif [ -z "$DESTDIR" ]; then
		say "no systemd-sysusers: make the group and user of" \
			"$SYSUSERSDIR/energystat.conf, or the mount fails"
	fi
	if systemd_running; then
		systemctl daemon-reload
	fi
	if [ -z "$DESTDIR" ]; then
		say "next: make dkms-install (the module), then" \
			"systemctl enable --now $UNIT; the exporter:" \
			"systemctl enable --now $EXPORTER.service"
	fi
}

do_uninstall() {
	if systemd_running; then
		systemctl disable --now "$TEXTFILE.timer" "$EXPORTER.service" \
			"$UNIT" 2>/dev/null || true
	elif [ -z "$DESTDIR" ] && command -v systemctl >/dev/null 2>&1; then
		systemctl disable "$TEXTFILE.timer" "$EXPORTER.service" \
			"$UNIT" 2>/dev/null || true
	fi
	# shellcheck disable=SC2086 # DOCDIRS: one word per directory
	dirs=$(printf '%s\n' "$DOCDIR/modprobe.d" $DOCDIRS "$DOCDIR/examples" \
		"$DOCDIR")
	if [ -f "$DESTDIR$MANIFEST" ]; then
		dirs="$dirs
$(sed -n 's/^dir //p' "$DESTDIR$MANIFEST")"
	fi
	"$MAKE" -C "$REPO/userspace" uninstall PREFIX="$PREFIX" DESTDIR="$DESTDIR"
	for f in $FILES; do
		rm -f "$DESTDIR$f"
	done
	# deepest first; only the empty ones (another package's files stay)
	echo "$dirs" | sed '/^$/d' | sort -u -r | while read -r d; do
		if [ -d "$DESTDIR$d" ]; then
			rmdir "$DESTDIR$d" 2>/dev/null || true
		fi
	done
	if systemd_running; then
		systemctl daemon-reload
	fi
	say "uninstalled from $DESTDIR$PREFIX"
}

case "${1:-}" in
install) do_install ;;
uninstall) do_uninstall ;;
*) echo "usage: sh dist/install.sh install|uninstall" >&2; exit 1 ;;
esac
