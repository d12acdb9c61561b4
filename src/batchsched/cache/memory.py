"""MemoryCache: an in-memory cluster a host (or a test) drives sessions against.

>>> from batchsched.api import Resource, NodeInfo
>>> cache = MemoryCache()
>>> cache.add_node(NodeInfo.create("n1", Resource.from_mapping({"cpu": 4, "pods": 10})))
>>> sorted(cache.snapshot().nodes)
['n1']
"""

from __future__ import annotations

import collections
import functools
import itertools
import logging
import math
import numbers
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from types import MappingProxyType
from typing import Any, Concatenate, ParamSpec, TypeVar

import attrs

from batchsched.api.ascend import drop_vnpu_annotations
from batchsched.api.cluster import (
    SYSTEM_PRIORITY_CLASSES,
    ClusterInfo,
    PodDisruptionBudget,
    PriorityClass,
    ResourceQuota,
)
from batchsched.api.devices import gpu_ask, serves
from batchsched.api.gpushare import drop_gpu_index
from batchsched.api.hypernode import (
    CLUSTER_TOP,
    HyperNode,
    NetworkTopology,
    TopologyError,
    build_topology,
    unmatched_brackets,
)
from batchsched.api.job import JobInfo, PodGroup
from batchsched.api.node import NodeInfo
from batchsched.api.node_lock import locks_released_by
from batchsched.api.queue import ROOT_QUEUE, QueueInfo
from batchsched.api.resource import Resource
from batchsched.api.sharding import NodeShard, nodes_in_shard
from batchsched.api.sub_job import SubGroupPolicy
from batchsched.api.task import TaskInfo, same_creation_time
from batchsched.api.types import COMPLETED_STATUSES, PodGroupCondition, TaskStatus
from batchsched.api.vgpu import drop_device_annotations
from batchsched.errors import SchedulingError
from batchsched.framework.events import RecordedEvent
from batchsched.kube.affinity import AffinityError
from batchsched.kube.cel.re2 import Re2Error
from batchsched.kube.dra.claims import (
    check_reservations,
    claim_keys,
    instantiate_templates,
    release_claims,
    reserve_claims,
)
from batchsched.kube.dra.objects import (
    DeviceClass,
    PodClaim,
    ResourceClaim,
    ResourceClaimTemplate,
    ResourceSlice,
)
from batchsched.kube.dra.scheduling import DraObjects
from batchsched.kube.host_ports import HostPort
from batchsched.kube.pod_view import task_affinity
from batchsched.kube.taints import Taint, Toleration
from batchsched.kube.topology_spread import SpreadConstraint

__all__ = ["Bind", "Eviction", "MemoryCache", "check_bind_room"]

log = logging.getLogger("batchsched")


@attrs.frozen
class Bind:
    task: str
    node: str


@attrs.frozen
class Eviction:
    task: str
    reason: str


Binder = Callable[[TaskInfo, str], bool]

_P = ParamSpec("_P")
_R = TypeVar("_R")


def _locked(method: Callable[Concatenate[MemoryCache, _P], _R]) -> Callable[
        Concatenate[MemoryCache, _P], _R]:
    """Run the method holding the cache's lock (see the threading contract)."""
    @functools.wraps(method)
    def locked(self: MemoryCache, /, *args: _P.args, **kwargs: _P.kwargs) -> _R:
        with self._lock:
            return method(self, *args, **kwargs)
    return locked


def check_bind_room(task: TaskInfo, node_name: str, idle: Resource) -> None:
    """Volcano's AddBindTask: the Binding task is put on the cache's node, which checks
    its room first (``idle``, the cache's view of the node); a SchedulingError with
    Volcano's words when it has none. The session's request leaves out what its device
    plugins account for themselves."""
    fits, short = task.resreq.less_equal_with_names(idle)
    if not fits:
        raise SchedulingError(f"node {node_name} resources {short} are not enough to put "
                              f"task {task.uid}, idle: {idle}, req: {task.resreq}")


#: How many snapshots back :meth:`MemoryCache.nodes_renewed_since` can tell.
_RENEWALS_KEPT = 64


