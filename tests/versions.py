# SPDX-License-Identifier: GPL-2.0
"""Where the version and the module's DKMS sources are declared, read the
same way by tests/test_install.py (DKMS) and tests/test_deb.py (packages)."""
import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def conf_value(key):
    """@key's value in dkms.conf."""
    text = (REPO / 'dkms.conf').read_text()
    m = re.search(rf'^{re.escape(key)}="?([^"\n]*)"?$', text, re.M)
    assert m, f'{key} not in dkms.conf'
    return m.group(1)


def cge_version():
    """CGE_VERSION of include/cgroup_energy.h."""
    h = (REPO / 'include/cgroup_energy.h').read_text()
    return re.search(r'#define CGE_VERSION\s+"([^"]+)"', h).group(1)


def changelog_version():
    """The version of debian/changelog's newest entry."""
    first = (REPO / 'debian/changelog').read_text().splitlines()[0]
    return re.match(r'cgroup-energy \(([^)]+)\) ', first).group(1)


def man_version():
    """The version in the man page's .TH line ("cgroup-energy X")."""
    text = (REPO / 'userspace/energystat.1').read_text()
    return re.search(r'^\.TH .*"cgroup-energy ([^"]+)"', text, re.M).group(1)


def dkms_sources():
    """The files DKMS gets (dist/dkms.sh), relative to its source tree."""
    want = {'Kbuild', 'dkms.conf'}
    want |= {f'include/{p.name}' for p in (REPO / 'include').glob('*.h')}
    want |= {f'kmod/{p.name}' for p in (REPO / 'kmod').glob('*.[ch]')}
    want |= {f'kmod/{p.name}' for p in (REPO / 'kmod').glob('*.mk')}
    return want
