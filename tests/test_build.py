# SPDX-License-Identifier: GPL-2.0
"""The build: warning-free with W=1 on Debian's 6.1 and 6.12 headers, a clear
message without headers, the tool builds without kernel headers."""
import shutil
import subprocess
from pathlib import Path

import pytest

from vm import kernels

REPO = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize('flavour', ['6.1', '6.12'])
def test_module_builds_warning_free_w1(tmp_path, flavour):
    k = kernels.kernel(flavour)
    for n in ('Kbuild', 'kmod', 'include'):
        src = REPO / n
        (shutil.copytree if src.is_dir() else shutil.copy)(src, tmp_path / n)
    r = subprocess.run(['make', '-C', str(k.kdir), f'M={tmp_path}', 'W=1',
                        '-j2', 'modules'], capture_output=True, text=True)
    out = r.stdout + r.stderr
    assert r.returncode == 0, out[-4000:]
    assert (tmp_path / 'cgroup_energy.ko').exists()
    warnings = [ln for ln in out.splitlines() if 'warning:' in ln]
    assert not warnings, '\n'.join(warnings)


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
