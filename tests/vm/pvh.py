# SPDX-License-Identifier: GPL-2.0
"""Uncompressed vmlinux for QEMU's PVH boot, cached next to the kernel.

Under TCG, decompressing Debian's xz/zstd bzImage costs about 4 s of every
boot.  A kernel built with CONFIG_PVH=y boots directly from its ELF vmlinux
(`-kernel vmlinux`), so the payload is decompressed once, here, on the host.
boot_image() falls back to the bzImage when that is not possible, and boots
the bzImage of a kernel whose cache directory holds a `boot-bzimage` file
(the debug kernel: its KASAN build dies at the PVH entry, before printing).
"""
import lzma
import os
import struct
import subprocess
import sys

XZ = b'\xfd7zXZ\x00'
ZSTD = b'\x28\xb5\x2f\xfd'


def _payload(bz):
    """Compressed payload of a bzImage (boot protocol >= 2.08)."""
    setup_sects = bz[0x1f1] or 4
    start = (setup_sects + 1) * 512
    off, length = struct.unpack_from('<II', bz, 0x248)
    return bz[start + off:start + off + length]


def _decompress(p):
    if p.startswith(XZ):
        return lzma.LZMADecompressor().decompress(p)
    if p.startswith(ZSTD):                 # trailing 4 bytes: the size
        r = subprocess.run(['zstd', '-dcq'], input=p[:-4],
                           capture_output=True)
        return r.stdout if r.returncode == 0 else b''
    return b''


def boot_image(k):
    """vmlinux (PVH) if it can be made, else the bzImage."""
    if os.environ.get('CGE_VM_BZIMAGE') or (k.dir / 'boot-bzimage').exists():
        return k.vmlinuz          # (a kernel that says it cannot boot PVH)
    out = k.dir / 'vmlinux-pvh'
    if out.exists():
        return out
    try:
        pvh = 'CONFIG_PVH=y\n' in k.config.read_text()
        elf = _decompress(_payload(k.vmlinuz.read_bytes())) if pvh else b''
    except (OSError, lzma.LZMAError, struct.error):
        elf = b''
    if not elf.startswith(b'\x7fELF'):
        print(f'pvh: no vmlinux for {k.kver}, booting the bzImage',
              file=sys.stderr)
        return k.vmlinuz
    tmp = out.with_name(f'.vmlinux-pvh.{os.getpid()}')
    tmp.write_bytes(elf)
    tmp.rename(out)
    return out
