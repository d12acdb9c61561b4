"""deviceshare with ``deviceshare.VGPUEnable``: Volcano's vGPUs through whole sessions.

The node's ledger always adds up from the tasks it holds (``check_invariants``), the
devices a placement took are given back when it is undone, a bind carries them to the
cache and the next snapshot counts them, and the column path decides as the scalar one.
"""

from __future__ import annotations

import logging
from typing import Any

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from batchsched.api.types import TaskStatus
from batchsched.api.vgpu import ASSIGNED_IDS_ANNOTATION, BIND_PHASE_ANNOTATION
from batchsched.columnar.selector import FAST_PATH_ENVIRONMENT_VARIABLE
from batchsched.errors import PluginError
from batchsched.framework.session import Session
from batchsched.framework.statement import Statement
from batchsched.scenario import parse_scenario, run_scenario
from batchsched.scheduler import Scheduler, run_actions
from plugins.node_support import document, open_session, plugin, scores
from plugins.node_support import task as node_task


def vgpu(policy: str = "binpack", weight: int = 0) -> dict[str, Any]:
    arguments: dict[str, Any] = {"deviceshare.VGPUEnable": True}
    if policy:
        arguments["deviceshare.SchedulePolicy"] = policy
    if weight:
        arguments["deviceshare.ScheduleWeight"] = weight
    return plugin("deviceshare", arguments)


def node_yaml(name: str, gpus: int, memory: int = 16384, sharing: int = 10) -> str:
    register = "".join(f"GPU-{name}-{i},{sharing},{memory},NVIDIA-Tesla-T4,true,hami-core:"
                       for i in range(gpus))
    return (f"- {{name: {name}, allocatable: {{cpu: 64, memory: 256Gi, pods: 110, "
            f"volcano.sh/vgpu-number: {gpus * sharing}, "
            f"volcano.sh/vgpu-memory: {gpus * memory}, volcano.sh/vgpu-cores: {gpus * 100}}}, "
            f"annotations: {{volcano.sh/node-vgpu-register: '{register}'}}}}")


def task_yaml(name: str, job: str, memory: int, cores: int = 25, *, count: int = 1,
              extra: str = "") -> str:
    return (f"- {{name: {name}, job: {job}, requests: {{cpu: 1, volcano.sh/vgpu-number: {count},"
            f" volcano.sh/vgpu-memory: {memory}, volcano.sh/vgpu-cores: {cores}}}{extra}}}")


def vgpus_of(decisions: dict[str, Any]) -> dict[str, list[str]]:
    return {task: [device["uuid"] for device in containers[0]]
            for task, containers in decisions.get("vgpuDevices", {}).items()}


def run(doc: dict[str, Any]) -> dict[str, Any]:
    return run_scenario(parse_scenario(doc, source="<test>")).to_json()


def test_binpack_stacks_a_gang_on_one_gpu_and_writes_the_devices() -> None:
    doc = document("\n".join([
        "nodes:", node_yaml("n1", 2), node_yaml("n2", 2),
        "jobs:", "- {name: j1, minMember: 3}",
        "tasks:", *(task_yaml(f"t{i}", "j1", 4096) for i in range(3))]),
        plugin("predicates"), vgpu("binpack", weight=10), actions="allocate")
    got = run(doc)
    assert got["binds"] == {f"default/t{i}": "n1" for i in range(3)}
    assert vgpus_of(got) == {f"default/t{i}": ["GPU-n1-0"] for i in range(3)}
    assert got["vgpuDevices"]["default/t0"] == [
        [{"uuid": "GPU-n1-0", "type": "NVIDIA", "memory": 4096, "cores": 25}]]


def test_spread_annotation_puts_a_group_on_different_gpus() -> None:
    spread = ", annotations: {volcano.sh/vgpu-podgroup-policy: spread}"
    doc = document("\n".join([
        "nodes:", node_yaml("n1", 2),
        "jobs:", "- {name: j1, minMember: 3}",
        "tasks:", *(task_yaml(f"t{i}", "j1", 4096, extra=spread) for i in range(3))]),
        plugin("gang"), plugin("predicates"), vgpu("binpack"), actions="allocate")
    got = run(doc)
    # Two GPUs, three members that may not share one: the gang cannot be placed.
    assert got["binds"] == {}
    doc["tasks"] = doc["tasks"][:2]
    doc["jobs"][0]["minMember"] = 2
    assert sorted(uuid for uuids in vgpus_of(run(doc)).values() for uuid in uuids) == [
        "GPU-n1-0", "GPU-n1-1"]


def scored_t0(deviceshare: dict[str, Any]) -> dict[str, float]:
    """t0's node scores (4096 MiB asked) with n2 holding 8000 MiB of its one GPU."""
    doc = document("\n".join([
        "nodes:", node_yaml("n1", 1), node_yaml("n2", 1),
        "jobs:", "- {name: j1, minMember: 1}", "- {name: run, minMember: 1}",
        "tasks:", task_yaml("t0", "j1", 4096),
        "- {name: r0, job: run, phase: Running, node: n2, requests: {cpu: 1, "
        "volcano.sh/vgpu-number: 1, volcano.sh/vgpu-memory: 8000, volcano.sh/vgpu-cores: 10},"
        " annotations: {volcano.sh/vgpu-ids-new: 'GPU-n2-0,NVIDIA,8000,10:'}}"]),
        plugin("predicates"), deviceshare)
    return scores(open_session(doc))["default/t0"]


def test_the_node_score_is_the_rounded_policy_score_times_the_weight() -> None:
    # binpack: 100 x used/memory once the task is counted; floor(x + 0.5) x 10.
    assert scored_t0(vgpu("binpack", weight=10)) == {"n1": 250.0, "n2": 740.0}


def test_with_its_predicate_off_the_plugin_scores_every_node_0() -> None:
    # Volcano's vGPU score is the one its filter saved on the node; with the predicate
    # off no filter runs, and the weight multiplies 0.
    off = {**vgpu("binpack", weight=10), "enablePredicate": False}
    assert scored_t0(off) == {"n1": 0.0, "n2": 0.0}


def test_the_uuid_constraint_refusal_quotes_as_go_s_percent_q() -> None:
    from batchsched.explain import explain
    doc = document("\n".join([
        "nodes:", node_yaml("n1", 1),
        "jobs:", "- {name: j1, minMember: 1}",
        "tasks:", task_yaml("t0", "j1", 2048,
                            extra=", annotations: {volcano.sh/vgpu-use-gpuuuid: GPU-x}")]),
        plugin("predicates"), vgpu(), actions="allocate")
    report = explain(parse_scenario(doc, source="<test>"), job="default/j1")
    assert ('no GPU matches UUID constraints volcano.sh/vgpu-use-gpuuuid="GPU-x", '
            'volcano.sh/vgpu-nouse-gpuuuid="" on node n1') in str(report)


