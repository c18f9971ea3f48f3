# SPDX-License-Identifier: GPL-2.0
"""Installing on a server: dkms.conf, `make dkms-install`/`dkms-uninstall`
in a private DKMS tree (never /var/lib/dkms, /usr/src or /lib/modules),
a DKMS build for every Debian 6.1 and 6.12 header tree, the BUILD_EXCLUSIVE
skip, the DKMS-built module loading in a VM, the systemd units, and
`make install`/`make uninstall` with DESTDIR leaving nothing behind.

The private tree lives under .build/dkms-test/ (the VM sees the host root
read-only over 9p, and its /tmp is its own) and is deleted at the end.
The tests run in file order: the VM test loads the module that the fixture
installed, the uninstall test removes it."""
import grp
import os
import re
import shutil
from pathlib import Path

import pytest

from vm import kernels
import need
from dkmstree import NAME, modinfo, private_tree, run
from versions import cge_version, conf_value, dkms_sources

REPO = Path(__file__).resolve().parents[1]
UNIT = 'sys-fs-cgroup_energy.mount'
TEXTFILE = 'cgroup-energy-textfile'
FLAVOURS = ['6.1', '6.1-rt', '6.12', '6.12-rt']
KEYS = ('usage_usec', 'energy_uj', 'wakeups', 'impact_usec',
        'total_uj', 'idle_uj', 'idle_usec', 'irq_uj', 'irq_usec',
        'softirq_uj', 'softirq_usec', 'steal_uj', 'steal_usec')
REAL_TREES = [Path('/var/lib/dkms'), Path('/usr/src'), Path('/lib/modules')]


@pytest.fixture
def dkms_present():
    need.need('dkms', 'dkms')


needs_dkms = pytest.mark.usefixtures('dkms_present')


def listing(paths):
    """Every path under paths (not following links), for before/after."""
    out = set()
    for top in paths:
        if not top.exists():
            continue
        for dirpath, dirnames, filenames in os.walk(top):
            for n in dirnames + filenames:
                out.add(os.path.join(dirpath, n))
    return out


@pytest.fixture(scope='module')
def real_before():
    return listing(REAL_TREES)


@pytest.fixture(scope='module')
def tree(real_before):
    with private_tree() as t:
        yield t


@pytest.fixture(scope='module')
def installed(tree):
    """`make dkms-install` for Debian's 6.1 into the private tree."""
    need.need('dkms', 'dkms')
    k = kernels.kernel('6.1')
    r = tree.make('dkms-install', k)
    assert r.returncode == 0, r.out
    return k, r.out


# --- dkms.conf ------------------------------------------------------------

def test_dkms_conf_version_is_the_module_version():
    assert conf_value('PACKAGE_VERSION') == cge_version()


def test_dkms_conf_names():
    assert conf_value('PACKAGE_NAME') == NAME
    assert conf_value('BUILT_MODULE_NAME[0]') == 'cgroup_energy'
    assert conf_value('AUTOINSTALL') == 'yes'
    assert re.search(conf_value('BUILD_EXCLUSIVE_ARCH'), 'x86_64')
    assert not re.search(conf_value('BUILD_EXCLUSIVE_ARCH'), 'aarch64')


def test_exclusive_config_lists_what_the_module_uses():
    opts = set(conf_value('BUILD_EXCLUSIVE_CONFIG').split())
    assert {'CONFIG_CGROUPS', 'CONFIG_TRACEPOINTS', 'CONFIG_KERNFS',
            'CONFIG_SMP'} <= opts


@pytest.mark.parametrize('flavour', FLAVOURS)
def test_debian_kernels_have_the_exclusive_config(flavour):
    config = (kernels.kernel(flavour).kdir / '.config').read_text()
    for opt in conf_value('BUILD_EXCLUSIVE_CONFIG').split():
        assert re.search(rf'^{opt}=[ym]$', config, re.M), opt


# --- DKMS in a private tree ------------------------------------------------

