"""Volcano's GPU sharing of ``volcano.sh/gpu-memory`` and ``volcano.sh/gpu-number``
(deviceshare's ``GPUSharingEnable`` and ``GPUNumberEnable``), decided as Volcano's
``api/devices/nvidia/gpushare`` decides; the ledger cases are transcribed from its
``share_test.go`` and ``device_info_test.go`` (volcano-sh/volcano, Apache-2.0)."""

from __future__ import annotations

from typing import Any

import yaml

from batchsched.api.gpushare import (
    GPU_INDEX_ANNOTATION,
    PREDICATE_TIME_ANNOTATION,
    GpuShareDevices,
    gpu_index,
    memory_asked,
    number_asked,
)
from batchsched.api.node import NodeInfo
from batchsched.api.resource import Resource
from batchsched.api.task import TaskInfo
from batchsched.framework.session import Session
from batchsched.scenario import parse_scenario, run_scenario
from batchsched.scheduler import Scheduler, run_actions

SHARING = {"deviceshare.GPUSharingEnable": True}
NUMBER = {"deviceshare.GPUNumberEnable": True}


def scenario(tasks: str, *, arguments: dict[str, Any] = SHARING, predicates: bool = True,
             node: str = "volcano.sh/gpu-memory: 2000, volcano.sh/gpu-number: 2",
             annotations: str = "{}", jobs: str = "") -> dict[str, Any]:
    plugins: list[dict[str, Any]] = [{"name": "deviceshare", "arguments": arguments}]
    if predicates:
        plugins.insert(0, {"name": "predicates"})
    body = f"""
version: 1
name: gpushare
nodes:
- {{name: n1, allocatable: {{cpu: 32, memory: 128Gi, pods: 110, {node}}},
   annotations: {annotations}}}
jobs:
- {{name: run, minMember: 1, phase: Running}}
- {{name: j, minMember: 1, phase: Inqueue}}
{jobs}
tasks:
{tasks}
"""
    doc: dict[str, Any] = yaml.safe_load(body)
    doc["config"] = {"actions": "enqueue, allocate",
                     "tiers": [{"plugins": [{"name": "priority"}, {"name": "gang"}]},
                               {"plugins": plugins}]}
    return doc


def decide(doc: dict[str, Any]) -> dict[str, Any]:
    return run_scenario(parse_scenario(doc, source="<test>")).to_json()


def reasons(decisions: dict[str, Any], task: str) -> list[str]:
    return [event["message"] for event in decisions["events"]
            if event["object"] == f"default/{task}" and event["reason"] == "FailedScheduling"]


# -- the ledger (share_test.go, device_info_test.go) ---------------------------------------


def test_an_over_subscribed_card_reports_no_idle_memory_and_is_not_offered() -> None:
    # TestGetDevicesIdleGPUMemory_OverSubscribedCardReportsZero and
    # TestPredicateGPUbyMemory_OverSubscribedCardNotOffered: a pod asking 3000 on a
    # card of 1000 leaves it 0 idle (never a wrapped-around unsigned), and a pod
    # asking 500 is offered no card.
    cards = GpuShareDevices(1000, {0: {}})
    cards.add_task("p1", Resource.from_mapping({"volcano.sh/gpu-memory": 3000}),
                   {GPU_INDEX_ANNOTATION: "0"})
    assert cards.idle_memory(0) == 0
    assert cards.cards_with_memory(500) == []


def test_release_takes_the_pod_off_its_cards() -> None:
    # TestReleaseReturnsRemovedAnnotationKeys (the ledger's half; the annotations'
    # half is test_undoing_a_placement_gives_the_card_back_and_drops_the_annotations).
    cards = GpuShareDevices(1000, {0: {}})
    request = Resource.from_mapping({"volcano.sh/gpu-memory": 100})
    cards.add_task("pod-uid", request, {GPU_INDEX_ANNOTATION: "0",
                                        PREDICATE_TIME_ANNOTATION: "1700000000"})
    assert cards.holds("pod-uid")
    cards.remove_task("pod-uid", {GPU_INDEX_ANNOTATION: "0"})
    assert not cards.holds("pod-uid")


