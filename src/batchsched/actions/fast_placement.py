"""Choosing a node for one task with array operations: the fast path.

:class:`VectorNodeSelector` makes exactly the decisions of the reference
:class:`~batchsched.actions.placement.ScalarNodeSelector` (same partial scan,
same rotating start, same groups, same scores, same tie rule), but answers each
question for many nodes at once over the session's
:class:`~batchsched.framework.node_columns.NodeColumns` and the plugins'
vectorised variants (:mod:`batchsched.framework.vectorized`):

* resource fit of ``init_resreq`` against future idle is one comparison over
  the node columns; the plugins' predicates come as masks;
* the partial scan (Volcano's number of feasible nodes to find, from the
  rotating start) is a search for the n-th feasible node in rotation order,
  examining the nodes chunk by chunk from the start, so that a large cluster
  with many feasible nodes costs about the window, not the cluster;
* the idle-fit / future-idle groups split the candidates with one more
  comparison (none at all while no node has releasing or pipelined tasks);
* node-order and batch node-order scores are arrays over the group, added in
  the scalar path's order, and the best node is the first maximum in session
  node order (``argmax``), which is the reference tie rule.

:func:`default_node_selector` (the factory allocate and backfill use) picks
this selector when every enabled plugin serving ``predicate``, ``node_order``
and ``batch_node_order`` registered a vectorised variant, and the scalar one
otherwise; setting the environment variable ``BATCHSCHED_FAST_PATH=0`` forces
the scalar one. A variant may decline a particular task (``VectorFallback``):
that task then takes the scalar path, with the same rotating start and
predicate-error cache, so decisions stay identical.

Two things are done differently, neither visible in a decision:

* When a node is found, the returned :class:`Placement` carries no per-node
  fit errors (allocate and backfill read them only when no node is found).
  When no node is found, every node's error is computed by the scalar
  predicates at that moment, in scan order, exactly as the reference does.
* Best-node plugins, if any are enabled, receive the same ``{score: [nodes]}``
  mapping, built from the arrays.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from batchsched.actions.placement import (
    NodeSelector,
    Placement,
    ScalarNodeSelector,
    allocate_predicate,
    num_feasible_nodes_to_find,
    predicate_for_allocate_action,
)
from batchsched.api.fit import FitErrors
from batchsched.api.node import NodeInfo
from batchsched.api.resource import MIN_RESOURCE
from batchsched.api.task import TaskInfo
from batchsched.framework.node_columns import (
    BoolArray,
    Candidates,
    FloatArray,
    IndexArray,
    NodeArrayCache,
    NodeColumns,
    fits_mask,
)
from batchsched.framework.vectorized import (
    VectorFallback,
    VectorTiers,
    batch_node_order_scores,
    node_order_scores,
    predicate_mask,
    vector_tiers,
)

if TYPE_CHECKING:
    from batchsched.framework.session import Session

__all__ = [
    "FAST_PATH_ENVIRONMENT_VARIABLE",
    "VectorNodeSelector",
    "default_node_selector",
    "fast_path_available",
]

#: Set to ``0`` (or ``false``, ``off``, ``no``) to make allocate and backfill use the
#: scalar reference selector.
FAST_PATH_ENVIRONMENT_VARIABLE = "BATCHSCHED_FAST_PATH"

#: The first chunk of a scan examines this many times the number of nodes wanted.
_FIRST_CHUNK_FACTOR = 1.25
_MIN_CHUNK = 256


def fast_path_enabled() -> bool:
    """Whether the environment allows the fast path (it does unless told not to)."""
    value = os.environ.get(FAST_PATH_ENVIRONMENT_VARIABLE, "1").strip().lower()
    return value not in ("0", "false", "off", "no")


def fast_path_available(ssn: Session) -> bool:
    """Whether every enabled node plugin of the session has vectorised variants."""
    return all(
        vector_tiers(ssn, point) is not None
        for point in ("predicate", "node_order", "batch_node_order")
    )


def default_node_selector(ssn: Session, error_cache_enabled: bool = True) -> NodeSelector:
    """The vectorised selector when the session allows it, else the scalar reference."""
    if fast_path_enabled() and fast_path_available(ssn):
        return VectorNodeSelector(ssn, error_cache_enabled)
    return ScalarNodeSelector(ssn, error_cache_enabled)


class VectorNodeSelector(ScalarNodeSelector):
    """The reference selector's decisions, computed with arrays (see the module docstring).

    It shares its rotating start and predicate-error cache with the scalar code it
    inherits, which serves any task a vectorised variant declines.
    """

    def __init__(self, ssn: Session, error_cache_enabled: bool = True) -> None:
        super().__init__(ssn, error_cache_enabled)
        predicates = vector_tiers(ssn, "predicate")
        node_orders = vector_tiers(ssn, "node_order")
        batch_orders = vector_tiers(ssn, "batch_node_order")
        if predicates is None or node_orders is None or batch_orders is None:
            raise ValueError("the session's node plugins do not all have vectorised variants")
        self.predicates: VectorTiers = predicates
        self.node_orders: VectorTiers = node_orders
        self.batch_orders: VectorTiers = batch_orders
        self.has_best_node = ssn.has("best_node")
        self.columns = NodeColumns.of(ssn)
        self._requests: dict[str, tuple[IndexArray, FloatArray, tuple[object, ...]]] = {}
        self._skip_masks: dict[str, tuple[int, BoolArray]] = {}
        self._fit_cache: NodeArrayCache | None = None

    def new_cache_scope(self) -> None:
        super().new_cache_scope()
        self._skip_masks = {}

    # -- the protocol -----------------------------------------------------------------------

    def for_allocate(self, task: TaskInfo, nodes: Sequence[NodeInfo]) -> Placement:
        if nodes is not self.ssn.node_list:
            return super().for_allocate(task, nodes)
        try:
            return self._place(task, allocate=True)
        except VectorFallback:
            return super().for_allocate(task, nodes)

    def for_backfill(self, task: TaskInfo, nodes: Sequence[NodeInfo]) -> Placement:
        if nodes is not self.ssn.node_list:
            return super().for_backfill(task, nodes)
        try:
            return self._place(task, allocate=False)
        except VectorFallback:
            return super().for_backfill(task, nodes)

    # -- one task -------------------------------------------------------------------------------

    def _place(self, task: TaskInfo, *, allocate: bool) -> Placement:
        """Everything that may raise VectorFallback happens before any state changes."""
        columns = self.columns
        columns.sync()
        total = len(columns)
        if total == 0:
            return Placement(None, FitErrors())
        fit = self._fit(task) if allocate else None
        passes = predicate_mask(self.predicates, task, columns)
        use_cache = self.error_cache_enabled and bool(task.role)
        group = f"{task.job}/{task.role}"
        skip = self._skip_mask(group) if use_cache else None
        start = self._next_start % total
        feasibility = _Feasibility(fit, passes, skip)
        candidates, processed = self._scan(total, start, feasibility)
        groups: list[tuple[IndexArray, bool]]
        if not allocate or not len(candidates) or not columns.has_transitions:
            groups = [(candidates, False)]
        else:
            rows, amounts, _ = self._request(task)
            in_idle = fits_mask(amounts, columns.idle[rows][:, candidates])
            groups = [(candidates[in_idle], False), (candidates[~in_idle], True)]
        chosen: int | None = None
        pipelined = False
        for members, later in groups:
            chosen = self._best(task, members)
            if chosen is not None:
                pipelined = later
                break
        # No fallback past this point: commit the scan's effects.
        self._next_start = (start + processed) % total
        if use_cache or chosen is None:
            errors = self._errors(task, start, processed, passes_fn=allocate, group=group,
                                  candidates=candidates)
        else:
            errors = FitErrors()
        if chosen is None:
            return Placement(None, errors)
        return Placement(columns.nodes[chosen], errors, pipelined=pipelined)

    def _request(self, task: TaskInfo) -> tuple[IndexArray, FloatArray, tuple[object, ...]]:
        """The rows and amounts resource fit compares for the task, and a key for them."""
        request = self._requests.get(task.uid)
        if request is None:
            rows, amounts = self.columns.request(task.init_resreq)
            key = (*rows.tolist(), *amounts.tolist())
            request = self._requests[task.uid] = (rows, amounts, key)
        return request

    def _fit(self, task: TaskInfo) -> BoolArray:
        """Which nodes' future idle holds the task's ``init_resreq``, for all nodes, kept
        per distinct request and refreshed for the nodes that changed."""
        rows, amounts, key = self._request(task)
        columns = self.columns
        available = columns.future_idle
        cache = self._fit_cache
        if cache is None or cache.changes is not columns.changes:
            cache = self._fit_cache = NodeArrayCache(columns.changes, one_by_one=8)
        pairs = list(zip(rows.tolist(), amounts.tolist(), strict=True))

        def one(position: int) -> bool:
            return all((amount - available[row, position]) < MIN_RESOURCE
                       for row, amount in pairs)

        fit: BoolArray = cache.get(
            key,
            lambda: fits_mask(amounts, available[rows]),
            lambda positions: fits_mask(amounts, available[rows][:, positions]),
            one,
        )
        return fit

    def _skip_mask(self, group: str) -> BoolArray | None:
        """The nodes the group's cached errors rule out (None when it has none)."""
        cached = self._error_cache.get(group)
        if cached is None:
            return None
        known = self._skip_masks.get(group)
        if known is not None and known[0] == len(cached):
            return known[1]
        mask = np.zeros(len(self.columns), dtype=np.bool_)
        index = self.columns.index
        for name in cached:
            position = index.get(name)
            if position is not None:
                mask[position] = True
        self._skip_masks[group] = (len(cached), mask)
        return mask

    def _scan(self, total: int, start: int, feasibility: _Feasibility) -> tuple[IndexArray, int]:
        """The first ``num_feasible_nodes_to_find`` feasible nodes from ``start`` in
        rotation order (sorted into session order), and how many nodes were examined."""
        wanted = num_feasible_nodes_to_find(total)
        chunk = max(int(wanted * _FIRST_CHUNK_FACTOR), _MIN_CHUNK)
        parts: list[IndexArray] = []
        found = processed = 0
        position = start
        wrapped = False
        while processed < total:
            hi = min(total, position + min(chunk, total - processed))
            feasible = np.flatnonzero(feasibility.between(position, hi))
            need = wanted - found
            if len(feasible) >= need:
                feasible = feasible[:need]
                processed += int(feasible[-1]) + 1
                parts.append(feasible + position)
                found = wanted
                break
            if len(feasible):
                parts.append(feasible + position)
                found += len(feasible)
            processed += hi - position
            position = hi
            if position == total:
                position = 0
                wrapped = True
            chunk *= 2
        if not parts:
            return np.empty(0, dtype=np.intp), processed
        candidates = parts[0] if len(parts) == 1 else np.concatenate(parts)
        if wrapped and start:
            candidates = np.sort(candidates)
        return candidates, processed

    def _best(self, task: TaskInfo, members: IndexArray) -> int | None:
        """The reference ``select_best_node`` over node indices (session order)."""
        count = len(members)
        if count == 0:
            return None
        if count == 1:
            return int(members[0])
        candidates = Candidates(members)
        columns = self.columns
        scores = node_order_scores(self.node_orders, task, columns, candidates)
        scores += batch_node_order_scores(self.batch_orders, task, columns, candidates)
        if self.has_best_node:
            nodes = columns.nodes
            by_score: dict[float, list[NodeInfo]] = {}
            for position, score in zip(members.tolist(), scores.tolist(), strict=True):
                by_score.setdefault(score, []).append(nodes[position])
            named = self.ssn.best_node(task, by_score)
            if named is not None:
                return columns.index[named.name]
        return int(members[int(np.argmax(scores))])

    def _errors(
        self, task: TaskInfo, start: int, processed: int, *, passes_fn: bool, group: str,
        candidates: IndexArray,
    ) -> FitErrors:
        """The reference scan's fit errors and error-cache entries for the examined nodes.

        The scalar predicates give each failing node's error (the state is the one the
        reference would have seen); cached errors are reused as the reference does.
        """
        ssn = self.ssn
        nodes = self.columns.nodes
        total = len(nodes)
        errors = FitErrors()
        use_cache = self.error_cache_enabled and bool(task.role)
        failed_before = group in self._error_cache
        cached = self._error_cache.get(group, {})
        feasible = set(candidates.tolist())
        for offset in range(processed):
            position = (start + offset) % total
            if position in feasible:
                continue
            node = nodes[position]
            if use_cache and failed_before and node.name in cached:
                errors.set_node_error(node.name, cached[node.name])
                continue
            err = (allocate_predicate(ssn, task, node) if passes_fn
                   else predicate_for_allocate_action(ssn, task, node))
            if err is None:
                raise AssertionError(
                    f"vectorised predicates rejected node {node.name} for task {task.uid}, "
                    "the scalar ones accept it: a vectorised variant disagrees with its plugin"
                )
            cached[node.name] = err
            self._error_cache[group] = cached
            errors.set_node_error(node.name, err)
        return errors


class _Feasibility:
    """Which nodes pass for one task: resource fit (allocate only), the predicates'
    mask, and the predicate-error cache's exclusions (each over all nodes, or None)."""

    __slots__ = ("fit", "passes", "skip")

    def __init__(
        self, fit: BoolArray | None, passes: BoolArray | None, skip: BoolArray | None
    ) -> None:
        self.fit = fit
        self.passes = passes
        self.skip = skip

    def between(self, lo: int, hi: int) -> BoolArray:
        """The verdicts of nodes ``lo`` to ``hi - 1`` (a new array)."""
        fit, passes, skip = self.fit, self.passes, self.skip
        if fit is not None:
            ok = fit[lo:hi] & passes[lo:hi] if passes is not None else fit[lo:hi].copy()
        elif passes is not None:
            ok = passes[lo:hi].copy()
        else:
            ok = np.ones(hi - lo, dtype=np.bool_)
        if skip is not None:
            ok &= ~skip[lo:hi]
        return ok
