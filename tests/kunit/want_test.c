// SPDX-License-Identifier: GPL-2.0
/*
 * KUnit suite for kmod/want.c: sharing a CPU's record requests between
 * subtrees.
 */
#include <kunit/test.h>
#include <linux/kernel.h>
#include <linux/string.h>

#include "want.h"

#define CGE_T_N	16

/*
 * A request of the cgroup whose ancestors at levels 1 to 3 are @a, @b, @c
 * (0 past its own level): its id is its own tag.
 */
static void cge_t_set(struct cge_want *w, u32 a, u32 b, u32 c)
{
	memset(w, 0, sizeof(*w));
	w->tag[0] = a;
	w->tag[1] = b;
	w->tag[2] = c;
	w->cgid = c ?: b ?: a;
}

/*
 * Requests @from to @to - 1: each a cgroup of its own (100 + i) in tenant
 * @a at level 2, or in @a's child @b at level 3 if @b is not 0.
 */
static void cge_t_run(struct cge_want *w, unsigned int from, unsigned int to,
		      u32 a, u32 b)
{
	unsigned int i;

	for (i = from; i < to; i++) {
		if (b)
			cge_t_set(&w[i], a, b, 100 + i);
		else
			cge_t_set(&w[i], a, 100 + i, 0);
	}
}

/* One tenant holds the whole list: another's newcomer takes its newest. */
static void cge_t_flood_gives_back(struct kunit *test)
{
	struct cge_want w[CGE_T_N];
	u32 tag[CGE_WANT_LEVELS] = { 2, 20, 0, 0 };

	cge_t_run(w, 0, CGE_T_N, 1, 0);
	KUNIT_EXPECT_EQ(test, cge_want_victim(w, CGE_T_N, tag), CGE_T_N - 1);
}

/* Shares within one of each other: the newcomer waits. */
static void cge_t_balanced_waits(struct kunit *test)
{
	struct cge_want w[CGE_T_N];
	u32 tag[CGE_WANT_LEVELS] = { 2, 30, 0, 0 };

	cge_t_run(w, 0, 8, 1, 0);
	cge_t_run(w, 8, CGE_T_N, 2, 0);
	/* 8 and 8: taking one of 1's would leave 7 against 9 */
	KUNIT_EXPECT_EQ(test, cge_want_victim(w, CGE_T_N, tag), -1);
	/* 9 and 7: the newcomer of 2 takes 1's newest (index 8) */
	cge_t_run(w, 8, 9, 1, 0);
	KUNIT_EXPECT_EQ(test, cge_want_victim(w, CGE_T_N, tag), 8);
}

/* The largest of three subtrees gives up, not the first one seen. */
static void cge_t_largest_gives_back(struct kunit *test)
{
	struct cge_want w[CGE_T_N];
	u32 tag[CGE_WANT_LEVELS] = { 4, 40, 0, 0 };

	cge_t_run(w, 0, 4, 1, 0);
	cge_t_run(w, 4, 14, 2, 0);
	cge_t_run(w, 14, CGE_T_N, 3, 0);
	KUNIT_EXPECT_EQ(test, cge_want_victim(w, CGE_T_N, tag), 13);
}

/*
 * Tenants under one slice (as Kubernetes' pods under kubepods): balanced
 * at level 1 by construction, shared at level 2.
 */
static void cge_t_deeper_level(struct kunit *test)
{
	struct cge_want w[CGE_T_N];
	u32 tag[CGE_WANT_LEVELS] = { 1, 7, 70, 0 };

	cge_t_run(w, 0, CGE_T_N, 1, 5);
	KUNIT_EXPECT_EQ(test, cge_want_victim(w, CGE_T_N, tag), CGE_T_N - 1);
	/* a newcomer of the flooding pod itself waits */
	tag[1] = 5;
	tag[2] = 300;
	KUNIT_EXPECT_EQ(test, cge_want_victim(w, CGE_T_N, tag), -1);
}

/*
 * Balanced at level 1 with another tenant, the newcomer's own tenant
 * shares within itself: its flooding pod gives one up to its other pod,
 * never the other tenant.
 */
static void cge_t_within_own_subtree(struct kunit *test)
{
	struct cge_want w[CGE_T_N];
	u32 tag[CGE_WANT_LEVELS] = { 1, 6, 60, 0 };

	cge_t_run(w, 0, 8, 2, 9);
	cge_t_run(w, 8, CGE_T_N, 1, 5);
	/* level 1: 8 and 8; level 2, within 1: pod 5 holds 8, pod 6 none */
	KUNIT_EXPECT_EQ(test, cge_want_victim(w, CGE_T_N, tag), CGE_T_N - 1);
}

