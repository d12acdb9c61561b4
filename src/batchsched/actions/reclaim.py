"""The reclaim action: starving jobs take back resources other queues hold.

Volcano's ``actions/reclaim``. Every queue that has a valid, non-Pending job
takes part, in queue order (``ssn.queue_order_fn``):

* an overused queue (``ssn.overused``) is skipped;
* its starving jobs, in job order, each get a statement (after each job, while
  jobs remain, the queue is pushed back, as in Volcano: its later pop finds no job
  left, but re-ranks the other queues by the shares the evictions left); while the job
  starves, its Pending tasks in task order reclaim; the statement is committed
  if the job is then pipelined (``ssn.job_pipelined``) and discarded otherwise;
* a task is skipped when its ``preemptionPolicy`` is ``Never``, when its queue
  may not reclaim for it (``ssn.preemptive``), or when ``ssn.pre_predicate``
  rejects it.

For one task, nodes are tried in session node order (no scoring) among those
passing the preempt predicate. On a node the candidates are the Running,
preemptable tasks of jobs in *other* queues whose ``reclaimable`` is not false;
the tiered Reclaimable rule (``ssn.reclaimable``) decides which may go, the
victim order (``ssn.build_victims_priority_queue``, a heap popped one victim at a
time, so an eviction's effect on the shares can reorder the rest) in which order.
The node's
future idle counts first: victims are evicted only while the task's request
does not fit what is free plus what was evicted. A node with no candidate at all
is passed over, even if it has room (Volcano does the same). Evictions happen in
a temporary statement per node, merged into the job's statement when the task
is pipelined there and discarded otherwise.

Events: each committed eviction records a Warning ``Evict`` "Pod is evicted,
because of reclaim" on the pod and a Normal ``Evict`` "reclaim" on its pod
group (Volcano's wording).
"""

from __future__ import annotations

from batchsched.actions.node_search import shard_groups, soft_sharded
from batchsched.actions.selector_action import PREDICATE_ERROR_CACHE_KEY
from batchsched.actions.victims import (
    RECLAIM_REASON,
    NodePredicates,
    candidates_on_node,
    commit_with_events,
    eviction_room,
    in_victim_order,
    lazy_victims,
    pending_tasks,
    queues_and_starving_jobs,
    validate_victims,
    worth_visiting,
)
from batchsched.api.job import JobInfo
from batchsched.api.node import NodeInfo
from batchsched.api.priority_queue import PriorityQueue
from batchsched.api.queue import QueueInfo
from batchsched.api.task import TaskInfo
from batchsched.api.types import TaskStatus
from batchsched.columnar.eviction_room import EvictionRoom
from batchsched.errors import SchedulingError
from batchsched.framework.arguments import Arguments
from batchsched.framework.session import Session
from batchsched.framework.statement import Statement

__all__ = ["ReclaimAction"]


class ReclaimAction:
    """Volcano's reclaim action. Arguments (the action's ``configurations`` entry):

    ``predicateErrorCacheEnable`` (bool, default true)
        accepted for compatibility; as in Volcano each task scans the nodes with a
        fresh predicate cache, so it changes nothing.
    """

    name = "reclaim"

    def __init__(self, arguments: Arguments | None = None) -> None:
        args = arguments if arguments is not None else Arguments()
        self.cache_predicate_errors = args.get_bool(PREDICATE_ERROR_CACHE_KEY, True,
                                                    owner=self.name)
        args.warn_unknown(self.name, [PREDICATE_ERROR_CACHE_KEY], kind="action")

    def initialize(self) -> None:
        """Nothing to prepare: the action keeps no state between sessions."""

    def uninitialize(self) -> None:
        """Nothing to release."""

    def execute(self, ssn: Session) -> None:
        """Visit every queue with a valid, non-Pending job, in queue order."""
        queues, starving, found = queues_and_starving_jobs(ssn)
        reclaimers = {job.uid: pending_tasks(ssn, job) for job in found}
        room = eviction_room(ssn, "reclaimable")

        while queues:
            queue = queues.pop()
            if ssn.overused(queue):
                continue
            jobs = starving.get(queue.name)
            while jobs:
                job = jobs.pop()
                self._reclaim_for_job(ssn, queue, job, reclaimers[job.uid], room)
                # As Volcano: pushed back while jobs remain, though this visit drains
                # them. The later pop finds none, but its sift ranks the other queues
                # by the shares the evictions left, which decides who reclaims next.
                if jobs:
                    queues.push(queue)

    def _reclaim_for_job(
        self, ssn: Session, queue: QueueInfo, job: JobInfo, tasks: PriorityQueue[TaskInfo],
        room: EvictionRoom | None,
    ) -> None:
        stmt = Statement(ssn)
        while ssn.job_starving(job) and tasks:
            task = tasks.pop()
            if task.never_preempts:
                if ssn.recorder is not None:
                    ssn.recorder.note(task.uid, self.name, "its preemptionPolicy is Never: "
                                      "no pod is evicted for it")
                continue
            if not ssn.preemptive(queue, task):
                continue
            if ssn.pre_predicate(task) is not None:
                continue
            self._reclaim_for_task(ssn, stmt, task, job, room)
        if ssn.job_pipelined(job):
            commit_with_events(ssn, stmt)
        else:
            stmt.discard()

    def _reclaim_for_task(
        self, ssn: Session, stmt: Statement, task: TaskInfo, job: JobInfo,
        room: EvictionRoom | None,
    ) -> None:
        ssn.note_preemption_tried(task)
        predicates = NodePredicates(ssn, cache_errors=self.cache_predicate_errors)

        def reclaimee(held: TaskInfo) -> bool:
            if held.status is not TaskStatus.RUNNING or not held.preemptable:
                return False
            owner = ssn.jobs.get(held.job)
            if owner is None or owner.queue == job.queue:
                return False
            owner_queue = ssn.queues.get(owner.queue)
            return owner_queue is not None and owner_queue.reclaimable

        # Sharded soft, the shard's nodes first.
        feasible = predicates.feasible_nodes(task)
        if soft_sharded(ssn):
            feasible = [node for group in shard_groups(ssn, feasible) for node in group]
        for node in worth_visiting(ssn, room, task, feasible):
            candidates = candidates_on_node(ssn, task, node, reclaimee)
            if not candidates:
                continue
            victims = in_victim_order(ssn.reclaimable(task, candidates), candidates)
            if not validate_victims(task, node, victims):
                continue
            if self._reclaim_on_node(ssn, stmt, task, node, victims):
                return

    @staticmethod
    def _reclaim_on_node(
        ssn: Session, stmt: Statement, task: TaskInfo, node: NodeInfo, victims: list[TaskInfo]
    ) -> bool:
        """Evict ``victims`` (in victim order) until the task fits the node's future
        idle plus what was evicted, then pipeline it there; False (and nothing kept)
        if it never fits or the node refuses it."""
        available = node.future_idle()
        node_stmt = Statement(ssn)
        pending_victims = lazy_victims(ssn, task, victims)
        while pending_victims:
            if task.init_resreq.less_equal(available):
                break
            victim = pending_victims.pop()
            node_stmt.evict(victim, RECLAIM_REASON)
            available.add(victim.resreq)
        if task.init_resreq.less_equal(available):
            try:
                node_stmt.pipeline(task, node, eviction_occurred=node_stmt.has_evictions())
            except SchedulingError:
                pass
            else:
                stmt.merge(node_stmt)
                return True
        node_stmt.discard()
        return False
