# SPDX-License-Identifier: GPL-2.0
"""Host tests of bench/calibrate.py's fit (no RAPL, no VM): phases made
from known per-CPU power must give it back."""
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / 'bench'))
import calibrate  # noqa: E402


def rows(idle_mw, busy_mw, cpus=4, uncore_mw=0, dt=5.0, noise=None):
    """Phases of n = 0..cpus busy CPUs on hardware of @idle_mw / @busy_mw
    per CPU plus @uncore_mw; noise(n) adds mW to a phase's power."""
    out = []
    for n in range(cpus + 1):
        x = n + 0.02                  # the system's own busy time
        mw = idle_mw * cpus + (busy_mw - idle_mw) * x + uncore_mw
        mw += noise(n) if noise else 0
        out.append({'n': n, 'dt': dt, 'cpus': cpus, 'busy_s': x * dt,
                    'uj': {'total': round(mw * dt * 1000),
                           'package': round(mw * dt * 1000)}})
    return out


def test_recovers_exact_parameters():
    f = calibrate.fit(rows(1000, 8000))
    assert f['idle_mw'] == pytest.approx(1000, abs=0.01)
    assert f['busy_mw'] == pytest.approx(8000, abs=0.01)
    assert f['rms_mw'] < 0.01 and f['phases'] == 5


def test_uncore_goes_into_idle_per_cpu():
    # 2 W of uncore over 4 CPUs: 500 mW more idle, the same dynamic power
    f = calibrate.fit(rows(1000, 8000, cpus=4, uncore_mw=2000))
    assert f['idle_mw'] == pytest.approx(1500, abs=0.01)
    assert f['busy_mw'] == pytest.approx(8500, abs=0.01)
    assert f['dynamic_mw'] == pytest.approx(7000, abs=0.01)


def test_fit_error_reports_noise():
    f = calibrate.fit(rows(740, 3500, noise=lambda n: 50 * (-1) ** n))
    assert 20 < f['rms_mw'] < 60
    assert f['idle_se_mw'] > 0 and f['busy_se_mw'] > 0
    assert f['idle_mw'] == pytest.approx(740, rel=0.05)
    assert f['busy_mw'] == pytest.approx(3500, rel=0.05)


def test_needs_idle_and_busy_phases():
    one = [r for r in rows(1000, 8000) if r['n'] == 2]
    with pytest.raises(ValueError):
        calibrate.fit(one)


def test_every_domain_and_the_modprobe_line():
    fits = calibrate.calibrate(rows(1000, 8000, uncore_mw=400))
    assert list(fits) == ['total', 'package']
    line = calibrate.options_line(fits['total'])
    assert line == ('options cgroup_energy model_idle_mw=1100 '
                    'model_busy_mw=8100')
    text = calibrate.report(fits)
    assert 'model_idle_mw=1100' in text and 'model_busy_mw=8100' in text
    assert line in text


def test_reads_domains_not_shares(tmp_path):
    p = tmp_path / 'energy.stat'
    p.write_text('usage_usec 5\nenergy_uj 10\nidle_uj 20\nirq_uj 1\n'
                 'softirq_uj 1\nsteal_uj 0\ntotal_uj 32\npackage_uj 9\n'
                 'dram_uj 1\nwakeups 3\n')
    a = calibrate.read_stat(p)
    assert a == {'total': 32, 'energy': 10, 'dom': {'package': 9, 'dram': 1}}
    b = {'total': 132, 'energy': 60, 'dom': {'package': 49, 'dram': 11}}
    # the root's shares are the domains' attributed part: 40 of the 50 uJ
    # attributed were package, so 80 of the 100 uJ measured
    assert calibrate.energy(a, b) == {'total': 100, 'package': 80, 'dram': 20}


def test_emu_constants_match_emu_c():
    # tests/vm/emu.py copies tests/emu/emu.c's constant powers: keep in step
    import re
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from vm import emu
    src = emu.EMU_C.read_text()
    for name, p in emu.PROFILES.items():
        if p['uncore_mw'] is None or not emu.profile_available(name):
            continue
        block = src.split(f'.name = "{name}"', 1)[1].split('}', 2)[:2]
        block = ''.join(block)
        for key in ('uncore_mw', 'dram_mw', 'dram_busy_mw'):
            m = re.search(rf'\.{key} = (\d+)', block)
            got = int(m.group(1)) if m else 0
            assert got == p[key], (name, key, got)


def test_per_cpu_equivalent():
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from vm import emu
    # client: 2 W uncore over 2 CPUs
    assert emu.per_cpu_equivalent('intel-client', 1000, 8000, 2) == \
        (2000, 9000)
    # server: 15 + 30 W uncore, 2 x 3 W DRAM over 2 CPUs; DRAM 0.5 W/busy CPU
    assert emu.per_cpu_equivalent('intel-server', 1000, 8000, 2) == \
        (1000 + 51000 / 2, 1000 + 51000 / 2 + 7500)


def test_reads_between_the_same_two_samples(monkeypatch, tmp_path):
    # a sample completes while the phase's end is read: read again after it
    infos = iter([{'samples': '5'}, {'samples': '6'},          # wait for 6
                  {'samples': '6', 'last_sample_ns': '1000'},
                  {'samples': '7', 'last_sample_ns': '1100'},  # changed
                  {'samples': '8'},                            # new one
                  {'samples': '8', 'last_sample_ns': '3000000000'},
                  {'samples': '8', 'last_sample_ns': '3000000000'}])
    reads = []
    monkeypatch.setattr(calibrate, 'read_info', lambda stat: next(infos))
    monkeypatch.setattr(calibrate, 'read_stat',
                        lambda stat: reads.append(1) or {'total': len(reads)})
    monkeypatch.setattr(calibrate, 'read_proc_stat',
                        lambda: {'busy_s': 0, 'cpus': 2})
    t, e, _, _ = calibrate.at_sample(tmp_path / 'energy.stat')
    assert t == 3.0 and e == {'total': 2} and len(reads) == 2
