// SPDX-License-Identifier: GPL-2.0
/*
 * term.c - raw mode for the interactive live view, as systemd-cgtop does:
 * canonical mode and echo off on standard input, so a key acts at once and
 * is not printed over the table. ISIG stays on: Ctrl-C and Ctrl-Z still
 * send their signals, whose handlers put the terminal back first
 * (SIGINT, SIGTERM, SIGHUP, SIGQUIT: then die by the signal as before;
 * SIGTSTP: then stop; SIGCONT: raw again and a redraw). SIGWINCH asks for
 * a redraw. Handlers use only tcsetattr, signal, raise and sigprocmask,
 * which are async-signal-safe.
 */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <termios.h>
#include <unistd.h>

#include "term.h"

static struct termios saved, raw;
static volatile sig_atomic_t raw_on;	/* the terminal may be in raw mode */
static volatile sig_atomic_t raw_wanted;	/* term_raw() succeeded, no restore */
static volatile sig_atomic_t redraw;	/* SIGWINCH or SIGCONT came */

static const int fatal_sigs[] = { SIGINT, SIGTERM, SIGHUP, SIGQUIT };

bool term_interactive(void)
{
	return isatty(STDIN_FILENO) && isatty(STDOUT_FILENO);
}

/* The terminal as it was; raw mode still wanted after a SIGCONT. */
static void restore(void)
{
	if (raw_on)
		tcsetattr(STDIN_FILENO, TCSADRAIN, &saved);
	raw_on = 0;
}

void term_restore(void)
{
	raw_wanted = 0;
	restore();
}

/* A signal that ends the tool: the terminal back, then its default action. */
static void on_fatal(int sig)
{
	restore();
	signal(sig, SIG_DFL);
	raise(sig);
}

/* Install handler for sig, without SA_RESTART so that poll() wakes up. */
static void handle(int sig, void (*handler)(int))
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = handler;
	sigemptyset(&sa.sa_mask);
	sigaction(sig, &sa, NULL);
}

/*
 * Ctrl-Z: the terminal back, stop; once continued, raw again. The handlers
 * that return keep errno, which the interrupted poll() or read() reads.
 */
static void on_tstp(int sig)
{
	int e = errno;
	sigset_t set;

	(void)sig;
	restore();
	signal(SIGTSTP, SIG_DFL);
	sigemptyset(&set);
	sigaddset(&set, SIGTSTP);
	sigprocmask(SIG_UNBLOCK, &set, NULL);
	raise(SIGTSTP);
	/* continued here (SIGCONT's handler ran first) */
	handle(SIGTSTP, on_tstp);
	errno = e;
}

/* Continued (after Ctrl-Z or SIGSTOP): raw mode again, and a redraw. */
static void on_cont(int sig)
{
	int e = errno;

	(void)sig;
	if (raw_wanted) {
		raw_on = 1;
		if (tcsetattr(STDIN_FILENO, TCSADRAIN, &raw) != 0)
			raw_on = 0;
	}
	redraw = 1;
	errno = e;
}

static void on_winch(int sig)
{
	(void)sig;
	redraw = 1;
}

bool term_raw(void)
{
	if (!term_interactive() || tcgetattr(STDIN_FILENO, &saved) != 0)
		return false;
	raw = saved;
	raw.c_lflag &= ~(tcflag_t)(ICANON | ECHO);
	raw.c_cc[VMIN] = 1;
	raw.c_cc[VTIME] = 0;
	for (size_t i = 0; i < sizeof(fatal_sigs) / sizeof(fatal_sigs[0]); i++)
		handle(fatal_sigs[i], on_fatal);
	handle(SIGTSTP, on_tstp);
	handle(SIGCONT, on_cont);
	handle(SIGWINCH, on_winch);
	/* raw_on first: a signal during tcsetattr still restores */
	raw_wanted = 1;
	raw_on = 1;
	if (tcsetattr(STDIN_FILENO, TCSADRAIN, &raw) != 0) {
		raw_wanted = 0;
		raw_on = 0;
		return false;
	}
	atexit(term_restore);
	return true;
}

/*
 * Wait up to timeout_ms for a key: the key (a byte), KEY_NONE when the time
 * passed, KEY_REDRAW after SIGWINCH or SIGCONT. End of input (the terminal
 * went away) reads as 'q'.
 */
int term_key(int timeout_ms)
{
	struct pollfd p = { .fd = STDIN_FILENO, .events = POLLIN };
	unsigned char c;
	int n;

	if (redraw) {
		redraw = 0;
		return KEY_REDRAW;
	}
	n = poll(&p, 1, timeout_ms < 0 ? 0 : timeout_ms);
	if (redraw) {
		redraw = 0;
		return KEY_REDRAW;
	}
	if (n < 0 && errno == EINTR)
		return KEY_REDRAW;
	if (n <= 0)
		return KEY_NONE;
	n = (int)read(STDIN_FILENO, &c, 1);
	if (n == 0 || (n < 0 && errno != EINTR && errno != EAGAIN))
		return 'q';
	return n == 1 ? c : KEY_NONE;
}
