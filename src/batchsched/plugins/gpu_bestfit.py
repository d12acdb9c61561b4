"""gpu-bestfit: the node the task leaves least free (the FGD paper's BestFit).

``raw = int((1 - (0.5 x (cpu_left - cpu)/MAX_CPU + 0.5 x (gpu_left - gpu)/MAX_GPU))
x 100)`` (``cpu_left`` idle cpu, ``gpu_left`` free GPU milli, ``cpu`` and ``gpu``
the task's asks, ``MAX_CPU`` 128,000, ``MAX_GPU`` 8,000), normalised over the
candidates as kube-scheduler's NormalizeScore does: ``(raw - lowest) x 100 /
(highest - lowest)`` (integer, toward zero; 0 when all are equal), times
``gpu-bestfit.weight`` (default 1). A batch node-order score, since it needs
every candidate. Devices: the node's default choice.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from batchsched import columnar
from batchsched.api.devices import MAX_NODE_CPU, MAX_NODE_GPU, gpu_milli_asked, trunc_div
from batchsched.api.node import NodeInfo
from batchsched.api.task import TaskInfo
from batchsched.columnar.gpu_columns import GpuColumns, trunc_div_rows
from batchsched.columnar.node_columns import Candidates, FloatArray, NodeColumns
from batchsched.framework.arguments import Arguments
from batchsched.framework.session import Session

__all__ = ["BestFitPlugin"]


class BestFitPlugin:
    """``gpu-bestfit`` (see the module docstring)."""

    name = "gpu-bestfit"

    def __init__(self, arguments: Arguments) -> None:
        self.weight = arguments.get_int(f"{self.name}.weight", 1, owner=self.name)
        arguments.warn_unknown(self.name, [f"{self.name}.weight"])

    def on_session_open(self, ssn: Session) -> None:
        if not self.weight:
            return
        ssn.add_batch_node_order_fn(self.name, self.batch_scores)

        def column_form(task: TaskInfo, columns: NodeColumns,
                        candidates: Candidates) -> FloatArray:
            return self.column_scores(GpuColumns.of(ssn), task, candidates)

        columnar.add_batch_node_order_fn(ssn, self.name, column_form)

    def on_session_close(self, ssn: Session) -> None:
        """Nothing to write back."""

    @staticmethod
    def raw(task: TaskInfo, node: NodeInfo) -> int:
        cpu, gpu = task.resreq.milli_cpu, gpu_milli_asked(task.resreq)
        cpu_left, gpu_left = node.idle.milli_cpu, sum(node.gpu_free or ())
        return int((1 - (0.5 * (cpu_left - cpu) / MAX_NODE_CPU
                         + 0.5 * (gpu_left - gpu) / MAX_NODE_GPU)) * 100)

    def batch_scores(self, task: TaskInfo, nodes: Sequence[NodeInfo]) -> dict[str, float]:
        raws = [self.raw(task, node) for node in nodes]
        if not raws:
            return {}
        low, high = min(raws), max(raws)
        return {node.name: float(0 if high == low else
                                 trunc_div((raw - low) * 100, high - low) * self.weight)
                for node, raw in zip(nodes, raws, strict=True)}

    def column_scores(self, gpus: GpuColumns, task: TaskInfo,
                      candidates: Candidates) -> FloatArray:
        rows = candidates.indices
        cpu, gpu = task.resreq.milli_cpu, gpu_milli_asked(task.resreq)
        cpu_left = gpus.cpu_left[rows]
        gpu_left = gpus.gpu_left()[rows]
        raws = np.trunc((1 - (0.5 * (cpu_left - cpu) / MAX_NODE_CPU
                              + 0.5 * (gpu_left - gpu) / MAX_NODE_GPU)) * 100).astype(np.int64)
        if not len(raws) or int(raws.max()) == int(raws.min()):
            return np.zeros(len(raws))
        low, high = int(raws.min()), int(raws.max())
        normalised = trunc_div_rows((raws - low) * 100, high - low) * self.weight
        result: FloatArray = normalised.astype(np.float64)
        return result
