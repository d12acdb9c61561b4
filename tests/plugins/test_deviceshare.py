"""GPU sharing device by device, and the FGD paper's placement policies.

The properties hold under every policy: no GPU over its 1000 milli, a whole-GPU
task never shares a device, a share never spans devices; and the column forms
decide exactly as the scalar reference (same binds, same devices).
"""

from __future__ import annotations

import logging
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from batchsched.api.devices import GpuAsk, gpu_ask
from batchsched.api.node import NodeInfo
from batchsched.api.resource import Resource
from batchsched.api.task import TaskInfo
from batchsched.api.types import TaskStatus
from batchsched.cache.memory import MemoryCache
from batchsched.columnar.selector import FAST_PATH_ENVIRONMENT_VARIABLE
from batchsched.errors import ConfigError, SchedulingError
from batchsched.framework.session import Session
from batchsched.plugins.deviceshare import device_fit_error
from batchsched.plugins.fgd import PodType, fgd_choice, fragmentation, typical_pods
from batchsched.scenario import parse_scenario
from batchsched.scheduler import Scheduler, run_actions
from plugins.node_support import document, open_session, plugin

POLICIES = ["gpu-random", "gpu-dotprod", "gpu-clustering", "gpu-packing", "gpu-bestfit", "fgd"]
SHARING = plugin("deviceshare", {"deviceshare.GPUSharingEnable": True})


def gpu_document(nodes: list[tuple[int, int]], tasks: list[tuple[int, str]],
                 policy: str) -> dict[str, Any]:
    """Nodes of (cpu, GPUs); one single-task job per (cpu, GPU request) in order."""
    lines = ["nodes:"]
    lines += [f"- {{name: n{i}, allocatable: {{cpu: {cpu}, memory: 64Gi, nvidia.com/gpu: {gpus},"
              f" pods: 50}}}}" for i, (cpu, gpus) in enumerate(nodes)]
    lines.append("jobs:")
    lines += [f"- {{name: j{i:03d}, minMember: 1, phase: Inqueue, createdAt: {i}}}"
              for i in range(len(tasks))]
    lines.append("tasks:")
    lines += [f"- {{name: t{i:03d}, job: j{i:03d}, "
              f"requests: {{cpu: {cpu}m, nvidia.com/gpu: {gpu}}}}}"
              for i, (cpu, gpu) in enumerate(tasks)]
    return document("\n".join(lines), SHARING, plugin(policy), actions="allocate")


def placed(ssn: Session) -> dict[str, tuple[str, tuple[int, ...]]]:
    return {task.uid: (task.node_name, task.gpu_devices) for job in ssn.jobs.values()
            for task in job.tasks.values() if task.node_name}


def run_allocate(doc: dict[str, Any]) -> Session:
    ssn = open_session(doc)
    run_actions(ssn)
    return ssn


gpu_requests = st.one_of(
    st.integers(1, 999).map(lambda milli: f"{milli}m"),
    st.sampled_from(["1", "2", "4"]),
    st.just("0"),
)
clusters = st.lists(st.tuples(st.integers(8, 64), st.sampled_from([1, 2, 4, 8])),
                    min_size=1, max_size=6)
workloads = st.lists(st.tuples(st.integers(100, 16_000), gpu_requests), min_size=1,
                     max_size=30)


@settings(max_examples=40, deadline=None)
@given(clusters, workloads, st.sampled_from(POLICIES))
def test_devices_are_never_overcommitted_or_spanned(
    nodes: list[tuple[int, int]], tasks: list[tuple[int, str]], policy: str,
) -> None:
    ssn = run_allocate(gpu_document(nodes, tasks, policy))
    for node in ssn.nodes.values():
        node.check_invariants()  # free milli per device from the tasks, none below 0
        assert all(0 <= left <= 1000 for left in node.gpu_free or ())
        holders: dict[int, list[GpuAsk]] = {}
        for task in node.tasks.values():
            ask = gpu_ask(task.resreq)
            if ask is None:
                assert task.gpu_devices == ()
                continue
            assert len(task.gpu_devices) == ask.count == len(set(task.gpu_devices))
            for device in task.gpu_devices:
                holders.setdefault(device, []).append(ask)
        for asks in holders.values():
            assert len(asks) == 1 or not any(ask.whole for ask in asks)


