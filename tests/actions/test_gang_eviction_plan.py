"""The plan gangpreempt and gangreclaim try in a domain (Volcano's
``BuildNominationPlanInDomain`` and ``prioritizeNodesForSimulate``), with the cases of
``pkg/scheduler/actions/utils/simulate_test.go`` (volcano-sh/volcano at ed72c7c8,
Apache-2.0). The Go tests build a bare session (no plugins) and 1-cpu tasks in
namespace ``ns``; here the same cluster is a scenario. A node with room only once a
pod leaves holds a pod being deleted."""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from batchsched.actions.gang_eviction import (
    _best_simulated_node,
    pending_for_gang_eviction,
    plan_in_domain,
)
from batchsched.api.node import NodeInfo
from batchsched.api.resource import Resource
from batchsched.api.types import TaskStatus
from batchsched.framework.session import Session
from batchsched.framework.statement import OperationKind
from batchsched.scenario import parse_scenario


def session(nodes: dict[str, int], *, releasing: dict[str, int] | None = None,
            victim_on: str | None = None, nominated: str | None = None) -> Session:
    """Nodes by idle cpu; job ``ns/job`` with one pending 1-cpu task ``t1``; optionally
    a node's room freed by a pod being deleted, and a running 1-cpu victim."""
    releasing = releasing or {}
    node_entries = [{"name": name, "allocatable": {
        "cpu": cpu + releasing.get(name, 0) + (1 if name == victim_on else 0), "pods": 10}}
        for name, cpu in nodes.items()]
    tasks: list[dict[str, Any]] = [{"name": "t1", "namespace": "ns", "job": "job",
                                    "requests": {"cpu": 1}}]
    if nominated is not None:
        tasks[0]["nominatedNodeName"] = nominated
    jobs: list[dict[str, Any]] = [{"name": "job", "namespace": "ns", "minMember": 1,
                                   "phase": "Inqueue"}]
    if victim_on is not None:
        jobs.append({"name": "victim-job", "namespace": "ns", "minMember": 1,
                     "phase": "Running"})
        tasks.append({"name": "v1", "namespace": "ns", "job": "victim-job",
                      "node": victim_on, "phase": "Running", "requests": {"cpu": 1}})
    for name, cpu in releasing.items():
        jobs.append({"name": f"gone-{name}", "namespace": "ns", "minMember": 1,
                     "phase": "Running"})
        tasks.append({"name": f"leaving-{name}", "namespace": "ns", "job": f"gone-{name}",
                      "node": name, "phase": "Running", "deleting": True,
                      "requests": {"cpu": cpu}})
    doc = {"version": 1, "name": "plan", "config": {"actions": "", "tiers": []},
           "nodes": node_entries, "jobs": jobs, "tasks": tasks}
    parsed = parse_scenario(yaml.safe_load(yaml.safe_dump(doc)), source="<test>")
    return Session.open(parsed.build_cache(), parsed.configuration)


def plan(ssn: Session, nodes: list[str] | list[NodeInfo], *, victims: bool = False) -> Any:
    job = ssn.jobs["ns/job"]
    chosen = [ssn.nodes[n] if isinstance(n, str) else n for n in nodes]
    evicted = [ssn.jobs["ns/victim-job"].tasks["ns/v1"]] if victims else []
    return plan_in_domain(ssn, job, queue=None, nodes=chosen, victims=evicted,
                          reason="test")


def placed_on(ssn: Session) -> str:
    return ssn.jobs["ns/job"].tasks["ns/t1"].node_name


def test_guards() -> None:
    # TestBuildNominationPlanInDomain_Guards: no domain nodes, no plan.
    assert plan(session({"n1": 2}), []) is None


def test_success() -> None:
    ssn = session({"n1": 2})
    statement = plan(ssn, ["n1"])
    assert statement is not None
    assert [op.kind for op in statement.operations] == [OperationKind.PIPELINE]


def test_with_a_victim_the_plan_evicts_and_pipelines() -> None:
    ssn = session({"n1": 2}, victim_on="n1")
    statement = plan(ssn, ["n1"], victims=True)
    assert statement is not None
    assert [op.kind for op in statement.operations] == [OperationKind.EVICT,
                                                         OperationKind.PIPELINE]


def test_no_feasible_node() -> None:
    assert plan(session({"n1": 0}), ["n1"]) is None


