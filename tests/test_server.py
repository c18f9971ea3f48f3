# SPDX-License-Identifier: GPL-2.0
"""The packages on a booted Debian 12 server, as an operator installs them:
one QEMU run of the server image (tests/vm/server.py: systemd as PID 1,
GRUB, the 6.1 kernel and its headers, Debian 11's 5.10 kernel without
headers), four boots: the guest reboots itself three times, through GRUB.  What the
guest does at each boot is tests/vm/guest/server_agent.sh; the checks here
read what it recorded:

1. 6.1: `apt install ./cgroup-energy-dkms_*.deb ./energystat_*.deb` builds
   and installs the module for the running kernel, with no other step, and
   makes group cgroup-energy and user energystat; the exporter's service is
   installed, not enabled; enabled, it serves cgroup_energy_up 0 (the
   module is not loaded until the next boot).
2. 6.1 again: the module is loaded and /sys/fs/cgroup_energy mounted by the
   units, its files 0440 of cgroup-energy, the system is `running`, a
   service started with systemd-run has energy and energystat lists it; the
   exporter runs as energystat and serves up 1, keeps serving (up 0) with
   the module unloaded and up 1 once the mount loaded it again; Debian's
   Prometheus scrapes it over TLS with basic auth (a wrong password gets
   401) and stores a frozen service's energy to the microjoule; then `apt
   install` of the 6.12 kernel and its headers builds the module for 6.12.
3. 6.12, GRUB's new default: the same checks (the exporter: up 1).
4. 5.10, which has no headers, so no build: the mount is skipped, the
   exporter serves up 0 and the system is `running`; `apt purge` of both
   packages leaves no module, unit, file or DKMS tree, and the system
   accounts (Debian keeps them).

Nothing is simulated: the guest's own apt, dpkg, dkms, systemd and GRUB,
without network (the 6.12 packages are in the image's apt cache).  Every
step's duration is printed and kept in the run directory's timings.json."""
import json
import re
import secrets
import shutil
import subprocess
import time
from decimal import Decimal
from pathlib import Path

import pytest

import need
from versions import changelog_version
from vm import harness, server

pytestmark = pytest.mark.vm

REPO = Path(__file__).resolve().parents[1]
AGENT = REPO / 'tests/vm/guest/server_agent.sh'
# The whole QEMU run's deadline, a guard against a hung guest and not a
# measure: the gate runs it beside the vm stage on a host that may be 2.5
# times slower than the ones of tests/results/server.jsonl, and CI stops a
# run at 90 minutes.
DEADLINE = 4500
BOOTS = 4


class Boot:
    """One boot's records: run(name) -> (rc, output, seconds)."""

    def __init__(self, d):
        self.dir = d
        self.names = sorted(p.stem for p in d.glob('*.rc')) if d else []

    def rc(self, name):
        p = self.dir / f'{name}.rc' if self.dir else None
        assert p and p.exists(), f'{name}: not run in this boot'
        return int(p.read_text())

    def out(self, name):
        self.rc(name)
        return (self.dir / f'{name}.out').read_text(errors='replace')

    def secs(self, name):
        return float((self.dir / f'{name}.s').read_text())

    def ok(self, name):
        assert self.rc(name) == 0, f'{name} exited {self.rc(name)}:\n' \
            f'{self.out(name)[-3000:]}'
        return self.out(name)


# The exporter's basic auth user, and the password of job tls (job
# wrong_password sends another)
PROM_USER = 'prometheus'


