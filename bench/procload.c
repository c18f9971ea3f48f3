// SPDX-License-Identifier: GPL-2.0
/*
 * procload - processes for the /proc poller (make bench, poller section).
 *
 *   procload DIR NCG NPROC   NPROC sleeping processes spread evenly over
 *                            NCG cgroups DIR/cNNNNN. Prints "ready <ns>"
 *                            (setup time), then exits on "quit" on stdin,
 *                            killing them.
 *   procload -b DIR N MS     N short-lived processes in the cgroup DIR (this
 *                            process moves there and forks them), one
 *                            after the other, each busy for MS ms of its own
 *                            CPU time and gone. Prints "done <ns>".
 *
 * The sleeping processes are clone()s sharing this process's memory
 * (CLONE_VM without CLONE_THREAD): each is a process of its own in /proc,
 * with its own stat and cgroup files, that costs a task and a kernel stack,
 * so 10,000 fit in a 2 GiB guest. This process moves into each cgroup in
 * turn and clones there (NCG migrations, not NPROC).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define STACK 16384

static long long clock_ns(clockid_t c)
{
	struct timespec ts;

	clock_gettime(c, &ts);
	return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* Write this process's pid into dir/cgroup.procs. */
static int join(const char *dir)
{
	char path[4096], pid[32];
	int fd, ok;

	snprintf(path, sizeof(path), "%s/cgroup.procs", dir);
	snprintf(pid, sizeof(pid), "%d\n", getpid());
	fd = open(path, O_WRONLY);
	if (fd < 0)
		return -1;
	ok = write(fd, pid, strlen(pid)) == (ssize_t)strlen(pid);
	close(fd);
	return ok ? 0 : -1;
}

/* Sleeps until killed: by spread(), or with it (PR_SET_PDEATHSIG). */
static int sleeper(void *arg)
{
	(void)arg;
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (getppid() == 1)
		return 0;
	for (;;)
		syscall(SYS_pause);
	return 0;
}

static int spread(const char *base, long ncg, long nproc)
{
	char dir[4096], line[64];
	long long t0 = clock_ns(CLOCK_MONOTONIC);
	pid_t *kids = calloc(nproc, sizeof(*kids));
	char *stacks = malloc(nproc * STACK);
	long c, i, n = 0;
	int ret = 1;

	if (!kids || !stacks || (mkdir(base, 0755) && errno != EEXIST)) {
		perror(base);
		goto out;
	}
	for (c = 0; c < ncg; c++) {
		snprintf(dir, sizeof(dir), "%s/c%05ld", base, c);
		if ((mkdir(dir, 0755) && errno != EEXIST) || join(dir)) {
			perror(dir);
			goto out;
		}
		for (i = c * nproc / ncg; i < (c + 1) * nproc / ncg; i++) {
			kids[n] = clone(sleeper, stacks + (i + 1) * STACK,
					CLONE_VM | SIGCHLD, NULL);
			if (kids[n] < 0) {
				perror("clone");
				goto out;
			}
			n++;
		}
	}
	if (join(base)) {
		perror(base);
		goto out;
	}
	printf("ready %lld\n", clock_ns(CLOCK_MONOTONIC) - t0);
	fflush(stdout);
	while (fgets(line, sizeof(line), stdin) && strncmp(line, "quit", 4))
		;
	ret = 0;
out:
	/* on an error too: no sleeper outlives this process */
	for (i = 0; i < n; i++)
		kill(kids[i], SIGKILL);
	for (i = 0; i < n; i++)
		waitpid(kids[i], NULL, 0);
	return ret;
}

static int burst(const char *dir, long n, long ms)
{
	long long t0 = clock_ns(CLOCK_MONOTONIC);
	int status;
	long i;

	/* each task in the cgroup from its first instruction */
	if (join(dir)) {
		perror(dir);
		return 1;
	}
	for (i = 0; i < n; i++) {
		pid_t pid = fork();

		if (pid < 0) {
			perror("fork");
			return 1;
		}
		if (!pid) {
			while (clock_ns(CLOCK_PROCESS_CPUTIME_ID) < ms * 1000000)
				;
			_exit(0);
		}
		if (waitpid(pid, &status, 0) < 0 || status) {
			fprintf(stderr, "procload: short task %ld failed\n", i);
			return 1;
		}
	}
	printf("done %lld\n", clock_ns(CLOCK_MONOTONIC) - t0);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc == 5 && !strcmp(argv[1], "-b"))
		return burst(argv[2], atol(argv[3]), atol(argv[4]));
	if (argc == 4 && atol(argv[2]) > 0 && atol(argv[3]) >= atol(argv[2]))
		return spread(argv[1], atol(argv[2]), atol(argv[3]));
	fprintf(stderr, "usage: procload DIR NCG NPROC | procload -b DIR N MS\n");
	return 2;
}
