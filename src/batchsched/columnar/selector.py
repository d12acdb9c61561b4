"""Choosing a node for one task with array operations: the fast path.

:class:`VectorNodeSelector` makes exactly the decisions of the reference
:class:`~batchsched.actions.placement.ScalarNodeSelector` (same partial scan,
same rotating start, same groups, same scores, same tie rule), but answers each
question for many nodes at once over the session's
:class:`~batchsched.columnar.node_columns.NodeColumns` and the plugins'
vectorised variants (:mod:`batchsched.columnar.forms`):

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

**Windows worked out ahead.** Consecutive tasks of a gang usually share their
request, and consecutive scans look at consecutive windows of nodes. When every
node plugin vouches (with a template function) that its answer for a node
depends only on the task's template and on that node, the selector works out
the windows of the job's next tasks together with the current one (one set of
array operations instead of one per task) and serves them in turn, as long as
the next task has the same template, the rotation is where the plan expects it,
and no node of the windows ahead has changed. This is skipped for tasks with a
role under the predicate-error cache, while any node has releasing or
pipelined tasks, and with best-node plugins.

Two things are done differently, neither visible in a decision:

* When a node is found, the returned :class:`Placement` carries no per-node
  fit errors (allocate and backfill read them only when no node is found).
  When no node is found, every node's error is the one the reference would
  record, in scan order: ``Insufficient <resource>`` is worked out with arrays
  and the per-node objects are built only if someone reads them; the other
  errors come from the scalar predicates at that moment.
* Best-node plugins, if any are enabled, receive the same ``{score: [nodes]}``
  mapping, built from the arrays.
"""

from __future__ import annotations

import os
from collections.abc import Collection, Sequence
from typing import TYPE_CHECKING

import numpy as np

from batchsched.actions.node_search import FeasibleNodeScan
from batchsched.actions.placement import (
    NodeSelector,
    Placement,
    ScalarNodeSelector,
    allocate_predicate,
    predicate_for_allocate_action,
)
from batchsched.actions.unplaced_errors import UnplacedFitErrors, dimension_rank
from batchsched.api.fit import FitError, FitErrors, insufficient_resource_reason
from batchsched.api.node import NodeInfo
from batchsched.api.resource import MIN_RESOURCE
from batchsched.api.task import TaskInfo
from batchsched.api.types import TaskStatus
from batchsched.columnar.forms import (
    TaskSetCache,
    VectorFallback,
    VectorTiers,
    batch_node_order_scores,
    many_scores,
    many_tiers,
    node_order_scores,
    predicate_mask,
    preempt_predicate_tiers,
    template_fns,
    vector_tiers,
)
from batchsched.columnar.kept_answers import StackedStore, TemplateAnswers, TemplateStore
from batchsched.columnar.node_columns import (
    BoolArray,
    Candidates,
    FloatArray,
    IndexArray,
    NodeColumns,
    fits_mask,
)

if TYPE_CHECKING:
    from batchsched.framework.session import Session

__all__ = [
    "FAST_PATH_ENVIRONMENT_VARIABLE",
    "VectorNodeSelector",
    "default_node_selector",
    "fast_path_available",
    "vector_node_scores",
    "vector_preempt_scan",
    "vector_ranked_nodes",
    "vector_ranked_positions",
]

#: Set to ``0`` (or ``false``, ``off``, ``no``) to make allocate and backfill use the
#: scalar reference selector.
FAST_PATH_ENVIRONMENT_VARIABLE = "BATCHSCHED_FAST_PATH"

#: What the preempt scan leaves in the error cache for a node it failed (the scalar
#: scan leaves the FitError; preempt reads only which nodes failed).
_PREEMPT_SCAN_FAILURE = FitError("", "", "", [])

#: The first chunk of a scan examines this many times the number of nodes wanted.
_FIRST_CHUNK_FACTOR = 1.25
_MIN_CHUNK = 256
#: At most this many windows are worked out at once for tasks sharing a template.
_MAX_WINDOWS_AHEAD = 8
#: A template's answers are kept over every node from its second task on.
_KEPT_FROM_USE = 2
#: Bytes of kept answers at most (a score and a verdict per node and template).
_KEPT_ANSWERS_BUDGET = 64 * 2**20
#: At most this many templates are kept stacked (all are refreshed together).
_STACKED_TEMPLATES = 64

