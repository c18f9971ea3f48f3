# SPDX-License-Identifier: GPL-2.0
"""Debian kernels for the VM tests: resolve, fetch, unpack, cache.

    k = kernel('6.1')   # -> Kernel(.kver, .vmlinuz, .moddir, .kdir, .root)

Flavours (FLAVOURS, what "all" means): 5.10 from Debian 11 (fetched with
an apt of its own, OldApt: bullseye and bullseye-security), 6.1, 6.1-rt,
6.12, 6.12-rt from Debian 12, sid and experimental, the kernels of Debian
unstable and experimental (tests/vm/sid.py: fetched and built for in a sid
chroot).  OTHER_FLAVOURS are accepted by name but not part
of "all": debug, a KASAN/lockdep kernel built from linux-source-6.1
(tests/vm/debugkernel.py).

The kernel of each flavour is pinned in tests/vm/kernels.lock (pins.py: the
kernel release and the exact Debian package versions), so a commit always
tests the same kernels.  choose() takes the pin when it is in the cache at
the pinned versions (apt is not asked; a cache of other versions is fetched
again, with one line on stderr) or still in the archive; when it has left
both, or apt cannot download it (fetch_chosen()), the newest of the series
(meta package -> linux-image-<kver>) with one line on stderr.  The apt lists
are refreshed (`apt-get update`, root only, at most once per process) when
older than CGE_APT_LISTS_MAX_AGE seconds (6 h: the mirrors are pushed four
times a day; the age is when apt last wrote them here) or when they lack the
pin; it waits up to 120 s for another apt's lists lock, and its failure is
one line on stderr (the lists stay as they are).  `make kernels-update`
(--update) runs apt-get update (its failure is an error) and pins the newest
of each flavour.  linux-image, linux-headers and their -common and
linux-kbuild dependencies are fetched with `apt-get download` and unpacked
with `dpkg-deb -x` into $CGE_CACHE/kernels/<kver>/root/ (default cache
/var/cache/cgroup-energy).  The unpack happens in a temporary directory that is
renamed into place, so an interrupted run never leaves a half cache.

CLI: kernels.py [FLAVOUR...] [--resolve | --update]
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
from urllib.parse import unquote

try:
    from . import archive, pins
except ImportError:                       # run as a script
    import archive
    import pins

# flavour -> (meta package, version prefix of the kernel release)
FLAVOURS = {
    '5.10': ('linux-image-amd64', '5.10.'),    # Debian 11: OldApt below
    '6.1': ('linux-image-amd64', '6.1.'),
    '6.1-rt': ('linux-image-rt-amd64', '6.1.'),
    '6.12': ('linux-image-6.12-amd64', '6.12.'),
    '6.12-rt': ('linux-image-6.12-rt-amd64', '6.12.'),
    'sid': ('linux-headers-amd64', ''),        # resolved in sid.py
    'experimental': ('linux-headers-amd64', ''),   # resolved in sid.py
}
# flavours whose modules build in the sid chroot (sid.py)
CHROOT_FLAVOURS = ('sid', 'experimental')
# The compiler for a flavour whose headers name one Debian 12 lacks: 5.10's
# ask for gcc-10 (Debian 11's); Debian 12's gcc-12 builds the module for it
# without a warning, and 5.10's Kbuild does not compare compilers.
HOST_CC = {'5.10': 'gcc'}
# accepted by name, not in "all": the debug kernel (debugkernel.py)
OTHER_FLAVOURS = ('debug',)
APT_OPTS = ['-o', 'APT::Sandbox::User=root', '-q']


KernelError = pins.KernelError      # one class, also in script mode (sid.py)


class DownloadError(KernelError):
    """apt could not fetch a package (gone from the archive, or the network)."""


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
    def make_vars(self):
        """Variables every make against kdir needs (HOST_CC)."""
        cc = HOST_CC.get(self.flavour)
        return (f'CC={cc}',) if cc else ()

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


def _sibling(name):
    """tests/vm/<name>.py, imported as a package member or as a script's peer."""
    import importlib
    return importlib.import_module(f'{__package__}.{name}' if __package__
                                   else name)


def known_flavours():
    return [*FLAVOURS, *OTHER_FLAVOURS]


