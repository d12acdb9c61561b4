"""preempt where Volcano's code decides something a first reading misses: which
preemptors are eligible, whose priority counts, and which nodes are nominated."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from batchsched import Scheduler
from batchsched.scenario import load_scenario, parse_scenario, run_scenario

DATA = Path(__file__).parent / "data" / "preempt_edges"


def run(name: str) -> dict[str, Any]:
    return run_scenario(load_scenario(DATA / f"{name}.yaml")).to_json()


def test_a_preemptor_whose_nominated_node_passes_its_predicates_does_not_preempt() -> None:
    """Volcano's taskEligibleToPreempt: preemption means no node passes (allocate
    pre-predicated the task earlier in the session)."""
    got = run("nominated")
    assert got["evicted"] == [] and got["pipelined"] == {}


def test_a_nominated_preemptor_no_action_pre_predicated_is_eligible() -> None:
    """In Volcano the predicates after the stable ones read the pre-predicate's state
    from the task's cycle state, empty until an action pre-predicates the task: the
    nominated node then fails with an Error (NodePorts'), which leaves the preemptor
    eligible, and it preempts."""
    got = run("nominated-unfiltered")
    assert got["evicted"] == ["c1/v1"]
    assert got["pipelined"] == {"c1/jp": {"c1/p1": "n1"}}
    # The usual way there: allocate skips a task its queue refuses before it
    # pre-predicates it.
    got = run("nominated-refused-by-queue")
    assert got["evicted"] == ["default/v"]
    assert got["pipelined"] == {"default/hi": {"default/p": "n1"}}


def test_a_job_whose_sub_group_has_a_network_topology_does_not_preempt() -> None:
    """Volcano's ContainsNetworkTopology counts sub-jobs' topologies."""
    assert run("subjob-topology")["evicted"] == []


def test_topology_aware_preemption_ranks_nodes_by_the_pod_s_own_priority() -> None:
    """pickOneNodeForPreemption reads PodPriority, which the annotation does not change."""
    got = run("topo-pod-priority")
    assert got["evicted"] == ["c1/va"] and got["pipelined"] == {"c1/hp": {"c1/p": "n1"}}


def test_a_plugin_that_cannot_follow_the_dry_run_fails_every_node() -> None:
    """proportion without its pre-predicate (enablePredicate: false) has no snapshot:
    Volcano's simulate functions return an error and nothing is preempted."""
    got = run("topo-no-proportion-snapshot")
    assert got["evicted"] == [] and got["pipelined"] == {}


def test_a_refused_dry_run_step_is_undone_for_the_plugins_that_followed_it() -> None:
    from batchsched.api import Resource, TaskInfo
    from batchsched.api.node import NodeInfo
    from batchsched.errors import DryRunError
    from batchsched.framework.session import Session
    from batchsched.scenario import parse_scenario

    scenario = parse_scenario({"version": 1, "name": "dry run", "config": {
        "actions": "preempt", "tiers": [{"plugins": [{"name": "priority"}]}]}})
    ssn = Session.open(scenario.to_cluster())
    seen: list[str] = []

    def follows(preemptor: TaskInfo, task: TaskInfo, node: NodeInfo) -> None:
        seen.append("remove")

    def undoes(preemptor: TaskInfo, task: TaskInfo, node: NodeInfo) -> None:
        seen.append("add")

    def refuses(preemptor: TaskInfo, task: TaskInfo, node: NodeInfo) -> None:
        raise DryRunError("no snapshot")

    ssn.add_simulate_remove_task_fn("priority", follows)
    ssn.add_simulate_add_task_fn("priority", undoes)
    ssn._bound.clear()
    ssn.tiers_for("simulate_remove_task")[0].append(("other", refuses))
    task = TaskInfo.create("ns", "t", "ns/j", Resource())
    with pytest.raises(DryRunError):
        ssn.simulate_remove_task(task, task, NodeInfo.create("n", Resource()))
    assert seen == ["remove", "add"]


def test_the_task_priority_annotation_overrides_the_pod_s_priority() -> None:
    """volcano.sh/task-priority: 100 outranks the running task of priority 10."""
    assert run("task-priority-annotation")["evicted"] == ["c1/r1"]


@pytest.mark.parametrize(("name", "evicted", "nominated"), [
    # A running pod group's preemptor is nominated too (RecordJobStatusEvent writes
    # the pods of every job, whatever its phase).
    ("running-nominate", ["c1/x"], {"c1/p1": "n1"}),
    # Best-effort victims free no requests: no "eviction occurred".
    ("be-nominate", ["c1/b2"], {}),
    # A discarded preemption evicted nothing: no nomination (Volcano writes one from
    # the last transaction; here the preemptor could then never preempt again).
    ("discard-nominate", [], {}),
])
def test_nominated_nodes_are_written_at_close_as_volcano_writes_them(
        name: str, evicted: list[str], nominated: dict[str, str]) -> None:
    got = run(name)
    assert got["evicted"] == evicted
    assert got.get("nominated", {}) == nominated


@pytest.mark.parametrize(("name", "evicted"), [
    # Victims come back in the reverse of the order they were taken off.
    ("topo-reprieve", ["c1/l1"]),
    # Taken off one at a time until the preemptor fits: a, which its affinity needs,
    # stays.
    ("topo-affinity", ["c1/b"]),
    # After the victims are off only the predicates are asked, not the queue: every
    # victim stays a victim.
    ("topo-allocatable", ["c1/v1"]),
    # Candidates rank by the priority of their first victim, not their highest.
    ("topo-highest", ["c1/b", "c1/a"]),
    # ... and by the latest start time among the top victims (status.startTime).
    ("topo-starttime", ["c1/a"]),
])
def test_topology_aware_preemption_picks_victims_as_volcano_does(
        name: str, evicted: list[str]) -> None:
    got = run(name)
    assert got["evicted"] == evicted
    assert got["pipelined"] == {"c1/jp": {"c1/p1": "n1"}}


TERMINATING_VICTIM = """
version: 1
config:
  actions: "enqueue, allocate, preempt"
  tiers:
  - plugins: [{name: priority}, {name: gang, enablePreemptable: false}]
  - plugins: [{name: predicates}, {name: proportion}]
priorityClasses: [{name: high, value: 1000}, {name: low, value: 1}]
queues: [{name: q1}]
nodes:
- {name: n1, allocatable: {cpu: 4, memory: 8Gi, pods: 1}}
- {name: n2, allocatable: {cpu: 4, memory: 8Gi, pods: 1}}
jobs:
- {name: l1, namespace: ns, queue: q1, minMember: 1, priorityClassName: low, phase: Running}
- {name: l2, namespace: ns, queue: q1, minMember: 1, priorityClassName: low, phase: Running}
- {name: h, namespace: ns, queue: q1, minMember: 1, priorityClassName: high}
tasks:
- {name: l1-0, namespace: ns, job: l1, priority: 1, requests: {cpu: 1}, node: n1, phase: Running}
- {name: l2-0, namespace: ns, job: l2, priority: 1, requests: {cpu: 1}, node: n2, phase: Running}
- {name: h-0, namespace: ns, job: h, priority: 1000, requests: {cpu: 1}}
"""


def test_a_nominated_preemptor_waits_for_its_victim_to_terminate() -> None:
    """Volcano's taskEligibleToPreempt: while a lower-priority pod the scheduler
    preempted (DisruptionTarget, PreemptionByScheduler) terminates on the nominated
    node, the preemptor does not preempt again; the next cycle evicts no second pod."""
    scenario = parse_scenario(yaml.safe_load(TERMINATING_VICTIM), source="<test>")
    cache = scenario.build_cache()
    scheduler = Scheduler(cache, scenario.configuration)
    scheduler.run_once()
    assert [e.task for e in cache.evictions] == ["ns/l1-0"]
    assert cache.nominations == {"ns/h-0": "n1"}
    scheduler.run_once()    # ns/l1-0 still Releasing on n1
    assert [e.task for e in cache.evictions] == ["ns/l1-0"]


@pytest.mark.parametrize(("marked", "evicted"), [(True, []), (False, ["ns/l2-0"])])
def test_a_pod_preempted_by_the_scheduler_is_read_from_the_scenario(marked: bool,
                                                                   evicted: list[str]) -> None:
    doc = yaml.safe_load(TERMINATING_VICTIM)
    doc["tasks"][0].update(deleting=True, preemptedByScheduler=marked)
    doc["tasks"][2]["nominatedNodeName"] = "n1"
    got = run_scenario(parse_scenario(doc, source="<test>")).to_json()
    assert got["evicted"] == evicted


@pytest.mark.parametrize(("arguments", "evicts"), [
    ({}, True),
    ({"topologyAwarePreemptWorkerNum": 0}, False),  # Volcano's dry run runs no worker
    ({"minCandidateNodesPercentage": 0, "minCandidateNodesAbsolute": 0}, False),
    ({"minCandidateNodesPercentage": 150}, True),
])
def test_topology_aware_preemption_with_no_candidate_to_collect_evicts_nothing(
        arguments: dict[str, Any], evicts: bool) -> None:
    corpus = Path(__file__).parent.parent / "conformance" / "volcano" / "actions"
    document = yaml.safe_load(
        (corpus / "preempt-02-topo-preempt-one-task-of-different-job.yaml").read_text())
    document["config"]["configurations"][0]["arguments"].update(arguments)
    decisions = run_scenario(parse_scenario(document))
    assert bool(decisions.evicted) is evicts


def test_a_terminating_pod_of_phase_unknown_keeps_a_nominated_preemptor_waiting() -> None:
    """Volcano's podTerminatingByPreemption reads the deletion timestamp and the
    DisruptionTarget condition, not the phase: an Unknown pod being deleted after the
    scheduler preempted it makes the nominated preemptor wait, as a Releasing one."""
    got = run("nominated-unknown-terminating")
    assert got["evicted"] == [] and got["pipelined"] == {}
