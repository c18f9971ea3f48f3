# SPDX-License-Identifier: GPL-2.0
"""The build: warning-free with W=1 on Debian's 6.1 and 6.12 headers, a clear
message without headers, the tool builds without kernel headers."""
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from vm import kernels

REPO = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize('flavour', ['5.10', '6.1', '6.12'])
def test_module_builds_warning_free_w1(tmp_path, flavour):
    k = kernels.kernel(flavour)
    for n in ('Kbuild', 'kmod', 'include'):
        src = REPO / n
        (shutil.copytree if src.is_dir() else shutil.copy)(src, tmp_path / n)
    r = subprocess.run(['make', '-C', str(k.kdir), f'M={tmp_path}', 'W=1',
                        '-j2', *k.make_vars, 'modules'],
                       capture_output=True, text=True)
    out = r.stdout + r.stderr
    assert r.returncode == 0, out[-4000:]
    assert (tmp_path / 'cgroup_energy.ko').exists()
    warnings = [ln for ln in out.splitlines()
                if re.search(r'\bwarning:', ln, re.I)]
    assert not warnings, '\n'.join(warnings)
    # the energy sources' ops are read-only data: what differs between
    # machines is decided at detection, not written into an ops struct
    nm = subprocess.run(['nm', str(tmp_path / 'cgroup_energy.ko')],
                        capture_output=True, text=True, check=True).stdout
    names = ('cge_model_source', 'cge_rapl_source', 'cge_rapl_core_source')
    ops = {f[2]: f[1] for f in (ln.split() for ln in nm.splitlines())
           if len(f) == 3 and f[2] in names}
    assert set(ops) == set(names), ops
    assert all(t in 'rR' for t in ops.values()), ops


def test_missing_headers_names_the_package():
    r = subprocess.run(['make', '-C', str(REPO), 'module',
                        'KVER=9.9.9-nosuch'], capture_output=True, text=True)
    assert r.returncode != 0
    assert 'apt-get install linux-headers-9.9.9-nosuch' in r.stderr


