# SPDX-License-Identifier: GPL-2.0
"""Host tests of the kernel pins (tests/vm/kernels.lock): the lock file, the
choice between pin, cache and archive, with a fake apt (no archive needed)."""
import json
import os
import re
import subprocess
import tempfile
import time
from pathlib import Path

import pytest

from vm import kernels, pins, sid

# flavour -> (its Apt, the meta package newest() reads, what it depends on)
SERIES = {
    '5.10': (kernels.OLD['5.10'], 'linux-image-amd64',
             'linux-image-5.10.0-99-amd64'),
    '6.1': (kernels.HOST, 'linux-image-amd64', 'linux-image-6.1.0-99-amd64'),
    'sid': (sid.APT_SID, 'linux-headers-amd64',
            'linux-headers-9.9.9+deb14-amd64'),
    'experimental': (sid.APTS['experimental'], 'linux-headers-amd64',
                     'linux-headers-9.10-amd64'),
}


class FakeApt:
    """apt-cache over a dict {package: [versions]}; counts apt-get update."""

    def __init__(self, archive, depends, age=0.0, suite='experimental'):
        self.archive, self.deps, self.age, self.updates = archive, depends, age, 0
        self.suite = suite
        self.asked = []

    def query(self, cmd, *args):
        self.asked.append((cmd, *args))
        if cmd == 'madison':
            return ''.join(f'{n} | {v} | fake {self.suite}/main amd64 '
                           'Packages\n' for n in args
                           for v in self.archive.get(n, ()))
        if cmd == 'show':                   # --no-all-versions NAME...
            return ''.join(f'Package: {n}\nVersion: {self.archive[n][-1]}\n\n'
                           for n in args[1:] if n in self.archive)
        if cmd == 'depends':
            return ''.join(f'  Depends: {d}\n' for d in self.deps.get(args[0], ()))
        raise AssertionError(f'unexpected apt-cache {cmd} {args}')

    def install(self, monkeypatch, apt):
        def update(strict=False):
            self.updates += 1
            apt.updated = True
        monkeypatch.setattr(apt, 'query', self.query)
        monkeypatch.setattr(apt, 'update', update)
        monkeypatch.setattr(apt, 'age', lambda: self.age)
        monkeypatch.setattr(apt, 'updated', False)


class NoApt:
    def query(self, *args):
        raise AssertionError(f'apt asked: {args}')


MIRROR = 'http://mirror.example/debian'
SECURITY = 'http://mirror.example/debian-security'


@pytest.fixture(autouse=True)
def fresh(monkeypatch, tmp_path):
    """An empty cache, no choice remembered from an earlier test, and
    Debian's archives where the host's apt sources do not matter."""
    monkeypatch.setenv('CGE_CACHE', str(tmp_path / 'cache'))
    monkeypatch.setattr(kernels, '_chosen', {})
    monkeypatch.setenv('CGE_ARCHIVE', MIRROR)
    monkeypatch.setenv('CGE_SECURITY_ARCHIVE', SECURITY)
    monkeypatch.delenv('CGE_SID_MIRROR', raising=False)


def _pin(flavour):
    return pins.read()[flavour]


def _archive(pin):
    return {n: [v] for n, v in pin.packages.items()}


def _cache(flavour, kver, version=None):
    """Put kver in the cache as fetch() leaves it (sid: headers in the
    chroot): the packages of the flavour's pin, at version if given."""
    pin = _pin(flavour)
    versions = {n.replace(pin.kver, kver): version or v
                for n, v in pin.packages.items()}
    headers = f'linux-headers-{kver}'
    debs = [f'{n}_{v}_amd64.deb' for n, v in versions.items()
            if flavour not in kernels.CHROOT_FLAVOURS or n != headers]
    d = kernels.kernels_dir() / kver
    d.mkdir(parents=True)
    (d / 'meta.json').write_text(json.dumps({'kver': kver, 'debs': debs}))
    if flavour in kernels.CHROOT_FLAVOURS:
        (sid.chroot_dir() / 'usr/src' / headers).mkdir(parents=True)
        (sid.chroot_dir() / 'usr/src' / headers / 'Makefile').touch()
        (sid.chroot_dir() / 'var/lib/dpkg').mkdir(parents=True)
        (sid.chroot_dir() / 'var/lib/dpkg/status').write_text(
            f'Package: {headers}\nStatus: install ok installed\n'
            f'Version: {versions[headers]}\n\n')


