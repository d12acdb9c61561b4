"""nodeorder: kube-scheduler's node scores, weighted (Volcano's ``plugins/nodeorder``).

Each scorer gives every candidate node an integer from 0 to 100, with
kube-scheduler's integer arithmetic; the plugin adds ``score * weight`` per
scorer. All but image locality are *batch* scores: they are computed over the
list of candidate nodes handed to ``batch_node_order`` (in allocate, the nodes
that passed the predicates), and some are normalised over that list.

================================  =======  ========================================================
argument                          default  scorer
================================  =======  ========================================================
``leastrequested.weight``         1        LeastAllocated: cpu and memory, weights 50/50
``mostrequested.weight``          0        MostAllocated: cpu and memory, weights 1/1
``balancedresource.weight``       1        BalancedAllocation: cpu, memory, nvidia.com/gpu
``nodeaffinity.weight``           2        preferred node affinity, normalised to the best node
``podaffinity.weight``            2        preferred inter-pod (anti-)affinity, min-max normalised
``tainttoleration.weight``        3        untolerated PreferNoSchedule taints, reversed
``podtopologyspread.weight``      2        ScheduleAnyway topology spread, fewer matching pods best
``imagelocality.weight``          1        images already on the node (per node, not normalised)
================================  =======  ========================================================

A weight of 0 turns the scorer off; a negative weight is used as given.

* **LeastAllocated**: per resource with allocatable > 0,
  ``(allocatable - requested) * 100 // allocatable`` (0 if requested exceeds
  allocatable), where requested = the node's pods' requests + the task's, a
  missing cpu request counting 100m and a missing memory request 200Mi; the
  node score is ``(cpu * 50 + memory * 50) // 100``.
* **MostAllocated**: ``min(requested, allocatable) * 100 // allocatable``, averaged
  with integer division.
* **BalancedAllocation** (Kubernetes 1.36's): with the real requests (no
  100m/200Mi), the fraction ``min(1, requested / allocatable)`` of cpu, memory and
  -- if the task asks for it and the node has it -- nvidia.com/gpu; the balance
  ``int((1 - std) * 100)``, std being half the difference for two fractions, the
  population standard deviation for three; the score ``50 + (50 + with - without)
  // 2`` of the balance with the task's requests and without them (before 1.36:
  the balance with them alone). A task requesting none of them is not scored.
* **node affinity**: the sum of the weights of the preferred terms the node
  matches, then ``100 * raw // max(raw)``. Only for tasks with preferred terms.
* **taint toleration**: the number of ``PreferNoSchedule`` taints the task does
  not tolerate, then ``100 - 100 * raw // max(raw)`` (all 100 when max is 0).
* **inter-pod affinity**: for each placed pod P and its node's topology value,
  add the weight of every preferred affinity term of the task matching P, and
  of every preferred affinity term of P matching the task; subtract the same for
  anti-affinity terms (Volcano gives P's *required* affinity terms weight 0).
  A node's raw score sums the totals of its topology values; then
  ``int(100 * (raw - min) / (max - min))`` (0 when all equal). Not scored when no
  term applies at all.
* **topology spread**: kube-scheduler's PodTopologySpread score of the task's
  ``ScheduleAnyway`` constraints (:func:`batchsched.kube.topology_spread.spread_scores`):
  per candidate the matching pods of its domain times ``log(domains + 2)`` plus
  ``maxSkew - 1``, rounded, then ``100 * (max + min - raw) // max``; a candidate
  lacking a topology key scores 0. Only for tasks with such constraints (no
  default constraints).
* **image locality**: per task image present on the node, ``size * nodes having it
  / all nodes``; the sum clamped to [23 MiB, 1000 MiB * images] and scaled to
  0..100. Image names without a tag mean ``:latest`` (on both sides).

The node view these scores read is the one the predicates plugin keeps current
(:mod:`batchsched.kube.pod_view`); without the predicates plugin it stays
as it was when the session opened, as in Volcano.

:func:`least_allocated`, :func:`most_allocated` and :func:`balanced_allocation`
take plain integer vectors (request, node used, node allocatable) and are the
reference their array twins in :mod:`batchsched.columnar.scores` are
checked against. ``vector_node_order`` and ``vector_batch_node_order`` give the
plugin's scores for all candidates at once (for the fast node selector,
:mod:`batchsched.columnar.selector`), equal node for node: the resource
scores read the view's arrays (:mod:`batchsched.columnar.kube_columns`), the
node-affinity and taint raw scores are computed once per distinct preferred
terms or tolerations, and inter-pod affinity from the topology scores. Tasks
with ScheduleAnyway topology spread constraints take the scalar path
(VectorFallback).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from batchsched import columnar
from batchsched.api.node import NodeInfo
from batchsched.api.oversubscription import (
    OVERSUBSCRIPTION_CPU,
    OVERSUBSCRIPTION_MEMORY,
    without_oversubscription,
)
from batchsched.api.resource import CPU, MEMORY
from batchsched.api.task import TaskInfo
from batchsched.columnar.forms import TaskSetCache, VectorFallback, stacked
from batchsched.columnar.kube_columns import LARGE, IntArray, KubeColumns
from batchsched.columnar.node_columns import (
    Candidates,
    FloatArray,
    NodeColumns,
)
from batchsched.columnar.scores import (
    balanced_allocation_many,
    balanced_allocation_vector,
    default_normalize_vector,
    inter_pod_affinity_normalize_vector,
    least_allocated_many,
    least_allocated_vector,
    most_allocated_vector,
)
from batchsched.errors import NodeOrderError
from batchsched.framework.arguments import Arguments
from batchsched.framework.session import Session
from batchsched.kube.pod_view import GPU, KubeView, NodeView, PodInfo, kube_int
from batchsched.kube.scores import MAX_NODE_SCORE, default_normalize
from batchsched.kube.taints import Toleration, count_intolerable_taints
from batchsched.kube.topology_spread import SpreadConstraint, spread_scores
from batchsched.plugins.predicates import spread_placements

__all__ = [
    "MAX_NODE_SCORE",
    "NodeOrderPlugin",
    "balance_score",
    "balanced_allocation",
    "default_normalize",
    "image_locality_score",
    "inter_pod_affinity_normalize",
    "least_allocated",
    "least_requested_score",
    "most_allocated",
    "most_requested_score",
    "normalized_image_name",
]

PLUGIN_NAME = "nodeorder"
LEAST_ALLOCATED_WEIGHTS = (50, 50)
MOST_ALLOCATED_WEIGHTS = (1, 1)
MIB = 1024 * 1024
IMAGE_MIN_THRESHOLD = 23 * MIB
IMAGE_MAX_CONTAINER_THRESHOLD = 1000 * MIB

WEIGHT_ARGUMENTS: dict[str, int] = {
    "leastrequested.weight": 1,
    "mostrequested.weight": 0,
    "balancedresource.weight": 1,
    "nodeaffinity.weight": 2,
    "podaffinity.weight": 2,
    "tainttoleration.weight": 3,
    "podtopologyspread.weight": 2,
    "imagelocality.weight": 1,
}

# -- pure scoring functions (integer arithmetic as in kube-scheduler) --------------------------


def least_requested_score(requested: int, allocatable: int) -> int:
    """``(allocatable - requested) * 100 // allocatable``, 0 when over."""
    if requested > allocatable:
        return 0
    return (allocatable - requested) * MAX_NODE_SCORE // allocatable


