"""binpack: prefer the nodes that are already most used (Volcano's ``plugins/binpack``).

Node-order score for task T on node N, over every resource T requests that has
a weight (cpu, memory, and the resources listed in ``binpack.resources``; a
requested resource without a weight, such as ``pods``, is skipped):

* ``part(r) = (used(r) + request(r)) * weight(r) / allocatable(r)`` with N's
  current use (Volcano's accounting: every task on the node except pipelined
  ones, releasing ones included);
* a resource N does not have (allocatable 0), or whose weight is 0, adds 0 but
  its weight still counts;
* if some resource does not fit (``used + request > allocatable``) the score is 0.

``score = sum(part) / sum(weight) * 100 * binpack.weight`` -- from 0 (empty node)
to ``100 * binpack.weight`` (the task fills the node).

Arguments (integers): ``binpack.weight`` (default 1; 0 registers no score at
all), ``binpack.cpu`` and ``binpack.memory`` (default 1; a negative value means
1), ``binpack.resources`` (comma-separated extra resource names) and
``binpack.resources.<name>`` (default 1; negative means 1).

:func:`resource_binpack_score` and :func:`binpack_score` are the reference;
:meth:`BinpackPlugin.vector_score` is the vectorised twin the fast node
selector uses (:mod:`batchsched.columnar.selector`), equal node for node.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from batchsched import columnar
from batchsched.api.node import NodeInfo
from batchsched.api.resource import CPU, MEMORY, Resource
from batchsched.api.task import TaskInfo
from batchsched.columnar.forms import TaskSetCache, stacked
from batchsched.columnar.node_columns import (
    Candidates,
    FloatArray,
    IndexArray,
    NodeColumns,
)
from batchsched.columnar.scores import binpack_many, binpack_vector
from batchsched.framework.arguments import Arguments
from batchsched.framework.session import Session
from batchsched.kube.go_strconv import int64
from batchsched.kube.go_strings import trim_space

__all__ = ["BinpackPlugin", "binpack_score", "read_weights", "resource_binpack_score"]

PLUGIN_NAME = "binpack"
MAX_NODE_SCORE = 100

_Plan = tuple[IndexArray, FloatArray, list[int], int, bool]


def resource_binpack_score(
    request: float, capacity: float, used: float, weight: int
) -> float | None:
    """``(used + request) * weight / capacity`` for one resource; None if it does not fit."""
    if capacity == 0 or weight == 0:
        return 0.0
    final = request + used
    if final > capacity:
        return None
    return final * weight / capacity


def binpack_score(
    request: Resource,
    allocatable: Resource,
    used: Resource,
    weights: Mapping[str, int],
    plugin_weight: int,
) -> float:
    """The binpack score of one node (see the module docstring)."""
    score = 0.0
    weight_sum = 0
    for name in request.resource_names():
        amount = request.get(name)
        weight = weights.get(name)
        if amount == 0 or weight is None:
            continue
        part = resource_binpack_score(amount, allocatable.get(name), used.get(name), weight)
        if part is None:
            return 0.0
        score += part
        weight_sum = int64(weight_sum + weight)
    if weight_sum > 0:
        score /= weight_sum
    return score * final_multiplier(plugin_weight)


def _int64_sum(weights: Sequence[int]) -> int:
    """The weights added up as Volcano's ``weightSum += weight`` does (in int64)."""
    total = 0
    for weight in weights:
        total = int64(total + weight)
    return total


def final_multiplier(plugin_weight: int) -> float:
    """``float64(MaxNodeScore * int64(weight))``: Volcano multiplies the two integers
    first (wrapping in int64), then the score by their product, once."""
    return float(int64(MAX_NODE_SCORE * plugin_weight))


def read_weights(arguments: Arguments) -> tuple[int, dict[str, int]]:
    """(``binpack.weight``, per-resource weights) from the plugin arguments."""
    plugin_weight = arguments.get_int("binpack.weight", 1, owner=PLUGIN_NAME)
    weights: dict[str, int] = {}
    for raw in arguments.get_str("binpack.resources", "", owner="binpack").split(","):
        name = trim_space(raw)
        if name:
            weight = arguments.get_int(f"binpack.resources.{name}", 1, owner=PLUGIN_NAME)
            weights[name] = weight if weight >= 0 else 1
    cpu = arguments.get_int("binpack.cpu", 1, owner=PLUGIN_NAME)
    memory = arguments.get_int("binpack.memory", 1, owner=PLUGIN_NAME)
    weights[CPU] = cpu if cpu >= 0 else 1
    weights[MEMORY] = memory if memory >= 0 else 1
    return plugin_weight, weights


