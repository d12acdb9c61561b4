"""Node search shared by the actions: how many feasible nodes a scan collects, which
predicate statuses fail a node for which action, node scoring, and the scan itself
with Volcano's predicate-error cache.

Volcano keeps these on ``Session`` (``PredicateForAllocateAction``,
``PredicateForPreemptAction``) and in ``pkg/scheduler/util`` (``PredicateHelper``,
``CalculateNumOfFeasibleNodesToFind``, ``PrioritizeNodes``). The preempt and
reclaim actions read them from here (through :mod:`batchsched.actions.victims`);
:mod:`batchsched.actions.placement` (allocate, backfill) reads the same rules from here,
so that each rule is written once.

Which predicate statuses fail a node:

============================== ============================ ===========================
code                           allocate and backfill        preempt and reclaim
============================== ============================ ===========================
Success                        passes                       passes
Unschedulable                  **fails**                    passes (evicting may help)
UnschedulableAndUnresolvable   **fails**                    **fails**
Error                          **fails**                    **fails**
Wait                           **fails**                    **fails**
Skip                           **fails**                    **fails**
============================== ============================ ===========================

A FitError carrying several statuses fails the node when any one of them does.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from batchsched.api.fit import FitError, FitErrors
from batchsched.api.node import NodeInfo
from batchsched.api.sharding import NOT_IN_SHARD, ShardingMode
from batchsched.api.task import TaskInfo
from batchsched.api.types import FitStatusCode
from batchsched.conf import NodesToFind
from batchsched.errors import NodeOrderError

if TYPE_CHECKING:
    from batchsched.framework.session import Session

__all__ = [
    "ALLOCATE_FAILING_CODES",
    "BASELINE_PERCENTAGE_OF_NODES_TO_FIND",
    "MIN_NODES_TO_FIND",
    "MIN_PERCENTAGE_OF_NODES_TO_FIND",
    "PREEMPT_FAILING_CODES",
    "FeasibleNodeScan",
    "PredicateFn",
    "failing_predicate",
    "node_scores",
    "nodes_to_find_of",
    "num_feasible_nodes_to_find",
    "predicate_for_allocate_action",
    "predicate_for_preempt_action",
]

log = logging.getLogger("batchsched")

PredicateFn = Callable[[TaskInfo, NodeInfo], "FitError | None"]

#: Volcano's (and kube-scheduler's) defaults for how many feasible nodes a scan collects.
MIN_NODES_TO_FIND = 100
MIN_PERCENTAGE_OF_NODES_TO_FIND = 5
BASELINE_PERCENTAGE_OF_NODES_TO_FIND = 50
_DEFAULT_SEARCH = NodesToFind(0, MIN_NODES_TO_FIND, MIN_PERCENTAGE_OF_NODES_TO_FIND)

#: Statuses that fail a node for allocate and backfill (``PredicateForAllocateAction``).
ALLOCATE_FAILING_CODES = frozenset({
    FitStatusCode.ERROR,
    FitStatusCode.UNSCHEDULABLE,
    FitStatusCode.UNSCHEDULABLE_AND_UNRESOLVABLE,
    FitStatusCode.WAIT,
    FitStatusCode.SKIP,
})

#: Statuses that fail a node for preempt and reclaim (``PredicateForPreemptAction``):
#: those saying that evicting pods cannot help. A node that is only Unschedulable
#: (pod count, host port, anti-affinity of a running pod, ...) stays a candidate.
PREEMPT_FAILING_CODES = frozenset({
    FitStatusCode.UNSCHEDULABLE_AND_UNRESOLVABLE,
    FitStatusCode.ERROR,
    FitStatusCode.SKIP,
    FitStatusCode.WAIT,
})


def nodes_to_find_of(ssn: object) -> NodesToFind:
    """The session configuration's ``nodesToFind`` (Volcano's defaults for an object
    without a configuration, such as a test's stand-in session)."""
    configuration = getattr(ssn, "configuration", None)
    found = getattr(configuration, "nodes_to_find", None)
    return found if isinstance(found, NodesToFind) else _DEFAULT_SEARCH


