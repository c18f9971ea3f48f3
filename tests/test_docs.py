# SPDX-License-Identifier: GPL-2.0
"""Docs that the code holds true.

- The modprobe.d example (dist/modprobe.d/cgroup-energy.conf) states every
  parameter's values, whether it changes at runtime, and its default: each
  is read here from the module's source (kmod/params.[ch], model.h,
  impact.h) and compared, so a change of a limit fails until the example
  follows. The MODULE_PARM_DESC texts are checked against the same source.
- Every `energystat` command line in README.md, docs/*.md, the man page and
  the Kubernetes DaemonSet is parsed by the built tool with
  ENERGYSTAT_PARSE_ONLY=1 (parse the options as always, then exit 0 and run
  nothing): an unknown flag or a refused combination fails.

Run: /usr/bin/python3 -m pytest -q tests/test_docs.py
"""

import os
import re
import shlex
import subprocess
import sys
from fractions import Fraction
from pathlib import Path

import pytest
import yaml  # python3-yaml (tests/deps.sh)

sys.path.insert(0, os.path.dirname(__file__))
from test_energystat import tool  # noqa: E402,F401

REPO = Path(__file__).resolve().parents[1]
EXAMPLE = REPO / 'dist/modprobe.d/cgroup-energy.conf'
KMOD = REPO / 'kmod'

# --- the modprobe.d example against the module's source --------------------


def c_defines(*files):
    """{NAME: text} of the object-like #defines of kmod/@files."""
    out = {}
    for f in files:
        for m in re.finditer(r'^#define\s+(CGE_\w+)\s+(.+?)\s*(?:/\*.*)?$',
                             (KMOD / f).read_text(), re.M):
            out[m[1]] = m[2]
    return out


def c_int(expr, defs):
    """The value of a constant expression of integers, + - * / and
    parentheses, with @defs' macros expanded (a U suffix dropped)."""
    for _ in range(10):
        new = re.sub(r'\b(CGE_\w+)\b', lambda m: f'({defs[m[1]]})', expr)
        if new == expr:
            break
        expr = new
    expr = re.sub(r'\b(\d+)U?L*L*\b', r'\1', expr)
    assert re.fullmatch(r'[\d\s()+\-*/]+', expr), expr
    return int(eval(expr.replace('/', '//')))    # digits and operators only


def module_params():
    """{name: {'default', 'range' (lo, hi) or 'values' [names], 'runtime',
    'desc'}} from kmod/params.c and the headers it takes limits from."""
    src = (KMOD / 'params.c').read_text()
    defs = c_defines('params.h', 'model.h', 'impact.h')
    one = c_int('CGE_COEF_ONE', defs)
    enums = {m[1]: re.findall(r'\[(CGE_\w+)\]\s*=\s*"(\w+)"', m[2])
             for m in re.finditer(r'cge_(\w+)_names\[\]\s*=\s*\{(.*?)\};',
                                  src, re.S)}
    ints = dict(re.findall(r'^(?:unsigned )?int (cge_\w+) = (\w+);', src,
                           re.M))
    coefs = re.search(r'CGE_IMPACT_DEFAULTS\s+\{(.*)\}',
                      (KMOD / 'impact.h').read_text())[1]
    coefs = [Fraction(c_int(c, defs), one) for c in coefs.split(',')]
    fields = re.search(r'struct cge_impact_coefs \{(.*?)\};',
                       (KMOD / 'impact.h').read_text(), re.S)[1]
    fields = re.findall(r'^\s*u64\s+(\w+);', fields, re.M)
    assert len(fields) == len(coefs) == 3, (fields, coefs)
    desc = dict(re.findall(r'MODULE_PARM_DESC\((\w+), "([^"]*)"\)', src))
    out = {}
    for name, ops, var, perm in re.findall(
            r'module_param_cb\((\w+), &cge_(\w+)_ops, &([\w.]+),\s*(0\d+)\)',
            src):
        p = {'runtime': int(perm, 8) & 0o200 != 0, 'desc': desc[name]}
        if ops == 'interval':
            p['range'] = (c_int('CGE_INTERVAL_MS_MIN', defs),
                          c_int('CGE_INTERVAL_MS_MAX', defs))
            p['default'] = Fraction(int(ints[var]))
        elif ops == 'model_mw':
            p['range'] = (0, c_int('CGE_MODEL_MAX_MW', defs))
            p['default'] = Fraction(int(ints[var]))
        elif ops == 'coef':
            field = var.split('.')[1]
            # the wakeup coefficient has its own maximum (cge_set_coef())
            assert re.search(r'target == &cge_coefs\.kcpu_wakeups \? '
                             r'CGE_COEF_MAX_WAKEUP', src)
            top = 'CGE_COEF_MAX_WAKEUP' if field == 'kcpu_wakeups' else \
                'CGE_COEF_MAX_TIME'
            p['range'] = (0, Fraction(c_int(top, defs), one))
            p['default'] = coefs[fields.index(field)]
        elif ops in ('source', 'split', 'unowned'):
            names = dict(enums[ops])
            p['values'] = sorted(names.values())
            p['default'] = names[ints[var]]
        else:
            pytest.fail(f'{name}: ops cge_{ops}_ops unknown to this test')
        out[name] = p
    # bound: the parameters the module has today (a new one needs a look)
    assert 8 <= len(out) <= 12, sorted(out)
    return out


