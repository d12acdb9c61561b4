"""preempt: scenario tests for behaviours the conformance corpus does not pin down,
and a property test over random clusters."""

from __future__ import annotations

from typing import Any

import pytest
from action_support import Outcome, run_document, run_parsed
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from victim_support import (
    OBSERVER,
    OBSERVER_REGISTRY,
    random_cluster,
)

from batchsched.actions.preempt import PreemptAction
from batchsched.api.types import TaskStatus
from batchsched.errors import ConfigError
from batchsched.framework.arguments import Arguments
from batchsched.framework.session import Session

PRIORITY_CLASSES = """
priorityClasses:
  - {name: low, value: 5}
  - {name: mid, value: 10}
  - {name: high, value: 100}
"""


def preempt_config(**arguments: Any) -> str:
    """Conformance, gang and priority decide victims; proportion bounds the queue."""
    text = """
config:
  actions: preempt
  tiers:
    - plugins: [{name: conformance}, {name: gang}, {name: priority}]
    - plugins: [{name: proportion}]
"""
    if arguments:
        args = ", ".join(f"{k}: {str(v).lower() if isinstance(v, bool) else v}"
                         for k, v in arguments.items())
        text += f"  configurations:\n    - {{name: preempt, arguments: {{{args}}}}}\n"
    return text + PRIORITY_CLASSES


def run(body: str, **arguments: Any) -> Outcome:
    return run_document(preempt_config(**arguments) + body)


def evicted(outcome: Outcome) -> list[str]:
    return sorted(e.task for e in outcome.cache.evictions)


# -- events -----------------------------------------------------------------------------------

ONE_VICTIM = """
queues: [{name: q1}]
nodes:
  - {name: n1, allocatable: {cpu: 1, pods: 10}}
jobs:
  - {name: low, namespace: c1, queue: q1, minMember: 0, phase: Running, priorityClassName: low}
  - {name: high, namespace: c1, queue: q1, minMember: 1, phase: Inqueue,
     priorityClassName: high}
tasks:
  - {name: victim, namespace: c1, job: low, node: n1, phase: Running, requests: {cpu: 1}}
  - {name: preemptor, namespace: c1, job: high, requests: {cpu: 1}}
"""


def test_an_eviction_records_volcanos_events_and_reason() -> None:
    outcome = run(ONE_VICTIM)
    assert [(e.task, e.reason) for e in outcome.cache.evictions] == [("c1/victim", "preempt")]
    [on_pod] = outcome.events("c1/victim", "Evict")
    assert (on_pod.type, on_pod.message) == ("Warning", "Pod is evicted, because of preempt")
    [on_group] = outcome.events("c1/low", "Evict")
    assert (on_group.type, on_group.message) == ("Normal", "preempt")
    # The preemptor is reserved on the node, never bound by preempt.
    assert outcome.binds == {}
    assert outcome.task("c1/preemptor").node_name == "n1"
    assert outcome.task("c1/preemptor").eviction_occurred


def test_both_algorithms_agree_on_a_single_victim() -> None:
    assert evicted(run(ONE_VICTIM, enableTopologyAwarePreemption=True)) == ["c1/victim"]


@pytest.mark.parametrize("mode", ["hard", "soft"])
def test_a_job_with_a_network_topology_does_not_preempt(mode: str) -> None:
    """Volcano's preempt skips such jobs (its issue 4374), whatever their mode."""
    body = ONE_VICTIM.replace(
        "     priorityClassName: high}",
        f"     priorityClassName: high, networkTopology: {{mode: {mode}}}}}")
    assert "networkTopology" in body
    outcome = run(body)
    assert evicted(outcome) == []
    assert outcome.task("c1/preemptor").node_name == ""


# -- victims within one job (second pass) -------------------------------------------------------


