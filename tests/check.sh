#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# make check (the gate) and make check-full (the deep tier): install what is
# needed, build, run the test stages, print each stage's duration and one
# closing line. Exit status non-zero if any stage failed, any test was
# skipped, or the closing summary (timings.json) could not be written.
#
# CGE_TIER=gate (make check; the default): only checks whose outcome a
# correct module decides, whatever the host's load (tests/conftest.py
# deselects the rest): stages deep (a passing deep record for this module's
# hash: tests/deep.py), deps, build, style, kunit, then the vm stage beside
# a lane of server, host and sweep. CGE_TIER=full (make check-full): every
# test on every kernel, the timing-bound ones in the vm stage's solo part,
# and the debug stage; it appends its record to tests/results/deep.jsonl.
#
# Stages: deep, deps, build, style, host (pytest, no VM), kunit (UML), sweep
# (the module built against every packaged kernel's headers, no boot:
# tests/test_sweep.py), vm (QEMU: the integration suite on every kernel of
# the matrix), server (the Debian packages installed on a booted Debian 12
# server: tests/test_server.py) and debug (the stress suite, lighter, on
# 6.1-rt, then on the KASAN/lockdep kernel, whose build it waits for only
# after 6.1-rt has run).
# In the deep tier, the host, sweep, server and debug stages run beside the
# vm stage's second part, in that order, at nice 10 (the lane: check.sh
# --lane), after its first part (VM_SOLO: the throughput, nohz, calibration
# and scrape-timing tests) ran with the background builds paused (bg_pause):
# the timing-bound figures assume a quiet host. In the gate, whose checks
# do not depend on the host's load, the lane (server, host, sweep) runs at
# nice 0 from the start of the vm stage.
# CGE_OVERLAP=0, or a run without the vm stage, runs the stages one after
# another.
# CGE_STAGES="host vm" runs a subset (default: the tier's); an unknown
# stage name, or none, stops the script with exit status 2 before any stage
# runs. CGE_CACHE (default /var/cache/cgroup-energy) keeps downloads and
# builds between runs.
# CGE_FLAVOURS (default "all": 5.10 6.1 6.1-rt 6.12 6.12-rt sid experimental)
# selects the kernels of the host and vm stages, CGE_STRESS_FLAVOURS (default
# "debug 6.1-rt"; blank- or comma-separated) the debug stage's.  The debug
# kernel (tests/vm/debugkernel.py) is built in the background at nice 19
# from the end of the deps stage on, so it overlaps the other stages; an
# interrupted run stops it. So are the vm stage's modules
# (tests/vm/prebuild.py: prebuild_bg), which the vm stage waits for before
# its second part. Both pause while the vm stage's solo part runs.
# Every stage's duration is printed at the end and kept, with how long the
# debug stage waited for that build and the build's exit status
# ("debug-wait"; a failed build fails the debug stage), and each test's
# duration from the JUnit XML, in .build/check/timings.json.
set -u

ALL_STAGES="deep deps build style host kunit sweep vm server debug"
CGE_TIER=${CGE_TIER:-gate}
export CGE_TIER
case $CGE_TIER in
gate)
	DEFAULT_STAGES="deep deps build style host kunit sweep vm server"
	# beside the vm stage, in this order: the longest first
	LANE_STAGES="server host sweep"
	LANE_NICE=0
	;;
full)
	DEFAULT_STAGES="deps build style host kunit sweep vm server debug"
	# beside the vm stage's second part, in this order
	LANE_STAGES="host sweep server debug"
	LANE_NICE=10
	;;
*)
	echo "check: CGE_TIER=$CGE_TIER: gate (make check) or full" \
		"(make check-full)" >&2
	exit 2
	;;
esac
# CGE_STAGES split on blanks, without expanding wildcards.
STAGES=""
unknown=""
set -f
for s in ${CGE_STAGES:-$DEFAULT_STAGES}; do
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
case " $STAGES " in
*" debug "*)
	if [ "$CGE_TIER" = gate ]; then
		echo "check: the debug stage is the deep tier's:" \
			"CGE_TIER=full (make check-full)" >&2
		exit 2
	fi
	;;