#: Tasks (rows) grouped for :meth:`VectorNodeSelector._feasible_many`: per distinct
#: requested resources, their rows, the rows' indices and amounts; per distinct
#: predicates' template, a row asking for all of them and the rows.
_ManyGroups = tuple[list[tuple[IndexArray, IndexArray, FloatArray]],
                    list[tuple[int, IndexArray]]]


def fast_path_enabled() -> bool:
    """Whether the environment allows the fast path (it does unless told not to)."""
    value = os.environ.get(FAST_PATH_ENVIRONMENT_VARIABLE, "1").strip().lower()
    return value not in ("0", "false", "off", "no")


def vector_node_scores(ssn: Session, task: TaskInfo, nodes: Sequence[NodeInfo]
                       ) -> list[float] | None:
    """Each node's node-order plus batch node-order score, over the node columns:
    :func:`~batchsched.actions.node_search.node_scores` (the reference) bit for bit,
    for preempt and reclaim, whose candidate nodes are scored one task at a time.

    None when the columns cannot answer: the fast path is off, an enabled plugin
    has no vectorised variant or declines the task, or ``nodes`` are not session
    nodes in session order.
    """
    answer = _vector_scores(ssn, task, nodes)
    if answer is None:
        return None
    result: list[float] = answer[0].tolist()
    return result


def vector_ranked_nodes(ssn: Session, task: TaskInfo, nodes: Sequence[NodeInfo]
                        ) -> list[NodeInfo] | None:
    """``nodes`` by :func:`vector_node_scores`, highest first, equal scores in their
    order in ``nodes`` (a stable sort, as preempt's reference ranks them); None when
    the columns cannot score them."""
    ranked = vector_ranked_positions(ssn, task, nodes)
    if ranked is None:
        return None
    columns = NodeColumns.of(ssn)
    every = columns.nodes
    return columns.remember([every[at] for at in ranked.tolist()], ranked)


def vector_ranked_positions(ssn: Session, task: TaskInfo, nodes: Sequence[NodeInfo]
                            ) -> IndexArray | None:
    """The columns of :func:`vector_ranked_nodes`, without building the list."""
    answer = _vector_scores(ssn, task, nodes)
    if answer is None:
        return None
    scores, members = answer
    if bool(np.isnan(scores).any()):
        return None  # Python's sort and numpy's disagree on NaN: let the reference rank
    ranked: IndexArray = members[np.argsort(-scores, kind="stable")]
    return ranked


def _vector_scores(
    ssn: Session, task: TaskInfo, nodes: Sequence[NodeInfo]
) -> tuple[FloatArray, IndexArray] | None:
    """The scores of :func:`vector_node_scores` and the columns of ``nodes``."""
    if not fast_path_enabled():
        return None
    node_orders = vector_tiers(ssn, "node_order")
    batch_orders = vector_tiers(ssn, "batch_node_order")
    if node_orders is None or batch_orders is None:
        return None
    columns = NodeColumns.of(ssn)
    members = columns.positions_of(nodes)
    if members is None:
        return None
    if len(members) > 1 and not bool(np.all(members[1:] > members[:-1])):
        return None  # candidates are read in session order
    columns.sync()
    candidates = Candidates(members)
    try:
        scores = node_order_scores(node_orders, task, columns, candidates)
        scores = scores + batch_node_order_scores(batch_orders, task, columns, candidates)
    except VectorFallback:
        return None
    return np.asarray(scores, dtype=np.float64), members


