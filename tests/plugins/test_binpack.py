"""binpack: Volcano's binpack_test.go (arguments and per-node scores) and the formula's
properties."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from node_support import document, open_session, plugin, scores

from batchsched.api import Resource
from batchsched.framework.arguments import Arguments
from batchsched.plugins.binpack import BinpackPlugin, binpack_score, resource_binpack_score


def test_arguments() -> None:
    p = BinpackPlugin(Arguments({
        "binpack.weight": 10, "binpack.cpu": 5, "binpack.memory": 2,
        "binpack.resources": "nvidia.com/gpu, example.com/foo",
        "binpack.resources.nvidia.com/gpu": 7, "binpack.resources.example.com/foo": -3,
    }))
    assert p.weight == 10
    assert p.resource_weights == {"nvidia.com/gpu": 7, "example.com/foo": 1, "cpu": 5,
                                  "memory": 2}


def test_resource_names_are_trimmed_as_go_trims_them() -> None:
    """``strings.TrimSpace`` keeps the information separators Python's strip removes."""
    p = BinpackPlugin(Arguments({"binpack.resources": "\tgpu\x1f , \x1e"}))
    assert p.resource_weights == {"gpu\x1f": 1, "\x1e": 1, "cpu": 1, "memory": 1}


def test_defaults_and_negative_cpu_memory_weights() -> None:
    assert BinpackPlugin(Arguments({})).resource_weights == {"cpu": 1, "memory": 1}
    p = BinpackPlugin(Arguments({"binpack.cpu": -1, "binpack.memory": 0}))
    assert p.resource_weights == {"cpu": 1, "memory": 0}


BODY = """
queues: [{name: c1}]
nodes:
- {name: n1, allocatable: {cpu: 2, memory: 4Gi, pods: 10}}
- {name: n2, allocatable: {cpu: 4, memory: 16Gi, pods: 10, nvidia.com/gpu: 4}}
- {name: n3, allocatable: {cpu: 2, memory: 4Gi, pods: 10, example.com/foo: 16}}
jobs: [{name: pg1, namespace: c1, queue: c1}]
tasks:
- {name: p1, namespace: c1, job: pg1, node: n1, requests: {cpu: 1, memory: 1Gi}}
- {name: p2, namespace: c1, job: pg1, node: n3, requests: {cpu: 1.5, memory: 0Gi}}
- {name: p3, namespace: c1, job: pg1, requests: {cpu: 2, memory: 10Gi, nvidia.com/gpu: 2}}
- {name: p4, namespace: c1, job: pg1, requests: {cpu: 3, memory: 4Gi, example.com/foo: 3}}
"""

NODE_CASES: list[tuple[dict[str, Any], dict[str, dict[str, float]]]] = [
    ({"binpack.weight": 10, "binpack.cpu": 2, "binpack.memory": 3,
      "binpack.resources": "nvidia.com/gpu, example.com/foo",
      "binpack.resources.nvidia.com/gpu": 7, "binpack.resources.example.com/foo": 8},
     {"c1/p1": {"n1": 700, "n2": 137.5, "n3": 0},      # n3 already uses 1.5 of 2 cpu
      "c1/p2": {"n1": 0, "n2": 375, "n3": 0},
      "c1/p3": {"n1": 0, "n2": 531.25, "n3": 0},
      "c1/p4": {"n1": 0, "n2": 173.076923076, "n3": 0}}),   # n1, n3: 3 cpu do not fit
    ({"binpack.weight": 1, "binpack.cpu": 1, "binpack.memory": 1,
      "binpack.resources": "nvidia.com/gpu", "binpack.resources.nvidia.com/gpu": 23},
     {"c1/p1": {"n1": 75, "n2": 15.625, "n3": 0},
      "c1/p2": {"n1": 0, "n2": 37.5, "n3": 0},
      "c1/p3": {"n1": 0, "n2": 50.5, "n3": 0},
      "c1/p4": {"n1": 0, "n2": 50, "n3": 0}}),
]


@pytest.mark.parametrize(("arguments", "expected"), NODE_CASES)
def test_node_scores(arguments: dict[str, Any], expected: dict[str, dict[str, float]]) -> None:
    got = scores(open_session(document(BODY, plugin("binpack", arguments))))
    for uid, per_node in expected.items():
        assert got[uid] == pytest.approx(per_node, abs=1e-6)


def test_weight_zero_registers_no_score() -> None:
    ssn = open_session(document(BODY, plugin("binpack", {"binpack.weight": 0})))
    assert "binpack" not in ssn.registered("node_order")


def test_worked_example_of_the_docs() -> None:
    # docs/plugins/binpack.md: 2 cpu / 4Gi used of 8 cpu / 16Gi, task 2 cpu / 4Gi,
    # weights cpu 2, memory 1, binpack.weight 10.
    score = binpack_score(Resource.from_mapping({"cpu": 2, "memory": "4Gi", "pods": 1}),
                          Resource.from_mapping({"cpu": 8, "memory": "16Gi", "pods": 110}),
                          Resource.from_mapping({"cpu": 2, "memory": "4Gi", "pods": 1}),
                          {"cpu": 2, "memory": 1}, 10)
    assert score == pytest.approx((4 / 8 * 2 + 8 / 16 * 1) / 3 * 1000)


milli = st.integers(min_value=0, max_value=100_000)


@given(request=milli, used=milli, capacity=milli, weight=st.integers(0, 10))
def test_resource_part_between_zero_and_weight(request: int, used: int, capacity: int,
                                               weight: int) -> None:
    part = resource_binpack_score(request, capacity, used, weight)
    if part is None:
        assert request + used > capacity > 0 and weight > 0
    else:
        assert 0 <= part <= weight + 1e-9


@given(cpu=st.integers(1, 4000), used_a=st.integers(0, 4000), used_b=st.integers(0, 4000))
def test_more_used_node_scores_at_least_as_high(cpu: int, used_a: int, used_b: int) -> None:
    low, high = sorted((used_a, used_b))
    request = Resource(cpu, 0, {"pods": 1})
    allocatable = Resource(8000, 0, {"pods": 110})
    weights = {"cpu": 1, "memory": 1}
    a = binpack_score(request, allocatable, Resource(low, 0), weights, 1)
    b = binpack_score(request, allocatable, Resource(high, 0), weights, 1)
    if high + cpu <= 8000:
        assert b >= a
