"""PodGroup and JobInfo: a gang of tasks and the counts that decide it (seed 000 §4.6, §4.7).

Every count below is exactly Volcano's (``api/job_info.go``):

* ready = Bound + Binding + Running + Allocated + Succeeded;
* waiting = Pipelined;
* valid = Pending + Pipelined + Bound + Binding + Running + Allocated + Succeeded;
* ``is_ready``: ready + pending best-effort >= minAvailable;
* ``is_pipelined``: waiting + ready + pending best-effort >= minAvailable;
* ``is_starving``: waiting + ready < minAvailable.

Per-role minimums (``task_min_available``, the pod group's ``minTaskMember``)
are checked by the ``check_task_*`` methods; all of them pass when minAvailable
is below the sum of the per-role minimums, as in Volcano.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from typing import Any

import attrs

from batchsched.api._copying import field_copier
from batchsched.api.fit import FitErrors
from batchsched.api.hypernode import NetworkTopology
from batchsched.api.resource import Resource
from batchsched.api.sub_job import SubGroupPolicy
from batchsched.api.task import TaskInfo, parse_bool
from batchsched.api.types import (
    ALLOCATED_STATUSES,
    NO_COUNTS,
    NO_LABELS,
    SCHEDULED_STATUSES,
    PodGroupCondition,
    PodGroupPhase,
    TaskStatus,
)

__all__ = [
    "PROCESSORS_ANNOTATION",
    "REQUESTED_RUNTIME_ANNOTATION",
    "SLA_WAITING_TIME_ANNOTATIONS",
    "JobInfo",
    "PodGroup",
    "job_processors",
    "processors_of",
    "requested_runtime_of",
    "waiting_time_from",
]

_PENDING = TaskStatus.PENDING
_PIPELINED = TaskStatus.PIPELINED
_SUCCEEDED = TaskStatus.SUCCEEDED
_READY_STATUSES = ALLOCATED_STATUSES | {_SUCCEEDED}
#: ``str(status)``, worked out once (the enum's ``__str__`` is comparatively slow).
_STATUS_NAMES = {status: str(status) for status in TaskStatus}
#: Fit error messages by the counts they depend on (see JobInfo.fit_error), bounded.
_FIT_ERRORS_BY_SHAPE: dict[tuple[object, ...], str] = {}
_MAX_SHAPES = 4096
_VALID_STATUSES = _READY_STATUSES | {_PIPELINED, _PENDING}


@attrs.define(eq=False)
class PodGroup:
    """The pod group a job is built from (Volcano's ``PodGroup`` spec and status)."""

    name: str
    namespace: str = "default"
    queue: str = "default"
    min_member: int = 0
    min_task_member: Mapping[str, int] = NO_COUNTS
    #: Read-only once built, as a task's requests are: copies of the pod group share
    #: it, and whatever narrows it (the session's hidden resource names) replaces it.
    min_resources: Resource | None = None
    phase: PodGroupPhase = PodGroupPhase.PENDING
    priority_class_name: str = ""
    annotations: Mapping[str, str] = NO_LABELS
    labels: Mapping[str, str] = NO_LABELS
    creation_time: float = 0.0
    #: Replaced whole, never changed in place (``Session.update_pod_group_condition``):
    #: a session compares the list it opened with at close.
    conditions: list[PodGroupCondition] = attrs.field(factory=list)
    #: Status counts written at session close (Volcano's ``PodGroupStatus``).
    running: int = 0
    succeeded: int = 0
    failed: int = 0
    #: ``spec.networkTopology``: the hypernode tier the job must (hard) or should
    #: (soft) stay within (:mod:`batchsched.api.hypernode`); None: no constraint.
    network_topology: NetworkTopology | None = None
    #: ``spec.subGroupPolicy``: the job's tasks split into gangs of their own
    #: (:mod:`batchsched.api.sub_job`).
    sub_group_policies: tuple[SubGroupPolicy, ...] = ()

    @property
    def uid(self) -> str:
        return f"{self.namespace}/{self.name}"

    def clone(self) -> PodGroup:
        # Every session clones the pod group of every job it sees: a field-by-field
        # copy for the class itself, its constructor spelled out for a subclass
        # (attrs.evolve is several times slower). tests/api checks every field.
        if type(self) is PodGroup:
            twin: PodGroup = _copy_pod_group_fields(self)
            twin.conditions = list(self.conditions)
            return twin
        return type(self)(
            name=self.name,
            namespace=self.namespace,
            queue=self.queue,
            min_member=self.min_member,
            min_task_member=self.min_task_member,
            min_resources=self.min_resources,
            phase=self.phase,
            priority_class_name=self.priority_class_name,
            annotations=self.annotations,
            labels=self.labels,
            creation_time=self.creation_time,
            conditions=list(self.conditions),
            running=self.running,
            succeeded=self.succeeded,
            failed=self.failed,
            network_topology=self.network_topology,
            sub_group_policies=self.sub_group_policies,
        )


_copy_pod_group_fields = field_copier(PodGroup)


def _sums_to_itself(request: Resource) -> bool:
    """Whether ``request`` is, bit for bit, the sum ``Resource().add(request)`` and
    stays it through a status change's ``(x - r) + r``: every amount finite and no
    negative zero (0 + -0.0 is 0.0; inf - inf is NaN)."""
    return all(math.isfinite(amount) and (amount or math.copysign(1.0, amount) > 0.0)
               for amount in (request.milli_cpu, request.memory, *request.scalars.values()))


@attrs.define(eq=False, repr=False)
class JobInfo:
    """A job (pod group plus its tasks) with indexes kept in step by its mutators.

    Change a task's status only through :meth:`update_task_status` (the Statement
    does), so that ``task_status_index``, ``allocated`` and ``total_request``
    stay exact. :meth:`check_invariants` verifies them.

    Build one with :meth:`from_podgroup`, which reads ``min_available``,
    ``task_min_available``, the creation time and the annotations from the pod
    group, as Volcano's ``SetPodGroup`` does. These fields are the job's own
    afterwards: a pod group edited later (a new ``min_member``) changes the job only
    through :meth:`follow_pod_group` (``MemoryCache.update_pod_group`` calls it for
    a job a cache holds), as a pod group update replaces Volcano's.
    """

    uid: str
    name: str
    namespace: str
    queue: str
    podgroup: PodGroup
    priority: int = 0
    min_available: int = 0
    task_min_available: Mapping[str, int] = NO_COUNTS
    creation_time: float = 0.0
    preemptable: bool = False
    waiting_time: float | None = None
    #: How long the job says it will run, in seconds (``batchsched.io/requested-runtime``:
    #: the time limit a batch user asks for, as SWF's "requested time"); None if unsaid.
    requested_runtime: float | None = None
    #: How many processors the job asks (``batchsched.io/processors``: SWF's P, which
    #: the HPC job orders read); None: its total cpu request, in cores, stands for it.
    processors: float | None = None
    #: The session's reading of the pod group's network topology: tier names turned
    #: into tiers and soft turned into hard (Volcano's ``adjustNetworkTopologySpec``),
    #: set when a session opens; None: none.
    network_topology: NetworkTopology | None = None
    #: The hypernode the job's placed tasks lie within (Volcano's in-memory
    #: ``AllocatedHyperNode``), kept by the allocate action and carried by the cache.
    allocated_hyper_node: str = ""
    #: The same for each sub-job (:mod:`batchsched.api.sub_job`), by sub-job uid: the
    #: hypernode chosen within the job's, which can be a lower one. None: none yet.
    sub_job_hyper_nodes: dict[str, str] | None = None
    tasks: dict[str, TaskInfo] = attrs.field(factory=dict)
    task_status_index: dict[TaskStatus, dict[str, TaskInfo]] = attrs.field(factory=dict)
    allocated: Resource = attrs.field(factory=Resource)
    #: Every task's request summed (Volcano's ``TotalRequest``). Read-only: the job
    #: keeps it (a job of one task shares that task's request vector).
    total_request: Resource = attrs.field(factory=Resource)
    nodes_fit_errors: dict[str, FitErrors] = attrs.field(factory=dict)
    job_fit_errors: str = ""
    extra: dict[str, Any] = attrs.field(factory=dict)
    #: How many times a task was added, deleted or moved to another status: a job whose
    #: count has not moved holds the same tasks in the same states.
    mutations: int = 0
    # Per status, tasks per role; and pending tasks that need nothing to start, per role.
    # Kept by add_task/delete_task so that gang's per-role checks cost O(roles), not
    # O(tasks), however large the job. Most jobs set no per-role minimum and never ask:
    # the per-status counts are built when first asked for (None until then), and the
    # empty-request counts exist only once such a task is pending (None until then).
    _role_counts: dict[TaskStatus, dict[str, int]] | None = attrs.field(init=False,
                                                                       default=None)
    _empty_pending_roles: dict[str, int] | None = attrs.field(init=False, default=None)
    _pending_best_effort: int = attrs.field(init=False, default=0)
    # The request vector ``total_request`` is while the job has one task (the sum of
    # one request is that request, bit for bit): most jobs of a large cluster wait
    # with one task, and their totals cost nothing. Copied before any change.
    _shared_total: Resource | None = attrs.field(init=False, default=None)
    # Tasks in a ready status (gang's job order asks for it at every heap comparison).
    _ready: int = attrs.field(init=False, default=0)
    #: Answers worked out from this object and kept with it (by plugins and actions,
    #: under a key of their own), each stored with what it depends on, such as
    #: ``mutations``, and checked before use. A copy starts empty; snapshots that hand
    #: out the same object for an unchanged job keep them from session to session.
    memo: dict[str, Any] = attrs.field(init=False, factory=dict)

    @classmethod
    def from_podgroup(
        cls, podgroup: PodGroup, *, priority: int = 0, tasks: Iterable[TaskInfo] = ()
    ) -> JobInfo:
        job = cls(
            uid=podgroup.uid,
            name=podgroup.name,
            namespace=podgroup.namespace,
            queue=podgroup.queue,
            podgroup=podgroup,
            priority=priority,
            min_available=podgroup.min_member,
            task_min_available=podgroup.min_task_member,
            creation_time=podgroup.creation_time,
        )
        if podgroup.annotations or podgroup.labels:
            job._read_pod_group_settings()
        for task in tasks:
            job.add_task(task)
        return job

    def follow_pod_group(self, podgroup: PodGroup) -> None:
        """Read everything the job takes from a new version of its pod group, as
        :meth:`from_podgroup` does (its tasks stay as they are)."""
        self.podgroup = podgroup
        self.name = podgroup.name
        self.namespace = podgroup.namespace
        self.queue = podgroup.queue
        self.min_available = podgroup.min_member
        self.task_min_available = podgroup.min_task_member
        self.creation_time = podgroup.creation_time
        self._read_pod_group_settings()

    def _read_pod_group_settings(self) -> None:
        # Each of these reads an annotation (or label): most pod groups have none, and
        # then each is its field's default.
        podgroup = self.podgroup
        self.preemptable = _job_preemptable(podgroup)
        self.waiting_time = _job_waiting_time(podgroup.annotations)
        self.requested_runtime = requested_runtime_of(podgroup.annotations)
        self.processors = processors_of(podgroup.annotations)

    # -- indexes --------------------------------------------------------------------

    @property
    def task_min_available_total(self) -> int:
        return sum(self.task_min_available.values())

    def tasks_in(self, status: TaskStatus) -> Mapping[str, TaskInfo]:
        """The tasks of one status (an empty mapping when there are none)."""
        return self.task_status_index.get(status, _EMPTY)

    def add_task(self, task: TaskInfo) -> None:
        """Volcano's ``AddTaskInfo``."""
        self.mutations += 1
        first = not self.tasks
        self.tasks[task.uid] = task
        index = self.task_status_index.get(task.status)
        if index is None:
            index = self.task_status_index[task.status] = {}
        index[task.uid] = task
        total = self.total_request
        if (first and not (total.milli_cpu or total.memory or total.scalars)
                and _sums_to_itself(task.resreq)):
            self.total_request = self._shared_total = task.resreq
        else:
            self._own_total().add(task.resreq)
        if task.status in ALLOCATED_STATUSES:
            self.allocated.add(task.resreq)
        self._count_task(task, 1)

    def _own_total(self) -> Resource:
        """``total_request``, made the job's own first if it is a task's request."""
        if self.total_request is self._shared_total:
            self.total_request = self.total_request.clone()
        self._shared_total = None
        return self.total_request

    def _count_task(self, task: TaskInfo, step: int) -> None:
        role_counts = self._role_counts
        if role_counts is not None:
            roles = role_counts.get(task.status)
            if roles is None:
                roles = role_counts[task.status] = {}
            roles[task.role] = roles.get(task.role, 0) + step
        if task.status in _READY_STATUSES:
            self._ready += step
        if task.status == _PENDING:
            self._count_pending(task, step)

    def _count_pending(self, task: TaskInfo, step: int) -> None:
        if task.init_resreq.is_empty():
            empty = self._empty_pending_roles
            if empty is None:
                empty = self._empty_pending_roles = {}
            empty[task.role] = empty.get(task.role, 0) + step
        if task.best_effort:
            self._pending_best_effort += step

    def hide_resources(self, names: frozenset[str]) -> dict[str, dict[str, float]]:
        """Drop ``names`` from its tasks' requests (new vectors: the old ones may be
        shared with another copy of the task) and from its sums; per task changed,
        what it asked of them (a session hides what device models account for)."""
        hidden: dict[str, dict[str, float]] = {}
        for task in self.tasks.values():
            resreq = task.resreq.without(names)
            if resreq is task.resreq:
                continue
            hidden[task.uid] = {name: task.resreq.scalars[name] for name in names
                                if name in task.resreq.scalars}
            pending = task.status == _PENDING
            if pending:
                self._count_pending(task, -1)
            # One vector for both when they were one (most tasks).
            task.init_resreq = resreq if task.init_resreq is task.resreq \
                else task.init_resreq.without(names)
            task.resreq = resreq
            # A pod asking nothing but what is hidden is best-effort (Volcano's task is
            # built from the requests without them).
            task.best_effort = task.best_effort or resreq.is_empty()
            if pending:
                self._count_pending(task, 1)
        if hidden:
            self.mutations += 1
            self.memo.clear()
            self.allocated = self.allocated.without(names)
            self.total_request = self.total_request.without(names)
        if self.podgroup.min_resources is not None:
            self.podgroup.min_resources = self.podgroup.min_resources.without(names)
        return hidden

    def _recount_task(self, task: TaskInfo, old: TaskStatus, new: TaskStatus) -> None:
        """``_count_task(task, -1)`` as of status ``old``, then ``_count_task(task, 1)``
        as of ``new``, in one pass: the same counts, and keys added in the same order."""
        role = task.role
        role_counts = self._role_counts
        if role_counts is not None:
            roles = role_counts.get(old)
            if roles is None:
                roles = role_counts[old] = {}
            roles[role] = roles.get(role, 0) - 1
            roles = role_counts.get(new)
            if roles is None:
                roles = role_counts[new] = {}
            roles[role] = roles.get(role, 0) + 1
        if old in _READY_STATUSES:
            self._ready -= 1
        if new in _READY_STATUSES:
            self._ready += 1
        if old == _PENDING:
            self._count_pending(task, -1)
        if new == _PENDING:
            self._count_pending(task, 1)

    def delete_task(self, task: TaskInfo) -> None:
        """Volcano's ``DeleteTaskInfo``; a task the job does not hold is ignored."""
        held = self.tasks.pop(task.uid, None)
        if held is None:
            return
        self.mutations += 1
        self._own_total().sub_unchecked(held.resreq)
        if held.status in ALLOCATED_STATUSES:
            self.allocated.sub_unchecked(held.resreq)
        index = self.task_status_index.get(held.status)
        if index is not None:
            index.pop(held.uid, None)
            if not index:
                del self.task_status_index[held.status]
        self._count_task(held, -1)

    def update_task_status(self, task: TaskInfo, status: TaskStatus) -> None:
        """Move a task to another status, keeping every index exact."""
        self.mutations += 1
        uid = task.uid
        tasks = self.tasks
        if tasks.get(uid) is not task:
            # Not held, or another object under the same id: take that one off.
            if uid in tasks:
                self.delete_task(task)
            task.status = status
            self.add_task(task)
            return
        # delete_task then add_task, in one step: every index ends in the same order
        # (the task goes to the end of ``tasks`` and of its new status' index), and
        # the sums get the same float operations (the request is subtracted, then
        # added back).
        old = task.status
        del tasks[uid]
        tasks[uid] = task
        by_status = self.task_status_index
        index = by_status.get(old)
        if index is not None:
            index.pop(uid, None)
            if not index:
                del by_status[old]
        index = by_status.get(status)
        if index is None:
            index = by_status[status] = {}
        index[uid] = task
        req = task.resreq
        total = self.total_request
        if total is not self._shared_total:
            # A shared total is this task's request: (r - r) + r is r, bit for bit.
            total.readd(req)
        if old in ALLOCATED_STATUSES:
            if status in ALLOCATED_STATUSES:
                self.allocated.readd(req)
            else:
                self.allocated.sub_unchecked(req)
        elif status in ALLOCATED_STATUSES:
            self.allocated.add(req)
        task.status = status
        self._recount_task(task, old, status)

    def sub_job_hyper_node(self, uid: str) -> str:
        """Where the sub-job's placed tasks lie ("" when not known)."""
        held = self.sub_job_hyper_nodes
        return held.get(uid, "") if held else ""

    def set_sub_job_hyper_node(self, uid: str, name: str) -> None:
        if name:
            if self.sub_job_hyper_nodes is None:
                self.sub_job_hyper_nodes = {}
            self.sub_job_hyper_nodes[uid] = name
        elif self.sub_job_hyper_nodes:
            self.sub_job_hyper_nodes.pop(uid, None)

    def clone(self) -> JobInfo:
        """A copy whose tasks, indexes and resources are its own."""
        twin = attrs.evolve(
            self,
            sub_job_hyper_nodes=None if self.sub_job_hyper_nodes is None
            else dict(self.sub_job_hyper_nodes),
            podgroup=self.podgroup.clone(),
            task_min_available=self.task_min_available,
            tasks={},
            task_status_index={},
            allocated=self.allocated.clone(),
            total_request=self.total_request if self.total_request is self._shared_total
            else self.total_request.clone(),
            nodes_fit_errors={},
            extra=dict(self.extra),
        )
        # The indexes are copied, not rebuilt task by task: the copy is exactly the
        # state add_task would have built (check_invariants agrees), for less.
        tasks = {uid: task.clone() for uid, task in self.tasks.items()}
        twin.tasks = tasks
        twin.task_status_index = {
            status: {uid: tasks[uid] for uid in index}
            for status, index in self.task_status_index.items()
        }
        if self._role_counts is not None:
            twin._role_counts = {status: dict(counts)
                                 for status, counts in self._role_counts.items()}
        if self._empty_pending_roles is not None:
            twin._empty_pending_roles = dict(self._empty_pending_roles)
        twin._pending_best_effort = self._pending_best_effort
        twin._ready = self._ready
        # Its one task shares the request vector too (TaskInfo.clone).
        twin._shared_total = self._shared_total
        return twin

    # -- counts (seed 000 §4.6) -----------------------------------------------------

    def _count(self, statuses: frozenset[TaskStatus]) -> int:
        # A job has tasks in few statuses at once: walk those, not the whole set.
        count = 0
        for status, tasks in self.task_status_index.items():
            if status in statuses:
                count += len(tasks)
        return count

    def ready_task_num(self) -> int:
        return self._ready

    def waiting_task_num(self) -> int:
        return len(self.task_status_index.get(_PIPELINED, _EMPTY))

    def pending_best_effort_task_num(self) -> int:
        return self._pending_best_effort

    def allocated_task_num(self) -> int:
        return self._count(ALLOCATED_STATUSES)

    def valid_task_num(self) -> int:
        return self._count(_VALID_STATUSES)

    def scheduled_task_num(self) -> int:
        return self._count(SCHEDULED_STATUSES)

    def releasing_scheduled_task_num(self) -> int:
        releasing = self.task_status_index.get(TaskStatus.RELEASING)
        if not releasing:  # most jobs: no generator to run (asked for each job at close)
            return 0
        return sum(1 for t in releasing.values() if t.node_name)

    def is_ready(self) -> bool:
        # ready_task_num() + pending_best_effort_task_num(), read directly: the gang
        # job order asks this at every heap comparison.
        return self._ready + self._pending_best_effort >= self.min_available

    def is_pipelined(self) -> bool:
        return (
            self.waiting_task_num() + self.ready_task_num() + self.pending_best_effort_task_num()
            >= self.min_available
        )

    def is_starving(self) -> bool:
        return self.waiting_task_num() + self.ready_task_num() < self.min_available

    def is_pending(self) -> bool:
        return self.podgroup.phase == PodGroupPhase.PENDING

    def has_pending_tasks(self) -> bool:
        return bool(self.task_status_index.get(_PENDING))

    # -- per-role checks ------------------------------------------------------------

    def _roles(self, statuses: frozenset[TaskStatus], *, empty_pending: bool) -> dict[str, int]:
        counts: dict[str, int] = {}
        role_counts = self._role_counts
        if role_counts is None:
            role_counts = self._role_counts = {}
            for status, index in self.task_status_index.items():
                per_role = role_counts[status] = {}
                for task in index.values():
                    per_role[task.role] = per_role.get(task.role, 0) + 1
        sources = [role_counts.get(s, _NO_ROLES) for s in statuses]
        if empty_pending and self._empty_pending_roles is not None:
            sources.append(self._empty_pending_roles)
        for roles in sources:
            for role, n in roles.items():
                counts[role] = counts.get(role, 0) + n
        return counts

    def _roles_reach_minimums(
        self, statuses: frozenset[TaskStatus], *, empty_pending: bool
    ) -> bool:
        # Most jobs set no per-role minimum: then nothing needs counting.
        if not self.task_min_available:
            return True
        return self._roles_meet_minimums(self._roles(statuses, empty_pending=empty_pending))

    def _roles_meet_minimums(self, counts: Mapping[str, int]) -> bool:
        return all(
            counts.get(role, 0) >= minimum
            for role, minimum in self.task_min_available.items()
            if minimum
        )

    def check_task_valid(self) -> bool:
        if self.min_available < self.task_min_available_total:
            return True
        return self._roles_reach_minimums(_VALID_STATUSES, empty_pending=False)

    def check_task_ready(self) -> bool:
        if self.min_available < self.task_min_available_total:
            return True
        return self._roles_reach_minimums(_READY_STATUSES, empty_pending=True)

    def check_task_pipelined(self) -> bool:
        if self.min_available < self.task_min_available_total:
            return True
        statuses = _READY_STATUSES | {_PIPELINED}
        return self._roles_reach_minimums(statuses, empty_pending=True)

    def check_task_starving(self) -> bool:
        if self.min_available < self.task_min_available_total:
            return True
        statuses = _READY_STATUSES | {_PIPELINED}
        return not self._roles_reach_minimums(statuses, empty_pending=False)

    def allocated_roles(self) -> dict[str, int]:
        """Tasks per role holding resources, finished, or pending with empty requests."""
        return self._roles(_READY_STATUSES, empty_pending=True)

    # -- allocation bookkeeping -----------------------------------------------------

    def fit_failed_roles(self) -> set[str]:
        return {self.tasks[tid].role for tid in self.nodes_fit_errors if tid in self.tasks}

    def task_has_fit_errors(self, task: TaskInfo) -> bool:
        """A role-bearing task whose role already failed predicates in this pass."""
        return bool(task.role) and task.role in self.fit_failed_roles()

    def need_continue_allocating(self) -> bool:
        """Whether allocate should try the job's remaining tasks after a failure."""
        # Volcano tests ``==`` on the job, then ``>=`` on its default sub-job, whose
        # minimum and tasks are the job's: together, ``>=``.
        if self.min_available >= len(self.tasks):
            return False
        failed = self.fit_failed_roles()
        if self.min_available < self.task_min_available_total:
            pending: dict[str, int] = {}
            for task in self.tasks_in(_PENDING).values():
                pending[task.role] = pending.get(task.role, 0) + 1
            left = sum(n for role, n in pending.items() if role not in failed)
            return self.ready_task_num() + left >= self.min_available
        allocated = self.allocated_roles()
        for role in failed:
            minimum = self.task_min_available.get(role, 0)
            if minimum and allocated.get(role, 0) < minimum:
                return False
        return True

    def fit_error(self) -> str:
        """Volcano's ``JobInfo.FitError`` summary (the message of gang's condition)."""
        pending = self.task_status_index.get(_PENDING)
        if self.job_fit_errors or self.nodes_fit_errors or (pending and any(
                task.last_transaction is not None for task in pending.values())):
            return self._fit_error()
        # The common case (no fit error, no pending task tried) depends on the counts
        # alone, and many jobs share them (every waiting job of a queue): one message
        # per shape.
        shape = (tuple([(status, len(tasks)) for status, tasks
                        in self.task_status_index.items()]),
                 self.min_available, self.is_ready())
        message = _FIT_ERRORS_BY_SHAPE.get(shape)
        if message is None:
            message = self._fit_error()
            if len(_FIT_ERRORS_BY_SHAPE) >= _MAX_SHAPES:
                _FIT_ERRORS_BY_SHAPE.clear()
            _FIT_ERRORS_BY_SHAPE[shape] = message
        return message

    def _fit_error(self) -> str:
        # One entry per status (each has its own name, so no two entries merge), then
        # minAvailable: the histogram's entries written out directly.
        counts = [f"{len(tasks)} {_STATUS_NAMES[status]}"
                  for status, tasks in self.task_status_index.items()]
        counts.append(f"{self.min_available} minAvailable")
        counts.sort()
        ready = "pod group is ready" if self.is_ready() else "pod group is not ready"
        message = f"{ready}, {', '.join(counts)}"
        pending_reasons: dict[str, int] = {}
        untouched = 0  # pending, no transaction: "Unschedulable" (most tasks of a queue)
        pending = self.task_status_index.get(_PENDING)
        if pending:
            for task in pending.values():
                if task.last_transaction is None:
                    untouched += 1
                    continue
                reason = _reason_of(task)
                pending_reasons[reason] = pending_reasons.get(reason, 0) + 1
        if untouched:
            if not pending_reasons:  # the usual case: every pending task untouched
                message += f"; Pending: {untouched} {_UNSCHEDULABLE}"
            else:
                pending_reasons[_UNSCHEDULABLE] = (
                    pending_reasons.get(_UNSCHEDULABLE, 0) + untouched)
        if pending_reasons:
            parts = sorted(f"{n} {k}" for k, n in pending_reasons.items())
            message += f"; Pending: {', '.join(parts)}"
        if self.job_fit_errors:
            message += ". Origin reason is: " + self.job_fit_errors
        elif self.nodes_fit_errors:
            # Volcano names the first of a Go map (any); here the first task whose fit
            # errors were recorded, which the session's task order gives, whatever
            # order the job's tasks were added in.
            for uid, errs in self.nodes_fit_errors.items():
                origin = self.tasks.get(uid)
                if origin is not None:
                    message += f". Origin reason is {origin.name}: {errs}"
                    break
        return message

    def task_scheduling_reason(self, task_uid: str) -> tuple[str, str]:
        """(reason, message) for a task, from its last transaction (Volcano's wording)."""
        task = self.tasks.get(task_uid)
        if task is None:
            return "", ""
        ctx = task.last_transaction or task.transaction
        if ctx.status == TaskStatus.ALLOCATED:
            return "Schedulable", (
                f"Pod {task.namespace}/{task.name} can possibly be assigned to "
                f"{ctx.node_name}, once minAvailable is satisfied"
            )
        if ctx.status == _PIPELINED:
            return "Unschedulable", (
                f"Pod {task.namespace}/{task.name} can possibly be assigned to "
                f"{ctx.node_name}, once resource is released and minAvailable is satisfied"
            )
        if ctx.status == _PENDING:
            errs = self.nodes_fit_errors.get(task_uid)
            return "Unschedulable", str(errs) if errs is not None else self.job_fit_errors
        return str(ctx.status), self.job_fit_errors

    def _scheduling_reason(self, task_uid: str) -> str:
        """The reason of :meth:`task_scheduling_reason` alone, without building the
        message (:meth:`fit_error` counts the reasons of every pending task)."""
        task = self.tasks.get(task_uid)
        return "" if task is None else _reason_of(task)

    def check_invariants(self) -> None:
        """Raise AssertionError unless every index and sum matches the tasks."""
        indexed = {uid for index in self.task_status_index.values() for uid in index}
        assert indexed == set(self.tasks), f"{self.uid}: status index out of step"
        for status, index in self.task_status_index.items():
            assert index, f"{self.uid}: empty index kept for {status}"
            for task in index.values():
                assert task.status == status, f"{task.uid} indexed as {status}"
            roles: dict[str, int] = {}
            for task in index.values():
                roles[task.role] = roles.get(task.role, 0) + 1
            if self._role_counts is not None:
                counted = {r: n for r, n in self._role_counts.get(status, {}).items() if n}
                assert counted == roles, f"{self.uid}: role counts out of step for {status}"
        total, allocated = Resource(), Resource()
        for task in self.tasks.values():
            total.add(task.resreq)
            if task.status in ALLOCATED_STATUSES:
                allocated.add(task.resreq)
        assert total.equal(self.total_request), f"{self.uid}: total_request out of step"
        assert allocated.equal(self.allocated), f"{self.uid}: allocated out of step"
        assert self._ready == self._count(_READY_STATUSES), f"{self.uid}: ready count out of step"

    def __repr__(self) -> str:
        return f"<Job {self.uid} queue={self.queue} tasks={len(self.tasks)}>"


_EMPTY: Mapping[str, TaskInfo] = {}
_NO_ROLES: Mapping[str, int] = {}


#: Pod-group annotations giving a job's SLA waiting time, read in this order (Volcano's).
SLA_WAITING_TIME_ANNOTATIONS = ("volcano.sh/sla-waiting-time", "sla-waiting-time")
REQUESTED_RUNTIME_ANNOTATION = "batchsched.io/requested-runtime"
PROCESSORS_ANNOTATION = "batchsched.io/processors"


def waiting_time_from(text: str) -> float | None:
    """A positive Go duration in seconds, or None (invalid or not positive)."""
    from batchsched.framework.arguments import parse_duration

    try:
        seconds = parse_duration(text)
    except ValueError:
        return None
    return seconds if seconds > 0 else None


def _job_waiting_time(annotations: Mapping[str, str]) -> float | None:
    """The first annotation holding a valid positive duration (an invalid one falls
    through to the next, as Volcano's ``SetPodGroup`` does)."""
    for key in SLA_WAITING_TIME_ANNOTATIONS:
        if key in annotations:
            seconds = waiting_time_from(annotations[key])
            if seconds is not None:
                return seconds
    return None


_UNSCHEDULABLE = "Unschedulable"


def _reason_of(task: TaskInfo) -> str:
    """The scheduling reason of a task, from its last transaction (else its status)."""
    context = task.last_transaction
    status = task.status if context is None else context.status
    if status == TaskStatus.ALLOCATED:
        return "Schedulable"
    if status in (_PIPELINED, _PENDING):
        return "Unschedulable"
    return _STATUS_NAMES[status]


def processors_of(annotations: Mapping[str, str]) -> float | None:
    """The ``batchsched.io/processors`` annotation: a positive, finite number; None
    when absent or anything else.

    >>> processors_of({PROCESSORS_ANNOTATION: "3"})
    3.0
    """
    raw = annotations.get(PROCESSORS_ANNOTATION)
    if raw is None:
        return None
    try:
        value = float(raw)
    except ValueError:
        return None
    return value if math.isfinite(value) and value > 0 else None


def job_processors(job: JobInfo) -> float:
    """The processors a job asks: ``job.processors`` when given (an SWF job's P),
    else its total cpu request in cores."""
    return job.processors if job.processors is not None else job.total_request.milli_cpu / 1000.0


def requested_runtime_of(annotations: Mapping[str, str]) -> float | None:
    """The ``batchsched.io/requested-runtime`` annotation in seconds: a number
    (``"3600"``) or a Go duration (``"1h"``); None when absent, unreadable or negative.

    >>> requested_runtime_of({REQUESTED_RUNTIME_ANNOTATION: "1h30m"})
    5400.0
    """
    raw = annotations.get(REQUESTED_RUNTIME_ANNOTATION)
    if raw is None:
        return None
    from batchsched.framework.arguments import parse_seconds
    try:
        return parse_seconds(raw)
    except ValueError:
        return None


def _job_preemptable(podgroup: PodGroup) -> bool:
    for source in (podgroup.annotations, podgroup.labels):
        if "volcano.sh/preemptable" in source:
            return bool(parse_bool(source["volcano.sh/preemptable"]))
    return False
