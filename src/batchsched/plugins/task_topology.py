"""task-topology: keep the tasks of a job that talk to each other together, and apart
the ones that should not share a node (Volcano's ``plugins/task-topology``).

A job (pod group) opts in with annotations naming its roles (task specs: a pod's
``volcano.sh/task-spec`` annotation, the only place Volcano's task-topology reads
it; a pod with the label alone counts among the job's roles for the checks below,
as ``TaskInfo.role`` does, but is out of every bucket):

* ``volcano.sh/task-topology-affinity``: groups separated by ``;``, roles within a
  group by ``,``. A group of one role (``ps``) is *self affinity*: tasks of that role
  like to share a node; a group of several (``ps,worker``) is *inter affinity*:
  tasks of those roles like to share a node with each other;
* ``volcano.sh/task-topology-anti-affinity``: the same syntax, for *self* and
  *inter anti-affinity*: those tasks had better be on different nodes;
* ``volcano.sh/task-topology-task-order``: roles separated by ``,``, the earliest
  to be placed first within a bucket.

A role named in a group that no task of the job has, or named twice in one group
(or twice in the task order), makes the whole topology invalid: the job is left
alone for the session and the problem is logged once as a warning (Volcano logs
it and carries on). Names are not trimmed: ``"ps, worker"`` names the role
``" worker"``. Empty names (``"ps,,worker;"``) are skipped.

At session open, for every job with pending tasks and valid annotations, the
tasks whose role appears in an affinity or anti-affinity group are put in
**buckets**, sets of tasks meant for one node (the other tasks are *out of
bucket*):

1. tasks already on a node first, in node-name order: each node's tasks form one
   bucket;
2. then the others, by the task order annotation (earlier first), then by their
   role's strongest rule (self anti-affinity, then inter affinity, then self
   affinity, then inter anti-affinity, then none), then by name. Each joins the
   bucket it has the highest affinity with -- per task in the bucket, +1 for each
   one it has (self or inter) affinity with, -1 for each one it has anti-affinity
   with; among equals the bucket with the smallest request score (milli-cpu +
   memory in MiB + every scalar, milli-units, ``pods`` a plain count), then the
   oldest. A task whose best affinity is negative, or finds no bucket, opens a new
   one.

The plugin decides:

* **task order**: a task in a bucket goes before one out of bucket (also across
  jobs, when both jobs have buckets); within a job, a task of a bucket with more
  pending tasks goes first, then the task of the older bucket, and inside one
  bucket the task order annotation, then the strongest rule, decide;
* **node order** for task T of bucket B on node N, when N's idle plus releasing
  resources cover T's request (otherwise, or for a task out of bucket, 0):
  ``s = (tasks of B placed on N) + (anti-affinity count of T against the tasks of
  the job placed on N, when negative) + (pending tasks of B)``; if B's pending
  request does not fit N, one is taken off ``s`` for each other pending task of B
  removed, in the order they joined B, until the rest fits. The score is
  ``s * task-topology.weight * 100 / (size of the largest bucket of the job)``;
* **allocate/deallocate events**: a task placed on a node leaves its bucket's
  pending tasks and counts as placed on that node; a discarded placement or an
  eviction undoes this exactly (the fix of Volcano pull request 5248; released
  Volcano has no deallocate handler). Tasks already on a node at session open
  count there too (same pull request).

Volcano takes a bucket's other tasks off in Go map order (random) when scoring;
batchsched takes them in joining order, so that a session decides the same way
twice.

Argument ``task-topology.weight`` (integer, default 1).
"""

from __future__ import annotations

import enum
import logging
from collections.abc import Iterable, Mapping

import attrs

from batchsched.api.job import JobInfo
from batchsched.api.node import NodeInfo
from batchsched.api.resource import DimensionDefault, Resource
from batchsched.api.task import TASK_SPEC_KEY, TaskInfo
from batchsched.framework.arguments import Arguments, warned_once
from batchsched.framework.events import Event, EventHandler
from batchsched.framework.session import Session
from batchsched.kube.go_strconv import int64

__all__ = [
    "AFFINITY_ANNOTATION",
    "ANTI_AFFINITY_ANNOTATION",
    "TASK_ORDER_ANNOTATION",
    "WEIGHT_ARGUMENT",
    "Bucket",
    "InvalidTopologyError",
    "JobTopology",
    "RuleKind",
    "TaskTopology",
    "TaskTopologyPlugin",
    "read_topology",
]

