"""gpu-clustering: tasks of one kind together (the FGD paper's GpuClustering).

A task's kind is a share of one GPU, ``<count>`` whole GPUs, or CPU-only (which
scores 0 everywhere). ``base = 25 x (MAX_GPU - gpu_left) / MAX_GPU`` (integer,
toward zero; ``gpu_left`` the free milli over the node's GPUs, ``MAX_GPU``
8,000); on a node whose GPU tasks are all of the task's kind ``base + 75``,
whose GPU tasks include that kind ``base + 50``, without GPU tasks ``base +
25``, else ``base``; times ``gpu-clustering.weight`` (default 1). Devices: the
node's default choice.
"""

from __future__ import annotations

import numpy as np

from batchsched.api.devices import MAX_NODE_GPU, gpu_ask, gpu_tag, trunc_div
from batchsched.api.node import NodeInfo
from batchsched.api.task import TaskInfo
from batchsched.api.types import TaskStatus
from batchsched.columnar.gpu_columns import (
    GpuColumns,
    GpuScorePolicy,
    IntArray,
    trunc_div_rows,
)
from batchsched.columnar.node_columns import FloatArray
from batchsched.framework.arguments import Arguments
from batchsched.framework.session import Session

__all__ = ["ClusteringPlugin", "node_kinds"]


def _kind(task: TaskInfo) -> int:
    return gpu_tag(gpu_ask(task.resreq, strict=False))


def node_kinds(node: NodeInfo) -> int:
    """The kinds of the GPU tasks on the node, as bits (:func:`gpu_tag`)."""
    mask = 0
    for task in node.tasks.values():
        if task.status != TaskStatus.PIPELINED:
            mask |= _kind(task)
    return mask


class ClusteringPlugin(GpuScorePolicy):
    """``gpu-clustering`` (see the module docstring)."""

    name = "gpu-clustering"

    def __init__(self, arguments: Arguments) -> None:
        super().__init__(arguments)
        self._kinds: tuple[GpuColumns, IntArray, IntArray] | None = None

    def on_session_open(self, ssn: Session) -> None:
        self._kinds = None
        super().on_session_open(ssn)

    def on_session_close(self, ssn: Session) -> None:
        self._kinds = None

    def score(self, task: TaskInfo, node: NodeInfo) -> int:
        kind = _kind(task)
        if not kind:
            return 0
        base = trunc_div(25 * (MAX_NODE_GPU - sum(node.gpu_free or ())), MAX_NODE_GPU)
        kinds = node_kinds(node)
        if kinds & kind:
            return base + (75 if kinds == kind else 50)
        return base + (25 if kinds == 0 else 0)

    def rows(self, gpus: GpuColumns, task: TaskInfo, rows: IntArray) -> FloatArray:
        kind = _kind(task)
        if not kind:
            return np.zeros(len(rows))
        base = trunc_div_rows(25 * (MAX_NODE_GPU - gpus.gpu_left()[rows]), MAX_NODE_GPU)
        kinds = self._node_kinds(gpus)[rows]
        bonus = np.where((kinds & kind) != 0, np.where(kinds == kind, 75, 50),
                         np.where(kinds == 0, 25, 0))
        scores: FloatArray = (base + bonus).astype(np.float64)
        return scores

    def _node_kinds(self, gpus: GpuColumns) -> IntArray:
        """Every node's kinds, re-read for the rows that changed."""
        if self._kinds is None or self._kinds[0] is not gpus:
            size = len(gpus.nodes)
            self._kinds = (gpus, np.zeros(size, dtype=np.int64),
                           np.full(size, -1, dtype=np.int64))
        _, kinds, versions = self._kinds
        for i in np.flatnonzero(versions != gpus.row_version).tolist():
            kinds[i] = node_kinds(gpus.nodes[i])
        versions[:] = gpus.row_version
        return kinds
