"""gpu-dotprod: the smallest dot product of free and asked resources (FGD paper's DotProd).

``score = int(100 x (1 - (cpu_left/MAX_CPU x cpu/MAX_CPU + gpu_left/MAX_GPU x
gpu/MAX_GPU) / 2))``, times ``gpu-dotprod.weight`` (default 1): ``cpu_left`` is
the node's idle cpu, ``gpu_left`` the free milli over its GPUs, ``cpu`` and
``gpu`` what the task asks (GPU milli in all); ``MAX_CPU`` 128,000 and
``MAX_GPU`` 8,000 are the largest node of the Alibaba cluster. A node with less
idle cpu than asked scores 0. Devices: the node's default choice.
"""

from __future__ import annotations

import numpy as np

from batchsched.api.devices import MAX_NODE_CPU, MAX_NODE_GPU, gpu_milli_asked
from batchsched.api.node import NodeInfo
from batchsched.api.task import TaskInfo
from batchsched.columnar.gpu_columns import GpuColumns, GpuScorePolicy, IntArray
from batchsched.columnar.node_columns import FloatArray

__all__ = ["DotProductPlugin"]


class DotProductPlugin(GpuScorePolicy):
    """``gpu-dotprod`` (see the module docstring)."""

    name = "gpu-dotprod"

    def score(self, task: TaskInfo, node: NodeInfo) -> int:
        cpu, gpu = task.resreq.milli_cpu, gpu_milli_asked(task.resreq)
        cpu_left, gpu_left = node.idle.milli_cpu, sum(node.gpu_free or ())
        if cpu_left < cpu:
            return 0
        dot = (cpu_left / MAX_NODE_CPU * (cpu / MAX_NODE_CPU)
               + gpu_left / MAX_NODE_GPU * (gpu / MAX_NODE_GPU))
        return int(100 * (1 - dot / 2))

    def rows(self, gpus: GpuColumns, task: TaskInfo, rows: IntArray) -> FloatArray:
        cpu, gpu = task.resreq.milli_cpu, gpu_milli_asked(task.resreq)
        cpu_left = gpus.cpu_left[rows]
        gpu_left = gpus.gpu_left()[rows]
        dot = (cpu_left / MAX_NODE_CPU * (cpu / MAX_NODE_CPU)
               + gpu_left / MAX_NODE_GPU * (gpu / MAX_NODE_GPU))
        scores: FloatArray = np.where(cpu_left < cpu, 0.0, np.trunc(100 * (1 - dot / 2)))
        return scores