def test_lock_names_every_flavour():
    lock = pins.read()
    assert sorted(lock) == sorted(kernels.FLAVOURS)
    for flavour, pin in lock.items():
        names = set(pin.packages)
        assert names & {f'linux-image-{pin.kver}', f'linux-binary-{pin.kver}'}, flavour
        assert f'linux-headers-{pin.kver}' in names, flavour
        assert all(re.fullmatch(r'[0-9][\w.+:~-]*', v) for v in pin.packages.values())


def test_old_release_apt_has_its_own_sources_and_lists(monkeypatch):
    # bullseye's packages come from its own sources list, lists and archive
    # cache in CGE_CACHE, never from the host's apt state
    ran = []
    monkeypatch.setattr(kernels, '_run', lambda cmd, cwd=None: ran.append(cmd))
    apt = kernels.apt_of('5.10')
    assert apt is not kernels.HOST and kernels.apt_of('6.1') is kernels.HOST
    apt.run(['apt-cache', 'policy', 'linux-image-amd64'])
    d = kernels.cache_dir() / 'apt-bullseye'
    assert ran == [['apt-cache',
                    '-o', f'Dir::Etc::SourceList={d / "sources.list"}',
                    '-o', 'Dir::Etc::SourceParts=/dev/null',
                    '-o', f'Dir::State::Lists={d / "lists"}',
                    '-o', f'Dir::Cache={d}',
                    '-o', f'Dir::State::status={d / "status"}',
                    'policy', 'linux-image-amd64']]
    k = '[signed-by=/usr/share/keyrings/debian-archive-keyring.gpg]'
    # the archives' URIs are those archive.py finds (here CGE_ARCHIVE and
    # CGE_SECURITY_ARCHIVE, from fresh())
    assert (d / 'sources.list').read_text() == (
        f'deb {k} {MIRROR} bullseye main\n'
        f'deb {k} {SECURITY} bullseye-security main\n')
    assert (d / 'status').read_text() == ''
    assert apt.lists() == d / 'lists' and apt.stamp().parent == d


def test_lock_round_trip(tmp_path):
    lock = pins.read()
    pins.write(lock, tmp_path / 'k.lock')
    assert pins.read(tmp_path / 'k.lock') == lock
    assert (tmp_path / 'k.lock').read_text() == pins.LOCK.read_text()


@pytest.mark.parametrize('flavour', SERIES)
def test_pinned_from_archive(monkeypatch, capsys, flavour):
    apt = SERIES[flavour][0]
    fake = FakeApt(_archive(_pin(flavour)), {})
    fake.install(monkeypatch, apt)
    assert kernels._choice(flavour) == (_pin(flavour).kver, _pin(flavour))
    assert kernels.resolve(flavour) == _pin(flavour).kver
    assert fake.updates == 0 and capsys.readouterr().err == ''


@pytest.mark.parametrize('flavour', SERIES)
def test_pinned_in_cache_asks_no_apt(monkeypatch, capsys, flavour):
    apt = SERIES[flavour][0]
    monkeypatch.setattr(apt, 'query', NoApt().query)
    monkeypatch.setattr(apt, 'update', NoApt().query)
    _cache(flavour, _pin(flavour).kver)
    assert kernels.resolve(flavour) == _pin(flavour).kver
    assert capsys.readouterr().err == ''