esac
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
# while it exists, prebuild.py starts no build (bg_pause)
PAUSE=$OUT/prebuild.pause
# each guest boot's line (tests/vm/harness.py), for the closing summary
CGE_BOOT_LOG=$OUT/boots.jsonl
export CGE_BOOT_LOG
cd "$REPO" || exit 1
# The vm stage's tests that run with nothing beside them (the background
# builds paused: bg_pause): their figures (throughput
# ratios, per-interval times on nohz_full CPUs, recovered power, scrape
# timing) depend on the host's speed.
# The gate has none: its checks do not depend on the host's load.
VM_SOLO="tests/test_accuracy.py tests/test_bench.py tests/test_calibrate_emu.py
	tests/test_prometheus.py"
[ "$CGE_TIER" = full ] || VM_SOLO=""
# The vm stage's tests whose checks are outputs and not timing (the harness's
# own, the DKMS install): with a lane, they run in it, after its
# sweep stage and before its debug stage ("vm-lane" in the timings), so that
# they leave the vm stage's second part, make check's longest path; without
# one, in that part.
VM_LANE="tests/test_harness.py tests/test_install.py"

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
	record "$name" "$(( $(now) - t0 ))" "$rc"
}

record() { # record NAME SECONDS RC: a stage's line in timings and summary
	[ "$3" = 0 ] || failed="$failed $1"
	printf '%s\t%s\t%s\n' "$1" "$2" "$3" >>"$TSV"
	summary="$summary$(printf '%-6s %5ss  %s' "$1" "$2" \
		"$([ "$3" = 0 ] && echo ok || echo "FAILED (exit $3)")")
"
}

# Not "name": stage() still needs its own after the stage's command (sh
# functions share their variables).
pytest_stage() { # pytest_stage XMLNAME ARGS...
	xml=$OUT/$1.xml
	shift
	$PY -m pytest -p no:cacheprovider -q -rfEs --junitxml="$xml" "$@"
}

# PID runs (not ended, nor a zombie: an ended child stays one until waited for)
running() {
	[ "$(cut -d' ' -f3 "/proc/$1/stat" 2>/dev/null)" != Z ] &&
		kill -0 "$1" 2>/dev/null
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
	# its own process group, so that an interrupted run stops all of it;
	# its exit status in a file, which the debug stage reads (also when
	# it runs beside the vm stage, in another process)
	rm -f "$OUT/debugkernel.rc"
	# shellcheck disable=SC2016 # expanded by the inner sh
	# (setsid makes a new session, so a new scheduler autogroup, where
	# nice counts only against the group's own processes: the group's
	# nice is set too)
	setsid nice -n 19 sh -c 'echo 19 2>/dev/null >/proc/self/autogroup
		"$0" tests/vm/debugkernel.py; echo $? >"$1"' \
		"$PY" "$OUT/debugkernel.rc" >"$OUT/debugkernel.log" 2>&1 &
	DEBUG_BG=$!
}

# The vm stage's modules, built in the background at nice 19 from the end
# of the deps stage on (tests/vm/prebuild.py), beside the stages before the
# vm stage, paused while its solo part runs, then at nice 0 beside the
# lane; the fixtures that ask for one being built wait for it.
prebuild_bg() {
	selected vm || return 0
	echo "check: building the vm stage's modules in the background" \
		"(log: $OUT/prebuild.log)"
	rm -f "$PAUSE" "$PAUSE.idle"
	# shellcheck disable=SC2016 # expanded by the inner sh
	setsid nice -n 19 sh -c 'echo 19 2>/dev/null >/proc/self/autogroup
		exec "$0" tests/vm/prebuild.py --pause "$2" "$1"' \
		"$PY" "$CGE_FLAVOURS" "$PAUSE" >"$OUT/prebuild.log" 2>&1 &
	PREBUILD_BG=$!
}

# The background builds pause while the vm stage's solo part runs: its
# figures assume nothing else on the host. At nice 19 beside it, the
# builds still took the CPU from its guests' vCPUs for a time slice at a
# time: in the run of f82ff72, 6.1-rt's sampler stamped two sample ends
# 6 ms after it had drained the tickless CPU (test_accuracy's intervals
# 106/94 ms for a loop charged 100/100), and 6.12-rt's tickless CPU
# scheduled 8-19 times in every interval.
# The debug kernel build, which no vm test needs, is stopped (SIGSTOP) at
# once, with a guard in a session of its own that continues it if this
# shell ends without its EXIT trap (SIGKILL); prebuild.py starts no build
# while PAUSE exists, and the build under way finishes first (it holds a
# module directory's lock, which a solo test's fixture may wait for).
bg_pause() {
	if [ -n "${DEBUG_BG:-}" ]; then
		kill -STOP "-$DEBUG_BG" 2>/dev/null
		# shellcheck disable=SC2016 # expanded by the inner sh
		setsid sh -c 'while kill -0 "$0" 2>/dev/null; do sleep 1; done
			kill -CONT "-$1" 2>/dev/null' "$$" "$DEBUG_BG" \
			</dev/null >/dev/null 2>&1 &
		CONT_GUARD=$!
	fi
	[ -n "${PREBUILD_BG:-}" ] || return 0
	p0=$(now)
	: >"$PAUSE"
	while [ ! -e "$PAUSE.idle" ] && running "$PREBUILD_BG"; do
		sleep 1
	done
	echo "check: the background builds pause for the solo part" \
		"(waited $(( $(now) - p0 )) s for the build under way)"
}

