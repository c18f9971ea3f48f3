# SPDX-License-Identifier: GPL-2.0
"""Helpers for scenario scripts that run inside the test VM (as root, with
the host root read-only over 9p). Imported by the guest_*.py scripts."""
import contextlib
import ctypes
import json
import os
import subprocess
import sys
import time
from pathlib import Path

CG = Path('/sys/fs/cgroup')
EN = Path('/sys/fs/cgroup_energy')
PARAMS = Path('/sys/module/cgroup_energy/parameters')
REPO = Path(__file__).resolve().parents[3]
# The length of a loop that a scenario stops itself (Work.stop()) once its
# window has closed: only a bound. Loops of a fixed length ended inside
# windows on starved guests (amd-zen, 5.10, in a clean-clone make check:
# test_rapl_emu's per-core energy read 0.746 of the emulator's).
LOOP_MAX_S = 120


def kv(path):
    """Parse a flat-keyed file (energy.stat, energy.info, cpu.stat)."""
    out = {}
    for line in Path(path).read_text().splitlines():
        k, _, v = line.partition(' ')
        out[k] = int(v) if v.lstrip('-').isdigit() else v
    return out


def stat(rel=''):
    return kv(EN / rel / 'energy.stat')


def info():
    return kv(EN / 'energy.info')


def cpu_usage(rel):
    return kv(CG / rel / 'cpu.stat')['usage_usec']


def running(cgs, timeout=60):
    """Wait until every cgroup of @cgs has used CPU time: their processes
    have started."""
    deadline = time.monotonic() + timeout
    while not all(cpu_usage(cg) for cg in cgs):
        if time.monotonic() > deadline:
            raise RuntimeError(f'no CPU time in {cgs} after {timeout} s')
        time.sleep(0.05)


def populated(cgs, timeout=60):
    """Wait until every cgroup of @cgs holds a process (cgroup.events)."""
    deadline = time.monotonic() + timeout
    for cg in cgs:
        while 'populated 1' not in \
                (CG / cg / 'cgroup.events').read_text().splitlines():
            if time.monotonic() > deadline:
                raise RuntimeError(f'{cg}: not populated after {timeout} s')
            time.sleep(0.01)


def usage_at(cgs):
    """{cgroup: usage_usec} of @cgs and the time of the reads
    ('at_us', CLOCK_MONOTONIC): a premise that loops filled a window
    compares their CPU time with the time between two such reads."""
    out = {cg: cpu_usage(cg) for cg in cgs}
    out['at_us'] = time.monotonic_ns() // 1000
    return out


def settle(samples=3):
    """Wait until the sampler has completed @samples more samples (30 s at
    most: a sampler that stopped is an error here, not a later assertion)."""
    start = info()['samples']
    deadline = time.monotonic() + 30
    while info()['samples'] < start + samples:
        if time.monotonic() > deadline:
            raise RuntimeError(f'the sampler did not complete {samples} '
                               'samples in 30 s')
        time.sleep(0.05)


def wait_records(target, timeout=60):
    """Settle until energy.info counts at most @target records, @timeout s at
    most; returns (energy.info, seconds waited).  A removed cgroup's record is
    freed some reaper passes (one a second) after the kernel takes the cgroup
    offline, which its workqueue does later, and later still on a loaded host
    (a fixed 3.5 s wait once found 125 records against 115)."""
    t0 = time.monotonic()
    while True:
        settle()
        now = info()
        waited = time.monotonic() - t0
        if now['records'] <= target or waited >= timeout:
            return now, round(waited, 1)


def proc_idle_usec():
    """The kernel's idle time summed over CPUs (/proc/stat idle + iowait,
    USER_HZ ticks: 10 ms resolution), in µs."""
    f = Path('/proc/stat').read_text().split('\n', 1)[0].split()
    return (int(f[4]) + int(f[5])) * 1_000_000 // os.sysconf('SC_CLK_TCK')


