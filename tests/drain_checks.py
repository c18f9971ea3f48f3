# SPDX-License-Identifier: GPL-2.0
"""What the drain must give on a ticked CPU and on a tickless one
(tests/vm/guest/drain.py's s_drain): test_engine runs these checks on its
boot (both CPUs ticked), test_accuracy on its nohz_full=1 boot (CPU 1
tickless while its loop runs alone there).  CPU 1 runs one busy loop and
nothing else of the guest's tasks (the scenario's script is on CPU 0), but
for per-CPU kernel threads: on a ticked CPU 1 they ran in every interval
(7 to 18 schedule() calls per interval, 0.6-1.8 % of it, on 6.1), so the
per-interval check whose reference is the interval's length runs on the
tickless CPU, whose intervals are without them on most kernels (quiet()).
The other per-interval check's reference is the kernel's trace of each
loop's switches (traced(), check_traced()): test_accuracy asserts it for
both loops in make check's solo part (CPU 0's, ticked, nine spans in ten);
collect_vm.py records it for both, in test_engine's boot too."""
from workload import ok

# The windows of the 1 s checks: from a snapshot to the first one at least
# this long after it.
WINDOW_NS = 1_000_000_000


def _d(a, b, cg, key):
    return b[cg][key] - a[cg][key]


def intervals(res):
    """Each pair of consecutive snapshots one to span_max samples apart
    (the scenario's: on a slow host a read after a sample outlasts the
    interval, tests/vm/guest/drain.py): the samples between them (n), the
    span's length (the module's last_sample_ns), the schedule() calls on
    CPU 1 in it (0: its loop ran the whole span, nothing else did) and the
    loop's usage_usec, µs."""
    d = ok(res, 's_drain')
    s = d['series']
    out = []
    for a, b in zip(s, s[1:]):
        n = b['samples'] - a['samples']
        if not 1 <= n <= d['span_max']:
            continue
        out.append({
            'n': n,
            'len_us': (b['last_sample_ns'] - a['last_sample_ns']) / 1000,
            'schedule_calls': b['schedule_calls']['1'] -
            a['schedule_calls']['1'],
            'loop1_us': _d(a, b, 'loop1', 'usage_usec')})
    return out


def windows(res):
    """Windows of WINDOW_NS or more, snapshot to snapshot: each loop's CPU
    time and energy, and CPU 1's busy time by the kernel's idle time
    (/proc/stat, 10 ms resolution)."""
    s = ok(res, 's_drain')['series']
    out, i = [], 0
    for j in range(1, len(s)):
        a, b = s[i], s[j]
        if b['last_sample_ns'] - a['last_sample_ns'] < WINDOW_NS:
            continue
        w = (b['last_sample_ns'] - a['last_sample_ns']) / 1000
        out.append({
            'len_us': w,
            'busy1_us': w - (b['idle_usec']['1'] - a['idle_usec']['1']),
            **{cg: {'usage_us': _d(a, b, cg, 'usage_usec'),
                    'energy_uj': _d(a, b, cg, 'energy_uj')}
               for cg in ('loop0', 'loop1')}})
        i = j
    return out


# The quiet spans the per-interval check takes at least
QUIET_MIN = 8
# How far the guest's runtime clock may lag a CPU's last tick, µs: a tick
# at HZ=250 (check_intervals)
TICK_US = 4_000


def quiet(every):
    """The quietest spans: the QUIET_MIN in which CPU 1 called schedule()
    least often per interval, and every span as quiet as the last of them.
    Where CPU 1 is tickless and alone with its loop in most intervals (0
    calls in 24-36 of 35-36 on every kernel in tests/results/drain.jsonl
    before 5a5d44c's rows), those with no call: not a thread that took a
    share of CPU 1 (one on 6.1 took 4.3 ms in about 2 calls). Where it
    never was (6.12-rt with nohz_full in three runs: 8-19 calls in every
    interval in f82ff72's, 4-17 in ed16be9's, and in 5a5d44c's row the 10
    quietest of 35 with 10, against 0 calls in 31 of 35 in fb98038's and
    5d7e24a's rows; all three after the guests held trace events on,
    a37fe89), the spans with the fewest switches, whose threads took 0.25-
    0.47 % of the interval in 5a5d44c's row. There a stale drain lags by
    the time since CPU 1's last switch, tens of ms between switches this
    rare, and fails the bound as on a tickless CPU."""
    per = sorted(x['schedule_calls'] / x['n'] for x in every)
    limit = per[min(len(per), QUIET_MIN) - 1] if per else 0
    return [x for x in every if x['schedule_calls'] <= limit * x['n']]


