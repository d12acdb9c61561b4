"""priority: order and preempt by priority (Volcano's ``plugins/priority``).

* **task order**: higher task priority first (a pod's ``priority``, else its
  class's value, else 1);
* **job order**: higher job priority first (the pod group's priority class);
* **preemptable**: a task of another job is a victim only if its job's priority
  is lower than the preemptor job's; a task of the preemptor's own job only if
  its task priority is lower than the preemptor's;
* **sub-job order**: the sub-job with the higher priority (its tasks' highest,
  at least 0) first;
* **unified evictable** (gang-level eviction, gangpreempt and gangreclaim): gang
  reclaim may take every candidate; gang preempt only candidates whose job priority
  is lower than the evicting job's;
* **job starving**: the job has tasks that neither hold nor wait for resources
  (ready + pipelined < number of tasks).

It registers no reclaimable function (reclaim is about queues, not priority)
and takes no arguments.
"""

from __future__ import annotations

import math

import numpy as np

from batchsched.api.job import JobInfo
from batchsched.api.sub_job import SubJobInfo
from batchsched.api.task import TaskInfo
from batchsched.columnar.node_columns import BoolArray
from batchsched.columnar.victim_rows import VictimRows, add_preemptable_bound_fn
from batchsched.framework.arguments import Arguments
from batchsched.framework.events import EvictionContext, EvictionKind
from batchsched.framework.session import Session

__all__ = ["PriorityPlugin", "job_order", "job_starving", "task_order"]


class PriorityPlugin:
    """Volcano's priority plugin."""

    name = "priority"

    def __init__(self, arguments: Arguments) -> None:
        self.arguments = arguments
        arguments.warn_unknown(self.name)

    def on_session_open(self, ssn: Session) -> None:
        ssn.add_task_order_key_fn(self.name, task_order_key)
        ssn.add_job_order_key_fn(self.name, job_order_key)
        ssn.add_sub_job_order_fn(self.name, sub_job_order)

        def preemptable(preemptor: TaskInfo, candidates: list[TaskInfo]) -> list[TaskInfo]:
            preemptor_job = ssn.jobs.get(preemptor.job)
            if preemptor_job is None:
                return []
            victims = []
            for candidate in candidates:
                job = ssn.jobs.get(candidate.job)
                if job is None:
                    continue
                if job.uid != preemptor_job.uid:
                    if job.priority < preemptor_job.priority:
                        victims.append(candidate)
                elif candidate.priority < preemptor.priority:
                    victims.append(candidate)
            return victims

        def unified_evictable(
            context: EvictionContext, candidates: list[TaskInfo]
        ) -> list[TaskInfo]:
            if context.kind is EvictionKind.GANG_RECLAIM:
                return list(candidates)
            victims = []
            for candidate in candidates:
                job = ssn.jobs.get(candidate.job)
                if job is not None and job.priority < context.job.priority:
                    victims.append(candidate)
            return victims

        ssn.add_preemptable_fn(self.name, preemptable)
        add_preemptable_bound_fn(
            ssn, self.name, lambda preemptor, rows: priority_victim_bound(ssn, preemptor, rows))
        ssn.add_unified_evictable_fn(self.name, unified_evictable)
        ssn.add_job_starving_fn(self.name, job_starving)

    def on_session_close(self, ssn: Session) -> None:
        pass


# The two orders are asked at every step of allocate's heaps: each compares inline.


def task_order(left: TaskInfo, right: TaskInfo) -> int:
    """Higher task priority first."""
    lprio, rprio = left.priority, right.priority
    if lprio == rprio:
        return 0
    return -1 if lprio > rprio else 1


def job_order(left: JobInfo, right: JobInfo) -> int:
    """Higher job priority first."""
    lprio, rprio = left.priority, right.priority
    if lprio == rprio:
        return 0
    return -1 if lprio > rprio else 1


def task_order_key(task: TaskInfo) -> int:
    """:func:`task_order` as a sort key."""
    return -task.priority


def job_order_key(job: JobInfo) -> int:
    """:func:`job_order` as a sort key."""
    return -job.priority


def job_starving(job: JobInfo) -> bool:
    """Some task of the job neither holds nor waits for resources."""
    return job.ready_task_num() + job.waiting_task_num() < len(job.tasks)


def priority_victim_bound(ssn: Session, preemptor: TaskInfo, rows: VictimRows) -> BoolArray:
    """The rows the priority plugin's Preemptable function might return for
    ``preemptor``: tasks of a job of lower priority, and tasks of the preemptor's own
    job of lower task priority (each candidate is judged alone)."""
    own = ssn.jobs.get(preemptor.job)
    if own is None:
        return np.zeros(len(rows.job), dtype=np.bool_)
    own_code = rows.job_code(own.uid)

    def priority_of(uid: str) -> float:
        job = ssn.jobs.get(uid)
        return float(job.priority) if job is not None else math.nan  # never a victim

    job_priority = rows.per_job("priority.job", priority_of)[rows.job]
    same_job = rows.job == own_code
    lower: BoolArray = np.where(same_job, rows.priority < preemptor.priority,
                                job_priority < own.priority)
    return lower


def sub_job_order(left: SubJobInfo, right: SubJobInfo) -> int:
    """Higher sub-job priority first."""
    if left.priority == right.priority:
        return 0
    return -1 if left.priority > right.priority else 1
