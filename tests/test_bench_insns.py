# SPDX-License-Identifier: GPL-2.0
"""make bench's instruction counts (bench/insns.py), host only: the
attribution of QEMU's per-address counts to functions, on made-up counts,
and the probe's static call graph in the module built for 6.1, which also
guards what the probe may call with the runqueue lock held and interrupts
off."""
import re
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / 'bench'))
import insns  # noqa: E402
from vm import build  # noqa: E402

# Two files' static functions may share a name (cgroup_energy has two
# cge_charge): counts are kept apart by address.
SYMS = [['ffffffffc0001000', 'cge_probe', 'cgroup_energy'],
        ['ffffffffc0001100', 'cge_charge', 'cgroup_energy'],
        ['ffffffffc0002000', 'cge_charge', 'cgroup_energy'],
        ['ffffffffc0003000', 'bpf_prog_1234_sched_switch', 'bpf'],
        ['ffffffffc0003400', 'bpf_prog_5678_BEGIN', 'bpf']]


def test_counts_go_to_the_function_below_them():
    counts = {0xffffffffc0001000: 100, 0xffffffffc0001004: 100,
              0xffffffffc0001100: 40, 0xffffffffc0001108: 40,
              0xffffffffc0002000: 5, 0xffffffffc0003000: 100,
              0xffffffffc0003010: 100, 0xffffffffc0003400: 1,
              0xffffffffb0000000: 7}        # below every symbol: dropped
    f = insns.per_function(counts, SYMS)
    assert f[0xffffffffc0001000] == ['cgroup_energy', 'cge_probe', 200, 100]
    assert f[0xffffffffc0001100] == ['cgroup_energy', 'cge_charge', 80, 40]
    assert f[0xffffffffc0002000] == ['cgroup_energy', 'cge_charge', 5, 5]
    assert len(f) == 5


def test_figures_per_call():
    counts = {0xffffffffc0001000: 100, 0xffffffffc0001004: 100,
              0xffffffffc0001100: 40, 0xffffffffc0001108: 40,
              0xffffffffc0002000: 5, 0xffffffffc0003000: 100,
              0xffffffffc0003010: 100, 0xffffffffc0003400: 1}
    # the object's .text: cge_probe at 0x0 calls the cge_charge at 0x100
    graph = ({0x0: 'cge_probe', 0x100: 'cge_charge', 0x1000: 'cge_charge'},
             {0x0: ({0x100}, {'_raw_spin_lock'}), 0x100: (set(), set()),
              0x1000: (set(), {'kvfree'})})
    raw = {'symbols': SYMS, 'ctxt': 250, 'pipe_loops': 100,
           'peer_runs': 100}
    fig = insns.figures(raw, counts, 0, graph)
    assert fig['probe_calls'] == 100
    assert fig['probe_insns_per_call'] == 2.0
    assert fig['probe_path'] == ['cge_probe', 'cge_charge']
    assert fig['probe_path_insns_per_call'] == 2.8
    assert fig['probe_kernel_calls'] == ['_raw_spin_lock']
    assert fig['module_functions_per_probe_call'] == {
        'cge_probe': 2.0, 'cge_charge@0x100': 0.8, 'cge_charge@0x1000': 0.05}
    assert fig['peer_program'] == 'bpf_prog_1234_sched_switch'
    assert fig['peer_calls'] == 100 and fig['peer_insns_per_call'] == 2.0


# objdump -dr of three functions: f calls g (resolved in .text), a kernel
# function and, last before g, jumps to another by a relocation, which
# objdump shows as a jump to g itself (rel32 0)
OBJDUMP = '''
0000000000000000 <f>:
   0:\te8 00 00 00 00       \tcall   5 <f+0x5>
\t\t\t1: R_X86_64_PLT32\t__fentry__-0x4
   5:\te8 16 00 00 00       \tcall   20 <g>
   a:\te8 00 00 00 00       \tcall   f <f+0xf>
\t\t\tb: R_X86_64_PLT32\t_raw_spin_lock-0x4
   f:\te9 00 00 00 00       \tjmp    14 <h>
\t\t\t10: R_X86_64_PLT32\tsysfs_emit-0x4

0000000000000014 <h>:
  14:\tc3                   \tret

0000000000000020 <g>:
  20:\te9 00 00 00 00       \tjmp    25 <g+0x5>
\t\t\t21: R_X86_64_PLT32\th-0x4
'''


def test_call_graph_from_objdump():
    names, edges = insns.parse_objdump(OBJDUMP)
    assert names == {0: 'f', 0x14: 'h', 0x20: 'g'}
    assert edges[0] == ({0x20}, {'_raw_spin_lock', 'sysfs_emit'})
    # a relocation to a function of the module's .text is resolved by name
    assert edges[0x20] == ({0x14}, set())
    path, kernel = insns.reachable((names, edges), 'f')
    assert [names[o] for o in path] == ['f', 'g', 'h']
    assert kernel == ['_raw_spin_lock', 'sysfs_emit']


def test_read_counts():
    counts, untracked = insns.read_counts(
        '0xffffffffc0001000 12\n0xffffffffc0001004 3\nuntracked 0\n')
    assert counts == {0xffffffffc0001000: 12, 0xffffffffc0001004: 3}
    assert untracked == 0


# What the probe must never reach: it runs with the runqueue lock held and
# interrupts off (docs/design: per-CPU data, no allocation, no MSR read, no
# sleeping lock).
FORBIDDEN = re.compile(r'k\w*alloc|kfree|kvfree|vmalloc|vfree|mutex_|'
                       r'down_|rdmsr|msleep|schedule|might_sleep|'
                       r'smp_call_function|cpus_read_lock|_printk')


@pytest.fixture(scope='module')
def graph():
    return insns.call_graph(build.build_module('6.1'))


def test_probe_call_graph(graph):
    path, kernel = insns.reachable(graph, 'cge_probe')
    names = [graph[0][o] for o in path]
    # by the source's names: GCC's clones add .constprop.N and the like
    funcs = {n.split('.')[0] for n in names}
    assert names[0] == 'cge_probe' and 'cge_charge_slot' in funcs, names
    # the charge of a switch within one cgroup is inline in the probe
    assert not {'cge_charge', 'cge_charge_task'} & funcs, names
    assert '_raw_spin_lock' in kernel, kernel
    bad = [f for f in kernel if FORBIDDEN.search(f)]
    assert not bad, f'the probe can call {bad} (path {names})'