def check_intervals(res):
    every = intervals(res)
    iv = quiet(every)
    # The premise: QUIET_MIN spans or more (the scenario reads on until it
    # caught 12)
    assert len(iv) >= QUIET_MIN, every
    # The loop had CPU 1 for the whole span: it is charged the span,
    # within 2 % of an interval. A span's error is its end's minus its
    # start's, each what the drain at that sample left uncharged or
    # charged ahead, so a span of several intervals is held to one
    # interval's bound. (Errors of two ends that cancel are not seen: a
    # drain stale at every other sample passes spans of two samples.)
    # Before the drain read the running slice from the task clock, a
    # ticked CPU's interval was up to a tick, 4 ms, off, and a tickless
    # one's 0 for nine intervals of ten, then a whole second.
    # A host that stops the guest's vCPUs for a while breaks these
    # bounds: under a CPU quota on QEMU one sample's end was 5.8 ms (0.35
    # of a CPU in 2.86 ms periods: within 2 % and a tick, but two
    # neighbouring spans each way, 2 of 16 and of 18, more than one in
    # ten) and 17 ms (in 10 ms periods) off CPU 1's drain (runs on this
    # machine, not recorded; docs/testing.md, "Slow hosts"). CI's slow
    # host caught 0-6 single intervals per kernel, all within 0.2 ms.
    off = [abs(x['loop1_us'] - x['len_us']) / (x['len_us'] / x['n'])
           for x in iv]
    assert sum(e <= 0.02 for e in off) >= 0.9 * len(iv), iv
    # The guest's TSC is unstable (QEMU's TCG): sched_clock_cpu() then
    # runs at most a tick (4 ms at HZ=250) past a CPU's last tick, and the
    # sampler's reading of CPU 1's clock lags when its own CPU's tick is
    # late (1 interval of 26 at -3.8 ms on 6.1, the others within 0.06 %;
    # a stable TSC, as on servers, has no such bound). Each end lags by a
    # tick at most, so a span of several samples as well.
    assert all(abs(x['loop1_us'] - x['len_us']) <=
               0.02 * x['len_us'] / x['n'] + TICK_US for x in iv), iv
    return iv


def on_cpu_ns(runs, t0, t1):
    """The time in [t0, t1] that the runs (SwitchTrace.runs(): [cpu, in,
    out], None for an end outside the trace) cover, ns."""
    lo, hi = float('-inf'), float('inf')
    return sum(max(0, min(t1, hi if b is None else b) -
                   max(t0, lo if a is None else a)) for _, a, b in runs)


def traced(res):
    """Each span of one to span_max samples between consecutive snapshots
    (as intervals()), and for each loop its charge against the time the
    kernel's switch trace has it on its CPU over the span's sample times
    (tests/vm/guest/drain.py, SwitchTrace): err_pct, charged minus traced
    in % of one interval (the span's length over its samples)."""
    d = ok(res, 's_drain')
    s, runs = d['series'], d['trace']['runs']
    out = []
    for a, b in zip(s, s[1:]):
        n = b['samples'] - a['samples']
        if not 1 <= n <= d['span_max']:
            continue
        t0, t1 = a['last_sample_ns'], b['last_sample_ns']
        row = {'n': n, 'len_us': (t1 - t0) / 1000}
        for cg in ('loop0', 'loop1'):
            ref = on_cpu_ns(runs[cg], t0, t1) / 1000
            got = _d(a, b, cg, 'usage_usec')
            row[cg] = {'charged_us': got, 'traced_us': round(ref, 1),
                       'err_pct': round(100 * (got - ref) /
                                        (row['len_us'] / n), 3)}
        out.append(row)
    return out