@pytest.mark.parametrize('flavour', SERIES)
def test_gone_pin_falls_back_to_newest(monkeypatch, capsys, flavour):
    apt, meta, dep = SERIES[flavour]
    newest = dep.removeprefix('linux-image-').removeprefix('linux-headers-')
    fake = FakeApt({dep: ['1.0']}, {meta: [dep]})
    fake.install(monkeypatch, apt)
    kver, pin = kernels._choice(flavour)
    assert (kver, pin) == (newest, None)
    assert fake.updates == 1, 'the lists lacked the pin: one apt-get update'
    err = capsys.readouterr().err
    assert err == (f'kernels: {flavour}: pinned {_pin(flavour).kver} '
                   f'({_pin(flavour).version}) is no longer in the archive; '
                   f'using {newest} (make kernels-update pins it)\n')
    assert kernels.resolve(flavour) == newest and capsys.readouterr().err == ''


def test_gone_pin_falls_back_for_non_root(monkeypatch, capsys):
    """Not root: the lists cannot be refreshed, which is one line; the
    fallback to the newest works as for root."""
    apt, meta, dep = SERIES['6.1']
    fake = FakeApt({dep: ['1.0']}, {meta: [dep]})
    fake.install(monkeypatch, apt)
    monkeypatch.setattr(apt, 'update', kernels.Apt.update.__get__(apt))
    monkeypatch.setattr(kernels.os, 'geteuid', lambda: 1000)
    kver, pin = kernels._choice('6.1')
    assert pin is None and kver == dep.removeprefix('linux-image-')
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 2, err
    assert 'only root can run it; going on with the lists as they are' \
        in err[0]
    assert 'is no longer in the archive' in err[1]


def test_newest_in_cache_is_not_the_pin(monkeypatch):
    """A cached kernel other than the pin does not stop the pin's lookup."""
    _cache('6.1', '6.1.0-1-amd64')
    fake = FakeApt(_archive(_pin('6.1')), {})
    fake.install(monkeypatch, kernels.HOST)
    assert kernels.resolve('6.1') == _pin('6.1').kver


@pytest.mark.parametrize('age, updates', [(7 * 3600, 1), (3600, 0)])
def test_stale_lists_are_refreshed(monkeypatch, age, updates):
    fake = FakeApt(_archive(_pin('6.1')), {}, age=age)
    fake.install(monkeypatch, kernels.HOST)
    monkeypatch.setattr(kernels.os, 'geteuid', lambda: 0)
    assert kernels.resolve('6.1') == _pin('6.1').kver
    assert fake.updates == updates


def test_no_kernel_anywhere_is_an_error(monkeypatch):
    FakeApt({}, {}).install(monkeypatch, kernels.HOST)
    with pytest.raises(kernels.KernelError, match='cannot resolve flavour 6.1'):
        kernels.resolve('6.1')


def test_lists_age_counts_our_stamp(monkeypatch, tmp_path):
    apt = kernels.Apt()
    monkeypatch.setattr(apt, 'lists', lambda: tmp_path / 'nolists')
    assert apt.age() == float('inf')
    apt.stamp().touch()
    assert apt.age() < 60


def test_update_pins_the_newest(monkeypatch, tmp_path):
    kver = '6.1.0-99-amd64'
    fake = FakeApt({f'linux-image-{kver}': ['6.1.999-1'],
                    f'linux-headers-{kver}': ['6.1.999-1'],
                    'linux-kbuild-6.1': ['6.1.998-1', '6.1.999-1']},
                   {'linux-image-amd64': [f'linux-image-{kver}'],
                    f'linux-headers-{kver}': ['linux-kbuild-6.1', 'gcc-12']})
    fake.install(monkeypatch, kernels.HOST)
    other = _pin('6.12')
    monkeypatch.setattr(pins, 'LOCK', tmp_path / 'kernels.lock')
    pins.write({'6.12': other})
    kernels.update_lock(['6.1'])
    assert fake.updates == 1, 'kernels-update runs apt-get update first'
    assert pins.read() == {
        '6.12': other,
        '6.1': pins.Pin(kver, {f'linux-image-{kver}': '6.1.999-1',
                               f'linux-headers-{kver}': '6.1.999-1',
                               'linux-kbuild-6.1': '6.1.999-1'})}


