"""gang: all-or-nothing validity, readiness, victims, job order and the close-time
conditions (Volcano's plugins/gang, including gang_test.go's releasing cases)."""

from __future__ import annotations

import pytest
from policy_support import (
    cluster,
    make_job,
    make_task,
    open_cluster,
    open_scenario,
    registry,
    scenario,
)

from batchsched.api import (
    JobInfo,
    NodeInfo,
    PodGroupConditionType,
    PodGroupPhase,
    Resource,
    TaskStatus,
)
from batchsched.framework import Statement
from batchsched.framework.events import EvictionContext, EvictionKind
from batchsched.plugins.gang import should_skip_unschedulable_for_releasing
from batchsched.scenario import parse_scenario
from batchsched.scheduler import Scheduler, run_actions

S = TaskStatus
GANG = [{"name": "gang"}]


def node(name: str = "n1", cpu: float = 8000) -> NodeInfo:
    return NodeInfo.create(name, Resource(cpu, 16 * 2**30, {"pods": 110}))


def job_of(statuses: list[tuple[TaskStatus, str]], min_member: int,
           min_task: dict[str, int] | None = None, roles: list[str] | None = None,
           name: str = "pg1") -> JobInfo:
    tasks = [
        make_task(f"{name}-t{i}", job=f"default/{name}", status=status, node=node_name,
                  role=(roles[i] if roles else ""))
        for i, (status, node_name) in enumerate(statuses)
    ]
    return make_job(name, tasks, min_member=min_member, min_task_member=min_task or {})


# -- TestShouldSkipUnschedulableForReleasing (UNIT-CASES.md, gang) ------------------------

@pytest.mark.parametrize(
    ("case", "min_available", "tasks", "expected"),
    [
        ("partial termination", 2, [(S.RUNNING, "node-1"), (S.RELEASING, "node-2")], True),
        ("pending replacement still needs condition", 2,
         [(S.RUNNING, "node-1"), (S.RELEASING, "node-2"), (S.PENDING, "")], False),
        ("pipelined replacement still needs condition", 2,
         [(S.RUNNING, "node-1"), (S.RELEASING, "node-2"), (S.PIPELINED, "node-3")], False),
        ("never scheduled releasing task is not counted", 1, [(S.RELEASING, "")], False),
        ("scheduled tasks below minAvailable", 3,
         [(S.RUNNING, "node-1"), (S.RELEASING, "node-2")], False),
    ],
)
def test_should_skip_unschedulable_for_releasing(
    case: str, min_available: int, tasks: list[tuple[TaskStatus, str]], expected: bool
) -> None:
    job = make_job("pg1", [
        make_task(f"t{i}", status=status, node=node_name, cpu=0, memory=0)
        for i, (status, node_name) in enumerate(tasks)
    ], min_member=min_available)
    assert should_skip_unschedulable_for_releasing(job) is expected, case


def test_releasing_job_gets_no_condition_at_close() -> None:
    job = make_job("pg1", [
        make_task("a", status=S.RUNNING, node="n1"),
        make_task("b", status=S.RELEASING, node="n1"),
    ], min_member=2)
    ssn = open_cluster(cluster([job], [node()]), GANG)
    ssn.close()
    assert job.podgroup.conditions == []
    assert job.podgroup.phase == PodGroupPhase.RUNNING  # 1 running + 1 releasing on a node


# -- job valid ---------------------------------------------------------------------------

def test_job_valid_counts_tasks_that_can_still_run() -> None:
    job = job_of([(S.PENDING, ""), (S.FAILED, "n1"), (S.RELEASING, "n1")], 2)
    ssn = open_cluster(cluster([job], [node()]), GANG)
    result = ssn.job_valid(job)
    assert result is not None and not result.passed
    assert result.reason == "NotEnoughTasks"
    assert result.message == "Not enough valid tasks for gang-scheduling, valid: 1, min: 2"


def test_job_valid_checks_every_role_minimum() -> None:
    job = job_of([(S.PENDING, ""), (S.PENDING, ""), (S.PENDING, "")], 3,
                 min_task={"master": 1, "worker": 2}, roles=["worker", "worker", "worker"])
    ssn = open_cluster(cluster([job], [node()]), GANG)
    result = ssn.job_valid(job)
    assert result is not None
    assert (result.passed, result.reason) == (False, "NotEnoughPodsOfTask")
    assert result.message == "Not enough valid pods of each task for gang-scheduling"


