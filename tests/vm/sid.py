# SPDX-License-Identifier: GPL-2.0
"""The kernels of Debian unstable and experimental (flavours 'sid' and
'experimental', pinned in kernels.lock), and a sid chroot to build modules
for them.

Their headers need the newest gcc, which Debian 12 lacks, so modules for them
are built inside a `debootstrap --variant=minbase sid` chroot, cached:

    $CGE_CACHE/sid/chroot/          the chroot (made once, atomically renamed
                                    into place; headers added per kernel)
    $CGE_CACHE/kernels/<kver>/root/ linux-{base,binary,modules}-<kver>
                                    unpacked with dpkg-deb -x, like the others

    k = kernel('sid')               # kernels.Kernel with .chroot set
    run_in_chroot(['make', ...], binds={host_dir: chroot_dir})

Facts this relies on (measured here): the archive's sid Release file is dated
in the past, so apt in the chroot runs with Acquire::Check-Valid-Until=false;
objtool needs /proc in the chroot; sid ships the kernel as linux-binary-<kver>
(vmlinuz in /usr/lib/modules/<kver>/) plus linux-modules-<kver> (.ko.xz,
decompressed by initramfs.py for busybox insmod) and linux-base-<kver>
(config, modules.builtin: without it modprobe cannot tell that virtio_pci is
built in).  The chroot's apt has sid and experimental as sources;
experimental's Release says NotAutomatic, so apt prefers sid's packages
unless told otherwise: the experimental flavour's queries and downloads run
with APT::Default-Release=experimental, and its headers, which only
experimental has (with their -common, kbuild and linux-base), install beside
sid's.  Mounts (/proc, the module
build directory) are made in a private mount namespace (`unshare -m`), so they
vanish with the command.

The version is pinned in tests/vm/kernels.lock (kver, the linux-base/binary/
modules and linux-headers package versions) and chosen by kernels.choose():
pinned and cached at the pinned versions (image unpacked, headers installed
in the chroot; other versions are replaced) -> no apt at all; else the
chroot's apt lists, refreshed once when stale or when they lack the pin; a
pin gone from sid (from the lists, or when apt cannot fetch it) falls back to
the newest (meta package linux-headers-amd64) with one line on stderr.

CLI: sid.py [--flavour sid|experimental] [--resolve]
     (prints the kver and the cache directory)
"""
import argparse
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
    from . import archive, kernels
except ImportError:                       # run as a script
    import archive
    import kernels

APT = ['apt-get', '-q', '-y', '-o', 'Acquire::Check-Valid-Until=false',
       '-o', 'APT::Sandbox::User=root', '--no-install-recommends']
BASE_PKGS = ['make', 'gcc', 'libc6-dev', 'kmod', 'xz-utils']
META = 'linux-headers-amd64'
# flavour -> the suite its kernel comes from; every suite is in the chroot's
# sources.list
SUITES = {'sid': 'sid', 'experimental': 'experimental'}


class SidError(kernels.KernelError):
    pass


def log(msg):
    print(f'sid: {msg}', file=sys.stderr, flush=True)


def mirror():
    """Where debootstrap and the chroot's apt fetch from: CGE_SID_MIRROR,
    else Debian's archive as the host's apt sources name it (archive.py)."""
    try:
        return os.environ.get('CGE_SID_MIRROR') or archive.main_uri()
    except archive.ArchiveError as e:
        raise SidError(str(e)) from None


def sid_dir():
    d = kernels.cache_dir() / 'sid'
    d.mkdir(exist_ok=True)
    return d


def chroot_dir():
    return sid_dir() / 'chroot'


def run_in_chroot(cmd, binds=None, cwd=None, check=True, timeout=None,
                  ro=()):
    """Run argv cmd in the chroot with /proc (and binds: {host path: path
    inside}) mounted privately; the host paths in ro are mounted read-only."""
    ch = chroot_dir()
    script = ['set -e', f'mount -t proc proc {shlex.quote(str(ch / "proc"))}']
    for host, inside in (binds or {}).items():
        target = ch / str(inside).lstrip('/')
        target.mkdir(parents=True, exist_ok=True)
        script.append(f'mount --bind {shlex.quote(str(host))} '
                      f'{shlex.quote(str(target))}')
        if host in ro:
            script.append(f'mount -o remount,bind,ro {shlex.quote(str(target))}')
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


