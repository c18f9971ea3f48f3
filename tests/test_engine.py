# SPDX-License-Identifier: GPL-2.0
"""Core engine in a VM: the energy split, hierarchy, lifetime, overflow,
permissions, namespaces, bad input, churn, hotplug, quiet CPUs, unload. One
boot runs tests/vm/guest/guest_engine.py, after test_impact's script
(workload.engine_boot); each test asserts on one
scenario's measurements, with numeric tolerances.  usage_usec against
cpu.stat on quiet cgroups (busy, sleeper, SCHED_FIFO, short-lived) is
tests/test_accuracy.py's, which the vm stage runs on every kernel too."""
import json
import re
import subprocess

import pytest

import drain_checks
import need
from workload import ENGINE_GATE, close, engine_boot, guest_json, ok

pytestmark = ENGINE_GATE

# /proc/stat against the module's irq, softirq and steal time over one window:
# each /proc/stat line is floored to USER_HZ (10 ms), and at each end the
# kernel's per-tick counters can move by a tick (4 ms at HZ=250) on each of
# the two CPUs between the sample's drain and the read of /proc/stat.
TOL_SYS_US = 10_000 + 2 * 2 * 4_000


@pytest.fixture(scope='module')
def res(vm, vm_flavour, cge_ko):
    return guest_json(engine_boot(vm, vm_flavour, cge_ko), 'engine')


def test_per_cpu_state_is_allocated(cge_ko):
    # struct cge_cpu (1,712 B) comes from __alloc_percpu(), not from the
    # static per-CPU reserve that all modules share: no .data..percpu section
    r = subprocess.run([need.need('readelf', 'binutils'), '-SW', str(cge_ko)],
                       capture_output=True, text=True, check=True)
    assert '.data..percpu' not in r.stdout


def test_model_pair_loads_in_either_order(res):
    r = ok(res, 's_load_params')
    for params in ('model_idle_mw=5000 model_busy_mw=8000',
                   'model_busy_mw=8000 model_idle_mw=5000'):
        assert r[params]['loaded'], r[params]
        assert r[params]['params'] == {'model_idle_mw': '5000',
                                       'model_busy_mw': '8000'}, r[params]
    # idle above busy, given or default (3500): refused as a pair
    for params, busy in (('model_idle_mw=5000 model_busy_mw=4000', 4000),
                         ('model_idle_mw=5000', 3500)):
        p = r[params]
        assert not p['loaded'] and p['err'] == 'EINVAL', p
        assert p['log'] == [f'cgroup_energy: refused model_idle_mw=5000 '
                            f'model_busy_mw={busy}: need model_idle_mw <= '
                            'model_busy_mw <= 10000000'], p


@pytest.mark.parametrize('params, why', [
    ('source=bogus', 'expected auto, rapl or model'),
    ('unowned=fair', 'expected none, weight or cpuset'),
    ('interval_ms=0', 'expected 10-10000 (ms)'),
    ('interval_ms=9', 'expected 10-10000 (ms)'),
    ('interval_ms=10001', 'expected 10-10000 (ms)'),
    ('kcpu_time=abc', 'expected a decimal 0-10, e.g. 1.0 or 0.8'),
    ('kcpu_wakeups=2', 'expected seconds per wakeup, 0-0.01, e.g. 2e-4'),
    ('kqos_background=-1', 'expected a decimal 0-10, e.g. 1.0 or 0.8')])
def test_bad_load_parameter_refused(res, params, why):
    p = ok(res, 's_load_params')[params]
    assert not p['loaded'] and p['err'] == 'EINVAL', p
    # the refusal, then the kernel's own line for the failed load
    assert p['log'][0] == f'cgroup_energy: refused {params}: {why}', p
    assert len(p['log']) <= 2, p


def test_source_choice_logged(res):
    r = ok(res, 's_load_params')
    p = r['source=rapl']                      # QEMU has no RAPL
    assert not p['loaded'] and p['err'] == 'ENODEV', p
    assert 'cgroup_energy: source=rapl: no usable RAPL counters on this ' \
        'machine' in p['log'], p
    p = r['source=auto']
    assert p['loaded'], p
    assert any(ln.startswith('cgroup_energy: no usable RAPL counters: '
                             'falling back to the power model (740-3500 mW '
                             'per CPU)') for ln in p['log']), p