def test_requests_are_read_as_kubernetes_values() -> None:
    # TestGetGPUMemoryOfPod, TestGetGPUNumberOfPod: a pod's request is the larger of
    # its containers' sum and its largest init container (the scenario's requests).
    assert memory_asked(Resource.from_mapping({"volcano.sh/gpu-memory": 4})) == 4
    assert number_asked(Resource.from_mapping({"volcano.sh/gpu-number": 3})) == 3
    assert memory_asked(Resource.from_mapping({"cpu": 1})) == 0


def test_cards_come_from_capacity_less_the_unhealthy_ones() -> None:
    capacity = Resource.from_mapping({"volcano.sh/gpu-memory": 3000,
                                         "volcano.sh/gpu-number": 4})
    cards = GpuShareDevices.from_node(capacity, {"volcano.sh/gpu-unhealthy-ids": "1,x,3"})
    assert cards is not None
    assert cards.memory == 750  # Go's integer division
    assert sorted(cards.cards) == [0, 2]
    assert GpuShareDevices.from_node(
        Resource.from_mapping({"volcano.sh/gpu-memory": 3000}), {}) is None
    assert GpuShareDevices.from_node(
        Resource.from_mapping({"volcano.sh/gpu-memory": 3000,
                                  "volcano.sh/gpu-number": 0}), {}) is None


def test_gpu_index_is_read_as_go_reads_it() -> None:
    assert gpu_index({GPU_INDEX_ANNOTATION: "0,2"}) == [0, 2]
    assert gpu_index({GPU_INDEX_ANNOTATION: "0, 2"}) is None  # Atoi refuses " 2"
    assert gpu_index({GPU_INDEX_ANNOTATION: ""}) is None
    assert gpu_index({}) is None


def test_a_node_clone_keeps_its_own_ledger() -> None:
    node = NodeInfo.create("n1", Resource.from_mapping(
        {"cpu": 4, "volcano.sh/gpu-memory": 2000, "volcano.sh/gpu-number": 2}))
    assert node.gpu_share is not None
    twin = node.clone()
    assert twin.gpu_share is not None and twin.gpu_share is not node.gpu_share
    twin.gpu_share.take("t", Resource.from_mapping({"volcano.sh/gpu-memory": 10}), [0])
    assert not node.gpu_share.holds("t")


# -- sessions ------------------------------------------------------------------------------


def test_a_shared_pod_takes_the_lowest_numbered_card_with_room() -> None:
    # Volcano's predicateGPUbyMemory sorts the cards with enough idle memory and
    # Allocate takes the first: c goes on card 0 (700 idle), not on the fuller card 1,
    # which leaves no card with 700 for d.
    decisions = decide(scenario("""
- {name: r1, job: run, node: n1, phase: Running, requests: {cpu: 1, volcano.sh/gpu-memory: 300},
   annotations: {volcano.sh/gpu-index: "0"}}
- {name: r2, job: run, node: n1, phase: Running, requests: {cpu: 1, volcano.sh/gpu-memory: 800},
   annotations: {volcano.sh/gpu-index: "1"}}
- {name: c, job: j, priority: 10, requests: {cpu: 1, volcano.sh/gpu-memory: 200}}
- {name: d, job: j, priority: 1, requests: {cpu: 1, volcano.sh/gpu-memory: 700}}
"""))
    assert decisions["binds"] == {"default/c": "n1"}
    assert decisions["gpuDevices"] == {"default/c": [0]}
    assert reasons(decisions, "d") == [
        "0/1 nodes are unavailable: 1 GpuShare no enough gpu memory on node n1."]


def test_running_pods_hold_the_cards_their_gpu_index_names() -> None:
    running = """
- {name: r1, job: run, node: n1, phase: Running, requests: {cpu: 1, volcano.sh/gpu-memory: 500},
   annotations: {volcano.sh/gpu-index: "0"}}
- {name: r2, job: run, node: n1, phase: Running, requests: {cpu: 1, volcano.sh/gpu-memory: 500},
   annotations: {volcano.sh/gpu-index: "1"}}
"""
    whole = running + "- {name: w, job: j, requests: {cpu: 1, volcano.sh/gpu-number: 1}}\n"
    decisions = decide(scenario(whole, arguments=NUMBER,
                                node="volcano.sh/gpu-memory: 2000, volcano.sh/gpu-number: 2"))
    assert decisions["binds"] == {}
    assert reasons(decisions, "w") == [
        "0/1 nodes are unavailable: 1 GpuNumber no enough gpu number on node n1."]
    full = running + "- {name: w, job: j, requests: {cpu: 1, volcano.sh/gpu-memory: 1000}}\n"
    assert decide(scenario(full))["binds"] == {}


