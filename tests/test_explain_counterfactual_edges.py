"""Counterfactuals a user applies by hand must work, and the simple ones must be found:
each case here was wrong before its fix (a change missed, a count too high)."""

from __future__ import annotations

import yaml

from batchsched.explain import counterfactuals, explain, render
from batchsched.scenario import Scenario, parse_scenario, run_scenario


def with_config(second_tier: str) -> str:
    """A scenario's head: enqueue and allocate, priority and gang, then predicates and
    ``second_tier``'s plugins."""
    return ('version: 1\nconfig:\n  actions: "enqueue, allocate"\n  tiers:\n'
            '  - plugins: [{name: priority}, {name: gang}]\n'
            f'  - plugins: [{{name: predicates}}, {second_tier}]\n')


def scenario_of(text: str) -> Scenario:
    return parse_scenario(yaml.safe_load(text), source="test.yaml")


def texts(scenario: Scenario, job: str) -> list[str]:
    return [change["text"] for change in counterfactuals(scenario, job=job, max_nodes=4)]


NUMA_INIT = with_config("{name: numa-aware}") + """
nodes:
- name: n1
  allocatable: {cpu: 4, memory: 8Gi, pods: 110}
  numaTopology:
    policies: {CPUManagerPolicy: static, TopologyManagerPolicy: single-numa-node}
    numares: {cpu: {allocatable: "0-3", capacity: 4}}
    cpuDetail: {0: {numa: 0, socket: 0, core: 0}, 1: {numa: 0, socket: 0, core: 1},
                2: {numa: 1, socket: 1, core: 2}, 3: {numa: 1, socket: 1, core: 3}}
jobs: [{name: web, minMember: 1}]
tasks:
- {name: web-0, job: web, requests: {cpu: 4, memory: 1Gi}, initRequests: {cpu: 1, memory: 2Gi},
   annotations: {volcano.sh/numa-topology-policy: single-numa-node}}
"""


def test_smaller_requests_scale_what_the_app_containers_ask() -> None:
    """NUMA and device plugins read the app containers' requests: they were left as
    asked, and halving the pod's requests was never found to help."""
    assert "the job's pending requests times 0.5" in texts(scenario_of(NUMA_INIT),
                                                            "default/web")


ZERO_GPU = with_config("{name: proportion}") + """
nodes: [{name: n1, allocatable: {cpu: 4, memory: 8Gi, pods: 110}}]
jobs: [{name: web, minMember: 2}]
tasks:
- {name: web-0, job: web, requests: {cpu: 3, memory: 1Gi, nvidia.com/gpu: 0}}
- {name: web-1, job: web, requests: {cpu: 3, memory: 1Gi, nvidia.com/gpu: 0}}
"""


def test_a_device_asked_as_none_stays_none_when_requests_are_scaled() -> None:
    """'One at least' is for a device asked: a zero became one GPU no node has."""
    assert "the job's pending requests times 0.5" in texts(scenario_of(ZERO_GPU),
                                                            "default/web")


NAME_TAKEN = with_config("{name: nodeorder}") + """
nodes:
- {name: n1, allocatable: {cpu: 4, memory: 8Gi, pods: 110}}
- {name: n1-extra-0, allocatable: {cpu: 4, memory: 8Gi, pods: 110}}
jobs: [{name: busy, minMember: 1, phase: Running}, {name: web, minMember: 2}]
tasks:
- {name: busy-0, job: busy, node: n1, phase: Running, requests: {cpu: 4}}
- {name: busy-1, job: busy, node: n1-extra-0, phase: Running, requests: {cpu: 4}}
- {name: web-0, job: web, requests: {cpu: 4}}
- {name: web-1, job: web, requests: {cpu: 4}}
"""


def test_an_added_node_never_takes_the_name_of_a_node_the_cluster_has() -> None:
    """The first added node replaced n1-extra-0 (and its pod): one node too many."""
    assert "2 more node(s) like n1" in texts(scenario_of(NAME_TAKEN), "default/web")


