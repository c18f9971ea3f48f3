# SPDX-License-Identifier: GPL-2.0
"""The compile sweep: the module built, with no boot, against every amd64
headers series of the Debian suites reachable here (bullseye to
experimental; generic, cloud and rt), the newest version of each, pinned.

    for t in targets(): build(t)     # -> Result(warnings, probes, ...)

A series is a headers meta package (linux-headers-amd64,
linux-headers-rt-amd64, linux-headers-6.12-cloud-amd64, ...) of a suite;
experimental's series point at one release candidate, whose own package is
then its series too (linux-headers-7.3-amd64).  tests/vm/sweep.lock pins, per
suite and series, the kernel release and the exact versions of its headers,
-common and kbuild packages (pins.py's format); `make kernels-update`
(sweep.py --update) pins the newest, and lists in the lock's header the
series whose packages the apt lists name but the archive does not serve
(HTTP HEAD of each).  A pin that the cache holds needs no apt; one that the
archive no longer has gives way to the series' newest at its exact
versions, said in one line on stderr and in the Result (pinned False).

Each suite has an apt of its own (kernels.OldApt: sources, lists and archive
cache under $CGE_CACHE/apt-<suite>/, Debian 12's archive keyring, the archive
that the host's apt sources name, archive.py); bullseye's is the 5.10
flavour's.  The headers are unpacked into
$CGE_CACHE/sweep/<suite>/<kver>/root/ (kernels.unpack).

Compilers: each kernel is built with the gcc its headers name
(CONFIG_CC_VERSION_TEXT), on the host for gcc 12 (Debian 12's), in the sid
chroot for newer ones (gcc-14 and gcc-16 today, installed there on first
use; their kbuild tools need a newer libc than Debian 12's too; the headers
are mounted read-only there).  Each build starts from scratch; a line with
"warning:" in any case (the compiler's, modpost's) counts as a warning.  bullseye's
headers name gcc-10, which neither has: Debian 12's gcc-12 builds for them,
as for the 5.10 flavour (kernels.HOST_CC), and its Kbuild does not compare
compilers.  The flags are the kernel's own (no W=1): what a DKMS build on
that kernel sees.

CLI: sweep.py [--update | --list | --table RESULTS.json | --json OUT]
     (default: build all, one line each on stderr)
"""
import argparse
import json
import os
import re
import shutil
import sys
import time
import urllib.error
import urllib.request
from dataclasses import asdict, dataclass
from pathlib import Path

try:
    from . import build as vmbuild
    from . import kernels, pins, sid
except ImportError:                       # run as a script
    import build as vmbuild
    import kernels
    import pins
    import sid

LOCK = Path(__file__).resolve().parent / 'sweep.lock'
HEADER = """\
# SPDX-License-Identifier: GPL-2.0
# The kernels the compile sweep builds the module for (tests/vm/sweep.py):
# per suite and headers series, the kernel release (kver) and the Debian
# version of each headers package (tests/vm/pins.py's format).
# Written by `make kernels-update`; commit it when `make check` is green.
"""
SUITES = {
    'bullseye': kernels.OLD['5.10'],
    'bookworm': kernels.OldApt('bookworm', [
        'bookworm', 'bookworm-updates', 'bookworm-security']),
    'bookworm-backports': kernels.OldApt('bookworm-backports', [
        'bookworm-backports']),
    'trixie': kernels.OldApt('trixie', [
        'trixie', 'trixie-updates', 'trixie-security']),
    'forky': kernels.OldApt('forky', ['forky']),
    'sid': kernels.OldApt('sid', ['sid']),
    'experimental': kernels.OldApt('experimental', ['experimental']),
}
# a headers series: the meta package, or a release candidate's own package
SERIES = re.compile(r'linux-headers-((?:\d+\.\d+-)?(?:cloud-|rt-)?amd64)')
HOST_GCC = 12                   # Debian 12's
BUILD_CC = {10: 'gcc-12'}       # bullseye's gcc-10: Debian 12's gcc-12
# the compiler's warnings and modpost's (WARNING: modpost: ...)
WARNING = re.compile(r'\bwarning:', re.I)