def test_update_refuses_unpinned_flavours():
    with pytest.raises(kernels.KernelError, match="'debug' is not pinned"):
        kernels.update_lock(['debug'])


@pytest.mark.parametrize('text, says', [
    ('[6.1]\nlinux-image-6.1.0-57-amd64 = 6.1.192-3\n', r'\[6.1\] has no kver'),
    ('kver = 6.1.0-57-amd64\n', 'no section headers'),
])
def test_malformed_lock_is_a_kernel_error(tmp_path, text, says):
    lock = tmp_path / 'kernels.lock'
    lock.write_text(text)
    with pytest.raises(kernels.KernelError, match=f'^{re.escape(str(lock))}: .*{says}'):
        pins.read(lock)


def test_lists_age_is_when_apt_wrote_them(monkeypatch, tmp_path):
    """apt dates a list file with the server's Last-Modified: a list fetched
    just now from a mirror pushed 5 h ago is fresh, not 5 h old."""
    apt = kernels.Apt()
    monkeypatch.setattr(apt, 'lists', lambda: tmp_path)
    packages = tmp_path / 'mirror.example_debian_dists_bookworm_main_binary-amd64_Packages.lz4'
    packages.touch()
    os.utime(packages, (time.time() - 5 * 3600,) * 2)
    assert apt.age() < 60


class AptGet:
    """A fake Apt.run for apt-get: each call takes the next (exit status,
    stderr) of results, the last one for good."""
    LOCKED = (100, 'E: Could not get lock /var/lib/apt/lists/lock. It is held '
              'by process 4242 (apt-get)\nE: Unable to lock directory '
              '/var/lib/apt/lists/\n')

    def __init__(self, *results):
        self.results, self.calls = list(results), []

    def __call__(self, argv, cwd=None):
        self.calls.append(argv)
        rc, err = self.results.pop(0) if len(self.results) > 1 else self.results[0]
        return subprocess.CompletedProcess(argv, rc, '', err)


def _real_update(monkeypatch, *results, age=7 * 3600):
    """kernels.HOST with apt-get faked: runs as root, lists `age` s old."""
    apt_get = AptGet(*results)
    monkeypatch.setattr(kernels.HOST, 'run', apt_get)
    monkeypatch.setattr(kernels.HOST, 'updated', False)
    monkeypatch.setattr(kernels.HOST, 'age', lambda: age)
    monkeypatch.setattr(kernels.os, 'geteuid', lambda: 0)
    monkeypatch.setattr(kernels, 'LISTS_LOCK_POLL', 0)
    return apt_get


def test_failed_update_is_an_error_for_kernels_update(monkeypatch):
    _real_update(monkeypatch, (100, 'E: The repository x no longer has a Release file.\n'))
    with pytest.raises(kernels.KernelError,
                       match='apt-get update failed in the host:\nE: The repository x'):
        kernels.archive_newest('6.1', kernels.HOST, lambda: '6.1.0-99-amd64')
    assert not kernels.HOST.stamp().exists()


def test_failed_stale_refresh_goes_on_with_the_lists(monkeypatch, capsys):
    apt_get = _real_update(monkeypatch, (100, 'W: x\nE: Release file expired\n'))
    monkeypatch.setattr(kernels.HOST, 'query', FakeApt(_archive(_pin('6.1')), {}).query)
    assert kernels.resolve('6.1') == _pin('6.1').kver
    assert len(apt_get.calls) == 1 and not kernels.HOST.stamp().exists()
    assert capsys.readouterr().err == (
        'kernels: running apt-get update in the host\n'
        'kernels: apt-get update failed in the host (E: Release file expired); '
        'going on with the lists as they are\n')


def test_update_waits_for_the_lists_lock(monkeypatch, capsys):
    apt_get = _real_update(monkeypatch, AptGet.LOCKED, AptGet.LOCKED, (0, ''))
    kernels.HOST.update(strict=True)
    assert len(apt_get.calls) == 3 and kernels.HOST.stamp().exists()
    assert 'waiting up to 120 s' in capsys.readouterr().err