def example_params():
    """{name: {'values' text, 'runtime', 'default' text}} from the example:
    '# NAME: VALUES; runtime|load only' and '#options cgroup_energy k=v'."""
    text = EXAMPLE.read_text()
    out = {}
    for m in re.finditer(r'^# (\w+): (.+); (runtime|load only)$', text, re.M):
        assert m[1] not in out, m[1]
        out[m[1]] = {'values': m[2], 'runtime': m[3] == 'runtime'}
    for line in re.findall(r'^#options cgroup_energy (.+)$', text, re.M):
        for kv in line.split():
            k, v = kv.split('=', 1)
            assert 'default' not in out[k], k
            out[k]['default'] = v
    return out


def as_number(s):
    return Fraction(s)


def test_module_source_is_read():
    """Self-consistency of the reader: the names and figures it finds are
    the ones params.c's own descriptions give."""
    params = module_params()
    assert params['interval_ms']['range'][0] >= 1
    assert params['source']['values'] == ['auto', 'model', 'rapl']
    assert not params['source']['runtime'] and params['split']['runtime']


def test_parm_desc_matches_the_source():
    """MODULE_PARM_DESC (modinfo) repeats defaults and ranges as text."""
    for name, p in module_params().items():
        d = re.search(r'\(default ([^)]+)\)$', p['desc'])
        assert d, (name, p['desc'])
        if 'values' in p:
            assert d[1] == p['default'], (name, p['desc'])
        else:
            assert as_number(d[1]) == p['default'], (name, p['desc'])
        r = re.search(r'(\d+)-(\d+)', p['desc'])
        if r:
            assert (int(r[1]), int(r[2])) == p['range'], (name, p['desc'])


def test_modprobe_example_matches_the_module():
    mod, ex = module_params(), example_params()
    assert sorted(ex) == sorted(mod)
    for name, p in mod.items():
        e = ex[name]
        assert e['runtime'] == p['runtime'], name
        if 'values' in p:
            got = re.fullmatch(r'(\w+(?:, \w+)*) or (\w+)', e['values'])
            assert got, (name, e['values'])
            names = got[1].split(', ') + [got[2]]
            assert sorted(names) == p['values'], (name, e['values'])
            assert e['default'] == p['default'], name
        else:
            got = re.match(r'([\d.]+)-([\d.]+)(?: \(|,|$)', e['values'])
            assert got, (name, e['values'])
            assert (as_number(got[1]), as_number(got[2])) == \
                tuple(Fraction(x) for x in p['range']), (name, e['values'])
            assert as_number(e['default']) == p['default'], name