log = logging.getLogger("batchsched")

PLUGIN_NAME = "task-topology"
WEIGHT_ARGUMENT = "task-topology.weight"
AFFINITY_ANNOTATION = "volcano.sh/task-topology-affinity"
ANTI_AFFINITY_ANNOTATION = "volcano.sh/task-topology-anti-affinity"
TASK_ORDER_ANNOTATION = "volcano.sh/task-topology-task-order"
MAX_NODE_SCORE = 100
_MIB = 1024 * 1024

#: (job, problem) pairs already logged: the same annotation is read every session.
_WARNED: set[tuple[str, str]] = warned_once()


class RuleKind(enum.IntEnum):
    """A kind of topology rule; the value is its strength in the task order."""

    INTER_ANTI_AFFINITY = 1
    SELF_AFFINITY = 2
    INTER_AFFINITY = 3
    SELF_ANTI_AFFINITY = 4


class InvalidTopologyError(ValueError):
    """A job's task-topology annotations name a role it does not have, or one twice."""


@attrs.frozen
class TaskTopology:
    """A job's annotations, split: groups of roles, and the task order."""

    affinity: tuple[tuple[str, ...], ...] = ()
    anti_affinity: tuple[tuple[str, ...], ...] = ()
    task_order: tuple[str, ...] = ()


def read_topology(job: JobInfo) -> TaskTopology | None:
    """The job's topology; None when it has none of the three annotations.

    Raises :class:`InvalidTopologyError` when a group (or the task order) names a role
    no task of the job has, or a role twice; the first problem found is reported,
    reading affinity, then anti-affinity, then the task order.
    """
    annotations = job.podgroup.annotations
    if not any(key in annotations for key in
               (AFFINITY_ANNOTATION, ANTI_AFFINITY_ANNOTATION, TASK_ORDER_ANNOTATION)):
        return None
    roles = {task.role for task in job.tasks.values()}
    groups: dict[str, tuple[tuple[str, ...], ...]] = {}
    for key in (AFFINITY_ANNOTATION, ANTI_AFFINITY_ANNOTATION):
        if key in annotations:
            groups[key] = tuple(tuple(part.split(",")) for part in annotations[key].split(";"))
            _check_groups(job, key, groups[key], roles)
    task_order: tuple[str, ...] = ()
    if TASK_ORDER_ANNOTATION in annotations:
        task_order = tuple(annotations[TASK_ORDER_ANNOTATION].split(","))
        _check_groups(job, TASK_ORDER_ANNOTATION, (task_order,), roles)
    return TaskTopology(groups.get(AFFINITY_ANNOTATION, ()),
                        groups.get(ANTI_AFFINITY_ANNOTATION, ()), task_order)


def _check_groups(job: JobInfo, key: str, groups: Iterable[tuple[str, ...]],
                  roles: set[str]) -> None:
    for group in groups:
        seen: set[str] = set()
        for role in group:
            if not role:
                continue
            if role not in roles:
                raise InvalidTopologyError(
                    f"{key}: task {role!r} does not exist in job {job.namespace}/{job.name}")
            if role in seen:
                raise InvalidTopologyError(
                    f"{key}: task {role!r} is duplicate in job {job.namespace}/{job.name}")
            seen.add(role)


def request_score(request: Resource) -> float:
    """How big a request is, for balancing buckets: 1 milli-cpu, 1 MiB of memory and
    one unit of any scalar (milli-units; ``pods`` is a plain count) weigh the same."""
    return request.milli_cpu + request.memory / _MIB + sum(request.scalars.values())


def _spec(task: TaskInfo) -> str:
    """The task's spec as Volcano's task-topology reads it (``getTaskName``): the pod's
    ``volcano.sh/task-spec`` annotation only. A role ``TaskInfo.role`` took from the
    label alone is none here (that task is out of every bucket); a role given as such
    (a scenario's ``role``) stands for the annotation Volcano's job controller writes."""
    annotated = task.annotations.get(TASK_SPEC_KEY)
    if annotated is not None:
        return annotated
    if task.labels.get(TASK_SPEC_KEY) == task.role:
        return ""
    return task.role


