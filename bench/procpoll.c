// SPDX-License-Identifier: GPL-2.0
/*
 * procpoll - the /proc poller peer (make bench, poller section): what
 * Kepler 0.10's resource informer does every monitor.interval (5 s by
 * default), in C. Each poll lists /proc; for each process reads
 * /proc/<pid>/stat (utime + stime, in ticks) and takes the difference
 * from the last poll; for a process first seen, or one whose time moved,
 * reads /proc/<pid>/comm and the /proc/<pid>/exe link; for a process
 * first seen, or whose comm changed, reads /proc/<pid>/cgroup and
 * /proc/<pid>/cmdline (Kepler's container and VM detection). The deltas
 * are summed per cgroup; the processes gone since the last poll are
 * dropped; /proc/stat is read once (Kepler's node CPU usage ratio).
 *
 *   procpoll [-i MS] [-n POLLS] [-w CGROUP]
 *
 * Polls every MS ms (default 5000) on absolute deadlines, POLLS times (0:
 * until killed). After each poll prints one line:
 *
 *   poll SEQ PROCS NEW CGROUPS CPU_NS T0_NS T1_NS SUM_TICKS WATCH_TICKS
 *
 * PROCS processes read, NEW of them first seen, CGROUPS cgroups with a
 * process; CPU_NS this thread's CPU time in the poll (CLOCK_THREAD_CPUTIME_
 * ID); T0_NS, T1_NS its start and end (CLOCK_MONOTONIC); SUM_TICKS the sum
 * of all deltas; WATCH_TICKS the delta summed for the cgroup CGROUP (as
 * /proc/<pid>/cgroup names it, e.g. /bench).
 */
#define _GNU_SOURCE
#include <ctype.h>
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define CG_SLOTS 65536		/* hash of cgroup paths, open addressing */

struct proc {
	int pid;
	int cg;				/* index in cgs[], -1: not read yet */
	unsigned long long ticks;	/* utime + stime at the last poll */
	char comm[32];
};

struct cgroup {
	char *path;
	unsigned long long delta;	/* ticks in this poll */
	long seen;			/* the last poll that found a process */
};

static struct proc *procs, *next;
static long nprocs, cap;
static int *pids;
static struct cgroup cgs[CG_SLOTS / 2];
static int ncgs;
static int cgslot[CG_SLOTS];	/* index + 1 into cgs[], 0: free */

static long long clock_ns(clockid_t c)
{
	struct timespec ts;

	clock_gettime(c, &ts);
	return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* The whole of a small /proc file into buf, NUL-terminated: its length. */
static ssize_t read_file(const char *path, char *buf, size_t size)
{
	ssize_t n, len = 0;
	int fd = open(path, O_RDONLY);

	if (fd < 0)
		return -1;
	while ((n = read(fd, buf + len, size - 1 - len)) > 0)
		len += n;
	close(fd);
	buf[len] = '\0';
	return n < 0 ? -1 : len;
}

static int cg_intern(const char *path)
{
	unsigned int h = 2166136261u;
	const char *p;

	for (p = path; *p; p++)
		h = (h ^ (unsigned char)*p) * 16777619u;
	for (h %= CG_SLOTS; cgslot[h]; h = (h + 1) % CG_SLOTS)
		if (!strcmp(cgs[cgslot[h] - 1].path, path))
			return cgslot[h] - 1;
	if (ncgs == CG_SLOTS / 2) {
		fprintf(stderr, "procpoll: more than %d cgroups\n", ncgs);
		exit(1);
	}
	cgs[ncgs].path = strdup(path);
	cgslot[h] = ++ncgs;
	return ncgs - 1;
}

/* The process's cgroup (v2: the "0::" line), interned; -1 if gone. */
static int read_cgroup(int pid)
{
	char path[64], buf[4096], *p, *e;

	snprintf(path, sizeof(path), "/proc/%d/cgroup", pid);
	if (read_file(path, buf, sizeof(buf)) < 0)
		return -1;
	p = strstr(buf, "0::");
	p = p ? p + 3 : buf;
	e = strchr(p, '\n');
	if (e)
		*e = '\0';
	return cg_intern(p);
}

/* comm and exe, re-read when the process ran; 1 if comm changed. */
static int read_names(struct proc *p)
{
	char path[64], buf[4096];
	int changed;

	snprintf(path, sizeof(path), "/proc/%d/comm", p->pid);
	if (read_file(path, buf, sizeof(p->comm)) < 0)
		return 0;
	changed = strcmp(buf, p->comm) != 0;
	strcpy(p->comm, buf);
	snprintf(path, sizeof(path), "/proc/%d/exe", p->pid);
	if (readlink(path, buf, sizeof(buf)) < 0)
		buf[0] = '\0';		/* kernel threads have none */
	if (changed) {
		snprintf(path, sizeof(path), "/proc/%d/cmdline", p->pid);
		read_file(path, buf, sizeof(buf));
	}
	return changed;
}

/* utime + stime of pid in ticks; -1 if it is gone. */
static long long read_ticks(int pid)
{
	char path[64], buf[1024], *p;
	unsigned long long ut, st;

	snprintf(path, sizeof(path), "/proc/%d/stat", pid);
	if (read_file(path, buf, sizeof(buf)) < 0)
		return -1;
	p = strrchr(buf, ')');
	if (!p || sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu",
			 &ut, &st) != 2)
		return -1;
	return ut + st;
}

