# SPDX-License-Identifier: GPL-2.0
"""Debian kernels for the VM tests: resolve, fetch, unpack, cache.

    k = kernel('6.1')   # -> Kernel(.kver, .vmlinuz, .moddir, .kdir, .root)

Flavours (FLAVOURS, what "all" means): 6.1, 6.1-rt, 6.12, 6.12-rt from Debian 12,
and sid, the newest kernel of Debian unstable (tests/vm/sid.py: fetched and
built for in a sid chroot).  OTHER_FLAVOURS are accepted by name but not part
of "all": debug, a KASAN/lockdep kernel built from linux-source-6.1
(tests/vm/debugkernel.py).

The newest version of each Debian 12 flavour is resolved from the apt archive
at run time (meta package -> linux-image-<kver>).  linux-image, linux-headers and their
-common and linux-kbuild dependencies are fetched with `apt-get download` and
unpacked with `dpkg-deb -x` into $CGE_CACHE/kernels/<kver>/root/ (default cache
/var/cache/cgroup-energy).  The unpack happens in a temporary directory that is
renamed into place, so an interrupted run never leaves a half cache.

CLI: kernels.py [FLAVOUR...] [--resolve]
"""
import argparse
import contextlib
import fcntl
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

# flavour -> (meta package, version prefix of the kernel release)
FLAVOURS = {
    '6.1': ('linux-image-amd64', '6.1.'),
    '6.1-rt': ('linux-image-rt-amd64', '6.1.'),
    '6.12': ('linux-image-6.12-amd64', '6.12.'),
    '6.12-rt': ('linux-image-6.12-rt-amd64', '6.12.'),
    'sid': ('linux-headers-amd64', ''),        # resolved in sid.py
}
# accepted by name, not in "all": the debug kernel (debugkernel.py)
OTHER_FLAVOURS = ('debug',)
APT_OPTS = ['-o', 'APT::Sandbox::User=root', '-q']


class KernelError(RuntimeError):
    pass


@dataclass(frozen=True)
class Kernel:
    flavour: str
    kver: str
    dir: Path            # $CGE_CACHE/kernels/<kver>
    chroot: Path | None = None   # headers live (and modules build) in here

    @property
    def root(self):
        return self.dir / 'root'

    @property
    def vmlinuz(self):
        for p in (self.root / 'boot' / f'vmlinuz-{self.kver}',
                  self.root / 'usr/lib/modules' / self.kver / 'vmlinuz'):
            if p.exists():
                return p
        raise KernelError(f'no vmlinuz for {self.kver} under {self.root}')

    @property
    def moddir(self):
        return self.root / 'lib/modules' / self.kver

    @property
    def kdir(self):
        base = self.chroot if self.chroot else self.root
        return base / 'usr/src' / f'linux-headers-{self.kver}'

    @property
    def config(self):
        for p in (self.root / 'boot' / f'config-{self.kver}',
                  self.root / 'usr/lib/modules' / self.kver / 'config',
                  self.kdir / '.config'):       # sid: only the headers have it
            if p.exists():
                return p
        return self.root / 'boot' / f'config-{self.kver}'


def cache_dir():
    d = Path(os.environ.get('CGE_CACHE') or '/var/cache/cgroup-energy')
    d.mkdir(parents=True, exist_ok=True)
    return d


def kernels_dir():
    d = cache_dir() / 'kernels'
    d.mkdir(exist_ok=True)
    return d


def log(msg):
    print(f'kernels: {msg}', file=sys.stderr, flush=True)


def _run(cmd, cwd=None):
    return subprocess.run(cmd, cwd=cwd, capture_output=True, text=True)


_updated = False


def apt_update():
    """Run `apt-get update` at most once per process."""
    global _updated
    if _updated:
        return
    _updated = True
    if os.geteuid() != 0:
        raise KernelError('the apt lists lack a needed package and only root '
                          'can run apt-get update: run `apt-get update` as root')
    log('running apt-get update')
    # Unreachable third-party sources make it exit non-zero: ignore, the
    # retried query says whether Debian's lists arrived.
    _run(['apt-get', *APT_OPTS, 'update'])


