"""capacity: queues with a set deserved share, a capability limit and a guarantee
(Volcano's ``capacity`` plugin), flat or hierarchical.

Unlike proportion, a queue's ``deserved`` is written in its spec (capped by its
realCapability, raised to its guarantee); the figures are built by
:mod:`batchsched.plugins.capacity.hierarchy`. A queue's share is the largest
allocated / deserved over deserved's dimensions, and 1 for a queue without
deserved (best effort). The plugin decides:

* queue order: higher ``priority`` first, then lower share, then a queue with
  deserved before one without. With hierarchy, leaves go before inner queues and
  two leaves compare through their ancestors just below the deepest one they
  share (siblings compare themselves); inner-queue shares are those of session
  open;
* victim queue order (hierarchy only): victims of queues closer in the tree to
  the reclaimer's queue first;
* allocatable: the queue is Open, a leaf, and allocated + request <=
  realCapability on the requested dimensions, for the queue and every ancestor;
* job enqueueable: Open leaf, and minResources + allocated + inqueue - elastic
  <= realCapability on minResources' dimensions, for the queue and every
  ancestor; job enqueued adds minResources to their inqueue;
* preemptive (may this queue reclaim): allocated + request <= realCapability
  (the queue only), and allocated + request <= deserved on at least one
  requested dimension, of the queue or, with ``ancestorReclaimLevel`` = L > 0,
  of one of its L nearest non-root ancestors;
* reclaimable: candidates taken in victim order; a candidate is skipped when it
  shares no dimension (other than pods) with the reclaimer, or when taking it
  would leave its queue below its guarantee; it is a victim when its queue's
  deserved has none of its dimensions, or its queue's running allocation
  exceeds deserved on one of its dimensions. With L > 0, each of the victim's L
  nearest non-root ancestors not shared with the reclaimer at the same depth
  must exceed its deserved too, and a victim of a queue without deserved that
  shares a non-root ancestor with the reclaimer is spared when the reclaimer's
  own deserved has none of its dimensions;
* allocate/deallocate events keep allocated (and the queue's share) current;
* unified evictable (gang-level evictions, which ``gangpreempt`` and
  ``gangreclaim`` ask): a gang preemption may take any candidate; a gang reclaim
  applies the guarantee and deserved tests above;
* the simulation hooks of topology-aware preemption.

Argument: ``ancestorReclaimLevel`` (int, default 0; negative reads as 0; a value
that is not an integer is logged as a warning and reads as 0, Volcano's fallback).
When the hierarchy is not ready (see :mod:`~batchsched.plugins.capacity.hierarchy`)
every check refuses and no order is registered.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

from batchsched.api.dra_usage import add_amounts, device_resources
from batchsched.api.job import JobInfo
from batchsched.api.node import NodeInfo
from batchsched.api.queue import QueueInfo
from batchsched.api.queue_accounting import (
    SimulationSnapshots,
    deduct_scheduling_gated,
    format_resource_names,
    greater_partly_in_relevant_dimensions,
    intersection,
    job_min_resources,
    less_equal_partly_zero_filtered,
)
from batchsched.api.resource import DimensionDefault, Resource
from batchsched.api.task import TaskInfo
from batchsched.api.types import ALLOCATED_STATUSES, Vote
from batchsched.errors import DryRunError
from batchsched.framework.arguments import Arguments
from batchsched.framework.events import Event, EventHandler, EvictionContext, EvictionKind
from batchsched.framework.recording import QueueQuota
from batchsched.framework.session import Session
from batchsched.plugins.capacity.devices import (
    DRA_RESOURCE_EXCEEDED,
    DeviceQuota,
    Devices,
    job_min_devices,
)
from batchsched.plugins.capacity.hierarchy import (
    ROOT,
    CapacityQueue,
    HierarchyError,
    ancestor_at_depth,
    build_flat,
    build_hierarchy,
    common_level,
    shares_non_root_ancestor,
)

__all__ = ["ANCESTOR_RECLAIM_LEVEL", "CapacityPlugin", "compare_share_with_deserved"]

log = logging.getLogger("batchsched")

ANCESTOR_RECLAIM_LEVEL = "ancestorReclaimLevel"
DRA_ENABLE = "capacity.DynamicResourceAllocationEnable"
#: Volcano's switch for quotas on the capacities of devices (consumable capacity).
DRA_CONSUMABLE_CAPACITY_ENABLE = "capacity.DRAConsumableCapacityEnable"
_ZERO = DimensionDefault.ZERO


def compare_share_with_deserved(left: CapacityQueue, right: CapacityQueue) -> int:
    """Lower share first; equal shares: a queue with deserved before one without."""
    if left.share == right.share:
        lhas, rhas = not left.deserved.is_empty(), not right.deserved.is_empty()
        if lhas == rhas:
            return 0
        return -1 if lhas else 1
    return -1 if left.share < right.share else 1


def _within_capability(attr: CapacityQueue, request: Resource) -> bool:
    future = attr.allocated.clone().add(request)
    ok, _ = future.less_equal_with_dimension(attr.real_capability, request)
    return ok


class CapacityPlugin:
    """Capacity scheduling: deserved, capability and guarantee per queue."""

    name = "capacity"

    def __init__(self, arguments: Arguments) -> None:
        self.arguments = arguments
        level = arguments.get_int(ANCESTOR_RECLAIM_LEVEL, 0, owner=self.name)
        arguments.warn_unknown(self.name, [ANCESTOR_RECLAIM_LEVEL, DRA_ENABLE,
                                           DRA_CONSUMABLE_CAPACITY_ENABLE])
        #: Device quotas from ``deviceclass/<class>`` capabilities (on by default, as
        #: Volcano's DynamicResourceAllocation feature gate).
        self.dra_enable = arguments.get_bool(DRA_ENABLE, True)
        #: Capacities of devices too (``<capacity>.deviceclass/<class>``), on by default
        #: as Volcano's DRAConsumableCapacity feature gate.
        self.dra_capacity = arguments.get_bool(DRA_CONSUMABLE_CAPACITY_ENABLE, True)
        if level < 0:
            log.warning("capacity: %s should be non-negative, got %d; using 0",
                        ANCESTOR_RECLAIM_LEVEL, level)
            level = 0
        self.ancestor_reclaim_level = level
        self.hierarchy = False
        self.ready = True
        self.queue_attrs: dict[str, CapacityQueue] = {}
        #: queue figures as of each task's pre-predicate (simulated preemption)
        self.snapshots: SimulationSnapshots[CapacityQueue] = SimulationSnapshots(
            lambda: self.queue_attrs)
        self._ssn: Session | None = None

    # -- session ----------------------------------------------------------------------

    def on_session_open(self, ssn: Session) -> None:
        self._ssn = ssn
        option = ssn.configuration.plugin_option(self.name)
        self.hierarchy = option is not None and option.hierarchy
        self.ready = True
        jobs = list(ssn.jobs.values())
        if self.hierarchy:
            try:
                self.queue_attrs = build_hierarchy(ssn.queues, jobs, ssn.total_resource)
            except HierarchyError as exc:
                log.error("capacity: the queue hierarchy is not usable this session: %s", exc)
                self.ready = False
                self.queue_attrs = {}
        else:
            self.queue_attrs = build_flat(ssn.queues, jobs, ssn.total_resource)
        if self.dra_enable and ssn.dra:
            self._open_device_quotas(ssn, jobs)

        ssn.add_reclaimable_fn(self.name, self.reclaimable)
        ssn.add_unified_evictable_fn(self.name, self.unified_evictable)
        ssn.add_preemptive_fn(self.name, self.preemptive, many=self.preemptive_all)
        ssn.add_allocatable_fn(self.name, self.allocatable)
        ssn.add_job_enqueueable_fn(self.name, self.job_enqueueable)
        ssn.add_job_enqueued_fn(self.name, self.job_enqueued)
        ssn.add_pre_predicate_fn(self.name, self.pre_predicate)
        ssn.add_simulate_add_task_fn(self.name, self.simulate_add_task)
        ssn.add_simulate_remove_task_fn(self.name, self.simulate_remove_task)
        ssn.add_simulate_allocatable_fn(self.name, self.simulate_allocatable)
        ssn.add_event_handler(EventHandler(
            allocate=self._on_allocate, deallocate=self._on_deallocate, plugin=self.name,
        ))
        if not self.hierarchy:
            ssn.add_queue_order_fn(self.name, self.queue_order)
        elif self.ready:
            ssn.add_queue_order_fn(self.name, self.hierarchical_queue_order)
            ssn.add_victim_queue_order_fn(self.name, self.victim_queue_order)

    def _open_device_quotas(self, ssn: Session, jobs: list[JobInfo]) -> None:
        """Each queue's device quota, with what its placed tasks' claims hold (an
        ancestor takes, at session open, only the classes its capability names)."""
        claims = ssn.dra.resource_claims
        for name, figures in self.queue_attrs.items():
            queue = ssn.queues.get(name)
            figures.devices = (DeviceQuota.of(queue, ssn.queue_quota_as_written)
                               if queue is not None else None)
        for job in jobs:
            attr = self.queue_attrs.get(job.queue)
            if attr is None or attr.devices is None:
                continue
            for task in job.tasks.values():
                if not task.resource_claims or task.status not in ALLOCATED_STATUSES:
                    continue
                added = attr.devices.add_task(task, claims, capacity=self.dra_capacity)
                if not self.hierarchy:
                    continue
                for ancestor in attr.ancestors:
                    quota = self.queue_attrs[ancestor].devices
                    if quota is not None:
                        add_amounts(quota.allocated, {c: n for c, n in added.items()
                                                      if c in quota.capability})

    def _devices_fit(self, chain: Sequence[CapacityQueue], task: TaskInfo) -> bool:
        """No queue of the chain would go over its device capability for the task's
        claims it does not count yet (what waits in inqueue aside)."""
        if not self.dra_enable or not task.resource_claims:
            return True
        claims = self._session().dra.resource_claims
        for level in chain:
            quota = level.devices
            if quota is None:
                continue
            request = quota.new_claims(task, claims, capacity=self.dra_capacity)
            if request and not quota.admits(request, with_inqueue=False,
                                            capacity=self.dra_capacity):
                return False
        return True

    def queue_quota_chain(self, queue: str) -> list[tuple[str, QueueQuota]]:
        """The queues capacity checks for a job of ``queue``: with the hierarchy, every
        ancestor from the root down, then the queue (Volcano's
        ``check...Hierarchically``); flat, the queue alone."""
        attr = self.queue_attrs.get(queue)
        if attr is None:
            return []
        names = [*attr.ancestors, queue] if self.hierarchy else [queue]
        chain = [(name, self.queue_quota(name)) for name in names]
        return [(name, quota) for name, quota in chain if quota is not None]

    def queue_quota(self, queue: str) -> QueueQuota | None:
        """The queue's allocated and the ceilings capability enforces: its real
        ``capability`` (allocatable) and ``deserved`` (what reclaim protects)."""
        attr = self.queue_attrs.get(queue)
        if attr is None:
            return None
        usage = attr.usage
        admitted = usage.allocated.clone().add(usage.inqueue).sub_unchecked(usage.elastic)
        allocated, capability = attr.allocated.clone(), attr.real_capability.clone()
        if attr.devices is not None:  # devices as the queue status names them
            for device_class, amount in attr.devices.allocated.items():
                for name, value in device_resources(device_class, amount).items():
                    allocated.set(name, value)
            for device_class, amount in attr.devices.capability.items():
                for name, value in device_resources(device_class, amount).items():
                    capability.set(name, value)
        # deserved refuses nothing: it is what reclaim protects.
        return QueueQuota(allocated, {"capability": capability,
                                      "deserved": attr.deserved.clone()},
                          admission=frozenset({"capability"}),
                          allocation=frozenset({"capability"}), admitted=admitted)

    def on_session_close(self, ssn: Session) -> None:
        self.queue_attrs = {}
        self.snapshots.clear()
        self._ssn = None

    def _session(self) -> Session:
        assert self._ssn is not None, "capacity: used outside an open session"
        return self._ssn

    def _chain(self, attr: CapacityQueue) -> list[CapacityQueue]:
        """The queue, then its ancestors from the parent up to the root."""
        return [attr, *(self.queue_attrs[a] for a in reversed(attr.ancestors))]

    # -- orders -----------------------------------------------------------------------

    def queue_order(self, left: QueueInfo, right: QueueInfo) -> int:
        """Flat order: priority, then share, then having deserved."""
        if left.priority != right.priority:
            return right.priority - left.priority
        lattr, rattr = self.queue_attrs.get(left.name), self.queue_attrs.get(right.name)
        if lattr is None or rattr is None:
            return 0
        return compare_share_with_deserved(lattr, rattr)

    def hierarchical_queue_order(self, left: QueueInfo, right: QueueInfo) -> int:
        """Priority; leaves first; leaves compare through their diverging ancestors."""
        if left.priority != right.priority:
            return right.priority - left.priority
        lattr, rattr = self.queue_attrs.get(left.name), self.queue_attrs.get(right.name)
        if lattr is None or rattr is None:
            return 0
        if lattr.is_leaf != rattr.is_leaf:
            return -1 if lattr.is_leaf else 1
        if not lattr.is_leaf:
            return compare_share_with_deserved(lattr, rattr)
        level = common_level(lattr, rattr)
        lname = lattr.ancestors[level + 1] if level + 1 < len(lattr.ancestors) else lattr.name
        rname = rattr.ancestors[level + 1] if level + 1 < len(rattr.ancestors) else rattr.name
        return compare_share_with_deserved(self.queue_attrs[lname], self.queue_attrs[rname])

    def victim_queue_order(
        self, left: QueueInfo, right: QueueInfo, preemptor_queue: QueueInfo | None
    ) -> int:
        """Victims of the queue sharing the deeper ancestor with the preemptor's first."""
        if preemptor_queue is None:
            return 0
        lattr = self.queue_attrs.get(left.name)
        rattr = self.queue_attrs.get(right.name)
        pattr = self.queue_attrs.get(preemptor_queue.name)
        if lattr is None or rattr is None or pattr is None:
            return 0
        llevel, rlevel = common_level(lattr, pattr), common_level(rattr, pattr)
        if llevel == rlevel:
            return 0
        return -1 if llevel > rlevel else 1

    # -- admission and allocation -----------------------------------------------------

    def allocatable(self, queue: QueueInfo, task: TaskInfo) -> bool:
        """Open leaf whose allocation, and every ancestor's, stays within
        realCapability on the task's dimensions."""
        if not queue.is_open or not self.ready:
            return False
        attr = self.queue_attrs.get(queue.name)
        if attr is None or (self.hierarchy and not attr.is_leaf):
            return False
        chain = self._chain(attr)
        return self._devices_fit(chain, task) and all(
            _within_capability(a, task.resreq) for a in chain)

    def job_enqueueable(self, job: JobInfo) -> int:
        if not self.ready:
            return Vote.REJECT
        ssn = self._session()
        attr = self.queue_attrs.get(job.queue)
        queue = ssn.queues.get(job.queue)
        if attr is None or queue is None:
            return Vote.REJECT
        if self.hierarchy and not attr.is_leaf:
            return Vote.REJECT
        if not queue.is_open:
            return Vote.REJECT
        devices = self._job_min_devices(job, attr)
        # Without minResources only the job's own queue's device quota holds it back.
        if job.podgroup.min_resources is None and (devices is None or attr.devices is None):
            return Vote.PERMIT
        minimum = job_min_resources(job)
        for level in self._chain(attr):
            ok, short = level.usage.enqueue_demand(minimum).less_equal_with_dimension(
                level.real_capability, minimum)
            if ok and devices is not None and level.devices is not None \
                    and not level.devices.admits(devices, with_inqueue=True,
                                                 capacity=self.dra_capacity):
                ok, short = False, [*short, DRA_RESOURCE_EXCEEDED]
            if not ok:
                ssn.record_event(job.uid, "Normal", "Unschedulable", format_resource_names(
                    "queue resource quota insufficient", "insufficient", short))
                return Vote.REJECT
        return Vote.PERMIT

    def _job_min_devices(self, job: JobInfo, attr: CapacityQueue) -> Devices | None:
        """The devices the job needs to start, when its queue or an ancestor keeps a
        device quota."""
        if not self.dra_enable or all(level.devices is None for level in self._chain(attr)):
            return None
        return job_min_devices(job, self._session().dra.resource_claims,
                               capacity=self.dra_capacity)

    def job_enqueued(self, job: JobInfo) -> None:
        attr = self.queue_attrs.get(job.queue)
        if attr is None:
            return
        # Volcano reserves devices only when the job's own queue keeps a device quota
        # (its ancestors' then take them too).
        devices = self._job_min_devices(job, attr) if attr.devices is not None else None
        if job.podgroup.min_resources is None and devices is None:
            return
        # What its gated pods ask is not reserved (Volcano's DeductSchGatedResources).
        minimum = deduct_scheduling_gated(job, job_min_resources(job))
        self.snapshots.before_change()
        levels = [attr, *(self.queue_attrs[a] for a in attr.ancestors)] if self.hierarchy \
            else [attr]
        for level in levels:
            level.usage.inqueue.add(minimum)
            if devices is not None and level.devices is not None:
                add_amounts(level.devices.inqueue, devices)

    # -- reclaim ----------------------------------------------------------------------

    def preemptive(self, queue: QueueInfo, task: TaskInfo) -> bool:
        """May the queue reclaim for this task: within its own realCapability, and
        within deserved on some requested dimension (itself or a near ancestor)."""
        return self._preemptive_for(queue, task.resreq)

    def preemptive_all(self, queue: QueueInfo, tasks: Sequence[TaskInfo]) -> bool:
        """:meth:`preemptive` for the tasks' summed request (Volcano's, over several
        candidates)."""
        total = Resource()
        for task in tasks:
            total.add(task.resreq)
        return self._preemptive_for(queue, total)

    def _preemptive_for(self, queue: QueueInfo, request: Resource) -> bool:
        if not self.ready or not queue.is_open:
            return False
        attr = self.queue_attrs.get(queue.name)
        if attr is None:
            return False
        future = attr.allocated.clone().add(request)
        if not future.less_equal_with_dimension(attr.real_capability, request)[0]:
            return False
        if less_equal_partly_zero_filtered(future, attr.deserved, request):
            return True
        if self.hierarchy:
            for depth in range(1, self.ancestor_reclaim_level + 1):
                name = ancestor_at_depth(attr, depth)
                ancestor = self.queue_attrs.get(name) if name not in (None, ROOT) else None
                if ancestor is None:
                    continue
                if less_equal_partly_zero_filtered(
                    ancestor.allocated.clone().add(request), ancestor.deserved, request
                ):
                    return True
        return False

    def reclaimable(self, reclaimer: TaskInfo, candidates: list[TaskInfo]) -> list[TaskInfo]:
        """The candidates, in victim order, that may be evicted for the reclaimer."""
        if not self.ready:
            return []
        ssn = self._session()
        reclaimer_job = ssn.jobs.get(reclaimer.job)
        mine = self.queue_attrs.get(reclaimer_job.queue) if reclaimer_job is not None else None
        if mine is None:
            return []
        levels = self.ancestor_reclaim_level if self.hierarchy else 0
        running: dict[str, Resource] = {}
        victims: list[TaskInfo] = []
        order = ssn.build_victims_priority_queue(candidates, reclaimer)
        while order:
            candidate = order.pop()
            job = ssn.jobs.get(candidate.job)
            attr = self.queue_attrs.get(job.queue) if job is not None else None
            if attr is None:
                continue
            if not intersection(candidate.resreq, reclaimer.init_resreq, ignore_pods=True):
                continue  # evicting it frees nothing the reclaimer needs
            allocated = running.setdefault(attr.name, attr.allocated.clone())
            if not attr.guarantee.less_equal(allocated - candidate.resreq, _ZERO):
                continue  # the queue would drop below its guarantee
            if not intersection(candidate.resreq, attr.deserved):
                if (levels > 0 and shares_non_root_ancestor(mine, attr, levels)
                        and not intersection(reclaimer.resreq, mine.deserved)):
                    continue
            elif not greater_partly_in_relevant_dimensions(allocated, attr.deserved,
                                                           candidate.resreq):
                continue
            ancestors = self._reclaimable_in_ancestors(mine, attr, candidate, running, levels)
            if ancestors is None:
                continue
            allocated.sub_unchecked(candidate.resreq)
            for held in ancestors:
                held.sub_unchecked(candidate.resreq)
            victims.append(candidate)
        return victims

    def unified_evictable(
        self, context: EvictionContext, candidates: list[TaskInfo]
    ) -> list[TaskInfo]:
        """Gang-level evictions: a gang preemption may take every candidate; a gang
        reclaim takes, in the given order, the candidates :meth:`reclaimable` would
        (guarantee kept; no deserved dimension, or over deserved) without its
        dimension and ancestor rules."""
        if context.kind is EvictionKind.GANG_PREEMPT:
            return list(candidates)
        if not self.ready:
            return []
        ssn = self._session()
        running: dict[str, Resource] = {}
        victims: list[TaskInfo] = []
        for candidate in candidates:
            job = ssn.jobs.get(candidate.job)
            attr = self.queue_attrs.get(job.queue) if job is not None else None
            if attr is None:
                continue
            allocated = running.setdefault(attr.name, attr.allocated.clone())
            if not attr.guarantee.less_equal(allocated - candidate.resreq, _ZERO):
                continue
            if intersection(candidate.resreq, attr.deserved) and not (
                greater_partly_in_relevant_dimensions(allocated, attr.deserved,
                                                      candidate.resreq)
            ):
                continue
            allocated.sub_unchecked(candidate.resreq)
            victims.append(candidate)
        return victims

    def _reclaimable_in_ancestors(
        self, mine: CapacityQueue, attr: CapacityQueue, candidate: TaskInfo,
        running: dict[str, Resource], levels: int,
    ) -> list[Resource] | None:
        """The running allocations of the victim's ancestors to charge, or None when
        one of them does not exceed its deserved."""
        charged: list[Resource] = []
        for depth in range(1, levels + 1):
            name = ancestor_at_depth(attr, depth)
            if name is None or name == ROOT or ancestor_at_depth(mine, depth) == name:
                continue
            ancestor = self.queue_attrs.get(name)
            if ancestor is None:
                return None
            held = running.setdefault(name, ancestor.allocated.clone())
            charged.append(held)
            if not intersection(candidate.resreq, ancestor.deserved):
                continue
            if not greater_partly_in_relevant_dimensions(held, ancestor.deserved,
                                                         candidate.resreq):
                return None
        return charged

    # -- simulated preemption ---------------------------------------------------------

    def pre_predicate(self, task: TaskInfo) -> None:
        """Snapshot every queue's figures for the task's simulated preemption."""
        self.snapshots.record(task.uid)

    def simulate_allocatable(self, queue: QueueInfo, task: TaskInfo) -> bool:
        """As :meth:`allocatable` on the task's snapshot, without the Open check;
        false when no snapshot was taken."""
        state = self.snapshots.state(task.uid)
        if state is None or not self.ready:
            return False
        attr = state.get(queue.name)
        real = self.queue_attrs.get(queue.name)
        if attr is None or real is None or (self.hierarchy and not real.is_leaf):
            return False
        chain = [attr, *(state[a] for a in reversed(attr.ancestors))]
        return self._devices_fit(chain, task) and all(
            _within_capability(a, task.resreq) for a in chain)

    def simulate_add_task(self, preemptor: TaskInfo, task: TaskInfo, node: NodeInfo) -> None:
        self._simulate(preemptor, task, +1)

    def simulate_remove_task(self, preemptor: TaskInfo, task: TaskInfo, node: NodeInfo) -> None:
        self._simulate(preemptor, task, -1)

    def _simulate(self, preemptor: TaskInfo, task: TaskInfo, sign: int) -> None:
        # Without a snapshot Volcano fails the dry run on that node; here
        # simulate_allocatable answers false instead, which has the same effect.
        ssn = self._session()
        job = ssn.jobs.get(task.job)
        state = self.snapshots.state(preemptor.uid)
        attr = state.get(job.queue) if state is not None and job is not None else None
        if state is None or attr is None:
            # Volcano's simulate functions fail the node's dry run (an error).
            raise DryRunError(f"plugin {self.name!r} cannot follow the dry run for task "
                                f"{task.uid} (no snapshot of its queue)")
        ancestors = [state[a] for a in attr.ancestors]
        self._charge(attr, task.resreq, sign, ancestors)
        self._count_devices(task, sign, [attr, *(ancestors if self.hierarchy else [])])

    # -- events -----------------------------------------------------------------------

    def _on_allocate(self, event: Event) -> None:
        # A placed task needs no simulation snapshot any more: free it.
        self.snapshots.forget(event.task.uid)
        self._account(event.task, +1)

    def _on_deallocate(self, event: Event) -> None:
        self._account(event.task, -1)

    def _account(self, task: TaskInfo, sign: int) -> None:
        ssn = self._ssn
        job = ssn.jobs.get(task.job) if ssn is not None else None
        attr = self.queue_attrs.get(job.queue) if job is not None else None
        if attr is None:
            return
        self.snapshots.before_change()
        ancestors = [self.queue_attrs[a] for a in attr.ancestors]
        self._charge(attr, task.resreq, sign, ancestors)
        self._count_devices(task, sign, [attr, *(ancestors if self.hierarchy else [])])

    def _count_devices(self, task: TaskInfo, sign: int, levels: list[CapacityQueue]) -> None:
        if not self.dra_enable or not task.resource_claims:
            return
        claims = self._session().dra.resource_claims
        for level in levels:
            if level.devices is None:
                continue
            if sign > 0:
                level.devices.add_task(task, claims, capacity=self.dra_capacity)
            else:
                level.devices.remove_task(task, claims, capacity=self.dra_capacity)

    def _charge(self, attr: CapacityQueue, request: Resource, sign: int,
                ancestors: list[CapacityQueue]) -> None:
        # Ancestors' shares are left as they were at session open, as in Volcano.
        for target in [attr, *(ancestors if self.hierarchy else [])]:
            if sign > 0:
                target.allocated.add(request)
            else:
                target.allocated.sub_unchecked(request)
        attr.update_share()
