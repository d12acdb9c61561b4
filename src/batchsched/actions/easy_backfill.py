"""easy-backfill: start later jobs behind a blocked head, without delaying it (EASY).

Run it after :mod:`~batchsched.actions.strict_allocate`. For the blocked head
(each queue's, with strict-allocate's ``blockPerQueue``), the head's **reserved
start** (shadow time) is the earliest time at which, as the running tasks end,
enough resources will be free in total for what starts the head's gang (for a
job with per-role minimums, what allocate would take walking its tasks in task
order against that total): each running task is expected to end at its start
(now, for one placed in this session or whose start is unknown) plus its job's
requested run time (``batchsched.io/requested-runtime``; a task without one is
not expected to end). A later job (of any queue whose share is not used up; of
the head's queue with ``blockPerQueue``) then starts now, through the same gang
statement and node choice as allocate, if it fits now and either

* its requested run ends before the reserved start, or
* (with ``extraNodes``) it uses only the **extra** resources: those free at the
  reserved start beyond what the head needs (each such job takes its share of
  the extra).

So a backfilled job never delays the head it is backfilled behind, provided
requested times are not exceeded (with ``blockPerQueue``, another queue's blocked
head is not reserved for). A head that never starts by these estimates is
delayed by none: every candidate that fits now is backfilled.

Arguments (``configurations: - name: easy-backfill``):

* ``extraNodes`` (default false): allow the second rule above (classic EASY);
* ``candidateOrder``: ``policy`` (default, the session's job order) or
  ``submit`` (submit time, then id);
* ``strictShadow`` (default true): a job must end strictly before the reserved
  start; false: by it.

The defaults are the simulation contract's rule. RLScheduler's reference
simulator (DIR-LAB/deep-batch-scheduler) backfills with them and
``candidateOrder: submit``; published tables that use it replay with those.
"""

from __future__ import annotations

import functools
import heapq
import math
from typing import TYPE_CHECKING

from batchsched.actions.allocate import _AllocateRun
from batchsched.actions.selector_action import SelectorAction
from batchsched.actions.strict_allocate import (
    BLOCKED_KEY,
    PER_QUEUE_KEY,
    cluster_free,
    gang_may_fit,
    pending_request,
)
from batchsched.api.fit import FitErrors
from batchsched.api.job import JobInfo
from batchsched.api.resource import Resource
from batchsched.api.types import ALLOCATED_STATUSES, TaskStatus
from batchsched.errors import ConfigError
from batchsched.framework.arguments import Arguments

if TYPE_CHECKING:
    from batchsched.framework.session import Session

__all__ = ["EasyBackfillAction", "reserved_start"]

_ORDERS = ("policy", "submit")


class EasyBackfillAction(SelectorAction):
    """EASY backfilling behind each queue's blocked head."""

    name = "easy-backfill"
    arguments_read = ("extraNodes", "strictShadow", "candidateOrder")

    def __init__(self, arguments: Arguments | None = None) -> None:
        super().__init__(arguments)
        self.extra_nodes = self.arguments.get_bool("extraNodes", False, owner=self.name)
        self.strict_shadow = self.arguments.get_bool("strictShadow", True, owner=self.name)
        self.candidate_order = self.arguments.get_str("candidateOrder", "policy",
                                                      owner="easy-backfill")
        if self.candidate_order not in _ORDERS:
            raise ConfigError(
                f"candidateOrder {self.candidate_order!r} is not one of {', '.join(_ORDERS)}",
                key="configurations[easy-backfill].arguments.candidateOrder")

    def execute(self, ssn: Session) -> None:
        blocked: dict[str, str] = ssn.extra.get(BLOCKED_KEY, {})
        if not blocked:
            return
        run = _AllocateRun(ssn, lambda: self.new_selector(ssn))
        per_queue = bool(ssn.extra.get(PER_QUEUE_KEY, True))
        for queue_name, head_uid in blocked.items():
            head = ssn.jobs.get(head_uid)
            queue = ssn.queues.get(queue_name)
            if head is None or queue is None:
                continue
            self._backfill_queue(ssn, run, queue_name if per_queue else None, head)

    def _backfill_queue(self, ssn: Session, run: _AllocateRun, queue_name: str | None,
                        head: JobInfo) -> None:
        """Backfill behind ``head``: with the jobs of ``queue_name``, or (None) of
        every queue whose share is not used up."""
        shadow, extra = reserved_start(ssn, head)
        candidates = [job for job in run.considered
                      if job.uid != head.uid and job.queue in ssn.queues
                      and (job.queue == queue_name if queue_name is not None
                           else not ssn.overused(ssn.queues[job.queue]))]
        if self.candidate_order == "submit":
            candidates.sort(key=lambda job: (job.creation_time, job.uid))
        else:
            candidates = sorted_by_order(ssn, candidates)
        now = ssn.now
        free = cluster_free(ssn)
        for job in candidates:
            requested = job.requested_runtime
            end = math.inf if requested is None else now + requested
            # A head that never starts by the estimates (a running task without a
            # requested time) is delayed by none: every candidate that fits goes.
            ends_in_time = (end < shadow or shadow == math.inf) if self.strict_shadow \
                else end <= shadow
            need: Resource | None = None
            if not ends_in_time:
                if not self.extra_nodes or extra is None:
                    continue
                need = pending_request(job)
                if not need.less_equal(extra):
                    continue
            if not gang_may_fit(job, free):
                continue  # more than the cluster has free in total: it cannot start now
            tasks = run.tasks_of(job)
            if run.has_work(job, tasks) and run.allocate_job(ssn.queues[job.queue], job, tasks):
                free = cluster_free(ssn)
                if need is not None:
                    assert extra is not None
                    extra.sub_unchecked(need)


