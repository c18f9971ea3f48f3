# SPDX-License-Identifier: GPL-2.0
"""Core-engine scenarios, run inside the VM by tests/test_engine.py:
    CGE_HPHOLD=hphold_fixture.ko python3 guest_engine.py cgroup_energy.ko cgwork
(the fixture: tests/vm/fixtures/hphold, loaded before the module)
Prints one line 'CGE-RESULT {json}' with the measurements of each scenario;
the host test asserts on them."""
import contextlib
import errno
import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1].parent))
from vm.harness import PM_TEST_DELAY  # noqa: E402

from common import (CG, EN, REPO, Work, root_terms_add_up, cpu_usage, dmesg,
                    freeze, housekeeping_on_cpu0, info,
                    insmod, kv, main_args, mkcg, mount_en, next_sample,
                    owed_usec, populated, proc_idle_usec, proc_sys_usec,
                    rmmod, running,
                    scenarios, set_param, get_param, settle, sh,
                    set_interval,
                    snapshot, stat, umount_en, wait_records, SYS_KINDS)
from drain import s_drain, s_drain_base

KO, CGWORK = main_args()
# the hotplug fixture (tests/vm/fixtures/hphold), loaded before the module
HPHOLD = os.environ.get('CGE_HPHOLD')
W = Work(CGWORK)
ROOT_READS = []


def read_root():
    s = stat()
    ROOT_READS.append(root_terms_add_up(s))
    return s


# Load-time parameters: refused ones as a runtime write is (a log line), the
# model's pair checked as a pair in either order.
LOAD_PARAMS = ['model_idle_mw=5000 model_busy_mw=8000',
               'model_busy_mw=8000 model_idle_mw=5000',
               'model_idle_mw=5000 model_busy_mw=4000',
               'model_idle_mw=5000',
               'source=bogus', 'unowned=fair', 'interval_ms=0',
               'interval_ms=9', 'interval_ms=10001', 'kcpu_time=abc',
               'kcpu_wakeups=2', 'kqos_background=-1', 'source=rapl',
               'source=auto']


def s_load_params(ctx):
    out = {}
    for i, params in enumerate(LOAD_PARAMS):
        mark = f'cge-test {i}: insmod {params}'
        (Path('/dev/kmsg')).write_text(mark + '\n')
        try:
            insmod(KO, params)
        except OSError as e:
            r = {'loaded': False, 'err': errno.errorcode[e.errno]}
        else:
            r = {'loaded': True,
                 'params': {k.split('=')[0]: get_param(k.split('=')[0])
                            for k in params.split()}}
            rmmod()
        log = dmesg().split(mark, 1)[1].splitlines()[1:]
        r['log'] = [ln.split('] ', 1)[-1] for ln in log
                    if 'cgroup_energy' in ln and 'taint' not in ln]
        out[params] = r
    # the shortest interval, kept: samples over 3 s, from just after one
    # sample to just after another (a sampler that is late when the window
    # opens would count due times from before it as overruns inside it)
    insmod(KO, 'interval_ms=10')
    mount_en()
    i0 = next_sample(rels=())['info']
    time.sleep(3)
    i1 = next_sample(rels=())['info']
    umount_en()
    rmmod()
    out['period_10ms'] = {
        'samples': i1['samples'] - i0['samples'],
        'overruns': i1['sampler_overruns'] - i0['sampler_overruns'],
        'seconds': (i1['last_sample_ns'] - i0['last_sample_ns']) / 1e9}
    return out


def s_load(ctx):
    # from CPU 0: the sampler stays on the CPU that loaded the module
    # (sampler.c, cge_queue_sample()), and s_systime wants CPU 1 quiet
    # the fixture first: its hotplug state comes below the module's
    insmod(HPHOLD)
    sh(f'taskset -c 0 insmod {KO}')
    mounted = EN.is_dir()
    sh(f'mount -t cgroup_energy none {EN}')
    return {'mountpoint_created': mounted, 'info': info(),
            'root_mode': oct(os.stat(EN / 'energy.stat').st_mode & 0o777)}


def s_equal_pinned(ctx):
    mkcg('eq1', 'eq2')
    a = W.start('eq1', 'busy', 3, cpu=0)
    b = W.start('eq2', 'busy', 3, cpu=1)
    a.wait()
    b.wait()
    settle()
    read_root()
    return snapshot(['eq1', 'eq2'])['stat']


def s_twice(ctx):
    mkcg('tw_x', 'tw_y')
    # All three on one CPU, each spinning until it has used 1 s of CPU time:
    # tw_x runs twice as long as tw_y however far apart the loops start and
    # whatever the host does to the vCPUs. They are born in frozen cgroups
    # (a task created in a frozen cgroup starts frozen) and thawed together,
    # so they share the same intervals: energy per CPU-ns depends on what
    # the other CPU does (the model's power is the package's), and starting
    # three processes under a loaded host once took long enough to give
    # tw_x's first loop 10 % more per ns alone.
    for cg in ('tw_x', 'tw_y'):
        freeze(cg)
    try:
        ps = [W.start('tw_x', 'cpu', 1, cpu=1),
              W.start('tw_x', 'cpu', 1, cpu=1),
              W.start('tw_y', 'cpu', 1, cpu=1)]
        deadline = time.monotonic() + 60
        while [len((CG / cg / 'cgroup.procs').read_text().split())
               for cg in ('tw_x', 'tw_y')] != [2, 1]:
            if time.monotonic() > deadline:
                raise RuntimeError('the loops did not start in tw_x and tw_y')
            time.sleep(0.01)
        for cg in ('tw_x', 'tw_y'):
            freeze(cg)          # and are frozen (cgroup.events says so)
    finally:
        for cg in ('tw_x', 'tw_y'):
            (CG / cg / 'cgroup.freeze').write_text('0\n')
    for p in ps:
        p.wait()
    settle()
    read_root()
    return snapshot(['tw_x', 'tw_y'])['stat']


