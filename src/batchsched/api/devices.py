"""GPUs one by one: the devices of a node and the share of them a task holds.

A node's ``nvidia.com/gpu`` allocatable counts its GPUs; each GPU has 1000
milli of its own. A task's ``nvidia.com/gpu`` request (a scalar, held in milli
units like every scalar) asks either

* **whole GPUs**: a multiple of 1000 (``2`` is two GPUs, each all free and
  held by this task alone), or
* **a share of one GPU**: less than 1000 (``460m`` is 46% of one GPU, which
  other shares may use too), as GPU-sharing clusters and the Alibaba
  cluster-trace-gpu-v2023 ask.

Anything else (``1500m``: one and a half GPUs) is not a request a device can
serve, and :func:`gpu_ask` says so. The node's aggregate figures (idle, used)
count GPU milli as ever; :class:`NodeInfo` keeps besides them the free milli of
each device (``gpu_free``) and each task placed there keeps the indexes of the
devices it holds (``TaskInfo.gpu_devices``), which a host writes where its
device plugin reads them (Volcano's gpushare uses the ``volcano.sh/gpu-index``
annotation).
"""

from __future__ import annotations

from collections.abc import Sequence

import attrs

from batchsched.api.gpushare import GPU_INDEX_ANNOTATION
from batchsched.api.resource import Resource
from batchsched.errors import SchedulingError

__all__ = [
    "DEVICE_SIMULATE_KEY",
    "GPU",
    "GPU_INDEX_ANNOTATION",
    "GPU_MILLI",
    "GPU_MODELS_ANNOTATION",
    "GPU_MODEL_LABEL",
    "MAX_DEVICES",
    "MAX_NODE_CPU",
    "MAX_NODE_GPU",
    "GpuAsk",
    "best_fit_devices",
    "device_count",
    "fits_devices",
    "gpu_ask",
    "gpu_milli_asked",
    "gpu_tag",
    "serves",
    "trunc_div",
]

GPU = "nvidia.com/gpu"
#: Where the deviceshare plugin leaves, in ``Session.extra``, its check of a node copy's
#: devices for a preemption dry run; the predicates plugin's simulate predicate runs it
#: (in Volcano that plugin checks every device kind there).
DEVICE_SIMULATE_KEY = "deviceshare.simulate-predicate"
#: What one GPU offers, in milli.
GPU_MILLI = 1000
#: A node's GPU model (a label), and the models a pod's GPUs may be (an annotation,
#: ``|``-separated; none: any), as the FGD paper's simulator names them on nodes and
#: pods of Alibaba's GPU trace.
GPU_MODEL_LABEL = "alibabacloud.com/gpu-model"
GPU_MODELS_ANNOTATION = "alibabacloud.com/gpu-card-model"


@attrs.frozen
class GpuAsk:
    """``count`` devices, ``milli`` of each (1000: whole devices; less: a share of one)."""

    count: int
    milli: int

    @property
    def whole(self) -> bool:
        return self.milli == GPU_MILLI

    @property
    def total(self) -> int:
        """The milli asked in all."""
        return self.count * self.milli


def gpu_ask(request: Resource, *, owner: str = "", strict: bool = True) -> GpuAsk | None:
    """What a request asks of a node's devices (None: no GPU).

    A request no device can serve raises SchedulingError naming ``owner`` and the
    field, or with ``strict=False`` reads as None: the node then counts it in its
    aggregate figures only, as it counted every GPU request before devices were
    modelled (the ``deviceshare`` plugin's predicate refuses such a task).

    >>> gpu_ask(Resource.from_mapping({"nvidia.com/gpu": "460m"}))
    GpuAsk(count=1, milli=460)
    >>> gpu_ask(Resource.from_mapping({"nvidia.com/gpu": 2}))
    GpuAsk(count=2, milli=1000)
    """
    amount = request.scalars.get(GPU, 0.0)
    if amount <= 0:
        return None
    milli = round(amount)
    if milli < GPU_MILLI:
        return GpuAsk(1, milli)
    if milli % GPU_MILLI == 0:
        return GpuAsk(milli // GPU_MILLI, GPU_MILLI)
    if not strict:
        return None
    who = f"task {owner}: " if owner else ""
    raise SchedulingError(
        f"{who}requests.{GPU} = {milli}m is neither whole GPUs (a multiple of 1000m) "
        "nor a share of one GPU (less than 1000m)")


#: A node announcing more GPUs than this is counted in aggregate only (no real
#: node has that many; a test's "unbounded" node should not allocate a device table).
MAX_DEVICES = 1024


def gpu_milli_asked(request: Resource) -> int:
    """The GPU milli a request asks in all (``count x milli``; 0 without a GPU ask or
    with one no device can serve)."""
    ask = gpu_ask(request, strict=False)
    return 0 if ask is None else ask.total


def device_count(allocatable: Resource) -> int:
    """How many GPUs a node with this allocatable has, one by one (0: none, or more
    than :data:`MAX_DEVICES`)."""
    count = int(allocatable.scalars.get(GPU, 0.0) // GPU_MILLI)
    return count if count <= MAX_DEVICES else 0


def fits_devices(free: Sequence[int], ask: GpuAsk) -> bool:
    """Whether some devices with these free milli can serve the ask."""
    if ask.whole:
        return sum(1 for left in free if left == GPU_MILLI) >= ask.count
    return any(left >= ask.milli for left in free)


def serves(free: Sequence[float], chosen: Sequence[int], ask: GpuAsk) -> bool:
    """Whether the devices ``chosen`` (distinct indexes, as many as asked) can take the
    ask from what each has ``free``."""
    need = GPU_MILLI if ask.whole else ask.milli
    return (len(chosen) == ask.count and len(set(chosen)) == len(chosen)
            and all(0 <= index < len(free) and free[index] >= need for index in chosen))


def best_fit_devices(free: Sequence[int], ask: GpuAsk) -> tuple[int, ...] | None:
    """The default choice: the lowest-indexed free devices for whole GPUs; for a
    share, the device it fills most (least free milli that still fits; the lowest
    index among equals), so that whole devices stay free for whole-GPU tasks."""
    if ask.whole:
        chosen = tuple(index for index, left in enumerate(free) if left == GPU_MILLI)
        return chosen[:ask.count] if len(chosen) >= ask.count else None
    best: int | None = None
    for index, left in enumerate(free):
        if left >= ask.milli and (best is None or left < free[best]):
            best = index
    return None if best is None else (best,)


#: The largest node of the Alibaba GPU cluster (128 cores, 8 GPUs), which the FGD
#: paper's policies use to bring cpu and GPU to one scale.
MAX_NODE_CPU = 128_000
MAX_NODE_GPU = 8 * GPU_MILLI


def trunc_div(numerator: int, denominator: int) -> int:
    """Go's integer division (toward zero), which the paper's policies use.

    >>> trunc_div(-7, 2), -7 // 2
    (-3, -4)
    """
    quotient = abs(numerator) // denominator
    return quotient if numerator >= 0 else -quotient


def gpu_tag(ask: GpuAsk | None) -> int:
    """The kind of a GPU ask as one bit: a share, or ``count`` whole GPUs (0: no GPU)."""
    if ask is None:
        return 0
    return 1 if not ask.whole else 1 << min(ask.count, 62)