class MemoryCache:
    """Nodes, jobs (with their tasks), queues and the rest, held in memory.

    A bind makes the cache's task Bound on its node; an eviction makes it
    Releasing. ``now`` fixes the sessions' clock (seconds since the epoch; 0 is a
    valid instant); by default each session reads the real time. ``binder``
    (optional) decides whether a bind succeeds, to model a host whose binds can
    fail: a refused bind changes nothing here, and the session returns the task to
    Pending. ``keep_events=False`` drops recorded events (a long replay makes many).

    **Threading.** Every method takes the cache's lock (a re-entrant lock), and
    :meth:`snapshot` copies under it: a host may change the cache from other
    threads (an informer's callbacks) while a scheduling cycle runs, since the
    session works on its snapshot and hands back its decisions through
    :meth:`bind`, :meth:`evict` and :meth:`update_job_status`, which take the
    lock too. Objects read from ``nodes`` or ``jobs`` directly are not
    protected; :meth:`updates` holds the lock over several changes.

    ``incremental_snapshots=True`` makes :meth:`snapshot` hand out again the copy
    of a node or job from the previous snapshot when neither the cache nor the
    session moved a task of it (their ``mutations`` counts tell), resetting what
    a session writes besides task moves (the pod group, fit errors, ``extra``).
    It is exact under two rules that the simulator keeps: change the cache's
    objects only through its methods, and let plugins change session objects
    only through statements (as the built-ins do). A copy handed out again is
    the same object: a caller that keeps snapshots must not turn it on. Sessions
    over such a cache also carry what they work out from the nodes (the Kubernetes
    node view, the node arrays, the allocatable total) from one to the next,
    reading again only the nodes whose copies are new: open them one at a time.
    """

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        # A subclass that watches statuses or events (its own update_job_status or
        # record_event, or a mixin's) gets every status through update_job_status,
        # each before its job's event, as sessions hand them to caches without the
        # bulk method; unless it offers a bulk method of its own.
        if cls.update_job_statuses is MemoryCache.update_job_statuses and (
                cls.update_job_status is not MemoryCache.update_job_status
                or cls.record_event is not MemoryCache.record_event):
            setattr(cls, "update_job_statuses", None)  # noqa: B010 (a method turned off)

    def __init__(
        self,
        *,
        binder: Binder | None = None,
        now: float | None = None,
        keep_events: bool = True,
        incremental_snapshots: bool = False,
    ) -> None:
        self.nodes: dict[str, NodeInfo] = {}
        self.jobs: dict[str, JobInfo] = {}
        #: Which job holds each pod id, and the node of each foreign pod: a pod id is
        #: one pod (entries a host's own bookkeeping made stale are checked before use).
        self._pod_owners: dict[str, str] = {}
        self._foreign_pods: dict[str, str] = {}
        # Volcano's cache creates both when they are missing (newDefaultAndRootQueue).
        self.queues: dict[str, QueueInfo] = {
            "default": QueueInfo("default"),
            ROOT_QUEUE: QueueInfo(ROOT_QUEUE, reclaimable=False)}
        # Every Kubernetes cluster has the system classes (the API server creates them).
        self.priority_classes: dict[str, PriorityClass] = {
            system.name: system for system in SYSTEM_PRIORITY_CLASSES}
        self.pdbs: list[PodDisruptionBudget] = []
        self.resource_quotas: list[ResourceQuota] = []
        #: ConfigMaps plugins read, ``namespace/name`` -> data (:meth:`set_config_map`).
        self.config_maps: dict[str, Mapping[str, str]] = {}
        self.hyper_nodes: dict[str, HyperNode] = {}
        #: When each hypernode link (parent, child) was claimed; replaced, never
        #: changed in place (snapshots share it).
        self._hyper_node_links: dict[tuple[str, str], int] = {}
        self._link_claims = itertools.count()
        #: The ``NodeShard`` objects by name (scheduler sharding).
        self.node_shards: dict[str, NodeShard] = {}
        #: Per deleted shard, the nodes its scheduler had then (Volcano keeps using them).
        self.gone_shard_nodes: dict[str, frozenset[str]] = {}
        #: Dynamic Resource Allocation: device classes by name, resource slices by name,
        #: claims and claim templates by ``namespace/name`` (:meth:`set_resource_claim`...).
        self.device_classes: dict[str, DeviceClass] = {}
        self.resource_slices: dict[str, ResourceSlice] = {}
        self.resource_claims: dict[str, ResourceClaim] = {}
        self.claim_templates: dict[str, ResourceClaimTemplate] = {}
        self.binder = binder
        self.now = now
        self.binds: list[Bind] = []
        self.evictions: list[Eviction] = []
        self.unbinds: list[Eviction] = []
        #: Preemptor task uid -> the node its victims were evicted on (the latest); an
        #: entry goes when the task is bound, ends, is recreated or deleted.
        self.nominations: dict[str, str] = {}
        #: The nominations of the pods of jobs deleted since the last snapshot: a job
        #: added again (a pod group update) takes back those its pods still name.
        self._nominations_left: dict[str, str] = {}
        self.events: list[RecordedEvent] = []
        self.keep_events = keep_events
        self._lock = threading.RLock()
        self.incremental_snapshots = incremental_snapshots
        # name or uid -> (the copy handed out, its original, the original's and the
        # copy's mutation counts then): a copy both sides left alone is still exact.
        self._node_twins: dict[str, tuple[NodeInfo, NodeInfo, int, int]] = {}
        self._job_twins: dict[str, tuple[JobInfo, JobInfo, int, int]] = {}
        #: How many snapshots were taken, and for the latest ones (by that count), the
        #: nodes each handed out a new copy of (:meth:`nodes_renewed_since`).
        self.snapshot_serial = 0
        self._renewed: collections.deque[tuple[int, list[str]]] = collections.deque(
            maxlen=_RENEWALS_KEPT)
        #: The cache's job objects the last snapshot copied, by uid: a session's status
        #: write for a job replaced since (``delete_job`` + ``add_job``) is dropped, as
        #: Volcano's pod-group update fails on the new object's resource version.
        self._handed_out: dict[str, JobInfo] = {}
        #: The pods deleted since the last snapshot (id -> creation time), and the ids
        #: of those added again as another pod (another creation time): a session
        #: binding a replaced pod decided on the pod it replaced (Volcano's binder names
        #: the pod's UID, which the API server checks). A pod deleted and added again as
        #: it was (a pod group updated through delete_job and add_job) is the same pod.
        self._deleted_since_snapshot: dict[str, float] = {}
        self._replaced_since_snapshot: set[str] = set()
        #: Jobs whose pod group was replaced since the snapshot (update_pod_group).
        self._status_stale: set[str] = set()
        #: Task uid -> (node name, the NUMA ids the numa-aware plugin assigned it there):
        #: out of that node's topology until the task leaves the node.
        self._numa_held: dict[str, tuple[str, Mapping[str, frozenset[int]]]] = {}

    @contextmanager
    def updates(self) -> Iterator[MemoryCache]:
        """Hold the lock over several changes, so that no snapshot sees half of them::

            with cache.updates():
                cache.add_job(job)
                cache.task_ended(...)
        """
        with self._lock:
            yield self

    # -- cluster changes ---------------------------------------------------------------

    @_locked
    def add_node(self, node: NodeInfo) -> None:
        """Add a node, or update one (new labels, taints, figures, readiness): a node
        of the same name keeps its pods, counted again on the new node, and the NUMA
        ids assigned to them (:meth:`add_unassigned_numa_pods`) stay taken on its
        topology until its exporter reports each of those pods (``podAllocations``),
        as Volcano's cache updates a node in place. A negative, NaN or
        infinite allocatable or capacity is refused (SchedulingError naming the node
        and the field)."""
        _check_type(node, NodeInfo, "node")
        for field, amounts in (("allocatable", node.allocatable), ("capacity", node.capacity)):
            if not isinstance(amounts, Resource):
                raise SchedulingError(f"node {node.name}: {field} is {amounts!r}, not a "
                                      "Resource (Resource.from_mapping reads {'cpu': ...})")
            wrong = amounts.unmeasurable()
            if wrong is not None:
                raise SchedulingError(f"node {node.name}: {field}.{wrong[0]} is {wrong[1]}, "
                                      "not an amount >= 0")
        _check_entries(f"node {node.name}", "taints", node.taints, Taint,
                       "a Taint (batchsched.kube.taints.Taint(key, value, effect))",
                       unordered=True)
        if isinstance(node.taints, (set, frozenset)):
            # In a fixed order: the first untolerated taint is the one messages name.
            node.taints = tuple(sorted(node.taints,
                                       key=lambda t: (t.key, t.value, t.effect)))
        for field, texts in (("labels", node.labels), ("annotations", node.annotations)):
            _check_texts(f"node {node.name}", field, texts)
        old = self.nodes.get(node.name)
        if old is not None and old is not node:
            for held in old.tasks.values():
                if held.uid not in node.tasks:
                    node.add_task(held)
            self._hold_numa_on(node)
        self.nodes[node.name] = node

    @_locked
    def delete_node(self, name: str) -> None:
        """Remove a node; its tasks return to Pending in their jobs, as new pods (see
        :meth:`task_recreated`: one that was being deleted is no more, a new pod
        replaces it), and the node object holds none of them any more."""
        node = self.nodes.pop(name, None)
        if node is None:
            return
        for uid, held in list(node.tasks.items()):
            # Off the node object too: a host adding the same object back when the node
            # returns brings an empty node, not the pods now Pending elsewhere.
            node.remove_task(held)
            self._numa_held.pop(uid, None)  # the node and its topology are gone
            job = self.jobs.get(self._pod_owners.get(uid, ""))
            if job is None or uid not in job.tasks:  # a foreign pod, or a stale owner
                job = next((other for other in self.jobs.values() if uid in other.tasks),
                           None)
            if job is not None:
                self._renew_pod(job, job.tasks[uid])

    @_locked
    def add_queue(self, queue: QueueInfo) -> None:
        """Add or replace a queue. A weight that is no whole number >= 0 is refused
        (SchedulingError), as are quotas that are no Resource and the like."""
        _check_type(queue, QueueInfo, "queue")
        owner = f"queue {queue.name}"
        if not _is_int(queue.weight) or queue.weight < 0:
            raise SchedulingError(f"{owner}: weight is {queue.weight!r}, not a "
                                  "whole number >= 0")
        if not _is_int(queue.priority):
            raise SchedulingError(f"{owner}: priority is {queue.priority!r}, not a whole number")
        for field in ("capability", "deserved", "guarantee"):
            _check_resource(owner, field, getattr(queue, field))
        _check_texts(owner, "annotations", queue.annotations)
        if not _is_number(queue.creation_time):
            raise SchedulingError(f"{owner}: creation_time is {queue.creation_time!r}, not "
                                  "seconds (a number)")
        self.queues[queue.name] = queue

    @_locked
    def delete_queue(self, name: str) -> None:
        """Delete a queue (a name the cache does not hold is nothing to do). The root
        queue, and a queue that other queues name as their parent, are refused
        (SchedulingError), as Volcano's admission webhook refuses deleting them: a
        tree without its root, or with children of a missing parent, is refused
        whole by the hierarchical plugins."""
        if name == ROOT_QUEUE:
            raise SchedulingError(f"queue {ROOT_QUEUE}: the root queue cannot be deleted")
        children = sorted(queue.name for queue in self.queues.values()
                          if queue.parent == name and queue.name != name)
        if children:
            raise SchedulingError(f"queue {name}: cannot be deleted while it has child "
                                  f"queues: {', '.join(children)}")
        self.queues.pop(name, None)

    @_locked
    def add_priority_class(self, pc: PriorityClass) -> None:
        """Add or replace a priority class. A value that is no whole number is refused
        (SchedulingError)."""
        _check_type(pc, PriorityClass, "priority class")
        if not _is_int(pc.value):
            raise SchedulingError(f"priority class {pc.name}: value is {pc.value!r}, not a "
                                  "whole number")
        self.priority_classes[pc.name] = pc

    @_locked
    def add_job(self, job: JobInfo) -> None:
        """Add a job and place its already-placed tasks on their nodes.

        Raises :class:`~batchsched.errors.SchedulingError` naming the job, task and
        field if the cache holds a job of that uid already (a pod group update goes
        through :meth:`update_pod_group`, a pod's through :meth:`add_task`,
        :meth:`task_started`...; :meth:`delete_job` gives its pods' nodes, claims and
        CPUs back), or a task is malformed, belongs
        to another job or names a missing node; the cache is then unchanged.
        """
        _check_type(job, JobInfo, "job")
        if job.uid in self.jobs:
            raise SchedulingError(f"job {job.uid}: the cache holds it already (delete_job "
                                  "it first: its pods leave their nodes and give their "
                                  "claims back)")
        _check_pod_group(job.uid, job.podgroup)
        if not _is_number(job.creation_time):
            raise SchedulingError(f"job {job.uid}: creation_time is {job.creation_time!r}, "
                                  "not seconds (a number)")
        _check_role_counts(f"job {job.uid}", "task_min_available", job.task_min_available)
        for task in job.tasks.values():
            if task.job != job.uid:
                raise SchedulingError(f"task {task.uid}: job is {task.job!r}, not this job's "
                                      f"uid {job.uid!r}")
            self._check(task)
            self._check_unique(task)
        self.jobs[job.uid] = job
        for task in job.tasks.values():
            self._pod_owners[task.uid] = job.uid
            self._note_added(task)
            self._make_claims(task)
            self._place(task)
            left = self._nominations_left.pop(task.uid, None)
            if left is not None and left == task.nominated_node \
                    and task.status is TaskStatus.PENDING:
                # A pod group updated through delete_job and add_job keeps its pods'
                # nominations, as the pods keep their nominatedNodeName.
                self.nominations[task.uid] = left

    @_locked
    def update_pod_group(self, podgroup: PodGroup) -> None:
        """Replace a job's pod group (Volcano's cache ``UpdatePodGroup``): its pods stay
        as they are, on their nodes with their claims and nominations; what the job
        reads from its pod group (``min_member``, ``min_task_member``, queue, creation
        time, annotations such as preemptable, status) follows the new one. A job the
        cache does not hold, or a malformed pod group, is refused (SchedulingError)
        and changes nothing."""
        _check_type(podgroup, PodGroup, "pod group")
        job = self.jobs.get(podgroup.uid)
        if job is None:
            raise SchedulingError(f"pod group {podgroup.uid}: the cache holds no such job "
                                  "(add_job adds one)")
        _check_pod_group(job.uid, podgroup)
        job.follow_pod_group(podgroup)
        job.mutations += 1  # a session's copy of it is stale
        self._job_twins.pop(job.uid, None)
        # A session opened before writes no status over it (Volcano's update of the
        # pod group conflicts on the new resourceVersion).
        self._status_stale.add(job.uid)

    @_locked
    def delete_job(self, uid: str) -> None:
        _check_type(uid, str, "job uid")
        self._job_twins.pop(uid, None)
        job = self.jobs.pop(uid, None)
        if job is None:
            return
        for task in job.tasks.values():
            if self._pod_owners.get(task.uid) == uid:
                del self._pod_owners[task.uid]
            self._deleted_since_snapshot[task.uid] = task.creation_time
            self._release_numa(task.uid)
            self._release_claims(task)
            nominated = self.nominations.pop(task.uid, None)
            if nominated is not None:
                self._nominations_left[task.uid] = nominated
            node = self.nodes.get(task.node_name)
            if node is not None:
                node.remove_task(task)

    @_locked
    def add_task(self, task: TaskInfo) -> None:
        """Add a new pod to its job (and its node, if placed). A pod the job holds
        already is refused (SchedulingError): its changes go through
        :meth:`task_started`, :meth:`task_ended`... or :meth:`delete_task` first."""
        _check_type(task, TaskInfo, "task")
        job = self.jobs.get(task.job)
        if job is None:
            raise SchedulingError(f"task {task.uid}: job {task.job!r} is not in the cache")
        if task.uid in job.tasks:
            raise SchedulingError(f"task {task.uid}: job {job.uid} holds it already "
                                  "(delete_task it first)")
        self._check(task)
        self._check_unique(task)
        self._make_claims(task)
        job.add_task(task)
        self._pod_owners[task.uid] = job.uid
        self._note_added(task)
        self._place(task)

    @_locked
    def add_foreign_pod(self, task: TaskInfo) -> None:
        """A pod on a node that no job holds: another scheduler's pod, or one whose pod
        group does not exist. It counts on its node only, as in Volcano's cache: no
        session schedules, counts in a queue or evicts it. Its ``job`` must be empty
        (:meth:`delete_task` removes it)."""
        _check_type(task, TaskInfo, "foreign pod")
        if task.job:
            raise SchedulingError(f"task {task.uid}: a foreign pod has no job, not "
                                  f"{task.job!r}")
        if not task.node_name or task.status == TaskStatus.PENDING:
            raise SchedulingError(f"task {task.uid}: a foreign pod is one placed on a node")
        self._check(task)
        self._check_unique(task)
        self._foreign_pods[task.uid] = task.node_name
        self._place(task)

    @_locked
    def delete_task(self, task: TaskInfo) -> None:
        """The pod is gone: from its job, its node (where the cache has it, whatever
        the object given says) and its claims. A pod of no job in the cache is taken
        off its node unless a job still holds it there (SchedulingError: the pod given
        names another job than the one holding it)."""
        _check_type(task, TaskInfo, "task")
        job = self.jobs.get(task.job) if task.job else None
        mine = job.tasks.get(task.uid) if job is not None else None
        owner = self.jobs.get(self._pod_owners.get(task.uid, ""))
        if mine is None and owner is not None and task.uid in owner.tasks:
            raise SchedulingError(f"task {task.uid}: job {task.job!r} does not hold it; "
                                  f"job {owner.uid} does (delete it as that job's)")
        # The node the cache has the pod on, whatever the object given says.
        node = self.nodes.get(mine.node_name if mine is not None
                              else self._foreign_pods.get(task.uid, task.node_name))
        if job is not None and mine is not None:
            job.delete_task(mine)
            self._deleted_since_snapshot[task.uid] = mine.creation_time
            self._pod_owners.pop(task.uid, None)
        self._foreign_pods.pop(task.uid, None)
        self.nominations.pop(task.uid, None)
        self._release_numa(task.uid)
        self._release_claims(mine if mine is not None else task)
        if node is not None and task.uid in node.tasks:
            node.remove_task(node.tasks[task.uid])

    # -- what the host sees happen to pods: started, ended, gone to be recreated ------

    @_locked
    def task_started(self, job_uid: str, task_uid: str, at: float | None = None) -> None:
        """The bound task's pod runs since ``at`` (Bound becomes Running; a pod being
        deleted stays Releasing). A task on no node, or one that ended, cannot start:
        SchedulingError, as is an ``at`` that is no finite number of seconds."""
        job, task = self._task(job_uid, task_uid)
        if at is not None and not (_is_number(at) and math.isfinite(at)):
            raise SchedulingError(f"task {task_uid}: started at {at!r}, not a finite number "
                                  "of seconds")
        if not task.node_name or task.status is TaskStatus.PENDING \
                or task.status in COMPLETED_STATUSES:
            raise SchedulingError(f"task {task_uid}: it is {task.status} on "
                                  f"{task.node_name or 'no node'}; only a placed task starts")
        task.start_time = at
        if task.status is TaskStatus.RELEASING:
            return  # a pod being deleted stays so while it runs (Volcano: deletionTimestamp)
        job.update_task_status(task, TaskStatus.RUNNING)
        node = self.nodes.get(task.node_name)
        if node is not None:
            node.update_task(task)

    @_locked
    def task_ended(
        self, job_uid: str, task_uid: str, status: TaskStatus = TaskStatus.SUCCEEDED
    ) -> None:
        """The task's pod ended with ``status`` (a completed status): its node is freed;
        the task stays in its job with its final status."""
        if not isinstance(status, TaskStatus):
            raise SchedulingError(f"task {task_uid}: status is {status!r}, not a TaskStatus "
                                  "(TaskStatus.SUCCEEDED or TaskStatus.FAILED)")
        if status not in COMPLETED_STATUSES:
            raise SchedulingError(f"task {task_uid}: {status} is not a completed status")
        job, task = self._task(job_uid, task_uid)
        self._release_numa(task.uid)
        self._release_claims(task)
        node = self.nodes.get(task.node_name)
        if node is not None and task.uid in node.tasks:
            node.remove_task(task)
        self.nominations.pop(task.uid, None)
        job.update_task_status(task, status)

    @_locked
    def task_recreated(self, job_uid: str, task_uid: str) -> None:
        """The task's pod was deleted and created again: it is Pending on no node
        (an evicted pod once it is gone, or a gang member restarted with its job)."""
        job, task = self._task(job_uid, task_uid)
        self._release_numa(task.uid)
        node = self.nodes.get(task.node_name)
        if node is not None and task.uid in node.tasks:
            node.remove_task(task)
        self._renew_pod(job, task)

    def _renew_pod(self, job: JobInfo, task: TaskInfo) -> None:
        """The task is a new pod, Pending on no node (what held it is released)."""
        task.node_name = ""
        task.start_time = None
        # A new pod: the old one's devices, nominated node, conditions and deletion are
        # not its own.
        task.nominated_node = ""
        task.scheduling_condition = None
        task.deleting = False
        task.preempted_by_scheduler = False
        self.nominations.pop(task.uid, None)
        drop_device_annotations(task)
        drop_vnpu_annotations(task)
        drop_gpu_index(task)
        self._renew_claims(task)
        job.update_task_status(task, TaskStatus.PENDING)

    def _task(self, job_uid: str, task_uid: str) -> tuple[JobInfo, TaskInfo]:
        job = self.jobs.get(job_uid)
        if job is None:
            raise SchedulingError(f"task {task_uid}: job {job_uid!r} is not in the cache")
        task = job.tasks.get(task_uid)
        if task is None:
            raise SchedulingError(f"task {task_uid}: not a task of job {job_uid!r}")
        return job, task

    def _check_unique(self, task: TaskInfo) -> None:
        """A pod id is one pod: a second pod of an id another job (or a foreign pod)
        holds would be bound twice."""
        uid = task.uid
        owner = self._pod_owners.get(uid)
        if owner is not None:
            job = self.jobs.get(owner)
            if job is not None and uid in job.tasks:
                raise SchedulingError(f"task {uid}: job {owner} holds a pod of that id already "
                                      "(delete_task it first)")
            del self._pod_owners[uid]  # the job went by other means than delete_job
        on = self._foreign_pods.get(uid)
        if on is not None:
            node = self.nodes.get(on)
            held = node.tasks.get(uid) if node is not None else None
            if held is not None and not held.job:
                raise SchedulingError(f"task {uid}: a foreign pod on {on} holds that id "
                                      "already (delete_task it first)")
            del self._foreign_pods[uid]  # it went with its node

    def _check(self, task: TaskInfo) -> None:
        """Refuse at the door what would otherwise break every later session."""
        if not isinstance(task.status, TaskStatus):
            raise SchedulingError(f"task {task.uid}: status {task.status!r} is not a "
                                  "TaskStatus (TaskStatus.parse reads its name)")
        for field, request in (("resreq", task.resreq), ("init_resreq", task.init_resreq)):
            if field == "init_resreq" and request is task.resreq:
                break  # one vector for both (most tasks): checked already
            if not isinstance(request, Resource):
                raise SchedulingError(f"task {task.uid}: {field} is {request!r}, not a "
                                      "Resource (Resource.from_mapping reads {'cpu': ...})")
            wrong = request.unmeasurable()
            if wrong is not None:
                raise SchedulingError(f"task {task.uid}: {field}.{wrong[0]} is {wrong[1]}, "
                                      "not an amount >= 0")
        if task.affinity is not None:
            try:
                task_affinity(task)
            except AffinityError as exc:
                raise SchedulingError(f"task {task.uid}: affinity.{exc}") from exc
        if not _is_int(task.priority):
            raise SchedulingError(f"task {task.uid}: priority is {task.priority!r}, not a "
                                  "whole number")
        if not _is_number(task.creation_time):
            raise SchedulingError(f"task {task.uid}: creation_time is {task.creation_time!r}, "
                                  "not seconds (a number)")
        owner = f"task {task.uid}"
        for field in ("node_selector", "labels", "annotations"):
            texts = getattr(task, field)
            if texts or type(texts) not in _EMPTY_MAPPINGS:  # none (most tasks) is fine
                _check_texts(owner, field, texts)
        for field, kinds, named in _ENTRY_FIELDS:
            entries = getattr(task, field)
            if type(entries) is tuple and not entries:
                continue  # none (most tasks)
            # Images and claims were always read as any collection of them (a set is
            # put in a fixed order: claims are allocated in it).
            _check_entries(owner, field, entries, kinds, named,
                           unordered=field in ("images", "resource_claims"))
        if isinstance(task.images, (set, frozenset)):
            task.images = tuple(sorted(task.images))
        if isinstance(task.resource_claims, (set, frozenset)):
            task.resource_claims = tuple(sorted(task.resource_claims, key=lambda c: c.name))
        if task.node_name and task.status not in COMPLETED_STATUSES:
            node = self.nodes.get(task.node_name)
            if node is None:
                raise SchedulingError(f"task {task.uid}: node {task.node_name!r} is not in "
                                      "the cache")
            if task.status == TaskStatus.PENDING:
                # Volcano reads a Pending pod with a node as Bound there: say which.
                raise SchedulingError(f"task {task.uid}: status Pending on node "
                                      f"{task.node_name!r}: a pod on a node is Bound (or "
                                      "further); a Pending one names no node")
            if task.uid in node.tasks:
                # A pod id is one pod: placing it again would fail half-way.
                raise SchedulingError(f"task {task.uid}: node {task.node_name} holds a pod "
                                      "of that id already")

    def _note_added(self, task: TaskInfo) -> None:
        deleted = self._deleted_since_snapshot.get(task.uid)
        if deleted is not None and not same_creation_time(deleted, task.creation_time):
            self._replaced_since_snapshot.add(task.uid)

    def _place(self, task: TaskInfo) -> None:
        # Finished tasks hold nothing on their node (Volcano's cache skips them too).
        if (not task.node_name or task.status == TaskStatus.PENDING
                or task.status in COMPLETED_STATUSES):
            return
        node = self.nodes.get(task.node_name)
        if node is None:
            raise SchedulingError(f"task {task.uid}: node {task.node_name!r} is not in the cache")
        node.add_task(task)

    # -- Cache protocol ------------------------------------------------------------------

    @_locked
    def snapshot(self) -> ClusterInfo:
        """A deep copy for one session: Ready nodes only; jobs whose queue exists,
        with their priority from their priority class (or the global default).

        With ``incremental_snapshots``, a node or job that neither the cache nor
        the last session changed is handed out again instead of copied anew (see
        the class docstring)."""
        default_priority = next(
            (pc.value for pc in self.priority_classes.values() if pc.global_default), 0
        )
        jobs: dict[str, JobInfo] = {}
        handed_out: dict[str, JobInfo] = {}
        for uid, job in self.jobs.items():
            if job.queue not in self.queues:
                log.warning("job %s: queue %r does not exist; left out of the session",
                            uid, job.queue)
                continue
            handed_out[uid] = job
            twin = self._job_twin(job)
            pc = self.priority_classes.get(job.podgroup.priority_class_name)
            twin.priority = pc.value if pc is not None else default_priority
            jobs[uid] = twin
        self._handed_out = handed_out
        self._deleted_since_snapshot = {}
        self._replaced_since_snapshot = set()
        self._status_stale = set()
        self._nominations_left = {}
        not_ready: list[NodeInfo] = []
        return ClusterInfo(
            nodes=self._node_twins_of_ready(not_ready),
            jobs=jobs,
            queues={q: queue.clone() for q, queue in self.queues.items()},
            priority_classes=dict(self.priority_classes),
            pdbs=[attrs.evolve(p) for p in self.pdbs],
            resource_quotas=[attrs.evolve(q, used=q.used.clone()) for q in self.resource_quotas],
            now=self.now,
            config_maps=dict(self.config_maps),
            hyper_nodes=tuple(self.hyper_nodes.values()),
            hyper_node_links=self._hyper_node_links,
            dra=DraObjects(dict(self.device_classes), tuple(self.resource_slices.values()),
                           dict(self.resource_claims), dict(self.claim_templates)),
            not_ready_nodes={node.name: node.clone() for node in not_ready},
            node_shards=tuple(self.node_shards.values()),
            gone_shard_nodes=dict(self.gone_shard_nodes),
        )

    @_locked
    def set_hyper_node(self, hyper_node: HyperNode) -> None:
        """Add or replace a hypernode (network topology).

        A change that makes the hypernodes no tree (a cycle, a hypernode with two
        parents) is kept, with a warning, as Volcano's cache keeps it: updates arrive
        in any order (a leaf moved between spines is claimed by its new parent before
        its old one lets go), and until the tree is whole again allocate places no job
        with a network topology (:attr:`Session.hyper_nodes_ready`; sessions see the
        tree without the links that break it). A member pattern
        whose brackets do not pair up (Volcano's admission policy refuses it) or that
        uses RE2 syntax not supported here raises :class:`SchedulingError` and
        changes nothing."""
        _check_type(hyper_node, HyperNode, "hypernode")
        if hyper_node.name == CLUSTER_TOP or CLUSTER_TOP in hyper_node.children():
            raise SchedulingError(f"hypernode {hyper_node.name}: {CLUSTER_TOP} is the name of "
                                  "Volcano's virtual root of the tree (and no Kubernetes "
                                  "object name)")
        for i, member in enumerate(getattr(hyper_node, "members", ())):
            unmatched = unmatched_brackets(getattr(member, "regex", "") or "")
            if unmatched:
                # Volcano's admission policy refuses it; a pattern Go's regexp refuses
                # for another reason is stored, and selects no node.
                raise SchedulingError(f"hypernode {hyper_node.name}: members[{i}] pattern "
                                      f"{member.regex!r} is invalid: unmatched {unmatched}")
        try:
            build_topology((hyper_node,), ())  # the object itself: its tier, its patterns
        except TopologyError:
            pass  # a tree fault: judged with the others below
        except Re2Error as exc:
            raise SchedulingError(f"hypernode {hyper_node.name}: a member's pattern: "
                                  f"{exc}") from exc
        except (TypeError, ValueError, AttributeError) as exc:  # a tier that is no number...
            raise SchedulingError(f"hypernode {hyper_node.name}: {type(exc).__name__}: "
                                  f"{exc}") from exc
        proposed = dict(self.hyper_nodes)
        old = proposed.get(hyper_node.name)
        proposed[hyper_node.name] = hyper_node
        # Each link's claim is kept from when it was made: a partial tree gives a child
        # to its oldest claimant, and of a cycle drops the link claimed last.
        links = dict(self._hyper_node_links)
        before = set(old.children()) if old is not None else set()
        now = set(hyper_node.children())
        for child in before - now:
            links.pop((hyper_node.name, child), None)
        for child in hyper_node.children():
            if child not in before and (hyper_node.name, child) not in links:
                links[hyper_node.name, child] = next(self._link_claims)
        try:
            build_topology(tuple(proposed.values()), (), link_claims=links)
        except TopologyError as exc:
            log.warning("hypernode %s: %s; jobs with a network topology wait until the "
                        "hypernodes form a tree", hyper_node.name, exc)
        self.hyper_nodes = proposed
        self._hyper_node_links = links

    @_locked
    def set_node_shard(self, shard: NodeShard) -> None:
        """Add or replace a ``NodeShard`` (by name): the next snapshot's sessions see it."""
        _check_type(shard, NodeShard, "node shard")
        for field in ("nodes_desired", "nodes_in_use"):
            # A name alone would be read letter by letter.
            _check_entries(f"node shard {shard.name}", field, getattr(shard, field), str,
                           "a node name", unordered=True)
        self.node_shards[shard.name] = shard
        self.gone_shard_nodes.pop(shard.name, None)

    @_locked
    def delete_node_shard(self, name: str) -> None:
        """Remove a ``NodeShard``. Its scheduler keeps the nodes it had until the shard
        comes back, as Volcano's shard coordinator does (it skips a refresh without
        its own shard)."""
        if name in self.node_shards:
            self.gone_shard_nodes[name] = nodes_in_shard(self.node_shards.values(), name)
            del self.node_shards[name]

    @_locked
    def delete_hyper_node(self, name: str) -> None:
        """Remove a hypernode (its children lose their parent)."""
        gone = self.hyper_nodes.pop(name, None)
        if gone is not None:
            self._hyper_node_links = {link: claimed for link, claimed
                                      in self._hyper_node_links.items() if link[0] != name}

    # -- Dynamic Resource Allocation objects -------------------------------------------

    @_locked
    def set_device_class(self, device_class: DeviceClass) -> None:
        """Add or replace a device class (``resource.k8s.io/v1`` DeviceClass)."""
        _check_type(device_class, DeviceClass, "device class")
        self.device_classes[device_class.name] = device_class

    @_locked
    def delete_device_class(self, name: str) -> None:
        self.device_classes.pop(name, None)

    @_locked
    def set_resource_slice(self, resource_slice: ResourceSlice) -> None:
        """Add or replace a resource slice (by name): a driver's devices."""
        _check_type(resource_slice, ResourceSlice, "resource slice")
        self.resource_slices[resource_slice.name] = resource_slice

    @_locked
    def delete_resource_slice(self, name: str) -> None:
        self.resource_slices.pop(name, None)

    @_locked
    def set_resource_claim(self, claim: ResourceClaim) -> None:
        """Add or replace a resource claim (by ``namespace/name``)."""
        _check_type(claim, ResourceClaim, "resource claim")
        self.resource_claims[claim.key] = claim

    @_locked
    def delete_resource_claim(self, key: str) -> None:
        self.resource_claims.pop(key, None)

    @_locked
    def set_claim_template(self, template: ResourceClaimTemplate) -> None:
        """Add or replace a resource claim template. Pods naming it that have no claim
        from it yet get one now (the claim controller retries until the template
        exists), and so do pods added later."""
        _check_type(template, ResourceClaimTemplate, "resource claim template")
        self.claim_templates[template.key] = template
        namespace, _, name = template.key.partition("/")
        for job in self.jobs.values():
            for task in job.tasks.values():
                if task.namespace == namespace and any(
                        entry.template_name == name and entry.generated is None
                        for entry in task.resource_claims):
                    self._make_claims(task)
                    # Not a status move: the copy a session was handed must go.
                    self._job_twins.pop(job.uid, None)

    @_locked
    def delete_claim_template(self, key: str) -> None:
        """Remove a claim template (claims already made from it stay)."""
        self.claim_templates.pop(key, None)

    @_locked
    def set_dra_objects(self, objects: DraObjects) -> None:
        """Set a cluster's device classes, slices, claims and claim templates at once;
        one that is no such object is refused before any is set."""
        for value, kind, what in (
                *((v, DeviceClass, "device class") for v in objects.device_classes.values()),
                *((v, ResourceSlice, "resource slice") for v in objects.resource_slices),
                *((v, ResourceClaim, "resource claim")
                  for v in objects.resource_claims.values()),
                *((v, ResourceClaimTemplate, "resource claim template")
                  for v in objects.claim_templates.values())):
            _check_type(value, kind, what)
        for device_class in objects.device_classes.values():
            self.set_device_class(device_class)
        for resource_slice in objects.resource_slices:
            self.set_resource_slice(resource_slice)
        for claim in objects.resource_claims.values():
            self.set_resource_claim(claim)
        for template in objects.claim_templates.values():
            self.set_claim_template(template)

    def _renew_claims(self, task: TaskInfo) -> None:
        """The task is a new pod: off its old claims, with claims of its own from its
        templates."""
        self._release_claims(task)
        task.resource_claims = tuple(
            attrs.evolve(entry, generated=None) if entry.template_name else entry
            for entry in task.resource_claims)
        self._make_claims(task)

    def _make_claims(self, task: TaskInfo) -> None:
        if task.resource_claims:
            task.resource_claims = instantiate_templates(
                task.resource_claims, namespace=task.namespace, pod=task.name,
                pod_uid=task.uid, templates=self.claim_templates, claims=self.resource_claims)

    def _release_claims(self, task: TaskInfo) -> None:
        if task.resource_claims:
            release_claims(task.uid, claim_keys(task.namespace, task.name, task.resource_claims),
                           self.resource_claims)

    @_locked
    def set_config_map(self, namespace: str, name: str, data: dict[str, str] | None) -> None:
        """Add or replace a ConfigMap plugins read (None deletes it): the device
        configuration deviceshare reads, say. Its data maps strings to strings."""
        key = f"{namespace}/{name}"
        if data is not None and not (isinstance(data, Mapping) and all(
                isinstance(k, str) and isinstance(v, str) for k, v in data.items())):
            raise SchedulingError(f"config map {key}: data must map strings to strings, "
                                  f"not {data!r}")
        if data is None:
            self.config_maps.pop(key, None)
        else:
            # Read-only: snapshots and sessions share it.
            self.config_maps[key] = MappingProxyType(dict(data))

    def _job_twin(self, job: JobInfo) -> JobInfo:
        if self.incremental_snapshots:
            kept = self._job_twins.get(job.uid)
            if (kept is not None and kept[1] is job and kept[2] == job.mutations
                    and kept[0].mutations == kept[3]):
                twin = kept[0]
                # What a session writes besides task moves: its own verdicts and notes.
                twin.podgroup = job.podgroup.clone()
                # Emptied only when written to: most twins come back untouched.
                if twin.nodes_fit_errors:
                    twin.nodes_fit_errors = {}
                twin.job_fit_errors = ""
                if twin.extra or job.extra:
                    twin.extra = dict(job.extra)
                twin.allocated_hyper_node = job.allocated_hyper_node
                twin.sub_job_hyper_nodes = None if job.sub_job_hyper_nodes is None \
                    else dict(job.sub_job_hyper_nodes)
                return twin
        twin = job.clone()
        if self.incremental_snapshots:
            self._job_twins[job.uid] = (twin, job, job.mutations, twin.mutations)
        return twin

    def _node_twins_of_ready(self, not_ready: list[NodeInfo]) -> dict[str, NodeInfo]:
        """Twins of the Ready nodes; the others are appended to ``not_ready``."""
        self.snapshot_serial += 1
        if not self.incremental_snapshots:
            self._renewed.clear()  # every copy is new
            not_ready.extend(node for node in self.nodes.values() if not node.ready)
            return {name: node.clone() for name, node in self.nodes.items() if node.ready}
        # _node_twin's test, inlined: a replay takes a snapshot per event, and most
        # of its nodes are handed out again unchanged.
        kept_twins = self._node_twins
        twins: dict[str, NodeInfo] = {}
        renewed: list[str] = []
        for name, node in self.nodes.items():
            if not node.ready:
                not_ready.append(node)
                continue
            kept = kept_twins.get(name)
            if (kept is not None and kept[1] is node and kept[2] == node.mutations
                    and kept[0].mutations == kept[3]):
                twin = kept[0]
                twin.on_change = None
                twins[name] = twin
            else:
                twins[name] = self._node_twin(node)
                renewed.append(name)
        self._renewed.append((self.snapshot_serial, renewed))
        return twins

    @_locked
    def nodes_renewed_since(self, serial: int) -> frozenset[str] | None:
        """With incremental snapshots: the names of the Ready nodes that a snapshot
        after snapshot number ``serial`` (:attr:`snapshot_serial` then) handed out a
        new copy of; every other node it handed out is the very object snapshot
        ``serial`` handed out, unchanged. None when that is not known (snapshots copy
        everything, or ``serial`` is too far back): read every node.

        What sessions carry from one to the next (the node view, the node arrays, the
        allocatable total) reads again only these nodes."""
        renewals = self._renewed
        if not self.incremental_snapshots or not renewals or serial < renewals[0][0] - 1:
            return None
        names: set[str] = set()
        for taken, renewed in reversed(renewals):
            if taken <= serial:
                break
            names.update(renewed)
        return frozenset(names)

    def _node_twin(self, node: NodeInfo) -> NodeInfo:
        if self.incremental_snapshots:
            kept = self._node_twins.get(node.name)
            if (kept is not None and kept[1] is node and kept[2] == node.mutations
                    and kept[0].mutations == kept[3]):
                kept[0].on_change = None
                return kept[0]
        twin = node.clone()
        if self.incremental_snapshots:
            self._node_twins[node.name] = (twin, node, node.mutations, twin.mutations)
        return twin

    @_locked
    def bind(self, task: TaskInfo, node_name: str) -> bool:
        _check_type(task, TaskInfo, "task")
        job = self.jobs.get(task.job)
        node = self.nodes.get(node_name)
        if job is None or node is None or task.uid not in job.tasks:
            return False
        mine = job.tasks[task.uid]
        if mine.uid in self._replaced_since_snapshot:
            raise SchedulingError(f"task {mine.uid}: its pod was deleted and created again "
                                  "since the session's snapshot; the next session decides "
                                  "for the new one")
        # The DRA plugin's PreBind, when it took part (it sets claim_allocations): its
        # allocations and the pod on every claim, checked before the host binds.
        prebind = bool(mine.resource_claims) and task.claim_allocations is not None
        keys = claim_keys(mine.namespace, mine.name, mine.resource_claims) if prebind else []
        allocations = task.claim_allocations or {}
        if prebind:
            problem = check_reservations(mine.uid, keys, allocations, self.resource_claims)
            if problem:
                # Raised, not just refused: the session's FailedScheduling event says why.
                raise SchedulingError(f"task {mine.uid}: PreBind plugin DynamicResources "
                                      f"failed: {problem}")
        if mine.status is not TaskStatus.PENDING:
            # The pod was placed since the session's snapshot (Volcano's node.AddTask:
            # "already on different node").
            raise SchedulingError(f"task {mine.uid}: it is {mine.status} on "
                                  f"{mine.node_name or 'no node'} already")
        # The node may have filled up since the snapshot (another pod, a node update).
        check_bind_room(task, node_name, node.idle)
        ask = gpu_ask(task.resreq, strict=False) if task.gpu_devices else None
        if ask is not None and node.gpu_free is not None and not serves(
                node.gpu_free, task.gpu_devices, ask):
            # The host is told these GPUs: they must still be free here, not swapped.
            raise SchedulingError(f"task {mine.uid}: node {node_name}'s GPUs "
                                  f"{list(task.gpu_devices)} are not free for it any more "
                                  f"(free milli per GPU: {node.gpu_free})")
        held = node.tasks.get(mine.uid)
        if held is not None and held is not mine:
            # Another pod of that id is there (a foreign pod, another job's): placing
            # this one would fail half-way.
            raise SchedulingError(f"task {mine.uid}: node {node_name} holds a pod of that "
                                  "id already")
        if self.binder is not None and not self.binder(task, node_name):
            return False
        if prebind:
            reserve_claims(mine.uid, keys, allocations, self.resource_claims)
        if mine.node_name:
            self._release_numa(mine.uid)
            held_on = self.nodes.get(mine.node_name)
            if held_on is not None and mine.uid in held_on.tasks:
                held_on.remove_task(mine)
            mine.node_name = ""
        job.update_task_status(mine, TaskStatus.BOUND)
        mine.node_name = node_name
        mine.gpu_devices = task.gpu_devices  # the GPUs the session chose, not the default
        if task.annotations is not mine.annotations and task.annotations != mine.annotations:
            # The binding carries what the session wrote on the pod (the vGPUs it took).
            mine.annotations = dict(task.annotations)
        mine.nominated_node = ""  # placed: nothing to keep for it any more
        mine.scheduling_condition = None  # PodScheduled is True now
        self.nominations.pop(mine.uid, None)
        node.add_task(mine)
        self._release_node_locks(node, locks_released_by(mine.annotations, mine.gpu_devices))
        self.binds.append(Bind(task.uid, node_name))
        return True

    @_locked
    def annotate_node(self, node_name: str, key: str, value: str | None) -> None:
        """Write (or, with None, remove) an annotation on a node at once: what a plugin
        writes on the API server's node during a session (deviceshare's node lock,
        :mod:`batchsched.api.node_lock`). An unknown node is skipped."""
        if value is not None and not isinstance(value, str):
            raise SchedulingError(f"node {node_name}: annotation {key!r} is {value!r}, not text")
        node = self.nodes.get(node_name)
        if node is None:
            return
        annotations = {k: v for k, v in node.annotations.items() if k != key}
        if value is not None:
            annotations[key] = value
        node.annotations = annotations
        node.mutations += 1  # later snapshots must copy the node again

    def _release_node_locks(self, node: NodeInfo, names: tuple[str, ...]) -> None:
        """The node's device plugins gave a pod bound there its devices and released
        their locks (HAMi's ``ReleaseNodeLock``)."""
        if any(name in node.annotations for name in names):
            node.annotations = {k: v for k, v in node.annotations.items() if k not in names}
            node.mutations += 1

    @_locked
    def set_scheduling_condition(self, task: TaskInfo, reason: str, message: str) -> None:
        """A session wrote the pod's ``PodScheduled: False`` condition (why it is not
        placed): kept on the task, so that the next session records its
        ``FailedScheduling`` event only when the condition changes, as Volcano does."""
        job = self.jobs.get(task.job)
        if job is not None and task.uid in job.tasks:
            job.tasks[task.uid].scheduling_condition = (reason, message)
            # Not a status move: the copy a session was handed must not be handed out
            # again.
            self._job_twins.pop(job.uid, None)

    @_locked
    def set_scheduling_gates(self, job_uid: str, task_uid: str, gates: Iterable[str]) -> None:
        """The pod's scheduling gates are now ``gates``: a controller lifted the others
        (the API server only lets gates be removed once a pod exists). Raises
        :class:`~batchsched.errors.SchedulingError`, changing nothing, for a task that
        is not in the cache, for a gate it does not have, or for gates kept on a task
        that is not Pending."""
        job = self.jobs.get(job_uid)
        task = job.tasks.get(task_uid) if job is not None else None
        if job is None or task is None:
            raise SchedulingError(f"task {task_uid} of job {job_uid} is not in the cache")
        if isinstance(gates, str) or not isinstance(gates, Iterable):
            raise SchedulingError(f"task {task_uid}: scheduling gates {gates!r} are not a "
                                  "list of gate names")
        kept = tuple(gates)
        added = [gate for gate in kept if gate not in task.scheduling_gates]
        if added:
            raise SchedulingError(f"task {task_uid}: scheduling gate {added[0]!r} cannot be "
                                  "added to an existing pod")
        if kept and task.status is not TaskStatus.PENDING:
            raise SchedulingError(f"task {task_uid} is {task.status}: it has no gates to keep")
        task.scheduling_gates = kept
        # Not a status move: the copy a session was handed must not be handed out again.
        self._job_twins.pop(job.uid, None)

    @_locked
    def nominate(self, task: TaskInfo, node_name: str) -> None:
        """A preemptor was pipelined on ``node_name`` after evictions there (kube's
        nominated node); kept in ``nominations`` while the task is in the cache. An
        empty ``node_name`` clears the nomination (kube's PostFilter may clear it)."""
        job = self.jobs.get(task.job)
        if job is not None and task.uid in job.tasks:
            if node_name:
                self.nominations[task.uid] = node_name
            else:
                self.nominations.pop(task.uid, None)
            job.tasks[task.uid].nominated_node = node_name
            # Not a status move (the job's mutation count stays): the copy a session
            # was handed must not be handed out again.
            self._job_twins.pop(job.uid, None)

    @_locked
    def unbind(self, task: TaskInfo, reason: str) -> bool:
        """Take back a bind (the pod is deleted before it runs and created again):
        the task is Pending on no node; the bind stays in ``binds``, and ``unbinds``
        records this."""
        job = self.jobs.get(task.job)
        if job is None or task.uid not in job.tasks:
            return False
        self.task_recreated(job.uid, task.uid)
        self.unbinds.append(Eviction(task.uid, reason))
        return True

    @_locked
    def evict(self, task: TaskInfo, reason: str) -> bool:
        _check_type(task, TaskInfo, "task")
        job = self.jobs.get(task.job)
        if job is None or task.uid not in job.tasks:
            return False
        mine = job.tasks[task.uid]
        node = self.nodes.get(mine.node_name)
        if node is None or mine.uid not in node.tasks:
            # Volcano's Evict: "host does not exist" (recreated, or its node deleted).
            return False
        # Volcano's evictor marks the pod (DisruptionTarget, PreemptionByScheduler).
        mine.preempted_by_scheduler = True
        job.update_task_status(mine, TaskStatus.RELEASING)
        node.update_task(mine)
        self.evictions.append(Eviction(task.uid, reason))
        return True

    @_locked
    def add_unassigned_numa_pods(
        self, assignments: Mapping[str, Mapping[str, Mapping[str, frozenset[int]]]]
    ) -> None:
        """Take the CPUs (and other NUMA ids) the numa-aware plugin assigned to placed
        tasks (task uid -> {node name -> {resource -> ids}}, Volcano's
        ``AddUnassignedNumaPods``) out of their node's topology, as the node's exporter
        would report them, until the task leaves the node (ends, is deleted or
        recreated, or is bound elsewhere). Tasks the cache does not hold on that node
        are skipped."""
        for task_uid, by_node in assignments.items():
            for node_name, sets in by_node.items():
                node = self.nodes.get(node_name)
                if node is None or node.numa_topology is None or task_uid not in node.tasks:
                    continue
                self._release_numa(task_uid)  # a new assignment replaces the old one
                node.numa_topology = node.numa_topology.allocate(sets)
                node.mutations += 1  # later snapshots must copy the node again
                self._numa_held[task_uid] = (node_name, sets)

    def _hold_numa_on(self, node: NodeInfo) -> None:
        """A node's new topology (its exporter's): the NUMA ids handed over to its pods
        stay taken on it until the exporter reports every one of those pods, then the
        exporter's figures are trusted (the kubelet may have chosen other ids), as
        Volcano's ``RefreshNumaSchedulerInfoByCrd`` does."""
        topology = node.numa_topology
        held = {uid: sets for uid, (name, sets) in self._numa_held.items()
                if name == node.name and uid in node.tasks}
        if topology is None or not held:
            return
        if all(topology.reports(node.tasks[uid].order_uid, uid) for uid in held):
            for uid in held:
                del self._numa_held[uid]
            return
        for sets in held.values():
            topology = topology.allocate(sets)
        node.numa_topology = topology

    def _release_numa(self, task_uid: str) -> None:
        held = self._numa_held.pop(task_uid, None)
        if held is None:
            return
        node = self.nodes.get(held[0])
        if node is not None and node.numa_topology is not None:
            node.numa_topology = node.numa_topology.release(held[1])
            node.mutations += 1

    @_locked
    def update_job_status(self, job: JobInfo) -> None:
        self._keep_job_status(job)

    @_locked
    def update_job_statuses(self, jobs: Iterable[JobInfo]) -> None:
        """:meth:`update_job_status` for every job, under one lock (a session hands
        over all its jobs at close)."""
        for job in jobs:
            self._keep_job_status(job)

    def _keep_job_status(self, job: JobInfo) -> None:
        mine = self.jobs.get(job.uid)
        handed = self._handed_out.get(job.uid)
        if mine is None or job.uid in self._status_stale or (
                handed is not None and handed is not mine):
            return  # gone, or replaced since the snapshot: the write is stale
        theirs = job.podgroup
        podgroup = mine.podgroup
        podgroup.phase = theirs.phase
        podgroup.conditions = list(theirs.conditions)
        podgroup.running = theirs.running
        podgroup.succeeded = theirs.succeeded
        podgroup.failed = theirs.failed
        # Volcano keeps where a topology job lies in memory, from session to session.
        mine.allocated_hyper_node = job.allocated_hyper_node
        mine.sub_job_hyper_nodes = None if job.sub_job_hyper_nodes is None \
            else dict(job.sub_job_hyper_nodes)

    @_locked
    def update_queue_status(self, queue: QueueInfo) -> None:
        """Keep the queue status a session wrote (what its jobs hold, pod groups by phase)."""
        mine = self.queues.get(queue.name)
        if mine is not None:
            mine.status = attrs.evolve(queue.status, allocated=queue.status.allocated.clone())

    @_locked
    def record_event(self, event: RecordedEvent) -> None:
        if self.keep_events:
            self.events.append(event)


