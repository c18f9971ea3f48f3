# SPDX-License-Identifier: GPL-2.0
"""energystat-exporter.service and the accounts it runs as, on the host:
the unit as make install writes it verifies and runs `energystat --listen
10043 $ARGS` as user energystat in group cgroup-energy; its
`systemd-analyze security` exposure stays within the bound of
tests/results/exporter-security.json, which says why each item still
exposed stays; the sysusers.d file makes the group and the user (a member
of it) in an empty root; the mount unit gives the files to that group.
systemd cannot run the unit here, so strace shows what energystat does
while it serves scrapes, against the unit's filters (syscalls, socket
families, W+X mappings, /proc, writes). The service on a booted server is
tests/test_server.py's.

    python3 tests/test_exporter_service.py --record

measures the unit again into the results file (its hash, systemd's version,
the score and each item's exposure), keeping the bound and the reasons."""
import hashlib
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

import need

REPO = Path(__file__).resolve().parents[1]
SERVICE = 'energystat-exporter.service'
MOUNT = 'sys-fs-cgroup_energy.mount'
SOURCE = REPO / 'dist/systemd' / SERVICE
RESULTS = REPO / 'tests/results/exporter-security.json'
SYSUSERS = REPO / 'dist/sysusers.d/energystat.conf'
GROUP, USER = 'cgroup-energy', 'energystat'


def run(cmd, **kw):
    r = subprocess.run(cmd, capture_output=True, text=True, **kw)
    r.out = r.stdout + r.stderr
    return r


UNITS = 'usr/lib/systemd/system'


def stage(dest):
    """make install with the package's prefix into @dest; @dest."""
    r = run(['make', '--no-print-directory', '-C', str(REPO), 'install',
             f'DESTDIR={dest}', 'PREFIX=/usr'])
    assert r.returncode == 0, r.out
    return dest


@pytest.fixture(scope='module')
def staged(tmp_path_factory):
    return stage(tmp_path_factory.mktemp('stage'))


def directives(text):
    """[(key, value)] of a unit file's assignments, in order."""
    return [tuple(ln.split('=', 1)) for ln in text.splitlines()
            if re.match(r'^[A-Za-z]+=', ln)]


def systemd_major():
    r = run(['systemd-analyze', '--version'])
    return re.match(r'systemd (\d+)', r.stdout)[1]


def analyze(unit, *args):
    return run(['systemd-analyze', 'security', '--offline=true', *args,
                str(unit)])


def measure(unit):
    """(score, {item: exposure}) of `systemd-analyze security` for @unit:
    the overall exposure and the items it finds exposed (✗)."""
    r = analyze(unit)
    m = re.search(r'^→ Overall exposure level for \S+: (\d+\.\d) ',
                  r.stdout, re.M)
    assert m, r.out
    r = analyze(unit, '--json=short')
    assert r.returncode == 0, r.out
    items = {x['name']: float(x['exposure']) for x in json.loads(r.stdout)
             if x['set'] is False and x['exposure'] is not None}
    return float(m[1]), items


def sha256(path):
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_unit_runs_energystat_as_its_user(staged):
    text = (staged / UNITS / SERVICE).read_text()
    d = directives(text)
    assert ('ExecStart', '/usr/bin/energystat --listen 10043 $ARGS') in d
    assert ('EnvironmentFile',
            '-/etc/default/energystat-exporter') in d
    assert ('User', USER) in d and ('Group', GROUP) in d
    assert ('Restart', 'on-failure') in d
    # no root, no DynamicUser (the mount's group is a static one)
    assert not [k for k, _ in d if k in ('DynamicUser', 'PermissionsStartOnly')]
    # ordered after the mount, neither wanted nor required: starting the
    # exporter loads no module into the running kernel, and it serves
    # cgroup_energy_up 0 without the mount
    assert not [v for k, v in d if k == 'Wants' and MOUNT in v]
    assert re.search(rf'^After=.*\b{re.escape(MOUNT)}\b', text, re.M)
    assert not [v for k, v in d if k in ('Requires', 'BindsTo', 'Requisite')
                and MOUNT in v]
    assert ('WantedBy', 'multi-user.target') in d
    # the network families it listens on, and no other
    assert ('RestrictAddressFamilies', 'AF_INET AF_INET6') in d


def test_options_file_is_empty_args(staged):
    text = (staged / 'etc/default/energystat-exporter').read_text()
    assert [ln for ln in text.splitlines()
            if ln.strip() and not ln.startswith('#')] == ['ARGS=""']
    # TLS is optional: the example names where the web config goes
    assert '#   ARGS="--web.config.file /etc/energystat/web-config.yml"' \
        in text