class Bucket:
    """Tasks of one job meant for one node."""

    def __init__(self, index: int) -> None:
        self.index = index
        #: Tasks waiting for a node, by uid, in the order they joined.
        self.pending: dict[str, TaskInfo] = {}
        #: How many tasks of each role ever joined (placed or not).
        self.role_counts: dict[str, int] = {}
        self.request = Resource()
        self.request_score = 0.0
        self.placed_count = 0
        #: How many of the bucket's tasks are placed on each node.
        self.placed_on: dict[str, int] = {}

    @property
    def size(self) -> int:
        return len(self.pending) + self.placed_count

    def add(self, task: TaskInfo) -> None:
        self.role_counts[_spec(task)] = self.role_counts.get(_spec(task), 0) + 1
        if task.node_name:
            self._count_placed(task.node_name, 1)
            return
        self._hold(task)

    def task_placed(self, task: TaskInfo) -> None:
        self._count_placed(task.node_name, 1)
        self.pending.pop(task.uid, None)
        self.request.sub_unchecked(task.resreq)
        self.request_score -= request_score(task.resreq)

    def task_unplaced(self, task: TaskInfo) -> None:
        if task.node_name:
            self._count_placed(task.node_name, -1)
        elif self.placed_count > 0:
            self.placed_count -= 1
        self._hold(task)

    def _hold(self, task: TaskInfo) -> None:
        self.pending[task.uid] = task
        self.request.add(task.resreq)
        self.request_score += request_score(task.resreq)

    def _count_placed(self, node_name: str, step: int) -> None:
        count = self.placed_on.get(node_name, 0) + step
        if count > 0:
            self.placed_on[node_name] = count
        else:
            self.placed_on.pop(node_name, None)
        self.placed_count = max(self.placed_count + step, 0)

    def __repr__(self) -> str:
        return (f"<Bucket {self.index} pending={sorted(self.pending)} "
                f"placed={dict(sorted(self.placed_on.items()))}>")


def _add_pairs(table: dict[str, set[str]], group: tuple[str, ...]) -> None:
    for position, role in enumerate(group):
        for earlier in group[:position]:
            table.setdefault(role, set()).add(earlier)
            table.setdefault(earlier, set()).add(role)


def _count_role(table: dict[str, dict[str, int]], node_name: str, role: str, step: int) -> None:
    roles = table.setdefault(node_name, {})
    count = roles.get(role, 0) + step
    if count > 0:
        roles[role] = count
    else:
        roles.pop(role, None)
    if not roles:
        del table[node_name]


