#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# make style: checkpatch.pl --strict (from Debian's linux-source-6.1) on the
# module's sources and shared headers. Exit status non-zero on any ERROR or
# WARNING.
set -eu

CGE_CACHE=${CGE_CACHE:-/var/cache/cgroup-energy}
TARBALL=${CGE_LINUX_SOURCE:-/usr/src/linux-source-6.1.tar.xz}
REPO=$(cd "$(dirname "$0")/.." && pwd)
CP=$CGE_CACHE/linux-source-6.1/scripts/checkpatch.pl
DIR=$CGE_CACHE/checkpatch

if [ ! -f "$CP" ]; then
	CP=$DIR/linux-source-6.1/scripts/checkpatch.pl
	if [ ! -f "$CP" ]; then
		[ -r "$TARBALL" ] ||
			{ echo "style: $TARBALL missing: apt-get install linux-source-6.1" >&2; exit 1; }
		mkdir -p "$CGE_CACHE"
		tmp=$(mktemp -d "$CGE_CACHE/.checkpatch.XXXXXX")
		tar -xJf "$TARBALL" -C "$tmp" \
			linux-source-6.1/scripts/checkpatch.pl \
			linux-source-6.1/scripts/spelling.txt \
			linux-source-6.1/scripts/const_structs.checkpatch
		rm -rf "$DIR"
		mv "$tmp" "$DIR"
	fi
fi

cd "$REPO"
run() { perl "$CP" --no-tree --strict --terse --show-types "$@" 2>&1 || true; }
# compat.h is the one place that must compare kernel versions.
# shellcheck disable=SC2046
out=$(run -f $(ls kmod/*.c kmod/*.h include/*.h tests/kunit/*.c tests/emu/*.c |
	grep -v '^kmod/compat.h$')
	run --ignore LINUX_VERSION_CODE,CONSTANT_COMPARISON -f kmod/compat.h)
errors=$(printf '%s\n' "$out" | grep -c -E ': (ERROR|WARNING|CHECK):' || true)
printf '%s\n' "$out" | grep -E ': (ERROR|WARNING|CHECK):' || true
echo "style: checkpatch --strict: $errors problem(s)"
[ "$errors" = 0 ]
