"""The session's GPUs as arrays: the free milli of every device of every node.

The column mirror the ``deviceshare`` plugin and the GPU placement policies
(``gpu-*``, ``fgd``) read. Rows follow the
session's node order; a node with fewer GPUs than the widest has its missing
devices at 0 free, which no ask fits and every sum ignores. A row is read again
from its node whenever the node's ``mutations`` count moved
(:class:`~batchsched.columnar.row_mirror.RowMirror`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt

from batchsched.api.devices import GPU_MILLI
from batchsched.api.node import NodeInfo
from batchsched.api.task import TaskInfo
from batchsched.columnar.forms import add_node_order_fn
from batchsched.columnar.node_columns import FloatArray
from batchsched.columnar.row_mirror import RowMirror
from batchsched.framework.arguments import Arguments

if TYPE_CHECKING:
    from batchsched.framework.session import Session

__all__ = ["GpuColumns", "GpuScorePolicy", "IntArray", "register_gpu_score", "trunc_div_rows"]

_EXTRA_KEY = "batchsched.columnar.gpu_columns"

IntArray = npt.NDArray[np.int64]


class GpuColumns(RowMirror):
    """``free[i, d]``: free milli of device ``d`` of node ``i``; ``cpu_left[i]``: its idle cpu."""

    extra_key = _EXTRA_KEY

    def __init__(self, nodes: list[NodeInfo]) -> None:
        super().__init__(nodes)
        width = max((len(node.gpu_free or ()) for node in nodes), default=0)
        self.free: IntArray = np.zeros((len(nodes), max(width, 1)), dtype=np.int64)
        self.cpu_left = np.zeros(len(nodes))
        self.device_count: IntArray = np.array([len(node.gpu_free or ()) for node in nodes],
                                               dtype=np.int64)

    def read_row(self, i: int, node: NodeInfo) -> None:
        free = node.gpu_free or ()
        self.free[i, :len(free)] = free
        self.cpu_left[i] = node.idle.milli_cpu

    def gpu_left(self) -> IntArray:
        """Free milli over each node's devices."""
        summed: IntArray = self.free.sum(axis=1)
        return summed

    def whole_free(self) -> IntArray:
        """How many devices of each node are entirely free."""
        counted: IntArray = (self.free == GPU_MILLI).sum(axis=1)
        return counted


def trunc_div_rows(numerator: IntArray, denominator: int) -> IntArray:
    """:func:`batchsched.api.devices.trunc_div` over an array."""
    quotient: IntArray = np.abs(numerator) // denominator
    return np.where(numerator >= 0, quotient, -quotient)


def register_gpu_score(
    ssn: Session, plugin: str, weight: int,
    scalar: Callable[[TaskInfo, NodeInfo], int],
    rows: Callable[[GpuColumns, TaskInfo, IntArray], FloatArray],
) -> None:
    """Register a GPU policy's integer node score, times ``weight``: the scalar
    reference and its column form (``rows`` scores the given node rows)."""
    ssn.add_node_order_fn(plugin, lambda task, node: float(scalar(task, node) * weight))
    add_node_order_fn(ssn, plugin, lambda task, columns, candidates: rows(
        GpuColumns.of(ssn), task, candidates.indices) * weight)


class GpuScorePolicy:
    """Base of the GPU placement policies that score one node at a time: an integer
    ``score`` (the reference) and its column form ``rows``, registered times the
    ``<name>.weight`` argument (default 1; 0 registers nothing)."""

    name = ""

    def __init__(self, arguments: Arguments) -> None:
        self.weight = arguments.get_int(f"{self.name}.weight", 1, owner=self.name)
        arguments.warn_unknown(self.name, [f"{self.name}.weight"])

    def on_session_open(self, ssn: Session) -> None:
        if self.weight:
            register_gpu_score(ssn, self.name, self.weight, self.score, self.rows)

    def on_session_close(self, ssn: Session) -> None:
        """Nothing to write back."""

    def score(self, task: TaskInfo, node: NodeInfo) -> int:
        raise NotImplementedError

    def rows(self, gpus: GpuColumns, task: TaskInfo, rows: IntArray) -> FloatArray:
        raise NotImplementedError
