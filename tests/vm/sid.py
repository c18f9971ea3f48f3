# SPDX-License-Identifier: GPL-2.0
"""The newest kernel of Debian unstable (flavour 'sid'), and a sid chroot to
build modules for it.

Its headers need the newest gcc, which Debian 12 lacks, so modules for it are
built inside a `debootstrap --variant=minbase sid` chroot, cached:

    $CGE_CACHE/sid/chroot/          the chroot (made once, atomically renamed
                                    into place; headers added per kernel)
    $CGE_CACHE/kernels/<kver>/root/ linux-{base,binary,modules}-<kver>
                                    unpacked with dpkg-deb -x, like the others

    k = kernel()                    # kernels.Kernel with .chroot set
    run_in_chroot(['make', ...], binds={host_dir: chroot_dir})

Facts this relies on (measured here): the archive's sid Release file is dated
in the past, so apt in the chroot runs with Acquire::Check-Valid-Until=false;
objtool needs /proc in the chroot; sid ships the kernel as linux-binary-<kver>
(vmlinuz in /usr/lib/modules/<kver>/) plus linux-modules-<kver> (.ko.xz,
decompressed by initramfs.py for busybox insmod) and linux-base-<kver>
(config, modules.builtin: without it modprobe cannot tell that virtio_pci is
built in).  Mounts (/proc, the module
build directory) are made in a private mount namespace (`unshare -m`), so they
vanish with the command.

The version is resolved at run time from the chroot's apt lists (the meta
package linux-headers-amd64), refreshed by `apt-get update` when they are more
than CGE_SID_LISTS_MAX_AGE seconds old (default 6 h) or cannot resolve it.

CLI: sid.py [--resolve]   (prints the kver and the cache directory)
"""
import argparse
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

try:
    from . import kernels
except ImportError:                       # run as a script
    import kernels

MIRROR = os.environ.get('CGE_SID_MIRROR', 'http://deb.debian.org/debian')
APT = ['apt-get', '-q', '-y', '-o', 'Acquire::Check-Valid-Until=false',
       '-o', 'APT::Sandbox::User=root', '--no-install-recommends']
BASE_PKGS = ['make', 'gcc', 'libc6-dev', 'kmod', 'xz-utils']
META = 'linux-headers-amd64'


class SidError(kernels.KernelError):
    pass


def log(msg):
    print(f'sid: {msg}', file=sys.stderr, flush=True)


def sid_dir():
    d = kernels.cache_dir() / 'sid'
    d.mkdir(exist_ok=True)
    return d


def chroot_dir():
    return sid_dir() / 'chroot'


def run_in_chroot(cmd, binds=None, cwd=None, check=True, timeout=None):
    """Run argv cmd in the chroot with /proc (and binds) mounted privately."""
    ch = chroot_dir()
    script = ['set -e', f'mount -t proc proc {shlex.quote(str(ch / "proc"))}']
    for host, inside in (binds or {}).items():
        target = ch / str(inside).lstrip('/')
        target.mkdir(parents=True, exist_ok=True)
        script.append(f'mount --bind {shlex.quote(str(host))} '
                      f'{shlex.quote(str(target))}')
    inner = shlex.join(cmd)
    if cwd:
        inner = f'cd {shlex.quote(str(cwd))} && {inner}'
    script.append(f'exec chroot {shlex.quote(str(ch))} /bin/sh -c '
                  f'{shlex.quote(inner)}')
    env = {'PATH': '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin',
           'LANG': 'C.UTF-8', 'DEBIAN_FRONTEND': 'noninteractive',
           'HOME': '/root'}
    r = subprocess.run(['unshare', '-m', '--propagation', 'private', 'sh',
                        '-c', '\n'.join(script)],
                       capture_output=True, text=True, env=env,
                       timeout=timeout)
    if check and r.returncode != 0:
        tail = '\n'.join((r.stdout + r.stderr).strip().splitlines()[-40:])
        raise SidError(f'in the sid chroot, {inner} failed '
                       f'({r.returncode}):\n{tail}')
    return r


def _apt(*args, check=True):
    return run_in_chroot([*APT, *args], check=check)