@settings(max_examples=25, deadline=None)
@given(clusters, workloads, st.sampled_from(POLICIES))
def test_column_forms_decide_as_the_scalar_reference(
    nodes: list[tuple[int, int]], tasks: list[tuple[int, str]], policy: str,
) -> None:
    doc = gpu_document(nodes, tasks, policy)
    fast = placed(run_allocate(doc))
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv(FAST_PATH_ENVIRONMENT_VARIABLE, "0")
        reference = placed(run_allocate(doc))
    assert fast == reference


def test_shares_fill_a_device_before_a_whole_one_is_broken() -> None:
    ssn = run_allocate(gpu_document([(16, 2)], [(100, "500m"), (100, "400m"), (100, "1")],
                                    "gpu-packing"))
    assert placed(ssn) == {"default/t000": ("n0", (0,)), "default/t001": ("n0", (0,)),
                           "default/t002": ("n0", (1,))}


def test_a_whole_gpu_task_waits_when_every_device_is_partly_used() -> None:
    ssn = run_allocate(gpu_document([(16, 2)], [(100, "500m"), (100, "600m"), (100, "1")],
                                    "gpu-bestfit"))
    # 600m does not fit beside 500m: each device holds one share, none is free.
    assert placed(ssn) == {"default/t000": ("n0", (0,)), "default/t001": ("n0", (1,))}


def test_the_preemption_dry_run_sees_the_devices_its_victims_free() -> None:
    """The simulate predicate (topology-aware preemption) answers on the node copy:
    a whole GPU fits only once the share holding its last device is removed."""
    doc = gpu_document([(16, 2)], [(100, "500m"), (100, "600m"), (100, "1")], "gpu-bestfit")
    doc["config"]["tiers"][0]["plugins"].append({"name": "predicates"})
    ssn = run_allocate(doc)
    node = ssn.nodes["n0"].clone()
    whole = ssn.jobs["default/j002"].tasks["default/t002"]
    assert ssn.simulate_predicate(whole, node) is not None
    node.remove_task(node.tasks["default/t000"])
    assert ssn.simulate_predicate(whole, node) is None


def test_without_predicates_the_dry_run_checks_no_device() -> None:
    """Volcano's device check in the dry run is the predicates plugin's simulate
    predicate: deviceshare alone registers none."""
    ssn = run_allocate(gpu_document([(16, 2)], [(100, "500m"), (100, "600m"), (100, "1")],
                                    "gpu-bestfit"))
    node = ssn.nodes["n0"].clone()
    whole = ssn.jobs["default/j002"].tasks["default/t002"]
    assert ssn.simulate_predicate(whole, node) is None
    # deviceshare's own predicate switch does not matter there; predicates' does.
    doc = gpu_document([(16, 2)], [(100, "500m"), (100, "600m"), (100, "1")], "gpu-bestfit")
    plugins = doc["config"]["tiers"][0]["plugins"]
    plugins[0]["enablePredicate"] = False
    plugins.append({"name": "predicates"})
    ssn = run_allocate(doc)
    node = ssn.nodes["n0"].clone()
    whole = ssn.jobs["default/j002"].tasks["default/t002"]
    assert ssn.simulate_predicate(whole, node) is not None
    plugins[-1]["enablePredicate"] = False
    ssn = run_allocate(doc)
    node = ssn.nodes["n0"].clone()
    assert ssn.simulate_predicate(ssn.jobs["default/j002"].tasks["default/t002"], node) is None


