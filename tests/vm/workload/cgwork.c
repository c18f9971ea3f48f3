// SPDX-License-Identifier: GPL-2.0
/*
 * cgwork - small, cheap workloads for the VM tests (a python process per
 * cgroup is too heavy under TCG).
 *
 *   cgwork [-c|-C CGROUP_DIR] [-p CPU] busy SECONDS
 *   cgwork [-c|-C CGROUP_DIR] [-p CPU] cpu CPU_SECONDS
 *   cgwork [-c|-C CGROUP_DIR] [-p CPU] sleeper PERIOD_US SECONDS
 *   cgwork [-c|-C CGROUP_DIR] [-p CPU] yield SECONDS
 *   cgwork [-c|-C CGROUP_DIR] [-p CPU] spawn N BUSY_US
 *   cgwork [-c|-C CGROUP_DIR] [-p CPU] hop BASE_DIR N BUSY_US
 *
 * -c moves the process into the cgroup first. -C runs the work in a child
 * created in the cgroup (clone3 with CLONE_INTO_CGROUP, as systemd starts
 * services): it never runs anywhere else, so no move is accounted; the
 * process waits for it and exits with its status, and the child dies with
 * it. -p pins to one CPU.
 * busy spins for SECONDS of wall time, cpu until the process has used
 * CPU_SECONDS of CPU time, however long the CPU is shared.
 * yield calls sched_yield() for SECONDS of wall time: with others runnable
 * on its CPU it hands over at once, so many processes take turns many times
 * a tick.
 * hop creates BASE_DIR/hN, runs BUSY_US in it, moves back and removes it, N
 * times: cgroup churn without a process per cgroup.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/sched.h>
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

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void spin_for(double sec)
{
	double end = now() + sec;
	volatile unsigned long x = 0;

	while (now() < end)
		for (int i = 0; i < 1000; i++)
			x++;
}

static double cpu_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* From here, not from exec: what ran before -c's move is not the cgroup's. */
static void spin_cpu(double sec)
{
	volatile unsigned long x = 0;
	double end = cpu_now() + sec;

	do {
		for (int i = 0; i < 1000; i++)
			x++;
	} while (cpu_now() < end);
}

static int join(const char *dir)
{
	char path[4096], pid[32];
	int fd, n;

	snprintf(path, sizeof(path), "%s/cgroup.procs", dir);
	fd = open(path, O_WRONLY);
	if (fd < 0) {
		perror(path);
		return -1;
	}
	n = snprintf(pid, sizeof(pid), "%d\n", getpid());
	if (write(fd, pid, n) != n) {
		perror(path);
		close(fd);
		return -1;
	}
	return close(fd);
}

/* Go on in a child created in cgroup @dir; this process only waits. */
static int spawn_into(const char *dir)
{
	struct clone_args args = { .flags = CLONE_INTO_CGROUP,
				   .exit_signal = SIGCHLD };
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC), status;
	long pid;

	if (fd < 0) {
		perror(dir);
		return -1;
	}
	args.cgroup = fd;
	pid = syscall(SYS_clone3, &args, sizeof(args));
	if (pid < 0) {
		perror("clone3");
		close(fd);
		return -1;
	}
	close(fd);
	if (pid == 0) {
		/*
		 * One thread, nothing buffered: the raw clone3 skipping
		 * glibc's fork handlers is harmless. Die with the waiter, so
		 * a killed test leaves no worker in the cgroup.
		 */
		if (prctl(PR_SET_PDEATHSIG, SIGKILL) || getppid() == 1)
			exit(1);
		return 0;
	}
	while (waitpid(pid, &status, 0) < 0) {
		if (errno != EINTR) {
			perror("waitpid");
			kill(pid, SIGKILL);
			exit(1);
		}
	}
	exit(WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status));
}

static int pin(int cpu)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	return sched_setaffinity(0, sizeof(set), &set);
}

static int hop(const char *base, long n, long busy_us)
{
	char dir[4096];

	for (long i = 0; i < n; i++) {
		snprintf(dir, sizeof(dir), "%s/h%ld", base, i);
		if (mkdir(dir, 0755) && errno != EEXIST) {
			perror(dir);
			return 1;
		}
		if (join(dir))
			return 1;
		spin_for(busy_us / 1e6);
		if (join(base))
			return 1;
		if (rmdir(dir)) {
			perror(dir);
			return 1;
		}
	}
	return 0;
}

int main(int argc, char **argv)
{
	int opt;

	while ((opt = getopt(argc, argv, "+c:C:p:")) != -1) {
		if (opt == 'c' && join(optarg))
			return 1;
		if (opt == 'C' && spawn_into(optarg))
			return 1;
		if (opt == 'p' && pin(atoi(optarg))) {
			perror("sched_setaffinity");
			return 1;
		}
		if (opt == '?')
			return 2;
	}
	argc -= optind;
	argv += optind;
	if (argc >= 2 && !strcmp(argv[0], "busy")) {
		spin_for(atof(argv[1]));
		return 0;
	}
	if (argc >= 2 && !strcmp(argv[0], "cpu")) {
		spin_cpu(atof(argv[1]));
		return 0;
	}
	if (argc >= 3 && !strcmp(argv[0], "sleeper")) {
		double end = now() + atof(argv[2]);
		long period = atol(argv[1]);

		while (now() < end)
			usleep(period);
		return 0;
	}
	if (argc >= 2 && !strcmp(argv[0], "yield")) {
		double end = now() + atof(argv[1]);

		while (now() < end)
			sched_yield();
		return 0;
	}
	if (argc >= 3 && !strcmp(argv[0], "spawn")) {
		long n = atol(argv[1]), busy = atol(argv[2]);

		for (long i = 0; i < n; i++) {
			pid_t p = fork();

			if (p < 0) {
				perror("fork");
				return 1;
			}
			if (!p) {
				spin_for(busy / 1e6);
				_exit(0);
			}
			waitpid(p, NULL, 0);
		}
		return 0;
	}
	if (argc >= 4 && !strcmp(argv[0], "hop"))
		return hop(argv[1], atol(argv[2]), atol(argv[3]));
	fprintf(stderr, "usage: cgwork [-c|-C CGROUP] [-p CPU] busy SEC | cpu CPU_SEC | sleeper PERIOD_US SEC | yield SEC | spawn N BUSY_US | hop BASE N BUSY_US\n");
	return 2;
}
