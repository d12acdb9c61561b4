"""Session: one scheduling cycle over a snapshot (Volcano's ``framework.Session``).

:meth:`Session.open` takes a snapshot from a cache, builds the plugins the
configuration names (only those) and lets each register what it decides;
actions then ask the session and decide through
:class:`~batchsched.framework.statement.Statement`; :meth:`Session.close` runs
the plugins' ``on_session_close`` and updates every pod group's phase with
Volcano's rules, handing the result to the cache.

The plugin half of the session, as Volcano splits it (``session.go`` and
``session_plugins.go``), is :class:`~batchsched.framework.session_plugins.SessionPlugins`:
the registration methods (``add_job_order_fn``, ...) and the dispatch methods
(``job_order_fn``, ``predicate``, ``node_order``, ...) that combine the enabled plugins'
functions by the rule of their extension point
(:mod:`batchsched.framework.extension_points`). This module holds the session's life
(open, the snapshot's objects, close and the statuses it hands over) and what
statements ask of it (events, binds, evictions, nominations).
"""

from __future__ import annotations

import contextlib
import functools
import logging
import operator
import time
import uuid
import warnings
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from batchsched._carried import Carried
from batchsched._moved import REMOVED_IN
from batchsched.api.cluster import ClusterInfo
from batchsched.api.dra_usage import device_resources, new_claim_devices
from batchsched.api.fit import ALL_NODES_UNAVAILABLE
from batchsched.api.hypernode import (
    HyperNode,
    Topology,
    TopologyError,
    build_topology,
)
from batchsched.api.job import JobInfo
from batchsched.api.node import NodeInfo
from batchsched.api.queue import ROOT_QUEUE, QueueInfo, QueueStatus
from batchsched.api.resource import MIN_RESOURCE, Resource
from batchsched.api.resource_names import counted_by_volcano
from batchsched.api.sharding import Sharding, nodes_in_shard
from batchsched.api.task import TaskInfo
from batchsched.api.types import (
    ALLOCATED_STATUSES,
    COMPLETED_STATUSES,
    PodGroupCondition,
    PodGroupConditionType,
    PodGroupPhase,
    TaskStatus,
)
from batchsched.conf import SchedulerConfiguration, Tier
from batchsched.errors import (
    BatchSchedError,
    CacheError,
    PluginError,
    SchedulingError,
)
from batchsched.framework import combine
from batchsched.framework.events import (
    Event,
    EventHandler,
    RecordedEvent,
)
from batchsched.framework.extension_points import EXTENSION_POINTS
from batchsched.framework.network_topology import (
    open_network_topologies,
    touches_topology,
)
from batchsched.framework.session_plugins import Fn, SessionPlugins, compare_task_default
from batchsched.kube.dra.scheduling import DraObjects

if TYPE_CHECKING:
    from batchsched.cache.protocol import Cache
    from batchsched.framework.recording import Recorder
    from batchsched.framework.registry import Registry
    from batchsched.framework.statement import Operation, Statement
    from batchsched.metrics import Metrics

__all__ = ["Session", "compare_task_default"]

log = logging.getLogger("batchsched")

#: The QueueStatus counter of each pod-group phase.
_PHASE_COUNTERS = {PodGroupPhase.PENDING: "pending", PodGroupPhase.INQUEUE: "inqueue",
                   PodGroupPhase.RUNNING: "running", PodGroupPhase.UNKNOWN: "unknown",
                   PodGroupPhase.COMPLETED: "completed"}


#: A session's statuses of a task its cache still holds Pending (not bound).
_NOT_BOUND = frozenset({TaskStatus.PENDING, TaskStatus.PIPELINED, TaskStatus.ALLOCATED})


def _room_on_its_way(node: NodeInfo, nominee: TaskInfo) -> bool:
    """Whether a pod of lower priority than ``nominee`` that the scheduler preempted is
    still leaving ``node`` (the room a nomination waits for)."""
    priority = nominee.pod_priority
    return any(task.preempted_by_scheduler
               and (task.status is TaskStatus.RELEASING or task.deleting)
               and task.pod_priority < priority for task in node.tasks.values())


class _AllocatableTotal:
    """Every node's allocatable summed, with the figures it summed (their objects, by
    position and name), so that a later session over the same nodes can tell it is
    still the sum: a replay's sessions mostly sum the same figures again."""

    __slots__ = ("figures", "names", "positions", "total")

    def __init__(self, nodes: Sequence[NodeInfo]) -> None:
        self.names: list[str] = list(map(_NAME_OF, nodes))
        self.figures: list[Resource] = list(map(_ALLOCATABLE_OF, nodes))
        self.positions = {name: i for i, name in enumerate(self.names)}
        self.total = Resource.sum(self.figures)

    def carry_over(self, nodes: Sequence[NodeInfo], renewed: frozenset[str] | None) -> bool:
        """Whether the total is that of ``nodes``, bit for bit: the same names in the
        same order, each allocatable the same object as then or the same figures (of
        the nodes in ``renewed`` only, when the cache says which nodes are new)."""
        if list(map(_NAME_OF, nodes)) != self.names:
            return False
        figures = list(map(_ALLOCATABLE_OF, nodes))
        before = self.figures
        if renewed is None:
            same = all(new is old or _same_figures(new, old)
                       for new, old in zip(figures, before, strict=True))
        else:
            positions = self.positions
            same = all(_same_figures(figures[positions[name]], before[positions[name]])
                       for name in renewed if name in positions)
        if same:
            self.figures = figures
        return same


#: Per cache whose sessions reuse node objects, the last session's allocatable total.
_carried_totals: Carried[_AllocatableTotal] = Carried()


def _total_allocatable(ssn: Session) -> Resource:
    """The session's nodes' allocatable summed; over a cache whose sessions reuse node
    objects, carried over from its previous session when the figures are the same."""
    nodes = ssn.node_list
    if not ssn.reuses_objects:
        return Resource.sum(node.allocatable for node in nodes)
    summed = _carried_totals.get(ssn, lambda: _AllocatableTotal(nodes),
                                 lambda kept, renewed: kept.carry_over(nodes, renewed))
    return summed.total.clone()  # the session's own: a plugin may change it


_NAME_OF = operator.attrgetter("name")
_ALLOCATABLE_OF = operator.attrgetter("allocatable")


def _same_figures(a: Resource, b: Resource) -> bool:
    return a.milli_cpu == b.milli_cpu and a.memory == b.memory and a.scalars == b.scalars


