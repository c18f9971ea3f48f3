#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""Guest: N cycles of load/unload (or tracefs toggle) under a hackbench storm.
Progress goes to /dev/console as 'HP: cyc i/N <secs>' so the host can see a stall.
usage: reload.py MODE N [ko]   MODE: cge | ko | tracefs | none"""
import os, subprocess, sys, threading, time, signal

mode, n = sys.argv[1], int(sys.argv[2])
ko = sys.argv[3] if len(sys.argv) > 3 else None
con = open('/dev/console', 'w')
def say(s):
    con.write(f'HP: {s}\n'); con.flush()

if mode == 'cgepre':
    # keep >= 2 probes on each tracepoint the module uses (trace event +
    # cmdline recorder), so its register/unregister patches no kernel text
    for ev in ('sched/sched_switch', 'cgroup/cgroup_attach_task'):
        open(f'/sys/kernel/tracing/events/{ev}/enable', 'w').write('1')
    open('/sys/kernel/tracing/tracing_on', 'w').write('0')
    mode = 'cge'
stop = threading.Event()
procs = []
def storm():
    while not stop.is_set():
        p = subprocess.Popen(['hackbench', '-p', '-g', '1', '-f', '2', '-l', '5000000'],
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                             start_new_session=True)
        procs.append(p); p.wait()
t = threading.Thread(target=storm, daemon=True); t.start()
time.sleep(0.5)
EN = '/sys/fs/cgroup_energy'
TR = '/sys/kernel/tracing/events/sched/sched_switch/enable'
def sh(c):
    subprocess.run(c, shell=True, check=True)
if not os.path.exists('/run/cge/kallsyms'):
    open('/run/cge/kallsyms', 'w').write(open('/proc/kallsyms').read())
say(f'start {mode} {n}')
for i in range(n):
    t0 = time.time()
    if mode == 'cge':
        sh(f'insmod {ko} interval_ms={(10, 50, 100)[i % 3]}')
        sh(f'mount -t cgroup_energy none {EN}')
        time.sleep(0.3)
        open(f'{EN}/energy.stat').read()
        sh(f'umount {EN}')
        sh('rmmod cgroup_energy')
    elif mode == 'ko':
        extra = sys.argv[4] if len(sys.argv) > 4 else ''
        sh(f'insmod {ko} {extra}')
        time.sleep(0.3)
        sh(f'rmmod {os.path.basename(ko)[:-3]}')
    elif mode == 'tracefs':
        open(TR, 'w').write('1')
        time.sleep(0.3)
        open(TR, 'w').write('0')
    else:
        time.sleep(0.3)
    say(f'cyc {i + 1}/{n} {time.time() - t0:.2f}')
stop.set()
for p in procs:
    try: os.killpg(p.pid, signal.SIGKILL)
    except ProcessLookupError: pass
say('finished')
