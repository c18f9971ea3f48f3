// SPDX-License-Identifier: GPL-2.0
/*
 * cgload - many cgroups that each run a task, cheaply (make bench, sampler
 * and memory figures). One process, one thread per cgroup: the process
 * moves into DIR, DIR gets N threaded children DIR/tNNNNN, thread i moves
 * itself into DIR/t<i> and then sleeps on a futex. Each "round" wakes every
 * thread once: each runs a few instructions and sleeps again, so every one
 * of the N cgroups is charged by the next sample.
 *
 *   cgload DIR N        then commands on stdin, one per line:
 *     round             wake all N threads once; prints "done <ns>" once all
 *                       are asleep again (ns: duration of the round)
 *     quit              exit (the threads go with the process)
 *
 * Prints "ready <ns>" (setup time) once all N threads sit in their cgroups.
 * Kernel memory per thread is small (64 KiB of user stack, mostly untouched,
 * and one kernel stack),
 * so 10,000 cgroups fit in a 2 GiB guest; N forked processes would not.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/futex.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static const char *base;
static long nthreads;
static atomic_int gen;		/* round number: the futex word */
static atomic_long asleep;	/* threads waiting for the next round */
static atomic_int failed;
/* One cgroup.threads write at a time: 10,000 at once exceed RLIMIT_NOFILE. */
static pthread_mutex_t join_lock = PTHREAD_MUTEX_INITIALIZER;

static long long now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static long futex(atomic_int *uaddr, int op, int val)
{
	return syscall(SYS_futex, uaddr, op, val, NULL, NULL, 0);
}

static int write_file(const char *path, const char *text)
{
	int fd = open(path, O_WRONLY);
	ssize_t n = -1;

	if (fd >= 0) {
		n = write(fd, text, strlen(text));
		close(fd);
	}
	if (n != (ssize_t)strlen(text)) {
		fprintf(stderr, "cgload: write %s to %s: %s\n", text, path,
			strerror(errno));
		return -1;
	}
	return 0;
}

static void *worker(void *arg)
{
	long i = (long)arg;
	char path[256], tid[32];
	int seen;

	snprintf(path, sizeof(path), "%s/t%06ld/cgroup.threads", base, i);
	snprintf(tid, sizeof(tid), "%ld\n", (long)gettid());
	pthread_mutex_lock(&join_lock);
	if (write_file(path, tid))
		atomic_store(&failed, 1);
	pthread_mutex_unlock(&join_lock);
	for (;;) {
		seen = atomic_load(&gen);
		if (atomic_fetch_add(&asleep, 1) + 1 == nthreads)
			futex((atomic_int *)&asleep, FUTEX_WAKE_PRIVATE, 1);
		while (atomic_load(&gen) == seen)
			futex(&gen, FUTEX_WAIT_PRIVATE, seen);
	}
	return NULL;
}

/* Wait until all threads are back on the futex. */
static void wait_all_asleep(void)
{
	long n;

	while ((n = atomic_load(&asleep)) < nthreads)
		futex((atomic_int *)&asleep, FUTEX_WAIT_PRIVATE, (int)n);
}

int main(int argc, char **argv)
{
	char path[PATH_MAX], pid[32], line[64];
	pthread_attr_t attr;
	pthread_t t;
	long long t0;

	if (argc != 3) {
		fprintf(stderr, "usage: cgload DIR N\n");
		return 2;
	}
	base = argv[1];
	nthreads = atol(argv[2]);
	if (nthreads < 1 || nthreads > 999999)
		return 2;
	t0 = now_ns();
	if (mkdir(base, 0755) && errno != EEXIST) {
		perror(base);
		return 1;
	}
	snprintf(path, sizeof(path), "%s/cgroup.procs", base);
	snprintf(pid, sizeof(pid), "%d\n", getpid());
	if (write_file(path, pid))
		return 1;
	for (long i = 0; i < nthreads; i++) {
		snprintf(path, sizeof(path), "%s/t%06ld", base, i);
		if (mkdir(path, 0755) && errno != EEXIST) {
			perror(path);
			return 1;
		}
		snprintf(path, sizeof(path), "%s/t%06ld/cgroup.type", base, i);
		if (write_file(path, "threaded\n"))
			return 1;
	}
	pthread_attr_init(&attr);
	pthread_attr_setstacksize(&attr, 65536);
	for (long i = 0; i < nthreads; i++) {
		if (pthread_create(&t, &attr, worker, (void *)i)) {
			fprintf(stderr, "cgload: thread %ld: %s\n", i,
				strerror(errno));
			return 1;
		}
	}
	/* asleep is an atomic_long: the futex looks at its low 32 bits. */
	wait_all_asleep();
	if (atomic_load(&failed))
		return 1;
	printf("ready %lld\n", now_ns() - t0);
	fflush(stdout);
	while (fgets(line, sizeof(line), stdin)) {
		if (!strncmp(line, "round", 5)) {
			t0 = now_ns();
			atomic_store(&asleep, 0);
			atomic_fetch_add(&gen, 1);
			futex(&gen, FUTEX_WAKE_PRIVATE, INT_MAX);
			wait_all_asleep();
			printf("done %lld\n", now_ns() - t0);
			fflush(stdout);
		} else if (!strncmp(line, "quit", 4)) {
			break;
		}
	}
	return 0;
}
