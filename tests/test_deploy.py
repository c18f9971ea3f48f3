# SPDX-License-Identifier: GPL-2.0
"""The deploy files: the alerts (dist/prometheus/cgroup-energy-alerts.rules.yml)
pass `promtool check rules`, each fires in `promtool test rules` on the input
it is for and none fires on a healthy node; the PrometheusRule holds the same
groups; the Kubernetes manifests (dist/kubernetes/) parse, and the DaemonSet
runs the exporter unprivileged on the node's read-only tree, on the port
that the PodMonitor scrapes. (The DaemonSet's command line is parsed by
energystat in tests/test_docs.py.) No cluster runs them here.

Run: /usr/bin/python3 -m pytest -q tests/test_deploy.py
"""

import re
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml  # python3-yaml (tests/deps.sh)

REPO = Path(__file__).resolve().parents[1]
RULES = REPO / 'dist/prometheus/cgroup-energy-alerts.rules.yml'
KUBE = REPO / 'dist/kubernetes'
JOB = 'cgroup_energy'
PORT = 10043
MOUNT = '/sys/fs/cgroup_energy'
ALERTS = {'CgroupEnergyModuleMissing', 'CgroupEnergySamplerOverruns',
          'CgroupEnergyStaleSamples', 'CgroupEnergyExporterDown',
          'CgroupEnergyExporterAbsent'}


def promtool():
    exe = shutil.which('promtool')
    assert exe, 'promtool missing (apt-get install prometheus)'
    return exe


def rules():
    return yaml.safe_load(RULES.read_text())


def alert_rules():
    return {r['alert']: r for g in rules()['groups'] for r in g['rules']}


def manifests():
    """[(file name, document)] of dist/kubernetes/*.yaml."""
    out = []
    for f in sorted(KUBE.glob('*.yaml')):
        out += [(f.name, d) for d in yaml.safe_load_all(f.read_text()) if d]
    return out


def one(kind):
    found = [d for _, d in manifests() if d['kind'] == kind]
    assert len(found) == 1, (kind, len(found))
    return found[0]


# --- the alerts ------------------------------------------------------------

