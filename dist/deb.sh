#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# make deb: build the Debian packages (debian/) in a copy of the tree, so
# that nothing is written into the tree or beside it.
#
#   sh dist/deb.sh
#
# Copies the files git tracks or would track (the working tree's state,
# not build products) to $DEBDIR/cgroup-energy-<version>/, runs
# `dpkg-buildpackage -us -uc -b` there and leaves in $DEBDIR:
#   cgroup-energy-dkms_<version>_all.deb   energystat_<version>_amd64.deb
#   cgroup-energy_<version>_amd64.buildinfo and .changes (unsigned)
# Environment: DEBDIR (default .build/deb in the tree; emptied first).
# Needs git, dpkg-dev and the Build-Depends of debian/control:
#   apt-get install dpkg-dev debhelper dh-dkms libmicrohttpd-dev
set -eu

REPO=$(cd "$(dirname "$0")/.." && pwd)
DEBDIR=${DEBDIR:-$REPO/.build/deb}

die() { echo "cgroup-energy: $*" >&2; exit 1; }

git -C "$REPO" rev-parse --git-dir >/dev/null 2>&1 ||
	die "make deb copies the files git tracks: run it in a git checkout" \
		"(elsewhere: dpkg-buildpackage -us -uc -b in the tree)"
ver=$(cd "$REPO" && dpkg-parsechangelog -S Version) ||
	die "dpkg-parsechangelog failed: apt-get install dpkg-dev"
rm -rf "$DEBDIR"
src=$DEBDIR/cgroup-energy-$ver
mkdir -p "$src"
(cd "$REPO" && git ls-files -z -c -o --exclude-standard |
	tar --null -T - -cf -) | tar -xf - -C "$src"
(cd "$src" && dpkg-buildpackage -us -uc -b)
rm -rf "$src"
echo "cgroup-energy: built in $DEBDIR:"
ls "$DEBDIR"
