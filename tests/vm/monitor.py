# SPDX-License-Identifier: GPL-2.0
"""What each vCPU of a test boot is doing when the boot times out, from
QEMU's human monitor (harness._boot writes it to the run directory's
hang.txt and quotes the summary in the VMError).

A guest that stops making progress prints nothing once its CPUs spin with
interrupts off, so the console alone cannot tell a deadlock in the module
from QEMU's stale int3 (tests/vm/repro/mttcg-int3/): the vCPUs' RIPs can.
The guests boot their vmlinux by PVH, which skips the decompressor and so
KASLR: a RIP in the kernel's text names the same symbol in /proc/kallsyms
of any boot of that kernel (`harness.py --flavour F -- 'cat /proc/kallsyms'`).
"""
import re
import socket
import time

PROMPT = b'(qemu) '


def hmp(path, cmds, timeout=10):
    """Run the human monitor commands @cmds on the socket @path, within
    @timeout s in all (OSError past it); returns [(command, output)]."""
    end = time.monotonic() + timeout

    def left():
        t = end - time.monotonic()
        if t <= 0:
            raise OSError(f'the monitor did not answer in {timeout:.1f} s')
        return t

    with socket.socket(socket.AF_UNIX) as s:
        s.settimeout(left())
        s.connect(str(path))

        def reply():
            buf = b''
            while not buf.endswith(PROMPT):
                s.settimeout(left())
                d = s.recv(65536)
                if not d:
                    raise OSError('the monitor closed its socket')
                buf += d
            # the monitor echoes the command line as a terminal would
            # (escape sequences and all): drop that first line
            text = buf[:-len(PROMPT)].decode(errors='replace')
            return text.replace('\r', '').split('\n', 1)[-1]

        reply()                             # the banner's line
        out = []
        for c in cmds:
            s.sendall(c.encode() + b'\n')
            out.append((c, reply()))
        return out


# `info registers -a`: one block per vCPU, "CPU#n" then RIP=... RFL=...
# [flags] CPL=.. ... HLT=.
_CPU = re.compile(r'CPU#(\d+)')
_RIP = re.compile(r'RIP=([0-9a-f]+) RFL=([0-9a-f]+)')
_HLT = re.compile(r'HLT=(\d)')


def vcpus(regs):
    """Per vCPU in `info registers -a` output @regs: {cpu: (rip, if, hlt)},
    if: interrupts enabled (RFLAGS.IF), hlt: halted (idle)."""
    out = {}
    parts = _CPU.split(regs)
    for cpu, block in zip(parts[1::2], parts[2::2]):
        m = _RIP.search(block)
        h = _HLT.search(block)
        if m:
            out[int(cpu)] = (int(m.group(1), 16),
                             bool(int(m.group(2), 16) & 0x200),
                             bool(h and h.group(1) == '1'))
    return out


def summary(samples):
    """One line per vCPU from successive vcpus() @samples: its distinct RIPs
    in order, whether interrupts were ever on and whether it was halted."""
    lines = []
    for cpu in sorted({c for s in samples for c in s}):
        seen = [s[cpu] for s in samples if cpu in s]
        rips = list(dict.fromkeys(f'{r:x}' for r, _, _ in seen))
        irq = 'on' if any(i for _, i, _ in seen) else 'off'
        hlt = ', halted' if any(h for _, _, h in seen) else ''
        lines.append(f'vCPU {cpu}: RIP {" ".join(rips)} '
                     f'({len(seen)} samples), interrupts {irq}{hlt}')
    return lines


def dump(path, samples=5, gap=0.5, deadline=15):
    """Every vCPU's registers, @samples RIP samples @gap s apart, and, at
    the last sample, the code bytes from the byte before each vCPU's RIP
    (after a stale int3, the CPU executed 0xcc at RIP - 1 and memory holds
    something else) and 48 words of its stack (the return addresses of
    what called the spinning code).  Returns (text for hang.txt, summary
    lines).  A monitor that does not answer within @deadline s in all
    stops the dump there, with what it had and the error in both."""
    end = time.monotonic() + deadline
    regs, seen, code, err = '', [], [], None

    def left():
        return max(0.1, end - time.monotonic())

    try:
        for i in range(samples):
            if i:
                time.sleep(gap)
            r = hmp(path, ['info registers -a'], timeout=left())[0][1]
            regs = regs or r
            seen.append(vcpus(r))
        cmds = []
        for cpu in sorted(seen[-1]):
            rip = seen[-1][cpu][0]
            rsp = re.findall(r'RSP=([0-9a-f]+)', r)[cpu]
            cmds += [f'cpu {cpu}', f'x/16xb 0x{rip - 1:x}', f'x/48gx 0x{rsp}']
        code = hmp(path, cmds, timeout=left())
    except (OSError, IndexError) as e:
        err = f'no answer from the QEMU monitor ({path}): {e}'
    lines = summary(seen) + ([err] if err else [])
    text = '\n'.join(['# vCPU summary', *lines, '',
                      '# info registers -a', regs, '',
                      '# RIP samples', *(str({c: f'{r:x}' for c, (r, _, _)
                                              in s.items()}) for s in seen),
                      '', '# code from RIP - 1, then the stack',
                      *(f'(qemu) {c}\n{o}' for c, o in code)])
    return text + '\n', lines
