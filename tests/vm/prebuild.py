# SPDX-License-Identifier: GPL-2.0
"""Build the modules of the vm stage's guests ahead of its tests.

tests/check.sh starts this in the background at nice 19 once the deps stage
is done: each kernel's cgroup_energy.ko, its emulated-RAPL build and the
guest fixtures, in the order the vm stage asks for them.  A test's fixture
that asks for a module being built here waits on build.py's per-directory
lock and then finds it up to date; one not reached yet, it builds itself.
The builds are the same calls as the fixtures' (build.build_module,
build.build_external), so nothing the tests load differs.  Builds cost
10-12 s each on an idle host, over 20 in a run: in line they lengthened
the vm stage, which is make check's longest path.

usage: prebuild.py [--pause FILE] FLAVOURS   (as CGE_FLAVOURS: blank- or
comma-separated, "all" for every one); exit status 1 if a build failed (the
fixture that needs it then fails with make's output).  While FILE exists,
no build starts: FILE.idle says so (check.sh pauses the builds while the vm
stage's solo part runs).
"""
import sys
import time
from pathlib import Path

try:
    from . import build, kernels
except ImportError:                       # run as a script
    import build
    import kernels

FIXTURES = Path(__file__).resolve().parent / 'fixtures'


def jobs(flavours):
    """(what, build call) in the vm stage's order: test_accuracy's modules
    run first (the stage's solo part), then the emulated hardware's
    (test_calibrate_emu, test_rapl_emu), then the fixtures."""
    out = [(f'{f}', lambda f=f: build.build_module(f)) for f in flavours]
    out += [(f'{f} emu', lambda f=f: build.build_module(f, variant='emu'))
            for f in flavours]
    out += [(f'{f} {fx.name}',
             lambda f=f, fx=fx: build.build_external(fx, f))
            for fx in (FIXTURES / 'warn', FIXTURES / 'keep9p')
            for f in flavours]
    return out


def wait_while(pause):
    """Start no build while @pause exists; @pause.idle tells it."""
    idle = Path(str(pause) + '.idle')
    waited = False
    while pause.exists():
        if not waited:
            idle.touch()
            waited = True
        time.sleep(0.5)
    return waited


def main(argv):
    args = argv[1:]
    pause = None
    if args[:1] == ['--pause'] and len(args) >= 2:
        pause = Path(args[1])
        args = args[2:]
    try:
        todo = jobs(kernels.select_flavours(args))
    except kernels.KernelError as e:
        print(f'prebuild: {e}', file=sys.stderr, flush=True)
        return 2
    failed = []
    t0 = time.monotonic()
    paused = 0.0
    for what, call in todo:
        if pause:
            p0 = time.monotonic()
            if wait_while(pause):
                paused += time.monotonic() - p0
        try:
            call()
        except Exception as e:       # the fixture reports it in full
            failed.append(what)
            first = (str(e).splitlines() or [repr(e)])[0]
            print(f'prebuild: {what}: {first}', file=sys.stderr, flush=True)
    print(f'prebuild: {len(todo) - len(failed)} builds in '
          f'{time.monotonic() - t0 - paused:.0f} s (paused {paused:.0f} s)'
          + (f'; failed: {", ".join(failed)}' if failed else ''),
          file=sys.stderr, flush=True)
    return 1 if failed else 0


if __name__ == '__main__':
    sys.exit(main(sys.argv))