def _install(*specs):
    """apt-get install specs in the chroot, while no build runs there (a
    build holds the use lock shared; an install may replace its compiler);
    first, dpkg finishes what an interrupted install left."""
    with kernels.locked(sid_dir() / '.use.lock'):
        run_in_chroot(['dpkg', '--configure', '-a'], check=False)
        return _apt('install', '--allow-downgrades', *specs, check=False)


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
        uri = mirror()
        t0 = time.monotonic()
        tmp = Path(tempfile.mkdtemp(prefix='.chroot.tmp', dir=sid_dir()))
        tmp.chmod(0o755)
        log(f'debootstrap --variant=minbase sid {tmp} {uri}')
        r = subprocess.run(['nice', '-n', '19', 'debootstrap',
                            '--variant=minbase', f'--include={",".join(BASE_PKGS)}',
                            'sid', str(tmp), uri],
                           capture_output=True, text=True)
        if r.returncode != 0:
            log_tail = (tmp / 'debootstrap/debootstrap.log')
            extra = log_tail.read_text()[-3000:] if log_tail.exists() else ''
            shutil.rmtree(tmp, ignore_errors=True)
            raise SidError(f'debootstrap failed ({r.returncode}):\n'
                           f'{(r.stdout + r.stderr)[-3000:]}\n{extra}')
        _write_sources(tmp)
        (tmp / 'etc/apt/apt.conf.d/99cge').write_text(
            'Acquire::Check-Valid-Until "false";\n'
            'APT::Install-Recommends "false";\n'
            'Acquire::Languages "none";\n')
        tmp.rename(ch)
        (ch / '.cge-ready').write_text(time.strftime('%Y-%m-%dT%H:%M:%S\n'))
        log(f'chroot ready in {time.monotonic() - t0:.0f} s')
    return ch


def _sources_text():
    uri = mirror()
    return ''.join(f'deb {uri} {suite} main\n'
                   for suite in dict.fromkeys(SUITES.values()))


def _write_sources(root):
    """The chroot's sources.list names every suite of SUITES; True if it
    changed (a chroot made before a suite was added)."""
    src = root / 'etc/apt/sources.list'
    text = _sources_text()
    if src.exists() and src.read_text() == text:
        return False
    src.write_text(text)
    return True


class ChrootApt(kernels.Apt):
    """apt in the sid chroot (made on first use): its lists and stamp, which
    the instances for sid and experimental share (each runs `apt-get
    update` at most once per process, and not within 60 s of the other's);
    suite, if not sid, is the default release of its queries and
    downloads."""

    def __init__(self, suite='sid'):
        super().__init__()
        self.suite = suite
        self.where = ('the sid chroot' if suite == 'sid'
                      else f'the sid chroot ({suite})')

    def run(self, argv, cwd=None):
        ch = make_chroot()
        if _write_sources(ch):
            # the lists lack the new suite: make them stale (age() is that
            # of the newest list, or of the stamp), so the next
            # refresh_if_stale() updates them
            log(f'sources.list of the chroot now names {", ".join(SUITES)}')
            for p in [*self.lists().glob('*_Packages*'), self.stamp()]:
                p.unlink(missing_ok=True)
        if self.suite != 'sid' and argv[0] in ('apt-cache', 'apt-get'):
            argv = [argv[0], '-o', f'APT::Default-Release={self.suite}',
                    *argv[1:]]
        return run_in_chroot(argv, cwd=cwd, check=False)

    def inside(self, path):
        return '/' + str(path.relative_to(chroot_dir()))

    def lists(self):
        return chroot_dir() / 'var/lib/apt/lists'

    def stamp(self):
        return sid_dir() / '.apt-update.stamp'


APTS = {flavour: ChrootApt(suite) for flavour, suite in SUITES.items()}
APT_SID = APTS['sid']


def _headers(kver):
    return f'linux-headers-{kver}'


