# SPDX-License-Identifier: GPL-2.0
"""Debug kernel for the stress suite: Debian's linux-source-6.1 built with
KASAN, lockdep (PROVE_LOCKING), DEBUG_ATOMIC_SLEEP, DEBUG_PREEMPT,
DEBUG_OBJECTS and KMEMLEAK, and with module signing enforced
(MODULE_SIG_FORCE) by a test key in its keyring; cached by its configuration.

    k = kernel()        # -> kernels.Kernel, flavour 'debug'; builds if needed

The config is `allnoconfig` plus FRAGMENT (forced through KCONFIG_ALLCONFIG):
only what the guest and the module need (SMP, CPU hotplug, PREEMPT, cgroups
and namespaces, tracepoints, PCI, virtio, 9p and the serial console built in),
so it builds much faster than defconfig (23 min at nice 19 on 2 shared cores,
against 30 for defconfig) and boots to the guest init in about 20 s under TCG.  Nothing is a module: the
initramfs loads nothing and `modprobe --show-depends` finds virtio/9p in
modules.builtin.

Cache, under $CGE_CACHE (default /var/cache/cgroup-energy):
  debug-kernel/src-<debver>/   unpacked /usr/src/linux-source-6.1.tar.xz
                               (a private copy: the KUnit tree is not touched)
  debug-kernel/<key>/build/    O= output tree; also the module build tree
  debug-kernel/<key>/keys/     mok.key, mok.pub: the test key the kernel
                               trusts (trusted_key())
  debug-kernel/<key>/root/     boot/config-<kver>, boot/vmlinuz-<kver>,
                               lib/modules/<kver>/ (modules.builtin, depmod),
                               usr/src/linux-headers-<kver> -> build
  debug-kernel/<key>/boot-bzimage  tells pvh.py to boot the bzImage: the PVH
                               entry of this KASAN build dies before printing
  debug-kernel/<key>/meta.json     written last: kver, build seconds, key inputs
<key> hashes FRAGMENT, the linux-source package version and the gcc version.
An interrupted build resumes (make is incremental in build/).  Builds run
under `nice -n 19`, with -j$(nproc) (CGE_DEBUG_JOBS overrides).

CLI: debugkernel.py [--config-only]   (prints kver and the cache directory)
"""
import argparse
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

try:
    from . import kernels
except ImportError:                       # run as a script
    import kernels

TARBALL = Path('/usr/src/linux-source-6.1.tar.xz')
SOURCE_PKG = 'linux-source-6.1'
LOCALVERSION = '-cge-debug'