def test_a_running_task_holds_its_devices_and_the_reason_is_volcano_s() -> None:
    doc = document("\n".join([
        "nodes:", node_yaml("n1", 2),
        "jobs:", "- {name: run, minMember: 2}", "- {name: j1, minMember: 1}",
        "tasks:",
        *(f"- {{name: r{i}, job: run, phase: Running, node: n1, requests: {{cpu: 1, "
          "volcano.sh/vgpu-number: 1, volcano.sh/vgpu-memory: 12000, volcano.sh/vgpu-cores: 10},"
          f" annotations: {{volcano.sh/vgpu-ids-new: 'GPU-n1-{i},NVIDIA,12000,10:'}}}}"
          for i in range(2)),
        # 8768 MiB left on the node, but no GPU has 8000 of it.
        task_yaml("t0", "j1", 8000)]),
        plugin("predicates"), vgpu("binpack"), actions="allocate")
    got = run(doc)
    assert got["binds"] == {}
    assert any("hami-vgpuDeviceSharing error" in e["message"] for e in got["events"])


def test_an_undone_placement_gives_its_devices_back() -> None:
    """A gang that cannot be completed is discarded; the next job gets the GPUs its
    members had taken. (Volcano at the pinned commit keeps them counted until the
    session ends: its Release reads the pod's annotations from the API server, which a
    pod placed in the same session does not have yet.)"""
    exclusive = 100
    doc = document("\n".join([
        "nodes:", node_yaml("n1", 2),
        "jobs:", "- {name: big, minMember: 3, createdAt: 1, phase: Inqueue}",
        "- {name: small, minMember: 2, createdAt: 2, phase: Inqueue}",
        "tasks:", *(task_yaml(f"b{i}", "big", 1000, cores=exclusive) for i in range(3)),
        *(task_yaml(f"s{i}", "small", 1000, cores=exclusive) for i in range(2))]),
        plugin("gang"), plugin("predicates"), vgpu("binpack"), actions="allocate")
    ssn = open_session(doc)
    run_actions(ssn)
    placed = {t.uid: t.node_name for j in ssn.jobs.values() for t in j.tasks.values()
              if t.node_name}
    assert placed == {"default/s0": "n1", "default/s1": "n1"}
    for job in ssn.jobs.values():
        for task in job.tasks.values():
            if not task.node_name:
                assert ASSIGNED_IDS_ANNOTATION not in task.annotations, task.uid
    ssn.nodes["n1"].check_invariants()


def test_preemption_frees_the_victim_s_devices() -> None:
    doc = document("\n".join([
        "priorityClasses: [{name: low, value: 10}, {name: high, value: 1000}]",
        "nodes:", node_yaml("n1", 1),
        "jobs:", "- {name: low, minMember: 0, priorityClassName: low, phase: Running}",
        "- {name: high, minMember: 1, priorityClassName: high, phase: Inqueue}",
        "tasks:",
        "- {name: low-0, job: low, priorityClassName: low, phase: Running, node: n1, "
        "requests: {cpu: 1, volcano.sh/vgpu-number: 1, volcano.sh/vgpu-memory: 12000, "
        "volcano.sh/vgpu-cores: 50}, annotations: {volcano.sh/vgpu-ids-new: "
        "'GPU-n1-0,NVIDIA,12000,50:', volcano.sh/bind-phase: success}}",
        task_yaml("high-0", "high", 8000, cores=50, extra=", priorityClassName: high")]),
        plugin("priority"), plugin("gang"), plugin("predicates"), vgpu("binpack"),
        actions="allocate, preempt")
    got = run(doc)
    assert got["evicted"] == ["default/low-0"]
    assert got["pipelined"] == {"default/high": {"default/high-0": "n1"}}


def test_binds_carry_the_devices_to_the_cache_and_the_next_snapshot() -> None:
    doc = document("\n".join([
        "nodes:", node_yaml("n1", 1, sharing=2),
        "jobs:", *(f"- {{name: j{i}, minMember: 1, createdAt: {i}}}" for i in range(3)),
        "tasks:", *(task_yaml(f"t{i}", f"j{i}", 4096) for i in range(3))]),
        plugin("predicates"), vgpu("binpack"), actions="allocate")
    parsed = parse_scenario(doc, source="<test>")
    cache = parsed.build_cache()
    Scheduler(cache, parsed.configuration).run_once()
    bound = {uid for job in cache.jobs.values() for uid, t in job.tasks.items()
             if t.status is TaskStatus.BOUND}
    # Two tasks may share the GPU; the third waits.
    assert bound == {"default/t0", "default/t1"}
    node = cache.nodes["n1"]
    assert node.vgpu is not None and node.vgpu.devices[0].used_num == 2
    node.check_invariants()
    held = cache.jobs["default/j0"].tasks["default/t0"]
    assert held.annotations[ASSIGNED_IDS_ANNOTATION] == "GPU-n1-0,NVIDIA,4096,25:"
    assert held.annotations[BIND_PHASE_ANNOTATION] == "allocating"
    # The next session sees the GPU shared by two: the third still waits.
    Scheduler(cache, parsed.configuration).run_once()
    assert cache.jobs["default/j2"].tasks["default/t2"].status is TaskStatus.PENDING
    # A task that ends gives its share back; a recreated one loses its devices.
    cache.task_started("default/j0", "default/t0")
    cache.task_ended("default/j0", "default/t0")
    cache.task_recreated("default/j1", "default/t1")
    assert ASSIGNED_IDS_ANNOTATION not in cache.jobs["default/j1"].tasks["default/t1"].annotations
    assert node.vgpu.devices[0].used_num == 0
    node.check_invariants()
    Scheduler(cache, parsed.configuration).run_once()
    assert cache.jobs["default/j2"].tasks["default/t2"].status is TaskStatus.BOUND


def ledger(ssn: Session, node: str = "n1") -> dict[str, tuple[int, int, list[str]]]:
    devices = ssn.nodes[node].vgpu
    assert devices is not None
    return {d.uuid: (d.used_num, d.used_memory, sorted(d.pods)) for d in devices.devices.values()}


RUNNING_R0 = ("- {name: r0, job: run, phase: Running, node: n1, requests: {cpu: 1, "
              "volcano.sh/vgpu-number: 1, volcano.sh/vgpu-memory: 12000, "
              "volcano.sh/vgpu-cores: 25}, annotations: {volcano.sh/vgpu-ids-new: "
              "'GPU-n1-0,NVIDIA,12000,25:'}}")


def test_statement_operations_and_their_undo_keep_the_ledger() -> None:
    """An eviction frees the victim's vGPUs (a releasing pod holds none, as on
    Volcano's node); a pipeline and an allocation take theirs; a discard puts back
    exactly what was there, and the evicted pod keeps the devices it holds."""
    doc = document("\n".join([
        "nodes:", node_yaml("n1", 2),
        "jobs:", "- {name: run, minMember: 0, phase: Running}", "- {name: j1, minMember: 1}",
        "tasks:", RUNNING_R0, task_yaml("t0", "j1", 8000), task_yaml("t1", "j1", 8000)]),
        plugin("predicates"), vgpu("binpack"))
    ssn = open_session(doc)
    node = ssn.nodes["n1"]
    before = ledger(ssn)
    assert before["GPU-n1-0"] == (1, 12000, ["default/r0"])
    statement = Statement(ssn)
    statement.evict(node_task(ssn, "default/r0"), "preempt")
    assert ledger(ssn)["GPU-n1-0"] == (0, 0, [])
    statement.pipeline(node_task(ssn, "default/t0"), "n1")
    statement.allocate(node_task(ssn, "default/t1"), "n1")
    assert ledger(ssn)["GPU-n1-0"] == (2, 16000, ["default/t0", "default/t1"])
    node.check_invariants()
    statement.discard()
    assert ledger(ssn) == before
    node.check_invariants()
    assert ASSIGNED_IDS_ANNOTATION in node_task(ssn, "default/r0").annotations
    for uid in ("default/t0", "default/t1"):
        assert ASSIGNED_IDS_ANNOTATION not in node_task(ssn, uid).annotations