def test_a_high_priority_task_evicts_a_lower_priority_task_of_its_own_job() -> None:
    # Only one job, so the between-jobs pass finds nothing; the within-job pass lets
    # the priority-100 task evict the lowest-priority running task of the same job
    # (gang allows one: 2 ready > minMember 1). Gang does not vote on starving here,
    # so priority's rule (not every task placed) makes the job a preemptor.
    outcome = run_document("""
config:
  actions: preempt
  tiers:
    - plugins:
        - {name: conformance}
        - {name: gang, enableJobStarving: false}
        - {name: priority}
""" + PRIORITY_CLASSES + """
queues: [{name: q1}]
nodes:
  - {name: n1, allocatable: {cpu: 2, pods: 10}}
jobs:
  - {name: pg1, namespace: c1, queue: q1, minMember: 1, phase: Running}
tasks:
  - {name: worker-a, namespace: c1, job: pg1, node: n1, phase: Running, priority: 2,
     requests: {cpu: 1}}
  - {name: worker-b, namespace: c1, job: pg1, node: n1, phase: Running, priority: 1,
     requests: {cpu: 1}}
  - {name: urgent, namespace: c1, job: pg1, priority: 100, requests: {cpu: 1}}
""")
    assert evicted(outcome) == ["c1/worker-b"]
    assert outcome.status("c1/urgent") == TaskStatus.PIPELINED


# -- who may evict whom --------------------------------------------------------------------------


def test_a_best_effort_preemptor_never_evicts_a_task_that_is_not_best_effort() -> None:
    # The node's only pod slot is held by a low-priority task with requests; the
    # best-effort preemptor would need that slot but may not take it.
    outcome = run_document("""
config:
  actions: preempt
  tiers:
    - plugins: [{name: conformance}, {name: gang}, {name: priority}]
    - plugins: [{name: test-selector}]
""" + PRIORITY_CLASSES + """
queues: [{name: q1}]
nodes:
  - {name: n1, allocatable: {cpu: 4, pods: 1}}
jobs:
  - {name: low, namespace: c1, queue: q1, minMember: 0, phase: Running, priorityClassName: low}
  - {name: high, namespace: c1, queue: q1, minMember: 1, phase: Inqueue,
     priorityClassName: high}
tasks:
  - {name: victim, namespace: c1, job: low, node: n1, phase: Running, requests: {cpu: 1}}
  - {name: preemptor, namespace: c1, job: high}
""")
    assert evicted(outcome) == []
    assert outcome.status("c1/preemptor") == TaskStatus.PENDING


def test_a_failed_attempt_leaves_bound_victims_bound() -> None:
    # The preemptor (4 CPU) can never fit the queue's 3-CPU capability, so the
    # tentative evictions are undone. Victims go back to exactly what they were:
    # Bound stays Bound (Volcano would reset them to Running).
    outcome = run("""
queues: [{name: q1, capability: {cpu: 3}}]
nodes:
  - {name: n1, allocatable: {cpu: 10, pods: 10}}
jobs:
  - {name: low, namespace: c1, queue: q1, minMember: 0, phase: Running, priorityClassName: low}
  - {name: high, namespace: c1, queue: q1, minMember: 1, phase: Inqueue,
     priorityClassName: high}
tasks:
  - {name: v1, namespace: c1, job: low, node: n1, phase: Pending, requests: {cpu: 1}}
  - {name: v2, namespace: c1, job: low, node: n1, phase: Pending, requests: {cpu: 1}}
  - {name: preemptor, namespace: c1, job: high, requests: {cpu: 4}}
""")
    assert evicted(outcome) == []
    assert outcome.status("c1/v1") == TaskStatus.BOUND
    assert outcome.status("c1/v2") == TaskStatus.BOUND
    assert outcome.events("c1/v1", "Evict") == []


# -- which node --------------------------------------------------------------------------------

TWO_FULL_NODES = """
queues: [{name: q1}]
jobs:
  - {name: low, namespace: c1, queue: q1, minMember: 0, phase: Running, priorityClassName: low}
  - {name: mid, namespace: c1, queue: q1, minMember: 0, phase: Running, priorityClassName: mid}
  - {name: high, namespace: c1, queue: q1, minMember: 1, phase: Inqueue,
     priorityClassName: high}
tasks:
  - {name: on-first, namespace: c1, job: mid, node: first, phase: Running,
     priorityClassName: mid, requests: {cpu: 1}}
  - {name: on-second, namespace: c1, job: low, node: second, phase: Running,
     priorityClassName: low, requests: {cpu: 1}}
  - {name: preemptor, namespace: c1, job: high, requests: {cpu: 1}}
nodes:
  - {name: first, allocatable: {cpu: 1, pods: 10}}
  - {name: second, allocatable: {cpu: 1, pods: 10}}
"""


def test_equal_node_scores_are_tried_in_session_node_order() -> None:
    outcome = run(TWO_FULL_NODES)
    assert evicted(outcome) == ["c1/on-first"]
    assert outcome.task("c1/preemptor").node_name == "first"


