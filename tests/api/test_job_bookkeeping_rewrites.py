"""JobInfo's one-pass status bookkeeping, its fit-error summary and the pod-group phase
at close give exactly what the plainer versions they replace gave (kept below as the
reference): the same counts, the same dict orders, the same texts."""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from batchsched.api import JobInfo, PodGroup, Resource, TaskInfo, TaskStatus
from batchsched.api.cluster import ClusterInfo
from batchsched.api.fit import FitError, FitErrors, FitStatus
from batchsched.api.task import TransactionContext
from batchsched.api.types import (
    COMPLETED_STATUSES,
    FitStatusCode,
    PodGroupCondition,
    PodGroupConditionType,
    PodGroupPhase,
)
from batchsched.conf import configuration_from_text
from batchsched.framework.registry import Registry
from batchsched.framework.session import Session

S = TaskStatus
ALL_STATUSES = list(TaskStatus)
statuses = st.sampled_from(ALL_STATUSES)
roles = st.sampled_from(["", "ps", "worker", "chief"])
# Empty requests make pending tasks count as "need nothing" and best effort.
requests = st.sampled_from([Resource(), Resource(0.0, 0.0, {"pods": 1.0}), Resource(1000.0),
                            Resource(100.1, 2.0**30), Resource(0.0, 0.0, {"nvidia.com/gpu": 1.0})])


def counted_state(job: JobInfo) -> tuple[object, ...]:
    """Every count JobInfo keeps, with the order of every dict."""
    return (
        [(status, list(roles.items())) for status, roles in (job._role_counts or {}).items()],
        list((job._empty_pending_roles or {}).items()),
        job._pending_best_effort,
        job._ready,
        list(job.tasks),
        [(status, list(index)) for status, index in job.task_status_index.items()],
    )


def reference_update(job: JobInfo, task: TaskInfo, status: TaskStatus) -> None:
    """The status change as a removal then an addition (what the one pass folds)."""
    job.delete_task(task)
    task.status = status
    job.add_task(task)


@st.composite
def jobs_and_moves(draw: Any) -> tuple[JobInfo, list[tuple[int, TaskStatus]]]:
    job = JobInfo.from_podgroup(PodGroup("pg", "ns", min_member=draw(st.integers(0, 4))))
    specs = draw(st.lists(st.tuples(requests, statuses, roles), min_size=1, max_size=6))
    for i, (req, status, role) in enumerate(specs):
        job.add_task(TaskInfo.create("ns", f"t{i}", job.uid, req, status=status, role=role))
    moves = draw(st.lists(st.tuples(st.integers(0, len(specs) - 1), statuses), max_size=15))
    return job, moves


@given(jobs_and_moves())
def test_one_pass_status_change_counts_as_remove_then_add(
    case: tuple[JobInfo, list[tuple[int, TaskStatus]]]
) -> None:
    job, moves = case
    job.allocated_roles()  # per-role counts are kept from their first reading on
    reference = job.clone()
    for i, status in moves:  # a move to the same status included
        uid = f"ns/t{i}"
        job.update_task_status(job.tasks[uid], status)
        reference_update(reference, reference.tasks[uid], status)
        assert counted_state(job) == counted_state(reference)
        assert job.allocated_roles() == reference.allocated_roles()
        assert [job.check_task_ready(), job.check_task_pipelined(), job.check_task_valid(),
                job.check_task_starving()] == [
            reference.check_task_ready(), reference.check_task_pipelined(),
            reference.check_task_valid(), reference.check_task_starving()]
    job.check_invariants()


# -- fit_error -----------------------------------------------------------------------------


def reference_fit_error(job: JobInfo) -> str:
    """JobInfo.fit_error as it was written before."""
    histogram: dict[str, int] = {}
    for status, tasks in job.task_status_index.items():
        histogram[str(status)] = histogram.get(str(status), 0) + len(tasks)
    histogram["minAvailable"] = job.min_available
    ready = "pod group is ready" if job.is_ready() else "pod group is not ready"
    message = f"{ready}, {', '.join(sorted(f'{n} {k}' for k, n in histogram.items()))}"
    pending_reasons: dict[str, int] = {}
    for uid in job.tasks_in(S.PENDING):
        reason = job.task_scheduling_reason(uid)[0]
        pending_reasons[reason] = pending_reasons.get(reason, 0) + 1
    if pending_reasons:
        parts = sorted(f"{n} {k}" for k, n in pending_reasons.items())
        message += f"; Pending: {', '.join(parts)}"
    if job.job_fit_errors:
        message += ". Origin reason is: " + job.job_fit_errors
    else:
        for task in job.tasks.values():
            errs = job.nodes_fit_errors.get(task.uid)
            if errs is not None:
                message += f". Origin reason is {task.name}: {errs}"
                break
    return message


