#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# The package test's steps in the Debian 12 server guest (tests/test_server.py,
# image: tests/vm/server.py), one boot after the other.  The image's
# cge-agent unit runs this file from the host's share, /run/cge, at every
# boot; /run/cge/boot counts the boots.  Each check's output goes to
# /run/cge/boot<N>/<name>.out, its exit status to <name>.rc and its duration
# in seconds to <name>.s; the host judges them.  A step that later boots
# need (an install) powers the guest off when it fails.  The kernels' names
# come from /run/cge/env (FIRST_KVER, LATER_KVER, NO_BUILD_KVER; LATER_SPECS,
# apt's name=version arguments for the later kernel's image and headers).
S=/run/cge
. $S/env
n=$(( $(cat $S/boot 2>/dev/null || echo 0) + 1 ))
echo $n >$S/boot
OUT=$S/boot$n
mkdir -p $OUT
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
export DEBIAN_FRONTEND=noninteractive LANG=C.UTF-8
log() { echo "cge-server: boot $n: $*" >/dev/console; }

# run NAME CMD: CMD (a command line, which may call this file's functions)
# in a subshell, its output, exit status and seconds recorded
run() {
	t0=$(cut -d' ' -f1 /proc/uptime)
	(eval "$2") >"$OUT/$1.out" 2>&1
	rc=$?
	t1=$(cut -d' ' -f1 /proc/uptime)
	echo $rc >"$OUT/$1.rc"
	echo "$t0 $t1" | awk '{ printf "%.1f\n", $2 - $1 }' >"$OUT/$1.s"
	log "$1: exit $rc in $(cat "$OUT/$1.s") s"
	return $rc
}

# need NAME CMD: run, and power off on failure (the next boots need it),
# saying which step stopped the run in /run/cge/stopped
need() {
	run "$1" "$2" && return 0
	log "$1 failed: powering off"
	echo "boot $n: $1 (exit $rc)" >$S/stopped
	finish
}

finish() {
	sync
	systemctl poweroff
	exit 0
}

next_boot() {
	sync
	systemctl reboot
	exit 0
}

# What every boot records first: the system's state once the boot is
# done (running or degraded), the kernel, failed units, the module and
# the mount, and the boot's own timing (systemd-analyze).
boot_state() {
	run state 'timeout 300 systemctl is-system-running --wait'
	run uptime 'cut -d" " -f1 /proc/uptime'
	run uname 'uname -r'
	run failed 'systemctl --failed --no-legend --plain'
	run lsmod 'grep -w ^cgroup_energy /proc/modules'
	run mount 'findmnt -n -o FSTYPE,OPTIONS /sys/fs/cgroup_energy'
	run mount_unit 'systemctl show -p UnitFileState,ActiveState,Result,ConditionResult,ConditionTimestampMonotonic sys-fs-cgroup_energy.mount'
	run modules_load 'systemctl show -p ActiveState,Result systemd-modules-load.service; journalctl -b -o cat -u systemd-modules-load.service'
	run analyze 'systemd-analyze time'
}

# Wait (10 s at most) until the module has taken 2 samples more than when
# called: what ran before the call is in its figures.
samples() {
	awk '$1 == "samples" { print $2 }' /sys/fs/cgroup_energy/energy.info
}
two_samples() {
	s0=$(samples)
	[ -n "$s0" ] || return 1
	i=0
	while s=$(samples) && [ -n "$s" ] && [ "$s" -lt $((s0 + 2)) ]; do
		i=$((i + 1))
		[ $i -le 100 ] || return 1
		sleep 0.1
	done
	[ -n "$s" ]
}

# A real service, started by systemd, runs 5 s (50 of the sampler's
# intervals) and is frozen (cgroup v2's freezer): its CPU time in the module
# and in cpu.stat, its energy, and energystat's table.
burn() {
	run burn_start 'systemd-run --unit=burn --quiet sh -c "while :; do :; done"'
	sleep 5
	run burn_freeze 'systemctl freeze burn.service && two_samples'
	run burn_energy 'cat /sys/fs/cgroup_energy/system.slice/burn.service/energy.stat'
	run burn_cpu 'cat /sys/fs/cgroup/system.slice/burn.service/cpu.stat'
	run energystat 'energystat'
	run burn_stop 'systemctl stop burn.service'
}