def test_a_running_pod_without_gpu_index_holds_no_card() -> None:
    decisions = decide(scenario("""
- {name: r1, job: run, node: n1, phase: Running, requests: {cpu: 1, volcano.sh/gpu-number: 1}}
- {name: w, job: j, requests: {cpu: 1, volcano.sh/gpu-number: 2}}
""", arguments=NUMBER, node="volcano.sh/gpu-memory: 2000, volcano.sh/gpu-number: 3"))
    assert decisions["binds"] == {"default/w": "n1"}
    assert decisions["gpuDevices"] == {"default/w": [0, 1]}


def test_number_mode_takes_the_first_idle_cards() -> None:
    decisions = decide(scenario("""
- {name: r1, job: run, node: n1, phase: Running, requests: {cpu: 1, volcano.sh/gpu-number: 1},
   annotations: {volcano.sh/gpu-index: "0"}}
- {name: w, job: j, requests: {cpu: 1, volcano.sh/gpu-number: 2}}
""", arguments=NUMBER, node="volcano.sh/gpu-memory: 4000, volcano.sh/gpu-number: 4"))
    assert decisions["gpuDevices"] == {"default/w": [1, 2]}


def test_unhealthy_cards_serve_nothing() -> None:
    decisions = decide(scenario(
        "- {name: t, job: j, requests: {cpu: 1, volcano.sh/gpu-memory: 500}}\n",
        annotations='{volcano.sh/gpu-unhealthy-ids: "0,1"}'))
    assert decisions["binds"] == {}
    assert reasons(decisions, "t") == [
        "0/1 nodes are unavailable: 1 GpuShare no enough gpu memory on node n1."]


def test_without_predicates_no_card_is_taken() -> None:
    # Volcano takes cards in the predicates plugin's allocate handler: without it
    # every pod sees every card idle, and only the node's total memory counts.
    tasks = "".join(f"- {{name: t{i}, job: j, requests: {{cpu: 1, volcano.sh/gpu-memory: 600}}}}\n"
                    for i in range(3))
    assert len(decide(scenario(tasks, predicates=False))["binds"]) == 3
    assert len(decide(scenario(tasks))["binds"]) == 2


def test_a_node_without_cards_passes_the_device_check() -> None:
    # No capacity for both resources: Volcano's node has no gpushare device, so only
    # the resource check applies.
    decisions = decide(scenario(
        "- {name: t, job: j, requests: {cpu: 1, volcano.sh/gpu-memory: 500}}\n",
        node="volcano.sh/gpu-memory: 2000"))
    assert decisions["binds"] == {"default/t": "n1"}


def test_undoing_a_placement_gives_the_card_back_and_drops_the_annotations() -> None:
    # A gang of two whose second pod finds no card: the statement is discarded, so
    # the first pod's card is free again and the annotations it got are gone.
    doc = scenario("""
- {name: a, job: g, requests: {cpu: 1, volcano.sh/gpu-memory: 900}}
- {name: b, job: g, requests: {cpu: 1, volcano.sh/gpu-memory: 1200}}
""", jobs="- {name: g, minMember: 2, phase: Inqueue}",
        node="volcano.sh/gpu-memory: 2000, volcano.sh/gpu-number: 2")
    parsed = parse_scenario(doc, source="<test>")
    cache = parsed.build_cache()
    Scheduler(cache, parsed.configuration).run_once()
    assert cache.binds == []
    task = cache.jobs["default/g"].tasks["default/a"]
    assert GPU_INDEX_ANNOTATION not in task.annotations
    node = cache.nodes["n1"]
    assert node.gpu_share is not None and not node.gpu_share.holds("default/a")


def test_a_bound_pod_keeps_its_card_in_the_next_session() -> None:
    doc = scenario("""
- {name: a, job: j, requests: {cpu: 1, volcano.sh/gpu-memory: 800}}
""", jobs="- {name: k, minMember: 1, phase: Inqueue}")
    parsed = parse_scenario(doc, source="<test>")
    cache = parsed.build_cache()
    scheduler = Scheduler(cache, parsed.configuration)
    scheduler.run_once()
    bound = cache.jobs["default/j"].tasks["default/a"]
    assert bound.annotations[GPU_INDEX_ANNOTATION] == "0"
    assert PREDICATE_TIME_ANNOTATION in bound.annotations
    cache.add_task(TaskInfo.create("default", "b", "default/k", Resource.from_mapping(
        {"cpu": 1, "volcano.sh/gpu-memory": 800})))
    scheduler.run_once()
    # Card 0 has 200 left: the next pod goes on card 1.
    assert cache.jobs["default/k"].tasks["default/b"].annotations[GPU_INDEX_ANNOTATION] == "1"


