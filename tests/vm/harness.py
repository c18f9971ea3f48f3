# SPDX-License-Identifier: GPL-2.0
"""Boot a Debian kernel under QEMU (TCG) with the host root over 9p and run
shell commands in it.

    r = run_vm('6.1', ['uname -r', 'cat /proc/cmdline'])
    r[0].rc, r[0].output          # per command, in order (also r['name'])
    r.console, r.console_path, r.boot_time, r.dmesg

Commands may be a list, a dict {name: command} or one string.  Each runs as
`sh -c` in the repository root, one after the other, in one boot.  The verdict
comes from files the guest writes to a writable 9p export (the run directory,
.build/vm-runs/<flavour>-<time>-<pid>/, `last` links to the newest), never
from QEMU's exit status.  VMError (with .result holding whatever commands
completed) is raised on a kernel splat, a timeout or a missing verdict.  A
command's non-zero exit status is not an error: check rc, or r.check().

A suspend and resume cycle in the guest (run_vm's suspend=True):
SUSPEND_CYCLE.

CLI: harness.py [--flavour 6.1] [--console] [--suspend] -- 'cmd1' 'cmd2' ...
"""
import argparse
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import warnings
from dataclasses import dataclass, field
from pathlib import Path

try:
    from . import build, initramfs, kernels, monitor, pvh
except ImportError:                       # run as a script
    import build
    import initramfs
    import kernels
    import monitor
    import pvh

REPO = Path(__file__).resolve().parents[2]
GUEST_INIT = Path(__file__).resolve().parent / 'guest-init.sh'
QEMU = 'qemu-system-x86_64'
QEMU_MIN = (10, 0)
# no_timer_check: at boot, check_timer() (arch/x86/kernel/apic/io_apic.c)
# waits a fixed count of TSC cycles for the timer to tick four times, and
# panics if it did not; a TCG vCPU that the host does not run meanwhile
# misses that window (sid's guest beside another in the clean-clone run of
# 5a5d44c: "IO-APIC + timer doesn't work!" at 4 s). Guests of KVM and
# Hyper-V skip the check the same way (arch/x86/kernel/kvm.c,
# cpu/mshyperv.c: no_timer_check = 1).
BOOT_ARGS = 'console=ttyS0 panic=-1 oops=panic panic_on_warn=1 no_timer_check'
# A WARN() (panic_on_warn) or a panic ends the guest (panic=-1: QEMU runs
# with -no-reboot); one still running FATAL_GRACE s after either is
# stopped, not waited for to its timeout: a panic can hang in TCG before it
# reboots. Not lockdep's or might_sleep()'s reports, which do not panic.
# WARN()'s first line: "WARNING: CPU: 1 PID: 150 at file.c:11 func+0x5/0x10"
# to 6.x, "WARNING: file.c:11 at func+0x9/0xff0 [mod], CPU#0: insmod/157"
# in 7.x; not "RETBleed: WARNING: ..." nor lockdep's "WARNING: possible ...".
FATAL = re.compile(rb'(?:^|\]\s+)WARNING: (?:CPU: \d+ PID: \d+ at |'
                   rb'(?:\S+:\d+ )?at \S+.*, CPU#\d+: )|'
                   rb'Kernel panic - not syncing')
FATAL_GRACE = 60
# The guest CPU models, 'max' and the RAPL tests' Intel and AMD models
# alike, run without ERMS and FSRM by default.  TCG executes `rep movsb`
# and `rep stosb` one byte per iteration; with those flags the guest kernel
# copies and clears memory (copy_to_user, clear_page, memcpy) with them,
# without them with the 8-byte `rep movsq` and `rep stosq`
# (tests/results/cpu-flags.jsonl: in a 6.1 guest a 1.3 GB pipe copy took
# 13.5 s with them and 4.8 s without; test_engine, test_rapl_emu and
# test_impact on 6.1 331 s and 292 s; the server's package steps 894 s and
# 713 s).  The module reads neither flag.  make bench, make check's short bench and make
# validate keep the plain models (cpu_flags=''): their committed figures
# and the bench guard's threshold were measured on them.
CPU_FLAGS = 'erms=off,fsrm=off'


def cpu_option(model, flags=CPU_FLAGS):
    """QEMU's -cpu for @model: the model with @flags, if any."""
    return f'{model},{flags}' if flags else model


