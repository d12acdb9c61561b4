"""ClusterInfo: the snapshot a session opens on, and the small objects it carries."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping

import attrs

from batchsched.api.hypernode import HyperNode
from batchsched.api.job import JobInfo
from batchsched.api.node import NodeInfo
from batchsched.api.queue import QueueInfo
from batchsched.api.resource import Resource
from batchsched.api.sharding import NodeShard
from batchsched.api.task import TaskInfo
from batchsched.kube.affinity import Requirement
from batchsched.kube.dra.scheduling import DraObjects

__all__ = [
    "BudgetLedger",
    "ClusterInfo",
    "PodDisruptionBudget",
    "PriorityClass",
    "ResourceQuota",
]


@attrs.frozen
class PriorityClass:
    name: str
    value: int
    preemption_policy: str = "PreemptLowerPriority"
    global_default: bool = False


#: The priority classes every Kubernetes cluster has (the API server creates them):
#: a pod naming one gets its value even where no object of it is given.
SYSTEM_PRIORITY_CLASSES = (
    PriorityClass("system-cluster-critical", 2_000_000_000),
    PriorityClass("system-node-critical", 2_000_001_000),
)


@attrs.define(eq=False)
class PodDisruptionBudget:
    """A PodDisruptionBudget reduced to what the pdb plugin reads.

    ``disruptions_allowed`` is the budget's status (computed by the loader from
    ``minAvailable`` / ``maxUnavailable`` when not given directly, and kept up to date
    by a replay as Kubernetes' disruption controller would: :meth:`allowed_for`).
    """

    name: str
    namespace: str
    #: The selector's ``matchLabels``.
    selector: dict[str, str]
    disruptions_allowed: int
    disrupted_pods: frozenset[str] = frozenset()
    #: The selector's ``matchExpressions``.
    match_expressions: tuple[Requirement, ...] = ()
    #: The spec: a count, or a percentage as ``"N%"``; None when not given (a budget
    #: given by its status alone has neither).
    min_available: int | str | None = None
    max_unavailable: int | str | None = None

    def allowed_for(self, pods: int, healthy: int) -> int | None:
        """The disruption controller's ``disruptionsAllowed`` for ``pods`` matching
        pods of which ``healthy`` run: healthy beyond the pods it wants healthy,
        ``minAvailable``, or the matching pods less ``maxUnavailable`` (never below
        zero, so never more than the healthy pods); percentages of the matching pods
        rounded up; never below zero. None when the budget keeps no spec."""
        if self.min_available is not None:
            return max(0, healthy - _count_or_percent(self.min_available, pods))
        if self.max_unavailable is not None:
            wanted = max(0, pods - _count_or_percent(self.max_unavailable, pods))
            return max(0, healthy - wanted)
        return None

    def matches(self, namespace: str, labels: Mapping[str, str]) -> bool:
        """Same namespace, and a selector that is not empty and that the labels meet
        (an empty selector selects no pod, as in Volcano's pdb plugin)."""
        if namespace != self.namespace or not (self.selector or self.match_expressions):
            return False
        return (all(labels.get(k) == v for k, v in self.selector.items())
                and all(r.matches(labels) for r in self.match_expressions))

    def counts(self, task: TaskInfo) -> bool:
        """Whether evicting ``task`` spends a disruption of this budget: the task has
        labels, the budget matches them, and the pod is not already among the
        budget's disrupted pods (keyed by pod name, as Kubernetes keys them)."""
        return (
            bool(task.labels)
            and self.matches(task.namespace, task.labels)
            and task.name not in self.disrupted_pods
        )


def _count_or_percent(value: int | str, total: int) -> int:
    if isinstance(value, str):
        return math.ceil(int(value.rstrip("%")) * total / 100)
    return value


class BudgetLedger:
    """PodDisruptionBudgets being spent on a sequence of evictions.

    Each budget starts at its ``disruptions_allowed``. :meth:`charge` spends one
    disruption of every budget the task counts against
    (:meth:`PodDisruptionBudget.counts`) and says whether all of them are still
    within budget. A refused task has spent its disruptions all the same, as in
    Volcano's pdb plugin and kube-scheduler's ``filterPodsWithPDBViolation``. The
    pdb plugin spends budgets through it.

    >>> pdb = PodDisruptionBudget("web", "ns", {"app": "web"}, disruptions_allowed=1)
    >>> ledger = BudgetLedger([pdb])
    >>> pod = TaskInfo.create("ns", "w1", "ns/j", labels={"app": "web"})
    >>> ledger.charge(pod), ledger.charge(pod)
    (True, False)
    """

    __slots__ = ("_allowed", "_budgets")

    def __init__(self, budgets: Iterable[PodDisruptionBudget]) -> None:
        self._budgets = list(budgets)
        self._allowed = [budget.disruptions_allowed for budget in self._budgets]

    def charge(self, task: TaskInfo) -> bool:
        """Spend ``task``'s disruptions; False when a budget it counts against is
        now below zero. A task without labels counts against no budget (True)."""
        within = True
        if not task.labels:
            return within
        for i, budget in enumerate(self._budgets):
            if not budget.counts(task):
                continue
            self._allowed[i] -= 1
            if self._allowed[i] < 0:
                within = False
        return within


@attrs.define(eq=False)
class ResourceQuota:
    """A namespace quota: ``hard`` limits and what is ``used``."""

    name: str
    namespace: str
    hard: Resource
    used: Resource = attrs.field(factory=Resource)
    hard_names: frozenset[str] = frozenset()
    #: The names ``status.used`` lists (a zero too); the quota controller lists every
    #: name of ``hard`` once it has counted. Only messages read it.
    used_names: frozenset[str] = frozenset()
    #: ``hard`` and ``used`` as Kubernetes writes their quantities back (the format
    #: each was given in, ``16Gi`` or ``16G``), by name; empty when unknown. Only what
    #: is sent out (the extender's session-open request) reads them.
    hard_texts: Mapping[str, str] = attrs.field(factory=dict)
    used_texts: Mapping[str, str] = attrs.field(factory=dict)

    @property
    def limited_names(self) -> frozenset[str]:
        """The resources the quota limits: every name of ``hard`` (a limit of zero
        too, when the names were given)."""
        return self.hard_names or frozenset(self.hard.to_dict())


@attrs.define(eq=False)
class ClusterInfo:
    """Everything one session sees. The session owns (and mutates) what it is given.

    Nodes that are not Ready and jobs whose queue is missing are kept out by
    :meth:`batchsched.cache.MemoryCache.snapshot`, as Volcano's cache does.
    """

    nodes: dict[str, NodeInfo] = attrs.field(factory=dict)
    jobs: dict[str, JobInfo] = attrs.field(factory=dict)
    queues: dict[str, QueueInfo] = attrs.field(factory=dict)
    priority_classes: dict[str, PriorityClass] = attrs.field(factory=dict)
    pdbs: list[PodDisruptionBudget] = attrs.field(factory=list)
    resource_quotas: list[ResourceQuota] = attrs.field(factory=list)
    #: The session clock (seconds since the epoch); None: the real time when a session opens.
    now: float | None = None
    #: ConfigMaps plugins read (``namespace/name`` -> data), such as the device
    #: configuration deviceshare reads; replaced, never changed in place, so shared.
    config_maps: dict[str, Mapping[str, str]] = attrs.field(factory=dict)
    #: The cluster's hypernodes (network topology, :mod:`batchsched.api.hypernode`);
    #: immutable, so shared.
    hyper_nodes: tuple[HyperNode, ...] = ()
    #: When each hypernode link ``(parent, child)`` was claimed (lower is older), for
    #: the tree a session builds while the hypernodes form none (see
    #: :func:`~batchsched.api.hypernode.build_topology`); read-only, so shared.
    hyper_node_links: Mapping[tuple[str, str], int] = attrs.field(factory=dict)
    #: The Dynamic Resource Allocation objects (device classes, resource slices,
    #: claims, claim templates); immutable, so shared.
    dra: DraObjects = attrs.field(factory=DraObjects)
    #: The nodes that are not Ready, with their pods: no session schedules on them
    #: (they are not in ``nodes``), but a plugin counting the whole cluster as the node
    #: lister shows it reads them (capacity-card's catalog and cluster total).
    not_ready_nodes: dict[str, NodeInfo] = attrs.field(factory=dict)
    #: The ``NodeShard`` objects (scheduler sharding, :mod:`batchsched.api.sharding`);
    #: immutable, so shared.
    node_shards: tuple[NodeShard, ...] = ()
    #: Per deleted NodeShard, the nodes its scheduler had when it went (read-only).
    gone_shard_nodes: Mapping[str, frozenset[str]] = attrs.field(factory=dict)

    def clone(self) -> ClusterInfo:
        return ClusterInfo(
            nodes={n: v.clone() for n, v in self.nodes.items()},
            jobs={j: v.clone() for j, v in self.jobs.items()},
            queues={q: v.clone() for q, v in self.queues.items()},
            priority_classes=dict(self.priority_classes),
            pdbs=[attrs.evolve(p) for p in self.pdbs],
            resource_quotas=[attrs.evolve(q) for q in self.resource_quotas],
            now=self.now,
            config_maps=dict(self.config_maps),
            hyper_nodes=self.hyper_nodes,
            hyper_node_links=self.hyper_node_links,
            dra=self.dra,
            not_ready_nodes={n: v.clone() for n, v in self.not_ready_nodes.items()},
            node_shards=self.node_shards,
            gone_shard_nodes=self.gone_shard_nodes,
        )