class Session(SessionPlugins):
    """One scheduling cycle. Build it with :meth:`open`. Its plugin methods (register,
    order, judge) are :class:`~batchsched.framework.session_plugins.SessionPlugins`'s."""

    def __init__(
        self,
        snapshot: ClusterInfo,
        configuration: SchedulerConfiguration,
        *,
        cache: Cache | None = None,
        registry: Registry | None = None,
        uid: str | None = None,
    ) -> None:
        # Unique across processes, as Volcano's uuid: a host that keeps pod group
        # conditions across a restart must never see an old transition id taken for
        # the current session's (gang's phase rule compares them).
        self.uid = uid or str(uuid.uuid4())
        self.cache = cache
        self.configuration = configuration
        self.tiers: tuple[Tier, ...] = configuration.tiers
        self.registry = registry
        self.jobs: dict[str, JobInfo] = snapshot.jobs
        self.nodes: dict[str, NodeInfo] = snapshot.nodes
        self.node_list: list[NodeInfo] = list(snapshot.nodes.values())
        self.queues: dict[str, QueueInfo] = snapshot.queues
        self.priority_classes = snapshot.priority_classes
        self.pdbs = snapshot.pdbs
        self.resource_quotas = snapshot.resource_quotas
        #: The snapshot's ConfigMaps (``namespace/name`` -> data), read-only.
        self.config_maps: Mapping[str, Mapping[str, str]] = MappingProxyType(
            snapshot.config_maps)
        self.now = snapshot.now if snapshot.now is not None else time.time()
        self.hyper_nodes: tuple[HyperNode, ...] = snapshot.hyper_nodes
        self._hyper_node_links = snapshot.hyper_node_links
        #: Why the hypernodes form no tree ("" when they do; see :attr:`topology`).
        self.hyper_nodes_unready = ""
        #: The Dynamic Resource Allocation objects (read-only; the predicates plugin
        #: keeps what the session allocates beside them).
        self.dra: DraObjects = snapshot.dra
        self._total_resource: Resource | None = None
        #: The scheduler's sharding flags, and the nodes of its shard in this session
        #: (:mod:`batchsched.api.sharding`; empty without sharding).
        self.sharding: Sharding = configuration.sharding
        self.nodes_in_shard: frozenset[str] = (
            nodes_in_shard(snapshot.node_shards, self.sharding.name,
                           snapshot.gone_shard_nodes)
            if self.sharding.active else frozenset())
        #: The nodes that are not Ready, with their pods (read-only: no session
        #: schedules there; for plugins that count the whole cluster, as the node
        #: lister shows it).
        self.not_ready_nodes: Mapping[str, NodeInfo] = MappingProxyType(
            snapshot.not_ready_nodes)
        self.plugins: dict[str, Any] = {}
        self.event_handlers: list[EventHandler] = []
        self.events: list[RecordedEvent] = []
        #: False when the cache drops events (``keep_events = False``): actions may then
        #: skip building the messages of events that only describe their decisions.
        self.keeps_events: bool = bool(getattr(cache, "keep_events", True))
        #: True when the cache may hand this session's job and node objects to the next
        #: session unchanged (``MemoryCache(incremental_snapshots=True)``, the
        #: simulator's): answers a plugin keeps per object then serve later sessions.
        self.reuses_objects: bool = bool(getattr(cache, "incremental_snapshots", False))
        #: Pending tasks nominated to a node of the session, by node name.
        self.nominees: dict[str, list[TaskInfo]] = {}
        #: Tasks nominated to a node the cluster no longer has (deleted): their
        #: nomination is cleared at close.
        self._nominated_to_gone_nodes: list[TaskInfo] = []
        #: The nominees' jobs preempt and reclaim take on, as the session closes.
        self._nominee_jobs_taking_part: set[str] = set()
        for task in self._nominated_tasks():
            if task.nominated_node in self.nodes:
                self.nominees.setdefault(task.nominated_node, []).append(task)
            elif task.nominated_node not in self.not_ready_nodes:
                self._nominated_to_gone_nodes.append(task)
        #: Keeps what plugins answer, for explanations (see batchsched.framework.recording).
        self.recorder: Recorder | None = None
        #: True while answers are asked for a report (scenario scores, explanations,
        #: plugin checks) rather than for a decision (see :meth:`for_report`).
        self.reporting = False
        #: Times plugins and actions (see batchsched.metrics).
        self.metrics: Metrics | None = None
        #: Binds and evictions the cache accepted in this session.
        self.bound_count = 0
        self.evicted_count = 0
        #: Messages the cache failed to take (statuses, events), in order.
        self.host_errors: list[CacheError] = []
        #: The statements made on this session, for :meth:`discard_open_statements`.
        self._statements: list[Statement] = []
        self.extra: dict[str, Any] = {}
        #: Plugin -> the earliest instant after ``now`` at which its answers change
        #: with time alone (:meth:`wake_up_at`).
        self.wake_ups: dict[str, float] = {}
        self._fns: dict[str, dict[str, Fn]] = {name: {} for name in EXTENSION_POINTS}
        #: Plugin -> (its job order key, the comparison registered from it).
        self._job_order_keys: dict[str, tuple[Callable[[JobInfo], Any], Fn]] = {}
        self._task_order_keys: dict[str, tuple[Callable[[TaskInfo], Any], Fn]] = {}
        self._queue_order_keys: dict[str, tuple[Callable[[QueueInfo], Any], Fn]] = {}
        self._messages: dict[str, str] = {}
        self._conditions: dict[tuple[str, str], tuple[str, str]] = {}
        #: Each job's fit error while the session closes, with what it was worked out
        #: from (gang's condition and the job's events say the same summary).
        self._fit_errors: dict[str, tuple[tuple[int, int, str, int], str]] = {}
        self._closing = False
        self._nan_creation_time: bool | None = None
        self._preemptive_many: dict[
            str, tuple[Callable[[QueueInfo, Sequence[TaskInfo]], bool], Fn]] = {}
        self._configured = frozenset(configuration.plugin_names())
        self._bound: dict[str, combine.Bound] = {}
        # What the close compares with to tell whether to record a "Scheduled" event:
        # not kept when events are dropped.
        self._initial_status: dict[str, tuple[PodGroupPhase, int, int, int]] = {}
        self._initial_conditions: dict[str, list[PodGroupCondition]] = {}
        if self.keeps_events:
            # One tuple per distinct status (most jobs wait alike), and each job's
            # conditions list itself: conditions are replaced, never changed in place
            # (update_pod_group_condition).
            statuses: dict[tuple[PodGroupPhase, int, int, int],
                           tuple[PodGroupPhase, int, int, int]] = {}
            initial_status = self._initial_status
            initial_conditions = self._initial_conditions
            for job_uid, job in self.jobs.items():
                podgroup = job.podgroup
                status = (podgroup.phase, podgroup.running, podgroup.succeeded,
                          podgroup.failed)
                initial_status[job_uid] = statuses.setdefault(status, status)
                initial_conditions[job_uid] = podgroup.conditions
        #: Task uid -> the scalars hidden from its requests (see _hide_resources).
        self._hidden_requests: dict[str, dict[str, float]] = {}
        self._raw_min_resources: dict[str, Resource] = {}
        self._raw_queue_quotas: dict[tuple[str, str], Resource] = {}
        #: The tasks a preemption (preempt, reclaim) was tried for in this session: a
        #: nominee among them left waiting, with nothing leaving its node for it, loses
        #: its nomination at close (:meth:`note_preemption_tried`).
        self._preemption_tried: set[str] = set()
        #: Tasks pipelined after evictions in this session (candidates for a nominated
        #: node at close, their statement committed or not).
        self._pipelined_after_evictions: list[TaskInfo] = []
        #: Nodes where the cache accepted an eviction of this session.
        self._evicted_on: set[str] = set()
        #: The nominations made at close (:meth:`_nominations_at_close`).
        self._nominations: dict[str, tuple[TaskInfo, str, bool]] = {}
        #: The resources hidden from every resource list (see _hide_resources).
        self.hidden_resources: frozenset[str] = frozenset()
        self._closed = False
        self._opened = False
        #: The number of the cache's snapshot this session opened on, when the cache
        #: hands unchanged nodes out again and counts its snapshots; else None.
        self.snapshot_serial: int | None = (
            getattr(cache, "snapshot_serial", None) if self.reuses_objects else None)

    def nodes_renewed_since(self, serial: int | None) -> frozenset[str] | None:
        """For state carried over from an earlier session of the same cache, brought
        up to date at that session's :attr:`snapshot_serial`: the names of the nodes
        whose copies are new since (every other node of this session is the very object
        that session had, unchanged). None when not known: read every node."""
        if serial is None or self.snapshot_serial is None:
            return None
        renewed = getattr(self.cache, "nodes_renewed_since", None)
        if renewed is None:
            return None
        names: frozenset[str] | None = renewed(serial)
        return names

    @property
    def closed(self) -> bool:
        """Whether the session was closed (or aborted, or disposed of)."""
        return self._closed

    @property
    def total_resource(self) -> Resource:
        """Every Ready node's allocatable summed (Volcano's ``TotalResource``), added
        up when first read: allocatable does not move within a session, and most
        sessions of a replay have no plugin that reads it."""
        total = self._total_resource
        if total is None:
            total = self._total_resource = _total_allocatable(self)
        return total

    @total_resource.setter
    def total_resource(self, total: Resource) -> None:
        self._total_resource = total

    @functools.cached_property
    def topology(self) -> Topology:
        """The hypernode tree (Volcano's ``ssn.HyperNodes``, ``RealNodesList``,
        ``HyperNodesTiers``...), its virtual root included; built when first read.

        Hypernodes that form no tree (a cycle, a hypernode two parents claim: a host
        cache may hold them while its updates arrive) give the tree without the links
        that break it (as Volcano's cache keeps the tree it had), and
        :attr:`hyper_nodes_ready` is false: as in Volcano, allocate places no job with
        a network topology until the tree is whole, and places the others (scored on
        the tree as it is)."""
        try:
            return build_topology(self.hyper_nodes, self.node_list)
        except TopologyError as exc:
            self.hyper_nodes_unready = str(exc)
            log.warning("session %s: %s; allocate places no job with a network topology "
                        "until the hypernodes form a tree", self.uid, exc)
            return build_topology(self.hyper_nodes, self.node_list, partial=True,
                                  link_claims=self._hyper_node_links)

    @property
    def hyper_nodes_ready(self) -> bool:
        """Volcano's ``HyperNodesReadyToSchedule``: whether the hypernodes form a tree
        (see :attr:`topology`)."""
        if not self.hyper_nodes:
            return True
        self.topology  # noqa: B018 - building the tree is what finds out
        return not self.hyper_nodes_unready

    def _nominated_tasks(self) -> list[TaskInfo]:
        """The tasks with a nominated node, job by job. A cache that hands out the same
        job object again (``reuses_objects``) sets nominations only on its own copies
        and hands out a fresh copy after one, so the answer is kept with the object
        while its tasks do not move; otherwise every task is read (one pass)."""
        if not self.reuses_objects:
            return [task for job in self.jobs.values() for task in job.tasks.values()
                    if task.nominated_node]
        nominated: list[TaskInfo] = []
        for job in self.jobs.values():
            kept = job.memo.get(_NOMINATED_KEY)
            if kept is None or kept[0] != job.mutations:
                kept = (job.mutations,
                        [task for task in job.tasks.values() if task.nominated_node])
                job.memo[_NOMINATED_KEY] = kept
            if kept[1]:
                nominated.extend(kept[1])
        return nominated

    # -- lifecycle ------------------------------------------------------------------------

    @classmethod
    def open(
        cls,
        source: Cache | ClusterInfo,
        configuration: SchedulerConfiguration | None = None,
        *,
        registry: Registry | None = None,
        recorder: Recorder | None = None,
        metrics: Metrics | None = None,
    ) -> Session:
        """Snapshot ``source`` (a cache, or a ClusterInfo the session may consume),
        build the configured plugins and open them. With a ``recorder``, what the
        plugins answer at the points it records is kept for explanations; with
        ``metrics``, each plugin's open and close and each action are timed."""
        from batchsched.conf import default_configuration
        from batchsched.framework.registry import default_registry

        configuration = configuration or default_configuration()
        registry = registry or default_registry()
        configuration.validate(registry)
        if isinstance(source, ClusterInfo):
            cache, snapshot = None, source
        else:
            cache = source
            try:
                snapshot = source.snapshot()
            except BatchSchedError:
                raise
            except Exception as exc:
                raise CacheError(f"the cache's snapshot raised {type(exc).__name__}: {exc}",
                                 operation="snapshot") from exc
        ssn = cls(snapshot, configuration, cache=cache, registry=registry)
        if ssn.hyper_nodes or any(map(touches_topology, ssn.jobs.values())):
            open_network_topologies(ssn.jobs.values(), ssn.topology,
                                    ready=ssn.hyper_nodes_ready)
        ssn.recorder = recorder
        ssn.metrics = metrics
        ssn.plugins = _create_plugins(configuration, registry)
        ssn._hide_resources(ssn._resources_plugins_hide())
        ssn._drop_uncounted_names()
        for tier in configuration.tiers:
            for option in tier.plugins:
                plugin = ssn.plugins[option.name]
                began = time.perf_counter()
                try:
                    plugin.on_session_open(ssn)
                except Exception as exc:
                    raise combine.blamed("on_session_open", option.name, exc)  # noqa: B904
                if metrics is not None:
                    metrics.observe("plugin_scheduling_latency_milliseconds",
                                    (time.perf_counter() - began) * 1e3,
                                    plugin=option.name, OnSession="OnSessionOpen")
        ssn._opened = True
        registry.notify("batchsched_session_opened", session=ssn)
        return ssn

    @classmethod
    def resources_hidden(cls, cluster: ClusterInfo,
                         configuration: SchedulerConfiguration | None = None, *,
                         registry: Registry | None = None) -> frozenset[str]:
        """What a session on ``cluster`` would hide (:meth:`_hide_resources`): the
        configured plugins are built and asked (``hidden_resources``), none is opened
        and nothing of ``cluster`` is changed. Cheap when no plugin hides anything."""
        from batchsched.conf import default_configuration
        from batchsched.framework.registry import default_registry

        configuration = configuration or default_configuration()
        registry = registry or default_registry()
        configuration.validate(registry)
        plugins = _create_plugins(configuration, registry)
        if not any(hasattr(plugin, "hidden_resources") for plugin in plugins.values()):
            return frozenset()
        ssn = cls(cluster.clone(), configuration, registry=registry)
        ssn.plugins = plugins
        return ssn._resources_plugins_hide()

    def _resources_plugins_hide(self) -> frozenset[str]:
        """The resources plugins account for themselves (their optional
        ``hidden_resources(ssn)``, asked before any plugin opens)."""
        hidden: set[str] = set()
        for name, plugin in self.plugins.items():
            ask = getattr(plugin, "hidden_resources", None)
            if ask is None:
                continue
            try:
                hidden.update(ask(self))
            except Exception as exc:
                raise combine.blamed("hidden_resources", name, exc)  # noqa: B904
        return frozenset(hidden)

    def _hide_resources(self, names: frozenset[str]) -> None:
        """Drop ``names`` from every resource list of the session, as Volcano drops the
        resources a device model accounts for (its ``IgnoredDevicesList``) from every
        resource list it reads: node figures, task requests, pod groups' minimum
        resources, queues' quotas. What a task asked of them stays readable through
        :meth:`device_requests`."""
        self.hidden_resources = names
        if not names:
            return
        hidden = self._hidden_requests
        for node in self.node_list:
            changed = False
            for field in ("allocatable", "capacity", "idle", "used", "releasing", "pipelined"):
                figure = getattr(node, field)
                trimmed = figure.without(names)
                if trimmed is not figure:
                    setattr(node, field, trimmed)
                    changed = True
            for held in node.tasks.values():
                trimmed = held.resreq.without(names)
                if trimmed is not held.resreq:
                    # One vector for both when they were one (most tasks).
                    held.init_resreq = trimmed if held.init_resreq is held.resreq \
                        else held.init_resreq.without(names)
                    held.resreq = trimmed
                    changed = True
            if changed:
                node.mutations += 1
        for job in self.jobs.values():
            minimum = job.podgroup.min_resources
            hidden.update(job.hide_resources(names))
            if minimum is not None and job.podgroup.min_resources is not minimum:
                self._raw_min_resources[job.uid] = minimum
        for queue in self.queues.values():
            for field in ("capability", "deserved", "guarantee"):
                quota = getattr(queue, field)
                if quota is not None:
                    setattr(queue, field, quota.without(names))
        self._total_resource = None  # summed again, without the hidden names

    def _drop_uncounted_names(self) -> None:
        """Take out of pod groups' ``minResources`` and queues' ``capability``,
        ``deserved`` and ``guarantee`` the names Volcano's ``NewResource`` does not
        count (a quota's ``count/pods``, ``requests.cpu``...: Volcano's controllers
        write them in ``minResources``). ``minResources`` as written stays readable
        through :meth:`pod_group_min_resources`; a queue's ``defined`` keeps the names
        its spec wrote (Volcano tests whether a spec lists any)."""
        for job in self.jobs.values():
            minimum = job.podgroup.min_resources
            if minimum is None or not minimum.scalars:
                continue
            dropped = [name for name in minimum.scalars if not counted_by_volcano(name)]
            if dropped:
                self._raw_min_resources.setdefault(job.uid, minimum)
                job.podgroup.min_resources = minimum.without(dropped)
        for queue in self.queues.values():
            for field in ("capability", "deserved", "guarantee"):
                quota: Resource | None = getattr(queue, field)
                if quota is None or not quota.scalars:
                    continue
                dropped = [name for name in quota.scalars if not counted_by_volcano(name)]
                if dropped:
                    self._raw_queue_quotas[queue.name, field] = quota
                    setattr(queue, field, quota.without(dropped))

    def queue_quota_as_written(self, queue: QueueInfo, field: str) -> Resource | None:
        """The queue's ``capability``, ``deserved`` or ``guarantee`` as its spec wrote
        it, the names Volcano's ``NewResource`` does not count included (capacity reads
        its device quotas, ``deviceclass/<class>`` and ``<capacity>.deviceclass/<class>``,
        from the spec itself)."""
        written = self._raw_queue_quotas.get((queue.name, field))
        return written if written is not None else getattr(queue, field)

    def pod_group_min_resources(self, job: JobInfo) -> Resource | None:
        """The pod group's ``minResources`` as written, the hidden resources and the
        names Volcano does not count included (Volcano's resourcequota plugin reads the
        pod group's own list)."""
        return self._raw_min_resources.get(job.uid, job.podgroup.min_resources)

    def device_requests(self, task: TaskInfo) -> Mapping[str, float]:
        """The task's scalar requests (milli), those the session hides included
        (:meth:`_hide_resources`): what a device model reads of the pod."""
        hidden = self._hidden_requests.get(task.uid)
        return task.resreq.scalars if hidden is None else {**task.resreq.scalars, **hidden}

    def close(self) -> None:
        """Run ``on_session_close``, update pod-group phases, hand them to the cache."""
        if self._closed:
            return
        self._closed = True
        self._closing = True
        try:
            self._close()
        finally:
            self._closing = False
            self._fit_errors = {}

    def _close(self) -> None:
        # Every plugin closes, though one fails (each hands its own part to the cache,
        # numaaware the CPUs of the binds that went through); then everything is worked
        # out before anything is handed over. A failure in either hands over only the
        # nominations of the evictions that went through, so that the next session
        # does not evict for the same preemptor again, and is raised.
        # Asked of the plugins while they are open (their close may forget what the
        # answers read); a plugin failing there fails the close after every plugin
        # closed, as a failing close does.
        asked: Exception | None = None
        try:
            self._nominee_jobs_taking_part = {
                task.job for tasks in self.nominees.values() for task in tasks
                if task.job in self.jobs
                and self._takes_part_in_evictions(self.jobs[task.job])}
        except Exception as exc:
            asked = exc
        failure = self._close_plugins() or asked
        statuses: dict[str, QueueStatus] = {}
        if failure is None:
            try:
                self._nominations = self._nominations_at_close(clear=True)
                self._set_pod_group_statuses()
                statuses = self._queue_statuses()
            except Exception as exc:
                failure = exc
        if failure is not None:
            self._nominations = self._nominations_at_close()
            self._nominate_preemptors(set())
            raise failure
        self._publish_job_statuses()
        self._publish_queue_statuses(statuses)
        if self.registry is not None:
            self.registry.notify("batchsched_session_closed", session=self)

    def _close_plugins(self) -> Exception | None:
        """Run every plugin's ``on_session_close``; the first failure, blamed."""
        failure: Exception | None = None
        for name, plugin in self.plugins.items():
            began = time.perf_counter()
            try:
                plugin.on_session_close(self)
            except Exception as exc:
                if failure is None:
                    failure = combine.blamed("on_session_close", name, exc)
                    if failure is not exc:
                        failure.__cause__ = exc
                else:
                    log.warning("batchsched: plugin %r raised in on_session_close too: %s: %s",
                                name, type(exc).__name__, exc)
                continue
            if self.metrics is not None:
                self.metrics.observe("plugin_scheduling_latency_milliseconds",
                                     (time.perf_counter() - began) * 1e3,
                                     plugin=name, OnSession="OnSessionClose")
        return failure

    def close_after_failure(self) -> None:
        """Close a session whose actions failed (their open statements undone): what
        the statements that went through imply for the next cycle is handed over (each
        plugin's ``on_session_close``, numaaware's CPUs of the binds among it, and the
        nominations of the evictions), but no pod-group or queue status. A plugin
        failing there is logged. :meth:`abort` hands over nothing at all."""
        if self._closed:
            return
        self._closed = True
        self._closing = True
        try:
            failure = self._close_plugins()
            if failure is not None:
                log.warning("batchsched: closing after a failed cycle: %s", failure)
            self._nominations = self._nominations_at_close()
            self._nominate_preemptors(set())
        finally:
            self._closing = False
            self._fit_errors = {}

    def _set_pod_group_statuses(self) -> None:
        """Each pod group's phase and counts, as Volcano's job updater writes them."""
        running, succeeded, failed = TaskStatus.RUNNING, TaskStatus.SUCCEEDED, TaskStatus.FAILED
        for job in self.jobs.values():
            podgroup = job.podgroup
            podgroup.phase = self.pod_group_phase(job)
            index = job.task_status_index
            podgroup.running = len(index.get(running, _NO_TASKS))
            podgroup.succeeded = len(index.get(succeeded, _NO_TASKS))
            podgroup.failed = len(index.get(failed, _NO_TASKS))

    def _publish_job_statuses(self) -> None:
        """Hand the pod-group statuses, then the nominations and the jobs' events, to
        the cache. A cache that takes every status at once (``update_job_statuses``)
        gets them in one call, then the events; the others get each job's status,
        then its events."""
        cache = self.cache
        keeps_events = self.keeps_events
        in_bulk = _bulk_status_sink(cache)
        refused: set[str] = set()
        if in_bulk is not None:
            refused = self._tell_cache_statuses(in_bulk)
        elif cache is not None:
            one_by_one = cache.update_job_status
            for job in self.jobs.values():
                # Volcano's UpdateJobStatus returns before recording the job's events
                # (and its tasks' nominations) when the pod group's update fails.
                if not self._tell_cache("update_job_status", job.uid, one_by_one, job):
                    refused.add(job.uid)
                elif keeps_events:
                    self._record_job_events(job)
        self._nominate_preemptors(refused)
        if keeps_events and (in_bulk is not None or cache is None):
            for job in self.jobs.values():
                if job.uid not in refused:
                    self._record_job_events(job)

    def _tell_cache_statuses(self, in_bulk: Callable[[Iterable[JobInfo]], object]) -> set[str]:
        """Hand every job's status to the cache at once; if that raises, again one by
        one, so that a host failing on one job loses only that job's status (as when
        they are handed one by one: ``_tell_cache``). The jobs whose status the cache
        did not take."""
        try:
            in_bulk(self.jobs.values())
        except Exception as exc:
            error = CacheError(f"the cache's update_job_statuses raised {type(exc).__name__}: "
                               f"{exc}; the statuses are handed over one by one",
                               operation="update_job_statuses", obj="")
            error.__cause__ = exc
            self.host_errors.append(error)
            log.warning("batchsched: %s", error)
            assert self.cache is not None
            return {job.uid for job in self.jobs.values()
                    if not self._tell_cache("update_job_status", job.uid,
                                            self.cache.update_job_status, job)}
        return set()

    def _queue_statuses(self) -> dict[str, QueueStatus]:
        """Each queue's status from its jobs (what it holds, its pod groups by phase)."""
        statuses = {name: QueueStatus() for name in self.queues}
        device_usage = [entry for tier in self.tiers_for("queue_resource") for entry in tier]
        # With a root queue, what a job holds counts for every ancestor of its queue too.
        hierarchy = ROOT_QUEUE in self.queues
        claimed: dict[str, set[str]] | None = {} if self.dra else None
        # Each queue's holders once (the queue and, with a root queue, its ancestors),
        # not once per job: a session closes hundreds of jobs of a few queues.
        holders: dict[str, tuple[tuple[str, QueueStatus], ...]] = {
            name: tuple((holder, statuses[holder]) for holder in
                        ((name, *self._ancestors(name)) if hierarchy else (name,)))
            for name in statuses}
        per_job = bool(device_usage) or claimed is not None
        for job in self.jobs.values():
            held = holders.get(job.queue)
            if held is None:
                continue
            holding = job.allocated
            if holding.scalars and min(holding.scalars.values()) < MIN_RESOURCE:
                # A zero the status would print: summed from the tasks that hold
                # resources, as Volcano sums them (a task asking 0 of a resource writes
                # it; one that left does not, though the running sum kept its name).
                holding = Resource()
                for held_status in ALLOCATED_STATUSES:
                    for task in job.tasks_in(held_status).values():
                        holding.add(task.resreq)
            # A job that holds nothing (most waiting jobs) adds nothing: skipped.
            if holding.milli_cpu or holding.memory or holding.scalars or per_job:
                for holder, status in held:
                    allocated = status.allocated
                    allocated.add(holding)
                    if device_usage:
                        self._count_device_usage(allocated, job, device_usage)
                    if claimed is not None:
                        self._count_claimed_devices(allocated, job,
                                                    claimed.setdefault(holder, set()))
            field = _PHASE_COUNTERS.get(job.podgroup.phase)
            if field is not None:
                status = held[0][1]
                setattr(status, field, getattr(status, field) + 1)
        return statuses

    def _publish_queue_statuses(self, statuses: dict[str, QueueStatus]) -> None:
        """Set each queue's status, and hand it to a cache that takes it
        (``update_queue_status``, optional)."""
        update = getattr(self.cache, "update_queue_status", None)
        for name, status in statuses.items():
            queue = self.queues[name]
            queue.status = status
            if update is not None:
                self._tell_cache("update_queue_status", name, update, queue)

    def _ancestors(self, queue: str) -> list[str]:
        """The queue's parents up to the root queue (a queue without a parent hangs from
        the root), as Volcano's queue status walks them: from the queue itself, the
        root's own parent included (a job of the root queue counts twice there, and in
        the root's parent if it names one). A cycle away from the root, or a parent
        that is not a queue, ends the walk (Volcano's would not end, or would fail)."""
        out: list[str] = []
        seen: set[str] = set()  # checked in O(1): chains can be deep
        name = queue
        while True:
            info = self.queues.get(name)
            parent = (info.parent if info is not None else "") or ROOT_QUEUE
            if parent not in self.queues or parent in seen:
                break
            out.append(parent)
            if parent == ROOT_QUEUE:
                break
            seen.add(parent)
            name = parent
        return out

    def _count_claimed_devices(self, allocated: Resource, job: JobInfo, seen: set[str]) -> None:
        """Add the devices the job's placed tasks' claims ask for (``deviceclass/<class>``,
        a claim counted once per queue: ``seen``), as Volcano's queue status does."""
        placed = (task for status, tasks in job.task_status_index.items()
                  if status in ALLOCATED_STATUSES for task in tasks.values())
        scalars = allocated.scalars
        for device_class, amount in new_claim_devices(
                placed, self.dra.resource_claims, seen).items():
            for name, value in device_resources(device_class, amount).items():
                scalars[name] = scalars.get(name, 0.0) + value

    def _count_device_usage(self, allocated: Resource, job: JobInfo,
                            fns: list[tuple[str, Callable[..., Any]]]) -> None:
        """Replace, in ``allocated``, the requests of the job's placed tasks by what
        their shared devices say they hold (the ``queue_resource`` point)."""
        for status, tasks in job.task_status_index.items():
            if status not in ALLOCATED_STATUSES:
                continue
            for task in tasks.values():
                node = self.nodes.get(task.node_name)
                if node is None:
                    continue
                counted: dict[str, float] = {}
                with combine.Blame("queue_resource") as blame:
                    for blame.plugin, fn in fns:
                        counted.update(fn(task, node))
                scalars = allocated.scalars
                for name, amount in counted.items():
                    scalars[name] = (scalars.get(name, 0.0) + float(amount)
                                     - task.resreq.scalars.get(name, 0.0))

    @contextlib.contextmanager
    def for_report(self) -> Iterator[Session]:
        """Ask the plugins for a report, not a decision: a plugin whose answer needs an
        earlier step of the session (the predicates' filters read what the
        pre-predicate computed) may take that step itself, where on a decision path
        it answers as Volcano does without it (an error)."""
        before, self.reporting = self.reporting, True
        try:
            yield self
        finally:
            self.reporting = before

    def dispose(self) -> None:
        """Let go of everything the session holds but its events: the cluster (jobs,
        nodes, queues), the plugins, the functions they registered and what actions
        kept on it. Nothing may use the session afterwards; it is closed first if it
        was not.

        Plugins, their functions and the node selectors refer back to the session, so
        a session left as it is stays in memory, with the whole cluster it holds,
        until Python's cycle collector finds it: a one-shot run (which turns that
        collector off) would carry the cluster through its output. After this, the
        jobs, their tasks and the queues go as soon as the caller's last reference to
        them does; nodes an action's node columns were built from (and the tasks on
        them) still wait for the collector."""
        if self._opened and not self._closed:
            self.close()
        self._closed = True
        self.plugins = {}
        self._fns = {name: {} for name in EXTENSION_POINTS}
        self._bound.clear()
        self._job_order_keys.clear()
        self._task_order_keys.clear()
        self._queue_order_keys.clear()
        self._preemptive_many.clear()
        self.event_handlers.clear()
        self._statements.clear()
        self.extra.clear()
        self.__dict__.pop("topology", None)
        # Node columns watch the nodes they were built from (and the nodes them).
        for node in self.node_list:
            node.on_change = None
        self.jobs, self.nodes, self.node_list, self.queues = {}, {}, [], {}
        self.cache = None
        self.nominees = {}
        self._pipelined_after_evictions = []
        self._nominations = {}

    def abort(self) -> None:
        """Close without publishing anything: after an action failed, the session's view
        may hold uncommitted decisions, so no pod-group status is handed to the cache
        (what statements already committed stands)."""
        self._closed = True

    def pod_group_phase(self, job: JobInfo) -> PodGroupPhase:
        """The phase Volcano's job updater gives the pod group at session close."""
        podgroup = job.podgroup
        pending = job.task_status_index.get(TaskStatus.PENDING)
        if pending is not None and len(pending) == len(job.tasks) and podgroup.min_member > 0:
            # Every task pending (most jobs of a session that waits): none is scheduled,
            # none running, so below minMember whatever the conditions say.
            return podgroup.phase if podgroup.phase == PodGroupPhase.INQUEUE \
                else PodGroupPhase.PENDING
        # Running tasks first: most jobs have none, and then the conditions do not matter.
        if job.tasks_in(TaskStatus.RUNNING) and any(
            c.type == PodGroupConditionType.UNSCHEDULABLE and c.status == "True"
            and c.transition_id == self.uid
            for c in podgroup.conditions
        ):
            return PodGroupPhase.UNKNOWN
        scheduled = job.scheduled_task_num() + job.releasing_scheduled_task_num()
        if scheduled >= podgroup.min_member:
            completed = sum(len(job.tasks_in(s)) for s in COMPLETED_STATUSES)
            return PodGroupPhase.COMPLETED if scheduled == completed else PodGroupPhase.RUNNING
        if podgroup.phase != PodGroupPhase.INQUEUE:
            return PodGroupPhase.PENDING
        return podgroup.phase

    def job_fit_error(self, job: JobInfo) -> str:
        """The job's fit error (:meth:`JobInfo.fit_error`, the summary gang's
        ``Unschedulable`` condition and the job's events give). While the session
        closes it is worked out once per job (again if the job's tasks moved or its
        fit errors were replaced since: a plugin's close that changes what it reads
        otherwise should call :meth:`JobInfo.fit_error`); at any other time, afresh."""
        stamp = (job.mutations, job.min_available, job.job_fit_errors,
                 len(job.nodes_fit_errors))
        kept = self._fit_errors.get(job.uid)
        if kept is not None and kept[0] == stamp:
            return kept[1]
        message = job.fit_error()
        if self._closing:
            self._fit_errors[job.uid] = (stamp, message)
        return message

    def _record_job_events(self, job: JobInfo) -> None:
        """The job's events and its pods', which say the same fit error: worked out
        once."""
        summary: list[str] = []

        def fit_error() -> str:
            if not summary:
                summary.append(self.job_fit_error(job))
            return summary[0]

        self._record_job_status_event(job, fit_error)
        self._record_task_events(job, fit_error)

    def _record_job_status_event(self, job: JobInfo, fit_error: Callable[[], str]) -> None:
        """The pod-group event Volcano's cache records after the status update.

        A job left Pending, Inqueue or Unknown gets a Warning ``Unschedulable``
        (``"<pending tasks>/<tasks> tasks in gang unschedulable: <fit error>"``);
        any other job gets a Normal ``Scheduled`` ``pod group is ready`` when its
        phase or conditions (transition ids aside) changed in this session.
        """
        phase = job.podgroup.phase
        if phase in (PodGroupPhase.PENDING, PodGroupPhase.INQUEUE, PodGroupPhase.UNKNOWN):
            pending = len(job.tasks_in(TaskStatus.PENDING))
            self.record_event(
                job.uid, "Warning", "Unschedulable",
                f"{pending}/{len(job.tasks)} tasks in gang unschedulable: {fit_error()}",
            )
            return
        podgroup = job.podgroup
        changed = (phase, podgroup.running, podgroup.succeeded, podgroup.failed) \
            != self._initial_status.get(job.uid) or _comparable(
                podgroup.conditions) != _comparable(self._initial_conditions.get(job.uid, []))
        if changed:
            self.record_event(job.uid, "Normal", "Scheduled", "pod group is ready")

    def _record_task_events(self, job: JobInfo, fit_error: Callable[[], str]) -> None:
        """The pod half of Volcano's ``RecordJobStatusEvent``: every Allocated, Pending
        and Pipelined task of the job gets its ``PodScheduled: False`` condition (the
        reason and message of ``JobInfo.TaskSchedulingReason``, else the job's fit
        error) and, when that condition or the task's nominated node changed, a Warning
        ``FailedScheduling`` with the message. A cache that keeps the condition
        (``set_scheduling_condition``) is told; a cache that does not sees the event
        again at every session. A scheduling-gated pod keeps the condition the API
        server gave it, as in Volcano's cache."""
        summary: str | None = None
        keep = getattr(self.cache, "set_scheduling_condition", None)
        for status in _UNPLACED_STATUSES:
            tasks = job.tasks_in(status)
            for uid in sorted(tasks):
                task = tasks[uid]
                if task.scheduling_gated:
                    continue  # the API server gave it its SchedulingGated condition
                reason, message = job.task_scheduling_reason(uid)
                if not message:
                    if summary is None:
                        summary = fit_error() or ALL_NODES_UNAVAILABLE
                    message = summary
                if task.scheduling_condition == (reason, message):
                    # Volcano's taskUnschedulable also records the event when only the
                    # nominated node changes.
                    nominated = self._nominations.get(uid)
                    if nominated is None or not nominated[2]:
                        continue
                # One condition object per distinct condition: the tasks of a waiting
                # queue keep the same one.
                condition = self._conditions.setdefault((reason, message), (reason, message))
                task.scheduling_condition = condition
                message = condition[1]
                self.record_event(uid, "Warning", "FailedScheduling", message)
                if keep is not None:
                    self._tell_cache("set_scheduling_condition", uid,
                                     functools.partial(keep, task, reason), message)

    def update_pod_group_condition(self, job: JobInfo, condition: PodGroupCondition) -> None:
        """Set a condition on the job's pod group (replacing one of the same type)."""
        if not condition.transition_id:
            condition = PodGroupCondition(
                condition.type, condition.status, condition.reason, condition.message, self.uid,
            )
        conditions = job.podgroup.conditions
        if not conditions or (len(conditions) == 1 and conditions[0].type == condition.type):
            job.podgroup.conditions = [condition]  # the usual case, without the scan
            return
        # As Volcano's UpdatePodGroupCondition: the first of the type is replaced where
        # it stands (its order is part of what tells a status changed), else appended.
        index = next((i for i, c in enumerate(conditions) if c.type == condition.type), None)
        if index is None:
            job.podgroup.conditions = [*conditions, condition]
        else:
            job.podgroup.conditions = [*conditions[:index], condition, *conditions[index + 1:]]

    def record_event(self, obj: str, event_type: str, reason: str, message: str) -> None:
        """Record a Kubernetes-style event on a task or job id."""
        # Many events say the same thing (every waiting job of a queue, say): one
        # string object per distinct message is kept.
        message = self._messages.setdefault(message, message)
        event = RecordedEvent(obj, event_type, reason, message)
        self.events.append(event)
        if self.cache is not None:
            self._tell_cache("record_event", obj, self.cache.record_event, event)

    def _tell_cache(self, operation: str, obj: str, call: Callable[[Any], object],
                    argument: Any) -> bool:
        """Hand the cache a status or an event; whether it took it. A host that fails
        here loses only that message (the next session computes the status again):
        the failure is logged and kept in ``host_errors``, and the session goes on."""
        try:
            call(argument)
        except Exception as exc:
            error = CacheError(f"{obj}: the cache's {operation} raised {type(exc).__name__}: "
                               f"{exc}", operation=operation, obj=obj)
            error.__cause__ = exc
            self.host_errors.append(error)
            log.warning("batchsched: %s", error)
            return False
        return True

    # -- events and decisions ------------------------------------------------------------------

    def discard_open_statements(self) -> None:
        """Undo what statements neither committed nor discarded still hold, latest
        first: after an action failed half-way (a plugin raised), the session is back
        to what the committed decisions made it, and closing it reports no placement
        that was never bound. An undo that raises is logged and the rest go on."""
        for statement in reversed(self._statements):
            # discard stops at an undo that raised (that one done): go on with the rest.
            while statement.operations:
                try:
                    statement.discard()
                except Exception as exc:  # the error being handled matters more
                    log.warning("batchsched: undoing an open statement after a failure "
                                "raised %s: %s", type(exc).__name__, exc)
        self._statements.clear()

    def _fire_allocate(self, task: TaskInfo, unplace: Callable[[], None] | None = None) -> None:
        """The allocate event; on a refusal, ``unplace`` (the caller's undo of the
        placement) runs before the handlers see it undone."""
        self._fire(task, allocate=True, unplace=unplace)

    def _fire_allocate_refusals_ignored(self, task: TaskInfo) -> None:
        """Every allocate handler sees the task on its node, and a refusal
        (SchedulingError) is ignored: Volcano's ``unevict`` and ``Session.Allocate``
        read no event error."""
        self._fire(task, allocate=True, refusals_ignored=True)

    def _fire_deallocate(self, task: TaskInfo) -> None:
        self._fire(task, allocate=False)

    def _fire_undone(self, task: TaskInfo, *, allocate: bool) -> None:
        """The event of an undo that stands whatever the handlers do (a statement
        reverting an operation, a gang's bind taken back): every handler sees it,
        the ones after a failing handler too, so that no plugin keeps counting what
        was undone; the first failure is raised once all have seen it. An allocation
        given back is not refused (Volcano's ``unevict`` reads no event error)."""
        event = Event(task)
        point = "allocate event" if allocate else "deallocate event"
        failed: Exception | None = None
        for handler in self.event_handlers:
            fn = handler.allocate if allocate else handler.deallocate
            if fn is None:
                continue
            try:
                fn(event)
            except SchedulingError as refusal:
                if not allocate and failed is None:
                    failed = combine.plugin_failed(point, handler.plugin or "<handler>",
                                                   refusal)
            except Exception as exc:
                if failed is None:
                    failed = combine.blamed(point, handler.plugin or "<handler>", exc)
        if failed is not None:
            raise failed

    def _fire(self, task: TaskInfo, *, allocate: bool, refusals_ignored: bool = False,
              unplace: Callable[[], None] | None = None) -> None:
        """Hand the event to every handler. A refused allocation (SchedulingError) is
        Volcano's event error: the handlers after the refusing one still see the
        allocation, and then every handler sees it undone (Volcano's ``unallocate``
        calls every deallocate function, the refusing plugin's too, the task Pending
        and off its node by then: ``unplace``) before the first refusal is raised. A
        handler that fails otherwise stops the event: the handlers before it see it
        undone (an undo that stands whatever they do is :meth:`_fire_undone`'s)."""
        event = Event(task)
        handlers = self.event_handlers
        refused: SchedulingError | None = None
        for position, handler in enumerate(handlers):
            fn = handler.allocate if allocate else handler.deallocate
            if fn is None:
                continue
            try:
                fn(event)
            except SchedulingError as refusal:
                if refusals_ignored:
                    continue
                if not allocate:
                    # No refusal: Volcano's deallocate functions return nothing.
                    self._undo_seen(task, allocate, handlers[:position])
                    raise combine.plugin_failed(  # noqa: B904 (it sets the cause)
                        "deallocate event", handler.plugin or "<handler>", refusal)
                if self.recorder is not None:
                    self.recorder.refused_placement(task.uid, handler.plugin or "<handler>",
                                                    task.node_name, str(refusal))
                if refused is None:
                    refused = refusal
            except Exception as exc:
                self._undo_seen(task, allocate, handlers[:position])
                point = "allocate event" if allocate else "deallocate event"
                raise combine.blamed(point, handler.plugin or "<handler>", exc)  # noqa: B904
        if refused is not None:
            if unplace is not None:
                unplace()
            # The placement is undone whatever the handlers do: a failing one's own
            # error is raised (the refusal in its context), all having seen the undo.
            try:
                raise refused
            except SchedulingError:
                self._fire_undone(task, allocate=False)
                raise

    @staticmethod
    def _undo_seen(task: TaskInfo, allocate: bool, seen: list[EventHandler]) -> None:
        """Undo the handlers that already saw the event, so that no plugin keeps
        counting an operation the statement is about to revert."""
        for handler in reversed(seen):
            if (handler.allocate if allocate else handler.deallocate) is None:
                continue  # it did not see the event
            undo = handler.deallocate if allocate else handler.allocate
            if undo is not None:
                undo(Event(task))

    def _bind(self, task: TaskInfo) -> bool:
        accepted = self.cache is None or self.cache.bind(task, task.node_name)
        self.bound_count += bool(accepted)
        return accepted

    def _evict(self, task: TaskInfo, reason: str) -> bool:
        """Hand an eviction to the cache; one that raises did not happen."""
        if self.cache is None:
            self.evicted_count += 1
            return True
        try:
            accepted = self.cache.evict(task, reason)
            self.evicted_count += bool(accepted)
            return accepted
        except Exception as exc:
            error = CacheError(f"{task.uid}: the cache's evict raised {type(exc).__name__}: "
                               f"{exc}", operation="evict", obj=task.uid)
            error.__cause__ = exc
            self.host_errors.append(error)
            log.warning("batchsched: %s", error)
            return False

    def nominated_reserve(self, task: TaskInfo, node: NodeInfo) -> Resource | None:
        """What ``node`` keeps for the pending tasks nominated to it (kube-scheduler's
        two-pass filter, seed 004): the requests of those of equal or higher priority
        than ``task``, other than ``task``; None when there is nothing to keep."""
        nominees = self.nominees.get(node.name)
        if not nominees:
            return None
        kept: Resource | None = None
        for nominee in nominees:
            if (nominee.uid == task.uid or nominee.priority < task.priority
                    or nominee.status != TaskStatus.PENDING or nominee.node_name):
                continue
            kept = nominee.init_resreq.clone() if kept is None else kept.add(nominee.init_resreq)
        return kept

    def keeps_room_for_nominees(self, task: TaskInfo) -> bool:
        """Whether some node keeps room for a nominee ``task`` must respect."""
        return any(self.nominated_reserve(task, self.nodes[name]) is not None
                   for name in self.nominees)

    def _nominate_preemptors(self, refused: set[str]) -> None:
        """Tell the cache the nominations of :meth:`_nominations_at_close`, but those
        of jobs whose status it ``refused`` (Volcano writes them in
        ``RecordJobStatusEvent``, which a failed pod group update skips)."""
        for task, node_name, _ in self._nominations.values():
            if task.job not in refused:
                self._nominate(task, node_name)

    def _nominations_at_close(self, *, clear: bool = False
                              ) -> dict[str, tuple[TaskInfo, str, bool]]:
        """Volcano's nominated nodes, by task uid (``RecordJobStatusEvent``, for every
        job whatever its phase), each with whether it differs from the task's nominated
        node as the session opened (read before any is handed to the cache, which may
        write it on the task): a task that stands pipelined on a node after evictions
        there is nominated to that node. (Volcano also
        nominates from a discarded statement's last transaction, and after evictions
        the host refused, where nothing is being freed; with the room sessions keep
        for nominees and the nominated-node check of preempt, such a preemptor could
        never preempt again nor be placed, so it is nominated only where an eviction
        of this session went through.)"""
        nominations: dict[str, tuple[TaskInfo, str, bool]] = {}
        for task in self._pipelined_after_evictions:
            if (task.uid not in nominations and task.job in self.jobs
                    and task.status is TaskStatus.PIPELINED and task.eviction_occurred
                    and task.node_name in self._evicted_on):
                nominations[task.uid] = (task, task.node_name,
                                         task.node_name != task.nominated_node)
        if clear and getattr(self.cache, "nominate", None) is not None:
            # A nominee a preemption was tried for in vain (or any, when no action of
            # the session preempts: nothing would renew nor clear it), still waiting,
            # whose node frees nothing for it any more, is no nominee (kube's preemption
            # clears the nomination when it finds no victims): else nominees that cannot
            # all fit would keep each other's room for ever.
            # So is the nominee of a job preempt and reclaim do not take on (not
            # starving, not valid, not admitted): none of them would ever try it.
            preempting = bool({"preempt", "reclaim"} & set(self.configuration.actions))
            for tasks in self.nominees.values():
                for task in tasks:
                    if (task.uid not in nominations
                            and task.status is TaskStatus.PENDING and not task.node_name
                            and task.job in self.jobs
                            and (task.uid in self._preemption_tried or not preempting
                                 or (not task.never_preempts
                                     and task.job not in self._nominee_jobs_taking_part))
                            and not _room_on_its_way(self.nodes[task.nominated_node], task)):
                        nominations[task.uid] = (task, "", True)
            # A node deleted since its nominee was nominated keeps nothing for it, and
            # preempt never takes a preemptor nominated to a node missing from the
            # session (Volcano's taskEligibleToPreempt): it would starve for good. A
            # nominee placed elsewhere by this session (pipelined, or allocated by a
            # statement) is no nominee of the gone node either.
            for task in self._nominated_to_gone_nodes:
                if (task.uid not in nominations and task.status in _NOT_BOUND
                        and task.job in self.jobs):
                    nominations[task.uid] = (task, "", True)
        return nominations

    def _takes_part_in_evictions(self, job: JobInfo) -> bool:
        """Whether preempt and reclaim take the job on as a preemptor's: admitted,
        valid and starving (what they ask before anything else)."""
        if job.is_pending():
            return False
        verdict = self.job_valid(job)
        if verdict is not None and not verdict.passed:
            return False
        return self.job_starving(job)

    def note_preemption_tried(self, task: TaskInfo) -> None:
        """A preemption was tried for ``task`` in this session (preempt and reclaim say
        so): if it is left waiting on a nomination nothing frees room for, the
        nomination is cleared at close, as kube-scheduler's preemption clears it."""
        self._preemption_tried.add(task.uid)

    def _nominate(self, task: TaskInfo, node_name: str) -> None:
        """Tell the cache the node a preemptor's victims were evicted on (kube's
        nominated node), if the cache takes nominations (``nominate``)."""
        nominate = getattr(self.cache, "nominate", None)
        if nominate is not None:
            self._tell_cache("nominate", task.uid, lambda t: nominate(t, node_name), task)

    def _unbind(self, task: TaskInfo, reason: str) -> str:
        """Take back a bind the cache accepted: ``"unbound"`` when its ``unbind`` did
        (the pod is Pending again, its room free); ``"evicted"`` when the cache has no
        ``unbind`` and evicted the pod instead (it is Releasing: its room is freed once
        it is gone); ``"kept"`` when the cache refused or raised (the bind stands; kept
        in ``host_errors``). The next snapshot shows what stands."""
        cache = self.cache
        if cache is None:
            return "unbound"
        unbind = getattr(cache, "unbind", None)
        try:
            if unbind is None:
                if cache.evict(task, reason):
                    return "evicted"
                problem = "the cache refused to evict it"
            elif unbind(task, reason) is not False:
                return "unbound"
            else:
                problem = "the cache refused to unbind it"
        except Exception as exc:
            problem = f"taking back its bind raised {type(exc).__name__}: {exc}"
        error = CacheError(f"{task.uid}: {problem}", operation="unbind", obj=task.uid)
        self.host_errors.append(error)
        log.warning("batchsched: %s", error)
        return "kept"

    def _statement_committed(self, operations: list[Operation]) -> None:
        if self.registry is not None and operations:
            self.registry.notify("batchsched_statement_committed", session=self,
                                 operations=operations)

    # Column forms used to be registered here; they belong to batchsched.columnar now.

    def add_vector_predicate_fn(self, plugin: str, fn: Callable[..., Any]) -> None:
        """Deprecated: use :func:`batchsched.columnar.add_predicate_fn`."""
        _moved_to_columnar("add_vector_predicate_fn", "add_predicate_fn")
        from batchsched.columnar import forms

        forms.add_predicate_fn(self, plugin, fn)

    def add_vector_node_order_fn(
        self, plugin: str, fn: Callable[..., Any], *, many: Callable[..., Any] | None = None
    ) -> None:
        """Deprecated: use :func:`batchsched.columnar.add_node_order_fn`."""
        _moved_to_columnar("add_vector_node_order_fn", "add_node_order_fn")
        from batchsched.columnar import forms

        forms.add_node_order_fn(self, plugin, fn, many=many)

    def add_vector_batch_node_order_fn(
        self, plugin: str, fn: Callable[..., Any], *, many: Callable[..., Any] | None = None
    ) -> None:
        """Deprecated: use :func:`batchsched.columnar.add_batch_node_order_fn`."""
        _moved_to_columnar("add_vector_batch_node_order_fn", "add_batch_node_order_fn")
        from batchsched.columnar import forms

        forms.add_batch_node_order_fn(self, plugin, fn, many=many)

    def add_vector_template_fn(self, plugin: str, fn: Callable[[TaskInfo], Any]) -> None:
        """Deprecated: use :func:`batchsched.columnar.add_template_fn`."""
        _moved_to_columnar("add_vector_template_fn", "add_template_fn")
        from batchsched.columnar import forms

        forms.add_template_fn(self, plugin, fn)

    def __repr__(self) -> str:
        return (f"<Session {self.uid} jobs={len(self.jobs)} nodes={len(self.nodes)} "
                f"queues={len(self.queues)}>")