def log(msg):
    print(f'sweep: {msg}', file=sys.stderr, flush=True)


def sweep_dir(suite):
    """$CGE_CACHE/sweep/<suite>: two suites may hold one kernel release at
    two Debian revisions (forky and sid)."""
    d = kernels.cache_dir() / 'sweep' / suite
    d.mkdir(parents=True, exist_ok=True)
    return d


def headers_packages(apt, kver):
    """linux-headers-<kver> and what it needs to build: its -common
    package(s) and linux-kbuild."""
    deps = apt.depends_retry(f'linux-headers-{kver}')
    if not deps:
        raise kernels.KernelError(f'{apt.where} knows no linux-headers-{kver}')
    return [f'linux-headers-{kver}',
            *[d for d in deps if d.startswith(('linux-headers-', 'linux-kbuild-'))]]


def series(suite):
    """{series: kver} of a suite's amd64 headers, newest of each (the apt
    lists refreshed when stale)."""
    apt = SUITES[suite]
    apt.refresh_if_stale()
    names = (apt.query('pkgnames', 'linux-headers-') or '').split()
    if not names:
        apt.update()
        names = (apt.query('pkgnames', 'linux-headers-') or '').split()
    out, seen = {}, set()
    # A meta whose kernel's headers are themselves a series name (in
    # experimental, linux-headers-amd64 -> linux-headers-7.3-amd64) is left
    # out: that package, which depends on linux-kbuild, is the series.
    for name in sorted(names):
        m = SERIES.fullmatch(name)
        if not m:
            continue
        deps = apt.depends(name) or []
        real = [d for d in deps if SERIES.fullmatch(d) is None
                and d.startswith('linux-headers-') and d.endswith('-amd64')]
        if real:
            kver = real[0].removeprefix('linux-headers-')
        elif any(d.startswith('linux-kbuild-') for d in deps):
            kver = m[1]                  # itself a kernel's headers (7.3-amd64)
        else:
            continue
        if kver not in seen:
            seen.add(kver)
            out[m[1]] = kver
    if not out:
        raise kernels.KernelError(f'the apt lists of {apt.where} name no '
                                  'amd64 headers')
    return out


def served(apt, pin):
    """None if the archive serves every package of the pin (HTTP HEAD of
    the URIs apt would fetch), else why not."""
    r = apt.run(['apt-get', *kernels.APT_OPTS, 'download', '--print-uris',
                 *pin.specs()])
    if r.returncode != 0:
        return kernels._first_error(r.stderr or 'apt-get failed')
    for uri in re.findall(r"^'([^']+)'", r.stdout, re.M):
        try:
            urllib.request.urlopen(urllib.request.Request(uri, method='HEAD'),
                                   timeout=30).close()
        except urllib.error.HTTPError as e:
            return f'{uri.rsplit("/", 1)[-1]}: HTTP {e.code}'
        except OSError as e:
            return f'{uri.rsplit("/", 1)[-1]}: {e}'
    return None


def newest_pins():
    """({'<suite> <series>': Pin}, {name: why}) of every suite's newest
    headers, after an apt-get update of each (for sweep.lock): the series
    the archive lists but does not serve go in the second."""
    out, unserved = {}, {}
    for suite, apt in SUITES.items():
        apt.update(strict=True)
        for ser, kver in series(suite).items():
            pin = kernels.pin_of(apt, kver, headers_packages(apt, kver))
            why = served(apt, pin)
            if why:
                unserved[f'{suite} {ser}'] = f'{kver} {pin.version}: {why}'
            else:
                out[f'{suite} {ser}'] = pin
    return out, unserved


def unserved_note(unserved):
    """Comment lines for the lock's header: the series not pinned."""
    if not unserved:
        return ''
    lines = [f'# Listed in the apt lists but not served on '
             f'{time.strftime("%Y-%m-%d")}, so not pinned:']
    lines += [f'#   [{name}] {why}' for name, why in unserved.items()]
    return '\n'.join(lines) + '\n'


def unserved_in_lock(path=None):
    """{name: why} of the lock's note of series not served."""
    text = (path or LOCK).read_text() if (path or LOCK).exists() else ''
    return dict(re.findall(r'^#   \[([^]]+)\] (.*)$', text, re.M))


