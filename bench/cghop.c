// SPDX-License-Identifier: GPL-2.0
/*
 * cghop - a process that moves itself between two cgroups, timed (make
 * bench, migrate section). It opens DIR1/cgroup.procs and DIR2/cgroup.procs
 * once, then writes "0" (itself) to them alternately, N times in all: N
 * migrations through cgroup_attach_task(), each one firing the
 * cgroup_attach_task tracepoint once.
 *
 *   cghop N DIR1 DIR2
 *
 * Prints "hops <n> ns <ns>": n migrations done in ns nanoseconds
 * (CLOCK_MONOTONIC). It ends in DIR1 or DIR2; the caller moves it nowhere
 * else, so both cgroups are empty once it has exited.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static long long now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static int open_procs(const char *dir)
{
	char path[PATH_MAX];
	int fd;

	snprintf(path, sizeof(path), "%s/cgroup.procs", dir);
	fd = open(path, O_WRONLY);
	if (fd < 0)
		fprintf(stderr, "cghop: %s: %s\n", path, strerror(errno));
	return fd;
}

int main(int argc, char **argv)
{
	long long t0;
	long n, i;
	int fd[2];

	if (argc != 4) {
		fprintf(stderr, "usage: cghop N DIR1 DIR2\n");
		return 2;
	}
	n = atol(argv[1]);
	if (n < 1)
		return 2;
	fd[0] = open_procs(argv[2]);
	fd[1] = open_procs(argv[3]);
	if (fd[0] < 0 || fd[1] < 0)
		return 1;
	t0 = now_ns();
	for (i = 0; i < n; i++) {
		if (write(fd[i & 1], "0\n", 2) != 2) {
			fprintf(stderr, "cghop: hop %ld: %s\n", i,
				strerror(errno));
			return 1;
		}
	}
	printf("hops %ld ns %lld\n", n, now_ns() - t0);
	return 0;
}