def test_shortest_interval_keeps_its_period(res):
    p = ok(res, 's_load_params')['period_10ms']
    want = p['seconds'] * 100
    # Samples are due every 10 ms from the last due time, and a due time
    # that passed while the sampler was late counts as an overrun: every
    # one of the window's due times is one or the other (62 samples/s and
    # no overrun when each period began at the end of the previous sample).
    # The window runs from the end of one sample to the end of another, by
    # the module's clock; one more or less for each end (a sample runs up
    # to a tick after its due time), one for a late sample that serves a
    # due time inside it from after it. (With the window read at arbitrary
    # times, a sampler late at its start once counted 304 in 3.02 s, on
    # 6.12-rt with four guests on two cores.) On a quiet host all are
    # samples (99.9/s); a loaded host starves the vCPU (87/s once).
    assert want - 3 <= p['samples'] + p['overruns'] <= want + 2, p


@pytest.mark.deep
def test_shortest_interval_mostly_samples(res):
    # how many of the due times were samples, not overruns, is the host's
    # doing: a loaded host starves the vCPU (see above)
    p = ok(res, 's_load_params')['period_10ms']
    assert p['samples'] >= 0.5 * p['seconds'] * 100, p


def test_load_and_mount(res):
    r = ok(res, 's_load')
    assert r['mountpoint_created']
    assert r['info']['source'] == 'model'     # QEMU has no RAPL
    assert r['info']['interval_ms'] == 100
    assert r['info']['cgroup2'].startswith('no_cgroups')  # a fresh guest
    assert r['root_mode'] == '0o440'


@pytest.mark.deep
def test_equal_loads_equal_energy(res):
    r = ok(res, 's_equal_pinned')
    # A loop on each CPU for the same 3 s: how much CPU time each vCPU gets
    # is the host's doing (4.15 s against 3.58 s on a loaded host), so the
    # fact is the same energy per CPU-second on both CPUs.
    for cg in ('eq1', 'eq2'):
        # The premise, that each loop ran: between half and twice the 3 s
        # it spun for, wide enough for the vCPU clocks of a loaded host.
        assert 1_500_000 <= r[cg]['usage_usec'] <= 6_000_000, r
        assert r[cg]['energy_uj'] > 0, r
    e1, e2 = (r[cg]['energy_uj'] / r[cg]['usage_usec'] for cg in ('eq1', 'eq2'))
    assert abs(e1 - e2) <= 0.10 * max(e1, e2), r


@pytest.mark.deep
def test_twice_the_time_twice_the_energy(res):
    r = ok(res, 's_twice')
    x, y = r['tw_x'], r['tw_y']
    t_ratio = x['usage_usec'] / y['usage_usec']
    e_ratio = x['energy_uj'] / y['energy_uj']
    # The premise, 2 loops of 1 CPU-second against 1: measured 1.992 and
    # 1.998 (exec and exit add a few ms per loop).
    assert 1.9 <= t_ratio <= 2.1, r
    # Energy follows time on one CPU: measured 1.0002 and 1.0053 of it.
    assert abs(e_ratio / t_ratio - 1) <= 0.05, (e_ratio, t_ratio)


def test_parent_is_sum_of_children(res):
    r = ok(res, 's_parent_sum')
    p, c1, c2 = r['par'], r['par/c1'], r['par/c2']
    assert c1['energy_uj'] > 0 and c2['energy_uj'] > 0
    assert p['energy_uj'] == c1['energy_uj'] + c2['energy_uj']
    # the own_ keys: par runs no task of its own; a leaf's are its counters
    for k in ('usage_usec', 'energy_uj', 'wakeups', 'impact_usec'):
        assert p['own_' + k] == 0, (k, p)
        assert c1['own_' + k] == c1[k] and c2['own_' + k] == c2[k], k
    assert p['wakeups'] == c1['wakeups'] + c2['wakeups']
    # every counter, times too: the same whole µs to the parent as to the
    # child that ran (kmod/cgstate.c, cge_rec_add_time)
    assert p['usage_usec'] == c1['usage_usec'] + c2['usage_usec']
    assert p['impact_usec'] == c1['impact_usec'] + c2['impact_usec']