def sorted_by_order(ssn: Session, jobs: list[JobInfo]) -> list[JobInfo]:
    """``jobs`` in the session's job order."""
    return ssn.sorted_jobs(jobs)


def reserved_start(ssn: Session, head: JobInfo) -> tuple[float, Resource | None]:
    """The head's reserved start and the extra resources free then beyond its need.

    The free total (idle plus releasing) grows as running tasks end at their
    start plus their job's requested run time; the reserved start is the first
    such end at which what the head needs to start (:func:`gang_request`) fits the
    total (now, if it already does), and the extra is what is free then (every task
    ending at that moment freed) beyond it. ``(inf, None)`` when that never happens.
    """
    need = gang_request(ssn, head)
    free = cluster_free(ssn)
    taken = need if need is not None else start_request(ssn, head, free)
    if taken is not None and taken.less_equal(free):
        return ssn.now, free.sub_unchecked(taken)
    ends: list[tuple[float, Resource]] = []
    now = ssn.now
    for job in ssn.jobs.values():
        requested = job.requested_runtime
        if requested is None:
            continue  # not expected to end
        index = job.task_status_index
        for status in ALLOCATED_STATUSES:
            tasks = index.get(status)
            if not tasks:
                continue
            for task in tasks.values():
                start = task.start_time if task.start_time is not None else now
                ends.append((start + requested, task.resreq))
    ends.sort(key=lambda item: item[0])
    for i, (end, released) in enumerate(ends):
        free.add(released)
        if i + 1 < len(ends) and ends[i + 1][0] == end:
            continue  # the tasks ending at the same moment are free together
        taken = need if need is not None else start_request(ssn, head, free)
        if taken is not None and taken.less_equal(free):
            return end, free.sub_unchecked(taken)
    return math.inf, None


def gang_request(ssn: Session, head: JobInfo) -> Resource | None:
    """What the head needs to start: its pending tasks' requests, or, for a job that
    starts with part of them (``minMember`` below its tasks), the requests of the
    pending tasks it still needs, the first in task order. None for a job with
    per-role minimums (``minTaskMember``) or sub-groups: what starts it depends on
    what is free (see :func:`start_request`)."""
    if head.task_min_available or head.podgroup.sub_group_policies:
        return None
    if head.min_available >= len(head.tasks):
        return pending_request(head)
    missing = head.min_available - head.ready_task_num()
    pending = head.tasks_in(TaskStatus.PENDING)
    if missing <= 0 or missing >= len(pending):
        # Ready in number but waiting all the same (another of allocate's rules holds
        # it): nothing smaller is known to start it.
        return pending_request(head)
    need = Resource()
    for task in heapq.nsmallest(missing, pending.values(),
                                key=functools.cmp_to_key(ssn.task_order_total)):
        need.add(task.resreq)
    return need


def start_request(ssn: Session, head: JobInfo, free: Resource) -> Resource | None:
    """What allocate would take to start the head with ``free`` in total, or None if
    it would not start it: its pending tasks in task order, each taken while it fits
    what is left, a failed task's role given up (or the walk ended, as allocate
    ends it), until the gang plugins find the job ready. The walk is made on a copy
    of the job, so that a role's tasks beyond its minimum use up what another role
    needs exactly as allocate's do."""
    job = head.clone()
    left = free.clone()
    taken = Resource()
    pending = sorted(job.tasks_in(TaskStatus.PENDING).values(),
                     key=functools.cmp_to_key(ssn.task_order_total))
    for task in pending:
        if job.task_has_fit_errors(task):
            continue
        if task.resreq.less_equal(left):
            left.sub_unchecked(task.resreq)
            taken.add(task.resreq)
            job.update_task_status(task, TaskStatus.ALLOCATED)
            if ssn.job_ready(job):
                return taken
            continue
        job.nodes_fit_errors[task.uid] = FitErrors()
        if not job.need_continue_allocating():
            break
    return taken if ssn.job_ready(job) else None
