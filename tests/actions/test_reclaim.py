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



def test_victims_are_ordered_once_per_node_attempt_and_popped_lazily(
        monkeypatch: Any) -> None:
    from batchsched.framework.session import Session

    calls: list[int] = []
    original = Session.build_victims_priority_queue

    def counting(self: Session, victims: Any, preemptor: Any) -> Any:
        calls.append(1)
        return original(self, victims, preemptor)

    monkeypatch.setattr(Session, "build_victims_priority_queue", counting)
    outcome = run(cluster())
    assert evicted(outcome) == ["c1/b2"]
    # Once for the plugins' choice, once for the heap the evictions pop from.
    assert len(calls) == 2


# -- Volcano's heaps compare when they pop -------------------------------------------------

CAPACITY_RECLAIM = """
version: 1
config:
  actions: reclaim
  tiers:
  - plugins:
    - {name: gang, enableReclaimable: false, enablePreemptable: false}
    - {name: capacity}
    - {name: predicates}
"""


def test_each_eviction_may_reorder_the_victims_still_queued() -> None:
    # Victims a5, a4, a3 (qa, share 2.5) then b1 (qb, 2.25). After a5 and a4 go, qa's
    # share is below qb's: Volcano's heap, comparing as it pops, takes b1 third.
    outcome = run_document(CAPACITY_RECLAIM + """
queues:
- {name: qa, deserved: {cpu: 2}}
- {name: qb, deserved: {cpu: 4}}
- {name: qr, deserved: {cpu: 4}}
nodes:
- {name: n1, allocatable: {cpu: 6, memory: 16Gi, pods: 20}}
- {name: n2, allocatable: {cpu: 8, memory: 16Gi, pods: 20}}
jobs:
- {name: ja, queue: qa, minMember: 1, phase: Running}
- {name: jb, queue: qb, minMember: 1, phase: Running}
- {name: jr, queue: qr, minMember: 1, phase: Inqueue}
tasks:
- {name: a1, job: ja, node: n1, phase: Running, requests: {cpu: 1}}
- {name: a2, job: ja, node: n1, phase: Running, requests: {cpu: 1}}
- {name: a3, job: ja, node: n1, phase: Running, requests: {cpu: 1}}
- {name: a4, job: ja, node: n1, phase: Running, requests: {cpu: 1}}
- {name: a5, job: ja, node: n1, phase: Running, requests: {cpu: 1}}
- {name: b1, job: jb, node: n1, phase: Running, requests: {cpu: 1}}
- {name: b2, job: jb, node: n2, phase: Running, requests: {cpu: 8},
   labels: {volcano.sh/preemptable: "false"}}
- {name: r1, job: jr, phase: Pending, requests: {cpu: 3}}
""")
    assert [e.task for e in outcome.cache.evictions] == [
        "default/a5", "default/a4", "default/b1"]
    assert outcome.ssn.jobs["default/jr"].tasks["default/r1"].node_name == "n1"


def test_a_queue_is_pushed_back_after_each_job_and_its_pop_reranks_the_others() -> None:
    # qa reclaims for ja1 (c1 and c2 of qc go: qc's share falls below qb's) and has
    # ja2 left, so qa is pushed back; its later pop re-ranks qb and qc by today's
    # shares, and qc reclaims v1 before qb can.
    outcome = run_document(CAPACITY_RECLAIM + """
queues:
- {name: qa, priority: 10, deserved: {cpu: 10}}
- {name: qb, deserved: {cpu: 4, memory: 4Gi}}
- {name: qc, deserved: {cpu: 4, memory: 4Gi}}
- {name: qv, deserved: {memory: 2Gi}}
nodes:
- {name: n1, allocatable: {cpu: 2, memory: 2Gi, pods: 20}}
- {name: n2, allocatable: {cpu: 1, memory: 4Gi, pods: 20}}
- {name: n3, allocatable: {cpu: 9, memory: 2Gi, pods: 20}}
jobs:
- {name: ja1, queue: qa, minMember: 1, phase: Inqueue}
- {name: ja2, queue: qa, minMember: 1, phase: Inqueue}
- {name: jb, queue: qb, minMember: 1, phase: Inqueue}
- {name: jb0, queue: qb, minMember: 1, phase: Running}
- {name: jc, queue: qc, minMember: 1, phase: Inqueue}
- {name: jc0, queue: qc, minMember: 1, phase: Running}
- {name: jv, queue: qv, minMember: 1, phase: Running}
tasks:
- {name: c1, job: jc0, node: n1, phase: Running, requests: {cpu: 1}}
- {name: c2, job: jc0, node: n1, phase: Running, requests: {cpu: 1}}
- {name: c3, job: jc0, node: n3, phase: Running, requests: {cpu: 4},
   labels: {volcano.sh/preemptable: "false"}}
- {name: b1, job: jb0, node: n3, phase: Running, requests: {cpu: 5},
   labels: {volcano.sh/preemptable: "false"}}
- {name: v1, job: jv, node: n2, phase: Running, requests: {memory: 4Gi}}
- {name: a1, job: ja1, phase: Pending, requests: {cpu: 2}}
- {name: a2, job: ja2, phase: Pending, requests: {cpu: 100}}
- {name: pb, job: jb, phase: Pending, requests: {memory: 4Gi}}
- {name: pc, job: jc, phase: Pending, requests: {memory: 4Gi}}
""")
    assert sorted(e.task for e in outcome.cache.evictions) == [
        "default/c1", "default/c2", "default/v1"]
    pipelined = {uid for job in outcome.ssn.jobs.values()
                 for uid in job.tasks_in(TaskStatus.PIPELINED)}
    assert pipelined == {"default/a1", "default/pc"}
