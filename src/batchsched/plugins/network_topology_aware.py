"""network-topology-aware: place jobs within hypernodes (Volcano's
``plugins/network-topology-aware``).

What it registers:

* **Gradients** (``hyper_node_gradient_for_job`` and ``..._for_sub_job``): for a job
  with a hard topology up to tier ``H`` (soft ones arrive as hard: see
  :mod:`batchsched.framework.network_topology`), the hypernodes under the one asked
  about, breadth first, kept when their tier is at most ``H`` and, while the job
  holds no hypernode yet, when the job's minimum (the pod group's ``minResources``;
  for the sub-job, the requests of its pending tasks) fits their idle or future
  idle resources as at session open; grouped by tier, lowest first. Once the job
  holds a hypernode the search starts from its highest ancestor within ``H``. For
  eviction (``purpose="evict"``) the minimum must fit their allocatable, and the
  tiers come highest first, at most ``hypernode.gradient.evict.max-hypernodes``
  hypernodes (default 8). A job without a hard topology gets the hypernode asked
  about.
* **Hypernode order**: hypernode-level binpack: for each resource with a weight
  (cpu, memory, and those of ``hypernode.binpack.resources``), the share of the
  hypernode's allocatable that its used resources plus the job's requests (every
  task's, placed or not) would fill, weighted; 0 when one would overflow. Equal best
  scores are told apart by the share of the job's tasks already in the hypernode.
  Scaled by 100 x ``weight``.
* **Node order** (batch): for a job with a topology, nodes score by how close their
  lowest-tier hypernode is to the hypernode the job's placed tasks lie within:
  1 within the same, else ``(maxTier - tier(LCA)) / (maxTier - minTier)`` (the
  virtual root's tier counts), nothing while the job holds none; for other jobs
  (``hypernode.binpack.normal-pod.enable``, default true), the hypernode binpack of
  the task over every tier, tier ``t`` weighted ``fading^(t-1)``
  (``hypernode.binpack.normal-pod.fading``, default 0.8), a tier where the node is
  in no hypernode counting 1. Equal best scores are told apart as above. Scaled by
  100 x ``weight``.

Each hypernode's allocatable, idle and future idle are summed at session open;
its used resources follow allocations and evictions.

Arguments: ``weight`` (default 1; negative means 1), ``hypernode.binpack.cpu``,
``hypernode.binpack.memory`` (default 1; negative means 1),
``hypernode.binpack.resources`` (comma-separated names) with
``hypernode.binpack.resources.<name>`` (default 1; negative means 1),
``hypernode.binpack.normal-pod.enable``, ``hypernode.binpack.normal-pod.fading``
(negative means 0.8), ``hypernode.gradient.evict.max-hypernodes`` (0 or less means 8).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable, Mapping

import attrs
import numpy as np

from batchsched import columnar
from batchsched.api.hypernode import NetworkTopology, Topology
from batchsched.api.job import JobInfo
from batchsched.api.node import NodeInfo
from batchsched.api.resource import CPU, MEMORY, Resource
from batchsched.api.sub_job import SubJobInfo, sub_job_of
from batchsched.api.task import TaskInfo
from batchsched.columnar.forms import VectorFallback
from batchsched.columnar.node_columns import Candidates, FloatArray, IndexArray, NodeColumns
from batchsched.framework.arguments import Arguments
from batchsched.framework.events import Event, EventHandler
from batchsched.framework.session import Session
from batchsched.kube.go_math import go_pow
from batchsched.kube.go_strings import trim_space

__all__ = ["NetworkTopologyAwarePlugin"]

PLUGIN_NAME = "network-topology-aware"
MAX_NODE_SCORE = 100.0
EVICT = "evict"


@attrs.define
class _HyperNodeResources:
    allocatable: Resource = attrs.field(factory=Resource)
    used: Resource = attrs.field(factory=Resource)
    idle: Resource = attrs.field(factory=Resource)
    future_idle: Resource = attrs.field(factory=Resource)


class NetworkTopologyAwarePlugin:
    """Volcano's network-topology-aware plugin (see the module docstring)."""

    name = PLUGIN_NAME

    def __init__(self, arguments: Arguments) -> None:
        owner = PLUGIN_NAME
        weight = arguments.get_int("weight", 1, owner=owner)
        self.weight = weight if weight >= 0 else 1
        self.resource_weights: dict[str, int] = {}
        for raw in arguments.get_str("hypernode.binpack.resources", "",
                                       owner="network-topology-aware").split(","):
            name = trim_space(raw)
            if name:
                value = arguments.get_int(f"hypernode.binpack.resources.{name}", 1, owner=owner)
                self.resource_weights[name] = value if value >= 0 else 1
        cpu = arguments.get_int("hypernode.binpack.cpu", 1, owner=owner)
        memory = arguments.get_int("hypernode.binpack.memory", 1, owner=owner)
        self.resource_weights[CPU] = cpu if cpu >= 0 else 1
        self.resource_weights[MEMORY] = memory if memory >= 0 else 1
        self.normal_pods = arguments.get_bool("hypernode.binpack.normal-pod.enable", True,
                                              owner=owner)
        fading = arguments.get_float("hypernode.binpack.normal-pod.fading", 0.8, owner=owner)
        self.fading = fading if fading >= 0 else 0.8
        most = arguments.get_int("hypernode.gradient.evict.max-hypernodes", 8, owner=owner)
        self.max_hyper_nodes_for_eviction = most if most > 0 else 8
        arguments.warn_unknown(owner, [
            "weight", "hypernode.binpack.cpu", "hypernode.binpack.memory",
            "hypernode.binpack.resources", "hypernode.binpack.normal-pod.enable",
            "hypernode.binpack.normal-pod.fading", "hypernode.gradient.evict.max-hypernodes",
        ], prefixes=["hypernode.binpack.resources."])
        self.resources: dict[str, _HyperNodeResources] = {}
        self._tier_rows: dict[tuple[int, int, int], IndexArray] = {}
        self.min_tier = 0
        self.max_tier = 0

    # -- session ------------------------------------------------------------------------

    def on_session_open(self, ssn: Session) -> None:
        topology = ssn.topology
        tiers = topology.tiers
        if tiers:
            self.min_tier, self.max_tier = tiers[0], tiers[-1]
        self.resources = {}
        for name in topology.tiers_of:
            sums = _HyperNodeResources()
            for node in topology.real_node_list.get(name, ()):
                sums.allocatable.add(node.allocatable)
                sums.used.add(node.used)
                sums.idle.add(node.idle)
                sums.future_idle.add(node.future_idle())
            self.resources[name] = sums

        def gradient_for_job(job: JobInfo, hyper_node: str, purpose: str) -> list[list[str]] | None:
            minimum = job.podgroup.min_resources or Resource()
            return self._gradient(topology, job.network_topology, hyper_node, purpose,
                                  held=job.allocated_hyper_node, minimum=minimum)

        def gradient_for_sub_job(sub_job: SubJobInfo, hyper_node: str,
                                 purpose: str) -> list[list[str]] | None:
            job = ssn.jobs[sub_job.job]
            return self._gradient(topology, ssn.sub_job_topology(job, sub_job), hyper_node,
                                  purpose, held=job.sub_job_hyper_node(sub_job.uid),
                                  minimum=sub_job.min_resources())

        ssn.add_hyper_node_gradient_for_job_fn(self.name, gradient_for_job)
        ssn.add_hyper_node_gradient_for_sub_job_fn(self.name, gradient_for_sub_job)
        ssn.add_hyper_node_order_fn(
            self.name, lambda job, names: self._hyper_node_scores(topology, job, names))
        ssn.add_batch_node_order_fn(
            self.name, lambda task, nodes: self._node_scores(ssn, topology, task, nodes))
        self._tier_rows = {}
        columnar.add_batch_node_order_fn(
            ssn, self.name,
            lambda task, columns, candidates: self._column_scores(
                ssn, topology, task, columns, candidates))

        def on_allocate(event: Event) -> None:
            self._follow(topology, event.task, add=True)

        def on_deallocate(event: Event) -> None:
            self._follow(topology, event.task, add=False)

        ssn.add_event_handler(EventHandler(allocate=on_allocate, deallocate=on_deallocate,
                                           plugin=self.name))

    def on_session_close(self, ssn: Session) -> None:
        self.resources = {}

    def _follow(self, topology: Topology, task: TaskInfo, *, add: bool) -> None:
        for name in topology.holding(task.node_name):
            used = self.resources[name].used
            if add:
                used.add(task.resreq)
            else:
                used.sub_unchecked(task.resreq)

    # -- gradients ----------------------------------------------------------------------

    def _gradient(self, topology: Topology, spec: NetworkTopology | None, hyper_node: str,
                  purpose: str, *, held: str, minimum: Resource) -> list[list[str]] | None:
        highest = spec.hard_tier() if spec is not None else None
        if highest is None:
            return [[hyper_node]]
        root = self._search_root(topology, hyper_node, highest, held)
        if root is None:
            return None
        eligible: dict[int, list[str]] = {}
        queue = deque([root])
        seen = {root}
        while queue:
            current = queue.popleft()
            if self._eligible(topology, current, highest, held=held, minimum=minimum,
                              purpose=purpose):
                eligible.setdefault(topology.tier(current), []).append(current)
            # Children by name: Volcano's order there is Go's set order (random).
            for child in sorted(topology.children.get(current, ())):
                if child not in seen and child in topology:
                    seen.add(child)
                    queue.append(child)
        # Within a tier, in the order the walk found them (Volcano's): hypernodes
        # nearer the walk's root first, whatever their names.
        gradients = [eligible[tier] for tier in sorted(eligible)]
        if purpose != EVICT:
            return gradients
        return reverse_and_cap(gradients, self.max_hyper_nodes_for_eviction)

    @staticmethod
    def _search_root(topology: Topology, available: str, highest: int, held: str) -> str | None:
        if not held:
            return available
        widest = ""
        for name in topology.ancestors(held):
            if name not in topology:
                return None
            if topology.tier(name) > highest:
                break
            widest = name
        if not widest:
            return None
        common = topology.lca(available, widest)
        if common == widest:
            return available
        if common == available:
            return widest
        return None

    def _eligible(self, topology: Topology, name: str, highest: int, *, held: str,
                  minimum: Resource, purpose: str) -> bool:
        if topology.tier(name) > highest:
            return False
        if held:
            return True
        sums = self.resources.get(name)
        if sums is None:
            return True
        if purpose == EVICT:
            return _fits(minimum, sums.allocatable)
        return _fits(minimum, sums.idle) or _fits(minimum, sums.future_idle)

    # -- scores -------------------------------------------------------------------------

    def _binpack(self, name: str, request: Mapping[str, float]) -> float:
        sums = self.resources.get(name)
        total = 0.0
        weights = 0
        for resource, amount in request.items():
            weight = self.resource_weights[resource]
            if sums is None:
                continue
            allocatable = sums.allocatable.get(resource)
            used = sums.used.get(resource)
            if used + amount > allocatable:
                return 0.0
            total += weight * ((used + amount) / allocatable)  # Volcano's order
            weights += weight
        return total / weights if weights > 0 else 0.0

    def _hyper_node_scores(self, topology: Topology, sub_job: SubJobInfo,
                           names: list[str]) -> dict[str, float]:
        request: dict[str, float] = {}
        for task in sub_job.tasks.values():
            for resource, amount in self._weighted_request(task).items():
                request[resource] = request.get(resource, 0.0) + amount
        scores = {name: self._binpack(name, request) for name in names}
        self._break_ties(topology, scores, lambda name: name, sub_job)
        return {name: MAX_NODE_SCORE * self.weight * score for name, score in scores.items()}

    def _weighted_request(self, task: TaskInfo) -> dict[str, float]:
        """The task's requests of the resources the binpack weighs, in Volcano's order."""
        return {resource: task.resreq.get(resource)
                for resource in task.resreq.resource_names() if resource in self.resource_weights}

    @staticmethod
    def _sub_job_of(ssn: Session, task: TaskInfo) -> tuple[SubJobInfo, bool] | None:
        """The task's sub-job and whether its topology makes the scores topology-aware."""
        job = ssn.jobs.get(task.job)
        sub_job = None if job is None else sub_job_of(job, task.uid)
        if job is None or sub_job is None:
            return None
        return sub_job, ssn.sub_job_topology(job, sub_job) is not None

    def _node_scores(self, ssn: Session, topology: Topology, task: TaskInfo,
                     nodes: list[NodeInfo]) -> dict[str, float]:
        found = self._sub_job_of(ssn, task)
        if found is None:
            return {}
        sub_job, topology_aware = found
        if topology_aware:
            held = task.job_allocated_hyper_node
            if not held:
                return {}
            scores = {node.name: self._closeness(topology, topology.leaf_of(node.name), held)
                      for node in nodes}
            self._break_ties(topology, scores, topology.leaf_of, sub_job)
        else:
            scores = self._normal_pod_scores(topology, task, nodes)
        return {name: MAX_NODE_SCORE * self.weight * score for name, score in scores.items()}

    def _column_scores(self, ssn: Session, topology: Topology, task: TaskInfo,
                       columns: NodeColumns, candidates: Candidates) -> FloatArray | float:
        """:meth:`_node_scores` over the column path's candidates, for tasks without a
        topology (the normal-pod scores; same float operations); others fall back."""
        found = self._sub_job_of(ssn, task)
        if found is None:
            return 0.0
        if found[1]:
            raise VectorFallback("topology-aware node scores")
        if not self.normal_pods:
            return 0.0
        tiers, tier_weights, total_weight = self._tier_weights()
        if total_weight <= 0:
            return 0.0
        request = self._weighted_request(task)
        total = np.zeros(len(columns))
        for tier in tiers:
            names = topology.by_tier.get(tier, ())
            # The last entry serves the nodes in no hypernode of the tier: a full score.
            per_hyper_node = np.array([*(self._binpack(name, request) for name in names), 1.0])
            total = total + tier_weights[tier] * per_hyper_node[self._rows_of(topology, tier,
                                                                              columns)]
        scores: FloatArray = (MAX_NODE_SCORE * self.weight) * candidates.pick(
            total / total_weight)
        return scores

    def _rows_of(self, topology: Topology, tier: int, columns: NodeColumns) -> IndexArray:
        """Per node of the columns, the position in ``by_tier[tier]`` of the first
        hypernode holding it (the scalar path's), or -1."""
        key = (tier, id(columns.nodes), len(columns))
        rows = self._tier_rows.get(key)
        if rows is None or len(rows) != len(columns):
            position = {name: i for i, name in enumerate(topology.by_tier.get(tier, ()))}
            rows = np.array([position.get(topology.holder(tier, name), -1)
                             for name in columns.names], dtype=np.intp)
            self._tier_rows[key] = rows
        return rows

    def _tier_weights(self) -> tuple[range, dict[int, float], float]:
        tiers = range(self.min_tier, self.max_tier + 1)
        # math.Pow(fading, tier - 1), as Go computes it (Pow(0, 0) is 1: fading 0 keeps
        # tier 1, and weighs the others 0, tier 0 included: see the docs).
        weights = {tier: go_pow(self.fading, float(tier - 1)) if self.fading or tier == 1
                   else 0.0 for tier in tiers}
        return tiers, weights, sum(weights.values())

    def _closeness(self, topology: Topology, leaf: str, held: str) -> float:
        if not leaf or not held:
            return 0.0
        if leaf == held:
            return 1.0
        common = topology.lca(leaf, held)
        if common not in topology:
            return 0.0
        tier = topology.tier(common)
        if self.min_tier == self.max_tier:
            return 1.0
        if self.min_tier <= tier <= self.max_tier:
            return (self.max_tier - tier) / (self.max_tier - self.min_tier)
        return 0.0

    def _normal_pod_scores(self, topology: Topology, task: TaskInfo,
                           nodes: list[NodeInfo]) -> dict[str, float]:
        if not self.normal_pods:
            return {}
        tiers, tier_weights, total_weight = self._tier_weights()
        if total_weight <= 0:
            return {}
        request = self._weighted_request(task)
        scores: dict[str, float] = {}
        for node in nodes:
            total = 0.0
            for tier in tiers:
                holder = topology.holder(tier, node.name)
                # A tier where no hypernode holds the node counts in full.
                score = self._binpack(holder, request) if holder else 1.0
                total += tier_weights[tier] * score
            scores[node.name] = total / total_weight
        return scores

    @staticmethod
    def _break_ties(topology: Topology, scores: dict[str, float],
                    hyper_node_of: Callable[[str], str], sub_job: SubJobInfo) -> None:
        """Among the best (equal) scores, more of the sub-job's tasks within wins."""
        if not scores:
            return
        best = max(scores.values())
        tied = [name for name, score in scores.items() if score == best]
        tasks = sub_job.tasks
        if len(tied) < 2 or not tasks:
            return
        placed = [task.node_name for task in tasks.values()]
        for name in tied:
            scores[name] += topology.tasks_within(hyper_node_of(name), placed) / len(tasks)


def _fits(request: Resource, room: Resource) -> bool:
    """Volcano's ``LessEqual`` with the zero default."""
    return request.less_equal(room)


def reverse_and_cap(gradients: Iterable[list[str]], most: int) -> list[list[str]]:
    """Eviction gradients: highest tier first, at most ``most`` hypernodes in all (of
    a tier cut short, its last ones)."""
    gradients = list(gradients)
    if most <= 0:
        return gradients
    out: list[list[str]] = []
    left = most
    for gradient in reversed(gradients):
        if left == 0:
            break
        if len(gradient) <= left:
            out.append(gradient)
            left -= len(gradient)
        else:
            out.append(gradient[len(gradient) - left:])
            left = 0
    return out

