# SPDX-License-Identifier: GPL-2.0
"""The Debian packages: one version everywhere, `make deb` (a copy of the
tree, nothing written into it) builds cgroup-energy-dkms and energystat,
lintian passes, the dkms package holds the module's DKMS sources and the
maintainer scripts of dh_dkms, the energystat package the files of
`make install`, with the exporter's accounts made by dh_installsysusers'
script and its service installed but not enabled. Installing them on a booted Debian 12 server, with its
reboots and a purge, is tests/test_server.py."""
import re
import subprocess
from pathlib import Path

import pytest

import need
from versions import (changelog_version, cge_version, conf_value,
                      dkms_sources, man_version)

REPO = Path(__file__).resolve().parents[1]
DKMS_PKG = 'cgroup-energy-dkms'
TOOL_PKG = 'energystat'
# The lines of a maintainer script that are not a debhelper section.
SCRIPT_HEAD = ['#!/bin/sh', 'set -e']


def run(cmd, **kw):
    r = subprocess.run(cmd, capture_output=True, text=True, **kw)
    r.out = r.stdout + r.stderr
    return r


def git_status():
    """Every changed, untracked or ignored file of the tree but those in
    .build/, which the vm stage's boots write beside this test."""
    return run(['git', '-C', str(REPO), 'status', '--porcelain',
                '--ignored', '--untracked-files=all', '--', '.',
                ':!.build']).stdout


def test_one_version_everywhere():
    versions = {'CGE_VERSION': cge_version(),
                'dkms.conf PACKAGE_VERSION': conf_value('PACKAGE_VERSION'),
                'debian/changelog': changelog_version(),
                'energystat.1': man_version()}
    assert len(set(versions.values())) == 1, versions


@pytest.fixture(scope='module')
def debs(tmp_path_factory):
    """`make deb` with DEBDIR in a temporary directory: {package: .deb}."""
    for cmd, pkg in (('dpkg-buildpackage', 'dpkg-dev'),
                     ('dh', 'debhelper'), ('dh_dkms', 'dh-dkms')):
        need.need(cmd, pkg)
    out = tmp_path_factory.mktemp('deb')
    before = git_status()
    r = run(['make', '--no-print-directory', '-C', str(REPO), 'deb',
             f'DEBDIR={out}'], timeout=300)
    assert r.returncode == 0, r.out[-4000:]
    assert git_status() == before, 'make deb wrote into the tree'
    ver = changelog_version()
    got = {p.name for p in out.iterdir()}
    assert got == {f'{DKMS_PKG}_{ver}_all.deb', f'{TOOL_PKG}_{ver}_amd64.deb',
                   f'cgroup-energy_{ver}_amd64.buildinfo',
                   f'cgroup-energy_{ver}_amd64.changes'}, got
    return {DKMS_PKG: out / f'{DKMS_PKG}_{ver}_all.deb',
            TOOL_PKG: out / f'{TOOL_PKG}_{ver}_amd64.deb',
            'changes': out / f'cgroup-energy_{ver}_amd64.changes'}


def contents(deb):
    """The files (not directories) of @deb, as absolute paths."""
    r = run(['dpkg-deb', '-c', str(deb)])
    assert r.returncode == 0, r.out
    return {ln.split()[5].lstrip('.') for ln in r.stdout.splitlines()
            if not ln.startswith('d')}


def script(deb, name, tmp_path):
    ctl = tmp_path / f'control-{deb.name}'
    if not ctl.exists():
        r = run(['dpkg-deb', '-e', str(deb), str(ctl)])
        assert r.returncode == 0, r.out
    p = ctl / name
    return p.read_text() if p.exists() else None


def sections(text):
    """{helper: text} of a maintainer script's debhelper sections, and the
    lines outside them."""
    found = {}
    for m in re.finditer(r'^# Automatically added by (\S+)/\S+\n(.*?)'
                         r'^# End automatically added section\n',
                         text, re.M | re.S):
        found[m[1]] = found.get(m[1], '') + m[2]
    rest = re.sub(r'^# Automatically added by .*?'
                  r'^# End automatically added section\n', '', text,
                  flags=re.M | re.S)
    return found, rest.split('\n')[:-1]


def test_versions_of_the_packages(debs):
    for pkg in (DKMS_PKG, TOOL_PKG):
        r = run(['dpkg-deb', '-f', str(debs[pkg]), 'Version'])
        assert r.stdout.strip() == cge_version(), (pkg, r.out)


def test_lintian(debs):
    need.need('lintian', 'lintian')
    # the two packages and the .buildinfo, which the .changes lists
    r = run(['lintian', '--fail-on', 'error,warning', str(debs['changes'])],
            timeout=120)
    assert r.returncode == 0, r.out
    assert not re.search(r'^[EW]: ', r.stdout, re.M), r.out


