"""deviceshare with HAMi's Ascend vNPUs (``deviceshare.AscendHAMiVNPUEnable``), through
whole sessions: what a Volcano user with Ascend nodes relies on."""

from __future__ import annotations

import json
import logging
import math
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from batchsched.api.ascend import allocated_annotation
from batchsched.api.fit import FitError
from batchsched.api.node import NodeInfo
from batchsched.api.task import TaskInfo
from batchsched.api.types import FitStatusCode, TaskStatus
from batchsched.framework.session import Session
from batchsched.framework.statement import Statement
from batchsched.scenario import parse_scenario, run_scenario
from batchsched.scheduler import Scheduler, run_actions
from plugins.node_support import document, open_session, plugin


def _predicate(ssn: Session, task: TaskInfo, node: NodeInfo) -> FitError | None:
    """The session's predicates on their own, outside any action (the task was never
    pre-predicated: asked as a report, so the predicates plugin computes that itself)."""
    with ssn.for_report():
        return ssn.predicate(task, node)

ALLOCATED = allocated_annotation("Ascend310P")


def vnpu(policy: str = "binpack", weight: int = 0, **more: Any) -> dict[str, Any]:
    arguments: dict[str, Any] = {"deviceshare.AscendHAMiVNPUEnable": True, **more}
    if policy:
        arguments["deviceshare.SchedulePolicy"] = policy
    if weight:
        arguments["deviceshare.ScheduleWeight"] = weight
    return plugin("deviceshare", arguments)


def node_yaml(name: str, cards: int, *, sharing: int = 4, extra: str = "",
              advertised: int | None = None) -> str:
    register = json.dumps([{"id": f"{name}-npu-{i}", "count": sharing, "devmem": 21527,
                            "devcore": 8} for i in range(cards)])
    return (f"- {{name: {name}, allocatable: {{cpu: 64, memory: 256Gi, pods: 110, "
            f"huawei.com/Ascend310P: {advertised or cards * sharing}}}, "
            f"annotations: {{hami.io/node-register-Ascend310P: '{register}'{extra}}}}}")


def task_yaml(name: str, job: str, *, count: int | None = 1, memory: int | None = None,
              cores: int | None = None, extra: str = "") -> str:
    requests = ["cpu: 1"]
    if count is not None:
        requests.append(f"huawei.com/Ascend310P: {count}")
    if memory is not None:
        requests.append(f"huawei.com/Ascend310P-memory: {memory}")
    if cores is not None:
        requests.append(f"huawei.com/Ascend310P-core: {cores}")
    return f"- {{name: {name}, job: {job}, requests: {{{', '.join(requests)}}}{extra}}}"


def jobs_yaml(*names: str, min_member: int = 1) -> list[str]:
    return [f"- {{name: {name}, minMember: {min_member}, createdAt: {i}, phase: Inqueue}}"
            for i, name in enumerate(names)]


def run(doc: dict[str, Any]) -> dict[str, Any]:
    return run_scenario(parse_scenario(doc, source="<test>")).to_json()


def cards_of(got: dict[str, Any]) -> dict[str, list[tuple[str, int]]]:
    return {task: [(card["uuid"], card["memory"]) for card in cards]
            for task, cards in got.get("vnpuDevices", {}).items()}


def test_memory_is_rounded_to_a_template_and_binpack_stacks_cards() -> None:
    doc = document("\n".join([
        "nodes:", node_yaml("n1", 2),
        "jobs:", *jobs_yaml("j1", "j2", "j3"),
        "tasks:", task_yaml("a", "j1", memory=4096), task_yaml("b", "j2", memory=12289),
        task_yaml("c", "j3", memory=3000)]),
        plugin("predicates"), vnpu("binpack", weight=10), actions="allocate")
    got = run(doc)
    assert cards_of(got) == {
        "default/a": [("n1-npu-0", 6144)],      # vir02
        # above the largest template: a whole card, which npu-0 no longer has
        "default/b": [("n1-npu-1", 21527)],
        "default/c": [("n1-npu-0", 3072)],      # the fuller npu-1 has no room left
    }


def test_several_cards_need_whole_cards_and_the_reason_is_volcano_s() -> None:
    doc = document("\n".join([
        "nodes:", node_yaml("n1", 2),
        "jobs:", *jobs_yaml("j1", "j2"),
        "tasks:", task_yaml("a", "j1", memory=1000), task_yaml("b", "j2", count=2)]),
        plugin("predicates"), vnpu("binpack"), actions="allocate")
    got = run(doc)
    assert set(got["binds"]) == {"default/a"}
    assert ("default/b", "0/1 nodes are unavailable: 1 no ascend device available.") in {
        (e["object"], e["message"]) for e in got["events"]}


def test_a_partial_memory_request_for_several_cards_is_an_error() -> None:
    doc = document("\n".join([
        "nodes:", node_yaml("n1", 2),
        "jobs:", *jobs_yaml("j1"),
        "tasks:", task_yaml("a", "j1", count=2, memory=4096)]),
        plugin("predicates"), vnpu(""))
    ssn = open_session(doc)
    task = ssn.jobs["default/j1"].tasks["default/a"]
    error = _predicate(ssn, task, ssn.nodes["n1"])
    assert error is not None
    status = error.statuses[0]
    assert status.code == FitStatusCode.ERROR and "partial memory" in status.detail


