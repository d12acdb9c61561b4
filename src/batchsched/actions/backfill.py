"""backfill: place best-effort tasks (Volcano's ``actions/backfill``).

Best-effort tasks (no cpu, memory or scalar requests) never go through allocate;
backfill places them on any node that passes the plugins' predicates. No
resource check is made (a best-effort task needs none; only the predicates
plugin's pod-count check limits how many land on a node) and queues are not
asked whether they may take the task.

The list of tasks is fixed up front: jobs whose pod group is not Pending, that
are valid and whose queue exists; their Pending best-effort tasks, and their
Pipelined best-effort tasks, which are first taken off their node (un-pipelined)
so that they can be placed for real. The list runs queue by queue (queue order),
job by job (job order), task by task (task order), without re-ranking.

For each task: the pre-predicates, then the predicates over every node (session
node order); with several candidates, node-order plus batch node-order scores
over all of them, a best-node plugin's choice, else the highest score (ties: the
first node in session node order). The task is allocated there, and, as
Volcano's ``Session.Allocate`` does, if its job is then ready every Allocated
task of the job is sent to bind at once, including tasks an earlier allocate
left Allocated.

A task that fits nowhere records its fit errors in ``job.nodes_fit_errors``; the
session's close turns them into its ``FailedScheduling`` warning event in
Volcano's wording (``0/3 nodes are unavailable: 3 node(s) pod number exceeded.``).

Arguments (``configurations: - name: backfill``): ``predicateErrorCacheEnable``
(default true). Each task has its own cache scope, so it changes nothing here;
it is accepted for compatibility with Volcano's configuration.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from batchsched.actions.selector_action import SelectorAction
from batchsched.api.fit import FitError, FitErrors
from batchsched.api.job import JobInfo
from batchsched.api.node import NodeInfo
from batchsched.api.priority_queue import PriorityQueue
from batchsched.api.queue import QueueInfo
from batchsched.api.task import TaskInfo, TransactionContext
from batchsched.api.types import TaskStatus
from batchsched.errors import SchedulingError
from batchsched.framework.statement import Operation, OperationKind, Statement

if TYPE_CHECKING:
    from batchsched.framework.session import Session

__all__ = ["BackfillAction"]

_UNPLACED = TransactionContext("", TaskStatus.PENDING)


class BackfillAction(SelectorAction):
    """Volcano's backfill action.

    ``node_selector_factory`` builds the per-task node choice, as for
    :class:`~batchsched.actions.allocate.AllocateAction`.
    """

    name = "backfill"

    def execute(self, ssn: Session) -> None:
        """Place every picked best-effort task, in the order fixed up front."""
        selector = self.new_selector(ssn)
        nodes = ssn.node_list
        for task in pick_up_pending_tasks(ssn):
            job = ssn.jobs[task.job]
            selector.new_cache_scope()
            refusal = ssn.pre_predicate(task)
            if refusal is not None:
                errors = FitErrors()
                for node in nodes:
                    errors.set_node_error(node.name, FitError(
                        refusal.task_namespace, refusal.task_name, node.name,
                        list(refusal.statuses),
                    ))
                self._unplaced(ssn, job, task, errors)
                continue
            placement = selector.for_backfill(task, nodes)
            if placement.node is None:
                self._unplaced(ssn, job, task, placement.fit_errors)
                continue
            try:
                allocate_and_dispatch(ssn, job, task, placement.node)
            except SchedulingError as exc:
                errors = FitErrors()
                errors.set_node_error(placement.node.name, exc)
                self._unplaced(ssn, job, task, errors)

    @staticmethod
    def _unplaced(ssn: Session, job: JobInfo, task: TaskInfo, errors: FitErrors) -> None:
        job.nodes_fit_errors[task.uid] = errors


def pick_up_pending_tasks(ssn: Session) -> list[TaskInfo]:
    """The best-effort tasks backfill will try, in queue, job, then task order.

    Pipelined best-effort tasks are un-pipelined here (back to Pending, off
    their node) so that they join the list.
    """
    queues: PriorityQueue[QueueInfo] = PriorityQueue(ssn.queue_order_fn)
    jobs_by_queue: dict[str, PriorityQueue[JobInfo]] = {}
    tasks_by_job: dict[str, PriorityQueue[TaskInfo]] = {}
    for job in ssn.jobs.values():
        if job.is_pending():
            continue
        verdict = ssn.job_valid(job)
        if verdict is not None and not verdict.passed:
            continue
        queue = ssn.queues.get(job.queue)
        if queue is None:
            continue
        tasks: PriorityQueue[TaskInfo] = PriorityQueue(ssn.task_order_fn)
        for task in job.tasks_in(TaskStatus.PENDING).values():
            if task.best_effort and not task.scheduling_gated:
                tasks.push(task)
        for task in list(job.tasks_in(TaskStatus.PIPELINED).values()):
            if task.best_effort:
                unpipeline(ssn, task)
                tasks.push(task)
        if not tasks:
            continue
        if job.queue not in jobs_by_queue:
            jobs_by_queue[job.queue] = PriorityQueue(ssn.job_order_fn)
            queues.push(queue)
        jobs_by_queue[job.queue].push(job)
        tasks_by_job[job.uid] = tasks

    ordered: list[TaskInfo] = []
    while queues:
        jobs = jobs_by_queue[queues.pop().name]
        while jobs:
            tasks = tasks_by_job[jobs.pop().uid]
            while tasks:
                ordered.append(tasks.pop())
    return ordered


def unpipeline(ssn: Session, task: TaskInfo) -> None:
    """Take a pipelined task off its node, back to Pending (Volcano's ``UnPipeline``)."""
    stmt = Statement(ssn)
    stmt.operations.append(Operation(OperationKind.PIPELINE, task, task.node_name, _UNPLACED))
    stmt.unallocate(task)


def allocate_and_dispatch(ssn: Session, job: JobInfo, task: TaskInfo, node: NodeInfo) -> None:
    """Volcano's ``Session.Allocate``: allocate the task (a handler's refusal is not
    read, as there), then, if its job is ready, send every Allocated task of the job
    to bind (in task id order)."""
    stmt = Statement(ssn)
    stmt.allocate(task, node, refusals_ignored=True)
    if not ssn.job_ready(job):
        return  # the task stays Allocated, as in Volcano
    for other in sorted(job.tasks_in(TaskStatus.ALLOCATED).values(), key=lambda t: t.uid):
        if other is not task:
            stmt.operations.append(
                Operation(OperationKind.ALLOCATE, other, other.node_name, _UNPLACED)
            )
    stmt.commit()