def check_traced(res):
    """loop1's charge in every span against its traced time on CPU 1
    (tickless where the kernel has nohz_full; alone there but for per-CPU
    kernel threads, which the trace, unlike the interval's length, leaves
    out), and loop0's on the ticked CPU 0, with this script and the
    sampler, held to the nine-in-ten bound only (collect_vm.py,
    tests/results/drain.jsonl): alone on the host, in two runs on every
    kernel, within 2 % of an interval in 489 spans of 492, the others
    2.06, 2.54 and 12.39 % off. In the 12.39 %
    span (5.10) the module charged it 10.9 ms more than the trace has it on
    the CPU, its neighbours were within 0.5 %, and over the run the module
    matched cpu.stat to the µs: the kernel's own runtime held time that
    the trace gives another task (how is not measured; a runqueue clock,
    sched_clock_cpu() on the guest's unstable TSC, that lags while the
    host holds the vCPU and catches up at a tick charged to whichever task
    runs then would do it). In one run beside another make check (not
    recorded), the nine-in-ten bound failed for loop0 on five kernels of
    seven and for loop1 on one. loop1's bounds need a quiet host too: in
    cc16 (make-check.jsonl) one of experimental's spans was 9.7 % off,
    and check_intervals failed on the same span."""
    d = ok(res, 's_drain')
    tr = d['trace']
    # The premise: the trace kept every event (none lost, none that fits
    # no switch sequence), from the loop's first switch in (the trace
    # starts before the loops do), and has the loop on CPU 1 over the
    # series (pinned after its start: its first run may be on CPU 0).
    assert tr['lost'] == 0 and tr['unpaired'] == 0, tr
    runs = tr['runs']['loop1']
    assert runs and runs[0][1] is not None, runs[:3]
    t0, t1 = (d['series'][i]['last_sample_ns'] for i in (0, -1))
    assert all(c == 1 for c, a, b in runs
               if (b is None or b > t0) and a is not None and a < t1), runs
    rows = traced(res)
    # as many spans as the scenario reads on for, or more
    assert len(rows) >= d['spans_min'], rows
    # Within 2 % of an interval in nine spans of ten, and every one within
    # 2 % and the tick that the runtime clock may lag a CPU's last tick
    # (check_intervals): alone on the host, in two runs on every kernel,
    # within 1.4 % in all 492 spans.
    err = [x['loop1']['err_pct'] for x in rows]
    assert sum(abs(e) <= 2 for e in err) >= 0.9 * len(err), rows
    assert all(abs(x['loop1']['charged_us'] - x['loop1']['traced_us']) <=
               0.02 * x['len_us'] / x['n'] + TICK_US for x in rows), rows
    # The ticked CPU 0's loop: within 2 % of an interval in nine spans of
    # ten. In the 49 runs of drain.jsonl alone on the host or in make
    # check's solo part (every kernel), 11 of 1,726 spans were not (0.64 %;
    # at most 2 in a run of 35, 33 of 35 the fewest within): at that rate
    # 4 or more of 35 come once in about 13,600 runs, once in about 1,900
    # make checks of seven kernels. It needs the quiet host of the solo
    # part: beside another make check it failed on five kernels of seven
    # (above). No bound on every span: the kernel's runtime itself once
    # held 10.9 ms the trace gives another task (12.39 %, above).
    err0 = [x['loop0']['err_pct'] for x in rows]
    assert sum(abs(e) <= 2 for e in err0) >= 0.9 * len(err0), rows
    return rows


def check_windows(res, tickless):
    """@tickless: CPU 1 is (nohz_full=1)."""
    ws = windows(res)
    assert len(ws) >= 2, ws
    for x in ws:
        l0, l1 = x['loop0'], x['loop1']
        # the premise: both loops ran, CPU 0's shared with this script
        # and the sampler (0.2-0.6 of it measured, at nice 5)
        assert l0['usage_us'] >= 0.1 * x['len_us'], x
        assert l1['usage_us'] >= 0.9 * x['len_us'], x
        # equal loops, equal energy per CPU-second, on the ticked and
        # the tickless CPU alike (the power model gives each busy CPU
        # the same power)
        e0 = l0['energy_uj'] / l0['usage_us']
        e1 = l1['energy_uj'] / l1['usage_us']
        assert abs(e0 - e1) <= 0.10 * max(e0, e1), x
        # The tickless CPU's loop over the window against the CPU's busy
        # time by its idle time, within 2 % of the window (10 ms
        # resolution at each end: 20 ms more; the loop runs alone there,
        # other tasks took 0.0-0.1 % of it on 6.1). Its cgroup's cpu.stat
        # is no reference there (its runtime can be a second old), nor on
        # a ticked CPU over sample-aligned windows: it is read up to an
        # interval after the sample, so each end is off by up to 100 ms.
        if tickless:
            assert abs(l1['usage_us'] - x['busy1_us']) <= \
                0.02 * x['len_us'] + 20_000, x
    return ws