def test_hami_core_mode_needs_a_node_that_supports_it() -> None:
    doc = document("\n".join([
        "nodes:", node_yaml("n1", 1), node_yaml("n2", 1, extra=", hami-vnpu-core: 'true'"),
        "jobs:", *jobs_yaml("j1"),
        "tasks:", task_yaml("a", "j1", memory=5000, cores=90,
                            extra=", annotations: {huawei.com/vnpu-mode: hami-core}")]),
        plugin("predicates"), vnpu("binpack"), actions="allocate")
    got = run(doc)
    assert got["binds"] == {"default/a": "n2"}
    assert got["vnpuDevices"]["default/a"] == [
        {"uuid": "n2-npu-0", "type": "Ascend310P", "memory": 5000, "cores": 90}]


def test_memory_and_cores_are_hidden_from_resource_lists() -> None:
    """The node advertises no memory or core resource, and the tasks' requests of them
    count nowhere: not in the fit, not in the queue's status, not in its capability."""
    doc = document("\n".join([
        "queues: [{name: default, capability: {cpu: 10, huawei.com/Ascend310P-memory: 1}}]",
        "nodes:", node_yaml("n1", 1),
        "jobs:", *jobs_yaml("j1"),
        "tasks:", task_yaml("a", "j1", memory=4096, cores=2)]),
        plugin("predicates"), plugin("proportion"), plugin("capacity"), vnpu("binpack"),
        actions="enqueue, allocate")
    got = run(doc)
    assert got["binds"] == {"default/a": "n1"}
    assert got["queueStatus"]["default"]["allocated"] == {
        "cpu": "1", "memory": "0", "huawei.com/Ascend310P": "1", "pods": "1"}


def test_without_a_node_registering_the_chip_nothing_is_hidden() -> None:
    """Volcano ignores a chip type's resources once a node registers it: with no such
    node, a memory request is an ordinary scalar no node has."""
    doc = document("\n".join([
        "nodes:", "- {name: n1, allocatable: {cpu: 8, memory: 8Gi, pods: 10}}",
        "jobs:", *jobs_yaml("j1"),
        "tasks:", task_yaml("a", "j1", count=None, memory=4096)]),
        plugin("predicates"), vnpu("binpack"), actions="allocate")
    got = run(doc)
    assert got["binds"] == {}
    assert "Insufficient huawei.com/Ascend310P-memory" in json.dumps(got["events"])


def test_a_running_pod_holds_its_cards_from_its_annotation() -> None:
    doc = document("\n".join([
        "nodes:", node_yaml("n1", 1, sharing=1),
        "jobs:", "- {name: old, minMember: 1, phase: Running}", *jobs_yaml("j1"),
        "tasks:",
        task_yaml("o", "old", memory=4096, extra=", phase: Running, node: n1, annotations: {"
                  f"{ALLOCATED}: 'n1-npu-0,Ascend310P,6144,0:;'}}"),
        task_yaml("a", "j1", memory=1000)]),
        plugin("predicates"), vnpu("binpack"), actions="allocate")
    ssn = open_session(doc)
    cards = ssn.nodes["n1"].ascend
    assert cards is not None
    assert cards["Ascend310P"].devices["n1-npu-0"].pods == {"default/o": (6144, 0)}
    error = _predicate(ssn, ssn.jobs["default/j1"].tasks["default/a"], ssn.nodes["n1"])
    assert error is not None and error.statuses[0].code == FitStatusCode.UNSCHEDULABLE


def _victim_holds_the_only_card() -> dict[str, Any]:
    """A low-priority pod holds a node's only card; the count resource has room for a
    high-priority pod asking a card."""
    return document("\n".join([
        "priorityClasses: [{name: low, value: 10}, {name: high, value: 100000}]",
        "nodes:", node_yaml("n1", 1, sharing=1, advertised=4),
        "jobs:", "- {name: pg-low, minMember: 0, priorityClassName: low, phase: Running}",
        "- {name: pg-high, minMember: 1, priorityClassName: high, phase: Inqueue}",
        "tasks:",
        task_yaml("preemptee", "pg-low", extra=", priorityClassName: low, phase: Running, "
                  f"node: n1, annotations: {{{ALLOCATED}: 'n1-npu-0,Ascend310P,21527,0:;', "
                  "hami.io/bind-phase: success}"),
        task_yaml("preemptor", "pg-high", extra=", priorityClassName: high")]),
        plugin("priority"), plugin("gang"), plugin("predicates"), vnpu("binpack"),
        actions="allocate, preempt")


def test_preemption_rechecks_the_cards_after_evicting() -> None:
    """Volcano's TestNormalPreemptRechecksPredicateAfterEviction, with the device that
    hides capacity being a real card: the count resource has room, the card has none
    until the victim frees it."""
    doc = _victim_holds_the_only_card()
    got = run(doc)
    assert got["evicted"] == ["default/preemptee"]
    assert got["pipelined"] == {"default/pg-high": {"default/preemptor": "n1"}}


