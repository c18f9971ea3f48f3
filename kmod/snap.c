// SPDX-License-Identifier: GPL-2.0
/*
 * snap.c - snapshots of all records, made by the sampler when readers ask.
 *
 * A reader that wants every cgroup's counters from one sample asks; the
 * sampler copies all records at the end of its next sample, once however
 * many asked, and publishes the copy (RCU, with a reference count). Readers
 * then format it without cge_lock: a reader that is throttled or preempted
 * holds nothing the sampler waits for.
 */
#include <linux/kernel.h>
#include <linux/err.h>
#include <linux/kref.h>
#include <linux/mm.h>
#include <linux/mutex.h>
#include <linux/overflow.h>
#include <linux/rcupdate.h>
#include <linux/minmax.h>
#include <linux/slab.h>
#include <linux/wait.h>

#include "snap.h"
#include "cgstate.h"
#include "params.h"

static struct cge_snap __rcu *cge_snap_cur;
static DECLARE_WAIT_QUEUE_HEAD(cge_snap_wq);
static bool cge_snap_wanted;
/*
 * energy.info's samples at the last sample, and the sample of the snapshot
 * last published (0: none yet; the first sample is number 1).
 */
static u64 cge_snap_samples;
static u64 cge_snap_sample;
/* The last sample's interval end, for the power averages. cge_lock. */
static u64 cge_snap_at_ns;

static void cge_snap_release(struct kref *ref)
{
	struct cge_snap *s = container_of(ref, struct cge_snap, ref);

	kvfree_rcu(s, rcu);
}

void cge_snap_put(struct cge_snap *s)
{
	if (s)
		kref_put(&s->ref, cge_snap_release);
}

/* The current snapshot, held; one being replaced gives way to the new one. */
static struct cge_snap *cge_snap_get(void)
{
	struct cge_snap *s;

	rcu_read_lock();
	do {
		s = rcu_dereference(cge_snap_cur);
	} while (s && !kref_get_unless_zero(&s->ref));
	rcu_read_unlock();
	return s;
}

static struct cge_snap *cge_snap_alloc(unsigned int nr)
{
	struct cge_snap *s;

	s = kvmalloc(struct_size(s, rec, nr), GFP_KERNEL | __GFP_NOWARN);
	if (s)
		s->nr = nr;
	return s;
}

/*
 * Copy every record into @s and publish it as the current snapshot.
 * cge_lock held, so that no sample is under way. -EAGAIN if there are
 * more records than @s has room for.
 */
static int cge_snap_publish_locked(struct cge_snap *s)
{
	struct cge_snap *old;
	unsigned int nr;

	lockdep_assert_held(&cge_lock);
	nr = cge_cgstate_copy(s->rec, s->nr);
	if (nr > s->nr)
		return -EAGAIN;
	kref_init(&s->ref);
	s->nr = nr;
	s->sample = cge_snap_samples;
	s->at_ns = cge_snap_at_ns;
	s->rs = cge_root_stat;
	old = rcu_replace_pointer(cge_snap_cur, s, lockdep_is_held(&cge_lock));
	cge_snap_put(old);
	WRITE_ONCE(cge_snap_sample, s->sample);
	return 0;
}

/**
 * cge_snap_sampled() - a sample is done: publish a snapshot if one is wanted
 * @sample: energy.info's samples, this one included
 * @at_ns: the sample's interval end, where its power averages stand
 *
 * Called by the sampler with cge_lock held, at the end of every sample. A
 * snapshot that cannot be allocated is asked for again at the next one.
 */
void cge_snap_sampled(u64 sample, u64 at_ns)
{
	struct cge_snap *s;

	lockdep_assert_held(&cge_lock);
	cge_snap_at_ns = at_ns;
	WRITE_ONCE(cge_snap_samples, sample);
	if (!READ_ONCE(cge_snap_wanted))
		return;
	WRITE_ONCE(cge_snap_wanted, false);
	s = cge_snap_alloc(cge_cgstate_nr());
	if (!s || cge_snap_publish_locked(s)) {
		kvfree(s);
		WRITE_ONCE(cge_snap_wanted, true);
		return;
	}
	wake_up_all(&cge_snap_wq);
}

/* Copy the records in the reader's context: allocate, then lock and copy. */
static int cge_snap_publish_now(u64 want)
{
	struct cge_snap *s;
	unsigned int nr;
	int tries, ret;

	for (tries = 0; tries < 3; tries++) {
		ret = mutex_lock_interruptible(&cge_lock);
		if (ret)
			return ret;
		nr = cge_cgstate_nr();
		mutex_unlock(&cge_lock);
		s = cge_snap_alloc(nr + nr / 8 + 16);
		if (!s)
			return -ENOMEM;
		ret = mutex_lock_interruptible(&cge_lock);
		if (ret) {
			kvfree(s);
			return ret;
		}
		ret = READ_ONCE(cge_snap_sample) >= want ? -EEXIST :
		      cge_snap_publish_locked(s);
		mutex_unlock(&cge_lock);
		if (ret)
			kvfree(s);
		if (ret != -EAGAIN)
			return ret == -EEXIST ? 0 : ret;
	}
	return -EAGAIN;
}

/**
 * cge_snap_fresh() - a snapshot of the latest sample, or of the next one
 *
 * The sampler makes it at the end of its next sample, once for all the
 * readers waiting. If none comes within two intervals and a second (the
 * sampler is paused for suspend, or could not allocate), the reader copies
 * the records itself.
 *
 * Return: a snapshot to give back with cge_snap_put(), or ERR_PTR() of
 * -ERESTARTSYS (a signal), -ENOMEM or -EAGAIN (records kept growing).
 */
struct cge_snap *cge_snap_fresh(void)
{
	unsigned long timeout;
	struct cge_snap *s;
	long left;
	u64 want;
	int ret;

	/* the latest sample's, or the first sample's */
	want = max_t(u64, READ_ONCE(cge_snap_samples), 1);
	s = cge_snap_get();
	if (s && s->sample >= want)
		return s;
	cge_snap_put(s);
	timeout = msecs_to_jiffies(2 * READ_ONCE(cge_interval_ms)) + HZ;
	WRITE_ONCE(cge_snap_wanted, true);
	/* interruptible: the freezer can stop a reader waiting here */
	left = wait_event_interruptible_timeout(cge_snap_wq,
						READ_ONCE(cge_snap_sample) >=
						want, timeout);
	if (left < 0)
		return ERR_PTR(left);
	if (!left) {
		ret = cge_snap_publish_now(want);
		if (ret)
			return ERR_PTR(ret);
	}
	s = cge_snap_get();
	return s ?: ERR_PTR(-EAGAIN);
}

/* At module exit, the sampler stopped: free the last snapshot. */
void cge_snap_exit(void)
{
	struct cge_snap *s;

	s = rcu_replace_pointer(cge_snap_cur, NULL, true);
	cge_snap_put(s);
}
