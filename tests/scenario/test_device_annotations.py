"""Device annotations Volcano cannot read are skipped, as Volcano skips them, and said:
a card a running pod holds that the scheduler does not count is a card it may give
again. A placed pod's ``volcano.sh/gpu-index`` names the GPUs it holds."""

from __future__ import annotations

from typing import Any

import yaml

from batchsched.scenario import parse_scenario, run_scenario


def _scenario(text: str) -> Any:
    return parse_scenario(yaml.safe_load(text))


def test_an_unreadable_ascend_register_is_said() -> None:
    scenario = _scenario("""
version: 1
config: {actions: allocate, tiers: [{plugins: [{name: gang}, {name: deviceshare}]}]}
queues: [{name: default}]
nodes:
- name: atlas-a
  allocatable: {cpu: 8, pods: 10, huawei.com/Ascend310P: 4}
  annotations:
    hami.io/node-register-Ascend310P: 'REGISTER'
""".replace("REGISTER", '[{"id":"a0","count":"4","devmem":21527,"devcore":8,'
                          '"type":"Ascend310P","health":true}]'))
    (warning,) = scenario.warnings
    assert "nodes[0] (atlas-a).annotations.hami.io/node-register-Ascend310P" in warning
    assert "the node has no Ascend310P cards" in warning


def test_unreadable_card_annotations_of_pods_and_nodes_are_said() -> None:
    scenario = _scenario("""
version: 1
config: {actions: allocate, tiers: [{plugins: [{name: gang}]}]}
queues: [{name: default}]
nodes:
- {name: n1, allocatable: {cpu: 8, pods: 10}, annotations: {volcano.sh/gpu-unhealthy-ids: "1;"}}
jobs: [{name: run, minMember: 1, phase: Running}]
tasks:
- {name: r0, job: run, node: n1, phase: Running, requests: {cpu: 1},
   annotations: {volcano.sh/gpu-index: "0 ",
                 hami.io/Ascend310P-devices-allocated: "npu-a0,Ascend310P,21527:;"}}
""")
    said = "\n".join(scenario.warnings)
    assert "nodes[0] (n1).annotations.volcano.sh/gpu-unhealthy-ids: '1;' name no card" in said
    assert "tasks[0] (default/r0).annotations.volcano.sh/gpu-index: '0 '" in said
    assert "tasks[0] (default/r0).annotations.hami.io/Ascend310P-devices-allocated" in said


def test_a_running_share_is_held_on_the_gpu_its_index_names() -> None:
    """r0 holds 600m of GPU 1: the next 600m share goes on GPU 0, not on GPU 1 again."""
    result = run_scenario(_scenario("""
version: 1
config:
  actions: "enqueue, allocate"
  tiers:
  - plugins: [{name: priority}, {name: gang}]
  - plugins:
    - {name: predicates}
    - {name: deviceshare, arguments: {deviceshare.GPUSharingEnable: true}}
queues: [{name: default}]
nodes:
- {name: n1, allocatable: {cpu: 32, memory: 128Gi, nvidia.com/gpu: 2, pods: 110}}
jobs:
- {name: run, minMember: 1, phase: Running}
- {name: a, minMember: 1, phase: Inqueue, createdAt: 1}
tasks:
- {name: r0, job: run, node: n1, phase: Running, requests: {cpu: 1, nvidia.com/gpu: 600m},
   annotations: {volcano.sh/gpu-index: "1"}}
- {name: a0, job: a, requests: {cpu: 1, nvidia.com/gpu: 600m}}
"""))
    assert result.binds == {"default/a0": "n1"}
    assert result.gpu_devices == {"default/a0": [0]}