def vector_preempt_scan(ssn: Session, scan: FeasibleNodeScan, task: TaskInfo,
                        nodes: Sequence[NodeInfo], *,
                        exclude: Collection[str] = ()) -> list[NodeInfo] | None:
    """:meth:`FeasibleNodeScan.feasible_nodes` with the preempt predicate (for a scan
    that does not rotate) over ``nodes`` less the names in ``exclude``, answered from
    the columns: the same nodes, and the same failures left in the scan's error
    cache. None when the columns cannot answer (the fast path is off, an enabled
    predicate has no preempt column form or declines the task, the scan rotates)."""
    if scan.rotate or scan.shard is not None or not fast_path_enabled():
        return None
    tiers = preempt_predicate_tiers(ssn)
    if tiers is None:
        return None
    columns = NodeColumns.of(ssn)
    columns.sync()
    positions = columns.positions_of(nodes)
    if positions is None:
        return None
    if exclude:
        positions = positions[~columns.named(exclude)[positions]]
    if not len(positions):
        return []
    try:
        passes = predicate_mask(tiers, task, columns)
    except VectorFallback:
        return None
    ok = (np.ones(len(positions), dtype=np.bool_) if passes is None
          else np.asarray(passes, dtype=np.bool_)[positions])
    use_cache = scan.error_cache_enabled and bool(task.role)
    group = f"{task.job}/{task.role}"
    cached = scan.error_cache.get(group) if use_cache else None
    if cached:
        ok &= ~columns.named(cached)[positions]
    hits = np.flatnonzero(ok)
    wanted = scan.nodes_to_find.count(len(positions))
    # The feasible node after the ones kept ends the scan, examined (the scalar's).
    examined = len(positions) if len(hits) <= wanted else int(hits[wanted]) + 1
    # The nodes the scan looked at and failed join the cache, as the scalar scan
    # leaves them, role or not (preempt reads only which nodes are there).
    failed = np.flatnonzero(~ok[:examined])
    if len(failed):
        known = scan.error_cache.setdefault(group, {})
        every = columns.nodes
        for at in positions[failed].tolist():
            name = every[at].name
            if name not in known:
                known[name] = _PREEMPT_SCAN_FAILURE
    every = columns.nodes
    found = positions[hits[:wanted]]
    return columns.remember([every[at] for at in found.tolist()], found)


def fast_path_available(ssn: Session) -> bool:
    """Whether every enabled node plugin of the session has vectorised variants."""
    return all(
        vector_tiers(ssn, point) is not None
        for point in ("predicate", "node_order", "batch_node_order")
    )


def default_node_selector(ssn: Session, error_cache_enabled: bool = True) -> NodeSelector:
    """The vectorised selector when the session allows it, else the scalar reference
    (which alone knows scheduler sharding)."""
    if fast_path_enabled() and not ssn.sharding.active and fast_path_available(ssn):
        return VectorNodeSelector(ssn, error_cache_enabled)
    return ScalarNodeSelector(ssn, error_cache_enabled)


