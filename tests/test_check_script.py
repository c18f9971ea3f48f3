# SPDX-License-Identifier: GPL-2.0
"""tests/check.sh and tests/deps.sh, host only, in seconds: each runs from a
copy in a scratch tree whose stage scripts, debug kernel build and stress
suite are stubs (check.sh finds the tree from its own path), and deps.sh
with stubbed dpkg-query, id, apt-get and apt-cache, so nothing is built,
booted or installed."""
import json
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
VALID = 'deep deps build style host kunit sweep vm server debug'
# Guards against a hung check.sh, not measures: the gate runs these tests
# beside QEMU guests on a host that may be slow and busy, where each of
# check.sh's stubbed pytest runs takes seconds.
CHECK_S = 300
WAIT_S = 120


def fake_repo(tmp_path, style='exit 0', debugkernel_rc=0):
    (tmp_path / 'tests/vm').mkdir(parents=True)
    (tmp_path / 'tests/check.sh').write_text(
        (REPO / 'tests/check.sh').read_text())
    (tmp_path / 'tests/style.sh').write_text(
        'echo ran >> "$MARK"\n' + style + '\n')
    (tmp_path / 'tests/vm/debugkernel.py').write_text(
        f'import sys\nprint("stub build")\nsys.exit({debugkernel_rc})\n')
    (tmp_path / 'tests/vm/prebuild.py').write_text(
        'print("prebuild: stub")\n')
    # the deep record: present unless DEEP_MISSING, its checks marked
    (tmp_path / 'tests/deep.py').write_text(
        'import os, sys\n'
        'if sys.argv[1] == "hash":\n'
        '    print("0" * 64)\n'
        '    sys.exit(0)\n'
        'with open(os.environ["MARK"], "a") as f:\n'
        '    f.write("deep " + " ".join(sys.argv[1:2]) + "\\n")\n'
        'if "DEEP_MISSING" in os.environ:\n'
        '    print("check: no passing deep record for module hash 0",\n'
        '          file=sys.stderr)\n'
        '    sys.exit(1)\n')
    (tmp_path / 'tests/test_stress.py').write_text(
        'import os\nimport pytest\n\npytestmark = pytest.mark.vm\n\n\n'
        'def test_stub():\n'
        '    if os.path.exists("/proc/self/autogroup"):\n'
        '        with open(os.environ["MARK"] + ".nice", "a") as f:\n'
        '            f.write(f"{os.nice(0)} {open(\'/proc/self/autogroup\')'
        '.read()}")\n'
        '    with open(os.environ["MARK"], "a") as f:\n'
        '        f.write("stress " + os.environ["CGE_STRESS_FLAVOURS"]'
        ' + "\\n")\n')
    return tmp_path


def check(repo, **env):
    """check.sh in @repo, the deep tier's unless @env names CGE_TIER."""
    mark = repo / 'mark'
    e = {k: v for k, v in os.environ.items()
         if not k.startswith('CGE_')}
    e.update(MARK=str(mark), CGE_TIER='full')
    e.update(env)
    r = subprocess.run(['/bin/sh', str(repo / 'tests/check.sh')], env=e,
                       capture_output=True, text=True, timeout=CHECK_S)
    ran = mark.read_text().splitlines() if mark.exists() else []
    return r, ran


def timings(repo):
    out = repo / '.build/check'
    tsv = {}
    for line in (out / 'timings.tsv').read_text().splitlines():
        name, secs, rc = line.split('\t')
        tsv[name] = int(rc)
    return tsv, json.loads((out / 'timings.json').read_text())


def test_unknown_stage_refused_before_anything_runs(tmp_path):
    repo = fake_repo(tmp_path)
    for stages in ('bogus', 'style bogus', 'style,host'):
        r, ran = check(repo, CGE_STAGES=stages)
        assert r.returncode == 2, (stages, r.stdout, r.stderr)
        assert VALID in r.stderr
        assert 'unknown stage' in r.stderr
        assert ran == []
        assert not (repo / '.build').exists()


def test_blank_stage_list_refused(tmp_path):
    repo = fake_repo(tmp_path)
    r, ran = check(repo, CGE_STAGES=' \t')
    assert r.returncode == 2 and VALID in r.stderr and ran == []


def test_stage_runs_and_stale_timings_json_removed(tmp_path):
    repo = fake_repo(tmp_path, style='test ! -e .build/check/timings.json')
    (repo / '.build/check').mkdir(parents=True)
    (repo / '.build/check/timings.json').write_text('{"stale": 1}\n')
    r, ran = check(repo, CGE_STAGES='style')
    assert r.returncode == 0, r.stdout + r.stderr
    assert ran == ['ran']
    tsv, doc = timings(repo)
    assert tsv == {'style': 0} and doc['stages']['style']['rc'] == 0


def test_timings_say_whether_the_cache_was_empty(tmp_path):
    repo = fake_repo(tmp_path)
    cache = tmp_path / 'cache'
    cache.mkdir()
    for empty in (True, False):
        r, _ = check(repo, CGE_STAGES='style', CGE_CACHE=str(cache))
        assert r.returncode == 0, r.stdout + r.stderr
        assert timings(repo)[1]['cache'] == {'path': str(cache),
                                             'empty_at_start': empty}
        (cache / 'kernels').mkdir(exist_ok=True)