# A WARN() or lockdep report starts its line with WARNING:, after the
# timestamp; a subsystem's own "X: WARNING: ..." (RETBleed's mitigation note
# on the Skylake models the RAPL tests boot) is no splat.
SPLAT = re.compile(r'BUG:|(?:^|\]\s+)WARNING:|Oops|Call Trace|Kernel panic|'
                   r'kernel BUG at|general protection fault|UBSAN:|KASAN:')
# finished runs kept in the runs directory (CGE_KEEP_RUNS)
KEEP_RUNS = int(os.environ.get('CGE_KEEP_RUNS', 20))


class VMError(RuntimeError):
    """The VM run failed as a whole; .result has the partial results."""

    def __init__(self, msg, result=None):
        super().__init__(msg)
        self.result = result


@dataclass
class CommandResult:
    name: str
    cmd: str
    rc: int | None              # None: the command did not finish
    output: str

    @property
    def ok(self):
        return self.rc == 0


@dataclass
class VMResult:
    flavour: str
    kver: str
    rundir: Path
    results: list = field(default_factory=list)
    console: str = ''
    dmesg: str = ''
    boot_time: float | None = None   # QEMU start to guest init running, s
    duration: float = 0.0            # QEMU start to exit, s
    exit_status: int | None = None   # QEMU's (via timeout); informative only
    stuck_before_init: bool = False  # stopped at boot_deadline() (_boot)
    timed_out: bool = False          # stopped at the timeout (_boot)
    stopped_after_fatal: bool = False  # FATAL_GRACE s after a WARN or panic
    hang: list = field(default_factory=list)  # the vCPUs then (monitor.py)

    @property
    def console_path(self):
        return self.rundir / 'console.log'

    def __getitem__(self, key):
        if isinstance(key, str):
            for r in self.results:
                if r.name == key:
                    return r
            raise KeyError(key)
        return self.results[key]

    def __iter__(self):
        return iter(self.results)

    def __len__(self):
        return len(self.results)

    def check(self):
        """Raise AssertionError listing every command that did not exit 0."""
        bad = [r for r in self.results if not r.ok]
        if bad:
            raise AssertionError('\n'.join(
                f'[{r.name}] rc={r.rc}: {r.cmd}\n{r.output}' for r in bad))
        return self


def _normalise(commands):
    if isinstance(commands, str):
        commands = [commands]
    if isinstance(commands, dict):
        return [(str(k), v) for k, v in commands.items()]
    return [(str(i), c) for i, c in enumerate(commands)]


def _new_rundir(flavour):
    base = Path(os.environ.get('CGE_RUNS') or REPO / '.build' / 'vm-runs')
    base.mkdir(parents=True, exist_ok=True)
    # Only finished runs: another process's guest may still be writing to
    # its run directory (a day-old one without the marker was abandoned).
    stale = time.time() - 86400
    runs = sorted((p for p in base.iterdir()
                   if p.is_dir() and not p.is_symlink() and
                   ((p / '.done').exists() or p.stat().st_mtime < stale)),
                  key=lambda p: p.stat().st_mtime)
    for old in runs[:-KEEP_RUNS]:
        shutil.rmtree(old, ignore_errors=True)
    stamp = time.strftime('%Y%m%d-%H%M%S')
    d = base / f'{flavour}-{stamp}-{os.getpid()}-{time.monotonic_ns() % 10**6}'
    (d / 'cmd').mkdir(parents=True)
    (d / 'out').mkdir()
    last = base / 'last'
    tmp = base / f'.last.{os.getpid()}'
    tmp.unlink(missing_ok=True)
    tmp.symlink_to(d.name)
    tmp.replace(last)
    return d


def _splat_context(text):
    lines = text.splitlines()
    for i, line in enumerate(lines):
        if SPLAT.search(line):
            return line, '\n'.join(lines[max(0, i - 5):i + 45])
    return None, None


def _read(p):
    try:
        return p.read_text(errors='replace')
    except FileNotFoundError:
        return None


def _collect(res, cmds):
    out = res.rundir / 'out'
    for i, (name, cmd) in enumerate(cmds):
        rc = _read(out / f'{i:04d}.rc')
        res.results.append(CommandResult(
            name, cmd, int(rc) if rc and rc.strip().isdigit() else None,
            _read(out / f'{i:04d}.out') or ''))


