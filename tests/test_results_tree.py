# SPDX-License-Identifier: GPL-2.0
"""Committed results describe the code beside them: each records the git
tree hash of kmod/ it was measured on (bench/treeinfo.py), and it must be
HEAD's. Host test (make check's host stage)."""
import hashlib
import json
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
# results file: (how to get its kmod_tree, the command that regenerates it)
FILES = {
    'bench/results/latest.json':
        (lambda d: d.get('git', {}).get('kmod_tree'), 'make bench'),
    'bench/results/validation.json':
        (lambda d: d.get('report', {}).get('build_info', {}).get('kmod_tree'),
         'make validate'),
}


def head_kmod():
    p = subprocess.run(['git', '-C', str(REPO), 'rev-parse', 'HEAD:kmod'],
                       capture_output=True, text=True)
    if p.returncode:
        pytest.skip('not a git checkout: no tree hash to compare with')
    return p.stdout.strip()


# Test-only files that kmod/ held once: the RAPL emulator, tests/emu/emu.c
# since. A results file measured on a kmod tree that held it describes
# HEAD's module if that tree held just what HEAD's kmod/ holds besides.
MOVED_OUT = ('emu.c',)
# such trees' entries (`git ls-tree`), so that no history is needed
TREES = REPO / 'tests/results/kmod-trees.json'


def entries(tree):
    """`git ls-tree @tree` as [mode, type, sha, name] rows."""
    p = subprocess.run(['git', '-C', str(REPO), 'ls-tree', tree],
                       capture_output=True, text=True, check=True)
    return [ln.split('\t', 1)[0].split() + [ln.split('\t', 1)[1]]
            for ln in p.stdout.splitlines()]


def tree_hash(rows):
    """Git's object id of the tree of @rows, as `git mktree` would write it."""
    body = b''.join(mode.lstrip('0').encode() + b' ' + name.encode() + b'\0' +
                    bytes.fromhex(sha) for mode, _, sha, name in rows)
    return hashlib.sha1(b'tree %d\0' % len(body) + body).hexdigest()


def same_module(recorded, head):
    """Whether kmod tree @recorded, listed in TREES, is HEAD's but for
    MOVED_OUT."""
    known = json.loads(TREES.read_text()).get(recorded)
    if not known or tree_hash(known['entries']) != recorded:
        return False
    return [e for e in known['entries'] if e[3] not in MOVED_OUT] == \
        entries(head)


@pytest.mark.parametrize('rel', sorted(FILES))
def test_results_measured_on_head_kmod(rel):
    head = head_kmod()
    get, cmd = FILES[rel]
    recorded = get(json.loads((REPO / rel).read_text()))
    assert recorded == head or same_module(recorded, head), (
        f'{rel} was measured on kmod tree {recorded}, HEAD\'s kmod/ is '
        f'{head}: re-run `{cmd}` and commit its results')


def test_known_trees_hash_to_their_names():
    for tree, known in json.loads(TREES.read_text()).items():
        assert tree_hash(known['entries']) == tree, tree
        assert known['why'], tree


def test_tree_hash_is_gits():
    assert tree_hash(entries(head_kmod())) == head_kmod()


def test_moved_out_files_are_not_in_kmod():
    assert not [f for f in MOVED_OUT if (REPO / 'kmod' / f).exists()]


def test_clean_ignores_only_results(tmp_path):
    # a modified results file leaves the tree clean, even as the first line
    # of `git status --porcelain` (which begins with a blank); another
    # modified file does not
    import sys
    sys.path.insert(0, str(REPO / 'bench'))
    import treeinfo

    def git(*a):
        subprocess.run(['git', '-C', str(tmp_path), *a], check=True,
                       capture_output=True)
    (tmp_path / 'bench/results').mkdir(parents=True)
    (tmp_path / 'kmod').mkdir()
    for f in ('bench/results/validation.json', 'kmod/a.c', 'README.md'):
        (tmp_path / f).write_text('0\n')
    git('init', '-q')
    git('add', '.')
    git('-c', 'user.name=t', '-c', 'user.email=t@t', 'commit', '-qm', 'x')
    (tmp_path / 'bench/results/validation.json').write_text('1\n')
    assert treeinfo.tree_info(tmp_path)['clean'] is True
    (tmp_path / 'README.md').write_text('1\n')
    assert treeinfo.tree_info(tmp_path)['clean'] is False