def test_an_evicted_pod_holds_no_vgpu_in_the_next_snapshot() -> None:
    """Volcano's node does not count a releasing pod's devices: the next session may
    place on them (and need not evict again)."""
    doc = document("\n".join([
        "nodes:", node_yaml("n1", 1),
        "jobs:", "- {name: run, minMember: 0, phase: Running}",
        "tasks:", RUNNING_R0]), plugin("predicates"), vgpu("binpack"))
    parsed = parse_scenario(doc, source="<test>")
    cache = parsed.build_cache()
    r0 = cache.jobs["default/run"].tasks["default/r0"]
    assert cache.evict(r0, "preempt")
    node = cache.nodes["n1"]
    assert node.vgpu is not None and node.vgpu.devices[0].used_num == 0
    node.check_invariants()


def test_a_stale_device_annotation_is_chosen_again() -> None:
    """A pending task that carries devices (a pod from elsewhere, a node deleted) gets
    devices chosen on the node it is placed on, as Volcano's Allocate chooses them."""
    stale = ", annotations: {volcano.sh/vgpu-ids-new: 'GPU-old-0,NVIDIA,16000,100:'}"
    doc = document("\n".join([
        "nodes:", node_yaml("n1", 1, sharing=1),
        "jobs:", "- {name: j1, minMember: 1, createdAt: 1}",
        "- {name: j2, minMember: 1, createdAt: 2}",
        "tasks:", task_yaml("t0", "j1", 16000, cores=100, extra=stale),
        task_yaml("t1", "j2", 16000, cores=100)]),
        plugin("predicates"), vgpu("binpack"), actions="allocate")
    got = run(doc)
    assert got["binds"] == {"default/t0": "n1"}
    assert vgpus_of(got) == {"default/t0": ["GPU-n1-0"]}


def test_a_deleted_node_s_tasks_lose_their_devices() -> None:
    doc = document("\n".join([
        "nodes:", node_yaml("n1", 1),
        "jobs:", "- {name: run, minMember: 0, phase: Running}",
        "tasks:", RUNNING_R0]), plugin("predicates"), vgpu("binpack"))
    cache = parse_scenario(doc, source="<test>").build_cache()
    cache.delete_node("n1")
    r0 = cache.jobs["default/run"].tasks["default/r0"]
    assert r0.status is TaskStatus.PENDING
    assert ASSIGNED_IDS_ANNOTATION not in r0.annotations


def test_uuids_that_contain_one_another() -> None:
    """GPU-n1-1 is part of GPU-n1-10: the task is counted on the GPU chosen."""
    doc = document("\n".join([
        "nodes:", node_yaml("n1", 11),
        "jobs:", "- {name: j1, minMember: 1}",
        "tasks:", task_yaml("t0", "j1", 4096)]),
        plugin("predicates"), vgpu(""), actions="allocate")
    ssn = open_session(doc)
    run_actions(ssn)
    assert {uuid: entry for uuid, entry in ledger(ssn).items() if entry[0]} == {
        "GPU-n1-10": (1, 4096, ["default/t0"])}
    ssn.nodes["n1"].check_invariants()


def test_queue_status_counts_the_vgpus_held_not_the_request() -> None:
    """Volcano's AddQueueResource: a task on two GPUs counts its memory twice, and one
    asking no memory counts all of its GPU's; but only once the pod object carries its
    devices: in the session that placed them, the request counts."""
    doc = document("\n".join([
        "nodes:", node_yaml("n1", 3),
        "jobs:", "- {name: j1, minMember: 2, phase: Inqueue}",
        "tasks:", task_yaml("two", "j1", 4096, count=2),
        "- {name: whole, job: j1, requests: {cpu: 1, volcano.sh/vgpu-number: 1, "
        "volcano.sh/vgpu-cores: 10}}"]),
        plugin("gang"), plugin("predicates"), vgpu("binpack"), actions="allocate")
    scenario = parse_scenario(doc, source="<test>")
    cache = scenario.build_cache()
    scheduler = Scheduler(cache, scenario.configuration)
    scheduler.run_once()
    assert {b.task for b in cache.binds} == {"default/two", "default/whole"}
    placing = cache.queues["default"].status.allocated
    assert placing.get("volcano.sh/vgpu-memory") == 4096 * 1000
    assert placing.get("volcano.sh/vgpu-cores") == (25 + 10) * 1000
    scheduler.run_once()
    held = cache.queues["default"].status.allocated
    assert held.get("volcano.sh/vgpu-memory") == (2 * 4096 + 16384) * 1000
    assert held.get("volcano.sh/vgpu-cores") == (2 * 25 + 10) * 1000
    assert held.get("volcano.sh/vgpu-number") == 3 * 1000


def test_queue_status_keeps_the_request_of_devices_not_on_the_node() -> None:
    doc = document("\n".join([
        "nodes:", node_yaml("n1", 1),
        "jobs:", "- {name: run, minMember: 0, phase: Running}",
        "tasks:", RUNNING_R0.replace("GPU-n1-0", "GPU-elsewhere")]),
        plugin("predicates"), vgpu("binpack"), actions="allocate")
    allocated = run(doc)["queueStatus"]["default"]["allocated"]
    assert allocated["volcano.sh/vgpu-memory"] == "12k"    # NewMilliQuantity, canonical


def test_vgpu_and_gpu_sharing_cannot_be_used_together() -> None:
    doc = document("nodes: []", plugin("deviceshare", {"deviceshare.VGPUEnable": True,
                                                       "deviceshare.GPUSharingEnable": True}))
    with pytest.raises(PluginError, match="cannot be used together"):
        open_session(doc)


def test_an_unknown_policy_is_no_policy_and_says_so(caplog: pytest.LogCaptureFixture) -> None:
    doc = document("nodes: []", vgpu("binpak"))
    with caplog.at_level(logging.WARNING, logger="batchsched"):
        open_session(doc)
    assert "deviceshare.SchedulePolicy" in caplog.text and "binpack or spread" in caplog.text


# -- properties ------------------------------------------------------------------------------

vgpu_tasks = st.lists(st.tuples(st.integers(0, 5),              # job
                                st.sampled_from([1000, 4096, 8000, 12000]),
                                st.sampled_from([0, 10, 25, 50, 100]),
                                st.integers(1, 2),              # GPUs
                                st.booleans()),                 # spread within the job
                      min_size=1, max_size=14)