def test_removed_child_energy_stays_in_parent(res):
    r = ok(res, 's_removed_child')
    assert r['child']['energy_uj'] > 0
    assert r['after']['energy_uj'] == r['before']['energy_uj']
    # (the child's nanoseconds below a µs go to rmp's own when its record is
    # freed: nothing to carry here, rmp runs no task of its own)
    assert r['after']['usage_usec'] == r['before']['usage_usec']
    # and the child's counters are rmp's own now, exactly
    for k in ('usage_usec', 'energy_uj', 'wakeups', 'impact_usec'):
        assert r['before']['own_' + k] == 0, (k, r)
        assert r['after']['own_' + k] == r['child'][k], (k, r)
    assert 'c' not in r['listed']
    assert r['records_after'] < r['records_before'], r     # its record freed


def test_held_energy_stat_of_a_removed_cgroup(res):
    """An energy.stat held open reads the removed cgroup's last counters
    until its record is freed, then ENODEV (not zeros)."""
    r = ok(res, 's_removed_child')
    held = dict(ln.split(' ') for ln in r['held_removed'].splitlines())
    for k in ('usage_usec', 'energy_uj', 'wakeups', 'impact_usec'):
        assert int(held[k]) == r['child'][k], (k, r)
    assert r['held_reaped'] == 'ENODEV', r


def test_thread_moving_its_process_against_cpu_stat(res):
    r = ok(res, 's_thread_move')
    # 0.3 s of the second thread's CPU time in each cgroup at least
    assert r['b']['cpu_stat'] >= 300000, r
    # Both together as test_accuracy's usage checks: 0 to 1 ms below
    # cpu.stat. Each alone within one tick (4 ms at Debian's HZ=250) on a
    # quiet host: without the cpu controller cpu.stat charges the runtime
    # since the thread's last update_curr() to the cgroup it is in at the
    # next one, so the slice just before the move can go to 'b' there,
    # where the module charges it to 'a' at the move. Before the attach
    # probe charged a thread that moved its process, 'a' took all the
    # thread ran after the move (the fix's commit has the figures): 0.3 s
    # here. One µs more above with a debt: two figures, each rounded down.
    both = sum(r[rel]['usage_usec'] - r[rel]['cpu_stat'] for rel in 'ab')
    assert -1000 <= both <= drain_checks.above_cpu_stat_max(r) + 1, r
    # Each alone: the defect above moves all the thread ran after the move
    # (0.3 s at least, by the premise); a correct module moves at most the
    # slice since the thread's last update_curr(), one tick on a quiet host
    # (the deep test below), more on a busy one. The gate holds each to
    # under half the premise's time: the defect's size, not the host's.
    for rel in ('a', 'b'):
        assert abs(r[rel]['usage_usec'] - r[rel]['cpu_stat']) < 150000, r


@pytest.mark.deep
def test_thread_moving_its_process_within_a_tick(res):
    r = ok(res, 's_thread_move')
    for rel in ('a', 'b'):
        assert -4000 <= r[rel]['usage_usec'] - r[rel]['cpu_stat'] <= \
            4000 + r['owed_usec'], r


def test_removed_tree_charged_to_nearest_live_ancestor(res):
    r = ok(res, 's_removed_tree')
    assert r['samples_between'] == 0, r       # premise: one drain for all
    assert r['kernel'] >= 300000, r            # 0.3 s of CPU time
    # as test_accuracy's usage checks: 0 to 0.32 ms below cpu.stat measured
    # (one µs more above with a debt: the removed record's remainder of a
    # µs goes on in rmt's)
    assert -1000 <= r['charged'] - r['kernel'] <= \
        drain_checks.above_cpu_stat_max(r) + 1, r
    assert r['root_ok']


def test_removed_tree_charged_past_a_flood_of_removals(res):
    r = ok(res, 's_removed_flood')
    # premises: one drain for all, after more removals than the ring holds
    # (2,048), which the rmdir probe saw; rmf had a record before
    assert r['samples_between'] == 0, r
    assert r['flooded'] == 2200, r
    assert r['rmdir_probe'] and r['rmf_recorded'], r
    assert r['kernel'] >= 300000, r            # 0.3 s of CPU time
    # the bound of test_removed_tree_charged_to_nearest_live_ancestor
    assert -1000 <= r['charged'] - r['kernel'] <= \
        drain_checks.above_cpu_stat_max(r) + 1, r
    assert r['root_ok']