def test_modprobe_example_says_what_a_bad_value_does():
    """A refused value at load refuses the load (module_param_cb's setter
    returns -EINVAL, so the kernel fails the load): the example must not
    promise that the default is kept, and its reload must mount through
    the unit, which needs no fstab line."""
    src = (KMOD / 'params.c').read_text()
    assert 'return -EINVAL;' in src
    text = EXAMPLE.read_text()
    assert 'refuses the whole load' in text
    assert 'default kept' not in text
    assert 'systemctl start sys-fs-cgroup_energy.mount' in text
    assert not re.search(r'^#\s+mount /sys/fs/cgroup_energy', text, re.M)


# --- every documented energystat command line ------------------------------

# Metasyntactic words of the docs, each replaced by a value that fits.
PLACEHOLDERS = {'[ADDR:]PORT': '10043', 'PORT': '10043', 'SEC': '1',
                'N': '2', 'DIR': '/nonexistent', 'KEY': 'energy'}
# How a command starts: an optional path, the tool's name, then an argument
# or the end (not energystat_build_info, energystat.1, "energystat:").
TOOL = re.compile(r'^(?:[\w./-]*/)?energystat$')
OPERATORS = {'|', '||', '&', '&&', ';', ';;', '(', ')', '<', '>', '>>'}


def commands_in(line):
    """The argument lists of the energystat commands of one shell line
    (prompt and comment dropped, pipes and redirections cut)."""
    line = re.sub(r'^\s*[$#]\s+', '', line)
    lex = shlex.shlex(line, posix=True, punctuation_chars=True)
    lex.whitespace_split = True
    try:
        words = list(lex)
    except ValueError:
        return []
    out, cur, start = [], None, True
    for w in words:
        if w in OPERATORS or w.startswith(('>', '<', '|', '&', ';')):
            if cur is not None:
                out.append(cur)
            cur, start = None, True
        elif cur is not None:
            cur.append(w)
        elif start and TOOL.match(w):
            cur = []
        else:
            # the command word may follow sudo, exec or VAR=value
            start = start and (w in ('sudo', 'exec') or
                               re.match(r'^\w+=', w) is not None)
    if cur is not None:
        out.append(cur)
    return out


def markdown_commands(path):
    """(where, args) of every command in @path's fenced blocks (each line,
    continuations joined) and inline code that starts with the tool."""
    text = path.read_text()
    found = []
    fence = None
    lines = text.split('\n')
    i = 0
    while i < len(lines):
        line = lines[i]
        if re.match(r'^\s*```', line):
            fence = None if fence else line
        elif fence:
            while line.endswith('\\') and i + 1 < len(lines):
                i += 1
                line = line[:-1] + ' ' + lines[i].strip()
            for args in commands_in(line):
                found.append((f'{path.name}:{i + 1}', args))
        else:
            for code in re.findall(r'`([^`]+)`', line):
                if re.match(r'(?:[\w./-]*/)?energystat\s+\S', code):
                    for args in commands_in(code):
                        found.append((f'{path.name}:{i + 1}', args))
        i += 1
    return found


def roff_text(s):
    s = s.replace('\\-', '-').replace('\\(dq', '"').replace('\\&', '')
    return s.replace('\\e', '\\')


def man_commands(path):
    """Commands in the man page: bold lines (.B energystat -x ...) and
    lines of example blocks (.EX ... .EE)."""
    found = []
    ex = False
    for n, line in enumerate(path.read_text().split('\n'), 1):
        if line.startswith('.EX'):
            ex = True
        elif line.startswith('.EE'):
            ex = False
        elif ex or re.match(r'^\.B energystat \\-', line):
            text = roff_text(line[3:] if line.startswith('.B ') else line)
            for args in commands_in(text):
                found.append((f'{path.name}:{n}', args))
    return found


