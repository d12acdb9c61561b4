"""Array versions of the node scores, equal element for element to the scalar ones.

Each function here is the vectorised twin of a scalar reference in
:mod:`batchsched.plugins.nodeorder` or :mod:`batchsched.plugins.binpack`, with
the same integer arithmetic (``int64``, floor division on non-negative
operands, as Go's and Python's) or the same float operations in the same order,
so that the results are bit for bit those of the scalar functions. The callers
guarantee the integer inputs are small enough for ``int64`` products
(:data:`batchsched.columnar.kube_columns.LARGE`).

``tests/columnar/test_scores.py`` checks every function against its
reference on random inputs.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from batchsched.kube.go_strconv import int64

__all__ = [
    "balanced_allocation_many",
    "balanced_allocation_vector",
    "binpack_many",
    "binpack_vector",
    "default_normalize_vector",
    "inter_pod_affinity_normalize_vector",
    "least_allocated_many",
    "least_allocated_vector",
    "most_allocated_vector",
]

IntArray = npt.NDArray[np.int64]
FloatArray = npt.NDArray[np.float64]
BoolArray = npt.NDArray[np.bool_]

MAX_NODE_SCORE = 100

#: Below this, ``100 * amount // allocatable`` may be computed in float64 exactly.
FLOAT_DIVISION_LIMIT = 2**46


def _column(values: Sequence[int]) -> IntArray:
    return np.array(values, dtype=np.int64).reshape(-1, 1)


def _weighted_average(scores: IntArray, has: BoolArray | None, weights: Sequence[int]) -> IntArray:
    """``sum(score * weight) // sum(weight)`` per node over the resources (rows) the node
    has (``has``; None: all of them); 0 for a node with none. Integer sums are exact,
    so the order of the additions does not matter."""
    if has is None:
        total = sum(weights)
        if not total:
            return np.zeros(scores.shape[1:], dtype=np.int64)
        # Row by row rather than np.dot: integer dot products have no fast kernel.
        weighted: IntArray = scores[0] * weights[0]
        for row in range(1, len(weights)):
            weighted += scores[row] * weights[row]
        weighted //= total
        return weighted
    score = np.zeros(scores.shape[1], dtype=np.int64)
    weight_sums = np.zeros(scores.shape[1], dtype=np.int64)
    for row, weight in enumerate(weights):
        score += np.where(has[row], scores[row] * weight, 0)
        weight_sums += has[row] * weight
    return np.where(weight_sums > 0, score // np.maximum(weight_sums, 1), 0)


def _present(allocatable: IntArray, everywhere: bool | None) -> BoolArray | None:
    """Which (resource, node) entries have allocatable > 0; None when all do."""
    if everywhere:
        return None
    has: BoolArray = allocatable != 0
    return None if bool(has.all()) else has


def least_allocated_vector(
    request: Sequence[int], used: IntArray, allocatable: IntArray,
    weights: Sequence[int] = (50, 50), *, everywhere: bool | None = None,
    small: bool = False,
) -> IntArray:
    """``nodeorder.least_allocated`` for every node at once.

    ``used`` and ``allocatable`` have one row per resource (in ``request``'s order)
    and one column per node; ``everywhere=True`` promises every allocatable is > 0,
    ``small=True`` that every allocatable is below :data:`FLOAT_DIVISION_LIMIT` (the
    division is then done in float64, faster than int64 and with the same result).
    """
    has = _present(allocatable, everywhere)
    free = allocatable - used
    free -= _column(request)
    if has is None and small:
        return _least_allocated_small(free, allocatable, weights)
    free *= MAX_NODE_SCORE
    # (alloc - requested) * 100 // alloc is negative exactly when requested > alloc
    # (alloc >= 1), where the score is 0.
    free //= allocatable if has is None else np.where(has, allocatable, 1)
    np.maximum(free, 0, out=free)
    return _weighted_average(free, has, weights)


def _least_allocated_small(free: IntArray, allocatable: IntArray,
                           weights: Sequence[int]) -> IntArray:
    """least-allocated from the free amounts (rows: resources), with every allocatable
    above 0 and below :data:`FLOAT_DIVISION_LIMIT`.

    0 <= free <= allocatable < 2**46 once clipped (used and request are >= 0): 100 *
    free is exact in float64, and a quotient at most 100 lies further than half an
    ulp from the next integer, so the floor of the float quotient is the integer one.
    """
    np.maximum(free, 0, out=free)
    ratio = free * float(MAX_NODE_SCORE)
    ratio /= allocatable
    np.floor(ratio, out=ratio)
    return _weighted_average(ratio.astype(np.int64), None, weights)


def most_allocated_vector(
    request: Sequence[int], used: IntArray, allocatable: IntArray,
    weights: Sequence[int] = (1, 1), *, everywhere: bool | None = None,
) -> IntArray:
    """``nodeorder.most_allocated`` for every node at once (rows as for least)."""
    has = _present(allocatable, everywhere)
    safe = allocatable if has is None else np.where(has, allocatable, 1)
    scores = np.minimum(used + _column(request), allocatable) * MAX_NODE_SCORE // safe
    return _weighted_average(scores, has, weights)


def balanced_allocation_vector(
    request: Sequence[int], used: IntArray, allocatable: IntArray,
    extended: Sequence[bool] = (False, False, True), *, everywhere: bool | None = None,
) -> IntArray:
    """``nodeorder.balanced_allocation`` for every node at once (rows as for least).

    The scalar function keeps, per node, the fractions of the resources the node
    has (and, for an extended resource, the task asks for), then takes half the
    difference of two fractions or the population standard deviation of three;
    here each case is computed with the same float operations and chosen per node,
    with the task's requests and without them.
    ``everywhere=True`` promises every non-extended resource is on every node.
    """
    rows = [r for r, req in enumerate(request) if not (extended[r] and req == 0)]
    if everywhere and rows == [0, 1] and not extended[0] and not extended[1]:
        return _balanced_pair(used[:2] + _column(request[:2]), used[:2], allocatable[:2])
    size = used.shape[1]
    with_task = _balance_vector([used[r] + request[r] for r in rows],
                                [allocatable[r] for r in rows], size)
    without = _balance_vector([used[r] for r in rows], [allocatable[r] for r in rows], size)
    return _change_of_balance(with_task, without)


def _balance_vector(requested: list[IntArray], allocatable: list[IntArray],
                    size: int) -> IntArray:
    """``nodeorder.balance_score`` per node of the rows given (a node lacking a row's
    resource leaves it out)."""
    fractions_by_row: list[FloatArray] = []
    kept: list[BoolArray] = []
    for wanted, alloc in zip(requested, allocatable, strict=True):
        keep = alloc != 0
        if not keep.any():
            continue
        denominator = np.where(keep, alloc, 1).astype(np.float64)
        fraction = np.minimum(wanted.astype(np.float64) / denominator, 1.0)
        fractions_by_row.append(fraction)
        kept.append(keep)
    std = np.zeros(size)
    if len(fractions_by_row) >= 2:
        count = np.sum(kept, axis=0)
        pairs = [(0, 1)] if len(fractions_by_row) == 2 else [(0, 1), (0, 2), (1, 2)]
        for first, second in pairs:
            chosen = (count == 2) & kept[first] & kept[second]
            if chosen.any():
                std[chosen] = np.abs(
                    (fractions_by_row[first][chosen] - fractions_by_row[second][chosen]) / 2)
        if len(fractions_by_row) == 3:
            every = count == 3
            if every.any():
                parts = [f[every] for f in fractions_by_row]
                total = ((0.0 + parts[0]) + parts[1]) + parts[2]
                mean = total / 3
                squares = 0.0 + (parts[0] - mean) * (parts[0] - mean)
                squares = squares + (parts[1] - mean) * (parts[1] - mean)
                squares = squares + (parts[2] - mean) * (parts[2] - mean)
                std[every] = np.sqrt(squares / 3)
    return np.trunc((1 - std) * MAX_NODE_SCORE).astype(np.int64)


def _change_of_balance(with_task: IntArray, without: IntArray) -> IntArray:
    """Kubernetes 1.36's BalancedAllocation from the two balances (each 50..100)."""
    half = MAX_NODE_SCORE // 2
    score: IntArray = half + (half + with_task - without) // 2
    return score


def _pair_balance(requested: IntArray, allocatable: IntArray) -> IntArray:
    """The balance of cpu and memory only (rows 0 and 1; every allocatable above 0):
    half the difference of the two fractions, each at most 1."""
    fractions: FloatArray = requested / allocatable
    np.minimum(fractions, 1.0, out=fractions)
    spread = fractions[0] - fractions[1]
    spread /= 2
    np.abs(spread, out=spread)
    score = 1 - spread
    score *= MAX_NODE_SCORE
    np.trunc(score, out=score)
    pair: IntArray = score.astype(np.int64)
    return pair


def _balanced_pair(requested: IntArray, used: IntArray, allocatable: IntArray) -> IntArray:
    """balanced-allocation from cpu and memory only, with the task (``requested``) and
    without it (``used``)."""
    return _change_of_balance(_pair_balance(requested, allocatable),
                              _pair_balance(used, allocatable))


def default_normalize_vector(scores: IntArray, *, reverse: bool) -> IntArray:
    """``nodeorder.default_normalize`` (kube-scheduler's ``DefaultNormalizeScore``)."""
    top = max(0, int(scores.max())) if len(scores) else 0
    if top == 0:
        if reverse:
            return np.full(len(scores), MAX_NODE_SCORE, dtype=np.int64)
        same: IntArray = scores.copy()
        return same
    # Go's integer division rounds toward zero (a negative score rounds up).
    scaled = MAX_NODE_SCORE * scores
    out: IntArray = np.where(scaled < 0, -(-scaled // top), scaled // top)
    if reverse:
        out = MAX_NODE_SCORE - out
    return out


def inter_pod_affinity_normalize_vector(scores: IntArray) -> IntArray:
    """``nodeorder.inter_pod_affinity_normalize``: min-max scaling, float, truncated."""
    if not len(scores):
        return np.zeros(0, dtype=np.int64)
    low, high = int(scores.min()), int(scores.max())
    spread = high - low
    if spread <= 0:
        return np.zeros(len(scores), dtype=np.int64)
    scaled = float(MAX_NODE_SCORE) * ((scores - low).astype(np.float64) / float(spread))
    return np.trunc(scaled).astype(np.int64)


def binpack_vector(
    request: FloatArray, weights: Sequence[int], allocatable: FloatArray, used: FloatArray,
    *, weight_sum: int, plugin_weight: int, everywhere: bool | None = None,
) -> FloatArray:
    """``binpack.binpack_score`` for every node at once.

    ``request`` and ``weights`` list, in the scalar loop's order, each counted
    resource; ``allocatable`` and ``used`` have one row per such resource and one
    column per node (``everywhere=True`` promises no allocatable is 0). A node
    where some resource does not fit scores 0.
    """
    size = allocatable.shape[1]
    count = len(weights)
    if not count:
        return np.zeros(size)
    final = used + request.reshape(-1, 1)
    if everywhere is None:
        everywhere = bool((allocatable != 0).all())
    if everywhere:
        parts = final * np.array(weights, dtype=np.float64).reshape(-1, 1)
        parts /= allocatable
        over = final > allocatable
    else:
        present = allocatable != 0
        with np.errstate(divide="ignore", invalid="ignore"):
            parts = final * np.array(weights, dtype=np.float64).reshape(-1, 1) / allocatable
        parts = np.where(present, parts, 0.0)
        over = (final > allocatable) & present
    return _binpack_total(parts, over, weights, weight_sum, plugin_weight)


def _binpack_total(parts: FloatArray, over: BoolArray, weights: Sequence[int],
                   weight_sum: int, plugin_weight: int) -> FloatArray:
    """binpack's score from each counted resource's weighted fraction (``parts``, first
    axis the resources) and whether it overflows (``over``): the sum in the scalar
    loop's order, over the weight sum, times 100 and the plugin weight; 0 where some
    resource does not fit."""
    if 0 in weights:
        zero_weight = [row for row, weight in enumerate(weights) if weight == 0]
        parts[zero_weight] = 0.0
        over[zero_weight] = False
    score = parts[0]
    misfit = over[0]
    for row in range(1, len(weights)):
        score = score + parts[row]
        misfit = misfit | over[row]
    if weight_sum > 0:
        score = score / weight_sum
    # float64(MaxNodeScore * int64(weight)): one product, made of integers first.
    score = score * float(int64(MAX_NODE_SCORE * plugin_weight))
    np.putmask(score, misfit, 0.0)
    result: FloatArray = score
    return result


# -- several requests at once --------------------------------------------------------------
#
# Row k of each function below is the single-request function's answer for requests[k]:
# the same operations on the same numbers, with the requests along a middle axis (shape
# [resources, requests, nodes]). Only the common cases are covered (the callers use the
# single-request functions otherwise).


def least_allocated_many(
    requests: IntArray, used: IntArray, allocatable: IntArray,
    weights: Sequence[int] = (50, 50),
) -> IntArray:
    """:func:`least_allocated_vector` with ``everywhere=True, small=True`` for each
    column of ``requests`` (shape ``[resources, requests]``): shape ``[requests, nodes]``."""
    free = (allocatable - used)[:, None, :] - requests[:, :, None]
    return _least_allocated_small(free, allocatable[:, None, :], weights)


def balanced_allocation_many(
    requests: IntArray, used: IntArray, allocatable: IntArray
) -> IntArray:
    """:func:`balanced_allocation_vector` with ``everywhere=True`` for requests of cpu and
    memory only (``requests`` shape ``[2, requests]``, no GPU asked): ``[requests, nodes]``."""
    return _balanced_pair(used[:2][:, None, :] + requests[:2][:, :, None],
                          used[:2][:, None, :], allocatable[:2][:, None, :])


def binpack_many(
    requests: FloatArray, weights: Sequence[int], allocatable: FloatArray, used: FloatArray,
    *, weight_sum: int, plugin_weight: int,
) -> FloatArray:
    """:func:`binpack_vector` with ``everywhere=True`` for each column of ``requests``
    (shape ``[resources, requests]``): shape ``[requests, nodes]``."""
    count = len(weights)
    if not count:
        return np.zeros((requests.shape[1], allocatable.shape[1]))
    final = used[:, None, :] + requests[:, :, None]
    parts = final * np.array(weights, dtype=np.float64).reshape(-1, 1, 1)
    parts /= allocatable[:, None, :]
    over = final > allocatable[:, None, :]
    return _binpack_total(parts, over, weights, weight_sum, plugin_weight)