FRAGMENT = """\
# --- base: a 64-bit SMP guest with a serial console
CONFIG_64BIT=y
CONFIG_SMP=y
CONFIG_NR_CPUS=8
CONFIG_HOTPLUG_CPU=y
CONFIG_PREEMPT=y
CONFIG_HZ_1000=y
CONFIG_NO_HZ_IDLE=y
CONFIG_HIGH_RES_TIMERS=y
CONFIG_LOCALVERSION="-cge-debug"
# CONFIG_LOCALVERSION_AUTO is not set
CONFIG_PRINTK=y
CONFIG_PRINTK_TIME=y
CONFIG_BUG=y
CONFIG_KALLSYMS=y
CONFIG_KALLSYMS_ALL=y
CONFIG_MULTIUSER=y
CONFIG_SYSVIPC=y
CONFIG_POSIX_MQUEUE=y
CONFIG_FUTEX=y
CONFIG_EPOLL=y
CONFIG_SIGNALFD=y
CONFIG_TIMERFD=y
CONFIG_EVENTFD=y
CONFIG_SHMEM=y
CONFIG_AIO=y
CONFIG_FILE_LOCKING=y
CONFIG_ADVISE_SYSCALLS=y
CONFIG_MEMBARRIER=y
CONFIG_FHANDLE=y
CONFIG_BLK_DEV_INITRD=y
CONFIG_BINFMT_ELF=y
CONFIG_BINFMT_SCRIPT=y
CONFIG_TTY=y
CONFIG_UNIX98_PTYS=y
CONFIG_SERIAL_8250=y
CONFIG_SERIAL_8250_CONSOLE=y
CONFIG_EARLY_PRINTK=y
CONFIG_MAGIC_SYSRQ=y
CONFIG_PROC_FS=y
CONFIG_PROC_SYSCTL=y
CONFIG_SYSFS=y
CONFIG_DEVTMPFS=y
CONFIG_TMPFS=y
CONFIG_INOTIFY_USER=y
CONFIG_DEBUG_FS=y
CONFIG_SUSPEND=y
CONFIG_ACPI=y
CONFIG_HYPERVISOR_GUEST=y
CONFIG_PARAVIRT=y
CONFIG_KVM_GUEST=y
CONFIG_PVH=y
CONFIG_MODULES=y
CONFIG_MODULE_UNLOAD=y
# --- module signing enforced, as under Secure Boot: only a module signed by
# a key in the kernel's keyring loads.  The keyring holds the test key
# (trusted_key(): the build tree's cge-trusted.pem) besides the build's own.
CONFIG_MODULE_SIG=y
CONFIG_MODULE_SIG_FORCE=y
# CONFIG_MODULE_SIG_ALL is not set
CONFIG_MODULE_SIG_SHA256=y
CONFIG_SYSTEM_TRUSTED_KEYRING=y
CONFIG_SYSTEM_TRUSTED_KEYS="cge-trusted.pem"
# --- cgroups and namespaces (cgroup v2, cgroup namespaces for unshare -C)
CONFIG_CGROUPS=y
CONFIG_CGROUP_SCHED=y
CONFIG_FAIR_GROUP_SCHED=y
CONFIG_CGROUP_PIDS=y
CONFIG_CPUSETS=y
CONFIG_NAMESPACES=y
CONFIG_UTS_NS=y
CONFIG_IPC_NS=y
CONFIG_PID_NS=y
CONFIG_USER_NS=y
# --- tracepoints (sched_switch) and perf
CONFIG_FTRACE=y
CONFIG_ENABLE_DEFAULT_TRACERS=y
CONFIG_PERF_EVENTS=y
# --- virtio and 9p, built in: the host root and the run directory
CONFIG_PCI=y
CONFIG_PCI_MSI=y
CONFIG_PCI_MMCONFIG=y
CONFIG_VIRTIO_MENU=y
CONFIG_VIRTIO_PCI=y
CONFIG_VIRTIO_PCI_LEGACY=y
CONFIG_NET=y
CONFIG_UNIX=y
CONFIG_INET=y
CONFIG_NET_9P=y
CONFIG_NET_9P_VIRTIO=y
CONFIG_NETWORK_FILESYSTEMS=y
CONFIG_9P_FS=y
# --- the debug options under test
CONFIG_DEBUG_KERNEL=y
CONFIG_DEBUG_INFO_NONE=y
CONFIG_KASAN=y
CONFIG_KASAN_GENERIC=y
CONFIG_KASAN_INLINE=y
CONFIG_PROVE_LOCKING=y
CONFIG_LOCKDEP_BITS=16
CONFIG_LOCKDEP_CHAINS_BITS=18
CONFIG_DEBUG_ATOMIC_SLEEP=y
CONFIG_DEBUG_PREEMPT=y
CONFIG_DEBUG_OBJECTS=y
CONFIG_DEBUG_OBJECTS_FREE=y
CONFIG_DEBUG_OBJECTS_TIMERS=y
CONFIG_DEBUG_OBJECTS_WORK=y
CONFIG_DEBUG_OBJECTS_RCU_HEAD=y
CONFIG_DEBUG_OBJECTS_PERCPU_COUNTER=y
CONFIG_DEBUG_KMEMLEAK=y
CONFIG_DEBUG_KMEMLEAK_MEM_POOL_SIZE=40000
# CONFIG_DEBUG_KMEMLEAK_DEFAULT_OFF is not set
# CONFIG_DEBUG_KMEMLEAK_AUTO_SCAN is not set
CONFIG_DEBUG_LIST=y
# TCG under a shared host is slow: no soft-lockup/hung-task false alarms
# CONFIG_SOFTLOCKUP_DETECTOR is not set
# CONFIG_DETECT_HUNG_TASK is not set
# CONFIG_WQ_WATCHDOG is not set
CONFIG_RCU_CPU_STALL_TIMEOUT=120
"""