def test_update_gives_up_on_a_held_lists_lock(monkeypatch):
    apt_get = _real_update(monkeypatch, AptGet.LOCKED)
    monkeypatch.setattr(kernels, 'LISTS_LOCK_WAIT', 0.05)
    monkeypatch.setattr(kernels, 'LISTS_LOCK_POLL', 0.01)
    with pytest.raises(kernels.KernelError, match='Could not get lock'):
        kernels.HOST.update(strict=True)
    assert len(apt_get.calls) > 1 and not kernels.HOST.stamp().exists()


def test_download_as_non_root_says_update_needs_root(monkeypatch, tmp_path):
    monkeypatch.setattr(kernels.HOST, 'run', AptGet((100, 'E: 404 Not Found\n')))
    monkeypatch.setattr(kernels.os, 'geteuid', lambda: 1000)
    with pytest.raises(kernels.KernelError,
                       match='apt-get update needs root\\):\nE: 404 Not Found'):
        kernels.HOST.download(['linux-image-6.1.0-57-amd64=6.1.192-3'], tmp_path)


@pytest.mark.parametrize('flavour', SERIES)
def test_cache_of_other_versions_asks_apt(monkeypatch, flavour):
    """A cached kver unpacked from other package versions is not the pin."""
    pin = _pin(flavour)
    _cache(flavour, pin.kver, version='0.0-1')
    fake = FakeApt(_archive(pin), {})
    fake.install(monkeypatch, SERIES[flavour][0])
    assert kernels._choice(flavour) == (pin.kver, pin)
    assert fake.asked, 'the pin was looked up in the apt lists'


def _fake_unpack_tools(monkeypatch, pin):
    """dpkg-deb -x and depmod faked: the .debs of pin 'unpack'."""
    debs = [f'{n}_{v}_amd64.deb' for n, v in pin.packages.items()]
    monkeypatch.setattr(kernels, '_unpack_debs', lambda d, root: debs)
    monkeypatch.setattr(kernels, '_run', lambda cmd, cwd=None:
                        subprocess.CompletedProcess(cmd, 0, '', ''))


def test_cache_of_other_versions_is_fetched_again(monkeypatch, capsys):
    pin = _pin('6.1')
    _cache('6.1', pin.kver, version='6.1.192-2')
    _fake_unpack_tools(monkeypatch, pin)
    got = []
    kernels.unpack(pin.kver, lambda tmp: got.append(tmp) or tmp,
                   lambda root: None, pin.packages)
    assert got and kernels.cached(pin.kver, pin.packages)
    assert capsys.readouterr().err.startswith(
        f'kernels: {pin.kver}: the cache holds linux-image-{pin.kver} '
        f'6.1.192-2 (pinned {pin.version}), ')


def test_sid_headers_of_other_version_are_replaced(monkeypatch, capsys):
    pin = _pin('sid')
    _cache('sid', pin.kver, version='0.0-1')
    calls = []
    monkeypatch.setattr(sid, 'run_in_chroot',
                        lambda argv, check=True: calls.append(tuple(argv))
                        or subprocess.CompletedProcess(argv, 0, '', ''))
    sid.install_headers(pin.kver, pin)
    spec = f'linux-headers-{pin.kver}={pin.packages[f"linux-headers-{pin.kver}"]}'
    # dpkg first finishes what an interrupted install left
    assert calls == [('dpkg', '--configure', '-a'),
                     (*sid.APT, 'install', '--allow-downgrades', spec)]
    assert capsys.readouterr().err == (f'sid: installing {spec} in the sid '
                                       'chroot (replacing 0.0-1)\n')