def daemonset_commands():
    """The DaemonSet's container command lines (dist/kubernetes/)."""
    found = []
    for f in sorted((REPO / 'dist/kubernetes').glob('*.yaml')):
        for doc in yaml.safe_load_all(f.read_text()):
            if not doc or doc.get('kind') != 'DaemonSet':
                continue
            for c in doc['spec']['template']['spec']['containers']:
                cmd = c.get('command', []) + c.get('args', [])
                if cmd and TOOL.match(cmd[0]):
                    found.append((f.name, [str(a) for a in cmd[1:]]))
    return found


def documented_commands():
    found = []
    for p in [REPO / 'README.md', *sorted((REPO / 'docs').glob('*.md'))]:
        found += markdown_commands(p)
    found += man_commands(REPO / 'userspace/energystat.1')
    found += daemonset_commands()
    return found


def parse_only(tool, args):
    argv = [PLACEHOLDERS.get(a, a) for a in args]
    env = dict(os.environ, ENERGYSTAT_PARSE_ONLY='1')
    # a hang guard only: parsing returns at once
    return subprocess.run([tool, *argv], capture_output=True, text=True,
                          env=env, stdin=subprocess.DEVNULL, timeout=10)


def test_parse_only_refuses_what_the_tool_refuses(tool):
    """The check itself: a bad flag fails, a good command runs nothing
    (it would read /nonexistent and fail if it ran)."""
    for bad in (['--no-such-flag'], ['-i', '1'], ['--json', '--prometheus'],
                ['-d', 'x'], ['--listen', 'nope']):
        r = parse_only(tool, bad)
        assert r.returncode == 2, (bad, r.stderr)
        assert '(see energystat --help)' in r.stderr, (bad, r.stderr)
    r = parse_only(tool, ['--root', '/nonexistent', '--json'])
    assert (r.returncode, r.stdout, r.stderr) == (0, '', '')


def test_extraction_finds_the_commands():
    """Self-consistency of the extractor: known lines are found, whole, and
    prose and output lines are not taken for commands."""
    found = {(w.split(':')[0], tuple(a)) for w, a in documented_commands()}
    for where, args in (
            ('README.md', ('-d', '2', '-n', '2', '-b', 'demo')),
            ('README.md', ('--json', 'system.slice')),
            ('install.md', ('-d', '1', 'system.slice')),
            ('energystat.1', ('--json', '-d', '10', '-n', '6')),
            ('energystat.1', ('--prometheus', '--output=FILE')),
            ('energystat.1', ('--prometheus',))):
        assert (where, args) in found, (where, args)
    assert not [a for _, a in found if any(x.startswith('(') for x in a)]


def test_every_documented_command_parses(tool):
    cmds = documented_commands()
    # bound both ways: the docs hold a few dozen command lines
    assert 20 <= len(cmds) <= 300, len(cmds)
    assert [w for w, _ in cmds if w.startswith('daemonset')], \
        'no DaemonSet command found'
    bad = []
    for where, args in cmds:
        r = parse_only(tool, args)
        if r.returncode != 0:
            bad.append(f'{where}: energystat {shlex.join(args)}: '
                       f'{r.stderr.strip()}')
    assert not bad, '\n'.join(bad)


# --- build dependencies and kernel versions --------------------------------

# Build-Depends names that are not the package to install by hand.
BUILD_DEP_PACKAGE = {'debhelper-compat': 'debhelper',
                     'dh-sequence-installsysusers': 'debhelper',
                     'dh-sequence-dkms': 'dh-dkms'}


def build_depends():
    text = (REPO / 'debian/control').read_text()
    field = re.search(r'^Build-Depends:(.*(?:\n[ \t].*)*)', text, re.M)[1]
    names = [re.match(r'\s*([\w.+-]+)', d)[1] for d in field.split(',')]
    return {BUILD_DEP_PACKAGE.get(n, n) for n in names}