def random_document(nodes: list[int], tasks: list[tuple[int, int, int, int, bool]],
                    policy: str) -> dict[str, Any]:
    spread = ", annotations: {volcano.sh/vgpu-podgroup-policy: spread}"
    jobs = sorted({job for job, *_ in tasks})
    members = {job: sum(1 for j, *_ in tasks if j == job) for job in jobs}
    lines = ["nodes:", *(node_yaml(f"n{i}", gpus, sharing=3) for i, gpus in enumerate(nodes)),
             "- {name: plain, allocatable: {cpu: 64, memory: 256Gi, pods: 110}}",
             "jobs:", *(f"- {{name: j{job}, minMember: {members[job]}, createdAt: {job}}}"
                        for job in jobs),
             "tasks:",
             *(task_yaml(f"t{i}", f"j{job}", memory, cores, count=count,
                         extra=spread if apart else "")
               for i, (job, memory, cores, count, apart) in enumerate(tasks)),
             *(f"- {{name: p{job}, job: j{job}, requests: {{cpu: 1}}}}" for job in jobs)]
    for job in jobs:
        lines[lines.index(f"- {{name: j{job}, minMember: {members[job]}, createdAt: {job}}}")] = (
            f"- {{name: j{job}, minMember: {members[job] + 1}, createdAt: {job}}}")
    return document("\n".join(lines), plugin("gang"), plugin("predicates"),
                    vgpu(policy, weight=5), plugin("binpack"), actions="allocate, backfill")


def placements(ssn: Session) -> dict[str, tuple[str, str]]:
    return {t.uid: (t.node_name, t.annotations.get(ASSIGNED_IDS_ANNOTATION, ""))
            for j in ssn.jobs.values() for t in j.tasks.values() if t.node_name}


@settings(max_examples=40, deadline=None)
@given(st.lists(st.integers(1, 3), min_size=1, max_size=3), vgpu_tasks,
       st.sampled_from(["binpack", "spread", ""]))
def test_the_ledger_adds_up_and_no_gpu_is_overcommitted(
        nodes: list[int], tasks: list[tuple[int, int, int, int, bool]], policy: str) -> None:
    ssn = open_session(random_document(nodes, tasks, policy))
    run_actions(ssn)
    for node in ssn.nodes.values():
        node.check_invariants()
        for device in (node.vgpu.devices.values() if node.vgpu else ()):
            assert device.used_memory <= device.memory
            assert device.used_cores <= 100
            assert device.used_num <= device.number


@settings(max_examples=25, deadline=None)
@given(st.lists(st.integers(1, 3), min_size=1, max_size=3), vgpu_tasks,
       st.sampled_from(["binpack", "spread"]))
def test_the_column_path_decides_as_the_scalar_one(
        nodes: list[int], tasks: list[tuple[int, int, int, int, bool]], policy: str) -> None:
    assert_both_paths_agree(random_document(nodes, tasks, policy))


def assert_both_paths_agree(doc: dict[str, Any]) -> None:
    """The same placements (and vGPUs) with the column forms and node by node."""
    ssn = open_session(doc)
    run_actions(ssn)
    fast = placements(ssn)
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv(FAST_PATH_ENVIRONMENT_VARIABLE, "0")
        ssn = open_session(doc)
        run_actions(ssn)
        assert placements(ssn) == fast


def test_malformed_vgpu_annotations_are_reported_naming_the_object() -> None:
    doc = document("\n".join([
        "nodes:",
        "- {name: n1, allocatable: {cpu: 8, memory: 8Gi, pods: 10}, annotations: "
        "{volcano.sh/node-vgpu-register: 'GPU-a,10,16384,NVIDIA,true,hami-core:'}}",
        node_yaml("n2", 1).replace(",true,hami-core:", ",true:"),
        "jobs:", "- {name: run, minMember: 0, phase: Running}",
        "tasks:", RUNNING_R0.replace("12000,25:", "12000,-5:")]),
        plugin("predicates"), vgpu("binpack"))
    parsed = parse_scenario(doc, source="s.yaml")
    warnings = "\n".join(parsed.warnings)
    assert ("nodes[0] (n1).annotations.volcano.sh/node-vgpu-register: its allocatable has no "
            "volcano.sh/vgpu-number, volcano.sh/vgpu-cores, volcano.sh/vgpu-memory") in warnings
    assert "nodes[1] (n2).annotations.volcano.sh/node-vgpu-register: entry" in warnings
    assert ("tasks[0] (default/r0).annotations.volcano.sh/vgpu-ids-new: "
            "'GPU-n1-0,NVIDIA,12000,-5' name no device") in warnings
    assert all(node.vgpu is None for node in parsed.nodes)


def test_arguments() -> None:
    """deviceshare_test.go TestArguments."""
    from batchsched.framework.arguments import Arguments
    from batchsched.plugins.deviceshare import DeviceSharePlugin

    built = DeviceSharePlugin(Arguments({"deviceshare.VGPUEnable": True,
                                         "deviceshare.SchedulePolicy": "binpack",
                                         "deviceshare.ScheduleWeight": 10}))
    assert (built.vgpu, built.policy, built.weight) == (True, "binpack", 10)


def test_the_named_device_configuration_sets_the_request_names() -> None:
    """deviceshare.KnownGeometriesCMName/-Namespace name the ConfigMap whose
    device-config.yaml gives the request names; its memory-percentage request takes a
    share of the GPU's memory."""
    text = ("nvidia:\n  resourceCountName: volcano.sh/vgpu-number\n"
            "  resourceMemoryName: volcano.sh/vgpu-memory\n"
            "  resourceMemoryPercentageName: volcano.sh/vgpu-memory-percentage\n"
            "  resourceCoreName: volcano.sh/vgpu-cores\n")
    doc = document("\n".join([
        "nodes:", node_yaml("n1", 1),
        "jobs:", "- {name: j1, minMember: 1, phase: Inqueue}",
        "tasks:", "- {name: t0, job: j1, requests: {cpu: 1, volcano.sh/vgpu-number: 1, "
        "volcano.sh/vgpu-memory-percentage: 25}}"]),
        plugin("predicates"),
        plugin("deviceshare", {"deviceshare.VGPUEnable": True,
                               "deviceshare.KnownGeometriesCMName": "my-devices",
                               "deviceshare.KnownGeometriesCMNamespace": "gpu-system"}),
        actions="allocate")
    doc["configMaps"] = [{"name": "my-devices", "namespace": "gpu-system",
                          "data": {"device-config.yaml": text}}]
    # An extended resource the pod asks: the node must advertise it to pass resource fit.
    doc["nodes"][0]["allocatable"]["volcano.sh/vgpu-memory-percentage"] = 1000
    got = run(doc)
    assert got["vgpuDevices"]["default/t0"][0][0]["memory"] == 16384 // 4
    # Without the configuration, the percentage is not read: all of the GPU's memory.
    del doc["configMaps"]
    assert run(doc)["vgpuDevices"]["default/t0"][0][0]["memory"] == 16384


