"""allocate: place pending tasks on nodes, queue by queue and job by job (Volcano's
``actions/allocate``).

The action works in rounds. Each round pops the first queue (queue order; an
overused queue is dropped for the rest of the action), pops that queue's first
job (job order) and places the job's pending tasks in task order until the job
is ready:

* a task the queue may not take (``allocatable``) is passed over silently;
* a task whose role already failed in this session is skipped with
  ``Task <name> with role spec <role> has already predicated failed, skip``;
* a task failing the pre-predicates, or fitting no node, records its
  :class:`~batchsched.api.fit.FitErrors` in ``job.nodes_fit_errors``; the round
  goes on with the job's next task only if :meth:`JobInfo.need_continue_allocating`
  says the job can still reach its minimum, else it stops;
* otherwise the node comes from the :class:`~batchsched.actions.placement.NodeSelector`
  (resource fit on future idle, predicates, nodes fitting in idle before nodes
  fitting only in future idle, score, best node; ties go to the first node in
  session node order). The task is allocated there, or pipelined when the node
  fits it only once releasing tasks are gone.

At the end of the round the job's statement is committed if the job is ready
(binds go to the cache) and the job is pushed back when tasks remain; if the job
is only pipelined the statement is kept as it is (its tasks stay Allocated or
Pipelined, nothing is bound, the job is not retried); otherwise it is discarded.
The queue is always pushed back, so its share is re-ranked after each round.

Best-effort tasks (no requests) are left to backfill. When the configuration has
no ``enqueue`` action, Pending pod groups are treated as Inqueue (and read
Inqueue at session close).

Why a task was not placed stays in ``job.nodes_fit_errors``, where gang's close
condition and the session's close read them: at close, each task left Pending,
Pipelined or Allocated gets its ``FailedScheduling`` warning event in Volcano's
wording (``Session.close``, as Volcano's cache records them after the status
update).

Arguments (``configurations: - name: allocate``): ``predicateErrorCacheEnable``
(default true), see :mod:`batchsched.actions.placement`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from batchsched.actions.hypernode_allocate import (
    Worksheet,
    allocate_in_hyper_nodes,
    uses_hyper_nodes,
    worksheet_of,
)
from batchsched.actions.placement import NodeSelector, Placement
from batchsched.actions.selector_action import SelectorAction
from batchsched.api.fit import FitError, FitErrors
from batchsched.api.job import JobInfo
from batchsched.api.node import NodeInfo
from batchsched.api.priority_queue import PriorityQueue
from batchsched.api.queue import QueueInfo
from batchsched.api.sub_job import SubJobInfo
from batchsched.api.task import TaskInfo
from batchsched.api.types import PodGroupPhase, TaskStatus
from batchsched.errors import SchedulingError
from batchsched.framework.network_topology import contains_network_topology
from batchsched.framework.statement import Statement

if TYPE_CHECKING:
    from batchsched.framework.session import Session

__all__ = ["AllocateAction"]

#: Action argument enabling the predicate-error cache (Volcano's key).



class AllocateAction(SelectorAction):
    """Volcano's allocate action.

    ``node_selector_factory`` builds the per-task node choice; replace it (on a
    subclass or an instance) to plug in another implementation of
    :class:`~batchsched.actions.placement.NodeSelector`.
    """

    name = "allocate"

    def execute(self, ssn: Session) -> None:
        """Run the allocate rounds over the session until no queue has work left."""
        run = _AllocateRun(ssn, lambda: self.new_selector(ssn))
        run.run()


class _AllocateRun:
    """One execution of the action: the queues, jobs and task lists it works through."""

    def __init__(self, ssn: Session, selector: Callable[[], NodeSelector]) -> None:
        self.ssn = ssn
        self._new_selector = selector
        self._selector: NodeSelector | None = None
        self.queues: PriorityQueue[QueueInfo] = ssn.queue_priority_queue()
        #: Each queue's jobs in job order, ranked when the queue's first job is asked
        #: for (:meth:`job_heap`); the queues whose turn has not come are in
        #: ``_unranked``.
        self.jobs_by_queue: dict[str, PriorityQueue[JobInfo]] = {}
        self._unranked: dict[str, list[JobInfo]] = {}
        self.tasks_by_job: dict[str, PriorityQueue[TaskInfo]] = {}
        #: The worksheets of the jobs placed through hypernodes and sub-jobs.
        self.worksheets: dict[str, Worksheet] = {}
        #: Volcano's recorder: job -> hypernode tried for the job -> sub-job -> the
        #: hypernode it went to within (kept for the whole action).
        self.sub_job_decisions: dict[str, dict[str, dict[str, str]]] = {}
        #: The jobs this execution took on, in session order (for the events).
        self.considered: list[JobInfo] = []
        self._build()

    def _build(self) -> None:
        ssn = self.ssn
        enqueue_configured = "enqueue" in ssn.configuration.actions
        queues = ssn.queues
        pending = TaskStatus.PENDING
        hyper_nodes_ready = ssn.hyper_nodes_ready
        # Each queue's jobs, in the order found: queued at once below (the same order
        # as pushing them one by one, for less).
        found: dict[str, list[JobInfo]] = {}
        for job in ssn.jobs.values():
            if job.is_pending():
                if enqueue_configured:
                    continue
                # Without enqueue nothing would ever admit the job: Volcano admits it here.
                job.podgroup.phase = PodGroupPhase.INQUEUE
            verdict = ssn.job_valid(job)
            if verdict is not None and not verdict.passed:
                continue
            queue = queues.get(job.queue)
            if queue is None:
                continue
            if not hyper_nodes_ready and contains_network_topology(job):
                continue  # Volcano: "hyperNodes are not ready for scheduling"
            for task in job.tasks_in(pending).values():
                if not task.resreq.is_empty() and not task.externally_gated:
                    break
            else:
                # Nothing to place here: best-effort tasks are backfill's business, and
                # pods another controller gates wait for it (Volcano's worksheet).
                continue
            jobs = found.get(job.queue)
            if jobs is None:
                jobs = found[job.queue] = []
                self.queues.push(queue)
            jobs.append(job)
            self.considered.append(job)
        self._unranked = found

    def job_heap(self, queue: str) -> PriorityQueue[JobInfo] | None:
        """The queue's jobs to place, in job order (None: the queue has none).

        Ranked when first asked for: strict-allocate's held head goes first, and
        while it stays blocked the rest of its queue is never ranked. Ranking later
        ranks alike: a queue's jobs change only once popped from it.
        """
        heap = self.jobs_by_queue.get(queue)
        if heap is None:
            jobs = self._unranked.pop(queue, None)
            if jobs is None:
                return None
            heap = self.jobs_by_queue[queue] = self.ssn.job_queue(jobs)
        return heap

    def has_jobs(self, queue: str) -> bool:
        """Whether the queue had jobs to place when the run began."""
        return queue in self.jobs_by_queue or queue in self._unranked

    def leave_out(self, queue: str, job: JobInfo) -> None:
        """Take ``job`` out of its queue's jobs.

        With a keyed (total) job order, leaving it out of the queue's jobs before
        they are ranked ranks the others alike. A compared order need not be total
        (NaN creation times tie with everything), and then the heap's shape decides:
        the queue is ranked with the job in it and the job taken out, as ever.
        """
        jobs = self._unranked.get(queue)
        if jobs is not None and self.ssn.job_order_key() is not None:
            self._unranked[queue] = [other for other in jobs if other is not job]
            return
        heap = self.job_heap(queue)
        if heap is not None:
            heap.discard(job)

    @property
    def selector(self) -> NodeSelector:
        """The node selector, built when the first task needs a node (a session whose
        jobs all wait never builds the node columns)."""
        if self._selector is None:
            self._selector = self._new_selector()
        return self._selector

    def tasks_of(self, job: JobInfo) -> PriorityQueue[TaskInfo]:
        """The job's pending tasks to place, in task order: built when the job's first
        round comes (a job whose turn never comes costs nothing), then kept."""
        tasks = self.tasks_by_job.get(job.uid)
        if tasks is None:
            tasks = self.ssn.task_queue(
                task for task in job.tasks_in(TaskStatus.PENDING).values()
                if not task.resreq.is_empty() and not task.externally_gated)
            self.tasks_by_job[job.uid] = tasks
        return tasks

    def run(self) -> None:
        ssn = self.ssn
        while self.queues:
            queue = self.queues.pop()
            if ssn.overused(queue):
                continue  # dropped for the rest of the action, as in Volcano
            jobs = self.job_heap(queue.name)
            if not jobs:
                continue
            job = jobs.pop()
            tasks = self.tasks_of(job)
            if self.allocate_job(queue, job, tasks) and self.has_work(job, tasks):
                jobs.push(job)
            self.queues.push(queue)

    def _on_nominated_node(self, task: TaskInfo, nodes: list[NodeInfo]) -> Placement | None:
        """The task's nominated node (where a preemption made room for it), tried before
        the others as Volcano's allocate and kube-scheduler do: when it is among
        ``nodes`` and holds the task in its future idle, the node choice runs on it
        alone (predicates through the error cache, the room kept for other nominees,
        idle before future idle); None when it does not take the task there."""
        if not task.nominated_node:
            return None
        node = self.ssn.nodes.get(task.nominated_node)
        if node is None or not task.init_resreq.less_equal(node.future_idle()):
            return None
        if not any(candidate is node for candidate in nodes):
            return None
        placement = self.selector.for_allocate(task, [node])
        return placement if placement.node is not None else None

    def worksheet(self, job: JobInfo) -> Worksheet:
        """The sub-jobs and tasks left to place of a job allocate places through
        hypernodes and sub-jobs (:mod:`batchsched.actions.hypernode_allocate`)."""
        sheet = self.worksheets.get(job.uid)
        if sheet is None:
            sheet = self.worksheets[job.uid] = worksheet_of(self.ssn, job,
                                                            lambda: self.tasks_of(job))
        return sheet

    def has_work(self, job: JobInfo, tasks: PriorityQueue[TaskInfo]) -> bool:
        """Whether the job has tasks left to place in this action."""
        if uses_hyper_nodes(job):
            return bool(self.worksheet(job))
        return bool(tasks)

    def allocate_job(
        self, queue: QueueInfo, job: JobInfo, tasks: PriorityQueue[TaskInfo]
    ) -> bool:
        """One round for one job: place tasks until it is ready, then commit the
        statement if the job is ready (returning True), keep it if the job is only
        pipelined, else discard it."""
        if uses_hyper_nodes(job):
            return allocate_in_hyper_nodes(self, queue, job)
        stmt = self.place_tasks(queue, job, tasks, self.ssn.node_list)
        if stmt is not None and stmt.job_was_ready:
            stmt.commit()
            return True
        # A pipelined-only statement is neither committed nor discarded: its tasks
        # keep their places for the rest of the session.
        return False

    def place_tasks(
        self, queue: QueueInfo, job: JobInfo, tasks: PriorityQueue[TaskInfo],
        nodes: list[NodeInfo], hyper_node: str = "", *, sub_job: SubJobInfo | None = None,
    ) -> PlacedTasks | None:
        """Place the tasks (task order) on ``nodes`` until the job (or ``sub_job``)
        is ready: the statement when it ends ready or pipelined, else None (undone).
        Volcano's ``allocateResourcesForTasks``; ``hyper_node`` names the hypernode
        whose nodes these are (fit errors say so) when a topology confines the job."""
        ssn = self.ssn
        if not nodes:
            return None
        stmt = PlacedTasks(ssn)
        ready = False
        self.selector.new_cache_scope()
        # A job with sub-group policies is judged sub-job by sub-job; any other as a whole.
        split = sub_job if job.podgroup.sub_group_policies else None
        if sub_job is None:
            topology_aware = job.network_topology is not None
            lies_within = job.sub_job_hyper_node(job.uid)
        else:
            topology_aware = ssn.sub_job_topology(job, sub_job) is not None
            lies_within = job.sub_job_hyper_node(sub_job.uid)

        def is_ready() -> bool:
            return ssn.job_ready(job) if split is None else ssn.sub_job_ready(job, split)

        def goes_on() -> bool:
            return job.need_continue_allocating() if split is None \
                else _sub_job_goes_on(job, split)

        while tasks:
            task = tasks.pop()
            if not ssn.allocatable(queue, task):
                continue
            if task.scheduling_gated:
                continue  # Volcano's own gate: it waits until the gate is lifted
            if (job.task_has_fit_errors(task) if split is None
                    else _sub_job_has_fit_errors(job, split, task)):
                skipped = FitErrors()
                skipped.set_error(
                    f"Task {task.name} with role spec {task.role} has already predicated "
                    "failed, skip"
                )
                job.nodes_fit_errors[task.uid] = skipped
                continue
            refusal = ssn.pre_predicate(task)
            if refusal is not None:
                job.nodes_fit_errors[task.uid] = _same_error_on_every_node(refusal, nodes)
                if goes_on():
                    continue
                break
            if topology_aware:
                task.job_allocated_hyper_node = lies_within
            placement = self._on_nominated_node(task, nodes) or self.selector.for_allocate(
                task, nodes)
            if placement.unscored:
                # Nodes passed but could not be scored: Volcano's allocate goes on to
                # the next task and records no fit error, whatever the gang still needs.
                continue
            if placement.node is None:
                # Volcano sets it only once some node passed: a task left pending has none.
                task.job_allocated_hyper_node = ""
                if hyper_node:
                    placement.fit_errors.hyper_node = hyper_node
                job.nodes_fit_errors[task.uid] = placement.fit_errors
                if goes_on():
                    continue
                break
            try:
                if placement.pipelined:
                    stmt.pipeline(task, placement.node)
                else:
                    stmt.allocate(task, placement.node)
            except SchedulingError:
                # The statement already rolled the task back; Volcano logs and moves on.
                continue
            if topology_aware:
                lies_within = ssn.topology.lca(lies_within,
                                               ssn.topology.leaf_of(placement.node.name))
            if is_ready():
                ready = True  # nothing changes the job before the commit: no need to ask again
                break
        if ready or is_ready():
            stmt.job_was_ready = True
            return stmt
        if ssn.job_pipelined(job) if split is None else ssn.sub_job_pipelined(job, split):
            return stmt
        stmt.discard()
        return None


def _sub_job_goes_on(job: JobInfo, sub_job: SubJobInfo) -> bool:
    """Volcano's ``NeedContinueAllocating`` for a job with sub-group policies: on
    after a failed task unless every task of the job, or of the sub-job, is needed."""
    if job.min_available == len(job.tasks):
        return False
    return sub_job.min_available < len(sub_job.tasks)


def _sub_job_has_fit_errors(job: JobInfo, sub_job: SubJobInfo, task: TaskInfo) -> bool:
    """A role-bearing task whose role already failed in the same sub-job."""
    if not task.role:
        return False
    return any(uid in sub_job.tasks and sub_job.tasks[uid].role == task.role
               for uid in job.nodes_fit_errors)


class PlacedTasks(Statement):
    """A statement of placements, knowing whether they left the job ready."""

    job_was_ready = False


def _same_error_on_every_node(err: FitError, nodes: list[NodeInfo]) -> FitErrors:
    errors = FitErrors()
    for node in nodes:
        errors.set_node_error(
            node.name, FitError(err.task_namespace, err.task_name, node.name, list(err.statuses))
        )
    return errors


