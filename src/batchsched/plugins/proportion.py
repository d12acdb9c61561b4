"""proportion: weighted fair shares between queues (Volcano's ``proportion`` plugin).

At session open every queue that has jobs gets:

* ``realCapability`` = (cluster total minus every queue's guarantee, never below
  0) plus its own guarantee, capped per dimension by its ``capability`` (a
  capability without cpu or memory leaves that dimension unbounded);
* ``deserved``, by water-filling: the remaining cluster resources are split by
  queue weight, each queue's running deserved is capped by its realCapability
  and by what its jobs request, then raised to its guarantee; what a capped queue
  cannot use goes back to the pool for the next round, until every queue is
  satisfied (or stuck) or nothing is left;
* ``share`` = max over deserved's dimensions of allocated / deserved.

It then decides:

* queue order: higher queue ``priority`` first, then lower share (equal: tie);
* overused: deserved <= allocated in every dimension of deserved;
* allocatable and preemptive: the queue is Open and allocated + request <=
  deserved on every dimension the request asks for;
* job enqueueable: the queue is Open and minResources + allocated + inqueue -
  elastic <= realCapability on the dimensions minResources asks for; job
  enqueued adds the job's minResources to the queue's inqueue;
* reclaimable: a queue's tasks are victims while its (running) allocation is not
  within deserved;
* allocate/deallocate events keep allocated and share current;
* the simulation hooks of topology-aware preemption (pre-predicate snapshot,
  simulated add/remove/allocatable).

The spec ``deserved`` of a queue is not used. The plugin takes no arguments (any
given is logged as a warning and ignored).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import attrs

from batchsched.api.job import JobInfo
from batchsched.api.node import NodeInfo
from batchsched.api.queue import QueueInfo
from batchsched.api.queue_accounting import (
    QueueUsage,
    SimulationSnapshots,
    capability_from_spec,
    deduct_scheduling_gated,
    diff,
    dominant_share,
    exceeded_part,
    format_resource_names,
    job_min_resources,
    resource_max,
    same_resource,
    spec_resource,
    spec_written,
)
from batchsched.api.resource import PODS, DimensionDefault, Resource
from batchsched.api.task import TaskInfo
from batchsched.api.types import Vote
from batchsched.errors import DryRunError
from batchsched.framework.arguments import Arguments
from batchsched.framework.events import Event, EventHandler
from batchsched.framework.recording import QueueQuota
from batchsched.framework.session import Session

__all__ = ["ProportionPlugin", "QueueAttr", "queue_share"]

_ZERO = DimensionDefault.ZERO
_INFINITY = DimensionDefault.INFINITY


@attrs.define(eq=False)
class QueueAttr:
    """One queue's figures for the session."""

    name: str
    weight: int
    usage: QueueUsage = attrs.field(factory=QueueUsage)
    deserved: Resource = attrs.field(factory=Resource)
    guarantee: Resource = attrs.field(factory=Resource)
    capability: Resource = attrs.field(factory=Resource)
    real_capability: Resource = attrs.field(factory=Resource)
    share: float = 0.0

    @property
    def allocated(self) -> Resource:
        return self.usage.allocated

    @property
    def request(self) -> Resource:
        return self.usage.request

    def update_share(self) -> None:
        self.share = queue_share(self.allocated, self.deserved)

    def clone(self) -> QueueAttr:
        usage = QueueUsage(self.usage.allocated.clone(), self.usage.request.clone(),
                           self.usage.inqueue.clone(), self.usage.elastic.clone())
        return QueueAttr(self.name, self.weight, usage, self.deserved.clone(),
                         self.guarantee.clone(), self.capability.clone(),
                         self.real_capability.clone(), self.share)


def queue_share(allocated: Resource, deserved: Resource) -> float:
    """max over deserved's dimensions of allocated / deserved (0 when it has none)."""
    return dominant_share(allocated, deserved)


def real_capability(total: Resource, total_guarantee: Resource, guarantee: Resource,
                    capability: Resource | None) -> Resource:
    """(total - all guarantees, floored at 0) + own guarantee, capped by capability."""
    result = exceeded_part(total, total_guarantee).add(guarantee)
    if capability is not None:
        result.min_dimension(capability, _INFINITY)
    return result