def test_timings_name_the_failed_tests(tmp_path):
    xml = ('<testsuites><testsuite tests="3" failures="1" errors="0" '
           'skipped="1"><testcase classname="tests.test_x" name="test_a"/>'
           '<testcase classname="tests.test_x" name="test_b[6.1]">'
           '<failure message="no"/></testcase><testcase classname="tests.'
           'test_x" name="test_c"><skipped/></testcase></testsuite>'
           '</testsuites>')
    repo = fake_repo(tmp_path, style=f"echo '{xml}' > .build/check/s.xml; "
                     'exit 1')
    r, _ = check(repo, CGE_STAGES='style')
    assert r.returncode == 1
    doc = timings(repo)[1]
    assert doc['tests'] == {
        'passed': 1, 'failed': 1, 'skipped': 1,
        'failed_ids': ['tests.test_x::test_b[6.1]'],
        'skipped_ids': ['tests.test_x::test_c']}
    assert set(doc['durations']['by_module']) == {'tests.test_x'}
    assert len(doc['durations']['slowest']) == 3


def test_a_skip_fails_the_run(tmp_path):
    xml = ('<testsuites><testsuite tests="2" failures="0" errors="0" '
           'skipped="1"><testcase classname="tests.test_x" name="test_a"/>'
           '<testcase classname="tests.test_x" name="test_c"><skipped/>'
           '</testcase></testsuite></testsuites>')
    repo = fake_repo(tmp_path, style=f"echo '{xml}' > .build/check/s.xml")
    for tier in ('gate', 'full'):
        r, _ = check(repo, CGE_STAGES='style', CGE_TIER=tier)
        assert r.returncode == 1, r.stdout + r.stderr
        assert 'check: skipped: tests.test_x::test_c' in r.stdout
        assert 'FAILED stages: skips' in r.stdout


def test_unknown_tier_refused(tmp_path):
    repo = fake_repo(tmp_path)
    r, ran = check(repo, CGE_TIER='quick')
    assert r.returncode == 2 and 'CGE_TIER=quick' in r.stderr
    assert ran == []


def test_gate_fails_without_a_deep_record_and_runs_on(tmp_path):
    repo = fake_repo(tmp_path)
    r, ran = check(repo, CGE_TIER='gate', CGE_STAGES='deep style',
                   DEEP_MISSING='1')
    assert r.returncode == 1, r.stdout + r.stderr
    assert ran == ['deep verify', 'ran']
    assert 'no passing deep record' in r.stdout
    assert 'FAILED stages: deep' in r.stdout
    r, ran = check(repo, CGE_TIER='gate', CGE_STAGES='deep style')
    assert r.returncode == 0, r.stdout + r.stderr


def test_full_tier_records_a_whole_run(tmp_path):
    # failed or passed (the stubbed tree has no deps.sh): its verdict is in
    # the record
    repo = fake_repo(tmp_path)
    vm_stubs(repo)
    lane_stubs(repo)
    r, ran = check(repo)
    assert ran[-1] == 'deep record', ran
    assert 'stress debug' in ran, ran


@pytest.mark.parametrize('env', [{'CGE_STAGES': 'style'},
                                 {'CGE_FLAVOURS': '6.1'},
                                 {'CGE_STRESS_SCALE': '0.1'}])
def test_full_tier_appends_no_record_for_part_of_a_run(tmp_path, env):
    repo = fake_repo(tmp_path)
    r, ran = check(repo, CGE_STRESS_FLAVOURS='', **env)
    assert 'deep record' not in ran, ran
    assert 'no deep record' in r.stdout, r.stdout


def test_failed_stage_fails(tmp_path):
    repo = fake_repo(tmp_path, style='exit 1')
    r, _ = check(repo, CGE_STAGES='style')
    assert r.returncode == 1 and 'FAILED stages: style' in r.stdout


def test_failed_summary_fails(tmp_path):
    repo = fake_repo(tmp_path)
    # A directory where timings.json goes: the summary cannot write it.
    (repo / '.build/check/timings.json').mkdir(parents=True)
    r, ran = check(repo, CGE_STAGES='style')
    assert ran == ['ran']
    assert r.returncode == 1, r.stdout + r.stderr
    assert 'summary failed' in r.stderr


def test_debug_wait_records_failed_build(tmp_path):
    repo = fake_repo(tmp_path, debugkernel_rc=3)
    r, ran = check(repo, CGE_STAGES='debug',
                   CGE_STRESS_FLAVOURS='6.1-rt,debug')
    assert r.returncode == 1, r.stdout + r.stderr
    log = repo / '.build/check/debugkernel.log'
    assert str(log) in r.stderr and 'stub build' in log.read_text()
    # The stock kernel's stress ran; the debug kernel's did not.
    assert ran == ['stress 6.1-rt']
    tsv, doc = timings(repo)
    assert tsv == {'debug-wait': 3, 'debug': 1}
    assert doc['stages']['debug-wait']['rc'] == 3


def test_debug_wait_records_good_build(tmp_path):
    repo = fake_repo(tmp_path)
    r, ran = check(repo, CGE_STAGES='debug',
                   CGE_STRESS_FLAVOURS='debug, 6.1-rt,6.12')
    assert r.returncode == 0, r.stdout + r.stderr
    assert ran == ['stress 6.1-rt 6.12', 'stress debug']
    tsv, _ = timings(repo)
    assert tsv == {'debug-wait': 0, 'debug': 0}


