"""numa-aware: Volcano's cases, then the plugin's rules on real sessions.

Transcribed from volcano-sh/volcano (Apache-2.0),
pkg/scheduler/plugins/numaaware/numaaware_test.go:

* ``TestNuma_OnSessionClose``: its cases "taskBindNodeMap is empty", "assignRes
  missing taskID", "assignRes has taskID but missing nodeName" and "normal case",
  on a session over a cache that takes the hand-over
  (``add_unassigned_numa_pods``, Volcano's ``AddUnassignedNumaPods``), with the
  plugin's bookkeeping set as Volcano's test sets it. The case "taskPodMetaMap
  missing taskID" has no counterpart: batchsched's task id is the pod's identity
  (namespace/name), so there is no separate pod record to be missing.
* ``TestNuma_OnSessionClose_MultipleTasksAccumulate``: p3, skipped in Volcano for
  its missing pod record, is skipped here for a missing assignment on its node
  (the skip path batchsched has).
* ``TestNuma_OnSessionClose_VerifiesContent``.

The hand-over is also checked after a real allocate, then the predicate, the
batch node order and the allocate/deallocate bookkeeping on scenario sessions
(the topology of cpu_mng_test.go on every node: CPUs 0-3 on NUMA node 0, 4-7 on
NUMA node 1, two CPUs per core).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import Any

import attrs
import pytest
import yaml

from batchsched.api.cluster import ClusterInfo
from batchsched.api.fit import FitError
from batchsched.api.job import JobInfo
from batchsched.api.node import NodeInfo
from batchsched.api.numa import ResourceSets, parse_cpuset
from batchsched.api.task import TaskInfo
from batchsched.api.types import FitStatusCode, TaskStatus
from batchsched.framework.arguments import Arguments
from batchsched.framework.events import RecordedEvent
from batchsched.framework.registry import Registry
from batchsched.framework.session import Session
from batchsched.framework.statement import Statement
from batchsched.plugin import PluginSpec, hookimpl
from batchsched.plugins.numaaware import (
    NUMA_POLICY_ANNOTATION,
    NumaAwarePlugin,
    is_guaranteed,
    numa_node_count,
)
from batchsched.scenario import parse_scenario, run_scenario
from batchsched.scenario.runner import Decisions
from batchsched.scheduler import run_actions


def _predicate(ssn: Session, task: TaskInfo, node: NodeInfo) -> FitError | None:
    """The session's predicates on their own, outside any action (the task was never
    pre-predicated: asked as a report, so the predicates plugin computes that itself)."""
    with ssn.for_report():
        return ssn.predicate(task, node)

PLUGIN = "numa-aware"


class _Provider:
    @hookimpl
    def batchsched_register_plugins(self) -> Iterable[PluginSpec]:
        return [PluginSpec(PLUGIN, NumaAwarePlugin)]


def registry() -> Registry:
    """The default registry, taught the plugin if it does not know it yet."""
    registry = Registry(autoload=False)
    if PLUGIN not in registry.plugins:
        registry.register(_Provider(), name="numa-aware-test")
    return registry


CPU_DETAIL = {cpu: {"numa": cpu // 4, "socket": cpu // 4, "core": cpu // 2} for cpu in range(8)}


def numa_node(name: str, *, free: str = "0-7", cpu_manager: str = "static",
              topology_manager: str = "single-numa-node",
              reserved: dict[str, Any] | None = None) -> dict[str, Any]:
    """A node of 16 cpu (so that the resource fit never decides) whose NUMA topology
    has 8 CPUs on two NUMA nodes."""
    topology: dict[str, Any] = {
        "policies": {"CPUManagerPolicy": cpu_manager, "TopologyManagerPolicy": topology_manager},
        "numares": {"cpu": {"allocatable": free, "capacity": 8}},
        "cpuDetail": CPU_DETAIL,
    }
    if reserved is not None:
        topology["resReserved"] = reserved
    return {"name": name, "allocatable": {"cpu": 16, "memory": "64Gi", "pods": 110},
            "numaTopology": topology}


def plain_node(name: str) -> dict[str, Any]:
    return {"name": name, "allocatable": {"cpu": 16, "memory": "64Gi", "pods": 110}}


def task(name: str, cpu: int | str = 4, *, policy: str | None = "single-numa-node",
         memory: str | None = "1Gi", **fields: Any) -> dict[str, Any]:
    requests: dict[str, Any] = {"cpu": cpu}
    if memory is not None:
        requests["memory"] = memory
    doc: dict[str, Any] = {"name": name, "namespace": "c1", "job": "pg1",
                           "requests": requests, **fields}
    if policy is not None:
        doc["annotations"] = {NUMA_POLICY_ANNOTATION: policy}
    return doc


def scenario(nodes: list[dict[str, Any]], tasks: list[dict[str, Any]], *,
             arguments: dict[str, Any] | None = None,
             actions: str = "enqueue, allocate") -> dict[str, Any]:
    numa: dict[str, Any] = {"name": PLUGIN}
    if arguments is not None:
        numa["arguments"] = arguments
    return {
        "version": 1, "name": "numa-aware",
        "config": {"actions": actions, "tiers": [
            {"plugins": [{"name": "priority"}, {"name": "gang"}]},
            {"plugins": [{"name": "predicates"}, numa]}]},
        "queues": [{"name": "c1"}],
        "nodes": nodes,
        "jobs": [{"name": "pg1", "namespace": "c1", "queue": "c1", "minMember": 1,
                  "phase": "Inqueue"}],
        "tasks": tasks,
    }


class NumaCache:
    """A cache for one session that takes the plugin's hand-over: per node, task id ->
    the CPUs assigned there (Volcano's ``NodeInfo.UnassignedNumaPods``)."""

    def __init__(self, snapshot: ClusterInfo) -> None:
        self._snapshot = snapshot
        self.unassigned: dict[str, dict[str, ResourceSets]] = {
            name: {} for name in snapshot.nodes}
        self.binds: dict[str, str] = {}

    def snapshot(self) -> ClusterInfo:
        return self._snapshot

    def bind(self, task: TaskInfo, node_name: str) -> bool:
        self.binds[task.uid] = node_name
        return True

    def evict(self, task: TaskInfo, reason: str) -> bool:
        return True

    def update_job_status(self, job: JobInfo) -> None:
        pass

    def record_event(self, event: RecordedEvent) -> None:
        pass

    def add_unassigned_numa_pods(
            self, assignments: dict[str, dict[str, ResourceSets]]) -> None:
        for uid, per_node in assignments.items():
            for node_name, sets in per_node.items():
                if node_name in self.unassigned:  # Volcano skips unknown nodes too
                    self.unassigned[node_name][uid] = sets


def open_session(doc: dict[str, Any], cache: Any = None) -> Session:
    parsed = parse_scenario(doc, source="<test>")
    source = cache if cache is not None else parsed.to_cluster()
    return Session.open(source, parsed.configuration, registry=registry())


def numa_cache(doc: dict[str, Any]) -> NumaCache:
    return NumaCache(parse_scenario(doc, source="<test>").to_cluster())


def run(doc: dict[str, Any], *, scores: bool = False) -> Decisions:
    return run_scenario(parse_scenario(doc, source="<test>"), scores=scores,
                        registry=registry())


def plugin_of(ssn: Session) -> NumaAwarePlugin:
    plugin = ssn.plugins[PLUGIN]
    assert isinstance(plugin, NumaAwarePlugin)
    return plugin


def the_task(ssn: Session, uid: str) -> TaskInfo:
    return ssn.jobs["c1/pg1"].tasks[uid]


# -- numaaware_test.go ------------------------------------------------------------------------

#: Volcano's cluster: n1 (2 cpu), n2 (4 cpu), pod p1 of pg1 in queue c1 (2 cpu, 1Gi).
VOLCANO_DOC = scenario(
    [{"name": "n1", "allocatable": {"cpu": 2, "memory": "4Gi", "pods": 110}},
     {"name": "n2", "allocatable": {"cpu": 4, "memory": "8Gi", "pods": 110}}],
    [task("p1", 2, policy=None), task("p2", 2, policy=None), task("p3", 2, policy=None)])
ASSIGNED_ON_BOTH = {"n1": {"cpu": frozenset({0, 1})}, "n2": {"cpu": frozenset({2, 3})}}

ON_SESSION_CLOSE_CASES: dict[str, tuple[dict[str, str], dict[str, Any], dict[str, int]]] = {
    "taskBindNodeMap is empty, no unassigned numa pods": (
        {}, {}, {"n1": 0, "n2": 0}),
    "assignRes missing taskID, skip adding unassigned numa pods": (
        {"c1/p1": "n2"}, {}, {"n1": 0, "n2": 0}),
    "assignRes has taskID but missing nodeName, skip adding unassigned numa pods": (
        {"c1/p1": "nonexistent node"}, {"c1/p1": ASSIGNED_ON_BOTH}, {"n1": 0, "n2": 0}),
    "normal case, successfully add unassigned numa pods": (
        {"c1/p1": "n2"}, {"c1/p1": ASSIGNED_ON_BOTH}, {"n1": 0, "n2": 1}),
}


@pytest.mark.parametrize("case", list(ON_SESSION_CLOSE_CASES))
def test_on_session_close(case: str) -> None:
    """TestNuma_OnSessionClose, case by case."""
    placed, assignments, expected = ON_SESSION_CLOSE_CASES[case]
    cache = numa_cache(VOLCANO_DOC)
    ssn = open_session(VOLCANO_DOC, cache)
    plugin = NumaAwarePlugin(Arguments())  # a plugin of its own, as Volcano's test builds
    plugin.placed.update(placed)
    plugin.assignments.update(assignments)
    plugin.on_session_close(ssn)
    assert {name: len(pods) for name, pods in cache.unassigned.items()} == expected
    ssn.close()


def test_on_session_close_multiple_tasks_accumulate() -> None:
    """TestNuma_OnSessionClose_MultipleTasksAccumulate: every valid placement reaches
    its own node; the one without an assignment there is skipped."""
    doc = scenario([plain_node("n1"), plain_node("n2")], VOLCANO_DOC["tasks"])
    cache = numa_cache(doc)
    ssn = open_session(doc, cache)
    plugin = plugin_of(ssn)
    plugin.placed.update({"c1/p1": "n2", "c1/p2": "n1", "c1/p3": "n1"})
    plugin.assignments.update({
        "c1/p1": {"n2": {"cpu": frozenset({0, 1})}},
        "c1/p2": {"n1": {"cpu": frozenset({2, 3})}},
        "c1/p3": {"n2": {"cpu": frozenset({4, 5})}},  # not on n1, where it was placed
    })
    ssn.close()
    assert cache.unassigned == {"n1": {"c1/p2": {"cpu": frozenset({2, 3})}},
                                "n2": {"c1/p1": {"cpu": frozenset({0, 1})}}}


def test_on_session_close_verifies_content() -> None:
    """TestNuma_OnSessionClose_VerifiesContent: the task's id and its exact CPUs."""
    cache = numa_cache(VOLCANO_DOC)
    ssn = open_session(VOLCANO_DOC, cache)
    plugin = plugin_of(ssn)
    plugin.placed["c1/p1"] = "n2"
    plugin.assignments["c1/p1"] = {"n2": {"cpu": frozenset({7, 8})}}
    ssn.close()
    assert cache.unassigned["n2"] == {"c1/p1": {"cpu": frozenset({7, 8})}}


# -- the hand-over after real placements ----------------------------------------------------


def test_placed_tasks_are_handed_over_at_close() -> None:
    doc = scenario([numa_node("n1")], [task("p1"), task("p2"), task("p3", 2, policy=None,
                                                                     memory=None)])
    cache = numa_cache(doc)
    ssn = open_session(doc, cache)
    run_actions(ssn)
    ssn.close()
    assert cache.binds == {"c1/p1": "n1", "c1/p2": "n1", "c1/p3": "n1"}
    # p3 is not Guaranteed (no memory request): it has no CPUs to hand over.
    assert cache.unassigned == {"n1": {"c1/p1": {"cpu": parse_cpuset("0-3")},
                                       "c1/p2": {"cpu": parse_cpuset("4-7")}}}


def test_the_memory_cache_keeps_handed_over_cpus_until_the_task_leaves() -> None:
    """Across sessions on one MemoryCache (as in a simulation): CPUs assigned in one
    session are not free in the next; a task that ends gives its CPUs back."""
    doc = scenario([numa_node("n1")], [task("p1"), task("p2")])
    cache = parse_scenario(doc, source="<test>").build_cache()
    configuration = parse_scenario(doc, source="<test>").configuration
    ssn = Session.open(cache, configuration, registry=registry())
    run_actions(ssn)
    ssn.close()
    topology = cache.nodes["n1"].numa_topology
    assert topology is not None
    assert topology.resources["cpu"].allocatable == frozenset()  # p1 and p2 hold 0-7
    cache.task_started("c1/pg1", "c1/p1")
    cache.task_ended("c1/pg1", "c1/p1")
    topology = cache.nodes["n1"].numa_topology
    assert topology is not None
    assert topology.resources["cpu"].allocatable in (parse_cpuset("0-3"), parse_cpuset("4-7"))
    # The next snapshot sees the freed CPUs only.
    assert cache.snapshot().nodes["n1"].numa_topology == topology


def test_a_node_update_keeps_the_cpus_handed_over() -> None:
    """The host refreshes the node (a new label) with its exporter's topology, which
    does not report the CPUs just handed out yet: they stay taken (Volcano subtracts
    its unassigned NUMA pods at every snapshot); they were handed out twice."""
    doc = scenario([numa_node("n1")], [task("p1"), task("p2")])
    cache = parse_scenario(doc, source="<test>").build_cache()
    configuration = parse_scenario(doc, source="<test>").configuration
    ssn = Session.open(cache, configuration, registry=registry())
    run_actions(ssn)
    ssn.close()
    fresh = parse_scenario(doc, source="<test>").nodes[0]
    fresh.labels = {**fresh.labels, "refreshed": "yes"}
    cache.add_node(fresh)
    topology = cache.nodes["n1"].numa_topology
    assert topology is not None and topology.resources["cpu"].allocatable == frozenset()
    cache.task_started("c1/pg1", "c1/p1")
    cache.task_ended("c1/pg1", "c1/p1")  # and a task that leaves still gives them back
    topology = cache.nodes["n1"].numa_topology
    assert topology is not None
    assert topology.resources["cpu"].allocatable in (parse_cpuset("0-3"), parse_cpuset("4-7"))


@pytest.mark.parametrize(("reported", "free"), [
    (["c1/p1", "c1/p2"], "0-1"),     # every pod reported: the exporter's figures stand
    (["c1/p1"], ""),                 # one still unreported: every hand-over stays taken
])
def test_the_hand_over_ends_once_the_exporter_reports_every_pod(
        reported: list[str], free: str) -> None:
    """Volcano's RefreshNumaSchedulerInfoByCrd: the kubelet may choose other CPUs than
    the scheduler (here it left 0-1 free); once the exporter's podAllocations names
    every pod handed CPUs, its topology is trusted (the CPUs were taken twice)."""
    doc = scenario([numa_node("n1")], [task("p1"), task("p2")])
    cache = parse_scenario(doc, source="<test>").build_cache()
    configuration = parse_scenario(doc, source="<test>").configuration
    ssn = Session.open(cache, configuration, registry=registry())
    run_actions(ssn)
    ssn.close()
    exporter = numa_node("n1", free="0-1")
    exporter["numaTopology"]["podAllocations"] = [
        {"namespace": uid.split("/")[0], "name": uid.split("/")[1]} for uid in reported]
    cache.add_node(parse_scenario(scenario([exporter], []), source="<test>").nodes[0])
    topology = cache.nodes["n1"].numa_topology
    assert topology is not None
    assert topology.resources["cpu"].allocatable == (parse_cpuset(free) if free
                                                     else frozenset())


def test_a_cache_that_fails_to_take_the_hand_over_is_recorded(
        caplog: pytest.LogCaptureFixture) -> None:
    doc = scenario([numa_node("n1")], [task("p1")])

    class Failing(NumaCache):
        def add_unassigned_numa_pods(self, assignments: dict[str, Any]) -> None:
            raise OSError("disk full")

    ssn = open_session(doc, Failing(parse_scenario(doc).to_cluster()))
    run_actions(ssn)
    with caplog.at_level(logging.WARNING, logger="batchsched"):
        ssn.close()
    (error,) = ssn.host_errors
    assert error.operation == "add_unassigned_numa_pods"
    assert "OSError: disk full" in str(error) and "disk full" in caplog.text


def test_a_cache_without_the_hand_over_is_left_alone() -> None:
    decisions = run(scenario([numa_node("n1")], [task("p1")]))
    assert decisions.binds == {"c1/p1": "n1"}


# -- which tasks -------------------------------------------------------------------------------


def test_guaranteed_means_cpu_and_memory_requested() -> None:
    ssn = open_session(scenario([numa_node("n1")], [
        task("both"), task("cpu-only", memory=None), task("memory-only", 0),
        task("neither", 0, memory=None)]))
    assert {uid: is_guaranteed(t) for uid, t in ssn.jobs["c1/pg1"].tasks.items()} == {
        "c1/both": True, "c1/cpu-only": False, "c1/memory-only": False, "c1/neither": False}
    ssn.close()


def test_a_task_that_is_not_guaranteed_passes_everywhere() -> None:
    ssn = open_session(scenario([plain_node("n1")], [task("p1", memory=None)]))
    assert _predicate(ssn, the_task(ssn, "c1/p1"), ssn.nodes["n1"]) is None
    assert plugin_of(ssn).assignments == {}
    ssn.close()


def test_a_fractional_cpu_request_passes_with_no_cpus() -> None:
    ssn = open_session(scenario([numa_node("n1")], [task("p1", "1500m")]))
    assert _predicate(ssn, the_task(ssn, "c1/p1"), ssn.nodes["n1"]) is None
    assert plugin_of(ssn).assignments == {"c1/p1": {"n1": {"cpu": frozenset()}}}
    ssn.close()


# -- predicate ---------------------------------------------------------------------------------

MISMATCHES = {
    "no topology": (plain_node("n1"), "numa info is empty"),
    "cpu manager none": (numa_node("n1", cpu_manager="none"), "cpu manager policy isn't static"),
    "other topology policy": (
        numa_node("n1", topology_manager="best-effort"),
        "task topology policy[single-numa-node] is different with node[best-effort]"),
    "no free cpu": (numa_node("n1", free=""), "cpu allocatable map is empty"),
}


def test_a_node_unknown_to_the_session_has_no_topology_information() -> None:
    ssn = open_session(scenario([numa_node("n1")], [task("p1")]))
    stranger = attrs.evolve(ssn.nodes["n1"].clone(), name="n9")
    error = plugin_of(ssn).predicate(the_task(ssn, "c1/p1"), stranger)
    assert error is not None and error.reasons == ["no topo information"]
    ssn.close()


@pytest.mark.parametrize("case", sorted(MISMATCHES))
def test_a_task_with_a_policy_needs_a_matching_node(case: str) -> None:
    node, reason = MISMATCHES[case]
    ssn = open_session(scenario([node], [task("p1")]))
    error = _predicate(ssn, the_task(ssn, "c1/p1"), ssn.nodes["n1"])
    assert error is not None and error.reasons == [reason]
    assert [s.code for s in error.statuses] == [FitStatusCode.ERROR]
    ssn.close()


WITHOUT_POLICY = {
    "no topology": (plain_node("n1"), None, False),
    "cpu manager none": (numa_node("n1", cpu_manager="none"), None, False),
    "topology manager none": (numa_node("n1", topology_manager="none"), None, False),
    "aligning node": (numa_node("n1"), None, True),
    # Checked, and refused: the single-NUMA-node policy finds no free CPUs.
    "aligning node without free cpus": (numa_node("n1", free=""),
                                        "container p1 cannot be assigned by numa", False),
}


@pytest.mark.parametrize("case", sorted(WITHOUT_POLICY))
def test_a_task_without_a_policy_is_checked_on_aligning_nodes_only(case: str) -> None:
    node, reason, recorded = WITHOUT_POLICY[case]
    ssn = open_session(scenario([node], [task("p1", policy=None)]))
    error = _predicate(ssn, the_task(ssn, "c1/p1"), ssn.nodes["n1"])
    assert (error.reasons if error is not None else None) == ([reason] if reason else None)
    assert ("c1/p1" in plugin_of(ssn).assignments) == recorded
    ssn.close()


def test_a_task_the_policy_does_not_admit_is_unresolvable() -> None:
    # Five CPUs fit on no single NUMA node (the node's cpu allocatable has room).
    ssn = open_session(scenario([numa_node("n1")], [task("p1", 5)]))
    error = _predicate(ssn, the_task(ssn, "c1/p1"), ssn.nodes["n1"])
    assert error is not None
    assert error.reasons == ["container p1 cannot be assigned by numa"]
    assert error.unresolvable and error.statuses[0].plugin == PLUGIN
    ssn.close()


def test_reserved_cpus_are_not_handed_out() -> None:
    # One CPU reserved, chosen among all by topology: CPU 0. NUMA node 0 keeps 3
    # free CPUs, so the 4 asked come from NUMA node 1.
    ssn = open_session(scenario([numa_node("n1", reserved={"cpu": 1})], [task("p1")]))
    assert _predicate(ssn, the_task(ssn, "c1/p1"), ssn.nodes["n1"]) is None
    assert plugin_of(ssn).assignments["c1/p1"]["n1"] == {"cpu": parse_cpuset("4-7")}
    ssn.close()


def test_single_numa_node_refuses_what_would_straddle_numa_nodes() -> None:
    # p1 and p2 take 3 CPUs of one NUMA node each; p3's 2 CPUs would straddle both.
    decisions = run(scenario([numa_node("n1")], [task("p1", 3), task("p2", 3), task("p3", 2)]))
    assert decisions.binds == {"c1/p1": "n1", "c1/p2": "n1"}
    (event,) = [e for e in decisions.events if e["reason"] == "Unschedulable"]
    assert "1 container p3 cannot be assigned by numa" in event["message"]


def test_no_free_cpu_left_is_an_error_for_a_task_with_a_policy() -> None:
    decisions = run(scenario([numa_node("n1")], [task("p1"), task("p2"), task("p3")]))
    assert decisions.binds == {"c1/p1": "n1", "c1/p2": "n1"}
    (event,) = [e for e in decisions.events if e["reason"] == "Unschedulable"]
    assert "1 cpu allocatable map is empty" in event["message"]


def test_best_effort_admits_what_does_not_align() -> None:
    decisions = run(scenario([numa_node("n1", topology_manager="best-effort")],
                             [task("p1", 3, policy="best-effort"),
                              task("p2", 3, policy="best-effort"),
                              task("p3", 2, policy="best-effort")]))
    assert set(decisions.binds) == {"c1/p1", "c1/p2", "c1/p3"}


# -- batch node order --------------------------------------------------------------------------


def test_the_worked_example() -> None:
    """docs/plugins/numaaware.md, worked example: n1 50, n2 0; the task goes to n1."""
    nodes = [numa_node("n1", topology_manager="best-effort"),
             numa_node("n2", free="1-3,5-7", topology_manager="best-effort")]
    web = task("web-0", 4, policy="best-effort", memory="4Gi")
    decisions = run(scenario(nodes, [web]), scores=True)
    assert decisions.scores == {"c1/web-0": {"n1": 50.0, "n2": 0.0}}
    assert decisions.binds == {"c1/web-0": "n1"}
    ssn = open_session(scenario(nodes, [web]))
    run_actions(ssn)
    plugin = plugin_of(ssn)
    assert plugin.assignments["c1/web-0"] == {"n1": {"cpu": parse_cpuset("0-3")},
                                              "n2": {"cpu": parse_cpuset("1,5-7")}}
    assert plugin.free["n1"] == {"cpu": parse_cpuset("4-7")}
    ssn.close()
    restricted = [numa_node("n1", topology_manager="restricted"),
                  numa_node("n2", free="1-3,5-7", topology_manager="restricted")]
    ssn = open_session(scenario(restricted, [task("web-0", 4, policy="restricted")]))
    error = _predicate(ssn, the_task(ssn, "c1/web-0"), ssn.nodes["n2"])
    assert error is not None and error.reasons == ["container web-0 cannot be assigned by numa"]
    ssn.close()


def test_the_weight_multiplies_the_score() -> None:
    nodes = [numa_node("n1", topology_manager="best-effort"),
             numa_node("n2", free="1-3,5-7", topology_manager="best-effort")]
    decisions = run(scenario(nodes, [task("p1", policy="best-effort")],
                             arguments={"weight": 10}), scores=True)
    assert decisions.scores == {"c1/p1": {"n1": 500.0, "n2": 0.0}}


def test_scores_need_a_task_policy_and_a_check() -> None:
    ssn = open_session(scenario([numa_node("n1"), numa_node("n2")],
                                [task("p1", policy=None), task("p2")]))
    plugin, nodes = plugin_of(ssn), ssn.node_list
    # p1 has no policy: nothing, even once checked.
    assert _predicate(ssn, the_task(ssn, "c1/p1"), nodes[0]) is None
    assert plugin.batch_node_order(the_task(ssn, "c1/p1"), nodes) == {}
    # p2 was never checked: nothing.
    assert plugin.batch_node_order(the_task(ssn, "c1/p2"), nodes) == {}
    # Checked on n1 only: n2 has no CPUs for it and spans no NUMA node.
    assert _predicate(ssn, the_task(ssn, "c1/p2"), nodes[0]) is None
    assert plugin.batch_node_order(the_task(ssn, "c1/p2"), nodes) == {"n1": 0.0, "n2": 100.0}
    ssn.close()


def test_no_cpus_anywhere_scores_full_everywhere() -> None:
    ssn = open_session(scenario([numa_node("n1"), numa_node("n2")], [task("p1", "1500m")]))
    for node in ssn.node_list:
        assert _predicate(ssn, the_task(ssn, "c1/p1"), node) is None
    assert ssn.batch_node_order(the_task(ssn, "c1/p1"), ssn.node_list) == {
        "n1": 100.0, "n2": 100.0}
    ssn.close()


def test_numa_node_count() -> None:
    ssn = open_session(scenario([numa_node("n1")], []))
    topology = ssn.nodes["n1"].numa_topology
    assert numa_node_count(parse_cpuset("0-3"), topology) == 1
    assert numa_node_count(parse_cpuset("3-4"), topology) == 2
    assert numa_node_count(frozenset({99}), topology) == 1  # undescribed: NUMA node 0
    assert numa_node_count(parse_cpuset("0-7"), None) == 0
    ssn.close()


# -- allocate / deallocate events ------------------------------------------------------------


def test_placements_take_cpus_and_undoing_them_gives_them_back() -> None:
    ssn = open_session(scenario([numa_node("n1")], [task("p1", 3), task("p2", 3),
                                                    task("p3", 2)]))
    plugin, node = plugin_of(ssn), ssn.nodes["n1"]
    p1, p2, p3 = (the_task(ssn, f"c1/p{i}") for i in (1, 2, 3))
    assert _predicate(ssn, p1, node) is None
    stmt = Statement(ssn)
    stmt.allocate(p1, node)
    assert plugin.free["n1"] == {"cpu": parse_cpuset("3-7")}
    assert plugin.placed == {"c1/p1": "n1"}
    # p2 now fits NUMA node 1 only; p3 then fits on no single NUMA node.
    assert _predicate(ssn, p2, node) is None
    assert plugin.assignments["c1/p2"]["n1"] == {"cpu": parse_cpuset("4-6")}
    stmt.allocate(p2, node)
    error = _predicate(ssn, p3, node)
    assert error is not None and error.unresolvable
    stmt.discard()
    assert plugin.free["n1"] == {"cpu": parse_cpuset("0-7")}
    assert plugin.placed == {}
    assert _predicate(ssn, p3, node) is None
    ssn.close()


def test_an_eviction_gives_the_cpus_back() -> None:
    ssn = open_session(scenario([numa_node("n1")], [task("p1")]))
    plugin, node, p1 = plugin_of(ssn), ssn.nodes["n1"], the_task(ssn, "c1/p1")
    assert _predicate(ssn, p1, node) is None
    stmt = Statement(ssn)
    stmt.allocate(p1, node)
    stmt.commit()
    assert p1.status == TaskStatus.BINDING
    assert plugin.free["n1"] == {"cpu": parse_cpuset("4-7")}
    stmt = Statement(ssn)
    stmt.evict(p1, "test")
    stmt.commit()
    assert plugin.free["n1"] == {"cpu": parse_cpuset("0-7")}
    assert plugin.placed == {}
    ssn.close()


def test_a_placement_without_an_assignment_changes_nothing() -> None:
    ssn = open_session(scenario([numa_node("n1")], [task("p1", policy=None, memory=None)]))
    stmt = Statement(ssn)
    stmt.allocate(the_task(ssn, "c1/p1"), ssn.nodes["n1"])
    assert plugin_of(ssn).free["n1"] == {"cpu": parse_cpuset("0-7")}
    assert plugin_of(ssn).placed == {}
    ssn.close()


# -- arguments ---------------------------------------------------------------------------------


def test_arguments(caplog: pytest.LogCaptureFixture) -> None:
    assert NumaAwarePlugin(Arguments()).weight == 1
    with caplog.at_level(logging.WARNING, logger="batchsched"):
        plugin = NumaAwarePlugin(Arguments({"weight": "three", "numa-aware.weight": 2}))
    assert plugin.weight == 1
    assert "'weight' = 'three' is not an integer" in caplog.text
    assert "ignoring argument(s) 'numa-aware.weight'" in caplog.text


def test_init_containers_asking_more_cpu_need_no_more_exclusive_cpus() -> None:
    # Volcano's predicate reads spec.containers only: the app container's 2 CPUs fit
    # one NUMA node of 4 under single-numa-node, though an init container asks for 6
    # (which the node's 16 cpu hold).
    doc = scenario([numa_node("n1")],
                   [task("web-0", 2, initRequests={"cpu": 6, "memory": "1Gi"})])
    assert run(doc).binds == {"c1/web-0": "n1"}
    assert parse_scenario(doc, source="<test>").tasks[0].container_requests is not None
    doc = scenario([numa_node("n1")], [task("web-0", 6)])
    assert run(doc).binds == {}


@pytest.mark.parametrize(("reserved", "binds"), [
    # Only cpu is reserved: cpu 0 is kept, numa 0 has one free cpu, the task waits.
    ({"cpu": 1}, {}),
    # Volcano's ParseResourceList refuses the whole list for another name: no cpu is
    # kept, numa 0 offers cpus 0-1.
    ({"cpu": 1, "pods": 10}, {"default/web-0": "n1"}),
])
def test_a_reservation_naming_another_resource_reserves_nothing(
        reserved: dict[str, int], binds: dict[str, str]) -> None:
    doc = yaml.safe_load("""
version: 1
config:
  actions: "enqueue, allocate"
  tiers:
  - plugins: [{name: priority}, {name: gang}]
  - plugins: [{name: predicates}, {name: numa-aware}]
nodes:
- name: n1
  allocatable: {cpu: 4, memory: 8Gi, pods: 110}
  numaTopology:
    policies: {CPUManagerPolicy: static, TopologyManagerPolicy: single-numa-node}
    numares: {cpu: {allocatable: "0-1", capacity: 4}}
    cpuDetail:
      0: {numa: 0, socket: 0, core: 0}
      1: {numa: 0, socket: 0, core: 1}
      2: {numa: 1, socket: 1, core: 2}
      3: {numa: 1, socket: 1, core: 3}
jobs:
- {name: web, minMember: 1}
tasks:
- {name: web-0, job: web, requests: {cpu: 2, memory: 1Gi},
   annotations: {volcano.sh/numa-topology-policy: single-numa-node}}
""")
    doc["nodes"][0]["numaTopology"]["resReserved"] = reserved
    scenario = parse_scenario(doc, source="<test>")
    assert run_scenario(scenario).binds == binds
    assert any("cannot reserve" in warning for warning in scenario.warnings) == bool(binds)
