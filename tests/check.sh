#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# make check: install what is needed, build, run every test stage, print
# each stage's duration and one closing line. Exit status non-zero if any
# stage failed or the closing summary (timings.json) could not be written.
#
# Stages: deps, build, style, host (pytest, no VM), kunit (UML), vm (QEMU:
# the integration suite on every kernel of the matrix) and debug (the stress
# suite, lighter, on 6.1-rt, then on the KASAN/lockdep kernel, whose build
# it waits for only after 6.1-rt has run).
# CGE_STAGES="host vm" runs a subset; an unknown stage name, or none, stops
# the script with exit status 2 before any stage runs. CGE_CACHE (default
# /var/cache/cgroup-energy) keeps downloads and builds between runs.
# CGE_FLAVOURS (default "all": 6.1 6.1-rt 6.12 6.12-rt sid) selects the
# kernels of the host and vm stages, CGE_STRESS_FLAVOURS (default
# "debug 6.1-rt"; blank- or comma-separated) the debug stage's.  The debug
# kernel (tests/vm/debugkernel.py, about 25 CPU-minutes the first time) is
# built in the background at nice 19 from the end of the deps stage on, so it
# overlaps the other stages; an interrupted run stops it.
# Every stage's duration is printed at the end and kept, with how long the
# debug stage waited for that build and the build's exit status
# ("debug-wait"; a failed build fails the debug stage), in
# .build/check/timings.json.
set -u

ALL_STAGES="deps build style host kunit vm debug"
# CGE_STAGES split on blanks, without expanding wildcards.
STAGES=""
unknown=""
set -f
for s in ${CGE_STAGES:-$ALL_STAGES}; do
	case " $ALL_STAGES " in
	*" $s "*) STAGES="$STAGES $s" ;;
	*) unknown="$unknown $s" ;;
	esac
done
set +f
if [ -n "$unknown" ]; then
	echo "check: unknown stage(s) in CGE_STAGES:$unknown;" \
		"valid stages: $ALL_STAGES" >&2
	exit 2
fi
if [ -z "$STAGES" ]; then
	echo "check: CGE_STAGES names no stage; valid stages: $ALL_STAGES" >&2
	exit 2
fi

