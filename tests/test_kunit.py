# SPDX-License-Identifier: GPL-2.0
"""KUnit suites of the module's pure-logic files, one pytest test per case.

tests/kunit/run.sh builds a UML kernel with the suites (kunit.py from
Debian's linux-source-6.1, cached under $CGE_CACHE) and runs them once per
session; each KUnit case found in its JSON output becomes a pytest test.
A build failure, a crash, a missing suite or zero cases fail: never skip.

Run with: /usr/bin/python3 -m pytest -q tests/test_kunit.py  (make kunit)
The full log is left in .build/kunit/kunit.log.
"""
import functools
import json
import os
import re
import shutil
import subprocess
import tempfile
import time

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RUNNER = os.path.join(REPO, "tests", "kunit", "run.sh")
OUT = os.path.join(REPO, ".build", "kunit")
LOG = os.path.join(OUT, "kunit.log")
JSON = os.path.join(OUT, "results.json")
TIMEOUT = int(os.environ.get("CGE_KUNIT_TIMEOUT", "3600"))


def _expected_suites():
    """Suite names declared in tests/kunit/*_test.c."""
    names = []
    kdir = os.path.join(REPO, "tests", "kunit")
    for f in sorted(os.listdir(kdir)):
        if f.endswith("_test.c"):
            with open(os.path.join(kdir, f), encoding="utf-8") as fh:
                names += re.findall(r'\.name\s*=\s*"([^"]+)"', fh.read())
    return names


def _flatten(group, prefix=""):
    """(name, status) of every leaf case of a kunit_json group."""
    cases = []
    for sub in group.get("sub_groups", []):
        cases += _flatten(sub, prefix + sub["name"] + ".")
    for case in group.get("test_cases", []):
        cases.append((prefix + case["name"], case["status"]))
    return cases


@functools.lru_cache(maxsize=None)
def run_kunit():
    """Build and run the suites once; return (rc, cases, log tail, secs)."""
    os.makedirs(OUT, exist_ok=True)
    # per-run files, so that concurrent runs in one clone do not mix
    tmp = tempfile.mkdtemp(prefix=".run.", dir=OUT)
    log_path = os.path.join(tmp, "kunit.log")
    json_path = os.path.join(tmp, "results.json")
    start = time.monotonic()
    try:
        with open(log_path, "w", encoding="utf-8") as log:
            rc = subprocess.run(["sh", RUNNER, "--json", json_path], cwd=REPO,
                                stdout=log, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL, timeout=TIMEOUT,
                                check=False).returncode
    except subprocess.TimeoutExpired:
        rc = "timeout after %ds" % TIMEOUT
    secs = time.monotonic() - start
    cases = []
    if os.path.exists(json_path):
        try:
            with open(json_path, encoding="utf-8") as fh:
                cases = _flatten(json.load(fh))
        except (OSError, ValueError) as e:
            cases = []
            rc = "unreadable JSON: %s" % e
    with open(log_path, encoding="utf-8", errors="replace") as fh:
        tail = "".join(fh.readlines()[-60:])
    os.replace(log_path, LOG)
    if os.path.exists(json_path):
        os.replace(json_path, JSON)
    elif os.path.exists(JSON):
        os.unlink(JSON)         # no stale results next to a failed run's log
    shutil.rmtree(tmp, ignore_errors=True)
    return rc, tuple(cases), tail, secs


def pytest_generate_tests(metafunc):
    if "kunit_case" in metafunc.fixturenames:
        _, cases, _, _ = run_kunit()
        # nothing found: one failing entry, so the run fails, never skips
        params = list(cases) or [("no-kunit-cases", "MISSING")]
        metafunc.parametrize("kunit_case", params,
                             ids=[name for name, _ in params])


def test_kunit_run(capsys):
    """kunit.py built the kernel, ran it, and every suite reported cases."""
    rc, cases, tail, secs = run_kunit()
    with capsys.disabled():
        print("\nkunit: %d cases in %.0f s (log: %s)" % (len(cases), secs, LOG))
    assert rc == 0, "kunit.py failed (%s); log tail:\n%s" % (rc, tail)
    assert cases, "kunit.py reported zero cases; log tail:\n" + tail
    suites = {name.split(".")[0] for name, _ in cases}
    missing = [s for s in _expected_suites() if s not in suites]
    assert not missing, "suites not run: %s; log tail:\n%s" % (missing, tail)


def test_kunit_case(kunit_case):
    """One KUnit case: PASS only (SKIP counts as a failure here)."""
    name, status = kunit_case
    if status != "PASS":
        _, _, tail, _ = run_kunit()
        pytest.fail("KUnit case %s: %s; log tail:\n%s" % (name, status, tail))