def make_chroot():
    """debootstrap the chroot once (atomic); returns its path."""
    ch = chroot_dir()
    if (ch / '.cge-ready').exists():
        return ch
    with kernels.locked(sid_dir() / '.chroot.lock'):
        if (ch / '.cge-ready').exists():
            return ch
        if shutil.which('debootstrap') is None:
            raise SidError('debootstrap missing: apt-get install debootstrap')
        for stale in sid_dir().glob('.chroot.tmp*'):
            shutil.rmtree(stale, ignore_errors=True)
        if ch.exists():
            shutil.rmtree(ch)
        t0 = time.monotonic()
        tmp = Path(tempfile.mkdtemp(prefix='.chroot.tmp', dir=sid_dir()))
        tmp.chmod(0o755)
        log(f'debootstrap --variant=minbase sid {tmp} {MIRROR}')
        r = subprocess.run(['nice', '-n', '19', 'debootstrap',
                            '--variant=minbase', f'--include={",".join(BASE_PKGS)}',
                            'sid', str(tmp), MIRROR],
                           capture_output=True, text=True)
        if r.returncode != 0:
            log_tail = (tmp / 'debootstrap/debootstrap.log')
            extra = log_tail.read_text()[-3000:] if log_tail.exists() else ''
            shutil.rmtree(tmp, ignore_errors=True)
            raise SidError(f'debootstrap failed ({r.returncode}):\n'
                           f'{(r.stdout + r.stderr)[-3000:]}\n{extra}')
        (tmp / 'etc/apt/sources.list').write_text(f'deb {MIRROR} sid main\n')
        (tmp / 'etc/apt/apt.conf.d/99cge').write_text(
            'Acquire::Check-Valid-Until "false";\n'
            'APT::Install-Recommends "false";\n'
            'Acquire::Languages "none";\n')
        tmp.rename(ch)
        (ch / '.cge-ready').write_text(time.strftime('%Y-%m-%dT%H:%M:%S\n'))
        log(f'chroot ready in {time.monotonic() - t0:.0f} s')
    return ch


def _lists_age():
    lists = chroot_dir() / 'var/lib/apt/lists'
    stamps = [p.stat().st_mtime for p in lists.glob('*_Packages*')]
    return time.time() - max(stamps) if stamps else float('inf')


_updated = False


def apt_update(force=False):
    global _updated
    if _updated and not force:
        return
    _updated = True
    log('apt-get update in the sid chroot')
    _apt('update')


def _depends(pkg):
    r = run_in_chroot(['apt-cache', 'depends', pkg], check=False)
    if r.returncode != 0:
        return None
    return re.findall(r'^\s*\|?Depends:\s+(\S+)', r.stdout, re.M)


_resolved = None


def resolve():
    """Newest kernel release of sid (e.g. '7.2.0-1-amd64')."""
    global _resolved
    if _resolved:
        return _resolved
    make_chroot()
    max_age = float(os.environ.get('CGE_SID_LISTS_MAX_AGE', 6 * 3600))
    if _lists_age() > max_age:
        try:
            apt_update()
        except SidError as e:
            log(f'apt-get update failed, using the lists there are: {e}')
    deps = _depends(META)
    kver = _pick(deps)
    if kver is None and not _updated:
        apt_update()
        kver = _pick(_depends(META))
    if kver is None:
        last = kernels.kernels_dir() / 'sid.kver'
        if last.exists():
            kver = last.read_text().strip()
            log(f'cannot resolve {META} in sid; using the cached {kver}')
        else:
            raise SidError(f'cannot resolve {META} in the sid chroot '
                           f'(depends: {deps!r})')
    _resolved = kver
    return kver


def _pick(deps):
    for d in deps or ():
        if d.startswith('linux-headers-') and d.endswith('-amd64'):
            return d.removeprefix('linux-headers-')
    return None


def image_packages(kver):
    """Binary packages holding the kernel image and its modules: sid splits
    linux-image-<kver> (now empty) into linux-base (config, System.map,
    modules.builtin), linux-binary (vmlinuz) and linux-modules."""
    out = []
    for name in (f'linux-base-{kver}', f'linux-binary-{kver}',
                 f'linux-modules-{kver}'):
        r = run_in_chroot(['apt-cache', 'show', '--no-all-versions', name],
                          check=False)
        if r.returncode == 0 and r.stdout.strip():
            out.append(name)
    if not out:      # the classic layout: one linux-image package
        out = [f'linux-image-{kver}']
    return out


def install_headers(kver):
    """Install linux-headers-<kver> (and so its gcc) in the chroot."""
    pkg = f'linux-headers-{kver}'
    marker = chroot_dir() / 'usr/src' / pkg / 'Makefile'
    if marker.exists():
        return
    log(f'installing {pkg} in the sid chroot')
    r = _apt('install', pkg, check=False)
    if r.returncode != 0:
        apt_update(force=True)
        _apt('install', pkg)


