# SPDX-License-Identifier: GPL-2.0
# The test build's emulated RAPL hardware (make CGE_EMU=y), included by the
# root Kbuild: emu.o answers the MSR reads that kmod/emu.h routes to it.
cgroup_energy-$(CGE_EMU) += tests/emu/emu.o
ccflags-$(CGE_EMU) += -DCGE_EMU
