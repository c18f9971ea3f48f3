# SPDX-License-Identifier: GPL-2.0
"""pytest glue for cgroup-energy: VM fixtures, flavour selection, `vm` marker.

Flavours: --vm-flavour F (repeatable) or CGE_FLAVOURS="6.1,6.12-rt" ("all" for
every one); default 6.1.  Tests that use the `vm` or `vm_flavour` fixtures are
marked `vm` automatically (`-m "not vm"` runs the host tests only).

Tiers (docs/testing.md): CGE_TIER=gate (make check) collects only the gate's
tests; unset or "full" (make check-full), every test.  Markers decide, and a
test they leave out is deselected, not skipped, so that a skip in make check
is a failure (tests/check.sh):
  deep                     the deep tier only (timing-bound, or depth)
  only(param=[values])     only where the parametrised @param (vm_flavour,
                           a fixture's param) is one of @values
  gate_only(param=[values])  the same, in the gate only

Fixtures:
  vm          module-scoped runner: vm.run(commands, flavour=None, **kw) ->
              harness.VMResult (one boot per distinct call in the session:
              identical calls are memoised, errors included, so that test
              modules can share a boot);
              vm.build_module(flavour), vm.build_external(src_dir, flavour)
  vm_flavour  parametrised over the selected flavours (module scope)
  cge_ko      path of cgroup_energy.ko built for vm_flavour
  emu_ko      the same, the test build with emulated RAPL hardware

Batching many checks into one boot:

    CHECKS = {'load': 'insmod .build/$CGE_KVER/cgroup_energy.ko',
              'stat': 'cat /sys/fs/cgroup_energy/energy.stat'}

    @pytest.fixture(scope='module')
    def guest(vm, vm_flavour, cge_ko):
        return vm.run(CHECKS, flavour=vm_flavour)

    def test_stat(guest):
        assert guest['stat'].rc == 0, guest['stat'].output
"""
import os
import shutil
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from vm import build, harness, kernels  # noqa: E402
import need  # noqa: E402
import tiers  # noqa: E402

VM_FIXTURES = {'vm', 'vm_flavour', 'cge_ko'}


def pytest_addoption(parser):
    g = parser.getgroup('cgroup-energy', 'cgroup-energy VM tests')
    g.addoption('--vm-flavour', action='append', dest='cge_flavours',
                metavar='F', help='kernel flavour(s) for VM tests: '
                + ', '.join(kernels.FLAVOURS) + ', all (env CGE_FLAVOURS)')
    g.addoption('--vm-timeout', type=int, dest='cge_vm_timeout',
                default=int(os.environ.get('CGE_VM_TIMEOUT', 300)),
                help='seconds per VM boot (env CGE_VM_TIMEOUT, default 300)')


def pytest_configure(config):
    try:
        tiers.tier()
    except tiers.TierError as e:
        raise pytest.UsageError(str(e)) from None
    config.addinivalue_line(
        'markers', 'vm: boots a QEMU guest (deselect with -m "not vm")')
    config.addinivalue_line(
        'markers', 'deep: the deep tier only (make check-full)')
    config.addinivalue_line(
        'markers', 'only(param=[values]): collected only where the '
        'parametrised param has one of these values')
    config.addinivalue_line(
        'markers', 'gate_only(param=[values]): as only, in the gate')
    config.addinivalue_line(
        'markers', 'sweep: builds the module against every packaged kernel '
        '(tests/vm/sweep.py; deselect with -m "not sweep")')


def selected_flavours(config):
    raw = config.getoption('cge_flavours') or \
        [os.environ.get('CGE_FLAVOURS') or '6.1']
    try:
        return kernels.select_flavours(raw)
    except kernels.KernelError as e:
        raise pytest.UsageError(str(e)) from None


def pytest_generate_tests(metafunc):
    if 'vm_flavour' in metafunc.fixturenames:
        metafunc.parametrize('vm_flavour', selected_flavours(metafunc.config),
                             scope='module')


def _wanted(item, marker):
    """False if a @marker on @item names a parameter whose value in this
    item is not among the marker's values."""
    params = getattr(getattr(item, 'callspec', None), 'params', {})
    for m in item.iter_markers(marker):
        for name, values in m.kwargs.items():
            if name in params and params[name] not in values:
                return False
    return True


