# SPDX-License-Identifier: GPL-2.0
"""Stress scenarios, run inside the VM by tests/test_stress.py (on the debug
kernel: KASAN, lockdep, atomic-sleep and preemption checks, debug objects,
kmemleak; lighter on the stock 6.1-rt kernel):

    python3 guest_stress.py cgroup_energy.ko cgwork

Sizes from the environment: CGE_STRESS_CGROUPS (cgroups created and removed,
default 5000), CGE_STRESS_RELOADS (unload/reload cycles, 10),
CGE_STRESS_HOTPLUG (CPU offline/online cycles, 10).  CGE_STRESS_REFUSE:
modules the kernel must refuse to load (on the debug
kernel, which enforces module signatures: unsigned, or signed by a key it
does not trust), a JSON object {label: path}.

Phases: kernel facts; the modules to refuse, each tried once; a kmemleak
baseline (what the kernel leaks by itself,
before the module is loaded) and `clear`; load; cgroup churn with migrating
tasks, readers of every energy.stat and parameter changes; unload/reload under
a context-switch storm; CPU offline/online under readers and the storm;
conservation; a kmemleak scan once the module is unloaded, its reports
attributed to the module by the addresses it occupied.
Prints one line 'CGE-RESULT {json}'; the host test asserts on it (and the
harness fails the run on any kernel splat in the console or dmesg).
"""
import collections
import errno
import json
import os
import queue
import random
import re
import shutil
import signal
import subprocess
import threading
import time
from pathlib import Path

from common import (CG, EN, PARAMS, root_terms_add_up, cpu_usage, dmesg, info,
                    insmod, kv, main_args, mkcg, mount_en, rmmod, scenarios,
                    settle, stat, umount_en, wait_records)

KO, CGWORK = main_args()
KMEMLEAK = Path('/sys/kernel/debug/kmemleak')
LOCKDEP = Path('/proc/lockdep_stats')
CPU1 = Path('/sys/devices/system/cpu/cpu1/online')
N_CGROUPS = int(os.environ.get('CGE_STRESS_CGROUPS', 5000))
N_RELOADS = int(os.environ.get('CGE_STRESS_RELOADS', 10))
N_HOTPLUG = int(os.environ.get('CGE_STRESS_HOTPLUG', 10))
# The churn keeps the last WINDOW cgroups it made (and their nested ones).
# A task moves every MOVE_EVERY cgroups created and the readers walk the
# tree every WALK_EVERY, once a window, so that each cgroup is read about
# once in its life: counts set by the churn's size, not by the host's speed.
# Paced by time (a move every 0.05 s, a walk 0.3 s after the last), on the
# debug kernel alone the readers took 28 % of the guest's busy CPU time in
# the churn and the mover 10 % (the churn's own thread 28 %), for 1.3 reads
# and 0.8 moves per cgroup; beside the vm stage, where the guest gets a
# fraction of the host, the churn of 5,000 took 21 minutes.  Paced so, 1,000
# cgroups on the debug kernel alone: churn 67.5 s (97.5 s paced by time),
# 1.15 reads and 0.5 moves per cgroup.
WINDOW = 24
MOVE_EVERY = 2
WALK_EVERY = WINDOW
# How long, in all, the churn waits for the moves and walks still due when
# it ends: a walk is due every 1.1-1.6 s alone (41 in churns of 46-67.5 s
# of 1,000 cgroups, and the walks kept up), about 10 times as rarely beside
# the vm stage, so 600 s is a backlog of some 35 walks; the debug flavour's
# VM timeout is 1,800 s.
JOIN_S = 600
# kernel log lines that mean a debug facility fired
REPORT = re.compile(r'BUG:|WARNING:|KASAN|kmemleak: .*new suspected|'
                    r'possible circular locking|inconsistent lock state|'
                    r'possible recursive locking|lock held when returning|'
                    r'sleeping function called from invalid context|'
                    r'ODEBUG:|using smp_processor_id\(\) in preemptible|'
                    r'suspicious RCU usage|scheduling while atomic|'
                    r'Call Trace')
rng = random.Random(1)


def write(path, value):
    Path(path).write_text(str(value))


def kernel_reports():
    return [ln for ln in dmesg().splitlines() if REPORT.search(ln)]


def debug_locks():
    if not LOCKDEP.exists():
        return None
    m = re.search(r'debug_locks:\s+(\d+)', LOCKDEP.read_text())
    return int(m[1]) if m else None


# ---- kmemleak -------------------------------------------------------------

