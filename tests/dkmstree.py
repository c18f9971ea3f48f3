# SPDX-License-Identifier: GPL-2.0
"""A private DKMS tree for tests (dkms, source and install trees, a signing
key), never /var/lib/dkms, /usr/src or /lib/modules: tests/test_install.py
installs into one, tests/test_stress.py builds the debug kernel's signed
module in one.

    with private_tree() as t:          # .build/dkms-test/run-<pid>, removed after
        r = t.make('dkms-install', k)  # make dkms-install for kernels.Kernel k
        built, installed = t.modules(k.kver)

The tree lives under .build/ (the VM sees the host root read-only over 9p,
and its /tmp is its own)."""
import contextlib
import os
import shutil
import subprocess
from pathlib import Path

from versions import conf_value

REPO = Path(__file__).resolve().parents[1]
NAME = 'cgroup-energy'


def run(cmd, env=None, cwd=REPO, timeout=600):
    r = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True,
                       text=True, timeout=timeout)
    r.out = r.stdout + r.stderr
    return r


class DkmsTree:
    """A private DKMS tree: dkms, source and install trees, signing key."""

    def __init__(self, root):
        self.root = root
        self.dtree = root / 'dkms'
        self.src, self.lib = root / 'src', root / 'lib'
        for d in (self.dtree, self.src, self.lib):
            d.mkdir(parents=True, exist_ok=True)

    def env(self, k=None, **extra):
        env = dict(os.environ)
        env.update(
            DKMS_ARGS=f'--dkmstree {self.dtree} --installtree {self.lib} '
                      '--no-depmod',
            SRCTREE=str(self.src),
            # DKMS's signing key: its default is /var/lib/dkms/mok.key
            mok_signing_key=str(self.root / 'mok.key'),
            mok_certificate=str(self.root / 'mok.pub'))
        if k is not None:
            # the header tree's own sign-file (the host has 6.1's only)
            env['sign_file'] = str((k.kdir / 'scripts/sign-file').resolve())
        env.update(extra)
        return env

    def dkms_cmd(self, *args):
        return ['dkms', '--dkmstree', str(self.dtree), '--sourcetree',
                str(self.src), '--installtree', str(self.lib), '--no-depmod',
                *args]

    def dkms(self, *args, k=None):
        return run(self.dkms_cmd(*args), env=self.env(k))

    def status(self):
        r = self.dkms('status', '-m', NAME)
        assert r.returncode == 0, r.out
        return r.stdout

    def make(self, target, k=None, **extra):
        argv = ['make', '--no-print-directory', target]
        if k is not None:
            argv += [f'KVER={k.kver}', f'KDIR={k.kdir}']
            (self.lib / k.kver).mkdir(exist_ok=True)   # /lib/modules/<kver>
        return run(argv, env=self.env(k, **extra))

    def modules(self, kver):
        """DKMS-built module files for kver: (in the DKMS tree, installed)."""
        ver = conf_value('PACKAGE_VERSION')
        built = sorted((self.dtree / NAME / ver / kver).glob(
            '*/module/cgroup_energy.ko*'))
        inst = sorted((self.lib / kver).glob('updates/dkms/cgroup_energy.ko*'))
        return built, inst


def modinfo(ko, field):
    r = run(['modinfo', '-F', field, str(ko)])
    assert r.returncode == 0, r.out
    return r.stdout.strip()


@contextlib.contextmanager
def private_tree(suffix=''):
    """A DkmsTree in .build/dkms-test/run-<pid><suffix>, deleted afterwards
    (and those of runs that were killed, when their process is gone)."""
    base = REPO / '.build' / 'dkms-test'
    base.mkdir(parents=True, exist_ok=True)
    for old in base.glob('run-*'):
        pid = old.name.split('-')[1]
        if not pid.isdigit() or not Path(f'/proc/{pid}').exists():
            shutil.rmtree(old, ignore_errors=True)
    root = base / f'run-{os.getpid()}{suffix}'
    shutil.rmtree(root, ignore_errors=True)
    try:
        yield DkmsTree(root)
    finally:
        shutil.rmtree(root, ignore_errors=True)