def s_parent_sum(ctx):
    mkcg('par/c1', 'par/c2')
    a = W.start('par/c1', 'busy', 1)
    b = W.start('par/c2', 'sleeper', 1000, 1.5)
    a.wait()
    b.wait()
    settle()
    return snapshot(['par', 'par/c1', 'par/c2'])['stat']


def s_removed_child(ctx):
    mkcg('rmp/c')
    W.run('rmp/c', 'busy', 1)
    settle()
    snap = snapshot(['rmp', 'rmp/c'])
    before, child = snap['stat']['rmp'], snap['stat']['rmp/c']
    recs = snap['info']['records']
    held = os.open(EN / 'rmp/c/energy.stat', os.O_RDONLY)
    os.rmdir(CG / 'rmp/c')
    removed = os.pread(held, 65536, 0).decode()
    end, reap_s = wait_records(recs - 1)
    try:
        reaped = os.pread(held, 65536, 0).decode()
    except OSError as e:
        reaped = errno.errorcode[e.errno]
    os.close(held)
    return {'before': before, 'child': child, 'after': stat('rmp'),
            'held_removed': removed, 'held_reaped': reaped,
            'listed': os.listdir(EN / 'rmp'), 'reap_seconds': reap_s,
            'records_before': recs, 'records_after': end['records']}


def _removed_tree(top, interval_ms, then=dict):
    """0.3 s of CPU time in top/slice/pod/ctr (0.3 s however long a starved
    vCPU takes to get it), the three removed, then @then(), all between two
    samples at @interval_ms (window_s: their time): an attempt where a
    sample came between them (a starved vCPU) tests nothing and is made
    again, six times at most. What @top was charged meanwhile, against the
    container's cpu.stat, with @then()'s result."""
    old = get_param('interval_ms')
    set_param('interval_ms', interval_ms)
    since = info()
    try:
        for attempt in range(1, 7):
            mkcg(f'{top}/slice/pod/ctr')
            settle(1)                       # just after a sample
            s0 = info()['samples']
            t0 = time.monotonic()
            before = stat(top)['usage_usec'] if (EN / top).is_dir() else 0
            W.run(f'{top}/slice/pod/ctr', 'cpu', 0.3)
            kernel = cpu_usage(f'{top}/slice/pod/ctr')
            for rel in ('slice/pod/ctr', 'slice/pod', 'slice'):
                os.rmdir(CG / top / rel)
            extra = then()
            between = info()['samples'] - s0
            window = time.monotonic() - t0
            settle(2)           # the second began after the removals
            if not between:
                break
    finally:
        set_param('interval_ms', old)
    return {'kernel': kernel, 'charged': stat(top)['usage_usec'] - before,
            'samples_between': between, 'window_s': round(window, 2),
            'attempts': attempt, 'owed_usec': owed_usec(since),
            'root_ok': root_terms_add_up(read_root()), **extra}


def s_removed_tree(ctx):
    """A cgroup removed with its parent and grandparent before the sampler
    drained its charge (a container scope, its pod and the pod's slice go
    together) is charged to the nearest cgroup that still exists, rmt, not
    to the root. At a 3 s interval the run and the removals fit between two
    samples."""
    return _removed_tree('rmt', 3000)


# More removals than gone.c's ring of removed cgroups' parents holds (2,048)
FLOOD_RMDIRS = 2200


def _rmdir_flood():
    for n in range(FLOOD_RMDIRS):
        os.mkdir(CG / 'flood/x')
        os.rmdir(CG / 'flood/x')
    return {'flooded': n + 1}


def s_removed_flood(ctx):
    """s_removed_tree, then another tenant removes FLOOD_RMDIRS empty
    cgroups before the sample: the ring of removed cgroups' parents no
    longer has the container's, the pod's or the slice's. The charge still
    goes to rmf, the nearest ancestor that had a record when the container
    first ran (the probe looked it up then), not to the root. At a 10 s
    interval the run, the removals and the flood fit between two
    samples."""
    mkcg('rmf/base', 'flood')
    W.run('rmf/base', 'cpu', 0.05)
    settle()
    recorded = stat('rmf')['usage_usec'] > 0     # it ran: it has a record
    return {**_removed_tree('rmf', 10000, _rmdir_flood),
            'rmf_recorded': recorded,
            'rmdir_probe': 'cannot attach to cgroup_rmdir' not in dmesg()}


def s_overflow(ctx):
    # 100 sleepers on CPU 0, each waking every 20 ms: every 250 ms interval
    # meets all of them (about 12 wakeups each), more than the 32 cache slots.
    # Each drain makes records for the cgroups that took slots and for 16
    # more that overflowed without one (while 16 are left): a cgroup can be
    # passed over in at most 99 / 16 intervals, so it has its own record
    # within 7 intervals (1.75 s) of its start, however the starts spread,
    # and is charged there for the rest of its 3 s. A charge that overflows
    # before its cgroup has a record goes to its parent's record, ovf's,
    # which a short run in ovf/o0 makes first: the subtree loses nothing.
    n = 100
    old = get_param('interval_ms')
    set_param('interval_ms', 250)
    try:
        since = info()
        before = since['cache_overflows']
        cgs = [f'ovf/o{i}' for i in range(n)]
        mkcg(*cgs)
        W.run('ovf/o0', 'busy', 0.05)
        settle()
        # started frozen and thawed together, so that at least 33 run at
        # once whatever each start costs (100 starts one by one over 9p
        # can outlast a sleeper's 3 s on a starved guest)
        freeze('ovf')
        try:
            ps = [W.start(cg, 'sleeper', 20000, 3, cpu=0) for cg in cgs]
            # each child made in its cgroup (after cgwork's exec) before
            # the thaw
            populated(cgs)
        finally:
            freeze('ovf', False)
        for p in ps:
            p.wait()
    finally:                    # later scenarios assume the default
        set_param('interval_ms', old)
    settle()
    per = [stat(cg) for cg in cgs]
    return {'overflows': info()['cache_overflows'] - before,
            'min_usage': min(s['usage_usec'] for s in per),
            'min_wakeups': min(s['wakeups'] for s in per),
            'sum_usage': sum(s['usage_usec'] for s in per),
            'parent': stat('ovf'), 'kernel': cpu_usage('ovf'),
            'owed_usec': owed_usec(since),
            'root_ok': root_terms_add_up(read_root())}


