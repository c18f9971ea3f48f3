// SPDX-License-Identifier: GPL-2.0
/*
 * diag.c - error messages: one line each on stderr, prefixed "energystat: ".
 *
 * Per-cgroup errors are counted (they make the exit status 1) and printed up
 * to a limit, so that a tree of 10,000 broken files does not flood the
 * terminal. Callers escape paths with esc_term() so a message stays one line.
 */
#include <stdarg.h>
#include <stdio.h>

#include "diag.h"

static void vmsg(const char *fmt, va_list ap)
{
	fflush(stdout);
	fputs(PROG ": ", stderr);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
}

void diag_error(struct diag *d, const char *fmt, ...)
{
	va_list ap;

	d->errors++;
	if (d->shown >= d->limit)
		return;
	d->shown++;
	va_start(ap, fmt);
	vmsg(fmt, ap);
	va_end(ap);
}

void diag_msg(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vmsg(fmt, ap);
	va_end(ap);
}

void diag_finish(struct diag *d)
{
	if (d->errors > d->shown)
		diag_msg("%lu more errors not shown", d->errors - d->shown);
}
