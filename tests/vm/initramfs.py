# SPDX-License-Identifier: GPL-2.0
"""Per-kernel initramfs for the VM tests (cached next to the kernel).

Holds busybox-static, the virtio/9p modules of the kernel (in the order
`modprobe --show-depends` gives, built-in ones skipped, .ko.xz/.ko.zst
decompressed) and initramfs-init.sh as /init.  Written as a newc cpio by this
file, so device nodes need no mknod.  The file name carries a hash of its
inputs: editing the init script or this file regenerates it.
"""
import hashlib
import lzma
import subprocess
import sys
from pathlib import Path

try:
    from . import kernels
except ImportError:                       # run as a script
    import kernels

HERE = Path(__file__).resolve().parent
INIT = HERE / 'initramfs-init.sh'
BUSYBOX = Path('/bin/busybox')
# modules whose dependency closure is needed to mount the host root over 9p
WANT = ['virtio_pci', '9pnet_virtio', '9p']


class InitramfsError(RuntimeError):
    pass


def module_order(k):
    """Absolute paths of the .ko files to insmod, in load order."""
    if not (k.moddir / 'modules.dep').exists():
        subprocess.run(['depmod', '-b', str(k.root), k.kver], check=True)
    order = []
    for name in WANT:
        r = subprocess.run(['modprobe', '-d', str(k.root), '-S', k.kver,
                            '--show-depends', name],
                           capture_output=True, text=True)
        if r.returncode != 0:
            raise InitramfsError(f'modprobe --show-depends {name} for '
                                 f'{k.kver}: {r.stderr.strip()}')
        for line in r.stdout.splitlines():
            w = line.split()
            if len(w) >= 2 and w[0] == 'insmod' and w[1] not in order:
                order.append(w[1])
    return order


def _ko_bytes(path):
    if path.endswith('.xz'):
        return lzma.decompress(Path(path).read_bytes())
    if path.endswith('.zst'):
        return subprocess.run(['zstd', '-dc', path], check=True,
                              capture_output=True).stdout
    return Path(path).read_bytes()


def _ko_name(path):
    name = Path(path).name
    for ext in ('.xz', '.zst', '.gz'):
        name = name.removesuffix(ext)
    return name


class Cpio:
    """Minimal newc archive writer."""

    def __init__(self):
        self.parts = []
        self.ino = 1

    def add(self, name, mode, data=b'', rdev=(0, 0)):
        hdr = ('070701' + '%08X' * 13) % (
            self.ino, mode, 0, 0, 1, 0, len(data), 0, 0,
            rdev[0], rdev[1], len(name) + 1, 0)
        self.ino += 1
        buf = hdr.encode() + name.encode() + b'\0'
        buf += b'\0' * (-len(buf) % 4)
        buf += data + b'\0' * (-len(data) % 4)
        self.parts.append(buf)

    def dir(self, name):
        self.add(name, 0o040755)

    def file(self, name, data, mode=0o644):
        self.add(name, 0o100000 | mode, data)

    def chardev(self, name, major, minor):
        self.add(name, 0o020600, rdev=(major, minor))

    def bytes(self):
        self.add('TRAILER!!!', 0)
        return b''.join(self.parts)


def _check_busybox():
    if not BUSYBOX.exists():
        raise InitramfsError(f'{BUSYBOX} missing: apt-get install busybox-static')
    r = subprocess.run(['ldd', str(BUSYBOX)], capture_output=True, text=True)
    if 'not a dynamic' not in r.stdout + r.stderr:
        raise InitramfsError(f'{BUSYBOX} is not static: install busybox-static')


def build(k):
    """Path of the (cached) initramfs for kernel k."""
    mods = module_order(k)
    h = hashlib.sha256()
    for b in (INIT.read_bytes(), Path(__file__).read_bytes(),
              str(BUSYBOX.stat().st_mtime_ns).encode(), '\n'.join(mods).encode()):
        h.update(b)
    out = k.dir / f'initramfs-{h.hexdigest()[:12]}.cpio'
    if out.exists():
        return out
    _check_busybox()
    c = Cpio()
    for d in ('bin', 'dev', 'proc', 'sys', 'newroot', 'lib', 'lib/modules'):
        c.dir(d)
    c.chardev('dev/console', 5, 1)
    c.chardev('dev/null', 1, 3)
    c.file('bin/busybox', BUSYBOX.read_bytes(), 0o755)
    c.file('init', INIT.read_bytes(), 0o755)
    names = []
    for m in mods:
        names.append(_ko_name(m))
        c.file(f'lib/modules/{names[-1]}', _ko_bytes(m))
    c.file('modules.list', ''.join(n + '\n' for n in names).encode())
    tmp = out.with_suffix('.tmp')
    tmp.write_bytes(c.bytes())
    tmp.rename(out)
    for old in k.dir.glob('initramfs-*.cpio'):
        if old != out:
            old.unlink(missing_ok=True)
    print(f'initramfs: built {out} ({", ".join(names)})',
          file=sys.stderr, flush=True)
    return out


if __name__ == '__main__':
    for f in sys.argv[1:] or ['6.1']:
        print(build(kernels.kernel(f)))