def test_promtool_check_rules():
    r = subprocess.run([promtool(), 'check', 'rules', str(RULES)],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stdout + r.stderr
    assert f'SUCCESS: {len(ALERTS)} rules found' in r.stdout, r.stdout
    assert set(alert_rules()) == ALERTS


def test_prometheusrule_holds_the_rules_file():
    assert one('PrometheusRule')['spec'] == rules()


def series(name, inst, values, **labels):
    lab = dict(labels, job=JOB, instance=inst)
    text = ', '.join(f'{k}="{v}"' for k, v in sorted(lab.items()))
    return {'series': f'{name}{{{text}}}', 'values': values}


def node(inst, up='1x60', module='1x60', samples='0+600x60',
         overruns='0x60'):
    """A node's input series, 60 minutes at 1 per minute; None leaves one
    out (the exporter serves no module counters while the module is gone)."""
    out = [series('up', inst, up)]
    for name, v in (('cgroup_energy_up', module),
                    ('cgroup_energy_samples_total', samples),
                    ('cgroup_energy_sampler_overruns_total', overruns)):
        if v is not None:
            out.append(series(name, inst, v))
    return out


def fired(alert, inst=None):
    """The alert as promtool reports it: its labels, annotations rendered
    (the rules' only template is {{ $labels.instance }})."""
    r = alert_rules()[alert]
    labels = dict(r['labels'], job=JOB)
    if inst:
        labels['instance'] = inst
    ann = {}
    for k, v in r['annotations'].items():
        assert not re.sub(r'\{\{ \$labels\.instance \}\}', '', v).count('{{')
        ann[k] = v.replace('{{ $labels.instance }}', inst or '')
    return {'exp_labels': labels, 'exp_annotations': ann}


def expect(times, firing=(), inst=None):
    """alert_rule_tests: at each of @times, the alerts of @firing fire (for
    @inst) and every other alert is silent."""
    return [{'eval_time': t, 'alertname': a,
             'exp_alerts': [fired(a, inst)] if a in firing else []}
            for t in times for a in sorted(ALERTS)]


CASES = {
    # healthy: the module samples 10 times a second, no overrun
    'healthy': (node('n1'), expect(['4m', '10m', '30m', '59m'])),
    # the exporter serves cgroup_energy_up 0 and no module counters
    'module missing': (
        node('n1', module='0x60', samples=None, overruns=None),
        expect(['5m'], inst='n1') +
        expect(['15m', '59m'], {'CgroupEnergyModuleMissing'}, 'n1')),
    # an overrun every minute
    'overruns': (node('n1', overruns='0+1x60'),
                 expect(['10m'], inst='n1') +
                 expect(['30m', '59m'], {'CgroupEnergySamplerOverruns'},
                        'n1')),
    # one overrun, then none: not an alert
    'one overrun': (node('n1', overruns='0x4 1x55'),
                    expect(['10m', '20m', '40m'], inst='n1')),
    # the module is read but its sample counter stops at 20m
    'stale': (node('n1', samples='0+600x20 12000x39'),
              expect(['20m', '28m'], inst='n1') +
              expect(['35m', '59m'], {'CgroupEnergyStaleSamples'}, 'n1')),
    # Prometheus cannot scrape the exporter: up 0, none of its series
    'exporter down': (node('n1', up='0x60', module=None, samples=None,
                           overruns=None),
                      expect(['3m'], inst='n1') +
                      expect(['10m', '59m'], {'CgroupEnergyExporterDown'},
                             'n1')),
    # no target in the job at all
    'no exporter': ([{'series': 'prometheus_build_info{job="prometheus"}',
                      'values': '1x60'}],
                    expect(['10m']) +
                    expect(['20m', '59m'], {'CgroupEnergyExporterAbsent'})),
}


def test_alerts_fire_and_stay_silent(tmp_path):
    """Every alert fires on its input and on no other; nothing fires on a
    healthy node (each case is one promtool test group)."""
    tests = [{'name': name, 'interval': '1m', 'input_series': inp,
              'alert_rule_test': checks}
             for name, (inp, checks) in CASES.items()]
    fires = {c['alertname'] for t in tests for c in t['alert_rule_test']
             if c['exp_alerts']}
    assert fires == ALERTS
    n = sum(len(t['alert_rule_test']) for t in tests)
    assert 50 <= n <= 200, n
    f = tmp_path / 'alerts.test.yml'
    f.write_text(yaml.safe_dump({'rule_files': [str(RULES)],
                                 'evaluation_interval': '1m',
                                 'tests': tests}))
    r = subprocess.run([promtool(), 'test', 'rules', str(f)],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    assert 'SUCCESS' in r.stdout, r.stdout


def test_promtool_test_catches_a_wrong_expectation(tmp_path):
    """The check itself: an alert said to fire on a healthy node fails."""
    inp, _ = CASES['healthy']
    test = {'interval': '1m', 'input_series': inp,
            'alert_rule_test': expect(['30m'], {'CgroupEnergyStaleSamples'},
                                      'n1')}
    f = tmp_path / 'wrong.test.yml'
    f.write_text(yaml.safe_dump({'rule_files': [str(RULES)],
                                 'evaluation_interval': '1m',
                                 'tests': [test]}))
    r = subprocess.run([promtool(), 'test', 'rules', str(f)],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 1, r.stdout + r.stderr


# --- the Kubernetes manifests ----------------------------------------------

def pod_and_container():
    ds = one('DaemonSet')
    pod = ds['spec']['template']['spec']
    (c,) = pod['containers']
    return ds, pod, c


def test_manifest_kinds():
    kinds = sorted((f, d['apiVersion'], d['kind']) for f, d in manifests())
    assert kinds == [
        ('daemonset.yaml', 'apps/v1', 'DaemonSet'),
        ('daemonset.yaml', 'v1', 'Namespace'),
        ('podmonitor.yaml', 'monitoring.coreos.com/v1', 'PodMonitor'),
        ('prometheusrule.yaml', 'monitoring.coreos.com/v1',
         'PrometheusRule')]
    ns = one('Namespace')['metadata']['name']
    for _, d in manifests():
        if d['kind'] != 'Namespace':
            assert d['metadata']['namespace'] == ns, d['kind']
    # hostPath volumes need the namespace's Pod Security level privileged
    assert one('Namespace')['metadata']['labels'][
        'pod-security.kubernetes.io/enforce'] == 'privileged'


def test_daemonset_reads_the_node_tree_read_only():
    _, pod, c = pod_and_container()
    (vol,) = pod['volumes']
    # the mount's parent, which exists before the module loads and after
    # it unloads: the pod starts at once and sees the node's later mounts
    parent, leaf = MOUNT.rsplit('/', 1)
    assert vol['hostPath'] == {'path': parent, 'type': 'Directory'}
    (vm,) = c['volumeMounts']
    assert vm['name'] == vol['name'] and vm['readOnly'] is True
    assert vm['mountPropagation'] == 'HostToContainer'
    args = c['args']
    assert c['command'] == ['/usr/bin/energystat']
    assert args[args.index('--root') + 1] == vm['mountPath'] + '/' + leaf
    assert args[args.index('--listen') + 1] == str(PORT)
    assert c['ports'] == [{'name': 'metrics', 'containerPort': PORT,
                           'protocol': 'TCP'}]


def test_daemonset_is_unprivileged():
    _, pod, c = pod_and_container()
    for k in ('hostNetwork', 'hostPID', 'hostIPC'):
        assert not pod.get(k), k
    assert pod.get('hostUsers', True) is True   # else not in the node's gid
    assert pod['automountServiceAccountToken'] is False
    psc = pod['securityContext']
    assert psc['runAsNonRoot'] is True
    assert psc['runAsUser'] > 0 and psc['runAsGroup'] > 0
    groups = psc['supplementalGroups']
    assert len(groups) == 1 and isinstance(groups[0], int) and groups[0] > 0
    assert psc['seccompProfile'] == {'type': 'RuntimeDefault'}
    sc = c['securityContext']
    assert sc == {'privileged': False, 'allowPrivilegeEscalation': False,
                  'readOnlyRootFilesystem': True,
                  'capabilities': {'drop': ['ALL']}}


def test_podmonitor_scrapes_the_daemonset_as_the_alerts_job():
    ds, pod, c = pod_and_container()
    pm = one('PodMonitor')['spec']
    labels = ds['spec']['template']['metadata']['labels']
    assert pm['selector']['matchLabels'].items() <= labels.items()
    assert ds['spec']['selector'] == pm['selector']
    (ep,) = pm['podMetricsEndpoints']
    assert ep['port'] in [p['name'] for p in c['ports']]
    assert ep['path'] == '/metrics'
    job = [r for r in ep['relabelings'] if r.get('targetLabel') == 'job']
    assert job == [{'action': 'replace', 'targetLabel': 'job',
                    'replacement': JOB}]
    # the alerts name that job
    assert f'job="{JOB}"' in alert_rules()['CgroupEnergyExporterDown']['expr']


def test_prometheus_md_lists_the_alerts():
    """docs/prometheus.md's table of alerts: each rule once, its `for`."""
    text = (REPO / 'docs/prometheus.md').read_text()
    rows = re.findall(r'^\| `(CgroupEnergy\w+)` \| .* \| (\w+) \|$', text,
                      re.M)
    assert sorted(rows) == sorted((a, r['for'])
                                  for a, r in alert_rules().items())
