#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# make check: install what is needed, build, run every test stage, print
# each stage's duration and one closing line. Exit status non-zero if any
# stage failed.
#
# Stages: deps, build, style, host (pytest, no VM), kunit (UML), vm (QEMU).
# CGE_STAGES="host vm" runs a subset; CGE_CACHE (default
# /var/cache/cgroup-energy) keeps downloads and builds between runs.
set -u

REPO=$(cd "$(dirname "$0")/.." && pwd)
PY=/usr/bin/python3
STAGES=${CGE_STAGES:-deps build style host kunit vm}
OUT=$REPO/.build/check
mkdir -p "$OUT"
rm -f "$OUT"/*.xml
cd "$REPO" || exit 1

failed=""
summary=""
now() { date +%s; }

stage() { # stage NAME CMD...
	name=$1
	shift
	case " $STAGES " in *" $name "*) ;; *) return 0 ;; esac
	echo "==== check: stage $name"
	t0=$(now)
	"$@"
	rc=$?
	dt=$(( $(now) - t0 ))
	[ $rc = 0 ] || failed="$failed $name"
	summary="$summary$(printf '%-6s %5ss  %s' "$name" "$dt" \
		"$([ $rc = 0 ] && echo ok || echo "FAILED (exit $rc)")")
"
}

pytest_stage() { # pytest_stage NAME ARGS...
	name=$1
	shift
	$PY -m pytest -p no:cacheprovider -q -rfEs \
		--junitxml="$OUT/$name.xml" "$@"
}

stage deps sh tests/deps.sh
stage build make --no-print-directory tool
stage style sh tests/style.sh
stage host pytest_stage host -m "not vm" --ignore=tests/test_kunit.py tests
stage kunit pytest_stage kunit tests/test_kunit.py
stage vm pytest_stage vm -m vm tests

echo "==== check: durations"
printf '%s' "$summary"
$PY - "$OUT" <<'PYEOF'
import sys, glob
import xml.etree.ElementTree as ET
t = f = s = 0
for x in glob.glob(sys.argv[1] + '/*.xml'):
    for ts in ET.parse(x).getroot().iter('testsuite'):
        n = int(ts.get('tests', 0))
        bad = int(ts.get('failures', 0)) + int(ts.get('errors', 0))
        sk = int(ts.get('skipped', 0))
        t += n - bad - sk
        f += bad
        s += sk
print(f'check: {t} passed, {f} failed, {s} skipped')
PYEOF
if [ -n "$failed" ]; then
	echo "check: FAILED stages:$failed"
	exit 1
fi