def test_the_node_lock_lets_one_shared_pod_through_per_session() -> None:
    tasks = "".join(f"- {{name: t{i}, job: j{i}, "
                    f"requests: {{cpu: 1, volcano.sh/gpu-memory: 100}}}}\n" for i in range(2))
    jobs = "\n".join(f"- {{name: j{i}, minMember: 1, phase: Inqueue}}" for i in range(2))
    decisions = decide(scenario(tasks, jobs=jobs,
                                arguments={**SHARING, "deviceshare.NodeLockEnable": True}))
    assert len(decisions["binds"]) == 1


def test_an_eviction_undone_leaves_the_pod_on_its_own_card() -> None:
    # p cannot fit even once a is gone (15 on cards of 10): the eviction is undone.
    # a keeps its annotation and its card 1; only card 0 is left for b.
    doc = scenario("""
- {name: a, job: run, node: n1, phase: Running, priority: 1,
   requests: {cpu: 1, volcano.sh/gpu-memory: 6},
   annotations: {volcano.sh/gpu-index: "1"}, labels: {volcano.sh/preemptable: "true"}}
- {name: p, job: j, priority: 100, requests: {cpu: 1, volcano.sh/gpu-memory: 15}}
""", node="volcano.sh/gpu-memory: 20, volcano.sh/gpu-number: 2")
    doc["priorityClasses"] = [{"name": "high", "value": 100}, {"name": "low", "value": 1}]
    doc["jobs"][0]["priorityClassName"] = "low"
    doc["jobs"][1]["priorityClassName"] = "high"
    doc["config"]["actions"] = "preempt"
    # Without gang, whose minimum would keep a from being a victim.
    doc["config"]["tiers"][0]["plugins"] = [{"name": "priority"}, {"name": "conformance"}]
    parsed = parse_scenario(doc, source="<test>")
    ssn = Session.open(parsed.build_cache(), parsed.configuration)
    run_actions(ssn)
    node = ssn.nodes["n1"]
    assert node.gpu_share is not None and node.gpu_share.cards == {0: {}, 1: {"default/a": 6}}
    assert ssn.jobs["default/run"].tasks["default/a"].annotations[GPU_INDEX_ANNOTATION] == "1"


def test_a_pod_created_again_loses_the_cards_it_was_given() -> None:
    doc = scenario(
        "- {name: a, job: j, priority: 10, requests: {cpu: 1, volcano.sh/gpu-memory: 6}}\n",
        node="volcano.sh/gpu-memory: 20, volcano.sh/gpu-number: 2")
    parsed = parse_scenario(doc, source="<test>")
    cache = parsed.build_cache()
    scheduler = Scheduler(cache, parsed.configuration)
    scheduler.run_once()
    cache.task_recreated("default/j", "default/a")
    task = cache.jobs["default/j"].tasks["default/a"]
    assert GPU_INDEX_ANNOTATION not in task.annotations
    assert PREDICATE_TIME_ANNOTATION not in task.annotations
    cache.add_task(TaskInfo.create("default", "c", "default/j", Resource.from_mapping(
        {"cpu": 1, "volcano.sh/gpu-memory": 6})))
    scheduler.run_once()
    # The new pod is not counted on its old card: both fit, one card each.
    cards = sorted(cache.jobs["default/j"].tasks[uid].annotations[GPU_INDEX_ANNOTATION]
                   for uid in ("default/a", "default/c"))
    assert cards == ["0", "1"]


def test_one_lock_for_a_pod_asking_gpu_memory_and_nvidia_gpus() -> None:
    decisions = decide(scenario(
        "- {name: t, job: j, requests: {cpu: 1, volcano.sh/gpu-memory: 6, nvidia.com/gpu: 1}}\n",
        node="volcano.sh/gpu-memory: 20, volcano.sh/gpu-number: 2, nvidia.com/gpu: 2",
        arguments={**SHARING, "deviceshare.NodeLockEnable": True}))
    assert decisions["binds"] == {"default/t": "n1"}
