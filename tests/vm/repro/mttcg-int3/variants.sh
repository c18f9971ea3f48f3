#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# Run reproducer variants one boot each, in order; one JSON line per boot on
# stdout (append to results.jsonl, then tally.py).  Never two guests at once.
#   sh tests/vm/repro/mttcg-int3/variants.sh a b c cs ... >> tests/vm/repro/mttcg-int3/results.jsonl
# a    cgroup_energy.ko insmod/mount/read/umount/rmmod, 24 cycles, 6.1-rt, MTTCG
# ap   as a, with the sched_switch and cgroup_attach_task trace events enabled
#      first (tracing_on=0): the module's register/unregister patches no text
# as   as a, single-threaded TCG (-accel tcg,thread=single)
# b    tpmin.ko (no-op sched_switch probe only), 24 cycles; bs: single-threaded
# c    tracefs events/sched/sched_switch/enable 1/0, no module, 60 cycles;
#      cs: single-threaded; c61: 6.1 non-RT; c612: 6.12-rt
# a61  as a on 6.1 non-RT
# n    storm only, no patching (control)
D=tests/vm/repro/mttcg-int3
cd "$(dirname "$0")/../../../.." || exit 1
build() { /usr/bin/python3 tests/vm/build.py "$@" | tail -1; }
KO=$(build --flavour 6.1-rt) || exit 1
MIN=$(build --flavour 6.1-rt --src $D/tpmin) || exit 1
KO61=$(build --flavour 6.1) || exit 1
ST=tcg,thread=single
R=$D/run.py
for v in "$@"; do
	case $v in
	a) /usr/bin/python3 $R a 40 -- cge 24 $KO ;;
	ap) /usr/bin/python3 $R ap 40 -- cgepre 24 $KO ;;
	as) QACCEL=$ST /usr/bin/python3 $R as 60 -- cge 24 $KO ;;
	b) /usr/bin/python3 $R b 40 -- ko 24 $MIN ;;
	bs) QACCEL=$ST /usr/bin/python3 $R bs 60 -- ko 24 $MIN ;;
	c) /usr/bin/python3 $R c 40 -- tracefs 60 ;;
	cs) QACCEL=$ST /usr/bin/python3 $R cs 60 -- tracefs 60 ;;
	c61) FLAV=6.1 /usr/bin/python3 $R c61 40 -- tracefs 60 ;;
	c612) FLAV=6.12-rt /usr/bin/python3 $R c612 40 -- tracefs 60 ;;
	a61) FLAV=6.1 /usr/bin/python3 $R a61 40 -- cge 24 $KO61 ;;
	n) /usr/bin/python3 $R n 40 -- none 30 ;;
	*) echo "variants.sh: unknown variant $v" >&2 ;;
	esac
done
