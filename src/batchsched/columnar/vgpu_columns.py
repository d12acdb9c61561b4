"""The session's vGPUs as arrays, and deviceshare's vGPU fit and score over every node.

``VgpuColumns`` mirrors each node's vGPU ledger (:class:`batchsched.api.vgpu.VgpuDevices`)
as ``(nodes, widest node's GPUs)`` arrays, a row re-read whenever its node's
``mutations`` count moved (:class:`~batchsched.columnar.row_mirror.RowMirror`; every
ledger change comes with a placement or removal on the node, which moves it).

:func:`vgpu_fit_rows` answers what :meth:`VgpuDevices.fit` answers, node by node, for
the common task: one container, no UUID, type, mode or pod-group spread annotation
(the scalar form answers the others). Whether a node fits does not depend on which
GPUs are taken first (each GPU is judged on its state before the task), so it is
"at least ``count`` GPUs pass"; the score sums the policy's score of the first
``count`` passing GPUs in the policy's order, in that order (the scalar sums the same
floats in the same order).
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import numpy.typing as npt

from batchsched.api.node import NodeInfo
from batchsched.api.vgpu import (
    BINPACK,
    MODE_ANNOTATION,
    NO_PERCENTAGE,
    NO_USE_TYPE_ANNOTATION,
    NO_USE_UUID_ANNOTATION,
    NVIDIA,
    PODGROUP_POLICY_ANNOTATION,
    SPREAD,
    USE_TYPE_ANNOTATION,
    USE_UUID_ANNOTATION,
    DeviceRequest,
)
from batchsched.columnar.forms import VectorFallback
from batchsched.columnar.row_mirror import RowMirror

__all__ = ["VgpuColumns", "vector_answerable", "vgpu_fit_rows"]

_EXTRA_KEY = "batchsched.columnar.vgpu_columns"
#: Annotations whose rules only the scalar form applies.
_SCALAR_ONLY = frozenset({MODE_ANNOTATION, USE_TYPE_ANNOTATION, NO_USE_TYPE_ANNOTATION,
                          USE_UUID_ANNOTATION, NO_USE_UUID_ANNOTATION})

#: Figures from here up are not all exact in float64 (the scalar form answers).
_EXACT_LIMIT = 2**52

IntArray = npt.NDArray[np.int64]
BoolArray = npt.NDArray[np.bool_]
FloatArray = npt.NDArray[np.float64]


def vector_answerable(annotations: Mapping[str, str],
                      requests: tuple[DeviceRequest, ...]) -> bool:
    """Whether :func:`vgpu_fit_rows` answers for a task with these annotations and
    requests (else the scalar form does)."""
    if len(requests) != 1 or any(r.type != NVIDIA for r in requests):
        return False
    if annotations.get(PODGROUP_POLICY_ANNOTATION) == SPREAD:
        return False
    return not any(key in annotations for key in _SCALAR_ONLY)


class VgpuColumns(RowMirror):
    """Per node ``i`` and GPU slot ``d``: whether the GPU exists, its memory and sharing
    count, what is used of it, and whether its type is an NVIDIA one."""

    extra_key = _EXTRA_KEY

    def __init__(self, nodes: list[NodeInfo]) -> None:
        super().__init__(nodes)
        width = max((len(node.vgpu.devices) for node in nodes if node.vgpu is not None),
                    default=0)
        shape = (len(nodes), max(width, 1))
        self.exists: BoolArray = np.zeros(shape, dtype=np.bool_)
        self.nvidia: BoolArray = np.zeros(shape, dtype=np.bool_)
        self.memory: IntArray = np.zeros(shape, dtype=np.int64)
        self.number: IntArray = np.zeros(shape, dtype=np.int64)
        self.used_memory: IntArray = np.zeros(shape, dtype=np.int64)
        self.used_num: IntArray = np.zeros(shape, dtype=np.int64)
        self.used_cores: IntArray = np.zeros(shape, dtype=np.int64)
        #: How many GPUs each node has (0: no vGPUs, where every task fits).
        self.device_count: IntArray = np.zeros(len(nodes), dtype=np.int64)

    def read_row(self, i: int, node: NodeInfo) -> None:
        devices = node.vgpu
        self.exists[i] = False
        self.device_count[i] = 0
        if devices is None:
            return
        self.device_count[i] = len(devices.devices)
        for slot, device in devices.devices.items():
            self.exists[i, slot] = True
            self.nvidia[i, slot] = NVIDIA in device.type
            self.memory[i, slot] = device.memory
            self.number[i, slot] = device.number
            self.used_memory[i, slot] = device.used_memory
            self.used_num[i, slot] = device.used_num
            self.used_cores[i, slot] = device.used_cores


def vgpu_fit_rows(columns: VgpuColumns, request: DeviceRequest, policy: str,
                  rows: IntArray | slice) -> tuple[BoolArray, FloatArray]:
    """Whether each node of ``rows`` serves one container's request, and the policy's
    score of the GPUs it would give (0 where it does not fit or has no vGPUs)."""
    device_count = columns.device_count[rows]
    scores = np.zeros(len(device_count))
    count = request.count
    if count <= 0:  # asks no GPU: fits everywhere, takes nothing
        return np.ones(len(device_count), dtype=np.bool_), scores
    memory = columns.memory[rows]
    if memory.size and int(memory.max()) >= _EXACT_LIMIT:
        # A GPU registering more memory than float64 counts exactly: the scalar form.
        raise VectorFallback("deviceshare: GPU memory too large for exact array arithmetic")
    used_memory = columns.used_memory[rows]
    used_num = columns.used_num[rows]
    used_cores = columns.used_cores[rows]
    if request.memory_percentage != NO_PERCENTAGE:
        # float64(memory) * float64(percentage) / 100, truncated, as Volcano computes it.
        asked = (memory.astype(np.float64) * float(request.memory_percentage)
                 / 100.0).astype(np.int64)
    else:
        asked = np.full(memory.shape, request.memory, dtype=np.int64)
    cores = request.cores
    # A request's type is NVIDIA's: the GPU's type must name it.
    passing = (columns.exists[rows] & columns.nvidia[rows]
               & (columns.number[rows] > used_num)
               & (memory - used_memory >= asked) & (used_cores + cores <= 100))
    if cores == 100:
        passing &= used_num == 0
    if cores == 0:
        passing &= used_cores != 100
    has_vgpus = device_count > 0
    fits = ~has_vgpus | ((count <= device_count) & (passing.sum(axis=1) >= count))
    if policy != BINPACK:
        # spread scores a GPU unused before the task, read after it is counted: 0; no
        # policy scores 0.
        return fits, scores
    order = np.argsort(-used_memory, axis=1, kind="stable")
    in_order = np.take_along_axis(passing, order, axis=1)
    taken = in_order & (np.cumsum(in_order, axis=1) <= count)
    memory_in_order = np.take_along_axis(memory, order, axis=1)
    after = np.take_along_axis(used_memory + asked, order, axis=1)
    # Go's float division: a GPU registering no memory scores NaN (0/0), or +Inf.
    each = np.where(memory_in_order > 0,
                    100.0 * (after / np.where(memory_in_order > 0, memory_in_order, 1)),
                    np.where(after == 0, np.nan, np.inf))
    for slot in range(each.shape[1]):  # the scalar's order of additions
        scores = scores + np.where(taken[:, slot], each[:, slot], 0.0)
    scores = np.where(fits & has_vgpus, scores, 0.0)
    return fits, scores