# After the solo part (or in its place): the builds go on, the vm stage's
# at nice 0 (group and autogroup), as the vm stage's second part waits for
# them beside the lane.
bg_resume() {
	if [ -n "${DEBUG_BG:-}" ]; then
		kill -CONT "-$DEBUG_BG" 2>/dev/null
		[ -z "${CONT_GUARD:-}" ] || kill "$CONT_GUARD" 2>/dev/null
		CONT_GUARD=""
	fi
	[ -n "${PREBUILD_BG:-}" ] || return 0
	renice --priority 0 -g "$PREBUILD_BG" >/dev/null 2>&1
	echo 0 2>/dev/null >"/proc/$PREBUILD_BG/autogroup"
	rm -f "$PAUSE" "$PAUSE.idle"
}

# Before the vm stage's second part, beside the lane, whose nice 10 (deep tier) leaves
# the builds, reniced to 0 (bg_resume), nine tenths of the host. How
# long it waited and the builds' exit status are kept ("prebuild-wait"); a
# build that failed fails the tests that need it, which build it again.
prebuild_wait() {
	[ -n "${PREBUILD_BG:-}" ] || return 0
	w0=$(now)
	wait "$PREBUILD_BG"
	prc=$?
	PREBUILD_BG=""
	printf 'prebuild-wait\t%s\t%s\n' "$(( $(now) - w0 ))" "$prc" >>"$TSV"
	echo "check: the background builds: $(tail -1 "$OUT/prebuild.log")" \
		"(exit $prc, waited $(( $(now) - w0 )) s)"
}

vm_stage() {
	vrc=0
	solo=""
	ignore=""
	for m in $VM_SOLO; do
		[ -e "$m" ] || continue
		solo="$solo $m"
		ignore="$ignore --ignore=$m"
	done
	if [ -n "$solo" ]; then
		bg_pause
		# shellcheck disable=SC2086
		pytest_stage vm-solo -m vm $solo || vrc=1
	fi
	bg_resume
	lane_start
	prebuild_wait
	for m in $VM_IN_LANE; do
		ignore="$ignore --ignore=$m"
	done
	# shellcheck disable=SC2086
	pytest_stage vm -m vm --ignore=tests/test_stress.py \
		--ignore=tests/test_server.py $ignore tests ||
		vrc=1
	return $vrc
}

# The lane beside the vm stage: check.sh again, at LANE_NICE, in its own
# process group (an interrupted run stops all of it), running the selected
# LANE_STAGES; its output is shown when the vm stage is done.
lane_start() {
	LANE=""
	[ "$OVERLAP" = 1 ] || return 0
	for s in $LANE_STAGES; do
		selected "$s" && LANE="$LANE $s"
	done
	[ -n "$LANE" ] || return 0
	VM_IN_LANE=""
	for m in $VM_LANE; do
		[ -e "$m" ] && VM_IN_LANE="$VM_IN_LANE $m"
	done
	echo "check: the stages$LANE start beside the vm stage" \
		"(log: $OUT/lane.log, shown after the vm stage)"
	rm -f "$OUT/lane.tsv"
	CGE_VM_LANE=$VM_IN_LANE CGE_DEBUG_BG=${DEBUG_BG:-} CGE_STAGES="$LANE" \
		CGE_LANE_NICE=$LANE_NICE setsid nice -n "$LANE_NICE" \
		sh "$REPO/tests/check.sh" --lane >"$OUT/lane.log" 2>&1 &
	LANE_PID=$!
}

# In the lane: the vm stage's tests of VM_LANE that lane_start handed it.
vm_lane_part() {
	[ -n "${CGE_VM_LANE:-}" ] || return 0
	echo "==== check: the vm stage's tests in the lane:$CGE_VM_LANE"
	t0=$(now)
	# shellcheck disable=SC2086
	pytest_stage vm-lane -m vm $CGE_VM_LANE
	rc=$?
	printf 'vm-lane\t%s\t%s\n' "$(( $(now) - t0 ))" "$rc" >>"$TSV"
	[ "$rc" = 0 ] || failed="$failed vm-lane"
}