def _image_versions(pin):
    """{package: version} of the pin but the headers (they go in the chroot)."""
    return {n: v for n, v in pin.packages.items() if n != _headers(pin.kver)}


def installed_version(pkg):
    """The Debian version of pkg installed in the chroot (its dpkg status),
    or None."""
    status = chroot_dir() / 'var/lib/dpkg/status'
    text = status.read_text() if status.exists() else ''
    for para in text.split('\n\n'):
        if (re.search(rf'^Package: {re.escape(pkg)}$', para, re.M)
                and re.search(r'^Status: install ok installed$', para, re.M)):
            m = re.search(r'^Version: (\S+)$', para, re.M)
            return m[1] if m else None
    return None


def _cached(pin):
    """Image unpacked from the pin's packages and the pin's headers installed
    in the chroot: no apt needed."""
    headers = _headers(pin.kver)
    return (kernels.cached(pin.kver, _image_versions(pin))
            and installed_version(headers) == pin.packages.get(headers))


def in_suite(apt, pkg, suite):
    """Do the apt lists have pkg from suite (apt-cache madison)?"""
    out = apt.query('madison', pkg) or ''
    return any(f' {suite}/' in line for line in out.splitlines())


def newest(flavour='sid'):
    """Newest kernel release of the flavour's suite (e.g.
    '7.2.13+deb14-amd64'), or None.  Where experimental has no
    linux-headers-amd64 (Debian removes it from experimental once unstable
    is newer) apt answers with sid's: that is not experimental's kernel."""
    apt, suite = APTS[flavour], SUITES[flavour]
    for d in apt.depends_retry(META) or ():
        if d.startswith('linux-headers-') and d.endswith('-amd64'):
            if suite == 'sid' or in_suite(apt, d, suite):
                return d.removeprefix('linux-headers-')
            log(f'{flavour}: {META} leads to {d}, which is not from {suite}')
            return None
    return None


def choice(flavour='sid'):
    """(kver, Pin or None): the pinned kernel of the flavour, or the newest
    (kernels.choose)."""
    return kernels.choose(flavour, APTS[flavour], _cached,
                          lambda: newest(flavour))


def resolve(flavour='sid'):
    """The kernel release the suite boots for the flavour."""
    return choice(flavour)[0]


def image_packages(kver, apt=APT_SID):
    """Binary packages holding the kernel image and its modules: sid splits
    linux-image-<kver> (now empty) into linux-base (config, System.map,
    modules.builtin), linux-binary (vmlinuz) and linux-modules."""
    split = [f'linux-base-{kver}', f'linux-binary-{kver}',
             f'linux-modules-{kver}']
    known = apt.candidates(split)
    return [n for n in split if n in known] or [f'linux-image-{kver}']


def newest_pin(flavour='sid'):
    """Pin of the flavour's newest kernel: image packages and headers
    (kernels.lock)."""
    apt = APTS[flavour]
    kver = kernels.archive_newest(flavour, apt, lambda: newest(flavour))
    return kernels.pin_of(apt, kver,
                          [*image_packages(kver, apt), _headers(kver)])


def install_headers(kver, pin=None):
    """Install linux-headers-<kver> (and so its gcc) in the chroot: the
    pinned version, replacing another one (said in one line on stderr);
    without a pin, any version. One install at a time per cache: two runs
    that share it (two pytest sessions, say) take turns, and the second
    finds the headers installed."""
    pkg = _headers(kver)
    want = pin.packages.get(pkg) if pin else None
    with kernels.locked(sid_dir() / '.headers.lock'):
        have = installed_version(pkg)
        if have and want in (None, have):
            return
        spec = f'{pkg}={want}' if want else pkg
        log(f'installing {spec} in the sid chroot'
            + (f' (replacing {have})' if have else ''))
        r = _install(spec)
        if r.returncode != 0:
            APT_SID.update()
            r = _install(spec)
        if r.returncode != 0:
            raise kernels.DownloadError(
                f'apt-get install {spec} failed in the sid chroot:\n'
                f'{(r.stdout + r.stderr).strip()[-3000:]}')