def test_an_undone_placement_gives_its_cards_back_and_loses_its_annotations() -> None:
    doc = document("\n".join([
        "nodes:", node_yaml("n1", 1, sharing=1),
        "jobs:", "- {name: big, minMember: 2, createdAt: 1, phase: Inqueue}",
        "- {name: small, minMember: 1, createdAt: 2, phase: Inqueue}",
        "tasks:", task_yaml("b0", "big"), task_yaml("b1", "big"), task_yaml("s0", "small")]),
        plugin("gang"), plugin("predicates"), vnpu("binpack"), actions="allocate")
    ssn = open_session(doc)
    run_actions(ssn)
    placed = {t.uid: t.node_name for j in ssn.jobs.values() for t in j.tasks.values()
              if t.node_name}
    assert placed == {"default/s0": "n1"}
    for uid in ("default/b0", "default/b1"):
        task = ssn.jobs["default/big"].tasks[uid]
        assert not any(key.startswith("hami.io/") for key in task.annotations), uid
    ssn.nodes["n1"].check_invariants()


def test_binds_carry_the_cards_to_the_cache_and_the_next_snapshot() -> None:
    doc = document("\n".join([
        "nodes:", node_yaml("n1", 1, sharing=2),
        "jobs:", *jobs_yaml("j0", "j1", "j2"),
        "tasks:", *(task_yaml(f"t{i}", f"j{i}", memory=3000) for i in range(3))]),
        plugin("predicates"), vnpu("binpack"), actions="allocate")
    parsed = parse_scenario(doc, source="<test>")
    cache = parsed.build_cache()
    Scheduler(cache, parsed.configuration).run_once()
    bound = {uid for job in cache.jobs.values() for uid, t in job.tasks.items()
             if t.status is TaskStatus.BOUND}
    assert bound == {"default/t0", "default/t1"}  # two pods may share the card
    held = cache.jobs["default/j0"].tasks["default/t0"]
    assert held.annotations[ALLOCATED] == "n1-npu-0,Ascend310P,3072,0:;"
    Scheduler(cache, parsed.configuration).run_once()
    assert cache.jobs["default/j2"].tasks["default/t2"].status is TaskStatus.PENDING
    # A pod that ends gives its share back: the waiting one gets it.
    cache.task_started("default/j0", "default/t0")
    cache.task_ended("default/j0", "default/t0")
    Scheduler(cache, parsed.configuration).run_once()
    assert cache.jobs["default/j2"].tasks["default/t2"].status is TaskStatus.BOUND
    # A recreated pod loses its cards, and gets them again.
    cache.task_recreated("default/j1", "default/t1")
    assert not any(key.startswith("hami.io/")
                   for key in cache.jobs["default/j1"].tasks["default/t1"].annotations)
    Scheduler(cache, parsed.configuration).run_once()
    assert cache.jobs["default/j1"].tasks["default/t1"].status is TaskStatus.BOUND
    cache.nodes["n1"].check_invariants()
    # The cache's own tasks keep what they asked: only sessions hide it.
    assert "huawei.com/Ascend310P-memory" in held.resreq.scalars


def test_the_node_score_is_the_rounded_policy_score_times_the_weight() -> None:
    doc = document("\n".join([
        "nodes:", node_yaml("n1", 1), node_yaml("n2", 1),
        "jobs:", "- {name: old, minMember: 1, phase: Running}", *jobs_yaml("j1"),
        "tasks:",
        task_yaml("o", "old", memory=6144, extra=", phase: Running, node: n1, annotations: {"
                  f"{ALLOCATED}: 'n1-npu-0,Ascend310P,6144,0:;'}}"),
        task_yaml("a", "j1", memory=3000)]),
        plugin("predicates"), vnpu("binpack", weight=10), actions="allocate")
    ssn = open_session(doc)
    task = ssn.jobs["default/j1"].tasks["default/a"]
    fn = ssn._fns["node_order"]["deviceshare"]
    # 100 * 6144 / 21527 = 28.5 -> 29, times 10
    assert fn(task, ssn.nodes["n1"]) == 290.0
    assert fn(task, ssn.nodes["n2"]) == 0.0
    assert run(doc)["binds"] == {"default/a": "n1"}


def test_with_vnpus_the_policy_and_the_configmap_take_effect_and_mindcluster_does_not(
        caplog: pytest.LogCaptureFixture) -> None:
    from batchsched.framework.arguments import Arguments
    from batchsched.plugins.deviceshare import DeviceSharePlugin

    with caplog.at_level(logging.WARNING):
        DeviceSharePlugin(Arguments({"deviceshare.AscendHAMiVNPUEnable": True,
                                     "deviceshare.SchedulePolicy": "binpack",
                                     "deviceshare.KnownGeometriesCMNamespace": "ns",
                                     "deviceshare.KnownGeometriesCMName": "vnpu-config"}))
    assert not caplog.records
    with caplog.at_level(logging.WARNING):
        DeviceSharePlugin(Arguments({"deviceshare.AscendMindClusterVNPUEnable": True,
                                     "deviceshare.GPUExclusiveRules": [{"a": "b"}],
                                     "deviceshare.AscendHAMiVNPUEnable": True}))
    said = " ".join(record.getMessage() for record in caplog.records)
    assert "AscendMindClusterVNPUEnable" in said and "GPUExclusiveRules" in said