@needs_dkms
def test_dkms_install(installed, tree):
    k, out = installed
    ver = cge_version()
    assert f'{NAME}/{ver}, {k.kver}, x86_64: installed' in tree.status()
    assert (tree.src / f'{NAME}-{ver}' / 'dkms.conf').exists()
    built, inst = tree.modules(k.kver)
    assert len(built) == 1 and len(inst) == 1, (built, inst, out)
    assert built[0].read_bytes() == inst[0].read_bytes()
    assert modinfo(inst[0], 'vermagic').split()[0] == k.kver
    assert modinfo(inst[0], 'version') == ver
    # signed with the (private) DKMS MOK key, as on a Secure Boot server
    assert modinfo(inst[0], 'signer') == 'DKMS module signing key'


@needs_dkms
def test_dkms_sources_are_the_listed_files(installed, tree):
    src = tree.src / f'{NAME}-{cge_version()}'
    got = {str(p.relative_to(src)) for p in src.rglob('*') if p.is_file()}
    assert got == dkms_sources()


@needs_dkms
@pytest.mark.parametrize('flavour', [f for f in FLAVOURS if f != '6.1'])
def test_dkms_build_and_remove(installed, tree, flavour):
    """Build for each other header tree, then remove that kernel only."""
    k = kernels.kernel(flavour)
    ver = cge_version()
    r = tree.dkms('build', '-m', NAME, '-v', ver, '-k', k.kver,
                  '--kernelsourcedir', str(k.kdir), k=k)
    assert r.returncode == 0, r.out
    assert f'{NAME}/{ver}, {k.kver}, x86_64: built' in tree.status()
    built, _ = tree.modules(k.kver)
    assert len(built) == 1, r.out
    assert modinfo(built[0], 'vermagic').split()[0] == k.kver
    assert modinfo(built[0], 'signer') == 'DKMS module signing key'
    log = next((tree.dtree / NAME / ver / k.kver).glob('*/log/make.log'))
    warnings = [ln for ln in log.read_text().splitlines()
                if re.search(r'\bwarning:', ln, re.I)]
    assert not warnings, '\n'.join(warnings)
    r = tree.dkms('remove', '-m', NAME, '-v', ver, '-k', k.kver)
    assert r.returncode == 0, r.out
    status = tree.status()
    assert k.kver not in status
    assert f'{installed[0].kver}, x86_64: installed' in status
    assert not (tree.dtree / NAME / ver / k.kver).exists()


def fake_kernel(root, drop=None):
    """A kernel 'build tree' with 6.1's .config, less one option."""
    k = kernels.kernel('6.1')
    root.mkdir(parents=True, exist_ok=True)
    lines = (k.kdir / '.config').read_text().splitlines()
    if drop:
        lines = [ln for ln in lines if not ln.startswith(f'{drop}=')]
        lines.append(f'# {drop} is not set')
    (root / '.config').write_text('\n'.join(lines) + '\n')
    return root


@needs_dkms
def test_unsuitable_kernel_is_skipped_with_a_reason(installed, tree):
    ver = cge_version()
    cases = [(opt, ['-k', f'6.1.0-0-no-{opt.lower()}', '--kernelsourcedir',
                    str(fake_kernel(tree.root / 'fake' / opt, opt))])
             for opt in conf_value('BUILD_EXCLUSIVE_CONFIG').split()]
    cases.append(('arch', ['-k', installed[0].kver, '-a', 'aarch64',
                           '--kernelsourcedir', str(installed[0].kdir)]))
    for what, args in cases:
        r = tree.dkms('build', '-m', NAME, '-v', ver, *args)
        assert r.returncode == 77, f'{what}: {r.out}'
        assert 'BUILD_EXCLUSIVE directive which does not match' in r.out, r.out
    status = tree.status()
    assert 'no-config' not in status and 'aarch64' not in status, status