def test_stress_without_debug_kernel_builds_nothing(tmp_path):
    repo = fake_repo(tmp_path, debugkernel_rc=3)
    r, ran = check(repo, CGE_STAGES='debug', CGE_STRESS_FLAVOURS='6.1-rt')
    assert r.returncode == 0, r.stdout + r.stderr
    assert ran == ['stress 6.1-rt']
    assert not (repo / '.build/check/debugkernel.log').exists()
    tsv, _ = timings(repo)
    assert tsv == {'debug': 0}


def test_summary_says_how_the_host_and_the_guests_fared(tmp_path):
    # the host's busy and steal fractions, the cache's state, and the boots
    # the harness logged in CGE_BOOT_LOG (a stale log is removed first)
    repo = fake_repo(tmp_path)
    (repo / '.build/check').mkdir(parents=True)
    (repo / '.build/check/boots.jsonl').write_text(
        '{"flavour": "stale", "up_s": 99}\n')
    (repo / 'tests/test_engine.py').write_text(
        'import json, os\nimport pytest\n\npytestmark = pytest.mark.vm\n\n\n'
        'def test_boots():\n'
        '    with open(os.environ["CGE_BOOT_LOG"], "a") as f:\n'
        '        for up, fl, to in ((2.0, "6.1", False), (3.5, "sid", False),\n'
        '                           (None, "6.12", True)):\n'
        '            f.write(json.dumps({"flavour": fl, "up_s": up,\n'
        '                "test": "tests/t.py::x[" + fl + "]",\n'
        '                "timed_out": to, "stuck_before_init": False}) + "\\n")\n')
    r, _ = check(repo, CGE_STAGES='vm')
    assert r.returncode == 0, r.stdout + r.stderr
    assert 'check: host: 2 cores, ' in r.stdout or \
        f'check: host: {os.cpu_count()} cores, ' in r.stdout, r.stdout
    assert 'steal; cache ' in r.stdout, r.stdout
    assert ('check: guests: 3 boots; up after 3.5 s median, 3.5 s 90th '
            'percentile, 3.5 s at most (tests/t.py::x[sid]); 1 timed out, '
            '0 stopped before their init') in r.stdout, r.stdout
    g = timings(repo)[1]['guests']
    assert g['boots'] == 3 and g['up_s_max'][0] == 3.5, g


def vm_stubs(repo, debugkernel_rc=0):
    """A solo vm test and a second-part vm test that, given WAIT_STRESS in
    its environment, waits (10 s at most) for the debug kernel's stress to be
    marked, then marks its own end."""
    (repo / 'tests/test_accuracy.py').write_text(
        'import os\nimport pytest\n\npytestmark = pytest.mark.vm\n\n\n'
        'def test_solo():\n'
        '    with open(os.environ["MARK"], "a") as f:\n'
        '        f.write("solo\\n")\n')
    (repo / 'tests/test_engine.py').write_text(
        'import os\nimport time\nimport pytest\n\n'
        'pytestmark = pytest.mark.vm\n\n\n'
        'def test_rest():\n'
        '    m = os.environ["MARK"]\n'
        f'    end = time.monotonic() + {WAIT_S} * '
        '("WAIT_STRESS" in os.environ)\n'
        '    while time.monotonic() < end and \\\n'
        '            "stress debug" not in open(m).read():\n'
        '        time.sleep(0.05)\n'
        '    with open(m, "a") as f:\n'
        '        f.write("rest end\\n")\n')


def test_debug_stage_runs_beside_the_vm_stage_second_part(tmp_path):
    repo = fake_repo(tmp_path)
    vm_stubs(repo)
    r, ran = check(repo, CGE_STAGES='vm debug', WAIT_STRESS='1',
                   CGE_STRESS_FLAVOURS='6.1-rt,debug')
    assert r.returncode == 0, r.stdout + r.stderr
    # after the solo part, and done before the second part ended
    assert ran == ['solo', 'stress 6.1-rt', 'stress debug', 'rest end'], ran
    # at nice 10, also where autogroups would make nice(1) count for nothing
    # (nice(1) adds to the test's own: 10 more, at most 19)
    nice = repo / 'mark.nice'
    if nice.exists():
        for line in nice.read_text().splitlines():
            n, group = line.split(' ', 1)
            assert int(n) == min(19, os.nice(0) + 10), line
            if Path('/proc/sys/kernel/sched_autogroup_enabled').read_text() \
                    .strip() == '1':
                assert group.endswith(' nice 10'), line
    assert 'stages debug (they ran beside the vm stage)' in r.stdout
    assert '1 passed' in r.stdout.split('stages debug (they ran')[1]
    tsv, doc = timings(repo)
    assert tsv == {'debug-wait': 0, 'prebuild-wait': 0, 'vm': 0,
                   'debug': 0}, tsv
    assert doc['tests']['passed'] == 4, doc


def lane_stubs(repo):
    """A host test, a sweep test and a server test (a vm test the vm stage
    leaves to the server stage) that mark their run."""
    for name, mark, what in (('test_host.py', '', 'host'),
                             ('test_sweep.py', 'sweep', 'sweep'),
                             ('test_server.py', 'vm', 'server')):
        (repo / 'tests' / name).write_text(
            'import os\nimport pytest\n\n\n'
            + (f'@pytest.mark.{mark}\n' if mark else '')
            + f'def test_{what}():\n'
            '    with open(os.environ["MARK"], "a") as f:\n'
            f'        f.write("{what}\\n")\n')
    (repo / 'bench').mkdir()
    (repo / 'bench/validate_selftest.py').write_text('')


