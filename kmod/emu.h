/* SPDX-License-Identifier: GPL-2.0 */
/*
 * emu.h - emulated RAPL hardware, in the test build only (make CGE_EMU=y):
 * it answers the RAPL MSR reads. The production build reads the MSRs.
 */
#ifndef CGE_EMU_H
#define CGE_EMU_H

#include <linux/types.h>
#include <linux/smp.h>

#include "compat.h"

#ifdef CGE_EMU
int cge_emu_init(void);
void cge_emu_exit(void);
int cge_emu_rdmsr(unsigned int cpu, u32 msr, u64 *val);
#else
static inline int cge_emu_init(void)
{
	return 0;
}

static inline void cge_emu_exit(void)
{
}

static inline int cge_emu_rdmsr(unsigned int cpu, u32 msr, u64 *val)
{
	return cge_rdmsr_on_cpu(cpu, msr, val);
}
#endif

#endif /* CGE_EMU_H */
