# SPDX-License-Identifier: GPL-2.0
"""The deep tier's record, keyed by the module's hash.

`make check-full` runs every test on every kernel, the timing-bound ones
too, and appends one line to tests/results/deep.jsonl: the hash of what is
compiled into the module (module_hash below), the test tree's hash, the
host, its load over the run, the stages and the outcome. `make check` (the
gate) passes only when a passing record exists for the module it tests: a
change to the module needs a deep run before it lands; a change to docs,
results, tests or userspace does not.

  deep.py hash        print the module's hash
  deep.py verify      exit 1, with a one-line reason, if no passing record
                      holds this module's hash
  deep.py record TIMINGS WHERE HASH VERDICT
                      append TIMINGS (check.sh's timings.json) as the record
                      of HASH (taken at the run's start), VERDICT check.sh's
                      own (passed or failed); refused if the module changed
                      during the run
"""
import hashlib
import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
RECORDS = REPO / 'tests/results/deep.jsonl'
# What is compiled into the module, or decides how it is compiled: the
# sources and headers, the feature probes (kmod/probes.mk), the Kbuild
# file DKMS and make use, dkms.conf, and the Makefile's module rule.
SOURCES = ('kmod', 'include', 'Kbuild', 'dkms.conf')
MAKE_RULE = 'module:'
# the sources under SOURCES' directories: an editor's swap file or a note
# left there is not the module
SOURCE_SUFFIXES = ('.c', '.h', '.mk')


def _git(*args, repo=REPO):
    p = subprocess.run(['git', '-C', str(repo), *args], capture_output=True,
                       text=True)
    return p.stdout if p.returncode == 0 else None


def _source(rel):
    return '/' not in rel or rel.endswith(SOURCE_SUFFIXES)


def module_files(repo=REPO):
    """The module's files, relative to @repo, sorted: git's tracked and
    untracked but not ignored files (build products are ignored), the
    sources among them."""
    out = _git('ls-files', '-z', '-co', '--exclude-standard', '--',
               *SOURCES, repo=repo)
    if out is not None:
        return sorted({p for p in out.split('\0')
                       if p and _source(p) and (repo / p).is_file()})
    files = []
    for s in SOURCES:
        p = repo / s
        if p.is_file():
            files.append(s)
        elif p.is_dir():
            files += [str(f.relative_to(repo)) for f in p.rglob('*')
                      if f.is_file() and f.suffix in SOURCE_SUFFIXES]
    return sorted(files)


def make_rule(repo=REPO):
    """The Makefile's module rule: its target line and recipe, up to the
    first blank line."""
    lines = (repo / 'Makefile').read_text().splitlines()
    try:
        i = lines.index(MAKE_RULE)
    except ValueError:
        raise SystemExit(f'deep: no "{MAKE_RULE}" rule in the Makefile')
    rule = []
    for ln in lines[i:]:
        if not ln.strip():
            break
        rule.append(ln)
    return '\n'.join(rule) + '\n'


def module_hash(repo=REPO):
    """sha256 over each module file's path and content, as in the work
    tree (uncommitted changes count), and the Makefile's module rule."""
    h = hashlib.sha256()
    for rel in module_files(repo):
        data = (repo / rel).read_bytes()
        h.update(f'{rel}\0{len(data)}\0'.encode())
        h.update(data)
    rule = make_rule(repo).encode()
    h.update(f'Makefile:{MAKE_RULE}\0{len(rule)}\0'.encode())
    h.update(rule)
    return h.hexdigest()


def test_tree(repo=REPO):
    """The test tree's git hash, '-dirty' when tests/ has uncommitted
    changes other than its results."""
    h = (_git('rev-parse', 'HEAD:tests', repo=repo) or '').strip() or None
    st = _git('status', '--porcelain', '--', 'tests', repo=repo) or ''
    if h and [ln for ln in st.splitlines()
              if not ln[3:].startswith('tests/results/')]:
        h += '-dirty'
    return h