def apt_lines(path):
    """The package lists of the `apt-get install` lines of @path's blocks."""
    return [set(m[1].split()) for m in re.finditer(
        r'^apt-get install ([^#\n]+)', path.read_text(), re.M)]


@pytest.mark.parametrize('doc', ['README.md', 'docs/install.md'])
def test_build_dependencies_are_listed(doc):
    """`make deb` needs debian/control's Build-Depends; building the tool
    from source (make install, make) needs a compiler, make and the
    libraries' -dev packages that debian/control names."""
    deps = build_depends()
    libs = {d for d in deps if d.startswith('lib') and d.endswith('-dev')}
    assert 'libmicrohttpd-dev' in libs
    lines = apt_lines(REPO / doc)
    deb = [ln for ln in lines if 'dpkg-dev' in ln]
    src = [ln for ln in lines if 'dkms' in ln and 'dpkg-dev' not in ln]
    assert len(deb) == 1 and len(src) == 1, lines
    assert deps <= deb[0], deps - deb[0]
    assert {'gcc', 'make'} | libs <= src[0], src[0]


def kernels_booted():
    """(lowest, highest) major.minor the VM suite boots (kernels.lock)."""
    vers = [tuple(int(x) for x in m) for m in re.findall(
        r'^kver = (\d+)\.(\d+)', (REPO / 'tests/vm/kernels.lock').read_text(),
        re.M)]
    assert 5 <= len(vers) <= 20, vers
    return ['%d.%d' % min(vers), '%d.%d' % max(vers)]


def test_kernel_versions_agree():
    """The oldest kernel is the one DKMS builds for at least, the one the
    README and the package description name, and the oldest tested."""
    low, high = kernels_booted()
    dkms = re.search(r'^BUILD_EXCLUSIVE_KERNEL_MIN="([\d.]+)"',
                     (REPO / 'dkms.conf').read_text(), re.M)[1]
    assert dkms == low
    readme = (REPO / 'README.md').read_text()
    assert re.findall(r'Linux (\d+\.\d+) or later', readme) == [low]
    control = ' '.join((REPO / 'debian/control').read_text().split())
    assert re.findall(r'Linux (\d+\.\d+) or later', control) == [low]
    assert f'tested on {low} to {high}' in control


# --- the installed README ---------------------------------------------------

def test_installed_readme_links_resolve(tmp_path):
    """make install with the package's layout (debian/rules' LAYOUT, which
    the energystat package is, tests/test_deb.py) puts every file that the
    README links where its relative link finds it, but the licence: Debian
    ships it as copyright (an extra licence file is a lintian warning)."""
    rules = (REPO / 'debian/rules').read_text()
    layout = re.search(r'^LAYOUT = ((?:.*\\\n)*.*)$', rules, re.M)[1]
    layout = layout.replace('\\\n', ' ').split()
    docdir = dict(v.split('=', 1) for v in layout)['DOCDIR']
    dest = tmp_path / 'stage'
    r = subprocess.run(['make', '--no-print-directory', '-C', str(REPO),
                        'install', f'DESTDIR={dest}', *layout],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    doc = dest / docdir.lstrip('/')
    readme = (doc / 'README.md').read_text()
    links = {t.split('#')[0] for t in re.findall(r'\]\(([^)\s]+)\)', readme)
             if not re.match(r'\w+:|#', t)}
    assert 10 <= len(links) <= 40, links
    missing = sorted(t for t in links if not (doc / t).is_file())
    assert missing == ['COPYING'], missing
    # the tree's README links the same files under dist/ and docs/
    tree = {t.split('#')[0] for t in re.findall(
        r'\]\(([^)\s]+)\)', (REPO / 'README.md').read_text())
        if not re.match(r'\w+:|#', t)}
    assert {t.replace('dist/', 'examples/', 1) for t in tree} == links
    # debian/rules keeps them uncompressed, so the links hold in the package
    assert re.search(r'^\tdh_compress -X\.md$', rules, re.M)