def most_requested_score(requested: int, allocatable: int) -> int:
    """``min(requested, allocatable) * 100 // allocatable``."""
    return min(requested, allocatable) * MAX_NODE_SCORE // allocatable


def _weighted_resource_score(
    per_resource: Callable[[int, int], int], request: Sequence[int], used: Sequence[int],
    allocatable: Sequence[int], weights: Sequence[int],
) -> int:
    """kube-scheduler's weighted average of a per-resource score over the resources
    with allocatable > 0 (integer division, as in Go)."""
    score = weight_sum = 0
    for req, use, alloc, weight in zip(request, used, allocatable, weights, strict=True):
        if alloc == 0:
            continue
        score += per_resource(use + req, alloc) * weight
        weight_sum += weight
    return score // weight_sum if weight_sum else 0


def least_allocated(
    request: Sequence[int], used: Sequence[int], allocatable: Sequence[int],
    weights: Sequence[int] = LEAST_ALLOCATED_WEIGHTS,
) -> int:
    """kube-scheduler's LeastAllocated over resources with allocatable > 0."""
    return _weighted_resource_score(least_requested_score, request, used, allocatable, weights)


def most_allocated(
    request: Sequence[int], used: Sequence[int], allocatable: Sequence[int],
    weights: Sequence[int] = MOST_ALLOCATED_WEIGHTS,
) -> int:
    """kube-scheduler's MostAllocated over resources with allocatable > 0."""
    return _weighted_resource_score(most_requested_score, request, used, allocatable, weights)