def test_an_unreadable_device_configuration_is_reported(
        caplog: pytest.LogCaptureFixture) -> None:
    # Reported once per process and problem: a name of this test's own.
    doc = document("\n".join(["nodes:", node_yaml("n1", 1)]), plugin("deviceshare", {
        "deviceshare.VGPUEnable": True, "deviceshare.KnownGeometriesCMName": "broken-one"}))
    doc["configMaps"] = [{"name": "broken-one", "namespace": "kube-system",
                          "data": {"device-config.yaml": "nvidia: [unclosed"}}]
    with caplog.at_level(logging.WARNING, logger="batchsched"):
        open_session(doc)
    assert "kube-system/broken-one" in caplog.text
    assert "default device configuration" in caplog.text


def test_a_replay_reads_the_scenario_s_configmaps(tmp_path: Any) -> None:
    """batchsched simulate decides with the device configuration batchsched run reads."""
    from batchsched.simulation import Simulator
    from batchsched.simulation.scenario_workload import scenario_workload

    text = "nvidia: {resourceCountName: example.com/vgpu}\n"
    doc = {"version": 1, "name": "replay", "config": {"actions": "allocate", "tiers": [
        {"plugins": [plugin("predicates"), vgpu("binpack")]}]},
        "nodes": yaml.safe_load(node_yaml("n1", 1)),
        "jobs": [{"name": "j1", "minMember": 1, "createdAt": 0}],
        "tasks": [{"name": "t0", "job": "j1", "requests": {"cpu": 1, "example.com/vgpu": 1},
                   "annotations": {"batchsched.io/run-time": "10"}}],
        "configMaps": [{"name": "volcano-vgpu-device-config", "namespace": "kube-system",
                        "data": {"device-config.yaml": text}}]}
    doc["nodes"][0]["allocatable"]["example.com/vgpu"] = 10
    path = tmp_path / "replay.yaml"
    path.write_text(yaml.safe_dump(doc), encoding="utf-8")
    workload, scenario = scenario_workload(path)
    held: list[str | None] = []

    def after_session(sim: Simulator) -> None:
        task = sim.cache.jobs["default/j1"].tasks["default/t0"]
        held.append(task.annotations.get(ASSIGNED_IDS_ANNOTATION))

    sim = Simulator(workload, scenario.configuration, observe=after_session)
    assert dict(sim.cache.config_maps) == {"kube-system/volcano-vgpu-device-config": {
        "device-config.yaml": text}}
    sim.run()
    # The task asked a vGPU under the configured name: it was given one.
    assert held == ["GPU-n1-0,NVIDIA,16384,0:"]
    assert sim.timeline.finished_count == 1


@settings(max_examples=25, deadline=None)
@given(st.lists(st.integers(1, 3), min_size=1, max_size=4),
       st.lists(st.tuples(st.integers(0, 5), st.sampled_from([1000, 4096, 8000, 12000]),
                          st.sampled_from([0, 10, 25, 50, 100]), st.integers(0, 2),
                          st.just(False)), min_size=1, max_size=14),
       st.sampled_from(["binpack", "spread", ""]))
def test_the_column_path_decides_as_the_scalar_one_without_annotations(
        nodes: list[int], tasks: list[tuple[int, int, int, int, bool]], policy: str) -> None:
    """Tasks without annotations take the column forms (predicate and score)."""
    assert_both_paths_agree(random_document(nodes, tasks, policy))


def preempt_document(nodes: list[int], tasks: list[tuple[int, int, int]],
                     sharing: bool, policy: str = "binpack") -> dict[str, Any]:
    """Low-priority elastic jobs that fill the GPUs, then high-priority ones."""
    lines = ["priorityClasses: [{name: low, value: 1}, {name: high, value: 100}]",
             "nodes:", *(node_yaml(f"n{i}", gpus, sharing=2) if not sharing else
                         f"- {{name: n{i}, allocatable: {{cpu: 64, memory: 256Gi, pods: 110, "
                         f"nvidia.com/gpu: {gpus}}}}}" for i, gpus in enumerate(nodes)),
             "jobs:"]
    body = []
    for i, (memory, cores, high) in enumerate(tasks):
        klass = "high" if high else "low"
        # Low-priority jobs are elastic (minMember 0): gang lets preempt take them.
        lines.append(f"- {{name: j{i}, minMember: {int(high)}, priorityClassName: {klass}, "
                     f"createdAt: {i}}}")
        requests = (f"{{cpu: 1, nvidia.com/gpu: {memory % 3 or '500m'}}}" if sharing else
                    f"{{cpu: 1, volcano.sh/vgpu-number: 1, volcano.sh/vgpu-memory: {memory}, "
                    f"volcano.sh/vgpu-cores: {cores}}}")
        body.append(f"- {{name: t{i}, job: j{i}, priorityClassName: {klass}, "
                    f"requests: {requests}}}")
    config = plugin("deviceshare", {"deviceshare.GPUSharingEnable": True}) if sharing \
        else vgpu(policy, weight=3)
    return document("\n".join([*lines, "tasks:", *body]), plugin("priority"), plugin("gang"),
                    plugin("conformance"), plugin("predicates"), config,
                    actions="enqueue, allocate, preempt")


def two_sessions(doc: dict[str, Any]) -> tuple[Any, ...]:
    """Low-priority jobs first (the high ones arrive after), then a session with both."""
    parsed = parse_scenario(doc, source="<test>")
    cache = parsed.build_cache()
    high = [uid for uid, job in cache.jobs.items() if job.podgroup.priority_class_name == "high"]
    held = {uid: cache.jobs.pop(uid) for uid in high}
    Scheduler(cache, parsed.configuration).run_once()
    for job in held.values():
        cache.add_job(job)
    Scheduler(cache, parsed.configuration).run_once()
    return (list(cache.binds), list(cache.evictions), dict(cache.nominations),
            {uid: t.annotations.get(ASSIGNED_IDS_ANNOTATION) for j in cache.jobs.values()
             for uid, t in j.tasks.items()})


@settings(max_examples=20, deadline=None)
@given(st.lists(st.integers(1, 3), min_size=1, max_size=3),
       st.lists(st.tuples(st.sampled_from([2048, 8000, 12000]), st.sampled_from([0, 50, 100]),
                          st.booleans()), min_size=1, max_size=12),
       st.booleans(), st.sampled_from(["binpack", "spread", ""]))
def test_preempt_decides_alike_on_the_column_and_scalar_paths(
        nodes: list[int], tasks: list[tuple[int, int, bool]], sharing: bool,
        policy: str) -> None:
    doc = preempt_document(nodes, tasks, sharing, policy)
    fast = two_sessions(doc)
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv(FAST_PATH_ENVIRONMENT_VARIABLE, "0")
        assert two_sessions(doc) == fast


# -- gpuexclusive_test.go: deviceshare.GPUExclusiveRules ---------------------------------------

EXCLUSIVE_RULES = ({"app": "training", "team": "ml"}, {"workload": "inference"})


@pytest.mark.parametrize(("labels", "rule", "matches"), [
    ({"app": "training", "team": "ml"}, 0, True),
    ({"app": "training", "team": "ml", "env": "prod"}, 0, True),
    ({"app": "training"}, 0, False),
    ({"app": "training", "team": "data"}, 0, False),
    ({"workload": "inference"}, 1, True),
    ({}, 0, False),
], ids=["rule 0", "extra labels", "missing label", "wrong value", "rule 1", "no labels"])
def test_pod_matches_rule(labels: dict[str, str], rule: int, matches: bool) -> None:
    from batchsched.plugins.deviceshare import matching_rules

    assert (rule in matching_rules(labels, EXCLUSIVE_RULES)) is matches