def _fail(res, why, context=None):
    tail = context or '\n'.join(res.console.splitlines()[-60:])
    done = sum(r.rc is not None for r in res.results)
    raise VMError(f'VM {res.flavour} ({res.kver}): {why}\n'
                  f'commands finished: {done}/{len(res.results)}; '
                  f'console log: {res.console_path}\n'
                  f'--- console ---\n{tail}\n--- end ---', res)


def _pump(proc, log, t0, state, echo):
    with open(log, 'wb') as f:
        for line in proc.stdout:
            f.write(line)
            f.flush()
            if echo:
                sys.stderr.write(line.decode(errors='replace'))
            if b'cge-guest:' in line:
                state['guest'] = True
            if state.get('boot') is None and b'cge-guest: up' in line:
                state['boot'] = time.monotonic() - t0
            if state.get('fatal') is None and FATAL.search(line):
                state['fatal'] = time.monotonic() - t0


def smp_option(cpus, sockets=1, dies=1, threads=1):
    """QEMU's -smp: @cpus spread over @sockets packages of @dies dies each,
    @threads SMT siblings per core; the count alone when all are 1."""
    if sockets == dies == threads == 1:
        return str(cpus)
    if dies == threads == 1:
        return f'{cpus},sockets={sockets}'
    cores = cpus // (sockets * dies * threads)
    if cores * sockets * dies * threads != cpus:
        raise VMError(f'{cpus} CPUs are not {sockets} sockets x {dies} dies '
                      f'x {threads} threads of whole cores')
    return (f'{cpus},sockets={sockets},dies={dies},cores={cores},'
            f'threads={threads}')


def qemu_command(k, initrd, rundir, cpus, mem, append, cpu_model='max',
                 sockets=1, dies=1, threads=1, cpu_flags=CPU_FLAGS,
                 monitor_path=None, qemu_args=(), tcg_single=False):
    """@cpu_model: QEMU's -cpu (the RAPL tests use models whose vendor and
    model the module's detection accepts), with @cpu_flags (CPU_FLAGS);
    @sockets, @dies, @threads: the topology the @cpus are spread over
    (smp_option); @monitor_path: a socket for QEMU's human monitor;
    @qemu_args: more of QEMU's arguments (make bench's -plugin);
    @tcg_single: one host thread runs every vCPU (thread=single), where no
    vCPU can run code another has patched since it was translated
    (tests/vm/repro/mttcg-int3/)."""
    cmdline = f'{BOOT_ARGS} cge_init={GUEST_INIT} {append}'.strip()
    smp = smp_option(cpus, sockets, dies, threads)
    mon = (['-monitor', f'unix:{monitor_path},server=on,wait=off']
           if monitor_path else [])
    accel = 'tcg,thread=single' if tcg_single else 'tcg'
    return [QEMU, '-machine', 'q35', '-accel', accel, *mon,
            '-cpu', cpu_option(cpu_model, cpu_flags),
            '-smp', smp, '-m', str(mem), '-no-reboot', '-nographic',
            '-nodefaults', '-serial', 'stdio',
            '-kernel', str(pvh.boot_image(k)), '-initrd', str(initrd),
            '-append', cmdline,
            '-virtfs', 'local,path=/,mount_tag=hostroot,readonly=on,'
                       'security_model=none,multidevs=remap',
            '-virtfs', f'local,path={rundir},mount_tag=cgerun,'
                       'security_model=none,multidevs=remap', *qemu_args]


def qemu_version():
    """(major, minor) of the QEMU in PATH; None if it is not installed.
    VMError if its --version says no version."""
    if shutil.which(QEMU) is None:
        return None
    out = subprocess.run([QEMU, '--version'], capture_output=True,
                         text=True).stdout
    m = re.search(r'version (\d+)\.(\d+)', out)
    if not m:
        raise VMError(f'{QEMU} --version printed no version: {out.strip()!r}')
    return (int(m.group(1)), int(m.group(2)))


