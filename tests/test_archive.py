# SPDX-License-Identifier: GPL-2.0
"""Debian's archives as the host's apt sources name them (tests/vm/archive.py):
apt itself reads fixture sources in both formats from a directory of the
test's own, so the host's sources do not matter."""
import subprocess
from pathlib import Path

import pytest

import need
from vm import archive, kernels, sid

REPO = Path(__file__).resolve().parents[1]
KEY = '/usr/share/keyrings/debian-archive-keyring.gpg'

# one-line format: [options], a comment, a deb-src entry
LIST = f"""\
# the archive, by its fastest mirror
deb [signed-by={KEY} arch=amd64] http://mirror.example/debian/ bookworm main
deb-src http://src.mirror.example/debian bookworm main
"""
# deb822: a disabled stanza (the first for bookworm), comments, the security
# archive, a third-party archive's alias suite
SOURCES = f"""\
Types: deb
URIs: http://old.mirror.example/debian
Suites: bookworm bookworm-updates
Components: main
Enabled: no

# the security archive
Types: deb
URIs: http://mirror.example/debian-security
Suites: bookworm-security
Components: main
Signed-By: {KEY}

Types: deb
URIs: http://vendor.example/apt
Suites: stable
Components: main
"""


@pytest.fixture(autouse=True)
def clean(monkeypatch):
    """apt asked afresh, and no override from the environment."""
    need.need('apt-get', 'apt')
    archive.find.cache_clear()
    for var in (archive.ENV_MAIN, archive.ENV_SECURITY, 'CGE_SID_MIRROR'):
        monkeypatch.delenv(var, raising=False)


def etc(tmp_path, files):
    """An apt configuration directory holding files ({relative path: text})."""
    d = tmp_path / 'etc'
    (d / 'sources.list.d').mkdir(parents=True)
    for name, text in files.items():
        (d / name).write_text(text)
    return d


def test_both_formats(tmp_path):
    d = etc(tmp_path, {'sources.list': LIST,
                       'sources.list.d/debian.sources': SOURCES})
    # apt's own order and rules: the disabled stanza does not count, nor
    # deb-src; the trailing / apt adds is left out
    assert archive.main_uri(d, 'bookworm') == 'http://mirror.example/debian'
    assert archive.security_uri(d, 'bookworm') == \
        'http://mirror.example/debian-security'


def test_updates_then_backports(tmp_path):
    # no deb entry for bookworm itself: -updates' archive before
    # -backports', whatever their order in the files
    d = etc(tmp_path, {'sources.list': (
        'deb http://bpo.mirror.example/debian bookworm-backports main\n'
        'deb http://upd.mirror.example/debian bookworm-updates main\n')})
    assert archive.main_uri(d, 'bookworm') == \
        'http://upd.mirror.example/debian'
    with pytest.raises(archive.ArchiveError, match='for trixie '):
        archive.main_uri(d, 'trixie')


def test_no_archive_names_the_files_read(tmp_path):
    # the only bookworm stanza is disabled; an alias suite is not Debian's
    d = etc(tmp_path, {'sources.list.d/debian.sources': SOURCES,
                       'sources.list.d/vendor.list':
                       'deb http://vendor.example/apt stable main\n',
                       'sources.list.d/old.list.disabled':
                       'deb http://mirror.example/debian bookworm main\n'})
    with pytest.raises(archive.ArchiveError) as e:
        archive.main_uri(d, 'bookworm')
    msg = str(e.value)
    assert "no deb source of Debian's archive for bookworm" in msg
    assert str(d / 'sources.list.d/debian.sources') in msg
    assert str(d / 'sources.list.d/vendor.list') in msg
    assert 'disabled' not in msg          # apt reads no such file
    assert 'set CGE_ARCHIVE' in msg


def test_no_security_archive(tmp_path):
    d = etc(tmp_path, {'sources.list': LIST})
    assert archive.main_uri(d, 'bookworm') == 'http://mirror.example/debian'
    with pytest.raises(archive.ArchiveError,
                       match='security archive for bookworm-security.*'
                       'set CGE_SECURITY_ARCHIVE'):
        archive.security_uri(d, 'bookworm')


def test_malformed_sources_are_apts_error(tmp_path):
    d = etc(tmp_path, {'sources.list.d/bad.sources': 'Types: deb\nURIs x\n'})
    with pytest.raises(archive.ArchiveError) as e:
        archive.main_uri(d, 'bookworm')
    assert str(e.value) == (
        'apt-get indextargets failed (100):\n'
        f'E: Unable to parse package file {d}/sources.list.d/bad.sources (1)\n'
        'E: The list of sources could not be read.')


def test_environment_comes_first(tmp_path, monkeypatch):
    d = etc(tmp_path, {})                  # no sources at all
    monkeypatch.setenv('CGE_ARCHIVE', 'http://a.example/debian')
    monkeypatch.setenv('CGE_SECURITY_ARCHIVE', 'http://s.example/security')
    assert archive.main_uri(d, 'bookworm') == 'http://a.example/debian'
    assert archive.security_uri(d, 'bookworm') == 'http://s.example/security'
    # sid.py's own override comes before CGE_ARCHIVE
    assert sid.mirror() == 'http://a.example/debian'
    monkeypatch.setenv('CGE_SID_MIRROR', 'http://sid.example/debian')
    assert sid.mirror() == 'http://sid.example/debian'


def test_codename_of_os_release(tmp_path):
    f = tmp_path / 'os-release'
    f.write_text('ID=debian\nVERSION_CODENAME="bookworm"\n')
    assert archive.codename([tmp_path / 'none', f]) == 'bookworm'
    f.write_text('ID=debian\n')
    assert archive.codename([f]) is None
    with pytest.raises(archive.ArchiveError, match='no VERSION_CODENAME'):
        archive.find(tmp_path, None)


def test_old_release_apt_without_an_archive_is_a_kernel_error(
        tmp_path, monkeypatch):
    # the host's sources replaced by none at all
    monkeypatch.setenv('CGE_CACHE', str(tmp_path / 'cache'))
    d, find = etc(tmp_path, {}), archive.find.__wrapped__
    monkeypatch.setattr(archive, 'find', lambda *_: find(d, 'bookworm'))
    with pytest.raises(kernels.KernelError, match='^the bullseye apt: no deb'):
        kernels.OLD['5.10'].lists()


def test_cli(tmp_path):
    d = etc(tmp_path, {'sources.list': LIST,
                       'sources.list.d/debian.sources': SOURCES})
    cmd = ['/usr/bin/python3', str(REPO / 'tests/vm/archive.py'),
           '--etc', str(d), '--codename', 'bookworm']
    env = {'PATH': '/usr/bin:/bin'}
    for opt, want in (('--main', 'http://mirror.example/debian'),
                      ('--security', 'http://mirror.example/debian-security')):
        r = subprocess.run([*cmd, opt], capture_output=True, text=True,
                           env=env)
        assert (r.returncode, r.stdout, r.stderr) == (0, want + '\n', '')
    r = subprocess.run([*cmd[:-1], 'trixie'], capture_output=True, text=True,
                       env=env)
    assert r.returncode == 1 and r.stdout == ''
    assert r.stderr.startswith("archive: no deb source of Debian's archive "
                               'for trixie')