def test_dkms_package_holds_the_dkms_sources(debs, tmp_path):
    top = f'/usr/src/cgroup-energy-{conf_value("PACKAGE_VERSION")}/'
    files = contents(debs[DKMS_PKG])
    src = {f[len(top):] for f in files if f.startswith(top)}
    assert src == dkms_sources()
    # the emulator (tests/emu/) is the test build's only
    assert not [f for f in src if f.startswith('tests/')], src
    assert files - {top + f for f in src} == {
        f'/usr/share/doc/{DKMS_PKG}/changelog.gz',
        f'/usr/share/doc/{DKMS_PKG}/copyright'}
    # each file as the tree has it (dkms.conf is installed by dh_dkms)
    root = tmp_path / 'root'
    r = run(['dpkg-deb', '-x', str(debs[DKMS_PKG]), str(root)])
    assert r.returncode == 0, r.out
    differ = [f for f in src if (root / top.lstrip('/') / f).read_bytes()
              != (REPO / f).read_bytes()]
    assert not differ, differ


def test_dkms_maintainer_scripts_are_dh_dkms(debs, tmp_path):
    deb = debs[DKMS_PKG]
    for name in ('postinst', 'prerm'):
        found, rest = sections(script(deb, name, tmp_path))
        assert set(found) == {'dh_dkms'}, (name, found)
        assert rest == SCRIPT_HEAD, (name, rest)
        assert 'DKMS_NAME=cgroup-energy\n' in found['dh_dkms']
        assert f'DKMS_VERSION={cge_version()}\n' in found['dh_dkms']
    assert 'dkms remove -m $DKMS_NAME' in script(deb, 'prerm', tmp_path)
    for name in ('preinst', 'postrm'):
        assert script(deb, name, tmp_path) is None, name
    r = run(['dpkg-deb', '-f', str(deb), 'Depends'])
    # dh_dkms's dependency for a dkms.conf with BUILD_EXCLUSIVE_CONFIG
    assert r.stdout.strip() == 'dkms (>= 3.0.3-4~)', r.out
    # no hand-written maintainer script in debian/
    assert not [p for p in (REPO / 'debian').iterdir()
                if re.search(r'(^|\.)(pre|post)(inst|rm)$', p.name)]


def test_energystat_package_is_make_install(debs, tmp_path):
    """make install with debian/rules' LAYOUT installs the package's files,
    but for dh_compress's .gz, make uninstall's record, and Debian's
    copyright and changelog."""
    rules = (REPO / 'debian/rules').read_text()
    layout = re.search(r'^LAYOUT = ((?:.*\\\n)*.*)$', rules, re.M)[1]
    layout = layout.replace('\\\n', ' ').split()
    # in a copy, as make deb builds: the tool's build stays out of the tree
    tree = tmp_path / 'tree'
    tree.mkdir()
    files = run(['git', '-C', str(REPO), 'ls-files', '-z', '-c', '-o',
                 '--exclude-standard']).stdout
    r = subprocess.run(['tar', '--null', '-T', '-', '-cf', '-'], cwd=REPO,
                       input=files.encode(), capture_output=True, check=True)
    subprocess.run(['tar', '-xf', '-'], cwd=tree, input=r.stdout, check=True)
    dest = tmp_path / 'stage'
    r = run(['make', '--no-print-directory', '-C', str(tree), 'install',
             f'DESTDIR={dest}', *layout])
    assert r.returncode == 0, r.out
    staged = {'/' + str(p.relative_to(dest)) for p in dest.rglob('*')
              if not p.is_dir()}
    docdir = dict(v.split('=', 1) for v in layout)['DOCDIR']
    staged.remove(f'{docdir}/INSTALLED')
    files = contents(debs[TOOL_PKG])
    debian = {f'/usr/share/doc/{TOOL_PKG}/copyright',
              f'/usr/share/doc/{TOOL_PKG}/changelog.gz'}
    assert debian <= files
    packaged = {f[:-3] if f.endswith('.gz') and f[:-3] in staged else f
                for f in files - debian}
    assert packaged == staged