def test_host_sweep_and_server_run_in_the_lane_before_debug(tmp_path):
    repo = fake_repo(tmp_path)
    vm_stubs(repo)
    lane_stubs(repo)
    r, ran = check(repo, CGE_STAGES='host sweep vm server debug',
                   WAIT_STRESS='1', CGE_STRESS_FLAVOURS='debug')
    assert r.returncode == 0, r.stdout + r.stderr
    # the server test runs in its stage only, not in the vm stage's
    assert ran == ['solo', 'host', 'sweep', 'server', 'stress debug',
                   'rest end'], ran
    assert ('stages host sweep server debug (they ran beside the vm stage)'
            in r.stdout)
    tsv, doc = timings(repo)
    assert tsv == {'debug-wait': 0, 'prebuild-wait': 0, 'vm': 0, 'host': 0,
                   'sweep': 0, 'server': 0, 'debug': 0}, tsv
    assert doc['tests']['passed'] == 6, doc


@pytest.mark.parametrize('stages, env, want', [
    ('host sweep vm server debug', {'CGE_OVERLAP': '0'},
     ['host', 'sweep', 'server', 'solo', 'rest end', 'stress debug']),
    ('host sweep', {}, ['host', 'sweep']),
])
def test_lane_stages_in_order_without_overlap(tmp_path, stages, env, want):
    repo = fake_repo(tmp_path)
    vm_stubs(repo)
    lane_stubs(repo)
    r, ran = check(repo, CGE_STAGES=stages, CGE_STRESS_FLAVOURS='debug',
                   **env)
    assert r.returncode == 0, r.stdout + r.stderr
    assert ran == want, ran
    assert 'beside the vm stage' not in r.stdout


def test_failed_lane_stage_fails_the_run(tmp_path):
    repo = fake_repo(tmp_path)
    vm_stubs(repo)
    lane_stubs(repo)
    (repo / 'tests/test_host.py').write_text('def test_host():\n'
                                             '    assert False\n')
    r, ran = check(repo, CGE_STAGES='host vm debug',
                   CGE_STRESS_FLAVOURS='debug')
    assert r.returncode == 1, r.stdout + r.stderr
    assert 'FAILED stages: host' in r.stdout
    # the lane went on to its debug stage
    assert 'stress debug' in ran, ran
    tsv, _ = timings(repo)
    assert tsv['host'] == 1 and tsv['debug'] == 0 and tsv['vm'] == 0, tsv


def test_debug_stage_beside_vm_fails_on_a_failed_build(tmp_path):
    repo = fake_repo(tmp_path, debugkernel_rc=3)
    vm_stubs(repo)
    r, ran = check(repo, CGE_STAGES='vm debug',
                   CGE_STRESS_FLAVOURS='6.1-rt,debug')
    assert r.returncode == 1, r.stdout + r.stderr
    # the debug kernel's stress did not run; the rest ran in either order
    assert ran[0] == 'solo' and sorted(ran[1:]) == ['rest end',
                                                    'stress 6.1-rt'], ran
    tsv, _ = timings(repo)
    assert tsv == {'debug-wait': 3, 'prebuild-wait': 0, 'vm': 0,
                   'debug': 1}, tsv


def test_vm_alone_starts_no_debug_stage(tmp_path):
    repo = fake_repo(tmp_path)
    vm_stubs(repo)
    r, ran = check(repo, CGE_STAGES='vm')
    assert r.returncode == 0, r.stdout + r.stderr
    assert ran == ['solo', 'rest end'], ran
    assert 'debug' not in timings(repo)[0]


def test_overlap_off_runs_the_debug_stage_after_vm(tmp_path):
    repo = fake_repo(tmp_path)
    vm_stubs(repo)
    r, ran = check(repo, CGE_STAGES='vm debug', CGE_OVERLAP='0',
                   CGE_STRESS_FLAVOURS='6.1-rt,debug')
    assert r.returncode == 0, r.stdout + r.stderr
    assert ran == ['solo', 'rest end', 'stress 6.1-rt', 'stress debug'], ran