def _depends(pkg):
    r = _run(['apt-cache', 'depends', pkg])
    if r.returncode != 0:
        return None
    return re.findall(r'^\s*\|?Depends:\s+(\S+)', r.stdout, re.M)


def _depends_retry(pkg):
    deps = _depends(pkg)
    if deps is None:
        apt_update()
        deps = _depends(pkg)
    return deps


def _sibling(name):
    """tests/vm/<name>.py, imported as a package member or as a script's peer."""
    import importlib
    return importlib.import_module(f'{__package__}.{name}' if __package__
                                   else name)


def known_flavours():
    return [*FLAVOURS, *OTHER_FLAVOURS]


def _check_flavour(flavour):
    if flavour not in FLAVOURS and flavour not in OTHER_FLAVOURS:
        raise KernelError(f'unknown flavour {flavour!r}; known: '
                          + ', '.join(known_flavours()))


_resolved = {}


def resolve(flavour):
    """Newest kernel release (e.g. '6.1.0-57-amd64') of a flavour in the archive."""
    _check_flavour(flavour)
    if flavour == 'sid':
        return _sibling('sid').resolve()
    if flavour == 'debug':
        return _sibling('debugkernel').meta()['kver']
    if flavour in _resolved:
        return _resolved[flavour]
    meta, prefix = FLAVOURS[flavour]
    deps = _depends_retry(meta)
    rt = flavour.endswith('-rt')
    for d in deps or ():
        kver = d.removeprefix('linux-image-')
        if (d.startswith('linux-image-') and kver.startswith(prefix)
                and kver.endswith('-rt-amd64') == rt):
            _resolved[flavour] = kver
            return kver
    last = kernels_dir() / f'{flavour}.kver'
    if last.exists():
        kver = last.read_text().strip()
        log(f'apt cannot resolve {meta}; using the cached {kver}')
        return kver
    raise KernelError(f'cannot resolve flavour {flavour}: `apt-cache depends '
                      f'{meta}` gave {deps!r} (is Debian bookworm in the apt '
                      'sources, and did apt-get update run?)')


def packages(kver):
    """Debian packages to unpack for kver: image, headers, -common, kbuild."""
    deps = _depends_retry(f'linux-headers-{kver}')
    if not deps:
        raise KernelError(f'apt knows no linux-headers-{kver}')
    extra = [d for d in deps
             if d.startswith(('linux-headers-', 'linux-kbuild-'))]
    return [f'linux-image-{kver}', f'linux-headers-{kver}', *extra]


@contextlib.contextmanager
def locked(path):
    with open(path, 'w') as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def _download(pkgs, dest):
    cmd = ['apt-get', *APT_OPTS, 'download', *pkgs]
    r = _run(cmd, cwd=dest)
    if r.returncode != 0:
        apt_update()
        r = _run(cmd, cwd=dest)
    if r.returncode != 0:
        raise KernelError(f'{" ".join(cmd)} failed:\n{r.stderr.strip()}')


def _relink_absolute(root):
    """Make absolute symlinks in the build trees point inside root."""
    for top in ('usr/src', 'usr/lib', 'lib/modules'):
        for dirpath, dirnames, filenames in os.walk(root / top):
            for n in dirnames + filenames:
                p = Path(dirpath, n)
                if p.is_symlink():
                    t = os.readlink(p)
                    if t.startswith('/'):
                        p.unlink()
                        p.symlink_to(os.path.relpath(root / t[1:], dirpath))