def added_ipis(res):
    """The IPIs per CPU the module added, function calls and reschedules
    together: s_drain's IPI windows against s_drain_base's, the same
    windows before the module was first loaded in the same boot
    (tests/vm/guest/drain.py)."""
    w = ok(res, 's_drain')['ipis']
    b = ok(res, 's_drain_base')['ipis']

    def both(x):
        return [c + r for c, r in zip(x['cal'], x['res'])]
    return {k: [x - y for x, y in zip(both(w[k]), both(b[k]))]
            for k in ('busy', 'idle')}, w, b


# The kernel's own IPIs differ from one window to the next: two windows
# without the module in one boot, before and after it ran, differed by up
# to 7 on a CPU (6.12-rt's idle CPU 0, ticked: 7 and 0; 7.3's busy
# tickless CPU 1: 12 and 9). What the module must not add is more: a
# drain by IPI sends one per interval to a busy CPU, 30 in the busy
# window; the sampler on an unbound worker, before it kept to a
# housekeeping CPU (sampler.c, cge_queue_sample()), added 13 and 21 to
# 7.3's idle CPU 1 in the 2 s window (ticked, tickless). Half the idle
# window's intervals.
IPI_NOISE = 10


def check_ipis(res, interval_ms=100):
    added, w, b = added_ipis(res)
    d = ok(res, 's_drain')
    why = {'added': added, 'with': w, 'without': b}
    # the premise: the sampler ran in every interval around the busy
    # window (35-36 of them in 3.5 s)
    n, span = w['busy']['samples'], w['busy']['samples_s']
    assert 0.9 * span * 1000 / interval_ms <= n <= \
        span * 1000 / interval_ms + 2, why
    # None on either CPU busy, CPU 1 ticked or tickless; CPU 0 runs this
    # script and the sampler
    assert added['busy'][0] <= IPI_NOISE, why
    assert added['busy'][1] <= IPI_NOISE, why
    # None on an idle CPU. Not decided on PREEMPT_RT with both CPUs
    # ticked: there the idle windows took 0-20 function-call IPIs on a CPU
    # with the module and 0-10 without, run to run (6.1-rt: 17 and 20 on
    # CPU 0 with it in one boot, 0 and 0 in the next), which these counts
    # cannot attribute.
    if d['rt'] and not d['nohz_full']:
        return why
    assert added['idle'][0] <= IPI_NOISE, why
    assert added['idle'][1] <= IPI_NOISE, why
    return why


def above_cpu_stat_max(row):
    """How far a quiet cgroup's usage_usec may be above cpu.stat's (@row:
    one of compare_usage()'s): 1 µs, as both round down from ns, plus what
    drains charged beyond the runtimes and no later charge took back
    (owed_usec: what all cgroups owe, at most what drains overcharged while
    the scenario ran). A task that exits, or never runs again,
    after a drain charged it beyond its runtime leaves its cgroup owing it
    for good (docs/contract.md): the drain's estimate runs from the
    runtime's last update to the drain's clock, and a drain in the
    scheduler's own time while the task is being switched out (longer when
    the host deschedules the guest's CPU) counts that time too."""
    return 1 + row['owed_usec']


def check_totals(res):
    r = ok(res, 's_drain')['usage']
    for cg in ('loop0', 'loop1'):
        # What the drains charged from estimates, settled at the switches
        # (what they charged beyond a task's runtime taken back from later
        # charges): the totals are cpu.stat's, as test_accuracy's (1 ms
        # below at most; above only by what is still owed)
        assert -1000 <= r[cg]['diff'] <= above_cpu_stat_max(r[cg]), r
    return r