def test_overflow_loses_nothing(res):
    r = ok(res, 's_overflow')
    assert r['overflows'] > 0                 # 100 cgroups > 32 slots
    assert r['root_ok']
    # The subtree's time is all there, to test_accuracy's tolerance, and
    # every child got a record of its own while it ran (see s_overflow for
    # the bound). The sleepers start in their cgroups (cgwork -C): when
    # they moved themselves in, the move misfiled 5.7 to 70.9 ms of these
    # 100 on a loaded host (docs/accuracy.md, "Realtime, nohz_full and
    # tick rate"; tests/results/attach-window.jsonl).
    assert -1000 <= r['parent']['usage_usec'] - r['kernel'] <= \
        drain_checks.above_cpu_stat_max(r), r
    assert r['min_usage'] > 0


def test_new_tenant_takes_back_its_record_requests(res):
    r = ok(res, 's_request_share')
    # the premise: no sample in either window, and wa's sleepers overflowed
    # the cache (18 of 50 beyond the 32 slots at least, every 20 ms)
    assert r['samples_cut'] == [0, 0], r
    assert r['overflows'] >= 18, r
    # 8 of wb's 10 took back one of wa's 16 requests each, and no more
    # (8 and 8: wa holds no two more than wb), none in the next interval
    assert r['takebacks'] == 8, r
    assert r['takebacks_after'] == 0, r
    above = drain_checks.above_cpu_stat_max(r)
    own = [cg for cg, b in r['b'].items()
           if -1 <= b['usage_usec'] - b['run2'] <= above]
    waited = [cg for cg in r['b'] if cg not in own]
    # the 8 had records for the second window: what they ran there and
    # after is their own; the other 2 had none there, and were charged to
    # wb (what they ran after the window went to their own, once made)
    assert len(own) == 8, r
    for cg in own:
        assert r['b'][cg]['window2'] > 0, (cg, r)
    for cg in waited:
        b = r['b'][cg]
        assert b['window2'] > 0, (cg, r)
        assert 0 <= b['usage_usec'] <= b['run2'] - b['window2'] + above, \
            (cg, r)
    w2 = sum(r['b'][cg]['window2'] for cg in waited)
    run2 = sum(r['b'][cg]['run2'] for cg in waited)
    assert w2 - 1 <= r['wb_own_usec'] <= run2 + above, r


def test_permissions(res):
    r = ok(res, 's_permissions')
    assert r['default_rc'] != 0 and 'Permission denied' in r['default_err']
    assert r['mode0444_rc'] == 0 and r['mode0444'] == '0o444'
    assert r['gid_rc'] == 0


def test_namespace_sees_its_subtree(res):
    r = ok(res, 's_namespace')
    assert r['rc'] == 0, r['err']
    stat_part, info_part = r['out'].split('---\n')
    lines = stat_part.splitlines()
    assert lines[:4] == ['energy.info', 'energy.stat', 'energy.tree', 'inner']
    assert 'total_uj' not in stat_part         # not the real root
    assert not {'eq1', 'par', 'tw_x'} & set(lines)
    # its energy.info: the settings and the sample clock, nothing host-wide
    keys = [ln.split()[0] for ln in info_part.splitlines()]
    assert keys[:2] == ['version', 'source'] and 'samples' in keys, keys
    assert not {'records', 'record_bytes', 'packages', 'cache_overflows',
                'request_takebacks', 'alloc_failures', 'energy_read_errors',
                'overcharge_usec', 'overcharge_repaid_usec'} & set(keys), keys


def test_host_mount_read_from_a_namespace_shows_the_whole_tree(res):
    r = ok(res, 's_view')
    assert r['view'] == ['@view', 'view', 'view/a', 'view/a/b', 'view/c'], r
    assert r['host_dirs'] > len(r['view'])
    assert r['child_ns'] == {'dirs': True, 'view_values': True}, r
    assert r['container'] == {'dirs': True, 'view_values': True}, r


