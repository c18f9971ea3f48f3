# SPDX-License-Identifier: GPL-2.0
"""Fixture cgroup_energy trees on an ordinary filesystem, for energystat's
host tests and benchmark: one directory per cgroup with an energy.stat, the
root with energy.info. Files are replaced atomically (write + rename) so a
tree mutated under a running energystat never shows a half-written file."""

import os

BASE_KEYS = ("usage_usec", "energy_uj", "wakeups", "impact_usec")
# the root's energy.stat only; the irq, softirq and steal keys are absent
# from the files of an older module
ROOT_KEYS = ("total_uj", "idle_uj", "idle_usec", "irq_uj", "irq_usec",
             "softirq_uj", "softirq_usec", "steal_uj", "steal_usec")


def stat_text(values):
    """energy.stat text for a dict of key -> integer (kept in order)."""
    return "".join(f"{k} {v}\n" for k, v in values.items())


def write_atomic(path, data):
    """Replace the file at path with data (bytes or str) atomically."""
    if isinstance(data, str):
        data = data.encode()
    tmp = os.fsencode(path) + b".tmp~"
    with open(tmp, "wb") as f:
        f.write(data)
    os.replace(tmp, path)


def root_keys(energy_uj, idle_uj=0, idle_usec=0, irq_uj=0, irq_usec=0,
              softirq_uj=0, softirq_usec=0, steal_uj=0, steal_usec=0):
    """The root-only keys (ROOT_KEYS) for a root whose energy_uj is given,
    total_uj made to conserve exactly:
    total_uj == energy_uj + irq_uj + softirq_uj + steal_uj + idle_uj."""
    return dict(total_uj=energy_uj + irq_uj + softirq_uj + steal_uj + idle_uj,
                idle_uj=idle_uj, idle_usec=idle_usec,
                irq_uj=irq_uj, irq_usec=irq_usec,
                softirq_uj=softirq_uj, softirq_usec=softirq_usec,
                steal_uj=steal_uj, steal_usec=steal_usec)


class Tree:
    """A fixture tree rooted at `root`. Cgroup paths are "/" or "/a/b"
    (str, or bytes for names that are not valid UTF-8)."""

    def __init__(self, root, info=None):
        self.root = os.fsencode(os.fspath(root))
        os.makedirs(self.root, exist_ok=True)
        if info is not None:
            self.set_info(info)

    @property
    def path(self):
        return os.fsdecode(self.root)

    def dir(self, cg):
        cg = os.fsencode(cg).strip(b"/")
        return os.path.join(self.root, cg) if cg else self.root

    def add(self, cg, energy_uj=0, usage_usec=0, wakeups=0, impact_usec=0,
            **extra):
        """Create cgroup cg (and missing parents' directories) with these
        counters; extra keys (package_uj=..., total_uj=...) follow."""
        values = dict(usage_usec=usage_usec, energy_uj=energy_uj,
                      wakeups=wakeups, impact_usec=impact_usec)
        values.update(extra)
        self.write(cg, stat_text(values))
        return values

    def write(self, cg, text):
        """Write cg's energy.stat verbatim (str or bytes)."""
        d = self.dir(cg)
        os.makedirs(d, exist_ok=True)
        write_atomic(os.path.join(d, b"energy.stat"), text)

    def set_info(self, info):
        """energy.info from a dict (values may be words)."""
        text = "".join(f"{k} {v}\n" for k, v in info.items())
        write_atomic(os.path.join(self.root, b"energy.info"), text)

    def remove(self, cg):
        """rmdir a cgroup: its files and its subtree."""
        d = self.dir(cg)
        for top, dirs, files in os.walk(d, topdown=False):
            for f in files:
                os.unlink(os.path.join(top, f))
            for sub in dirs:
                os.rmdir(os.path.join(top, sub))
        os.rmdir(d)


def build_big(root, n=10000, fanout=100):
    """A tree of n cgroups besides the root: `fanout` slices of services,
    e.g. /slice-042.slice/svc-0042.service. Returns the Tree."""
    t = Tree(root, info={"source": "model", "interval_ms": 100})
    slices = max(1, min(fanout, n // 2))
    total = 0
    made = 0
    for s in range(slices):
        made += 1
        t.add(f"/slice-{s:03d}.slice", energy_uj=0)
    i = 0
    while made < n:
        s = i % slices
        e = 1000 * (i + 1)
        total += e
        t.add(f"/slice-{s:03d}.slice/svc-{i:05d}.service", energy_uj=e,
              usage_usec=e // 2, wakeups=i, impact_usec=e)
        made += 1
        i += 1
    t.add("/", energy_uj=total, usage_usec=total // 2, wakeups=0,
          impact_usec=total,
          **root_keys(total, idle_uj=7000, idle_usec=70_000, irq_uj=1000,
                      irq_usec=10_000, softirq_uj=2000, softirq_usec=20_000,
                      steal_uj=0, steal_usec=0))
    return t
