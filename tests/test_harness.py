# SPDX-License-Identifier: GPL-2.0
"""Tests of the VM harness itself: boots, runs commands, catches splats."""
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from vm import harness, initramfs, kernels, pins

WARN_FIXTURE = Path(__file__).resolve().parent / 'vm' / 'fixtures' / 'warn'

CHECKS = {
    'uname': 'uname -r',
    'cmdline': 'cat /proc/cmdline',
    'python': '/usr/bin/python3 -c "import os, sys; '
              'print(6 * 7, os.environ[\'PYTHONDONTWRITEBYTECODE\'], sys.version_info[0])"',
    'cgroup2': 'stat -f -c %T /sys/fs/cgroup && grep "^cgroup2 /sys/fs/cgroup " /proc/mounts',
    'cwd': 'pwd',
    'ro_root': 'touch /cge-ro-probe',
    'tmp_rw': 'echo hi >/tmp/x && cat /tmp/x',
    'rc': 'echo out; echo err >&2; exit 3',
    'nproc': 'nproc',
}


@pytest.fixture(scope='module')
def warn_run(vm, vm_flavour):
    """One boot per flavour: CHECKS, then the warn fixture's insmod, last.
    Its WARN_ON (panic_on_warn) fails the run: the VMError is returned, its
    .result holding the checks' results."""
    ko = vm.build_external(WARN_FIXTURE, vm_flavour)
    try:
        vm.run({**CHECKS, 'before': 'echo before', 'insmod': f'insmod {ko}',
                'after': 'echo after'}, flavour=vm_flavour)
    except harness.VMError as e:
        if 'warn_fixture' not in str(e):
            raise                           # the run failed before the WARN
        return e
    pytest.fail('the warn fixture\'s insmod did not fail the run')


@pytest.fixture(scope='module')
def guest(warn_run):
    return warn_run.result


def test_boot_and_commands(guest, vm_flavour):
    kver = kernels.resolve(vm_flavour)
    assert guest['uname'].output.strip() == kver
    cmdline = guest['cmdline'].output
    for arg in ('console=ttyS0', 'panic=-1', 'oops=panic', 'panic_on_warn=1',
                'no_timer_check'):
        assert arg in cmdline.split()
    assert guest['python'].output.split() == ['42', '1', '3']
    assert guest['cgroup2'].rc == 0 and 'cgroup2fs' in guest['cgroup2'].output
    assert guest['cwd'].output.strip() == str(harness.REPO)
    assert guest['ro_root'].rc != 0, 'the host root must be read-only'
    assert guest['tmp_rw'].output.strip() == 'hi'
    assert guest['rc'].rc == 3 and guest['rc'].output.split() == ['out', 'err']
    assert guest['nproc'].output.strip() == '2'
    assert guest.boot_time is not None and guest.boot_time < guest.duration
    # The guest's init ran every check to its end (the run ends in the warn
    # fixture's panic, not in its 'done').
    assert guest.console_path.exists()
    for i, name in enumerate(CHECKS):
        rc = guest[name].rc
        assert f'cge-guest: cmd {i:04d} rc={rc}' in guest.console, name
    print(f'boot {guest.boot_time:.1f} s, run {guest.duration:.1f} s')


def test_result_access(guest):
    n = len(CHECKS)
    assert guest[0] is guest['uname'] and len(guest) == n + 3
    assert [r.name for r in guest][:n] == list(CHECKS)
    with pytest.raises(AssertionError, match='rc=3'):
        guest.check()


def test_warn_is_caught(warn_run):
    msg = str(warn_run)
    assert 'WARNING:' in msg and 'warn_fixture' in msg
    res = warn_run.result
    assert res['before'].rc == 0 and res['before'].output == 'before\n'
    assert res['insmod'].rc is None and res['after'].rc is None


# ---- host only -------------------------------------------------------------