def test_host_cwd_in_the_tree_survives_namespace_readers(res):
    r = ok(res, 's_view')['cwd']
    assert r['rc'] == 0, r
    assert r['out'][:4] == ['/sys/fs/cgroup_energy/view', 'a', 'c',
                            'energy.stat'], r
    assert r['out'][4].startswith('usage_usec '), r


def test_readdir_under_churn_lists_each_cgroup_once(res):
    r = ok(res, 's_readdir')
    assert not r['errors'], r
    # premise: all 400 cgroups before the stable ones were removed while
    # the directory was listed, and many listings overlapped a removal
    assert r['early_removed'] == 400, r
    assert r['overlapped'] >= 20, r
    assert r['bad'] == 0, r


def _escaped(path):
    """A path as energy.tree writes it (octal escapes, as /proc/mounts)."""
    for c in '\\ \t\n':
        path = path.replace(c, '\\%03o' % ord(c))
    return path


HIDDEN = ['/tree/a/energy.stat', '/tree/a/energy.stat/deep']
COUNTERS = ('usage_usec', 'energy_uj', 'wakeups', 'impact_usec')


def test_tree_lists_each_cgroup_once_hidden_ones_too(res):
    r = ok(res, 's_tree')
    t = r['tree']
    assert len(t['paths']) == len(set(t['paths'])), t['paths']
    # the walk's directories, and the two it cannot reach: a child named
    # energy.stat is not listed beside the file and its name opens the file
    assert set(t['paths']) == {_escaped(p) for p in r['walk']} | set(HIDDEN)
    assert r['a_list'] == ['energy.stat'], r['a_list']
    assert r['a_file_keys'][0] == 'usage_usec', r['a_file_keys']
    for p in ('/tree/sp\\040ace', '/tree/back\\134slash', '/tree/ta\\011b'):
        assert p in t['rows'], p
    # every row has a value for each key of the header
    assert t['widths'] == [len(t['keys']) + 1], t['widths']
    assert t['head'].keys() >= {'sample', 'total_uj', 'idle_uj'}, t['head']


def test_tree_rows_are_self_consistent(res):
    """Self-consistency, within one read: every cgroup's counter is its
    own_ counter plus its children's, exactly, as energy.stat's are. Under
    tree/, where no cgroup was removed (a removed child's record counts
    apart from its parent's own_ until the reaper frees it)."""
    rows = {p: v for p, v in ok(res, 's_tree')['tree']['rows'].items()
            if p.startswith('/tree')}
    kids = {p: [] for p in rows}
    for p in rows:
        if p != '/tree':
            kids[p.rsplit('/', 1)[0]].append(p)
    domain = [k for k in ok(res, 's_tree')['tree']['keys']
              if k.endswith('_uj') and not k.startswith('own_')
              and k != 'energy_uj']
    assert len(rows) == 9 and rows['/tree']['usage_usec'] > 0, rows.keys()
    for p, row in rows.items():
        for k in COUNTERS + tuple(domain):
            assert row[k] == row['own_' + k] + sum(rows[c][k]
                                                   for c in kids[p]), (p, k)


def test_tree_agrees_with_energy_stat_of_idle_cgroups(res):
    """Self-consistency between the module's two files: the idle cgroups
    under tree/ read the same counters in energy.tree as in energy.stat
    (the power averages, gauges, decay at every sample)."""
    r = ok(res, 's_tree')
    rows = r['tree']['rows']
    compared = 0
    for p, stat in r['walk'].items():
        if stat is None:
            continue
        row = rows[_escaped(p)]
        for k, v in stat.items():
            if not k.startswith('power_avg'):
                assert row[k] == v, (p, k)
        compared += 1
    assert compared == 7, r['walk'].keys()


def test_hidden_child_counted_against_cpu_stat(res):
    r = ok(res, 's_tree')
    deep = r['tree']['rows']['/tree/a/energy.stat/deep']
    # test_accuracy's bound for a quiet cgroup: 0 to 1 ms below cpu.stat,
    # above only by what it still owes
    assert -1000 <= deep['usage_usec'] - r['deep_cpu_stat'] <= \
        drain_checks.above_cpu_stat_max(r), (deep, r['deep_cpu_stat'],
                                            r['owed_usec'])
    assert deep['usage_usec'] >= 250_000, deep      # it ran 0.3 s
    assert r['tree']['rows']['/tree/a']['energy_uj'] == deep['energy_uj']


