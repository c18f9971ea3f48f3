# SPDX-License-Identifier: GPL-2.0
"""Host tests of userspace/energystat over fixture trees built in tmp_path.

Run: /usr/bin/python3 -m pytest -q tests/test_energystat.py
The tool is built with `make -C userspace` first (ENERGYSTAT=path overrides).
"""

import json
import os
import re
import resource
import shutil
import stat
import subprocess
import sys
import tempfile
import time
from decimal import Decimal, ROUND_HALF_UP

import pytest

sys.path.insert(0, os.path.dirname(__file__))
from fixtree import (ROOT_KEYS, SHARE_KEYS, SHARE_OWN, Tree,  # noqa: E402
                     build_big, root_keys, share_stat, share_tree,
                     stat_text)
import need  # noqa: E402

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
U64_MAX = 18446744073709551615
NOBODY = 65534


def header_define(name):
    with open(os.path.join(REPO, "include", "cgroup_energy.h")) as f:
        m = re.search(r'#define\s+%s\s+"([^"]*)"' % name, f.read())
    return m.group(1)


@pytest.fixture(scope="session")
def tool():
    if os.environ.get("ENERGYSTAT"):
        return os.environ["ENERGYSTAT"]
    r = subprocess.run(["make", "-C", os.path.join(REPO, "userspace")],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "warning" not in r.stderr
    return os.path.join(REPO, "userspace", "energystat")


def run(tool, *args, check_rc=None, preexec_fn=None, timeout=30, **kw):
    # the table fits $COLUMNS when stdout is not a terminal: 80 unless a
    # test says otherwise, whatever the environment running the tests says
    kw.setdefault("env", dict(os.environ, COLUMNS="80", LINES="24"))
    r = subprocess.run([tool, *[os.fsdecode(a) for a in args]],
                       capture_output=True, timeout=timeout,
                       preexec_fn=preexec_fn, **kw)
    r.out = r.stdout.decode("utf-8", "surrogateescape")
    r.err = r.stderr.decode("utf-8", "surrogateescape")
    if check_rc is not None:
        assert r.returncode == check_rc, (r.returncode, r.out, r.err)
    for line in r.err.splitlines():
        assert line.startswith("energystat: "), line
    return r


def table(out, workload=False):
    """Table text -> (header cells, [(path, [4 cells])]) in printed order;
    the last column, WORKLOAD (one word), only with workload=True."""
    lines = out.rstrip("\n").split("\n")
    head = lines[0].split()
    assert head[-1] == "WORKLOAD"
    rows = []
    for line in lines[1:]:
        if line.startswith(("machine", "  ")):   # the machine line, wrapped
            break
        m = TABLE_ROW.match(line)
        path, *cells = m.groups()
        rows.append((path, cells if workload else cells[:-1]))
    return (head if workload else head[:-1]), rows


# CGROUP (any text), four numbers (or "-") right-aligned, the first with its
# unit unless --raw, then two spaces and the WORKLOAD (a unit name may hold
# spaces)
CELL = r"([-\d.]+(?: (?:J|kJ|Wh|kWh|W))?)\s+"
TABLE_ROW = re.compile(r"^(.*?)\s+" + CELL + r"([-\d.]+)\s+" * 2 +
                       r"([-\d.]+)  (\S.*)$")


def rowmap(out):
    return dict(table(out)[1])


def wait_first_read(p):
    """Wait until the live tool sleeps for its next sample, i.e. has read
    the tree once: it is then blocked in clock_nanosleep (230 on x86_64).
    A fixed delay raced a slow start on a loaded host."""
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            with open(f"/proc/{p.pid}/syscall") as f:
                if f.read().split()[0] == "230":
                    return
        except (OSError, IndexError):
            pass
        time.sleep(0.005)
    p.kill()
    raise AssertionError("the live tool never slept for its next sample")



def joules(uj, decimals=3):
    q = Decimal(uj) / Decimal(10**6)
    return str(q.quantize(Decimal(1).scaleb(-decimals), ROUND_HALF_UP))


# The fixture tree's root-only keys: total_uj 12.5 J == energy_uj 10 J +
# irq_uj + softirq_uj + steal_uj + idle_uj, exactly.
ROOT = root_keys(10_000_000, idle_uj=2_000_000, idle_usec=30_000_000,
                 irq_uj=300_001, irq_usec=400_007, softirq_uj=149_999,
                 softirq_usec=250_000, steal_uj=50_000, steal_usec=1)
assert ROOT["total_uj"] == 12_500_000


def conserves(st):
    """The root's conservation, on a dict of its energy.stat values."""
    return st["total_uj"] == (st["energy_uj"] + st["irq_uj"] +
                              st["softirq_uj"] + st["steal_uj"] +
                              st["idle_uj"])


@pytest.fixture
def tree(tmp_path):
    """/, /system.slice/{nginx,db}.service, /user.slice/user-1000.slice."""
    t = Tree(tmp_path / "ce", info={"source": "model",
                                    "domains": "package dram",
                                    "split": "impact", "interval_ms": 100})
    t.add("/", energy_uj=10_000_000, usage_usec=8_000_000, wakeups=1000,
          impact_usec=9_000_000, **ROOT)
    t.add("/system.slice", energy_uj=7_500_000, usage_usec=5_000_000,
          wakeups=600, impact_usec=6_000_000)
    t.add("/system.slice/nginx.service", energy_uj=2_500_000,
          usage_usec=1_500_000, wakeups=250, impact_usec=2_000_000)
    t.add("/system.slice/db.service", energy_uj=5_000_000,
          usage_usec=3_500_000, wakeups=350, impact_usec=4_000_000)
    t.add("/user.slice", energy_uj=2_500_000, usage_usec=3_000_000,
          wakeups=400, impact_usec=3_000_000)
    t.add("/user.slice/user-1000.slice", energy_uj=2_500_000,
          usage_usec=3_000_000, wakeups=400, impact_usec=3_000_000)
    return t


# ---- the table -------------------------------------------------------------

def test_table_values_and_order(tool, tree):
    r = run(tool, "--root", tree.path, "--raw", check_rc=0)
    head, rows = table(r.out)
    # the fixture's source is the model: its joules are estimates
    assert head == ["CGROUP", "ENERGY(J)~", "CPU(s)", "WAKEUPS", "IMPACT(s)"]
    assert [p for p, _ in rows] == [
        "/", "/system.slice", "/system.slice/db.service",
        "/system.slice/nginx.service", "/user.slice",
        "/user.slice/user-1000.slice"]
    m = dict(rows)
    assert m["/system.slice/nginx.service"] == ["2.500", "1.500", "250", "2.000"]
    assert m["/"] == ["10.000", "8.000", "1000", "9.000"]
    assert m["/system.slice/db.service"] == ["5.000", "3.500", "350", "4.000"]
    assert r.err == ""


def test_table_alignment(tool, tree):
    lines = [ln for ln in run(tool, "--root", tree.path, check_rc=0).out.splitlines()
             if not ln.startswith(("machine", "  "))]
    # CGROUP left-aligned, the four numbers right-aligned: same end columns;
    # WORKLOAD (one word here) starts two columns after them
    ends = {tuple(m.end() for m in re.finditer(r"\S+", line))[-5:-1]
            for line in lines}
    assert len(ends) == 1
    starts = {tuple(m.start() for m in re.finditer(r"\S+", line))[-1]
              for line in lines}
    assert starts == {ends.pop()[-1] + 2}
    assert all(line.startswith(("CGROUP ", "/")) for line in lines)


def test_sort_keys(tool, tree):
    by = lambda *a: [p for p, _ in table(run(tool, "--root", tree.path, *a,
                                             check_rc=0).out)[1]]
    assert by("-s", "path") == [
        "/", "/system.slice", "/system.slice/db.service",
        "/system.slice/nginx.service", "/user.slice",
        "/user.slice/user-1000.slice"]
    # cpu: user.slice (3.0 s) ties its child and beats nginx (1.5 s)
    assert by("--sort", "cpu")[:4] == [
        "/", "/system.slice", "/system.slice/db.service", "/user.slice"]
    assert by("-s", "wakeups")[1:3] == ["/system.slice", "/user.slice"]


def test_depth(tool, tree):
    assert list(rowmap(run(tool, "--root", tree.path, "--depth", "0",
                           check_rc=0).out)) == ["/"]
    assert sorted(rowmap(run(tool, "--root", tree.path, "--depth", "1",
                             check_rc=0).out)) == [
        "/", "/system.slice", "/user.slice"]
    assert sorted(rowmap(run(tool, "--root", tree.path, "--depth", "1",
                             "system.slice", check_rc=0).out)) == [
        "/system.slice", "/system.slice/db.service",
        "/system.slice/nginx.service"]


def test_depth_default_is_cgtops_3_in_the_table_only(tool, tree):
    tree.add("/user.slice/user-1000.slice/session-1.scope", energy_uj=1)
    tree.add("/user.slice/user-1000.slice/session-1.scope/deep", energy_uj=1)
    paths = lambda *a: [c["path"] for c in json.loads(run(
        tool, "--root", tree.path, "--json", *a, check_rc=0).out)["cgroups"]]
    assert "/user.slice/user-1000.slice/session-1.scope/deep" in paths()
    m = rowmap(run(tool, "--root", tree.path, check_rc=0,
                   env=dict(os.environ, COLUMNS="200")).out)
    assert "/user.slice/user-1000.slice/session-1.scope" in m
    assert "/user.slice/user-1000.slice/session-1.scope/deep" not in m
    assert len(paths("--depth", "1")) == 3


def test_sort_flags_as_cgtop(tool, tree):
    order = lambda *a: [p for p, _ in table(run(tool, "--root", tree.path, *a,
                                                check_rc=0).out)[1]]
    assert order("-p") == order("-s", "path")
    assert order("-c") == order("--sort", "cpu")
    assert order("-s", "power") == order("-s", "energy")


def test_table_fits_the_width(tool, tree):
    """Long paths are cut in the middle ("..." between their start and
    their end), every line fits $COLUMNS, rows stay distinct; with room,
    nothing is cut."""
    long = "/system.slice/" + "x" * 60 + "-a.service"
    tree.add(long, energy_uj=1)
    tree.add(long.replace("-a.", "-b."), energy_uj=2)
    tree.add("/system.slice/caf\u00e9-\u65e5\u672c" + "y" * 50 + ".scope",
             energy_uj=3)
    from unicodedata import east_asian_width as eaw
    width = lambda s: sum(2 if eaw(c) in "WF" else 1 for c in s)
    for cols in (60, 80, 100):
        r = run(tool, "--root", tree.path, check_rc=0,
                env=dict(os.environ, COLUMNS=str(cols)))
        lines = r.out.splitlines()
        assert all(width(ln) <= cols for ln in lines), (cols, r.out)
        if cols < 80:
            continue            # paths of 8 columns: not distinct
        paths = [ln.split("  ")[0].rstrip() for ln in lines[1:]
                 if not ln.startswith(("machine", "  "))]
        assert len(set(paths)) == len(paths) == 9
        cut = [p for p in paths if "..." in p]
        assert len(cut) == 3, paths
        assert all(p.startswith("/sys") for p in cut), cut
        assert sorted(p[-4:] for p in cut) == ["cope", "vice", "vice"], cut
    r = run(tool, "--root", tree.path, check_rc=0,
            env=dict(os.environ, COLUMNS="300"))
    assert long in rowmap(r.out) and "..." not in r.out
    # no COLUMNS, not a terminal (a pipe, a file): nothing cut, so that a
    # script finds whole paths
    env = {k: v for k, v in os.environ.items() if k != "COLUMNS"}
    r = run(tool, "--root", tree.path, check_rc=0, env=env)
    assert long in rowmap(r.out) and "..." not in r.out


def pty_run(argv, rows, cols, during=None, timeout=20):
    """Run argv with stdout on a pseudo-terminal of rows x cols (stderr
    too, as on a screen); during() runs once the tool has read the tree.
    Returns (exit status, what the terminal received)."""
    import fcntl
    import pty
    import struct
    import termios
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}
    # stdin not a terminal: the plain live view, not the interactive one
    p = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=slave,
                         stderr=slave, env=env)
    os.close(slave)
    if during:
        wait_first_read(p)
        during()
    out = b""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            chunk = os.read(master, 65536)
        except OSError:          # EIO: the tool closed the terminal
            break
        if not chunk:
            break
        out += chunk
    os.close(master)
    return p.wait(timeout=timeout), out.decode().replace("\r\n", "\n")


CLEAR = "\033[H\033[2J"


# Deep: its premise is the tool's reads at 1 s and 2 s falling either side of
# burn()'s 1.5 s, which a loaded host can delay.
@pytest.mark.deep
def test_live_shows_the_rows_that_fit_with_stable_columns(tool, tree):
    """On a 10-row terminal: the header, the rows and the machine line
    (wrapped to 2 lines at 100 columns) in 9 lines, top power first; the
    columns keep their width when the values shrink; the reset message
    comes after the frame, so the clear does not wipe it."""
    tree.add("/many.slice", energy_uj=190)
    for i in range(20):
        tree.add(f"/many.slice/s{i:02d}.service", energy_uj=i)
    ns = 10**12
    tree.set_info({"source": "rapl", "interval_ms": 100, "last_sample_ns": ns})

    def burn():
        # 1: 12345.678 W on s07 and its parents; 2: nothing new (the same
        # module rate)
        tree.add("/many.slice/s07.service", energy_uj=7 + 6_172_839_000)
        tree.add("/many.slice", energy_uj=190 + 6_172_839_000)
        tree.add("/", energy_uj=10_000_000 + 6_172_839_000,
                 usage_usec=8_000_000, wakeups=1000, impact_usec=9_000_000,
                 **ROOT)
        tree.set_info({"source": "rapl", "interval_ms": 100,
                       "last_sample_ns": ns + 500_000_000})
        time.sleep(1.5)         # between the tool's reads at 1 s and 2 s
        tree.set_info({"source": "rapl", "interval_ms": 100,
                       "last_sample_ns": ns + 1_000_000_000})
    rc, out = pty_run([tool, "--root", tree.path, "-d", "1", "-n", "2",
                       "--raw"], 10, 100, during=burn)
    assert rc == 0, out
    frames = out.split(CLEAR)[1:]
    assert len(frames) == 2, out
    for f, watts in zip(frames, ("12345.678", "0.000")):
        lines = f.rstrip("\n").split("\n")
        assert len(lines) == 1 + 6 + 2, f
        assert lines[-2].startswith("machine: total "), f
        assert lines[0].split() == ["CGROUP", "POWER(W)", "CPU%",
                                    "WAKEUPS/s", "IMPACT", "WORKLOAD"]
        assert lines[1].startswith("/ ")
        if watts != "0.000":     # by power (then ties by path)
            assert lines[2].startswith("/many.slice ")
            assert re.match(r"/many.slice/s07.service +12345.678 ", lines[3])
    # the power column stays 9 wide when its values shrink to 0.000
    assert frames[0].split("\n")[0] == frames[1].split("\n")[0]
    pos = lambda f: [m.end() for m in re.finditer(r"\S+", f.split("\n")[1])]
    assert pos(frames[0]) == pos(frames[1])