@pytest.mark.parametrize('line,fatal', [
    # WARN() to 6.x (6.12 on Debian 12) and in 7.x (sid's 7.2)
    (b'[    5.880975] WARNING: CPU: 1 PID: 150 at /x/warn_fixture.c:11 '
     b'warn_fixture_init+0x5/0x1000 [warn_fixture]', True),
    (b'[    5.705175] WARNING: warn_fixture.c:11 at warn_fixture_init+0x9/'
     b'0xff0 [warn_fixture], CPU#0: insmod/157', True),
    (b'[   13.000000] Kernel panic - not syncing: panic_on_warn set', True),
    # reports that do not panic: the guest goes on
    (b'[    0.019637] RETBleed: WARNING: Spectre v2 mitigation leaves CPU '
     b'vulnerable to RETBleed attacks, data leaks possible!', False),
    (b'[   12.100000] WARNING: possible circular locking dependency detected',
     False),
    (b'[   12.100000] BUG: sleeping function called from invalid context at '
     b'kernel/x.c:1', False),
])
def test_fatal_lines(line, fatal):
    """The console lines after which the guest must end (harness.FATAL)."""
    assert bool(harness.FATAL.search(line + b'\r\n')) is fatal



# the kernel release (`uname -r` in the guest) each flavour must boot
KVER_FORMS = {
    '5.10': r'5\.10\.\d+-\d+-amd64',
    '6.1': r'6\.1\.\d+-\d+-amd64',
    '6.1-rt': r'6\.1\.\d+-\d+-rt-amd64',
    '6.12': r'6\.12\.\d+\S*(?<!-rt)-amd64',
    '6.12-rt': r'6\.12\.\d+\S*-rt-amd64',
    'sid': r'\d+\.\d+\.\d+\S*(?<!-rt)-amd64',
    # a release candidate has no third number: 7.3-amd64
    'experimental': r'\d+\.\d+(\.\d+\S*)?(?<!-rt)-amd64',
}


def test_resolver_versions():
    """The pinned kernels (what test_boot_and_commands expects of `uname -r`)
    have the form of their flavour; tests/test_kernels.py checks the choice."""
    lock = pins.read()
    assert sorted(KVER_FORMS) == sorted(kernels.FLAVOURS)
    for flavour, form in KVER_FORMS.items():
        assert re.fullmatch(form, lock[flavour].kver), (flavour, lock[flavour])
    with pytest.raises(kernels.KernelError):
        kernels.resolve('4.19')


def test_splat_patterns():
    log = 'ok\n[ 1.0] WARNING: CPU: 0 PID: 1 at x.c:1 f+0x1/0x2\nmore\n'
    line, ctx = harness._splat_context(log)
    assert line.startswith('[ 1.0] WARNING:') and 'more' in ctx
    assert harness._splat_context('cge-guest: done\n') == (None, None)
    for s in ('BUG: kernel NULL pointer', 'Oops: 0000', 'Call Trace:',
              'Kernel panic - not syncing', 'kernel BUG at mm/x.c:1',
              'WARNING: possible circular locking dependency detected',
              '[    3.1] WARNING: suspicious RCU usage'):
        assert harness.SPLAT.search(s)
    assert not harness.SPLAT.search(
        '[    0.405478] RETBleed: WARNING: Spectre v2 mitigation leaves CPU '
        'vulnerable to RETBleed attacks, data leaks possible!')


def test_normalise_commands():
    assert harness._normalise('true') == [('0', 'true')]
    assert harness._normalise(['a', 'b']) == [('0', 'a'), ('1', 'b')]
    assert harness._normalise({'x': 'a'}) == [('x', 'a')]


def test_cpio_writer(tmp_path):
    c = initramfs.Cpio()
    c.dir('bin')
    c.file('bin/hello', b'hello\n', 0o755)
    c.chardev('console', 5, 1)
    p = tmp_path / 'a.cpio'
    p.write_bytes(c.bytes())
    out = subprocess.run(['cpio', '-itv', '-F', str(p)], capture_output=True,
                         text=True, check=True).stdout
    assert re.search(r'^drwxr-xr-x .* bin$', out, re.M)
    assert re.search(r'^-rwxr-xr-x .* 6 .* bin/hello$', out, re.M)
    assert re.search(r'^crw------- .* 5,\s*1 .* console$', out, re.M)


def test_old_qemu_refused(monkeypatch):
    monkeypatch.setattr(harness, 'qemu_version', lambda: (7, 2))
    with pytest.raises(harness.VMError, match='stale int3.*10.0 or later'):
        harness.run_vm('6.1', 'true')
    monkeypatch.setattr(harness, 'qemu_version', lambda: None)
    with pytest.raises(harness.VMError, match='not found'):
        harness.run_vm('6.1', 'true')


