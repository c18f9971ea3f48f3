#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# make demo: build, boot Debian's 6.1 kernel under QEMU, load the module,
# run three sample workloads in their own cgroups and show what they used.
set -eu

REPO=$(cd "$(dirname "$0")/../.." && pwd)
PY=/usr/bin/python3
cd "$REPO"

if ! sh tests/deps.sh; then
	echo "demo: cannot install the packages it needs (run as root)" >&2
	exit 1
fi
make --no-print-directory tool >/dev/null
ko=$($PY tests/vm/build.py --flavour 6.1)
mkdir -p .build
gcc -O2 -Wall -o .build/cgwork tests/vm/workload/cgwork.c
echo "demo: booting Debian's 6.1 kernel under QEMU (no KVM: about 10-20 s)"
exec $PY tests/vm/harness.py --flavour 6.1 --timeout 400 -- \
	"sh tests/vm/guest/demo.sh $ko .build/cgwork"
