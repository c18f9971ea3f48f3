// SPDX-License-Identifier: GPL-2.0
/*
 * impact.c - Apple's Energy Impact formula, and its coefficients as text.
 *
 * The coefficients are written and shown in Apple's units ("1.0", "2e-4",
 * "0.8") and kept as 1e-9 fixed point, so that the formula is exact integer
 * arithmetic: parsing and formatting need no floating point, and the
 * formula uses 128-bit intermediates (cge_mul_div_u64() from split.c).
 */
#include <linux/types.h>
#include <linux/ctype.h>
#include <linux/errno.h>
#include <linux/kernel.h>
#include <linux/limits.h>
#include <linux/math64.h>
#include <linux/overflow.h>
#include <linux/string.h>

#include "impact.h"
#include "split.h"

/* decimal places of the fixed point, 10^CGE_COEF_PLACES == CGE_COEF_ONE */
#define CGE_COEF_PLACES		9
/*
 * Exponents are clamped to this magnitude while parsed: far beyond any
 * string's length, so the clamped value gives the same result, and it keeps
 * the digit positions well inside an s64.
 */
#define CGE_EXP_CLAMP		1000000000000LL

/**
 * cge_mul10_add - @*acc = @*acc * 10 + @d, refusing to overflow
 * @acc: the accumulator
 * @d: the digit to append, 0..9
 *
 * Return: true if the result fits in 64 bits (@acc updated), else false.
 */
static bool cge_mul10_add(u64 *acc, unsigned int d)
{
	u64 v;

	if (check_mul_overflow(*acc, 10ULL, &v) ||
	    check_add_overflow(v, (u64)d, &v))
		return false;
	*acc = v;
	return true;
}

/**
 * cge_coef_parse - parse a coefficient written in Apple's units
 * @s: the text: digits with an optional decimal point (at least one digit
 *     on either side of it), an optional exponent ("e" or "E", an optional
 *     sign, at least one digit), an optional leading "+", and optional
 *     whitespace around it all (so the trailing newline of a sysfs write is
 *     accepted). For example "1", "1.0", "0.0002", "2e-4", "2E-4", ".5",
 *     "8e-1\n".
 * @max: the largest value accepted, in CGE_COEF_ONE units
 * @out: the value in CGE_COEF_ONE units (1e-9 fixed point), set on success
 *
 * The value is rounded half up at the ninth decimal: "0.0000000005" gives
 * 1, "0.0000000004" gives 0 (a valid coefficient). Any number of digits and
 * any exponent are accepted without overflow ("1e-999999" is 0); the value
 * after rounding must not exceed @max. No floating point is used.
 *
 * Return: 0 and @*out set, or -EINVAL (@*out untouched) for malformed text,
 * a negative number, "inf" or "nan", or a value above @max.
 */
int cge_coef_parse(const char *s, u64 max, u64 *out)
{
	const char *int_start, *int_end, *frac_start, *frac_end, *p;
	s64 exp = 0, pos, last_pos = 0;
	bool exp_neg = false, round_up = false;
	u64 acc = 0;

	if (!s)
		return -EINVAL;
	p = skip_spaces(s);
	if (*p == '+')
		p++;

	/* 1. syntax: [digits][.digits][e[+-]digits], some mantissa digit */
	int_start = p;
	while (isdigit(*p))
		p++;
	int_end = p;
	frac_start = p;
	if (*p == '.') {
		frac_start = ++p;
		while (isdigit(*p))
			p++;
	}
	frac_end = p;
	if (int_end == int_start && frac_end == frac_start)
		return -EINVAL;
	if (*p == 'e' || *p == 'E') {
		p++;
		if (*p == '+' || *p == '-')
			exp_neg = *p++ == '-';
		if (!isdigit(*p))
			return -EINVAL;
		for (; isdigit(*p); p++)
			if (exp < CGE_EXP_CLAMP)
				exp = exp * 10 + (*p - '0');
		if (exp_neg)
			exp = -exp;
	}
	p = skip_spaces(p);
	if (*p)
		return -EINVAL;

	/*
	 * 2. value: the first digit is worth 10^pos units of 1e-9. Digits at
	 * pos >= 0 are accumulated, the digit at pos -1 decides the rounding
	 * (half up needs no other digit), the rest are below the precision.
	 */
	pos = (s64)(int_end - int_start) - 1 + exp + CGE_COEF_PLACES;
	for (p = int_start; p < frac_end && pos >= -1; p++) {
		if (*p == '.')
			continue;
		if (pos == -1) {
			round_up = *p >= '5';
			break;
		}
		if (!cge_mul10_add(&acc, *p - '0'))
			return -EINVAL;
		last_pos = pos--;
	}
	/* trailing zeros implied by the exponent, e.g. "1e3" */
	for (; acc && last_pos > 0; last_pos--)
		if (!cge_mul10_add(&acc, 0))
			return -EINVAL;
	if (round_up && check_add_overflow(acc, 1ULL, &acc))
		return -EINVAL;
	if (acc > max)
		return -EINVAL;
	*out = acc;
	return 0;
}