@st.composite
def summarised_jobs(draw: Any) -> JobInfo:
    job = JobInfo.from_podgroup(PodGroup("pg", "ns", min_member=draw(st.integers(0, 5))))
    count = draw(st.integers(0, 6))
    for i in range(count):
        task = TaskInfo.create("ns", f"t{i}", job.uid, draw(requests), status=draw(statuses),
                               role=draw(roles))
        if draw(st.booleans()):
            task.last_transaction = TransactionContext(draw(st.sampled_from(["", "n1"])),
                                                       draw(statuses))
        job.add_task(task)
        if draw(st.booleans()):
            errors = FitErrors()
            errors.set_node_error("n1", FitError("ns", f"t{i}", "n1", [
                FitStatus(FitStatusCode.UNSCHEDULABLE, draw(st.sampled_from(["a", "b"])))]))
            job.nodes_fit_errors[task.uid] = errors
    job.job_fit_errors = draw(st.sampled_from(["", "queue is full"]))
    return job


@given(summarised_jobs())
def test_fit_error_summary_is_unchanged(job: JobInfo) -> None:
    assert job.fit_error() == reference_fit_error(job)


@given(summarised_jobs())
def test_scheduling_reason_alone_is_the_reason_of_the_pair(job: JobInfo) -> None:
    for uid in [*job.tasks, "ns/missing"]:
        assert job._scheduling_reason(uid) == job.task_scheduling_reason(uid)[0]


# -- pod-group phase at close -----------------------------------------------------------------


def reference_phase(ssn: Session, job: JobInfo) -> PodGroupPhase:
    """Session.pod_group_phase as it was written before."""
    unschedulable = any(
        c.type == PodGroupConditionType.UNSCHEDULABLE and c.status == "True"
        and c.transition_id == ssn.uid
        for c in job.podgroup.conditions
    )
    if unschedulable and job.tasks_in(S.RUNNING):
        return PodGroupPhase.UNKNOWN
    scheduled = job.scheduled_task_num() + sum(
        1 for t in job.tasks_in(S.RELEASING).values() if t.node_name)
    completed = sum(len(job.tasks_in(s)) for s in COMPLETED_STATUSES)
    if scheduled >= job.podgroup.min_member:
        return PodGroupPhase.COMPLETED if scheduled == completed else PodGroupPhase.RUNNING
    if job.podgroup.phase != PodGroupPhase.INQUEUE:
        return PodGroupPhase.PENDING
    return job.podgroup.phase


@given(st.lists(st.tuples(statuses, st.booleans()), max_size=6), st.integers(0, 6),
       st.sampled_from(list(PodGroupPhase)),
       st.lists(st.tuples(st.sampled_from(list(PodGroupConditionType)),
                          st.sampled_from(["True", "False"]), st.booleans()), max_size=2))
def test_pod_group_phase_is_unchanged(
    tasks: list[tuple[TaskStatus, bool]], min_member: int, phase: PodGroupPhase,
    conditions: list[tuple[PodGroupConditionType, str, bool]],
) -> None:
    ssn = Session.open(ClusterInfo(now=1.0), configuration_from_text("actions: ''\ntiers: []\n"),
                       registry=Registry(autoload=False))
    job = JobInfo.from_podgroup(PodGroup("pg", "ns", min_member=min_member, phase=phase))
    for i, (status, placed) in enumerate(tasks):
        job.add_task(TaskInfo.create("ns", f"t{i}", job.uid, Resource(1000), status=status,
                                     node_name="n1" if placed else ""))
    job.podgroup.conditions = [
        PodGroupCondition(kind, status, "r", "m", ssn.uid if this_session else "session-0")
        for kind, status, this_session in conditions
    ]
    assert ssn.pod_group_phase(job) == reference_phase(ssn, job)
    assert job.releasing_scheduled_task_num() == sum(
        1 for t in job.tasks_in(S.RELEASING).values() if t.node_name)
