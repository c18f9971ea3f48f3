# SPDX-License-Identifier: GPL-2.0
"""Build kernel modules against a cached Debian kernel's headers.

    build_module('6.1')                  -> <repo>/.build/<kver>/cgroup_energy.ko
    build_external(src_dir, '6.1')       -> <repo>/.build/<kver>/ext/<name>/<mod>.ko

Sources are copied with `rsync -a` (mtimes kept, so make rebuilds only what
changed) into a per-kernel out-of-tree copy, then built with
`make -C <kdir> M=<copy> modules` (for sid, inside the sid chroot, with the
copy bind-mounted: sid.make_module).  A process does this once per
directory and make arguments (_DONE): an edit made while it runs is not
built until the next.

CLI: build.py [--flavour 6.1] [--src DIR]   (prints the .ko path)
"""
import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

try:
    from . import kernels
except ImportError:                       # run as a script
    import kernels

REPO = Path(__file__).resolve().parents[2]
MODULE = 'cgroup_energy'
# Kbuild products that rsync --delete must keep in the copy.
PRODUCTS = ['*.o', '*.ko', '*.mod', '*.mod.c', '*.cmd', '*.order',
            'Module.symvers', '.tmp_*', '*.a', '*.dwo', '*.lds']


class BuildError(RuntimeError):
    pass


def build_dir(kver):
    return REPO / '.build' / kver


def _sync(srcs, dst, cwd=None):
    """Copy @srcs into @dst; with @cwd, @srcs are paths relative to it and
    keep them in @dst (rsync -R)."""
    dst.mkdir(parents=True, exist_ok=True)
    excl = [f'--exclude={p}' for p in PRODUCTS]
    rel = ['-R'] if cwd else []
    r = subprocess.run(['rsync', '-a', *rel, '--delete', *excl,
                        *[str(s) for s in srcs], f'{dst}/'],
                       capture_output=True, text=True, cwd=cwd)
    if r.returncode != 0:
        raise BuildError(f'rsync into {dst} failed: {r.stderr.strip()}')


# The builds this process has made or found up to date: one run of the
# suite builds from one tree, and each test module asks again for each
# kernel (make's "nothing to be done" takes 2.5-3.7 s on an idle host).
_DONE = set()


def _build(k, srcs, mdir, what, args=(), cwd=None):
    """Copy srcs into mdir and make there, holding a per-directory lock;
    once per process for the same sources, directory and arguments."""
    key = (str(mdir), tuple(str(s) for s in srcs), tuple(args))
    if key in _DONE:
        return
    mdir.parent.mkdir(parents=True, exist_ok=True)
    with kernels.locked(mdir.parent / f'.{mdir.name}.lock'):
        _sync(srcs, mdir, cwd)
        _make(k, mdir, what, args)
    _DONE.add(key)


def _make(k, mdir, what, args=()):
    if not k.kdir.is_dir():
        raise BuildError(f'no kernel build tree at {k.kdir}')
    cmd = ['make', '-C', str(k.kdir), f'M={mdir}',
           f'-j{os.cpu_count() or 1}', *k.make_vars, *args, 'modules']
    t0 = time.monotonic()
    if k.chroot:            # sid: headers and gcc live in a chroot
        cmd, r = kernels._sibling('sid').make_module(
            k, mdir, targets=(*args, 'modules'))
    else:
        r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        out = (r.stdout + r.stderr).strip().splitlines()
        raise BuildError(f'building {what} for {k.kver} failed '
                         f'({" ".join(cmd)}):\n' + '\n'.join(out[-60:]))
    built = 'CC' in r.stdout or 'LD' in r.stdout
    print(f'build: {what} for {k.kver}: '
          + (f'built in {time.monotonic() - t0:.1f} s' if built
             else 'up to date'), file=sys.stderr, flush=True)
    # kmod/probes.mk's line: into the build log, and beside the module
    probes = [ln for ln in r.stdout.splitlines()
              if ln.startswith(f'{MODULE}: probes for ')]
    for ln in probes:
        print(f'build: {ln}', file=sys.stderr, flush=True)
    if probes:
        (mdir / 'probes.txt').write_text(probes[-1] + '\n')


def _kernel(flavour, kernel):
    return kernel if kernel is not None else kernels.kernel(flavour)


# Test builds: make variables, and the sources beside the module's they
# add (tests/emu/: the emulated RAPL hardware, which Kbuild includes).
SOURCES = ('Kbuild', 'kmod', 'include')
VARIANTS = {None: ((), ()), 'emu': (('CGE_EMU=y',), ('tests/emu',))}


def build_module(flavour='6.1', kernel=None, variant=None):
    """Build cgroup_energy.ko (Kbuild at the repo root) for a flavour;
    variant 'emu' is the test build with emulated RAPL hardware (emu.c)."""
    k = _kernel(flavour, kernel)
    dst = build_dir(k.kver)
    if variant:
        dst = dst.with_name(f'{dst.name}-{variant}')
    args, extra = VARIANTS[variant]
    srcs = [*SOURCES, *extra]
    missing = [s for s in srcs if not (REPO / s).exists()]
    if missing:
        raise BuildError(f'missing module sources: {" ".join(missing)}')
    _build(k, srcs, dst, f'{MODULE}.ko' + (f' ({variant})' if variant else ''),
           args, cwd=REPO)
    ko = dst / f'{MODULE}.ko'
    if not ko.exists():
        raise BuildError(f'make succeeded but {ko} is missing')
    return ko


def build_external(src_dir, flavour='6.1', name=None, kernel=None):
    """Build the module in src_dir (a Kbuild dir); returns the .ko path.

    name selects the .ko when the directory builds several."""
    src = Path(src_dir).resolve()
    if not (src / 'Kbuild').exists() and not (src / 'Makefile').exists():
        raise BuildError(f'{src} has neither Kbuild nor Makefile')
    k = _kernel(flavour, kernel)
    try:
        tag = str(src.relative_to(REPO)).replace('/', '_')
    except ValueError:
        tag = src.name
    dst = build_dir(k.kver) / 'ext' / tag
    _build(k, [f'{src}/'], dst, tag)
    kos = sorted(dst.glob('*.ko'))
    if name:
        kos = [p for p in kos if p.stem == name.removesuffix('.ko')]
    if len(kos) != 1:
        raise BuildError(f'expected one module in {dst}, found '
                         f'{[p.name for p in kos]} (pass name=)')
    return kos[0]


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--flavour', default='6.1',
                    choices=kernels.known_flavours())
    ap.add_argument('--src', help='build this Kbuild dir instead of the module')
    a = ap.parse_args(argv)
    try:
        ko = (build_external(a.src, a.flavour) if a.src
              else build_module(a.flavour))
    except (BuildError, kernels.KernelError) as e:
        print(f'build: error: {e}', file=sys.stderr)
        return 1
    print(ko)
    return 0


if __name__ == '__main__':
    sys.exit(main())
