"""gpu-packing: partly used GPUs first, then partly used nodes (the FGD paper's GpuPacking).

CPU-only tasks score 0. On a node whose GPUs are all free: ``max(33 - F, F)``
(``F`` free GPUs). Else the GPUs the task would take decide (the first that fit,
by ascending free milli): when ``k`` of them are entirely free ``max(50 - k,
33)``; when none, ``max(100 - sum(free x 100 / 1000) / 10, 50)`` (integer
divisions); times ``gpu-packing.weight`` (default 1). Devices: the node's
default choice, which are the GPUs the score assumes.
"""

from __future__ import annotations

import numpy as np

from batchsched.api.devices import GPU_MILLI, gpu_ask
from batchsched.api.node import NodeInfo
from batchsched.api.task import TaskInfo
from batchsched.columnar.gpu_columns import GpuColumns, GpuScorePolicy, IntArray
from batchsched.columnar.node_columns import FloatArray

__all__ = ["PackingPlugin"]


class PackingPlugin(GpuScorePolicy):
    """``gpu-packing`` (see the module docstring)."""

    name = "gpu-packing"

    def score(self, task: TaskInfo, node: NodeInfo) -> int:
        ask = gpu_ask(task.resreq, strict=False)
        free = node.gpu_free or []
        if ask is None or not free:
            return 0
        whole = sum(1 for left in free if left == GPU_MILLI)
        if whole == len(free):
            return max(33 - whole, whole)
        need = GPU_MILLI if ask.whole else ask.milli
        taken = [left for left in sorted(free) if left >= need][:ask.count]
        fully = sum(1 for left in taken if left == GPU_MILLI)
        if fully:
            return max(50 - fully, 33)
        return max(100 - sum(left * 100 // GPU_MILLI for left in taken) // 10, 50)

    def rows(self, gpus: GpuColumns, task: TaskInfo, rows: IntArray) -> FloatArray:
        ask = gpu_ask(task.resreq, strict=False)
        if ask is None:
            return np.zeros(len(rows))
        free = gpus.free[rows]
        count = gpus.device_count[rows]
        whole = (free == GPU_MILLI).sum(axis=1)
        all_free = np.maximum(33 - whole, whole)
        if ask.whole:
            # A whole-GPU task takes entirely free GPUs only: k of them, at most its count.
            taken = np.minimum(whole, ask.count)
            partly = np.where(taken > 0, np.maximum(50 - taken, 33), 100)
        else:
            tightest = np.where(free >= ask.milli, free, GPU_MILLI + 1).min(axis=1)
            partly = np.where(
                tightest > GPU_MILLI, 100,
                np.where(tightest == GPU_MILLI, max(50 - 1, 33),
                         np.maximum(100 - (tightest * 100 // GPU_MILLI) // 10, 50)))
        scores = np.where(count == 0, 0, np.where(whole == count, all_free, partly))
        result: FloatArray = scores.astype(np.float64)
        return result
