# SPDX-License-Identifier: GPL-2.0
"""A Debian 12 server for the package test (tests/test_server.py): a disk
image that boots by itself, with systemd as PID 1, cached like the kernels.

    disk = image()          # $CGE_CACHE/server/<recipe>/disk.raw, read-only
    qemu_command(disk, share, snapshot=True)    # a test's QEMU: its writes
                                                # go to a temporary overlay

The image is built once per recipe (recipe_key(): the packages, the texts
written into it, the code of the build steps and the pins of the kernels it
holds; the directory name is their hash):

1. `debootstrap --variant=minbase bookworm` with systemd-sysv, udev and dbus
   (a root of Debian's packages only; its apt sources are bookworm,
   -updates, -security and -backports, as on a server, from the archives
   that the host's apt sources name, archive.py, or CGE_SERVER_MIRROR).
2. In that root, with its own apt: the 6.1 kernel and its headers at
   kernels.lock's versions (kernel_pins()), dkms (with gcc and make, which it depends on),
   grub-pc, and Debian 11's 5.10 kernel (bullseye-security) without headers (as on a server
   upgraded from bullseye: a kernel the module has no build for).  The 6.12
   kernel and its headers (kernels.lock's versions, from bookworm-security)
   are only downloaded, into apt's own cache (/var/cache/apt/archives), so
   that the guest, which has no network, installs them with apt; so is
   energystat's library (DOWNLOAD).
3. Configuration: fstab (root on /dev/vda1), hostname, root without a
   password, GRUB on the serial console with no menu delay, initramfs-tools'
   MODULES=dep (the initramfs of a kernel installed in the guest holds the
   modules that machine needs), and the test's agent: a unit that mounts
   the run directory the host shares over 9p (tag cgerun) at /run/cge and
   runs /run/cge/agent.sh from it, so that what the test does lives in the
   repository (tests/vm/guest/server_agent.sh), not in the image.
4. The root is written into the first partition of a raw disk with
   `mke2fs -d` (no loop device, no mount) and booted once directly (QEMU's
   -kernel) to run `grub-install /dev/vda` and `update-grub` on it, then
   once from the disk, through the BIOS and GRUB, as every test boots it:
   a kernel installed in the guest becomes GRUB's default, as on any
   Debian server.

Each step's duration is printed; the whole took 257 s alone here
(debootstrap 48 s, packages 118 s, disk 8 s, the two boots 77 s:
tests/results/server.jsonl).
CLI: server.py [--print]    (build if needed; print the image's path)
"""
import argparse
import ast
import hashlib
import inspect
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

try:
    from . import archive, harness, kernels, pins
except ImportError:                       # run as a script
    import archive
    import harness
    import kernels
    import pins

# Debian's archives as the host's apt sources name them (archive.py), or
# CGE_SERVER_MIRROR and its -security.  Read on import: the recipe's texts
# hold them.
MIRROR = os.environ.get('CGE_SERVER_MIRROR') or archive.main_uri()
SECURITY = (f'{MIRROR}-security' if os.environ.get('CGE_SERVER_MIRROR')
            else archive.security_uri())
SUITE = 'bookworm'
# The kernels of the image, by their kernels.lock flavour: the one it boots
# first (installed with headers), the one installed in the guest, the one
# without headers.
FIRST, LATER, NO_BUILD = '6.1', '6.12', '5.10'
DEBOOTSTRAP_PKGS = ['systemd-sysv', 'udev', 'dbus', 'kmod', 'procps']
# openssl: DKMS makes its MOK key with it and signs each build (a server
# has it: ca-certificates depends on it)
PKGS = ['dkms', 'grub-pc', 'initramfs-tools', 'zstd', 'e2fsprogs', 'openssl']
# What the guest's apt installs without network, besides the 6.12 kernel:
# energystat's libraries (debian/control's ${shlibs:Depends}; a package the
# root already has is not downloaded again). tests/test_deb.py checks the
# list against the built package.
DOWNLOAD = ['libmicrohttpd12', 'libgnutls30', 'libyaml-0-2', 'libcrypt1',
            'libjansson4']