@pytest.mark.parametrize(("labels", "count"), [
    ({"app": "training", "team": "ml"}, 1),
    ({"workload": "inference"}, 1),
    ({"app": "training", "team": "ml", "workload": "inference"}, 2),
    ({"app": "serving"}, 0),
    ({}, 0),
], ids=["rule 0 only", "rule 1 only", "both", "none", "no labels"])
def test_matching_rules(labels: dict[str, str], count: int) -> None:
    from batchsched.plugins.deviceshare import matching_rules

    assert len(matching_rules(labels, EXCLUSIVE_RULES)) == count


@pytest.mark.parametrize(("raw", "rules"), [
    (None, ()),
    ("not a slice", ()),
    ([], ()),
    ([{}], ()),
    ([{"app": "training", "team": "ml"}, {"workload": "inference"}], EXCLUSIVE_RULES),
    ([{"app": "training", "replicas": 3}], ({"app": "training"},)),
], ids=["nil", "wrong type", "empty", "empty map skipped", "two rules",
        "non-string value dropped"])
def test_load_gpu_exclusive_config(raw: object, rules: tuple[dict[str, str], ...]) -> None:
    from batchsched.plugins.deviceshare import parse_exclusive_rules

    assert parse_exclusive_rules(raw) == rules


def exclusive_document(running: list[tuple[str, str, str]], pending_labels: str,
                       gpus: int = 4) -> dict[str, Any]:
    """GPUs GPU-n1-0.. of one node; ``running``: (name, labels, GPU index) pods holding
    a share; one pending pod with ``pending_labels``."""
    lines = ["nodes:", node_yaml("n1", gpus),
             "jobs:", "- {name: run, minMember: 0, phase: Running}",
             "- {name: new, minMember: 1, phase: Inqueue}", "tasks:"]
    for name, labels, index in running:
        lines.append(
            f"- {{name: {name}, job: run, phase: Running, node: n1, labels: {labels}, "
            "requests: {cpu: 1, volcano.sh/vgpu-number: 1, volcano.sh/vgpu-memory: 1024}, "
            f"annotations: {{volcano.sh/vgpu-ids-new: 'GPU-n1-{index},NVIDIA,1024,0:'}}}}")
    lines.append(f"- {{name: p, job: new, labels: {pending_labels}, requests: {{cpu: 1, "
                 "volcano.sh/vgpu-number: 1, volcano.sh/vgpu-memory: 1024}}")
    return document("\n".join(lines), plugin("predicates"), plugin("deviceshare", {
        "deviceshare.VGPUEnable": True, "deviceshare.SchedulePolicy": "binpack",
        "deviceshare.GPUExclusiveRules": [dict(rule) for rule in EXCLUSIVE_RULES]}),
        actions="allocate")


def test_reserved_gpus_are_those_of_the_same_rule() -> None:
    """TestReservedGPUsForPod, TestPodMatchingMultipleRulesSeesUnionOfReservedGPUs,
    TestNonMatchingPodDoesNotReserve: a pod matching a rule does not get the GPUs that
    pods matching the same rule use; pods of other rules, or none, do not count."""
    from batchsched.plugins.deviceshare import exclusive_gpus

    running = [("pod-a", "{app: training, team: ml}", "0"),
               ("pod-b", "{workload: inference}", "1")]
    cases = {"{app: training, team: ml}": {0},
             "{app: training, team: ml, workload: inference}": {0, 1},
             "{app: serving}": set()}
    for labels, reserved in cases.items():
        ssn = open_session(exclusive_document(running, labels))
        pending = ssn.jobs["default/new"].tasks["default/p"]
        rules = tuple(EXCLUSIVE_RULES)
        assert exclusive_gpus(pending, ssn.nodes["n1"], rules) == reserved, labels


VGPU_1G = "volcano.sh/vgpu-number: 1, volcano.sh/vgpu-memory: 1024"


def untrack_document(g1: str, g2: str, *, gpus: int = 3, x_cpu: int = 1, y_cpu: int = 1,
                     predicates: bool = True) -> dict[str, Any]:
    """One node whose pods match the rule {team: a}: x, being deleted, names GPU 0 by
    its annotation alone, y holds GPU 1; gang g (g1, g2 asking ``g1``/``g2``) is undone
    as g2 fits nowhere; z1 then asks a vGPU (spread tries the least used GPU first)."""
    held = "labels: {team: a}, requests: {cpu: %d, memory: 1Gi, " + VGPU_1G + "}"
    document_ = yaml.safe_load("\n".join([
        "version: 1",
        "nodes:", node_yaml("n1", gpus),
        "jobs:", "- {name: jx, minMember: 1, phase: Running}",
        "- {name: jy, minMember: 1, phase: Running}",
        "- {name: g, minMember: 2, phase: Inqueue, createdAt: 1}",
        "- {name: z, minMember: 1, phase: Inqueue, createdAt: 2}",
        "tasks:",
        "- {name: x, job: jx, node: n1, phase: Running, deleting: true, " + held % x_cpu
        + ", annotations: {volcano.sh/vgpu-ids-new: 'GPU-n1-0,NVIDIA,1024,0:'}}",
        "- {name: y, job: jy, node: n1, phase: Running, " + held % y_cpu
        + ", annotations: {volcano.sh/vgpu-ids-new: 'GPU-n1-1,NVIDIA,1024,0:'}}",
        f"- {{name: g1, job: g, labels: {{team: a}}, requests: {g1}}}",
        f"- {{name: g2, job: g, labels: {{team: a}}, requests: {g2}}}",
        "- {name: z1, job: z, " + held % 1 + "}"]))
    second_tier = [{"name": "predicates"}] if predicates else []
    second_tier.append(plugin("deviceshare", {
        "deviceshare.VGPUEnable": True, "deviceshare.SchedulePolicy": "spread",
        "deviceshare.GPUExclusiveRules": [{"team": "a"}]}))
    document_["config"] = {"actions": "enqueue, allocate", "tiers": [
        {"plugins": [{"name": "priority"}, {"name": "gang"}]}, {"plugins": second_tier}]}
    return document_


def test_a_rule_pod_leaving_the_node_ends_a_releasing_pod_s_reservation() -> None:
    """Volcano's untrackPod: when a pod of a rule leaves the node (here g1's placement,
    undone with its gang), the rule keeps only the GPUs the ledger holds; x's
    annotation-only GPU 0 is free for z1."""
    vgpu_ask = "{cpu: 1, memory: 1Gi, " + VGPU_1G + "}"
    got = run(untrack_document(vgpu_ask, vgpu_ask))
    assert vgpus_of(got) == {"default/z1": ["GPU-n1-0"]}


def test_a_rule_pod_leaving_the_node_untracks_without_the_predicates_plugin() -> None:
    """Volcano's node wrapper untracks whatever plugin takes devices: g1 (no vGPU)
    allocated then undone with its gang ends x's annotation-only GPU 0."""
    got = run(untrack_document("{cpu: 1, memory: 1Gi}", "{cpu: 100, memory: 1Gi}", gpus=2,
                               predicates=False))
    assert got["binds"] == {"default/z1": "n1"}