def test_tree_of_a_namespace_mount(res):
    r = ok(res, 's_tree')
    assert r['ns_rc'] == 0, r['ns_err']
    ns = r['ns']
    # the namespace's root is tree/a: nothing host-wide, paths below it
    assert list(ns['head']) == ['sample'], ns['head']
    assert ns['paths'] == ['/', '/energy.stat', '/energy.stat/deep'], ns
    # the reader ran in tree/a; deep, idle, reads as in the host's mount
    deep, host = ns['rows']['/energy.stat/deep'], r['tree']['rows'][HIDDEN[1]]
    assert {k: v for k, v in deep.items() if not k.startswith('power')} == \
        {k: v for k, v in host.items() if not k.startswith('power')}


def test_tree_permissions_and_mount_options_shown(res):
    r = ok(res, 's_tree')
    assert r['denied_rc'] != 0 and 'Permission denied' in r['denied_err']
    # /proc/mounts shows the options that differ from the defaults
    assert r['opts'] == ['rw,relatime,uid=65534,gid=65534,mode=0444',
                         'rw,relatime,gid=65534', 'rw,relatime'], r['opts']


def test_bad_parameters_refused(res):
    r = ok(res, 's_bad_input')
    for what, p in r['params'].items():
        assert not p['accepted'], what
        assert p['err'] == 'Invalid argument', what
        assert p['kept'], what
    assert any('refused interval_ms=0' in ln for ln in r['dmesg'])


def test_bad_mount_options_refused(res):
    r = ok(res, 's_bad_input')
    for opt, m in r['mounts'].items():
        assert m['rc'] != 0, opt
    for opt in ('bogus', 'mode=1777', 'uid=abc'):
        assert any(f'mount option {opt}' in ln for ln in r['dmesg']), opt
    # read bits only: a write or execute bit is refused, with the reason
    for opt in ('mode=0640', 'mode=0777', 'mode=0555'):
        assert any(f'mount option {opt} refused: mode takes read bits only'
                   in ln for ln in r['dmesg']), opt


def test_churn_with_reader(res):
    r = ok(res, 's_churn')
    assert r['root_ok']
    assert r['reads']['n'] > 0 and r['reads']['bad'] == 0
    # The hopping task moves itself out of each cgroup and removes it within
    # a millisecond: the slice charged at the move goes to a cgroup gone
    # before its first sample, so to its parent, 'churn', which the probe
    # records with the cgroup while the task is still in it (before the fix,
    # to the root: -1.4 to -3.2 %).
    gap = (r['usage'] - r['kernel']) / r['kernel']
    assert close(r['usage'], r['kernel'], 0.03, 30000), \
        f'churn usage gap {gap:+.2%}: {r}'
    # Records of removed cgroups are freed: back within 5% of the start.
    assert r['records_end'] <= r['records_start'] * 1.05 + 1, r
    size = r['bytes_start'] // r['records_start']       # one record's bytes
    assert r['bytes_end'] <= r['bytes_start'] * 1.05 + size, r


def test_hotplug_keeps_root_terms_self_consistent(res):
    r = ok(res, 's_hotplug')
    assert r['offline_ok'] and r['online_ok']
    assert close(r['usage'], r['kernel'], 0.03, 30000), r


def test_hotplug_window_charged_against_cpu_stat(res):
    r = ok(res, 's_hotplug_window')
    # the premise: the fixture's teardown ran after the module's, and held
    assert r['state_fixture'] < r['state_module'], r
    assert r['offline_seconds'] >= 0.3, r
    # and the task was still running as the offline began
    assert r['busy_at_offline'], r
    # what the task ran on CPU 1 after the module's offline callback (300
    # ms of the hold on 5.10) is charged: a cgroup without children shows
    # cpu.stat's figure (docs/contract.md), equal to the µs in every run
    # since the fix (5.10, 6.1, 6.12-rt, sid), 323 ms short before it; above
    # it only by what drains overcharged and it still owes
    assert 0 <= r['usage'] - r['kernel'] <= \
        drain_checks.above_cpu_stat_max(r), r


