"""Choosing a node for one task: the scalar reference path shared by allocate and backfill.

Everything the allocate and backfill actions ask about nodes for a single task
lives here, behind :class:`NodeSelector`, so that a faster implementation (for
example a vectorised one) can replace it without touching the actions. This
module is the reference: simple, node by node, and exactly Volcano's rules.

For one task the selector:

1. **filters** the nodes (Volcano's ``PredicateHelper.PredicateNodes``): allocate
   first compares the task's ``init_resreq`` with the node's future idle
   (``idle + releasing - pipelined``, ``pods`` included, epsilon 0.1) and fails
   with ``Insufficient <dimension>``; then the enabled plugins' predicates run
   (Volcano's ``PredicateForAllocateAction``: a FitError fails the node only if
   one of its statuses is Error, Unschedulable, UnschedulableAndUnresolvable,
   Wait or Skip). Backfill runs only the plugins' predicates.
2. **groups** the survivors (allocate only): nodes whose idle fits the task come
   before nodes that fit only in their future idle; the second group is used
   only when the first is empty, and a task placed there is pipelined.
3. **scores** a group with more than one node: node-order scores plus batch
   node-order scores computed over that group; a single node is taken unscored.
4. **picks** the node a best-node plugin names, else the highest score.

Determinism (Volcano scans nodes with 16 parallel workers from a rotating
start and picks at random among equal scores):

* Nodes are examined in session node order (``ssn.node_list``), starting where
  the previous scan of the same selector stopped; with at most 100 nodes every
  node is examined every time, so the start never moves. Above 100 nodes only
  Volcano's number of feasible nodes is collected
  (:func:`num_feasible_nodes_to_find`), and the rotation spreads the scans.
* Candidates are always handed to scoring in session node order.
* **Ties**: among the nodes sharing the highest score, the first one in session
  node order wins.
* ``Insufficient <dimension>`` names cpu, then memory, then the alphabetically
  first short scalar resource.

The predicate-error cache (allocate's and backfill's ``predicateErrorCacheEnable``
argument, default true) is Volcano's: within one cache scope (one allocate round
of a job; one backfill task), once a task of a (job, role) failed on a node,
later tasks of the same job and role skip that node with the same error. Tasks
without a role never use it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Protocol

import attrs

from batchsched.actions.node_search import (
    FeasibleNodeScan,
    PredicateFn,
    hard_shard_of,
    node_scores,
    nodes_to_find_of,
    num_feasible_nodes_to_find,
    predicate_for_allocate_action,
    shard_first,
    shard_groups,
    soft_sharded,
)
from batchsched.api.fit import FitError, FitErrors, FitStatus, insufficient_resource_reason
from batchsched.api.node import NodeInfo
from batchsched.api.resource import CPU, MEMORY, DimensionDefault
from batchsched.api.task import TaskInfo
from batchsched.api.types import FitStatusCode

if TYPE_CHECKING:
    from batchsched.framework.session import Session

__all__ = [
    "NodeSelector",
    "NodeSelectorFactory",
    "Placement",
    "ScalarNodeSelector",
    "allocate_predicate",
    "num_feasible_nodes_to_find",
    "predicate_for_allocate_action",
    "select_best_node",
]



@attrs.frozen
class Placement:
    """Where a task should go, or why it cannot go anywhere.

    ``node`` is None when no node passed the filters (``fit_errors`` then holds
    every node's reason), or when some did but scoring them failed (``unscored``:
    Volcano's ``PrioritizeNodes`` error, after which allocate moves on to the next
    task without a fit error). ``pipelined`` is true when the node fits the task
    only once its releasing tasks are gone (allocate pipelines the task there).
    """

    node: NodeInfo | None
    fit_errors: FitErrors
    pipelined: bool = False
    unscored: bool = False


class NodeSelector(Protocol):
    """The per-task node choice allocate and backfill delegate to.

    One selector serves one action execution; :meth:`new_cache_scope` starts a
    fresh predicate-error cache (allocate calls it once per job round, backfill
    once per task).
    """

    def new_cache_scope(self) -> None: ...

    def for_allocate(self, task: TaskInfo, nodes: Sequence[NodeInfo]) -> Placement: ...

    def for_backfill(self, task: TaskInfo, nodes: Sequence[NodeInfo]) -> Placement: ...


#: Builds a selector for one action execution: ``factory(ssn, error_cache_enabled)``.
NodeSelectorFactory = Callable[["Session", bool], NodeSelector]


def allocate_predicate(ssn: Session, task: TaskInfo, node: NodeInfo) -> FitError | None:
    """Resource fit against the node's future idle (less what it keeps for nominated
    tasks of equal or higher priority), then the plugins' predicates."""
    available = node.future_idle()
    kept = ssn.nominated_reserve(task, node) if ssn.nominees else None
    if kept is not None:
        available.sub_unchecked(kept)
    fits, short = task.init_resreq.less_equal_with_names(available, DimensionDefault.ZERO)
    if not fits:
        reason = insufficient_resource_reason(_ordered_dimensions(short))
        return FitError(task.namespace, task.name, node.name,
                        [FitStatus(FitStatusCode.UNSCHEDULABLE, reason)])
    return predicate_for_allocate_action(ssn, task, node)


