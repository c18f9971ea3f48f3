#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# Guest side of make demo: sh demo.sh cgroup_energy.ko cgwork
set -eu
KO=$1
W=$2
CG=/sys/fs/cgroup
EN=/sys/fs/cgroup_energy

insmod "$KO"
mount -t cgroup_energy none "$EN"
echo "# cat $EN/energy.info"
cat "$EN/energy.info"
mkdir -p "$CG/demo/burner" "$CG/demo/sleeper" "$CG/demo/spawner"
echo
echo "# 6 s of work: a CPU burner, a 1 ms sleeper, a storm of short processes"
"$W" -c "$CG/demo/burner" busy 6 &
"$W" -c "$CG/demo/sleeper" sleeper 1000 6 &
"$W" -c "$CG/demo/spawner" spawn 400 5000 &
userspace/energystat -d 2 -n 2 -b demo
wait
sleep 0.5
echo
echo "# energystat"
userspace/energystat
echo
echo "# cat $EN/demo/burner/energy.stat"
cat "$EN/demo/burner/energy.stat"
echo
echo "# cat $EN/energy.stat    (total_uj = energy_uj + irq_uj + softirq_uj + steal_uj + idle_uj, exactly)"
cat "$EN/energy.stat"