def test_vm_modules_prebuilt_paused_beside_the_solo_part(tmp_path):
    # tests/vm/prebuild.py gets CGE_FLAVOURS and the pause file, runs at
    # nice 19 in its own autogroup, starts no build while the solo part runs
    # (it says so in FILE.idle), then goes on at nice 0; the second part
    # starts after it
    repo = fake_repo(tmp_path)
    vm_stubs(repo)
    (repo / 'tests/vm/prebuild.py').write_text(
        'import os, sys, time\n'
        'from pathlib import Path\n'
        'def state():\n'
        '    ag = (open("/proc/self/autogroup").read().split()[-1]\n'
        '          if os.path.exists("/proc/self/autogroup") else "-")\n'
        '    return f"{os.nice(0)} {ag}"\n'
        'assert sys.argv[1] == "--pause"\n'
        'pause = Path(sys.argv[2])\n'
        'log = [sys.argv[3], state()]\n'
        'while not pause.exists():\n'
        '    time.sleep(0.1)\n'
        'Path(str(pause) + ".idle").touch()\n'
        'while pause.exists():\n'
        '    time.sleep(0.1)\n'
        'log.append(state())\n'
        'time.sleep(1)\n'
        'open(os.environ["MARK"] + ".prebuild", "w").write("\\n".join(log))\n'
        'print("prebuild: 4 builds in 2 s (paused 1 s)")\n')
    (repo / 'tests/test_accuracy.py').write_text(
        'import os\nimport pytest\n\npytestmark = pytest.mark.vm\n\n\n'
        'def test_solo():\n'
        '    p = ".build/check/prebuild.pause"\n'
        '    with open(os.environ["MARK"], "a") as f:\n'
        '        f.write(f"solo {os.path.exists(p + \'.idle\')}\\n")\n')
    (repo / 'tests/test_engine.py').write_text(
        'import os\nimport pytest\n\npytestmark = pytest.mark.vm\n\n\n'
        'def test_rest():\n'
        '    m = os.environ["MARK"]\n'
        '    with open(m, "a") as f:\n'
        '        f.write("rest after prebuild\\n" if os.path.exists(\n'
        '            m + ".prebuild") else "rest before prebuild\\n")\n')
    r, ran = check(repo, CGE_STAGES='vm', CGE_FLAVOURS='6.1,sid')
    assert r.returncode == 0, r.stdout + r.stderr
    assert ran == ['solo True', 'rest after prebuild'], ran
    got = (repo / 'mark.prebuild').read_text().split('\n')
    ag = os.path.exists('/proc/self/autogroup')
    assert got[0] == '6.1,sid', got
    assert got[1] == ('19 19' if ag else '19 -'), got
    if os.geteuid() == 0:
        assert got[2] == ('0 0' if ag else '0 -'), got
    assert 'the background builds: prebuild: 4 builds in 2 s (paused 1 s)' \
        ' (exit 0' in r.stdout
    assert not (repo / '.build/check/prebuild.pause').exists()
    tsv, _ = timings(repo)
    assert tsv['prebuild-wait'] == 0


@pytest.mark.parametrize('stages, in_lane', [('vm debug', True),
                                              ('vm', False)])
def test_vm_lane_tests_run_in_the_lane(tmp_path, stages, in_lane):
    # VM_LANE's tests (here test_harness.py) run once: in the lane, before
    # its debug stage, when there is a lane, else in the vm stage's second
    # part; a failure there fails the run
    repo = fake_repo(tmp_path)
    vm_stubs(repo)
    (repo / 'tests/test_harness.py').write_text(
        'import os\nimport pytest\n\npytestmark = pytest.mark.vm\n\n\n'
        'def test_lane():\n'
        '    with open(os.environ["MARK"], "a") as f:\n'
        '        f.write(f"harness {os.nice(0)}\\n")\n'
        '    assert "FAIL_HARNESS" not in os.environ\n')
    r, ran = check(repo, CGE_STAGES=stages, CGE_STRESS_FLAVOURS='6.1-rt')
    assert r.returncode == 0, r.stdout + r.stderr
    harness = [x for x in ran if x.startswith('harness')]
    tsv, doc = timings(repo)
    # nice(1) adds to the nice this test runs at (10 when make check's host
    # stage runs it in the lane), up to 19
    base = os.nice(0)
    if in_lane:
        lane = f'harness {min(base + 10, 19)}'
        assert harness == [lane], ran
        assert ran.index(lane) < ran.index('stress 6.1-rt'), ran
        assert tsv['vm-lane'] == 0 and tsv['vm'] == 0, tsv
    else:
        assert harness == [f'harness {base}'], ran
        assert 'vm-lane' not in tsv, tsv
    assert doc['tests']['passed'] == (4 if in_lane else 3), doc
    if in_lane:
        r, _ = check(repo, CGE_STAGES=stages, CGE_STRESS_FLAVOURS='6.1-rt',
                     FAIL_HARNESS='1')
        assert r.returncode != 0
        assert timings(repo)[0]['vm-lane'] != 0
        assert 'vm-lane' in r.stdout and 'FAILED' in r.stdout


def test_debug_build_stopped_beside_the_solo_part(tmp_path):
    # the debug kernel's build is stopped (state T) while the solo part
    # runs and runs again for the second part (the style stage waits until
    # the build has started)
    repo = fake_repo(tmp_path, style='while [ ! -e "$MARK.pid" ]; do '
                     'sleep 0.05; done')
    vm_stubs(repo)
    # (until the second part has looked: a stopped sleep's time runs on)
    (repo / 'tests/vm/debugkernel.py').write_text(
        'import os, time\n'
        'm = os.environ["MARK"]\n'
        'open(m + ".pid", "w").write(str(os.getpid()))\n'
        f'end = time.monotonic() + {WAIT_S}\n'
        'while time.monotonic() < end and not (\n'
        '        os.path.exists(m) and "rest" in open(m).read()):\n'
        '    time.sleep(0.05)\n')
    state = ('def state():\n'
             '    m = os.environ["MARK"]\n'
             '    while not os.path.exists(m + ".pid"):\n'
             '        time.sleep(0.05)\n'
             '    pid = open(m + ".pid").read()\n'
             '    return open(f"/proc/{pid}/stat").read().split()[2]\n')
    (repo / 'tests/test_accuracy.py').write_text(
        'import os, time\nimport pytest\n\npytestmark = pytest.mark.vm\n\n\n'
        + state + '\n\ndef test_solo():\n'
        '    open(os.environ["MARK"], "a").write(f"solo {state()}\\n")\n')
    (repo / 'tests/test_engine.py').write_text(
        'import os, time\nimport pytest\n\npytestmark = pytest.mark.vm\n\n\n'
        + state + '\n\ndef test_rest():\n'
        '    open(os.environ["MARK"], "a").write(f"rest {state()}\\n")\n')
    r, ran = check(repo, CGE_STAGES='style vm debug',
                   CGE_STRESS_FLAVOURS='debug')
    assert r.returncode == 0, r.stdout + r.stderr
    # continued: sleeping or, on a busy host, running; not stopped
    assert ran[:2] == ['ran', 'solo T'] and ran[3:] == ['stress debug'], ran
    assert ran[2] in ('rest S', 'rest R'), ran