def test_topology_aware_examines_one_candidate_node_by_default() -> None:
    # minCandidateNodesPercentage 10 of 2 nodes is 0, so minCandidateNodesAbsolute
    # (1) decides: the first feasible node is the only candidate.
    outcome = run(TWO_FULL_NODES, enableTopologyAwarePreemption=True)
    assert evicted(outcome) == ["c1/on-first"]


def test_topology_aware_prefers_the_node_whose_top_victim_has_the_lowest_priority() -> None:
    outcome = run(TWO_FULL_NODES, enableTopologyAwarePreemption=True,
                  minCandidateNodesAbsolute=2)
    assert evicted(outcome) == ["c1/on-second"]
    assert outcome.task("c1/preemptor").node_name == "second"


# -- reprieve (topology-aware) -----------------------------------------------------------------

SMALL_AND_LARGE_VICTIM = """
queues: [{name: q1}]
nodes:
  - {name: n1, allocatable: {cpu: 3, pods: 10}}
jobs:
  - {name: low, namespace: c1, queue: q1, minMember: 0, phase: Running, priorityClassName: low}
  - {name: mid, namespace: c1, queue: q1, minMember: 0, phase: Running, priorityClassName: mid}
  - {name: high, namespace: c1, queue: q1, minMember: 1, phase: Inqueue,
     priorityClassName: high}
tasks:
  - {name: small, namespace: c1, job: low, node: n1, phase: Running, priorityClassName: low,
     requests: {cpu: 1}}
  - {name: large, namespace: c1, job: mid, node: n1, phase: Running, priorityClassName: mid,
     requests: {cpu: 2}}
  - {name: preemptor, namespace: c1, job: high, requests: {cpu: 2}}
"""


def test_default_path_evicts_in_victim_order_until_the_preemptor_fits() -> None:
    # Lowest job priority first: "small" frees 1 CPU (not enough), then "large".
    assert evicted(run(SMALL_AND_LARGE_VICTIM)) == ["c1/large", "c1/small"]


def test_topology_aware_reprieves_victims_that_are_not_needed() -> None:
    # Both are removed in the dry run; putting "large" (higher priority) back leaves
    # 1 CPU, too little; putting "small" back leaves 2 CPU, enough: it is reprieved.
    assert evicted(run(SMALL_AND_LARGE_VICTIM, enableTopologyAwarePreemption=True)) == [
        "c1/large"]


PDB_CHOICE = """
queues: [{name: q1}]
nodes:
  - {name: n1, allocatable: {cpu: 2, pods: 10}}
jobs:
  - {name: low, namespace: c1, queue: q1, minMember: 0, phase: Running, priorityClassName: low}
  - {name: mid, namespace: c1, queue: q1, minMember: 0, phase: Running, priorityClassName: mid}
  - {name: high, namespace: c1, queue: q1, minMember: 1, phase: Inqueue,
     priorityClassName: high}
tasks:
  - {name: db, namespace: c1, job: low, node: n1, phase: Running, priorityClassName: low,
     labels: {app: db}, requests: {cpu: 1}}
  - {name: web, namespace: c1, job: mid, node: n1, phase: Running, priorityClassName: mid,
     labels: {app: web}, requests: {cpu: 1}}
  - {name: preemptor, namespace: c1, job: high, requests: {cpu: 1}}
"""


def test_topology_aware_reprieves_the_higher_priority_victim_first() -> None:
    assert evicted(run(PDB_CHOICE, enableTopologyAwarePreemption=True)) == ["c1/db"]


def test_topology_aware_preemption_reads_no_budget_as_in_volcano() -> None:
    """Volcano's SelectVictimsOnNode has no PodDisruptionBudget logic (a TODO there):
    a budget steers victims only through the pdb plugin's filter."""
    protected = PDB_CHOICE + """
pdbs:
  - {name: db-pdb, namespace: c1, selector: {app: db}, disruptionsAllowed: 0}
"""
    assert evicted(run(protected, enableTopologyAwarePreemption=True)) == ["c1/db"]


# -- arguments --------------------------------------------------------------------------------


def test_candidate_count_follows_percentage_absolute_and_caps() -> None:
    assert PreemptAction(Arguments()).candidate_count(5) == 1
    assert PreemptAction(Arguments()).candidate_count(200) == 20
    action = PreemptAction(Arguments({"minCandidateNodesPercentage": 50,
                                      "minCandidateNodesAbsolute": 0}))
    assert action.candidate_count(7) == 3
    capped = PreemptAction(Arguments({"minCandidateNodesAbsolute": 500,
                                      "maxCandidateNodesAbsolute": 4}))
    assert capped.candidate_count(10) == 4
    assert capped.candidate_count(3) == 3