def test_the_device_configuration_names_the_chip_types() -> None:
    config_map = ("configMaps: [{namespace: kube-system, name: hami-scheduler-device, data: "
                  "{device-config.yaml: 'vnpus: [{commonWord: Ascend910B3, resourceName: "
                  "huawei.com/Ascend910B3, resourceMemoryName: huawei.com/Ascend910B3-memory, "
                  "memoryAllocatable: 65536, memoryCapacity: 65536, templates: [{name: "
                  "vir05_1c_16g, memory: 16384}]}]'}}]")
    register = json.dumps([{"id": "c0", "count": 4, "devmem": 65536, "devcore": 20}])
    doc = document("\n".join([
        config_map,
        "nodes:", "- {name: n1, allocatable: {cpu: 8, memory: 8Gi, pods: 10, "
        f"huawei.com/Ascend910B3: 4}}, annotations: {{hami.io/node-register-Ascend910B3: "
        f"'{register}'}}}}",
        "jobs:", *jobs_yaml("j1"),
        "tasks:", "- {name: a, job: j1, requests: {cpu: 1, huawei.com/Ascend910B3: 1, "
        "huawei.com/Ascend910B3-memory: 10000}}"]),
        plugin("predicates"),
        vnpu("binpack", **{"deviceshare.KnownGeometriesCMNamespace": "kube-system",
                           "deviceshare.KnownGeometriesCMName": "hami-scheduler-device"}),
        actions="allocate")
    got = run(doc)
    assert got["vnpuDevices"] == {"default/a": [
        {"uuid": "c0", "type": "Ascend910B3", "memory": 16384, "cores": 0}]}


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 2), st.integers(0, 24000), st.booleans()),
                min_size=1, max_size=8),
       st.integers(1, 3), st.sampled_from(["binpack", "spread", ""]))
def test_statements_and_their_undo_keep_the_ledger(
        asks: list[tuple[int, int, bool]], sharing: int, policy: str) -> None:
    """Allocate tasks one by one in a statement, then discard it: the ledgers add up
    from the tasks on the node at every step, and after the discard nothing is held."""
    doc = document("\n".join([
        "nodes:", node_yaml("n1", 2, sharing=sharing),
        "jobs:", *jobs_yaml(*(f"j{i}" for i in range(len(asks)))),
        "tasks:", *(task_yaml(f"t{i}", f"j{i}", count=count or None, memory=memory)
                    for i, (count, memory, _) in enumerate(asks))]),
        plugin("predicates"), vnpu(policy))
    ssn = open_session(doc)
    node = ssn.nodes["n1"]
    stmt = Statement(ssn)
    for i, (_, _, undo_now) in enumerate(asks):
        task = ssn.jobs[f"default/j{i}"].tasks[f"default/t{i}"]
        if _predicate(ssn, task, node) is not None:
            continue
        stmt.allocate(task, node)
        node.check_invariants()
        if undo_now:
            stmt.discard()
            node.check_invariants()
            stmt = Statement(ssn)
    stmt.discard()
    node.check_invariants()
    assert node.ascend is not None
    assert all(card.used == 0 for card in node.ascend["Ascend310P"].devices.values())


# -- found in review: each failed before its fix ---------------------------------------


def _vgpu_node(name: str, memory: int) -> str:
    register = "".join(f"GPU-{name}-{i},10,{memory},NVIDIA-Tesla-T4,true,hami-core:"
                       for i in range(2))
    return (f"- {{name: {name}, allocatable: {{cpu: 64, memory: 256Gi, pods: 110, "
            f"volcano.sh/vgpu-number: 20, volcano.sh/vgpu-memory: {2 * memory}, "
            f"volcano.sh/vgpu-cores: 200}}, "
            f"annotations: {{volcano.sh/node-vgpu-register: '{register}'}}}}")


def test_vnpus_and_vgpus_together_check_both() -> None:
    doc = document("\n".join([
        "nodes:", _vgpu_node("n1", 2048), _vgpu_node("n2", 16384),
        "jobs:", *jobs_yaml("j1"),
        "tasks:", "- {name: a, job: j1, requests: {cpu: 1, volcano.sh/vgpu-number: 1, "
        "volcano.sh/vgpu-memory: 4096, volcano.sh/vgpu-cores: 25}}"]),
        plugin("predicates"),
        plugin("deviceshare", {"deviceshare.VGPUEnable": True,
                               "deviceshare.AscendHAMiVNPUEnable": True}),
        actions="allocate")
    assert run(doc)["binds"] == {"default/a": "n2"}


def test_vnpus_and_gpu_sharing_together_check_both() -> None:
    doc = document("\n".join([
        "nodes:", node_yaml("n1", 1, sharing=1, advertised=4),
        node_yaml("n2", 1, sharing=1, advertised=4),
        "jobs:", "- {name: old, minMember: 1, phase: Running}", *jobs_yaml("j1"),
        "tasks:",
        task_yaml("o", "old", extra=", phase: Running, node: n1, annotations: {"
                  f"{ALLOCATED}: 'n1-npu-0,Ascend310P,21527,0:;'}}"),
        task_yaml("a", "j1")]),
        plugin("predicates"),
        plugin("deviceshare", {"deviceshare.GPUSharingEnable": True,
                               "deviceshare.AscendHAMiVNPUEnable": True}),
        actions="allocate")
    got = run(doc)
    assert got["binds"] == {"default/a": "n2"}
    assert cards_of(got) == {"default/a": [("n2-npu-0", 21527)]}


