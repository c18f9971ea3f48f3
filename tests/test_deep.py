# SPDX-License-Identifier: GPL-2.0
"""tests/deep.py: the module's hash covers what is compiled into the module
and nothing else; the gate finds a passing record only for that hash; a
record passes only with every stage ok, no failure and no skip. Host test."""
import json
import subprocess
from pathlib import Path

import pytest

import deep

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture
def tree(tmp_path):
    """A small repository laid out as ours, committed."""
    files = {'kmod/main.c': 'int x;\n', 'kmod/probes.mk': 'X := 1\n',
             'include/cgroup_energy.h': '#define A 1\n',
             'Kbuild': 'obj-m := cgroup_energy.o\n', 'dkms.conf': 'X=1\n',
             'Makefile': 'all: module\n\nmodule:\n\t$(MAKE) -C $(KDIR) '
             'M=$(CURDIR) modules\n\ncheck:\n\tsh tests/check.sh\n',
             'docs/a.md': 'a\n', 'tests/t.py': 'x = 1\n',
             '.gitignore': '*.o\n'}
    for rel, text in files.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(text)

    def git(*a):
        subprocess.run(['git', '-C', str(tmp_path), *a], check=True,
                       capture_output=True)
    git('init', '-q')
    git('add', '.')
    git('-c', 'user.name=t', '-c', 'user.email=t@t', 'commit', '-qm', 'x')
    return tmp_path


@pytest.mark.parametrize('rel, changes', [
    ('kmod/main.c', True), ('kmod/probes.mk', True),
    ('include/cgroup_energy.h', True), ('Kbuild', True),
    ('dkms.conf', True), ('docs/a.md', False), ('tests/t.py', False)])
def test_hash_covers_the_module_only(tree, rel, changes):
    before = deep.module_hash(tree)
    (tree / rel).write_text((tree / rel).read_text() + '// more\n')
    assert (deep.module_hash(tree) != before) == changes


def test_hash_covers_the_module_rule_not_other_targets(tree):
    before = deep.module_hash(tree)
    mk = tree / 'Makefile'
    mk.write_text(mk.read_text().replace('sh tests/check.sh', 'true'))
    assert deep.module_hash(tree) == before
    mk.write_text(mk.read_text().replace('modules\n', 'modules W=1\n'))
    assert deep.module_hash(tree) != before


def test_new_source_counts_build_products_do_not(tree):
    before = deep.module_hash(tree)
    (tree / 'kmod/main.o').write_bytes(b'\x7fELF')
    (tree / 'kmod/.main.c.swp').write_bytes(b'vim')
    (tree / 'kmod/notes.txt').write_text('todo\n')
    assert deep.module_hash(tree) == before
    (tree / 'kmod/new.c').write_text('int y;\n')
    assert deep.module_hash(tree) != before


def timings(**over):
    t = {'commit': 'abc', 'total_seconds': 10, 'cpu': {'cores': 2},
         'stages': {'vm': {'seconds': 5, 'rc': 0},
                    'debug': {'seconds': 5, 'rc': 0}},
         'tests': {'passed': 3, 'failed': 0, 'skipped': 0,
                   'failed_ids': []}}
    t.update(over)
    return t


@pytest.mark.parametrize('over, ok', [
    ({}, True),
    # a background build that failed, which the tests rebuilt: check.sh's
    # verdict decides
    ({'stages': {'vm': {'seconds': 5, 'rc': 0},
                 'prebuild-wait': {'seconds': 1, 'rc': 1}}}, True),
    ({'tests': {'passed': 3, 'failed': 1, 'skipped': 0}}, False),
    ({'tests': {'passed': 3, 'failed': 0, 'skipped': 1}}, False),
    ({'tests': {'passed': 0, 'failed': 0, 'skipped': 0}}, False),
    ({'stages': {}}, False)])
def test_record_passes_only_when_everything_did(tree, over, ok):
    h = deep.module_hash(tree)
    rec = deep.make_record(timings(**over), 'here', h, 'passed', tree)
    assert rec['ok'] is ok
    assert rec['module_hash'] == h
    assert deep.make_record(timings(**over), 'here', h, 'failed',
                            tree)['ok'] is False


def test_verify_wants_a_passing_record_of_this_hash(tree):
    path = tree / 'tests/results/deep.jsonl'
    path.parent.mkdir(parents=True)
    assert 'does not exist' in deep.verify(tree, path)
    h = deep.module_hash(tree)
    failed = deep.make_record(timings(tests={'passed': 1, 'failed': 1,
                                             'skipped': 0}), 'a', h,
                              'failed', tree)
    path.write_text(json.dumps(failed) + '\n')
    assert 'all failed' in deep.verify(tree, path)
    good = deep.make_record(timings(), 'b', h, 'passed', tree)
    with open(path, 'a') as f:
        f.write(json.dumps(good) + '\n')
    assert deep.verify(tree, path) is None
    (tree / 'kmod/main.c').write_text('int z;\n')
    why = deep.verify(tree, path)
    assert why and '\n' not in why and deep.module_hash(tree)[:16] in why
    assert 'changed since the last record' in why


def test_malformed_record_file_is_an_error(tree):
    path = tree / 'deep.jsonl'
    path.write_text('{"module_hash": "x"}\nnot json\n')
    with pytest.raises(SystemExit, match=':2: not JSON'):
        deep.records(path)


def test_committed_records_are_well_formed():
    for r in deep.records():
        assert {'module_hash', 'ok', 'test_tree', 'host', 'load',
                'stages', 'tests'} <= set(r), r