@needs_dkms
def test_dkms_install_upgrades_and_reports_a_skip(tmp_path):
    """An older registered version is removed; a skipped kernel is named."""
    with private_tree('-2') as t:
        old = t.src / f'{NAME}-0.0.9'
        old.mkdir(parents=True)
        shutil.copy(REPO / 'Kbuild', old)
        (old / 'dkms.conf').write_text((REPO / 'dkms.conf').read_text()
                                       .replace(cge_version(), '0.0.9'))
        r = t.dkms('add', '-m', NAME, '-v', '0.0.9')
        assert r.returncode == 0, r.out
        assert f'{NAME}/0.0.9' in t.status()
        fake = fake_kernel(tmp_path / 'kdir', 'CONFIG_TRACEPOINTS')
        (t.lib / '6.1.0-0-notp').mkdir()
        r = run(['make', '--no-print-directory', 'dkms-install',
                 'KVER=6.1.0-0-notp', f'KDIR={fake}'], env=t.env())
        assert r.returncode != 0
        assert 'DKMS skipped 6.1.0-0-notp' in r.out, r.out
        assert 'BUILD_EXCLUSIVE' in r.out
        status = t.status()
        assert '0.0.9' not in status and not old.exists(), status
        assert f'{NAME}/{cge_version()}: added' in status
        r = t.make('dkms-uninstall')
        assert r.returncode == 0, r.out
        assert t.status().strip() == ''
        assert list(t.src.iterdir()) == []


# --- the DKMS-built module in a VM ------------------------------------------

def example_options():
    """key=value pairs of the modprobe.d example's commented options lines."""
    text = (REPO / 'dist/modprobe.d/cgroup-energy.conf').read_text()
    opts = {}
    for m in re.finditer(r'^#options cgroup_energy (.+)$', text, re.M):
        for kv in m.group(1).split():
            k, v = kv.split('=', 1)
            opts[k] = v
    return opts


def example_mount_options():
    """The mount unit's options, with its group by a name that every Debian
    has (the guest's /etc is the host's, which lacks the package's group;
    mount(8) resolves the name either way), and that group's gid."""
    text = (REPO / 'dist/systemd' / UNIT).read_text()
    opts = re.search(r'^Options=(\S+)$', text, re.M).group(1)
    assert 'gid=cgroup-energy' in opts.split(','), opts
    return (opts.replace('gid=cgroup-energy', 'gid=nogroup'),
            str(grp.getgrnam('nogroup').gr_gid))


def module_params(ko):
    """{name: description} from modinfo."""
    return dict(ln.split(':', 1) for ln in modinfo(ko, 'parm').splitlines())


@needs_dkms
def test_modprobe_example_lists_every_parameter_with_its_default(installed,
                                                                  tree):
    _, inst = tree.modules(installed[0].kver)
    params = module_params(inst[0])
    opts = example_options()
    assert set(opts) == set(params)
    wrong = {p: (v, params[p]) for p, v in opts.items()
             if f'(default {v})' not in params[p]}
    assert not wrong, wrong


@needs_dkms
def test_dkms_module_loads_in_vm(vm, installed, tree):
    k = installed[0]
    _, inst = tree.modules(k.kver)
    ko = inst[0]
    # the example's values (its test checks they are the defaults)
    args = ' '.join(f'{p}={v}' for p, v in example_options().items())
    mopts, gid = example_mount_options()
    mp = '/sys/fs/cgroup_energy'
    res = vm.run({
        'insmod': f'insmod {ko} {args}',
        'mount': f'mount -t cgroup_energy -o nosuid,nodev,noexec '
                 f'cgroup_energy {mp}',
        'work': 'i=0; while [ $i -lt 20000 ]; do i=$((i+1)); done; sleep 1',
        'stat': f'cat {mp}/energy.stat',
        'info': f'cat {mp}/energy.info',
        'example-options': f'umount {mp} && mount -t cgroup_energy '
                           f'-o {mopts} cgroup_energy {mp} && '
                           f'stat -c "%a %g" {mp}/energy.stat',
        'unload': f'umount {mp} && rmmod cgroup_energy',
    }, flavour='6.1')
    res.check()
    stat = dict(ln.split(None, 1) for ln in res['stat'].output.splitlines())
    missing = [key for key in KEYS if key not in stat]
    assert not missing, res['stat'].output
    assert all(stat[key].strip().isdigit() for key in KEYS), stat
    assert int(stat['usage_usec']) > 0 and int(stat['total_uj']) > 0, stat
    assert int(stat['total_uj']) == sum(
        int(stat[k]) for k in ('energy_uj', 'idle_uj', 'irq_uj',
                               'softirq_uj', 'steal_uj'))
    assert res['example-options'].output.split() == ['440', gid]


