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

from batchsched.api.devices import MAX_NODE_CPU, MAX_NODE_GPU, gpu_ask
from batchsched.api.node import NodeInfo
from batchsched.api.task import TaskInfo
from batchsched.columnar.gpu_columns import GpuColumns, IntArray, register_gpu_score
from batchsched.columnar.node_columns import FloatArray
from batchsched.framework.arguments import Arguments
from batchsched.framework.session import Session

__all__ = ["DotProductPlugin"]


def _asked(task: TaskInfo) -> int:
    ask = gpu_ask(task.resreq, strict=False)
    return 0 if ask is None else ask.total


class DotProductPlugin:
    """``gpu-dotprod`` (see the module docstring)."""

    name = "gpu-dotprod"

    def __init__(self, arguments: Arguments) -> None:
        self.weight = arguments.get_int(f"{self.name}.weight", 1, owner=self.name)

    def on_session_open(self, ssn: Session) -> None:
        if self.weight:
            register_gpu_score(ssn, self.name, self.weight, self.score, self.rows)

    def on_session_close(self, ssn: Session) -> None:
        """Nothing to write back."""

    @staticmethod
    def score(task: TaskInfo, node: NodeInfo) -> int:
        cpu, gpu = task.resreq.milli_cpu, _asked(task)
        cpu_left, gpu_left = node.idle.milli_cpu, sum(node.gpu_free or ())
        if cpu_left < cpu:
            return 0
        dot = (cpu_left / MAX_NODE_CPU * (cpu / MAX_NODE_CPU)
               + gpu_left / MAX_NODE_GPU * (gpu / MAX_NODE_GPU))
        return int(100 * (1 - dot / 2))

    @staticmethod
    def rows(gpus: GpuColumns, task: TaskInfo, rows: IntArray) -> FloatArray:
        cpu, gpu = task.resreq.milli_cpu, _asked(task)
        cpu_left = gpus.cpu_left[rows]
        gpu_left = gpus.gpu_left()[rows]
        dot = (cpu_left / MAX_NODE_CPU * (cpu / MAX_NODE_CPU)
               + gpu_left / MAX_NODE_GPU * (gpu / MAX_NODE_GPU))
        scores: FloatArray = np.where(cpu_left < cpu, 0.0, np.trunc(100 * (1 - dot / 2)))
        return scores
