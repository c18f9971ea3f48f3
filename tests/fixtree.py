# SPDX-License-Identifier: GPL-2.0
"""Fixture cgroup_energy trees on an ordinary filesystem, for energystat's
host tests and benchmark: one directory per cgroup with an energy.stat, the
root with energy.info and, when asked (tree_file=True), the energy.tree a
module with it would give for the same values. Files are replaced
atomically (write + rename) so a tree mutated under a running energystat
never shows a half-written file."""

import os

BASE_KEYS = ("usage_usec", "energy_uj", "wakeups", "impact_usec")
# the root's energy.stat only; the irq, softirq and steal keys are absent
# from the files of an older module
ROOT_KEYS = ("total_uj", "idle_uj", "idle_usec", "irq_uj", "irq_usec",
             "softirq_uj", "softirq_usec", "steal_uj", "steal_usec")


def stat_text(values):
    """energy.stat text for a dict of key -> integer (kept in order)."""
    return "".join(f"{k} {v}\n" for k, v in values.items())


def parse_stat(text):
    """energy.stat text (str or bytes) -> dict of key -> integer, in order;
    ValueError on a line that is not "key value"."""
    if isinstance(text, bytes):
        text = text.decode()
    values = {}
    for line in text.splitlines():
        if line.strip():
            k, v = line.split()
            values[k] = int(v)
    return values


def escape_path(path):
    """A cgroup path (bytes) as energy.tree writes it: space, tab, newline
    and backslash as 3-digit octal escapes, as /proc/mounts does."""
    return b"".join(b"\\%03o" % c if c in b" \t\n\\" else bytes([c])
                    for c in path)


def tree_text(sample, root_keys, rows):
    """energy.tree text: sample, the root-only keys (a dict, in order),
    then rows [(path bytes, {key: value})] in pre-order, each with the same
    keys in the same order (the columns)."""
    cols = list(rows[0][1])
    out = [b"sample %d\n" % sample]
    out += [b"%s %d\n" % (k.encode(), v) for k, v in root_keys.items()]
    out.append(" ".join(["path", *cols]).encode() + b"\n")
    for path, values in rows:
        if list(values) != cols:
            raise ValueError(f"{path!r}: keys {list(values)} are not the "
                             f"columns {cols}")
        out.append(b" ".join([escape_path(path),
                              *(b"%d" % values[k] for k in cols)]) + b"\n")
    return b"".join(out)


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

    def __init__(self, root, info=None, tree_file=False):
        self.root = os.fsencode(os.fspath(root))
        self.tree_file = tree_file
        self.hidden = {}    # cgroups only energy.tree lists: path -> values
        self.info = {}
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
        self.changed()

    def set_info(self, info):
        """energy.info from a dict (values may be words)."""
        self.info = dict(info)
        text = "".join(f"{k} {v}\n" for k, v in info.items())
        write_atomic(os.path.join(self.root, b"energy.info"), text)
        self.changed()

    def remove(self, cg):
        """rmdir a cgroup: its files and its subtree (hidden ones too)."""
        gone = os.fsencode(cg).rstrip(b"/")
        self.hidden = {p: v for p, v in self.hidden.items()
                       if p != gone and not p.startswith(gone + b"/")}
        d = self.dir(cg)
        for top, dirs, files in os.walk(d, topdown=False):
            for f in files:
                os.unlink(os.path.join(top, f))
            for sub in dirs:
                os.rmdir(os.path.join(top, sub))
        os.rmdir(d)
        self.changed()

    def add_hidden(self, cg, energy_uj=0, usage_usec=0, wakeups=0,
                   impact_usec=0, **extra):
        """A cgroup named like a file of its directory (energy.stat; at the
        root energy.info, energy.tree too): the mount lists no directory
        for it, only energy.tree has its counters."""
        values = dict(usage_usec=usage_usec, energy_uj=energy_uj,
                      wakeups=wakeups, impact_usec=impact_usec)
        values.update(extra)
        self.hidden[os.fsencode(cg).rstrip(b"/")] = values
        self.changed()
        return values

    def changed(self):
        """With tree_file, energy.tree again for the new values; none while
        the tree is being built (a directory without energy.stat yet)."""
        if not self.tree_file:
            return
        try:
            self.write_tree()
        except FileNotFoundError:
            self.drop_tree()
            self.tree_file = True

    def cgroups(self):
        """[(path bytes, energy.stat values)] of every cgroup, the hidden
        ones too, in pre-order; FileNotFoundError for a directory without
        energy.stat, ValueError for one that is not "key value" lines."""
        found = dict(self.hidden)
        for top, dirs, files in os.walk(self.root):
            rel = os.path.relpath(top, self.root)
            path = b"/" if rel == b"." else b"/" + rel
            with open(os.path.join(top, b"energy.stat"), "rb") as f:
                found[path] = parse_stat(f.read())
        # pre-order, parents before children: sorted by their lists of names
        order = sorted(found, key=lambda p: p.strip(b"/").split(b"/")
                       if p != b"/" else [])
        return [(p, found[p]) for p in order]

    def write_tree(self, text=None):
        """energy.tree at the root: text verbatim (str or bytes), or the
        text the energy.stat files (and the hidden cgroups) make, as one
        module sample; its sample is energy.info's samples (else 1)."""
        if text is None:
            cgs = self.cgroups()
            root = dict(cgs[0][1])
            head = {k: root.pop(k) for k in ROOT_KEYS if k in root}
            rows = [(b"/", root)] + [
                (p, {k: v for k, v in vals.items() if k not in ROOT_KEYS})
                for p, vals in cgs[1:]]
            text = tree_text(int(self.info.get("samples", 1)), head, rows)
        write_atomic(os.path.join(self.root, b"energy.tree"), text)

    def drop_tree(self):
        """No energy.tree (an older module): readers walk the tree."""
        self.tree_file = False
        try:
            os.unlink(os.path.join(self.root, b"energy.tree"))
        except FileNotFoundError:
            pass


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


