# SPDX-License-Identifier: GPL-2.0
"""The kernel pins of the VM suite: tests/vm/kernels.lock, read and written.

One section per flavour: `kver` (the kernel release, `uname -r`) and the exact
Debian version of every package fetched for it:

    [6.1]
    kver = 6.1.0-57-amd64
    linux-image-6.1.0-57-amd64 = 6.1.192-3

kernels.py decides what to do with a pin (cache, archive, fallback);
`make kernels-update` (kernels.py --update) rewrites the file.
"""
import configparser
from dataclasses import dataclass, field
from pathlib import Path


class KernelError(RuntimeError):
    """An error of the kernel tooling (kernels.py re-exports it; it lives here
    so that pins.py raises it without importing kernels.py)."""


LOCK = Path(__file__).resolve().parent / 'kernels.lock'
HEADER = """\
# SPDX-License-Identifier: GPL-2.0
# The kernels the VM suite boots, per flavour: the kernel release (kver) and
# the Debian version of each package fetched for it (tests/vm/pins.py).
# Written by `make kernels-update`; commit it when `make check` is green.
"""


@dataclass(frozen=True)
class Pin:
    kver: str
    packages: dict = field(default_factory=dict)   # name -> Debian version

    @property
    def version(self):
        """The Debian version of the pin's first package (linux-image, or
        linux-base for sid): the version messages quote.  All the packages
        of a kernel are built from one source package, so it is also theirs."""
        return next(iter(self.packages.values()), '?')

    def specs(self, names=None):
        """`name=version` arguments for apt-get, for names (default: all)."""
        return [f'{n}={v}' for n, v in self.packages.items()
                if names is None or n in names]


def _parser():
    p = configparser.ConfigParser(delimiters=('=',), interpolation=None)
    p.optionxform = str                     # package names keep their case
    return p


def read(path=None):
    """{flavour: Pin} from the lock file; {} when there is none.  A malformed
    file (bad syntax, a section without kver) raises KernelError."""
    path = path or LOCK
    p = _parser()
    try:
        p.read(path)
    except configparser.Error as e:
        raise KernelError(f'{path}: {e}') from None
    out = {}
    for flavour in p.sections():
        items = dict(p[flavour])
        if 'kver' not in items:
            raise KernelError(f'{path}: [{flavour}] has no kver')
        kver = items.pop('kver')
        out[flavour] = Pin(kver, items)
    return out


def write(pins, path=None, header=HEADER):
    """Rewrite the lock file with {flavour: Pin}, atomically."""
    path = path or LOCK
    blocks = [header]
    for flavour, pin in pins.items():
        lines = [f'[{flavour}]', f'kver = {pin.kver}']
        lines += [f'{n} = {v}' for n, v in pin.packages.items()]
        blocks.append('\n'.join(lines) + '\n')
    tmp = Path(f'{path}.tmp')
    tmp.write_text('\n'.join(blocks))
    tmp.rename(path)