def _comparable(conditions: list[PodGroupCondition]) -> list[tuple[Any, ...]]:
    """Pod-group conditions as compared at close: transition ids left out."""
    return [(c.type, c.status, c.reason, c.message) for c in conditions]


#: The job memo key of :meth:`Session._nominated_tasks`.
_NOMINATED_KEY = "session.nominated-tasks"


def _create_plugins(configuration: SchedulerConfiguration, registry: Registry
                    ) -> dict[str, Any]:
    """A new object of every configured plugin, by name, in tier order. A plugin that
    refuses its arguments (``ValueError``, ``TypeError``) is a PluginError naming the
    configuration's file and the plugin's place in it."""
    plugins: dict[str, Any] = {}
    for t, tier in enumerate(configuration.tiers):
        for p, option in enumerate(tier.plugins):
            try:
                plugins[option.name] = registry.create_plugin(option.name, option.arguments)
            except PluginError as exc:
                raise configuration.refused_arguments(exc, place=(t, p)) from exc.__cause__
    return plugins


def _bulk_status_sink(cache: object) -> Callable[[Iterable[JobInfo]], object] | None:
    """The cache's ``update_job_statuses``, unless it has none, or the cache object
    itself watches statuses or events one by one (a method set on the instance)."""
    in_bulk: Callable[[Iterable[JobInfo]], object] | None = getattr(
        cache, "update_job_statuses", None)
    if in_bulk is None:
        return None
    own = getattr(cache, "__dict__", {})
    if "update_job_status" in own or "record_event" in own:
        return None
    return in_bulk


#: A status without tasks, in a job's status index.
_NO_TASKS: Mapping[str, TaskInfo] = {}
#: The tasks whose pods get a ``PodScheduled: False`` condition at close, in
#: Volcano's order.
_UNPLACED_STATUSES = (TaskStatus.ALLOCATED, TaskStatus.PENDING, TaskStatus.PIPELINED)


def _moved_to_columnar(old: str, new: str) -> None:
    warnings.warn(
        f"Session.{old} is deprecated and goes away in batchsched {REMOVED_IN}: "
        f"call batchsched.columnar.{new}(ssn, ...) instead",
        DeprecationWarning,
        stacklevel=3,
    )
