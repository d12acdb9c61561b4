"""gang: all or nothing (Volcano's ``plugins/gang``).

A job (pod group) runs only when at least ``minMember`` of its tasks can run
together, and each role (task spec) has at least its ``minTaskMember``. gang
decides:

* **job valid**: enough tasks exist at all (not failed / unknown / releasing);
* **job ready**: enough tasks hold resources to bind the gang;
* **job pipelined**: enough tasks hold or wait for resources (vote);
* **job starving**: fewer than ``minMember`` tasks hold or wait for resources;
* **victims** (preemptable and reclaimable): a task may be evicted only while its
  job keeps ``minMember`` ready tasks;
* **unified evictable** (gang-level eviction, asked by the ``gangpreempt`` and
  ``gangreclaim`` actions): every candidate;
* **job order**: jobs that are not ready go first;
* **task order** (batchsched's ordered start, seed 001 §4; only for a job that
  asks for it): with the pod-group annotation ``batchsched.io/start-order``,
  ``minimums`` puts first the tasks each role needs to reach its
  ``minTaskMember`` (the earliest pending ones of the role), then the others; a
  list of roles (``driver,executor``) puts those roles first in that order, and
  within a role the needed tasks first. A Spark job (a driver, executors, per-role
  minimums) then starts its driver and one executor when only two fit, where
  Volcano's order (creation, then name) may take two executors and start
  nothing;
* at session close, the pod group's ``Unschedulable`` or ``Scheduled`` condition.

It takes no arguments.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from batchsched.api.job import JobInfo
from batchsched.api.sub_job import SubJobInfo, check_sub_jobs, gang_ready
from batchsched.api.task import TaskInfo
from batchsched.api.types import (
    ALLOCATED_STATUSES,
    PodGroupCondition,
    PodGroupConditionType,
    TaskStatus,
    Vote,
)
from batchsched.columnar.node_columns import BoolArray
from batchsched.columnar.victim_rows import VictimRows, add_preemptable_bound_fn
from batchsched.framework.arguments import Arguments
from batchsched.framework.events import ValidateResult
from batchsched.framework.session import Session

__all__ = [
    "MINIMUMS_FIRST",
    "NOT_ENOUGH_PODS_OF_TASK",
    "NOT_ENOUGH_RESOURCES",
    "NOT_ENOUGH_TASKS",
    "SCHEDULED_REASON",
    "START_ORDER_ANNOTATION",
    "GangPlugin",
    "StartOrder",
    "should_skip_unschedulable_for_releasing",
    "start_order_keys",
    "unschedulable_message",
]

#: Job-valid reason when a role has fewer valid tasks than its minimum.
NOT_ENOUGH_PODS_OF_TASK = "NotEnoughPodsOfTask"
#: Job-valid reason when the job has fewer valid tasks than ``minMember``.
NOT_ENOUGH_TASKS = "NotEnoughTasks"
#: Reason of the ``Unschedulable`` condition gang sets on a job that is not ready.
NOT_ENOUGH_RESOURCES = "NotEnoughResources"
#: Reason of the ``Scheduled`` condition gang sets on a ready job.
SCHEDULED_REASON = "tasks in gang are ready to be scheduled"


class GangPlugin:
    """Volcano's gang plugin: a job is scheduled whole (``minMember`` tasks) or not at all."""

    name = "gang"

    def __init__(self, arguments: Arguments) -> None:
        self.arguments = arguments
        arguments.warn_unknown(self.name)

    def on_session_open(self, ssn: Session) -> None:
        # Keeping answers per job pays off only when later sessions see the same objects.
        ssn.add_job_valid_fn(self.name, _job_valid_kept if ssn.reuses_objects else job_valid)

        def victims(actor: TaskInfo, candidates: list[TaskInfo]) -> list[TaskInfo]:
            return gang_victims(ssn, candidates)

        ssn.add_preemptable_fn(self.name, victims)
        add_preemptable_bound_fn(ssn, self.name, lambda _actor, rows: gang_victim_bound(ssn, rows))
        ssn.add_reclaimable_fn(self.name, victims)
        ssn.add_unified_evictable_fn(self.name, lambda _context, candidates: list(candidates))
        # Not-ready jobs first: the key False sorts before True.
        ssn.add_job_order_key_fn(self.name, lambda job: job.is_ready())
        ssn.add_job_ready_fn(self.name, job_ready)
        ssn.add_job_pipelined_fn(self.name, job_pipelined)
        ssn.add_sub_job_ready_fn(self.name, SubJobInfo.is_ready)
        ssn.add_sub_job_pipelined_fn(self.name, sub_job_pipelined)
        ssn.add_sub_job_order_fn(self.name, sub_job_order)
        # Preemption looks at minMember only, not at the per-role minimums.
        ssn.add_job_starving_fn(self.name, JobInfo.is_starving)
        if any(START_ORDER_ANNOTATION in job.podgroup.annotations for job in ssn.jobs.values()):
            ssn.add_task_order_fn(self.name, StartOrder(ssn).compare)

    def on_session_close(self, ssn: Session) -> None:
        """Set ``Unschedulable`` on every job that is not ready, ``Scheduled`` on the others.

        Jobs without tasks are left alone, and so is a job whose missing tasks are
        only being released from nodes (:func:`should_skip_unschedulable_for_releasing`).
        """
        if ssn.reuses_objects:
            message_of = _unschedulable_message_kept
        else:
            def message_of(job: JobInfo) -> str:
                return unschedulable_message(job, ssn.job_fit_error(job))
        # Conditions are immutable: every ready job shares one, and jobs with the same
        # message share theirs (a session closes hundreds of waiting jobs alike).
        scheduled = PodGroupCondition(
            PodGroupConditionType.SCHEDULED, "True", SCHEDULED_REASON, "", ssn.uid)
        unschedulable: dict[str, PodGroupCondition] = {}
        for job in ssn.jobs.values():
            if not job.tasks:
                continue
            if job.is_ready():
                ssn.update_pod_group_condition(job, scheduled)
                continue
            if should_skip_unschedulable_for_releasing(job):
                continue
            message = message_of(job)
            condition = unschedulable.get(message)
            if condition is None:
                condition = unschedulable[message] = PodGroupCondition(
                    PodGroupConditionType.UNSCHEDULABLE, "True", NOT_ENOUGH_RESOURCES,
                    message, ssn.uid)
            ssn.update_pod_group_condition(job, condition)