def test_live_reset_message_stays_visible(tool, tree):
    ns = 10**12
    tree.set_info({"interval_ms": 100, "last_sample_ns": ns})

    def reload():
        tree.add("/", energy_uj=1, **root_keys(1))
        tree.set_info({"interval_ms": 100, "last_sample_ns": 5})
    rc, out = pty_run([tool, "--root", tree.path, "-d", "0.3", "-n", "1"],
                      6, 80, during=reload)
    assert rc == 0, out
    frame = out.split(CLEAR)[-1]
    lines = frame.rstrip("\n").split("\n")
    # the header, 3 rows, the message; the cursor on the 6th line
    assert len(lines) == 6 - 1
    assert lines[-1].startswith("energystat: counters restarted"), frame


def test_live_delay_shorter_than_the_module_interval(tool, tree):
    """-d below interval_ms: rates over the module's samples, the last one
    repeated while the module has not sampled again (never 0 W over a stale
    sample); without last_sample_ns the tool refuses, saying why."""
    ns = 10**12
    info = {"source": "model", "interval_ms": 1000, "last_sample_ns": ns}
    tree.set_info(info)
    live = Live(tool, "--root", tree.path, "--json", "-d", "0.4", "-n", "3")
    tree.add("/user.slice", energy_uj=2_500_000 + 1_000_000,
             usage_usec=3_000_000, wakeups=400, impact_usec=3_000_000)
    tree.set_info(dict(info, last_sample_ns=ns + 1_000_000_000))
    for _ in range(3):
        doc = live.doc()
        assert doc["clock"] == "module" and doc["reset"] is False
        assert doc["interval_s"] == pytest.approx(1.0)
        assert rates(doc)["/user.slice"]["power_w"] == pytest.approx(1.0)
    assert live.finish()[0] == 0
    tree.set_info({"interval_ms": 1000})
    r = run(tool, "--root", tree.path, "-d", "0.5", "-n", "1", check_rc=2)
    assert r.out == ""
    assert r.err == ("energystat: -d 0.5 is shorter than the module's sampling "
                     "interval (1000 ms, energy.info interval_ms), and this "
                     "module does not give the time of its samples "
                     "(last_sample_ns): use -d 1 or more\n")