def test_a_register_annotation_go_cannot_read_leaves_the_node_without_cards() -> None:
    """NaN, a string count, a fraction for an integer: Go's decoder refuses the whole
    annotation, and only that chip type on that node goes (no session fails)."""
    bad = '[{"id":"c0","count":4,"devmem":NaN,"devcore":8}]'
    doc = document("\n".join([
        "nodes:", node_yaml("n1", 1),
        "- {name: n2, allocatable: {cpu: 64, memory: 256Gi, pods: 110, "
        f"huawei.com/Ascend310P: 4}}, annotations: {{hami.io/node-register-Ascend310P: '{bad}'}}}}",
        "jobs:", *jobs_yaml("j1"),
        "tasks:", task_yaml("a", "j1", memory=4096)]),
        plugin("predicates"), vnpu("binpack"))
    ssn = open_session(doc)
    assert ssn.nodes["n1"].ascend is not None
    assert ssn.nodes["n2"].ascend is None


def test_a_pending_task_s_stale_annotation_does_not_keep_a_full_card() -> None:
    doc = document("\n".join([
        "nodes:", node_yaml("n1", 2, sharing=1, advertised=4),
        "jobs:", "- {name: old, minMember: 1, phase: Running}", *jobs_yaml("j1"),
        "tasks:",
        task_yaml("o", "old", extra=", phase: Running, node: n1, annotations: {"
                  f"{ALLOCATED}: 'n1-npu-0,Ascend310P,21527,0:;', hami.io/bind-phase: success}}"),
        task_yaml("a", "j1", extra=", annotations: {"
                  f"{ALLOCATED}: 'n1-npu-0,Ascend310P,21527,0:;'}}")]),
        plugin("predicates"), vnpu("binpack"), actions="allocate")
    got = run(doc)
    assert cards_of(got) == {"default/a": [("n1-npu-1", 21527)]}


def test_a_task_asking_only_card_memory_is_best_effort_and_backfilled() -> None:
    doc = document("\n".join([
        "nodes:", node_yaml("n1", 1),
        "jobs:", *jobs_yaml("j1"),
        "tasks:", "- {name: a, job: j1, requests: {huawei.com/Ascend310P-memory: 4096}}"]),
        plugin("priority"), plugin("gang"), plugin("predicates"), vnpu("binpack"),
        actions="enqueue, allocate, backfill")
    got = run(doc)
    assert cards_of(got) == {"default/a": [("n1-npu-0", 6144)]}


def test_card_fields_are_matched_as_go_matches_them() -> None:
    """``customInfo`` (as the docs write it) is HAMi's ``custominfo``: 910 cards are
    taken from the largest network group either way."""
    config_map = ("configMaps: [{namespace: kube-system, name: volcano-vgpu-device-config, "
                  "data: {device-config.yaml: 'vnpus: [{commonWord: Ascend910B3, resourceName: "
                  "huawei.com/Ascend910B3, resourceMemoryName: huawei.com/Ascend910B3-memory, "
                  "memoryAllocatable: 65536.0, memoryCapacity: 65536}]'}}]")
    register = json.dumps([{"ID": f"c{i}", "count": 1, "DevMem": 65536, "devcore": 20,
                            "customInfo": {"NetworkID": network}}
                           for i, network in enumerate([1, 2, 2])])
    doc = document("\n".join([
        config_map, "nodes:",
        "- {name: n1, allocatable: {cpu: 8, memory: 8Gi, pods: 10, huawei.com/Ascend910B3: 3}, "
        f"annotations: {{hami.io/node-register-Ascend910B3: '{register}'}}}}",
        "jobs:", *jobs_yaml("j1"),
        "tasks:", "- {name: a, job: j1, requests: {cpu: 1, huawei.com/Ascend910B3: 2}}"]),
        plugin("predicates"), vnpu("binpack"), actions="allocate")
    got = run(doc)
    assert [card["uuid"] for card in got["vnpuDevices"]["default/a"]] == ["c1", "c2"]


def test_a_pipelined_preemptor_s_cards_keep_the_node_consistent() -> None:
    doc = _victim_holds_the_only_card()
    ssn = open_session(doc)
    run_actions(ssn)
    node = ssn.nodes["n1"]
    assert node.tasks["default/preemptor"].status is TaskStatus.PIPELINED
    node.check_invariants()


def test_memory_written_in_bytes_wraps_as_volcano_s_int32_does() -> None:
    """4Gi is 2**32: Volcano's 32-bit memory wraps to 0, a whole card."""
    doc = document("\n".join([
        "nodes:", node_yaml("n1", 1),
        "jobs:", *jobs_yaml("j1", "j2"),
        "tasks:", task_yaml("a", "j1", extra="").replace(
            "huawei.com/Ascend310P: 1", "huawei.com/Ascend310P: 1, "
            "huawei.com/Ascend310P-memory: 4Gi"), task_yaml("b", "j2")]),
        plugin("predicates"), vnpu("binpack"), actions="allocate")
    got = run(doc)
    assert cards_of(got) == {"default/a": [("n1-npu-0", 21527)]}