class JobTopology:
    """One job's rules and buckets (Volcano's ``JobManager``)."""

    def __init__(self, job_uid: str, topology: TaskTopology) -> None:
        self.job_uid = job_uid
        self.buckets: list[Bucket] = []
        self.bucket_by_task: dict[str, Bucket] = {}
        #: role -> its strongest rule's strength; a role listed here is in buckets.
        self.strength: dict[str, int] = {}
        #: role -> rank from the task order annotation (higher goes first).
        self.rank: dict[str, int] = {}
        self.self_affinity: set[str] = set()
        self.self_anti_affinity: set[str] = set()
        self.inter_affinity: dict[str, set[str]] = {}
        self.inter_anti_affinity: dict[str, set[str]] = {}
        #: The most tasks any bucket held while the buckets were built.
        self.largest_bucket = 0
        #: node -> role -> how many tasks of the job with that role are placed there.
        self.roles_on_node: dict[str, dict[str, int]] = {}
        self._apply(topology)

    def _apply(self, topology: TaskTopology) -> None:
        rules = ((topology.affinity, self.self_affinity, self.inter_affinity,
                  RuleKind.SELF_AFFINITY, RuleKind.INTER_AFFINITY),
                 (topology.anti_affinity, self.self_anti_affinity, self.inter_anti_affinity,
                  RuleKind.SELF_ANTI_AFFINITY, RuleKind.INTER_ANTI_AFFINITY))
        for groups, self_rule, inter_rule, self_kind, inter_kind in rules:
            for group in groups:
                if len(group) == 1:
                    self_rule.add(group[0])
                    self._mark(group[0], self_kind)
                    continue
                _add_pairs(inter_rule, group)
                for role in group:
                    self._mark(role, inter_kind)
        for position, role in enumerate(topology.task_order):
            self.rank[role] = len(topology.task_order) - position

    def _mark(self, role: str, kind: RuleKind) -> None:
        self.strength[role] = max(self.strength.get(role, 0), int(kind))

    # -- building ---------------------------------------------------------------------

    def build(self, tasks: Iterable[TaskInfo]) -> None:
        """Put the tasks whose role has a rule in buckets (see the module docstring)."""
        in_buckets = [task for task in tasks if _spec(task) and _spec(task) in self.strength]
        placed = sorted((task for task in in_buckets if task.node_name),
                        key=lambda task: task.node_name)
        waiting = sorted((task for task in in_buckets if not task.node_name),
                         key=lambda task: (-self.rank.get(_spec(task), 0),
                                           -self.strength[_spec(task)], task.name))
        bucket_of_node: dict[str, Bucket] = {}
        for task in placed:
            bucket = bucket_of_node.get(task.node_name)
            if bucket is None:
                bucket = bucket_of_node[task.node_name] = self._new_bucket()
            self._put(bucket, task)
        for task in waiting:
            best: Bucket | None = None
            best_affinity = 0
            for bucket in self.buckets:
                affinity = self.affinity_with(_spec(task), bucket.role_counts)
                if best is None or affinity > best_affinity or (
                        affinity == best_affinity and bucket.request_score < best.request_score):
                    best, best_affinity = bucket, affinity
            if best is None or best_affinity < 0:
                best = self._new_bucket()
            self._put(best, task)

    def _new_bucket(self) -> Bucket:
        bucket = Bucket(len(self.buckets))
        self.buckets.append(bucket)
        return bucket

    def _put(self, bucket: Bucket, task: TaskInfo) -> None:
        self.bucket_by_task[task.uid] = bucket
        bucket.add(task)
        if task.node_name:
            _count_role(self.roles_on_node, task.node_name, _spec(task), 1)
        self.largest_bucket = max(self.largest_bucket, bucket.size)

    # -- rules ------------------------------------------------------------------------

    def affinity_with(self, role: str, role_counts: Mapping[str, int], *,
                      anti_only: bool = False) -> int:
        """+1 per task of ``role_counts`` that ``role`` has affinity with (unless
        ``anti_only``), -1 per task it has anti-affinity with."""
        if not role:
            return 0
        total = 0
        for other, count in role_counts.items():
            if other == role:
                liked, disliked = role in self.self_affinity, role in self.self_anti_affinity
            else:
                liked = other in self.inter_affinity.get(role, ())
                disliked = other in self.inter_anti_affinity.get(role, ())
            if liked and not anti_only:
                total += count
            if disliked:
                total -= count
        return total

    def role_order(self, left: TaskInfo, right: TaskInfo) -> int:
        """1 when ``left``'s role goes before ``right``'s (task order annotation, then
        strongest rule), -1 when after, 0 for the same role or equal roles."""
        if _spec(left) == _spec(right):
            return 0
        left_key = (self.rank.get(_spec(left), 0), self.strength.get(_spec(left), 0))
        right_key = (self.rank.get(_spec(right), 0), self.strength.get(_spec(right), 0))
        return (left_key > right_key) - (left_key < right_key)

    def bucket_of(self, task: TaskInfo) -> Bucket | None:
        return self.bucket_by_task.get(task.uid)

    # -- events -----------------------------------------------------------------------

    def task_placed(self, task: TaskInfo) -> None:
        if _spec(task):
            _count_role(self.roles_on_node, task.node_name, _spec(task), 1)
        bucket = self.bucket_of(task)
        if bucket is not None:
            bucket.task_placed(task)

    def task_unplaced(self, task: TaskInfo) -> None:
        if _spec(task) and task.node_name in self.roles_on_node:
            _count_role(self.roles_on_node, task.node_name, _spec(task), -1)
        bucket = self.bucket_of(task)
        if bucket is not None:
            bucket.task_unplaced(task)

    # -- score ------------------------------------------------------------------------

    def bucket_score(self, task: TaskInfo, bucket: Bucket, node: NodeInfo,
                     room: Resource) -> int:
        """The unscaled node score of ``task`` of ``bucket`` (see the module docstring);
        ``room`` is the node's idle plus releasing resources."""
        score = bucket.placed_on.get(node.name, 0)
        roles_here = self.roles_on_node.get(node.name)
        if roles_here:
            score += min(self.affinity_with(_spec(task), roles_here, anti_only=True), 0)
        score += len(bucket.pending)
        if bucket.request.less_equal(room, DimensionDefault.ZERO):
            return score
        # Volcano drops tasks in map order (random); the joining order keeps it repeatable.
        remains = bucket.request.clone()
        for uid, other in bucket.pending.items():
            if uid == task.uid:
                continue
            remains.sub_unchecked(other.resreq)
            score -= 1
            if remains.less_equal(room, DimensionDefault.ZERO):
                break
        return score

    def __repr__(self) -> str:
        return f"<JobTopology {self.job_uid} largest={self.largest_bucket} {self.buckets}>"