def test_the_predicate_names_what_is_short_and_refuses_split_requests() -> None:
    node = NodeInfo.create("n1", Resource.from_mapping({"cpu": 8, "nvidia.com/gpu": 2}))
    node.gpu_free = [300, 1000]
    share = TaskInfo.create("ns", "share", "ns/pg", Resource.from_mapping(
        {"cpu": 1, "nvidia.com/gpu": "400m"}))
    assert device_fit_error(share, node) is None
    two = TaskInfo.create("ns", "two", "ns/pg", Resource.from_mapping({"nvidia.com/gpu": 2}))
    error = device_fit_error(two, node)
    assert error is not None and error.reasons == ["fewer than 2 entirely free GPU(s)"]
    split = TaskInfo.create("ns", "split", "ns/pg", Resource.from_mapping(
        {"nvidia.com/gpu": "1500m"}))
    error = device_fit_error(split, node)
    assert error is not None and error.unresolvable
    assert "task ns/split: requests.nvidia.com/gpu = 1500m" in error.reasons[0]
    with pytest.raises(SchedulingError, match="ns/split"):
        gpu_ask(split.resreq, owner=split.uid)


def test_fragmentation_counts_what_the_typical_pods_cannot_use() -> None:
    # A node with 300m and 1000m free, 4 cores idle. Half the pods want 500m and a
    # core, half want a whole GPU and 8 cores (more cpu than the node has).
    types = (PodType(1000, 500, 1, 0.5), PodType(8000, 1000, 1, 0.5))
    assert fragmentation(4000, [300, 1000], types) == 0.5 * 300 + 0.5 * 1300
    # A 300m share placed on the whole GPU leaves 700m and 300m: both unusable by
    # the whole-GPU pods, and 300m too small for the shares. On the 300m device it
    # frees the way: the score says the second is better.
    task = TaskInfo.create("ns", "t", "ns/pg", Resource.from_mapping(
        {"cpu": 1, "nvidia.com/gpu": "300m"}))
    node = NodeInfo.create("n", Resource.from_mapping({"cpu": 4, "nvidia.com/gpu": 2}))
    node.gpu_free = [300, 1000]
    score, devices = fgd_choice(task, node, types)
    assert devices == (0,) and score > 50


def test_typical_pods_keep_the_most_frequent_kinds() -> None:
    counts = {(1000.0, 500, 1): 60.0, (2000.0, 1000, 1): 38.0, (500.0, 0, 0): 2.0}
    kept = typical_pods(counts, coverage=0.95)
    assert [(pod.cpu, pod.milli) for pod in kept] == [(1000.0, 500), (2000.0, 1000)]
    assert sum(pod.share for pod in kept) == pytest.approx(1.0)


def test_nodes_to_find_is_read_and_checked() -> None:
    from batchsched.conf import NodesToFind, parse_configuration

    conf = parse_configuration({"actions": "allocate", "nodesToFind": {
        "percentageOfNodesToFind": 100}})
    assert conf.nodes_to_find == NodesToFind(percentage=100)
    assert conf.nodes_to_find.count(5000) == 5000
    assert NodesToFind().count(1213) == 1213 * 41 // 100
    with pytest.raises(ConfigError, match=r"nodesToFind\.percentage"):
        parse_configuration({"nodesToFind": {"percentage": 100}})


def test_the_cache_keeps_the_gpus_the_session_chose() -> None:
    """A bind carries the session's device choice into the cache, so the next
    snapshot holds the same devices (not the node's default choice)."""
    doc = gpu_document([(16, 4)], [(100, "300m"), (100, "300m"), (100, "300m")], "gpu-random")
    doc["config"]["tiers"][0]["plugins"][1]["arguments"] = {"gpu-random.seed": 7}
    parsed = parse_scenario(doc, source="<test>")
    cache = parsed.build_cache()
    assert isinstance(cache, MemoryCache)
    Scheduler(cache, parsed.configuration).run_once()
    held = {uid: task.gpu_devices for job in cache.jobs.values()
            for uid, task in job.tasks.items()}
    snapshot = cache.snapshot()
    again = {uid: task.gpu_devices for job in snapshot.jobs.values()
             for uid, task in job.tasks.items()}
    assert held == again and all(devices for devices in held.values())
    assert len(set(held.values())) > 1  # drawn among free devices, not all packed on one