VNPU_MODES = with_config(
    "{name: deviceshare, arguments: {deviceshare.AscendHAMiVNPUEnable: true}}") + """
nodes:
- name: atlas-b
  allocatable: {cpu: 8, memory: 32Gi, pods: 110, huawei.com/Ascend310P: 4}
  annotations:
    hami.io/node-register-Ascend310P: '[{"id":"npu-b0","count":4,"devmem":21527,"devcore":8}]'
- name: soft-a
  allocatable: {cpu: 8, memory: 32Gi, pods: 110, huawei.com/Ascend310P: 4}
  annotations:
    hami-vnpu-core: "true"
    hami.io/node-register-Ascend310P: '[{"id":"npu-s0","count":4,"devmem":21527,"devcore":8}]'
jobs: [{name: busy, minMember: 1, phase: Running}, {name: inference, minMember: 1}]
tasks:
- {name: busy-0, job: busy, node: soft-a, phase: Running, requests: {cpu: 8, memory: 8Gi}}
- {name: inference-0, job: inference, annotations: {huawei.com/vnpu-mode: hami-core},
   requests: {cpu: 4, memory: 8Gi, huawei.com/Ascend310P: 1,
              huawei.com/Ascend310P-memory: 5000, huawei.com/Ascend310P-core: 90}}
"""


def test_nodes_whose_annotations_name_other_switches_are_other_shapes() -> None:
    """atlas-b stood for soft-a too (annotations were no part of a shape), and a node
    like atlas-b cannot take a hami-core vNPU."""
    assert "1 more node(s) like soft-a" in texts(scenario_of(VNPU_MODES),
                                                  "default/inference")


GATED = with_config("{name: proportion}") + """
nodes: [{name: n1, allocatable: {cpu: 4, memory: 8Gi, pods: 110}}]
jobs: [{name: busy, minMember: 1, phase: Running}, {name: web, minMember: 1}]
tasks:
- {name: busy-0, job: busy, node: n1, phase: Running, requests: {cpu: 4}}
- {name: web-0, job: web, requests: {cpu: 2}}
- {name: web-1, job: web, requests: {cpu: 2}, schedulingGates: [example.com/hold]}
"""


def test_a_gated_pod_does_not_keep_its_job_from_every_counterfactual() -> None:
    """No change places a pod waiting for its gates: the job starts without it."""
    scenario = scenario_of(GATED)
    assert "1 more node(s) like n1" in texts(scenario, "default/web")
    assert not run_scenario(scenario).binds


ADMITTED_IN_CLOSED = """
version: 1
config:
  actions: "enqueue, allocate"
  tiers:
  - plugins: [{name: gang}]
  - plugins: [{name: predicates}, {name: proportion}]
queues: [{name: small, capability: {cpu: 4, memory: 8Gi}, state: Closed}]
nodes: [{name: n1, allocatable: {cpu: 8, memory: 8Gi, pods: 10}}]
jobs: [{name: adm, queue: small, minMember: 2, minResources: {cpu: 2, memory: 1Gi},
        phase: Inqueue}]
"""


def test_an_admitted_pod_group_without_pods_is_not_blamed_on_its_closed_queue() -> None:
    """It waits for its controller, as in an Open queue: the queue decides nothing."""
    report = explain(scenario_of(ADMITTED_IN_CLOSED), job="default/adm")
    assert report["verdict"] == "nothing to place: the pod group has no pods (yet)"
    assert report["decidedBy"] == []


FINISHED_NOWHERE = with_config("{name: proportion}") + """
nodes: [{name: n1, allocatable: {cpu: 4, memory: 8Gi, pods: 110}}]
jobs: [{name: web, minMember: 1}]
tasks:
- {name: web-0, job: web, requests: {cpu: 8}}
- {name: web-1, job: web, requests: {cpu: 1}, phase: Succeeded}
"""


def test_a_finished_task_on_no_node_is_finished_and_decided_by_nothing() -> None:
    report = explain(scenario_of(FINISHED_NOWHERE), task="default/web-1")
    assert (report["verdict"], report["decidedBy"]) == ("finished (Succeeded)", [])
    report["counterfactuals"] = []
    assert "it does not wait to start: nothing to change" in render(report)