class BinpackPlugin:
    """Volcano's binpack plugin (see the module docstring)."""

    name = PLUGIN_NAME

    def __init__(self, arguments: Arguments) -> None:
        self.arguments = arguments
        self.weight, self.resource_weights = read_weights(arguments)
        arguments.warn_unknown(self.name, ["binpack.weight", "binpack.resources", "binpack.cpu",
                                           "binpack.memory"], prefixes=["binpack.resources."])
        self._plans: dict[tuple[object, ...], _Plan] = {}
        self._many_plans: TaskSetCache[tuple[_Plan, FloatArray | None]] = TaskSetCache()

    def score(self, task: TaskInfo, node: NodeInfo) -> float:
        return binpack_score(task.resreq, node.allocatable, node.used,
                             self.resource_weights, self.weight)

    def on_session_open(self, ssn: Session) -> None:
        self._plans = {}
        self._many_plans = TaskSetCache()
        if self.weight != 0:
            ssn.add_node_order_fn(self.name, self.score)
            columnar.add_node_order_fn(ssn, self.name, self.vector_score,
                                         many=self.vector_score_many)
            columnar.add_template_fn(ssn, self.name, self.vector_template)

    def vector_template(self, task: TaskInfo) -> tuple[object, ...]:
        """The score of a node depends on the task through its request only."""
        resreq = task.resreq
        return (resreq.milli_cpu, resreq.memory, *resreq.scalars.items())

    def vector_score(
        self, task: TaskInfo, columns: NodeColumns, candidates: Candidates
    ) -> FloatArray:
        """:meth:`score` for every candidate at once (same float operations)."""
        rows, request, weights, weight_sum, everywhere = self._plan_of(task, columns)
        scores = binpack_vector(request, weights, candidates.pick_rows(columns.allocatable, rows),
                                candidates.pick_rows(columns.used, rows),
                                weight_sum=weight_sum, plugin_weight=self.weight,
                                everywhere=everywhere)
        return scores

    def vector_score_many(
        self, tasks: Sequence[TaskInfo], columns: NodeColumns, candidates: Candidates
    ) -> FloatArray:
        """:meth:`vector_score` for several tasks, one row each (in the same array
        operations when they count the same resources, present on every node)."""
        (rows, _, weights, weight_sum, _), requests = self._many_plans.get(
            tasks, lambda: self._requests_side_by_side(tasks, columns))
        if requests is None:
            return stacked(self.vector_score, tasks, columns, candidates)
        return binpack_many(requests, weights, candidates.pick_rows(columns.allocatable, rows),
                            candidates.pick_rows(columns.used, rows),
                            weight_sum=weight_sum, plugin_weight=self.weight)

    def _requests_side_by_side(
        self, tasks: Sequence[TaskInfo], columns: NodeColumns
    ) -> tuple[_Plan, FloatArray | None]:
        """The first task's plan, and the tasks' requests side by side (one column per
        task) when they all count the same resources, present on every node."""
        plans = [self._plan_of(task, columns) for task in tasks]
        counted = plans[0][0].tobytes()
        common = plans[0][4] and all(plan[2] == plans[0][2] and plan[0].tobytes() == counted
                                     for plan in plans[1:])
        return plans[0], np.stack([plan[1] for plan in plans], axis=1) if common else None

    def _plan_of(self, task: TaskInfo, columns: NodeColumns) -> _Plan:
        resreq = task.resreq
        key = (resreq.milli_cpu, resreq.memory, *resreq.scalars.items())
        plan = self._plans.get(key)
        if plan is None:
            plan = self._plans[key] = self._plan(task, columns)
        return plan

    def _plan(self, task: TaskInfo, columns: NodeColumns) -> _Plan:
        """What :func:`binpack_score` counts for the task, in its order: the rows,
        requests and weights of those resources, the sum of the weights, and whether
        every node has all of those resources."""
        request = task.resreq
        rows: list[int] = []
        amounts: list[float] = []
        weights: list[int] = []
        for name in request.resource_names():
            amount = request.get(name)
            weight = self.resource_weights.get(name)
            if amount == 0 or weight is None:
                continue
            row = columns.dimension_index.get(name)
            if row is None:
                row = int(columns.rows([name])[0])
            rows.append(row)
            amounts.append(amount)
            weights.append(weight)
        everywhere = all(columns.everywhere[row] for row in rows)
        return (np.array(rows, dtype=np.intp), np.array(amounts), weights, _int64_sum(weights),
                everywhere)

    def on_session_close(self, ssn: Session) -> None:
        pass
