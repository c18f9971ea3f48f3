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
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/kernel.h>
#include <linux/err.h>
#include <linux/kref.h>
#include <linux/mm.h>
#include <linux/mutex.h>
#include <linux/overflow.h>
#include <linux/rcupdate.h>
#include <linux/sched/signal.h>
#include <linux/slab.h>
#include <linux/wait.h>

#include "snap.h"
#include "cgstate.h"
#include "params.h"

static struct cge_snap __rcu *cge_snap_cur;
static DECLARE_WAIT_QUEUE_HEAD(cge_snap_wq);
static bool cge_snap_wanted;
/* Samples taken (energy.info's), and that of the snapshot last published. */
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

static struct cge_snap *cge_snap_get(void)
{
	struct cge_snap *s;

	rcu_read_lock();
	s = rcu_dereference(cge_snap_cur);
	if (s && !kref_get_unless_zero(&s->ref))
		s = NULL;
	rcu_read_unlock();
	return s;
}

/*
 * Copy every record and publish the copy as the current snapshot.
 * cge_lock held, so that no sample is under way.
 */
static int cge_snap_publish_locked(void)
{
	unsigned int nr = cge_cgstate_nr();
	struct cge_snap *s, *old;

	lockdep_assert_held(&cge_lock);
	s = kvmalloc(struct_size(s, rec, nr), GFP_KERNEL | __GFP_NOWARN);
	if (!s)
		return -ENOMEM;
	kref_init(&s->ref);
	s->nr = cge_cgstate_copy(s->rec, nr);
	if (WARN_ON_ONCE(s->nr != nr)) {
		kvfree(s);
		return -EIO;
	}
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
 * @sample: the number of samples taken, this one included (energy.info's)
 * @at_ns: the sample's interval end, where its power averages stand
 *
 * Called by the sampler with cge_lock held, at the end of every sample.
 *
 * Return: false if a snapshot was wanted and could not be allocated.
 */
bool cge_snap_sampled(u64 sample, u64 at_ns)
{
	bool ok;

	lockdep_assert_held(&cge_lock);
	cge_snap_at_ns = at_ns;
	WRITE_ONCE(cge_snap_samples, sample);
	if (!READ_ONCE(cge_snap_wanted))
		return true;
	WRITE_ONCE(cge_snap_wanted, false);
	ok = !cge_snap_publish_locked();
	wake_up_all(&cge_snap_wq);
	return ok;
}

/**
 * cge_snap_fresh() - a snapshot of the latest sample, or of the next one
 *
 * The sampler makes it at the end of its next sample, once for all the
 * readers waiting. If none comes in two intervals and a second (the sampler
 * is paused for suspend), the reader copies the records itself.
 *
 * Return: a snapshot to give back with cge_snap_put(), or ERR_PTR(-errno).
 */
struct cge_snap *cge_snap_fresh(void)
{
	unsigned long timeout;
	struct cge_snap *s;
	u64 seen;
	long left;
	int ret;

	seen = READ_ONCE(cge_snap_samples);
	s = cge_snap_get();
	if (s && s->sample >= seen)
		return s;
	cge_snap_put(s);
	timeout = msecs_to_jiffies(2 * READ_ONCE(cge_interval_ms)) + HZ;
	WRITE_ONCE(cge_snap_wanted, true);
	left = wait_event_killable_timeout(cge_snap_wq,
					   READ_ONCE(cge_snap_sample) > seen,
					   timeout);
	if (left < 0)
		return ERR_PTR(left);
	if (!left) {
		ret = mutex_lock_killable(&cge_lock);
		if (ret)
			return ERR_PTR(ret);
		ret = READ_ONCE(cge_snap_sample) > seen ? 0 :
		      cge_snap_publish_locked();
		mutex_unlock(&cge_lock);
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