lane_wait() {
	wait "$LANE_PID"
	LANE_PID=""
	if [ -n "${DEBUG_BG:-}" ]; then
		# a lane that ended before its debug stage did does not wait
		# for the build: nor do we
		grep -q '^debug	' "$OUT/lane.tsv" 2>/dev/null ||
			kill -TERM "-$DEBUG_BG" 2>/dev/null
		wait "$DEBUG_BG"
	fi
	DEBUG_BG=""
	echo "==== check: stages$LANE (they ran beside the vm stage)"
	cat "$OUT/lane.log"
	for s in $LANE; do
		line=$(grep "^$s	" "$OUT/lane.tsv" 2>/dev/null)
		if [ -n "$line" ]; then
			dt=$(echo "$line" | cut -f2)
			rc=$(echo "$line" | cut -f3)
		else
			dt=0
			rc=1
			echo "check: the stage $s beside the vm stage left no" \
				"result" >&2
		fi
		record "$s" "$dt" "$rc"
	done
	if [ -n "$VM_IN_LANE" ]; then
		line=$(grep "^vm-lane	" "$OUT/lane.tsv" 2>/dev/null)
		if [ -n "$line" ]; then
			record vm-lane "$(echo "$line" | cut -f2)" \
				"$(echo "$line" | cut -f3)"
		else
			record vm-lane 0 1
			echo "check: the vm stage's tests in the lane left no" \
				"result" >&2
		fi
	fi
	grep '^debug-wait	' "$OUT/lane.tsv" >>"$TSV" 2>/dev/null
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
		# not wait(1): beside the vm stage, the build is not our child
		# (and, ended, stays a zombie until check.sh reaps it)
		while [ ! -s "$OUT/debugkernel.rc" ] &&
			running "$DEBUG_BG"; do
			sleep 1
		done
		wrc=$(cat "$OUT/debugkernel.rc" 2>/dev/null)
		wrc=${wrc:-255}
		DEBUG_BG=""
		printf 'debug-wait\t%s\t%s\n' "$(( $(now) - w0 ))" "$wrc" \
			>>"$TSV"
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

host_stage() {
	pytest_stage host -m "not vm and not sweep" --ignore=tests/test_kunit.py \
		tests bench/validate_selftest.py
}

sweep_stage() {
	pytest_stage sweep -m sweep tests/test_sweep.py
}

server_stage() {
	pytest_stage server -m vm tests/test_server.py
}

deep_stage() {
	$PY tests/deep.py verify 2>"$OUT/deep.reason"
	drc=$?
	cat "$OUT/deep.reason" >&2
	return $drc
}

if [ "${1:-}" = --lane ]; then
	# its own session (setsid), so its own autogroup: the lane's nice for
	# the whole group, where autogroups are on (else nice(1)'s counts)
	echo "${CGE_LANE_NICE:-10}" 2>/dev/null >/proc/self/autogroup
	DEBUG_BG=${CGE_DEBUG_BG:-}
	TSV=$OUT/lane.tsv
	summary=""
	# in the order lane_start handed them; the vm stage's lane tests
	# before the debug stage, or last
	lane_vm=0
	for s in $STAGES; do
		case $s in
		debug)
			vm_lane_part
			lane_vm=1
			stage debug debug_stage
			;;
		*) stage "$s" "${s}_stage" ;;
		esac
	done
	[ $lane_vm = 1 ] || vm_lane_part
	[ -z "$failed" ]
	exit $?
fi