def test_pin_gone_before_download_falls_back(monkeypatch, tmp_path, capsys):
    """The lists name the pin, but the archive dropped it since: apt-get
    download fails, and the newest of the series is fetched instead."""
    pin, kver = _pin('6.1'), '6.1.0-99-amd64'
    FakeApt({**_archive(pin), f'linux-image-{kver}': ['6.1.999-1']},
            {'linux-image-amd64': [f'linux-image-{kver}'],
             f'linux-headers-{kver}': ['linux-kbuild-6.1']}
            ).install(monkeypatch, kernels.HOST)
    gone = "E: Can't find a source to download version '6.1.192-3'\n"
    apt_get = AptGet((100, gone), (100, gone), (0, ''))
    monkeypatch.setattr(kernels.HOST, 'run', apt_get)
    monkeypatch.setattr(kernels.os, 'geteuid', lambda: 0)

    def unpack(kver, get_debs, finish, want=None):
        get_debs(Path(tempfile.mkdtemp(dir=tmp_path)))
        return kernels.kernels_dir() / kver
    monkeypatch.setattr(kernels, 'unpack', unpack)
    assert kernels.kernel('6.1').kver == kver
    assert apt_get.calls[-1][-3:] == [f'linux-image-{kver}',
                                      f'linux-headers-{kver}', 'linux-kbuild-6.1']
    assert capsys.readouterr().err.splitlines()[1:] == [
        f'kernels: 6.1: pinned {pin.kver} ({pin.version}) is no longer in the '
        f'archive ({gone.strip()}); using {kver} (make kernels-update pins it)',
        f'kernels: fetching linux-image-{kver} linux-headers-{kver} linux-kbuild-6.1']
    assert kernels.resolve('6.1') == kver


def test_fallback_to_the_last_used_is_one_line(monkeypatch, capsys):
    FakeApt({}, {}).install(monkeypatch, kernels.HOST)
    (kernels.kernels_dir() / '6.1.kver').write_text('6.1.0-1-amd64\n')
    assert kernels.resolve('6.1') == '6.1.0-1-amd64'
    assert capsys.readouterr().err == (
        f'kernels: 6.1: pinned {_pin("6.1").kver} ({_pin("6.1").version}) is '
        'no longer in the archive, and the apt lists of the host name no '
        'kernel of it; using the last one used, 6.1.0-1-amd64\n')


def test_sid_pin_gone_before_download_falls_back(monkeypatch, capsys):
    apt, meta, dep = SERIES['sid']
    kver = dep.removeprefix('linux-headers-')
    FakeApt({**_archive(_pin('sid')), dep: ['9.9.9-1']},
            {meta: [dep]}).install(monkeypatch, apt)

    def fetch_image(kver, pin, apt):
        if pin:
            raise kernels.DownloadError('apt-get download failed:\nE: 404 Not Found')
        return kernels.kernels_dir() / kver
    monkeypatch.setattr(sid, 'fetch_image', fetch_image)
    monkeypatch.setattr(sid, 'install_headers', lambda kver, pin: None)
    assert sid.kernel().kver == kver
    assert capsys.readouterr().err.endswith(
        f'is no longer in the archive (E: 404 Not Found); using {kver} '
        '(make kernels-update pins it)\n')


def test_experimental_asks_the_chroot_apt_for_its_suite(monkeypatch):
    """One chroot and one set of apt lists for sid and experimental: the
    sources name both, and only experimental's queries make it the default
    release (its Release file says NotAutomatic)."""
    ch = sid.chroot_dir()
    (ch / 'etc/apt').mkdir(parents=True)
    (ch / 'etc/apt/sources.list').write_text(f'deb {MIRROR} sid main\n')
    sid.APT_SID.stamp().touch()
    (ch / 'var/lib/apt/lists').mkdir(parents=True)
    (ch / 'var/lib/apt/lists/x_sid_main_binary-amd64_Packages').touch()
    assert sid.APT_SID.age() < 60
    ran = []
    monkeypatch.setattr(sid, 'make_chroot', lambda: ch)
    monkeypatch.setattr(sid, 'run_in_chroot',
                        lambda argv, cwd=None, check=True: ran.append(argv))
    sid.APTS['experimental'].run(['apt-cache', 'depends', 'linux-headers-amd64'])
    sid.APT_SID.run(['apt-cache', 'depends', 'linux-headers-amd64'])
    assert ran == [['apt-cache', '-o', 'APT::Default-Release=experimental',
                    'depends', 'linux-headers-amd64'],
                   ['apt-cache', 'depends', 'linux-headers-amd64']]
    assert (ch / 'etc/apt/sources.list').read_text() == (
        f'deb {MIRROR} sid main\ndeb {MIRROR} experimental main\n')
    # the lists lack the new suite: the next query finds them stale
    assert sid.APT_SID.age() == float('inf')
    assert kernels.FLAVOURS['experimental'] and \
        set(kernels.CHROOT_FLAVOURS) == set(sid.SUITES)