def hard_shard_of(ssn: object) -> frozenset[str] | None:
    """The only nodes a scan may pass when the scheduler is sharded hard (its shard's
    nodes in the session); None otherwise."""
    sharding = getattr(ssn, "sharding", None)
    if sharding is None or sharding.mode is not ShardingMode.HARD:
        return None
    shard: frozenset[str] = getattr(ssn, "nodes_in_shard", frozenset())
    return shard


def soft_sharded(ssn: object) -> bool:
    sharding = getattr(ssn, "sharding", None)
    return sharding is not None and sharding.mode is ShardingMode.SOFT


def shard_first(ssn: object, nodes: Sequence[NodeInfo]) -> tuple[list[NodeInfo], list[NodeInfo]]:
    """The nodes of the scheduler's shard and the others, each in the order given."""
    shard: frozenset[str] = getattr(ssn, "nodes_in_shard", frozenset())
    return ([node for node in nodes if node.name in shard],
            [node for node in nodes if node.name not in shard])


def shard_groups(ssn: object, nodes: list[NodeInfo]) -> list[list[NodeInfo]]:
    """Volcano's ``GetPredicatedNodeByShard``: sharded soft, the nodes of the
    scheduler's shard, then the others (an empty group left out), tried one group
    after the other; otherwise ``nodes`` itself as one group (the very list: the
    columns know a list they handed out)."""
    if not soft_sharded(ssn):
        return [nodes]
    return [group for group in shard_first(ssn, nodes) if group]


def num_feasible_nodes_to_find(total: int, search: NodesToFind | None = None) -> int:
    """How many feasible nodes a scan collects before stopping (by default Volcano's
    defaults; a configuration's ``nodesToFind`` changes them, :class:`NodesToFind`).

    All of them up to 100 nodes; above, ``max(50 - total // 125, 5)`` percent of
    them, but never fewer than 100.

    >>> num_feasible_nodes_to_find(80), num_feasible_nodes_to_find(1000)
    (80, 420)
    """
    return (search or _DEFAULT_SEARCH).count(total)


def failing_predicate(
    ssn: Session, task: TaskInfo, node: NodeInfo, failing_codes: frozenset[FitStatusCode]
) -> FitError | None:
    """The plugins' predicates, read with ``failing_codes``: the FitError when one
    of its statuses has such a code, else None (the node passes)."""
    err = ssn.predicate(task, node)
    if err is None:
        return None
    if any(status.code in failing_codes for status in err.statuses):
        return err
    return None


def predicate_for_allocate_action(ssn: Session, task: TaskInfo, node: NodeInfo) -> FitError | None:
    """The plugins' predicates as allocate and backfill read them
    (:data:`ALLOCATE_FAILING_CODES`)."""
    return failing_predicate(ssn, task, node, ALLOCATE_FAILING_CODES)


def predicate_for_preempt_action(ssn: Session, task: TaskInfo, node: NodeInfo) -> FitError | None:
    """The plugins' predicates as preempt and reclaim read them
    (:data:`PREEMPT_FAILING_CODES`)."""
    return failing_predicate(ssn, task, node, PREEMPT_FAILING_CODES)


def node_scores(ssn: Session, task: TaskInfo, nodes: Sequence[NodeInfo]) -> list[float] | None:
    """Node-order plus batch node-order score of each node, in the order given.

    The batch functions score over ``nodes`` as one group. As in Volcano, a node
    whose node-order function reports a FitError keeps only its batch score; a batch
    function that cannot score (:class:`~batchsched.errors.NodeOrderError`) leaves
    no score at all: None (logged), and the task gets no node from these.
    """
    order: list[float] = []
    for node in nodes:
        try:
            order.append(ssn.node_order(task, node))
        except FitError:
            order.append(0.0)
    try:
        batch = ssn.batch_node_order(task, list(nodes))
    except NodeOrderError as exc:
        log.warning("batchsched: scoring nodes for task %s: %s", task.uid, exc)
        return None
    return [score + batch.get(node.name, 0.0) for node, score in zip(nodes, order, strict=True)]