def test_a_resource_quota_reads_the_pod_group_s_own_minimum() -> None:
    doc = document("\n".join([
        "resourceQuotas: [{name: rq1, namespace: default, "
        "hard: {huawei.com/Ascend310P-memory: 1000}}]",
        "nodes:", node_yaml("n1", 1),
        "jobs:", "- {name: j1, minMember: 1, phase: Pending, "
        "minResources: {cpu: 1, huawei.com/Ascend310P-memory: 4096}}",
        "tasks:", task_yaml("a", "j1", memory=4096)]),
        plugin("resourcequota"), plugin("predicates"), vnpu("binpack"),
        actions="enqueue, allocate")
    got = run(doc)
    assert got["binds"] == {}
    assert "resource quota insufficient" in json.dumps(got["events"])


def test_vgpu_and_vnpu_scores_are_summed_then_rounded_once() -> None:
    """Volcano's getDeviceScore adds every kind's raw score, then rounds and weighs."""
    from batchsched.api.ascend import hami_core_mode

    register = json.dumps([{"id": f"npu-{i}", "count": 4, "devmem": 21527, "devcore": 8}
                           for i in range(2)])
    vgpus = "".join(f"GPU-{i},10,16384,NVIDIA-Tesla-T4,true,hami-core:" for i in range(2))
    doc = document("\n".join([
        "nodes:", "- {name: n1, allocatable: {cpu: 64, memory: 256Gi, pods: 110, "
        "huawei.com/Ascend310P: 8, volcano.sh/vgpu-number: 20, volcano.sh/vgpu-memory: 32768, "
        f"volcano.sh/vgpu-cores: 200}}, annotations: {{hami.io/node-register-Ascend310P: "
        f"'{register}', volcano.sh/node-vgpu-register: '{vgpus}'}}}}",
        "jobs:", "- {name: r, minMember: 1, phase: Running}", *jobs_yaml("j1"),
        "tasks:",
        task_yaml("r0", "r", memory=2000, extra=", phase: Running, node: n1, annotations: {"
                  f"{ALLOCATED}: 'npu-0,Ascend310P,4435,0:;'}}"),
        "- {name: a, job: j1, requests: {cpu: 1, volcano.sh/vgpu-number: 1, "
        "volcano.sh/vgpu-memory: 5000, volcano.sh/vgpu-cores: 25, huawei.com/Ascend310P: 1, "
        "huawei.com/Ascend310P-memory: 2000}}"]),
        plugin("predicates"),
        plugin("deviceshare", {"deviceshare.VGPUEnable": True,
                               "deviceshare.AscendHAMiVNPUEnable": True,
                               "deviceshare.SchedulePolicy": "binpack",
                               "deviceshare.ScheduleWeight": 1}))
    ssn = open_session(doc)
    task = ssn.jobs["default/j1"].tasks["default/a"]
    node = ssn.nodes["n1"]
    vgpu_raw = 100 * 5000 / 16384                 # 30.52: the GPU, once the task is on it
    cards = node.ascend["Ascend310P"] if node.ascend else None
    assert cards is not None
    request = vnpu_request_of(ssn, task)
    ascend_raw = cards.score(request, "binpack", hami_core=hami_core_mode(task.annotations))
    assert round(ascend_raw, 2) == 20.6           # 100 * 4435 / 21527
    assert ssn.node_order(task, node) == math.floor(vgpu_raw + ascend_raw + 0.5) == 51


def vnpu_request_of(ssn: Any, task: Any) -> Any:
    from batchsched.api.ascend import DEFAULT_CHIP, vnpu_request

    return vnpu_request(ssn.device_requests(task), DEFAULT_CHIP)


def test_the_preempt_form_of_two_kinds_reads_the_first_error() -> None:
    """A node the first kind fails resolvably stays a preemption candidate even when a
    later kind would fail it unresolvably: the scalar predicate reports the first
    error, and the column form must agree."""
    import numpy as np

    from batchsched.api.fit import FitError
    from batchsched.plugins.deviceshare import _DeviceKind, _register_kinds

    class Recorder:
        def __init__(self) -> None:
            self.extra: dict[str, Any] = {}
            self.fns: dict[str, Any] = {}

        def add_predicate_fn(self, plugin: str, fn: Any) -> None:
            self.fns["predicate"] = fn

    def failing(code: FitStatusCode) -> Any:
        return lambda task, node: FitError.of("ns", "t", "n", "no", code=code, plugin="x")

    first = _DeviceKind(failing(FitStatusCode.UNSCHEDULABLE), failing(FitStatusCode.UNSCHEDULABLE),
                        lambda task, columns: None,
                        lambda task, columns: (np.array([False, True]), np.array([True, False])))
    second = _DeviceKind(failing(FitStatusCode.UNSCHEDULABLE_AND_UNRESOLVABLE),
                         failing(FitStatusCode.UNSCHEDULABLE_AND_UNRESOLVABLE),
                         lambda task, columns: None,
                         lambda task, columns: (np.array([False, False]),
                                                np.array([False, False])))
    ssn = Recorder()
    _register_kinds(ssn, "deviceshare", [first, second], 0)  # type: ignore[arg-type]
    error = ssn.fns["predicate"](None, None)
    assert error.statuses[0].code == FitStatusCode.UNSCHEDULABLE
    forms = ssn.extra["batchsched.vector_preempt_predicates"]
    fits, resolvable = forms["deviceshare"](None, None)
    assert fits.tolist() == [False, False]
    assert resolvable.tolist() == [True, False]   # node 0: the first kind's error decides