def tls_share(share):
    """Into the share: a self-signed certificate for 127.0.0.1, the
    exporter's web configuration (basic_auth_users: a bcrypt hash made by
    htpasswd, not by the libxcrypt energystat checks it with), Debian's
    Prometheus and promtool, and Prometheus's configuration: job tls with
    the right password, job wrong_password with another, both over TLS
    trusting that certificate, a scrape every 5 s. What the checks decide
    is whether a scrape succeeds, not how fast: the timeout is 5 s, and the
    hash costs 2^5 rounds (what a wrong password pays on every scrape in a
    guest that shares two vCPUs with the exporter's TLS and its walks)."""
    tls = share / 'tls'
    tls.mkdir()
    r = subprocess.run(['openssl', 'req', '-x509', '-newkey', 'rsa:2048',
                        '-nodes', '-days', '2', '-subj', '/CN=127.0.0.1',
                        '-addext', 'subjectAltName=IP:127.0.0.1',
                        '-keyout', str(tls / 'server.key'),
                        '-out', str(tls / 'server.crt')],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    password = secrets.token_hex(12)
    r = subprocess.run(['htpasswd', '-nbB', '-C', '5', PROM_USER, password],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    bcrypt = r.stdout.strip().split(':', 1)[1]
    (tls / 'web-config.yml').write_text(
        'tls_server_config:\n  cert_file: server.crt\n'
        '  key_file: server.key\nbasic_auth_users:\n'
        f"  {PROM_USER}: '{bcrypt}'\n")
    jobs = ''.join(
        f'  - job_name: {job}\n    scheme: https\n'
        f'    tls_config: {{ca_file: /run/cge/tls/server.crt}}\n'
        f"    basic_auth: {{username: {PROM_USER}, password: '{pw}'}}\n"
        f"    static_configs: [{{targets: ['127.0.0.1:10043']}}]\n"
        for job, pw in (('tls', password), ('wrong_password', password[::-1])))
    (share / 'prometheus.yml').write_text(
        'global: {scrape_interval: 5s, scrape_timeout: 5s}\n'
        'scrape_configs:\n' + jobs)
    for tool in ('prometheus', 'promtool'):
        shutil.copy(shutil.which(tool), share / tool)


@pytest.fixture(scope='module')
def scenario():
    for tool, pkg in (('debootstrap', 'debootstrap'), ('sfdisk', 'fdisk'),
                      ('mke2fs', 'e2fsprogs'), ('dpkg-buildpackage',
                                                'dpkg-dev'),
                      ('prometheus', 'prometheus'), ('htpasswd',
                                                     'apache2-utils'),
                      ('openssl', 'openssl')):
        need.need(tool, pkg)
    harness.check_qemu()
    p = server.kernel_pins()
    kvers = {k: p[f].kver for k, f in (('FIRST_KVER', server.FIRST),
                                        ('LATER_KVER', server.LATER),
                                        ('NO_BUILD_KVER', server.NO_BUILD))}
    env = {**kvers, 'LATER_SPECS': ' '.join(
        server.kernel_specs(p[server.LATER]))}
    t0 = time.monotonic()
    disk = server.image()
    t_image = time.monotonic() - t0
    rundir = harness._new_rundir('server')
    share = rundir / 'share'
    share.mkdir()
    r = subprocess.run(['make', '--no-print-directory', '-C', str(REPO), 'deb',
                        f'DEBDIR={share / "debs"}'], capture_output=True,
                       text=True, timeout=600)
    assert r.returncode == 0, (r.stdout + r.stderr)[-4000:]
    shutil.copy(AGENT, share / 'agent.sh')
    tls_share(share)
    (share / 'env').write_text(''.join(f"{k}='{v}'\n" for k, v in env.items()))
    # -snapshot: the guest's writes go to QEMU's temporary overlay, which
    # lasts until QEMU exits, across the guest's reboots
    argv = server.qemu_command(disk, share, snapshot=True)
    (rundir / 'qemu.cmd').write_text(' '.join(argv) + '\n')
    console = rundir / 'console.log'
    t1 = time.monotonic()
    with open(console, 'wb') as f:
        q = subprocess.run(['timeout', str(DEADLINE), *argv], stdout=f,
                           stderr=subprocess.STDOUT,
                           stdin=subprocess.DEVNULL)
    t_run = time.monotonic() - t1
    (rundir / '.done').write_text('')
    boots = [Boot(share / f'boot{i}' if (share / f'boot{i}').is_dir()
                  else None) for i in range(1, BOOTS + 1)]
    timings = {'image_s': round(t_image, 1), 'run_s': round(t_run, 1),
               'qemu_exit': q.returncode,
               'boots': [{n: b.secs(n) for n in b.names} if b.dir else None
                         for b in boots]}
    (rundir / 'timings.json').write_text(json.dumps(timings, indent=1) + '\n')
    print(f'\nserver: image {t_image:.0f} s, QEMU {t_run:.0f} s '
          f'(exit {q.returncode}); {rundir}')
    for i, b in enumerate(boots, 1):
        if b.dir:
            print(f'  boot {i}: ' + ', '.join(f'{n} {b.secs(n):.1f}'
                                               for n in b.names))
    stopped = share / 'stopped'
    return {'boots': boots, 'kvers': kvers, 'console': console,
            'qemu_exit': q.returncode,
            'stopped': stopped.read_text().strip() if stopped.exists()
            else None}


def boot(scenario, i):
    b = scenario['boots'][i - 1]
    if b.dir is None:
        if scenario['stopped']:
            why = ('the guest powered off after a failed step, '
                   f'{scenario["stopped"]}')
        elif scenario['qemu_exit'] == 124:
            why = f'the deadline, {DEADLINE} s, was reached'
        else:
            why = f'QEMU exited {scenario["qemu_exit"]}'
        tail = scenario['console'].read_text(errors='replace')[-4000:]
        pytest.fail(f'boot {i} never ran its steps: {why}; console '
                    f'{scenario["console"]}:\n{tail}')
    return b


def test_the_guest_powered_off_without_a_kernel_report(scenario):
    """QEMU exits 0 when the guest powers off after its last boot; no
    kernel splat (harness.SPLAT: BUG, WARNING, Oops, ...) in any boot,
    module loading, mounting, the services' starts and the shutdowns
    included."""
    text = scenario['console'].read_text(errors='replace')
    splats = [ln for ln in text.splitlines() if harness.SPLAT.search(ln)]
    assert not splats, '\n'.join(splats[:40])
    assert scenario['stopped'] is None, scenario['stopped']
    assert scenario['qemu_exit'] == 0, scenario['qemu_exit']


def settled(b, kver, module):
    """The checks of every boot: the kernel, `running`, no failed unit, and
    the module loaded and mounted (True), neither (False) or not installed
    yet (None).  Without the module, the mount unit is enabled and was
    skipped by its condition at this boot (a condition timestamp: systemd
    checked it), not merely never started."""
    assert b.ok('uname').strip() == kver
    assert b.out('state').strip() == 'running', (
        b.out('state'), b.out('failed'), b.out('modules_load'))
    assert b.out('failed').strip() == ''
    if module is None:
        return
    if module:
        assert b.rc('lsmod') == 0, b.out('lsmod')
        assert b.ok('mount').split()[0] == 'cgroup_energy'
        assert 'ActiveState=active' in b.out('mount_unit')
    else:
        assert b.rc('lsmod') == 1 and b.out('lsmod') == ''
        assert b.rc('mount') != 0
        unit = dict(ln.split('=', 1) for ln in
                    b.out('mount_unit').splitlines() if '=' in ln)
        assert unit.get('UnitFileState') == 'enabled', unit
        assert unit.get('ConditionResult') == 'no', unit
        assert int(unit.get('ConditionTimestampMonotonic', 0)) > 0, unit


def flat(text):
    return {k: int(v) for k, v in
            (ln.split() for ln in text.splitlines() if ln.strip())}


def burned(b):
    """burn.service, frozen after 5 s: its energy, and its CPU time in the
    module equal to cgroup v2's cpu.stat (docs/contract.md: a leaf's
    usage_usec is cpu.stat's figure; frozen, neither moves)."""
    b.ok('burn_freeze')
    energy = flat(b.ok('burn_energy'))
    cpu = flat(b.ok('burn_cpu'))
    assert energy['energy_uj'] > 0
    # 5 s of one busy loop, then the freeze: measured 5.56 and 5.85 s of CPU
    # time on a saturated host; at least half of the 5 s (the premise: the
    # service ran)
    assert cpu['usage_usec'] >= 2_500_000, cpu
    assert energy['usage_usec'] == cpu['usage_usec'], (energy, cpu)
    assert re.search(r'burn\.service', b.ok('energystat')), b.out('energystat')
    b.ok('burn_stop')


def built_by_the_install(b, kver):
    """The boot's install step succeeded, and DKMS installed this version's
    module for kver, where modprobe finds it (DKMS compresses it as the
    kernel's own modules are: 6.12's .ko.xz), signed with a key of DKMS's
    (docs/install.md, Secure Boot)."""
    out = b.ok('install')
    ver = re.escape(changelog_version())
    assert re.search(rf'cgroup-energy/{ver}, {re.escape(kver)}, x86_64: '
                     r'installed', b.ok('dkms')), (b.out('dkms'), out[-3000:])
    assert re.fullmatch(rf'/lib/modules/{re.escape(kver)}/updates/dkms/'
                        r'cgroup_energy\.ko(\.xz|\.zst)?',
                        b.ok('modinfo').strip()), b.out('modinfo')
    assert b.ok('signer').strip() == 'DKMS module signing key', out[-3000:]
    assert b.ok('sig_key').strip(), out[-3000:]


def test_apt_install_builds_the_module_for_the_running_kernel(scenario):
    b = boot(scenario, 1)
    first = scenario['kvers']['FIRST_KVER']
    settled(b, first, module=None)
    built_by_the_install(b, first)


@pytest.mark.parametrize('i, kernel', [(2, 'FIRST_KVER'), (3, 'LATER_KVER')],
                         ids=['6.1', 'into-the-new-kernel'])
def test_reboot_loads_and_mounts_it(scenario, i, kernel):
    b = boot(scenario, i)
    settled(b, scenario['kvers'][kernel], module=True)
    burned(b)


def test_a_new_kernel_gets_its_build_at_install(scenario):
    b = boot(scenario, 2)
    later = scenario['kvers']['LATER_KVER']
    built_by_the_install(b, later)
    assert b.ok('grub_first').strip() == later
    # the key DKMS made at the first install signs this build too
    assert 'Signing key: /var/lib/dkms/mok.key' in b.out('install')
    assert 'generating self signed' not in b.out('install')
    assert b.out('sig_key') == boot(scenario, 1).out('sig_key')


def test_kernel_without_a_build_is_not_degraded(scenario):
    b = boot(scenario, 4)
    settled(b, scenario['kvers']['NO_BUILD_KVER'], module=False)
    assert b.rc('modprobe') != 0
    assert 'ActiveState=active' in b.out('modules_load'), b.out('modules_load')


def test_purge_leaves_nothing(scenario):
    b = boot(scenario, 4)
    b.ok('purge')
    for what in ('left_files', 'left_module', 'left_dkms', 'left_units',
                 'left_doc'):
        assert b.ok(what).strip() == '', (what, b.out(what))
    for pkg in ('cgroup-energy-dkms', 'energystat'):
        assert f'no packages found matching {pkg}' in b.ok('left_dpkg'), \
            b.out('left_dpkg')


# --- the exporter: energystat-exporter.service -----------------------------

def up(b, name):
    """cgroup_energy_up of the exporter's response in @name (an HTTP 200)."""
    out = b.ok(name)
    assert re.match(r'HTTP/1\.[01] 200 ', out), out[-2000:]
    m = re.search(r'^cgroup_energy_up (\d)\s*$', out, re.M)
    assert m, out[-2000:]
    return int(m[1])


def exporter_runs(b, name='exporter'):
    """The service is enabled and running, never restarted, as user
    energystat in group cgroup-energy."""
    out = b.ok(name)
    props = dict(ln.split('=', 1) for ln in out.splitlines() if '=' in ln)
    assert props.get('UnitFileState') == 'enabled', out
    assert (props.get('ActiveState'), props.get('SubState')) == \
        ('active', 'running'), out
    assert props.get('NRestarts') == '0', out
    ps = [ln.split() for ln in out.splitlines() if '=' not in ln]
    assert ps and ps[-1][:2] == ['energystat', 'cgroup-energy'], out


def test_the_package_makes_the_accounts_and_leaves_the_exporter_off(
        scenario):
    b = boot(scenario, 1)
    out = b.ok('accounts')
    assert re.search(r'^cgroup-energy:x:\d+:energystat$', out, re.M), out
    assert re.search(r'^uid=\d+\(energystat\) .*groups=.*\(cgroup-energy\)',
                     out, re.M), out
    props = dict(ln.split('=', 1) for ln in
                 b.out('exporter_installed').splitlines() if '=' in ln)
    assert props.get('UnitFileState') == 'disabled', props
    assert props.get('ActiveState') == 'inactive', props


@pytest.mark.parametrize('i', [1, 4], ids=['before-the-first-load',
                                           'kernel-without-a-build'])
def test_exporter_serves_without_the_module(scenario, i):
    b = boot(scenario, i)
    if i == 1:
        b.ok('exporter_enable')
    exporter_runs(b)
    assert up(b, 'scrape') == 0


def test_exporter_reads_the_module_unprivileged(scenario):
    b = boot(scenario, 2)
    perms = b.ok('perms').split('\n')
    assert [ln.split()[1:] for ln in perms if ln] == \
        [['440', 'cgroup-energy']] * 2, perms
    exporter_runs(b)
    assert up(b, 'scrape') == 1
    assert 'cgroup="/system.slice"' in b.out('scrape'), b.out('scrape')
    b.ok('unload')
    assert up(b, 'scrape_unloaded') == 0
    b.ok('reload')
    assert up(b, 'scrape_reloaded') == 1
    exporter_runs(b, 'exporter_after')
    b3 = boot(scenario, 3)
    exporter_runs(b3)
    assert up(b3, 'scrape') == 1


def test_purge_keeps_the_system_accounts(scenario):
    b = boot(scenario, 4)
    b.ok('purge')
    out = b.ok('accounts')
    assert re.search(r'^cgroup-energy:x:\d+:energystat$', out, re.M), out


def prom_result(b, name):
    """promtool query instant -o json's vector: [(labels, value string)]."""
    return [(s['metric'], s['value'][1]) for s in json.loads(b.ok(name))]


def test_prometheus_scrapes_the_exporter_over_tls_with_basic_auth(scenario):
    """Debian's Prometheus scrapes the installed exporter over TLS with
    basic auth (the web configuration in /etc/default/energystat-exporter's
    ARGS): job tls is up, job wrong_password down with a 401. A service
    frozen, and two module samples taken, before Prometheus started: every
    value Prometheus stored of its energy is its energy.stat's energy_uj to
    the microjoule, and rate() over them is 0."""
    b = boot(scenario, 2)
    b.ok('tls_config')
    b.ok('frozen_start')
    energy = flat(b.ok('frozen_energy'))
    assert energy['energy_uj'] > 0, energy
    b.ok('prom_scraped')
    up_by_job = {m['job']: v for m, v in prom_result(b, 'prom_up')}
    assert up_by_job == {'tls': '1', 'wrong_password': '0'}, up_by_job
    (m, v), = prom_result(b, 'prom_frozen')
    assert m['job'] == 'tls', m
    assert Decimal(v) == Decimal(energy['energy_uj']) / 10**6, (v, energy)
    (m, v), = prom_result(b, 'prom_rate')
    assert float(v) == 0, v
    body = b.ok('prom_targets')
    targets = json.loads(body[body.index('{'):])['data']['activeTargets']
    errors = {tg['labels']['job']: tg['lastError'] for tg in targets}
    assert errors['tls'] == '', errors
    assert '401' in errors['wrong_password'], errors
    exporter_runs(b, 'exporter_tls')
    b.ok('tls_off')
