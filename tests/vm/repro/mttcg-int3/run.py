#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""Host: boot 6.1-rt once, run tests/vm/repro/mttcg-int3/reload.py, detect a stall from the
console progress lines, dump both vCPUs via the QEMU monitor, kill.
usage: run.py TAG STALL_S -- guest-args...   prints one JSON line."""
import json, os, re, socket, subprocess, sys, threading, time, shlex
sys.path.insert(0, 'tests/vm')
import harness, kernels, initramfs

tag, stall = sys.argv[1], float(sys.argv[2])
gargs = sys.argv[sys.argv.index('--') + 1:]
flavour = os.environ.get('FLAV', '6.1-rt')
k = kernels.kernel(flavour)
initrd = initramfs.build(k)
rundir = harness._new_rundir(flavour)
cmd = '/usr/bin/python3 tests/vm/repro/mttcg-int3/reload.py ' + ' '.join(shlex.quote(a) for a in gargs)
(rundir / 'cmd' / '0000').write_text(cmd + '\n')
(rundir / 'config').write_text(f'REPO={harness.REPO}\nCGE_FLAVOUR={flavour}\nCGE_KVER={k.kver}\n')
mon = str(rundir / 'mon.sock')
argv = harness.qemu_command(k, initrd, rundir, 2, '1G', 'nokaslr ' + os.environ.get('APPEND', ''), cpu_flags='')
if os.environ.get('QACCEL'):
    argv[argv.index('-accel') + 1] = os.environ['QACCEL']
argv += ['-monitor', f'unix:{mon},server,nowait']
t0 = time.monotonic()
p = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
state = {'last': time.monotonic(), 'cyc': 0, 'done': False, 'up': False, 'times': []}
def pump():
    with open(rundir / 'console.log', 'wb') as f:
        for line in p.stdout:
            f.write(line); f.flush()
            s = line.decode(errors='replace')
            if 'cge-guest: up' in s: state['up'] = True; state['last'] = time.monotonic()
            m = re.search(r'HP: cyc (\d+)/\d+ ([\d.]+)', s)
            if m:
                state['cyc'] = int(m.group(1)); state['times'].append(float(m.group(2)))
                state['last'] = time.monotonic()
            if 'HP: start' in s: state['last'] = time.monotonic()
            if 'HP: finished' in s or 'cge-guest: done' in s: state['done'] = True
th = threading.Thread(target=pump, daemon=True); th.start()

def monitor(cmds):
    s = socket.socket(socket.AF_UNIX); s.connect(mon); s.settimeout(10)
    out = b''
    def until_prompt():
        nonlocal out
        buf = b''
        while not buf.endswith(b'(qemu) '):
            d = s.recv(65536)
            if not d: break
            buf += d
        return buf.decode(errors='replace')
    until_prompt()
    res = []
    for c in cmds:
        s.sendall(c.encode() + b"\n"); res.append((c, until_prompt()))
    s.close(); return res

hung = False; dump = None
while p.poll() is None:
    time.sleep(1)
    lim = 120 if not state['up'] else stall
    if not state['done'] and time.monotonic() - state['last'] > lim:
        hung = True
        try:
            r = monitor(['info registers -a'])
            regs = r[0][1]
            cmds = []
            for cpu, rsp in enumerate(re.findall(r'RSP=([0-9a-f]+)', regs)):
                cmds += [f'cpu {cpu}', f'x/48gx 0x{rsp}']
            cmds += ['x/8xb 0xffffffff81a50ee0', 'x/8xb 0xffffffff81e004a0', 'x/4gx 0xffffffff83323e60']
            cmds += ['cpu 1', 'x/8xb 0xffffffff81a50ee0', 'xp/8xb 0x1a50ee0']
            dump = regs + '\n' + '\n'.join(f'>> {c}\n{v}' for c, v in monitor(cmds))
            # sample RIPs a few times to see if a CPU loops
            rips = []
            for _ in range(5):
                time.sleep(0.3)
                rr = monitor(['info registers -a'])[0][1]
                rips.append(re.findall(r'RIP=([0-9a-f]+)', rr))
            dump += '\nRIP samples: ' + json.dumps(rips)
        except Exception as e:
            dump = f'monitor failed: {e}'
        (rundir / 'hang-dump.txt').write_text(dump or '')
        p.kill(); break
    if time.monotonic() - t0 > 1500:
        p.kill(); break
p.wait(); th.join(5)
(rundir / '.done').touch()
out = (rundir / 'out' / '0000.out')
qver = subprocess.run([harness.QEMU, '--version'], capture_output=True, text=True).stdout.split()[3]
print(json.dumps({'tag': tag, 'flavour': flavour, 'kver': k.kver, 'qemu': qver, 'accel': os.environ.get('QACCEL', 'tcg'), 'hung': hung, 'cycles': state['cyc'], 'done': state['done'],
                  'secs': round(time.monotonic() - t0, 1),
                  'max_cycle_s': max(state['times'], default=0),
                  'rundir': str(rundir),
                  'out_tail': (out.read_text(errors='replace')[-300:] if out.exists() else '')}), flush=True)