# The test key, made as DKMS makes its MOK key when it has none (dkms's
# openssl command, with another subject): keys/mok.key and keys/mok.pub (DER)
# in the kernel's cache directory, the certificate also in PEM in the build
# tree for CONFIG_SYSTEM_TRUSTED_KEYS.  A module signed with it (DKMS's
# mok_signing_key and mok_certificate) loads; any other module is refused.
KEY_SUBJECT = 'cgroup-energy debug kernel test key'
TRUSTED_PEM = 'cge-trusted.pem'


class DebugKernelError(RuntimeError):
    pass


def log(msg):
    print(f'debugkernel: {msg}', file=sys.stderr, flush=True)


def _run(cmd, **kw):
    return subprocess.run(cmd, capture_output=True, text=True, **kw)


def base_dir():
    d = kernels.cache_dir() / 'debug-kernel'
    d.mkdir(exist_ok=True)
    return d


def source_version():
    r = _run(['dpkg-query', '-W', '-f=${Version}', SOURCE_PKG])
    if r.returncode != 0 or not r.stdout.strip():
        if TARBALL.exists():      # not a dpkg install: key on the file
            st = TARBALL.stat()
            return f'file-{st.st_size}-{int(st.st_mtime)}'
        raise DebugKernelError(f'{TARBALL} missing: apt-get install {SOURCE_PKG}')
    return r.stdout.strip()


def gcc_version():
    r = _run(['gcc', '--version'])
    return r.stdout.splitlines()[0] if r.returncode == 0 else 'unknown'


def key():
    h = hashlib.sha256()
    for part in (FRAGMENT, source_version(), gcc_version()):
        h.update(part.encode() + b'\0')
    return h.hexdigest()[:12]


def kernel_dir():
    return base_dir() / key()


def _source():
    """The unpacked source tree (private copy), made atomically."""
    ver = source_version()
    src = base_dir() / f'src-{ver}'
    if (src / 'Makefile').exists():
        return src
    if not TARBALL.exists():
        raise DebugKernelError(f'{TARBALL} missing: apt-get install {SOURCE_PKG}')
    log(f'unpacking {TARBALL}')
    tmp = Path(tempfile.mkdtemp(prefix='.src.tmp', dir=base_dir()))
    try:
        r = _run(['nice', '-n', '19', 'tar', '-xJf', str(TARBALL), '-C',
                  str(tmp)])
        if r.returncode != 0:
            raise DebugKernelError(f'tar -xJf {TARBALL}: {r.stderr}')
        tops = [p for p in tmp.iterdir() if p.is_dir()]
        if len(tops) != 1 or not (tops[0] / 'Makefile').exists():
            raise DebugKernelError(f'unexpected layout in {TARBALL}: {tops}')
        tops[0].rename(src)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return src


def _make(src, build, *targets, jobs=None, env=None, nice=True):
    cmd = (['nice', '-n', '19'] if nice else []) + [
        'make', '-C', str(src), f'O={build}', 'ARCH=x86_64',
        f'-j{jobs or 1}', *targets]
    r = subprocess.run(cmd, capture_output=True, text=True,
                       env={**os.environ, **(env or {})})
    if r.returncode != 0:
        tail = '\n'.join((r.stdout + r.stderr).strip().splitlines()[-60:])
        raise DebugKernelError(f'{" ".join(cmd)} failed:\n{tail}')
    return r.stdout