def water_fill(attrs_by_queue: dict[str, QueueAttr], total: Resource) -> None:
    """Set every queue's deserved (and share) by weighted water-filling of ``total``.

    All queues not yet satisfied take their part of the same remaining pool in one
    round; a queue is satisfied once its request fits in its deserved, or when a
    round leaves its deserved unchanged. Queues are visited in name order.
    """
    queues = [attrs_by_queue[name] for name in sorted(attrs_by_queue)]
    remaining = total.clone()
    met: set[str] = set()
    while True:
        total_weight = sum(a.weight for a in queues if a.name not in met)
        if total_weight == 0:
            break
        old_remaining = remaining.clone()
        increased, decreased = Resource(), Resource()
        for attr in queues:
            if attr.name in met:
                continue
            old = attr.deserved.clone()
            attr.deserved.add(remaining.clone().multi(attr.weight / total_weight))
            attr.deserved.min_dimension(attr.real_capability, _INFINITY)
            attr.deserved.min_dimension(attr.request, _ZERO)
            attr.deserved = resource_max(attr.deserved, attr.guarantee)
            attr.update_share()
            if attr.request.less_equal(attr.deserved, _ZERO) or same_resource(attr.deserved, old):
                met.add(attr.name)
            up, down = diff(attr.deserved, old)
            increased.add(up)
            decreased.add(down)
        remaining = exceeded_part(remaining.clone().add(decreased), increased)
        if remaining.is_empty() or same_resource(remaining, old_remaining):
            break