def test_unit_verifies(staged, tmp_path):
    """systemd-analyze verify (it checks that ExecStart's program exists:
    the staged tool stands in for the installed path)."""
    need.need('systemd-analyze', 'systemd')
    root = staged
    check = tmp_path / SERVICE
    check.write_text((root / UNITS / SERVICE).read_text().replace(
        'ExecStart=/usr/bin/', f'ExecStart={root}/usr/bin/'))
    env = dict(os.environ)
    argv = ['systemd-analyze', 'verify']
    if shutil.which('man'):
        env['MANPATH'] = str(root / 'usr/share/man')
    else:
        argv.append('--man=no')
    r = run(argv + [str(check)], env=env)
    assert r.returncode == 0 and not r.stderr.strip(), r.out


def test_security_exposure_within_its_bound(staged):
    """The live score is at most the bound (systemd-analyze --threshold, in
    its tenths, says the same), every exposed item has its reason in the
    results file, and on the systemd it was measured with the figures are
    the recorded ones (a self-consistency check of the results file)."""
    need.need('systemd-analyze', 'systemd')
    rec = json.loads(RESULTS.read_text())
    assert rec['unit_sha256'] == sha256(SOURCE), (
        f'{SOURCE.name} changed since it was measured: run `python3 '
        f'tests/test_exporter_service.py --record` and give each new item '
        f'its reason in {RESULTS.name}')
    unit = staged / UNITS / SERVICE
    score, items = measure(unit)
    assert 0 < score <= rec['bound'], (score, rec['bound'])
    r = analyze(unit, f'--threshold={round(rec["bound"] * 10)}')
    assert r.returncode == 0, r.out
    r = analyze(unit, f'--threshold={round(rec["bound"] * 10) - 1}')
    assert r.returncode != 0, r.out
    undocumented = set(items) - set(rec['exposed'])
    assert not undocumented, undocumented
    assert all(e['why'].strip() for e in rec['exposed'].values())
    if systemd_major() == rec['systemd']:
        assert score == rec['exposure']
        assert items == {k: e['exposure'] for k, e in rec['exposed'].items()}


def test_sysusers_makes_the_group_and_its_member(tmp_path):
    """What the package's postinst runs (dh_installsysusers), in an empty
    root: twice, as an upgrade does, with the same result."""
    exe = need.need('systemd-sysusers', 'systemd')
    (tmp_path / 'etc').mkdir()
    conf = tmp_path / 'usr/lib/sysusers.d'
    conf.mkdir(parents=True)
    shutil.copy(SYSUSERS, conf)
    got = []
    for _ in range(2):
        r = run([exe, f'--root={tmp_path}', SYSUSERS.name])
        assert r.returncode == 0, r.out
        got.append(((tmp_path / 'etc/group').read_text(),
                    (tmp_path / 'etc/passwd').read_text()))
    assert got[0] == got[1]
    groups = {ln.split(':')[0]: ln.split(':') for ln in got[0][0].split()}
    users = {ln.split(':')[0]: ln.split(':') for ln in
             got[0][1].splitlines()}
    assert set(groups) == {GROUP, USER} and set(users) == {USER}
    assert groups[GROUP][3] == USER               # the only member
    uid, gid = int(users[USER][2]), int(groups[GROUP][2])
    assert 0 < uid < 1000 and 0 < gid < 1000      # system ids
    assert users[USER][6] == '/usr/sbin/nologin'


def test_mount_gives_the_files_to_the_group():
    """By name: mount(8) resolves gid=NAME (the module takes a number)."""
    text = (REPO / 'dist/systemd' / MOUNT).read_text()
    opts = dict(directives(text))['Options'].split(',')
    assert f'gid={GROUP}' in opts and 'mode=0440' in opts, opts
    assert re.search(r'^After=systemd-sysusers\.service$', text, re.M)


def syscall_set(names):
    """The syscalls of a SystemCallFilter= value: names and @groups, as
    `systemd-analyze syscall-filter` lists them (groups expanded)."""
    out = set()
    for n in names:
        if not n.startswith('@'):
            out.add(n)
            continue
        r = run(['systemd-analyze', 'syscall-filter', n])
        assert r.returncode == 0, r.out
        body = [ln.strip() for ln in r.stdout.splitlines()[1:]]
        out |= syscall_set([ln for ln in body
                            if ln and not ln.startswith('#')])
    return out


def unit_filters(text):
    """(allowed syscalls, socket families) of a unit's SystemCallFilter=
    lines (allow lists, then ~deny lists) and RestrictAddressFamilies=."""
    allow, deny = set(), set()
    for k, v in directives(text):
        if k == 'SystemCallFilter' and v.startswith('~'):
            deny |= syscall_set(v[1:].split())
        elif k == 'SystemCallFilter':
            allow |= syscall_set(v.split())
    fams = [v.split() for k, v in directives(text)
            if k == 'RestrictAddressFamilies']
    assert allow and deny and len(fams) == 1
    return allow - deny, set(fams[0])