def update_lock():
    new, unserved = newest_pins()
    old = pins.read(LOCK)
    pins.write(new, LOCK, HEADER + unserved_note(unserved))
    for name, pin in new.items():
        was = old[name].kver if name in old else 'none'
        print(f'{name}\t{pin.kver}\t{pin.version}\t(was {was})')
    for name, why in unserved.items():
        print(f'{name}\tnot served: {why}')


@dataclass
class Target:
    suite: str
    series: str
    kver: str
    pin: pins.Pin               # the lock's, or the series' newest
    pinned: bool = True         # the lock's pin

    @property
    def name(self):
        return f'{self.suite} {self.series}'


def targets():
    """Every pinned series of sweep.lock, as Targets."""
    lock = pins.read(LOCK)
    if not lock:
        raise kernels.KernelError(f'no pins in {LOCK}: make kernels-update')
    out = []
    for name, pin in lock.items():
        suite, ser = name.split(' ', 1)
        if suite not in SUITES:
            raise kernels.KernelError(f'{LOCK.name}: [{name}]: unknown suite')
        out.append(Target(suite, ser, pin.kver, pin))
    return out


def _fetch(t):
    apt = SUITES[t.suite]

    def get_debs(tmp):
        debs = tmp / 'debs'
        debs.mkdir()
        log(f'{t.name}: fetching {" ".join(t.pin.specs())}')
        apt.download(t.pin.specs(), debs)
        return debs

    def finish(root):
        (root / 'lib/modules' / t.kver).mkdir(parents=True, exist_ok=True)
        kernels._fix_headers(root, t.kver)
    return kernels.unpack(t.kver, get_debs, finish, t.pin.packages,
                          sweep_dir(t.suite))


def fetch(t):
    """The cache directory of t's headers at the pin's exact versions;
    if the archive no longer has them, the series' newest, pinned now
    (t.pinned False) and said in one line on stderr."""
    try:
        return _fetch(t)
    except kernels.DownloadError as e:
        apt = SUITES[t.suite]
        kver = series(t.suite).get(t.series)
        if kver is None:
            raise
        pin = kernels.pin_of(apt, kver, headers_packages(apt, kver))
        if pin == t.pin:
            raise
        log(f'{t.name}: pinned {t.kver} ({t.pin.version}) is no longer in '
            f'the archive ({kernels._first_error(str(e))}); using {kver} '
            f'({pin.version}; make kernels-update pins it)')
        t.kver, t.pin, t.pinned = kver, pin, False
        return _fetch(t)


def compiler(kdir):
    """(the gcc the headers name, the one that builds here, its major)."""
    conf = kdir / 'include/config/auto.conf'
    m = re.search(r'^CONFIG_CC_VERSION_TEXT="?(\S+) .*?(\d+)\.\d+\.\d+',
                  conf.read_text(), re.M)
    if not m:
        raise kernels.KernelError(f'no CONFIG_CC_VERSION_TEXT in {conf}')
    named, major = m[1], int(m[2])
    return named, BUILD_CC.get(major, named), major


@dataclass
class Result:
    suite: str
    series: str
    kver: str
    version: str            # of linux-headers-<kver>
    pinned: bool            # at the lock's versions
    cc_named: str
    cc_used: str
    where: str              # host or sid chroot
    built: bool
    warnings: list
    probes: str
    seconds: float
    log_tail: str = ''


