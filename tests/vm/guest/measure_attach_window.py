# SPDX-License-Identifier: GPL-2.0
"""Measure how far below cpu.stat a crowd of self-joining tasks reads, by how
they join (results: tests/results/attach-window.jsonl):

    tests/vm/harness.py --flavour sid -- '/usr/bin/python3 \\
        tests/vm/guest/measure_attach_window.py <cgroup_energy.ko> <cgwork>'

30 sleepers pinned to CPU 0, each in its own cgroup, three rounds of each
way of joining: right after exec (cgwork -c), or right after a 10 ms sleep.
The probe closes a self-moving task's slice at the cgroup_attach_task
tracepoint, which fires after the task's css_set has switched; the kernel
gives the runtime since the task's last update_curr() to the new cgroup if a
tick comes in between, the module to the old one. A join right after a
sleep has little such runtime to misfile."""
import json
import subprocess

from common import (CG, cpu_usage, insmod, main_args, mkcg, mount_en, rmmod,
                    settle, stat, umount_en)

KO, CGWORK = main_args()


def round_(top, fresh):
    cgs = [f'{top}/o{i}' for i in range(30)]
    mkcg(*cgs)
    if fresh:
        ps = [subprocess.Popen(['sh', '-c', f'sleep 0.01; echo $$ > '
                                f'{CG}/{cg}/cgroup.procs; exec {CGWORK} '
                                '-p 0 sleeper 20000 3']) for cg in cgs]
    else:
        ps = [subprocess.Popen([CGWORK, '-c', str(CG / cg), '-p', '0',
                                'sleeper', '20000', '3']) for cg in cgs]
    for p in ps:
        p.wait()
    settle()
    d = {cg: stat(cg)['usage_usec'] - cpu_usage(cg) for cg in cgs}
    return {'fresh_join': fresh, 'sum': sum(d.values()),
            'min': min(d.values()),
            'nonzero': sum(1 for v in d.values() if v),
            'kernel': sum(cpu_usage(cg) for cg in cgs)}


if __name__ == '__main__':
    insmod(KO)
    mount_en()
    for k, fresh in enumerate((False, True) * 3):
        print('MEASURE ' + json.dumps(round_(f'aw{k}', fresh)), flush=True)
    umount_en()
    rmmod()