def _state(pid):
    """@pid's state letter in /proc (R, S, D, T...)."""
    return Path(f'/proc/{pid}/stat').read_text().rsplit(')', 1)[1].split()[0]


def _stopped(pid, stop=True, timeout=30):
    """SIGSTOP (or SIGCONT) @pid and wait until /proc says it is stopped
    (or not)."""
    os.kill(pid, signal.SIGSTOP if stop else signal.SIGCONT)
    deadline = time.monotonic() + timeout
    while True:
        if (_state(pid) == 'T') == stop:
            return
        if time.monotonic() > deadline:
            raise RuntimeError(f'{pid}: not {"stopped" if stop else "on"}')
        time.sleep(0.005)


def _moved_sleeper(hold, cg):
    """A sleeper on CPU 1 (every 20 ms), started in @hold, stopped there and
    moved into @cg, where it has not run: a stopped task is not woken by
    the move, where a frozen one is (to trap again: it would run in @cg
    and give it a record). It is stopped asleep, once pinned: stopped
    before its pin, it would run on CPU 0 in @cg when let go, and CPU 0's
    cache has room. Returns (process, the worker's pid)."""
    procs = CG / hold / 'cgroup.procs'
    before = set(procs.read_text().split())
    p = W.start(hold, 'sleeper', 20000, 120, cpu=1)
    deadline = time.monotonic() + 30
    while True:
        new = set(procs.read_text().split()) - before
        if new:
            break
        if time.monotonic() > deadline:
            p.kill()
            raise RuntimeError(f'{hold}: no new process')
        time.sleep(0.01)
    pid = int(new.pop())
    while os.sched_getaffinity(pid) != {1} or \
            _state(pid) not in ('S', 'D'):
        if time.monotonic() > deadline:
            p.kill()
            raise RuntimeError(f'{pid}: not asleep on CPU 1')
        time.sleep(0.01)
    _stopped(pid)
    (CG / cg / 'cgroup.procs').write_text(f'{pid}\n')
    return p, pid


def _run_for(pids, secs):
    """Let the stopped @pids run for @secs, then stop them again."""
    for pid in pids:
        _stopped(pid, False)
    time.sleep(secs)
    for pid in pids:
        _stopped(pid)


def s_request_share(ctx):
    """One tenant's new cgroups fill CPU 1's record requests; another's then
    take back their share (kmod/want.c). At a 10 s interval, NA sleepers of
    wa, each in a new cgroup, wake every 20 ms on CPU 1: about 32 take the
    cache's slots, 16 of the rest fill the requests. Then NB = 10 of wb:
    each takes back wa's newest request while wa holds two more than wb,
    so 8 do and 2 wait. In the next interval the 8 have records: what they
    run there is their own, against cpu.stat; the 2 are charged to wb.
    An attempt that a sample cuts is made again, three times at most."""
    na, nb = 50, 10
    old = get_param('interval_ms')
    set_interval(10000)
    try:
        for attempt in range(1, 4):
            ta, tb = f'wa{attempt}', f'wb{attempt}'
            hold = f'whold{attempt}'
            a = [f'{ta}/a{i}' for i in range(na)]
            b = [f'{tb}/b{i}' for i in range(nb)]
            mkcg(*a, *b, hold)
            ps, pa, pb = [], [], []
            try:
                with housekeeping_on_cpu0():
                    for cg in a + b:
                        p, pid = _moved_sleeper(hold, cg)
                        ps.append(p)
                        (pa if cg in a else pb).append(pid)
                    next_sample()
                    i0 = info()
                    for pid in pa:
                        _stopped(pid, False)
                    time.sleep(1)
                    _run_for(pb, 1)
                    i1 = info()
                    c1 = {cg: cpu_usage(cg) for cg in b}
                    # the drain that makes the 8's records, then wb runs
                    # again, wa's sleepers holding the slots
                    next_sample()
                    i2 = info()
                    time.sleep(0.5)
                    _run_for(pb, 1)
                    i3 = info()
                    c3 = {cg: cpu_usage(cg) for cg in b}
            finally:
                for pid in pa + pb:
                    with contextlib.suppress(ProcessLookupError):
                        os.kill(pid, signal.SIGCONT)
                Work.stop(ps, a + b + [hold])
            if i1['samples'] == i0['samples'] and \
                    i3['samples'] == i2['samples']:
                break
    finally:
        set_param('interval_ms', old)
    settle()
    # what wb's tasks ran from the drain that made the 8's records to their
    # end (they ran on until killed), and in the second window alone
    c2 = {cg: cpu_usage(cg) for cg in b}
    return {'attempts': attempt,
            'samples_cut': [i1['samples'] - i0['samples'],
                            i3['samples'] - i2['samples']],
            'overflows': i1['cache_overflows'] - i0['cache_overflows'],
            'takebacks': i1['request_takebacks'] - i0['request_takebacks'],
            'takebacks_after': i3['request_takebacks'] -
            i2['request_takebacks'],
            'b': {cg: {'usage_usec': stat(cg)['usage_usec'],
                       'run2': c2[cg] - c1[cg],
                       'window2': c3[cg] - c1[cg]} for cg in b},
            'wb_own_usec': stat(tb)['own_usage_usec'],
            'owed_usec': owed_usec(i0)}


def s_permissions(ctx):
    nobody = 'setpriv --reuid=65534 --regid=65534 --clear-groups'
    default = sh(f'{nobody} cat {EN}/energy.stat', check=False)
    sh(f'umount {EN}')
    sh(f'mount -t cgroup_energy -o mode=0444 none {EN}')
    allowed = sh(f'{nobody} cat {EN}/energy.stat', check=False)
    mode = oct(os.stat(EN / 'energy.stat').st_mode & 0o777)
    sh(f'umount {EN}')
    sh(f'mount -t cgroup_energy -o gid=65534 none {EN}')
    by_gid = sh(f'{nobody} cat {EN}/energy.stat', check=False)
    sh(f'umount {EN}')
    sh(f'mount -t cgroup_energy none {EN}')
    return {'default_rc': default.returncode, 'default_err': default.stderr,
            'mode0444_rc': allowed.returncode, 'mode0444': mode,
            'gid_rc': by_gid.returncode}