# ---- a module that shares the energy no task drew (unowned=weight) --------

SHARE_KEYS = ("idle_share_uj", "sys_share_uj")
# own_ values per cgroup: usage_usec, energy_uj, wakeups, impact_usec,
# idle_share_uj, sys_share_uj
SHARE_OWN = {
    "/": (1_000, 2_000, 3, 4_000, 11, 2),
    "/system.slice": (10, 20, 1, 30, 5, 1),
    "/system.slice/nginx.service": (2_000_000, 3_000_000, 40, 2_500_000,
                                    1_500_003, 200_001),
    "/system.slice/db.service": (500_000, 700_000, 7, 650_000, 375_000,
                                 50_000),
    "/user.slice": (0, 0, 0, 0, 0, 0),
    "/user.slice/user-1000.slice": (1_000_000, 1_250_000, 90, 1_100_000,
                                    750_000, 99_997),
    "/idle.slice": (0, 0, 0, 0, 0, 0),      # never ran a task: zeros
}
SHARE_COLS = ("usage_usec", "energy_uj", "wakeups", "impact_usec") + SHARE_KEYS


def share_stat(path, policy="weight", keys=True, own=None):
    """energy.stat values of SHARE_OWN's cgroup path as a module writes
    them, in energy.stat's order: counters (own_ plus the descendants'),
    power averages, the shares, the own_ keys, at the root the root-only
    keys. The root's idle_uj is every cgroup's idle share, its irq_uj +
    softirq_uj + steal_uj their sys share: with policy "weight" since load,
    energy_uj + idle_share_uj + sys_share_uj == total_uj, as with "cpuset"
    (which shares them otherwise, not more). Policy "none":
    the shares are 0; keys False: an older module, without them. own:
    other own_ values than SHARE_OWN's, for the same cgroups."""
    every = own or SHARE_OWN
    mine = [p for p in every
            if p == path or path == "/" or p.startswith(path + "/")]
    tot = [sum(every[p][i] for p in mine) for i in range(6)]
    own = list(every[path])
    if policy == "none":
        tot[4:] = own[4:] = [0, 0]
    cols = SHARE_COLS if keys else SHARE_COLS[:4]
    values = dict(zip(cols[:4], tot))
    values.update(power_avg10_mw=tot[1] // 1000, power_avg60_mw=7,
                  power_avg300_mw=3)
    values.update(zip(cols[4:], tot[4:]))
    values.update(("own_" + k, v) for k, v in zip(cols, own))
    if path == "/":
        idle = sum(v[4] for v in every.values())
        sys_ = sum(v[5] for v in every.values())
        values.update(root_keys(values["energy_uj"], idle_uj=idle,
                                idle_usec=9_000_000, irq_uj=sys_ - 100_001,
                                irq_usec=2_000, softirq_uj=100_000,
                                softirq_usec=4_000, steal_uj=1,
                                steal_usec=1))
    return values


def share_tree(root, policy="weight", keys=True, tree_file=True):
    """SHARE_OWN's tree as a module with the unowned parameter at policy
    since load writes it (share_stat), energy.info saying so; keys False:
    an older module without the shares (nor energy.info's unowned lines)."""
    info = {"version": "0.1.0", "source": "rapl", "split": "impact",
            "interval_ms": 100, "last_sample_ns": 10**12, "samples": 42}
    if keys:
        info.update(unowned=policy, unowned_applied=policy,
                    unowned_since_sample=1, unowned_changes=0,
                    unowned_partitions=int(policy == "cpuset"),
                    unowned_partition_scans=41 if policy == "cpuset" else 0)
    t = Tree(root, info=info)
    for path in SHARE_OWN:
        t.write(path, stat_text(share_stat(path, policy, keys)))
    t.tree_file = tree_file
    t.changed()
    return t