class ProportionPlugin:
    """Weighted fair sharing between queues, bounded by capability and guarantee."""

    name = "proportion"

    def __init__(self, arguments: Arguments) -> None:
        self.arguments = arguments
        arguments.warn_unknown(self.name)
        self.total = Resource()
        self.total_guarantee = Resource()
        self.queue_attrs: dict[str, QueueAttr] = {}
        #: queue figures as of each task's pre-predicate (simulated preemption)
        self.snapshots: SimulationSnapshots[QueueAttr] = SimulationSnapshots(
            lambda: self.queue_attrs)
        self._ssn: Session | None = None

    # -- session ----------------------------------------------------------------------

    def on_session_open(self, ssn: Session) -> None:
        self._ssn = ssn
        self.total = ssn.total_resource.clone()
        for queue in ssn.queues.values():
            if spec_written(queue, "guarantee"):
                self.total_guarantee.add(spec_resource(queue, "guarantee"))
        for job in ssn.jobs.values():
            attr = self.queue_attrs.get(job.queue)
            if attr is None:
                spec = ssn.queues.get(job.queue)
                if spec is None:
                    continue
                attr = self._new_attr(spec)
                self.queue_attrs[job.queue] = attr
            attr.usage.count_job(job)
        water_fill(self.queue_attrs, self.total)

        ssn.add_queue_order_key_fn(self.name, self.queue_order_key)
        ssn.add_reclaimable_fn(self.name, self.reclaimable)
        ssn.add_overused_fn(self.name, self.overused)
        ssn.add_allocatable_fn(self.name, self.allocatable)
        ssn.add_preemptive_fn(self.name, self.allocatable, many=self.allocatable_all)
        ssn.add_simulate_allocatable_fn(self.name, self.simulate_allocatable)
        ssn.add_pre_predicate_fn(self.name, self.pre_predicate)
        ssn.add_job_enqueueable_fn(self.name, self.job_enqueueable)
        ssn.add_job_enqueued_fn(self.name, self.job_enqueued)
        ssn.add_simulate_add_task_fn(self.name, self.simulate_add_task)
        ssn.add_simulate_remove_task_fn(self.name, self.simulate_remove_task)
        ssn.add_event_handler(EventHandler(
            allocate=self._on_allocate, deallocate=self._on_deallocate, plugin=self.name,
        ))

    def queue_quota(self, queue: str) -> QueueQuota | None:
        """The queue's allocated and the ceilings proportion enforces: ``deserved``
        (allocatable and overused) and ``capability`` (its real capability)."""
        attr = self.queue_attrs.get(queue)
        if attr is None:
            return None
        usage = attr.usage
        admitted = usage.allocated.clone().add(usage.inqueue).sub_unchecked(usage.elastic)
        real, own = attr.real_capability, attr.capability
        # The real capability is below the queue's own where the other queues'
        # guarantees leave less of the cluster (everywhere, when it sets none).
        below = frozenset(
            name for name in real.names()
            if own.is_empty() or real.get(name) < (own.get(name) if own.has(name) else math.inf))
        return QueueQuota(attr.allocated.clone(), {
            "deserved": attr.deserved.clone(), "capability": real.clone()},
            admission=frozenset({"capability"}), allocation=frozenset({"deserved"}),
            admitted=admitted,
            bounds={"capability": ("the cluster less the other queues' guarantees", below)}
            if below else {})

    def on_session_close(self, ssn: Session) -> None:
        self.queue_attrs = {}
        self.snapshots.clear()
        self.total = Resource()
        self.total_guarantee = Resource()
        self._ssn = None

    def _new_attr(self, queue: QueueInfo) -> QueueAttr:
        guarantee = (spec_resource(queue, "guarantee") if spec_written(queue, "guarantee")
                     else Resource())
        capability = capability_from_spec(queue)
        return QueueAttr(
            name=queue.name,
            weight=queue.weight,
            guarantee=guarantee,
            capability=capability if capability is not None else Resource(),
            real_capability=real_capability(self.total, self.total_guarantee, guarantee,
                                            capability),
        )

    # -- decisions --------------------------------------------------------------------

    def queue_order(self, left: QueueInfo, right: QueueInfo) -> int:
        """Higher priority first, then lower share; equal shares tie."""
        if left.priority != right.priority:
            return right.priority - left.priority
        queue_attrs = self.queue_attrs
        lattr, rattr = queue_attrs.get(left.name), queue_attrs.get(right.name)
        lshare = lattr.share if lattr is not None else 0.0
        rshare = rattr.share if rattr is not None else 0.0
        if lshare == rshare:
            return 0
        return -1 if lshare < rshare else 1

    def queue_order_key(self, queue: QueueInfo) -> tuple[int, float]:
        """:meth:`queue_order` as a sort key (shares are finite: deserved is never 0
        on a dimension it holds)."""
        attr = self.queue_attrs.get(queue.name)
        return (-queue.priority, attr.share if attr is not None else 0.0)

    def reclaimable(self, reclaimer: TaskInfo, candidates: list[TaskInfo]) -> list[TaskInfo]:
        """Candidates of queues whose (running) allocation exceeds deserved somewhere;
        each victim lowers its queue's running allocation."""
        ssn = self._ssn
        assert ssn is not None
        running: dict[str, Resource] = {}
        victims: list[TaskInfo] = []
        for candidate in candidates:
            job = ssn.jobs.get(candidate.job)
            attr = self.queue_attrs.get(job.queue) if job is not None else None
            if job is None or attr is None:
                continue
            allocated = running.setdefault(job.queue, attr.allocated.clone())
            if not allocated.less_equal(attr.deserved, _ZERO):
                allocated.sub_unchecked(candidate.resreq)
                victims.append(candidate)
        return victims

    def overused(self, queue: QueueInfo) -> bool:
        """Deserved fits in allocated in every dimension (within the epsilon)."""
        attr = self.queue_attrs.get(queue.name)
        if attr is None:
            return False
        return attr.deserved.less_equal(attr.allocated, _ZERO)

    def allocatable(self, queue: QueueInfo, task: TaskInfo) -> bool:
        """Open, and allocated + request <= deserved on the requested dimensions."""
        if not queue.is_open:
            return False
        attr = self.queue_attrs.get(queue.name)
        if attr is None:
            return False
        return _fits(attr, task.resreq)

    def allocatable_all(self, queue: QueueInfo, tasks: Sequence[TaskInfo]) -> bool:
        """:meth:`allocatable` for the tasks' summed request (Volcano's
        ``queueAllocatable`` over several candidates)."""
        if not queue.is_open:
            return False
        attr = self.queue_attrs.get(queue.name)
        if attr is None:
            return False
        total = Resource()
        for task in tasks:
            total.add(task.resreq)
        return _fits(attr, total)

    def job_enqueueable(self, job: JobInfo) -> int:
        ssn = self._ssn
        assert ssn is not None
        queue = ssn.queues.get(job.queue)
        if queue is None or not queue.is_open:
            return Vote.REJECT
        if job.podgroup.min_resources is None:
            return Vote.PERMIT
        attr = self.queue_attrs.get(job.queue)
        if attr is None:
            return Vote.PERMIT
        minimum = job_min_resources(job)
        ok, short = attr.usage.enqueue_demand(minimum).less_equal_with_dimension(
            attr.real_capability, minimum)
        if ok:
            return Vote.PERMIT
        ssn.record_event(job.uid, "Normal", "Unschedulable", format_resource_names(
            "queue resource quota insufficient", "insufficient", short))
        return Vote.REJECT

    def job_enqueued(self, job: JobInfo) -> None:
        if job.podgroup.min_resources is None:
            return
        attr = self.queue_attrs.get(job.queue)
        if attr is not None:
            self.snapshots.before_change()
            # What its gated pods ask is not reserved (Volcano's DeductSchGatedResources).
            attr.usage.inqueue.add(deduct_scheduling_gated(job, job_min_resources(job)))

    # -- simulated preemption ---------------------------------------------------------

    def pre_predicate(self, task: TaskInfo) -> None:
        """Snapshot every queue's figures for the task's simulated preemption."""
        self.snapshots.record(task.uid)

    def simulate_allocatable(self, queue: QueueInfo, task: TaskInfo) -> bool:
        """As :meth:`allocatable` on the task's snapshot, without the Open check;
        false when no snapshot was taken."""
        state = self.snapshots.state(task.uid)
        attr = state.get(queue.name) if state is not None else None
        if attr is None:
            return False
        return _fits(attr, task.resreq)

    def simulate_add_task(self, preemptor: TaskInfo, task: TaskInfo, node: NodeInfo) -> None:
        attr = self._simulated_attr(preemptor, task)
        attr.allocated.add(task.resreq)
        attr.update_share()

    def simulate_remove_task(self, preemptor: TaskInfo, task: TaskInfo, node: NodeInfo) -> None:
        attr = self._simulated_attr(preemptor, task)
        attr.allocated.sub_unchecked(task.resreq)
        attr.update_share()

    def _simulated_attr(self, preemptor: TaskInfo, task: TaskInfo) -> QueueAttr:
        """The snapshot figures of the task's queue. Without a snapshot (the
        pre-predicate did not run: proportion's predicates are off), or for a task
        of a job or queue the session lacks, the dry run is refused on the node, as
        Volcano's simulate functions fail it with an error."""
        ssn = self._ssn
        job = ssn.jobs.get(task.job) if ssn is not None else None
        state = self.snapshots.state(preemptor.uid)
        attr = state.get(job.queue) if state is not None and job is not None else None
        if attr is None:
            raise DryRunError(f"plugin {self.name!r} cannot follow the dry run for task "
                                f"{task.uid} (no snapshot of its queue)")
        return attr

    # -- events -----------------------------------------------------------------------

    def _on_allocate(self, event: Event) -> None:
        task = event.task
        # A placed task needs no simulation snapshot any more: free it.
        self.snapshots.forget(task.uid)
        attr = self._attr_of(task)
        if attr is not None:
            self.snapshots.before_change()
            allocated = attr.usage.allocated
            allocated.add(task.resreq)
            # update_share, written out: once per placement.
            attr.share = dominant_share(allocated, attr.deserved)

    def _on_deallocate(self, event: Event) -> None:
        task = event.task
        attr = self._attr_of(task)
        if attr is not None:
            self.snapshots.before_change()
            allocated = attr.usage.allocated
            allocated.sub_unchecked(task.resreq)
            attr.share = dominant_share(allocated, attr.deserved)

    def _attr_of(self, task: TaskInfo) -> QueueAttr | None:
        ssn = self._ssn
        job = ssn.jobs.get(task.job) if ssn is not None else None
        return self.queue_attrs.get(job.queue) if job is not None else None


def _fits(attr: QueueAttr, request: Resource) -> bool:
    """``(allocated + request).less_equal_with_dimension(deserved, request)``, without
    building the sum: the same additions and comparisons on the requested
    dimensions (> 0, ``pods`` aside), asked for every task allocate considers."""
    allocated, deserved = attr.usage.allocated, attr.deserved
    if request.milli_cpu > 0 and allocated.milli_cpu + request.milli_cpu > deserved.milli_cpu:
        return False
    if request.memory > 0 and allocated.memory + request.memory > deserved.memory:
        return False
    held, limit = allocated.scalars, deserved.scalars
    for name, amount in request.scalars.items():
        if name == PODS or amount <= 0:
            continue
        if held.get(name, 0.0) + amount > limit.get(name, 0.0):
            return False
    return True