def serve_traced(tool, tree, trace):
    """energystat --listen on a free port, as the unit runs it (every
    address), under strace -f: two scrapes (plain, gzip), then SIGTERM as
    systemctl stop sends it. The HTTP statuses."""
    with socket.socket() as s:
        s.bind(('127.0.0.1', 0))
        port = s.getsockname()[1]
    # the tool's pid, for the SIGTERM (strace's own would detach it)
    pidfile = trace.with_name('pid')
    p = subprocess.Popen([need.need('strace', 'strace'), '-f', '-qq',
                          '-o', str(trace), 'sh', '-c',
                          'echo $$ >"$0" && exec "$@"', str(pidfile),
                          str(tool), '--root', str(tree),
                          '--listen', str(port)],
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    statuses = []
    try:
        deadline = time.monotonic() + 20       # a hang guard
        while True:
            try:
                socket.create_connection(('127.0.0.1', port), 1).close()
                break
            except OSError:
                assert p.poll() is None, p.stderr.read()
                assert time.monotonic() < deadline, 'never listened'
                time.sleep(0.05)
        for hdr in ({}, {'Accept-Encoding': 'gzip'}):
            req = urllib.request.Request(
                f'http://127.0.0.1:{port}/metrics', headers=hdr)
            with urllib.request.urlopen(req, timeout=20) as r:
                r.read()
                statuses.append(r.status)
    finally:
        if pidfile.exists():
            os.kill(int(pidfile.read_text()), signal.SIGTERM)
        else:
            p.kill()
        p.wait(timeout=20)
    return statuses


def test_filters_admit_what_the_exporter_does(staged, tmp_path):
    """Every syscall energystat makes while it serves is in the unit's
    SystemCallFilter= set, every socket it opens of a family the unit
    allows, no mapping is writable and executable (MemoryDenyWriteExecute=),
    no /proc file but its own is opened (ProcSubset=pid), and no file is
    opened for writing (ProtectSystem=strict, no ReadWritePaths=)."""
    from fixtree import build_big
    need.need('systemd-analyze', 'systemd')
    allowed, families = unit_filters((staged / UNITS / SERVICE).read_text())
    tree = build_big(tmp_path / 'tree', n=50)
    trace = tmp_path / 'trace'
    assert serve_traced(staged / 'usr/bin/energystat', tree.path,
                        trace) == [200, 200]
    text = trace.read_text()
    # from the tool's execve on (the sh before it is not the service's)
    text = text[text.index(f'execve("{staged}/usr/bin/energystat"'):]
    calls = re.findall(r'^\d+ +([a-z_0-9]+)\((.*)$', text, re.M)
    names = {n for n, _ in calls}
    assert {'openat', 'accept4', 'listen'} <= names, sorted(names)
    assert sorted(names - allowed) == []
    socks = [a.split(',')[0] for n, a in calls if n == 'socket']
    assert 1 <= len(socks) <= 4 and set(socks) <= families, socks
    wx = [a for n, a in calls if n in ('mmap', 'mprotect', 'pkey_mprotect')
          and 'PROT_WRITE' in a and 'PROT_EXEC' in a]
    assert wx == []
    opened = [(m[1], m[2]) for m in re.finditer(
        r'^\d+ +openat\(AT_FDCWD, "([^"]*)", ([A-Z_|]+)', text, re.M)]
    assert len(opened) > 50, opened[:10]             # the tree was read
    # glibc's malloc reads overcommit_memory when it shrinks a thread's
    # heap (the exporter's threads free their scrapes' memory); under
    # ProcSubset=pid the open fails and glibc releases the pages with
    # madvise(MADV_DONTNEED), as it does unless overcommit is strict
    procs = [f for f, _ in opened if f.startswith('/proc/') and not
             re.match(r'/proc/(self|thread-self)/', f) and
             f != '/proc/sys/vm/overcommit_memory']
    assert procs == []
    writes = [f for f, fl in opened if re.search(r'O_(WRONLY|RDWR|CREAT)',
                                                  fl)]
    assert writes == []


def record():
    """Measure the unit into RESULTS, keeping its bound and reasons."""
    import tempfile
    rec = json.loads(RESULTS.read_text()) if RESULTS.exists() else {
        'bound': None, 'exposed': {}}
    with tempfile.TemporaryDirectory() as d:
        score, items = measure(stage(Path(d)) / UNITS / SERVICE)
    old = rec.get('exposed', {})
    rec.update({'unit': str(SOURCE.relative_to(REPO)),
                'unit_sha256': sha256(SOURCE), 'systemd': systemd_major(),
                'exposure': score,
                'exposed': {k: {'exposure': v,
                                'why': old.get(k, {}).get('why', '')}
                            for k, v in sorted(items.items())}})
    RESULTS.write_text(json.dumps(rec, indent=1, ensure_ascii=False) + '\n')
    print(f'{RESULTS}: {score} (bound {rec["bound"]})')
    return 0


if __name__ == '__main__':
    if sys.argv[1:] != ['--record']:
        sys.exit('usage: test_exporter_service.py --record')
    sys.exit(record())
