"""priority: task and job order by priority, preemption by job then task priority,
starvation, and gang-level eviction (priority_test.go's UnifiedEvictable case)."""

from __future__ import annotations

from policy_support import cluster, make_job, make_task, open_cluster, open_scenario, scenario

from batchsched.api import NodeInfo, Resource, TaskStatus
from batchsched.framework.events import EvictionContext, EvictionKind

S = TaskStatus
PRIORITY = [{"name": "priority"}]


def node() -> NodeInfo:
    return NodeInfo.create("n1", Resource(8000, 16 * 2**30, {"pods": 110}))


def test_task_order_puts_higher_priority_first() -> None:
    low, high = make_task("low-1-1", priority=1), make_task("high-1-9", priority=100)
    job = make_job("pg1", [low, high])
    ssn = open_cluster(cluster([job]), PRIORITY)
    # The numeric name suffix (1 < 9) would put low first without the plugin.
    assert ssn.task_order_fn(high, low)
    assert not ssn.task_order_fn(low, high)


def test_equal_task_priority_falls_back_to_volcano_default_order() -> None:
    first, second = make_task("p-1-1", priority=5), make_task("p-1-2", priority=5)
    ssn = open_cluster(cluster([make_job("pg1", [first, second])]), PRIORITY)
    assert ssn.task_order_fn(first, second)


def test_job_order_puts_higher_priority_first() -> None:
    a_low = make_job("a", [make_task("t1", job="default/a")], priority=10)
    z_high = make_job("z", [make_task("t2", job="default/z")], priority=1000)
    ssn = open_cluster(cluster([a_low, z_high]), PRIORITY)
    assert ssn.job_order_fn(z_high, a_low)
    assert not ssn.job_order_fn(a_low, z_high)


def test_preemptable_across_jobs_compares_job_priority() -> None:
    preemptor = make_task("p", job="default/mid", priority=1)
    mid = make_job("mid", [preemptor], priority=500)
    low = make_job("low", [make_task("l", job="default/low", priority=9999, status=S.RUNNING,
                                     node="n1")], priority=100)
    same = make_job("same", [make_task("s", job="default/same", status=S.RUNNING, node="n1")],
                    priority=500)
    high = make_job("high", [make_task("h", job="default/high", status=S.RUNNING, node="n1")],
                    priority=1000)
    ssn = open_cluster(cluster([mid, low, same, high], [node()]), PRIORITY)
    candidates = [t for j in (low, same, high) for t in j.tasks.values()]
    # The victim's own task priority (9999) does not matter across jobs.
    assert [t.name for t in ssn.preemptable(preemptor, candidates)] == ["l"]


def test_preemptable_within_a_job_compares_task_priority() -> None:
    preemptor = make_task("p", priority=50)
    lower = make_task("lower", priority=10, status=S.RUNNING, node="n1")
    equal = make_task("equal", priority=50, status=S.RUNNING, node="n1")
    job = make_job("pg1", [preemptor, lower, equal], priority=0)
    ssn = open_cluster(cluster([job], [node()]), PRIORITY)
    assert [t.name for t in ssn.preemptable(preemptor, [lower, equal])] == ["lower"]


def test_preemptor_outside_the_session_finds_no_victims() -> None:
    victim = make_task("v", status=S.RUNNING, node="n1")
    job = make_job("pg1", [victim], priority=0)
    ssn = open_cluster(cluster([job], [node()]), PRIORITY)
    assert ssn.preemptable(make_task("p", job="other/gone"), [victim]) == []


def test_priority_registers_no_reclaimable_function() -> None:
    victim = make_task("v", status=S.RUNNING, node="n1")
    ssn = open_cluster(cluster([make_job("pg1", [victim], priority=0)], [node()]), PRIORITY)
    assert "priority" not in ssn.registered("reclaimable")
    assert ssn.reclaimable(make_task("p"), [victim]) == []  # nobody answered


def test_starving_while_some_task_neither_holds_nor_waits() -> None:
    starving = make_job("a", [make_task("a1", job="default/a", status=S.RUNNING, node="n1"),
                              make_task("a2", job="default/a")], min_member=1)
    waiting = make_job("b", [make_task("b1", job="default/b", status=S.RUNNING, node="n1"),
                             make_task("b2", job="default/b", status=S.PIPELINED,
                                       node="n1")], min_member=2)
    failed = make_job("c", [make_task("c1", job="default/c", status=S.FAILED, node="n1")])
    ssn = open_cluster(cluster([starving, waiting, failed], [node()]), PRIORITY)
    assert ssn.job_starving(starving)  # minMember met, but a task is still pending
    assert not ssn.job_starving(waiting)
    assert ssn.job_starving(failed)  # a failed task counts as neither ready nor waiting


def test_unified_evictable_gang_reclaim_permits_all_gang_preempt_filters_by_job_priority() -> None:
    """priority_test.go TestUnifiedEvictableFn_GangReclaimPermitsAll (UNIT-CASES.md)."""
    ssn = open_scenario(scenario("""
        config:
          actions: ""
          tiers:
            - plugins:
                - {name: priority, enableTaskOrder: true, enableJobOrder: true,
                   enablePreemptable: true, enableReclaimable: true, enableJobStarving: true}
        priorityClasses:
          - {name: low-priority, value: 100}
          - {name: high-priority, value: 1000}
        queues: [{name: q1, weight: 1, capability: {cpu: 4, memory: 4G}}]
        nodes: [{name: node1, allocatable: {cpu: 4, memory: 4G, pods: 10}}]
        jobs:
          - {name: pg-high, namespace: ns1, queue: q1, minMember: 1, phase: Running,
             priorityClassName: high-priority}
          - {name: pg-low, namespace: ns2, queue: q1, minMember: 1, phase: Running,
             priorityClassName: low-priority}
        tasks:
          - {name: high-task, namespace: ns1, job: pg-high, node: node1, phase: Running,
             requests: {cpu: 1, memory: 1G}, labels: {volcano.sh/preemptable: "true"}}
          - {name: low-task, namespace: ns2, job: pg-low, node: node1, phase: Running,
             requests: {cpu: 1, memory: 1G}, labels: {volcano.sh/preemptable: "true"}}
    """))
    high_task = ssn.jobs["ns1/pg-high"].tasks["ns1/high-task"]
    low_task = ssn.jobs["ns2/pg-low"].tasks["ns2/low-task"]
    reclaimer = make_job("reclaimer", priority=500)
    candidates = [high_task, low_task]

    reclaim = ssn.unified_evictable(EvictionContext(EvictionKind.GANG_RECLAIM, reclaimer),
                                    candidates)
    assert reclaim == [high_task, low_task]
    preempt = ssn.unified_evictable(EvictionContext(EvictionKind.GANG_PREEMPT, reclaimer),
                                    candidates)
    assert preempt == [low_task]


def test_unified_evictable_ignores_enable_flags() -> None:
    victim = make_task("v", status=S.RUNNING, node="n1")
    ssn = open_cluster(cluster([make_job("pg1", [victim], priority=1)], [node()]),
                       [{"name": "priority", "enablePreemptable": False}])
    context = EvictionContext(EvictionKind.GANG_PREEMPT, make_job("hi", priority=2))
    assert ssn.unified_evictable(context, [victim]) == [victim]