def first_in_scan(feasible: IndexArray, start: int, total: int, wanted: int) -> tuple[int, int]:
    """Of a scan from ``start`` over ``total`` nodes in rotation order (Volcano's
    PredicateNodes: the first ``wanted`` feasible nodes are the candidates, and the next
    feasible one ends the scan unkept), the first candidate in node order and how many
    nodes the scan read. ``feasible``: the feasible node indices, sorted, at least one."""
    wrap = int(np.searchsorted(feasible, start))
    ahead = len(feasible) - wrap  # feasible from ``start`` on; those before come after
    if ahead > wanted:
        return int(feasible[wrap]), int(feasible[wrap + wanted]) - start + 1
    # Candidates past the wrap, when there are some, come first in node order.
    chosen = int(feasible[0]) if min(wanted - ahead, wrap) else int(feasible[wrap])
    if len(feasible) > wanted:
        return chosen, int(feasible[wanted - ahead]) + total - start + 1
    return chosen, total


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
        plugins = list(dict.fromkeys(
            name for tiers in (predicates, node_orders, batch_orders)
            for tier in tiers for name, _ in tier))
        self._templates = template_fns(ssn, plugins)
        self._plan: _Plan | None = None
        #: How many tasks were placed from windows worked out ahead (for statistics).
        self.served_from_plans = 0
        self._requests: dict[tuple[object, ...], tuple[IndexArray, FloatArray]] = {}
        self._skip_masks: dict[str, tuple[int, BoolArray]] = {}
        self._kept = self._store(ssn, plugins)
        #: How many scorings read scores kept for their template (for statistics).
        self.scored_from_kept = 0
        # Without node plugins a node's answer is its resource fit alone, one
        # comparison over the columns: kept answers would only cost their upkeep,
        # and every score is 0, so the first candidate is the best.
        self._scores_nothing = not plugins and not self.has_best_node

    #: Keep templates stacked (:class:`StackedStore`) when every score plugin has a
    #: variant for several tasks at once; False keeps them one by one.
    stack_templates = True

    def _store(self, ssn: Session, plugins: list[str]) -> TemplateStore | StackedStore:
        """Where answers are kept per template (see :mod:`batchsched.columnar.kept_answers`)."""
        nodes = len(self.columns)
        capacity = _KEPT_ANSWERS_BUDGET // (9 * max(1, nodes))
        many_orders = many_tiers(ssn, "node_order")
        many_batches = many_tiers(ssn, "batch_node_order")
        if self.stack_templates and many_orders is not None and many_batches is not None:
            predicate_plugins = [name for tier in self.predicates for name, _ in tier]
            self._predicate_templates = template_fns(ssn, predicate_plugins) or []
            self._many_orders, self._many_batches = many_orders, many_batches
            self._many_groups: TaskSetCache[_ManyGroups] = TaskSetCache()
            return StackedStore(min(capacity, _STACKED_TEMPLATES), _KEPT_FROM_USE, nodes,
                                score=self._score_many, feasible=self._feasible_many)
        return TemplateStore(capacity, _KEPT_FROM_USE, nodes,
                             score=self._score_nodes, feasible=self._feasible)

    def new_cache_scope(self) -> None:
        super().new_cache_scope()
        self._skip_masks = {}

    # -- the protocol -----------------------------------------------------------------------

    def for_allocate(self, task: TaskInfo, nodes: Sequence[NodeInfo]) -> Placement:
        if nodes is not self.ssn.node_list or (
                self.ssn.nominees and self.ssn.keeps_room_for_nominees(task)):
            # Room kept for nominated tasks is the reference path's (rare: after preemption).
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
        if self.node_scan.nodes_to_find.count(total) <= 0:
            raise VectorFallback  # none to find (a configuration's corner): the reference
        use_cache = self.error_cache_enabled and bool(task.role)
        start = self.node_scan.next_start % total
        plugins_answer = not self._scores_nothing
        if allocate and not plugins_answer and not use_cache and not columns.has_transitions:
            placed = self._place_by_fit(task, start, total)
            if placed is not None:
                return placed
        key = None
        # Templates serve kept answers and planned windows: nothing to keep without
        # node plugins (the fit above answered, or no node fits).
        if (allocate and plugins_answer and not use_cache and self._templates is not None
                and not self.has_best_node and not columns.has_transitions):
            key = self._template_key(task)
            if key is not None:
                served = self._serve_planned(key, start, total)
                if served is not None:
                    return served
        request = self._request(task) if allocate else None
        group = f"{task.job}/{task.role}"
        kept = self._kept.get(task, key, self.columns.changes) if key is not None else None
        if kept is not None:
            feasibility = _Feasibility.known(kept)
        else:
            passes = predicate_mask(self.predicates, task, columns) if plugins_answer else None
            skip = self._skip_mask(group) if use_cache else None
            feasibility = _Feasibility(columns.future_idle, request, passes, skip)
        examined: _Examined | None = None
        if key is not None:
            planned = self._plan_windows(task, key, start, total, feasibility, kept=kept)
            if isinstance(planned, Placement):
                return planned
            examined = planned
        candidates, processed, stopper = self._scan(total, start, feasibility, examined)
        groups: list[tuple[IndexArray, bool]]
        if not allocate or not len(candidates) or not columns.has_transitions:
            groups = [(candidates, False)]
        else:
            rows, amounts = self._request(task)
            in_idle = fits_mask(amounts, columns.idle[rows][:, candidates])
            groups = [(candidates[in_idle], False), (candidates[~in_idle], True)]
        chosen: int | None = None
        pipelined = False
        for members, later in groups:
            chosen = self._best(task, members, kept)
            if chosen is not None:
                pipelined = later
                break
        # No fallback past this point: commit the scan's effects.
        self.node_scan.next_start = (start + processed) % total
        if chosen is None and allocate and not use_cache:
            errors: FitErrors = self._unplaced_errors(task, start)
        elif use_cache or chosen is None:
            errors = self._errors(task, start, processed, passes_fn=allocate, group=group,
                                  stopper=stopper,
                                  candidates=candidates)
        else:
            errors = FitErrors()
        if chosen is None:
            return Placement(None, errors)
        return Placement(columns.nodes[chosen], errors, pipelined=pipelined)

    def _place_by_fit(self, task: TaskInfo, start: int, total: int) -> Placement | None:
        """:meth:`_place` without node plugins, in a few array operations: resource fit
        on future idle decides, every score is 0, so of the scan's candidates (the first
        ``num_feasible_nodes_to_find`` feasible nodes from ``start``) the first in session
        order wins. None when no node fits (the scan's path words the fit errors)."""
        rows, amounts = self._request(task)
        feasible = np.flatnonzero(fits_mask(amounts, self.columns.future_idle[rows]))
        if not len(feasible):
            return None
        wanted = self.node_scan.nodes_to_find.count(total)
        chosen, processed = first_in_scan(feasible, start, total, wanted)
        self.node_scan.next_start = (start + processed) % total
        return Placement(self.columns.nodes[chosen], FitErrors())

    # -- several windows at once --------------------------------------------------------------

    def _template_key(self, task: TaskInfo) -> tuple[object, ...] | None:
        """What every answer for this task depends on, or None (see ``template_fns``)."""
        assert self._templates is not None
        init = task.init_resreq
        parts: list[object] = [init.milli_cpu, init.memory, *init.scalars.items()]
        for fn in self._templates:
            part = fn(task)
            if part is None:
                return None
            parts.append(part)
        return tuple(parts)

    def _serve_planned(self, key: tuple[object, ...], start: int, total: int) -> Placement | None:
        """The next window of the current plan, if it is this task's window and still
        valid: same template, the rotation is where the plan expects it, and no node
        of the windows ahead changed since they were worked out."""
        plan = self._plan
        if plan is None or plan.key != key or plan.next >= len(plan.windows):
            return None
        window_start, processed, chosen = plan.windows[plan.next]
        if window_start % total != start:
            return None
        changes = self.columns.changes
        origin, end = plan.origin, plan.end
        for position in changes[plan.mark:]:
            # Positions in rotation order from the plan's origin (past the end of the
            # node list, the rotation goes on from the first node).
            if window_start <= (position if position >= origin else position + total) < end:
                self._plan = None
                return None
        # Windows only move forward: a change outside this window's span stays outside.
        plan.mark = len(changes)
        plan.next += 1
        self.served_from_plans += 1
        self.node_scan.next_start = (start + processed) % total
        return Placement(self.columns.nodes[chosen], FitErrors())

    def _plan_windows(
        self, task: TaskInfo, key: tuple[object, ...], start: int, total: int,
        feasibility: _Feasibility, *, kept: TemplateAnswers | None,
    ) -> Placement | _Examined | None:
        """Work out this task's window and the next ones at once, for the job's tasks
        still to come with the same template; serve the first. With the template's
        answers kept, the windows may go on past the end of the node list (the
        rotation wraps around there); without, they stop there. When fewer than two
        windows can be worked out: None, or what was examined for them (the scan
        goes on from there instead of reading those nodes again)."""
        wanted = self.node_scan.nodes_to_find.count(total)
        job = self.ssn.jobs.get(task.job)
        ahead = min(_MAX_WINDOWS_AHEAD,
                    len(job.tasks_in(TaskStatus.PENDING)) if job is not None else 1)
        if ahead <= 1:
            return None
        # A window is a scan: ``wanted`` candidates, then the next feasible node, which
        # ends it unkept (Volcano's PredicateNodes) and which the rotation passes.
        stride = wanted + 1
        if (kept is not None and start + ahead * stride <= total
                and self._plan_contiguous(key, start, wanted, ahead,
                                          feasibility=feasibility, kept=kept)):
            return self._serve_planned(key, start, total)
        span = ahead * max(int(wanted * _FIRST_CHUNK_FACTOR), _MIN_CHUNK)
        # Positions in rotation order: past the node list, ``total + i`` is node ``i``.
        end = start + min(total, span) if kept is not None else min(total, start + span)
        feasible = np.flatnonzero(feasibility.between(start, min(end, total)))
        feasible += start
        if end > total:
            feasible = np.concatenate(
                (feasible, np.flatnonzero(feasibility.between(0, end - total)) + total))
        windows = min(ahead, len(feasible) // stride)
        if windows < 2:
            return feasible, end - start
        in_rotation = feasible[:windows * stride].reshape(windows, stride)
        kept_rows = in_rotation[:, :wanted]
        if end > total:
            # Each window's candidates in session order, as the scan sorts them.
            members = np.sort(kept_rows % total, axis=1)
            assert kept is not None
            self.scored_from_kept += 1
            scores = kept.scores[members]
        else:
            members = kept_rows
            scores = self._scores(task, members.ravel(), kept).reshape(windows, wanted)
        # One argmax per window row (the first best in session order, as np.argmax over
        # the window's candidates).
        best = np.argmax(scores, axis=1)
        chosen_nodes: list[int] = members[np.arange(windows), best].tolist()
        last_nodes: list[int] = in_rotation[:, -1].tolist()
        planned: list[tuple[int, int, int]] = []
        window_start = start
        for chosen, last in zip(chosen_nodes, last_nodes, strict=True):
            planned.append((window_start, last - window_start + 1, chosen))
            window_start = last + 1
        self._plan = _Plan(key, planned, len(self.columns.changes), start, window_start)
        return self._serve_planned(key, start, total)

    def _plan_contiguous(
        self, key: tuple[object, ...], start: int, wanted: int, ahead: int, *,
        feasibility: _Feasibility, kept: TemplateAnswers,
    ) -> bool:
        """Plan when every node of the next ``ahead`` windows is feasible (the common
        case until nodes fill up): each window is ``wanted`` consecutive candidates and
        the node after them (which ends the scan unkept), and its best node one argmax
        over a view of the kept scores. False otherwise."""
        stride = wanted + 1
        end = start + ahead * stride
        if not feasibility.between(start, end).all():
            return False
        self.scored_from_kept += 1
        rows = kept.scores[start:end].reshape(ahead, stride)[:, :wanted]
        best = np.argmax(rows, axis=1)
        best += np.arange(start, end, stride)
        planned = [(window_start, stride, chosen) for window_start, chosen
                   in zip(range(start, end, stride), best.tolist(), strict=True)]
        self._plan = _Plan(key, planned, len(self.columns.changes), start, end)
        return True

    def _request(self, task: TaskInfo) -> tuple[IndexArray, FloatArray]:
        """The rows and amounts resource fit compares for the task (kept per distinct
        request: tasks of a job usually share theirs)."""
        init = task.init_resreq
        key = (init.milli_cpu, init.memory, *init.scalars.items())
        request = self._requests.get(key)
        if request is None:
            request = self._requests[key] = self.columns.request(init)
        return request

    def _skip_mask(self, group: str) -> BoolArray | None:
        """The nodes the group's cached errors rule out (None when it has none)."""
        cached = self.node_scan.error_cache.get(group)
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

    def _scan(self, total: int, start: int, feasibility: _Feasibility,
              examined: _Examined | None = None) -> tuple[IndexArray, int, int | None]:
        """The first ``num_feasible_nodes_to_find`` feasible nodes from ``start`` in
        rotation order (sorted into session order); how many nodes were examined: up to
        and including the next feasible node, which ends the scan unkept (Volcano's
        PredicateNodes), else every node; and that node (None when the scan read all).
        ``examined``: the feasible positions (in rotation order, ``total + i`` for node
        ``i`` past the wrap) among the first nodes from ``start`` already read, and how
        many those were; the answer does not depend on how the nodes are read."""
        wanted = self.node_scan.nodes_to_find.count(total)
        target = wanted + 1  # the kept ones, and the one that ends the scan
        chunk = max(int(wanted * _FIRST_CHUNK_FACTOR), _MIN_CHUNK)
        parts: list[IndexArray] = []  # rotation positions (``total + i`` past the wrap)
        found = read = 0
        if examined is not None:
            known, span = examined
            read = min(span, total)
            if len(known):
                parts.append(known[:target])
                found = min(len(known), target)
        while found < target and read < total:
            lo = start + read
            hi = start + min(total, read + chunk)
            if lo < total:
                head = np.flatnonzero(feasibility.between(lo, min(hi, total))) + lo
                if hi > total:
                    tail = np.flatnonzero(feasibility.between(0, hi - total)) + total
                    feasible = np.concatenate((head, tail))
                else:
                    feasible = head
            else:
                feasible = np.flatnonzero(
                    feasibility.between(lo - total, hi - total)) + lo
            need = target - found
            parts.append(feasible[:need])
            found += min(len(feasible), need)
            read = hi - start
            chunk *= 2
        positions = np.concatenate(parts) if parts else np.empty(0, dtype=np.intp)
        stopper: int | None = None
        if found >= target:
            processed = int(positions[wanted]) - start + 1
            stopper = int(positions[wanted]) % total
            positions = positions[:wanted]
        else:
            processed = total
        if not len(positions):
            return np.empty(0, dtype=np.intp), processed, stopper
        if int(positions[-1]) >= total:
            return np.sort(positions % total), processed, stopper
        return positions, processed, stopper

    def _feasible(self, task: TaskInfo, members: IndexArray) -> BoolArray:
        """Resource fit on future idle and the predicates, for ``members`` (no error cache:
        tasks with a template never use it)."""
        columns = self.columns
        rows, amounts = self._request(task)
        ok = fits_mask(amounts, columns.future_idle[rows[:, None], members])
        passes = predicate_mask(self.predicates, task, columns)
        if passes is not None:
            ok &= passes[members]
        return ok

    def _score_many(self, tasks: Sequence[TaskInfo], members: IndexArray) -> FloatArray:
        return many_scores(self._many_orders, self._many_batches, tasks, self.columns,
                           Candidates(members))

    def _feasible_many(self, tasks: Sequence[TaskInfo], members: IndexArray) -> BoolArray:
        """:meth:`_feasible` for several tasks, one row each: resource fit together for
        tasks asking for the same resources, the predicates once per distinct answer
        their template promises."""
        columns = self.columns
        fits, predicates = self._many_groups.get(tasks, lambda: self._group(tasks))
        ok = np.empty((len(tasks), len(members)), dtype=np.bool_)
        for dimensions, rows, amounts in fits:
            available = columns.future_idle[dimensions, members]
            # fits_mask's comparison, for every task of the group at once.
            short = np.less(amounts[:, :, None] - available, MIN_RESOURCE)
            ok[rows] = np.logical_and.reduce(short, axis=1)
        for first, rows in predicates:
            passes = predicate_mask(self.predicates, tasks[first], columns)
            if passes is not None:
                ok[rows] &= passes[members]
        return ok

    def _group(self, tasks: Sequence[TaskInfo]) -> _ManyGroups:
        """The tasks (by row) asking for the same resources, with their amounts, and the
        tasks whose predicates' templates are equal, worked out once per set of tasks
        (the stacked store asks about the same tasks until a template comes or goes)."""
        by_rows: dict[tuple[int, ...], list[int]] = {}
        by_predicates: dict[tuple[object, ...], list[int]] = {}
        for row, task in enumerate(tasks):
            by_rows.setdefault(tuple(self._request(task)[0].tolist()), []).append(row)
            key = tuple(fn(task) for fn in self._predicate_templates)
            by_predicates.setdefault(key, []).append(row)
        fits = [(np.array(dimensions, dtype=np.intp)[:, None], np.array(rows, dtype=np.intp),
                 np.array([self._request(tasks[row])[1] for row in rows]))
                for dimensions, rows in by_rows.items()]
        predicates = [(rows[0], np.array(rows, dtype=np.intp)) for rows in by_predicates.values()]
        return fits, predicates

    def _scores(
        self, task: TaskInfo, members: IndexArray, kept: TemplateAnswers | None = None
    ) -> FloatArray:
        """The summed node-order and batch node-order scores of ``members`` (sorted node
        indices), read from the template's kept answers when there are some."""
        if kept is None:
            return self._score_nodes(task, members)
        self.scored_from_kept += 1
        picked: FloatArray = Candidates(members).pick(kept.scores)
        return picked

    def _score_nodes(self, task: TaskInfo, members: IndexArray) -> FloatArray:
        candidates = Candidates(members)
        columns = self.columns
        scores = node_order_scores(self.node_orders, task, columns, candidates)
        scores += batch_node_order_scores(self.batch_orders, task, columns, candidates)
        return scores

    def _best(
        self, task: TaskInfo, members: IndexArray, kept: TemplateAnswers | None = None
    ) -> int | None:
        """The reference ``select_best_node`` over node indices (session order)."""
        count = len(members)
        if count == 0:
            return None
        if count == 1 or self._scores_nothing:
            return int(members[0])
        columns = self.columns
        scores = self._scores(task, members, kept)
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
        candidates: IndexArray, stopper: int | None = None,
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
        failed_before = group in self.node_scan.error_cache
        cached = self.node_scan.error_cache.get(group, {})
        feasible = set(candidates.tolist())
        for offset in range(processed):
            position = (start + offset) % total
            if position in feasible or position == stopper:
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
            self.node_scan.error_cache[group] = cached
            errors.set_node_error(node.name, err)
        return errors


    def _unplaced_errors(self, task: TaskInfo, start: int) -> FitErrors:
        """Every node's fit error for a task allocate could place nowhere, as the reference
        scan would record them (scan order from ``start``), without a call per node
        for the nodes too small for it: their ``Insufficient <resource>`` is worked out
        with arrays; the few others get their error from the scalar predicates."""
        columns = self.columns
        rows, amounts = self._request(task)
        names = [columns.dimensions[row] for row in rows]
        order = sorted(range(len(names)), key=lambda k: dimension_rank(names[k]))
        # Not (l - r < 0.1), so that a NaN counts as short, as in the scalar comparison.
        short = ~np.less(amounts[order][:, None] - columns.future_idle[rows[order]],
                         MIN_RESOURCE)
        reasons = np.where(short.any(axis=0), short.argmax(axis=0), -1)
        others: dict[int, FitError] = {}
        for position in np.flatnonzero(reasons < 0).tolist():
            node = columns.nodes[position]
            err = allocate_predicate(self.ssn, task, node)
            if err is None:
                raise AssertionError(
                    f"vectorised predicates rejected node {node.name} for task {task.uid}, "
                    "the scalar ones accept it: a vectorised variant disagrees with its plugin"
                )
            others[position] = err
        texts = [insufficient_resource_reason([names[k]]) for k in order]
        return UnplacedFitErrors(task, columns.names, start, reasons=reasons, texts=texts,
                                  others=others)


class _Plan:
    """Windows worked out ahead for tasks sharing a template: for each, where it
    starts, how many nodes its scan examines and the node chosen; ``next`` is the
    window to serve next; ``mark`` the node-change log position when planned; no
    node in ``[window start, end)`` may change before its window is served.
    Window starts and ``end`` are positions in rotation order from ``origin``
    (``total + i`` is node ``i`` once the rotation has wrapped around)."""

    __slots__ = ("end", "key", "mark", "next", "origin", "windows")

    def __init__(
        self, key: tuple[object, ...], windows: list[tuple[int, int, int]], mark: int,
        origin: int, end: int,
    ) -> None:
        self.key = key
        self.windows = windows
        self.mark = mark
        self.origin = origin
        self.end = end
        self.next = 0


#: Feasible positions in rotation order from a scan's start, and how many nodes that
#: read (see ``VectorNodeSelector._scan``).
_Examined = tuple[IndexArray, int]


class _Feasibility:
    """Which nodes pass for one task: resource fit of the request (allocate only) on
    ``available``, the predicates' mask, and the predicate-error cache's exclusions;
    or the verdicts kept for the task's template (:meth:`known`)."""

    __slots__ = ("amounts", "available", "kept", "passes", "rows", "skip")

    def __init__(
        self, available: FloatArray, request: tuple[IndexArray, FloatArray] | None,
        passes: BoolArray | None, skip: BoolArray | None,
    ) -> None:
        self.available = available
        self.rows: IndexArray | None = None
        self.amounts: FloatArray | None = None
        if request is not None:
            self.rows, self.amounts = request
        self.passes = passes
        self.skip = skip
        self.kept: TemplateAnswers | None = None

    @classmethod
    def known(cls, kept: TemplateAnswers) -> _Feasibility:
        """Verdicts kept for the task's template, brought up to date as soon as a range
        asked for holds a stale node."""
        feasibility = cls(np.empty((0, 0)), None, None, None)
        feasibility.kept = kept
        return feasibility

    def between(self, lo: int, hi: int) -> BoolArray:
        """The verdicts of nodes ``lo`` to ``hi - 1`` (read them, do not modify them)."""
        kept = self.kept
        if kept is not None:
            if kept.stale and any(lo <= position < hi for position in kept.stale):
                kept.refresh()
            known: BoolArray = kept.feasible[lo:hi]
            return known
        passes, skip = self.passes, self.skip
        if self.rows is not None:
            assert self.amounts is not None
            ok = fits_mask(self.amounts, self.available[self.rows, lo:hi])
            if passes is not None:
                ok &= passes[lo:hi]
        elif passes is not None:
            ok = passes[lo:hi].copy()
        else:
            ok = np.ones(hi - lo, dtype=np.bool_)
        if skip is not None:
            ok &= ~skip[lo:hi]
        return ok