def s_namespace(ctx):
    mkcg('nsroot/inner')
    p = sh(f"sh -c 'echo $$ > {CG}/nsroot/cgroup.procs; exec unshare -Cm "
           f"sh -c \"mount -t cgroup_energy none /mnt && ls /mnt && "
           f"cat /mnt/energy.stat && echo --- && cat /mnt/energy.info\"'",
           check=False)
    return {'rc': p.returncode, 'out': p.stdout, 'err': p.stderr}


# Prints {relative dir: [subdirectories, files, energy.stat]} of a tree, and
# {'@' + path: energy.stat or the error} for each path named after it, read
# by name first (looked up whether listed or not).
DUMP_TREE = """import json, os, sys
root, out = sys.argv[1], {}
for rel in sys.argv[2:]:
    try:
        with open(os.path.join(root, rel, 'energy.stat')) as f:
            out['@' + rel] = f.read()
    except OSError as e:
        out['@' + rel] = e.strerror
for d, dirs, files in os.walk(root):
    with open(os.path.join(d, 'energy.stat')) as f:
        out[os.path.relpath(d, root)] = [sorted(dirs), sorted(files), f.read()]
print(json.dumps(out))
"""


def dump_tree(how=(), root=EN):
    """@root as a reader in cgroup 'viewer' sees it, run through @how (a
    command prefix such as ['unshare', '-C']); view/ is read by name first."""
    p = subprocess.run(['sh', '-c', f'echo $$ > {CG}/viewer/cgroup.procs; '
                        'exec "$@"', 'sh', *how, sys.executable, '-c',
                        DUMP_TREE, str(root), 'view'], text=True,
                       capture_output=True)
    if p.returncode:
        return {'error': p.stderr}
    return json.loads(p.stdout)


def s_view(ctx):
    """What a mount shows belongs to the mount: the host mount read from a
    child cgroup namespace, and by a container-style reader (own cgroup
    and mount namespaces, the host tree bind-mounted in), is the host's
    tree with the host's values; a host process whose cwd is in the tree
    keeps it (a reader that looks its directory up must not invalidate the
    dentry). The cgroups under view/ are idle while they are read, so
    their energy.stat's counters do not change between the reads (the
    power averages, gauges, decay at every sample)."""
    mkcg('view/a/b', 'view/c', 'viewer')
    W.run('view/a/b', 'busy', 0.5)
    settle()
    # the kernel's own view of the cwd: ' (deleted)' once its dentry is
    # dropped (pwd -P would find the name again by reading '..')
    cwd = subprocess.Popen(['sh', '-c', 'read go; readlink /proc/self/cwd; '
                            'ls; cat energy.stat'], cwd=EN / 'view', text=True,
                           stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE)
    host = dump_tree()
    child_ns = dump_tree(['unshare', '-C'])
    container = dump_tree(['unshare', '-Cm', 'sh', '-c',
                           f'mount --bind {EN} /mnt && exec "$@"', 'sh'],
                          root='/mnt')
    out, err = cwd.communicate('go\n')
    view = {k: v for k, v in host.items()
            if k in ('@view', 'view') or k.startswith('view/')}

    def counters(stat):
        return [ln for ln in stat.splitlines()
                if not ln.startswith('power_avg')]

    def values(tree, k):
        v = tree.get(k)
        return counters(v if isinstance(v, str) else v[2]) if v else v

    def same(tree):
        if 'error' in tree:
            return tree
        return {'dirs': {k: v[:2] for k, v in tree.items() if k[0] != '@'} ==
                {k: v[:2] for k, v in host.items() if k[0] != '@'},
                'view_values': all(values(tree, k) == values(view, k)
                                   for k in view)}
    return {'host_dirs': len(host), 'view': sorted(view),
            'child_ns': same(child_ns),
            'container': same(container),
            'cwd': {'rc': cwd.returncode, 'out': out.splitlines(),
                    'err': err}}


def s_readdir(ctx):
    """A directory of 1,000 cgroups listed over and over while others are
    created and removed beside them, before and after them in the kernel's
    order: every listing has each of the 1,000 exactly once. Removing one
    created before them shifts their index; 400 such removals are paced
    over the run (one every 10 ms) so that many listings overlap one.
    Names of 40 characters make a listing need several getdents calls
    (glibc reads 32 KiB at a time) and several of the module's one-page
    batches."""
    stable = [f'stable-{i:04d}-' + 'x' * 28 for i in range(1000)]
    early = [f'early-{i:04d}' for i in range(400)]
    mkcg(*[f'rd/{n}' for n in early])
    mkcg(*[f'rd/{n}' for n in stable])
    stop = threading.Event()
    churned = {'removed': 0, 'created': 0, 'errors': []}
    removed_at = []

    def churn():
        i = 0
        try:
            while not stop.is_set():
                if i < len(early):
                    t = time.monotonic()
                    os.rmdir(CG / 'rd' / early[i])
                    removed_at.append((t, time.monotonic()))
                    churned['removed'] += 1
                (CG / 'rd' / f'late-{i:05d}').mkdir()
                churned['created'] += 1
                if i >= 50:
                    os.rmdir(CG / 'rd' / f'late-{i - 50:05d}')
                    churned['removed'] += 1
                i += 1
                time.sleep(0.01)
        except Exception as e:  # reported, asserted on by the host test
            churned['errors'].append(repr(e))
    t = threading.Thread(target=churn)
    t.start()
    want = set(stable)
    spans = []
    bad = 0
    t0 = time.monotonic()
    try:
        while len(removed_at) < len(early) and not churned['errors']:
            a = time.monotonic()
            names = [n for n in os.listdir(EN / 'rd')
                     if n.startswith('stable-')]
            spans.append((a, time.monotonic()))
            bad += len(names) != len(want) or set(names) != want
            if time.monotonic() - t0 > 120:
                break
    finally:
        stop.set()
        t.join()
        for n in os.listdir(CG / 'rd'):
            if (CG / 'rd' / n).is_dir():
                os.rmdir(CG / 'rd' / n)
    # a listing overlapped a removal that began and ended inside it
    overlapped = sum(any(a <= r0 and r1 <= b for r0, r1 in removed_at)
                     for a, b in spans)
    return {'listings': len(spans), 'overlapped': overlapped, 'bad': bad,
            'early_removed': len(removed_at), **churned}


