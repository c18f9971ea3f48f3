#!/bin/busybox sh
# SPDX-License-Identifier: GPL-2.0
# /init of the cgroup-energy test initramfs: load the virtio/9p modules, mount
# the host's root (9p tag "hostroot", read-only) and switch_root into it, where
# the guest init script named by cge_init= on the kernel command line runs.
/bin/busybox --install -s /bin
export PATH=/bin

die() {
	echo "cge-initramfs: FATAL: $*"
	poweroff -f
}

mount -t proc proc /proc
mount -t sysfs sysfs /sys
while read -r m; do
	insmod "/lib/modules/$m" || die "insmod $m failed"
done </modules.list

opts=trans=virtio,version=9p2000.L,msize=262144,cache=loose,ro
mount -t 9p -o "$opts" hostroot /newroot || die "cannot mount the host root over 9p"
[ -n "$cge_init" ] || die "no cge_init= on the kernel command line"
[ -f "/newroot$cge_init" ] || die "no guest init $cge_init on the host root"
umount /sys /proc
exec switch_root /newroot /bin/sh "$cge_init"
