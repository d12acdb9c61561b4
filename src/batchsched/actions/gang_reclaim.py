"""The gangreclaim action: starving jobs take back whole victim sets from other queues.

Volcano's ``actions/gangreclaim``: reclaim's job-level counterpart, as
gangpreempt is preempt's. Every queue with a valid, non-Pending job takes
part, in queue order; an overused queue (``ssn.overused``) is skipped. Its
starving jobs in job order each get a statement, committed if the job is then
pipelined and discarded otherwise. For one job:

1. **Need.** Its Pending tasks that request resources, in task order; nothing
   is done unless the job's queue may reclaim for them all at once
   (``ssn.preemptive_all``).
2. **Candidates.** On the domain's nodes, Running tasks marked preemptable, of
   jobs in *other* queues whose ``reclaimable`` is not false, from jobs whose pod
   group does not say ``volcano.sh/preemptable: "false"``.
3. **Bundles** per victim job, safe then whole
   (:mod:`batchsched.actions.gang_eviction`), ranked safe first, then by the
   victim-queue order as seen from the reclaimer's queue
   (``ssn.victim_queue_order_fn``), then return on investment.
   ``ssn.unified_evictable`` (kind ``GangReclaim``) filters the candidates; with
   ``allowWholeBundle: false`` whole bundles are dropped.
4. **Dry run** as in gangpreempt: bundles accumulate until the domain's idle +
   releasing + victims cover the need, then the victims are evicted and every
   pending task is pipelined; the first plan after which the job is pipelined is
   kept.

``preemptionPolicy: Never`` is not consulted, as in Volcano.

Events: each committed eviction records a Warning ``Evict`` "Pod is evicted,
because of gangreclaim" on the pod and a Normal ``Evict`` "gangreclaim" on its
pod group.

Domains are hypernodes as for gangpreempt. Differences from Volcano: as for
gangpreempt (no sub-groups, no nominated hypernode, no eviction-transaction
metric). The pending tasks are judged together (``ssn.preemptive_all``:
proportion and capacity sum their requests, as Volcano's ``Preemptive`` does);
a third-party preemptive function without a ``many`` form judges them one by
one.
"""

from __future__ import annotations

from batchsched.actions.gang_eviction import Bundle, GangEvictionAction, OwnerLess, gang_evictable
from batchsched.api.job import JobInfo
from batchsched.api.queue import QueueInfo
from batchsched.api.task import TaskInfo
from batchsched.api.types import TaskStatus
from batchsched.framework.events import EvictionKind
from batchsched.framework.session import Session

__all__ = ["GangReclaimAction"]


class GangReclaimAction(GangEvictionAction):
    """Volcano's gangreclaim action; arguments as for
    :class:`~batchsched.actions.gang_eviction.GangEvictionAction` (``maxDomains``,
    ``allowWholeBundle``)."""

    name = "gangreclaim"
    kind = EvictionKind.GANG_RECLAIM

    def skips_queue(self, ssn: Session, queue: QueueInfo) -> bool:
        """An overused queue reclaims nothing."""
        return ssn.overused(queue)

    def may_evict_for(self, ssn: Session, queue: QueueInfo, pending: list[TaskInfo]) -> bool:
        """The queue may reclaim for the pending tasks together (``ssn.preemptive_all``)."""
        return ssn.preemptive_all(queue, pending)

    def is_candidate(self, ssn: Session, evictor: JobInfo, task: TaskInfo) -> bool:
        """Running, preemptable, of a job of another, reclaimable queue that allows
        gang eviction."""
        if task.status is not TaskStatus.RUNNING or not task.preemptable:
            return False
        owner = ssn.jobs.get(task.job)
        if owner is None or owner.queue == evictor.queue or not gang_evictable(owner):
            return False
        queue = ssn.queues.get(owner.queue)
        return queue is not None and queue.reclaimable

    def owner_less(self, ssn: Session, evictor: JobInfo) -> OwnerLess:
        """Victim-queue order from the reclaimer's queue (queue order without one);
        bundles of one queue are not told apart here."""
        queues = ssn.queues
        reclaimer_queue = queues.get(evictor.queue)

        def less(left: Bundle, right: Bundle) -> bool:
            lq, rq = queues.get(left.job.queue), queues.get(right.job.queue)
            if lq is None or rq is None or lq.uid == rq.uid:
                return False
            if reclaimer_queue is None:
                return ssn.queue_order_fn(lq, rq)
            return ssn.victim_queue_order_fn(lq, rq, reclaimer_queue)

        return less