/* A newcomer at level 1 competes at level 1 only. */
static void cge_t_shallow_newcomer(struct kunit *test)
{
	struct cge_want w[CGE_T_N];
	u32 tag[CGE_WANT_LEVELS] = { 3, 0, 0, 0 };

	cge_t_run(w, 0, CGE_T_N, 1, 0);
	KUNIT_EXPECT_EQ(test, cge_want_victim(w, CGE_T_N, tag), CGE_T_N - 1);
	cge_t_run(w, 0, CGE_T_N, 3, 0);
	KUNIT_EXPECT_EQ(test, cge_want_victim(w, CGE_T_N, tag), -1);
}

/* Two largest alike: the first seen gives, its newest request. */
static void cge_t_tie_first_seen(struct kunit *test)
{
	struct cge_want w[CGE_T_N];
	u32 tag[CGE_WANT_LEVELS] = { 3, 30, 0, 0 };

	cge_t_run(w, 0, 8, 1, 0);
	cge_t_run(w, 8, CGE_T_N, 2, 0);
	cge_t_run(w, 4, 5, 2, 0);
	cge_t_run(w, 12, 13, 1, 0);
	KUNIT_EXPECT_EQ(test, cge_want_victim(w, CGE_T_N, tag), 12);
}

/*
 * One fewer than the largest at level 1 (8, 7 and 1): no other tenant
 * gives; the newcomer's own tenant shares within itself.
 */
static void cge_t_one_fewer_goes_down(struct kunit *test)
{
	struct cge_want w[CGE_T_N];
	u32 tag[CGE_WANT_LEVELS] = { 2, 6, 60, 0 };

	cge_t_run(w, 0, 8, 1, 0);
	cge_t_run(w, 8, 15, 2, 5);
	cge_t_run(w, 15, CGE_T_N, 3, 0);
	/* level 2, within 2: pod 5 holds 7, pod 6 none */
	KUNIT_EXPECT_EQ(test, cge_want_victim(w, CGE_T_N, tag), 14);
}

/*
 * A request of an ancestor (tags 0 below its level) counts as one more
 * subtree of its parent, and deep cgroups compare down to level 4.
 */
static void cge_t_ancestor_and_depth(struct kunit *test)
{
	struct cge_want w[CGE_T_N];
	u32 tag[CGE_WANT_LEVELS] = { 1, 5, 50, 501 };
	unsigned int i;

	cge_t_set(&w[0], 1, 5, 0);
	for (i = 1; i < CGE_T_N; i++) {
		cge_t_set(&w[i], 1, 5, 50);
		w[i].tag[3] = 600 + i;
		w[i].cgid = w[i].tag[3];
	}
	/* level 3: 50 holds 15 against 5's own 1; level 4: 15 of one each */
	KUNIT_EXPECT_EQ(test, cge_want_victim(w, CGE_T_N, tag), -1);
	/* a newcomer beside 50 at level 3, none of its own: takes 50's newest */
	tag[2] = 500;
	tag[3] = 0;
	KUNIT_EXPECT_EQ(test, cge_want_victim(w, CGE_T_N, tag), CGE_T_N - 1);
}

/* A shorter list is read to its length only. */
static void cge_t_short_list(struct kunit *test)
{
	struct cge_want w[CGE_T_N];
	u32 tag[CGE_WANT_LEVELS] = { 2, 20, 0, 0 };

	cge_t_run(w, 0, 3, 1, 0);
	cge_t_run(w, 3, CGE_T_N, 2, 0);
	KUNIT_EXPECT_EQ(test, cge_want_victim(w, 3, tag), 2);
	KUNIT_EXPECT_EQ(test, cge_want_victim(w, 2, tag), 1);
	KUNIT_EXPECT_EQ(test, cge_want_victim(w, 1, tag), -1);
}

static struct kunit_case cge_want_cases[] = {
	KUNIT_CASE(cge_t_flood_gives_back),
	KUNIT_CASE(cge_t_balanced_waits),
	KUNIT_CASE(cge_t_largest_gives_back),
	KUNIT_CASE(cge_t_deeper_level),
	KUNIT_CASE(cge_t_within_own_subtree),
	KUNIT_CASE(cge_t_shallow_newcomer),
	KUNIT_CASE(cge_t_tie_first_seen),
	KUNIT_CASE(cge_t_one_fewer_goes_down),
	KUNIT_CASE(cge_t_ancestor_and_depth),
	KUNIT_CASE(cge_t_short_list),
	{}
};

static struct kunit_suite cge_want_suite = {
	.name = "cge_want",
	.test_cases = cge_want_cases,
};

kunit_test_suite(cge_want_suite);

MODULE_LICENSE("GPL");