class TaskTopologyPlugin:
    """Volcano's task-topology plugin (see the module docstring)."""

    name = PLUGIN_NAME

    def __init__(self, arguments: Arguments) -> None:
        self.arguments = arguments
        self.weight = arguments.get_int(WEIGHT_ARGUMENT, 1, owner=self.name)
        arguments.warn_unknown(self.name, [WEIGHT_ARGUMENT])
        #: job uid -> its buckets, for the jobs of this session that have a topology.
        self.jobs: dict[str, JobTopology] = {}

    def on_session_open(self, ssn: Session) -> None:
        self.jobs = {}
        for job in ssn.jobs.values():
            if not job.has_pending_tasks():
                continue
            try:
                topology = read_topology(job)
            except InvalidTopologyError as problem:
                _warn_once(job.uid, str(problem))
                continue
            if topology is None:
                continue
            manager = JobTopology(job.uid, topology)
            manager.build(job.tasks.values())
            self.jobs[job.uid] = manager
        if not self.jobs:
            # Every answer would be 0 and every event a no-op.
            return
        ssn.add_task_order_fn(self.name, self.task_order)
        ssn.add_node_order_fn(self.name, self.node_order)
        ssn.add_event_handler(EventHandler(allocate=self._on_allocate,
                                           deallocate=self._on_deallocate, plugin=self.name))

    def on_session_close(self, ssn: Session) -> None:
        self.jobs = {}

    def task_order(self, left: TaskInfo, right: TaskInfo) -> int:
        left_job, right_job = self.jobs.get(left.job), self.jobs.get(right.job)
        if left_job is None or right_job is None:
            return 0
        left_bucket, right_bucket = left_job.bucket_of(left), right_job.bucket_of(right)
        if (left_bucket is None) != (right_bucket is None):
            return -1 if left_bucket is not None else 1
        if left.job != right.job or left_bucket is None or right_bucket is None:
            return 0
        left_pending, right_pending = len(left_bucket.pending), len(right_bucket.pending)
        if left_pending != right_pending:
            return -1 if left_pending > right_pending else 1
        if left_bucket is right_bucket:
            return -left_job.role_order(left, right)
        return -1 if left_bucket.index < right_bucket.index else 1

    def node_order(self, task: TaskInfo, node: NodeInfo) -> float:
        room = node.idle.clone().add(node.releasing)
        if room.less_partly(task.resreq, DimensionDefault.ZERO):
            return 0.0
        manager = self.jobs.get(task.job)
        if manager is None:
            return 0.0
        bucket = manager.bucket_of(task)
        score = 0 if bucket is None else manager.bucket_score(task, bucket, node, room)
        scaled = float(int64(score * self.weight))  # Go multiplies two ints
        if manager.largest_bucket:
            scaled = scaled * MAX_NODE_SCORE / manager.largest_bucket
        return scaled

    def _on_allocate(self, event: Event) -> None:
        manager = self.jobs.get(event.task.job)
        if manager is not None:
            manager.task_placed(event.task)

    def _on_deallocate(self, event: Event) -> None:
        manager = self.jobs.get(event.task.job)
        if manager is not None:
            manager.task_unplaced(event.task)


def _warn_once(job_uid: str, problem: str) -> None:
    if (job_uid, problem) in _WARNED:
        return
    _WARNED.add((job_uid, problem))
    log.warning("plugin %r: ignoring the task topology of job %s: %s", PLUGIN_NAME, job_uid,
                problem)
