"""drf: Dominant Resource Fairness between jobs (Volcano's ``drf`` plugin).

A job's *share* is the largest, over the cluster's resources, of what the job
holds divided by the cluster total (its dominant share). The plugin decides:

* job order: lower share first (equal shares leave the decision to the next
  plugin);
* preemptable: a candidate may be evicted when the preemptor's share after
  taking its request stays at or below (within 1e-6) the victim job's share
  after giving the candidate up; candidates of one job are taken away
  cumulatively within one call;
* allocate/deallocate events keep the shares current.

With ``enableHierarchy: true`` on the plugin entry (hierarchical DRF, see
:mod:`batchsched.plugins.drf.hierarchy`) it also decides:

* queue order: along the queues' ``volcano.sh/hierarchy`` paths, unsaturated
  subtrees first, then lower ``share / weight``;
* reclaimable: a candidate may be evicted when, with the reclaimer's request
  added and the candidate removed, the reclaimer's queue would still come first.

The plugin takes no arguments (any given is logged as a warning and ignored).
"""

from __future__ import annotations

import functools

import numpy as np

from batchsched.api.job import JobInfo
from batchsched.api.queue import QueueInfo
from batchsched.api.queue_accounting import dominant_share
from batchsched.api.resource import MIN_RESOURCE, Resource
from batchsched.api.task import TaskInfo
from batchsched.api.types import ALLOCATED_STATUSES
from batchsched.columnar.node_columns import BoolArray
from batchsched.columnar.victim_rows import VictimRows, add_preemptable_bound_fn
from batchsched.framework.arguments import Arguments
from batchsched.framework.events import Event, EventHandler
from batchsched.framework.session import Session
from batchsched.plugins.drf.hierarchy import (
    HierarchyNode,
    JobShare,
    ShareTree,
    compare_queue_paths,
)

__all__ = ["SHARE_DELTA", "DrfPlugin"]

#: Shares closer than this count as equal in the preemptable test.
SHARE_DELTA = 1e-6
#: Room left on the safe side when a victim bound compares shares (see victim_bound).
_BOUND_SLACK = 1e-9


