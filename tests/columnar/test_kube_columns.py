"""The Kubernetes node view's arrays, built in one pass over the views, are those of
a refresh node by node (the reference), whatever the nodes hold."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from batchsched.api import Resource
from batchsched.api.node import NodeInfo
from batchsched.api.task import TaskInfo
from batchsched.api.types import TaskStatus
from batchsched.columnar.kube_columns import KubeColumns
from batchsched.columnar.node_columns import NodeColumns
from batchsched.kube.pod_view import KubeView

_POD = st.tuples(st.sampled_from([0, 100, 1000, 2**53]),  # milli cpu (2**53: too large)
                 st.sampled_from([0, 2**20, 2**30]),  # memory
                 st.sampled_from([0, 1, 2]),  # GPUs
                 st.sampled_from([(), (8080,), (8080, 9090)]))  # host ports


@settings(max_examples=60, deadline=None)
@given(nodes=st.lists(st.tuples(st.integers(0, 4), st.lists(_POD, max_size=4), st.booleans()),
                      min_size=1, max_size=12))
def test_one_pass_is_the_node_by_node_refresh(
        nodes: list[tuple[int, list[tuple[int, int, int, tuple[int, ...]]], bool]]) -> None:
    infos: list[NodeInfo] = []
    for n, (max_pods, pods, _) in enumerate(nodes):
        node = NodeInfo.create(f"n{n}", Resource(64000.0, 2.0**40, {"pods": float(max_pods),
                                                               "nvidia.com/gpu": 8.0}))
        for p, (cpu, memory, gpu, ports) in enumerate(pods):
            task = TaskInfo.create("ns", f"n{n}-p{p}", "ns/job", Resource(
                float(cpu), float(memory), {"nvidia.com/gpu": float(gpu)} if gpu else {}),
                status=TaskStatus.RUNNING, host_ports=ports)
            node.add_task(task)
        infos.append(node)
    # A node the view does not hold (left out of the session's map) has no figures.
    view = KubeView({node.name: node for node, (_, _, seen) in zip(infos, nodes, strict=True)
                     if seen})
    mirror = KubeColumns(view, NodeColumns(infos))
    reference = KubeColumns(view, NodeColumns(infos))
    reference._figures[:] = 0
    reference.room[:] = False
    reference.port_nodes = set()
    reference.exact = True
    for i in range(len(infos)):
        reference._refresh(i)
    assert np.array_equal(mirror._figures, reference._figures)
    assert np.array_equal(mirror.room, reference.room)
    assert mirror.port_nodes == reference.port_nodes
    assert mirror.exact == reference.exact
    # Too large an amount (a pod of 2**53 millicores) leaves the arrays inexact.
    assert mirror.exact == (not any(pod[0] >= 2**52 for _, pods, seen in nodes if seen
                                    for pod in pods))
