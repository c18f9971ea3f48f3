# SPDX-License-Identifier: GPL-2.0
"""Shared by bench/validate.py (VM) and bench/validate_host.py (--host): the
error figures, the report (shaped like Kepler's validator report), the
summary table and the SVG plot. Standard library only."""
import html
import json
import math
import statistics
import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def errors(pairs):
    """pairs: [(expected, actual)] -> (mse, mape %, max ape %, n, zeros).

    MAPE skips pairs whose expected value is 0 (counted in zeros)."""
    if not pairs:
        return None, None, None, 0, 0
    mse = sum((a - e) ** 2 for e, a in pairs) / len(pairs)
    apes = [abs(a - e) / abs(e) * 100 for e, a in pairs if e]
    mape = sum(apes) / len(apes) if apes else None
    return mse, mape, max(apes) if apes else None, len(pairs), \
        len(pairs) - len(apes)


# Where the root's energy goes besides tasks (the irq, softirq and steal keys
# are absent from records of builds before them: 0).
NOT_TASKS = ('idle_uj', 'irq_uj', 'softirq_uj', 'steal_uj')


def conserved(s):
    """(the parts of one root energy.stat read, its total_uj): equal if
    every µJ is somewhere."""
    return (s['energy_uj'] + sum(s.get(k, 0) for k in NOT_TASKS),
            s['total_uj'])


def rnd(x, digits=6):
    """Round for the report, keeping small errors visible."""
    if x is None or x == 0 or not math.isfinite(x):
        return x
    return float(f'{x:.{digits}g}')


def result(metric, mode, pairs, unit, limit=None, mse_limit=None, **extra):
    """One entry of validation-result. limit: MAPE must be below it;
    mse_limit: MSE must not exceed it (0 for exact invariants)."""
    mse, mape, max_ape, n, zeros = errors(pairs)
    r = {'metric_name': metric, 'mode': mode, 'mse': rnd(mse),
         'mape': rnd(mape), 'max_ape': rnd(max_ape), 'samples': n,
         'unit': unit}
    if zeros:
        r['expected_zero'] = zeros
    ok = n > 0
    if limit is not None:
        r['mape_limit'] = limit
        ok = ok and mape is not None and mape < limit
    if mse_limit is not None:
        r['mse_limit'] = mse_limit
        ok = ok and mse is not None and mse <= mse_limit
    if limit is not None or mse_limit is not None:
        r['pass'] = ok
    r.update(extra)
    return r


def spread(values, unit, metric, mode, reference=None, **extra):
    """Repeatability of identical runs: MSE and MAPE against their mean,
    and the coefficient of variation (%). reference: {name: values} whose
    CV is reported alongside (the workload's own variation)."""
    mean = statistics.fmean(values) if values else 0
    pairs = [(mean, v) for v in values]
    mse, mape, max_ape, n, _ = errors(pairs)
    cv = statistics.pstdev(values) / mean * 100 if mean and n > 1 else None
    r = {'metric_name': metric, 'mode': mode, 'mse': rnd(mse),
         'mape': rnd(mape), 'max_ape': rnd(max_ape), 'samples': n,
         'unit': unit, 'mean': rnd(mean), 'cv': rnd(cv)}
    for name, vals in (reference or {}).items():
        m = statistics.fmean(vals) if vals else 0
        r[f'cv_{name}'] = rnd(statistics.pstdev(vals) / m * 100) \
            if m and len(vals) > 1 else None
    r.update(extra)
    return r


def git_describe():
    def git(*a):
        p = subprocess.run(['git', '-C', str(REPO), *a], text=True,
                           capture_output=True)
        return p.stdout.strip() if p.returncode == 0 else ''
    head = git('rev-parse', '--short=12', 'HEAD')
    dirty = git('status', '--porcelain', '--', 'kmod', 'include', 'Kbuild')
    return head + ('-dirty' if head and dirty else '')


def write_report(path, build_info, specs, results, run):
    doc = {'report': {'build_info': build_info, 'specs': specs,
                      'validation-result': results},
           'run': run}
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix('.tmp')
    tmp.write_text(json.dumps(doc, indent=2) + '\n')
    tmp.replace(path)
    return doc


def fmt(x):
    if x is None:
        return '-'
    if x == 0:
        return '0'
    if abs(x) >= 1e5 or abs(x) < 1e-3:
        return f'{x:.3g}'
    return f'{x:.4g}'


def summary(results):
    """The table printed at the end of a run."""
    rows = [('metric', 'mode', 'n', 'MSE', 'unit²', 'MAPE %', 'limit',
             'result')]
    for r in results:
        limit = []
        if 'mape_limit' in r:
            limit.append(f'<{r["mape_limit"]}%')
        if 'mse_limit' in r:
            limit.append(f'MSE<={r["mse_limit"]}')
        verdict = {True: 'ok', False: 'FAIL'}.get(r.get('pass'), '')
        if 'cv' in r:
            verdict = f'CV {fmt(r["cv"])}%'
        if r.get('check'):
            verdict = f'{verdict} ({r["check"]})'.strip()
        if r.get('not_run'):
            verdict = r['not_run']
        rows.append((r['metric_name'], r['mode'], str(r['samples']),
                     fmt(r['mse']), r.get('unit', ''), fmt(r['mape']),
                     ' '.join(limit), verdict))
    w = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    return '\n'.join('  '.join(c.ljust(w[i]) for i, c in enumerate(row))
                     .rstrip() for row in rows)


# ---- SVG -----------------------------------------------------------------

