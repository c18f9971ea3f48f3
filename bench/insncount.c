// SPDX-License-Identifier: GPL-2.0
/*
 * insncount.c - a QEMU TCG plugin for make bench: how many times the guest
 * executed each instruction in an address range (default: x86_64's module
 * area), written out when QEMU exits.  bench.py maps the addresses to the
 * module's symbols (the guest's /proc/kallsyms) and divides by the number
 * of probe calls: instructions per context switch, which the host's load
 * does not change as it changes time.
 *
 * Arguments: out=PATH (one "address count" line per instruction executed
 * at least once), lo=ADDR and hi=ADDR (hexadecimal, the range [lo, hi)).
 * Built against include/qemu/qemu-plugin.h of the QEMU that runs it
 * (bench.build_insncount takes it from Debian's source package), with
 * -Wno-unused-parameter: the callbacks' signatures are QEMU's.
 */
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <qemu-plugin.h>

QEMU_PLUGIN_EXPORT int qemu_plugin_version = QEMU_PLUGIN_VERSION;

/* instructions tracked; those past it are counted together */
#define IC_SLOTS (1 << 17)
/* open addressing, a power of two at least twice IC_SLOTS */
#define IC_HASH_BITS 18
#define IC_HASH (1 << IC_HASH_BITS)

struct ic_counts {
	uint64_t n[IC_SLOTS + 1];	/* [IC_SLOTS]: the untracked */
};

static struct qemu_plugin_scoreboard *ic_score;
static pthread_mutex_t ic_lock = PTHREAD_MUTEX_INITIALIZER;
static uint64_t ic_addr[IC_SLOTS];
static uint32_t ic_hash[IC_HASH];	/* slot + 1; 0: empty */
static uint32_t ic_used;
static uint64_t ic_lo = 0xffffffffa0000000ULL;
static uint64_t ic_hi = 0xffffffffff000000ULL;
static const char *ic_out;

/* The slot of @addr, a new one if it has none (IC_SLOTS: table full). */
static uint32_t ic_slot(uint64_t addr)
{
	uint32_t h = (uint32_t)((addr * 0x9e3779b97f4a7c15ULL) >>
				(64 - IC_HASH_BITS));
	uint32_t slot;

	pthread_mutex_lock(&ic_lock);
	for (;; h = (h + 1) & (IC_HASH - 1)) {
		if (!ic_hash[h]) {
			if (ic_used == IC_SLOTS) {
				slot = IC_SLOTS;
				break;
			}
			ic_addr[ic_used] = addr;
			ic_hash[h] = ++ic_used;
			slot = ic_used - 1;
			break;
		}
		if (ic_addr[ic_hash[h] - 1] == addr) {
			slot = ic_hash[h] - 1;
			break;
		}
	}
	pthread_mutex_unlock(&ic_lock);
	return slot;
}

static void ic_tb_trans(qemu_plugin_id_t id, struct qemu_plugin_tb *tb)
{
	size_t i, n = qemu_plugin_tb_n_insns(tb);

	for (i = 0; i < n; i++) {
		struct qemu_plugin_insn *insn = qemu_plugin_tb_get_insn(tb, i);
		uint64_t addr = qemu_plugin_insn_vaddr(insn);
		qemu_plugin_u64 entry;

		if (addr < ic_lo || addr >= ic_hi)
			continue;
		entry.score = ic_score;
		entry.offset = ic_slot(addr) * sizeof(uint64_t);
		qemu_plugin_register_vcpu_insn_exec_inline_per_vcpu(insn,
			QEMU_PLUGIN_INLINE_ADD_U64, entry, 1);
	}
}

static uint64_t ic_sum(uint32_t slot)
{
	qemu_plugin_u64 entry = { ic_score, slot * sizeof(uint64_t) };
	int cpu, ncpus = qemu_plugin_num_vcpus();
	uint64_t sum = 0;

	for (cpu = 0; cpu < ncpus; cpu++)
		sum += qemu_plugin_u64_get(entry, cpu);
	return sum;
}

static void ic_exit(qemu_plugin_id_t id, void *p)
{
	FILE *f = fopen(ic_out, "w");
	uint32_t i;

	if (!f) {
		qemu_plugin_outs("insncount: cannot write the out= file\n");
		return;
	}
	for (i = 0; i < ic_used; i++) {
		uint64_t n = ic_sum(i);

		if (n)
			fprintf(f, "0x%" PRIx64 " %" PRIu64 "\n", ic_addr[i], n);
	}
	fprintf(f, "untracked %" PRIu64 "\n", ic_sum(IC_SLOTS));
	fclose(f);
	qemu_plugin_scoreboard_free(ic_score);
}

static int ic_hex(const char *arg, const char *name, uint64_t *val)
{
	size_t len = strlen(name);
	char *end;

	if (strncmp(arg, name, len) || arg[len] != '=')
		return 0;
	*val = strtoull(arg + len + 1, &end, 16);
	return *end || end == arg + len + 1 ? -1 : 1;
}

QEMU_PLUGIN_EXPORT int qemu_plugin_install(qemu_plugin_id_t id,
					   const qemu_info_t *info,
					   int argc, char **argv)
{
	int i;

	for (i = 0; i < argc; i++) {
		int lo = ic_hex(argv[i], "lo", &ic_lo);
		int hi = ic_hex(argv[i], "hi", &ic_hi);

		if (!strncmp(argv[i], "out=", 4)) {
			ic_out = argv[i] + 4;
		} else if (lo < 0 || hi < 0 || (!lo && !hi)) {
			fprintf(stderr, "insncount: bad argument %s\n", argv[i]);
			return -1;
		}
	}
	if (!ic_out || ic_lo >= ic_hi) {
		fprintf(stderr, "insncount: needs out=PATH and lo < hi\n");
		return -1;
	}
	ic_score = qemu_plugin_scoreboard_new(sizeof(struct ic_counts));
	qemu_plugin_register_vcpu_tb_trans_cb(id, ic_tb_trans);
	qemu_plugin_register_atexit_cb(id, ic_exit, NULL);
	return 0;
}