@pytest.mark.parametrize(("arguments", "named"), [
    ({"topologyAwarePreemptWorkerNum": -1}, "topologyAwarePreemptWorkerNum"),
    ({"maxCandidateNodesAbsolute": -1}, "maxCandidateNodesAbsolute"),
    ({"minCandidateNodesAbsolute": -1, "minCandidateNodesPercentage": -5},
     "minCandidateNodesAbsolute"),
])
def test_arguments_volcano_would_panic_on_are_reported_by_name(
        arguments: dict[str, Any], named: str) -> None:
    # A negative WaitGroup count, a slice of negative length: Volcano's preempt panics.
    with pytest.raises(ConfigError, match=named):
        PreemptAction(Arguments({**arguments, "enableTopologyAwarePreemption": True}))


@pytest.mark.parametrize("arguments", [
    {"topologyAwarePreemptWorkerNum": -1},
    {"maxCandidateNodesAbsolute": -1},
    {"minCandidateNodesAbsolute": -1, "minCandidateNodesPercentage": -5},
])
def test_topology_aware_knobs_are_not_read_while_that_path_is_off(
        arguments: dict[str, Any]) -> None:
    # Volcano reads them only on the topology-aware path (preempt.go's preempt picks
    # normalPreempt otherwise): a configuration with leftover tuning values runs.
    action = PreemptAction(Arguments(arguments))
    assert not action.topology_aware


@pytest.mark.parametrize("value", ["ten", "20", 20.0, True])
def test_an_argument_that_is_no_integer_keeps_its_default_as_volcano_s_get_int(
        value: Any, caplog: pytest.LogCaptureFixture) -> None:
    action = PreemptAction(Arguments({"minCandidateNodesPercentage": value}))
    assert action.min_candidate_nodes_percentage == 10
    assert "minCandidateNodesPercentage" in caplog.text


def test_candidate_counts_volcano_accepts() -> None:
    # calculateNumCandidates: a percentage over 100 is capped by the node count; a
    # count of 0 (or no dry-run worker) leaves the topology-aware path no candidate.
    assert PreemptAction(Arguments({"minCandidateNodesPercentage": 150})).candidate_count(7) == 7
    none = PreemptAction(Arguments({"minCandidateNodesPercentage": 0,
                                    "minCandidateNodesAbsolute": 0}))
    assert none.candidate_count(50) == 0
    assert PreemptAction(Arguments({"maxCandidateNodesAbsolute": 0})).candidate_count(50) == 0


# -- properties over random clusters --------------------------------------------------------------

def _run_random(
    document: dict[str, Any], topology: bool, gang_starving: bool = True
) -> tuple[Outcome, list[str]]:
    # Priority is the last preemptable plugin of its tier, so its answer bounds the
    # tier's intersection. Without gang's starving vote, priority's (some task not
    # placed) decides, which lets jobs preempt within themselves too.
    config = {
        "actions": "preempt",
        "tiers": [{"plugins": [{"name": "preempt-observer"}, {"name": "conformance"},
                               {"name": "gang", "enableJobStarving": gang_starving},
                               {"name": "priority"}]},
                  {"plugins": [{"name": "proportion"}]}],
        "configurations": [{
            "name": "preempt",
            "arguments": {"enableTopologyAwarePreemption": topology,
                          "minCandidateNodesAbsolute": 2},
        }],
    }
    OBSERVER.reset()
    outcome = run_parsed({**document, "config": config}, registry=OBSERVER_REGISTRY)
    return outcome, list(OBSERVER.problems)


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(document=random_cluster(), topology=st.booleans(), gang_starving=st.booleans())
def test_every_victim_ranks_below_its_preemptor(
    document: dict[str, Any], topology: bool, gang_starving: bool
) -> None:
    """With the priority plugin deciding victims, each committed eviction made room for
    a preemptor of a higher-priority job (or, within one job, a higher-priority task),
    in the same queue, on the victim's node; and the same input decides the same."""
    outcome, problems = _run_random(document, topology, gang_starving)
    assert problems == []
    committed = OBSERVER.committed_pairs
    assert len(committed) == len(outcome.cache.evictions)
    ssn = outcome.ssn
    for victim, preemptor in committed:
        victim_job, preemptor_job = ssn.jobs[victim.job], ssn.jobs[preemptor.job]
        assert victim_job.queue == preemptor_job.queue
        assert victim.node_name == preemptor.node_name
        if victim.job == preemptor.job:
            assert victim.priority < preemptor.priority
        else:
            assert victim_job.priority < preemptor_job.priority
    again, _ = _run_random(document, topology, gang_starving)
    assert [e.task for e in again.cache.evictions] == [e.task for e in outcome.cache.evictions]
    pipelined = {uid: t.node_name for j in outcome.ssn.jobs.values()
                 for uid, t in j.tasks_in(TaskStatus.PIPELINED).items()}
    assert pipelined == {uid: t.node_name for j in again.ssn.jobs.values()
                         for uid, t in j.tasks_in(TaskStatus.PIPELINED).items()}