def stub_boot(monkeypatch, tmp_path, script):
    """run_vm with a 2 s boot deadline, run directories in tmp_path and
    `sh -c script` for QEMU."""
    monkeypatch.setenv('CGE_RUNS', str(tmp_path))
    monkeypatch.setattr(harness, 'BOOT_DEADLINE', 2)
    monkeypatch.setattr(harness, 'DEBUG_BOOT_DEADLINE', 2)
    monkeypatch.setattr(harness, 'check_qemu', lambda: None)
    monkeypatch.setattr(harness.kernels, 'kernel',
                        lambda f: kernels.Kernel(f, '6.1.0-test', tmp_path))
    monkeypatch.setattr(harness.initramfs, 'build', lambda k: None)
    monkeypatch.setattr(harness, 'qemu_command',
                        lambda *a, **kw: ['sh', '-c', script])


def test_boot_stuck_before_init_is_retried_once(monkeypatch, tmp_path,
                                                  capsys):
    # a "QEMU" that never reaches the guest's init: stopped at the deadline,
    # booted once more, then a failure that says so
    stub_boot(monkeypatch, tmp_path, 'echo smpboot; exec sleep 60')
    t0 = time.monotonic()
    with pytest.raises(harness.VMError, match='did not reach its init in 2 s '
                       'twice'), pytest.warns(UserWarning, match='again'):
        harness.run_vm('6.1', 'true', timeout=60)
    assert time.monotonic() - t0 < 20
    assert 'booting it again' in capsys.readouterr().err
    runs = [d for d in tmp_path.iterdir() if not d.is_symlink()]
    assert len(runs) == 2
    assert all('smpboot' in (d / 'console.log').read_text() for d in runs)


def test_boots_logged_for_make_checks_summary(monkeypatch, tmp_path):
    # a host test's stub boots reach no boot log (conftest removes
    # CGE_BOOT_LOG, which make check sets); with one set, each boot is a
    # line: flavour, test, up time, total, stopped at the deadline or not
    assert 'CGE_BOOT_LOG' not in os.environ
    log = tmp_path / 'boots.jsonl'
    monkeypatch.setenv('CGE_BOOT_LOG', str(log))
    stub_boot(monkeypatch, tmp_path / 'runs', 'echo smpboot; exec sleep 60')
    with pytest.raises(harness.VMError), pytest.warns(UserWarning):
        harness.run_vm('6.1', 'true', timeout=60)
    recs = [json.loads(x) for x in log.read_text().splitlines()]
    assert len(recs) == 2, recs
    for r in recs:
        assert r['flavour'] == '6.1' and r['up_s'] is None, r
        assert r['stuck_before_init'] is True and r['timed_out'] is False, r
        assert r['test'].endswith('test_boots_logged_for_make_checks_summary')
        assert 1.5 <= r['total_s'] < 20, r


def test_boot_with_a_bad_clock_is_retried_once(monkeypatch, tmp_path,
                                               capsys):
    # guest-init.sh found the kernel's TSC calibration failed and ran no
    # command (the sid boot's line): booted once more, then a failure
    line = ('tsc: PIT calibration deviates from HPET: 64519 2596151')
    stub_boot(monkeypatch, tmp_path, f'echo "cge-guest: bad clock: {line}"')
    with pytest.raises(harness.VMError, match='miscalibrated its clock '
                       'twice: tsc: PIT'), pytest.warns(UserWarning,
                                                         match='again'):
        harness.run_vm('6.1', 'true', timeout=60)
    assert 'miscalibrated its clock' in capsys.readouterr().err
    assert len([d for d in tmp_path.iterdir() if not d.is_symlink()]) == 2


def test_boot_with_a_splat_before_init_is_retried_once(monkeypatch,
                                                       tmp_path, capsys):
    # the kernel's own tick-stall WARN on a nohz_full CPU whose vCPU the
    # host starved, before the guest's init printed anything (6.12-rt's
    # console, panic_on_warn): no module code ran, so booted once more;
    # the same splat twice fails with the splat
    warn = ('[   12.120711] WARNING: CPU: 0 PID: 12 at kernel/sched/core.c:'
            '5782 sched_tick_remote+0x17b/0x1a0')
    stub_boot(monkeypatch, tmp_path, f'echo "{warn}"')
    with pytest.raises(harness.VMError, match='kernel splat: .*'
                       'sched_tick_remote'), pytest.warns(UserWarning,
                                                          match='again'):
        harness.run_vm('6.1', 'true', timeout=60)
    assert 'had a kernel splat' in capsys.readouterr().err
    assert len([d for d in tmp_path.iterdir() if not d.is_symlink()]) == 2

    class Res:
        console = warn + '\n'
    assert harness._splat_before_init(Res).endswith('sched_tick_remote'
                                                    '+0x17b/0x1a0')
    # once the guest's init printed a line, a command (module code) may
    # have run: a splat is the run's failure, never retried
    Res.console = 'cge-guest: up 5.1\n' + warn + '\n'
    assert harness._splat_before_init(Res) is None