def _fix_headers(root, kver):
    kdir = root / 'usr/src' / f'linux-headers-{kver}'
    mk = kdir / 'Makefile'
    if not mk.exists():
        raise KernelError(f'no {mk}: linux-headers-{kver} did not unpack')
    # Debian's wrapper does `include /usr/src/linux-headers-*-common/Makefile`:
    # make it relative to the wrapper so the tree works where it is unpacked.
    text = mk.read_text()
    fixed = re.sub(r'^include /usr/src/',
                   'include $(dir $(lastword $(MAKEFILE_LIST)))../',
                   text, flags=re.M)
    mk.write_text(fixed)
    _relink_absolute(root)
    scripts = kdir / 'scripts'
    if not scripts.exists():
        found = sorted(root.glob('usr/lib/linux-kbuild-*/scripts'))
        if not found:
            raise KernelError(f'{scripts} does not resolve and no '
                              'linux-kbuild scripts were unpacked')
        if scripts.is_symlink():
            scripts.unlink()
        scripts.symlink_to(os.path.relpath(found[-1], kdir))
    if not scripts.resolve().is_relative_to(root.resolve()):
        raise KernelError(f'{scripts} resolves outside {root}')


def fetch(kver):
    """Make $CGE_CACHE/kernels/<kver> exist, complete.  Returns its path."""
    kd = kernels_dir()
    dest = kd / kver
    if (dest / 'meta.json').exists():
        return dest
    with locked(kd / f'.{kver}.lock'):
        if (dest / 'meta.json').exists():
            return dest
        for stale in kd.glob(f'.{kver}.tmp*'):      # interrupted earlier runs
            shutil.rmtree(stale, ignore_errors=True)
        t0 = time.monotonic()
        tmp = Path(tempfile.mkdtemp(prefix=f'.{kver}.tmp', dir=kd))
        try:
            tmp.chmod(0o755)
            debs = tmp / 'debs'
            debs.mkdir()
            pkgs = packages(kver)
            log(f'fetching {" ".join(pkgs)}')
            _download(pkgs, debs)
            root = tmp / 'root'
            root.mkdir()
            files = sorted(debs.glob('*.deb'))
            for deb in files:
                r = _run(['dpkg-deb', '-x', str(deb), str(root)])
                if r.returncode != 0:
                    raise KernelError(f'dpkg-deb -x {deb.name}: {r.stderr}')
            _fix_headers(root, kver)
            r = _run(['depmod', '-b', str(root), kver])
            if r.returncode != 0:
                raise KernelError(f'depmod -b {root} {kver}: {r.stderr}')
            shutil.rmtree(debs)
            meta = {'kver': kver, 'debs': [f.name for f in files],
                    'fetched': time.strftime('%Y-%m-%dT%H:%M:%S')}
            (tmp / 'meta.json').write_text(json.dumps(meta, indent=1) + '\n')
            if dest.exists():                         # a partial, pre-lock tree
                shutil.rmtree(dest)
            tmp.rename(dest)
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise
        log(f'{kver} fetched and unpacked in {time.monotonic() - t0:.1f} s')
    return dest


def kernel(flavour):
    """Resolve, fetch if needed, and describe the kernel of a flavour."""
    _check_flavour(flavour)
    if flavour == 'sid':
        return _sibling('sid').kernel()
    if flavour == 'debug':
        return _sibling('debugkernel').kernel()
    kver = resolve(flavour)
    k = Kernel(flavour, kver, fetch(kver))
    (kernels_dir() / f'{flavour}.kver').write_text(kver + '\n')
    return k


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('flavours', nargs='*', default=list(FLAVOURS),
                    help='flavours (default: all): ' + ' '.join(FLAVOURS)
                    + '; also: ' + ' '.join(OTHER_FLAVOURS))
    ap.add_argument('--resolve', action='store_true',
                    help='only print the versions, fetch nothing')
    a = ap.parse_args(argv)
    try:
        for f in a.flavours:
            t0 = time.monotonic()
            if a.resolve:
                print(f'{f}\t{resolve(f)}')
                continue
            k = kernel(f)
            print(f'{f}\t{k.kver}\t{k.dir}\t{time.monotonic() - t0:.1f}s')
    except KernelError as e:
        print(f'kernels: error: {e}', file=sys.stderr)
        return 1
    return 0


if __name__ == '__main__':
    sys.exit(main())