def snapshot(rels=('',), extra=None, missing_ok=False, tries=20):
    """energy.info, the energy.stat of each cgroup in @rels ('' is the root)
    and @extra() if given, all read while no sample completed: re-read
    until energy.info's `samples` is the same before and after the reads.
    A relation between two figures of one snapshot (a parent and its
    children, two cgroups' deltas, the module's idle time and /proc/stat's)
    holds whatever the sampler does; figures read one at a time do not.
    Returns {'info', 'stat': {rel: energy.stat}, 'extra'}; with
    @missing_ok a cgroup removed meanwhile is left out.  A try that a sample
    cut is followed by one that starts as the next sample completes, the
    whole interval ahead of it: on a starved guest (6.1-rt, EPYC-Rome's 4
    vCPUs, in a make check that filled an empty cache) 20 tries each begun
    at once all failed.  The reads run at SCHED_FIFO (fifo()): among busy
    loops on every CPU they otherwise shared a CPU with one, and on a host
    running QEMU two to three times slower than usual (CI's run of f82ff72;
    on the build machine, guest kernels at their PCI scan 4.3-8.5 s after
    boot where they took 1.3-2.4 s) 20 tries failed in every scenario of
    test_rapl_emu on EPYC and in test_accuracy's drain scenario on every
    kernel."""
    cut = None          # the samples count after a read that a sample cut
    for _ in range(tries):
        if cut is not None:
            _sample_after(cut)
        with fifo():
            a = info()
            cgs = {}
            for rel in rels:
                try:
                    cgs[rel] = stat(rel)
                except OSError:
                    if not missing_ok:
                        raise
            x = extra() if extra else None
            b = info()
        if a['samples'] == b['samples']:
            return {'info': a, 'stat': cgs, 'extra': x}
        cut = b['samples']
    raise RuntimeError(f'a sample completed during each of {tries} reads')


def _sample_after(n, timeout=30):
    """Wait, polling, until energy.info's samples is past @n."""
    deadline = time.monotonic() + timeout
    while info()['samples'] == n:
        if time.monotonic() > deadline:
            raise RuntimeError(f'no sample in {timeout} s')
        time.sleep(0.002)


def set_interval(ms):
    """Set interval_ms and wait until a sample that started after the write
    has ended: the sample queued before it keeps the old interval
    (sampler.c, cge_sample_fn(), which reads interval_ms as it starts), and
    one may already have started, so the second sample to end after the
    write is the first that surely read @ms and queued its successor @ms
    ahead (the sampler's work never runs twice at once)."""
    done, err = set_param('interval_ms', ms)
    if not done:
        raise RuntimeError(f'interval_ms={ms}: {err}')
    n = info()['samples']
    _sample_after(n)
    _sample_after(n + 1)


def next_sample(rels=('',), extra=None):
    """A snapshot taken just after the next sample completed: windows
    between two of them start and end on a sample boundary, so the module's
    figures (updated at samples) and the kernel's (continuous) cover the
    same time, up to the few ms it takes to notice the sample."""
    i = info()
    n = i['samples']
    ms = int(get_param('interval_ms'))
    # sleep until 5 ms before the next sample is due, then poll
    due = i['last_sample_ns'] + (ms - 5) * 1_000_000
    time.sleep(max(0, min(ms / 1000, (due - time.monotonic_ns()) / 1e9)))
    _sample_after(n)
    return snapshot(rels, extra)


def freeze(rel, frozen=True, timeout=30):
    """Freeze (or thaw) cgroup @rel and wait until cgroup.events says so:
    a frozen cgroup runs nothing, so the sampler changes nothing of it once
    its last slices are charged (settle() after freezing)."""
    (CG / rel / 'cgroup.freeze').write_text(f'{int(frozen)}\n')
    want = f'frozen {int(frozen)}'
    deadline = time.monotonic() + timeout
    while want not in (CG / rel / 'cgroup.events').read_text().splitlines():
        if time.monotonic() > deadline:
            raise RuntimeError(f'{rel}: not {want} after {timeout} s')
        time.sleep(0.01)