def kmemleak_scan(passes=2):
    """Scan twice (the listing keeps what the last scan still found
    unreferenced: fewer transient false positives), return the reports as a
    list of {'head', 'text'}."""
    time.sleep(5.5)                # kmemleak ignores objects younger than 5 s
    for _ in range(passes):
        write(KMEMLEAK, 'scan')
    return parse_kmemleak(KMEMLEAK.read_text())


def parse_kmemleak(text):
    out = []
    for block in re.split(r'(?m)^(?=unreferenced object)', text):
        if block.startswith('unreferenced object'):
            out.append({'head': block.splitlines()[0], 'text': block})
    return out


# A backtrace frame as kmemleak prints it ("    [<%p>] %pS"): the first
# address hashed (no no_hash_pointers), the second symbolised, as
# "name+off/size [module]" while the code is there and as the raw address
# once its module is gone.
SYM_FRAME = re.compile(r'^\s*\[<[0-9a-f]+>\] \S+ \[cgroup_energy\]\s*$',
                       re.M)
RAW_FRAME = re.compile(r'^\s*\[<[0-9a-f]+>\] 0x([0-9a-f]+)\s*$', re.M)


def module_span(name='cgroup_energy', text=None):
    """[start, end) of the module's core memory (text, rodata, data), from
    /proc/modules (or @text in its format): the size it prints is the core's
    once init is done.  The init sections are freed then; a frame there is
    raw even while the module is loaded, and no leak can have only such a
    frame: the module's init allocates through its core code.  RuntimeError
    if the module is not loaded or its address is hidden (kptr_restrict)."""
    if text is None:
        text = Path('/proc/modules').read_text()
    for line in text.splitlines():
        f = line.split()
        if f[0] == name:
            start, size = int(f[5], 16), int(f[1])
            if not start:
                raise RuntimeError('/proc/modules hides module addresses')
            return start, start + size
    raise RuntimeError(f'{name} is not loaded')


def involves_module(report, spans=()):
    """A frame of the module's code: symbolised, or a raw address in one of
    @spans (module_span() of each load, taken while it was loaded)."""
    if SYM_FRAME.search(report['text']):
        return True
    return any(lo <= int(a, 16) < hi
               for a in RAW_FRAME.findall(report['text'])
               for lo, hi in spans)


# where each load of the module lay (on the debug kernel: kmemleak)
SPANS = set()


def load_module(params=''):
    insmod(KO, params)
    if KMEMLEAK.exists():
        SPANS.add(module_span())


# ---- background load --------------------------------------------------------