def test_boot_past_init_is_not_retried(monkeypatch, tmp_path):
    # the guest's init has printed a line: whatever happens next is a
    # failure of the run, not a boot to retry
    stub_boot(monkeypatch, tmp_path,
              'echo "cge-guest: mounting"; exec sleep 60')
    with pytest.raises(harness.VMError, match='timed out after 4 s') as e:
        harness.run_vm('6.1', 'true', timeout=4)
    assert 'no answer from the QEMU monitor' in str(e.value)
    assert len([d for d in tmp_path.iterdir() if not d.is_symlink()]) == 1


# A QEMU human monitor as QEMU 10.0 answers on its socket (the command line
# echoed with terminal escapes, \r\n line ends), for two vCPUs: vCPU 0
# spins with interrupts off, vCPU 1 is idle.
FAKE_MONITOR = r'''
import socket, sys
print('cge-guest: up 1.00', flush=True)
srv = socket.socket(socket.AF_UNIX)
srv.bind(sys.argv[1])
srv.listen(8)
regs = ('CPU#0\r\nRAX=0000000000000000 RSP=ffffc900003ebac8\r\n'
        'RIP=ffffffff81a5258c RFL=00000046 [---Z-P-] CPL=0 II=0 A20=1 '
        'SMM=0 HLT=0\r\nCPU#1\r\nRSP=ffffffff82a03e98\r\n'
        'RIP=ffffffff81a592eb RFL=00000212 [----A--] CPL=0 II=0 A20=1 '
        'SMM=0 HLT=1\r\n')
while True:
    c, _ = srv.accept()
    c.sendall(b"QEMU 10.0.2 monitor - type 'help'\r\n(qemu) ")
    for line in c.makefile('rb'):
        cmd = line.decode().strip()
        out = (regs if cmd == 'info registers -a' else
               'ffffffff81a5258b: 0x0f 0x1f 0x44 0x00\r\n'
               if cmd.startswith('x/16xb 0xffffffff81a5258b') else
               'ffffc900003ebac8: 0xffffffff81a52600\r\n'
               if cmd == 'x/48gx 0xffffc900003ebac8' else '')
        c.sendall(f'{cmd[0]}\x1b[K{cmd}\x1b[K\r\n{out}(qemu) '.encode())
    c.close()
'''


def test_timeout_dumps_the_vcpus(monkeypatch, tmp_path):
    # a guest that stops making progress: at the timeout the harness asks
    # QEMU's monitor what each vCPU is doing, writes it all to hang.txt and
    # says it in the error
    stub_boot(monkeypatch, tmp_path, '')
    fake = tmp_path / 'fake_qemu.py'
    fake.write_text(FAKE_MONITOR)
    monkeypatch.setattr(harness, 'qemu_command',
                        lambda *a, monitor_path=None, **kw:
                        [sys.executable, str(fake), str(monitor_path)])
    with pytest.raises(harness.VMError, match='timed out after 4 s') as e:
        harness.run_vm('6.1', 'true', timeout=4)
    msg = str(e.value)
    assert ('vCPU 0: RIP ffffffff81a5258c (5 samples), interrupts off\n'
            in msg), msg
    assert ('vCPU 1: RIP ffffffff81a592eb (5 samples), interrupts on, '
            'halted\n' in msg), msg
    hang = (e.value.result.rundir / 'hang.txt').read_text()
    assert 'RFL=00000046' in hang and '\x1b' not in hang
    assert '(qemu) x/16xb 0xffffffff81a5258b\nffffffff81a5258b: 0x0f' in hang
    assert '(qemu) x/48gx 0xffffc900003ebac8\nffffc900003ebac8: 0xffff' in hang
    assert e.value.result.timed_out


def test_installed_qemu_is_new_enough():
    # tests/deps.sh installs it from bookworm-backports
    v = harness.qemu_version()
    assert v is not None and v >= harness.QEMU_MIN, v



