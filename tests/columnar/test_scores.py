"""The array scores equal their scalar references on every node, bit for bit.

Random nodes include resources a node lacks (allocatable 0), requests beyond
allocatable, GPUs requested or not, and zero weights, so that every branch of
the scalar functions is met.
"""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from batchsched.api.resource import Resource
from batchsched.columnar.scores import (
    FLOAT_DIVISION_LIMIT,
    balanced_allocation_many,
    balanced_allocation_vector,
    binpack_many,
    binpack_vector,
    default_normalize_vector,
    inter_pod_affinity_normalize_vector,
    least_allocated_many,
    least_allocated_vector,
    most_allocated_vector,
)
from batchsched.plugins.binpack import binpack_score
from batchsched.plugins.nodeorder import (
    balanced_allocation,
    default_normalize,
    inter_pod_affinity_normalize,
    least_allocated,
    most_allocated,
)

amounts = st.integers(0, 5) | st.integers(0, 2**40)
small = st.integers(0, 64)


@st.composite
def nodes(draw: st.DrawFn, rows: int) -> tuple[list[int], np.ndarray, np.ndarray]:
    count = draw(st.integers(1, 12))
    scale = draw(st.sampled_from([amounts, small]))
    request = [draw(scale) for _ in range(rows)]
    used = np.array([[draw(scale) for _ in range(count)] for _ in range(rows)], dtype=np.int64)
    allocatable = np.array([[draw(scale) for _ in range(count)] for _ in range(rows)],
                           dtype=np.int64)
    return request, used, allocatable


def columns(array: np.ndarray) -> list[list[int]]:
    return [list(map(int, column)) for column in array.T]


@settings(max_examples=300, deadline=None)
@given(data=nodes(2), weights=st.sampled_from([(50, 50), (1, 1), (3, 0), (0, 0)]))
def test_least_and_most_allocated(data: tuple[list[int], np.ndarray, np.ndarray],
                                  weights: tuple[int, int]) -> None:
    request, used, allocatable = data
    everywhere = bool((allocatable != 0).all())
    for flag in (None, everywhere or None):
        least = least_allocated_vector(request, used, allocatable, weights, everywhere=flag)
        most = most_allocated_vector(request, used, allocatable, weights, everywhere=flag)
        for i, (use, alloc) in enumerate(zip(columns(used), columns(allocatable), strict=True)):
            assert least[i] == least_allocated(request, use, alloc, weights)
            assert most[i] == most_allocated(request, use, alloc, weights)


near_limit = st.integers(FLOAT_DIVISION_LIMIT - 2**20, FLOAT_DIVISION_LIMIT - 1)


@settings(max_examples=300, deadline=None)
@given(data=st.data(), weights=st.sampled_from([(50, 50), (1, 1), (3, 0)]))
def test_least_allocated_float_division(data: st.DataObject, weights: tuple[int, int]) -> None:
    """With every allocatable > 0 and below the limit, the float division gives the
    integer one's scores, near the limit and for quotients just below an integer."""
    count = data.draw(st.integers(1, 12))
    scale = data.draw(st.sampled_from([small, amounts, near_limit]))
    allocatable = np.array([[data.draw(scale) or 1 for _ in range(count)] for _ in range(2)],
                           dtype=np.int64)
    # used = allocatable - k * allocatable // 100 - 1 puts the quotient just below k.
    used = np.array([[max(0, int(a) - data.draw(st.integers(0, 100)) * int(a) // 100
                          - data.draw(st.integers(0, 2))) for a in row]
                     for row in allocatable], dtype=np.int64)
    request = [data.draw(st.integers(0, 3)) for _ in range(2)]
    got = least_allocated_vector(request, used, allocatable, weights, everywhere=True,
                                 small=True)
    for i, (use, alloc) in enumerate(zip(columns(used), columns(allocatable), strict=True)):
        assert got[i] == least_allocated(request, use, alloc, weights)


@settings(max_examples=300, deadline=None)
@given(data=nodes(3))
def test_balanced_allocation(data: tuple[list[int], np.ndarray, np.ndarray]) -> None:
    request, used, allocatable = data
    everywhere = bool((allocatable[:2] != 0).all())
    for flag in (None, everywhere or None):
        got = balanced_allocation_vector(request, used, allocatable, everywhere=flag)
        for i, (use, alloc) in enumerate(zip(columns(used), columns(allocatable), strict=True)):
            assert got[i] == balanced_allocation(request, use, alloc)


@settings(max_examples=200, deadline=None)
@given(raw=st.lists(st.integers(-500, 500), min_size=1, max_size=20), reverse=st.booleans())
def test_normalizations(raw: list[int], reverse: bool) -> None:
    scores = np.array(raw, dtype=np.int64)
    assert default_normalize_vector(scores, reverse=reverse).tolist() == default_normalize(
        raw, reverse=reverse)
    shifted = [v - 250 for v in raw]
    assert inter_pod_affinity_normalize_vector(
        np.array(shifted, dtype=np.int64)).tolist() == inter_pod_affinity_normalize(shifted)


