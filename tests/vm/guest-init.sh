#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# PID 1 of the test VM, run from the host root (read-only 9p) after
# switch_root.  Mounts the usual filesystems and the writable run directory
# (9p tag "cgerun") on /run/cge, runs the commands in /run/cge/cmd/ in order,
# each output in /run/cge/out/<n>.out and exit status in /run/cge/out/<n>.rc,
# then writes /run/cge/verdict and powers off.  Console lines start with
# "cge-guest:"; command output never goes to the console.
PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
export PATH

say() { echo "cge-guest: $*" >/dev/console; }

halt() {
	sync
	if [ -x /bin/busybox ]; then /bin/busybox poweroff -f; fi
	echo o >/proc/sysrq-trigger
	sleep 10
}

mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
mkdir -p /dev/pts /dev/shm
mount -t devpts devpts /dev/pts
mount -t tmpfs tmpfs /dev/shm
mount -t cgroup2 cgroup2 /sys/fs/cgroup
mount -t tmpfs tmpfs /tmp
mount -t tmpfs tmpfs /run
[ -d /sys/kernel/debug ] && mount -t debugfs debugfs /sys/kernel/debug
[ -d /sys/kernel/tracing ] && mount -t tracefs tracefs /sys/kernel/tracing
mkdir -p /run/cge
if ! mount -t 9p -o trans=virtio,version=9p2000.L,msize=262144 cgerun /run/cge; then
	say "FATAL: cannot mount the run directory"
	halt
fi
# shellcheck disable=SC1091
. /run/cge/config                 # REPO, CGE_FLAVOUR, CGE_KVER, CGE_HOLD_TP
export HOME=/tmp LANG=C.UTF-8 PYTHONDONTWRITEBYTECODE=1 CGE_GUEST=1
export CGE_FLAVOUR CGE_KVER REPO
# The kernel's TSC calibration against the PIT went wrong, and it said so:
# a vCPU held off the host's CPU during the PIT loop (one sid boot of 95 in
# two clean-clone make checks: 64.519 MHz against the HPET's 2596.151, so
# the guest's clock ran 40 times too fast and its sampler ran once in 5 of
# the guest's seconds).  Nothing that boot measures is true: no command
# runs, and the host boots it again (harness.py, BAD_CLOCK).
bad=$(dmesg | grep -m1 'tsc: PIT calibration deviates')
if [ -n "$bad" ]; then
	say "bad clock: $bad"
	halt
fi
say "up $(cut -d' ' -f1 /proc/uptime)"

# Hold the trace events of the tracepoints the module hooks on, recording
# nothing (tracing_on 0), so that its load and unload never live-patch
# kernel text: QEMU's multi-threaded TCG, 10.0 too, can keep running an int3
# the kernel has patched out (tests/vm/repro/mttcg-int3/).  A tracepoint's
# call sites are patched when its probes go from 0 to 1, 1 to 2 and back
# (kernel/tracepoint.c); each event enabled at the top level and in a trace
# instance is two probes, so the module's is a third.  make bench and make
# validate do not hold them (harness.run_vm's hold_tracepoints); the harness
# checks the line below names all three.
T=/sys/kernel/tracing
I=$T/instances/cge-hold
if [ "${CGE_HOLD_TP:-0}" = 1 ]; then
	held=
	if echo 0 >$T/tracing_on && mkdir -p $I && echo 0 >$I/tracing_on; then
		for ev in sched/sched_switch cgroup/cgroup_attach_task cgroup/cgroup_rmdir; do
			if echo 1 >$T/events/$ev/enable &&
				echo 1 >$I/events/$ev/enable; then
				held="$held ${ev#*/}"
			fi
		done
	fi 2>/dev/null
	say "holding trace events on:$held"
fi

for f in /run/cge/cmd/*; do
	[ -f "$f" ] || continue
	n=${f##*/}
	say "cmd $n start"
	(cd "$REPO" && exec sh -c "$(cat "$f")") >"/run/cge/out/$n.out" 2>&1 </dev/null
	rc=$?
	echo "$rc" >"/run/cge/out/$n.rc"
	say "cmd $n rc=$rc"
done

dmesg >/run/cge/dmesg 2>&1
echo ok >/run/cge/verdict
say "done"
halt