# The exporter (energystat-exporter.service, port 10043): GET /metrics once
# it answers (10 s at most; the image has no curl: bash's /dev/tcp), the
# response with its headers.
get_metrics() {
	bash -c 'exec 3<>/dev/tcp/127.0.0.1/10043 &&
		printf "GET /metrics HTTP/1.0\r\nHost: localhost\r\n\r\n" >&3 &&
		cat <&3'
}
scrape() {
	i=0
	until get_metrics 2>/dev/null; do
		i=$((i + 1))
		[ $i -le 100 ] || return 1
		sleep 0.1
	done
}
# The service's state and the credentials its process runs with.
exporter_state() {
	systemctl show -p UnitFileState,ActiveState,SubState,NRestarts energystat-exporter.service
	ps -o user:32=,group:32=,supgrp:64= -p "$(systemctl show -p MainPID --value energystat-exporter.service)"
}
# What the exporter does where the module is loaded and mounted: the files'
# mode and group, a scrape (cgroup_energy_up 1), one with the module
# unloaded (it keeps serving, up 0), one after the mount loaded it again.
exporter_with_module() {
	run perms 'stat -c "%n %a %G" /sys/fs/cgroup_energy/energy.stat /sys/fs/cgroup_energy/energy.info'
	run exporter 'exporter_state'
	run scrape 'scrape'
	run unload 'systemctl stop sys-fs-cgroup_energy.mount && rmmod cgroup_energy'
	run scrape_unloaded 'scrape'
	run reload 'systemctl start sys-fs-cgroup_energy.mount && grep -qw ^cgroup_energy /proc/modules'
	run scrape_reloaded 'scrape'
	run exporter_after 'exporter_state'
}

# Prometheus (the host's, Debian's package, from the share) scrapes the
# exporter over TLS with basic auth (job tls) and with a wrong password
# (job wrong_password), for a service frozen before Prometheus started:
# every value Prometheus stores of it is the one its energy.stat holds.
# Then the exporter goes back to plain HTTP, as the later boots scrape it.
PROM=http://127.0.0.1:9090
promq() { $S/promtool query instant -o json $PROM "$1"; }
# until Prometheus holds 5 samples of both jobs (120 s at most)
prom_scraped() {
	i=0
	until promq 'count_over_time(up[1m]) >= 5' | grep -q wrong_password &&
	      promq 'count_over_time(up{job="tls"}[1m]) >= 5' | grep -q '"tls"'; do
		i=$((i + 1))
		[ $i -le 240 ] || return 1
		sleep 0.5
	done
}
prom_targets() {
	bash -c 'exec 3<>/dev/tcp/127.0.0.1/9090 &&
		printf "GET /api/v1/targets HTTP/1.0\r\nHost: localhost\r\n\r\n" >&3 &&
		cat <&3'
}
tls_prometheus() {
	run tls_config "install -d -m 0750 -g cgroup-energy /etc/energystat &&
		install -m 0640 -g cgroup-energy $S/tls/server.crt $S/tls/server.key $S/tls/web-config.yml /etc/energystat/ &&
		echo 'ARGS=\"--web.config.file /etc/energystat/web-config.yml\"' >/etc/default/energystat-exporter &&
		systemctl restart energystat-exporter.service"
	run frozen_start 'systemd-run --unit=frozen --quiet sh -c "while :; do :; done" && sleep 2 && systemctl freeze frozen.service && two_samples'
	run frozen_energy 'cat /sys/fs/cgroup_energy/system.slice/frozen.service/energy.stat'
	run prom_start "systemd-run --unit=prom --quiet $S/prometheus --config.file=$S/prometheus.yml --storage.tsdb.path=/var/tmp/prom --web.listen-address=127.0.0.1:9090"
	run prom_scraped 'prom_scraped'
	run prom_up "promq up"
	run prom_frozen "promq 'cgroup_energy_joules_total{cgroup=\"/system.slice/frozen.service\"}'"
	run prom_rate "promq 'rate(cgroup_energy_joules_total{cgroup=\"/system.slice/frozen.service\"}[30s])'"
	run prom_targets 'prom_targets'
	run exporter_tls 'exporter_state'
	run tls_off "systemctl stop prom.service frozen.service &&
		rm -r /etc/energystat &&
		echo 'ARGS=\"\"' >/etc/default/energystat-exporter &&
		systemctl restart energystat-exporter.service && scrape >/dev/null"
}

