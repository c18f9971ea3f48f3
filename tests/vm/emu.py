# SPDX-License-Identifier: GPL-2.0
"""What the host knows of the test build's emulated RAPL (tests/emu/emu.c): its
profiles' QEMU CPU models and constant powers, and the per-CPU idle and
busy power the model must have to give its headline energy (what
bench/calibrate.py should recover). Keep in step with emu.c."""
from pathlib import Path

EMU_C = Path(__file__).resolve().parents[1] / 'emu' / 'emu.c'

# profile: QEMU CPU model, sockets, the headline domains (total_uj), and
# emu.c's constants: uncore_mw (package k has k + 1 times it), dram_mw and
# dram_busy_mw per package
PROFILES = {
    'intel-client': {'cpu_model': 'Skylake-Client', 'sockets': 1,
                     'headline': ('package',), 'uncore_mw': 2000,
                     'dram_mw': 0, 'dram_busy_mw': 0},
    'intel-server': {'cpu_model': 'Cascadelake-Server', 'sockets': 2,
                     'headline': ('package', 'dram'), 'uncore_mw': 15000,
                     'dram_mw': 3000, 'dram_busy_mw': 500},
    # being added to emu.c: package + per-core counters; its constants are
    # read from there once it exists (profile_available)
    'amd-zen': {'cpu_model': 'EPYC-Rome', 'sockets': 1,
                'headline': ('package',), 'uncore_mw': None,
                'dram_mw': 0, 'dram_busy_mw': 0},
}


def profile_available(name, emu_c=EMU_C):
    """Whether this tree's emu.c has profile @name."""
    try:
        return f'"{name}"' in emu_c.read_text()
    except OSError:
        return False


def per_cpu_equivalent(profile, idle_mw, busy_mw, cpus):
    """(idle_mw, busy_mw) per CPU that give the headline energy of
    @profile with @cpus CPUs (spread evenly over its packages) at
    emu_idle_mw=@idle_mw emu_busy_mw=@busy_mw: the constant power (each
    package's uncore, DRAM at rest) spread over the CPUs into idle, DRAM's
    per-busy-CPU power into busy (bench/calibrate.py's docstring)."""
    p = PROFILES[profile]
    if p['uncore_mw'] is None:
        raise ValueError(f'{profile}: constants unknown here')
    k = p['sockets']
    const = sum(p['uncore_mw'] * (i + 1) for i in range(k))
    if 'dram' in p['headline']:
        const += p['dram_mw'] * k
    dyn = busy_mw - idle_mw + (p['dram_busy_mw'] if 'dram' in p['headline']
                               else 0)
    idle = idle_mw + const / cpus
    return idle, idle + dyn