def test_interrupted_run_stops_the_background_builds(tmp_path):
    # stopped during the vm stage's solo part, while prebuild.py and a
    # child of it (as make is) still run
    repo = fake_repo(tmp_path)
    vm_stubs(repo)
    (repo / 'tests/test_accuracy.py').write_text(
        'import os, time\nimport pytest\n\npytestmark = pytest.mark.vm\n\n\n'
        'def test_solo():\n'
        '    open(os.environ["MARK"], "a").write("solo\\n")\n'
        '    time.sleep(60)\n')
    # paused as check.sh asks (idle between builds), with a child still
    # running, as a build's make is when the pause comes
    (repo / 'tests/vm/prebuild.py').write_text(
        'import os, subprocess, sys, time\n'
        'c = subprocess.Popen(["sleep", "60"])\n'
        'while not os.path.exists(sys.argv[2]):\n'
        '    time.sleep(0.05)\n'
        'open(sys.argv[2] + ".idle", "w").close()\n'
        'open(os.environ["PIDS"], "w").write(f"{os.getpid()} {c.pid}")\n'
        'time.sleep(60)\n')
    pids = repo / 'pids'
    mark = repo / 'mark'
    e = {k: v for k, v in os.environ.items() if not k.startswith('CGE_')}
    e.update(MARK=str(mark), PIDS=str(pids), CGE_STAGES='vm', CGE_TIER='full')
    # in a process group of its own, stopped whole, as a terminal's ^C or
    # a CI job's end does (the shell runs its trap once pytest has gone)
    p = subprocess.Popen(['/bin/sh', str(repo / 'tests/check.sh')], env=e,
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                         start_new_session=True)
    deadline = time.monotonic() + WAIT_S
    while not (pids.exists() and pids.read_text() and mark.exists() and
               'solo' in mark.read_text()):
        assert time.monotonic() < deadline and p.poll() is None
        time.sleep(0.05)
    os.killpg(p.pid, signal.SIGTERM)
    assert p.wait(timeout=WAIT_S) == 143
    for pid in map(int, pids.read_text().split()):
        while time.monotonic() < deadline:
            try:
                os.kill(pid, 0)
            except ProcessLookupError:
                break
            time.sleep(0.05)
        else:
            raise AssertionError(f'build process {pid} survived')