def test_valid_job_passes_and_role_check_is_skipped_below_role_total() -> None:
    enough = job_of([(S.PENDING, ""), (S.PIPELINED, "n1"), (S.SUCCEEDED, "n1")], 3)
    # minMember 1 < sum of role minimums 3: per-role minimums are not enforced.
    loose = job_of([(S.PENDING, "")], 1, min_task={"master": 1, "worker": 2},
                   roles=["worker"], name="pg2")
    ssn = open_cluster(cluster([enough, loose], [node()]), GANG)
    assert ssn.job_valid(enough) is None
    assert ssn.job_valid(loose) is None


def test_job_valid_is_not_gated_by_flags() -> None:
    job = job_of([(S.PENDING, "")], 2)
    flags_off = [{"name": "gang", "enableJobReady": False, "enableJobPipelined": False,
                  "enableJobOrder": False, "enablePreemptable": False}]
    ssn = open_cluster(cluster([job], [node()]), flags_off)
    result = ssn.job_valid(job)
    assert result is not None and not result.passed


# -- ready, pipelined, starving -----------------------------------------------------------

@pytest.mark.parametrize(
    ("statuses", "min_member", "ready", "pipelined", "starving"),
    [
        ([S.ALLOCATED, S.PENDING, S.PENDING], 2, False, False, True),
        ([S.ALLOCATED, S.PIPELINED, S.PENDING], 2, False, True, False),
        ([S.ALLOCATED, S.RUNNING, S.PENDING], 2, True, True, False),
        ([S.SUCCEEDED, S.BOUND], 2, True, True, False),
    ],
)
def test_ready_pipelined_starving(statuses: list[TaskStatus], min_member: int, ready: bool,
                                  pipelined: bool, starving: bool) -> None:
    job = job_of([(s, "" if s == S.PENDING else "n1") for s in statuses], min_member)
    ssn = open_cluster(cluster([job], [node()]), GANG)
    assert ssn.job_ready(job) is ready
    assert ssn.job_pipelined(job) is pipelined
    assert ssn.job_starving(job) is starving


def test_ready_and_pipelined_need_each_role_minimum_but_starving_does_not() -> None:
    # master 0/1 placed, workers 2/2 placed: minMember 3 is met by count...
    job = job_of([(S.ALLOCATED, "n1"), (S.ALLOCATED, "n1"), (S.PIPELINED, "n1"),
                  (S.PENDING, "")], 3, min_task={"master": 1, "worker": 2},
                 roles=["worker", "worker", "worker", "master"])
    ssn = open_cluster(cluster([job], [node()]), GANG)
    assert not ssn.job_ready(job)
    assert not ssn.job_pipelined(job)
    assert not ssn.job_starving(job)  # 2 ready + 1 pipelined >= 3


def test_pending_best_effort_tasks_count_as_ready() -> None:
    job = make_job("pg1", [make_task("a", status=S.ALLOCATED, node="n1"),
                           make_task("b", cpu=0, memory=0)], min_member=2)
    ssn = open_cluster(cluster([job], [node()]), GANG)
    assert ssn.job_ready(job)
    assert ssn.job_starving(job)  # best effort does not stop starving


# -- victims -------------------------------------------------------------------------------

def test_victims_keep_min_member_ready_per_job() -> None:
    big = make_job("big", [make_task(f"b{i}", job="default/big", status=S.RUNNING, node="n1")
                           for i in range(3)], min_member=1)
    tight = make_job("tight", [make_task(f"t{i}", job="default/tight", status=S.RUNNING,
                                         node="n1") for i in range(2)], min_member=2)
    preemptor_job = make_job("hi", [make_task("p", job="default/hi")], min_member=1)
    ssn = open_cluster(cluster([big, tight, preemptor_job], [node(cpu=16000)]), GANG)
    candidates = [*big.tasks.values(), *tight.tasks.values()]
    preemptor = preemptor_job.tasks["default/p"]
    victims = [t.name for t in ssn.preemptable(preemptor, candidates)]
    assert victims == ["b0", "b1"]  # big keeps 1 ready; tight has no spare task
    assert [t.name for t in ssn.reclaimable(preemptor, candidates)] == ["b0", "b1"]


def test_victims_of_jobs_outside_the_session_are_skipped() -> None:
    job = make_job("pg1", [make_task(f"t{i}", status=S.RUNNING, node="n1") for i in range(2)])
    ssn = open_cluster(cluster([job], [node()]), GANG)
    stranger = make_task("x", job="other/gone", status=S.RUNNING, node="n1")
    victims = ssn.preemptable(make_task("p"), [stranger, *job.tasks.values()])
    assert [t.name for t in victims] == ["t0", "t1"]