def _wanted(fragment):
    """{symbol: value or None (= not set)} from a config fragment."""
    want = {}
    for line in fragment.splitlines():
        m = re.match(r'^(CONFIG_\w+)=(.*)$', line)
        if m:
            want[m[1]] = m[2]
            continue
        m = re.match(r'^# (CONFIG_\w+) is not set$', line)
        if m:
            want[m[1]] = None
    return want


def check_config(config_text, fragment=FRAGMENT):
    """Symbols of the fragment that the resolved .config does not honour."""
    have = {}
    for line in config_text.splitlines():
        m = re.match(r'^(CONFIG_\w+)=(.*)$', line)
        if m:
            have[m[1]] = m[2]
    return sorted(f'{s}: want {v}, got {have.get(s)}'
                  for s, v in _wanted(fragment).items()
                  if have.get(s) != v and not (v == 'n' and s not in have))


def configure(src, build):
    build.mkdir(parents=True, exist_ok=True)
    frag = build / 'cge-debug.fragment'
    frag.write_text(FRAGMENT)
    _make(src, build, 'allnoconfig', env={'KCONFIG_ALLCONFIG': str(frag)},
          nice=False)
    _make(src, build, 'olddefconfig', nice=False)
    bad = check_config((build / '.config').read_text())
    if bad:
        raise DebugKernelError('the resolved config differs from the '
                               'fragment:\n  ' + '\n  '.join(bad))


def trusted_key(kd=None):
    """(private key, DER certificate) of the key the debug kernel trusts."""
    keys = (kd or kernel_dir()) / 'keys'
    return keys / 'mok.key', keys / 'mok.pub'


def make_key(key, cert, subject, days=36500):
    """A key and its self-signed DER certificate, made with the openssl
    command DKMS runs for its MOK key."""
    r = _run(['openssl', 'req', '-new', '-x509', '-nodes', '-days',
              str(days), '-subj', f'/CN={subject}', '-newkey', 'rsa:2048',
              '-keyout', str(key), '-outform', 'DER', '-out', str(cert)])
    if r.returncode != 0:
        raise DebugKernelError(f'openssl req ({subject}): {r.stderr}')


def _make_trusted_key(kd, build):
    """The test key, made once per cache directory (the kernel built with
    it trusts no other; a key half made by an interrupted build is made
    again), and its PEM certificate in the build tree, rewritten only when
    it differs (a new file relinks the kernel)."""
    key, cert = trusted_key(kd)
    if not (key.exists() and cert.exists()):
        for d in kd.glob('.keys.*'):
            shutil.rmtree(d, ignore_errors=True)
        shutil.rmtree(key.parent, ignore_errors=True)
        tmp = Path(tempfile.mkdtemp(prefix='.keys.', dir=kd))
        make_key(tmp / key.name, tmp / cert.name, KEY_SUBJECT)
        tmp.rename(key.parent)
    r = _run(['openssl', 'x509', '-inform', 'DER', '-in', str(cert)])
    if r.returncode != 0:
        raise DebugKernelError(f'openssl x509 {cert}: {r.stderr}')
    pem = build / TRUSTED_PEM
    if not pem.exists() or pem.read_text() != r.stdout:
        pem.write_text(r.stdout)


def check_trusted_key(kd):
    """The built kernel's keyring holds the test key's certificate, and
    the private key is there: else a DebugKernelError (delete the cache
    directory to rebuild)."""
    key, cert = trusted_key(kd)
    certs = kd / 'build/certs/x509_certificate_list'
    if not (key.exists() and cert.exists() and certs.exists()
            and cert.read_bytes() in certs.read_bytes()):
        raise DebugKernelError(f'{kd}: the test key ({key.parent}) is not '
                               'the one the kernel was built to trust; '
                               f'delete {kd} to rebuild')