def balanced_allocation(
    request: Sequence[int], used: Sequence[int], allocatable: Sequence[int],
    extended: Sequence[bool] = (False, False, True),
) -> int:
    """kube-scheduler's BalancedAllocation (Kubernetes 1.36): how the task changes the
    node's balance, ``50 + (50 + with - without) // 2`` where ``with`` and
    ``without`` are :func:`balance_score` of the node's requests with and without
    the task's.

    An extended resource the task does not request, and any resource the node
    lacks (allocatable 0), are left out of both.
    """
    kept = [(req, use, alloc) for req, use, alloc, is_extended
            in zip(request, used, allocatable, extended, strict=True)
            if not ((is_extended and req == 0) or alloc == 0)]
    with_task = balance_score([use + req for req, use, _ in kept], [a for _, _, a in kept])
    without = balance_score([use for _, use, _ in kept], [a for _, _, a in kept])
    # Both lie in 50..100, so the numerator is never negative and Go's division
    # (towards zero) is Python's floor division.
    return MAX_NODE_SCORE // 2 + (MAX_NODE_SCORE // 2 + with_task - without) // 2


def balance_score(requested: Sequence[int], allocatable: Sequence[int]) -> int:
    """kube-scheduler's ``balancedResourceScore``: ``int((1 - std) * 100)`` of the
    fractions ``min(1, requested / allocatable)``, std being half the difference of
    two fractions, the population standard deviation of three or more (0 for one)."""
    fractions = [min(float(req) / float(alloc), 1.0)
                 for req, alloc in zip(requested, allocatable, strict=True)]
    std = 0.0
    if len(fractions) == 2:
        std = abs((fractions[0] - fractions[1]) / 2)
    elif len(fractions) > 2:
        total = 0.0
        for fraction in fractions:  # not sum(): Python 3.12's compensates, Go's does not
            total += fraction
        mean = total / len(fractions)
        squares = 0.0
        for fraction in fractions:
            squares = squares + (fraction - mean) * (fraction - mean)
        std = math.sqrt(squares / len(fractions))
    return int((1 - std) * MAX_NODE_SCORE)


def inter_pod_affinity_normalize(scores: Sequence[int]) -> list[int]:
    """Min-max scaling to 0..100 with float arithmetic, truncated."""
    if not scores:
        return []
    low, high = min(scores), max(scores)
    spread = high - low
    if spread <= 0:
        return [0 for _ in scores]
    return [int(float(MAX_NODE_SCORE) * (float(s - low) / float(spread))) for s in scores]


def normalized_image_name(name: str) -> str:
    """An image name without a tag means ``:latest``."""
    if name.rfind(":") <= name.rfind("/"):
        return name + ":latest"
    return name


def image_locality_score(image_sum: int, containers: int) -> int:
    """Scale the summed, spread-weighted image sizes to 0..100."""
    high = IMAGE_MAX_CONTAINER_THRESHOLD * containers
    clamped = min(max(image_sum, IMAGE_MIN_THRESHOLD), high)
    return MAX_NODE_SCORE * (clamped - IMAGE_MIN_THRESHOLD) // (high - IMAGE_MIN_THRESHOLD)