def owed_usec(since=None, now=None):
    """What drains charged running tasks beyond their runtimes and no
    later charge took back, over all cgroups, in energy.info @now (read
    here if not given): overcharge_usec less overcharge_repaid_usec, and
    with @since (energy.info read earlier) at most what drains overcharged
    since then. A cgroup quiet since its tasks exited keeps its part of it
    (docs/contract.md): the most that one whose tasks started after @since
    can be above cpu.stat, but for both figures' rounding
    (tests/drain_checks.py, above_cpu_stat_max())."""
    i = now or info()
    owed = i['overcharge_usec'] - i['overcharge_repaid_usec']
    if since:
        owed = min(owed, i['overcharge_usec'] - since['overcharge_usec'])
    return owed


def compare_usage(cgs, since=None):
    """usage_usec of each cgroup in @cgs against the kernel's cpu.stat, once
    the cgroups are quiet (their tasks have exited): after the samples that
    charge their last slices, the cgroups' figures read in one snapshot.
    @since: energy.info read before the cgroups' tasks started, if given.
    Returns {cgroup: {ours, kernel, diff, rel, wakeups, impact_usec,
    energy_uj, owed_usec}}, owed_usec from the same snapshot (owed_usec())."""
    settle()
    shot = snapshot(cgs)
    snap = shot['stat']
    owed = owed_usec(since, shot['info'])
    out = {}
    for cg in cgs:
        s, kernel = snap[cg], cpu_usage(cg)
        out[cg] = {'ours': s['usage_usec'], 'kernel': kernel,
                   'diff': s['usage_usec'] - kernel,
                   'rel': (s['usage_usec'] - kernel) / kernel if kernel
                   else None,
                   'wakeups': s['wakeups'], 'impact_usec': s['impact_usec'],
                   'energy_uj': s['energy_uj'], 'owed_usec': owed}
    return out


def mkcg(*rels):
    for rel in rels:
        (CG / rel).mkdir(parents=True, exist_ok=True)


@contextlib.contextmanager
def housekeeping_on_cpu0():
    """This script and the unbound work items on CPU 0, so the other CPUs
    run as few tasks as the kernel lets them; both restored after. (The
    module's sampler stays on the CPU that loaded it: sampler.c,
    cge_queue_sample().)"""
    wq_mask = Path('/sys/devices/virtual/workqueue/cpumask')
    old_mask = wq_mask.read_text().strip()
    os.sched_setaffinity(0, {0})
    wq_mask.write_text('1\n')
    try:
        yield
    finally:
        wq_mask.write_text(old_mask + '\n')
        os.sched_setaffinity(0, set(range(os.cpu_count())))


@contextlib.contextmanager
def fifo():
    """This thread at SCHED_FIFO for a while: among busy loops on every
    CPU, reads that must fall between two of the module's samples would
    otherwise outlast its interval, over and over."""
    old = os.sched_getscheduler(0), os.sched_getparam(0)
    os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(10))
    try:
        yield
    finally:
        os.sched_setscheduler(0, old[0], old[1])


def sh(cmd, check=True):
    p = subprocess.run(cmd, shell=True, text=True, capture_output=True)
    if check and p.returncode:
        raise RuntimeError(f'{cmd!r} failed ({p.returncode}): {p.stderr}')
    return p


def set_param(name, value):
    """Write a module parameter; returns (ok, errno text)."""
    try:
        (PARAMS / name).write_text(str(value))
        return True, ''
    except OSError as e:
        return False, e.strerror


def get_param(name):
    return (PARAMS / name).read_text().strip()


SYS_KINDS = ('irq', 'softirq', 'steal')