def test_tool_builds_without_kernel_headers(tmp_path):
    dst = tmp_path / 'src'
    shutil.copytree(REPO / 'userspace', dst / 'userspace',
                    ignore=shutil.ignore_patterns('*.o', 'energystat'))
    shutil.copytree(REPO / 'include', dst / 'include')
    r = subprocess.run(['make', '-C', str(dst / 'userspace')],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr
    v = subprocess.run([str(dst / 'userspace/energystat'), '--version'],
                       capture_output=True, text=True)
    assert v.returncode == 0 and '0.1.0' in v.stdout


# kmod/probes.mk's results per kernel of the matrix: each probe must show
# both outcomes somewhere in it, so both branches of kmod/compat.h compile.
# 6.12 is Debian's, with system_percpu_wq backported; sid and experimental are
# the newest.
# Debian's 5.10 and 6.1 have inode_set_ctime_current() backported: no
# kernel of the matrix, nor of the compile sweep, lacks it (a vanilla 6.1.0
# does); its 0 branch is built by test_probe_branch_no_packaged_kernel_takes.
NEW_IN_5_10 = ('SCHED_SWITCH_PREV_STATE', 'CGROUP_GET_FROM_ID',
               'X86_FEATURE_RAPL', 'TAINT_TEST', 'TASK_IS_RUNNING', 'HK_TYPE',
               'CPU_IS_ISOLATED', 'FILE_OPEN_ROOT_PATH')
# 7.x's: cgroup_has_tasks() in cgroup.h
NEW_IN_7 = ('CGROUP_HAS_TASKS',)
PROBES_EXPECTED = {
    '5.10': {**dict.fromkeys(('SIMPLE_INODE_INIT_TS', 'KN_NAME_RCU',
                              'D_REVALIDATE_DIR', 'SET_DEFAULT_D_OP',
                              'INODE_JUST_DROP', 'RDMSRQ', 'SYSTEM_PERCPU_WQ',
                              'MAX_DIES', *NEW_IN_5_10), 0),
             'INODE_SET_CTIME_CURRENT': 1},
    '6.1': {**dict.fromkeys(('SIMPLE_INODE_INIT_TS', 'KN_NAME_RCU',
                             'D_REVALIDATE_DIR', 'SET_DEFAULT_D_OP',
                             'INODE_JUST_DROP', 'RDMSRQ', 'SYSTEM_PERCPU_WQ',
                             'MAX_DIES'), 0),
            **dict.fromkeys(('INODE_SET_CTIME_CURRENT', *NEW_IN_5_10), 1)},
    '6.12': {'SIMPLE_INODE_INIT_TS': 1, 'KN_NAME_RCU': 0,
             'D_REVALIDATE_DIR': 0, 'SET_DEFAULT_D_OP': 0,
             'INODE_JUST_DROP': 0, 'RDMSRQ': 0, 'SYSTEM_PERCPU_WQ': 1,
             'INODE_SET_CTIME_CURRENT': 1, 'MAX_DIES': 1,
             **dict.fromkeys(NEW_IN_5_10, 1)},
    **dict.fromkeys(('sid', 'experimental'), dict.fromkeys((
        'SIMPLE_INODE_INIT_TS', 'KN_NAME_RCU', 'D_REVALIDATE_DIR',
        'SET_DEFAULT_D_OP', 'INODE_JUST_DROP', 'RDMSRQ', 'SYSTEM_PERCPU_WQ',
        'INODE_SET_CTIME_CURRENT', 'MAX_DIES', *NEW_IN_5_10,
        *NEW_IN_7), 1)),
}
for _f in ('5.10', '6.1', '6.12'):
    PROBES_EXPECTED[_f].update(dict.fromkeys(NEW_IN_7, 0))
ONE_OUTCOME = {'INODE_SET_CTIME_CURRENT'}


def test_feature_probes_both_outcomes():
    from vm import build
    got = {}
    for flavour in PROBES_EXPECTED:
        ko = build.build_module(flavour)
        line = (ko.parent / 'probes.txt').read_text().strip()
        got[flavour] = {k: int(v) for k, v in
                        (f.split('=') for f in line.split(': ', 2)[2].split())}
    assert got == PROBES_EXPECTED, got
    for name in set(PROBES_EXPECTED['6.1']) - ONE_OUTCOME:
        assert {got[f][name] for f in got} == {0, 1}, name


@pytest.mark.parametrize('probe', sorted(ONE_OUTCOME))
def test_probe_branch_no_packaged_kernel_takes(tmp_path, probe):
    """The 0 branch of a probe whose interface every packaged kernel has,
    built against 5.10 with the probe's result overridden on make's command
    line: 5.10 has the fields the fallback uses, as kernels before the
    backport do. W=1, no warning."""
    k = kernels.kernel('5.10')
    for n in ('Kbuild', 'kmod', 'include'):
        src = REPO / n
        (shutil.copytree if src.is_dir() else shutil.copy)(src, tmp_path / n)
    r = subprocess.run(['make', '-C', str(k.kdir), f'M={tmp_path}', 'W=1',
                        '-j2', *k.make_vars, f'CGE_HAVE_{probe}=0', 'modules'],
                       capture_output=True, text=True)
    out = r.stdout + r.stderr
    assert r.returncode == 0, out[-4000:]
    assert (tmp_path / 'cgroup_energy.ko').exists()
    assert re.search(rf'probes for .*\b{probe}=0\b', out), \
        'the override did not reach the build'
    warnings = [ln for ln in out.splitlines()
                if re.search(r'\bwarning:', ln, re.I)]
    assert not warnings, '\n'.join(warnings)


def test_below_minimum_kernel_is_one_sentence(tmp_path):
    # compat.h refuses kernels older than the minimum with one #error,
    # and dkms.conf skips them (BUILD_EXCLUSIVE_KERNEL_MIN) at the same one
    src = (REPO / 'kmod/compat.h').read_text()
    m = re.search(r'LINUX_VERSION_CODE < KERNEL_VERSION\((\d+), (\d+), 0\)\n'
                  r'#error "([^"]+)"', src)
    assert m, 'no minimum-version #error in kmod/compat.h'
    assert f'Linux {m[1]}.{m[2]} or later' in m[3]
    dkms = (REPO / 'dkms.conf').read_text()
    assert f'BUILD_EXCLUSIVE_KERNEL_MIN="{m[1]}.{m[2]}"' in dkms
    # the regular expression older dkms reads says the same (bash =~, ERE)
    rx = re.search(r'^BUILD_EXCLUSIVE_KERNEL="([^"]+)"', dkms, re.M)[1]
    for kver, ok in (('6.1.0-57-amd64', True), ('6.12.117+deb12-amd64', True),
                     ('6.6.9', True), ('7.2.13+deb14-amd64', True),
                     ('10.0.1-1', True), ('6.0.12-1-amd64', True),
                     ('5.10.0-46-amd64', True), ('5.15.0-130-generic', True),
                     ('5.14.0-503.el9.x86_64', True), ('5.9.16-1', False),
                     ('5.4.0-200-generic', False), ('5.1.0', False),
                     ('4.19.0-27-amd64', False), ('3.10.0-1160', False)):
        r = subprocess.run(['bash', '-c', f'[[ $1 =~ {rx} ]]', '_', kver])
        assert (r.returncode == 0) == ok, (kver, rx)
    # and the sentence is what a build sees: a 5.9 version.h
    inc = tmp_path / 'linux'
    inc.mkdir()
    (inc / 'version.h').write_text(
        '#define LINUX_VERSION_CODE 329984\n'
        '#define KERNEL_VERSION(a, b, c) (((a) << 16) + ((b) << 8) + (c))\n')
    block = src[src.index('#if LINUX_VERSION_CODE'):m.end()] + '\n#endif\n'
    (tmp_path / 't.c').write_text('#include <linux/version.h>\n' + block)
    r = subprocess.run(['gcc', '-fsyntax-only', '-I', str(tmp_path),
                        str(tmp_path / 't.c')], capture_output=True,
                       text=True)
    assert r.returncode != 0 and m[3] in r.stderr, r.stderr


def test_no_version_checks_outside_compat():
    for f in sorted((REPO / 'kmod').glob('*.[ch]')):
        if f.name != 'compat.h':
            assert 'LINUX_VERSION_CODE' not in f.read_text(), f


def test_test_builds_only_from_the_command_line(tmp_path):
    """CGE_SELFTIME and CGE_EMU left in the environment (a DKMS build run
    from a benchmark's shell) build the production module: no self-timing
    probe, no emulated RAPL."""
    k = kernels.kernel('6.1')
    for n in ('Kbuild', 'kmod', 'include', 'tests/emu'):
        src = REPO / n
        shutil.copytree(src, tmp_path / n) if src.is_dir() else \
            shutil.copy(src, tmp_path / n)
    env = {**os.environ, 'CGE_SELFTIME': 'y', 'CGE_EMU': 'y'}
    r = subprocess.run(['make', '-C', str(k.kdir), f'M={tmp_path}', '-j2',
                        *k.make_vars, 'modules'], capture_output=True,
                       text=True, env=env)
    assert r.returncode == 0, (r.stdout + r.stderr)[-4000:]
    nm = subprocess.run(['nm', str(tmp_path / 'cgroup_energy.ko')],
                        capture_output=True, text=True, check=True).stdout
    syms = {f[-1] for f in (ln.split() for ln in nm.splitlines()) if f}
    assert 'cge_selftime' not in syms
    assert not any(s.startswith('__param_emu_') for s in syms), syms