def test_a_failed_placement_rolls_the_evictions_back() -> None:
    # TestBuildNominationPlanInDomain_PipelineFailureRollsBackEviction: the domain's
    # only node is not a node of the session, so the task is placed nowhere.
    ssn = session({"n1": 1}, victim_on="n1")
    ghost = NodeInfo.create("ghost-node", Resource.from_mapping({"cpu": 1, "pods": 10}))
    assert plan(ssn, [ghost], victims=True) is None
    victim = ssn.jobs["ns/victim-job"].tasks["ns/v1"]
    assert victim.status is TaskStatus.RUNNING and "ns/v1" in ssn.nodes["n1"].tasks
    job = ssn.jobs["ns/job"]
    assert list(job.tasks_in(TaskStatus.PENDING)) == ["ns/t1"]
    assert not job.tasks_in(TaskStatus.PIPELINED)
    assert placed_on(ssn) == ""


def test_a_node_with_room_now_goes_before_one_with_room_later() -> None:
    # TestBuildNominationPlanInDomain_PrefersIdleNodeOverFutureIdle.
    ssn = session({"n-future": 0, "n-idle": 2}, releasing={"n-future": 2})
    assert plan(ssn, ["n-future", "n-idle"]) is not None
    assert placed_on(ssn) == "n-idle"


@pytest.mark.parametrize(("domain", "want"), [
    # ..._NominatedHintDoesNotShortCircuitPredicate: the nomination is no fast path.
    (["n-other", "n-nominated"], {"n-other", "n-nominated"}),
    # ..._IgnoresNominatedNodeOutsideDomain.
    (["n-domain"], {"n-domain"}),
])
def test_a_nominated_node_is_no_shortcut(domain: list[str], want: set[str]) -> None:
    nodes = dict.fromkeys(["n-other", "n-nominated", "n-domain"], 2)
    ssn = session(nodes, nominated="n-nominated")
    assert plan(ssn, domain) is not None
    assert placed_on(ssn) in want


def test_a_missing_or_full_nominated_node_falls_back() -> None:
    # ..._FallbackWhenNominatedMissing and ..._FallbackWhenNominatedInfeasible.
    ssn = session({"n1": 2})
    # A node the scenario format would refuse to name: set on the session's task.
    ssn.jobs["ns/job"].tasks["ns/t1"].nominated_node = "n-missing"
    assert plan(ssn, ["n1"]) is not None and placed_on(ssn) == "n1"
    ssn = session({"n-nominated": 0, "n-other": 2}, nominated="n-nominated")
    assert plan(ssn, ["n-nominated", "n-other"]) is not None
    assert placed_on(ssn) == "n-other"


def test_the_best_simulated_node_prefers_idle_then_future_idle() -> None:
    # TestPickBestNodeForTask_PrefersIdleGroup and _FallsBackFutureIdleGroup.
    ssn = session({"n-future": 0, "n-idle": 2}, releasing={"n-future": 3})
    task = ssn.jobs["ns/job"].tasks["ns/t1"]
    nodes = [ssn.nodes["n-future"], ssn.nodes["n-idle"]]
    best = _best_simulated_node(ssn, task, nodes)
    assert best is not None and best.name == "n-idle"
    best = _best_simulated_node(ssn, task, nodes[:1])
    assert best is not None and best.name == "n-future"


def sub_grouped(min_member: int) -> Session:
    """Job ``ns/job`` of two sub-jobs by the ``idx`` label: t2 in sub-job 2 (listed
    first), t1 in sub-job 1."""
    doc = {"version": 1, "name": "worksheet",
           "config": {"actions": "", "tiers": [{"plugins": [{"name": "gang"}]}]},
           "nodes": [{"name": "n1", "allocatable": {"cpu": 4, "pods": 10}}],
           "jobs": [{"name": "job", "namespace": "ns", "minMember": min_member,
                     "phase": "Inqueue",
                     "subGroupPolicy": [{"name": "g1", "matchLabelKeys": ["idx"],
                                         "subGroupSize": 1, "minSubGroups": 0}]}],
           "tasks": [{"name": name, "namespace": "ns", "job": "job", "labels": {"idx": idx},
                      "requests": {"cpu": 1}} for name, idx in (("t2", "2"), ("t1", "1"))]}
    parsed = parse_scenario(doc, source="<test>")
    return Session.open(parsed.build_cache(), parsed.configuration)


def test_a_job_to_start_asks_room_for_every_sub_job_in_worksheet_order() -> None:
    # TestCollectPendingTasksForJobStartup_WorksheetOrder.
    ssn = sub_grouped(2)
    assert [t.uid for t in pending_for_gang_eviction(ssn, ssn.jobs["ns/job"])] == [
        "ns/t1", "ns/t2"]


def test_a_ready_job_asks_room_for_its_first_sub_job_only() -> None:
    # TestCollectPendingTasksForRunningJob_FirstWorksheetSubJobOnly.
    ssn = sub_grouped(0)
    assert [t.uid for t in pending_for_gang_eviction(ssn, ssn.jobs["ns/job"])] == ["ns/t1"]