/**
 * cge_coef_format - the shortest decimal text of a coefficient
 * @buf: where to write it, NUL-terminated (truncated as by snprintf())
 * @size: the size of @buf
 * @v: the coefficient in CGE_COEF_ONE units
 *
 * Plain decimal without trailing zeros, nor a point if the value is whole:
 * 1000000000 is "1", 200000 is "0.0002", 800000000 is "0.8", 0 is "0".
 * cge_coef_parse() gives @v back from this text.
 *
 * Return: the length of the text (without the NUL) as snprintf() does,
 * even if @buf was too small for it.
 */
int cge_coef_format(char *buf, size_t size, u64 v)
{
	u32 frac;
	u64 whole = div_u64_rem(v, (u32)CGE_COEF_ONE, &frac);
	int width = CGE_COEF_PLACES;

	if (!frac)
		return snprintf(buf, size, "%llu", whole);
	while (!(frac % 10)) {
		frac /= 10;
		width--;
	}
	return snprintf(buf, size, "%llu.%0*u", whole, width, frac);
}

/**
 * cge_impact_ns - energy impact of one interval, in CPU-ns equivalents
 * @k: the coefficients
 * @fg_ns: CPU time at default QoS
 * @bg_ns: CPU time at background QoS (SCHED_IDLE, SCHED_BATCH, nice >= 10)
 * @wakeups: times a CPU left idle to run the tasks
 *
 * (kcpu_time * @fg_ns + kqos_background * @bg_ns) / CGE_COEF_ONE +
 * kcpu_wakeups * @wakeups, rounded down once: exact, with 128-bit
 * intermediates. kcpu_wakeups in 1e-9 s units is the ns per wakeup.
 *
 * Return: the impact, U64_MAX if it does not fit in 64 bits.
 */
u64 cge_impact_ns(const struct cge_impact_coefs *k, u64 fg_ns, u64 bg_ns,
		  u64 wakeups)
{
	u64 qf, qb, rf, rb, sum, w;

	qf = cge_mul_div_u64(k->kcpu_time, fg_ns, CGE_COEF_ONE);
	qb = cge_mul_div_u64(k->kqos_background, bg_ns, CGE_COEF_ONE);
	/* U64_MAX may be saturated: the impact is at least that anyway */
	if (qf == U64_MAX || qb == U64_MAX)
		return U64_MAX;
	/*
	 * The remainders are < CGE_COEF_ONE, so the low 64 bits of
	 * a * b - q * CGE_COEF_ONE (wrapping arithmetic) are exact, and
	 * together they make at most one more unit: no division.
	 */
	rf = k->kcpu_time * fg_ns - qf * CGE_COEF_ONE;
	rb = k->kqos_background * bg_ns - qb * CGE_COEF_ONE;
	if (check_add_overflow(qf, qb, &sum) ||
	    check_add_overflow(sum, (u64)(rf + rb >= CGE_COEF_ONE), &sum) ||
	    check_mul_overflow(k->kcpu_wakeups, wakeups, &w) ||
	    check_add_overflow(sum, w, &sum))
		return U64_MAX;
	return sum;
}
