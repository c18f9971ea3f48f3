// SPDX-License-Identifier: GPL-2.0
/*
 * KUnit suite for kmod/want.c: sharing a CPU's record requests between
 * subtrees. Each case is a list, a newcomer and the request it takes back.
 */
#include <kunit/test.h>
#include <linux/kernel.h>
#include <linux/string.h>

#include "want.h"

/*
 * Requests @from to @to - 1 of cgroups under the ancestors @pre (levels 1
 * to 3, 0 past the last): each a cgroup of its own, 100 + i, a level
 * below them; or, with @self, the last of them itself.
 */
struct cge_t_run {
	unsigned int from, to;
	u32 pre[3];
	bool self;
};

struct cge_t_case {
	const char *name;
	struct cge_t_run run[4];
	unsigned int n;			/* the list's length */
	u32 tag[CGE_WANT_LEVELS];	/* the newcomer's */
	int victim;
};

static const struct cge_t_case cge_t_cases[] = {
	{ "one tenant holds all: another's newcomer takes its newest",
	  { { 0, 16, { 1 } } }, 16, { 2, 20 }, 15 },
	{ "8 and 8: the newcomer waits",
	  { { 0, 8, { 1 } }, { 8, 16, { 2 } } }, 16, { 2, 30 }, -1 },
	{ "9 and 7: the newcomer of the 7 takes the 9's newest",
	  { { 0, 8, { 1 } }, { 8, 16, { 2 } }, { 8, 9, { 1 } } }, 16,
	  { 2, 30 }, 8 },
	{ "the largest of three gives, not the first seen",
	  { { 0, 4, { 1 } }, { 4, 14, { 2 } }, { 14, 16, { 3 } } }, 16,
	  { 4, 40 }, 13 },
	{ "pods under one slice share at level 2",
	  { { 0, 16, { 1, 5 } } }, 16, { 1, 7, 70 }, 15 },
	{ "a newcomer of the flooding pod itself waits",
	  { { 0, 16, { 1, 5 } } }, 16, { 1, 5, 300 }, -1 },
	{ "balanced with another tenant: the own tenant shares within",
	  { { 0, 8, { 2, 9 } }, { 8, 16, { 1, 5 } } }, 16, { 1, 6, 60 }, 15 },
	{ "a newcomer at level 1 takes from another tenant",
	  { { 0, 16, { 1 } } }, 16, { 3 }, 15 },
	{ "a newcomer at level 1 waits within its own",
	  { { 0, 16, { 3 } } }, 16, { 3 }, -1 },
	{ "two largest alike: the first seen gives its newest",
	  { { 0, 8, { 1 } }, { 8, 16, { 2 } }, { 4, 5, { 2 } },
	    { 12, 13, { 1 } } }, 16, { 3, 30 }, 12 },
	{ "one fewer than the largest: shared a level down",
	  { { 0, 8, { 1 } }, { 8, 15, { 2, 5 } }, { 15, 16, { 3 } } }, 16,
	  { 2, 6, 60 }, 14 },
	{ "an ancestor's request counts as a subtree; down to level 4",
	  { { 0, 1, { 1, 5 }, true }, { 1, 16, { 1, 5, 50 } } }, 16,
	  { 1, 5, 50, 501 }, -1 },
	{ "a newcomer beside 50 at level 3 takes 50's newest",
	  { { 0, 1, { 1, 5 }, true }, { 1, 16, { 1, 5, 50 } } }, 16,
	  { 1, 5, 500 }, 15 },
	{ "a list of 3 is read to its length",
	  { { 0, 3, { 1 } }, { 3, 16, { 2 } } }, 3, { 2, 20 }, 2 },
	{ "a list of 2",
	  { { 0, 3, { 1 } }, { 3, 16, { 2 } } }, 2, { 2, 20 }, 1 },
	{ "a list of 1: no subtree holds two",
	  { { 0, 3, { 1 } }, { 3, 16, { 2 } } }, 1, { 2, 20 }, -1 },
};

static void cge_t_fill(struct cge_want *w, const struct cge_t_run *r)
{
	unsigned int i, l;

	for (i = r->from; i < r->to; i++) {
		memset(&w[i], 0, sizeof(w[i]));
		for (l = 0; l < ARRAY_SIZE(r->pre) && r->pre[l]; l++)
			w[i].tag[l] = r->pre[l];
		if (!r->self)
			w[i].tag[l] = 100 + i;
		w[i].cgid = w[i].tag[r->self ? l - 1 : l];
	}
}

static void cge_t_victim(struct kunit *test)
{
	const struct cge_t_case *tc = test->param_value;
	struct cge_want w[CGE_WANTS];
	unsigned int i;

	memset(w, 0, sizeof(w));
	for (i = 0; i < ARRAY_SIZE(tc->run) && tc->run[i].to; i++)
		cge_t_fill(w, &tc->run[i]);
	KUNIT_EXPECT_EQ(test, cge_want_victim(w, tc->n, tc->tag), tc->victim);
}

static void cge_t_desc(const struct cge_t_case *tc, char *desc)
{
	strscpy(desc, tc->name, KUNIT_PARAM_DESC_SIZE);
}

KUNIT_ARRAY_PARAM(cge_t_victim, cge_t_cases, cge_t_desc);

static struct kunit_case cge_want_cases[] = {
	KUNIT_CASE_PARAM(cge_t_victim, cge_t_victim_gen_params),
	{}
};

static struct kunit_suite cge_want_suite = {
	.name = "cge_want",
	.test_cases = cge_want_cases,
};

kunit_test_suite(cge_want_suite);