# energy.tree's lines: the key/value lines before 'path', then the rows.
def parse_tree(text):
    lines = text.splitlines()
    at = next(i for i, ln in enumerate(lines) if ln.startswith('path '))
    keys = lines[at].split()[1:]
    rows = [ln.split(' ') for ln in lines[at + 1:]]
    return {'head': dict(ln.split(' ', 1) for ln in lines[:at]),
            'keys': keys, 'paths': [r[0] for r in rows],
            'rows': {r[0]: dict(zip(keys, map(int, r[1:]))) for r in rows},
            'widths': sorted({len(r) for r in rows})}


TREE_NAMES = ['tree/a/energy.stat/deep', 'tree/sp ace', 'tree/back\\slash',
              'tree/ta\tb', 'tree/idle/x']


def s_tree(ctx):
    """energy.tree beside a walk of the same mount: a child cgroup named
    energy.stat (the file keeps the name; the tree lists the cgroup), names
    that need escapes, the mount's options in /proc/mounts, a namespace's
    mount, an unprivileged reader. The cgroups under tree/ are idle from
    the settle() on, so their counters do not move between the reads."""
    mkcg(*TREE_NAMES)
    since = info()
    W.run('tree/a/energy.stat/deep', 'busy', 0.3)
    settle()
    tree = parse_tree((EN / 'energy.tree').read_text())
    walk = {}
    for d, dirs, files in os.walk(EN):
        rel = '/' + os.path.relpath(d, EN) if d != str(EN) else '/'
        if rel.startswith('/tree'):
            walk[rel] = kv(Path(d) / 'energy.stat')
        else:
            walk[rel] = None
    deep = CG / 'tree/a/energy.stat/deep'
    a_list = os.listdir(EN / 'tree/a')
    a_file = (EN / 'tree/a/energy.stat').read_text()
    nobody = 'setpriv --reuid=65534 --regid=65534 --clear-groups'
    denied = sh(f'{nobody} cat {EN}/energy.tree', check=False)
    opts = []
    sh('mount -t cgroup_energy -o uid=65534,gid=65534,mode=0444 none /mnt')
    for remount in ('', 'remount,mode=0440,uid=0'):
        if remount:
            sh(f'mount -o {remount} /mnt')
        opts += [ln.split()[3] for ln in
                 Path('/proc/mounts').read_text().splitlines()
                 if ln.split()[1] == '/mnt']
    sh('umount /mnt')
    opts.append(next(ln.split()[3] for ln in
                     Path('/proc/mounts').read_text().splitlines()
                     if ln.split()[1] == str(EN)))
    ns = sh(f"sh -c 'echo $$ > {CG}/tree/a/cgroup.procs; exec unshare -Cm "
            f"sh -c \"mount -t cgroup_energy none /mnt && "
            f"cat /mnt/energy.tree\"'", check=False)
    return {'tree': tree, 'walk': walk, 'a_list': a_list,
            'a_file_keys': [ln.split()[0] for ln in a_file.splitlines()],
            'deep_cpu_stat': kv(deep / 'cpu.stat')['usage_usec'],
            'owed_usec': owed_usec(since),
            'denied_rc': denied.returncode, 'denied_err': denied.stderr,
            'opts': opts, 'ns_rc': ns.returncode, 'ns_err': ns.stderr,
            'ns': parse_tree(ns.stdout) if ns.returncode == 0 else None}


# A process whose second thread spins, moves the process (cgroup.procs:
# the tracepoint names the leader, not the mover), then spins again. At
# SCHED_FIFO no CFS task preempts it after the move: what it runs from the
# move to its exit is one slice, the cgroup it is charged to decided at the
# move (a wakeup preemption right after it would hide a wrong one).
THREAD_MOVE = """
import os, sys, threading, time
def spin(s):
    end = time.thread_time() + s
    while time.thread_time() < end:
        pass
def mover():
    os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(1))
    spin(0.3)
    with open(sys.argv[1], 'w') as f:
        f.write(str(os.getpid()))
    spin(0.3)
t = threading.Thread(target=mover)
t.start()
t.join()
"""


def s_thread_move(ctx):
    """A thread other than its process's leader moves the process to
    another cgroup while it runs: the CPU time of each cgroup against
    cpu.stat's, once the process has exited and the sampler drained it."""
    mkcg('tmove/a', 'tmove/b')
    since = info()
    subprocess.run(['sh', '-c', 'echo $$ > "$1"; shift; '
                    'exec /usr/bin/python3 -c "$@"', 'sh',
                    f'{CG}/tmove/a/cgroup.procs', THREAD_MOVE,
                    f'{CG}/tmove/b/cgroup.procs'], check=True)
    settle()
    out = {rel: {'usage_usec': stat(f'tmove/{rel}')['usage_usec'],
                 'cpu_stat': kv(CG / f'tmove/{rel}/cpu.stat')['usage_usec']}
           for rel in ('a', 'b')}
    out['owed_usec'] = owed_usec(since)
    return out


def s_bad_input(ctx):
    out = {'params': {}, 'mounts': {}}
    for name, val in [('interval_ms', 0), ('interval_ms', 9),
                      ('interval_ms', 10001),
                      ('interval_ms', 'abc'), ('model_busy_mw', 100),
                      ('model_idle_mw', 99999), ('split', 'bogus'),
                      ('unowned', 'fair')]:
        old = get_param(name)
        ok, err = set_param(name, val)
        out['params'][f'{name}={val}'] = {'accepted': ok, 'err': err,
                                          'kept': get_param(name) == old}
    for opt in ('bogus=1', 'mode=1777', 'uid=abc', 'mode=9', 'mode=0640',
                'mode=0777', 'mode=0555'):
        p = sh(f'mount -t cgroup_energy -o {opt} none /mnt', check=False)
        out['mounts'][opt] = {'rc': p.returncode, 'err': p.stderr}
    out['dmesg'] = [ln for ln in dmesg().splitlines() if 'refused' in ln]
    return out