def test_hotplug_window_keeps_root_terms_self_consistent(res):
    r = ok(res, 's_hotplug_window')
    assert r['root_ok'], r


def test_idle_intervals_never_oversampled(res):
    r = ok(res, 's_quiet')
    # the sampler samples no more often than every interval_ms (the window
    # is measured from the first sample to the last), and a quiet drain is
    # one of a sample's
    assert r['samples'] <= r['window_s'] * 1000 / r['interval_ms'] + 1, r
    assert r['quiet'] <= r['samples'], r


@pytest.mark.deep
def test_idle_intervals_counted_as_quiet_and_idle(res):
    r = ok(res, 's_quiet')
    # 5 s of a quiet 2-CPU guest, 100 ms intervals: the sampler keeps its
    # period (29-30 samples in 3 s measured on every kernel)
    assert r['samples'] >= 40, r
    # A CPU that stayed idle for a whole interval counts a quiet drain (no
    # drain interrupts a CPU: drain_checks.check_ipis). The CPU that runs
    # the sampler's work is never quiet, so at most one drain per sample
    # is. How often the other CPU stays idle for a whole
    # interval is the guest kernel's doing: in 3 s windows, 6.1 20-25 of 30,
    # 6.12 18-24 of 29, sid (7.2) 13-15 of 30, where rcu_preempt and kdamond
    # wake both CPUs about 30 times a second (sched_wakeup traced); a fifth
    # of the samples is 4 standard deviations below sid's mean over 50.
    # Not on PREEMPT_RT, where the sampler's timer expires in a ktimers
    # thread: while its worker was unbound, it ran on the other CPU than
    # that thread, so that in a 2-CPU guest no CPU stayed idle for a whole
    # interval (not measured since the worker is bound to its timer's CPU,
    # sampler.c cge_queue_sample()).
    if not r['rt']:
        assert 0.2 * r['samples'] <= r['quiet'] <= r['samples'], r
    # ... and its idle time still counts: against /proc/stat (tick-sampled,
    # while ours is the wall time no task, interrupt or softirq sample took)
    k = r['proc_stat_idle_usec']
    assert 0.95 * k <= r['idle_usec'] <= 1.10 * k, r


@pytest.mark.deep
def test_systime_against_proc_stat(res):
    """Interrupt, softirq and steal time at the root, against /proc/stat:
    what the kernel booked while a task ran is that task's; what it booked
    on a CPU that ran no task is all in the module's."""
    r = ok(res, 's_systime')
    for phase in ('local', 'duty', 'steered'):
        if phase not in r:
            continue
        m, p = r[phase]['module'], r[phase]['proc']
        assert r[phase]['root_ok'], r
        for k in ('irq', 'softirq', 'steal'):
            # never more than the kernel's figure over all CPUs
            assert 0 <= m[k] <= p['cpu'][k] + TOL_SYS_US, (phase, k, r)
    # premise: the sender's own softirqs, sampled on CPU 0 while it ran
    # (360-490 ms of 3 s sending all the time, 140-220 ms sending half of
    # it: tests/results/systime.jsonl)
    for phase in ('local', 'duty'):
        assert r[phase]['proc']['cpu0']['softirq'] >= 60_000, (phase, r)
    # ... and, sending half the time, idle time on CPU 0 they could have
    # been taken from (carving the samples out of idle would)
    assert r['duty']['idle_usec'] >= 500_000, r
    # they are the sender's runtime, not the module's softirq time
    for phase in ('local', 'duty'):
        assert r[phase]['module']['softirq'] <= TOL_SYS_US, (phase, r)
    if r['rt']:
        assert 'steered' not in r, r
        return
    st = r['steered']
    # A softirq sample that hit a task on CPU 1 is that task's runtime (the
    # flood keeps rcu_preempt busy there: 175 ms of the 4 s once on 6.1);
    # the rest, taken while CPU 1 ran no task, is all in the module's. At
    # most all of the tasks' time there was such.
    want = st['proc']['cpu1']['softirq'] - st['cpu1_tasks_usec']
    assert st['module']['softirq'] >= want - TOL_SYS_US, r
    # premise: CPU 1 processed part of the flood in softirqs (640-1,180 ms
    # of the 4 s booked there in tests/results/systime.jsonl; 100 ms once,
    # with the host loaded by other guests)
    assert st['proc']['cpu1']['softirq'] >= 60_000, r
    # ... and they show: 636-1,160 ms in the module's (96 ms in that loaded
    # run); a third of the least is the floor
    assert st['module']['softirq'] >= 30_000, r