def _install(kd, build, kver):
    """Lay out root/ like an unpacked Debian kernel for kernels.Kernel."""
    root = kd / 'root'
    if root.exists():
        shutil.rmtree(root)
    (root / 'boot').mkdir(parents=True)
    shutil.copy2(build / '.config', root / 'boot' / f'config-{kver}')
    shutil.copy2(build / 'arch/x86/boot/bzImage',
                 root / 'boot' / f'vmlinuz-{kver}')
    shutil.copy2(build / 'System.map', root / 'boot' / f'System.map-{kver}')
    moddir = root / 'lib/modules' / kver
    moddir.mkdir(parents=True)
    for f in ('modules.builtin', 'modules.builtin.modinfo', 'modules.order'):
        if (build / f).exists():
            shutil.copy2(build / f, moddir / f)
        else:
            (moddir / f).write_text('')
    src_dir = root / 'usr/src'
    src_dir.mkdir(parents=True)
    (src_dir / f'linux-headers-{kver}').symlink_to(
        os.path.relpath(build, src_dir))
    r = _run(['depmod', '-b', str(root), kver])
    if r.returncode != 0:
        raise DebugKernelError(f'depmod -b {root} {kver}: {r.stderr}')
    # The PVH entry of this KASAN build triple-faults before the console is
    # up (QEMU exits at once); the bzImage boots (21 s to the guest init).
    (kd / 'boot-bzimage').write_text('PVH entry dies under KASAN\n')
    (kd / 'vmlinux-pvh').unlink(missing_ok=True)


def build(config_only=False):
    """Build (or find) the debug kernel; returns its cache directory."""
    kd = kernel_dir()
    if (kd / 'meta.json').exists():
        return kd
    kd.mkdir(parents=True, exist_ok=True)
    with kernels.locked(base_dir() / f'.{kd.name}.lock'):
        if (kd / 'meta.json').exists():
            return kd
        t0 = time.monotonic()
        src = _source()
        bdir = kd / 'build'
        configure(src, bdir)
        if config_only:
            return kd
        _make_trusted_key(kd, bdir)
        jobs = int(os.environ.get('CGE_DEBUG_JOBS') or os.cpu_count() or 1)
        log(f'building {bdir} (-j{jobs}, nice 19); this takes a while')
        t1 = time.monotonic()
        _make(src, bdir, 'all', jobs=jobs)
        built = time.monotonic() - t1
        kver = _make(src, bdir, '-s', 'kernelrelease', nice=False).strip()
        _install(kd, bdir, kver)
        meta = {'kver': kver, 'key': kd.name, 'source': source_version(),
                'gcc': gcc_version(), 'build_seconds': round(built),
                'total_seconds': round(time.monotonic() - t0),
                'built': time.strftime('%Y-%m-%dT%H:%M:%S')}
        (kd / '.meta.tmp').write_text(json.dumps(meta, indent=1) + '\n')
        (kd / '.meta.tmp').rename(kd / 'meta.json')
        log(f'{kver} built in {built / 60:.1f} min')
    return kd


def meta():
    return json.loads((build() / 'meta.json').read_text())


def kernel():
    """The debug kernel as a kernels.Kernel (flavour 'debug')."""
    kd = build()
    check_trusted_key(kd)
    kver = json.loads((kd / 'meta.json').read_text())['kver']
    return kernels.Kernel('debug', kver, kd)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--config-only', action='store_true',
                    help='resolve and check the config, build nothing')
    ap.add_argument('--key', action='store_true', help='print the cache key')
    a = ap.parse_args(argv)
    try:
        if a.key:
            print(key())
            return 0
        kd = build(config_only=a.config_only)
        if a.config_only:
            print(kd / 'build' / '.config')
            return 0
        m = json.loads((kd / 'meta.json').read_text())
        print(f'{m["kver"]}\t{kd}\tbuilt in {m["build_seconds"]} s')
    except DebugKernelError as e:
        print(f'debugkernel: error: {e}', file=sys.stderr)
        return 1
    return 0


if __name__ == '__main__':
    sys.exit(main())