DISK_SIZE = 6 << 30
# Each boot of the build, to its poweroff (the first took 57 s on a busy
# host)
BUILD_BOOT_DEADLINE = 600
PART_START = 1 << 20            # the first partition, at 1 MiB
SOURCES = f"""\
Types: deb
URIs: {MIRROR}
Suites: {SUITE} {SUITE}-updates {SUITE}-backports
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg

Types: deb
URIs: {SECURITY}
Suites: {SUITE}-security
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
"""
# Only while the image is built: where Debian 11's kernel comes from.
OLD_SOURCES = f"""\
Types: deb
URIs: {SECURITY}
Suites: bullseye-security
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
"""
AGENT_UNIT = """\
[Unit]
Description=cgroup-energy test agent (runs /run/cge/agent.sh from the host)
After=local-fs.target
ConditionVirtualization=vm

[Service]
# exec: the unit is started once the agent runs, so that it never holds up
# the boot that `systemctl is-system-running --wait` waits for.
Type=exec
ExecStart=/usr/local/sbin/cge-agent
StandardOutput=journal+console
StandardError=journal+console

[Install]
WantedBy=multi-user.target
"""
AGENT = """\
#!/bin/sh
# The host's share (9p tag cgerun) at /run/cge; its agent.sh does the rest.
# Never fails: a failed unit would make the system degraded.  Without the
# share there is nothing to do: it powers the guest off (the test fails at
# once instead of at its deadline).
modprobe 9pnet_virtio 2>/dev/null
mkdir -p /run/cge
if mount -t 9p -o trans=virtio,version=9p2000.L,msize=262144 cgerun \\
		/run/cge && [ -f /run/cge/agent.sh ]; then
	sh /run/cge/agent.sh || echo "cge-agent: agent.sh exited $?"
else
	echo "cge-agent: no share with agent.sh: powering off"
	systemctl poweroff
fi
exit 0
"""
# First boot (-kernel): GRUB on the disk, then power off; second boot
# (from the disk, through the BIOS and GRUB): says so, and powers off.
FIRST_BOOT = """\
#!/bin/sh
set -e
if [ -e /run/cge/first-boot.done ]; then
	uname -r > /run/cge/disk-boot.done
else
	echo 'grub-pc grub-pc/install_devices multiselect /dev/vda' |
		debconf-set-selections
	grub-install /dev/vda
	update-grub
	echo done > /run/cge/first-boot.done
fi
systemctl poweroff
"""
# The kernel's command line in the server's boots: no_timer_check as in
# the harness's guests (tests/vm/harness.py, BOOT_ARGS: a TCG vCPU the host
# does not run misses check_timer()'s window and the kernel panics)
SERVER_CMDLINE = 'console=ttyS0,115200 panic=-1 no_timer_check'
GRUB_DEFAULTS = f"""\
GRUB_DEFAULT=0
GRUB_TIMEOUT=0
GRUB_DISTRIBUTOR=Debian
GRUB_CMDLINE_LINUX_DEFAULT=""
GRUB_CMDLINE_LINUX="{SERVER_CMDLINE}"
GRUB_TERMINAL=serial
GRUB_SERIAL_COMMAND="serial --speed=115200"
GRUB_DISABLE_OS_PROBER=true
"""
class ServerError(kernels.KernelError):
    pass


def log(msg):
    print(f'server: {msg}', file=sys.stderr, flush=True)


def kernel_pins():
    """{flavour: Pin} of the image's kernels: kernels.lock's pins, read with
    no apt call.  The image is built from exactly these versions: when the
    archive no longer serves one, the build stops with apt's error, and
    `make kernels-update` pins the archive's newest (the vm stage, with its
    own cache, falls back to the newest by itself)."""
    lock = pins.read()
    missing = [f for f in (FIRST, LATER, NO_BUILD) if f not in lock]
    if missing:
        raise ServerError(f'{pins.LOCK} has no pin for {" ".join(missing)}')
    return {f: lock[f] for f in (FIRST, LATER, NO_BUILD)}