def test_a_negative_score_is_divided_as_go_divides() -> None:
    """Go's integer division rounds toward zero: -100/3 is -33, not -34."""
    assert default_normalize([-1, 3], reverse=False) == [-33, 100]
    assert default_normalize_vector(np.array([-1, 3]), reverse=False).tolist() == [-33, 100]


@settings(max_examples=300, deadline=None)
@given(
    cpu=st.sampled_from([0.0, 100.0, 500.0, 2000.0, 1e6]),
    memory=st.sampled_from([0.0, 1.0, 2.0**30, 3e9]),
    gpu=st.sampled_from([None, 1000.0, 3000.0]),
    used=st.lists(st.tuples(st.sampled_from([0.0, 1000.0, 7500.0, 32000.0]),
                            st.sampled_from([0.0, 2.0**30, 1.2e11]),
                            st.sampled_from([0.0, 1000.0, 4000.0])), min_size=1, max_size=8),
    allocatable=st.sampled_from([(32000.0, 2.0**37, 8000.0), (0.0, 2.0**37, 0.0),
                                 (4000.0, 0.0, 2000.0)]),
    weights=st.sampled_from([{"cpu": 1, "memory": 1}, {"cpu": 2, "memory": 0},
                             {"cpu": 1, "memory": 3, "nvidia.com/gpu": 5}]),
    plugin_weight=st.sampled_from([1, 3]),
)
def test_binpack(*, cpu: float, memory: float, gpu: float | None,
                 used: list[tuple[float, float, float]], allocatable: tuple[float, float, float],
                 weights: dict[str, int], plugin_weight: int) -> None:
    request = Resource(cpu, memory, {"pods": 1.0, **({"nvidia.com/gpu": gpu} if gpu else {})})
    names = [n for n in request.resource_names() if request.get(n) and n in weights]
    dims = {"cpu": 0, "memory": 1, "nvidia.com/gpu": 2}
    rows = [dims[n] for n in names]
    capacity = np.array([list(allocatable)] * len(used)).T
    use = np.array(used).T
    got = binpack_vector(np.array([request.get(n) for n in names]), [weights[n] for n in names],
                         capacity[rows], use[rows], weight_sum=sum(weights[n] for n in names),
                         plugin_weight=plugin_weight)
    for i, (u_cpu, u_mem, u_gpu) in enumerate(used):
        node_alloc = Resource(allocatable[0], allocatable[1],
                              {"nvidia.com/gpu": allocatable[2]})
        node_used = Resource(u_cpu, u_mem, {"nvidia.com/gpu": u_gpu})
        assert got[i] == binpack_score(request, node_alloc, node_used, weights, plugin_weight)


# -- several requests at once ---------------------------------------------------------------


@st.composite
def many_requests(draw: st.DrawFn) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Several requests and nodes that all have some of every resource."""
    count = draw(st.integers(1, 10))
    tasks = draw(st.integers(1, 6))
    scale = draw(st.sampled_from([st.integers(0, 2**40), st.integers(0, 64)]))
    requests = np.array([[draw(scale) for _ in range(tasks)] for _ in range(2)], dtype=np.int64)
    used = np.array([[draw(scale) for _ in range(count)] for _ in range(2)], dtype=np.int64)
    allocatable = np.array([[draw(scale) + 1 for _ in range(count)] for _ in range(2)],
                           dtype=np.int64)
    return requests, used, allocatable


@settings(max_examples=200, deadline=None)
@given(data=many_requests(), weights=st.sampled_from([(50, 50), (1, 1), (3, 0), (0, 0)]))
def test_many_requests_give_the_single_request_rows(
    data: tuple[np.ndarray, np.ndarray, np.ndarray], weights: tuple[int, int]
) -> None:
    """Row k of each function for several requests is, bit for bit, the single-request
    function's answer for request k."""
    requests, used, allocatable = data
    least = least_allocated_many(requests, used, allocatable, weights)
    balanced = balanced_allocation_many(requests, used, allocatable)
    gpu_free = np.vstack([allocatable, np.ones((1, allocatable.shape[1]), dtype=np.int64)])
    floats = requests.astype(np.float64)
    binpack = binpack_many(floats, [2, 1], allocatable.astype(np.float64),
                           used.astype(np.float64), weight_sum=3, plugin_weight=2)
    for k in range(requests.shape[1]):
        request = [int(x) for x in requests[:, k]]
        assert np.array_equal(least[k], least_allocated_vector(
            request, used, allocatable, weights, everywhere=True, small=True))
        assert np.array_equal(balanced[k], balanced_allocation_vector(
            [*request, 0], np.vstack([used, np.zeros((1, used.shape[1]), dtype=np.int64)]),
            gpu_free, everywhere=True))
        assert np.array_equal(binpack[k], binpack_vector(
            floats[:, k], [2, 1], allocatable.astype(np.float64), used.astype(np.float64),
            weight_sum=3, plugin_weight=2, everywhere=True))