def records(path=RECORDS):
    """The records in @path, each a dict; a malformed line raises."""
    if not path.exists():
        return []
    out = []
    for n, line in enumerate(path.read_text().splitlines(), 1):
        if not line.strip():
            continue
        try:
            r = json.loads(line)
        except ValueError as e:
            raise SystemExit(f'deep: {path}:{n}: not JSON: {e}')
        if not isinstance(r, dict):
            raise SystemExit(f'deep: {path}:{n}: not an object')
        out.append(r)
    return out


def passing(recs, mhash):
    """The records that passed for @mhash, newest last."""
    return [r for r in recs if r.get('module_hash') == mhash
            and r.get('ok') is True]


def verify(repo=REPO, path=RECORDS):
    """None if a passing deep record holds this module's hash, else the
    one-line reason."""
    mhash = module_hash(repo)
    recs = records(path)
    if passing(recs, mhash):
        return None
    rel = os.path.relpath(path, repo)
    if not path.exists():
        why = f'{rel} does not exist'
    elif any(r.get('module_hash') == mhash for r in recs):
        why = f'the records of this module in {rel} all failed'
    else:
        why = f'the module changed since the last record in {rel}'
    return (f'no passing deep record for module hash {mhash[:16]}: {why}; '
            'run make check-full and commit its record')


def host():
    model = None
    try:
        for line in open('/proc/cpuinfo'):
            if line.startswith('model name'):
                model = line.split(':', 1)[1].strip()
                break
    except OSError:
        pass
    return {'cpu': model, 'cores': os.cpu_count(),
            'kernel': platform.release()}


def make_record(timings, where, mhash, verdict, repo=REPO):
    """A record of the module @mhash from check.sh's timings.json
    (@timings, a dict) and its @verdict ('passed' or 'failed')."""
    tests = timings.get('tests', {})
    stages = timings.get('stages', {})
    ok = (verdict == 'passed' and bool(stages)
          and tests.get('failed') == 0 and tests.get('skipped') == 0
          and tests.get('passed', 0) > 0)
    return {'module_hash': mhash, 'ok': ok,
            'test_tree': test_tree(repo), 'commit': timings.get('commit'),
            'where': where, 'finished': timings.get('finished') or
            time.strftime('%Y-%m-%dT%H:%M:%S%z'),
            'host': host(), 'load': timings.get('cpu'),
            'total_seconds': timings.get('total_seconds'),
            'cache': timings.get('cache'),
            'stages': {k: v.get('seconds') for k, v in stages.items()},
            'failed_stages': sorted(k for k, v in stages.items()
                                    if v.get('rc') != 0),
            'tests': {k: tests.get(k) for k in ('passed', 'failed',
                                                'skipped')},
            'failed_ids': tests.get('failed_ids', [])}


def main(argv):
    if argv[:1] == ['hash']:
        print(module_hash())
        return 0
    if argv[:1] == ['verify']:
        why = verify()
        if why:
            print(f'check: {why}', file=sys.stderr)
            return 1
        print(f'check: deep record found for module hash '
              f'{module_hash()[:16]}')
        return 0
    if argv[:1] == ['record'] and len(argv) == 5 and \
            argv[4] in ('passed', 'failed'):
        if module_hash() != argv[3]:
            print('check-full: the module changed during the run: no '
                  'record', file=sys.stderr)
            return 1
        timings = json.loads(Path(argv[1]).read_text())
        rec = make_record(timings, argv[2], argv[3], argv[4])
        with open(RECORDS, 'a') as f:
            f.write(json.dumps(rec, sort_keys=True) + '\n')
        print(f'check-full: record for module hash {rec["module_hash"][:16]}'
              f" ({'passed' if rec['ok'] else 'FAILED'}) appended to "
              f'{os.path.relpath(RECORDS, REPO)}')
        return 0 if rec['ok'] else 1
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
