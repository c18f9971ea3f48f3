# SPDX-License-Identifier: GPL-2.0
"""Energy-impact scenarios, run inside the VM by tests/test_impact.py:
    python3 guest_impact.py cgroup_energy.ko cgwork
Prints one line 'CGE-RESULT {json}'."""
import time

from common import (EN, LOOP_MAX_S, Work, dmesg, freeze, get_param, info,
                    main_args, mkcg, running, s_remove_cgroups, s_unload,
                    scenarios, set_param, settle, sh, snapshot, stat)

KO, CGWORK = main_args()
W = Work(CGWORK)
RUN_S = 4


def s_load(ctx):
    sh(f'insmod {KO}')
    sh(f'mount -t cgroup_energy none {EN}')
    i = info()
    return {k: i[k] for k in ('split', 'kcpu_time', 'kcpu_wakeups',
                              'kqos_background')}


def side_by_side(tag):
    """A busy loop on CPU 0 and a 2 ms sleeper on CPU 1, in two cgroups;
    measured in steady state (from 1 s after both run), not across process
    start-up. The busy loop runs until the sleeper has ended (it is
    stopped then), so the sleeper never runs alone (a start-up apart, the
    model's split of a lone sleeper differs)."""
    busy, sleeper = f'{tag}_busy', f'{tag}_sleep'
    mkcg(busy, sleeper)
    a = W.start(busy, 'busy', LOOP_MAX_S, cpu=0)
    try:
        b = W.start(sleeper, 'sleeper', 2000, RUN_S + 1, cpu=1)
        running([busy, sleeper])
        time.sleep(1)
        # both cgroups' start figures from the same sample: their deltas
        # cover the same intervals
        s = snapshot([busy, sleeper])['stat']
        b0, s0 = s[busy], s[sleeper]
        switches = W.switches(b)
    finally:
        W.stop([a], [busy])
    settle()
    s = snapshot([busy, sleeper])['stat']
    b1, s1 = s[busy], s[sleeper]
    return {'busy': b1, 'sleeper': s1, 'switches': switches,
            'busy_delta': {k: b1[k] - b0[k] for k in b1},
            'sleeper_delta': {k: s1[k] - s0[k] for k in s1},
            'run_s': RUN_S}


def s_split_impact(ctx):
    return side_by_side('imp')


def s_split_time(ctx):
    set_param('split', 'time')
    try:
        return side_by_side('tim')
    finally:
        set_param('split', 'impact')


def s_background(ctx):
    mkcg('bg')
    sh(f'nice -n 10 {CGWORK} -c /sys/fs/cgroup/bg busy 1')
    settle()
    return {'bg': stat('bg')}


def s_coefficient_change(ctx):
    mkcg('coef')
    # 8 s: 6 s from the freeze, 2 s in, for the frozen steps and then the
    # wakeups after the thaw (4 s before: the margin a starved guest's
    # snapshot retries can take)
    p = W.start('coef', 'sleeper', 2000, 2 * RUN_S, cpu=1)
    time.sleep(RUN_S / 2)
    # Frozen and settled, the cgroup has nothing left to charge: a sample
    # between the reads changes nothing of it, and all that it runs after
    # the change is charged at the new coefficient.
    try:
        freeze('coef')
        settle(2)
        before = snapshot(['coef'])
        set_param('kcpu_wakeups', '0.001')
        settle(1)                    # a sample at the new coefficient, then
        again = snapshot(['coef'])   # the past is not recomputed
        freeze('coef', False)
        switches = W.switches(p)
        settle()
        after = stat('coef')
    finally:                         # later scenarios get what they expect
        freeze('coef', False)
        set_param('kcpu_wakeups', '2e-4')
    return {'before': before['stat']['coef'], 'again': again['stat']['coef'],
            'samples_between': again['info']['samples']
            - before['info']['samples'], 'after': after,
            'switches': switches,
            'param_after_reset': get_param('kcpu_wakeups')}


def s_bad_coefficients(ctx):
    out = {}
    for name, val in [('kcpu_time', 'abc'), ('kcpu_time', '-1'),
                      ('kcpu_wakeups', '\n'), ('kcpu_wakeups', '1e9'),
                      ('kqos_background', '0.8x'), ('kcpu_time', '1e999'),
                      ('kcpu_time', '11'), ('kqos_background', '10.5'),
                      ('kcpu_wakeups', '0.02')]:
        old = get_param(name)
        ok, err = set_param(name, val)
        out[f'{name}={val.strip()}'] = {'accepted': ok, 'err': err,
                                'kept': get_param(name) == old}
    out['dmesg'] = [ln for ln in dmesg().splitlines() if 'refused' in ln]
    return out


if __name__ == '__main__':
    scenarios([s_load, s_split_impact, s_split_time, s_background,
               s_coefficient_change, s_bad_coefficients, s_unload,
               s_remove_cgroups], {})