PALETTE = ['#1f77b4', '#d62728', '#2ca02c', '#9467bd', '#ff7f0e',
           '#8c564b', '#e377c2', '#17becf', '#bcbd22']


def nice_step(span, ticks=6):
    raw = span / max(ticks, 1)
    mag = 10 ** math.floor(math.log10(raw)) if raw > 0 else 1
    for m in (1, 2, 2.5, 5, 10):
        if raw <= m * mag:
            return m * mag
    return 10 * mag


def svg_plot(path, title, series, phases, xlabel, ylabel, note=''):
    """Step plot. series: [{'name', 'points': [(x0, x1, y)], 'color',
    'dash', 'marks': [(x, y)]}]; phases: [(x0, x1, label)]."""
    W, H = 960, 500
    L, R, T, B = 70, 210, 50, 60
    pw, ph = W - L - R, H - T - B
    xs = [x for s in series for p in s['points'] for x in p[:2]] + \
         [x for p in phases for x in p[:2]]
    ys = [p[2] for s in series for p in s['points']] + \
         [m[1] for s in series for m in s.get('marks', [])]
    x0, x1 = (min(xs), max(xs)) if xs else (0, 1)
    ymax = max(ys + [0.1]) * 1.08
    ystep = nice_step(ymax)
    ymax = math.ceil(ymax / ystep) * ystep
    xstep = nice_step(x1 - x0 or 1, 10)

    def X(x):
        return L + (x - x0) / ((x1 - x0) or 1) * pw

    def Y(y):
        return T + ph - y / ymax * ph

    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" '
           f'height="{H}" viewBox="0 0 {W} {H}" font-family="sans-serif" '
           f'font-size="12">',
           f'<rect width="{W}" height="{H}" fill="white"/>',
           f'<text x="{L}" y="22" font-size="15" font-weight="bold">'
           f'{html.escape(title)}</text>']
    if note:
        out.append(f'<text x="{L}" y="40" fill="#555">{html.escape(note)}'
                   '</text>')
    for i, (a, b, label) in enumerate(phases):
        if i % 2 == 0:
            out.append(f'<rect x="{X(a):.1f}" y="{T}" '
                       f'width="{X(b) - X(a):.1f}" height="{ph}" '
                       'fill="#f2f2f2"/>')
        out.append(f'<text x="{(X(a) + X(b)) / 2:.1f}" y="{T + 14}" '
                   f'text-anchor="middle" fill="#444">{html.escape(label)}'
                   '</text>')
    y = 0.0
    while y <= ymax + 1e-9:
        out.append(f'<line x1="{L}" x2="{L + pw}" y1="{Y(y):.1f}" '
                   f'y2="{Y(y):.1f}" stroke="#ddd"/>')
        out.append(f'<text x="{L - 6}" y="{Y(y) + 4:.1f}" text-anchor="end">'
                   f'{y:g}</text>')
        y += ystep
    x = math.ceil(x0 / xstep) * xstep
    while x <= x1 + 1e-9:
        out.append(f'<line x1="{X(x):.1f}" x2="{X(x):.1f}" y1="{T + ph}" '
                   f'y2="{T + ph + 4}" stroke="#333"/>')
        out.append(f'<text x="{X(x):.1f}" y="{T + ph + 18}" '
                   f'text-anchor="middle">{x:g}</text>')
        x += xstep
    out.append(f'<rect x="{L}" y="{T}" width="{pw}" height="{ph}" '
               'fill="none" stroke="#333"/>')
    out.append(f'<text x="{L + pw / 2}" y="{H - 15}" text-anchor="middle">'
               f'{html.escape(xlabel)}</text>')
    out.append(f'<text transform="translate(18 {T + ph / 2}) rotate(-90)" '
               f'text-anchor="middle">{html.escape(ylabel)}</text>')
    for i, s in enumerate(series):
        color = s.get('color') or PALETTE[i % len(PALETTE)]
        dash = ' stroke-dasharray="5 3"' if s.get('dash') else ''
        segs, last = [], None
        for a, b, y in s['points']:
            if last is None or abs(a - last) > 1e-6:
                segs.append([])          # not contiguous: a new line
            segs[-1] += [f'{X(a):.1f},{Y(y):.1f}', f'{X(b):.1f},{Y(y):.1f}']
            last = b
        for pts in segs:
            out.append(f'<polyline points="{" ".join(pts)}" fill="none" '
                       f'stroke="{color}" stroke-width="1.8"{dash}/>')
        for mx, my in s.get('marks', []):
            out.append(f'<circle cx="{X(mx):.1f}" cy="{Y(my):.1f}" r="3.2" '
                       f'fill="none" stroke="black" stroke-width="1"/>')
        ly = T + 10 + i * 18
        out.append(f'<line x1="{L + pw + 12}" x2="{L + pw + 36}" y1="{ly}" '
                   f'y2="{ly}" stroke="{color}" stroke-width="2.5"{dash}/>')
        out.append(f'<text x="{L + pw + 42}" y="{ly + 4}">'
                   f'{html.escape(s["name"])}</text>')
    if any(s.get('marks') for s in series):
        ly = T + 10 + len(series) * 18
        out.append(f'<circle cx="{L + pw + 24}" cy="{ly}" r="3.2" '
                   'fill="none" stroke="black"/>')
        out.append(f'<text x="{L + pw + 42}" y="{ly + 4}">expected '
                   '(policy)</text>')
    out.append('</svg>')
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text('\n'.join(out) + '\n')