@pytest.mark.parametrize('stages', ['debug', 'vm debug'])
def test_interrupted_run_stops_the_debug_build(tmp_path, stages):
    # 'vm debug': stopped while the debug stage, beside the vm stage, waits
    # for the build
    repo = fake_repo(tmp_path)
    vm_stubs(repo)
    # the build forks a child, as make does, and both outlive the stress
    (repo / 'tests/vm/debugkernel.py').write_text(
        'import os, subprocess, time\n'
        'c = subprocess.Popen(["sleep", "60"])\n'
        'open(os.environ["PIDS"], "w").write(f"{os.getpid()} {c.pid}")\n'
        'time.sleep(60)\n')
    pids = repo / 'pids'
    e = {k: v for k, v in os.environ.items() if not k.startswith('CGE_')}
    e.update(MARK=str(repo / 'mark'), PIDS=str(pids), CGE_STAGES=stages,
             CGE_TIER='full')
    p = subprocess.Popen(['/bin/sh', str(repo / 'tests/check.sh')], env=e,
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + WAIT_S
    mark = repo / 'mark'
    while not (pids.exists() and pids.read_text()) or (
            stages != 'debug' and not (mark.exists() and
                                       'stress 6.1-rt' in mark.read_text())):
        assert time.monotonic() < deadline and p.poll() is None
        time.sleep(0.05)
    p.terminate()
    assert p.wait(timeout=WAIT_S) == 143
    for pid in map(int, pids.read_text().split()):
        while time.monotonic() < deadline:
            try:
                os.kill(pid, 0)
            except ProcessLookupError:
                break
            time.sleep(0.05)
        else:
            raise AssertionError(f'build process {pid} survived')


STUB = '#!/bin/sh\necho "$(basename "$0") $*" >> "$CALLS"\n'


# apt-get indextargets' lines as deps.sh asks for them (type, suite, URI)
TARGETS = ('deb bookworm-security http://mirror.example/debian-security/\n'
           'deb-src bookworm http://src.mirror.example/debian/\n'
           'deb bookworm-updates http://updates.mirror.example/debian/\n'
           'deb bookworm http://mirror.example/debian/\n')


def deps(tmp_path, codename, qemu, policy='', apt_get=':', want='install',
         targets=TARGETS, env=None):
    """deps.sh with /etc/os-release and its apt source file redirected into
    tmp_path, every package but QEMU installed (dpkg's want: want), QEMU at
    version qemu,
    apt-cache policy printing policy, apt-get indextargets printing targets,
    other apt-get commands running the shell code apt_get and sleep doing
    nothing, CGE_ARCHIVE unset unless env sets it; returns (result, calls,
    source)."""
    b = tmp_path / 'bin'
    b.mkdir()
    os_release = tmp_path / 'os-release'
    os_release.write_text(f'ID=debian\nVERSION_CODENAME={codename}\n')
    src = tmp_path / 'bpo.sources'
    script = (REPO / 'tests/deps.sh').read_text()
    assert '/etc/os-release' in script
    script = script.replace('/etc/os-release', str(os_release)).replace(
        '/etc/apt/sources.list.d/cgroup-energy-bookworm-backports.sources',
        str(src))
    (tmp_path / 'deps.sh').write_text(script)
    stubs = {
        'dpkg-query': 'case "$*" in *qemu-system-x86*) case "$*" in '
                      '*Status*) echo "$WANT ok installed $QV" ;; '
                      '*) echo "$QV" ;; esac ;; '
                      '*) echo "$WANT ok installed" ;; esac',
        'id': 'echo 0',
        'apt-get': 'case "$1" in indextargets) printf "%s" "$TARGETS"; '
                   f'exit 0 ;; esac\n{apt_get}',
        'sleep': ':',
        'apt-cache': 'printf "%s\\n" "$POLICY"',
    }
    for name, body in stubs.items():
        (b / name).write_text(STUB + body + '\n')
        (b / name).chmod(0o755)
    calls = tmp_path / 'calls'
    environ = dict(os.environ, PATH=f'{b}:{os.environ["PATH"]}', QV=qemu,
                   POLICY=policy, CALLS=str(calls), WANT=want,
                   TARGETS=targets)
    environ.pop('CGE_ARCHIVE', None)
    environ.update(env or {})
    r = subprocess.run(['/bin/sh', str(tmp_path / 'deps.sh')], env=environ,
                       capture_output=True, text=True, timeout=30)
    return r, (calls.read_text().splitlines() if calls.exists() else []), src


BPO_POLICY = (' 100 http://mirror.example/debian bookworm-backports/main '
              'amd64 Packages\n     release o=Debian Backports,'
              'a=oldstable-backports,n=bookworm-backports,l=Debian Backports,'
              'c=main,b=amd64')


def test_deps_held_packages_count_as_installed(tmp_path):
    # apt-mark hold: "hold ok installed"; nothing to install, apt not run
    r, calls, src = deps(tmp_path, 'bookworm', '1:10.0.2+ds-2+deb13u1~bpo12+1',
                         want='hold')
    assert r.returncode == 0, r.stderr
    assert not [c for c in calls if c.startswith("apt")], calls


def test_deps_old_qemu_elsewhere_refused(tmp_path):
    r, calls, src = deps(tmp_path, 'trixie', '1:7.2+dfsg-7')
    assert r.returncode == 1
    assert 'QEMU >= 10.0 is needed' in r.stderr
    assert 'tests/vm/repro/mttcg-int3/' in r.stderr
    assert not [c for c in calls if c.startswith('apt')]
    assert not src.exists()


def test_deps_bookworm_adds_backports_when_policy_lacks_it(tmp_path):
    r, calls, src = deps(tmp_path, 'bookworm', '1:7.2+dfsg-7',
                         policy=BPO_POLICY.replace('bookworm-backports',
                                                   'bookworm-updates'))
    # The stubbed install leaves 7.2: deps.sh says so and fails.
    assert r.returncode == 1 and 'QEMU >= 10.0 is needed' in r.stderr
    # the archive of apt's first deb source for bookworm, without the
    # trailing / that apt adds
    assert 'URIs: http://mirror.example/debian\nSuites: bookworm-backports\n' \
        in src.read_text()
    assert calls.count('apt-get update -q') == 2
    assert any('-t bookworm-backports qemu-system-x86' in c for c in calls)


@pytest.mark.parametrize('targets, env, want', [
    # no source for bookworm itself: its -updates' archive
    (TARGETS.replace('deb bookworm ', 'deb-src bookworm '), None,
     'http://updates.mirror.example/debian'),
    # CGE_ARCHIVE comes before apt's sources
    (TARGETS, {'CGE_ARCHIVE': 'http://other.example/debian'},
     'http://other.example/debian'),
])
def test_deps_backports_source_takes_the_archive(tmp_path, targets, env,
                                                 want):
    policy = BPO_POLICY.replace('bookworm-backports', 'bookworm-updates')
    r, calls, src = deps(tmp_path, 'bookworm', '1:7.2+dfsg-7', policy=policy,
                         targets=targets, env=env)
    assert f'URIs: {want}\n' in src.read_text()


def test_deps_without_an_archive_source_adds_none(tmp_path):
    # only the security archive and a third-party suite: nothing to add
    # bookworm-backports from, and so no QEMU 10.0
    policy = BPO_POLICY.replace('bookworm-backports', 'bookworm-updates')
    targets = ('deb bookworm-security http://mirror.example/debian-security/\n'
               'deb stable http://vendor.example/apt/\n')
    r, calls, src = deps(tmp_path, 'bookworm', '1:7.2+dfsg-7', policy=policy,
                         targets=targets)
    assert r.returncode == 1
    assert "apt's sources name no Debian archive for bookworm" in r.stderr
    assert 'set CGE_ARCHIVE' in r.stderr
    assert not src.exists()
    assert calls.count('apt-get update -q') == 1
    assert not [c for c in calls if c.startswith('apt-get install')]


def test_deps_bookworm_keeps_existing_backports(tmp_path):
    r, calls, src = deps(tmp_path, 'bookworm', '1:7.2+dfsg-7',
                         policy=BPO_POLICY)
    # the stubbed install leaves 7.2, as above
    assert r.returncode == 1 and 'QEMU >= 10.0 is needed' in r.stderr
    assert not src.exists()
    assert calls.count('apt-get update -q') == 1
    assert any('-t bookworm-backports qemu-system-x86' in c for c in calls)


LOCKED = ('case "$1" in update) n=$(grep -c "^apt-get update" "$CALLS"); '
          '[ "$n" -gt {n} ] && exit 0; echo "E: Could not get lock '
          '/var/lib/apt/lists/lock. It is held by process 42 (apt-get)" >&2; '
          'exit 100 ;; esac')


def test_deps_waits_for_apts_lists_lock(tmp_path):
    # apt-daily holds the lists lock for the first two updates
    r, calls, _ = deps(tmp_path, 'bookworm', '1:7.2+dfsg-7',
                       policy=BPO_POLICY, apt_get=LOCKED.replace('{n}', '2'))
    assert calls.count('apt-get update -q') == 3
    assert calls.count('sleep 5') == 2
    assert r.stderr.count('waiting up to 120 s') == 1
    installs = [c for c in calls if c.startswith('apt-get install')]
    assert installs and all('DPkg::Lock::Timeout=120' in c for c in installs)


def test_deps_gives_up_on_a_lock_held_too_long(tmp_path):
    r, calls, _ = deps(tmp_path, 'bookworm', '1:7.2+dfsg-7',
                       policy=BPO_POLICY, apt_get=LOCKED.replace('{n}', '99'))
    assert r.returncode != 0
    assert calls.count('sleep 5') == 24            # 120 s
    assert 'Could not get lock' in r.stderr
    assert not [c for c in calls if c.startswith('apt-get install')]


def test_deps_other_update_failure_is_not_retried(tmp_path):
    r, calls, _ = deps(tmp_path, 'bookworm', '1:7.2+dfsg-7', policy=BPO_POLICY,
                       apt_get='echo "E: The repository is not signed" >&2; '
                               'exit 100')
    assert r.returncode != 0 and 'not signed' in r.stderr
    assert calls.count('apt-get update -q') == 1 and 'sleep 5' not in calls


def test_missing_dependency_fails_in_make_check(tmp_path):
    """check.sh sets CGE_CHECK=1: a test whose tool is missing fails there
    and is skipped elsewhere (tests/need.py)."""
    assert '\nCGE_CHECK=1\nexport CGE_CHECK\n' in (
        REPO / 'tests/check.sh').read_text()
    t = tmp_path / 'test_needs.py'
    t.write_text('import need\n\n\ndef test_x():\n'
                 '    need.need("cge-no-such-tool", "nothing")\n')
    for check, want in (('1', '1 failed'), ('', '1 skipped')):
        r = subprocess.run(['/usr/bin/python3', '-m', 'pytest', '-q', '-p',
                            'no:cacheprovider', str(t)], cwd=tmp_path,
                           env=dict(os.environ, CGE_CHECK=check,
                                    PYTHONPATH=str(REPO / 'tests')),
                           capture_output=True, text=True)
        assert want in r.stdout, (check, r.stdout)
        if check:
            assert 'cge-no-such-tool missing (apt-get install nothing)' \
                in r.stdout, r.stdout


@pytest.mark.parametrize('tier, stages', [
    ('full', {'deps', 'build', 'style', 'host', 'kunit', 'sweep', 'vm',
              'server', 'debug', 'debug-wait', 'prebuild-wait'}),
    ('gate', {'deep', 'deps', 'build', 'style', 'host', 'kunit', 'sweep',
              'vm', 'server', 'prebuild-wait'})])
def test_default_stages_of_each_tier(tmp_path, tier, stages):
    """Without CGE_STAGES every stage of the tier runs: the stubbed tree
    has no deps.sh, Makefile or KUnit test, so those stages fail; the
    stages that ran are what counts. The gate has no debug stage and no
    solo part: its lane (server first) starts with the vm stage."""
    repo = fake_repo(tmp_path)
    vm_stubs(repo)
    lane_stubs(repo)
    r, ran = check(repo, CGE_STRESS_FLAVOURS='debug', CGE_TIER=tier)
    assert {'solo', 'host', 'sweep', 'server', 'rest end'} <= set(ran), ran
    assert ('stress debug' in ran) == (tier == 'full'), ran
    if tier == 'gate':
        assert ran[0] == 'deep verify', ran
        lane = [x for x in ran if x in ('server', 'host', 'sweep')]
        assert lane == ['server', 'host', 'sweep'], ran
        assert 'background builds pause' not in r.stdout
    else:
        assert ran.index('solo') < ran.index('host'), ran
    tsv, doc = timings(repo)
    assert set(tsv) == stages, tsv
    # the host's CPU over the run, from /proc/stat
    cpu = doc['cpu']
    assert cpu['cores'] == os.cpu_count(), cpu
    assert 0 <= cpu['steal_fraction'] <= cpu['busy_fraction'] + \
        cpu['steal_fraction'] <= 1, cpu