def check_qemu():
    """QEMU 10.0 or later. Under multi-threaded TCG, 7.2 (Debian 12's) can
    keep executing an int3 after the kernel has patched it out of its text
    (static keys, static calls: every tracepoint attach), and hang or oops
    the guest with or without our module; 10.0 did not in 960 cycles
    (tests/vm/repro/mttcg-int3/README.md)."""
    v = qemu_version()
    if v is None:
        raise VMError(f'{QEMU} not found: sh tests/deps.sh '
                      '(qemu-system-x86 from bookworm-backports)')
    if v < QEMU_MIN:
        raise VMError(f'{QEMU} {v[0]}.{v[1]} runs a stale int3 after the '
                      'kernel patches its text (tests/vm/repro/mttcg-int3/); '
                      f'the tests need {QEMU_MIN[0]}.{QEMU_MIN[1]} or later: '
                      'sh tests/deps.sh installs it from bookworm-backports')


# One suspend to RAM and resume, from a guest command of a suspend=True run.
# pm_test "core" runs the whole kernel path (tasks frozen, every device's
# suspend callbacks to noirq, non-boot CPUs off, syscore_ops) and resumes
# after PM_TEST_DELAY instead of entering the firmware's S3.  A real S3 does not work
# here: QEMU resets every device when it wakes the machine, and the 9p
# root hangs after resume (bzImage boot, RTC wake, with keep9p); a PVH boot
# is not resumed at all (SeaBIOS boots the kernel afresh); `rtcwake -m
# freeze` (s2idle) is never woken by the RTC alarm.
# pm_test's wait before it resumes: 1 s, not the kernel's 5 (a cycle took
# 1.5 s with it on 6.1 and sid, against 5.5 s)
PM_TEST_DELAY = 'echo 1 > /sys/module/suspend/parameters/pm_test_delay'
SUSPEND_CYCLE = (f'{PM_TEST_DELAY} && echo core > /sys/power/pm_test && '
                 'echo deep > /sys/power/mem_sleep && '
                 'echo mem > /sys/power/state')
KEEP9P = Path(__file__).resolve().parent / 'fixtures' / 'keep9p'

# Wall-clock seconds, from QEMU's start, that a boot may take to reach the
# guest's 'up' line (guest-init.sh prints it once its mounts are up, before
# any test command: no module code has run).  The guest's uptime at 'up'
# (a little less than the wall-clock time) was 2.7-61.5 s over 135 boots
# (median 3.9 s, the slowest on the KASAN kernel); in the 46 boots kept from
# a clean-clone make check and a debug stress beside emulated-RAPL boots,
# 5.9-11.5 s on Debian's kernels and 43.0-61.7 s on the KASAN kernel.  A
# guest can hang in the kernel's secondary-CPU bring-up: a sid guest stayed
# there 10 minutes on a host at load 5.4, an experimental one on EPYC-Rome's
# 4 vCPUs had not left it at 240 s in a clean-clone make check (f208739's,
# which lost those 240 s).  Debian's kernels get BOOT_DEADLINE, 90 s (8
# times their slowest boot), the kernels we build (kernels.OTHER_FLAVOURS:
# the debug kernel) DEBUG_BOOT_DEADLINE, 240 s (4 times its slowest).
BOOT_DEADLINE = 90
DEBUG_BOOT_DEADLINE = 240
# seconds past a boot's timeout before timeout(1) kills QEMU: the dump of its
# vCPUs (monitor.dump: 3 s, 15 at most) and _stop's 20 s fit in it
HANG_GRACE = 60


def boot_deadline(flavour):
    if flavour in kernels.OTHER_FLAVOURS:
        return DEBUG_BOOT_DEADLINE
    return BOOT_DEADLINE