# -- the column form agrees with the scalar one ------------------------------------------

_cards = st.lists(st.tuples(st.integers(1, 4), st.sampled_from([21527, 16000, 0]),
                            st.sampled_from([8, 0, 100]), st.integers(0, 4),
                            st.integers(0, 25000), st.integers(0, 100)),
                  min_size=1, max_size=4)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(_cards, st.booleans()), min_size=1, max_size=4),
       st.tuples(st.integers(0, 3), st.sampled_from([0, 1000, 3072, 7000, 13000, 21527, 30000]),
                 st.sampled_from([0, 10, 50, 100])),
       st.booleans(), st.sampled_from(["binpack", "spread", ""]))
def test_the_column_fit_and_score_are_the_scalar_ones(
        nodes: list[tuple[list[tuple[int, int, int, int, int, int]], bool]],
        asked: tuple[int, int, int], hami_core: bool, policy: str) -> None:
    count, memory, cores = asked
    from batchsched.api import NodeInfo, Resource
    from batchsched.api.ascend import DEFAULT_CHIP, AscendDevice, AscendDevices, VnpuRequest
    from batchsched.columnar.vnpu_columns import VnpuColumns, vnpu_fit_rows

    infos = []
    for n, (cards, node_hami_core) in enumerate(nodes):
        node = NodeInfo.create(f"n{n}", Resource.from_mapping({"cpu": 8}))
        node.ascend = {"Ascend310P": AscendDevices(f"n{n}", DEFAULT_CHIP, node_hami_core, {
            f"c{i}": AscendDevice(id=f"c{i}", count=share, memory=devmem, cores=devcore,
                                  used=used, used_memory=used_memory, used_cores=used_cores)
            for i, (share, devmem, devcore, used, used_memory, used_cores) in enumerate(cards)})}
        infos.append(node)
    request = VnpuRequest("Ascend310P", count, memory, 101 if memory else 100, cores)
    columns = VnpuColumns(infos)
    columns.refresh()
    rows = vnpu_fit_rows(columns.chips["Ascend310P"], DEFAULT_CHIP, request, policy,
                         hami_core=hami_core, rows=slice(None))
    for i, node in enumerate(infos):
        assert node.ascend is not None
        cards = node.ascend["Ascend310P"]
        code, _ = cards.filter(request, policy, hami_core=hami_core)
        assert bool(rows.fits[i]) == (code == FitStatusCode.SUCCESS), (i, code)
        if code != FitStatusCode.SUCCESS:
            assert bool(rows.error[i]) == (code == FitStatusCode.ERROR), (i, code)
        assert float(rows.score[i]) == cards.score(request, policy, hami_core=hami_core), i


@settings(max_examples=25, deadline=None)
@given(st.lists(st.tuples(st.integers(1, 3), st.integers(1, 4), st.booleans()),
                min_size=1, max_size=4),
       st.lists(st.tuples(st.integers(0, 2), st.sampled_from([None, 1000, 4096, 13000, 30000]),
                          st.sampled_from([None, 20, 100]), st.integers(1, 3)),
                min_size=1, max_size=10),
       st.sampled_from(["binpack", "spread", ""]), st.sampled_from([0, 10]))
def test_both_paths_place_alike(nodes: list[tuple[int, int, bool]],
                                tasks: list[tuple[int, int | None, int | None, int]],
                                policy: str, weight: int) -> None:
    from batchsched.columnar.selector import FAST_PATH_ENVIRONMENT_VARIABLE

    lines = ["nodes:"]
    for n, (cards, sharing, soft) in enumerate(nodes):
        lines.append(node_yaml(f"n{n}", cards, sharing=sharing,
                               extra=", hami-vnpu-core: 'true'" if soft else ""))
    lines += ["jobs:", *jobs_yaml(*(f"j{t}" for t in range(len(tasks)))), "tasks:"]
    for t, (count, memory, cores, members) in enumerate(tasks):
        mode = ", annotations: {huawei.com/vnpu-mode: hami-core}" if cores else ""
        for m in range(members):
            lines.append(task_yaml(f"t{t}-{m}", f"j{t}", count=count or None,
                                   memory=memory if memory or not count else None,
                                   cores=cores, extra=mode))
    doc = document("\n".join(lines), plugin("priority"), plugin("gang"),
                   plugin("predicates"), plugin("nodeorder"), vnpu(policy, weight),
                   actions="enqueue, allocate, backfill")

    def decided() -> dict[str, Any]:
        got = run(doc)
        return {"binds": got["binds"], "cards": got.get("vnpuDevices")}

    fast = decided()
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv(FAST_PATH_ENVIRONMENT_VARIABLE, "0")
        assert decided() == fast


@settings(max_examples=200, deadline=None)
@given(st.lists(st.lists(st.tuples(st.integers(1, 3), st.integers(0, 3), st.integers(0, 70000),
                                   st.sampled_from([None, 1, 2, 3, "x"])),
                         min_size=1, max_size=6), min_size=1, max_size=3),
       st.integers(0, 4), st.sampled_from([0, 16384, 65536]),
       st.sampled_from(["binpack", "spread", ""]))