def test_a_pipelined_rule_pod_undone_untracks_nothing() -> None:
    """A pipelined pod is on no device wrapper (Volcano adds it without its
    resources): g1, with room only in x's releasing cpu, is pipelined and undone; x's
    annotation still reserves GPU 0, so z1 gets GPU 2."""
    got = run(untrack_document("{cpu: 2, memory: 1Gi}", "{cpu: 100, memory: 1Gi}",
                               x_cpu=33, y_cpu=30))
    assert vgpus_of(got) == {"default/z1": ["GPU-n1-2"]}


UNTRACKED_DRY_RUN = """
version: 1
config:
  actions: "enqueue, allocate, preempt"
  tiers:
  - plugins: [{name: priority}, {name: gang}, {name: conformance}]
  - plugins:
    - name: predicates
    - name: deviceshare
      arguments:
        deviceshare.VGPUEnable: true
        deviceshare.SchedulePolicy: spread
        deviceshare.GPUExclusiveRules: [{team: a}]
  configurations:
  - name: preempt
    arguments: {enableTopologyAwarePreemption: TOPOLOGY}
priorityClasses: [{name: high, value: 1000}, {name: low, value: 10}]
nodes:
- name: n1
  allocatable: {cpu: 4, memory: 64Gi, pods: 110, volcano.sh/vgpu-number: 20,
                volcano.sh/vgpu-memory: 32768, volcano.sh/vgpu-cores: 200}
  annotations: {volcano.sh/node-vgpu-register: "REGISTER"}
jobs:
- {name: jx, minMember: 1, phase: Running, priorityClassName: low}
- {name: jy, minMember: 1, phase: Running, priorityClassName: high}
- {name: jv, minMember: 0, phase: Running, priorityClassName: low}
- {name: jp, minMember: 1, phase: Inqueue, priorityClassName: high}
tasks:
- {name: x, job: jx, node: n1, phase: Running, deleting: true, labels: {team: a},
   priorityClassName: low,
   requests: {cpu: 1, memory: 1Gi, volcano.sh/vgpu-number: 1, volcano.sh/vgpu-memory: 1024},
   annotations: {volcano.sh/vgpu-ids-new: "GPU-0,NVIDIA,1024,0:"}}
- {name: y, job: jy, node: n1, phase: Running, labels: {team: a},
   priorityClassName: high,
   requests: {cpu: 1, memory: 1Gi, volcano.sh/vgpu-number: 1, volcano.sh/vgpu-memory: 1024},
   annotations: {volcano.sh/vgpu-ids-new: "GPU-1,NVIDIA,1024,0:"}}
- {name: v, job: jv, node: n1, phase: Running, labels: {team: a},
   priorityClassName: low, requests: {cpu: 2, memory: 1Gi}}
- {name: p, job: jp, labels: {team: a},
   priorityClassName: high,
   requests: {cpu: 2, memory: 1Gi, volcano.sh/vgpu-number: 1, volcano.sh/vgpu-memory: 1024}}
"""


@pytest.mark.parametrize("topology", ["false", "true"])
def test_a_dry_run_s_victim_untracks_on_the_node_copy(topology: str) -> None:
    """Topology-aware preemption removes victims from a copy of the node, whose device
    wrapper untracks them (Volcano's): v leaving frees x's annotation-only GPU-0 for p,
    as the ordinary preemption's eviction does."""
    register = "".join(f"GPU-{i},10,16384,NVIDIA-Tesla-T4,true,hami-core:" for i in range(2))
    doc = UNTRACKED_DRY_RUN.replace("REGISTER", register).replace("TOPOLOGY", topology)
    got = run(yaml.safe_load(doc))
    assert got["evicted"] == ["default/v"]
    assert got["pipelined"] == {"default/jp": {"default/p": "n1"}}


def test_end_to_end_exclusive() -> None:
    """TestEndToEndExclusive: binpack would stack the training pod on the fullest GPU;
    the rule sends it to a GPU no training pod uses, while a serving pod stacks."""
    running = [("pod-a", "{app: training, team: ml}", "0"),
               ("pod-b", "{workload: inference}", "1")]
    training = run(exclusive_document(running, "{app: training, team: ml}"))
    assert vgpus_of(training) == {"default/p": ["GPU-n1-1"]}  # fullest GPU not of rule 0
    serving = run(exclusive_document(running, "{app: serving}"))
    assert vgpus_of(serving)["default/p"][0] in ("GPU-n1-0", "GPU-n1-1")
    # Every GPU held by a pod of the rule: no room.
    full = [(f"pod-{i}", "{app: training, team: ml}", str(i)) for i in range(4)]
    assert run(exclusive_document(full, "{app: training, team: ml}"))["binds"] == {}


def test_exclusive_rules_need_vgpus(tmp_path: Any, capsys: pytest.CaptureFixture[str]) -> None:
    """Honoured with vGPUs; without them, reported as having no effect."""
    from batchsched.cli import main

    rules = "deviceshare.GPUExclusiveRules: [{app: training}]"
    for vgpus, ignored in ((True, False), (False, True)):
        path = tmp_path / f"conf-{vgpus}.yaml"
        path.write_text("actions: allocate\ntiers:\n- plugins:\n  - name: deviceshare\n"
                        f"    arguments: {{deviceshare.VGPUEnable: {str(vgpus).lower()}, "
                        f"{rules}}}\n", encoding="utf-8")
        code = main(["conf", "validate", "--strict", str(path)])
        out = capsys.readouterr().out
        assert (code != 0) is ignored, out
        assert ("GPUExclusiveRules" in out) is ignored, out


def test_explain_says_which_vgpu_rule_failed() -> None:
    """Events keep Volcano's words; batchsched explain adds what failed."""
    from batchsched.explain import explain

    doc = document("\n".join([
        "nodes:", node_yaml("n1", 2),
        "jobs:", "- {name: run, minMember: 0, phase: Running}",
        "- {name: j1, minMember: 1, phase: Inqueue}",
        "tasks:",
        *(f"- {{name: r{i}, job: run, phase: Running, node: n1, requests: {{cpu: 1, "
          "volcano.sh/vgpu-number: 1, volcano.sh/vgpu-memory: 12000}, annotations: "
          f"{{volcano.sh/vgpu-ids-new: 'GPU-n1-{i},NVIDIA,12000,0:'}}}}" for i in range(2)),
        task_yaml("t0", "j1", 8000)]),
        plugin("gang"), plugin("predicates"), vgpu("binpack"), actions="enqueue, allocate")
    scenario = parse_scenario(doc, source="<test>")
    report = explain(scenario, job="default/j1")
    (task,) = [t for t in report["tasks"] if t["task"] == "default/t0"]
    assert task["nodes"] == {"hami-vgpuDeviceSharing error": 1}
    assert task["details"] == {
        "hami-vgpuDeviceSharing error (not enough gpu fitted on this node)": 1}
    assert "(not enough" not in run(doc)["events"][0]["message"]