class DrfPlugin:
    """Dominant Resource Fairness; hierarchical with ``enableHierarchy``."""

    name = "drf"

    def __init__(self, arguments: Arguments) -> None:
        self.arguments = arguments
        arguments.warn_unknown(self.name)
        self.total = Resource()
        self.total_allocated = Resource()
        self.jobs: dict[str, JobShare] = {}
        self.tree = ShareTree()
        self.hierarchy = False
        self._ssn: Session | None = None
        #: The state every job holding nothing shares (read-only; see on_session_open).
        self._idle = JobShare()

    # -- shares -----------------------------------------------------------------------

    def share_of(self, allocated: Resource) -> float:
        """The dominant share of ``allocated`` in the session's total resources."""
        return dominant_share(allocated, self.total)

    def job_share(self, job_uid: str) -> float:
        """The job's current share (0 for a job the plugin does not know)."""
        state = self.jobs.get(job_uid)
        return state.share if state is not None else 0.0

    def _demanding(self, total_allocated: Resource) -> set[str]:
        return {name for name in self.total.resource_names()
                if total_allocated.get(name) < self.total.get(name)}

    @property
    def root(self) -> HierarchyNode:
        """The root of the hierarchical share tree."""
        return self.tree.root

    def _update_tree(
        self, tree: ShareTree, total_allocated: Resource, job: JobInfo, state: JobShare,
        queue: QueueInfo,
    ) -> None:
        tree.update_job(job.uid, state, job.total_request, hierarchy=queue.hierarchy,
                        weights=queue.weights, demanding=self._demanding(total_allocated),
                        share_of=self.share_of)

    # -- session ----------------------------------------------------------------------

    def on_session_open(self, ssn: Session) -> None:
        self._ssn = ssn
        self.total = ssn.total_resource.clone()
        option = ssn.configuration.plugin_option(self.name)
        self.hierarchy = option is not None and option.hierarchy
        placed = False
        # Without hierarchy, the jobs holding nothing share one state until an
        # allocation moves theirs (:meth:`_move`): most jobs of a large queue wait.
        idle = self._idle = JobShare()
        idle.share = self.share_of(idle.allocated)
        for job in ssn.jobs.values():
            state: JobShare | None = None
            for status, tasks in job.task_status_index.items():
                if status in ALLOCATED_STATUSES and tasks:
                    if state is None:
                        state = JobShare()
                    for task in tasks.values():
                        state.allocated.add(task.resreq)
            if state is not None:
                state.share = self.share_of(state.allocated)
            elif self.hierarchy:
                state = JobShare(share=idle.share)  # the share tree keeps each job's own
            else:
                state = idle
            self.jobs[job.uid] = state
            queue = ssn.queues.get(job.queue)
            if self.hierarchy and queue is not None:
                self.total_allocated.add(state.allocated)
                self.tree.place(job.uid, state, job.total_request,
                                hierarchy=queue.hierarchy, weights=queue.weights)
                placed = True
        if placed:
            # Placing every job and computing once gives what computing after each
            # placement gives in the end: the last computation redoes every node.
            self.tree.recompute(self._demanding(self.total_allocated), self.share_of)

        ssn.add_preemptable_fn(self.name, self.preemptable)
        add_preemptable_bound_fn(ssn, self.name, self.victim_bound)
        if self.hierarchy:
            ssn.add_queue_order_fn(self.name, self.queue_order)
            ssn.add_reclaimable_fn(self.name, self.reclaimable)
        ssn.add_job_order_key_fn(self.name, self.job_order_key)
        ssn.add_event_handler(EventHandler(
            allocate=self._on_allocate, deallocate=self._on_deallocate, plugin=self.name,
        ))

    def on_session_close(self, ssn: Session) -> None:
        self.jobs = {}
        self.total = Resource()
        self.total_allocated = Resource()
        self.tree = ShareTree()
        self._ssn = None

    # -- decisions --------------------------------------------------------------------

    def job_order_key(self, job: JobInfo) -> float:
        """The job's dominant share: its job order key (lower share first)."""
        state = self.jobs.get(job.uid)
        return state.share if state is not None else 0.0

    def job_order(self, left: JobInfo, right: JobInfo) -> int:
        """Lower share first; equal shares are a tie (0)."""
        # job_share twice, written out: asked at every step of allocate's job heaps.
        jobs = self.jobs
        lstate, rstate = jobs.get(left.uid), jobs.get(right.uid)
        lshare = lstate.share if lstate is not None else 0.0
        rshare = rstate.share if rstate is not None else 0.0
        if lshare == rshare:
            return 0
        return -1 if lshare < rshare else 1

    def preemptable(self, preemptor: TaskInfo, candidates: list[TaskInfo]) -> list[TaskInfo]:
        """Candidates whose job, without them, keeps a share at least the preemptor's
        job would have with the preemptor's request added."""
        own = self.jobs.get(preemptor.job)
        if own is None:
            return []
        preemptor_share = self.share_of(own.allocated.clone().add(preemptor.resreq))
        remaining: dict[str, Resource] = {}
        victims: list[TaskInfo] = []
        for candidate in candidates:
            state = self.jobs.get(candidate.job)
            if state is None:
                continue
            # Volcano takes every candidate off its job's allocation, victim or not.
            left = remaining.setdefault(candidate.job, state.allocated.clone())
            left.sub_unchecked(candidate.resreq)
            victim_share = self.share_of(left)
            if preemptor_share < victim_share or abs(preemptor_share - victim_share) <= SHARE_DELTA:
                victims.append(candidate)
        return victims

    def victim_bound(self, preemptor: TaskInfo, rows: VictimRows) -> BoolArray:
        """The rows :meth:`preemptable` might return for ``preemptor``: a candidate is
        taken when its job's share without it (and without the job's candidates
        before it, which only lowers the share) is at least the preemptor's, so a
        row whose job's share without that row alone is below falls out.

        Over the dimensions of the total, as :func:`dominant_share` reads them; the
        float operations are the same (one subtraction, one division per dimension)
        and a small slack keeps the bound on the safe side of the comparison."""
        nothing = np.zeros(len(rows.job), dtype=np.bool_)
        own = self.jobs.get(preemptor.job)
        if own is None:
            return nothing
        preemptor_share = self.share_of(own.allocated.clone().add(preemptor.resreq))
        known = rows.per_job("drf.known", self._known)[rows.job] > 0
        share = np.zeros(len(rows.job))
        index = rows.columns.dimension_index
        for name in self.total.resource_names():
            deserved = self.total.get(name)
            if deserved < MIN_RESOURCE:
                continue
            allocated = rows.per_job(f"drf.allocated.{name}", functools.partial(
                self._allocated, name=name))
            at = index.get(name)
            request = rows.request[at] if at is not None else 0.0
            share = np.maximum(share, (allocated[rows.job] - request) / deserved)
        possible: BoolArray = known & (preemptor_share <= share + SHARE_DELTA + _BOUND_SLACK)
        return possible

    def _allocated(self, uid: str, name: str) -> float:
        state = self.jobs.get(uid)
        return state.allocated.get(name) if state is not None else 0.0

    def _known(self, uid: str) -> float:
        return 1.0 if uid in self.jobs else 0.0

    def queue_order(self, left: QueueInfo, right: QueueInfo) -> int:
        """Hierarchical order of two queues (only registered with hierarchy)."""
        result = compare_queue_paths(self.root, left.hierarchy, right.hierarchy)
        if result < 0:
            return -1
        return 1 if result > 0 else 0

    def reclaimable(self, reclaimer: TaskInfo, candidates: list[TaskInfo]) -> list[TaskInfo]:
        """Candidates whose removal (each judged alone) keeps the reclaimer's queue ahead
        of the candidate's queue once the reclaimer's request is added."""
        ssn = self._ssn
        assert ssn is not None
        job = ssn.jobs.get(reclaimer.job)
        queue = ssn.queues.get(job.queue) if job is not None else None
        own = self.jobs.get(reclaimer.job)
        if job is None or queue is None or own is None:
            return []
        tree = self.tree.clone()
        total_allocated = self.total_allocated.clone().add(reclaimer.resreq)
        grown = JobShare(own.allocated.clone().add(reclaimer.resreq))
        grown.share = self.share_of(grown.allocated)
        self._update_tree(tree, total_allocated, job, grown, queue)
        victims: list[TaskInfo] = []
        for candidate in candidates:
            victim_job = ssn.jobs.get(candidate.job)
            victim_queue = ssn.queues.get(victim_job.queue) if victim_job is not None else None
            state = self.jobs.get(candidate.job)
            if victim_job is None or victim_queue is None or state is None:
                continue
            total_allocated.sub_unchecked(candidate.resreq)
            shrunk = JobShare(state.allocated.clone().sub_unchecked(candidate.resreq))
            shrunk.share = self.share_of(shrunk.allocated)
            self._update_tree(tree, total_allocated, victim_job, shrunk, victim_queue)
            result = compare_queue_paths(tree.root, queue.hierarchy, victim_queue.hierarchy)
            total_allocated.add(candidate.resreq)
            shrunk.allocated.add(candidate.resreq)
            shrunk.share = self.share_of(shrunk.allocated)
            self._update_tree(tree, total_allocated, victim_job, shrunk, victim_queue)
            if result < 0:
                victims.append(candidate)
        return victims

    # -- events -----------------------------------------------------------------------

    def _on_allocate(self, event: Event) -> None:
        self._move(event.task, +1)

    def _on_deallocate(self, event: Event) -> None:
        self._move(event.task, -1)

    def _move(self, task: TaskInfo, sign: int) -> None:
        ssn = self._ssn
        state = self.jobs.get(task.job)
        job = ssn.jobs.get(task.job) if ssn is not None else None
        if ssn is None or state is None or job is None:
            return
        if state is self._idle:
            state = self.jobs[task.job] = JobShare(share=state.share)
        if sign > 0:
            state.allocated.add(task.resreq)
        else:
            state.allocated.sub_unchecked(task.resreq)
        state.share = self.share_of(state.allocated)
        if not self.hierarchy:
            return
        queue = ssn.queues.get(job.queue)
        if queue is not None:
            if sign > 0:
                self.total_allocated.add(task.resreq)
            else:
                self.total_allocated.sub_unchecked(task.resreq)
            self._update_tree(self.tree, self.total_allocated, job, state, queue)
