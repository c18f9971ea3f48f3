# SPDX-License-Identifier: GPL-2.0
"""make bench's instruction counts: how many instructions the module's
sched_switch probe and the eBPF peer's program execute per call, counted by
QEMU (bench/insncount.c), which the host's load cannot change as it
changes every time under TCG.

The plugin counts each instruction executed in x86_64's module area, where
both the module's text and the BPF JIT's programs live; the guest lists
their symbols (guest_bench.py insns).  A function's calls are the
executions of its first instruction.  What neither figure holds: the
instructions of the kernel functions they call (the module's probe takes
a raw spinlock, the peer calls BPF helpers) and of the tracepoint's
dispatch, which are outside the module area; call_graph() lists them for
the module from its object.

The plugin is built against include/qemu/qemu-plugin.h of the installed
QEMU, taken from the original tarball of Debian's source package of that
version (its SHA256 checked against the archive's), cached in
CGE_CACHE/qemu-plugin/<version>/.
"""
import bisect
import collections
import hashlib
import os
import re
import subprocess
import tarfile
import tempfile
import urllib.request
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SRC = REPO / 'bench' / 'insncount.c'
OUT_DIR = REPO / '.build' / 'bench'
CACHE = Path(os.environ.get('CGE_CACHE', '/var/cache/cgroup-energy'))
QEMU_PACKAGE = 'qemu-system-x86'
# x86_64's module area: MODULES_VADDR (0xffffffffa0000000, or
# 0xffffffffc0000000 with RANDOMIZE_BASE) to MODULES_END
MODULE_AREA = (0xffffffffa0000000, 0xffffffffff000000)


class InsnsError(RuntimeError):
    pass


def _run(cmd, **kw):
    r = subprocess.run(cmd, capture_output=True, text=True, **kw)
    if r.returncode:
        raise InsnsError(f'{" ".join(cmd)} failed: {r.stderr.strip()[-500:]}')
    return r.stdout


def installed_qemu():
    """(version, source, suites): the installed QEMU package's version,
    its source package as name=version, and the archive suites apt
    installed it from (apt-cache policy)."""
    ver, src = _run(['dpkg-query', '-W', '-f',
                     '${Version} ${source:Package}=${source:Version}',
                     QEMU_PACKAGE]).split()
    pol = _run(['apt-cache', 'policy', QEMU_PACKAGE]).splitlines()
    suites, mine = [], False
    for line in pol:
        m = re.match(r'\s+(?:\*\*\* )?(\S+) \d+$', line)
        if m:
            mine = m.group(1) == ver
            continue
        m = re.match(r'\s+\d+ (http\S+) (\S+?)/', line)
        if mine and m:
            suites.append((m.group(1), m.group(2)))
    if not suites:
        raise InsnsError(f'apt-cache policy {QEMU_PACKAGE}: no archive '
                         f'holds the installed {ver}')
    return ver, src, suites


def orig_tarball(src, suites, tmp):
    """(url, sha256) of the upstream tarball of the source package @src
    (name=version), from a private apt list of @suites' Sources."""
    lst = tmp / 'sources.list'
    lst.write_text(''.join(f'deb-src {url} {suite} main\n'
                           for url, suite in suites))
    (tmp / 'lists' / 'partial').mkdir(parents=True)
    opts = ['-o', f'Dir::Etc::SourceList={lst}',
            '-o', 'Dir::Etc::SourceParts=/dev/null',
            '-o', f'Dir::State::Lists={tmp / "lists"}',
            '-o', 'APT::Sandbox::User=root']
    _run(['apt-get', *opts, 'update'])
    out = _run(['apt-get', *opts, '--print-uris', 'source', src], cwd=tmp)
    for line in out.splitlines():
        m = re.match(r"'(\S+\.orig\.tar\.\w+)' \S+ \d+ SHA256:([0-9a-f]{64})",
                     line)
        if m:
            return m.group(1), m.group(2)
    raise InsnsError(f'no upstream tarball for {src} in {suites}')