START_ORDER_ANNOTATION = "batchsched.io/start-order"
#: ``batchsched.io/start-order`` value: the tasks needed for the per-role minimums first.
MINIMUMS_FIRST = "minimums"


class StartOrder:
    """The task order of jobs annotated ``batchsched.io/start-order`` (see the module
    docstring); 0 (no opinion) for the others, and between tasks of two jobs."""

    def __init__(self, ssn: Session) -> None:
        self.ssn = ssn
        self._keys: dict[str, tuple[int, dict[str, tuple[int, int]]]] = {}

    def compare(self, left: TaskInfo, right: TaskInfo) -> int:
        if left.job != right.job:
            return 0
        keys = self._job_keys(left.job)
        if keys is None:
            return 0
        first, second = keys.get(left.uid, (0, 0)), keys.get(right.uid, (0, 0))
        return -1 if first < second else (1 if first > second else 0)

    def _job_keys(self, uid: str) -> dict[str, tuple[int, int]] | None:
        job = self.ssn.jobs.get(uid)
        if job is None:
            return None
        value = job.podgroup.annotations.get(START_ORDER_ANNOTATION, "").strip()
        if not value:
            return None
        kept = self._keys.get(uid)
        if kept is not None and kept[0] == job.mutations:
            return kept[1]
        keys = start_order_keys(job, value)
        self._keys[uid] = (job.mutations, keys)
        return keys


def start_order_keys(job: JobInfo, value: str) -> dict[str, tuple[int, int]]:
    """Each pending task's rank under ``batchsched.io/start-order: value``: (the rank of
    its role, 0 if its role needs it to reach its minimum else 1)."""
    roles = [] if value == MINIMUMS_FIRST else [r.strip() for r in value.split(",") if r.strip()]
    rank = {role: i for i, role in enumerate(roles)}
    placed: dict[str, int] = {}
    pending: dict[str, list[TaskInfo]] = {}
    for task in job.tasks.values():
        if task.status in ALLOCATED_STATUSES or task.status == TaskStatus.SUCCEEDED:
            placed[task.role] = placed.get(task.role, 0) + 1
        elif task.status == TaskStatus.PENDING:
            pending.setdefault(task.role, []).append(task)
    keys: dict[str, tuple[int, int]] = {}
    for role, tasks in pending.items():
        needed = max(job.task_min_available.get(role, 0) - placed.get(role, 0), 0)
        tasks.sort(key=lambda task: (task.creation_time, task.order_uid))
        for i, task in enumerate(tasks):
            keys[task.uid] = (rank.get(role, len(roles)), 0 if i < needed else 1)
    return keys


def job_valid(job: JobInfo) -> ValidateResult | None:
    """None when the job can be gang-scheduled at all, else why not."""
    if not job.check_task_valid():
        return ValidateResult(
            False, NOT_ENOUGH_PODS_OF_TASK,
            "Not enough valid pods of each task for gang-scheduling",
        )
    if not check_sub_jobs(job, "valid"):
        return ValidateResult(
            False, NOT_ENOUGH_PODS_OF_TASK,
            "Not enough valid subGroups of each task for gang-scheduling",
        )
    valid = job.valid_task_num()
    if valid < job.min_available:
        return ValidateResult(
            False, NOT_ENOUGH_TASKS,
            f"Not enough valid tasks for gang-scheduling, valid: {valid}, "
            f"min: {job.min_available}",
        )
    return None