def test_910_network_groups_do_not_change_the_column_fit(
        nodes: list[list[tuple[int, int, int, object]]], count: int, memory: int,
        policy: str) -> None:
    """On 910 cards grouped by network the groups only choose among the passing cards:
    the column fit (and its kind of refusal) is still the scalar one."""
    from batchsched.api import NodeInfo, Resource
    from batchsched.api.ascend import AscendChip, AscendDevice, AscendDevices, VnpuRequest
    from batchsched.columnar.vnpu_columns import VnpuColumns, vnpu_fit_rows

    chip = AscendChip(common_word="Ascend910B3", resource_name="huawei.com/Ascend910B3",
                      resource_memory_name="huawei.com/Ascend910B3-memory",
                      memory_allocatable=65536, memory_capacity=65536)
    infos = []
    for n, cards in enumerate(nodes):
        node = NodeInfo.create(f"n{n}", Resource.from_mapping({"cpu": 8}))
        node.ascend = {chip.common_word: AscendDevices(f"n{n}", chip, False, {
            f"c{i}": AscendDevice(id=f"c{i}", count=share, memory=65536, cores=20, used=used,
                                  used_memory=used_memory,
                                  custom_info=None if network is None else {"NetworkID": network})
            for i, (share, used, used_memory, network) in enumerate(cards)})}
        infos.append(node)
    request = VnpuRequest(chip.common_word, count, memory, 101 if memory else 100, 0)
    columns = VnpuColumns(infos)
    columns.refresh()
    rows = vnpu_fit_rows(columns.chips[chip.common_word], chip, request, policy,
                         hami_core=False, rows=slice(None))
    for i, node in enumerate(infos):
        assert node.ascend is not None
        cards = node.ascend[chip.common_word]
        code, _ = cards.filter(request, policy, hami_core=False)
        assert bool(rows.fits[i]) == (code == FitStatusCode.SUCCESS), (i, code)
        if code != FitStatusCode.SUCCESS:
            assert bool(rows.error[i]) == (code == FitStatusCode.ERROR), (i, code)
        if not columns.chips[chip.common_word].grouped[i]:
            assert float(rows.score[i]) == cards.score(request, policy, hami_core=False)


@pytest.mark.parametrize("weight", [0, 10])
def test_both_paths_place_910_cards_grouped_by_network_alike(weight: int) -> None:
    from batchsched.columnar.selector import FAST_PATH_ENVIRONMENT_VARIABLE

    config_map = ("configMaps: [{namespace: kube-system, name: volcano-vgpu-device-config, "
                  "data: {device-config.yaml: 'vnpus: [{commonWord: Ascend910B3, resourceName: "
                  "huawei.com/Ascend910B3, resourceMemoryName: huawei.com/Ascend910B3-memory, "
                  "memoryAllocatable: 65536, memoryCapacity: 65536}]'}}]")
    nodes = []
    for n in range(3):
        register = json.dumps([{"id": f"n{n}-c{i}", "count": 1, "devmem": 65536, "devcore": 20,
                                "custominfo": {"NetworkID": (i + n) % 3}} for i in range(6)])
        nodes.append(f"- {{name: n{n}, allocatable: {{cpu: 64, memory: 64Gi, pods: 50, "
                     f"huawei.com/Ascend910B3: 6}}, annotations: "
                     f"{{hami.io/node-register-Ascend910B3: '{register}'}}}}")
    tasks = [f"- {{name: t{t}, job: j{t}, requests: {{cpu: 1, huawei.com/Ascend910B3: "
             f"{1 + t % 3}}}}}" for t in range(8)]
    doc = document("\n".join([config_map, "nodes:", *nodes,
                              "jobs:", *jobs_yaml(*(f"j{t}" for t in range(8))),
                              "tasks:", *tasks]),
                   plugin("predicates"), plugin("nodeorder"), vnpu("binpack", weight),
                   actions="allocate")
    fast = run(doc)
    assert fast["vnpuDevices"]
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv(FAST_PATH_ENVIRONMENT_VARIABLE, "0")
        slow = run(doc)
    assert (slow["binds"], slow["vnpuDevices"]) == (fast["binds"], fast["vnpuDevices"])


def test_explain_says_how_many_cards_could_serve_a_pending_task() -> None:
    from batchsched.explain.report import explain

    doc = document("\n".join([
        "nodes:", node_yaml("n1", 2), node_yaml("n2", 1),
        "jobs:", *jobs_yaml("j1", "j2"),
        "tasks:", task_yaml("a", "j1", memory=4096), task_yaml("b", "j2", count=2)]),
        plugin("predicates"), plugin("proportion"), vnpu("binpack"), actions="allocate")
    report = explain(parse_scenario(doc, source="<test>"), job="default/j2")
    assert report["verdict"] == "no node fits: no ascend device available"
    assert {"plugin": "deviceshare", "text": (
        "Ascend310P: asks 2 card(s) with 21527 MiB each; 3 card(s) on 2 node(s); at most 1 "
        "could serve it on one node")} in report["notes"]
