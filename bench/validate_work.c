// SPDX-License-Identifier: GPL-2.0
/*
 * validate_work - fixed amounts of work for the impact repeatability runs of
 * make validate (bench/validate.py). Unlike tests' cgwork, whose loops run
 * for a wall-clock time, every run here does the same work, so identical
 * runs differ only by what the machine does to them.
 *
 *   validate_work loops K          K thousand additions
 *   validate_work sleeps N US      N sleeps of US microseconds
 *   validate_work forks N K        N children in turn, K thousand each
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static void loops(long thousands)
{
	volatile unsigned long x = 0;

	for (long i = 0; i < thousands; i++)
		for (int j = 0; j < 1000; j++)
			x++;
}

int main(int argc, char **argv)
{
	if (argc == 3 && !strcmp(argv[1], "loops")) {
		loops(atol(argv[2]));
		return 0;
	}
	if (argc == 4 && !strcmp(argv[1], "sleeps")) {
		long n = atol(argv[2]), us = atol(argv[3]);
		struct timespec ts = { us / 1000000, us % 1000000 * 1000 };

		for (long i = 0; i < n; i++)
			nanosleep(&ts, NULL);
		return 0;
	}
	if (argc == 4 && !strcmp(argv[1], "forks")) {
		long n = atol(argv[2]), m = atol(argv[3]);

		for (long i = 0; i < n; i++) {
			pid_t p = fork();

			if (p < 0) {
				perror("fork");
				return 1;
			}
			if (!p) {
				loops(m);
				_exit(0);
			}
			waitpid(p, NULL, 0);
		}
		return 0;
	}
	fprintf(stderr, "usage: validate_work loops K | sleeps N US | forks N K\n");
	return 2;
}