TSV=$OUT/timings.tsv
rm -f "$OUT"/*.xml "$TSV" "$OUT"/timings.json "$CGE_BOOT_LOG" \
	"$OUT/deep.reason"
# The deep tier's record: for the module as it is at the start, and only
# of a run of every stage on every kernel at the suite's own sizes.
MODULE_HASH=""
if [ "$CGE_TIER" = full ]; then
	MODULE_HASH=$($PY tests/deep.py hash)
	FULL_RUN=1
	for v in CGE_STAGES CGE_STRESS_FLAVOURS CGE_ACCURACY_MODES CGE_CHURN \
		CGE_STRESS_SCALE; do
		eval "[ -z \"\${$v:-}\" ]" || FULL_RUN=0
	done
	[ "$CGE_FLAVOURS" = all ] || FULL_RUN=0
	[ $FULL_RUN = 1 ] || echo "check: a run of part of the deep tier" \
		"(CGE_STAGES, CGE_FLAVOURS or sizes set): no deep record"
fi
CACHE=${CGE_CACHE:-/var/cache/cgroup-energy}
CACHE_EMPTY=$([ -n "$(ls -A "$CACHE" 2>/dev/null)" ] && echo 0 || echo 1)
DEBUG_BG=""
LANE_PID=""
PREBUILD_BG=""
CONT_GUARD=""
VM_IN_LANE=""
stop_background() {
	for g in $DEBUG_BG $LANE_PID $PREBUILD_BG; do
		kill -TERM "-$g" 2>/dev/null
	done
	# stopped by bg_pause, it takes the signal once continued
	[ -z "$DEBUG_BG" ] || kill -CONT "-$DEBUG_BG" 2>/dev/null
	[ -z "$CONT_GUARD" ] || kill "$CONT_GUARD" 2>/dev/null
	rm -f "$PAUSE" "$PAUSE.idle"
}
trap stop_background EXIT
trap 'exit 129' HUP
trap 'exit 130' INT
trap 'exit 143' TERM
T0=$(now)
# the host's CPU counters at the start: the summary reports how busy the
# cores were over the run (busy: all but idle, iowait and steal; steal apart)
head -1 /proc/stat >"$OUT/cpu-start"
# what is tested: the tree at the start (an edit during the run is not)
DESCRIBE=$(git describe --always --dirty 2>/dev/null)
# beside the vm stage's second part: the lane's stages (else in this order)
OVERLAP=0
if selected vm && [ "${CGE_OVERLAP:-1}" != 0 ]; then
	OVERLAP=1
fi
stage deep deep_stage
stage deps sh tests/deps.sh
debug_bg
prebuild_bg
stage build make --no-print-directory tool
stage style sh tests/style.sh
[ $OVERLAP = 1 ] || stage host host_stage
stage kunit pytest_stage kunit tests/test_kunit.py
[ $OVERLAP = 1 ] || stage sweep sweep_stage
[ $OVERLAP = 1 ] || stage server server_stage
stage vm vm_stage
if [ -n "$LANE_PID" ]; then
	lane_wait
elif [ $OVERLAP = 0 ]; then
	stage debug debug_stage
fi

echo "==== check: durations"
printf '%s' "$summary"
$PY - "$OUT" "$(( $(now) - T0 ))" "$DESCRIBE" \
	"$CACHE" "$CACHE_EMPTY" <<'PYEOF'
import glob, json, os, sys, time
import xml.etree.ElementTree as ET
out, total, commit = sys.argv[1], int(sys.argv[2]), sys.argv[3]
cache = {'path': sys.argv[4], 'empty_at_start': sys.argv[5] == '1'}
stages = {}
for line in open(out + '/timings.tsv'):
    name, secs, rc = line.split('\t')
    stages[name] = {'seconds': int(secs), 'rc': int(rc)}
t = f = s = 0
failed = []
skipped = []
# each test's duration (setup, call and teardown: a module's boot is in its
# first test's setup), by test id
dur = {}
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
        tid = f"{tc.get('classname')}::{tc.get('name')}"
        dur[tid] = dur.get(tid, 0) + float(tc.get('time') or 0)
        if tc.find('failure') is not None or tc.find('error') is not None:
            if tid not in failed:
                failed.append(tid)
        elif tc.find('skipped') is not None and tid not in skipped:
            skipped.append(tid)
by_file = {}
for tid, secs in dur.items():
    mod = tid.split('::')[0]
    by_file[mod] = by_file.get(mod, 0) + secs
durations = {
    'by_module': {k: round(v, 1) for k, v in
                  sorted(by_file.items(), key=lambda kv: -kv[1])},
    'slowest': [[k, round(v, 1)] for k, v in
                sorted(dur.items(), key=lambda kv: -kv[1])[:20]]}
with open(out + '/durations.json', 'w') as fh:
    fh.write(json.dumps({k: round(v, 2) for k, v in sorted(dur.items())},
                        indent=0) + '\n')


def jiffies(line):
    # user nice system idle iowait irq softirq steal (guest time is in
    # user and nice already): all, idle + iowait, steal
    f = [int(x) for x in line.split()[1:9]]
    return sum(f), f[3] + f[4], f[7]


try:
    (a0, i0, s0), (a1, i1, s1) = (jiffies(open(f).readline()) for f in
                                  (out + '/cpu-start', '/proc/stat'))
    all_ = a1 - a0
    cpu = {'cores': os.cpu_count(),
           'busy_fraction': round((all_ - (i1 - i0) - (s1 - s0)) / all_, 3),
           'steal_fraction': round((s1 - s0) / all_, 3)}
except (OSError, ValueError, IndexError, ZeroDivisionError) as e:
    cpu = {'error': str(e)}
# the guests' boots: how long each took to its init's first line (a
# measure of the host's speed for QEMU), and those stopped
boots = []
unread = 0
try:
    with open(out + '/boots.jsonl') as fh:
        for x in fh:
            try:
                b = json.loads(x)
            except ValueError:
                b = None
            if isinstance(b, dict):
                boots.append(b)
            elif x.strip():
                unread += 1
except OSError:
    pass
# the upper middle one for an even count
up = sorted((b['up_s'], str(b.get('flavour')), str(b.get('test') or ''))
            for b in boots if isinstance(b.get('up_s'), (int, float)))
guests = {'boots': len(boots), 'lines_unread': unread,
          'timed_out': sum(bool(b.get('timed_out')) for b in boots),
          'stuck_before_init': sum(bool(b.get('stuck_before_init'))
                                   for b in boots)}
if up:
    guests.update(up_s_median=up[len(up) // 2][0],
                  up_s_p90=up[min(len(up) - 1, len(up) * 9 // 10)][0],
                  up_s_max=list(up[-1]))
doc = {'commit': commit, 'finished': time.strftime('%Y-%m-%dT%H:%M:%S%z'),
       'total_seconds': total, 'cache': cache, 'cpu': cpu, 'guests': guests,
       'stages': stages,
       'tests': {'passed': t, 'failed': f, 'skipped': s,
                 'failed_ids': failed, 'skipped_ids': skipped},
       'durations': durations}
with open(out + '/timings.json', 'w') as fh:
    fh.write(json.dumps(doc, indent=1) + '\n')
print(f'check: total {total // 60} min {total % 60} s '
      f'(stage timings: {out}/timings.json)')
print(f'check: {t} passed, {f} failed, {s} skipped')
for tid in skipped:
    print(f'check: skipped: {tid}')
host = (f"{cpu['cores']} cores, {cpu['busy_fraction']} busy, "
        f"{cpu['steal_fraction']} steal" if 'cores' in cpu
        else cpu.get('error'))
print(f"check: host: {host}; cache "
      f"{'empty' if cache['empty_at_start'] else 'warm'} at start")
line = f"check: guests: {guests['boots']} boots"
if up:
    line += (f"; up after {guests['up_s_median']} s median, "
             f"{guests['up_s_p90']} s 90th percentile, "
             f"{up[-1][0]} s at most ({up[-1][2] or up[-1][1]})")
print(line + f"; {guests['timed_out']} timed out, "
      f"{guests['stuck_before_init']} stopped before their init"
      + (f'; {unread} lines of boots.jsonl unread' if unread else ''))
print('check: the slowest modules: ' + ', '.join(
    f'{k.split(".")[-1]} {v:.0f} s' for k, v in
    list(durations['by_module'].items())[:6]))
sys.exit(3 if s else 0)
PYEOF
src=$?
# A skip is a failure: a test that does not belong to a kernel or a tier
# is not collected (tests/conftest.py), and a missing tool fails
# (tests/need.py), so a skip is a check that did not run.
if [ $src = 3 ]; then
	echo "check: tests were skipped: every test collected must run" >&2
	failed="$failed skips"
	src=0
fi
# The summary is part of the result: if it fails, check.sh fails.
if [ $src != 0 ]; then
	echo "check: the summary failed (exit $src): $OUT/timings.json" \
		"may be missing or incomplete" >&2
	failed="$failed summary"
fi
# The deep tier's record, passed or failed, keyed by the module's hash at
# the start (tests/deep.py); a whole run only.
if [ -n "$MODULE_HASH" ] && [ $FULL_RUN = 1 ] && [ $src = 0 ]; then
	$PY tests/deep.py record "$OUT/timings.json" \
		"${CGE_WHERE:-make check-full}" "$MODULE_HASH" \
		"$([ -z "$failed" ] && echo passed || echo failed)" ||
		failed="$failed record"
fi
# the gate's reason, again at the end of the output
[ ! -s "$OUT/deep.reason" ] || cat "$OUT/deep.reason"
if [ -n "$failed" ]; then
	echo "check: FAILED stages:$failed"
	exit 1
fi
