# SPDX-License-Identifier: GPL-2.0
"""The stress suite's kmemleak attribution (tests/vm/guest/guest_stress.py),
on reports in the format of the debug kernel's mm/kmemleak.c
("    [<%p>] %pS": the first address hashed, the second symbolised while the
code is loaded and raw once its module is gone)."""
import importlib
import sys
from pathlib import Path

import pytest

GUEST = Path(__file__).resolve().parent / 'vm' / 'guest'
SPAN = (0xffffffffc0a00000, 0xffffffffc0a2c000)
SPANS = {SPAN}

HEAD = '''unreferenced object 0xffff888004a3c000 (size 64):
  comm "insmod", pid 245, jiffies 4294937000
  hex dump (first 32 bytes):
    00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00  ................
  backtrace:
    [<000000004a2f1c3e>] __kmem_cache_alloc_node+0x1c0/0x2f0
    [<00000000b1c2d3e4>] kmalloc_trace+0x26/0x60
'''
TAIL = '''    [<000000009abcdef0>] process_one_work+0x4c9/0x9a0
'''


@pytest.fixture(scope='module')
def gs():
    # the guest's modules (guest_stress, common) imported as the guest
    # does, then taken out of sys.modules again
    argv, path = sys.argv, sys.path[:]
    sys.argv = ['guest_stress.py', 'cgroup_energy.ko', 'cgwork']
    sys.path.insert(0, str(GUEST))
    try:
        yield importlib.import_module('guest_stress')
    finally:
        sys.argv, sys.path[:] = argv, path
        for name, m in list(sys.modules.items()):
            if Path(getattr(m, '__file__', None) or '/').parent == GUEST:
                del sys.modules[name]


def report(frame):
    text = HEAD + frame + TAIL
    return {'head': text.splitlines()[0], 'text': text}


def test_loaded_frame_by_name(gs):
    r = report('    [<0000000012345678>] cge_record_new+0x45/0x120 '
               '[cgroup_energy]\n')
    assert gs.involves_module(r)
    assert gs.involves_module(r, SPANS)


def test_unloaded_frame_by_span(gs):
    inside = report('    [<0000000012345678>] 0xffffffffc0a12345\n')
    assert gs.involves_module(inside, SPANS)
    assert not gs.involves_module(inside)      # no span: no attribution
    # the span is half-open: its end belongs to what follows
    for addr in ('0xffffffffc0a2c000', '0xffffffffc09fffff',
                 '0xffffffffc1b00010'):
        assert not gs.involves_module(
            report(f'    [<0000000012345678>] {addr}\n'), SPANS), addr
    assert gs.involves_module(
        report('    [<0000000012345678>] 0xffffffffc0a00000\n'), SPANS)


def test_other_code_is_not_the_module(gs):
    for frame in ('    [<0000000012345678>] nf_hook_slow+0x3f/0xb0 '
                  '[nf_tables]\n',
                  '    [<0000000012345678>] cgroup_mkdir+0x2a/0x1c0\n',
                  # a kernel function named like the module is not it
                  '    [<0000000012345678>] cgroup_energy_x+0x1/0x2\n'):
        assert not gs.involves_module(report(frame), SPANS), frame


def test_parse_splits_reports(gs):
    text = report('    [<0000000012345678>] 0xffffffffc0a12345\n')['text']
    two = gs.parse_kmemleak(text + text.replace('0xffff888004a3c000',
                                                '0xffff888004a3d000'))
    assert [r['head'] for r in two] == [
        'unreferenced object 0xffff888004a3c000 (size 64):',
        'unreferenced object 0xffff888004a3d000 (size 64):']
    assert all(gs.involves_module(r, SPANS) for r in two)


def test_spans_of_several_loads(gs):
    r = report('    [<0000000012345678>] 0xffffffffc0b00010\n')
    assert not gs.involves_module(r, SPANS)
    assert gs.involves_module(r, SPANS | {(0xffffffffc0b00000,
                                            0xffffffffc0b3e000)})


def test_module_span_from_proc_modules(gs):
    text = ('nf_tables 315392 0 - Live 0xffffffffc0b00000\n'
            'cgroup_energy 253952 0 - Live 0xffffffffa0000000 (OE)\n')
    assert gs.module_span(text=text) == (0xffffffffa0000000,
                                         0xffffffffa0000000 + 253952)
    with pytest.raises(RuntimeError, match='hides'):
        gs.module_span(text='cgroup_energy 253952 0 - Live '
                       '0x0000000000000000 (OE)\n')
    with pytest.raises(RuntimeError, match='not loaded'):
        gs.module_span(text=text.splitlines()[0] + '\n')
