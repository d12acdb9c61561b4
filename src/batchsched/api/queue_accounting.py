"""Resource helpers and queue accounting shared by drf, proportion and capacity.

The helpers restate the exact semantics of Volcano's ``api/resource_info.go``
and ``api/helpers`` functions these plugins rely on where
:class:`~batchsched.api.resource.Resource` has no equivalent (which dimensions
count, which use the 0.1 epsilon, which keys survive). :class:`QueueUsage`
gathers what proportion and capacity both read off a queue's jobs at session
open: allocated, requested, reserved by admitted jobs (inqueue) and held beyond
the jobs' minimums (elastic).
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterable
from typing import Generic, Protocol, TypeVar

import attrs
from typing_extensions import Self

from batchsched.api.job import JobInfo
from batchsched.api.queue import QueueInfo
from batchsched.api.resource import CPU, MEMORY, MIN_RESOURCE, PODS, Resource
from batchsched.api.resource_names import is_scalar_resource
from batchsched.api.task import TaskInfo
from batchsched.api.types import ALLOCATED_STATUSES, PodGroupPhase, TaskStatus

__all__ = [
    "MAX_AMOUNT",
    "QueueUsage",
    "SimulationSnapshots",
    "capability_from_spec",
    "deduct_scheduling_gated",
    "diff",
    "dominant_share",
    "exceeded_part",
    "format_resource_names",
    "greater_partly_in_relevant_dimensions",
    "inqueue_resource",
    "intersection",
    "job_min_resources",
    "less_equal_partly_zero_filtered",
    "resource_max",
    "running_job_reservation",
    "same_resource",
    "scheduling_gated_request",
    "share",
    "spec_written",
    "sum_requests",
]

#: Volcano's ``math.MaxFloat64``: an unbounded cpu or memory amount.
MAX_AMOUNT = sys.float_info.max
#: An empty vector, only ever read (never handed out).
_NO_RESOURCES = Resource()


def share(allocated: float, deserved: float) -> float:
    """``allocated / deserved``; 0 when both are 0, 1 when only ``deserved`` is."""
    if deserved == 0:
        return 0.0 if allocated == 0 else 1.0
    return allocated / deserved


def dominant_share(allocated: Resource, reference: Resource) -> float:
    """The largest ``share`` over the dimensions ``reference`` holds (0 when none).

    The dimensions are ``reference.resource_names()``, visited in that order, and
    each ratio is ``share``'s, which on such a dimension (at least the epsilon, so
    never 0) is the plain division; written out because every placement recomputes
    a job's and a queue's share.
    """
    result = 0.0
    deserved = reference.milli_cpu
    if deserved >= MIN_RESOURCE:
        ratio = allocated.milli_cpu / deserved
        if ratio > result:  # noqa: PLR1730 (a call per dimension costs)
            result = ratio
    deserved = reference.memory
    if deserved >= MIN_RESOURCE:
        ratio = allocated.memory / deserved
        if ratio > result:  # noqa: PLR1730 (a call per dimension costs)
            result = ratio
    if reference.scalars:
        held = allocated.scalars
        for name, deserved in reference.scalars.items():
            if deserved >= MIN_RESOURCE:
                ratio = held.get(name, 0.0) / deserved
                if ratio > result:  # noqa: PLR1730
                    result = ratio
    return result


def exceeded_part(left: Resource, right: Resource) -> Resource:
    """Per dimension ``max(0, left - right)``; a scalar is kept only when positive
    (Volcano's ``ExceededPart``)."""
    out = Resource(max(0.0, left.milli_cpu - right.milli_cpu),
                   max(0.0, left.memory - right.memory))
    for name, amount in left.scalars.items():
        rest = amount - right.scalars.get(name, 0.0)
        if rest > 0:
            out.scalars[name] = rest
    return out


def diff(left: Resource, right: Resource) -> tuple[Resource, Resource]:
    """(increase, decrease) from ``right`` to ``left`` per dimension, missing scalars
    read as 0 (Volcano's ``Diff`` with the Zero default)."""
    increased, decreased = Resource(), Resource()
    if left.milli_cpu > right.milli_cpu:
        increased.milli_cpu = left.milli_cpu - right.milli_cpu
    else:
        decreased.milli_cpu = right.milli_cpu - left.milli_cpu
    if left.memory > right.memory:
        increased.memory = left.memory - right.memory
    else:
        decreased.memory = right.memory - left.memory
    for name in _union(left.scalars, right.scalars):
        lq, rq = left.scalars.get(name, 0.0), right.scalars.get(name, 0.0)
        if lq > rq:
            increased.scalars[name] = lq - rq
        else:
            decreased.scalars[name] = rq - lq
    return increased, decreased


def resource_max(left: Resource, right: Resource) -> Resource:
    """Per dimension the larger; scalars over both key sets, negative values dropped
    (Volcano's ``helpers.Max``)."""
    out = Resource(max(left.milli_cpu, right.milli_cpu), max(left.memory, right.memory))
    for name, amount in left.scalars.items():
        if amount >= 0:
            out.scalars[name] = amount
    for name, amount in right.scalars.items():
        if amount >= 0:
            out.scalars[name] = max(amount, out.scalars.get(name, 0.0))
    return out


def same_resource(left: Resource, right: Resource) -> bool:
    """Exact equality: cpu, memory and the same scalar keys with the same values
    (Volcano compares with ``DeepEqual``, so a key at 0 differs from a missing key)."""
    return (left.milli_cpu == right.milli_cpu and left.memory == right.memory
            and left.scalars == right.scalars)


def intersection(left: Resource, right: Resource, *, ignore_pods: bool = False) -> list[str]:
    """The dimensions holding at least the epsilon on both sides (``pods`` included
    unless ``ignore_pods``)."""
    names = set(right.resource_names())
    return [n for n in left.resource_names()
            if n in names and not (ignore_pods and n == PODS)]


def _le(left: float, right: float) -> bool:
    return left < right or abs(left - right) < MIN_RESOURCE


def less_equal_partly_zero_filtered(used: Resource, limit: Resource, request: Resource) -> bool:
    """Whether ``used <= limit`` (with the epsilon) on at least one dimension the
    request asks for, leaving out dimensions below the epsilon on both sides and
    ``pods`` (Volcano's ``LessEqualPartlyWithDimensionZeroFiltered``)."""
    for name in _requested(request):
        left, right = used.get(name), limit.get(name)
        if left < MIN_RESOURCE and right < MIN_RESOURCE:
            continue
        if _le(left, right):
            return True
    return False


def greater_partly_in_relevant_dimensions(
    used: Resource, limit: Resource, request: Resource
) -> bool:
    """Whether ``used > limit`` (strictly) on a requested dimension ``limit`` has:
    cpu and memory when the limit holds at least the epsilon, a scalar when the limit
    names it at all; ``pods`` never (Volcano's ``GreaterPartlyWithRelevantDimensions``)."""
    for name in _requested(request):
        if name in (CPU, MEMORY):
            if limit.get(name) < MIN_RESOURCE:
                continue
        elif name not in limit.scalars:
            continue
        if used.get(name) > limit.get(name):
            return True
    return False


def _requested(request: Resource) -> Iterable[str]:
    """The dimensions a request asks for (> 0), ``pods`` left out."""
    if request.milli_cpu > 0:
        yield CPU
    if request.memory > 0:
        yield MEMORY
    for name, amount in request.scalars.items():
        if name != PODS and amount > 0:
            yield name


def _union(left: dict[str, float], right: dict[str, float]) -> list[str]:
    return list(dict.fromkeys([*left, *right]))


def sum_requests(tasks: Iterable[TaskInfo | None]) -> Resource:
    """The sum of the tasks' requests (``None`` entries are skipped)."""
    total = Resource()
    for task in tasks:
        if task is not None:
            total.add(task.resreq)
    return total


# -- queue specs --------------------------------------------------------------------------


def spec_written(queue: QueueInfo, field: str) -> bool:
    """Whether the queue spec lists any resource under ``field`` (Volcano tests
    ``len(spec.field) != 0``, so ``cpu: 0`` counts as written)."""
    names = queue.defined.get(field)
    if names is not None:
        return bool(names)
    res: Resource | None = getattr(queue, field)
    if res is None:
        return False
    return bool(res.milli_cpu or res.memory or res.scalars)


def spec_resource(queue: QueueInfo, field: str) -> Resource:
    """A copy of the spec's ``field`` (empty when unset)."""
    res: Resource | None = getattr(queue, field)
    return res.clone() if res is not None else Resource()


def capability_from_spec(queue: QueueInfo) -> Resource | None:
    """The queue's capability, or None when unset; a cpu or memory of 0 (or one not
    written) means unbounded, as in Volcano's proportion and flat capacity."""
    if not spec_written(queue, "capability"):
        return None
    capability = spec_resource(queue, "capability")
    if capability.milli_cpu <= 0:
        capability.milli_cpu = MAX_AMOUNT
    if capability.memory <= 0:
        capability.memory = MAX_AMOUNT
    return capability


# -- jobs -----------------------------------------------------------------------------


def inqueue_resource(job: JobInfo, allocated: Resource) -> Resource:
    """The part of the job's minResources not yet allocated (Volcano's
    ``util.GetInqueueResource``): per dimension ``max(0, min - allocated)``; an
    extended scalar the job holds none of is reserved in full."""
    minimum = job.podgroup.min_resources
    out = Resource()
    if minimum is None:
        return out
    out.milli_cpu = max(0.0, minimum.milli_cpu - allocated.milli_cpu)
    out.memory = max(0.0, minimum.memory - allocated.memory)
    for name, amount in minimum.scalars.items():
        if name == PODS:
            rest = amount - allocated.scalars.get(PODS, 0.0)
            if rest > 0:
                out.scalars[PODS] = rest
            continue
        if name.startswith("count/") or not is_scalar_resource(name):
            continue
        if name not in allocated.scalars:
            out.scalars[name] = amount
        elif amount - allocated.scalars[name] > 0:
            out.scalars[name] = amount - allocated.scalars[name]
    return out


def job_min_resources(job: JobInfo) -> Resource:
    """The job's minResources (empty when unset)."""
    minimum = job.podgroup.min_resources
    return minimum.clone() if minimum is not None else Resource()


def running_job_reservation(job: JobInfo) -> Resource:
    """What a Running pod group still reserves: the part of its minResources it does
    not hold (:func:`inqueue_resource`), when it sets minResources and at least
    minMember of its tasks hold resources; nothing otherwise. (The minMember test
    keeps a job whose driver finished while the group runs on from reserving its
    minimum again.) Proportion, capacity and overcommit all count it."""
    podgroup = job.podgroup
    if (podgroup.min_resources is None or podgroup.phase != PodGroupPhase.RUNNING
            or job.allocated_task_num() < podgroup.min_member):
        return Resource()
    return inqueue_resource(job, job.allocated)


def format_resource_names(prefix: str, verb: str, names: list[str]) -> str:
    """Volcano's ``util.FormatResourceNames``: ``prefix: verb a, verb b``."""
    if not names:
        return prefix
    return f"{prefix}: " + ", ".join(f"{verb} {name}" for name in names)


@attrs.define
class QueueUsage:
    """What a queue's jobs hold, want and reserve (built at session open).

    ``allocated``: requests of tasks holding resources (Allocated, Binding, Bound,
    Running); ``request``: those plus Pending tasks; ``inqueue``: minResources
    not yet allocated, for admitted (Inqueue) jobs and for Running jobs with at
    least minMember tasks holding resources; ``elastic``: what jobs hold beyond
    their minResources.
    """

    allocated: Resource = attrs.field(factory=Resource)
    request: Resource = attrs.field(factory=Resource)
    inqueue: Resource = attrs.field(factory=Resource)
    elastic: Resource = attrs.field(factory=Resource)

    def add_job(self, job: JobInfo) -> QueueUsage:
        """Account one job; returns what it added (capacity passes it to ancestors).
        Its reservation leaves out what its scheduling-gated pods ask
        (:func:`deduct_scheduling_gated`, as proportion and capacity count it)."""
        allocated, request, inqueue, elastic = _job_usage(job)
        delta = QueueUsage(*(Resource() if part is None else part
                             for part in (allocated, request, inqueue, elastic)))
        self.merge(delta)
        return delta

    def count_job(self, job: JobInfo) -> None:
        """Account one job, as :meth:`add_job` does, without building what it added
        (every session counts every job of the cluster)."""
        allocated, request, inqueue, elastic = _job_usage(job)
        # A part left out is an empty vector: adding it would change nothing.
        if allocated is not None:
            self.allocated.add(allocated)
        if request is not None:
            self.request.add(request)
        if inqueue is not None:
            self.inqueue.add(inqueue)
        if elastic is not None:
            self.elastic.add(elastic)

    def merge(self, other: QueueUsage) -> None:
        self.allocated.add(other.allocated)
        self.request.add(other.request)
        self.inqueue.add(other.inqueue)
        self.elastic.add(other.elastic)

    def enqueue_demand(self, minimum: Resource) -> Resource:
        """``minimum + allocated + inqueue - elastic``: what the queue would hold if
        the job were admitted (the enqueue checks compare it with realCapability)."""
        return minimum.clone().add(self.allocated).add(self.inqueue).sub_unchecked(self.elastic)


def scheduling_gated_request(job: JobInfo) -> Resource:
    """What the job's pods held by another controller's scheduling gates ask
    (Volcano's ``GetSchGatedPodResources``, over every pod whatever its status: a
    gated pod being deleted counts too; a pod held only by Volcano's queue
    allocation gate counts as waiting in its queue)."""
    gated = Resource()
    for task in job.tasks.values():
        if task.externally_gated:
            gated.add(task.resreq)
    return gated


def deduct_scheduling_gated(job: JobInfo, reserved: Resource) -> Resource:
    """``reserved`` less what the job's gated pods ask, never below 0, in cpu, memory
    and the scalars ``reserved`` names (Volcano's ``DeductSchGatedResources``): a job
    waiting on gates does not hold back the jobs behind it. ``reserved`` itself when
    no pod is gated."""
    # Kept with the job until its tasks change: every session counts every job. A job
    # of a few tasks without gates is scanned again instead: cheaper than the memo
    # entry each of 100,000 such jobs would hold.
    kept = job.memo.get(_GATED_KEY)
    if kept is not None and kept[0] == job.mutations:
        gated: Resource | None = kept[1]
    else:
        gated = scheduling_gated_request(job) if any(
            task.scheduling_gates for task in job.tasks.values()) else None
        if gated is not None or len(job.tasks) > _SCANNED_AGAIN:
            job.memo[_GATED_KEY] = (job.mutations, gated)
    if gated is None or gated.is_empty():
        return reserved
    out = reserved.clone()
    out.milli_cpu = max(out.milli_cpu - gated.milli_cpu, 0.0)
    out.memory = max(out.memory - gated.memory, 0.0)
    for name, amount in reserved.scalars.items():
        if name in gated.scalars:
            out.scalars[name] = max(amount - gated.scalars[name], 0.0)
    return out


#: Jobs of at most this many tasks, none gated, are scanned rather than memoised.
_SCANNED_AGAIN = 8
#: Each job's gated request, kept in its memo with its mutation count.
_GATED_KEY = "queue-accounting.scheduling-gated"


def _job_usage(job: JobInfo) -> tuple[Resource | None, Resource | None,
                                      Resource | None, Resource | None]:
    """What one job adds to its queue's usage: (allocated, request, inqueue, elastic),
    each summed from zero in the same order as ever, None where it adds nothing."""
    allocated = request = None
    for status, tasks in job.task_status_index.items():
        if not tasks:
            continue
        if status in ALLOCATED_STATUSES:
            if allocated is None:
                allocated = Resource()
            if request is None:
                request = Resource()
            for task in tasks.values():
                allocated.add(task.resreq)
                request.add(task.resreq)
        elif status == TaskStatus.PENDING:
            if request is None:
                request = Resource()
            for task in tasks.values():
                request.add(task.resreq)
    minimum = job.podgroup.min_resources
    inqueue = None
    # Without minResources a job reserves nothing: both reservations would be empty.
    if minimum is not None:
        phase = job.podgroup.phase
        # An Inqueue job reserves what it does not hold yet, a Running one what
        # running_job_reservation says; a job in any other phase reserves nothing.
        if phase == PodGroupPhase.INQUEUE:
            inqueue = Resource().add(inqueue_resource(job, job.allocated))
        elif phase == PodGroupPhase.RUNNING:
            inqueue = Resource().add(running_job_reservation(job))
        if inqueue is not None:
            inqueue = deduct_scheduling_gated(job, inqueue)
    # What a job holds beyond its minimum. exceeded_part only reads the minimum: no
    # copy of it (job_min_resources) needed.
    held = job.allocated
    reference = minimum if minimum is not None else _NO_RESOURCES
    elastic = None if _exceeds_nowhere(held, reference) else exceeded_part(held, reference)
    return allocated, request, inqueue, elastic


def _exceeds_nowhere(left: Resource, right: Resource) -> bool:
    """Whether ``exceeded_part(left, right)`` is surely empty: ``left`` holds nothing
    positive and ``right`` nothing negative (NaN answers False)."""
    if not (left.milli_cpu <= 0 and left.memory <= 0
            and right.milli_cpu >= 0 and right.memory >= 0):
        return False
    return ((not left.scalars or all(amount <= 0 for amount in left.scalars.values()))
            and (not right.scalars or all(amount >= 0 for amount in right.scalars.values())))


# -- simulated preemption -------------------------------------------------------------


class _Clonable(Protocol):
    def clone(self) -> Self: ...


Figures = TypeVar("Figures", bound=_Clonable)


class SimulationSnapshots(Generic[Figures]):
    """Per-task copies of the queue figures for the dry run of topology-aware preemption.

    Volcano's pre-predicate writes a copy of every queue's figures into the task's
    cycle state; the dry run adds and removes tasks on that copy. Copying every
    queue for every task allocate looks at is costly, so copies are taken only when
    needed: :meth:`record` notes the moment, :meth:`before_change` (called before
    the live figures change) keeps one frozen copy for the tasks recorded since the
    last change, and :meth:`state` gives a task its own copy on first use.
    """

    def __init__(self, live: Callable[[], dict[str, Figures]]) -> None:
        self._live = live
        self._version = 0
        self._recorded_at: dict[str, int] = {}
        self._recent: set[str] = set()
        self._frozen: dict[int, dict[str, Figures]] = {}
        self._users: dict[int, int] = {}
        self._states: dict[str, dict[str, Figures]] = {}

    def record(self, task_uid: str) -> None:
        """The task's pre-predicate: its copy is the figures as they are now."""
        self.forget(task_uid)
        self._recorded_at[task_uid] = self._version
        self._users[self._version] = self._users.get(self._version, 0) + 1
        self._recent.add(task_uid)

    def forget(self, task_uid: str) -> None:
        """Drop the task's copy (it was placed, or is recorded anew)."""
        version = self._recorded_at.pop(task_uid, None)
        if version is None:
            return  # never recorded, so neither recent nor copied
        self._states.pop(task_uid, None)
        self._recent.discard(task_uid)
        self._users[version] -= 1
        if not self._users[version]:
            del self._users[version]
            self._frozen.pop(version, None)

    def before_change(self) -> None:
        """The live figures are about to change: freeze them for recent records."""
        if self._recent:
            self._frozen[self._version] = _copy(self._live())
            self._recent.clear()
        self._version += 1

    def state(self, task_uid: str) -> dict[str, Figures] | None:
        """The task's own copy, or None when its pre-predicate did not run."""
        state = self._states.get(task_uid)
        if state is not None:
            return state
        version = self._recorded_at.get(task_uid)
        if version is None:
            return None
        source = self._live() if version == self._version else self._frozen[version]
        state = self._states[task_uid] = _copy(source)
        return state

    def clear(self) -> None:
        self._recorded_at.clear()
        self._recent.clear()
        self._frozen.clear()
        self._users.clear()
        self._states.clear()


def _copy(figures: dict[str, Figures]) -> dict[str, Figures]:
    return {name: value.clone() for name, value in figures.items()}
