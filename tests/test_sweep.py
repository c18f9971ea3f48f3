# SPDX-License-Identifier: GPL-2.0
"""The compile sweep (tests/vm/sweep.py): the module builds with no warning
against every amd64 headers series of Debian's suites, bullseye to
experimental, pinned in tests/vm/sweep.lock; the README's support table lists
them.  The sweep itself is marked `sweep` (make check runs it beside the vm
stage); the rest are quick host tests."""
import json
import re
from pathlib import Path

import pytest

from vm import kernels, pins, sweep

REPO = Path(__file__).resolve().parents[1]
RESULTS = REPO / '.build/sweep/results.json'


@pytest.mark.sweep
def test_every_packaged_kernel_builds_warning_free():
    results = sweep.run_all(RESULTS)
    lock = pins.read(sweep.LOCK)
    bad = [f'{r.suite} {r.series} {r.kver}: '
           + ('build failed' if not r.built else f'{len(r.warnings)} warnings')
           + f'\n{r.log_tail}' for r in results if not r.built or r.warnings]
    assert not bad, '\n\n'.join(bad)
    # every probe of kmod/probes.mk decided, in every build
    names = re.search(r'^CGE_PROBES := ((?:.*\\\n)*.*)$',
                      (REPO / 'kmod/probes.mk').read_text(), re.M)[1]
    want = set(names.replace('\\', ' ').split())
    for r in results:
        got = dict(f.split('=') for f in r.probes.split())
        assert set(got) == want and set(got.values()) <= {'0', '1'}, r
        pin = lock[f'{r.suite} {r.series}']
        # a pin that left the archive gives way to the newest: the build
        # ran, but the lock (and the README's table) needs make
        # kernels-update
        assert r.pinned and (r.kver, r.version) == (
            pin.kver, pin.packages[f'linux-headers-{pin.kver}']), \
            f'{r.suite} {r.series}: the pin gave way to {r.kver} {r.version}'


def test_lock_covers_every_suite_and_flavour():
    lock = pins.read(sweep.LOCK)
    suites = {name.split(' ', 1)[0] for name in lock}
    assert suites == set(sweep.SUITES)
    for suite in sweep.SUITES:
        flavours = {re.sub(r'^\d+\.\d+-', '', name.split(' ', 1)[1])
                    for name in lock if name.startswith(f'{suite} ')}
        assert flavours == {'amd64', 'cloud-amd64', 'rt-amd64'}, suite
    for name, pin in lock.items():
        assert f'linux-headers-{pin.kver}' in pin.packages, name
        assert any(n.startswith('linux-kbuild-') for n in pin.packages), name
        assert any(re.fullmatch(r'linux-headers-\S+-common(-rt)?', n)
                   for n in pin.packages), name


def test_readme_support_table_is_the_results():
    """The README's support table is tests/results/sweep.json's."""
    text = (REPO / 'README.md').read_text()
    table = text[text.index('<!-- sweep table -->\n') + 21:
                 text.index('<!-- end of sweep table -->')]
    got = json.loads((REPO / 'tests/results/sweep.json').read_text())
    assert table == sweep.table(got)


def test_results_committed_are_the_lock():
    """tests/results/sweep.json, the results the README's table quotes,
    were made from exactly the headers now pinned, every one built with no
    warning."""
    got = json.loads((REPO / 'tests/results/sweep.json').read_text())
    lock = pins.read(sweep.LOCK)
    assert {(r['suite'] + ' ' + r['series'], r['kver'], r['version'])
            for r in got if r['pinned']} == \
        {(name, pin.kver, pin.packages[f'linux-headers-{pin.kver}'])
         for name, pin in lock.items()}
    assert len(got) == len(lock)
    assert all(r['built'] and not r['warnings'] for r in got)