def test_energystat_enables_the_mount_without_starting_it(debs, tmp_path):
    deb = debs[TOOL_PKG]
    unit = 'sys-fs-cgroup_energy.mount'
    found, rest = sections(script(deb, 'postinst', tmp_path))
    assert set(found) == {'dh_installsysusers', 'dh_installsystemd'}
    assert rest == SCRIPT_HEAD
    assert f"deb-systemd-helper enable '{unit}'" in found['dh_installsystemd']
    # neither started nor stopped nor restarted by the package: no
    # deb-systemd-invoke names it, and no preinst stops it on upgrade
    for name in ('postinst', 'prerm', 'postrm'):
        assert not re.search(rf"deb-systemd-invoke .*'{unit}'",
                             script(deb, name, tmp_path)), name
    assert script(deb, 'preinst', tmp_path) is None
    # the node_exporter textfile timer: installed, not started, enabled
    # again on upgrade only where the admin enabled it (dh_installsystemd
    # --no-enable: `debian-installed` is false on a first installation)
    timer = 'cgroup-energy-textfile.timer'
    text = found['dh_installsystemd']
    assert f"if deb-systemd-helper debian-installed '{timer}'; then" in text
    assert text.count(f"deb-systemd-helper enable '{timer}'") == 1
    assert text.index(f"debian-installed '{timer}'") < \
        text.index(f"deb-systemd-helper enable '{timer}'")
    assert f"/lib/systemd/system/{timer}" in contents(deb)
    found, _ = sections(script(deb, 'postrm', tmp_path))
    assert f"deb-systemd-helper purge '{unit}'" in found['dh_installsystemd']
    r = run(['dpkg-deb', '-f', str(deb), 'Recommends'])
    assert r.stdout.strip() == DKMS_PKG


def test_energystat_exporter_and_its_accounts(debs, tmp_path):
    """The service, its options file (a conffile) and the sysusers.d file;
    postinst makes the accounts (dh_installsysusers) before it would start
    the service, which it enables on no installation: deb-systemd-invoke
    starts or restarts only a unit the admin enabled. No script removes
    the accounts (purge keeps them)."""
    deb = debs[TOOL_PKG]
    svc = 'energystat-exporter.service'
    files = contents(deb)
    assert {f'/lib/systemd/system/{svc}', '/etc/default/energystat-exporter',
            '/usr/lib/sysusers.d/energystat.conf'} <= files
    assert script(deb, 'conffiles', tmp_path).split() == \
        ['/etc/default/energystat-exporter']
    text = script(deb, 'postinst', tmp_path)
    found, _ = sections(text)
    sysusers = 'systemd-sysusers ${DPKG_ROOT:+--root="$DPKG_ROOT"} ' \
        'energystat.conf\n'
    assert found['dh_installsysusers'].count(sysusers) == 1, found
    start = f"deb-systemd-invoke $_dh_action '{svc}'"
    assert text.count(start) == 1
    assert text.index(sysusers) < text.index(start)
    assert f"if deb-systemd-helper debian-installed '{svc}'; then" in text
    assert text.count(f"deb-systemd-helper enable '{svc}'") == 1
    assert text.index(f"debian-installed '{svc}'") < \
        text.index(f"deb-systemd-helper enable '{svc}'")
    assert f"deb-systemd-invoke stop '{svc}'" in script(deb, 'prerm',
                                                        tmp_path)
    for name in ('preinst', 'postinst', 'prerm', 'postrm'):
        s = script(deb, name, tmp_path) or ''
        assert not re.search(r'\b(deluser|delgroup|userdel|groupdel)\b', s), \
            name
    r = run(['dpkg-deb', '-f', str(deb), 'Depends'])
    assert 'systemd | systemd-standalone-sysusers | systemd-sysusers' in \
        r.stdout, r.out
    # the installed unit runs the installed tool with the options file
    root = tmp_path / 'root'
    r = run(['dpkg-deb', '-x', str(deb), str(root)])
    assert r.returncode == 0, r.out
    unit = (root / f'lib/systemd/system/{svc}').read_text()
    assert re.search(r'^ExecStart=/usr/bin/energystat --listen 10043 \$ARGS$',
                     unit, re.M), unit
    assert re.search(r'^EnvironmentFile=-/etc/default/energystat-exporter$',
                     unit, re.M), unit
    assert (root / 'usr/lib/sysusers.d/energystat.conf').read_bytes() == \
        (REPO / 'dist/sysusers.d/energystat.conf').read_bytes()


def test_server_image_holds_the_tool_packages_libraries(debs):
    """The server scenario's guest has no network: its apt installs the
    energystat package from apt's cache, where the image's recipe put
    server.DOWNLOAD. Every library package the built package depends on
    (${shlibs:Depends}) must be there, or base Debian (priority required,
    as debootstrap's minbase installs)."""
    from vm import server
    r = run(['dpkg-deb', '-f', str(debs[TOOL_PKG]), 'Depends'])
    assert r.returncode == 0, r.out
    names = {re.match(r'\s*([\w.+-]+)', alt)[1]
             for dep in r.stdout.split(',') for alt in dep.split('|')}
    libs = sorted(n for n in names if n.startswith('lib'))
    assert 'libmicrohttpd12' in libs, libs
    missing = []
    for lib in libs:
        q = run(['dpkg-query', '-W', '-f=${Priority}', lib])
        # libc6: every essential package depends on it
        if (lib not in server.DOWNLOAD and lib != 'libc6' and
                q.stdout.strip() != 'required'):
            missing.append(lib)
    assert missing == [], f'add to tests/vm/server.py DOWNLOAD: {missing}'