def test_resume_resynchronises(res):
    r = ok(res, 's_suspend')
    assert r['rc'] == 0, r['err']          # a suspend test cycle
    assert r['resyncs'] == 1 and r['root_ok'], r


def test_suspend_from_a_namespace_charges_cgroups_outside_it(res):
    # the PM notifier's sample, in a task inside a cgroup namespace, charges
    # a cgroup outside it that no sample had seen to that cgroup, not to an
    # ancestor (cgroup_get_from_id() checks the caller's namespace, 6.0+)
    r = ok(res, 's_suspend_ns')
    assert r['rc'] == 0, r['err']
    assert r['samples'] == 1, r            # premise: the suspend's sample only
    assert close(r['usage'], r['kernel'], 0.05, 20_000), r


def test_root_terms_self_consistent(res):
    # total_uj = energy + idle + irq + softirq + steal in every read of the
    # root: one record's terms against each other, not against a reference
    r = ok(res, 's_conservation')
    assert r['reads'] >= 200 and r['exact'] == r['reads']
    assert r['cgroup2'] == 'in_use'


def test_energystat_reads_live_module(res):
    r = ok(res, 's_energystat')
    assert r['table_rc'] == 0, r['table']
    rows = {ln.split()[0]: ln.split() for ln in r['table'].splitlines()[1:]
            if ln.strip()}
    for cg in ('/eq1', '/eq2', '/tw_x', '/tw_y', '/par'):
        assert cg in rows, r['table']
        assert float(rows[cg][1]) > 0, rows[cg]     # ENERGY(J)
    assert r['json_rc'] == 0
    doc = json.loads(r['json'].splitlines()[0])
    assert 'eq1' in json.dumps(doc)
    assert r['prom_rc'] == 0, r['prom_err']
    assert 'cgroup_energy_joules_total{cgroup="/tw_x"}' in r['prom']


def test_prometheus_series_never_go_down_across_samples(res):
    r = ok(res, 's_energystat')
    # the premise: at a 10 ms interval each read straddled samples (each
    # walk takes 30 ms or more under TCG)
    assert all(x['rc'] == 0 for x in r['straddled']), r['straddled']
    assert all(x['samples'] >= 1 for x in r['straddled']), r['straddled']
    assert min(r['series']) > 20, r['series']
    # each series is one own_ key of one file: none went down (before the
    # own_ keys, the root's own series, read before its busy child's, did)
    assert r['down'] == [], r['down']


def test_live_view_in_a_terminal(res):
    """The interactive live view (systemd-cgtop's keys) on the live module
    in tmux at 80 and 200 columns: a first screen from the module's
    power_avg10_mw before any update, with the machine line and the busy
    cgroup; an update with rates; q ends it with exit status 0. Lines fit
    the terminal."""
    r = ok(res, 's_live_view')
    for cols in ('80', '200'):
        s = r['screens'][cols]
        first, update = s['first'], s['update']
        assert 'power_avg10_mw' in first, first
        assert 'machine' in first and '/eq1' in first, first
        assert 'power_avg10_mw' not in update and '/eq1' in update, update
        assert re.search(r'^/eq1 .*\d W ', update, re.M), update
        for scr in (first, update):
            assert max(len(ln) for ln in scr.splitlines()) <= int(cols), scr
        assert s['ended'] and s['rc'] == '0', s


def test_unload(res):
    r = ok(res, 's_unload')
    assert r['busy_rc'] != 0 and 'in use' in r['busy_err']
    assert r['still_loaded']
    assert r['clean_cycles'] == 3


@pytest.mark.deep
def test_equal_loops_equal_energy_per_window(res):
    drain_checks.check_windows(res, tickless=False)


@pytest.mark.deep
def test_no_ipi_to_a_busy_or_idle_cpu(res):
    drain_checks.check_ipis(res)


def test_loops_totals_match_cpu_stat(res):
    drain_checks.check_totals(res)