class Storm:
    """A context-switch storm (hackbench over pipes, else perf bench) in a
    cgroup, restarted until stopped."""

    def __init__(self, cg='storm'):
        mkcg(cg)
        self.cg = CG / cg
        self.stop_ev = threading.Event()
        self.proc = None
        self.runs = 0
        self.t = threading.Thread(target=self._loop, daemon=True)

    @staticmethod
    def _cmd():
        if shutil.which('hackbench'):               # rt-tests
            return ['hackbench', '-p', '-g', '1', '-f', '2', '-l', '5000000']
        if shutil.which('perf'):
            return ['perf', 'bench', 'sched', 'pipe', '-l', '100000000']
        # one-byte writes through a pipe: a wakeup per byte
        return ['sh', '-c', 'dd if=/dev/zero bs=1 2>/dev/null | '
                'dd of=/dev/null bs=1 2>/dev/null']

    @classmethod
    def tool(cls):
        return cls._cmd()[0]

    def _loop(self):
        cmd = self._cmd()
        while not self.stop_ev.is_set():
            self.proc = subprocess.Popen(
                ['sh', '-c', f'echo $$ > {self.cg}/cgroup.procs && exec "$@"',
                 'storm', *cmd], stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL, start_new_session=True)
            self.proc.wait()
            self.runs += 1

    def __enter__(self):
        self.t.start()
        time.sleep(0.5)
        return self

    def __exit__(self, *exc):
        self.stop_ev.set()
        for _ in range(50):
            p = self.proc
            if p is not None:
                try:
                    os.killpg(p.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            if not self.t.is_alive():
                break
            self.t.join(0.2)


class Readers:
    """Threads reading every energy.stat (and energy.info): in a loop with
    @pause s between walks, or, @paced, one walk per walk() call (a
    thread's share of the walks), all of them done by the time the block
    ends."""

    def __init__(self, n=1, pause=0.1, paced=False):
        self.pause = pause
        self.stop_ev = threading.Event()
        self.due = queue.Queue() if paced else None
        self.reads = 0
        self.walks = 0
        self.bad = []            # root reads that broke conservation
        self.errors = collections.Counter()
        self.ts = [threading.Thread(target=self._loop, daemon=True)
                   for _ in range(n)]

    def walk(self):
        assert self.due is not None, 'walk() is for paced readers'
        self.due.put(True)

    def _gone(self, e):
        self.errors[e.strerror] += 1

    def _loop(self):
        while not self.stop_ev.is_set():
            if self.due is not None and self.due.get() is None:
                return
            if not EN.is_dir() or not (EN / 'energy.stat').exists():
                self.errors['not mounted'] += 1
                time.sleep(0.05)
                continue
            # a directory removed between its listing and the visit: an
            # error as a removed file is
            for dirpath, _, files in os.walk(EN, onerror=self._gone):
                for f in files:
                    p = os.path.join(dirpath, f)
                    try:
                        s = kv(p)
                        self.reads += 1
                        if f == 'energy.stat' and 'total_uj' in s \
                                and not root_terms_add_up(s):
                            self.bad.append(s)
                    except OSError as e:        # removed under us
                        self.errors[e.strerror] += 1
                if self.stop_ev.is_set():
                    break
            self.walks += 1
            if self.due is None:
                time.sleep(self.pause)

    def __enter__(self):
        for t in self.ts:
            t.start()
        return self

    def _join(self, deadline):
        for t in self.ts:
            t.join(max(0, deadline - time.monotonic()))
        if any(t.is_alive() for t in self.ts):
            raise RuntimeError('a reader still walking at its deadline')

    def finish(self, deadline):
        """Paced: the walks already due, then stop, by @deadline
        (time.monotonic())."""
        for _ in self.ts:
            self.due.put(None)
        self._join(deadline)

    def __exit__(self, exc_type, *exc):
        self.stop_ev.set()
        if self.due is not None:
            for _ in self.ts:
                self.due.put(None)
        for t in self.ts:
            t.join(JOIN_S)
        if exc_type is None and any(t.is_alive() for t in self.ts):
            raise RuntimeError(f'a reader still walking {JOIN_S} s after '
                               'the block')

    def summary(self):
        return {'reads': self.reads, 'walks': self.walks,
                'bad_conservation': len(self.bad),
                'bad_sample': self.bad[:3], 'errors': dict(self.errors)}


PARAM_CYCLE = [('interval_ms', v) for v in (10, 17, 50, 100, 250, 100)] + [
    ('split', 'impact'), ('split', 'time'),
    ('model_busy_mw', 5000), ('model_idle_mw', 1000),
    ('model_idle_mw', 500), ('model_busy_mw', 3000),
    ('model_idle_mw', 740), ('model_busy_mw', 3500)]


class ParamChanger:
    """Cycles interval_ms, split and the model's powers mid-flight."""

    def __init__(self, period=0.2):
        self.period = period
        self.stop_ev = threading.Event()
        self.done = 0
        self.refused = collections.Counter()
        self.t = threading.Thread(target=self._loop, daemon=True)

    def _loop(self):
        i = 0
        while not self.stop_ev.wait(self.period):
            name, val = PARAM_CYCLE[i % len(PARAM_CYCLE)]
            i += 1
            try:
                write(PARAMS / name, val)
                self.done += 1
            except OSError as e:   # module not loaded, or a refused value
                self.refused[f'{name}={val}: {e.strerror}'] += 1

    def __enter__(self):
        self.t.start()
        return self

    def __exit__(self, *exc):
        self.stop_ev.set()
        self.t.join(30)
        for name, val in (('interval_ms', 100), ('split', 'time'),
                          ('model_busy_mw', 3500), ('model_idle_mw', 740)):
            try:
                write(PARAMS / name, val)
            except OSError:
                pass


# ---- scenarios ---------------------------------------------------------------

def s_env(ctx):
    uname = os.uname()
    text = dmesg()
    return {'kver': uname.release, 'version': uname.version,
            'rt': 'PREEMPT_RT' in uname.version,
            'ncpus': os.cpu_count(), 'kmemleak': KMEMLEAK.exists(),
            'lockdep': LOCKDEP.exists(), 'debug_locks': debug_locks(),
            'kasan': 'KernelAddressSanitizer initialized' in text,
            'cmdline': Path('/proc/cmdline').read_text().strip(),
            'reports_at_boot': kernel_reports()}


def s_signing(ctx):
    """Each CGE_STRESS_REFUSE module loaded once: its errno and the kernel's
    lines about signatures meanwhile (read from /dev/kmsg, from its end at
    the start); whether the kernel enforces signatures."""
    todo = json.loads(os.environ.get('CGE_STRESS_REFUSE') or '{}')
    if not todo:
        return {'skipped': 'no module to refuse (CGE_STRESS_REFUSE)'}
    enforce = Path('/sys/module/module/parameters/sig_enforce')
    out = {'sig_enforce': enforce.read_text().strip()
           if enforce.exists() else None, 'tried': {}}
    for label, path in todo.items():
        fd = os.open('/dev/kmsg', os.O_RDONLY | os.O_NONBLOCK)
        try:
            os.lseek(fd, 0, os.SEEK_END)
            try:
                insmod(path)
                err = None
                rmmod()
            except OSError as e:
                err = errno.errorcode.get(e.errno, str(e.errno))
            log = []
            while True:
                try:
                    rec = os.read(fd, 8192).decode(errors='replace')
                except BlockingIOError:
                    break
                text = rec.split(';', 1)[-1].split('\n', 1)[0]
                if re.search(r'signature|[Kk]ey|rejected', text):
                    log.append(text)
        finally:
            os.close(fd)
        out['tried'][label] = {'err': err, 'log': log}
    return out


def s_baseline(ctx):
    """What the kernel leaks by itself: a little churn, hotplug and a storm
    without the module, a scan, then `clear` so later reports are new."""
    if not KMEMLEAK.exists():
        return {'skipped': 'no kmemleak'}
    mkcg('base')
    subprocess.run([CGWORK, '-c', str(CG / 'base'), 'hop',
                    str(CG / 'base'), '50', '1000'], check=True)
    if CPU1.exists():
        write(CPU1, 0)
        write(CPU1, 1)
    with Storm('base_storm'):
        time.sleep(2)
    leaks = kmemleak_scan()
    write(KMEMLEAK, 'clear')
    return {'leaks': len(leaks), 'heads': [x['head'] for x in leaks][:20],
            'sample': [x['text'] for x in leaks][:3]}


def s_load(ctx):
    load_module()
    mount_en()
    return {'info': info()}


def s_churn(ctx):
    """N cgroups created and removed while tasks migrate between them, with
    readers of every energy.stat and parameter changes running."""
    n = N_CGROUPS
    base = CG / 'churn'
    mkcg('churn')
    settle()
    records = info()['records']
    window = collections.deque()
    lock = threading.Lock()
    # sleepers: a wakeup and two switches per period in whatever cgroup they
    # are in, without taking a whole vCPU from the churn
    tasks = [subprocess.Popen([CGWORK, '-c', str(base), 'sleeper', str(us),
                               '100000']) for us in (2000, 5000, 10000)]
    moves = {'ok': 0, 'gone': 0}
    due = queue.Queue()             # a move per item, None: stop
    stop = threading.Event()        # the churn failed: no more moves

    def migrate():
        while due.get() is not None and not stop.is_set():
            with lock:
                live = list(window)
            p = rng.choice(tasks)           # one move per item: each is
            dest = rng.choice(live) if live else base    # an RCU sync
            try:
                write(dest / 'cgroup.procs', p.pid)
                moves['ok'] += 1
            except OSError:
                moves['gone'] += 1         # removed meanwhile

    def evict(d):
        """Move any task out of d and remove it."""
        for _ in range(100):
            try:
                d.rmdir()
                return
            except OSError:
                timing['evict_retries'] += 1
                for pid in (d / 'cgroup.procs').read_text().split():
                    try:
                        write(base / 'cgroup.procs', pid)
                    except OSError:
                        pass
                time.sleep(0.02)
        raise RuntimeError(f'cannot remove {d}')

    timing = collections.Counter()
    mover = threading.Thread(target=migrate, daemon=True)
    t0 = time.time()
    created = removed = 0
    with Readers(paced=True) as rd, ParamChanger() as pc:
        mover.start()
        try:
            for i in range(n):
                d = base / f'c{i}'
                if i % 10 == 9:                  # some nested ones
                    d = window[-1] / f'n{i}' if window else d
                t1 = time.time()
                d.mkdir()
                timing['mkdir_s'] += time.time() - t1
                created += 1
                if created % MOVE_EVERY == 0:
                    due.put(True)
                if created % WALK_EVERY == 0:
                    rd.walk()
                with lock:
                    window.append(d)
                    old = window.popleft() if len(window) > WINDOW else None
                t1 = time.time()
                if old is not None:
                    # a nested child goes before its parent
                    for child in sorted(old.glob('n*')):
                        with lock:
                            if child in window:
                                window.remove(child)
                        evict(child)
                        removed += 1
                    evict(old)
                    removed += 1
                timing['evict_s'] += time.time() - t1
            # the moves and walks due, done while the window's cgroups are
            # still there
            deadline = time.monotonic() + JOIN_S
            due.put(None)
            rd.finish(deadline)
            mover.join(max(0, deadline - time.monotonic()))
        except BaseException:
            stop.set()
            raise
        finally:
            due.put(None)
            mover.join(JOIN_S if stop.is_set() else 0)
            for p in tasks:
                p.kill()
                p.wait()
            with lock:
                rest = list(window)
            for d in reversed(rest):
                if d.exists():
                    evict(d)
                    removed += 1
        if mover.is_alive():
            raise RuntimeError(f'the mover still moving {JOIN_S} s after '
                               'the churn')
        params = {'done': pc.done, 'refused': dict(pc.refused)}
    readers = rd.summary()
    churn_s = time.time() - t0
    end, reap_s = wait_records(records * 1.05 + 1)
    return {'created': created, 'removed': removed,
            'pacing': {'window': WINDOW, 'move_every': MOVE_EVERY,
                       'walk_every': WALK_EVERY},
            'records_start': records, 'records_end': end['records'],
            'reap_seconds': reap_s,
            'left': sorted(p.name for p in base.iterdir() if p.is_dir()),
            'churn_s': round(churn_s, 1), 'moves': moves,
            'timing': {k: round(v, 2) for k, v in timing.items()},
            'readers': readers, 'params': params, 'info': info(),
            'usage': stat('churn')['usage_usec'],
            'kernel': cpu_usage('churn'),
            'root_ok': root_terms_add_up(stat())}


def s_reload(ctx):
    """Unload/reload cycles under a context-switch storm."""
    cycles = []
    umount_en()
    rmmod()
    with Storm() as st:
        for i in range(N_RELOADS):
            t0 = time.time()
            load_module(f'interval_ms={(10, 50, 100)[i % 3]}')
            mount_en()
            time.sleep(0.3)
            s = stat()
            storm = stat('storm') if (EN / 'storm').is_dir() else {}
            umount_en()
            rmmod()
            cycles.append({'ok': root_terms_add_up(s),
                           'storm_usage': storm.get('usage_usec', 0),
                           'seconds': round(time.time() - t0, 2)})
        runs = st.runs
    load_module()
    mount_en()
    return {'cycles': cycles, 'storm_runs': runs, 'storm': Storm.tool(),
            'loaded': os.path.isdir('/sys/module/cgroup_energy')}


def s_hotplug(ctx):
    """CPU1 offline/online under the storm, readers and parameter changes."""
    if not CPU1.exists():
        return {'skipped': 'cpu1 cannot go offline'}
    oks = []
    with Storm(), Readers() as rd, ParamChanger(0.3):
        for _ in range(N_HOTPLUG):
            write(CPU1, 0)
            time.sleep(0.3)
            oks.append(root_terms_add_up(stat()))
            write(CPU1, 1)
            time.sleep(0.3)
            oks.append(root_terms_add_up(stat()))
        readers = rd.summary()
    settle()
    return {'cycles': N_HOTPLUG, 'conservation': oks,
            'online': CPU1.read_text().strip(), 'readers': readers}


def s_final(ctx):
    """Quiet system: conservation exact, usage against cpu.stat."""
    mkcg('quiet')
    subprocess.run([CGWORK, '-c', str(CG / 'quiet'), 'busy', '1'], check=True)
    settle()
    reads = [stat() for _ in range(50)]
    return {'exact': sum(map(root_terms_add_up, reads)), 'reads': len(reads),
            'root': reads[-1], 'quiet': {'ours': stat('quiet')['usage_usec'],
                                         'kernel': cpu_usage('quiet')},
            'info': info()}


def s_kmemleak(ctx):
    """One scan once the module is unloaded: an object it leaked while
    loaded is still unreferenced then, and one that only its own data still
    pointed to has become so.  Its code's frames are raw addresses then,
    attributed by the spans its loads occupied (SPANS)."""
    umount_en()
    if not KMEMLEAK.exists():
        rmmod()
        return {'skipped': 'no kmemleak'}
    rmmod()
    found = kmemleak_scan()
    mod = [x for x in found if involves_module(x, SPANS)]
    other = [x for x in found if not involves_module(x, SPANS)]
    return {'unloaded': len(found), 'module': len(mod),
            'spans': sorted([hex(lo), hex(hi)] for lo, hi in SPANS),
            'module_reports': [x['text'] for x in mod][:10],
            'other_heads': [x['head'] for x in other][:20],
            'other_sample': [x['text'] for x in other][:3]}


def s_reports(ctx):
    return {'reports': kernel_reports(), 'debug_locks': debug_locks()}


if __name__ == '__main__':
    scenarios([s_env, s_signing, s_baseline, s_load, s_churn, s_reload, s_hotplug,
               s_final, s_kmemleak, s_reports], {})