def test_unified_evictable_permits_every_candidate() -> None:
    job = make_job("pg1", [make_task(f"t{i}", status=S.RUNNING, node="n1") for i in range(2)],
                   min_member=2)
    ssn = open_cluster(cluster([job], [node()]), GANG)
    context = EvictionContext(EvictionKind.GANG_PREEMPT, job)
    assert ssn.unified_evictable(context, list(job.tasks.values())) == list(job.tasks.values())


# -- job order -----------------------------------------------------------------------------

def test_job_order_puts_jobs_that_are_not_ready_first() -> None:
    ready = job_of([(S.RUNNING, "n1")], 1, name="a-ready")
    waiting = job_of([(S.PENDING, "")], 1, name="z-waiting")
    ssn = open_cluster(cluster([ready, waiting], [node()]), GANG)
    assert ssn.job_order_fn(waiting, ready)
    assert not ssn.job_order_fn(ready, waiting)


# -- session close: conditions, phase, events --------------------------------------------

def unschedulable(job: JobInfo) -> list[tuple[str, str, str]]:
    return [(c.reason, c.message, c.transition_id) for c in job.podgroup.conditions
            if c.type == PodGroupConditionType.UNSCHEDULABLE]


def test_close_marks_a_job_without_placements_unschedulable() -> None:
    job = job_of([(S.PENDING, "")] * 4, 3)
    ssn = open_cluster(cluster([job], [node()]), GANG)
    ssn.close()
    assert unschedulable(job) == [(
        "NotEnoughResources",
        "3/4 tasks in gang unschedulable: pod group is not ready, 3 minAvailable, 4 Pending; "
        "Pending: 4 Unschedulable",
        ssn.uid,
    )]
    [condition] = job.podgroup.conditions
    assert condition.status == "True"
    assert job.podgroup.phase == PodGroupPhase.PENDING


def test_close_counts_allocations_a_statement_discarded_as_schedulable() -> None:
    job = job_of([(S.PENDING, "")] * 4, 4)
    ssn = open_cluster(cluster([job], [node()]), GANG)
    stmt = Statement(ssn)
    for task in list(job.tasks.values())[:3]:
        stmt.allocate(task, "n1")
    stmt.discard()
    ssn.close()
    [(_, message, _)] = unschedulable(job)
    assert message.startswith("1/4 tasks in gang unschedulable: pod group is not ready, ")
    assert message.endswith("; Pending: 1 Unschedulable, 3 Schedulable")  # plain string sort


def test_close_marks_a_ready_job_scheduled() -> None:
    job = job_of([(S.RUNNING, "n1"), (S.RUNNING, "n1")], 2)
    ssn = open_cluster(cluster([job], [node()]), GANG)
    ssn.close()
    [condition] = job.podgroup.conditions
    assert condition.type == PodGroupConditionType.SCHEDULED
    assert (condition.status, condition.reason, condition.message, condition.transition_id) == (
        "True", "tasks in gang are ready to be scheduled", "", ssn.uid)


def test_close_replaces_a_condition_of_the_same_type_and_skips_jobs_without_tasks() -> None:
    job = job_of([(S.PENDING, "")], 1)
    empty = make_job("empty", min_member=1)
    ssn = open_cluster(cluster([job, empty], [node()]), GANG)
    ssn.close()
    second = open_cluster(cluster([job, empty], [node()]), GANG)
    second.close()
    assert [c.transition_id for c in job.podgroup.conditions] == [second.uid]
    assert empty.podgroup.conditions == []


def test_unready_job_with_running_tasks_reads_unknown() -> None:
    job = job_of([(S.RUNNING, "n1"), (S.PENDING, "")], 2)
    ssn = open_cluster(cluster([job], [node()]), GANG)
    ssn.close()
    assert unschedulable(job)[0][1].startswith("1/2 tasks in gang unschedulable")
    assert job.podgroup.phase == PodGroupPhase.UNKNOWN


def test_close_records_volcano_job_status_events() -> None:
    ssn = open_scenario(scenario("""
        config:
          actions: ""
          tiers: [{plugins: [{name: gang}]}]
        nodes: [{name: n1, allocatable: {cpu: 1, memory: 1Gi, pods: 10}}]
        jobs:
          - {name: waiting, namespace: ns, minMember: 2}
          - {name: running, namespace: ns, minMember: 1}
        tasks:
          - {name: w1, namespace: ns, job: waiting, requests: {cpu: 1}}
          - {name: w2, namespace: ns, job: waiting, requests: {cpu: 1}}
          - {name: r1, namespace: ns, job: running, node: n1, phase: Running,
             requests: {cpu: 1}}
    """))
    ssn.close()
    events = {(e.object, e.type, e.reason): e.message for e in ssn.events}
    why = "pod group is not ready, 2 Pending, 2 minAvailable; Pending: 2 Unschedulable"
    # Volcano's RecordJobStatusEvent: the pod group's event, then each pod not placed
    # gets its condition and a FailedScheduling (nothing tried: the job's fit error).
    assert events == {
        ("ns/waiting", "Warning", "Unschedulable"): f"2/2 tasks in gang unschedulable: {why}",
        ("ns/w1", "Warning", "FailedScheduling"): why,
        ("ns/w2", "Warning", "FailedScheduling"): why,
        ("ns/running", "Normal", "Scheduled"): "pod group is ready",
    }
    assert ssn.cache is not None and len(ssn.cache.events) == 4  # type: ignore[attr-defined]