def test_a_malformed_typical_pod_is_a_configuration_error_naming_the_entry() -> None:
    from batchsched.plugins.fgd import parse_typical_pods

    with pytest.raises(ConfigError, match=r"fgd\.typicalPods\[1\]"):
        parse_typical_pods([{"cpu": 1, "gpu": "500m"}, {"cpu": 1, "gpu": "1500m"}])
    with pytest.raises(ConfigError, match=r"fgd\.typicalPods\[0\]"):
        parse_typical_pods([{"gpu": 1}])


def test_the_decisions_name_each_binds_gpus_and_expect_checks_them() -> None:
    from pathlib import Path

    import yaml

    from batchsched.scenario import check_scenario, run_scenario

    example = Path(__file__).parents[2] / "examples" / "gpu-sharing.yaml"
    document = yaml.safe_load(example.read_text(encoding="utf-8"))
    assert check_scenario(parse_scenario(document, source=example.name)).passed
    decisions = run_scenario(parse_scenario(document, source=example.name))
    assert decisions.gpu_devices["default/train-0"] == [2, 3]
    wrong = parse_scenario({**document, "expect": {"gpuDevices": {"default/nb-1": [3]}}},
                           source="<test>")
    result = check_scenario(wrong)
    assert not result.passed and "gpuDevices: expected" in result.differences[0]


def test_gpu_number_mode_counts_devices_as_sharing_does(caplog: pytest.LogCaptureFixture) -> None:
    """deviceshare.GPUNumberEnable (Volcano's whole-GPU mode) turns on the same
    device-by-device check; an argument the plugin does not read is reported."""
    def run(arguments: dict[str, Any]) -> dict[str, tuple[str, tuple[int, ...]]]:
        doc = gpu_document([(16, 3)], [(100, "600m")] * 3 + [(100, "1")], "gpu-bestfit")
        for tier in doc["config"]["tiers"]:
            for option in tier["plugins"]:
                if option["name"] == "deviceshare":
                    option["arguments"] = arguments
        return placed(run_allocate(doc))

    # 1200m free in all, but on three devices: a whole GPU fits only in aggregate.
    assert "default/t003" in run({})
    with caplog.at_level(logging.WARNING, logger="batchsched"):
        assert "default/t003" not in run({"deviceshare.GPUNumberEnable": True,
                                          "deviceshare.GPUNumberEnabled": True})
    assert "'deviceshare.GPUNumberEnabled'" in caplog.text


def test_sharing_and_number_together_are_refused() -> None:
    """Volcano's scheduler refuses to start with both switches on."""
    from batchsched.errors import ConfigError
    from batchsched.framework import Arguments
    from batchsched.plugins.deviceshare import DeviceSharePlugin

    with pytest.raises(ConfigError, match=r"GPUSharingEnable and deviceshare\.GPUNumberEnable"):
        DeviceSharePlugin(Arguments({"deviceshare.GPUSharingEnable": True,
                                     "deviceshare.GPUNumberEnable": True}))


def test_a_releasing_pod_holds_no_gpu_on_its_node() -> None:
    """As on Volcano's node (AddTask/RemoveTask leave devices alone for a releasing
    pod): a pod being deleted frees its GPUs for the ledger, and a task waiting for
    them is pipelined there on the node's future idle."""
    doc = document("\n".join([
        "nodes:",
        "- {name: n1, allocatable: {cpu: 16, memory: 64Gi, nvidia.com/gpu: 1, pods: 10}}",
        "jobs:",
        "- {name: old, minMember: 0, phase: Running}",
        "- {name: new, minMember: 1, phase: Inqueue}",
        "tasks:",
        "- {name: o0, job: old, phase: Running, node: n1, deleting: true,"
        " requests: {cpu: 1, nvidia.com/gpu: 1}}",
        "- {name: w0, job: new, requests: {cpu: 1, nvidia.com/gpu: 1}}"]),
        SHARING, actions="allocate")
    ssn = open_session(doc)
    node = ssn.nodes["n1"]
    assert node.gpu_free == [1000]
    node.check_invariants()
    run_actions(ssn)
    waiting = ssn.jobs["default/new"].tasks["default/w0"]
    assert (waiting.status, waiting.node_name) == (TaskStatus.PIPELINED, "n1")