def test_without_the_predicates_plugin_no_vgpu_is_taken() -> None:
    """Volcano's device Allocate runs from the predicates plugin's event handlers:
    without it nothing is taken in the session, so a second pod sees the GPU empty
    and both go there."""
    # The node's vgpu-memory allocatable holds both requests; its one GPU does not.
    body = "nodes:\n" + node_yaml("n1", 1).replace(
        "volcano.sh/vgpu-memory: 16384", "volcano.sh/vgpu-memory: 32768") + """
jobs:
- {name: j1, minMember: 1, phase: Inqueue, createdAt: 1}
- {name: j2, minMember: 1, phase: Inqueue, createdAt: 2}
tasks:
""" + task_yaml("t1", "j1", 10000) + "\n" + task_yaml("t2", "j2", 10000) + "\n"
    alone = run(document(body, vgpu(), actions="enqueue, allocate"))
    assert sorted(alone["binds"]) == ["default/t1", "default/t2"]
    assert "vgpuDevices" not in alone or not alone["vgpuDevices"]
    with_predicates = run(document(body, plugin("predicates"), vgpu(),
                                   actions="enqueue, allocate"))
    assert sorted(with_predicates["binds"]) == ["default/t1"]


@pytest.mark.parametrize("fast", ["1", "0"])
def test_a_gpu_registering_no_memory_never_wins_the_binpack_score(
        fast: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Go's binpack score of such a GPU is 0/0, NaN, and int64(NaN) is int64's least:
    the node loses to any other, though leastrequested prefers it."""
    monkeypatch.setenv(FAST_PATH_ENVIRONMENT_VARIABLE, fast)
    body = """
nodes:
- {name: n1, allocatable: {cpu: 32, memory: 128Gi, pods: 110, volcano.sh/vgpu-number: 10,
                           volcano.sh/vgpu-memory: 16384, volcano.sh/vgpu-cores: 100},
   annotations: {volcano.sh/node-vgpu-register: "GPU-a,10,16Gi,NVIDIA-Tesla-T4,true,hami-core:"}}
- {name: n2, allocatable: {cpu: 32, memory: 128Gi, pods: 110, volcano.sh/vgpu-number: 10,
                           volcano.sh/vgpu-memory: 16384, volcano.sh/vgpu-cores: 100},
   annotations: {volcano.sh/node-vgpu-register: "GPU-b,10,16384,NVIDIA-Tesla-T4,true,hami-core:"}}
jobs:
- {name: busy, minMember: 1, phase: Running}
- {name: j1, minMember: 1, phase: Inqueue}
tasks:
- {name: busy-0, job: busy, phase: Running, node: n2, requests: {cpu: 30, memory: 120Gi}}
- {name: t1, job: j1, requests: {cpu: 1, volcano.sh/vgpu-number: 1}}
"""
    nodeorder = plugin("nodeorder", {
        "leastrequested.weight": 10, "balancedresource.weight": 0, "mostrequested.weight": 0,
        "nodeaffinity.weight": 0, "podaffinity.weight": 0, "tainttoleration.weight": 0,
        "imagelocality.weight": 0})
    got = run(document(body, plugin("predicates"), nodeorder, vgpu("binpack", weight=1),
                       actions="enqueue, allocate"))
    assert got["binds"] == {"default/t1": "n2"}


_EVICTION_UNDER_A_RULE = """
version: 1
name: exclusive rule after eviction
config:
  actions: "enqueue, allocate, preempt"
  tiers:
  - plugins:
    - name: priority
    - name: gang
      enablePreemptable: false
    - name: conformance
  - plugins:
    - name: predicates
    - name: deviceshare
      arguments:
        deviceshare.VGPUEnable: true
        deviceshare.GPUExclusiveRules: [{team: x}]
priorityClasses:
- {name: high, value: 1000}
- {name: low, value: 10}
nodes:
- name: n1
  allocatable: {cpu: 32, memory: 128Gi, pods: 110, volcano.sh/vgpu-number: 10,
                volcano.sh/vgpu-memory: 16384, volcano.sh/vgpu-cores: 100}
  annotations:
    volcano.sh/node-vgpu-register: "GPU-0,10,16384,NVIDIA-Tesla-T4,true,hami-core:"
jobs:
- {name: low, minMember: 1, phase: Running, priorityClassName: low, createdAt: 1}
- {name: high, minMember: 1, phase: Inqueue, priorityClassName: high, createdAt: 2}
tasks:
- name: low-0
  job: low
  phase: Running
  deleting: DELETING
  node: n1
  priorityClassName: low
  labels: {team: x}
  requests: {cpu: 1, volcano.sh/vgpu-number: 1, volcano.sh/vgpu-memory: 1024,
             volcano.sh/vgpu-cores: 10}
  annotations: {volcano.sh/vgpu-ids-new: "GPU-0,NVIDIA,1024,10:"}
- name: high-0
  job: high
  priorityClassName: high
  labels: {team: x}
  requests: {cpu: 1, volcano.sh/vgpu-number: 1, volcano.sh/vgpu-memory: 1024,
             volcano.sh/vgpu-cores: 10}
"""


def test_a_pod_the_session_evicts_reserves_no_gpu_under_its_rule() -> None:
    """Volcano's eviction takes the pod off the device ledger and out of its rule's
    reservations (gpuexclusive's untrackPod; a Releasing task adds no devices), so the
    preemptor of the same rule is pipelined onto the GPU; a pod already releasing when
    the session opens still reserves it (its annotations, gpuexclusive's source 2)."""
    evicted = run(yaml.safe_load(_EVICTION_UNDER_A_RULE.replace("DELETING", "false")))
    assert evicted["evicted"] == ["default/low-0"]
    assert evicted["pipelined"] == {"default/high": {"default/high-0": "n1"}}
    releasing = run(yaml.safe_load(_EVICTION_UNDER_A_RULE.replace("DELETING", "true")))
    assert releasing["evicted"] == [] and releasing["pipelined"] == {}


@pytest.mark.parametrize("fast", ["1", "0"])
def test_vgpus_are_asked_by_the_app_containers_only(fast: str,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """Volcano reads vGPU requests off pod.Spec.Containers (checkVGPUResourcesInPod):
    an init container asking more vGPU memory changes nothing, and a pod whose init
    container alone asks vGPUs gets none."""
    monkeypatch.setenv(FAST_PATH_ENVIRONMENT_VARIABLE, fast)
    init = ("initRequests: {cpu: 1, volcano.sh/vgpu-number: 1, volcano.sh/vgpu-memory: 8000}")
    doc = document("\n".join([
        "nodes:", node_yaml("n1", 1),
        "jobs:", "- {name: j1, minMember: 1}", "- {name: j2, minMember: 1}",
        "tasks:", task_yaml("t1", "j1", 2048, extra=", " + init),
        f"- {{name: t2, job: j2, requests: {{cpu: 1}}, {init}}}"]),
        plugin("predicates"), vgpu(), actions="enqueue, allocate")
    got = run(doc)
    assert got["binds"] == {"default/t1": "n1", "default/t2": "n1"}
    assert got["vgpuDevices"] == {"default/t1": [
        [{"uuid": "GPU-n1-0", "type": "NVIDIA", "memory": 2048, "cores": 25}]]}