def install_compiler(cc):
    """Make the compiler cc (e.g. x86_64-linux-gnu-gcc-14) exist in the
    chroot: apt-get install gcc-<major> unless it does (tests/vm/sweep.py
    builds for trixie's and forky's kernels with their own gcc)."""
    m = re.fullmatch(r'(?:x86_64-linux-gnu-)?gcc-(\d+)', cc)
    if not m:
        raise SidError(f'not a Debian gcc: {cc}')
    if (make_chroot() / 'usr/bin' / cc).exists():
        return
    with kernels.locked(sid_dir() / '.headers.lock'):
        if (chroot_dir() / 'usr/bin' / cc).exists():
            return
        log(f'installing gcc-{m[1]} in the sid chroot')
        r = _install(f'gcc-{m[1]}')
        if r.returncode != 0:
            APT_SID.update()
            r = _install(f'gcc-{m[1]}')
        if r.returncode != 0 or not (chroot_dir() / 'usr/bin' / cc).exists():
            raise kernels.DownloadError(
                f'apt-get install gcc-{m[1]} failed in the sid chroot:\n'
                f'{(r.stdout + r.stderr).strip()[-3000:]}')


def _usr_merged(root, kver):
    # merged /usr: give the host's depmod/modprobe a /lib/modules
    if not (root / 'lib').exists():
        (root / 'lib').symlink_to('usr/lib')
    if not (root / 'lib/modules' / kver).is_dir():
        raise SidError(f'no modules for {kver} in the image packages')


def fetch_image(kver, pin=None, apt=APT_SID):
    """Unpack the image and modules into $CGE_CACHE/kernels/<kver>/root."""
    def get_debs(tmp):
        pkgs = (pin.specs(_image_versions(pin)) if pin
                else image_packages(kver, apt))
        log(f'fetching {" ".join(pkgs)}')
        debs = chroot_dir() / 'tmp' / f'cge-debs-{os.getpid()}'
        shutil.rmtree(debs, ignore_errors=True)
        debs.mkdir(parents=True)
        apt.download(pkgs, debs)
        return debs
    return kernels.unpack(kver, get_debs, lambda root: _usr_merged(root, kver),
                          _image_versions(pin) if pin else None)


def kernel(flavour='sid'):
    """Resolve, fetch and prepare the flavour's kernel (image unpacked,
    headers installed in the chroot); a kernels.Kernel.  A pin that apt
    cannot fetch gives way to the newest (kernels.fetch_chosen)."""
    apt = APTS[flavour]

    def get(kver, pin):
        d = fetch_image(kver, pin, apt)
        install_headers(kver, pin)
        return d
    kver, d = kernels.fetch_chosen(flavour, apt, _cached,
                                   lambda: newest(flavour), get)
    (kernels.kernels_dir() / f'{flavour}.kver').write_text(kver + '\n')
    return kernels.Kernel(flavour, kver, d, chroot=chroot_dir())


def make_module(k, mdir, targets=('modules',), jobs=None):
    """`make -C <headers> M=<mdir>` in the chroot, mdir bind-mounted.

    Returns (the command as shown to users, CompletedProcess)."""
    inside = Path('/cge-build') / mdir.name
    cmd = ['make', '-C', f'/usr/src/linux-headers-{k.kver}', f'M={inside}',
           f'-j{jobs or os.cpu_count() or 1}', *targets]
    with kernels.locked(sid_dir() / '.use.lock', shared=True):
        r = run_in_chroot(cmd, binds={mdir: inside}, check=False)
    return ['chroot', str(chroot_dir()), *cmd], r


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--flavour', choices=SUITES, default='sid')
    ap.add_argument('--resolve', action='store_true',
                    help='only print the version (makes the chroot if needed)')
    a = ap.parse_args(argv)
    try:
        if a.resolve:
            print(resolve(a.flavour))
            return 0
        t0 = time.monotonic()
        k = kernel(a.flavour)
        print(f'{a.flavour}\t{k.kver}\t{k.dir}\t{time.monotonic() - t0:.1f}s')
    except kernels.KernelError as e:
        print(f'sid: error: {e}', file=sys.stderr)
        return 1
    return 0


if __name__ == '__main__':
    sys.exit(main())