REPO=$(cd "$(dirname "$0")/.." && pwd)
PY=/usr/bin/python3
CGE_FLAVOURS=${CGE_FLAVOURS:-all}
export CGE_FLAVOURS
# A test whose tool is missing fails here instead of skipping (tests/need.py):
# the deps stage installed every one.
CGE_CHECK=1
export CGE_CHECK
# Blank- or comma-separated, as tests/test_stress.py reads it.
STRESS_FLAVOURS=$(echo "${CGE_STRESS_FLAVOURS:-debug 6.1-rt}" | tr , ' ')
OUT=$REPO/.build/check
mkdir -p "$OUT"
rm -f "$OUT"/*.xml "$OUT"/timings.tsv "$OUT"/timings.json
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
	printf '%s\t%s\t%s\n' "$name" "$dt" "$rc" >>"$OUT/timings.tsv"
	summary="$summary$(printf '%-6s %5ss  %s' "$name" "$dt" \
		"$([ $rc = 0 ] && echo ok || echo "FAILED (exit $rc)")")
"
}

# Not "name": stage() still needs its own after the stage's command (sh
# functions share their variables).
pytest_stage() { # pytest_stage XMLNAME ARGS...
	xml=$OUT/$1.xml
	shift
	$PY -m pytest -p no:cacheprovider -q -rfEs --junitxml="$xml" "$@"
}

selected() { case " $STAGES " in *" $1 "*) return 0 ;; esac; return 1; }

stress_has_debug() {
	for f in $STRESS_FLAVOURS; do [ "$f" = debug ] && return 0; done
	return 1
}

# The debug kernel takes long to build: start it now, in the background.
debug_bg() {
	selected debug || return 0
	stress_has_debug || return 0
	echo "check: building the debug kernel in the background" \
		"(log: $OUT/debugkernel.log)"
	# its own process group, so that an interrupted run stops all of it
	setsid nice -n 19 $PY tests/vm/debugkernel.py \
		>"$OUT/debugkernel.log" 2>&1 &
	DEBUG_BG=$!
}

vm_stage() {
	pytest_stage vm -m vm \
		--ignore=tests/test_stress.py tests
}

debug_stage() {
	# The stock kernels' stress runs first, while the debug kernel may
	# still be building; then the debug kernel's.
	stock=""
	for f in $STRESS_FLAVOURS; do
		[ "$f" = debug ] || stock="${stock:+$stock }$f"
	done
	drc=0
	if [ -n "$stock" ]; then
		CGE_STRESS_FLAVOURS="$stock" pytest_stage debug-stock \
			tests/test_stress.py || drc=1
	fi
	stress_has_debug || return $drc
	if [ -n "${DEBUG_BG:-}" ]; then
		echo "check: waiting for the debug kernel build"
		w0=$(now)
		wait "$DEBUG_BG"
		wrc=$?
		DEBUG_BG=""
		printf 'debug-wait\t%s\t%s\n' "$(( $(now) - w0 ))" "$wrc" \
			>>"$OUT/timings.tsv"
		# A failed build fails the stage; the debug kernel's stress is
		# not run (it would build the kernel again, in the foreground).
		if [ "$wrc" != 0 ]; then
			echo "check: the debug kernel build failed (exit $wrc);" \
				"see $OUT/debugkernel.log" >&2
			return 1
		fi
	fi
	CGE_STRESS_FLAVOURS=debug pytest_stage debug tests/test_stress.py || drc=1
	return $drc
}

CACHE=${CGE_CACHE:-/var/cache/cgroup-energy}
CACHE_EMPTY=$([ -n "$(ls -A "$CACHE" 2>/dev/null)" ] && echo 0 || echo 1)
DEBUG_BG=""
trap '[ -z "$DEBUG_BG" ] || kill -TERM "-$DEBUG_BG" 2>/dev/null' EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
T0=$(now)
# what is tested: the tree at the start (an edit during the run is not)
DESCRIBE=$(git describe --always --dirty 2>/dev/null)
stage deps sh tests/deps.sh
debug_bg
stage build make --no-print-directory tool
stage style sh tests/style.sh
stage host pytest_stage host -m "not vm" --ignore=tests/test_kunit.py tests \
	bench/validate_selftest.py
stage kunit pytest_stage kunit tests/test_kunit.py
stage vm vm_stage
stage debug debug_stage

echo "==== check: durations"
printf '%s' "$summary"
$PY - "$OUT" "$(( $(now) - T0 ))" "$DESCRIBE" \
	"$CACHE" "$CACHE_EMPTY" <<'PYEOF'
import glob, json, sys, time
import xml.etree.ElementTree as ET
out, total, commit = sys.argv[1], int(sys.argv[2]), sys.argv[3]
cache = {'path': sys.argv[4], 'empty_at_start': sys.argv[5] == '1'}
stages = {}
for line in open(out + '/timings.tsv'):
    name, secs, rc = line.split('\t')
    stages[name] = {'seconds': int(secs), 'rc': int(rc)}
t = f = s = 0
failed = []
for x in sorted(glob.glob(sys.argv[1] + '/*.xml')):
    root = ET.parse(x).getroot()
    for ts in root.iter('testsuite'):
        n = int(ts.get('tests', 0))
        bad = int(ts.get('failures', 0)) + int(ts.get('errors', 0))
        sk = int(ts.get('skipped', 0))
        t += n - bad - sk
        f += bad
        s += sk
    # junit's classname::name (tests.test_x::test_y[6.1]), once per test
    # even when it both fails and errors in teardown
    for tc in root.iter('testcase'):
        if tc.find('failure') is not None or tc.find('error') is not None:
            tid = f"{tc.get('classname')}::{tc.get('name')}"
            if tid not in failed:
                failed.append(tid)
doc = {'commit': commit, 'finished': time.strftime('%Y-%m-%dT%H:%M:%S%z'),
       'total_seconds': total, 'cache': cache, 'stages': stages,
       'tests': {'passed': t, 'failed': f, 'skipped': s,
                 'failed_ids': failed}}
with open(out + '/timings.json', 'w') as fh:
    fh.write(json.dumps(doc, indent=1) + '\n')
print(f'check: total {total // 60} min {total % 60} s '
      f'(stage timings: {out}/timings.json)')
print(f'check: {t} passed, {f} failed, {s} skipped')
PYEOF
src=$?
# The summary is part of the result: if it fails, check.sh fails.
if [ $src != 0 ]; then
	echo "check: the summary failed (exit $src): $OUT/timings.json" \
		"may be missing or incomplete" >&2
	failed="$failed summary"
fi
if [ -n "$failed" ]; then
	echo "check: FAILED stages:$failed"
	exit 1
fi