def run_vm(flavour, commands, timeout=300, cpus=2, mem='1G', append='',
           echo=False, cpu_model='max', sockets=1, dies=1, threads=1,
           suspend=False, cpu_flags=CPU_FLAGS, hold_tracepoints=True,
           qemu_args=(), tcg_single=False):
    """Boot flavour once, run commands in order; returns VMResult.
    @cpu_model, @sockets, @dies, @threads, @cpu_flags, @qemu_args,
    @tcg_single: see qemu_command.
    @hold_tracepoints: before the commands, the guest enables the trace
    events of the tracepoints the module hooks (sched_switch,
    cgroup_attach_task, cgroup_rmdir) with tracing_on 0, so that loading
    and unloading the module never live-patches kernel text: QEMU 10.0's
    multi-threaded TCG can still run a stale int3
    (tests/vm/repro/mttcg-int3/).  make bench turns it off, to measure the
    module as on a server.
    @suspend: the commands may suspend and resume the guest (SUSPEND_CYCLE): a first
    command loads the keep9p fixture, which keeps the 9p filesystems out
    of system sleep (virtio-pci resets their devices at resume and
    9pnet_virtio cannot restore them); it is named 'keep9p'.

    Any failure raises VMError.  The one boot retried is one that did not
    reach the guest's init within boot_deadline() s, whose QEMU aborted
    on an assertion before it, whose kernel warned or panicked before it
    (a starved vCPU trips the kernel's own checks, such as
    sched_tick_remote()'s 3 s tick stall on a nohz_full CPU), or whose
    kernel miscalibrated its clock (BAD_CLOCK): it failed before any
    command, so before any module code, ran; the retry says so on stderr."""
    check_qemu()
    k = kernels.kernel(flavour)
    initrd = initramfs.build(k)
    cmds = _normalise(commands)
    if suspend:
        cmds.insert(0, ('keep9p',
                        f'insmod {build.build_external(KEEP9P, flavour)}'))
    hw = {'cpu_model': cpu_model, 'sockets': sockets, 'dies': dies,
          'threads': threads, 'cpu_flags': cpu_flags,
          'qemu_args': tuple(qemu_args), 'tcg_single': tcg_single}
    res = _boot(k, initrd, cmds, flavour, timeout, cpus, mem, append, echo,
                hw, hold_tracepoints)
    abort = _qemu_abort_before_init(res)
    clock = _bad_clock(res)
    early = _splat_before_init(res)
    if res.stuck_before_init or abort or clock or early:
        if not early:
            _check_splats(res)
        why = (f'QEMU aborted ({abort})' if abort else
               f'miscalibrated its clock ({clock})' if clock else
               f'had a kernel splat ({early})' if early else
               f'did not reach the guest\'s init in '
               f'{boot_deadline(flavour)} s')
        msg = (f'vm: {flavour} {why}, before any command ran (console: '
               f'{res.console_path}): booting it again')
        print(msg, file=sys.stderr, flush=True)
        warnings.warn(msg)      # in pytest's summary, which hides stderr
        res = _boot(k, initrd, cmds, flavour, timeout, cpus, mem, append,
                    echo, hw, hold_tracepoints)
    _check_splats(res)
    if res.stuck_before_init:
        _fail(res, 'the guest did not reach its init in '
                   f'{boot_deadline(flavour)} s '
                   'twice')
    abort = _qemu_abort_before_init(res)
    if abort:
        _fail(res, f'QEMU aborted before the guest\'s init twice: {abort}')
    clock = _bad_clock(res)
    if clock:
        _fail(res, f'the guest miscalibrated its clock twice: {clock}')
    if res.timed_out:
        _fail(res, f'timed out after {timeout} s; the vCPUs then '
                   f'({res.rundir / "hang.txt"}):\n' + '\n'.join(res.hang))
    if res.exit_status in (124, 137):
        _fail(res, f'timed out after {timeout} s; QEMU was killed '
                   f'{HANG_GRACE} s later, with no dump of its vCPUs')
    if (_read(res.rundir / 'verdict') or '').strip() != 'ok':
        _fail(res, 'no verdict from the guest (it crashed, rebooted or '
                   'powered off early)')
    if hold_tracepoints:
        _check_hold(res)
    return res


# The trace events guest-init.sh holds on (run_vm's hold_tracepoints).
HELD = ('sched_switch', 'cgroup_attach_task', 'cgroup_rmdir')


def _check_hold(res):
    """A guest that did not hold every event of HELD let the module's
    load patch kernel text: a failure, not a silent change."""
    m = re.search(r'cge-guest: holding trace events on:(.*)', res.console)
    held = m.group(1).split() if m else []
    missing = [e for e in HELD if e not in held]
    if missing:
        _fail(res, f'the guest did not hold the trace events {missing} on '
                   '(tests/vm/guest-init.sh)')