def in_tier(item, gate):
    """Whether @item belongs to the tier run (@gate: the gate's)."""
    if gate and item.get_closest_marker('deep'):
        return False
    return _wanted(item, 'only') and (not gate or _wanted(item, 'gate_only'))


def check_markers(items):
    """A marker's parameter must be one its test has (for a module's
    marker, one of its module's selected tests, if any has it), and each of
    its values one that parameter takes there, or a kernel flavour (a run
    may select a few): a typo would deselect nothing."""
    seen = {}
    for i in items:
        mod = i.nodeid.split('::')[0]
        fn = getattr(i, 'originalname', i.name)
        for name, v in getattr(getattr(i, 'callspec', None), 'params',
                               {}).items():
            for key in ((mod, fn, name), (mod, None, name)):
                have = seen.setdefault(key, set())
                if isinstance(v, (str, int, float, bool, type(None))):
                    have.add(v)
    flavours = set(kernels.known_flavours())
    for i in items:
        mod = i.nodeid.split('::')[0]
        fn = getattr(i, 'originalname', i.name)
        for marker in ('only', 'gate_only'):
            for node, m in i.iter_markers_with_node(marker):
                where = fn if node is i else None
                for name, values in m.kwargs.items():
                    have = seen.get((mod, where, name))
                    if have is None and where is None:
                        # a module's marker, none of whose tests that take
                        # @name was selected: nothing to check it against
                        continue
                    if have is None:
                        raise pytest.UsageError(
                            f'{node.nodeid}: {marker}() names {name!r}, '
                            'which is not a parameter of its tests')
                    bad = set(values) - have - flavours
                    if bad:
                        raise pytest.UsageError(
                            f'{node.nodeid}: {marker}({name}=...) names '
                            f'{sorted(bad)}, which {name} never takes')


def pytest_collection_modifyitems(config, items):
    for item in items:
        if VM_FIXTURES & set(getattr(item, 'fixturenames', ())):
            item.add_marker(pytest.mark.vm)
    check_markers(items)
    gate = tiers.gate()
    keep, drop = [], []
    for i in items:
        (keep if in_tier(i, gate) else drop).append(i)
    if drop:
        config.hook.pytest_deselected(items=drop)
        items[:] = keep


def pytest_runtest_setup(item):
    """A VM test without QEMU: skipped, failed in make check (need.py)."""
    if item.get_closest_marker('vm') and shutil.which(harness.QEMU) is None:
        need.missing(f'{harness.QEMU} missing: sh tests/deps.sh installs QEMU '
                     '>= 10.0 (bookworm-backports)')


@pytest.fixture(autouse=True)
def _boot_log_for_vm_tests(request, monkeypatch):
    """Only a vm test's boots go to make check's boot log (CGE_BOOT_LOG):
    the host tests' stub boots (test_harness) are not guests."""
    if not request.node.get_closest_marker('vm'):
        monkeypatch.delenv('CGE_BOOT_LOG', raising=False)


class VM:
    """Boots guests for one test module; identical runs are memoised for the
    whole session (workload.engine_boot: test_impact and test_engine)."""

    _memo = {}

    def __init__(self, config):
        self.flavour = selected_flavours(config)[0]
        self.timeout = config.getoption('cge_vm_timeout')

    def run(self, commands, flavour=None, **kw):
        flavour = flavour or self.flavour
        kw.setdefault('timeout', self.timeout)
        key = (flavour, repr(commands), repr(sorted(kw.items())))
        if key not in self._memo:
            try:
                self._memo[key] = harness.run_vm(flavour, commands, **kw)
            except harness.VMError as e:
                self._memo[key] = e
        got = self._memo[key]
        if isinstance(got, Exception):
            raise got
        return got

    def build_module(self, flavour=None):
        return build.build_module(flavour or self.flavour)

    def build_external(self, src_dir, flavour=None, name=None):
        return build.build_external(src_dir, flavour or self.flavour, name)


@pytest.fixture(scope='module')
def vm(request):
    return VM(request.config)


@pytest.fixture(scope='module')
def cge_ko(vm_flavour):
    return build.build_module(vm_flavour)


@pytest.fixture(scope='module')
def emu_ko(vm_flavour):
    """The test build with emulated RAPL hardware (tests/emu/)."""
    return build.build_module(vm_flavour, variant='emu')