# -- victim ordering cost ---------------------------------------------------------------------

TWO_VICTIMS = """
queues: [{name: q1}]
nodes:
  - {name: n1, allocatable: {cpu: 2, pods: 10}}
jobs:
  - {name: low, namespace: c1, queue: q1, minMember: 0, phase: Running, priorityClassName: low}
  - {name: high, namespace: c1, queue: q1, minMember: 1, phase: Inqueue,
     priorityClassName: high}
tasks:
  - {name: v1, namespace: c1, job: low, node: n1, phase: Running, requests: {cpu: 1}}
  - {name: v2, namespace: c1, job: low, node: n1, phase: Running, requests: {cpu: 1}}
  - {name: preemptor, namespace: c1, job: high, requests: {cpu: 2}}
"""


@pytest.mark.parametrize("topology_aware", [False, True])
def test_victims_are_ordered_once_per_node_attempt_and_popped_lazily(
    monkeypatch: pytest.MonkeyPatch, topology_aware: bool
) -> None:
    calls: list[int] = []
    original = Session.build_victims_priority_queue

    def counting(self: Session, victims: Any, preemptor: Any) -> Any:
        calls.append(1)
        return original(self, victims, preemptor)

    monkeypatch.setattr(Session, "build_victims_priority_queue", counting)
    outcome = run(TWO_VICTIMS, enableTopologyAwarePreemption=topology_aware)
    assert evicted(outcome) == ["c1/v1", "c1/v2"]
    # One node tried once: the candidates are ordered once for the plugins' choice;
    # the default path then evicts from a heap of the chosen, popped one at a time
    # as Volcano's is (an eviction may reorder the rest).
    assert len(calls) == (1 if topology_aware else 2)


def test_each_eviction_may_reorder_the_victims_still_queued() -> None:
    # drf orders b-job (share 3/8) after a-job (2.5/8), so b-job's tasks go first. Once
    # x3 is gone b-job's share (2/8) is below a-job's, and Volcano's heap, comparing as
    # it pops, takes z1 third; fixed once, the order would have taken x1, then z1.
    outcome = run_document("""
version: 1
config:
  actions: preempt
  tiers:
  - plugins:
    - {name: priority}
    - {name: gang, enablePreemptable: false}
    - {name: conformance}
  - plugins:
    - {name: drf, enablePreemptable: false}
    - {name: predicates}
priorityClasses:
- {name: low, value: 1}
- {name: high, value: 100}
queues:
- {name: q1}
nodes:
- {name: n1, allocatable: {cpu: 8, memory: 8Gi, pods: 20}}
jobs:
- {name: b-job, queue: q1, minMember: 1, phase: Running, priorityClassName: low}
- {name: a-job, queue: q1, minMember: 1, phase: Running, priorityClassName: low}
- {name: hi, queue: q1, minMember: 1, phase: Inqueue, priorityClassName: high}
tasks:
- {name: x1, job: b-job, node: n1, phase: Running, requests: {cpu: 1}, priorityClassName: low}
- {name: x2, job: b-job, node: n1, phase: Running, requests: {cpu: 1}, priorityClassName: low}
- {name: x3, job: b-job, node: n1, phase: Running, requests: {cpu: 1}, priorityClassName: low}
- {name: z1, job: a-job, node: n1, phase: Running, requests: {cpu: 2500m},
   priorityClassName: low}
- {name: p, job: hi, requests: {cpu: 6500m}, priorityClassName: high}
""")
    assert [e.task for e in outcome.cache.evictions] == [
        "default/x3", "default/x2", "default/z1"]