static int cmp_int(const void *a, const void *b)
{
	return (*(const int *)a > *(const int *)b) -
	       (*(const int *)a < *(const int *)b);
}

/* The pids in /proc, sorted: their number. */
static long list_pids(void)
{
	DIR *d = opendir("/proc");
	struct dirent *e;
	long n = 0;

	if (!d) {
		perror("/proc");
		exit(1);
	}
	while ((e = readdir(d))) {
		if (!isdigit((unsigned char)e->d_name[0]))
			continue;
		if (n == cap) {
			cap = cap ? 2 * cap : 1024;
			pids = realloc(pids, cap * sizeof(*pids));
			procs = realloc(procs, cap * sizeof(*procs));
			next = realloc(next, cap * sizeof(*next));
			if (!pids || !procs || !next) {
				perror("procpoll");
				exit(1);
			}
		}
		pids[n++] = atoi(e->d_name);
	}
	closedir(d);
	qsort(pids, n, sizeof(*pids), cmp_int);
	return n;
}

static void poll_once(long seq, int watch)
{
	long long c0 = clock_ns(CLOCK_THREAD_CPUTIME_ID);
	long long t0 = clock_ns(CLOCK_MONOTONIC);
	unsigned long long sum = 0;
	long n = list_pids(), i, j = 0, k = 0, fresh = 0, used = 0;
	char buf[4096];
	int c;

	for (c = 0; c < ncgs; c++)
		cgs[c].delta = 0;
	for (i = 0; i < n; i++) {
		struct proc p = { .pid = pids[i], .cg = -1 };
		long long ticks = read_ticks(pids[i]);
		unsigned long long delta;

		while (j < nprocs && procs[j].pid < pids[i])
			j++;		/* gone since the last poll */
		if (ticks < 0)
			continue;
		if (j < nprocs && procs[j].pid == pids[i] &&
		    (unsigned long long)ticks >= procs[j].ticks)
			p = procs[j];
		else
			fresh++;
		delta = ticks - p.ticks;
		p.ticks = ticks;
		if ((p.cg < 0 || delta) && read_names(&p))
			p.cg = -1;	/* new, or comm changed: type again */
		if (p.cg < 0)
			p.cg = read_cgroup(p.pid);
		if (p.cg >= 0)
			cgs[p.cg].delta += delta;
		sum += delta;
		next[k++] = p;
	}
	read_file("/proc/stat", buf, sizeof(buf));
	memcpy(procs, next, k * sizeof(*procs));
	nprocs = k;
	for (i = 0; i < nprocs; i++) {
		c = procs[i].cg;
		if (c >= 0 && cgs[c].seen != seq) {
			cgs[c].seen = seq;
			used++;
		}
	}
	printf("poll %ld %ld %ld %ld %lld %lld %lld %llu %llu\n", seq, nprocs,
	       fresh, used, clock_ns(CLOCK_THREAD_CPUTIME_ID) - c0, t0,
	       clock_ns(CLOCK_MONOTONIC), sum, watch >= 0 ? cgs[watch].delta : 0);
	fflush(stdout);
}

int main(int argc, char **argv)
{
	long interval_ms = 5000, polls = 0, seq;
	const char *watch = NULL;
	struct timespec at;
	int opt;

	while ((opt = getopt(argc, argv, "i:n:w:")) != -1) {
		if (opt == 'i')
			interval_ms = atol(optarg);
		else if (opt == 'n')
			polls = atol(optarg);
		else if (opt == 'w')
			watch = optarg;
		else
			return 2;
	}
	if (interval_ms < 1 || polls < 0) {
		fprintf(stderr, "procpoll: -i must be > 0 and -n >= 0\n");
		return 2;
	}
	clock_gettime(CLOCK_MONOTONIC, &at);
	for (seq = 1; !polls || seq <= polls; seq++) {
		poll_once(seq, watch ? cg_intern(watch) : -1);
		/*
		 * the next deadline on the interval's grid; those a long poll
		 * overran are skipped, as Go's time.Ticker drops ticks
		 */
		do {
			at.tv_nsec += (interval_ms % 1000) * 1000000;
			at.tv_sec += interval_ms / 1000 + at.tv_nsec / 1000000000;
			at.tv_nsec %= 1000000000;
		} while (at.tv_sec * 1000000000LL + at.tv_nsec <=
			 clock_ns(CLOCK_MONOTONIC));
		clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &at, NULL);
	}
	return 0;
}