def s_churn(ctx):
    n = ctx['churn']
    mkcg('churn')
    # Two reaper passes for the records of cgroups that earlier scenarios
    # removed: one not freed yet only raises start, which loosens the check.
    settle()
    time.sleep(2.5)
    settle()
    start = info()
    stop = threading.Event()
    reads = {'n': 0, 'bad': 0}

    def reader():
        while not stop.is_set():
            for dirpath, _, files in os.walk(EN):
                for f in files:
                    if f != 'energy.stat':
                        continue
                    try:
                        s = kv(os.path.join(dirpath, f))
                        reads['n'] += 1
                        if 'total_uj' in s and not root_terms_add_up(s):
                            reads['bad'] += 1
                    except OSError:
                        pass    # a cgroup removed under us
    t = threading.Thread(target=reader)
    t.start()
    t0 = time.time()
    W.run('churn', 'hop', str(CG / 'churn'), n, 300)
    churn_s = time.time() - t0
    stop.set()
    t.join()
    end, reap_s = wait_records(start['records'] * 1.05 + 1)
    return {'cgroups': n, 'churn_seconds': round(churn_s, 1),
            'reap_seconds': reap_s,
            'reads': reads, 'records_start': start['records'],
            'bytes_start': start['record_bytes'],
            'records_end': end['records'], 'bytes_end': end['record_bytes'],
            'usage': stat('churn')['usage_usec'],
            'kernel': cpu_usage('churn'), 'root_ok': root_terms_add_up(read_root())}


def s_hotplug(ctx):
    cpu1 = '/sys/devices/system/cpu/cpu1/online'
    mkcg('hp')
    sh(f'echo 0 > {cpu1}')
    W.run('hp', 'busy', 1)
    r1 = root_terms_add_up(read_root())
    sh(f'echo 1 > {cpu1}')
    a = W.start('hp', 'busy', 1, cpu=1)
    a.wait()
    settle()
    return {'offline_ok': r1, 'online_ok': root_terms_add_up(read_root()),
            'usage': stat('hp')['usage_usec'], 'kernel': cpu_usage('hp')}


def hotplug_states():
    """{name: number} of the CPU hotplug states the kernel lists."""
    out = {}
    for ln in Path('/sys/devices/system/cpu/hotplug/states').read_text() \
            .splitlines():
        num, name = ln.split(':', 1)
        out[name.strip()] = int(num)
    return out


def s_hotplug_window(ctx):
    # A task busy on CPU 1 as CPU 1 goes offline, held there for 300 ms
    # after the module's offline callback by the fixture's (whose state
    # comes below the module's, so its teardown runs later): on 5.10 the
    # task runs on through the hold; later kernels push it to CPU 0 at its
    # next switch in (balance_push). Then CPU 1 comes back.
    cpu1 = '/sys/devices/system/cpu/cpu1/online'
    hold = Path('/sys/module/hphold_fixture/parameters/hold_ms')
    mkcg('hpw')
    since = info()
    a = W.start('hpw', 'busy', 2, cpu=1)
    running(['hpw'])
    time.sleep(0.5)
    hold.write_text('300')
    busy = a.poll() is None
    t0 = time.monotonic()
    try:
        sh(f'echo 0 > {cpu1}')
    finally:
        hold.write_text('0')
    offline_s = time.monotonic() - t0
    sh(f'echo 1 > {cpu1}')
    a.wait()
    settle()
    st = hotplug_states()
    return {'offline_seconds': round(offline_s, 3), 'busy_at_offline': busy,
            'state_module': st.get('cgroup_energy:online'),
            'state_fixture': st.get('hphold:online'),
            'usage': stat('hpw')['usage_usec'], 'kernel': cpu_usage('hpw'),
            'owed_usec': owed_usec(since),
            'root_ok': root_terms_add_up(read_root())}


def s_suspend(ctx):
    # A suspend cycle with PM_DEBUG's freezer test: the PM notifiers run,
    # tasks freeze and thaw, the machine does not sleep (QEMU without KVM
    # does not wake from suspend-to-idle).
    before = info()['counter_resyncs']
    p = sh(f'{PM_TEST_DELAY} && echo freezer > /sys/power/pm_test && '
           'echo freeze > /sys/power/state; rc=$?; '
           'echo none > /sys/power/pm_test; exit $rc', check=False)
    settle()
    return {'rc': p.returncode, 'err': p.stderr,
            'resyncs': info()['counter_resyncs'] - before,
            'root_ok': root_terms_add_up(read_root())}


def s_suspend_ns(ctx):
    """A suspend started by a task in a cgroup namespace: the PM notifier's
    sample runs in that task, and the cgroups it first sees there are
    outside the namespace ('nsq/out/new' against a namespace rooted at
    'nsq/in'). With a 10 s interval, no periodic sample runs between the
    work in 'new' and the suspend ('samples' counts the suspend's only)."""
    mkcg('nsq/in', 'nsq/out')
    old = get_param('interval_ms')
    set_interval(10000)
    # the sample queued before the change keeps the old interval
    next_sample()
    # a periodic sample in the window (a host slow enough to take 10 s for
    # it) would charge 'new' itself: then again, with another cgroup
    for attempt in range(3):
        new = f'nsq/out/new{attempt}'
        n = info()['samples']
        mkcg(new)
        W.run(new, 'busy', 0.5)
        p = sh(f"sh -c 'echo $$ > {CG}/nsq/in/cgroup.procs; exec unshare -C "
               f"sh -c \"{PM_TEST_DELAY} && echo freezer > /sys/power/pm_test"
               " && echo freeze > /sys/power/state; rc=\\$?; "
               "echo none > /sys/power/pm_test; exit \\$rc\"'", check=False)
        samples = info()['samples'] - n
        if samples == 1 or p.returncode:
            break
    set_interval(old)
    settle()
    return {'rc': p.returncode, 'err': p.stderr, 'samples': samples,
            'attempts': attempt + 1, 'usage': stat(new)['usage_usec'],
            'kernel': cpu_usage(new)}