def plugin_header(ver, src, suites):
    """qemu-plugin.h of the installed QEMU (installed_qemu()'s), cached."""
    dst = CACHE / 'qemu-plugin' / ver.replace(':', '_') / 'qemu-plugin.h'
    if dst.exists():
        return dst
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        url, sha = orig_tarball(src, suites, tmp)
        tar = tmp / 'orig.tar'
        with urllib.request.urlopen(url, timeout=300) as r:
            tar.write_bytes(r.read())
        got = hashlib.sha256(tar.read_bytes()).hexdigest()
        if got != sha:
            raise InsnsError(f'{url}: SHA256 {got}, the archive says {sha}')
        with tarfile.open(tar) as t:
            m = next((m for m in t.getmembers()
                      if m.name.endswith('/include/qemu/qemu-plugin.h')),
                     None)
            if m is None:
                raise InsnsError(f'{url}: no include/qemu/qemu-plugin.h')
            data = t.extractfile(m).read()
    dst.parent.mkdir(parents=True, exist_ok=True)
    tmpf = dst.with_suffix('.tmp')
    tmpf.write_bytes(data)
    tmpf.replace(dst)
    return dst


def build_plugin():
    """bench/insncount.c as a plugin for the installed QEMU (one build per
    QEMU version), if older than its source or missing."""
    ver, src, suites = installed_qemu()
    out = OUT_DIR / f'insncount-{ver.replace(":", "_")}.so'
    if out.exists() and out.stat().st_mtime >= SRC.stat().st_mtime:
        return out
    hdr = plugin_header(ver, src, suites)
    glib = _run(['pkg-config', '--cflags', 'glib-2.0']).split()
    out.parent.mkdir(parents=True, exist_ok=True)
    _run(['gcc', '-O2', '-Wall', '-Wextra', '-Wno-unused-parameter',
          '-Werror', '-shared', '-fPIC', f'-I{hdr.parent}', *glib,
          '-o', str(out), str(SRC)])
    return out


def qemu_args(plugin, out):
    lo, hi = MODULE_AREA
    return ['-plugin', f'{plugin},out={out},lo={lo:x},hi={hi:x}']


def read_counts(text):
    """{address: count} and the untracked count from the plugin's file."""
    counts, untracked = {}, None
    for line in text.splitlines():
        a, n = line.split()
        if a == 'untracked':
            untracked = int(n)
        else:
            counts[int(a, 16)] = int(n)
    return counts, untracked


def per_function(counts, symbols):
    """{start address: [owner, name, executed instructions, calls]} over
    @symbols ([address, name, owner] from the guest): each address counted
    in the function with the nearest symbol at or below it, calls the
    count at the function's first address.  Keyed by address: two files'
    static functions may share a name."""
    syms = sorted((int(a, 16), n, o) for a, n, o in symbols)
    starts = [s[0] for s in syms]
    out = {}
    for addr, n in counts.items():
        i = bisect.bisect_right(starts, addr) - 1
        if i < 0:
            continue
        start, name, owner = syms[i]
        f = out.setdefault(start, [owner, name, 0, counts.get(start, 0)])
        f[2] += n
    return out


