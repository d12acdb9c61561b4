"""ClusterInfo: the snapshot a session opens on, and the small objects it carries."""

from __future__ import annotations

import attrs

from batchsched.api.job import JobInfo
from batchsched.api.node import NodeInfo
from batchsched.api.queue import QueueInfo
from batchsched.api.resource import Resource

__all__ = ["ClusterInfo", "PodDisruptionBudget", "PriorityClass", "ResourceQuota"]


@attrs.frozen
class PriorityClass:
    name: str
    value: int
    preemption_policy: str = "PreemptLowerPriority"
    global_default: bool = False


@attrs.define(eq=False)
class PodDisruptionBudget:
    """A PodDisruptionBudget reduced to what the pdb plugin reads.

    ``disruptions_allowed`` is the budget's status (computed by the loader from
    ``minAvailable`` / ``maxUnavailable`` when not given directly).
    """

    name: str
    namespace: str
    selector: dict[str, str]
    disruptions_allowed: int
    disrupted_pods: frozenset[str] = frozenset()

    def matches(self, namespace: str, labels: dict[str, str]) -> bool:
        if namespace != self.namespace or not self.selector:
            return False
        return all(labels.get(k) == v for k, v in self.selector.items())


@attrs.define(eq=False)
class ResourceQuota:
    """A namespace quota: ``hard`` limits and what is ``used``."""

    name: str
    namespace: str
    hard: Resource
    used: Resource = attrs.field(factory=Resource)
    hard_names: frozenset[str] = frozenset()


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

    def clone(self) -> ClusterInfo:
        return ClusterInfo(
            nodes={n: v.clone() for n, v in self.nodes.items()},
            jobs={j: v.clone() for j, v in self.jobs.items()},
            queues={q: v.clone() for q, v in self.queues.items()},
            priority_classes=dict(self.priority_classes),
            pdbs=[attrs.evolve(p) for p in self.pdbs],
            resource_quotas=[attrs.evolve(q) for q in self.resource_quotas],
            now=self.now,
        )
