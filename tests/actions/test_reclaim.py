"""reclaim: scenario tests for behaviours the conformance corpus does not pin down,
and a property test over random clusters."""

from __future__ import annotations

from typing import Any

from action_support import Outcome, run_document, run_parsed
from hypothesis import HealthCheck, given, settings
from victim_support import OBSERVER, OBSERVER_REGISTRY, random_cluster

from batchsched.api.types import TaskStatus


def reclaim_config(*, gang_pipelined: bool = False) -> str:
    """Conformance, gang and proportion decide victims (as in the corpus)."""
    return f"""
config:
  actions: reclaim
  tiers:
    - plugins:
        - {{name: conformance}}
        - {{name: gang, enableJobPipelined: {str(gang_pipelined).lower()}}}
    - plugins: [{{name: proportion}}]
"""


def run(body: str, **kwargs: bool) -> Outcome:
    return run_document(reclaim_config(**kwargs) + body)


def evicted(outcome: Outcome) -> list[str]:
    return sorted(e.task for e in outcome.cache.evictions)


def cluster(*, q1: str = "{name: q1}", phase: str = "Running", node: str = "n1") -> str:
    """q1 holds the whole 2-CPU node; q2 (deserved 1 CPU) has a starving job."""
    return f"""
queues:
  - {q1}
  - {{name: q2}}
nodes:
  - {{name: n1, allocatable: {{cpu: 2, pods: 10}}}}
jobs:
  - {{name: big, namespace: c1, queue: q1, minMember: 0, phase: Running}}
  - {{name: small, namespace: c1, queue: q2, minMember: 1, phase: Inqueue}}
tasks:
  - {{name: b1, namespace: c1, job: big, node: {node}, phase: {phase}, requests: {{cpu: 1}}}}
  - {{name: b2, namespace: c1, job: big, node: {node}, phase: {phase}, requests: {{cpu: 1}}}}
  - {{name: s1, namespace: c1, job: small, requests: {{cpu: 1}}}}
"""


def test_an_eviction_records_volcanos_events_and_reason() -> None:
    outcome = run(cluster())
    # Victim order within one job: reverse task order, so b2 goes before b1.
    assert [(e.task, e.reason) for e in outcome.cache.evictions] == [("c1/b2", "reclaim")]
    [on_pod] = outcome.events("c1/b2", "Evict")
    assert (on_pod.type, on_pod.message) == ("Warning", "Pod is evicted, because of reclaim")
    [on_group] = outcome.events("c1/big", "Evict")
    assert (on_group.type, on_group.message) == ("Normal", "reclaim")
    assert outcome.status("c1/s1") == TaskStatus.PIPELINED
    assert outcome.binds == {}


def test_a_queue_marked_not_reclaimable_keeps_its_tasks() -> None:
    outcome = run(cluster(q1="{name: q1, reclaimable: false}"))
    assert evicted(outcome) == []
    assert outcome.status("c1/s1") == TaskStatus.PENDING


def test_only_running_tasks_are_reclaimed_never_bound_ones() -> None:
    # Pending with a node is Bound: preempt may take such tasks, reclaim may not.
    outcome = run(cluster(phase="Pending"))
    assert evicted(outcome) == []
    assert outcome.status("c1/b1") == TaskStatus.BOUND


def test_a_job_that_does_not_become_pipelined_gives_everything_back() -> None:
    # The small job needs both its tasks; only one can be made room for (b1 is
    # protected), so with gang's pipelined vote the whole statement is discarded.
    body = cluster().replace("minMember: 1, phase: Inqueue", "minMember: 2, phase: Inqueue")
    body = body.replace("{name: b1, namespace: c1, job: big,",
                        "{name: b1, namespace: c1, job: big, "
                        "annotations: {volcano.sh/preemptable: 'false'},")
    body += "  - {name: s2, namespace: c1, job: small, requests: {cpu: 1}}\n"
    assert evicted(run(body, gang_pipelined=True)) == []
    # Without the vote the partial reservation is kept, and its eviction committed.
    assert evicted(run(body, gang_pipelined=False)) == ["c1/b2"]


def test_a_node_with_room_but_no_candidate_is_passed_over() -> None:
    # n0 is empty and would fit s1, but reclaim only considers nodes holding a
    # candidate victim (Volcano does the same); allocate would have used n0.
    body = cluster().replace(
        "nodes:\n", "nodes:\n  - {name: n0, allocatable: {cpu: 2, pods: 10}}\n")
    outcome = run(body)
    assert evicted(outcome) == ["c1/b2"]
    assert outcome.task("c1/s1").node_name == "n1"


# -- properties over random clusters --------------------------------------------------------------


def _run_random(document: dict[str, Any]) -> Outcome:
    # Proportion is the last reclaimable plugin of its tier, so its answer bounds the
    # tier's intersection.
    config = {
        "actions": "reclaim",
        "tiers": [{"plugins": [{"name": "preempt-observer"}, {"name": "conformance"},
                               {"name": "gang"}, {"name": "proportion"}]}],
    }
    OBSERVER.reset()
    return run_parsed({**document, "config": config}, registry=OBSERVER_REGISTRY)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(document=random_cluster(max_queues=3))
def test_every_victim_sat_in_another_queue_above_its_deserved_share(
    document: dict[str, Any],
) -> None:
    """With proportion deciding victims, each committed eviction took a Running task of
    another queue that was, when evicted, above its deserved share; and the same input
    decides the same."""
    outcome = _run_random(document)
    assert OBSERVER.problems == []
    pairs = list(OBSERVER.committed_pairs)
    over = dict(OBSERVER.over_deserved)
    assert len(pairs) == len(outcome.cache.evictions)
    ssn = outcome.ssn
    for victim, reclaimer in pairs:
        assert ssn.jobs[victim.job].queue != ssn.jobs[reclaimer.job].queue
        assert victim.node_name == reclaimer.node_name
        assert OBSERVER.evicted_from[victim.uid] == TaskStatus.RUNNING
        assert over[victim.uid], f"{victim.uid} evicted from a queue within its share"
    again = _run_random(document)
    assert [e.task for e in again.cache.evictions] == [e.task for e in outcome.cache.evictions]



def test_victims_are_ordered_once_per_node_attempt(monkeypatch: Any) -> None:
    from batchsched.framework.session import Session

    calls: list[int] = []
    original = Session.build_victims_priority_queue

    def counting(self: Session, victims: Any, preemptor: Any) -> Any:
        calls.append(1)
        return original(self, victims, preemptor)

    monkeypatch.setattr(Session, "build_victims_priority_queue", counting)
    outcome = run(cluster())
    assert evicted(outcome) == ["c1/b2"]
    assert len(calls) == 1