@pytest.mark.parametrize('suite, want', [('experimental', '7.3-amd64'),
                                         ('sid', None)])
def test_experimental_is_not_sids_kernel(monkeypatch, capsys, suite, want):
    """With experimental's default release, apt answers for a meta package
    experimental does not have with sid's: that is no experimental kernel."""
    FakeApt({'linux-headers-7.3-amd64': ['7.3-1']},
            {'linux-headers-amd64': ['linux-headers-7.3-amd64']},
            suite=suite).install(monkeypatch, sid.APTS['experimental'])
    assert sid.newest('experimental') == want
    assert capsys.readouterr().err == ('' if want else
        'sid: experimental: linux-headers-amd64 leads to '
        'linux-headers-7.3-amd64, which is not from experimental\n')


def test_headers_wrapper_made_relative(tmp_path):
    """Debian 14's wrapper Makefile names /usr/src twice; after the fix-up
    its KBUILD_OUTPUT is the wrapper's own directory wherever the tree is
    unpacked, also where it is used after other makefiles were read."""
    kver = '7.2.1+deb14-amd64'
    src = tmp_path / 'root/usr/src'
    # the common Makefile reads one from its scripts/ before it uses
    # KBUILD_OUTPUT, as Kbuild's does: a recursive variable would then
    # resolve against scripts/'s parent and name no directory
    (src / 'linux-headers-7.2.1+deb14-common/scripts').mkdir(parents=True)
    (src / 'linux-headers-7.2.1+deb14-common/scripts/Kbuild.include'
     ).write_text('X := 1\n')
    (src / 'linux-headers-7.2.1+deb14-common/Makefile').write_text(
        'include $(dir $(lastword $(MAKEFILE_LIST)))scripts/Kbuild.include\n'
        'all:\n\t@echo "OUT=$(realpath $(KBUILD_OUTPUT))"\n')
    kdir = src / f'linux-headers-{kver}'
    (kdir / 'scripts').mkdir(parents=True)
    (kdir / 'Makefile').write_text(
        f'KBUILD_OUTPUT=/usr/src/linux-headers-{kver}\n'
        'include /usr/src/linux-headers-7.2.1+deb14-common/Makefile\n')
    kernels._fix_headers(tmp_path / 'root', kver)
    assert '/usr/src/' not in (kdir / 'Makefile').read_text()
    # an outer make (make -C repo check) exports MAKEFLAGS with -w: the
    # nested make would then print its "Entering directory" lines
    env = {k: v for k, v in os.environ.items()
           if k not in ('MAKEFLAGS', 'MAKELEVEL', 'MFLAGS')}
    r = subprocess.run(['make', '-s', '--no-print-directory', '-C', str(kdir)],
                       capture_output=True, text=True, check=True, env=env)
    assert r.stdout.strip() == f'OUT={kdir.resolve()}'


def test_headers_wrapper_naming_usr_src_otherwise_is_refused(tmp_path):
    kdir = tmp_path / 'root/usr/src/linux-headers-1.0-amd64'
    (kdir / 'scripts').mkdir(parents=True)
    (kdir / 'Makefile').write_text('export O = /usr/src/elsewhere\n')
    with pytest.raises(kernels.KernelError, match='still names /usr/src/'):
        kernels._fix_headers(tmp_path / 'root', '1.0-amd64')