def _code_of(fn):
    """A function's code without its docstring and comments (ast.dump): an
    edit of those makes no other image."""
    tree = ast.parse(textwrap.dedent(inspect.getsource(fn)))
    body = tree.body[0].body
    if body and isinstance(body[0], ast.Expr) and isinstance(
            getattr(body[0], 'value', None), ast.Constant) and isinstance(
            body[0].value.value, str):
        del body[0]
    return ast.dump(tree)


def recipe_key():
    """The hash of what the image is made of: the packages, every text
    written into it, the build steps' code, and the kernels' pins."""
    h = hashlib.sha256(repr((SUITE, MIRROR, DEBOOTSTRAP_PKGS, PKGS, DOWNLOAD,
                             DISK_SIZE, PART_START, SOURCES, OLD_SOURCES,
                             AGENT_UNIT, AGENT, FIRST_BOOT, GRUB_DEFAULTS)
                            ).encode())
    for step in RECIPE_CODE:
        h.update(_code_of(step).encode())
    for f, pin in sorted(kernel_pins().items()):
        h.update(f'{f} {pin.kver} {sorted(pin.packages.items())}\n'.encode())
    return h.hexdigest()[:16]


def server_dir():
    d = kernels.cache_dir() / 'server'
    d.mkdir(exist_ok=True)
    return d


def image_path():
    return server_dir() / recipe_key() / 'disk.raw'


def kernel_specs(pin, headers=True):
    """apt-get arguments for a pin's image (and headers): name=version, or
    the name alone for a version the pin leaves unset."""
    return [f'{n}={v}' if v else n for n, v in pin.packages.items()
            if n == f'linux-image-{pin.kver}'
            or (headers and n == f'linux-headers-{pin.kver}')]


def _chroot(root, script, timeout=3600):
    """Run a shell script in root with /proc, /sys and /dev/pts mounted in
    a private mount namespace; raise ServerError on failure."""
    q = shlex.quote(str(root))
    outer = '\n'.join([
        'set -e',
        f'mount -t proc proc {q}/proc',
        f'mount -t sysfs sys {q}/sys',
        f'mount -t devpts devpts {q}/dev/pts',
        f'exec chroot {q} /bin/sh -ec {shlex.quote(script)}'])
    env = {'PATH': '/usr/sbin:/usr/bin:/sbin:/bin', 'LANG': 'C.UTF-8',
           'DEBIAN_FRONTEND': 'noninteractive', 'HOME': '/root'}
    r = subprocess.run(['nice', '-n', '19', 'unshare', '-m', '--propagation',
                        'private', 'sh', '-c', outer], capture_output=True,
                       text=True, env=env, timeout=timeout)
    if r.returncode != 0:
        tail = '\n'.join((r.stdout + r.stderr).strip().splitlines()[-40:])
        raise ServerError(f'in the server root, a step failed '
                          f'({r.returncode}):\n{script}\n{tail}')
    return r.stdout


def _step(name, fn, *args):
    t0 = time.monotonic()
    out = fn(*args)
    log(f'{name}: {time.monotonic() - t0:.0f} s')
    return out


def _debootstrap(root):
    r = subprocess.run(['nice', '-n', '19', 'debootstrap', '--variant=minbase',
                        f'--include={",".join(DEBOOTSTRAP_PKGS)}', SUITE,
                        str(root), MIRROR], capture_output=True, text=True)
    if r.returncode != 0:
        logf = root / 'debootstrap/debootstrap.log'
        extra = logf.read_text()[-3000:] if logf.exists() else ''
        raise ServerError(f'debootstrap failed ({r.returncode}):\n'
                          f'{(r.stdout + r.stderr)[-3000:]}\n{extra}')