def fetch_image(kver):
    """Unpack the image and modules into $CGE_CACHE/kernels/<kver>/root."""
    kd = kernels.kernels_dir()
    dest = kd / kver
    if (dest / 'meta.json').exists():
        return dest
    with kernels.locked(kd / f'.{kver}.lock'):
        if (dest / 'meta.json').exists():
            return dest
        for stale in kd.glob(f'.{kver}.tmp*'):
            shutil.rmtree(stale, ignore_errors=True)
        t0 = time.monotonic()
        pkgs = image_packages(kver)
        log(f'fetching {" ".join(pkgs)}')
        tmp = Path(tempfile.mkdtemp(prefix=f'.{kver}.tmp', dir=kd))
        try:
            tmp.chmod(0o755)
            debs = chroot_dir() / 'tmp' / f'cge-debs-{os.getpid()}'
            shutil.rmtree(debs, ignore_errors=True)
            debs.mkdir(parents=True)
            inside = '/' + str(debs.relative_to(chroot_dir()))
            r = run_in_chroot(['apt-get', '-q', '-o',
                               'Acquire::Check-Valid-Until=false', '-o',
                               'APT::Sandbox::User=root', 'download', *pkgs],
                              cwd=inside, check=False)
            if r.returncode != 0:
                apt_update(force=True)
                run_in_chroot(['apt-get', '-q', '-o',
                               'APT::Sandbox::User=root', 'download', *pkgs],
                              cwd=inside)
            root = tmp / 'root'
            root.mkdir()
            files = sorted(debs.glob('*.deb'))
            for deb in files:
                r = subprocess.run(['dpkg-deb', '-x', str(deb), str(root)],
                                   capture_output=True, text=True)
                if r.returncode != 0:
                    raise SidError(f'dpkg-deb -x {deb.name}: {r.stderr}')
            shutil.rmtree(debs, ignore_errors=True)
            # merged /usr: give the host's depmod/modprobe a /lib/modules
            if not (root / 'lib').exists():
                (root / 'lib').symlink_to('usr/lib')
            modules = root / 'lib/modules' / kver
            if not modules.is_dir():
                raise SidError(f'no modules for {kver} in {pkgs}')
            r = subprocess.run(['depmod', '-b', str(root), kver],
                               capture_output=True, text=True)
            if r.returncode != 0:
                raise SidError(f'depmod -b {root} {kver}: {r.stderr}')
            meta = {'kver': kver, 'debs': [f.name for f in files],
                    'fetched': time.strftime('%Y-%m-%dT%H:%M:%S')}
            (tmp / 'meta.json').write_text(json.dumps(meta, indent=1) + '\n')
            if dest.exists():
                shutil.rmtree(dest)
            tmp.rename(dest)
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise
        log(f'{kver} fetched and unpacked in {time.monotonic() - t0:.1f} s')
    return dest


def kernel():
    """Resolve, fetch and prepare sid's newest kernel; a kernels.Kernel."""
    kver = resolve()
    d = fetch_image(kver)
    install_headers(kver)
    (kernels.kernels_dir() / 'sid.kver').write_text(kver + '\n')
    return kernels.Kernel('sid', kver, d, chroot=chroot_dir())


def make_module(k, mdir, targets=('modules',), jobs=None):
    """`make -C <headers> M=<mdir>` in the chroot, mdir bind-mounted.

    Returns (the command as shown to users, CompletedProcess)."""
    inside = Path('/cge-build') / mdir.name
    cmd = ['make', '-C', f'/usr/src/linux-headers-{k.kver}', f'M={inside}',
           f'-j{jobs or os.cpu_count() or 1}', *targets]
    r = run_in_chroot(cmd, binds={mdir: inside}, check=False)
    return ['chroot', str(chroot_dir()), *cmd], r


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--resolve', action='store_true',
                    help='only print the version (makes the chroot if needed)')
    a = ap.parse_args(argv)
    try:
        if a.resolve:
            print(resolve())
            return 0
        t0 = time.monotonic()
        k = kernel()
        print(f'sid\t{k.kver}\t{k.dir}\t{time.monotonic() - t0:.1f}s')
    except kernels.KernelError as e:
        print(f'sid: error: {e}', file=sys.stderr)
        return 1
    return 0


if __name__ == '__main__':
    sys.exit(main())