# An assertion of QEMU's own device model, as QEMU 10.0 under TCG hit in
# one boot of a 6.1 guest on -cpu EPYC-Rome while the kernel probed PCI
# (hw/pci/msix.c: msix_table_mmio_write: Assertion `addr + size <=
# dev->msix_entries_nr * PCI_MSIX_ENTRY_SIZE' failed).
QEMU_ABORT = re.compile(r'qemu-system-\S+: (\S+: \S+: Assertion .* failed)')


# guest-init.sh's line when the guest kernel's clock calibration failed,
# before any command ran
BAD_CLOCK = re.compile(r'cge-guest: bad clock: (.*)')


def _bad_clock(res):
    """The kernel's line if the guest found its clock miscalibrated (so it
    ran no command), else None."""
    m = BAD_CLOCK.search(res.console)
    return m.group(1).strip() if m else None


def _splat_before_init(res):
    """The kernel's splat line if the guest's kernel warned or panicked
    before the guest's init printed anything (so before any command, any
    module code, ran), else None."""
    if 'cge-guest:' in res.console:
        return None
    line, _ = _splat_context(res.console)
    return line.strip() if line else None


def _qemu_abort_before_init(res):
    """QEMU's assertion if QEMU aborted before the guest's init printed
    anything (so before any command, any module code, ran), else None."""
    if 'cge-guest:' in res.console:
        return None
    m = QEMU_ABORT.search(res.console)
    return m.group(1) if m else None


def _check_splats(res):
    for text in (res.console, res.dmesg):
        line, ctx = _splat_context(text)
        if line:
            _fail(res, f'kernel splat: {line.strip()}', ctx)


def _stop(proc):
    """Stop QEMU through timeout(1), which passes SIGTERM on to it."""
    proc.terminate()
    try:
        return proc.wait(20)
    except subprocess.TimeoutExpired:
        proc.kill()
        return proc.wait()


def _before_init(state, rundir):
    """No line of the guest's init yet, and no command started."""
    return not state.get('guest') and not any((rundir / 'out').iterdir())


def _commit():
    """The commit the run tests, '+dirty' when the tree differs from it."""
    def git(*a):
        return subprocess.run(['git', '-C', str(REPO), *a], text=True,
                              capture_output=True).stdout.strip()
    head = git('rev-parse', '--short=12', 'HEAD') or 'unknown'
    return head + ('+dirty' if git('status', '--porcelain', '--', 'kmod',
                                   'include', 'Kbuild', 'tests/vm') else '')


def _boot(k, initrd, cmds, flavour, timeout, cpus, mem, append, echo, hw,
          hold):
    """One boot in a new run directory; a boot still short of the guest's
    'up' line after boot_deadline() s is stopped there, one still running
    at @timeout s is stopped after its vCPUs are dumped to hang.txt
    (monitor.dump).  timeout(1) stops QEMU HANG_GRACE s later if this
    process cannot.  @hold: run_vm's hold_tracepoints."""
    rundir = _new_rundir(flavour)
    for i, (_, cmd) in enumerate(cmds):
        (rundir / 'cmd' / f'{i:04d}').write_text(cmd + '\n')
    (rundir / 'config').write_text(
        f'REPO={shlex.quote(str(REPO))}\nCGE_FLAVOUR={shlex.quote(flavour)}\n'
        f'CGE_KVER={shlex.quote(k.kver)}\nCGE_COMMIT={_commit()}\n'
        f'CGE_HOLD_TP={int(bool(hold))}\n')
    res = VMResult(flavour, k.kver, rundir)
    state = {}
    # a unix socket's path has at most 107 bytes: in /tmp, not in the run
    # directory or $TMPDIR
    with tempfile.TemporaryDirectory(prefix='cge-mon-', dir='/tmp') as d:
        mon = Path(d) / 'hmp'
        argv = ['timeout', '-k', '5', str(int(timeout) + HANG_GRACE),
                *qemu_command(k, initrd, rundir, cpus, mem, append, **hw,
                              monitor_path=mon)]
        (rundir / 'qemu.cmd').write_text(shlex.join(argv) + '\n')
        t0 = time.monotonic()
        proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL,
                                stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT)
        pump = threading.Thread(target=_pump, daemon=True,
                                args=(proc, res.console_path, t0, state,
                                      echo))
        pump.start()
        try:
            while res.exit_status is None:
                try:
                    res.exit_status = proc.wait(2)
                except subprocess.TimeoutExpired:
                    now = time.monotonic() - t0
                    if (_before_init(state, rundir) and
                            now >= boot_deadline(flavour)):
                        res.stuck_before_init = True
                        res.exit_status = _stop(proc)
                    elif (state.get('fatal') is not None and
                          now > state['fatal'] + FATAL_GRACE):
                        res.stopped_after_fatal = True
                        res.exit_status = _stop(proc)
                    elif now > timeout:
                        text, res.hang = monitor.dump(mon)
                        (rundir / 'hang.txt').write_text(text)
                        res.timed_out = True
                        res.exit_status = _stop(proc)
        finally:                # an exception here must not leave QEMU
            if proc.poll() is None:
                _stop(proc)
    pump.join(10)
    (rundir / '.done').touch()
    res.duration = time.monotonic() - t0
    res.boot_time = state.get('boot')
    res.console = (_read(res.console_path) or '').replace('\r', '')
    res.dmesg = _read(rundir / 'dmesg') or ''
    _collect(res, cmds)
    boot = f'{res.boot_time:.1f} s' if res.boot_time else 'n/a'
    print(f'vm: {flavour} ({k.kver}) boot {boot}, total {res.duration:.1f} s, '
          f'log {res.console_path}', file=sys.stderr, flush=True)
    _log_boot(res)
    return res