def _ordered_dimensions(names: Sequence[str]) -> list[str]:
    head = [n for n in (CPU, MEMORY) if n in names]
    return head + sorted(n for n in names if n not in (CPU, MEMORY))


def select_best_node(ssn: Session, task: TaskInfo, nodes: Sequence[NodeInfo]) -> NodeInfo | None:
    """The best of ``nodes`` (given in session node order) for ``task``.

    One node is taken unscored. Otherwise the nodes are scored over this list;
    a best-node plugin may name one; failing that the highest score wins, and
    among equal highest scores the first node of the list (session node order).
    """
    if not nodes:
        return None
    if len(nodes) == 1:
        return nodes[0]
    scores = node_scores(ssn, task, nodes)
    if scores is None:
        return None  # no scores (Volcano's PrioritizeNodes error): no node
    by_score: dict[float, list[NodeInfo]] = {}
    for node, score in zip(nodes, scores, strict=True):
        by_score.setdefault(score, []).append(node)
    chosen = ssn.best_node(task, by_score)
    if chosen is not None:
        return chosen
    best = max(scores)
    return nodes[scores.index(best)]


class ScalarNodeSelector:
    """The reference :class:`NodeSelector`: one node at a time, in session node order."""

    def __init__(self, ssn: Session, error_cache_enabled: bool = True) -> None:
        self.ssn = ssn
        self.error_cache_enabled = error_cache_enabled
        #: Volcano's partial scan with its rotating start and predicate-error cache.
        self.node_scan = FeasibleNodeScan(
            ssn.node_list, error_cache_enabled=error_cache_enabled, rotate=True,
            nodes_to_find=nodes_to_find_of(ssn), shard=hard_shard_of(ssn),
        )

    def new_cache_scope(self) -> None:
        self.node_scan.new_cache_scope()

    def for_allocate(self, task: TaskInfo, nodes: Sequence[NodeInfo]) -> Placement:
        """Filter (resource fit on future idle, then predicates), group, score, pick."""
        ssn = self.ssn
        candidates, errors = self.feasible_nodes(
            task, nodes, lambda t, n: allocate_predicate(ssn, t, n)
        )
        if not candidates:
            return Placement(None, errors)
        request = task.init_resreq
        fits_idle: list[NodeInfo] = []
        fits_later: list[NodeInfo] = []
        for node in candidates:
            idle, future = node.idle, node.future_idle()
            kept = ssn.nominated_reserve(task, node) if ssn.nominees else None
            if kept is not None:
                idle = idle.clone().sub_unchecked(kept)
                future.sub_unchecked(kept)
            if request.less_equal(idle, DimensionDefault.ZERO):
                fits_idle.append(node)
            elif request.less_equal(future, DimensionDefault.ZERO):
                fits_later.append(node)
        groups = [(fits_idle, False), (fits_later, True)]
        if soft_sharded(ssn):
            # Volcano's prioritizeNodes: the shard's nodes before the others, idle
            # before future idle (binding elsewhere before pipelining in the shard).
            groups = [(part, pipelined) for group, pipelined in groups
                      for part in shard_first(ssn, group)]
        for group, pipelined in groups:
            best = select_best_node(ssn, task, group)
            if best is not None:
                return Placement(best, errors, pipelined=pipelined)
        # A group that is not empty gives no node only when its scoring failed.
        return Placement(None, errors, unscored=bool(fits_idle or fits_later))

    def for_backfill(self, task: TaskInfo, nodes: Sequence[NodeInfo]) -> Placement:
        """Filter by the plugins' predicates only, score, pick."""
        ssn = self.ssn
        candidates, errors = self.feasible_nodes(
            task, nodes, lambda t, n: predicate_for_allocate_action(ssn, t, n)
        )
        if len(candidates) > 1 and soft_sharded(ssn):
            # Volcano's backfill: the shard's nodes first, as a group of their own.
            for group in shard_groups(ssn, candidates):
                best = select_best_node(ssn, task, group)
                if best is not None:
                    return Placement(best, errors)
            return Placement(None, errors)
        return Placement(select_best_node(ssn, task, candidates), errors)

    def feasible_nodes(
        self, task: TaskInfo, nodes: Sequence[NodeInfo], predicate: PredicateFn
    ) -> tuple[list[NodeInfo], FitErrors]:
        """The nodes passing ``predicate`` (in session node order) and the others' errors."""
        return self.node_scan.feasible_nodes(task, nodes, predicate)