def root_terms_add_up(s):
    """The root's energy, every unit somewhere: tasks, interrupts,
    softirqs, steal, idle. A self-consistency check: the five terms come
    from one read of the module's own root record; the emulator's ledger
    (test_rapl_emu) is the reference for the total."""
    return s['total_uj'] == (s['energy_uj'] + s['idle_uj'] +
                             sum(s[f'{k}_uj'] for k in SYS_KINDS))


def proc_sys_usec():
    """/proc/stat's irq, softirq and steal time, in µs (USER_HZ ticks: 10 ms
    resolution): {'cpu': {kind: µs}, 'cpu0': ..., ...}."""
    hz = os.sysconf('SC_CLK_TCK')
    out = {}
    for line in Path('/proc/stat').read_text().splitlines():
        f = line.split()
        if f and f[0].startswith('cpu'):
            out[f[0]] = {k: int(f[6 + i]) * 1_000_000 // hz
                         for i, k in enumerate(SYS_KINDS)}
    return out


class Work:
    """Runs the cgwork helper binary, its work in a child created in the
    cgroup (cgwork -C: no move into it to account, see docs/accuracy.md,
    "Realtime, nohz_full and tick rate"); the process started waits for
    that child."""

    def __init__(self, binary):
        self.bin = binary

    def start(self, cg, *args, cpu=None, nice=None):
        cmd = [self.bin, '-C', str(CG / cg)]
        if cpu is not None:
            cmd += ['-p', str(cpu)]
        if nice is not None:
            cmd = ['nice', '-n', str(nice)] + cmd
        return subprocess.Popen(cmd + [str(a) for a in args])

    @staticmethod
    def stop(procs, cgs, timeout=30):
        """Kill @procs, whose work is measured, instead of waiting for
        their end: each one's child dies with it (PR_SET_PDEATHSIG).
        Returns once the cgroups @cgs hold no process."""
        for p in procs:
            p.kill()
            p.wait()
        deadline = time.monotonic() + timeout
        for cg in cgs:
            while 'populated 0' not in \
                    (CG / cg / 'cgroup.events').read_text().splitlines():
                if time.monotonic() > deadline:
                    raise RuntimeError(f'{cg}: still populated')
                time.sleep(0.01)

    def run(self, cg, *args, cpu=None):
        p = self.start(cg, *args, cpu=cpu)
        if p.wait():
            raise RuntimeError(f'cgwork {args} in {cg} failed: {p.returncode}')

    @staticmethod
    def switches(p):
        """Wait for @p and return the kernel's count of its context switches
        (wait4, which includes the child it waited for; the waiter's own
        exec, start and wait add a few, more on a loaded host): {'sleeps':
        voluntary (for a sleeper, its sleeps),
        'switched': voluntary + involuntary}. A task's cgroup gets a wakeup only when the
        task is switched in, so a cgroup of one task has at most switched + 1
        (its first run): a bound the module did not compute."""
        _, status, ru = os.wait4(p.pid, 0)
        p.returncode = os.waitstatus_to_exitcode(status)
        if p.returncode:
            raise RuntimeError(f'cgwork {p.args} failed: {p.returncode}')
        return {'sleeps': ru.ru_nvcsw, 'switched': ru.ru_nvcsw + ru.ru_nivcsw}


def scenarios(funcs, ctx, deep_only=()):
    """Run each scenario, collect its result dict or its error, print JSON.
    In the gate's boots (CGE_TIER=gate: tests/tiers.py), the scenarios of
    @deep_only, which only the deep tier's tests read, do not run."""
    if os.environ.get('CGE_TIER') == 'gate':
        funcs = [f for f in funcs if f not in deep_only]
    results = {}
    for f in funcs:
        t0 = time.time()
        try:
            results[f.__name__] = f(ctx)
        except Exception as e:  # reported, asserted on by the host test
            results[f.__name__] = {'error': f'{type(e).__name__}: {e}'}
        results[f.__name__]['seconds'] = round(time.time() - t0, 2)
    print('CGE-RESULT ' + json.dumps(results), flush=True)