#: What :meth:`JobInfo.from_podgroup` reads from a pod group.
def _check_role_counts(owner: str, field: str, counts: object) -> None:
    if not isinstance(counts, Mapping) or not all(
            isinstance(role, str) and _is_int(count) and count >= 0
            for role, count in counts.items()):
        raise SchedulingError(f"{owner}: {field} is {counts!r}, not a mapping of role to a "
                              "whole number >= 0")


def _check_pod_group(job: str, podgroup: PodGroup) -> None:
    owner = f"job {job}"
    if not _is_int(podgroup.min_member) or podgroup.min_member < 0:
        raise SchedulingError(f"{owner}: podgroup.min_member is {podgroup.min_member!r}, "
                              "not a whole number >= 0")
    _check_resource(owner, "podgroup.min_resources", podgroup.min_resources)
    _check_role_counts(owner, "podgroup.min_task_member", podgroup.min_task_member)
    if not _is_number(podgroup.creation_time):
        raise SchedulingError(f"{owner}: podgroup.creation_time is "
                              f"{podgroup.creation_time!r}, not seconds (a number)")
    for field in ("annotations", "labels"):
        _check_texts(owner, f"podgroup.{field}", getattr(podgroup, field))
    # Every session copies and reads these: a wrong type would fail each of them.
    _check_entries(owner, "podgroup.conditions", podgroup.conditions, PodGroupCondition,
                   "a PodGroupCondition")
    _check_entries(owner, "podgroup.sub_group_policies", podgroup.sub_group_policies,
                   SubGroupPolicy, "a SubGroupPolicy")
    if podgroup.network_topology is not None and not isinstance(podgroup.network_topology,
                                                                NetworkTopology):
        raise SchedulingError(f"{owner}: podgroup.network_topology is "
                              f"{podgroup.network_topology!r}, not a NetworkTopology or None")