def select_flavours(items):
    """The flavours that @items name (CGE_FLAVOURS' form: each blank- or
    comma-separated, "all" for every one of FLAVOURS), in order, once each;
    KernelError for one that is not in FLAVOURS."""
    out = []
    for item in items:
        for f in item.replace(',', ' ').split():
            for g in (FLAVOURS if f == 'all' else [f]):
                if g not in FLAVOURS:
                    raise KernelError(f'unknown flavour {g!r}; known: '
                                      + ', '.join(FLAVOURS))
                if g not in out:
                    out.append(g)
    return out


def _check_flavour(flavour):
    if flavour not in FLAVOURS and flavour not in OTHER_FLAVOURS:
        raise KernelError(f'unknown flavour {flavour!r}; known: '
                          + ', '.join(known_flavours()))


@contextlib.contextmanager
def locked(path, shared=False):
    with open(path, 'w') as f:
        fcntl.flock(f, fcntl.LOCK_SH if shared else fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


# Debian's mirrors are pushed four times a day: lists older than that may name
# files the mirror has dropped and miss the versions a fresh lock pins.
LISTS_MAX_AGE = float(os.environ.get('CGE_APT_LISTS_MAX_AGE', 6 * 3600))
# `apt-get update` does not wait for the lists lock (/var/lib/apt/lists/lock)
# that another apt (apt-daily, a user) holds: it exits 100 at once with "Could
# not get lock", DPkg::Lock::Timeout or not.  That option is the wait for
# dpkg's locks, which apt-get update does not take (apt 2.6: it is in no man
# page, only in configure-index under dpkg::; apt(8), not apt-get, sets it to
# 120 by default, Binary::apt::DPkg::Lock::Timeout).  So we retry.
LISTS_LOCK_WAIT = 120           # seconds, in all
LISTS_LOCK_POLL = 5


class Apt:
    """The host's apt: queries, downloads, and `apt-get update` at most once
    per process.  sid.py subclasses it for the sid chroot's own lists."""
    where = 'the host'

    def __init__(self):
        self.updated = False        # apt-get update tried in this process
        self.failed = None          # its stderr if it failed

    def run(self, argv, cwd=None):
        return _run(argv, cwd=cwd)

    def inside(self, path):
        """path as the commands of run() see it."""
        return path

    def lists(self):
        return Path('/var/lib/apt/lists')

    def stamp(self):
        return cache_dir() / '.apt-update.stamp'

    def age(self):
        """Seconds since apt last wrote a Packages list here or our last
        successful `apt-get update`, whichever is later."""
        # Not st_mtime: apt sets a list's mtime to the server's Last-Modified,
        # so the fresh lists of a mirror pushed hours ago look hours old.  The
        # ctime is when apt renamed the file into place (utime cannot set it).
        # apt leaves unchanged lists alone, so an update that changed nothing
        # shows only in our stamp, touched after each of ours that succeeded.
        # pkgcache.bin is no clock: Debian's container images disable it
        # (/etc/apt/apt.conf.d/docker-clean: Dir::Cache::pkgcache "").
        files = [*self.lists().glob('*_Packages*'), self.stamp()]
        times = [p.stat().st_ctime for p in files if p.exists()]
        return time.time() - max(times) if times else float('inf')

    def update(self, strict=False):
        """Run `apt-get update` (root only) at most once per process.  If it
        fails or we are not root, strict (kernels-update) raises KernelError
        with the reason; else one line on stderr, and the lists stay as they
        are (a pin they lack then falls back to the newest kernel)."""
        if os.geteuid() != 0:
            msg = (f'the apt lists of {self.where} need an `apt-get update`, '
                   'and only root can run it')
            if strict:
                raise KernelError(f'{msg}: run as root')
            if not self.updated:
                self.updated = True
                log(f'{msg}; going on with the lists as they are')
            return
        if not self.updated:
            self.updated = True
            self.failed = self._update()
            if self.failed and not strict:
                log(f'apt-get update failed in {self.where} '
                    f'({_first_error(self.failed)}); going on with the '
                    'lists as they are')
        if self.failed and strict:
            raise KernelError(f'apt-get update failed in {self.where}:\n'
                              f'{self.failed}')

    def _update(self):
        """apt-get update under our lock, unless a concurrent run of ours
        just did it; the stamp is touched if it succeeds.  Returns None, or
        apt's stderr if it failed."""
        with locked(self.stamp().with_suffix('.lock')):
            if self.age() < 60:                 # a concurrent run just did
                return None
            log(f'running apt-get update in {self.where}')
            r = self._apt_get_update()
            # An unreachable source is a warning (exit 0); errors (a held
            # lock, a bad signature, a Release file gone) exit 100.
            if r.returncode != 0:
                return r.stderr.strip() or f'exit status {r.returncode}'
            self.stamp().touch()
            return None

    def _apt_get_update(self):
        """`apt-get update`, retried every LISTS_LOCK_POLL s while another
        apt holds the lists lock, for up to LISTS_LOCK_WAIT s; the last
        CompletedProcess."""
        cmd = ['apt-get', *APT_OPTS, 'update']
        r = self.run(cmd)
        if _lists_locked(r):
            log(f'another apt holds the apt lists lock in {self.where}; '
                f'waiting up to {LISTS_LOCK_WAIT:.0f} s')
        deadline = time.monotonic() + LISTS_LOCK_WAIT
        while _lists_locked(r) and time.monotonic() < deadline:
            time.sleep(LISTS_LOCK_POLL)
            r = self.run(cmd)
        return r

    def refresh_if_stale(self):
        """apt-get update (if root) when the lists are older than
        LISTS_MAX_AGE; a failure is one line on stderr."""
        if self.age() > LISTS_MAX_AGE and os.geteuid() == 0:
            self.update()

    def query(self, *args):
        """stdout of `apt-cache ARGS`, None if it failed (tests fake this)."""
        r = self.run(['apt-cache', *args])
        return r.stdout if r.returncode == 0 else None

    def depends(self, pkg):
        out = self.query('depends', pkg)
        if out is None:
            return None
        return re.findall(r'^\s*\|?Depends:\s+(\S+)', out, re.M)

    def depends_retry(self, pkg):
        deps = self.depends(pkg)
        if not deps:
            self.update()
            deps = self.depends(pkg)
        return deps

    def offers(self, pin):
        """Does the archive (per the lists) hold every package of the pin?"""
        out = self.query('madison', *pin.packages) or ''
        have = {tuple(f.strip() for f in line.split('|')[:2])
                for line in out.splitlines() if line.count('|') >= 2}
        return set(pin.packages.items()) <= have

    def candidates(self, names):
        """{name: version apt would fetch} for the names the lists know."""
        out = self.query('show', '--no-all-versions', *names) or ''
        return dict(re.findall(r'^Package: (\S+)\n(?:.+\n)*?Version: (\S+)',
                               out, re.M))

    def download(self, specs, dest):
        """apt-get download specs into dest; if it fails, once more after an
        apt-get update (root only)."""
        cmd = ['apt-get', *APT_OPTS, 'download', *specs]
        r = self.run(cmd, cwd=self.inside(dest))
        root = os.geteuid() == 0
        if r.returncode != 0 and root:
            self.update()
            r = self.run(cmd, cwd=self.inside(dest))
        if r.returncode != 0:
            why = '' if root else (' (not root: the apt lists were not '
                                   'refreshed, apt-get update needs root)')
            raise DownloadError(f'{" ".join(cmd)} failed in {self.where}'
                                f'{why}:\n{r.stderr.strip()}')


def _lists_locked(r):
    """Did apt-get fail because another apt holds the lists lock?"""
    return r.returncode != 0 and '/lists/lock' in r.stderr


def _first_error(stderr):
    """apt's first `E:` line (else its last line), for one-line messages."""
    lines = stderr.splitlines()
    return next((x for x in lines if x.startswith('E:')), lines[-1])


HOST = Apt()


class OldApt(Apt):
    """apt for an older Debian release than the host's (bullseye for the 5.10
    flavour): the host's apt with a sources list, lists and archive cache of
    its own under $CGE_CACHE/apt-<suite>/, and an empty dpkg status (it only
    queries and downloads). The host's debian-archive-keyring holds the
    release's keys.  suites are the sources' suites (component main): a
    -security one from Debian's security archive, the others from its main
    archive, both where the host's apt sources name them (archive.py)."""

    def __init__(self, suite, suites):
        super().__init__()
        self.suite = suite
        self.where = f'the {suite} apt'
        self.suites = suites

    def sources_text(self):
        try:
            return ''.join(f'deb {KEYRING} {archive_of(s)} {s} main\n'
                           for s in self.suites)
        except archive.ArchiveError as e:
            raise KernelError(f'{self.where}: {e}') from None

    def base(self):
        d = cache_dir() / f'apt-{self.suite}'
        for sub in ('lists/partial', 'archives/partial'):
            (d / sub).mkdir(parents=True, exist_ok=True)
        src = d / 'sources.list'
        text = self.sources_text()
        if not src.exists() or src.read_text() != text:
            src.write_text(text)
        (d / 'status').touch()
        return d

    def run(self, argv, cwd=None):
        d = self.base()
        opts = ['-o', f'Dir::Etc::SourceList={d / "sources.list"}',
                '-o', 'Dir::Etc::SourceParts=/dev/null',
                '-o', f'Dir::State::Lists={d / "lists"}',
                '-o', f'Dir::Cache={d}',
                '-o', f'Dir::State::status={d / "status"}']
        return _run([argv[0], *opts, *argv[1:]], cwd=cwd)

    def lists(self):
        return self.base() / 'lists'

    def stamp(self):
        return self.base() / '.apt-update.stamp'


def archive_of(suite):
    """The URI of the Debian archive that serves suite, as the host's apt
    sources name it (archive.py): the security archive for a -security
    suite, else the main archive."""
    if suite.endswith('-security'):
        return archive.security_uri()
    return archive.main_uri()


KEYRING = '[signed-by=/usr/share/keyrings/debian-archive-keyring.gpg]'
# Debian 11's kernel updates come from its security archive.  (When Debian
# moves bullseye to its archive of old releases, this apt's sources must name
# that archive instead.)
OLD = {'5.10': OldApt('bullseye', ['bullseye', 'bullseye-security'])}


def apt_of(flavour):
    """The apt that resolves and fetches a flavour's packages (not sid's)."""
    return OLD.get(flavour, HOST)


def cached_versions(kver, base=None):
    """{package: Debian version} unpacked into the cache for kver (meta.json's
    debs, named <name>_<version>_<arch>.deb by apt-get download), or None if
    kver is not complete in the cache (base: kernels_dir())."""
    meta = (base or kernels_dir()) / kver / 'meta.json'
    if not meta.exists():
        return None
    debs = json.loads(meta.read_text()).get('debs', [])
    names = (re.fullmatch(r'([^_]+)_([^_]+)_[^_]+\.deb', d) for d in debs)
    return {m[1]: unquote(m[2]) for m in names if m}


def differences(have, want):
    """'name version (pinned version)' for each package of want ({name:
    version}) that have lacks or holds at another version."""
    return [f'{n} {have.get(n, "none")} (pinned {v})'
            for n, v in want.items() if have.get(n) != v]


def cached(kver, want=None, base=None):
    """Is kver complete in the cache and, if want ({package: version}) is
    given, unpacked from exactly those versions?"""
    have = cached_versions(kver, base)
    return have is not None and not differences(have, want or {})


def newest(flavour, apt=None):
    """Newest kernel release of a flavour (not sid) in the apt lists, or
    None."""
    apt = apt or apt_of(flavour)
    meta, prefix = FLAVOURS[flavour]
    rt = flavour.endswith('-rt')
    for d in apt.depends_retry(meta) or ():
        kver = d.removeprefix('linux-image-')
        if (d.startswith('linux-image-') and kver.startswith(prefix)
                and kver.endswith('-rt-amd64') == rt):
            return kver
    return None


def _no_kernel(flavour, apt):
    return KernelError(f'cannot resolve flavour {flavour}: the apt lists of '
                       f'{apt.where} name no kernel of it (is the suite in '
                       'the apt sources, and did apt-get update run as root?)')


def newest_or_last(flavour, apt, find):
    """(find()'s kver, False), else (the last kver used, True)."""
    kver = find()
    if kver:
        return kver, False
    last = kernels_dir() / f'{flavour}.kver'
    if last.exists():
        return last.read_text().strip(), True
    raise _no_kernel(flavour, apt)


def fall_back(flavour, apt, find, was):
    """(kver, None) of the newest of the series (else the last one used),
    said in one line on stderr after was, why the pin is not used."""
    kver, last = newest_or_last(flavour, apt, find)
    if last:
        log(f'{flavour}: {was}, and the apt lists of {apt.where} name no '
            f'kernel of it; using the last one used, {kver}')
    else:
        log(f'{flavour}: {was}; using {kver} (make kernels-update pins it)')
    return kver, None


def _offered(apt, pin):
    if apt.offers(pin):
        return True
    if apt.updated:
        return False
    apt.update()
    return apt.offers(pin)


def _choose(flavour, apt, is_cached, find):
    pin = pins.read().get(flavour)
    if pin and is_cached(pin):
        return pin.kver, pin                    # apt is not asked at all
    apt.refresh_if_stale()
    if pin and _offered(apt, pin):
        return pin.kver, pin
    return fall_back(flavour, apt, find,
                     f'pinned {pin.kver} ({pin.version}) is no longer in the '
                     'archive' if pin else f'no pin in {pins.LOCK.name}')


_chosen = {}


def choose(flavour, apt, is_cached, find):
    """(kver, Pin or None) of a flavour, once per process: the pin of
    kernels.lock when is_cached(pin) (apt is not asked) or when the archive
    still has its packages; else the newest of the series, find(), said in
    one line on stderr.  Stale lists are refreshed before apt is asked."""
    if flavour not in _chosen:
        _chosen[flavour] = _choose(flavour, apt, is_cached, find)
    return _chosen[flavour]


def fetch_chosen(flavour, apt, is_cached, find, get):
    """(kver, get(kver, pin)) of choose()'s kernel.  When apt cannot fetch a
    pinned package (it left the archive after the lists were read), the
    newest of the series instead, said in one line on stderr as choose()
    does (and remembered by it)."""
    kver, pin = choose(flavour, apt, is_cached, find)
    try:
        return kver, get(kver, pin)
    except DownloadError as e:
        if pin is None:
            raise
        kver, pin = _chosen[flavour] = fall_back(
            flavour, apt, find, f'pinned {pin.kver} ({pin.version}) is no '
            f'longer in the archive ({_first_error(str(e))})')
        return kver, get(kver, pin)


def _host(flavour):
    """choose()'s arguments for a flavour fetched by the host (not sid)."""
    return (flavour, apt_of(flavour),
            lambda pin: cached(pin.kver, pin.packages),
            lambda: newest(flavour))


def _choice(flavour):
    _check_flavour(flavour)
    if flavour in CHROOT_FLAVOURS:
        return _sibling('sid').choice(flavour)
    return choose(*_host(flavour))


def resolve(flavour):
    """Kernel release (e.g. '6.1.0-57-amd64') a flavour boots: the pinned one
    (tests/vm/kernels.lock) unless it has left both archive and cache."""
    if flavour == 'debug':
        return _sibling('debugkernel').meta()['kver']
    return _choice(flavour)[0]


def packages(kver, apt=HOST):
    """Debian packages to unpack for kver: image, headers, -common, kbuild."""
    deps = apt.depends_retry(f'linux-headers-{kver}')
    if not deps:
        raise KernelError(f'apt knows no linux-headers-{kver}')
    extra = [d for d in deps
             if d.startswith(('linux-headers-', 'linux-kbuild-'))]
    return [f'linux-image-{kver}', f'linux-headers-{kver}', *extra]


def pin_of(apt, kver, names):
    """A Pin of kver: the versions apt would fetch of names today."""
    versions = apt.candidates(names)
    missing = [n for n in names if n not in versions]
    if missing:
        raise KernelError(f'{apt.where} knows no {" ".join(missing)}')
    return pins.Pin(kver, {n: versions[n] for n in names})


def archive_newest(flavour, apt, find):
    """find()'s kver after an `apt-get update` (its failure is an error); no
    fallback (for pinning)."""
    apt.update(strict=True)
    kver = find()
    if not kver:
        raise _no_kernel(flavour, apt)
    return kver


def newest_pin(flavour):
    """Pin of the newest kernel of a flavour (for kernels.lock)."""
    if flavour not in FLAVOURS:
        raise KernelError(f'{flavour!r} is not pinned; pinned: '
                          + ', '.join(FLAVOURS))
    if flavour in CHROOT_FLAVOURS:
        return _sibling('sid').newest_pin(flavour)
    apt = apt_of(flavour)
    kver = archive_newest(flavour, apt, lambda: newest(flavour))
    return pin_of(apt, kver, packages(kver, apt))


def update_lock(flavours=FLAVOURS):
    """Re-resolve the newest kernel of each flavour; rewrite kernels.lock."""
    new = {f: newest_pin(f) for f in flavours}
    old = pins.read()
    pins.write({**old, **new})
    for f, pin in new.items():
        was = old[f].kver if f in old else 'none'
        print(f'{f}\t{pin.kver}\t{pin.version}\t(was {was})')


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
    # Debian 14's wrapper also sets KBUILD_OUTPUT=/usr/src/linux-headers-
    # <kver>: the same, or Kbuild (7.x) takes the directory it runs in for
    # another output tree and writes its objects and a Makefile there.
    text = mk.read_text()
    fixed = re.sub(r'^include /usr/src/',
                   'include $(dir $(lastword $(MAKEFILE_LIST)))../',
                   text, flags=re.M)
    # (:=, so that MAKEFILE_LIST is this wrapper's, not that of where
    # the variable is used)
    fixed = re.sub(r'^KBUILD_OUTPUT=/usr/src/',
                   'KBUILD_OUTPUT := $(abspath $(dir $(lastword $(MAKEFILE_LIST)))..)/',
                   fixed, flags=re.M)
    if '/usr/src/' in fixed:
        raise KernelError(f'{mk} still names /usr/src/ after the fix-up:\n'
                          f'{fixed}')
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


def _unpack_debs(debs, root):
    files = sorted(debs.glob('*.deb'))
    for deb in files:
        r = _run(['dpkg-deb', '-x', str(deb), str(root)])
        if r.returncode != 0:
            raise KernelError(f'dpkg-deb -x {deb.name}: {r.stderr}')
    shutil.rmtree(debs, ignore_errors=True)
    return [f.name for f in files]


def unpack(kver, get_debs, finish, want=None, base=None):
    """Make $CGE_CACHE/kernels/<kver> (base/<kver>) exist, complete, once
    (file lock):
    get_debs(tmp) downloads the .debs and returns their directory, they are
    unpacked into root/, finish(root) fixes the tree up, depmod runs, and the
    tree is renamed into place.  A cache unpacked from other versions than
    want ({package: version}, a pin's) is replaced, said in one line on
    stderr.  Returns its path."""
    kd = base or kernels_dir()
    dest = kd / kver
    if cached(kver, want, kd):
        return dest
    with locked(kd / f'.{kver}.lock'):
        if cached(kver, want, kd):
            return dest
        have = cached_versions(kver, kd)
        if have is not None:
            log(f'{kver}: the cache holds '
                f'{", ".join(differences(have, want))}; fetching again')
        for stale in kd.glob(f'.{kver}.tmp*'):      # interrupted earlier runs
            shutil.rmtree(stale, ignore_errors=True)
        t0 = time.monotonic()
        tmp = Path(tempfile.mkdtemp(prefix=f'.{kver}.tmp', dir=kd))
        try:
            tmp.chmod(0o755)
            root = tmp / 'root'
            root.mkdir()
            debs = _unpack_debs(get_debs(tmp), root)
            finish(root)
            r = _run(['depmod', '-b', str(root), kver])
            if r.returncode != 0:
                raise KernelError(f'depmod -b {root} {kver}: {r.stderr}')
            meta = {'kver': kver, 'debs': debs,
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


def fetch(kver, pin=None, apt=HOST):
    """The cache directory of kver; fetched by apt (the pin's exact versions
    if given: a cache of other versions is fetched again) and unpacked if
    needed."""
    def get_debs(tmp):
        debs = tmp / 'debs'
        debs.mkdir()
        specs = pin.specs() if pin else packages(kver, apt)
        log(f'fetching {" ".join(specs)}')
        apt.download(specs, debs)
        return debs
    return unpack(kver, get_debs, lambda root: _fix_headers(root, kver),
                  pin.packages if pin else None)


def kernel(flavour):
    """Resolve, fetch if needed, and describe the kernel of a flavour."""
    _check_flavour(flavour)
    if flavour in CHROOT_FLAVOURS:
        return _sibling('sid').kernel(flavour)
    if flavour == 'debug':
        return _sibling('debugkernel').kernel()
    apt = apt_of(flavour)
    kver, d = fetch_chosen(*_host(flavour),
                           lambda kver, pin: fetch(kver, pin, apt))
    k = Kernel(flavour, kver, d)
    (kernels_dir() / f'{flavour}.kver').write_text(kver + '\n')
    return k


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('flavours', nargs='*', default=list(FLAVOURS),
                    help='flavours (default: all): ' + ' '.join(FLAVOURS)
                    + '; also: ' + ' '.join(OTHER_FLAVOURS))
    ap.add_argument('--resolve', action='store_true',
                    help='only print the versions, fetch nothing')
    ap.add_argument('--update', action='store_true',
                    help=f'pin the newest kernels in {pins.LOCK.name} '
                    '(runs apt-get update first)')
    a = ap.parse_args(argv)
    try:
        if a.update:
            update_lock(a.flavours)
            return 0
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