def _log_boot(res):
    """One line per boot in $CGE_BOOT_LOG (make check sets it: its summary
    says how long the guests took to come up, as a measure of the host)."""
    path = os.environ.get('CGE_BOOT_LOG')
    if not path:
        return
    test = os.environ.get('PYTEST_CURRENT_TEST', '').split(' ')[0]
    rec = {'flavour': res.flavour, 'test': test,
           'up_s': round(res.boot_time, 2) if res.boot_time else None,
           'total_s': round(res.duration, 1), 'timed_out': res.timed_out,
           'stopped_after_fatal': res.stopped_after_fatal,
           'stuck_before_init': res.stuck_before_init}
    with open(path, 'a') as f:      # one write per line: O_APPEND
        f.write(json.dumps(rec) + '\n')


def main(argv=None):
    ap = argparse.ArgumentParser(
        description='Run shell commands in a test VM, print their output.')
    ap.add_argument('--flavour', default='6.1',
                    choices=kernels.known_flavours())
    ap.add_argument('--timeout', type=int, default=300)
    ap.add_argument('--cpus', type=int, default=2)
    ap.add_argument('--mem', default='1G')
    ap.add_argument('--append', default='', help='extra kernel arguments')
    ap.add_argument('--cpu-model', default='max',
                    help=f"QEMU's -cpu model (with {CPU_FLAGS})")
    ap.add_argument('--sockets', type=int, default=1)
    ap.add_argument('--dies', type=int, default=1, help='dies per socket')
    ap.add_argument('--threads', type=int, default=1,
                    help='SMT threads per core')
    ap.add_argument('--suspend', action='store_true',
                    help='the commands may suspend the guest (SUSPEND_CYCLE)')
    ap.add_argument('--console', action='store_true',
                    help='stream the guest console to stderr')
    ap.add_argument('commands', nargs='+')
    a = ap.parse_args(argv)
    err = None
    try:
        res = run_vm(a.flavour, a.commands, timeout=a.timeout, cpus=a.cpus,
                     mem=a.mem, append=a.append, echo=a.console,
                     cpu_model=a.cpu_model, sockets=a.sockets,
                     dies=a.dies, threads=a.threads, suspend=a.suspend)
    except VMError as e:
        err, res = e, e.result
    except (kernels.KernelError, initramfs.InitramfsError,
            build.BuildError) as e:
        print(f'harness: error: {e}', file=sys.stderr)
        return 2
    for r in (res.results if res else []):
        print(f'=== [{r.name}] $ {r.cmd}   (rc={r.rc})')
        sys.stdout.write(r.output if r.output.endswith('\n') or not r.output
                         else r.output + '\n')
    sys.stdout.flush()
    if err:
        print(f'harness: {err}', file=sys.stderr)
        return 2
    return 0 if all(r.ok for r in res.results) else 1


if __name__ == '__main__':
    sys.exit(main())