#: The mapping types an empty node selector, labels or annotations come as.
_EMPTY_MAPPINGS = (dict, MappingProxyType)
#: A task's fields that list entries of one kind, each with the kind and its name.
_ENTRY_FIELDS: tuple[tuple[str, type | tuple[type, ...], str], ...] = (
    ("tolerations", Toleration, "a Toleration"),
    ("topology_spread", SpreadConstraint, "a SpreadConstraint"),
    ("host_ports", (int, HostPort), "a port number or HostPort"),
    ("images", str, "an image name"),
    ("resource_claims", PodClaim, "a PodClaim"),
)


def _check_entries(owner: str, field: str, entries: object, kinds: type | tuple[type, ...],
                   named: str, *, unordered: bool = False) -> None:
    """``entries`` is a tuple or list of ``kinds`` (or, ``unordered``, a set too)."""
    holders: tuple[type, ...] = (tuple, list, set, frozenset) if unordered else (tuple, list)
    if not isinstance(entries, holders):
        raise SchedulingError(f"{owner}: {field} is {entries!r}, not a tuple")
    assert isinstance(entries, Iterable)
    for i, entry in enumerate(entries):
        if not isinstance(entry, kinds) or isinstance(entry, bool):
            raise SchedulingError(f"{owner}: {field}[{i}] is {entry!r}, not {named}")


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value: object) -> bool:
    """A number of seconds (NaN included: a pod's unknown creation time orders as
    Volcano's zero time does; numpy's numbers too)."""
    if type(value) is float:
        return True  # most times: no abstract class to ask
    return isinstance(value, numbers.Real) and not isinstance(value, bool)


def _check_texts(owner: str, field: str, texts: object) -> None:
    """``texts`` maps text to text (labels, annotations, a node selector)."""
    if not isinstance(texts, Mapping) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in texts.items()):
        raise SchedulingError(f"{owner}: {field} is {texts!r}, not a mapping of text to text")


def _check_resource(owner: str, field: str, value: object) -> None:
    """``value`` is a Resource, or None (no quota, no minimum)."""
    if value is not None and not isinstance(value, Resource):
        raise SchedulingError(f"{owner}: {field} is {value!r}, not a Resource "
                              "(Resource.from_mapping reads {'cpu': ...})")


def _check_type(value: object, kind: type, what: str) -> None:
    """A SchedulingError for a ``what`` that is no ``kind`` (None, a dict, a name)."""
    if not isinstance(value, kind):
        raise SchedulingError(f"{what}: {value!r} is not a {kind.__name__}")
