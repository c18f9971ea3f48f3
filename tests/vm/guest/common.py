# SPDX-License-Identifier: GPL-2.0
"""Helpers for scenario scripts that run inside the test VM (as root, with
the host root read-only over 9p). Imported by the guest_*.py scripts."""
import ctypes
import json
import os
import subprocess
import sys
import time
from pathlib import Path

CG = Path('/sys/fs/cgroup')
EN = Path('/sys/fs/cgroup_energy')
PARAMS = Path('/sys/module/cgroup_energy/parameters')
REPO = Path(__file__).resolve().parents[3]


def kv(path):
    """Parse a flat-keyed file (energy.stat, energy.info, cpu.stat)."""
    out = {}
    for line in Path(path).read_text().splitlines():
        k, _, v = line.partition(' ')
        out[k] = int(v) if v.lstrip('-').isdigit() else v
    return out


def stat(rel=''):
    return kv(EN / rel / 'energy.stat')


def info():
    return kv(EN / 'energy.info')


def cpu_usage(rel):
    return kv(CG / rel / 'cpu.stat')['usage_usec']


def settle(samples=3):
    """Wait until the sampler has completed @samples more samples."""
    start = info()['samples']
    deadline = time.time() + 30
    while info()['samples'] < start + samples and time.time() < deadline:
        time.sleep(0.05)


def mkcg(*rels):
    for rel in rels:
        (CG / rel).mkdir(parents=True, exist_ok=True)


def sh(cmd, check=True):
    p = subprocess.run(cmd, shell=True, text=True, capture_output=True)
    if check and p.returncode:
        raise RuntimeError(f'{cmd!r} failed ({p.returncode}): {p.stderr}')
    return p


def set_param(name, value):
    """Write a module parameter; returns (ok, errno text)."""
    try:
        (PARAMS / name).write_text(str(value))
        return True, ''
    except OSError as e:
        return False, e.strerror


def get_param(name):
    return (PARAMS / name).read_text().strip()


def conservation_ok(s):
    return s['total_uj'] == s['energy_uj'] + s['idle_uj']


class Work:
    """Runs the cgwork helper binary."""

    def __init__(self, binary):
        self.bin = binary

    def start(self, cg, *args, cpu=None):
        cmd = [self.bin, '-c', str(CG / cg)]
        if cpu is not None:
            cmd += ['-p', str(cpu)]
        return subprocess.Popen(cmd + [str(a) for a in args])

    def run(self, cg, *args, cpu=None):
        p = self.start(cg, *args, cpu=cpu)
        if p.wait():
            raise RuntimeError(f'cgwork {args} in {cg} failed: {p.returncode}')


def scenarios(funcs, ctx):
    """Run each scenario, collect its result dict or its error, print JSON."""
    results = {}
    for f in funcs:
        t0 = time.time()
        try:
            results[f.__name__] = f(ctx)
        except Exception as e:  # reported, asserted on by the host test
            results[f.__name__] = {'error': f'{type(e).__name__}: {e}'}
        results[f.__name__]['seconds'] = round(time.time() - t0, 2)
    print('CGE-RESULT ' + json.dumps(results), flush=True)


# Module load/unload and mounts without spawning processes: an exec costs
# about 0.7 s on the KASAN/lockdep kernel under TCG.
_libc = ctypes.CDLL(None, use_errno=True)
_SYS_FINIT_MODULE, _SYS_DELETE_MODULE = 313, 176          # x86_64


def _check(rc, what):
    if rc:
        e = ctypes.get_errno()
        raise OSError(e, f'{what}: {os.strerror(e)}')


def insmod(ko, params=''):
    fd = os.open(ko, os.O_RDONLY)
    try:
        _check(_libc.syscall(_SYS_FINIT_MODULE, fd, params.encode(), 0),
               f'insmod {ko} {params}')
    finally:
        os.close(fd)


def rmmod(name='cgroup_energy'):
    _check(_libc.syscall(_SYS_DELETE_MODULE, name.encode(), os.O_NONBLOCK),
           f'rmmod {name}')


def mount_en(path=EN, opts=''):
    _check(_libc.mount(b'none', str(path).encode(), b'cgroup_energy', 0,
                       opts.encode() or None), f'mount {path}')


def umount_en(path=EN):
    _check(_libc.umount2(str(path).encode(), 0), f'umount {path}')


def s_unload(ctx):
    """The last scenario of a guest script: unmount, unload."""
    umount_en()
    rmmod()
    return {}


def dmesg():
    return sh('dmesg').stdout


def main_args():
    if len(sys.argv) < 3:
        sys.exit('usage: guest_x.py MODULE.ko CGWORK')
    return os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