class FeasibleNodeScan:
    """Volcano's ``PredicateHelper``: the feasible nodes of one task, with the
    predicate-error cache.

    :meth:`feasible_nodes` examines ``nodes`` one at a time and stops once
    :func:`num_feasible_nodes_to_find` of them passed. With ``rotate`` each scan
    starts where the previous one of this object stopped (Volcano's rotating start
    index; with at most 100 nodes every node is examined, so it changes nothing);
    without it every scan starts at the first node. The result is always in the
    order of ``session_nodes`` (Volcano's 16 parallel workers give no order).

    The error cache (``error_cache_enabled``): within one cache scope (until
    :meth:`new_cache_scope`), once a task of a (job, role) failed on a node, later
    tasks of the same job and role skip that node with the same error. Tasks
    without a role never use it (Volcano issue 3527).

    ``next_start`` (the rotation) and ``error_cache`` are public so that another
    implementation of the same scan (the vectorised selector) continues exactly
    where this one stopped.
    """

    def __init__(
        self,
        session_nodes: Sequence[NodeInfo],
        *,
        error_cache_enabled: bool = True,
        rotate: bool = True,
        nodes_to_find: NodesToFind | None = None,
        shard: frozenset[str] | None = None,
    ) -> None:
        self.nodes_to_find = nodes_to_find or _DEFAULT_SEARCH
        #: Sharded hard: the only nodes that may pass (:func:`hard_shard_of`).
        self.shard = shard
        self.error_cache_enabled = error_cache_enabled
        self.rotate = rotate
        self.error_cache: dict[str, dict[str, FitError]] = {}
        self.next_start = 0
        self._session_nodes = session_nodes
        # Built on the first scalar scan: the vectorised one never reads it.
        self._position: dict[str, int] | None = None

    def new_cache_scope(self) -> None:
        """Forget every cached predicate failure."""
        self.error_cache = {}

    def feasible_nodes(
        self, task: TaskInfo, nodes: Sequence[NodeInfo], predicate: PredicateFn
    ) -> tuple[list[NodeInfo], FitErrors]:
        """The nodes passing ``predicate`` (in session node order) and the others' errors."""
        errors = FitErrors()
        total = len(nodes)
        if total == 0:
            return [], errors
        use_cache = self.error_cache_enabled and bool(task.role)
        group = f"{task.job}/{task.role}"
        failed_before = group in self.error_cache
        cached = self.error_cache.get(group, {})
        wanted = self.nodes_to_find.count(total)
        shard = self.shard
        start = self.next_start % total if self.rotate else 0
        found: list[NodeInfo] = []
        processed = 0
        for offset in range(total):
            node = nodes[(start + offset) % total]
            processed += 1
            if use_cache and failed_before and node.name in cached:
                errors.set_node_error(node.name, cached[node.name])
                continue
            if shard is not None and node.name not in shard:
                # Volcano's PredicateNodes: a plain error (code Error), cached as any.
                err: FitError | None = FitError.of(task.namespace, task.name, node.name,
                                                   NOT_IN_SHARD)
            else:
                err = predicate(task, node)
            if err is not None:
                cached[node.name] = err
                self.error_cache[group] = cached
                errors.set_node_error(node.name, err)
                continue
            if len(found) >= wanted:
                # Volcano's PredicateNodes stores a feasible node only while fewer than
                # the number to find are stored: the next feasible one ends the scan,
                # examined (the rotation passes it) but not kept.
                break
            found.append(node)
        if self.rotate:
            self.next_start = (start + processed) % total
        position = self._position
        if position is None:
            position = self._position = {
                node.name: i for i, node in enumerate(self._session_nodes)}
        found.sort(key=lambda n: position.get(n.name, len(position)))
        return found, errors