def _install(root):
    p = kernel_pins()
    (root / 'etc/apt/sources.list').unlink(missing_ok=True)
    (root / 'etc/apt/sources.list.d/debian.sources').write_text(SOURCES)
    old = root / 'etc/apt/sources.list.d/bullseye-security.sources'
    old.write_text(OLD_SOURCES)
    (root / 'etc/apt/apt.conf.d/99cge-no-recommends').write_text(
        'APT::Install-Recommends "false";\n')
    apt = 'apt-get -q -y -o APT::Sandbox::User=root'
    _chroot(root, '\n'.join([
        f'{apt} update',
        # grub-pc asks for the disk to install on: none yet (first boot).
        'echo "grub-pc grub-pc/install_devices_empty boolean true" |'
        ' debconf-set-selections',
        f'{apt} install {" ".join(PKGS)} '
        f'{shlex.join(kernel_specs(p[FIRST]))} '
        f'{shlex.join(kernel_specs(p[NO_BUILD], headers=False))}',
        f'{apt} clean',
        # the later kernel and DOWNLOAD: into apt's cache only, with what
        # they need
        f'{apt} install --download-only {shlex.join(kernel_specs(p[LATER]))}'
        f' {" ".join(DOWNLOAD)}',
    ]))
    old.unlink()
    _chroot(root, f'{apt} update')


def _configure(root):
    (root / 'etc/fstab').write_text(
        '/dev/vda1 / ext4 errors=remount-ro 0 1\n')
    (root / 'etc/hostname').write_text('cge-server\n')
    (root / 'etc/hosts').write_text('127.0.0.1 localhost\n'
                                    '127.0.1.1 cge-server\n')
    (root / 'etc/default/grub').write_text(GRUB_DEFAULTS)
    conf = root / 'etc/initramfs-tools/initramfs.conf'
    text = conf.read_text()
    if '\nMODULES=most\n' not in text:
        raise ServerError(f'{conf} has no MODULES=most line to change')
    conf.write_text(text.replace('\nMODULES=most\n', '\nMODULES=dep\n'))
    unit = root / 'etc/systemd/system/cge-agent.service'
    unit.write_text(AGENT_UNIT)
    agent = root / 'usr/local/sbin/cge-agent'
    agent.write_text(AGENT)
    agent.chmod(0o755)
    _chroot(root, '\n'.join([
        'passwd -d root',
        'systemctl enable cge-agent.service',
        # empty: systemd makes the machine-id at the build's first boot,
        # and the image keeps it
        ': > /etc/machine-id',
    ]))


def _disk(root, disk):
    with open(disk, 'wb') as f:
        f.truncate(DISK_SIZE)
    sectors = PART_START // 512
    r = subprocess.run(['sfdisk', '-q', str(disk)], input=(
        f'label: dos\nstart={sectors}, type=83, bootable\n'),
        capture_output=True, text=True)
    if r.returncode != 0:
        raise ServerError(f'sfdisk: {r.stderr}')
    kib = (DISK_SIZE - PART_START) // 1024
    r = subprocess.run(['mke2fs', '-q', '-t', 'ext4', '-L', 'cge-root',
                        '-E', f'offset={PART_START}', '-d', str(root),
                        str(disk), f'{kib}k'], capture_output=True, text=True)
    if r.returncode != 0:
        raise ServerError(f'mke2fs -d: {r.stderr}')


def _boot_once(argv, log_path, what):
    """One QEMU run that the guest ends by powering off; its exit status."""
    with open(log_path, 'wb') as logf:
        r = subprocess.run(['timeout', str(BUILD_BOOT_DEADLINE), *argv],
                           stdout=logf, stderr=subprocess.STDOUT,
                           stdin=subprocess.DEVNULL)
    if r.returncode != 0:
        tail = log_path.read_text(errors='replace')[-3000:]
        raise ServerError(f'{what}: QEMU exited {r.returncode} (124: not '
                          f'powered off in {BUILD_BOOT_DEADLINE} s):\n{tail}')