@needs_dkms
def test_dkms_uninstall_leaves_nothing(installed, tree):
    r = tree.make('dkms-uninstall')
    assert r.returncode == 0, r.out
    assert tree.status().strip() == ''
    assert not (tree.dtree / NAME).exists()
    assert list(tree.src.iterdir()) == []
    left = [p for p in tree.lib.rglob('*') if not p.is_dir()]
    assert left == []
    r = tree.make('dkms-uninstall')                    # nothing to remove
    assert r.returncode == 0, r.out


# --- systemd units, make install -------------------------------------------

def stage_install(destdir, **env):
    e = dict(os.environ, **env)
    r = run(['make', '--no-print-directory', 'install',
             f'DESTDIR={destdir}'], env=e)
    assert r.returncode == 0, r.out
    return r


def linked_docs(docdir):
    """What make install puts in @docdir for the README's links: docs/ as
    in the tree, dist/'s dashboard, deploy files and web configuration
    example in examples/."""
    docs = {f'{docdir}/docs/{p.name}' for p in REPO.glob('docs/*')
            if p.suffix in ('.md', '.svg')}
    ex = {f'{docdir}/examples/{p.relative_to(REPO / "dist")}'
          for g in ('grafana/*.json', 'kubernetes/*.yaml', 'prometheus/*.yml',
                    'energystat/*.yml')
          for p in REPO.glob(f'dist/{g}')}
    assert 8 <= len(docs) <= 20 and 4 <= len(ex) <= 10, (docs, ex)
    return docs | ex


def test_install_uninstall_leaves_nothing(tmp_path):
    dest = tmp_path / 'stage'
    dest.mkdir()
    (dest / 'usr/local/bin').mkdir(parents=True)     # was there before
    (dest / 'usr/local/bin/other').write_text('x')
    before = listing([dest])
    stage_install(dest)
    after = listing([dest])
    files = {str(Path(p).relative_to(dest)) for p in after - before
             if not Path(p).is_dir()}
    assert files == {
        'usr/local/bin/energystat',
        'usr/local/share/man/man1/energystat.1',
        f'usr/local/lib/systemd/system/{UNIT}',
        'usr/local/lib/systemd/system/energystat-exporter.service',
        'usr/local/etc/default/energystat-exporter',
        'usr/local/lib/sysusers.d/energystat.conf',
        f'usr/local/lib/systemd/system/{TEXTFILE}.service',
        f'usr/local/lib/systemd/system/{TEXTFILE}.timer',
        'usr/local/lib/modules-load.d/cgroup-energy.conf',
        'usr/local/share/doc/cgroup-energy/modprobe.d/cgroup-energy.conf',
        'usr/local/share/doc/cgroup-energy/README.md',
        'usr/local/share/doc/cgroup-energy/INSTALLED',
    } | linked_docs('usr/local/share/doc/cgroup-energy')
    stage_install(dest)                                # twice is fine
    r = run(['make', '--no-print-directory', 'uninstall',
             f'DESTDIR={dest}'])
    assert r.returncode == 0, r.out
    assert listing([dest]) == before


def test_install_honours_prefix(tmp_path):
    stage_install(tmp_path, PREFIX='/usr')
    assert (tmp_path / 'usr/bin/energystat').exists()
    assert (tmp_path / f'usr/lib/systemd/system/{UNIT}').exists()
    assert (tmp_path / 'usr/lib/modules-load.d/cgroup-energy.conf').exists()
    r = run(['make', '--no-print-directory', 'uninstall',
             f'DESTDIR={tmp_path}', 'PREFIX=/usr'])
    assert r.returncode == 0, r.out
    assert list(tmp_path.iterdir()) == []


def test_modules_load_d_loads_the_module():
    text = (REPO / 'dist/modules-load.d/cgroup-energy.conf').read_text()
    lines = [ln.strip() for ln in text.splitlines()
             if ln.strip() and not ln.lstrip().startswith(('#', ';'))]
    assert lines == ['cgroup_energy']