def test_old_depth_flag_in_a_script_gets_a_note(tool, tree):
    """`energystat -d 2` (the old depth) now updates until interrupted:
    not a terminal, no -n, so a note on stderr says what -d is now."""
    p = subprocess.Popen([tool, "--root", tree.path, "-d", "2"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         text=True)
    line = p.stderr.readline()
    p.kill()
    p.wait()
    assert line == ("energystat: note: -d is the delay between updates (as in "
                    "systemd-cgtop) and runs until interrupted; levels are "
                    "--depth\n")
    r = run(tool, "--root", tree.path, "-d", "0.2", "-n", "1", check_rc=0)
    assert r.err == ""


@pytest.mark.parametrize("arg", [
    "/sys/fs/cgroup/system.slice", "/sys/fs/cgroup_energy/system.slice",
    "system.slice", "/system.slice", "system.slice/", "./system.slice/",
    "/sys/fs/cgroup/user.slice/../system.slice", "ROOT/system.slice"])
def test_path_forms(tool, tree, arg):
    arg = arg.replace("ROOT", tree.path)
    r = run(tool, "--root", tree.path, arg, check_rc=0)
    assert list(rowmap(r.out)) == ["/system.slice", "/system.slice/db.service",
                                   "/system.slice/nginx.service"]


def test_path_root_forms(tool, tree):
    for arg in ("/", "/sys/fs/cgroup", "/sys/fs/cgroup_energy/", "."):
        assert len(rowmap(run(tool, "--root", tree.path, arg,
                              check_rc=0).out)) == 6


def test_relative_root_and_prefix(tool, tree):
    parent = os.path.dirname(tree.path)
    r = run(tool, "--root", "ce", "ce/system.slice", cwd=parent, check_rc=2)
    assert "unknown cgroup /ce/system.slice" in r.err  # relative = cgroup path
    r = run(tool, "--root", "ce/", os.path.join(tree.path, "user.slice"),
            cwd=parent, check_rc=0)
    assert list(rowmap(r.out)) == ["/user.slice", "/user.slice/user-1000.slice"]


def test_overlapping_paths_dedup(tool, tree):
    r = run(tool, "--root", tree.path, "/system.slice",
            "/sys/fs/cgroup/system.slice/nginx.service", "/user.slice",
            check_rc=0)
    paths = list(table(r.out)[1])
    assert len(paths) == 5
    assert len({p for p, _ in paths}) == 5


def test_unknown_cgroup(tool, tree):
    r = run(tool, "--root", tree.path, "/no.slice", check_rc=2)
    assert r.out == ""
    assert r.err == (f"energystat: unknown cgroup /no.slice: no directory "
                     f"{tree.path}/no.slice\n")
    r = run(tool, "--root", tree.path, "/no.slice", "/user.slice", check_rc=1)
    assert list(rowmap(r.out)) == ["/user.slice", "/user.slice/user-1000.slice"]
    r = run(tool, "--root", tree.path, "../x", check_rc=2)
    assert "'..' goes above the root" in r.err


def test_names_spaces_unicode(tool, tmp_path):
    t = Tree(tmp_path / "ce")
    t.add("/", energy_uj=9_000_000)
    names = ["/my app.service", "/caf\u00e9 \u2615.scope", "/\u65e5\u672c.slice",
             "/quote\"back\\slash", "/new\nline"]
    for i, n in enumerate(names):
        t.add(n, energy_uj=(i + 1) * 1_000_000)
    r = run(tool, "--root", t.path, "--raw", check_rc=0)
    lines = r.out.splitlines()
    assert len(lines) == 1 + 1 + len(names)  # newline in a name is escaped
    m = rowmap(r.out)
    assert m["/my app.service"][0] == "1.000"
    assert m["/caf\u00e9 \u2615.scope"][0] == "2.000"
    assert m["/\u65e5\u672c.slice"][0] == "3.000"
    assert m["/quote\"back\\\\slash"][0] == "4.000"
    assert m["/new\\x0aline"][0] == "5.000"
    # display-width alignment: the energy column ends at the same column
    from unicodedata import east_asian_width as eaw
    width = lambda s: sum(2 if eaw(c) in "WF" else 1 for c in s)
    assert len({width(line.rsplit("  ", 1)[0]) for line in lines}) == 1

    doc = json.loads(run(tool, "--root", t.path, "--json", check_rc=0).out)
    got = {c["path"]: c["stat"]["energy_uj"] for c in doc["cgroups"]}
    for i, n in enumerate(names):
        assert got[n] == (i + 1) * 1_000_000

    prom = run(tool, "--root", t.path, "--prometheus", check_rc=0).out
    assert 'cgroup_energy_joules_total{cgroup="/quote\\"back\\\\slash"} 4\n' in prom
    assert 'cgroup_energy_joules_total{cgroup="/new\\nline"} 5\n' in prom
    assert ('cgroup_energy_joules_total{cgroup="/\u65e5\u672c.slice",'
            'unit="\u65e5\u672c.slice"} 3\n') in prom
    promtool_check(prom)


def test_invalid_utf8_name(tool, tmp_path):
    t = Tree(tmp_path / "ce")
    t.add("/", energy_uj=2_000_000)
    t.add(b"/bad\xff\xfename", energy_uj=1_000_000)
    r = run(tool, "--root", t.path, check_rc=0)
    assert "/bad\\xff\\xfename" in r.out
    doc = json.loads(run(tool, "--root", t.path, "--json", check_rc=0).out)
    assert doc["cgroups"][1]["path"] == "/bad\\xff\\xfename"
    prom = run(tool, "--root", t.path, "--prometheus", check_rc=0).out
    assert 'cgroup="/bad\\\\xff\\\\xfename"' in prom   # the value /bad\xff\xfename
    promtool_check(prom)


# Names that differ only in bytes that are not UTF-8 (os.mkdir takes
# bytes): each becomes \xNN, so none collapse into one label value or JSON
# string (U+FFFD for both made node_exporter drop one). Valid UTF-8, a
# systemd escape and a lone continuation byte are kept apart too.
INVALID_NAMES = {
    b"/w\xff.scope": "/w\\xff.scope",
    b"/w\xfe.scope": "/w\\xfe.scope",
    b"/w\xc3.scope": "/w\\xc3.scope",          # a truncated sequence
    b"/w\xc3\xa9.scope": "/w\u00e9.scope",        # valid: unchanged
    b"/w\\x2d.scope": "/w\\x2d.scope",          # systemd's escape, literal
    b"/w\x80\x80.scope": "/w\\x80\\x80.scope",
}


def invalid_names_tree(root):
    t = Tree(root, info={"source": "model"})
    for i, name in enumerate(INVALID_NAMES):
        t.add(name, energy_uj=(i + 1) * 1_000_000)
    e = sum(range(1, len(INVALID_NAMES) + 1)) * 1_000_000
    t.add("/", energy_uj=e, **root_keys(e))
    return t


def test_names_differing_in_invalid_bytes_stay_distinct(tool, tmp_path):
    t = invalid_names_tree(tmp_path / "ce")
    doc = json.loads(run(tool, "--root", t.path, "--json", check_rc=0).out)
    got = {c["path"]: c["stat"]["energy_uj"] for c in doc["cgroups"]}
    for i, shown in enumerate(INVALID_NAMES.values()):
        assert got[shown] == (i + 1) * 1_000_000, shown
    assert len(got) == len(INVALID_NAMES) + 1
    prom = run(tool, "--root", t.path, "--prometheus", check_rc=0).out
    promtool_check(prom)
    j = {k: v for k, v in prom_samples(prom).items()
         if k.startswith("cgroup_energy_joules_total{")}
    assert len(j) == len(INVALID_NAMES) + 1
    for i, shown in enumerate(INVALID_NAMES.values()):
        value = shown.replace("\\", "\\\\")   # the exposition's escape
        assert any(k.startswith(f'cgroup_energy_joules_total{{cgroup="{value}"')
                   and v == str(i + 1) for k, v in j.items()), (value, j)


def test_values_near_2_64(tool, tmp_path):
    t = Tree(tmp_path / "ce")
    t.add("/", energy_uj=U64_MAX, usage_usec=U64_MAX - 1, wakeups=U64_MAX,
          impact_usec=18446744073709551000,
          **root_keys(U64_MAX, idle_usec=U64_MAX, irq_usec=U64_MAX,
                      softirq_usec=U64_MAX - 1, steal_usec=U64_MAX))
    r = run(tool, "--root", t.path, "--raw", check_rc=0)
    assert rowmap(r.out)["/"] == [joules(U64_MAX), joules(U64_MAX - 1),
                                  str(U64_MAX), joules(18446744073709551000)]
    assert rowmap(r.out)["/"][0] == "18446744073709.552"
    doc = json.loads(run(tool, "--root", t.path, "--json", check_rc=0).out)
    st = doc["cgroups"][0]["stat"]
    assert st == {"usage_usec": U64_MAX - 1, "energy_uj": U64_MAX,
                  "wakeups": U64_MAX, "impact_usec": 18446744073709551000,
                  "total_uj": U64_MAX, "idle_uj": 0, "idle_usec": U64_MAX,
                  "irq_uj": 0, "irq_usec": U64_MAX, "softirq_uj": 0,
                  "softirq_usec": U64_MAX - 1, "steal_uj": 0,
                  "steal_usec": U64_MAX}
    prom = run(tool, "--root", t.path, "--prometheus", check_rc=0).out
    assert 'cgroup_energy_joules_total{cgroup="/"} 18446744073709.551615\n' in prom
    assert 'cgroup_energy_wakeups_total{cgroup="/"} 18446744073709551615\n' in prom
    assert "cgroup_energy_irq_cpu_seconds_total 18446744073709.551615\n" in prom
    assert ("cgroup_energy_softirq_cpu_seconds_total 18446744073709.551614\n"
            in prom)
    assert "cgroup_energy_steal_joules_total 0\n" in prom
    promtool_check(prom)


# ---- malformed input ----------------------------------------------------------

GOOD = stat_text(dict(usage_usec=1, energy_uj=1_000_000, wakeups=3,
                      impact_usec=4))


@pytest.mark.parametrize("content,line,msg", [
    (GOOD + "energy_uj\n", 5, "expected 'key value'"),
    ("usage_usec 1\nenergy_uj 18446744073709551616\nwakeups 1\nimpact_usec 1\n",
     2, "value out of range (above 18446744073709551615)"),
    ("usage_usec 1\nenergy_uj 99999999999999999999999\n", 2, "value out of range"),
    ("usage_usec -1\nenergy_uj 1\nwakeups 1\nimpact_usec 1\n", 1,
     "unsigned integer"),
    ("usage_usec 1\nenergy_uj 1.5\nwakeups 1\nimpact_usec 1\n", 2,
     "unsigned integer"),
    (GOOD + "energy_uj 7\n", 5, "duplicate key energy_uj"),
    (GOOD + "irq_uj 1\nsoftirq_usec 2\nirq_uj 1\n", 7, "duplicate key irq_uj"),
    (GOOD + "own_energy_uj 1\nenergy_uj 1\n", 6, "duplicate key energy_uj"),
    (GOOD + "own_energy_uj 1\nown_energy_uj 1\n", 6,
     "duplicate key own_energy_uj"),
    (GOOD + "steal_usec 18446744073709551616\n", 5, "value out of range"),
    (GOOD + "x" * 300 + " 1\n", 5, "line too long"),
    (GOOD.encode() + b"\x00\x01\xff\xfe junk\n", 5, "binary data"),
    (b"\x7fELF\x02\x01\x01\x00" + bytes(range(256)), 1, "binary data"),
    ("usage_usec 1\nenergy_uj 1\nwakeups 1\n", 0, "missing key impact_usec"),
    ("", 0, "empty file"),
    ("\n\n\n", 0, "missing key usage_usec"),
    ("x" * 20000, 0, "file too large"),
    (" usage_usec 1\n", 1, "expected 'key value'"),
])
def test_malformed(tool, tree, content, line, msg):
    tree.write("/system.slice/nginx.service", content)
    r = run(tool, "--root", tree.path, "--raw", check_rc=1)
    m = rowmap(r.out)
    assert "/system.slice/nginx.service" not in m
    assert m["/system.slice/db.service"][0] == "5.000"  # others still shown
    assert len(m) == 5
    f = os.path.join(tree.path, "system.slice/nginx.service/energy.stat")
    where = f"{f}:{line}: " if line else f"{f}: "
    assert len(r.err.splitlines()) == 1
    assert r.err.startswith("energystat: " + where), r.err
    assert msg in r.err


def test_lenient_forms(tool, tree):
    """Unknown keys (a newer module), tabs, CRLF and no final newline."""
    tree.write("/user.slice", "usage_usec\t5\r\nenergy_uj   1500000\n"
               "future_key 9\nown_future_key 1\nown_total_uj 4\n"
               "wakeups 2\nimpact_usec 3")
    m = rowmap(run(tool, "--root", tree.path, "--raw", check_rc=0).out)
    assert m["/user.slice"] == ["1.500", "0.000", "2", "0.000"]


def test_missing_file_and_odd_entries(tool, tree):
    root = tree.path
    os.makedirs(os.path.join(root, "empty.slice"))      # dir without energy.stat
    os.mkfifo(os.path.join(root, "user.slice", "fifo"))  # not a dir: ignored
    os.makedirs(os.path.join(root, "fifo.slice"))
    os.mkfifo(os.path.join(root, "fifo.slice", "energy.stat"))  # must not hang
    os.makedirs(os.path.join(root, "dir.slice", "energy.stat"))
    os.symlink("..", os.path.join(root, "system.slice", "loop"))  # loop
    os.symlink(root, os.path.join(root, "user.slice", "up"))
    r = run(tool, "--root", root, check_rc=1, timeout=10)
    m = rowmap(r.out)
    assert len(m) == 6
    err = r.err
    assert f"energystat: {root}/empty.slice/energy.stat: No such file or directory\n" in err
    assert f"energystat: {root}/fifo.slice/energy.stat: not a regular file\n" in err
    assert f"energystat: {root}/dir.slice/energy.stat: not a regular file\n" in err


def test_root_malformed_nothing_else(tool, tree):
    tree.write("/", "garbage\n")
    r = run(tool, "--root", tree.path, "--depth", "0", check_rc=2)
    assert r.out == ""
    assert r.err == f"energystat: {tree.path}/energy.stat:1: expected 'key value'\n"
    r = run(tool, "--root", tree.path, check_rc=1)
    assert "/" not in rowmap(r.out) and len(rowmap(r.out)) == 5


def test_error_flood_is_capped(tool, tmp_path):
    t = Tree(tmp_path / "ce")
    t.add("/", energy_uj=1)
    for i in range(50):
        t.write(f"/bad{i:02d}", "junk\n")
    r = run(tool, "--root", t.path, check_rc=1)
    lines = r.err.splitlines()
    assert len(lines) == 21
    assert lines[-1] == "energystat: 30 more errors not shown"


def test_deep_tree(tool, tmp_path):
    t = Tree(tmp_path / "ce")
    t.add("/", energy_uj=1)
    p = ""
    for i in range(300):
        p += "/d"
        t.add(p, energy_uj=i)
    r = run(tool, "--root", t.path, "--depth", "300", check_rc=1, timeout=20,
            env=dict(os.environ, COLUMNS="1000"))
    assert len(rowmap(r.out)) == 257
    assert r.err.endswith("...: deeper than 256 levels, not descending\n")
    assert len(r.err.splitlines()) == 1


# ---- errors: nothing can be shown ---------------------------------------------

def test_missing_tree(tool, tmp_path):
    r = run(tool, "--root", tmp_path / "nope", check_rc=2)
    assert r.out == ""
    assert r.err == f"energystat: no such directory: {tmp_path}/nope (--root)\n"


def test_module_not_loaded(tool):
    if os.path.exists("/sys/fs/cgroup_energy") or \
            os.path.exists("/sys/module/cgroup_energy"):
        pytest.skip("the module is loaded here")
    r = run(tool, check_rc=2)
    assert r.err == ("energystat: the cgroup_energy module is not loaded "
                     "(no /sys/fs/cgroup_energy): run modprobe cgroup_energy\n")


def test_not_mounted(tool, tmp_path):
    d = tmp_path / "mnt"
    d.mkdir()
    r = run(tool, "--root", d, check_rc=2)
    assert r.err == (f"energystat: nothing mounted on {d} (no energy.stat): "
                     f"run mount -t cgroup_energy none {d}\n")


def test_root_on_a_cgroup_hierarchy(tool, tmp_path):
    """--root at a cgroup hierarchy (cgroup.procs, as every v1 or v2
    directory has) points at the mirror, not at a mount over the cgroups."""
    d = tmp_path / "cg"
    d.mkdir()
    (d / "cgroup.procs").write_text("")
    r = run(tool, "--root", d, check_rc=2)
    assert r.err == (f"energystat: {d} is a cgroup hierarchy, not a "
                     "cgroup_energy tree: leave --root at "
                     "/sys/fs/cgroup_energy, which mirrors /sys/fs/cgroup "
                     "(a PATH may be given as /sys/fs/cgroup/...)\n")
    assert "mount -t" not in r.err


def as_nobody():
    os.setgroups([])
    os.setgid(NOBODY)
    os.setuid(NOBODY)


@pytest.fixture
def public_tree():
    """A tree nobody can traverse (tmp_path's parents are root-only)."""
    d = tempfile.mkdtemp(prefix="energystat-")
    os.chmod(d, 0o755)
    t = Tree(os.path.join(d, "ce"))
    t.add("/", energy_uj=3_000_000, usage_usec=1, wakeups=1, impact_usec=1)
    t.add("/a.slice", energy_uj=2_000_000)
    t.add("/b.slice", energy_uj=1_000_000)
    for top, dirs, files in os.walk(t.path):
        os.chmod(top, 0o755)
        for f in files:
            os.chmod(os.path.join(top, f), 0o440)  # the default mode=0440
    yield t
    shutil.rmtree(d)


def nobody_tool(tool):
    if os.getuid() != 0:
        pytest.skip("needs root to switch to nobody")
    return tool


def test_permission_denied(tool, public_tree):
    t = public_tree
    r = run(nobody_tool(tool), "--root", t.path, check_rc=2, preexec_fn=as_nobody)
    assert r.out == ""
    assert r.err == (f"energystat: permission denied reading {t.path}/energy.stat: "
                     "run as root, or have root mount the tree with "
                     "-o gid=<group>,mode=0440 and join that group\n")
    os.chmod(os.path.join(t.path, "energy.stat"), 0o444)
    os.chmod(os.path.join(t.path, "b.slice"), 0o700)
    r = run(tool, "--root", t.path, check_rc=1, preexec_fn=as_nobody)
    assert list(rowmap(r.out)) == ["/"]
    assert f"energystat: {t.path}/a.slice/energy.stat: permission denied (the " \
           "mount options gid= and mode= say who may read energy.stat)\n" in r.err
    assert f"cannot list {t.path}/b.slice: Permission denied" in r.err
    os.chmod(t.path, 0o700)
    r = run(tool, "--root", t.path, check_rc=2, preexec_fn=as_nobody)
    assert "permission denied reading" in r.err and "gid=" in r.err


# ---- JSON ------------------------------------------------------------------------

def test_json(tool, tree):
    tree.add("/system.slice/nginx.service", energy_uj=2_500_000,
             usage_usec=1_500_000, wakeups=250, impact_usec=2_000_000,
             package_uj=2_000_000, dram_uj=500_000, core_uj=1_200_000)
    r = run(tool, "--root", tree.path, "--json", check_rc=0)
    assert r.out.count("\n") == 1
    doc = json.loads(r.out)
    assert doc["version"] == 1
    assert doc["tool"] == "energystat " + header_define("CGE_VERSION")
    assert doc["mode"] == "static"
    assert doc["root"] == tree.path
    assert abs(doc["timestamp_ns"] / 1e9 - time.time()) < 60
    assert doc["info"] == {"source": "model", "domains": "package dram",
                           "split": "impact", "interval_ms": "100"}
    assert [c["path"] for c in doc["cgroups"]] == [
        "/", "/system.slice", "/system.slice/db.service",
        "/system.slice/nginx.service", "/user.slice",
        "/user.slice/user-1000.slice"]
    c = {c["path"]: c for c in doc["cgroups"]}
    assert c["/"]["stat"] == {"usage_usec": 8_000_000, "energy_uj": 10_000_000,
                              "wakeups": 1000, "impact_usec": 9_000_000,
                              "total_uj": 12_500_000, "idle_uj": 2_000_000,
                              "idle_usec": 30_000_000, "irq_uj": 300_001,
                              "irq_usec": 400_007, "softirq_uj": 149_999,
                              "softirq_usec": 250_000, "steal_uj": 50_000,
                              "steal_usec": 1}
    assert conserves(c["/"]["stat"])
    assert set(ROOT_KEYS) <= set(c["/"]["stat"])
    assert not set(ROOT_KEYS) & set(c["/system.slice"]["stat"])
    assert c["/system.slice/nginx.service"] == {
        "path": "/system.slice/nginx.service", "depth": 2,
        "workload": {"unit": "nginx.service"},
        "stat": {"usage_usec": 1_500_000, "energy_uj": 2_500_000,
                 "wakeups": 250, "impact_usec": 2_000_000,
                 "package_uj": 2_000_000, "core_uj": 1_200_000,
                 "dram_uj": 500_000},
        "own": {"usage_usec": 1_500_000, "energy_uj": 2_500_000,
                "wakeups": 250, "impact_usec": 2_000_000,
                "package_uj": 2_000_000, "core_uj": 1_200_000,
                "dram_uj": 500_000}}
    assert all("rates" not in x for x in doc["cgroups"])


# ---- Prometheus --------------------------------------------------------------

def promtool_check(text):
    exe = shutil.which("promtool")
    if not exe:
        subprocess.run(["apt-get", "install", "-y", "-q", "prometheus"],
                       capture_output=True)
        exe = shutil.which("promtool")
    if not exe:
        need.missing("promtool cannot be installed (Debian package "
                     "prometheus)")
    r = subprocess.run([exe, "check", "metrics"], input=text.encode(),
                       capture_output=True)
    assert r.returncode == 0, r.stdout.decode() + r.stderr.decode()
    assert r.stdout.decode().strip() == "" and r.stderr.decode().strip() == ""


def prom_samples(text):
    out = {}
    for line in text.splitlines():
        if not line.startswith("#"):
            k, v = line.rsplit(" ", 1)
            out[k] = v
    return out


def test_prometheus(tool, tree):
    tree.add("/system.slice/nginx.service", energy_uj=2_500_000,
             usage_usec=1_500_000, wakeups=250, impact_usec=2_000_001,
             package_uj=2_000_000, dram_uj=500_000)
    r = run(tool, "--root", tree.path, "--prometheus", "--hierarchical",
            check_rc=0)
    promtool_check(r.out)
    s = prom_samples(r.out)
    ng = '{cgroup="/system.slice/nginx.service",unit="nginx.service"}'
    assert s["cgroup_energy_subtree_joules_total" + ng] == "2.5"
    assert s["cgroup_energy_subtree_cpu_seconds_total" + ng] == "1.5"
    assert s["cgroup_energy_subtree_wakeups_total" + ng] == "250"
    assert s["cgroup_energy_subtree_impact_seconds_total" + ng] == "2.000001"
    assert s['cgroup_energy_subtree_domain_joules_total{cgroup="/system.slice/'
             'nginx.service",unit="nginx.service",domain="package"}'] == "2"
    assert s['cgroup_energy_subtree_domain_joules_total{cgroup="/system.slice/'
             'nginx.service",unit="nginx.service",domain="dram"}'] == "0.5"
    assert s['cgroup_energy_subtree_joules_total{cgroup="/"}'] == "10"
    assert s["cgroup_energy_measured_joules_total"] == "12.5"
    assert s["cgroup_energy_idle_joules_total"] == "2"
    assert s["cgroup_energy_idle_cpu_seconds_total"] == "30"
    assert s["cgroup_energy_irq_joules_total"] == "0.300001"
    assert s["cgroup_energy_irq_cpu_seconds_total"] == "0.400007"
    assert s["cgroup_energy_softirq_joules_total"] == "0.149999"
    assert s["cgroup_energy_softirq_cpu_seconds_total"] == "0.25"
    assert s["cgroup_energy_steal_joules_total"] == "0.05"
    assert s["cgroup_energy_steal_cpu_seconds_total"] == "0.000001"
    assert s['cgroup_energy_source_info{source="model",domains="package dram",'
             'split="impact",kind="modelled"}'] == "1"
    assert len([k for k in s if k.startswith("cgroup_energy_subtree_joules_total")]) == 6
    for name in ("joules", "cpu_seconds", "wakeups", "impact_seconds"):
        assert f"# TYPE cgroup_energy_subtree_{name}_total counter\n" in r.out
        assert f"# HELP cgroup_energy_subtree_{name}_total " in r.out


NEW_ROOT_METRICS = [f"cgroup_energy_{w}_{u}_total"
                    for w in ("irq", "softirq", "steal")
                    for u in ("joules", "cpu_seconds")]


def test_prometheus_irq_softirq_steal(tool, tree):
    """The six root counters: HELP, TYPE and one unlabelled sample each,
    right after the idle ones, values exact (microunits, scale 6)."""
    r = run(tool, "--root", tree.path, "--prometheus", check_rc=0)
    promtool_check(r.out)
    lines = r.out.splitlines()
    at = lines.index("cgroup_energy_idle_cpu_seconds_total 30") + 1
    want = {"irq_joules": "0.300001", "irq_cpu_seconds": "0.400007",
            "softirq_joules": "0.149999", "softirq_cpu_seconds": "0.25",
            "steal_joules": "0.05", "steal_cpu_seconds": "0.000001"}
    for name, (k, v) in zip(NEW_ROOT_METRICS, want.items()):
        assert name == f"cgroup_energy_{k}_total"
        help_, type_, sample = lines[at:at + 3]
        assert help_.startswith(f"# HELP {name} ") and help_.endswith(".")
        assert {"irq": "interrupt", "softirq": "softirq",
                "steal": "hypervisor"}[k.split("_")[0]] in help_.lower()
        assert type_ == f"# TYPE {name} counter"
        assert sample == f"{name} {v}"
        at += 3
    assert lines[at].startswith("# HELP cgroup_energy_source_info ")
    for name in NEW_ROOT_METRICS:
        assert sum(line.startswith(name) for line in lines) == 1
    # the root's conservation, in joules
    s = {k: Decimal(v) for k, v in prom_samples(r.out).items()}
    tasks = sum(v for k, v in s.items()
                if k.startswith("cgroup_energy_joules_total{"))
    assert s["cgroup_energy_measured_joules_total"] == (
        tasks +
        s["cgroup_energy_irq_joules_total"] +
        s["cgroup_energy_softirq_joules_total"] +
        s["cgroup_energy_steal_joules_total"] +
        s["cgroup_energy_idle_joules_total"]) == Decimal("12.5")


def test_root_of_older_module(tool, tree):
    """A root energy.stat without irq, softirq and steal keys (an older
    module, total_uj == energy_uj + idle_uj): no error, the keys are not
    shown anywhere, no such metric, no such rate."""
    old = {k: ROOT[k] for k in ("idle_uj", "idle_usec")}
    old["total_uj"] = 10_000_000 + old["idle_uj"]
    tree.add("/", energy_uj=10_000_000, usage_usec=8_000_000, wakeups=1000,
             impact_usec=9_000_000, **old)
    r = run(tool, "--root", tree.path, "--raw", check_rc=0)
    assert rowmap(r.out)["/"] == ["10.000", "8.000", "1000", "9.000"]
    assert r.err == ""
    doc = json.loads(run(tool, "--root", tree.path, "--json", check_rc=0).out)
    assert doc["cgroups"][0]["stat"] == {
        "usage_usec": 8_000_000, "energy_uj": 10_000_000, "wakeups": 1000,
        "impact_usec": 9_000_000, "total_uj": 12_000_000,
        "idle_uj": 2_000_000, "idle_usec": 30_000_000}
    r = run(tool, "--root", tree.path, "--prometheus", check_rc=0)
    promtool_check(r.out)
    for w in ("irq", "softirq", "steal"):
        assert w not in r.out
    s = prom_samples(r.out)
    assert s["cgroup_energy_measured_joules_total"] == "12"
    assert s["cgroup_energy_idle_joules_total"] == "2"
    live = Live(tool, "--root", tree.path, "--json", "-d", "0.3", "-n", "1")
    doc = live.doc()
    assert set(rates(doc)["/"]) == {"cpu_percent", "power_w", "wakeups_per_s",
                                    "impact", "total_w", "idle_w",
                                    "idle_cpu_percent"}
    assert live.finish()[0] == 0


def test_root_keys_partly_present(tool, tree):
    """Each root metric follows its own key: only steal_* (say) present."""
    st = {k: ROOT[k] for k in ("idle_uj", "idle_usec", "steal_uj",
                               "steal_usec")}
    st["total_uj"] = 10_000_000 + st["idle_uj"] + st["steal_uj"]
    tree.add("/", energy_uj=10_000_000, **st)
    r = run(tool, "--root", tree.path, "--prometheus", check_rc=0)
    promtool_check(r.out)
    s = prom_samples(r.out)
    assert s["cgroup_energy_steal_joules_total"] == "0.05"
    assert s["cgroup_energy_steal_cpu_seconds_total"] == "0.000001"
    assert "irq" not in r.out  # neither irq nor softirq


def test_prometheus_subtree_has_no_root_metrics(tool, tree):
    r = run(tool, "--root", tree.path, "--prometheus", "/user.slice", check_rc=0)
    promtool_check(r.out)
    assert "measured_joules" not in r.out
    for name in NEW_ROOT_METRICS:
        assert name not in r.out
    assert len([k for k in prom_samples(r.out) if "cgroup=" in k]) == 4 * 2


def test_prometheus_not_live(tool, tree):
    r = run(tool, "--root", tree.path, "--prometheus", "-d", "1", check_rc=2)
    assert "cannot be used with -d, -n or -1" in r.err


# ---- live mode ---------------------------------------------------------------

class Live:
    """energystat in live mode, read one output document at a time."""

    def __init__(self, tool, *args):
        self.p = subprocess.Popen([tool, *args], stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, text=True)
        wait_first_read(self.p)

    def doc(self):
        line = self.p.stdout.readline()
        assert line, self.p.stderr.read()
        return json.loads(line)

    def finish(self):
        rest = self.p.stdout.read()
        err = self.p.stderr.read()
        return self.p.wait(timeout=20), rest, err


def rates(doc):
    return {c["path"]: c["rates"] for c in doc["cgroups"]}


def test_live_rates_module_clock(tool, tree):
    """energy.info's last_sample_ns advances 500 ms per step: exact rates."""
    ns = 10**12
    info = {"source": "model", "last_sample_ns": ns}
    tree.set_info(info)
    live = Live(tool, "--root", tree.path, "--json", "-d", "0.5", "-n", "3")
    for step in range(1, 4):
        # +1 J, +0.25 CPU-s, +50 wakeups, +0.5 impact-s on nginx per step
        tree.add("/system.slice/nginx.service", energy_uj=2_500_000 + step * 1_000_000,
                 usage_usec=1_500_000 + step * 250_000, wakeups=250 + step * 50,
                 impact_usec=2_000_000 + step * 500_000)
        info["last_sample_ns"] = ns + step * 500_000_000
        tree.set_info(info)
        doc = live.doc()
        assert doc["mode"] == "live" and doc["reset"] is False
        assert doc["clock"] == "module"
        assert doc["interval_s"] == pytest.approx(0.5, abs=1e-9)
        r = rates(doc)["/system.slice/nginx.service"]
        assert r == pytest.approx({"cpu_percent": 50.0, "power_w": 2.0,
                                   "wakeups_per_s": 100.0, "impact": 100.0},
                                  abs=1e-6)
        assert rates(doc)["/user.slice"] == {"cpu_percent": 0, "power_w": 0,
                                             "wakeups_per_s": 0, "impact": 0}
        assert doc["cgroups"][0]["path"] == "/"
        assert doc["cgroups"][1]["path"] == "/system.slice/nginx.service"
        # counters still there
        c = {c["path"]: c for c in doc["cgroups"]}
        assert c["/system.slice/nginx.service"]["stat"]["energy_uj"] == \
            2_500_000 + step * 1_000_000
    rc, rest, err = live.finish()
    assert (rc, rest, err) == (0, "", "")


def test_live_rates_wall_clock(tool, tree):
    live = Live(tool, "--root", tree.path, "--json", "-d", "0.4", "-n", "2")
    tree.add("/user.slice", energy_uj=2_500_000 + 800_000, usage_usec=3_000_000,
             wakeups=400, impact_usec=3_000_000)
    doc = live.doc()
    assert doc["clock"] == "wall"
    # the wall time between the reads: at least the interval asked for (how
    # much more is the host's load)
    assert 0.3 < doc["interval_s"]
    r = rates(doc)["/user.slice"]
    assert r["power_w"] == pytest.approx(0.8 / doc["interval_s"], rel=1e-4)
    assert r["cpu_percent"] == 0
    doc = live.doc()
    assert rates(doc)["/user.slice"]["power_w"] == 0
    assert live.finish()[0] == 0


def test_live_appear_disappear_reload(tool, tree):
    ns = 10**12
    tree.set_info({"last_sample_ns": ns})
    live = Live(tool, "--root", tree.path, "--json", "--sort", "path",
                "-d", "0.5", "-n", "4")
    # step 1: a cgroup appears (counters from 0), another disappears
    tree.add("/system.slice/new.service", energy_uj=500_000, usage_usec=100_000,
             wakeups=5, impact_usec=100_000)
    tree.remove("/user.slice/user-1000.slice")
    tree.set_info({"last_sample_ns": ns + 500_000_000})
    doc = live.doc()
    r = rates(doc)
    assert "/user.slice/user-1000.slice" not in r
    assert r["/system.slice/new.service"] == pytest.approx(
        {"power_w": 1.0, "cpu_percent": 20.0, "wakeups_per_s": 10.0,
         "impact": 20.0})
    assert [c["path"] for c in doc["cgroups"]] == [
        "/", "/system.slice", "/system.slice/db.service",
        "/system.slice/new.service", "/system.slice/nginx.service", "/user.slice"]
    # step 2: the module is reloaded: root counters go back
    tree.add("/", energy_uj=1_000, usage_usec=1_000, wakeups=1, impact_usec=1_000,
             **root_keys(1_000, idle_uj=1_000, idle_usec=1_000))
    tree.add("/system.slice", energy_uj=10)
    tree.set_info({"last_sample_ns": 5})
    doc = live.doc()
    assert doc["reset"] is True
    assert all(c["rates"] is None for c in doc["cgroups"])
    # step 3: rates again, from the new baseline
    tree.add("/", energy_uj=1_001_000, usage_usec=1_000, wakeups=1,
             impact_usec=1_000,
             **root_keys(1_001_000, idle_uj=501_000, idle_usec=1_000))
    tree.set_info({"last_sample_ns": 5 + 500_000_000})
    doc = live.doc()
    assert doc["reset"] is False
    r = rates(doc)["/"]
    assert r["power_w"] == pytest.approx(2.0)
    assert r["total_w"] == pytest.approx(3.0)
    assert r["idle_w"] == pytest.approx(1.0)
    assert r["idle_cpu_percent"] == 0
    # step 4: a cgroup removed and created again (same path): from 0
    tree.remove("/system.slice/db.service")
    tree.add("/system.slice/db.service", energy_uj=250_000)
    tree.set_info({"last_sample_ns": 5 + 1_000_000_000})
    doc = live.doc()
    assert rates(doc)["/system.slice/db.service"]["power_w"] == pytest.approx(0.5)
    rc, rest, err = live.finish()
    assert rc == 0 and rest == ""
    assert err == ("energystat: counters restarted (module reloaded?): new "
                   "baseline, rates from the next update\n")


def test_live_root_irq_softirq_steal_rates(tool, tree):
    """Rates of the root's irq, softirq and steal keys, exact on the module
    clock; they add up like the counters. A drop of one of them alone is a
    reload."""
    ns = 10**12
    tree.set_info({"last_sample_ns": ns})
    live = Live(tool, "--root", tree.path, "--json", "-d", "0.5", "-n", "2")
    base = dict(usage_usec=8_000_000, wakeups=1000, impact_usec=9_000_000)
    # over 0.5 s: +1 J tasks, +0.25 J / 10 % of a CPU irq, +0.1 J / 5 %
    # softirq, +0.05 J / 50 % steal, +0.6 J / 100 % idle
    st = root_keys(11_000_000,
                   idle_uj=ROOT["idle_uj"] + 600_000,
                   idle_usec=ROOT["idle_usec"] + 500_000,
                   irq_uj=ROOT["irq_uj"] + 250_000,
                   irq_usec=ROOT["irq_usec"] + 50_000,
                   softirq_uj=ROOT["softirq_uj"] + 100_000,
                   softirq_usec=ROOT["softirq_usec"] + 25_000,
                   steal_uj=ROOT["steal_uj"] + 50_000,
                   steal_usec=ROOT["steal_usec"] + 250_000)
    tree.add("/", energy_uj=11_000_000, **base, **st)
    tree.set_info({"last_sample_ns": ns + 500_000_000})
    doc = live.doc()
    assert doc["reset"] is False and doc["clock"] == "module"
    root = doc["cgroups"][0]
    assert root["path"] == "/" and conserves(root["stat"])
    assert root["stat"]["steal_usec"] == 250_001
    r = rates(doc)["/"]
    assert r == pytest.approx({
        "cpu_percent": 0, "power_w": 2.0, "wakeups_per_s": 0, "impact": 0,
        "total_w": 4.0, "idle_w": 1.2, "idle_cpu_percent": 100.0,
        "irq_w": 0.5, "irq_cpu_percent": 10.0,
        "softirq_w": 0.2, "softirq_cpu_percent": 5.0,
        "steal_w": 0.1, "steal_cpu_percent": 50.0}, abs=1e-6)
    assert r["total_w"] == pytest.approx(r["power_w"] + r["irq_w"] +
                                         r["softirq_w"] + r["steal_w"] +
                                         r["idle_w"], abs=1e-6)
    # only softirq_usec goes back: the module was reloaded
    st["softirq_usec"] -= 1
    tree.add("/", energy_uj=11_000_000, **base, **st)
    tree.set_info({"last_sample_ns": ns + 1_000_000_000})
    doc = live.doc()
    assert doc["reset"] is True
    assert all(c["rates"] is None for c in doc["cgroups"])
    rc, rest, err = live.finish()
    assert (rc, rest) == (0, "")
    assert err == ("energystat: counters restarted (module reloaded?): new "
                   "baseline, rates from the next update\n")


def test_live_tree_goes_and_comes_back(tool, tree):
    live = Live(tool, "--root", tree.path, "--json", "-d", "1", "-n", "3")
    os.rename(os.path.join(tree.path, "energy.stat"),
              os.path.join(tree.path, "saved"))
    # update 1 fails: not mounted; the tree is back 1 s before update 2
    assert live.p.stderr.readline().startswith(
        f"energystat: nothing mounted on {tree.path} (no energy.stat)")
    os.rename(os.path.join(tree.path, "saved"),
              os.path.join(tree.path, "energy.stat"))
    doc = live.doc()               # update 2: new baseline
    assert doc["reset"] is True
    doc = live.doc()               # update 3: rates
    assert rates(doc)["/"]["power_w"] == 0
    rc, rest, err = live.finish()
    assert rc == 1 and rest == ""
    assert err == ("energystat: counters restarted (module reloaded?): new "
                   "baseline, rates from the next update\n")


def test_live_key_new_in_sample_has_null_rate(tool, tree):
    """A key missing from the previous sample of a known cgroup: no rate."""
    live = Live(tool, "--root", tree.path, "--json", "-n", "1")
    tree.add("/user.slice", energy_uj=2_500_000, usage_usec=3_000_000,
             wakeups=400, impact_usec=3_000_000, package_uj=7)
    doc = live.doc()
    assert 0.8 < doc["interval_s"] < 1.5  # -n alone: 1 s
    r = rates(doc)["/user.slice"]
    assert r == {"cpu_percent": 0, "power_w": 0, "wakeups_per_s": 0,
                 "impact": 0, "package_w": None}
    assert live.finish()[0] == 0


def test_info_repeated_and_junk_lines(tool, tree):
    with open(os.path.join(tree.path, "energy.info"), "wb") as f:
        f.write(b"source rapl\nsource model\n\x00bad\nBad key\nlonely\n"
                b"domains  package\tdram  \n")
    doc = json.loads(run(tool, "--root", tree.path, "--json", check_rc=0).out)
    assert doc["info"] == {"source": "rapl", "domains": "package dram"}


def test_live_table(tool, tree):
    ns = 10**12
    tree.set_info({"last_sample_ns": ns})
    p = subprocess.Popen([tool, "--root", tree.path, "-d", "0.5", "-n", "2",
                          "--raw"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    wait_first_read(p)
    tree.add("/system.slice/db.service", energy_uj=5_000_000 + 1_500_000,
             usage_usec=3_500_000 + 500_000, wakeups=350 + 10,
             impact_usec=4_000_000 + 250_000)
    tree.add("/added", energy_uj=1)
    tree.write("/user.slice", "bad\n")
    tree.set_info({"last_sample_ns": ns + 500_000_000})
    out, err = p.communicate(timeout=20)
    assert p.returncode == 1
    first, second = out.split("\n\n")
    head, rows = table(first)
    assert head == ["CGROUP", "POWER(W)", "CPU%", "WAKEUPS/s", "IMPACT"]  # no source: measured
    m = dict(rows)
    assert rows[0][0] == "/"
    assert rows[1] == ("/system.slice/db.service", ["3.000", "100.0", "20.0", "50.0"])
    assert m["/added"] == ["0.000", "0.0", "0.0", "0.0"]
    assert "/user.slice" not in m
    assert m["/user.slice/user-1000.slice"] == ["0.000", "0.0", "0.0", "0.0"]
    # no module sample since (last_sample_ns unchanged): the module's rate
    # again, not a rate of 0 over the wall clock
    m2 = rowmap(second)
    assert m2["/system.slice/db.service"] == ["3.000", "100.0", "20.0", "50.0"]
    assert f"{tree.path}/user.slice/energy.stat:1: expected 'key value'" in err


def test_live_table_dash_after_unreadable(tool, tree):
    """A cgroup unreadable in the previous sample has no rate: '-'."""
    tree.write("/user.slice", "bad\n")
    p = subprocess.Popen([tool, "--root", tree.path, "-d", "0.4", "-n", "1"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    wait_first_read(p)
    tree.add("/user.slice", energy_uj=1)
    out, err = p.communicate(timeout=20)
    assert rowmap(out)["/user.slice"] == ["-", "-", "-", "-"]
    assert p.returncode == 1


# ---- usage, help, version, install -------------------------------------------

def test_help_version(tool):
    r = run(tool, "--help", check_rc=0)
    for opt in ("--depth", "--delay", "--iterations", "-1", "--batch",
                "--json", "--prometheus", "--root", "--sort", "--version"):
        assert opt in r.out
    r = run(tool, "--version", check_rc=0)
    assert r.out == f"energystat {header_define('CGE_VERSION')}\n"
    assert run(tool, "-V", check_rc=0).out == r.out


@pytest.mark.parametrize("args,msg", [
    (["--bogus"], "unknown option '--bogus'"),
    (["--depth", "x"], "invalid depth 'x'"),
    (["--depth", "-1"], "invalid depth '-1'"),
    # -d was the depth: a script's "-d 0" gets an error naming --depth
    (["-d", "0"], "invalid delay '0': expected seconds between updates, "
     "from 0.01 to 86400 (-d is the delay, as in systemd-cgtop; levels are "
     "--depth)"),
    (["-d", "nan"], "invalid delay 'nan'"),
    (["-d", "x"], "invalid delay 'x'"),
    # -i was the interval: gone, with the flag to use instead
    (["-i", "1"], "-i/--interval is gone: the delay between updates is "
     "-d/--delay SEC, as in systemd-cgtop"),
    (["--interval", "1"], "-i/--interval is gone"),
    (["-n", "0"], "invalid iterations '0'"),
    (["-s", "watts"], "invalid sort key 'watts'"),
    (["--json", "--prometheus"], "--json and --prometheus exclude each other"),
    (["-d"], "option '-d' needs an argument"),
    (["--prometheus", "-1"], "cannot be used with -d, -n or -1"),
])
def test_usage_errors(tool, tree, args, msg):
    r = run(tool, "--root", tree.path, *args, check_rc=2)
    assert r.out == ""
    assert len(r.err.splitlines()) == 1 and msg in r.err
    assert r.err.endswith("(see energystat --help)\n")


def test_install_uninstall(tool, tmp_path):
    ud = os.path.join(REPO, "userspace")
    r = subprocess.run(["make", "-C", ud, "install", "PREFIX=/opt/es",
                        f"DESTDIR={tmp_path}"], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    exe = tmp_path / "opt/es/bin/energystat"
    man = tmp_path / "opt/es/share/man/man1/energystat.1"
    assert os.access(exe, os.X_OK) and stat.S_IMODE(os.stat(man).st_mode) == 0o644
    assert subprocess.run([exe, "--version"], capture_output=True).returncode == 0
    r = subprocess.run(["make", "-C", ud, "uninstall", "PREFIX=/opt/es",
                        f"DESTDIR={tmp_path}"], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert not exe.exists() and not man.exists()


def test_man_page(tool):
    man = os.path.join(REPO, "userspace", "energystat.1")
    need.need("groff", "groff")
    r = subprocess.run(["groff", "-man", "-Tascii", "-ww", man],
                       capture_output=True, text=True)
    assert r.returncode == 0 and r.stderr == "", r.stderr
    text = re.sub(r".\x08", "", r.stdout)  # overstrike bold/underline
    text = " ".join(text.split())            # words, not lines
    for word in ("--json", "--prometheus", "--root", "--runtime-root",
                 "EXIT STATUS", "power_w",
                 "cpu_percent", "wakeups_per_s", "impact", "modprobe",
                 "gid=", "cgroup_energy_joules_total",
                 "softirq_usec", "steal_uj", "irq_w", "steal_cpu_percent",
                 "cgroup_energy_irq_cpu_seconds_total",
                 "cgroup_energy_softirq_joules_total",
                 "cgroup_energy_steal_cpu_seconds_total",
                 "total_uj = energy_uj + irq_uj + softirq_uj + steal_uj + "
                 "idle_uj", "--raw", "power_avg10_mw", "machine since load",
                 "Interactive view", "kWh"):
        assert word in text, word


# ---- performance and memory ------------------------------------------------

@pytest.fixture(scope="module")
def big(tmp_path_factory):
    """A tree of 10,000 cgroups, built once for the tests that read it."""
    return build_big(tmp_path_factory.mktemp("big") / "big", 10000)


# a CPU-time ratio against find and cat: the deep tier's (its noise is the
# host's, see below)
@pytest.mark.deep
def test_10000_cgroups_cpu_time_guard(tool, big):
    t = big

    def cpu_s(cmd, **kw):
        r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
        r = run(*cmd, check_rc=0, **kw)
        r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
        return r, (r1.ru_utime + r1.ru_stime) - (r0.ru_utime + r0.ru_stime)

    # A regression guard, not a benchmark: the tool's own CPU time (wall
    # time measured the host's load: 5.2 s once on a busy host) against
    # the CPU time of reading the same files with find and cat on the same
    # host (CPU time measured the host too: an absolute limit of 2 s, ten
    # times the 0.10-0.19 s measured once, failed at 2.1 s on CI's host
    # for d811c46). The ratio: 0.23-0.38 in tests/results/energystat-cpu.jsonl
    # (energystat_cpu.py; idle, and beside two busy loops); the limit, 1.0,
    # is 2.6 times its most.
    for args in ([], ["--json"], ["--prometheus"]):
        _, ref = cpu_s(["sh", "-c", 'find "$0" -name energy.stat -print0 | '
                        "xargs -0r cat >/dev/null", t.path],
                       stdin=subprocess.DEVNULL)
        r, took = cpu_s([tool, "--root", t.path, *args])
        assert took < ref, (args, took, ref)


def test_10000_cgroups_listed(tool, big):
    t = big
    r = run(tool, "--root", t.path, "--prometheus", check_rc=0)
    assert len(r.out.splitlines()) > 4 * 10001
    m = rowmap(run(tool, "--root", t.path, "--raw", check_rc=0,
                   env=dict(os.environ, COLUMNS="200")).out)
    assert len(m) == 10001
    assert m["/slice-099.slice/svc-09899.service"][0] == "9.900"


VALGRIND = ["valgrind", "-q", "--error-exitcode=1", "--leak-check=full",
            "--errors-for-leak-kinds=definite,indirect"]


@pytest.mark.parametrize("args,rc", [
    ([], 0), (["--json"], 0), (["--prometheus"], 0), (["--depth", "1", "-s", "path"], 0),
    (["/system.slice", "/sys/fs/cgroup/system.slice/db.service"], 0),
    (["--json", "-d", "0.2", "-n", "2"], 0), (["-b", "-d", "0.2", "-n", "2"], 0), (["-1", "-d", "0.2"], 0),
    (["/nope", "/user.slice"], 1), (["MALFORMED"], 1), (["--bogus"], 2),
    (["--help"], 0), (["TREE", "--json"], 0),
    (["TREE", "-d", "0.2", "-n", "2", "--depth", "1", "/user.slice"], 0),
    (["TREE", "/energy.stat", "/system.slice/energy.stat"], 0),
    (["BADTREE"], 2),
])
def test_valgrind(tool, tree, tmp_path, args, rc):
    need.need("valgrind", "valgrind")
    if args == ["MALFORMED"]:
        tree.write("/user.slice", "usage_usec 1\nenergy_uj 99999999999999999999\n")
        tree.write("/system.slice", b"\xff\x00" * 100)
        os.symlink("..", os.path.join(tree.path, "system.slice", "loop"))
        args = []
    if args[:1] == ["TREE"]:    # energy.tree, cgroups named like files
        tree.add_hidden("/energy.stat", energy_uj=1)
        tree.add_hidden("/system.slice/energy.stat", energy_uj=1)
        tree.tree_file = True
        tree.changed()
        args = args[1:]
    if args == ["BADTREE"]:
        tree.write_tree("path usage_usec energy_uj wakeups impact_usec\n"
                        "/ 1 2 3 4\n/a\\999 1 2 3 4\n")
        args = []
    r = subprocess.run(VALGRIND + [tool, "--root", tree.path, *args],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == rc, r.stderr
    assert "==" not in r.stderr, r.stderr  # valgrind -q prints nothing when clean
    r = subprocess.run(VALGRIND + [tool, "--root", tmp_path / "none"],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 2 and "==" not in r.stderr, r.stderr


# ---- human units, the machine line ------------------------------------------

@pytest.mark.parametrize("uj,shown", [
    (0, "0.00 J"), (2_500_000, "2.50 J"), (12_345_678, "12.3 J"),
    (999_400_000, "999 J"), (999_600_000, "1.00 kJ"),
    (12_345_000_000, "12.3 kJ"), (35_999_000_000, "36.0 kJ"),
    (36_000_000_000, "10.0 Wh"), (110_736_000_000, "30.8 Wh"),
    (3_598_000_000_000, "999 Wh"), (3_600_000_000_000, "1.00 kWh"),
    (36_000_000_000_000, "10.0 kWh"), (U64_MAX, "5124096 kWh")])
def test_human_energy(tool, tmp_path, uj, shown):
    """ENERGY in J below 1 kJ, kJ below 10 Wh, Wh below 1 kWh, kWh above;
    --raw: the exact joules of before (one hour of 30.76 W: 110736.000)."""
    t = Tree(tmp_path / "ce")
    t.add("/", energy_uj=uj)
    head, rows = table(run(tool, "--root", t.path, check_rc=0).out)
    assert head[1] == "ENERGY" and rows[0][1][0] == shown
    head, rows = table(run(tool, "--root", t.path, "--raw", check_rc=0).out)
    assert head[1] == "ENERGY(J)" and rows[0][1][0] == joules(uj)


@pytest.mark.parametrize("delta_uj,shown,raw", [
    (50_000, "0.05 W", "0.050"), (1_500_000, "1.50 W", "1.500"),
    (35_250_000, "35.2 W", "35.250"), (12_345_678_000, "12346 W",
                                       "12345.678")])
def test_human_power(tool, tree, delta_uj, shown, raw):
    """POWER in W, over exactly 1 s of the module's clock."""
    ns = 10**12
    for args in ((), ("--raw",)):
        tree.set_info({"last_sample_ns": ns})
        tree.add("/user.slice", energy_uj=2_500_000, usage_usec=3_000_000,
                 wakeups=400, impact_usec=3_000_000)
        p = subprocess.Popen([tool, "--root", tree.path, "-d", "0.3", "-n",
                              "1", *args], stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True)
        wait_first_read(p)
        tree.add("/user.slice", energy_uj=2_500_000 + delta_uj,
                 usage_usec=3_000_000, wakeups=400, impact_usec=3_000_000)
        tree.set_info({"last_sample_ns": ns + 1_000_000_000})
        out, err = p.communicate(timeout=20)
        assert p.returncode == 0, err
        head, rows = table(out)
        assert head[1] == ("POWER(W)" if args else "POWER")
        assert dict(rows)["/user.slice"][0] == (raw if args else shown)


def machine_parts(line):
    """'machine...: total X U = tasks X U + idle X U ...' -> {name: Decimal}."""
    m = re.match(r"machine(?: since load)?: total (\S+) (J|W) = (.*)$", line)
    parts = {"total": Decimal(m.group(1))}
    for name, v in re.findall(r"(?:= |\+ )?(\w+) (\S+) " + m.group(2),
                              m.group(3)):
        parts[name] = Decimal(v)
    return parts


def test_machine_line_adds_up(tool, tree):
    """The machine line: the root's total_uj and its parts (tasks' energy_uj,
    idle, irq, softirq, steal) add up exactly, as the contract's identity;
    --raw prints them exact, to the microjoule."""
    r = run(tool, "--root", tree.path, "--raw", check_rc=0,
            env=dict(os.environ, COLUMNS="300"))
    line = r.out.splitlines()[-1]
    p = machine_parts(line)
    assert list(p) == ["total", "tasks", "idle", "irq", "softirq", "steal"]
    uj = lambda k: Decimal(ROOT[k]) / 10**6
    assert p == {"total": uj("total_uj"), "tasks": Decimal(10),
                 "idle": uj("idle_uj"), "irq": uj("irq_uj"),
                 "softirq": uj("softirq_uj"), "steal": uj("steal_uj")}
    assert p["total"] == sum(v for k, v in p.items() if k != "total")
    assert line == ("machine since load: total 12.5 J = tasks 10 J + idle 2 J"
                    " + irq 0.300001 J + softirq 0.149999 J + steal 0.05 J")
    # human units, wrapped at 80 columns
    r = run(tool, "--root", tree.path, check_rc=0)
    assert r.out.splitlines()[-2:] == [
        "machine since load: total 12.5 J = tasks 10.0 J + idle 2.00 J + "
        "irq 0.30 J", "  + softirq 0.15 J + steal 0.05 J"]
    # an older module: no irq/softirq/steal keys, total = tasks + idle
    tree.add("/", energy_uj=10_000_000, usage_usec=8_000_000, wakeups=1000,
             impact_usec=9_000_000, total_uj=12_000_000, idle_uj=2_000_000,
             idle_usec=1)
    r = run(tool, "--root", tree.path, "--raw", check_rc=0)
    assert r.out.splitlines()[-1] == (
        "machine since load: total 12 J = tasks 10 J + idle 2 J")
    # no total_uj: no machine line
    tree.add("/", energy_uj=10_000_000)
    r = run(tool, "--root", tree.path, check_rc=0)
    assert not any(ln.startswith("machine") for ln in r.out.splitlines())


# ---- the interactive live view, in tmux --------------------------------------

class Tmux:
    """energystat in a tmux window of cols x rows, on a server of its own:
    a shell script saves `stty -g` before and after the tool and its exit
    status, so that the terminal's restoration can be compared."""

    def __init__(self, tmp_path, cols, rows, argv):
        import shlex
        assert shutil.which("tmux"), "tmux missing (apt-get install tmux)"
        self.dir = tmp_path
        self.sock = str(tmp_path / "tmux.sock")
        script = tmp_path / "run.sh"
        script.write_text(
            "stty -g > before\n\"$@\"\nrc=$?\nstty -g > after\n"
            "echo $rc > rc.tmp && mv rc.tmp rc\nexec sleep 600\n")
        cmd = "cd %s && exec env -u COLUMNS -u LINES sh run.sh %s" % (
            shlex.quote(str(tmp_path)), " ".join(shlex.quote(a) for a in argv))
        self.tmux("new-session", "-d", "-x", str(cols), "-y", str(rows),
                  "-s", "t", cmd)

    def tmux(self, *args):
        return subprocess.run(["tmux", "-S", self.sock, "-f", "/dev/null",
                               *args], capture_output=True, text=True,
                              check=True, timeout=20).stdout

    def screen(self):
        return self.tmux("capture-pane", "-p", "-t", "t")

    def wait(self, pred, what, timeout=10):
        """The screen once pred(screen) holds; fails after timeout (a hang
        guard, far above what the tool takes)."""
        deadline = time.monotonic() + timeout
        while True:
            s = self.screen()
            if pred(s):
                return s
            if time.monotonic() > deadline:
                raise AssertionError(f"{what}; the screen:\n{s}")
            time.sleep(0.05)

    def keys(self, *keys):
        self.tmux("send-keys", "-t", "t", *keys)

    def tool_pid(self):
        sh = int(self.tmux("display-message", "-p", "-t", "t",
                           "#{pane_pid}").strip())
        with open(f"/proc/{sh}/task/{sh}/children") as f:
            return int(f.read().split()[0])

    def stty(self):
        """The tool's terminal settings now, as `stty -a` shows them."""
        return subprocess.run(["stty", "-a", "-F", self.tmux(
            "display-message", "-p", "-t", "t", "#{pane_tty}").strip()],
            capture_output=True, text=True, check=True).stdout

    def finish(self):
        """The tool's exit status, once written; the terminal's settings
        before and after it."""
        rc = self.dir / "rc"
        deadline = time.monotonic() + 10
        while not rc.exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        before = (self.dir / "before").read_text()
        after = (self.dir / "after").read_text()
        return rc.read_text().strip(), before, after

    def close(self):
        subprocess.run(["tmux", "-S", self.sock, "kill-server"],
                       capture_output=True, timeout=20)


LONG_POD = ("/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod"
            "5f1e2a3b_1234_5678_9abc_def012345678.slice")
LONG_CTR = (LONG_POD + "/cri-containerd-" + "0123456789abcdef" * 4 + ".scope")


@pytest.fixture
def top_tree(tree):
    """The tree with power_avg10_mw in every file and a pod's container
    (a long path) below kubepods.slice."""
    avg = {"/": 30760, "/system.slice": 1500, "/system.slice/nginx.service": 500,
           "/system.slice/db.service": 1000, "/user.slice": 700,
           "/user.slice/user-1000.slice": 700}
    for cg, mw in avg.items():
        with open(os.path.join(tree.dir(cg), b"energy.stat")) as f:
            text = f.read()
        tree.write(cg, text + f"power_avg10_mw {mw}\n")
    for cg, mw in (("/kubepods.slice", 12345),
                   ("/kubepods.slice/kubepods-burstable.slice", 12345),
                   (LONG_POD, 12345), (LONG_CTR, 12345)):
        tree.add(cg, energy_uj=900_000, power_avg10_mw=mw)
    tree.set_info({"source": "rapl", "interval_ms": 100,
                   "last_sample_ns": 10**12})
    return tree


def rows_of(screen):
    """The table's rows on the screen: [(name cell, first number cell)]."""
    lines = screen.split("\n")
    i = next(k for k, ln in enumerate(lines) if ln.startswith("CGROUP "))
    out = []
    for ln in lines[i + 1:]:
        if not ln.strip():
            break
        m = re.match(r"^(.*?)\s{2,}(\S+(?: W)?)\s+\S+\s+\S+\s+\S+$", ln)
        assert m, ln
        out.append((m.group(1), m.group(2)))
    return out


@pytest.mark.parametrize("cols", [80, 200])
def test_top_first_screen_keys_and_terminal(tool, top_tree, tmp_path, cols):
    """-d 30: the first screen comes at once (power from power_avg10_mw,
    said so), long paths cut in the middle keep both ends, the workload
    before the path; p/e sort, -/+ depth, space pauses, h help, q quits
    with 0 and the terminal as it was."""
    t = Tmux(tmp_path, cols, 24, [tool, "--root", top_tree.path, "-d", "30"])
    try:
        start = time.monotonic()
        s = t.wait(lambda s: "CGROUP" in s, "no first screen")
        assert time.monotonic() - start < 30
        print(f"\n--- {cols} columns ---\n{s}")     # pytest -s shows it
        lines = s.split("\n")
        assert lines[0].startswith("energystat  sort: power  depth: 3  every 30 s")
        assert lines[1].startswith("machine since load: total 12.5 J = tasks 10.0 J")
        assert any(ln.startswith("POWER: the module's 10 s average "
                                 "(power_avg10_mw)") for ln in lines)
        assert all(len(ln) <= cols for ln in lines)
        st = t.stty()
        assert "-icanon" in st.split() and "-echo" in st.split()
        rows = rows_of(s)
        names = [n for n, _ in rows]
        assert rows[0] == ("/", "30.8 W")
        assert rows[1][1] == "12.3 W" and rows[1][0] == "/kubepods.slice"
        pod = [n for n in names if n.startswith("pod:5f1e2a3b ")]
        assert len(pod) == 1            # depth 3: the container hidden
        path = pod[0].split("  ", 1)[1].strip()
        if cols == 80:
            # cut in the middle: its start and its end kept
            assert "..." in path and path.startswith("/kubepods.slice")
            assert path.endswith("012345678.slice")
        else:
            assert path == LONG_POD
        assert dict(rows)["/system.slice/db.service"] == "1.00 W"
        assert names.index("/system.slice/db.service") < \
            names.index("/system.slice/nginx.service")
        # p: tree order at once (not at the next update, 30 s away)
        t.keys("p")
        s = t.wait(lambda s: "sort: path" in s, "p did not sort by path")
        names = [n for n, _ in rows_of(s)]
        assert names.index("/system.slice/db.service") < \
            names.index("/system.slice/nginx.service") < \
            names.index("/user.slice")
        assert names.index("/kubepods.slice") < names.index("/system.slice")
        t.keys("e")
        s = t.wait(lambda s: "sort: power" in s, "e did not sort by power")
        assert [n for n, _ in rows_of(s)][1] == "/kubepods.slice"
        # + shows the container (its workload before its path), - hides
        t.keys("+")
        s = t.wait(lambda s: "depth: 4" in s, "+ did not add a level")
        ctr = [n for n, _ in rows_of(s)
               if n.startswith("pod:5f1e2a3b/0123456789ab ")]
        assert len(ctr) == 1 and ctr[0].rstrip().endswith(".scope")
        t.keys("-", "-", "-")
        s = t.wait(lambda s: "depth: 1" in s, "- did not remove levels")
        assert [n for n, _ in rows_of(s)] == [
            "/", "/kubepods.slice", "/system.slice", "/user.slice"]
        t.keys("h")
        s = t.wait(lambda s: "q quit  sort: p path" in s, "no help line")
        t.keys(" ")
        t.wait(lambda s: "PAUSED" in s, "space did not pause")
        t.keys(" ")
        t.wait(lambda s: "PAUSED" not in s, "space did not resume")
        t.keys("q")
        rc, before, after = t.finish()
        assert rc == "0"
        assert before == after
    finally:
        t.close()


def test_top_rates_after_the_first_screen(tool, top_tree, tmp_path):
    """After the first screen, rates between samples (files rewritten
    between frames, while paused so that no read sees half of it): the
    note goes, the machine line shows watts that add up (--raw), c sorts
    by CPU; paused, the screen stays while files change."""
    tree = top_tree
    ns = 10**12
    t = Tmux(tmp_path, 200, 30, [tool, "--root", tree.path, "-d", "1",
                                 "--raw"])
    try:
        t.wait(lambda s: "POWER(W)" in s, "no first screen")
        t.keys(" ")
        t.wait(lambda s: "PAUSED" in s, "space did not pause")
        # 1 s of the module's clock: db 2 W and 10% CPU, nginx 1 W and 50%
        tree.add("/system.slice/db.service", energy_uj=5_000_000 + 2_000_000,
                 usage_usec=3_500_000 + 100_000, wakeups=350,
                 impact_usec=4_000_000)
        tree.add("/system.slice/nginx.service",
                 energy_uj=2_500_000 + 1_000_000,
                 usage_usec=1_500_000 + 500_000, wakeups=250,
                 impact_usec=2_000_000)
        tree.add("/", energy_uj=13_000_000, usage_usec=8_600_000,
                 wakeups=1000, impact_usec=9_000_000,
                 **root_keys(13_000_000, idle_uj=ROOT["idle_uj"] + 4_000_000,
                             irq_uj=ROOT["irq_uj"] + 250_000,
                             softirq_uj=ROOT["softirq_uj"] + 125_000,
                             steal_uj=ROOT["steal_uj"] + 1_000,
                             idle_usec=ROOT["idle_usec"],
                             irq_usec=ROOT["irq_usec"],
                             softirq_usec=ROOT["softirq_usec"],
                             steal_usec=ROOT["steal_usec"]))
        tree.set_info({"source": "rapl", "interval_ms": 100,
                       "last_sample_ns": ns + 1_000_000_000})
        t.keys(" ")
        s = t.wait(lambda s: "machine: total" in s, "no frame of rates")
        assert "10 s average" not in s
        line = next(ln for ln in s.split("\n") if ln.startswith("machine"))
        p = machine_parts(line)
        assert p == {"total": Decimal("7.376"), "tasks": Decimal("3.000"),
                     "idle": Decimal("4.000"), "irq": Decimal("0.250"),
                     "softirq": Decimal("0.125"), "steal": Decimal("0.001")}
        assert p["total"] == sum(v for k, v in p.items() if k != "total")
        rows = dict(rows_of(s))
        assert rows["/system.slice/db.service"] == "2.000"
        assert rows["/system.slice/nginx.service"] == "1.000"
        t.keys("c")
        s = t.wait(lambda s: "sort: cpu" in s, "c did not sort by cpu")
        names = [n for n, _ in rows_of(s)]
        assert names.index("/system.slice/nginx.service") < \
            names.index("/system.slice/db.service")
        t.keys(" ")
        paused = t.wait(lambda s: "PAUSED" in s and
                        "/user.slice/user-1000.slice" in s,
                        "space did not pause")
        tree.add("/system.slice/db.service", energy_uj=5_000_000 + 9_000_000,
                 usage_usec=3_600_000, wakeups=350, impact_usec=4_000_000)
        tree.set_info({"source": "rapl", "interval_ms": 100,
                       "last_sample_ns": ns + 2_000_000_000})
        time.sleep(2.5)         # two updates' time: nothing drawn
        assert t.screen() == paused
        t.keys(" ")
        s = t.wait(lambda s: "PAUSED" not in s and
                   dict(rows_of(s))["/system.slice/db.service"] == "7.000",
                   "no new frame after the pause")
        t.keys("q")
        assert t.finish()[0] == "0"
    finally:
        t.close()


def test_top_signals_restore_the_terminal(tool, top_tree, tmp_path):
    """SIGTERM in raw mode: the terminal as it was (the tool dies by the
    signal, as before); a window resize redraws at the new width."""
    t = Tmux(tmp_path, 80, 24, [tool, "--root", top_tree.path, "-d", "30",
                                "--depth", "4"])
    try:
        s = t.wait(lambda s: "CGROUP" in s, "no first screen")
        assert all(len(ln) <= 80 for ln in s.split("\n"))
        t.tmux("resize-window", "-t", "t", "-x", "200", "-y", "24")
        s = t.wait(lambda s: s.startswith("energystat") and
                   len(s.split("\n")[3]) > 80, "no redraw at 200 columns")
        assert LONG_POD in s
        os.kill(t.tool_pid(), 15)
        rc, before, after = t.finish()
        assert rc == str(128 + 15)
        assert before == after
    finally:
        t.close()


def test_power_avg10_leaves_json_and_prometheus_alone(tool, tree):
    """power_avg10_mw (a gauge) is read for the live view's first screen
    only: JSON and Prometheus are the same with it as without; twice in a
    file is an error as any key."""
    outs = lambda: [run(tool, "--root", tree.path, *a, check_rc=0).out
                    for a in (("--json",), ("--prometheus",))]
    before = outs()
    with open(os.path.join(tree.dir("/user.slice"), b"energy.stat")) as f:
        text = f.read()
    tree.write("/user.slice", text + "power_avg10_mw 700\n")
    after = outs()
    strip = lambda o: re.sub(r'"timestamp_ns":\d+', "", o)
    assert [strip(o) for o in after] == [strip(o) for o in before]
    tree.write("/user.slice", text + "power_avg10_mw 7\npower_avg10_mw 7\n")
    r = run(tool, "--root", tree.path, check_rc=1)
    assert "duplicate key power_avg10_mw" in r.err


def test_top_ctrl_z_and_fg(tool, top_tree, tmp_path):
    """Ctrl-Z in an interactive shell (no readline: the prompt's terminal
    is canonical): stopped, the terminal is as it was (which bash's job
    control also restores, so this checks what the operator sees); fg:
    raw mode again and the screen redrawn (SIGCONT); q: as it was."""
    assert shutil.which("tmux"), "tmux missing (apt-get install tmux)"
    sock = str(tmp_path / "tmux.sock")
    tm = lambda *a: subprocess.run(["tmux", "-S", sock, "-f", "/dev/null", *a],
                                   capture_output=True, text=True, check=True,
                                   timeout=20).stdout
    tm("new-session", "-d", "-x", "100", "-y", "30", "-s", "z",
       "env -u COLUMNS -u LINES PS1='$ ' bash --norc --noprofile --noediting -i")
    try:
        tty = tm("display-message", "-p", "-t", "z", "#{pane_tty}").strip()
        flags = lambda: subprocess.run(["stty", "-a", "-F", tty],
                                       capture_output=True, text=True,
                                       check=True).stdout.split()

        def wait(pred, what):
            deadline = time.monotonic() + 10
            while not pred():
                if time.monotonic() > deadline:
                    raise AssertionError(what + ":\n" + tm("capture-pane",
                                                           "-p", "-t", "z"))
                time.sleep(0.05)
        wait(lambda: "$" in tm("capture-pane", "-p", "-t", "z"), "no prompt")
        before = flags()
        assert "icanon" in before and "echo" in before
        tm("send-keys", "-t", "z", f"{tool} --root {top_tree.path} -d 30",
           "Enter")
        wait(lambda: "-icanon" in flags() and "CGROUP" in tm(
            "capture-pane", "-p", "-t", "z"), "no raw mode")
        tm("send-keys", "-t", "z", "C-z")
        wait(lambda: "Stopped" in tm("capture-pane", "-p", "-t", "z"),
             "not stopped")
        assert flags() == before
        tm("send-keys", "-t", "z", "clear; fg", "Enter")
        wait(lambda: "-icanon" in flags() and tm(
            "capture-pane", "-p", "-t", "z").startswith("energystat  sort:"),
            "no raw mode and redraw after fg")
        tm("send-keys", "-t", "z", "q")
        wait(lambda: flags() == before, "terminal not restored after q")
    finally:
        subprocess.run(["tmux", "-S", sock, "kill-server"],
                       capture_output=True, timeout=20)


# ---- energy.tree: every cgroup from one read --------------------------------

MODULE_KEYS = ("usage_usec", "energy_uj", "wakeups", "impact_usec",
               "package_uj", "dram_uj")
# own_ values (usage, energy, wakeups, impact, package, dram) per cgroup
MODULE_OWN = {
    "/": (1_000, 2_000, 3, 4_000, 1_500, 500),
    "/system.slice": (10, 20, 1, 30, 15, 5),
    "/system.slice/my app.service": (2_000_000, 3_000_000, 40, 2_500_000,
                                     2_400_000, 600_000),
    "/system.slice/docker-" + "ab" * 32 + ".scope": (500_000, 700_000, 7,
                                                     650_000, 600_000,
                                                     100_000),
    "/user.slice": (0, 0, 0, 0, 0, 0),
    "/user.slice/user-1000.slice": (1_000_000, 1_250_000, 90, 1_100_000,
                                    1_000_000, 250_000),
    "/user.slice/user-1000.slice/session-1.scope": (300_000, 400_000, 12,
                                                    350_000, 300_000,
                                                    100_000),
    "/idle.slice": (0, 0, 0, 0, 0, 0),        # never ran a task: zeros
}


def module_stat(path, own, hidden=None):
    """energy.stat values as the module writes them, for the cgroups of own
    (path -> own_ values) and the hidden ones: the counters (own_ plus
    the children's), the power averages, the own_ keys; the root's keys."""
    hidden = hidden or {}
    below = [p for p in list(own) + list(hidden)
             if p.startswith(path.rstrip("/") + "/") and p != path]
    total = [sum(own.get(p, hidden.get(p, (0,) * 6))[i]
                 for p in [path, *below]) for i in range(6)]
    values = dict(zip(MODULE_KEYS, total))
    values.update(power_avg10_mw=total[1] // 1000, power_avg60_mw=7,
                  power_avg300_mw=3)
    values.update(("own_" + k, v) for k, v in
                  zip(MODULE_KEYS, own.get(path, hidden.get(path))))
    if path == "/":
        values.update(root_keys(values["energy_uj"], idle_uj=5_000_000,
                                idle_usec=9_000_000, irq_uj=1_000,
                                irq_usec=2_000, softirq_uj=3_000,
                                softirq_usec=4_000))
    return values


def module_tree(root, hidden=None, tree_file=True):
    """A tree as a module with energy.tree shows it: each energy.stat with
    the domains, power averages and own_ keys; hidden: {path: own_ values}
    of cgroups named like a file of their directory, in energy.tree only."""
    hidden = hidden or {}
    t = Tree(root, info={"version": "0.1.0", "source": "rapl",
                         "domains": "package dram", "split": "impact",
                         "interval_ms": 100, "last_sample_ns": 10**12,
                         "samples": 42})
    for path in MODULE_OWN:
        values = module_stat(path, MODULE_OWN, hidden)
        t.write(path, stat_text(values))
    for path in hidden:
        t.hidden[path.encode()] = module_stat(path, MODULE_OWN, hidden)
    t.tree_file = tree_file
    t.changed()
    return t


def tree_text_of(t):
    with open(os.path.join(t.path, "energy.tree"), "rb") as f:
        return f.read()


def same_output(r):
    """Output to compare between a walk and energy.tree: JSON documents
    without their timestamps and wall-clock intervals, Prometheus text
    without the age of the module's sample (the clock at the read)."""
    if not r.out.startswith("{"):
        return re.sub(r"(?m)^(cgroup_energy_last_sample_age_seconds) .*$",
                      r"\1 AGE", r.out)
    docs = [json.loads(line) for line in r.out.splitlines()]
    for d in docs:
        d.pop("timestamp_ns")
        if d.get("clock") == "wall":
            d.pop("interval_s")
    return docs


@pytest.fixture(params=["module", "plain", "shares"])
def both_trees(request, tree, tmp_path):
    """A module's tree with energy.tree (own_ keys, domains, power), the
    plain fixture tree with an energy.tree made from its files, and a
    module's that shares the energy no task drew (unowned=weight)."""
    if request.param == "module":
        return module_tree(tmp_path / "mod")
    if request.param == "shares":
        return share_tree(tmp_path / "shares")
    tree.tree_file = True
    tree.changed()
    return tree


@pytest.mark.parametrize("args", [
    [], ["--raw", "-s", "path"], ["--depth", "1"], ["--depth", "0"],
    ["-s", "cpu", "--depth", "5"], ["--json"], ["--json", "--depth", "1"],
    ["--prometheus"], ["--prometheus", "--hierarchical"],
    ["--prometheus", "--depth", "1"],
    ["--prometheus", "--include", "/system.slice.*", "--exclude", ".*scope"],
    ["/system.slice"], ["--json", "/user.slice", "/sys/fs/cgroup/user.slice/"
                        "user-1000.slice", "/system.slice"],
    ["--prometheus", "--depth", "1", "/user.slice", "/"],
    ["--json", "-d", "0.1", "-n", "2"], ["-b", "-d", "0.1", "-n", "2"],
], ids=lambda a: " ".join(a) or "table")
def test_tree_file_output_same_as_walk(tool, both_trees, args):
    """Every output mode: the same from energy.tree as from the walk of
    the same values (JSON less its timestamps)."""
    t = both_trees
    from_tree = run(tool, "--root", t.path, *args)
    assert b"\npath usage_usec energy_uj " in tree_text_of(t)
    t.drop_tree()
    walked = run(tool, "--root", t.path, *args)
    assert (from_tree.returncode, from_tree.err) == (walked.returncode,
                                                       walked.err)
    assert from_tree.returncode == 0, from_tree.err
    assert same_output(from_tree) == same_output(walked)


def test_tree_file_colliding_names(tool, tmp_path):
    """Cgroups named energy.stat (anywhere), energy.info or energy.tree (at
    the root): no directory in the mount, their counters in energy.tree
    only; shown with their paths, nothing opened below them."""
    hidden = {"/system.slice/energy.stat": (100, 200, 3, 400, 150, 50),
              "/energy.info": (1, 2, 3, 4, 1, 1),
              "/energy.tree": (5, 6, 7, 8, 3, 3),
              "/energy.stat": (9, 10, 11, 12, 5, 5)}
    t = module_tree(tmp_path / "mod", hidden=hidden)
    doc = json.loads(run(tool, "--root", t.path, "--json", check_rc=0).out)
    c = {c["path"]: c for c in doc["cgroups"]}
    for path, own in hidden.items():
        assert c[path]["stat"]["energy_uj"] == own[1], path
        assert c[path]["own"]["energy_uj"] == own[1], path
    # a parent's own value leaves the hidden child's out: the sum adds up
    assert sum(x["own"]["energy_uj"] for x in doc["cgroups"]) == \
        c["/"]["stat"]["energy_uj"]
    r = run(tool, "--root", t.path, "--raw", "-s", "path", check_rc=0)
    assert r.err == ""
    assert list(rowmap(r.out))[:5] == ["/", "/energy.info", "/energy.stat",
                                       "/energy.tree", "/idle.slice"]
    assert "/system.slice/energy.stat" in rowmap(r.out)
    prom = run(tool, "--root", t.path, "--prometheus", check_rc=0).out
    assert ('cgroup_energy_joules_total{cgroup="/system.slice/energy.stat",'
            'unit="system.slice"} 0.0002\n') in prom
    promtool_check(prom)
    # as a PATH: found in energy.tree, though the mount has a file there
    for arg in ("/system.slice/energy.stat", "/energy.tree"):
        r = run(tool, "--root", t.path, "--raw", arg, check_rc=0)
        assert list(rowmap(r.out)) == [arg] and r.err == ""
    # the walk cannot see them (an older module): the same PATH is unknown
    t.drop_tree()
    r = run(tool, "--root", t.path, "/system.slice/energy.stat", check_rc=2)
    assert "unknown cgroup /system.slice/energy.stat" in r.err


TREE_NAMES = [b"/my app.service", b"/tab\there", b"/new\nline",
              b"/back\\slash", b"/octal\\040text",
              b"/caf\xc3\xa9 \xe2\x98\x95", b"/bad\xff\xfename", b"/  ",
              b"/cr\rhere",
              b"/my app.service/a \\ b\t\n.scope"]


def test_tree_file_names_round_trip(tool, tmp_path):
    """Space, tab, newline and backslash escaped in energy.tree come back
    as the names the walk reads, in every output."""
    t = Tree(tmp_path / "ce", info={"source": "model"}, tree_file=True)
    t.add("/", energy_uj=100_000_000, **root_keys(100_000_000))
    for i, name in enumerate(TREE_NAMES):
        t.add(name, energy_uj=(i + 1) * 1_000_000)
    text = tree_text_of(t)
    assert b"/my\\040app.service/a\\040\\134\\040b\\011\\012.scope " in text
    assert b"/octal\\134040text " in text
    doc = json.loads(run(tool, "--root", t.path, "--json", check_rc=0).out)
    got = {c["path"]: c["stat"]["energy_uj"] for c in doc["cgroups"]}
    for i, name in enumerate(TREE_NAMES):
        shown = name.decode("utf-8", "backslashreplace")
        assert got[shown] == (i + 1) * 1_000_000, shown
    outs = [run(tool, "--root", t.path, *a, check_rc=0)
            for a in ([], ["--json"], ["--prometheus"])]
    promtool_check(outs[2].out)
    t.drop_tree()
    for a, out in zip(([], ["--json"], ["--prometheus"]), outs):
        assert same_output(out) == same_output(
            run(tool, "--root", t.path, *a, check_rc=0))


COLS = "path usage_usec energy_uj wakeups impact_usec\n"


@pytest.mark.parametrize("text,line,msg", [
    ("", 0, "empty file"),
    ("sample 1\n", 0, "no 'path' line naming the columns"),
    ("sample x\n" + COLS + "/ 1 2 3 4\n", 1,
     "expected 'key value' with an unsigned integer value"),
    ("sample 1\nsample 2\n" + COLS + "/ 1 2 3 4\n", 2, "duplicate key sample"),
    ("sample 1\ntotal_uj 1\ntotal_uj 2\n" + COLS + "/ 1 2 3 4\n", 3,
     "duplicate key total_uj"),
    (b"sample 1\n\x00\x01\n" + COLS.encode() + b"/ 1 2 3 4\n", 2,
     "binary data"),
    ("sample 1\npath usage_usec energy_uj wakeups\n/ 1 2 3\n", 2,
     "missing key impact_usec"),
    ("path usage_usec energy_uj energy_uj wakeups impact_usec\n/ 1 2 3 4 5\n",
     1, "duplicate key energy_uj"),
    ("path usage_usec Energy_uj wakeups impact_usec\n/ 1 2 3 4\n", 1,
     "expected 'path' and energy.stat keys"),
    (COLS + "/ 1 2 3\n", 2, "expected the path and 4 values, found 3 values"),
    (COLS + "/ 1 2 3 4\n/a 1 2 3 4 5\n", 3,
     "expected the path and 4 values, found 5 values"),
    (COLS + "/\n", 2, "expected the path and 4 values, found 0 values"),
    (COLS + "/ 1 2 x 4\n", 2, "wakeups: expected an unsigned integer value"),
    (COLS + "/ 1 2 3 -4\n", 2, "impact_usec: expected an unsigned integer"),
    (COLS + "/ 1 2 3 4.5\n", 2, "impact_usec: expected an unsigned integer"),
    (COLS + "/ 1 18446744073709551616 3 4\n", 2,
     "energy_uj: value out of range (above 18446744073709551615)"),
    (COLS + "/ 1 2 3 4\n/a\\041b 1 2 3 4\n", 3,
     "bad escape in the path: \\041 (only \\040, \\011, \\012 and \\134)"),
    (COLS + "/ 1 2 3 4\n/a\\04 1 2 3 4\n", 3,
     "bad escape in the path: a backslash not followed by 3 octal digits"),
    (COLS + "/ 1 2 3 4\n/a\\ 1 2 3 4\n", 3, "bad escape in the path"),
    (COLS + "/ 1 2 3 4\n/a\\800 1 2 3 4\n", 3, "bad escape in the path"),
    (COLS + "/ 1 2 3 4\na 1 2 3 4\n", 3,
     "expected a path from '/' at the start of the line"),
    (COLS + "/ 1 2 3 4\n/a/../b 1 2 3 4\n", 3,
     "bad path: an empty, '.' or '..' name"),
    (COLS + "/ 1 2 3 4\n/a// 1 2 3 4\n", 3, "bad path"),
    (COLS + "/ 1 2 3 4\n/a 1 2 3 4\n/a 1 2 3 4\n", 4,
     "cgroup /a listed twice (lines 3 and 4)"),
    (COLS + "/ 1 2 3 4\n/a/b 1 2 3 4\n/a 1 2 3 4\n", 3,
     "cgroup /a/b before its parent's line"),
    (COLS + "/a 1 2 3 4\n", 0, "no line for the root, /"),
    (COLS, 0, "no line for the root, /"),
])
def test_tree_file_malformed(tool, tree, text, line, msg):
    """A malformed energy.tree: nothing shown, the file and line named."""
    tree.write_tree(text)
    for args in ([], ["--json"], ["--prometheus"]):
        r = run(tool, "--root", tree.path, *args, check_rc=2)
        assert r.out == ""
        f = os.path.join(tree.path, "energy.tree")
        where = f"{f}:{line}: " if line else f"{f}: "
        assert r.err.startswith("energystat: " + where), r.err
        assert msg in r.err and len(r.err.splitlines()) == 1, r.err


def test_tree_file_lenient_forms(tool, tree):
    """Unknown keys and columns (a newer module), tabs and runs of blanks,
    no final newline, a header without sample, empty lines."""
    tree.write_tree("future 1\n\npath\tusage_usec energy_uj  future_col "
                    "wakeups impact_usec own_future\n/ 1 2000000 9 3 4 5\n\n"
                    "/user.slice\t5  1500000\t7 2 3 1")
    r = run(tool, "--root", tree.path, "--raw", "-s", "path", check_rc=0)
    assert rowmap(r.out) == {"/": ["2.000", "0.000", "3", "0.000"],
                             "/user.slice": ["1.500", "0.000", "2", "0.000"]}


def test_tree_file_used_when_present_walk_without(tool, tree):
    """energy.tree, when the root has one, is what is shown; without it
    (an older module) the walk reads the energy.stat files."""
    tree.write_tree(COLS.replace("path", "sample 1\ntotal_uj 7\npath") +
                    "/ 1 9000000 3 4\n/only.in.tree 1 8000000 3 4\n")
    r = run(tool, "--root", tree.path, "--raw", check_rc=0)
    assert rowmap(r.out) == {"/": ["9.000", "0.000", "3", "0.000"],
                             "/only.in.tree": ["8.000", "0.000", "3", "0.000"]}
    doc = json.loads(run(tool, "--root", tree.path, "--json", check_rc=0).out)
    assert doc["cgroups"][0]["stat"] == {"usage_usec": 1, "energy_uj": 9000000,
                                         "wakeups": 3, "impact_usec": 4,
                                         "total_uj": 7}
    tree.drop_tree()
    r = run(tool, "--root", tree.path, "--raw", check_rc=0)
    assert len(rowmap(r.out)) == 6 and "/only.in.tree" not in rowmap(r.out)
    assert rowmap(r.out)["/"] == ["10.000", "8.000", "1000", "9.000"]
    # an older module's cgroup named energy.tree: a directory, walked
    tree.add("/energy.tree", energy_uj=1_000_000)
    r = run(tool, "--root", tree.path, "--raw", check_rc=0)
    assert rowmap(r.out)["/energy.tree"][0] == "1.000" and r.err == ""


def test_tree_file_not_a_regular_file(tool, tree):
    os.mkfifo(os.path.join(tree.path, "energy.tree"))
    r = run(tool, "--root", tree.path, check_rc=2, timeout=10)
    assert r.err == (f"energystat: {tree.path} is not a cgroup_energy tree "
                     f"({tree.path}/energy.tree is not a regular file)\n")


def test_tree_file_permission_denied(tool, public_tree):
    """energy.tree unreadable: the words of an unreadable energy.stat."""
    t = public_tree
    t.write_tree()
    os.chmod(os.path.join(t.path, "energy.stat"), 0o444)
    os.chmod(os.path.join(t.path, "energy.tree"), 0o440)
    r = run(nobody_tool(tool), "--root", t.path, check_rc=2,
            preexec_fn=as_nobody)
    assert r.out == ""
    assert r.err == (f"energystat: permission denied reading {t.path}/"
                     "energy.tree: run as root, or have root mount the tree "
                     "with -o gid=<group>,mode=0440 and join that group\n")
    os.chmod(os.path.join(t.path, "energy.tree"), 0o444)
    r = run(tool, "--root", t.path, "--raw", check_rc=0, preexec_fn=as_nobody)
    assert list(rowmap(r.out)) == ["/", "/a.slice", "/b.slice"]


def test_tree_file_deeper_than_the_walk(tool, tmp_path):
    """No directory is opened: energy.tree's levels are all shown, where
    the walk stops at 256."""
    t = Tree(tmp_path / "ce")
    t.add("/", energy_uj=1)
    p = ""
    for i in range(300):
        p += "/d"
        t.add(p, energy_uj=i)
    t.write_tree()
    r = run(tool, "--root", t.path, "--depth", "300", check_rc=0, timeout=20,
            env=dict(os.environ, COLUMNS="1000"))
    assert len(rowmap(r.out)) == 301 and r.err == ""


def test_tree_file_live_module_clock(tool, tmp_path):
    """Live mode from energy.tree: energy.info (read after it, its samples
    the tree's sample) gives the module's clock; rates exact."""
    t = module_tree(tmp_path / "mod")
    ns, info = 10**12, dict(t.info)
    live = Live(tool, "--root", t.path, "--json", "-d", "0.5", "-n", "2")
    for step in (1, 2):
        own = dict(MODULE_OWN)
        e = list(own["/system.slice/my app.service"])
        e[1] += step * 1_000_000
        own["/system.slice/my app.service"] = tuple(e)
        for path in ("/system.slice/my app.service", "/system.slice", "/"):
            values = module_stat(path, own)
            t.tree_file = False
            t.write(path, stat_text(values))
        info.update(last_sample_ns=ns + step * 500_000_000,
                    samples=42 + step)
        t.tree_file = True
        t.set_info(info)
        doc = live.doc()
        assert doc["clock"] == "module" and doc["reset"] is False
        assert doc["interval_s"] == pytest.approx(0.5, abs=1e-9)
        r = rates(doc)
        assert r["/system.slice/my app.service"]["power_w"] == \
            pytest.approx(2.0)
        assert r["/"]["power_w"] == pytest.approx(2.0)
    rc, rest, err = live.finish()
    assert (rc, rest, err) == (0, "", "")


def scrape_once(tool, root):
    """One GET /metrics of energystat --listen on the tree at root."""
    import http.client
    import socket
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    p = subprocess.Popen([tool, "--root", root, "--listen",
                          f"127.0.0.1:{port}"], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
    try:
        line = p.stderr.readline()
        assert line == f"energystat: serving /metrics on 127.0.0.1:{port}\n"
        c = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
        c.request("GET", "/metrics")
        r = c.getresponse()
        assert r.status == 200
        body = r.read().decode()
        c.close()
    finally:
        p.terminate()
        p.wait(timeout=10)
    # what two reads of one tree do not share: the clock's
    return re.sub(r"(?m)^(cgroup_energy_last_sample_age_seconds|energystat_"
                  r"scrape_duration_seconds) .*$", r"\1 X", body)


def test_tree_file_exporter_same_as_walk(tool, both_trees):
    """--listen: the same /metrics from energy.tree as from the walk."""
    t = both_trees
    from_tree = scrape_once(tool, t.path)
    assert "cgroup_energy_up 1\n" in from_tree
    t.drop_tree()
    assert from_tree == scrape_once(tool, t.path)


def test_tree_file_live_view_same_as_walk(tool, tmp_path):
    """The interactive live view's first screen: the same from energy.tree
    as from the walk."""
    t = module_tree(tmp_path / "mod")
    screens = []
    for run_dir in ("with", "without"):
        (tmp_path / run_dir).mkdir()
        tm = Tmux(tmp_path / run_dir, 120, 30, [tool, "--root", t.path,
                                                "-d", "30"])
        try:
            tm.wait(lambda s: "/idle.slice" in s, "no first screen")
            time.sleep(0.3)
            screens.append(tm.screen())
            tm.keys("q")
            assert tm.finish()[0] == "0"
        finally:
            tm.close()
        t.drop_tree()
    assert "/system.slice/my app.service" in screens[0]
    assert screens[0] == screens[1]


def opens_of(tool, root, name, *args):
    """The tool's exit status and how often it opened root/name (strace)."""
    if not shutil.which("strace"):
        need.missing("strace (Debian package strace)")
    r = subprocess.run(["strace", "-f", "-qq", "-e", "trace=open,openat",
                        tool, "--root", root, *args], capture_output=True,
                       text=True, timeout=30)
    return r.returncode, r.stderr.count(f'{root}/{name}"')


def test_tree_file_one_read_per_sample(tool, tmp_path):
    """One read of energy.tree per sample, no walk (only the root's
    energy.stat, which the check before the first sample reads); when
    energy.info, read after it, says a later sample (the module sampled in
    between): read again, up to three times, then the last one shown."""
    t = module_tree(tmp_path / "mod")
    assert opens_of(tool, t.path, "energy.tree", "--json") == (0, 1)
    assert opens_of(tool, t.path, "energy.stat", "--prometheus") == (0, 1)
    assert opens_of(tool, t.path, "system.slice/energy.stat") == (0, 0)
    info = dict(t.info, samples=43)      # the tree says 42
    t.tree_file = False
    t.set_info(info)
    assert opens_of(tool, t.path, "energy.tree", "--json") == (0, 3)
    assert opens_of(tool, t.path, "energy.info", "--json") == (0, 3)


# ---- the energy no task drew, shared (unowned) ------------------------------

SHARED = {p: share_stat(p) for p in SHARE_OWN}


def share_table(out):
    """A --raw table with SHARE -> (header cells, {path: [5 cells]}): paths
    and workloads of one word each."""
    lines = out.rstrip("\n").split("\n")
    rows = {}
    for line in lines[1:]:
        if line.startswith(("machine", "  ")):
            break
        path, *cells, wl = line.split()
        rows[path] = cells
    return lines[0].split(), rows


def test_share_column_static(tool, tmp_path):
    """unowned=weight: SHARE after ENERGY, each cgroup's idle_share_uj +
    sys_share_uj (its subtree's, as ENERGY), aligned as the others."""
    t = share_tree(tmp_path / "w")
    wide = dict(os.environ, COLUMNS="200")
    r = run(tool, "--root", t.path, "--raw", check_rc=0, env=wide)
    head, rows = share_table(r.out)
    assert head == ["CGROUP", "ENERGY(J)", "SHARE(J)", "CPU(s)", "WAKEUPS",
                    "IMPACT(s)", "WORKLOAD"]
    assert sorted(rows) == sorted(SHARE_OWN) and r.err == ""
    for path, st in SHARED.items():
        assert rows[path] == [joules(st["energy_uj"]),
                              joules(st["idle_share_uj"] + st["sys_share_uj"]),
                              joules(st["usage_usec"]), str(st["wakeups"]),
                              joules(st["impact_usec"])], path
    assert rows["/"][1] == "2.975"
    r = run(tool, "--root", t.path, check_rc=0, env=wide)
    lines = [ln for ln in r.out.splitlines()
             if not ln.startswith(("machine", "  "))]
    assert lines[0].split() == ["CGROUP", "ENERGY", "SHARE", "CPU(s)",
                                "WAKEUPS", "IMPACT(s)", "WORKLOAD"]
    # the five numbers right-aligned, energy and share with a unit
    cell = r"[-\d.]+ (?:k?J|k?Wh)|\S+"     # a number with its unit: one
    ends = {tuple(m.end() for m in re.finditer(cell, line))[-6:-1]
            for line in lines[1:]}
    assert len(ends) == 1
    head_ends = tuple(m.end() for m in re.finditer(r"\S+", lines[0]))[-6:-1]
    assert ends == {head_ends}
    assert "  2.98 J  " in lines[1]
    t.set_info(dict(t.info, source="model"))
    assert run(tool, "--root", t.path, "--raw").out.split("\n")[0].split()[1:3] \
        == ["ENERGY(J)~", "SHARE(J)~"]


@pytest.mark.parametrize("args", [
    [], ["--raw"], ["--raw", "-s", "path"], ["--depth", "1"],
    ["-b", "-d", "0.1", "-n", "2", "--raw"]],
    ids=lambda a: " ".join(a) or "table")
def test_share_column_hidden_without_shares(tool, tmp_path, args):
    """unowned=none (shares 0) and a module without the keys: today's
    table exactly, no SHARE column."""
    none = run(tool, "--root", share_tree(tmp_path / "n", "none").path, *args,
               check_rc=0)
    old = run(tool, "--root", share_tree(tmp_path / "o", keys=False).path,
              *args, check_rc=0)
    assert "SHARE" not in none.out and none.out == old.out
    assert none.out.split("\n")[0].split()[:3] == [
        "CGROUP", "POWER(W)" if "-d" in args else
        "ENERGY(J)" if "--raw" in args else "ENERGY",
        "CPU%" if "-d" in args else "CPU(s)"]


def test_share_json(tool, tmp_path):
    """Both shares and their own_ parts in stat and own; the own parts and
    own energy of every cgroup add up to the root's total_uj exactly."""
    t = share_tree(tmp_path / "w")
    doc = json.loads(run(tool, "--root", t.path, "--json", check_rc=0).out)
    c = {x["path"]: x for x in doc["cgroups"]}
    assert doc["info"]["unowned"] == "weight"
    for path, st in SHARED.items():
        for k in SHARE_KEYS:
            assert c[path]["stat"][k] == st[k]
            assert c[path]["own"][k] == st["own_" + k]
        assert list(c[path]["stat"])[4:6] == list(SHARE_KEYS)
    root = c["/"]["stat"]
    assert sum(x["own"]["energy_uj"] + x["own"]["idle_share_uj"] +
               x["own"]["sys_share_uj"] for x in doc["cgroups"]) == \
        root["total_uj"] == \
        root["energy_uj"] + root["idle_share_uj"] + root["sys_share_uj"]
    assert root["idle_share_uj"] <= root["idle_uj"]
    assert root["sys_share_uj"] <= (root["irq_uj"] + root["softirq_uj"] +
                                    root["steal_uj"])
    # a parent's counter is its own_ part plus its children's counters
    for path, x in c.items():
        kids = [y for p, y in c.items() if p != path and
                os.path.dirname(p) == path]
        for k in SHARE_KEYS:
            assert x["stat"][k] == x["own"][k] + sum(y["stat"][k]
                                                      for y in kids)
    old = json.loads(run(tool, "--root",
                         share_tree(tmp_path / "o", keys=False).path,
                         "--json", check_rc=0).out)
    assert "share" not in json.dumps(old["cgroups"])


def share_step(t, own, info, ns):
    """The module's next sample: own_ values own, last_sample_ns ns."""
    t.tree_file = False
    for path in own:
        t.write(path, stat_text(share_stat(path, own=own)))
    t.tree_file = True
    info.update(last_sample_ns=ns, samples=info["samples"] + 1)
    t.set_info(info)


def test_share_live_rates_and_column(tool, tmp_path):
    """Live: idle_share_w and sys_share_w per cgroup; SHARE(W) their sum."""
    t = share_tree(tmp_path / "w")
    ns, info = 10**12, dict(t.info)
    own = dict(SHARE_OWN)
    nginx = "/system.slice/nginx.service"
    live = Live(tool, "--root", t.path, "--json", "-d", "0.5", "-n", "1")
    v = list(own[nginx])
    v[4] += 1_000_000
    v[5] += 250_000
    own[nginx] = tuple(v)
    share_step(t, own, info, ns + 500_000_000)
    doc = live.doc()
    assert doc["clock"] == "module"
    r = rates(doc)
    for path in (nginx, "/system.slice", "/"):
        assert r[path]["idle_share_w"] == pytest.approx(2.0)
        assert r[path]["sys_share_w"] == pytest.approx(0.5)
    assert r["/user.slice"]["idle_share_w"] == 0
    assert live.finish()[0] == 0
    p = subprocess.Popen([tool, "--root", t.path, "-d", "0.5", "-n", "1",
                          "--raw"], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
    wait_first_read(p)
    v[4] += 500_000
    own[nginx] = tuple(v)
    share_step(t, own, info, ns + 1_000_000_000)
    out, err = p.communicate(timeout=20)
    assert p.returncode == 0, err
    head, rows = share_table(out)
    assert head[:4] == ["CGROUP", "POWER(W)", "SHARE(W)", "CPU%"]
    assert rows[nginx][:2] == ["0.000", "1.000"]
    assert rows["/user.slice"][:2] == ["0.000", "0.000"]


def test_share_prometheus(tool, tmp_path):
    """The two share families, own parts: sum() over cgroups of joules and
    both shares is the measured energy; the subtree_ variants; the policy
    as a label of the source's info; none of it from an older module."""
    t = share_tree(tmp_path / "w")
    r = run(tool, "--root", t.path, "--prometheus", check_rc=0)
    promtool_check(r.out)
    s = {k: Decimal(v) for k, v in prom_samples(r.out).items()
         if not k.startswith(("cgroup_energy_source_info",
                              "energystat_build_info"))}
    fam = {}
    for k, v in s.items():
        fam.setdefault(k.split("{")[0], {})[k[k.find("{"):]] = v
    for k in SHARE_KEYS:
        name = f"cgroup_energy_{k[:-3]}_joules_total"
        assert f"# TYPE {name} counter\n" in r.out
        help_ = next(ln for ln in r.out.splitlines()
                     if ln.startswith(f"# HELP {name} "))
        assert "sum() over cgroups of cgroup_energy_joules_total plus both " \
            "shares equals cgroup_energy_measured_joules_total" in help_
        assert len(fam[name]) == len(SHARE_OWN)
        assert fam[name]['{cgroup="/system.slice/nginx.service",'
                         'unit="nginx.service"}'] * 10**6 == \
            SHARED["/system.slice/nginx.service"]["own_" + k]
    assert sum(sum(fam[f].values()) for f in (
        "cgroup_energy_joules_total", "cgroup_energy_idle_share_joules_total",
        "cgroup_energy_sys_share_joules_total")) == \
        s["cgroup_energy_measured_joules_total"] == Decimal("7.92704")
    # right after the per-cgroup four, before the domains
    names = [ln.split()[2] for ln in r.out.splitlines()
             if ln.startswith("# TYPE ")]
    at = names.index("cgroup_energy_impact_seconds_total")
    assert names[at + 1:at + 3] == ["cgroup_energy_idle_share_joules_total",
                                    "cgroup_energy_sys_share_joules_total"]
    assert prom_samples(r.out)[
        'cgroup_energy_source_info{source="rapl",split="impact",'
        'unowned="weight",version="0.1.0",kind="measured"}'] == "1"
    assert s["cgroup_energy_unowned_changes_total"] == 0
    h = run(tool, "--root", t.path, "--prometheus", "--hierarchical",
            check_rc=0).out
    promtool_check(h)
    hs = prom_samples(h)
    for k in SHARE_KEYS:
        assert Decimal(hs[f'cgroup_energy_subtree_{k[:-3]}_joules_total'
                          '{cgroup="/"}']) * 10**6 == SHARED["/"][k]
    assert "cgroup_energy_idle_share_joules_total" not in h
    old = run(tool, "--root", share_tree(tmp_path / "o", keys=False).path,
              "--prometheus", check_rc=0).out
    assert "share" not in old and "unowned" not in old


def test_share_prometheus_label_is_the_applied_policy(tool, tmp_path):
    """unowned=weight written, no sample since (energy.info's
    unowned_applied still none): the label says none, what the counters
    follow, not the parameter."""
    t = share_tree(tmp_path / "t", policy="none")
    t.set_info({**t.info, "unowned": "weight"})
    s = prom_samples(run(tool, "--root", t.path, "--prometheus",
                         check_rc=0).out)
    assert s['cgroup_energy_source_info{source="rapl",split="impact",'
             'unowned="none",version="0.1.0",kind="measured"}'] == "1"