case $n in
1)	# the image as built: 6.1, no module; install the two packages
	boot_state
	need debs 'rm -rf /var/tmp/debs && cp -r /run/cge/debs /var/tmp/debs'
	need install 'cd /var/tmp/debs && apt install -y ./cgroup-energy-dkms_*.deb ./energystat_*.deb'
	run dkms 'dkms status'
	run modinfo 'modinfo -F filename cgroup_energy'
	run signer 'modinfo -F signer cgroup_energy'
	run sig_key 'modinfo -F sig_key cgroup_energy'
	# the accounts; the exporter installed, not enabled; enabled, it runs
	# and serves without the module (not loaded until the next boot)
	run accounts 'getent group cgroup-energy && id energystat'
	run exporter_installed 'exporter_state'
	run exporter_enable 'systemctl enable --now energystat-exporter.service'
	run scrape 'scrape'
	run exporter 'exporter_state'
	next_boot ;;
2)	# 6.1 with the packages; then install 6.12 and its headers
	boot_state
	burn
	exporter_with_module
	tls_prometheus
	need install "apt install -y $LATER_SPECS"
	run dkms 'dkms status'
	run modinfo "modinfo -k $LATER_KVER -F filename cgroup_energy"
	run signer "modinfo -k $LATER_KVER -F signer cgroup_energy"
	run sig_key "modinfo -k $LATER_KVER -F sig_key cgroup_energy"
	run grub_first "sed -n \"s/^[[:space:]]*linux[[:space:]]\\+\\/boot\\/vmlinuz-\\([^ ]*\\) .*/\\1/p\" /boot/grub/grub.cfg | head -1"
	next_boot ;;
3)	# GRUB's default, the newest kernel: 6.12; then 5.10, once
	boot_state
	burn
	run exporter 'exporter_state'
	run scrape 'scrape'
	# GRUB's id of the 5.10 entry, in its "Advanced options" submenu
	sub=$(grep -o "gnulinux-advanced-[0-9a-f-]*" /boot/grub/grub.cfg | head -1)
	entry="gnulinux-$NO_BUILD_KVER-advanced-${sub#gnulinux-advanced-}"
	need grub_reboot "grep -qF \"'$entry'\" /boot/grub/grub.cfg && grub-reboot '$sub>$entry' && grub-editenv list"
	next_boot ;;
4)	# a kernel without headers, so without the module; then purge
	boot_state
	run modprobe 'modprobe cgroup_energy'
	run exporter 'exporter_state'
	run scrape 'scrape'
	need listed 'dpkg-query -L cgroup-energy-dkms energystat >/var/tmp/listed'
	need purge 'apt purge -y cgroup-energy-dkms energystat'
	# files of the packages still there (directories other packages share,
	# such as /usr/src or /lib/systemd/system, stay: only non-directories)
	run left_files 'while read -r f; do { [ -e "$f" ] || [ -L "$f" ]; } && [ ! -d "$f" ] && echo "$f"; done </var/tmp/listed; true'
	run left_module 'find /lib/modules /usr/lib/modules -name "cgroup_energy*"'
	run left_dkms 'ls -d /var/lib/dkms/cgroup-energy /usr/src/cgroup-energy-* 2>/dev/null; true'
	# (an emptied directory, such as /lib/modules-load.d, goes with them)
	run left_units 'find $(ls -d /etc /lib/systemd /usr/lib/systemd /lib/modules-load.d /usr/lib/modules-load.d 2>/dev/null) \( -name "*cgroup*energy*" -o -name "sys-fs-cgroup_energy*" -o -name "energystat*" \)'
	# purge keeps the system accounts (sysusers.d/energystat.conf)
	run accounts 'getent group cgroup-energy && id energystat'
	run left_dpkg 'dpkg-query -W -f="\${Package} \${db:Status-Abbrev}\n" cgroup-energy-dkms energystat 2>&1; true'
	run left_doc 'ls -d /usr/share/doc/energystat /usr/share/doc/cgroup-energy-dkms 2>/dev/null; true'
	finish ;;
*)	log "no step for boot $n"
	finish ;;
esac