def s_quiet(ctx):
    """An idle CPU is not woken to be drained, and its idle time counts.
    The window starts and ends just after a sample, each end one snapshot
    (energy.stat, energy.info and /proc/stat read while no sample completed):
    the module's idle time and /proc/stat's cover the same 5 s."""
    settle(1)
    a = next_sample(extra=proc_idle_usec)
    time.sleep(5)
    b = next_sample(extra=proc_idle_usec)
    i0, i1 = a['info'], b['info']
    return {'rt': 'PREEMPT_RT' in os.uname().version,
            'interval_ms': i1['interval_ms'],
            'window_s': (i1['last_sample_ns'] - i0['last_sample_ns']) / 1e9,
            'samples': i1['samples'] - i0['samples'],
            'quiet': i1['quiet_drains'] - i0['quiet_drains'],
            'idle_usec': b['stat']['']['idle_usec'] - a['stat']['']['idle_usec'],
            'proc_stat_idle_usec': b['extra'] - a['extra']}


def _ksoftirqd_ns(cpu):
    """sum_exec_runtime of ksoftirqd/@cpu (/proc/PID/schedstat), ns."""
    pid = sh(f'pgrep -x ksoftirqd/{cpu}').stdout.split()[0]
    return int(Path(f'/proc/{pid}/schedstat').read_text().split()[0])


def _flood(port, seconds, duty=False):
    """A UDP sender pinned to CPU 0 for @seconds, in a child; with @duty it
    sends for 2 ms and sleeps for 2 ms, so CPU 0 is idle half the time."""
    import socket
    pid = os.fork()
    if pid == 0:
        try:
            os.sched_setaffinity(0, {0})
            tx = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
            buf, end = b'x' * 1000, time.monotonic() + seconds
            burst = time.monotonic() + 0.002
            while time.monotonic() < end:
                try:
                    tx.sendto(buf, ('127.0.0.1', port))
                except OSError:
                    pass
                if duty and time.monotonic() >= burst:
                    time.sleep(0.002)
                    burst = time.monotonic() + 0.002
        finally:
            os._exit(0)
    os.waitpid(pid, 0)


def _cpu_task_ns(cpu):
    """The kernel's sum of the time tasks ran on @cpu (/proc/schedstat's
    rq_cpu_time, the 7th field of its cpuN line), ns."""
    for line in Path('/proc/schedstat').read_text().splitlines():
        f = line.split()
        if f and f[0] == f'cpu{cpu}':
            return int(f[7])
    raise RuntimeError(f'no cpu{cpu} in /proc/schedstat')


def _systime_window(port, seconds, duty=False):
    """The module's irq, softirq and steal time against /proc/stat's over
    one flood, in a window that starts and ends on a sample boundary
    (next_sample()); with the time tasks ran on CPU 1 over it (a softirq
    sample that hit one of them is its runtime, not ours)."""
    k0, t0 = _ksoftirqd_ns(1), _cpu_task_ns(1)
    a = next_sample(extra=proc_sys_usec)
    _flood(port, seconds, duty)
    b = next_sample(extra=proc_sys_usec)
    ra, rb = a['stat'][''], b['stat']['']
    return {'module': {k: rb[f'{k}_usec'] - ra[f'{k}_usec'] for k in SYS_KINDS},
            'proc': {c: {k: b['extra'][c][k] - a['extra'][c][k]
                         for k in SYS_KINDS} for c in ('cpu', 'cpu0', 'cpu1')},
            'ksoftirqd1_usec': (_ksoftirqd_ns(1) - k0) // 1000,
            'cpu1_tasks_usec': (_cpu_task_ns(1) - t0) // 1000,
            'idle_usec': rb['idle_usec'] - ra['idle_usec'],
            'window_s': (b['info']['last_sample_ns'] -
                         a['info']['last_sample_ns']) / 1e9,
            'root_ok': root_terms_add_up(rb)}


def s_systime(ctx):
    """Softirq time with and without a task to charge it to. A UDP sender
    pinned to CPU 0 floods loopback (to a socket that is never read):
    'local', its packets are processed in its own context on CPU 0, where
    the kernel also books tick samples of it as softirq; 'duty', the same
    sending half the time, so that CPU 0 also has idle time the sender's
    softirq samples must not be taken from; 'steered', receive
    packet steering has CPU 1, which runs no task, process them in NET_RX
    softirqs. PREEMPT_RT runs softirqs in threads, tasks like any other, and
    warns when the RPS IPI raises one (kernel/softirq.c,
    do_softirq_post_smp_call_flush): there only 'local' runs."""
    import socket
    rt = 'PREEMPT_RT' in os.uname().version
    sh('ip link set lo up')
    rx = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    rx.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    rx.bind(('127.0.0.1', 0))
    port = rx.getsockname()[1]
    out = {'rt': rt}
    # this script, and the module's sampler, on CPU 0 too: CPU 1 runs as
    # few tasks as the kernel lets it
    try:
        with housekeeping_on_cpu0():
            out['local'] = _systime_window(port, 3)
            out['duty'] = _systime_window(port, 3, duty=True)
            if not rt:
                sh('echo 2 > /sys/class/net/lo/queues/rx-0/rps_cpus')
                out['steered'] = _systime_window(port, 4)
    finally:
        rx.close()
        sh('echo 0 > /sys/class/net/lo/queues/rx-0/rps_cpus', check=False)
    return out


def s_conservation(ctx):
    for _ in range(200):
        read_root()
    return {'reads': len(ROOT_READS), 'exact': sum(ROOT_READS),
            'cgroup2': info()['cgroup2']}


