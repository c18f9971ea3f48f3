/* SPDX-License-Identifier: GPL-2.0 */
/*
 * term.h - the interactive live view's terminal: raw mode (keys without
 * Enter, no echo) restored on every way out, and keys read with a timeout.
 */
#ifndef ENERGYSTAT_TERM_H
#define ENERGYSTAT_TERM_H

#include <stdbool.h>

#define KEY_NONE	0	/* the timeout passed */
#define KEY_REDRAW	-2	/* the window changed size, or the tool resumed */

bool term_interactive(void);	/* standard input and output are a terminal */
bool term_raw(void);		/* raw mode and its signal handlers; false: not */
void term_restore(void);	/* the terminal as it was; idempotent */
int term_key(int timeout_ms);	/* a key, KEY_NONE or KEY_REDRAW */

#endif /* ENERGYSTAT_TERM_H */