def test_gang_with_allocate_discards_a_partial_placement() -> None:
    """The worked example of docs/plugins/gang.md."""
    ssn = open_scenario(scenario("""
        config:
          actions: "enqueue, allocate"
          tiers: [{plugins: [{name: priority}, {name: gang}, {name: conformance}]}]
        nodes: [{name: n1, allocatable: {cpu: 2, memory: 8Gi, pods: 10}}]
        jobs: [{name: pg1, namespace: ns, minMember: 3}]
        tasks:
          - {name: t1, namespace: ns, job: pg1, requests: {cpu: 1}}
          - {name: t2, namespace: ns, job: pg1, requests: {cpu: 1}}
          - {name: t3, namespace: ns, job: pg1, requests: {cpu: 1}}
          - {name: t4, namespace: ns, job: pg1, requests: {cpu: 1}}
    """))
    run_actions(ssn)
    ssn.close()
    job = ssn.jobs["ns/pg1"]
    assert unschedulable(job) == [(
        "NotEnoughResources",
        "1/4 tasks in gang unschedulable: pod group is not ready, 3 minAvailable, 4 Pending; "
        "Pending: 2 Schedulable, 2 Unschedulable. "
        "Origin reason is t3: 0/1 nodes are unavailable: 1 Insufficient cpu.",
        ssn.uid,
    )]
    assert job.podgroup.phase == PodGroupPhase.INQUEUE
    assert ssn.cache is not None and ssn.cache.binds == []  # type: ignore[attr-defined]


def test_a_pod_s_failed_scheduling_event_is_recorded_again_only_when_its_condition_changes(
) -> None:
    # Volcano's taskUnschedulable: the event goes with a changed PodScheduled condition.
    doc = scenario("""
        config:
          actions: "enqueue, allocate"
          tiers: [{plugins: [{name: priority}, {name: gang}]}]
        nodes: [{name: n1, allocatable: {cpu: 1, memory: 1Gi, pods: 10}}]
        jobs: [{name: big, namespace: ns, minMember: 1}]
        tasks: [{name: b1, namespace: ns, job: big, requests: {cpu: 2}}]
    """)
    parsed = parse_scenario(doc, source="<test>")
    cache = parsed.build_cache()
    scheduler = Scheduler(cache, parsed.configuration, registry=registry())
    counts = []
    for _ in range(3):
        scheduler.run_once()
        counts.append(sum(e.reason == "FailedScheduling" for e in cache.events))
    assert counts == [1, 1, 1]
    task = cache.jobs["ns/big"].tasks["ns/b1"]
    assert task.scheduling_condition is not None
    assert task.scheduling_condition[1].startswith("0/1 nodes are unavailable")


def test_a_replaced_pod_group_condition_keeps_its_place() -> None:
    # Volcano's UpdatePodGroupCondition replaces the condition where it stands: a
    # status that comes back to what it was compares equal, and records no event.
    from batchsched.api.types import PodGroupCondition

    ssn = open_scenario(scenario("""
        config: {actions: "", tiers: [{plugins: [{name: gang}]}]}
        nodes: [{name: n1, allocatable: {cpu: 1, memory: 1Gi, pods: 10}}]
        jobs: [{name: j, namespace: ns, minMember: 1}]
        tasks: [{name: t, namespace: ns, job: j, requests: {cpu: 1}}]
    """))
    job = ssn.jobs["ns/j"]
    first = PodGroupCondition("Scheduled", "True", "tasks ready", "", "s1")
    second = PodGroupCondition("Unschedulable", "True", "NotEnoughResources", "", "s1")
    job.podgroup.conditions = [first, second]
    again = PodGroupCondition("Scheduled", "True", "tasks ready", "", "s2")
    ssn.update_pod_group_condition(job, again)
    assert [c.type for c in job.podgroup.conditions] == ["Scheduled", "Unschedulable"]
    assert job.podgroup.conditions[0] is again
