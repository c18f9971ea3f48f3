/* SPDX-License-Identifier: GPL-2.0 */
/*
 * emu.h - the RAPL registers' reads: the MSRs in the production build,
 * emulated hardware in the test build (make CGE_EMU=y, tests/emu/).
 */
#ifndef CGE_EMU_H
#define CGE_EMU_H

#include <linux/types.h>

#include "compat.h"

#define CGE_MSR_BATCH_MAX	8

/**
 * struct cge_msr_batch - registers read on one CPU in one function call
 * @from: the CPU that asked for them
 * @n: how many
 * @msr: the registers
 * @val: their values
 * @err: 0, or the error of each read (the register faulted)
 */
struct cge_msr_batch {
	unsigned int from;
	unsigned int n;
	u32 msr[CGE_MSR_BATCH_MAX];
	u64 val[CGE_MSR_BATCH_MAX];
	int err[CGE_MSR_BATCH_MAX];
};

#ifdef CGE_EMU
int cge_emu_init(void);
void cge_emu_exit(void);
void cge_emu_read_here(struct cge_msr_batch *b);
#else
static inline int cge_emu_init(void)
{
	return 0;
}

static inline void cge_emu_exit(void)
{
}

/* Read @b's registers on this CPU; IRQs off (a cross-call's function). */
static inline void cge_emu_read_here(struct cge_msr_batch *b)
{
	unsigned int i;

	for (i = 0; i < b->n; i++)
		b->err[i] = rdmsrq_safe(b->msr[i], &b->val[i]);
}
#endif

#endif /* CGE_EMU_H */