def gang_victims(ssn: Session, candidates: list[TaskInfo]) -> list[TaskInfo]:
    """The candidates whose eviction leaves their job with ``minMember`` ready tasks.

    Candidates are taken in the order given; each one accepted lowers its job's
    ready count for the next. Tasks of jobs outside the session are skipped.
    """
    occupied: dict[str, int] = {}
    out: list[TaskInfo] = []
    for candidate in candidates:
        job = ssn.jobs.get(candidate.job)
        if job is None:
            continue
        ready = occupied.setdefault(job.uid, job.ready_task_num())
        if ready > job.min_available:
            occupied[job.uid] = ready - 1
            out.append(candidate)
    return out


def gang_victim_bound(ssn: Session, rows: VictimRows) -> BoolArray:
    """The rows :func:`gang_victims` might take, whatever else it is offered: those of
    jobs with more ready tasks than ``minMember`` (it takes no other, and a job's
    count only goes down as its candidates are taken)."""
    def spare(uid: str) -> float:
        job = ssn.jobs.get(uid)
        return 1.0 if job is not None and job.ready_task_num() > job.min_available else 0.0

    has_spare: BoolArray = rows.per_job("gang.spare", spare)[rows.job] > 0.0
    return has_spare


def _not_ready_first(left_ready: bool, right_ready: bool) -> int:
    if left_ready == right_ready:
        return 0
    return 1 if left_ready else -1


def job_order(left: JobInfo, right: JobInfo) -> int:
    """Jobs that are not ready yet go before ready ones."""
    return _not_ready_first(left.is_ready(), right.is_ready())


def job_ready(job: JobInfo) -> bool:
    """Enough tasks hold resources, overall, per role and per sub-group policy."""
    return gang_ready(job)


def job_pipelined(job: JobInfo) -> Vote:
    """Permit when enough tasks hold or wait for resources (overall, per role and per
    sub-group policy)."""
    if job.check_task_pipelined() and check_sub_jobs(job, "pipelined") and job.is_pipelined():
        return Vote.PERMIT
    return Vote.REJECT


def sub_job_order(left: SubJobInfo, right: SubJobInfo) -> int:
    """Sub-jobs that are not ready yet go before ready ones."""
    return _not_ready_first(left.is_ready(), right.is_ready())


def sub_job_pipelined(sub_job: SubJobInfo) -> Vote:
    return Vote.PERMIT if sub_job.is_pipelined() else Vote.REJECT


def should_skip_unschedulable_for_releasing(job: JobInfo) -> bool:
    """Whether a job that is not ready keeps enough scheduled tasks, counting the ones
    still being released from a node, that it should not be marked Unschedulable.

    False when no task is Releasing on a node, or when the job still has Pending or
    Pipelined tasks (they need scheduling and must stay visible).
    """
    releasing = job.releasing_scheduled_task_num()
    if releasing == 0:
        return False
    if job.tasks_in(TaskStatus.PENDING) or job.tasks_in(TaskStatus.PIPELINED):
        return False
    return job.scheduled_task_num() + releasing >= job.min_available


def unschedulable_message(job: JobInfo, fit_error: str | None = None) -> str:
    """``"<unready>/<tasks> tasks in gang unschedulable: <fit error>"``.

    ``unready`` is ``minMember`` minus the tasks that are ready or were placed by a
    statement that was later discarded (their last transaction holds resources).
    ``fit_error`` is the job's :meth:`~batchsched.api.job.JobInfo.fit_error` when the
    caller has it already.
    """
    schedulable = job.ready_task_num()
    for task in job.tasks_in(TaskStatus.PENDING).values():
        context = task.last_transaction  # without one, the task is simply Pending
        if context is not None and context.status in ALLOCATED_STATUSES:
            schedulable += 1
    unready = job.min_available - schedulable
    if fit_error is None:
        fit_error = job.fit_error()
    return f"{unready}/{len(job.tasks)} tasks in gang unschedulable: {fit_error}"


# Every session asks both questions below of every waiting job, and a job that has not
# changed (its mutation count names its tasks and their states) gets the same answers:
# they are kept in the job object's memo (snapshots hand out the same object for a job
# that did not change, see MemoryCache).
_VALID_KEY = "gang.job-valid"
_MESSAGE_KEY = "gang.unschedulable-message"
_T = TypeVar("_T")


def _kept(key: str, job: JobInfo, compute: Callable[[JobInfo], _T]) -> _T:
    """``compute(job)``, kept in the job's memo until its tasks or minimum change."""
    memo = job.memo
    kept = memo.get(key)
    if kept is not None and kept[0] == job.mutations and kept[1] == job.min_available:
        answer: _T = kept[2]
        return answer
    answer = compute(job)
    memo[key] = (job.mutations, job.min_available, answer)
    return answer


def _job_valid_kept(job: JobInfo) -> ValidateResult | None:
    return _kept(_VALID_KEY, job, job_valid)


def _unschedulable_message_kept(job: JobInfo) -> str:
    if job.nodes_fit_errors or job.job_fit_errors:
        return unschedulable_message(job)  # this session's reasons: not kept
    return _kept(_MESSAGE_KEY, job, unschedulable_message)