# Module load/unload and mounts without spawning processes: an exec costs
# about 0.7 s on the KASAN/lockdep kernel under TCG.
_libc = ctypes.CDLL(None, use_errno=True)
_SYS_FINIT_MODULE, _SYS_DELETE_MODULE = 313, 176          # x86_64


def _check(rc, what):
    if rc:
        e = ctypes.get_errno()
        raise OSError(e, f'{what}: {os.strerror(e)}')


def insmod(ko, params=''):
    fd = os.open(ko, os.O_RDONLY)
    try:
        _check(_libc.syscall(_SYS_FINIT_MODULE, fd, params.encode(), 0),
               f'insmod {ko} {params}')
    finally:
        os.close(fd)


def rmmod(name='cgroup_energy'):
    _check(_libc.syscall(_SYS_DELETE_MODULE, name.encode(), os.O_NONBLOCK),
           f'rmmod {name}')


def mount_en(path=EN, opts=''):
    _check(_libc.mount(b'none', str(path).encode(), b'cgroup_energy', 0,
                       opts.encode() or None), f'mount {path}')


def umount_en(path=EN):
    _check(_libc.umount2(str(path).encode(), 0), f'umount {path}')


def s_unload(ctx):
    """The last scenario of a guest script: unmount, unload."""
    umount_en()
    rmmod()
    return {}


def s_remove_cgroups(ctx):
    """After s_unload, when another script runs next in the same boot:
    remove every cgroup (children first), so that it starts on a guest with
    none, as after boot. Lists any that could not be removed."""
    dirs = sorted((p for p in CG.rglob('*') if p.is_dir()),
                  key=lambda p: len(p.parts), reverse=True)
    left = []
    for d in dirs:
        try:
            d.rmdir()
        except OSError as e:
            left.append(f'{d.relative_to(CG)}: {e.strerror}')
    return {'removed': len(dirs) - len(left), 'left': left}


def dmesg():
    return sh('dmesg').stdout


def main_args():
    if len(sys.argv) < 3:
        sys.exit('usage: guest_x.py MODULE.ko CGWORK')
    return os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])


EMU_TRUTH = Path('/sys/kernel/debug/cgroup_energy_emu/truth')


def emu_truth(path=EMU_TRUTH):
    """The test build's emulated RAPL record (tests/emu/emu.c), in counter units
    (unwrapped): {'profile', 'pkg': {(pkg, domain): {esu, emitted, read,
    reads, ...}}, 'core': {cpu: {pkg?, esu, emitted, read, ...}},
    'cpu': {cpu: {pkg, busy_ns, uj}}}. Lines it does not know are skipped;
    'core' and 'cpu' are empty on builds without them."""
    out = {'profile': None, 'pkg': {}, 'core': {}, 'cpu': {}}
    for line in Path(path).read_text().splitlines():
        f = line.split()
        if not f:
            continue
        try:
            if f[0] == 'profile':
                out['profile'] = f[1]
            elif f[0] == 'pkg' and len(f) % 2 == 1:
                out['pkg'][(int(f[1]), f[2])] = {
                    k: int(v) for k, v in zip(f[3::2], f[4::2])}
            elif f[0] == 'core':
                out['core'][int(f[1])] = {
                    k: int(v) for k, v in zip(f[2::2], f[3::2])}
            elif f[0] == 'cpu':
                out['cpu'][int(f[1])] = {
                    k: int(v) for k, v in zip(f[2::2], f[3::2])}
        except ValueError:
            continue
    return out


def emu_uj(units, esu):
    """Counter units to µJ (the emulator steps in whole µJ: exact)."""
    return units * 1_000_000 >> esu


def mount_debugfs():
    sh('mountpoint -q /sys/kernel/debug || '
       'mount -t debugfs debugfs /sys/kernel/debug')
