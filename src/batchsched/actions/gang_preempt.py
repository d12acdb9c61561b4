"""The gangpreempt action: starving jobs evict whole victim sets of their own queue.

Volcano's ``actions/gangpreempt``. Where preempt makes room one preemptor task
and one node at a time, gangpreempt decides for a starving job as a whole:
which victims, across the domain's nodes, make room for all its pending tasks
at once, preferring victims whose own gangs survive.

Every queue with a valid, non-Pending job takes part, in queue order; its
starving jobs (``ssn.job_starving``) in job order each get a statement,
committed if the job is then pipelined (``ssn.job_pipelined``) and discarded
otherwise. For one job:

1. **Need.** Its Pending tasks that request resources, in task order; their
   summed requests are the need.
2. **Candidates.** On the domain's nodes, Bound or Running tasks marked
   preemptable, of *other* jobs of the *same* queue whose job priority is lower
   than the preemptor's, from jobs whose pod group does not say
   ``volcano.sh/preemptable: "false"`` (a pod group that says nothing allows it).
3. **Bundles** per victim job, safe then whole
   (:mod:`batchsched.actions.gang_eviction`), ranked safe first, then by reverse
   job order (the job that would be scheduled last goes first), then return on
   investment. ``ssn.unified_evictable`` (kind ``GangPreempt``) filters the
   candidates; a whole bundle survives only if all its tasks do. With
   ``allowWholeBundle: false`` whole bundles are dropped.
4. **Dry run.** Bundles accumulate in rank order; once idle + releasing + the
   victims' requests cover the need, the victims are evicted and every pending
   task is pipelined on the domain (:func:`~batchsched.actions.gang_eviction.plan_in_domain`);
   the first such plan after which the job is pipelined is kept.

Unlike preempt, a best-effort preemptor is not barred from non-best-effort
victims and ``preemptionPolicy: Never`` is not consulted: ``unified_evictable``
decides eligibility (as in Volcano).

Events: each committed eviction records a Warning ``Evict`` "Pod is evicted,
because of gangpreempt" on the pod and a Normal ``Evict`` "gangpreempt" on its
pod group.

Domains: the network-topology gradients' hypernodes for a job with a hard
topology, the whole cluster for the others (see
:mod:`batchsched.actions.gang_eviction`); the eviction context names the domain.

Differences from Volcano: batchsched does not keep the hypernode a plan chose as
the job's nominated hypernode for a later allocate of the same session (the
pipelined tasks keep their nodes), and nominates only tasks pipelined where a victim
was evicted; Volcano's eviction-transaction metric is not kept. Jobs are collected in job
order rather than Go map order.
"""

from __future__ import annotations

from batchsched.actions.gang_eviction import Bundle, GangEvictionAction, OwnerLess, gang_evictable
from batchsched.api.job import JobInfo
from batchsched.api.task import TaskInfo
from batchsched.api.types import PREEMPTABLE_STATUSES
from batchsched.framework.events import EvictionKind
from batchsched.framework.session import Session

__all__ = ["GangPreemptAction"]


class GangPreemptAction(GangEvictionAction):
    """Volcano's gangpreempt action; arguments as for
    :class:`~batchsched.actions.gang_eviction.GangEvictionAction` (``maxDomains``,
    ``allowWholeBundle``)."""

    name = "gangpreempt"
    kind = EvictionKind.GANG_PREEMPT

    def is_candidate(self, ssn: Session, evictor: JobInfo, task: TaskInfo) -> bool:
        """Bound or Running, preemptable, of a lower-priority job of the same queue
        that allows gang eviction."""
        if task.status not in PREEMPTABLE_STATUSES or not task.preemptable:
            return False
        if task.job == evictor.uid:
            return False
        owner = ssn.jobs.get(task.job)
        return (
            owner is not None
            and owner.queue == evictor.queue
            and gang_evictable(owner)
            and owner.priority < evictor.priority
        )

    def owner_less(self, ssn: Session, evictor: JobInfo) -> OwnerLess:
        """Reverse job order: the job that would be scheduled last gives first."""

        def less(left: Bundle, right: Bundle) -> bool:
            return not ssn.job_order_fn(left.job, right.job)

        return less