# -- the plugin ---------------------------------------------------------------------------------


class NodeOrderPlugin:
    """Volcano's nodeorder plugin (see the module docstring)."""

    name = PLUGIN_NAME

    def __init__(self, arguments: Arguments) -> None:
        self.arguments = arguments
        self.weights = {key: arguments.get_int(key, default, owner=PLUGIN_NAME)
                        for key, default in WEIGHT_ARGUMENTS.items()}
        arguments.warn_unknown(self.name, WEIGHT_ARGUMENTS)
        self.least_weight = self.weights["leastrequested.weight"]
        self.most_weight = self.weights["mostrequested.weight"]
        self.balanced_weight = self.weights["balancedresource.weight"]
        self.node_affinity_weight = self.weights["nodeaffinity.weight"]
        self.pod_affinity_weight = self.weights["podaffinity.weight"]
        self.taint_weight = self.weights["tainttoleration.weight"]
        self.spread_weight = self.weights["podtopologyspread.weight"]
        self.image_weight = self.weights["imagelocality.weight"]
        self._view: KubeView | None = None
        self._ssn: Session | None = None
        self._images: dict[str, Mapping[str, int]] | None = None
        self._image_spread: Counter[str] = Counter()
        self._kube: KubeColumns | None = None
        self._static: dict[object, Any] = {}
        self._many_requests: TaskSetCache[tuple[IntArray, IntArray, bool]] = TaskSetCache()

    def on_session_open(self, ssn: Session) -> None:
        self._ssn = ssn
        self._view = KubeView.of(ssn)
        self._images = None  # gathered when a pod with images is first scored
        ssn.add_node_order_fn(self.name, self.node_order)
        ssn.add_batch_node_order_fn(self.name, self.batch_node_order)
        columnar.add_node_order_fn(ssn, self.name, self.vector_node_order,
                                     many=self.vector_node_order_many)
        columnar.add_batch_node_order_fn(ssn, self.name, self.vector_batch_node_order,
                                           many=self.vector_batch_node_order_many)
        columnar.add_template_fn(ssn, self.name, self.vector_template)
        self._kube = None
        self._static = {}
        self._many_requests = TaskSetCache()

    def on_session_close(self, ssn: Session) -> None:
        self._images = None
        self._kube = None
        self._static = {}
        self._many_requests = TaskSetCache()

    @property
    def view(self) -> KubeView:
        if self._view is None:
            raise RuntimeError("the nodeorder plugin is not open on a session")
        return self._view

    # -- per node -----------------------------------------------------------------------------

    def node_order(self, task: TaskInfo, node: NodeInfo) -> float:
        """Image locality times its weight."""
        if self.image_weight == 0:
            return 0.0
        pod = self.view.pod(task)
        if not pod.images:
            return float(image_locality_score(0, 1) * self.image_weight)
        images = self._node_images()
        on_node = images.get(node.name, {})
        total_nodes = len(images)
        image_sum = 0
        for image in pod.images:
            size = on_node.get(normalized_image_name(image))
            if size is not None:
                spread = float(self._image_spread[normalized_image_name(image)]) / total_nodes
                image_sum += int(float(size) * spread)
        score = image_locality_score(image_sum, max(len(pod.images), 1))
        return float(score * self.image_weight)

    def _node_images(self) -> dict[str, Mapping[str, int]]:
        """Each session node's images under the names the node reports (Volcano's cache
        keeps them as they are; only the task's image names get their default tag),
        and on how many nodes each image is; gathered once per session."""
        if self._images is None:
            assert self._ssn is not None
            self._images = {name: node.images for name, node in self._ssn.nodes.items()}
            self._image_spread = Counter(
                img for images in self._images.values() for img in images)
        return self._images

    # -- over the candidate list -----------------------------------------------------------------

    def batch_node_order(self, task: TaskInfo, nodes: list[NodeInfo]) -> dict[str, float]:
        """The weighted sum of the batch scorers for every candidate node."""
        pod = self.view.pod(task)
        totals = dict(zip((n.name for n in nodes), self.resource_scores(pod, nodes), strict=True))

        def add(scores: Sequence[int], weight: int) -> None:
            for node, score in zip(nodes, scores, strict=True):
                totals[node.name] += float(score * weight)

        if self.node_affinity_weight and pod.affinity.node.preferred:
            unparsable = pod.affinity.node.preferred_parse_error()
            if unparsable is not None:
                raise NodeOrderError(unparsable, plugin=self.name)
            raw = [pod.affinity.node.preferred_score(n.labels, n.name) for n in nodes]
            add(default_normalize(raw, reverse=False), self.node_affinity_weight)
        if self.taint_weight:
            raw = [count_intolerable_taints(n.taints, pod.tolerations) for n in nodes]
            add(default_normalize(raw, reverse=True), self.taint_weight)
        if self.pod_affinity_weight:
            topology = self._topology_scores(pod)
            if topology:
                raw = [_topology_total(topology, n.labels) for n in nodes]
                add(inter_pod_affinity_normalize(raw), self.pod_affinity_weight)
        soft = self._soft_spread(task)
        if soft:
            assert self._ssn is not None
            add(spread_scores(pod, soft, nodes, spread_placements(self._ssn.nodes, self.view, pod)),
                self.spread_weight)
        return totals

    def _soft_spread(self, task: TaskInfo) -> tuple[SpreadConstraint, ...]:
        """The task's ScheduleAnyway constraints, when the spread score is on."""
        if not self.spread_weight or not task.topology_spread:
            return ()
        return tuple(c for c in task.topology_spread if not c.hard)

    def resource_scores(self, pod: PodInfo, nodes: Sequence[NodeInfo]) -> list[float]:
        """Weighted LeastAllocated + MostAllocated + BalancedAllocation per node.

        The only part of the batch score that reads node resources: the place a
        vectorised implementation replaces, node for node equal to this one.
        """
        views = [self.view.nodes.get(n.name) or NodeView(n.name) for n in nodes]
        totals = [0.0] * len(nodes)
        nonzero = (pod.nonzero_milli_cpu, pod.nonzero_memory)
        request = (pod.milli_cpu, pod.memory, pod.gpu)
        balanced = bool(self.balanced_weight) and not pod.best_effort
        for i, (node, view) in enumerate(zip(nodes, views, strict=True)):
            allocatable = _cpu_memory(node)
            used = (view.nonzero_milli_cpu, view.nonzero_memory)
            if self.least_weight:
                totals[i] += float(least_allocated(nonzero, used, allocatable) * self.least_weight)
            if self.most_weight:
                totals[i] += float(most_allocated(nonzero, used, allocatable) * self.most_weight)
            if balanced:
                score = balanced_allocation(
                    request, (view.milli_cpu, view.memory, view.gpu),
                    (*allocatable, kube_int(node.allocatable.get(GPU))))
                totals[i] += float(score * self.balanced_weight)
        return totals

    # -- all candidates at once ---------------------------------------------------------------

    def _kube_columns(self, columns: NodeColumns) -> KubeColumns:
        assert self._ssn is not None
        kube = self._kube
        if kube is None or kube.columns is not columns:
            kube = self._kube = KubeColumns.of(self._ssn)
        kube.sync()
        if not kube.exact:
            raise VectorFallback("nodeorder: amounts too large for exact array arithmetic")
        return kube

    def vector_template(self, task: TaskInfo) -> tuple[object, ...] | None:
        """What the vectorised scores read from the task, when each node's score
        depends only on that node: not when preferred node affinity, untolerated
        PreferNoSchedule taints (both normalised over the candidates) or inter-pod
        affinity (placements everywhere) or topology spread are in play."""
        if self._soft_spread(task):
            return None
        view = self.view
        pod = view.pod(task)
        if self.pod_affinity_weight and (pod.preferred_affinity or pod.preferred_anti_affinity
                                         or view.affinity_nodes_at_open):
            return None
        if self.node_affinity_weight and pod.affinity.node.preferred:
            return None
        if self.taint_weight and self._most_intolerable_taints(pod.tolerations) != 0:
            return None
        # ``best_effort``, which the scores also read, follows from these; the non-zero
        # requests do not (a request named 0, init containers, nonZeroRequests).
        return (pod.milli_cpu, pod.memory, pod.gpu, pod.nonzero_milli_cpu, pod.nonzero_memory,
                pod.tolerations if self.taint_weight else None,
                pod.images if self.image_weight else None)

    def _most_intolerable_taints(self, tolerations: tuple[Toleration, ...]) -> int:
        """The most PreferNoSchedule taints these tolerations leave untolerated on any
        node (worked out over every node once per distinct tolerations)."""
        most: int | None = self._static.get(("taints-max", tolerations))
        if most is None:
            assert self._ssn is not None
            self._node_static(("taints", tolerations), NodeColumns.of(self._ssn),
                              lambda n: count_intolerable_taints(n.taints, tolerations))
            most = self._static[("taints-max", tolerations)]
        return most

    def vector_node_order(
        self, task: TaskInfo, columns: NodeColumns, candidates: Candidates
    ) -> FloatArray | float:
        """:meth:`node_order` for every candidate (image sizes are fixed for the session,
        so each distinct image list is scored over all nodes once; a task without
        images scores the same everywhere)."""
        if self.image_weight == 0:
            return 0.0
        pod = self.view.pod(task)
        if not pod.images:
            return float(image_locality_score(0, 1) * self.image_weight)
        key = ("images", pod.images)
        scores = self._static.get(key)
        if scores is None:
            scores = np.array([self.node_order(task, node) for node in columns.nodes])
            self._static[key] = scores
        picked: FloatArray = candidates.pick(scores)
        return picked

    def vector_batch_node_order(
        self, task: TaskInfo, columns: NodeColumns, candidates: Candidates
    ) -> FloatArray:
        """:meth:`batch_node_order` for every candidate, with the same integer scores."""
        if self._soft_spread(task):
            raise VectorFallback("nodeorder: topology spread constraints")
        kube = self._kube_columns(columns)
        pod = self.view.pod(task)
        if max(pod.nonzero_milli_cpu, pod.nonzero_memory, pod.gpu) >= LARGE:
            raise VectorFallback("nodeorder: request too large for exact array arithmetic")
        totals: FloatArray = self._resource_totals(kube, pod, candidates)
        pick = candidates.pick
        if self.node_affinity_weight and pod.affinity.node.preferred:
            if pod.affinity.node.preferred_parse_error() is not None:
                raise VectorFallback("nodeorder: preferred node affinity kube cannot parse")
            raw = pick(self._node_static(("affinity", pod.affinity.node.preferred), columns,
                       lambda n: pod.affinity.node.preferred_score(n.labels, n.name)))
            totals = totals + default_normalize_vector(raw, reverse=False) * (
                self.node_affinity_weight)
        if self.taint_weight:
            every = self._node_static(("taints", pod.tolerations), columns,
                                      lambda n: count_intolerable_taints(n.taints, pod.tolerations))
            if self._static[("taints-max", pod.tolerations)] == 0:
                totals = totals + float(MAX_NODE_SCORE * self.taint_weight)
            else:
                totals = totals + default_normalize_vector(pick(every), reverse=True) * (
                    self.taint_weight)
        if self.pod_affinity_weight and (pod.preferred_affinity or pod.preferred_anti_affinity
                                         or self.view.affinity_nodes_at_open):
            topology = self._topology_scores(pod)
            if topology:
                raw = np.zeros(len(candidates), dtype=np.int64)
                for (label, value), weight in topology.items():
                    raw += pick(kube.labels(label).equal(value)) * weight
                totals = totals + inter_pod_affinity_normalize_vector(raw) * (
                    self.pod_affinity_weight)
        return totals

    def vector_node_order_many(
        self, tasks: Sequence[TaskInfo], columns: NodeColumns, candidates: Candidates
    ) -> FloatArray | float:
        """:meth:`vector_node_order` for several tasks, one row each."""
        if self.image_weight == 0:
            return 0.0
        view = self.view
        if not any(view.pod(task).images for task in tasks):
            return float(image_locality_score(0, 1) * self.image_weight)
        return stacked(self.vector_node_order, tasks, columns, candidates)

    def vector_batch_node_order_many(
        self, tasks: Sequence[TaskInfo], columns: NodeColumns, candidates: Candidates
    ) -> FloatArray:
        """:meth:`vector_batch_node_order` for several tasks, one row each: least and
        balanced allocation of every task in the same array operations when all of
        them are of the common kind (cpu and memory requests, nothing normalised over
        the candidates, on nodes that all have cpu and memory), else task by task."""
        if any(self._soft_spread(task) for task in tasks):
            raise VectorFallback("nodeorder: topology spread constraints")
        kube = self._kube_columns(columns)
        nonzero, resources, common = self._many_requests.get(
            tasks, lambda: self._requests_side_by_side(kube, tasks))
        if not common or (self.pod_affinity_weight and self.view.affinity_nodes_at_open):
            return stacked(self.vector_batch_node_order, tasks, columns, candidates)
        pick = candidates.pick
        allocatable = pick(kube.allocatable)
        total: IntArray | None = None
        if self.least_weight:
            total = least_allocated_many(nonzero, pick(kube.nonzero), allocatable[:2])
            if self.least_weight != 1:
                total *= self.least_weight
        if self.balanced_weight:
            balanced = balanced_allocation_many(resources, pick(kube.requested), allocatable)
            if self.balanced_weight != 1:
                balanced *= self.balanced_weight
            total = balanced if total is None else total + balanced
        totals: FloatArray = (np.zeros((len(tasks), len(candidates))) if total is None
                              else total.astype(np.float64))
        if self.taint_weight:
            totals = totals + float(MAX_NODE_SCORE * self.taint_weight)
        return totals

    def _requests_side_by_side(
        self, kube: KubeColumns, tasks: Sequence[TaskInfo]
    ) -> tuple[IntArray, IntArray, bool]:
        """The tasks' non-zero requests and requests (rows cpu, memory; one column per
        task), and whether they are all of the common kind."""
        pods = [self.view.pod(task) for task in tasks]
        return (np.array([[p.nonzero_milli_cpu for p in pods], [p.nonzero_memory for p in pods]],
                         dtype=np.int64),
                np.array([[p.milli_cpu for p in pods], [p.memory for p in pods]], dtype=np.int64),
                self._common_kind(kube, pods))

    def _common_kind(self, kube: KubeColumns, pods: Sequence[PodInfo]) -> bool:
        """Whether :meth:`vector_batch_node_order` takes, for each of ``pods``, the branches
        :meth:`vector_batch_node_order_many` computes together (as long as no placed
        pod has inter-pod affinity terms, which the caller checks each time)."""
        if self.most_weight or not (kube.cpu_memory_everywhere and kube.cpu_memory_small):
            return False
        for pod in pods:
            if max(pod.nonzero_milli_cpu, pod.nonzero_memory) >= LARGE or pod.gpu:
                return False
            if self.balanced_weight and pod.best_effort:
                return False
            if self.node_affinity_weight and pod.affinity.node.preferred:
                return False
            if self.taint_weight and self._most_intolerable_taints(pod.tolerations) != 0:
                return False
            if self.pod_affinity_weight and (pod.preferred_affinity
                                             or pod.preferred_anti_affinity):
                return False
        return True

    def _resource_totals(self, kube: KubeColumns, pod: PodInfo, nodes: Candidates) -> FloatArray:
        """Weighted least + most + balanced allocation of ``nodes`` (as :meth:`resource_scores`).

        The scores are integers, so their float sum is exact in any order: it is
        computed in integers and converted once.
        """
        pick = nodes.pick
        allocatable = pick(kube.allocatable)
        everywhere = kube.cpu_memory_everywhere
        nonzero = (pod.nonzero_milli_cpu, pod.nonzero_memory)
        total: IntArray | None = None
        if self.least_weight or self.most_weight:
            used = pick(kube.nonzero)
            if self.least_weight:
                total = least_allocated_vector(
                    nonzero, used, allocatable[:2], everywhere=everywhere,
                    small=kube.cpu_memory_small)
                if self.least_weight != 1:
                    total *= self.least_weight
            if self.most_weight:
                most = most_allocated_vector(
                    nonzero, used, allocatable[:2], everywhere=everywhere) * self.most_weight
                total = most if total is None else total + most
        if self.balanced_weight and not pod.best_effort:
            balanced = balanced_allocation_vector(
                (pod.milli_cpu, pod.memory, pod.gpu), pick(kube.requested), allocatable,
                everywhere=everywhere)
            if self.balanced_weight != 1:
                balanced *= self.balanced_weight
            total = balanced if total is None else total + balanced
        if total is None:
            return np.zeros(len(nodes))
        totals: FloatArray = total.astype(np.float64)
        return totals

    def _node_static(
        self, key: tuple[str, object], columns: NodeColumns, score: Callable[[NodeInfo], int]
    ) -> IntArray:
        """A raw score that depends on node labels and taints only, for every node,
        computed once per key (nodes without taints score without a call when the
        key is about taints)."""
        values = self._static.get(key)
        if values is None:
            values = np.zeros(len(columns), dtype=np.int64)
            for i, node in enumerate(columns.nodes):
                if key[0] != "taints" or node.taints:
                    values[i] = score(node)
            self._static[key] = values
            self._static[(f"{key[0]}-max", key[1])] = int(values.max()) if len(values) else 0
        known: IntArray = values
        return known

    def _topology_scores(self, pod: PodInfo) -> dict[tuple[str, str], int]:
        """kube-scheduler's InterPodAffinity PreScore: weight per topology pair."""
        assert self._ssn is not None
        scores: dict[tuple[str, str], int] = {}

        def credit(key: str, labels: Mapping[str, str], weight: int) -> None:
            if key in labels:
                pair = (key, labels[key])
                scores[pair] = scores.get(pair, 0) + weight

        view = self.view
        ssn = self._ssn

        def labels_of(node_name: str) -> Mapping[str, str]:
            node = ssn.nodes.get(node_name)
            return node.labels if node is not None else {}

        # The placed pods the incoming pod's preferred terms select, and the placed
        # pods whose preferred terms select it, found through the label index (the
        # integer sums do not depend on the order they are visited in).
        placed = view.placed
        for sign, terms in ((1, pod.preferred_affinity), (-1, pod.preferred_anti_affinity)):
            for w in terms:
                for other, node_name in placed.selected_by(w.term):
                    if other.uid != pod.uid and w.term.matches(other.namespace, other.labels):
                        credit(w.term.topology_key, labels_of(node_name), sign * w.weight)
        # Without preferred terms of its own, the pod is scored against the pods of the
        # nodes listed with affinity pods at session open only (Volcano's snapshot).
        listed = (None if pod.preferred_affinity or pod.preferred_anti_affinity
                  else view.affinity_nodes_at_open)
        for term, weight, node_name, other in placed.preferred_terms_selecting(pod.labels):
            if listed is not None and node_name not in listed:
                continue
            if other.uid != pod.uid and term.matches(pod.namespace, pod.labels):
                credit(term.topology_key, labels_of(node_name), weight)
        return scores


def _cpu_memory(node: NodeInfo) -> tuple[int, int]:
    """The node's cpu and memory as kube-scheduler's NodeInfo holds them: the node
    object's allocatable, without what Volcano's oversubscription annotations add."""
    annotations = node.annotations
    allocatable = without_oversubscription(node.allocatable, annotations) \
        if OVERSUBSCRIPTION_CPU in annotations or OVERSUBSCRIPTION_MEMORY in annotations \
        else node.allocatable
    return kube_int(allocatable.get(CPU)), kube_int(allocatable.get(MEMORY))


def _topology_total(scores: Mapping[tuple[str, str], int], labels: Mapping[str, str]) -> int:
    return sum(weight for (key, value), weight in scores.items() if labels.get(key) == value)