def build(t, jobs=None):
    """Build the module for t's headers; a Result (failures included)."""
    d = fetch(t)
    kdir = d / 'root/usr/src' / f'linux-headers-{t.kver}'
    named, cc, major = compiler(kdir)
    mdir = vmbuild.REPO / '.build/sweep' / f'{t.suite}_{t.kver}'
    srcs = [vmbuild.REPO / n for n in ('Kbuild', 'kmod', 'include')]
    # from scratch: objects kept from a run before would hide their warnings
    shutil.rmtree(mdir, ignore_errors=True)
    vmbuild._sync(srcs, mdir)
    jobs = jobs or os.cpu_count() or 1
    t0 = time.monotonic()
    if major <= HOST_GCC:
        where = 'host'
        r = kernels._run(['make', '-C', str(kdir), f'M={mdir}', f'-j{jobs}',
                          f'CC={cc}', 'modules'])
    else:
        where = 'sid chroot'
        sid.install_compiler(cc)
        inside = Path('/cge-sweep') / t.kver
        with kernels.locked(sid.sid_dir() / '.use.lock', shared=True):
            r = sid.run_in_chroot(
                ['make', '-C', f'{inside}/root/usr/src/linux-headers-{t.kver}',
                 f'M=/cge-build/{mdir.name}', f'-j{jobs}', f'CC={cc}',
                 'modules'],
                binds={d: inside, mdir: f'/cge-build/{mdir.name}'}, ro={d},
                check=False)
    out = r.stdout + r.stderr
    warnings = [ln for ln in out.splitlines() if WARNING.search(ln)]
    probes = next((ln for ln in out.splitlines()
                   if ln.startswith(f'{vmbuild.MODULE}: probes for ')), '')
    ok = r.returncode == 0 and (mdir / f'{vmbuild.MODULE}.ko').exists()
    version = t.pin.packages[f'linux-headers-{t.kver}']
    return Result(t.suite, t.series, t.kver, version, t.pinned, named, cc,
                  where, ok,
                  warnings, probes.split(': ', 2)[-1] if probes else '',
                  round(time.monotonic() - t0, 1),
                  '' if ok and not warnings
                  else '\n'.join(out.strip().splitlines()[-40:]))


def run_all(out=None):
    """Build every target; write the Results as JSON to out; return them."""
    results = []
    for t in targets():
        try:
            res = build(t)
        except kernels.KernelError as e:
            res = Result(t.suite, t.series, t.kver,
                         t.pin.packages.get(f'linux-headers-{t.kver}', '?'),
                         t.pinned, '', '', '', False, [], '', 0.0, str(e))
        log(f'{res.suite} {res.series}: {res.kver} '
            f'{"built" if res.built else "FAILED"} with {res.cc_used} '
            f'({res.where}) in {res.seconds} s, '
            f'{len(res.warnings)} warnings')
        results.append(res)
    if out:
        Path(out).parent.mkdir(parents=True, exist_ok=True)
        Path(out).write_text(json.dumps([asdict(r) for r in results],
                                        indent=1) + '\n')
    return results


def table(results):
    """The README's support table rows (markdown) from Results as dicts."""
    rows = ['| Suite | Headers series | Kernel | Debian version | Built with '
            '| Result |', '|---|---|---|---|---|---|']
    for r in results:
        cc = re.sub(r'^(x86_64-linux-gnu-)?', '', r['cc_used'])
        if cc != re.sub(r'^(x86_64-linux-gnu-)?', '', r['cc_named']):
            cc += f' (headers name {r["cc_named"]})'
        ok = (f'builds, {len(r["warnings"])} warnings' if r['built']
              else 'does not build')
        rows.append(f'| {r["suite"]} | `linux-headers-{r["series"]}` | '
                    f'{r["kver"]} | {r["version"]} | {cc} | {ok} |')
    return '\n'.join(rows) + '\n'


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--update', action='store_true',
                    help=f'pin the newest headers in {LOCK.name} '
                    '(runs apt-get update first)')
    ap.add_argument('--list', action='store_true',
                    help='print the pinned targets, build nothing')
    ap.add_argument('--json', help='write the results here')
    ap.add_argument('--table', metavar='JSON',
                    help="print the README's table of these results")
    a = ap.parse_args(argv)
    try:
        if a.update:
            update_lock()
            return 0
        if a.table:
            print(table(json.loads(Path(a.table).read_text())), end='')
            return 0
        if a.list:
            for t in targets():
                print(f'{t.name}\t{t.kver}\t{t.pin.version}')
            return 0
        results = run_all(a.json)
    except kernels.KernelError as e:
        print(f'sweep: error: {e}', file=sys.stderr)
        return 1
    return 0 if all(r.built and not r.warnings for r in results) else 1


if __name__ == '__main__':
    sys.exit(main())