def _first_boot(root, disk, work):
    """GRUB onto the disk (a boot with -kernel), then a boot from the disk
    itself, so that no image that GRUB cannot boot is cached."""
    kver = kernel_pins()[FIRST].kver
    share = work / 'share'
    share.mkdir()
    (share / 'agent.sh').write_text(FIRST_BOOT)
    _boot_once(qemu_command(disk, share, extra=[
        '-kernel', str(root / f'boot/vmlinuz-{kver}'),
        '-initrd', str(root / f'boot/initrd.img-{kver}'),
        '-append', f'root=/dev/vda1 ro {SERVER_CMDLINE}',
        '-no-reboot']), work / 'first-boot.log', 'the first boot')
    if not (share / 'first-boot.done').exists():
        raise ServerError('the first boot did not install GRUB: '
                          f'{work / "first-boot.log"}')
    _boot_once(qemu_command(disk, share, extra=['-no-reboot']),
               work / 'disk-boot.log', 'the boot from the disk')
    done = share / 'disk-boot.done'
    if not done.exists() or done.read_text().strip() != kver:
        raise ServerError(f'the boot from the disk did not reach the agent '
                          f'on {kver}: {work / "disk-boot.log"}')


def qemu_command(disk, share, snapshot=False, extra=(), cpus=2, mem='2G'):
    """QEMU for the server: its disk (virtio), the host's share at tag
    cgerun, the serial console on stdout; it reboots in place (no
    -no-reboot) and exits when the guest powers off."""
    drive = f'file={disk},if=virtio,cache=unsafe,format=raw'
    return [harness.QEMU, '-machine', 'q35', '-accel', 'tcg',
            '-cpu', harness.cpu_option('max'),
            '-smp', str(cpus), '-m', mem, '-nographic', '-nodefaults',
            '-serial', 'stdio', '-drive', drive,
            *(['-snapshot'] if snapshot else []),
            '-virtfs', f'local,path={share},mount_tag=cgerun,'
                       'security_model=none',
            *extra]


def image():
    """The image's path, built first if the cache lacks it."""
    disk = image_path()
    if disk.exists():
        return disk
    harness.check_qemu()
    for tool in ('debootstrap', 'sfdisk', 'mke2fs'):
        if shutil.which(tool) is None:
            raise ServerError(f'{tool} missing: sh tests/deps.sh')
    top = disk.parent
    top.mkdir(parents=True, exist_ok=True)
    with kernels.locked(server_dir() / '.build.lock'):
        if disk.exists():
            return disk
        t0 = time.monotonic()
        # an interrupted build's temporary directories (under the lock, so
        # none is in use)
        for d in server_dir().glob('*/.build.*'):
            shutil.rmtree(d, ignore_errors=True)
        work = Path(tempfile.mkdtemp(prefix='.build.', dir=top))
        try:
            root = work / 'root'
            log(f'building the server image in {work}')
            _step('debootstrap', _debootstrap, root)
            _step('packages', _install, root)
            _step('configuration', _configure, root)
            tmp = work / 'disk.raw'
            _step('disk', _disk, root, tmp)
            _step('first boots (GRUB, then from the disk)', _first_boot,
                  root, tmp, work)
            tmp.chmod(0o444)
            tmp.rename(disk)
        finally:
            shutil.rmtree(work, ignore_errors=True)
        for stale in server_dir().iterdir():
            if stale.is_dir() and stale != top:
                shutil.rmtree(stale, ignore_errors=True)
        log(f'image ready in {time.monotonic() - t0:.0f} s: {disk}')
    return disk


# The code whose change makes another image (recipe_key()).
RECIPE_CODE = (kernel_specs, _chroot, _debootstrap, _install, _configure,
               _disk, _boot_once, _first_boot, qemu_command, image)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--print', action='store_true',
                    help='print the image path, build it if needed')
    ap.parse_args(argv)
    print(image())
    return 0


if __name__ == '__main__':
    sys.exit(main())