def test_qemu_topology(monkeypatch, tmp_path):
    monkeypatch.setattr(harness.pvh, 'boot_image', lambda k: 'vmlinux')

    def smp(**kw):
        argv = harness.qemu_command(None, 'initrd', tmp_path,
                                    kw.pop('cpus', 2), '1G', '', **kw)
        return argv[argv.index('-smp') + 1]
    # a plain boot's -smp as before
    assert smp() == '2' and smp(sockets=2) == '2,sockets=2'
    assert smp(cpus=4, threads=2) == '4,sockets=1,dies=1,cores=2,threads=2'
    assert smp(cpus=4, dies=2) == '4,sockets=1,dies=2,cores=2,threads=1'
    with pytest.raises(harness.VMError, match='whole cores'):
        smp(cpus=3, threads=2)


def test_suspend_loads_keep9p_first(monkeypatch, tmp_path):
    # suspend=True: the keep9p fixture is loaded before the commands
    seen = {}
    monkeypatch.setattr(harness, 'check_qemu', lambda: None)
    monkeypatch.setattr(harness.kernels, 'kernel',
                        lambda f: kernels.Kernel(f, '6.1.0-test', tmp_path))
    monkeypatch.setattr(harness.initramfs, 'build', lambda k: None)
    monkeypatch.setattr(harness.build, 'build_external',
                        lambda src, flavour: f'{Path(src).name}.ko')

    def boot(k, initrd, cmds, *a):
        seen['cmds'] = cmds
        raise harness.VMError('stop')
    monkeypatch.setattr(harness, '_boot', boot)
    with pytest.raises(harness.VMError, match='stop'):
        harness.run_vm('6.1', ['true'], suspend=True)
    assert seen['cmds'] == [('keep9p', 'insmod keep9p.ko'), ('0', 'true')]


def test_qemu_abort_before_init_is_recognised():
    # the console of the EPYC-Rome boot whose QEMU aborted probing PCI
    line = ("[    2.250954] pci 0000:00:02.0: BAR 0 [io  0xc080-0xqemu-system-"
            "x86_64: hw/pci/msix.c:228: msix_table_mmio_write: Assertion "
            "`addr + size <= dev->msix_entries_nr * PCI_MSIX_ENTRY_SIZE' "
            "failed.\n")

    class Res:
        console = line
    assert harness._qemu_abort_before_init(Res).startswith(
        'hw/pci/msix.c:228: msix_table_mmio_write: Assertion')
    # once the guest's init ran, commands (module code) may have run: no
    # retry, whatever QEMU did
    Res.console = 'cge-guest: up 5.1\n' + line
    assert harness._qemu_abort_before_init(Res) is None
    Res.console = '[    2.2] pci 0000:00:02.0: BAR 0\n'
    assert harness._qemu_abort_before_init(Res) is None


def test_boot_deadline_per_kernel():
    # Debian's kernels boot in 6-12 s, the debug kernel in 43-62 s (harness)
    assert harness.boot_deadline('experimental') == 90
    assert harness.boot_deadline('6.1-rt') == 90
    assert harness.boot_deadline('debug') == 240


@pytest.mark.parametrize('held, hold, ok', [
    ('sched_switch cgroup_attach_task cgroup_rmdir', True, True),
    ('sched_switch', True, False),
    ('', False, True)])
def test_a_guest_that_did_not_hold_fails(monkeypatch, tmp_path, held, hold,
                                         ok):
    # guest-init.sh says which trace events it holds on; with the hold, a
    # guest that misses one would let the module's load patch kernel text
    stub_boot(monkeypatch, tmp_path, '')
    monkeypatch.setattr(
        harness, 'qemu_command',
        lambda k, initrd, rundir, *a, **kw: [
            'sh', '-c', 'echo "cge-guest: up 1.00"; '
            + (f'echo "cge-guest: holding trace events on: {held}"; '
               if hold else '') + f'echo ok >{rundir}/verdict'])
    if ok:
        harness.run_vm('6.1', [], timeout=30, hold_tracepoints=hold)
        return
    with pytest.raises(harness.VMError, match=r"did not hold the trace "
                       r"events \['cgroup_attach_task', 'cgroup_rmdir'\]"):
        harness.run_vm('6.1', [], timeout=30, hold_tracepoints=hold)
