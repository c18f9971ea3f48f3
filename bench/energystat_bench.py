#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""Time energystat over a fixture tree of many cgroups.

Builds a tree of --cgroups cgroups (default 10,000) in a temporary directory
(or --dir), runs energystat --runs times per output format (table, --json,
--prometheus), and prints the median, min and max wall time of each. Exits 1
when a median is over --limit seconds (default 1: the target for one table of
10,000 cgroups).

  /usr/bin/python3 bench/energystat_bench.py [--cgroups N] [--runs N]
"""

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(REPO, "tests"))
from fixtree import build_big  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--cgroups", type=int, default=10000)
    ap.add_argument("--runs", type=int, default=7)
    ap.add_argument("--limit", type=float, default=1.0)
    ap.add_argument("--dir", help="build the tree here (kept)")
    ap.add_argument("--tool", default=os.path.join(REPO, "userspace", "energystat"))
    a = ap.parse_args()

    if not os.environ.get("ENERGYSTAT_NO_BUILD"):
        subprocess.run(["make", "-s", "-C", os.path.join(REPO, "userspace")],
                       check=True)
    top = a.dir or tempfile.mkdtemp(prefix="energystat-bench-")
    try:
        t0 = time.monotonic()
        tree = build_big(os.path.join(top, "tree"), a.cgroups)
        print(f"fixture: {a.cgroups} cgroups in {tree.path} "
              f"({time.monotonic() - t0:.2f} s to build)")
        slow = False
        for name, args in (("table", []), ("json", ["--json"]),
                           ("prometheus", ["--prometheus"])):
            times = []
            for _ in range(a.runs):
                t0 = time.monotonic()
                r = subprocess.run([a.tool, "--root", tree.path, *args],
                                   stdout=subprocess.DEVNULL)
                times.append(time.monotonic() - t0)
                if r.returncode != 0:
                    sys.exit(f"energystat exited {r.returncode}")
            med = statistics.median(times)
            slow |= med > a.limit
            print(f"{name:11s} median {med * 1000:7.1f} ms  min "
                  f"{min(times) * 1000:7.1f} ms  max {max(times) * 1000:7.1f} ms"
                  f"  ({a.runs} runs)")
        if slow:
            print(f"FAIL: a median is over {a.limit} s")
            return 1
        print(f"ok: every median under {a.limit} s")
        return 0
    finally:
        if not a.dir:
            shutil.rmtree(top)


if __name__ == "__main__":
    sys.exit(main())
