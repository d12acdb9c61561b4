"""Node columns carried over to a later session's nodes, reading only the nodes that are
new objects or changed, hold what a mirror built afresh holds; when a fresh mirror
would have other dimensions (a resource name some node gained or every node lost),
the carry-over declines and a fresh mirror is built."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from batchsched.api import Resource
from batchsched.api.node import NodeInfo
from batchsched.api.task import TaskInfo
from batchsched.api.types import TaskStatus
from batchsched.columnar.node_columns import NodeColumns

_SCALARS = ("nvidia.com/gpu", "example.com/fpga")
_NODE = st.tuples(st.sets(st.sampled_from(_SCALARS)),  # allocatable scalars
                  st.lists(st.sampled_from((*_SCALARS, "")), max_size=3))  # tasks' scalar


def _node(name: str, scalars: set[str], tasks: list[str]) -> NodeInfo:
    allocatable = {"pods": 10.0, **{scalar: 4.0 for scalar in sorted(scalars)}}
    node = NodeInfo.create(name, Resource(8000.0, 2.0**34, allocatable))
    for t, scalar in enumerate(tasks):
        if scalar and scalar not in scalars:
            continue  # it would not fit
        request = {scalar: 1.0} if scalar else {}
        node.add_task(TaskInfo.create("ns", f"{name}-t{t}", "ns/job",
                                      Resource(1000.0, 2.0**30, request),
                                      status=TaskStatus.RUNNING))
    return node


@settings(max_examples=80, deadline=None)
@given(before=st.lists(_NODE, min_size=1, max_size=8),
       steps=st.lists(st.lists(st.tuples(st.integers(0, 7), _NODE), max_size=3),
                      min_size=1, max_size=4))
def test_a_carried_mirror_equals_a_fresh_one(
        before: list[tuple[set[str], list[str]]],
        steps: list[list[tuple[int, tuple[set[str], list[str]]]]]) -> None:
    nodes = [_node(f"n{i}", scalars, tasks) for i, (scalars, tasks) in enumerate(before)]
    carried = NodeColumns(nodes)
    for changes in steps:  # one session after the other
        nodes = list(nodes)
        for i, (scalars, tasks) in changes:
            if i < len(nodes):
                nodes[i] = _node(f"n{i}", scalars, tasks)
        fresh = NodeColumns(nodes)
        if not carried.carry_over(nodes, ()):
            assert fresh.dimensions != carried.dimensions
            carried = fresh  # as the next session does
            continue
        assert carried.dimensions == fresh.dimensions
        assert all(a is b for a, b in zip(carried.nodes, nodes, strict=True))
        np.testing.assert_array_equal(carried.allocatable, fresh.allocatable)
        np.testing.assert_array_equal(carried._moving, fresh._moving)
        np.testing.assert_array_equal(carried.task_count, fresh.task_count)
        assert carried.everywhere == fresh.everywhere
