// SPDX-License-Identifier: GPL-2.0
/*
 * want.c - which request of a full list a newcomer takes back.
 *
 * A CPU asks the sampler for records of the cgroups its overflow path met
 * without one, CGE_WANTS per drain. So that one tenant cannot keep the list
 * full with its own new cgroups, the list is shared between subtrees as the
 * scheduler shares CPU: level by level, a newcomer takes a request of the
 * subtree with the most when that one holds two more than the newcomer's;
 * where none does, the same rule is applied inside the newcomer's own
 * subtree, a level down, if that holds two or more.
 */
#include "want.h"

/**
 * cge_want_victim() - the request a newcomer takes back, in a full list
 * @w: the list, oldest first
 * @n: its length, at most CGE_WANTS
 * @tag: the newcomer's ancestor tags (struct cge_want)
 *
 * At each level from the top, the requests within the newcomer's subtree
 * so far are counted by their subtree at that level, in one pass.
 *
 * Return: the index of the newest request of the largest subtree (the
 * first seen of equals) that holds at least two more than the newcomer's,
 * at the first level where one does, looking a level down only within the
 * newcomer's own subtree, and only while that holds two or more; -1 if
 * none does (the newcomer waits).
 *
 * The probe calls it with IRQs off, for a cgroup not in a full list: at
 * most @n * @n / 2 tag comparisons a level, CGE_WANT_LEVELS levels.
 */
int cge_want_victim(const struct cge_want *w, unsigned int n, const u32 *tag)
{
	struct {
		u32 tag;
		u8 cnt;
		u8 last;
	} sub[CGE_WANTS];
	bool in[CGE_WANTS];
	unsigned int l, i, k, nsub, mine, most;
	int victim;

	for (i = 0; i < n; i++)
		in[i] = true;
	for (l = 0; l < CGE_WANT_LEVELS && tag[l]; l++) {
		nsub = 0;
		mine = 0;
		for (i = 0; i < n; i++) {
			if (!in[i])
				continue;
			if (w[i].tag[l] == tag[l]) {
				mine++;
				continue;
			}
			for (k = 0; k < nsub && sub[k].tag != w[i].tag[l]; k++)
				;
			if (k == nsub) {
				sub[nsub].tag = w[i].tag[l];
				sub[nsub++].cnt = 0;
			}
			sub[k].cnt++;
			sub[k].last = i;
		}
		most = 0;
		victim = -1;
		for (k = 0; k < nsub; k++) {
			if (sub[k].cnt > most) {
				most = sub[k].cnt;
				victim = sub[k].last;
			}
		}
		if (most >= mine + 2)
			return victim;
		/* No other subtree may give: only the newcomer's own may. */
		if (mine < 2)
			return -1;
		for (i = 0; i < n; i++)
			in[i] = in[i] && w[i].tag[l] == tag[l];
	}
	return -1;
}