@pytest.mark.parametrize('text, want', [
    ('CONFIG_CC_VERSION_TEXT="gcc-10 (Debian 10.2.1-6) 10.2.1 20210110"',
     ('gcc-10', 'gcc-12', 10)),
    ('CONFIG_CC_VERSION_TEXT=gcc-12 (Debian 12.2.0-14+deb12u1) 12.2.0',
     ('gcc-12', 'gcc-12', 12)),
    ('CONFIG_CC_VERSION_TEXT=x86_64-linux-gnu-gcc-14 (Debian 14.2.0-19) '
     '14.2.0', ('x86_64-linux-gnu-gcc-14', 'x86_64-linux-gnu-gcc-14', 14)),
])
def test_compiler_is_the_one_the_headers_name(tmp_path, text, want):
    (tmp_path / 'include/config').mkdir(parents=True)
    (tmp_path / 'include/config/auto.conf').write_text(f'X=1\n{text}\n')
    assert sweep.compiler(tmp_path) == want


class Apt:
    """apt-cache pkgnames and depends over a dict."""
    where = 'a fake apt'

    def __init__(self, deps):
        self.deps = deps

    def refresh_if_stale(self):
        pass

    def update(self, strict=False):
        pass

    def query(self, cmd, *args):
        assert cmd == 'pkgnames', cmd
        return '\n'.join(self.deps) + '\n'

    def depends(self, pkg):
        return self.deps[pkg]


def test_series_of_a_suite(monkeypatch):
    """Metas name their kernel's headers; experimental's metas point at a
    release candidate whose own package is a series name too: that package
    is the series; -common and the kernels' headers are not series."""
    monkeypatch.setitem(sweep.SUITES, 'x', Apt({
        'linux-headers-amd64': ['linux-base-amd64', 'linux-headers-7.3-amd64'],
        'linux-headers-rt-amd64': ['linux-headers-7.3-rt-amd64'],
        'linux-headers-7.3-amd64': ['<gcc-16-for-host>', 'linux-kbuild-7.3',
                                    'linux-headers-7.3-common'],
        'linux-headers-7.3-rt-amd64': ['linux-kbuild-7.3',
                                       'linux-headers-7.3-common'],
        'linux-headers-7.3-common': [],
        'linux-headers-6.12-amd64': ['linux-headers-6.12.117+deb12-amd64'],
        'linux-headers-6.12.117+deb12-amd64': ['linux-kbuild-6.12.117+deb12'],
    }))
    assert sweep.series('x') == {'7.3-amd64': '7.3-amd64',
                                 '7.3-rt-amd64': '7.3-rt-amd64',
                                 '6.12-amd64': '6.12.117+deb12-amd64'}


def test_unknown_suite_in_the_lock_is_an_error(monkeypatch, tmp_path):
    lock = tmp_path / 'sweep.lock'
    pins.write({'hamm amd64': pins.Pin('2.0.0', {'linux-headers-2.0.0': '1'})},
               lock, sweep.HEADER)
    monkeypatch.setattr(sweep, 'LOCK', lock)
    with pytest.raises(kernels.KernelError, match=r'\[hamm amd64\]: unknown suite'):
        sweep.targets()


def test_pin_gone_gives_way_to_the_newest_at_exact_versions(monkeypatch,
                                                             tmp_path):
    """A pin the archive no longer serves: the series' newest, pinned now
    at exact versions (so no cached tree of another revision passes for
    it), and the Result says it was not the lock's."""
    monkeypatch.setenv('CGE_CACHE', str(tmp_path))
    old = pins.Pin('7.2.1-amd64', {'linux-headers-7.2.1-amd64': '7.2.1-1',
                                   'linux-kbuild-7.2': '7.2.1-1'})
    new = pins.Pin('7.2.2-amd64', {'linux-headers-7.2.2-amd64': '7.2.2-1',
                                   'linux-kbuild-7.2': '7.2.2-1'})
    t = sweep.Target('sid', 'amd64', old.kver, old)
    fetched = []

    def _fetch(target):
        fetched.append(target.pin)
        if target.pin == old:
            raise kernels.DownloadError('E: 404 Not Found')
        return tmp_path
    monkeypatch.setattr(sweep, '_fetch', _fetch)
    monkeypatch.setattr(sweep, 'series', lambda suite: {'amd64': new.kver})
    monkeypatch.setattr(sweep, 'headers_packages',
                        lambda apt, kver: list(new.packages))
    monkeypatch.setattr(kernels, 'pin_of', lambda apt, kver, names: new)
    assert sweep.fetch(t) == tmp_path
    assert fetched == [old, new]
    assert (t.kver, t.pin, t.pinned) == (new.kver, new, False)
