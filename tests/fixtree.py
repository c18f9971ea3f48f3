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