def figures(raw, counts, untracked, graph, module='cgroup_energy',
            probe='cge_probe'):
    """The section's figures from the guest's result, the counts and the
    module's call_graph()."""
    funcs = per_function(counts, raw['symbols'])
    mine = {a: f for a, f in funcs.items() if f[0] == module}
    entry = next((a for a, f in mine.items() if f[1] == probe), None)
    if entry is None or not mine[entry][3]:
        raise InsnsError(f'{probe} never ran')
    calls = mine[entry][3]
    names, edges = graph
    # the module's .text at run time: the probe's address less its offset
    base = entry - next(o for o, n in names.items() if n == probe)
    path, kernel = reachable(graph, probe)
    dup = collections.Counter(f[1] for f in mine.values())
    bpf = [f for f in funcs.values() if f[0] == 'bpf']
    # the peer's sched_switch program runs once per switch: the most called
    peer = max(bpf, key=lambda f: f[3], default=None)
    return {
        'ctxt': raw['ctxt'], 'pipe_loops': raw['pipe_loops'],
        'probe_calls': calls,
        'probe_insns_per_call': round(mine[entry][2] / calls, 1),
        # with the module functions the probe calls, counted whole (the
        # drain and the attach hook call some of them too): a bound above
        'probe_path': [names[o] for o in path],
        'probe_path_insns_per_call': round(
            sum(mine.get(base + o, [0, 0, 0])[2] for o in path) / calls, 1),
        'probe_kernel_calls': kernel,
        # over the whole boot (the sampler's too), per probe call; a name
        # two functions share has the function's offset in .text
        'module_functions_per_probe_call': {
            (f[1] if dup[f[1]] == 1 else f'{f[1]}@{a - base:#x}'):
            round(f[2] / calls, 2) for a, f in mine.items() if f[2]},
        'peer_program': peer[1] if peer else None,
        'peer_calls': peer[3] if peer else None,
        'peer_runs_by_fdinfo': raw.get('peer_runs'),
        'peer_insns_per_call': (round(peer[2] / peer[3], 1)
                                if peer and peer[3] else None),
        'untracked': untracked,
    }


# calls every function makes that are not work of its own
PLUMBING = re.compile(r'__fentry__|__x86_return_thunk|__x86_indirect_thunk|'
                      r'__stack_chk_fail')


def call_graph(ko):
    """({offset: name}, {offset: (offsets of the module functions it
    calls, names of the kernel functions it calls or jumps to)}) for the
    functions of the module's .text (objdump -dr): a call within the
    section is resolved (`call 6d0 <cge_charge_task>`), one to another
    section or the kernel is a relocation on the call or jmp; a relocation
    to a global function of the module's .text is resolved by its name."""
    return parse_objdump(_run(['objdump', '-dr', '-j', '.text', str(ko)]))


def parse_objdump(out):
    """call_graph() from the text of `objdump -dr`."""
    names, edges, cur, branch, local = {}, {}, None, False, None
    for line in out.splitlines():
        m = re.match(r'([0-9a-f]+) <([\w.]+)>:$', line)
        if m:
            if local is not None:
                edges[cur][0].add(local)
            cur, local = int(m.group(1), 16), None
            names[cur] = m.group(2)
            edges[cur] = (set(), set())
            continue
        if cur is None:
            continue
        reloc = re.search(r'R_X86_64_PLT32\s+([\w.]+)-0x4$', line)
        if reloc:
            # a relocated branch: objdump's <target> (often the next
            # function, the rel32 being 0) means nothing
            if branch and not PLUMBING.match(reloc.group(1)):
                edges[cur][1].add(reloc.group(1))
            branch, local = False, None
            continue
        if local is not None:
            edges[cur][0].add(local)
        m = re.search(r'\t(?:call|jmp)\s+([0-9a-f]+) <([\w.]+)>$', line)
        branch = bool(re.search(r'\t(?:call|jmp)\s', line))
        local = (int(m.group(1), 16) if m and '+' not in m.group(2)
                 else None)
    if local is not None:
        edges[cur][0].add(local)
    by_name = {}
    for o, n in names.items():
        by_name.setdefault(n, []).append(o)
    for local, ext in edges.values():
        for n in list(ext):
            if len(by_name.get(n, [])) == 1:
                ext.discard(n)
                local.add(by_name[n][0])
    return names, edges


def reachable(graph, func):
    """(offsets of the module functions @func can reach by direct calls,
    itself first; the kernel functions they call)."""
    names, edges = graph
    start = next(o for o, n in names.items() if n == func)
    seen, todo, kernel = [start], [start], set()
    while todo:
        local, ext = edges.get(todo.pop(), (set(), set()))
        kernel |= ext
        for o in sorted(local - set(seen)):
            seen.append(o)
            todo.append(o)
    return seen, sorted(kernel)