def prom_counters(text):
    """The *_total samples of a Prometheus text: {series: value}."""
    out = {}
    for line in text.splitlines():
        if line and line[0] != '#':
            series, value = line.rsplit(' ', 1)
            if series.split('{')[0].endswith('_total'):
                out[series] = float(value)
    return out


def s_energystat(ctx):
    """The tool on the live module; then five --prometheus reads at a 10 ms
    interval, where every walk of the tree straddles samples, while /par/c1
    burns: no series may go down from one read to the next (a counter
    reset to Prometheus)."""
    tool = str(ctx['repo'] / 'userspace/energystat')
    table = sh(f'{tool}', check=False)
    js = sh(f'{tool} --json eq1 eq2 tw_x', check=False)
    prom = sh(f'{tool} --prometheus', check=False)
    old = get_param('interval_ms')
    reads = []
    burn = None
    try:
        # the sample already queued keeps the old interval: a first walk
        # that ended before it straddled none (seen once, on experimental)
        set_interval(10)
        burn = W.start('par/c1', 'busy', 10)
        for _ in range(5):
            before = int(info()['samples'])
            t0 = time.monotonic()
            r = sh(f'{tool} --prometheus', check=False)
            reads.append({'rc': r.returncode, 'err': r.stderr[-500:],
                          'samples': int(info()['samples']) - before,
                          'ms': round((time.monotonic() - t0) * 1000),
                          'counters': prom_counters(r.stdout)})
    finally:
        if burn:
            W.stop([burn], ['par/c1'])
        set_param('interval_ms', old)
    down = [(k, a['counters'][k], b['counters'][k])
            for a, b in zip(reads, reads[1:]) for k in b['counters']
            if k in a['counters'] and b['counters'][k] < a['counters'][k]]
    return {'table_rc': table.returncode, 'table': table.stdout,
            'json_rc': js.returncode, 'json': js.stdout,
            'prom_rc': prom.returncode, 'prom': prom.stdout[:20000],
            'prom_err': prom.stderr[-2000:],
            'straddled': [{k: x[k] for k in ('rc', 'err', 'samples', 'ms')}
                          for x in reads],
            'series': [len(x['counters']) for x in reads], 'down': down[:20]}


def s_live_view(ctx):
    """energystat's interactive live view on the live module, in a tmux
    terminal of 80 and then 200 columns: the first screen (the module's
    power_avg10_mw) and the one after an update, then q; its exit status
    and whether the session ended. Waits are hang guards: a screen is
    taken as soon as it shows what is waited for: a terminal can show a
    frame's first lines before the rest (a pty passes a write on in
    pieces), so the wait is for the whole of what the test checks."""
    tool = str(ctx['repo'] / 'userspace/energystat')
    tmux = 'tmux -L cge-live'
    out = {}

    def screen(name):
        return sh(f'{tmux} capture-pane -p -t {name}', check=False).stdout

    def wait_for(name, shows, secs):
        end = time.monotonic() + secs
        s = screen(name)
        while not shows(s) and time.monotonic() < end:
            time.sleep(0.2)
            s = screen(name)
        return s

    def first_shown(s):
        return all(x in s for x in ('power_avg10_mw', 'machine', '/eq1'))

    def update_shown(s):
        return ('power_avg10_mw' not in s and 'WAKEUPS/s' in s and
                re.search(r'^/eq1 .*\d W ', s, re.M) is not None)

    # busy until stopped: the waits below are hang guards, as long as a
    # slow host makes them
    burn = W.start('eq1', 'busy', 600)
    try:
        for cols in (80, 200):
            name = f'v{cols}'
            rc = f'/tmp/live-{cols}.rc'
            # -d 10: the first screen stays 10 s, so that capture-pane (a
            # process start per capture) sees it on a starved guest before
            # the update replaces it
            sh(f'{tmux} new-session -d -s {name} -x {cols} -y 24 '
               f'"TERM=xterm {tool} -d 10; echo \$? > {rc}"')
            first = wait_for(name, first_shown, 60)
            # an update: the first screen's note is gone, rates shown
            update = wait_for(name, update_shown, 60)
            sh(f'{tmux} send-keys -t {name} q')
            end = time.monotonic() + 30
            while (sh(f'{tmux} has-session -t {name}', check=False)
                   .returncode == 0 and time.monotonic() < end):
                time.sleep(0.2)
            ended = sh(f'{tmux} has-session -t {name}',
                       check=False).returncode != 0
            out[cols] = {'first': first, 'update': update, 'ended': ended,
                         'rc': open(rc).read().strip() if ended and
                         os.path.exists(rc) else None}
    finally:
        sh(f'{tmux} kill-server', check=False)
        W.stop([burn], ['eq1'])
    return {'screens': out}


def s_unload(ctx):
    busy = sh('rmmod cgroup_energy', check=False)
    still = os.path.isdir('/sys/module/cgroup_energy')
    sh(f'umount {EN}')
    cycles = 0
    for _ in range(3):
        sh('rmmod cgroup_energy')
        gone = not os.path.exists(EN)
        sh(f'insmod {KO}')
        sh(f'mount -t cgroup_energy none {EN}')
        ok = root_terms_add_up(stat())
        sh(f'umount {EN}')
        cycles += gone and ok
    sh('rmmod cgroup_energy')
    rmmod('hphold_fixture')
    return {'busy_rc': busy.returncode, 'busy_err': busy.stderr,
            'still_loaded': still, 'clean_cycles': cycles}


if __name__ == '__main__':
    ctx = {'churn': int(os.environ.get('CGE_CHURN', 10000)), 'repo': REPO,
           'cgwork': CGWORK}
    scenarios([s_drain_base, s_load_params, s_load, s_equal_pinned, s_twice,
               s_parent_sum, s_removed_child, s_removed_tree, s_removed_flood,
               s_overflow,
               s_request_share, s_permissions,
               s_namespace, s_view, s_readdir, s_tree, s_thread_move,
               s_bad_input, s_churn, s_hotplug, s_hotplug_window, s_suspend, s_suspend_ns,
               s_quiet,
               s_systime,
               s_conservation,
               s_energystat, s_live_view, s_drain, s_unload], ctx,
              deep_only=(s_drain_base, s_systime))