def verify(paths, manpath=None):
    """systemd-analyze verify; man pages from manpath if man is there."""
    argv = ['systemd-analyze', 'verify']
    env = dict(os.environ)
    if manpath and shutil.which('man'):
        env['MANPATH'] = str(manpath)
    else:
        argv.append('--man=no')
    r = run(argv + [str(p) for p in paths], env=env)
    assert r.returncode == 0 and not r.stderr.strip(), r.out


def test_mount_unit_verifies(tmp_path):
    need.need('systemd-analyze', 'systemd')
    stage_install(tmp_path)
    unit = tmp_path / 'usr/local/lib/systemd/system' / UNIT
    verify([unit], tmp_path / 'usr/local/share/man')
    text = unit.read_text()
    assert re.search(r'^Where=/sys/fs/cgroup_energy$', text, re.M)
    assert re.search(r'^Type=cgroup_energy$', text, re.M)
    assert re.search(r'^After=.*modprobe@cgroup_energy\.service', text, re.M)
    assert re.search(r'^After=.*systemd-modules-load\.service', text, re.M)
    assert re.search(r'^ConditionPathIsDirectory=/sys/fs/cgroup_energy$',
                     text, re.M)


def test_textfile_units_verify(tmp_path):
    """The node_exporter textfile service and timer: systemd-analyze verify
    (it checks that ExecStart's program exists: the staged tool stands in
    for the installed path), ExecStart names the installed tool, the timer
    starts the service."""
    need.need('systemd-analyze', 'systemd')
    stage = tmp_path / 'stage'
    stage_install(stage)
    units = stage / 'usr/local/lib/systemd/system'
    svc = (units / f'{TEXTFILE}.service').read_text()
    assert re.search(r'^ExecStart=/usr/local/bin/energystat --prometheus '
                     r'--output=\$\{TEXTFILE\}$', svc, re.M), svc
    assert re.search(r'^Environment=TEXTFILE=/var/lib/prometheus/'
                     r'node-exporter/cgroup_energy\.prom$', svc, re.M)
    assert re.search(r'^Type=oneshot$', svc, re.M)
    check = tmp_path / 'check'
    check.mkdir()
    (check / f'{TEXTFILE}.service').write_text(svc.replace(
        'ExecStart=/usr/local', f'ExecStart={stage}/usr/local'))
    shutil.copy(units / f'{TEXTFILE}.timer', check)
    verify([check / f'{TEXTFILE}.service', check / f'{TEXTFILE}.timer'],
           stage / 'usr/local/share/man')
    timer = (units / f'{TEXTFILE}.timer').read_text()
    assert re.search(r'^OnUnitActiveSec=15s$', timer, re.M)
    assert re.search(r'^WantedBy=timers.target$', timer, re.M)


def test_install_doc_fstab_line_makes_a_valid_unit(tmp_path):
    need.need('systemd-analyze', 'systemd')
    if not Path('/lib/systemd/system-generators/systemd-fstab-generator'
                ).exists():
        need.missing('systemd-fstab-generator missing (apt-get install '
                     'systemd)')
    doc = (REPO / 'docs/install.md').read_text()
    lines = [ln.strip() for ln in doc.splitlines()
             if re.match(r'\s*cgroup_energy\s+/sys/fs/cgroup_energy\s', ln)]
    assert len(lines) == 1, lines
    (tmp_path / 'fstab').write_text(lines[0] + '\n')
    out = tmp_path / 'gen'
    out.mkdir()
    env = dict(os.environ, SYSTEMD_FSTAB=str(tmp_path / 'fstab'),
               SYSTEMD_PROC_CMDLINE='')
    r = run(['/lib/systemd/system-generators/systemd-fstab-generator',
             str(out), str(out), str(out)], env=env)
    assert r.returncode == 0, r.out
    unit = out / UNIT
    text = unit.read_text()
    assert 'After=modprobe@cgroup_energy.service' in text, text
    verify([unit])


def test_real_dkms_trees_untouched(real_before):
    """Last: nothing above wrote to the machine's own DKMS or module trees."""
    ours = re.compile(r'cgroup[-_]energy|/var/lib/dkms/')
    before = {p for p in real_before if ours.search(p)}
    after = {p for p in listing(REAL_TREES) if ours.search(p)}
    assert after == before
