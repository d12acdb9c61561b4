"""fgd: fragmentation gradient descent (Weng et al., USENIX ATC'23).

A node's **fragmentation** measures the GPU milli that the workload to come
could not use there. The workload to come is a list of *typical pods*, each a
(cpu, GPU milli per device, GPU count) type with its share of the pods. For
one type ``t`` on a node with ``G`` GPU milli free:

* a CPU-only type, a type whose GPU models exclude the node's, or a type the
  node cannot host (fewer than ``count`` devices with ``milli`` free, or less idle
  cpu than ``t`` asks): all ``G``;
* else the free milli of the devices too small for ``t`` (free < ``milli``).

``F(node) = sum(share(t) x fragmentation(node, t))``. A task scores a node by
how much placing it there lowers ``F``: ``int(100 x sigmoid((F_before -
F_after) / 1000))`` (above 50: fragmentation goes down), times
``fgd.weight``. A share is tried on each device it fits and goes on the one
with the best score (the lowest index among equals); whole GPUs and CPU-only
tasks are tried as the default placement (lowest-indexed free GPUs). This is
the paper's simulator's definition (hkust-adsl/kubernetes-scheduler-simulator).

Typical pods: the ``fgd.typicalPods`` argument, a list of ``{cpu, gpu,
weight, model}`` (``gpu`` as a task would ask it: ``"460m"`` is a share, ``2`` two
whole GPUs, absent or 0 CPU-only; ``model`` the GPU models the type may use,
``|``-separated, absent for any), else the session's own tasks (their models from
the ``alibabacloud.com/gpu-card-model`` annotation, a node's from its
``alibabacloud.com/gpu-model`` label). Either way the most frequent types covering
95% of the pods are kept (``fgd.coverage``), most frequent first (larger cpu, then
GPU milli, then count, then model, first among equals), and their shares
normalised. ``batchsched simulate`` hands a GPU trace's own pod mix
to ``fgd`` when the configuration gives none, as the paper does.

The scalar functions are the reference; the column form scores every candidate
with the same float operations, recomputing only the nodes that changed since
the same kind of task last asked.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import attrs
import numpy as np

from batchsched import columnar
from batchsched.api.devices import (
    GPU_MILLI,
    GPU_MODEL_LABEL,
    GPU_MODELS_ANNOTATION,
    GpuAsk,
    best_fit_devices,
    gpu_ask,
)
from batchsched.api.node import NodeInfo
from batchsched.api.resource import Resource
from batchsched.api.task import TaskInfo
from batchsched.columnar.gpu_columns import GpuColumns, IntArray
from batchsched.columnar.node_columns import BoolArray, Candidates, FloatArray
from batchsched.errors import ConfigError, SchedulingError
from batchsched.framework.arguments import Arguments
from batchsched.framework.session import Session

__all__ = ["PodType", "fgd_choice", "fragmentation", "node_model", "parse_typical_pods",
           "typical_pods"]

PLUGIN_NAME = "fgd"
DEFAULT_COVERAGE = 0.95


@attrs.frozen
class PodType:
    """A kind of task of the workload to come, with its share of the pods."""

    cpu: float
    milli: int  # per device; 0 for CPU-only
    count: int  # devices; 0 for CPU-only
    share: float = 1.0
    #: The GPU models the type may use, ``|``-separated ("": any).
    model: str = ""

    @property
    def need(self) -> int:
        return self.milli

    def accepts(self, node_model: str) -> bool:
        """Whether the type may use a node's GPUs of ``node_model`` (the paper's
        simulator's ``IsNodeAccessibleToPodByType``)."""
        models = [name.strip() for name in self.model.split("|") if name.strip()]
        return not models or node_model in models


#: A task kind: (cpu, milli per device, devices, GPU models).
TypeKey = tuple[float, int, int, str]


def _key(task: TaskInfo) -> TypeKey:
    ask = gpu_ask(task.resreq, strict=False)
    if ask is None:
        return (task.resreq.milli_cpu, 0, 0, "")
    return (task.resreq.milli_cpu, ask.milli, ask.count,
            models_key(task.annotations.get(GPU_MODELS_ANNOTATION, "")))


def models_key(text: str) -> str:
    """One spelling per set of GPU models: names stripped, empty and repeated ones
    dropped, in order (``" V100 | A100|A100"`` is ``A100|V100``)."""
    return "|".join(sorted({name.strip() for name in text.split("|") if name.strip()}))


def typical_pods(counts: Mapping[TypeKey, float] | Mapping[tuple[float, int, int], float],
                 coverage: float = DEFAULT_COVERAGE) -> tuple[PodType, ...]:
    """The most frequent (cpu, milli, count, model) types covering ``coverage`` of the
    pods, with normalised shares (a key without its model accepts any)."""
    total = sum(counts.values())
    if total <= 0:
        return ()
    keyed: dict[TypeKey, float] = {}
    for kind, count in counts.items():
        full: TypeKey = (kind[0], kind[1], kind[2], kind[3] if len(kind) > 3 else "")
        keyed[full] = keyed.get(full, 0.0) + count
    # Most frequent first, then the larger kind (the paper's reversed sort); a stable
    # sort keeps the first of equals first.
    ranked = sorted(keyed.items(), key=lambda item: (item[1], *item[0]), reverse=True)
    kept: list[tuple[TypeKey, float]] = []
    covered = 0.0
    for key, count in ranked:
        kept.append((key, count))
        covered += count
        if covered >= coverage * total:
            break
    return tuple(PodType(cpu, milli, count_, weight / covered, model)
                 for (cpu, milli, count_, model), weight in kept)


def typical_pods_of(tasks: Iterable[TaskInfo], coverage: float = DEFAULT_COVERAGE
                    ) -> tuple[PodType, ...]:
    """:func:`typical_pods` of these tasks, each counting once."""
    return typical_pods(Counter(_key(task) for task in tasks), coverage)


def parse_typical_pods(raw: Any, *, owner: str = PLUGIN_NAME) -> dict[TypeKey, float]:
    """The ``fgd.typicalPods`` argument as type counts (ConfigError naming the entry)."""
    if not isinstance(raw, list):
        raise ConfigError("must be a list of {cpu, gpu, weight, model}",
                          key=f"{owner}.typicalPods")
    counts: dict[TypeKey, float] = {}
    for i, entry in enumerate(raw):
        where = f"{owner}.typicalPods[{i}]"
        if not isinstance(entry, Mapping) or "cpu" not in entry:
            raise ConfigError("must be a mapping with cpu (and gpu, weight, model)", key=where)
        model = entry.get("model")
        if model is not None and not isinstance(model, str):
            raise ConfigError(f"model must be GPU model names separated by '|', not "
                              f"{model!r}", key=f"{where}.model")
        model = models_key(model or "")
        try:
            request = Resource.from_mapping({"cpu": entry["cpu"],
                                             "nvidia.com/gpu": entry.get("gpu", 0) or 0})
            weight = float(entry.get("weight", 1))
            ask = gpu_ask(request)
        except (ValueError, TypeError, SchedulingError) as exc:
            raise ConfigError(str(exc), key=where) from None
        key: TypeKey = (request.milli_cpu, 0, 0, "") if ask is None else (
            request.milli_cpu, ask.milli, ask.count, model)
        counts[key] = counts.get(key, 0.0) + weight
    return counts


def fragmentation(cpu_left: float, free: Sequence[int], types: Sequence[PodType],
                  node_model: str = "") -> float:
    """``F(node)`` (see the module docstring); ``node_model``: its GPUs' model."""
    everything = sum(free)
    total = 0.0
    for pod in types:
        if pod.count == 0 or not pod.accepts(node_model):
            amount = everything
        elif cpu_left >= pod.cpu and sum(1 for left in free if left >= pod.milli) >= pod.count:
            amount = sum(left for left in free if left < pod.milli)
        else:
            amount = everything
        total += pod.share * amount
    return total


def _score(drop: float) -> int:
    """``int(100 x sigmoid(drop / 1000))``."""
    x = drop / 1000
    if x < -700:
        return 0
    return int(100 * (1 / (1 + math.exp(-x))))


def _default_devices(free: Sequence[int], ask: GpuAsk | None) -> tuple[int, ...]:
    if ask is None:
        return ()
    return best_fit_devices(free, ask) or ()


def fgd_choice(task: TaskInfo, node: NodeInfo, types: Sequence[PodType]
               ) -> tuple[int, tuple[int, ...]]:
    """The reference: the task's FGD score on the node and the devices it would take."""
    free = list(node.gpu_free or ())
    cpu_left = node.idle.milli_cpu
    model = node_model(node)
    ask = gpu_ask(task.resreq, strict=False)
    before = fragmentation(cpu_left, free, types, model)
    after_cpu = cpu_left - task.resreq.milli_cpu
    if ask is None or ask.whole:
        chosen = _default_devices(free, ask)
        for index in chosen:
            free[index] -= GPU_MILLI
        return _score(before - fragmentation(after_cpu, free, types, model)), chosen
    best: tuple[int, tuple[int, ...]] | None = None
    for index, left in enumerate(free):
        if left < ask.milli:
            continue
        free[index] -= ask.milli
        score = _score(before - fragmentation(after_cpu, free, types, model))
        free[index] += ask.milli
        if best is None or score > best[0]:
            best = (score, (index,))
    return best if best is not None else (0, ())


def node_model(node: NodeInfo) -> str:
    """The model of a node's GPUs (its ``alibabacloud.com/gpu-model`` label)."""
    return node.labels.get(GPU_MODEL_LABEL, "")


def _fragmentation_rows(cpu_left: FloatArray, free: IntArray, types: Sequence[PodType],
                        access: Sequence[BoolArray | None]) -> FloatArray:
    """:func:`fragmentation` of many nodes (rows), with the same float operations;
    ``access``: for each type, which rows' GPU model it accepts (None: every row)."""
    everything = free.sum(axis=1)
    total = np.zeros(len(free))
    for pod, accepted in zip(types, access, strict=True):
        if pod.count == 0:
            amount = everything
        else:
            hosts = (cpu_left >= pod.cpu) & ((free >= pod.milli).sum(axis=1) >= pod.count)
            if accepted is not None:
                hosts &= accepted
            amount = np.where(hosts, (free * (free < pod.milli)).sum(axis=1), everything)
        total += pod.share * amount
    return total


class FgdPlugin:
    """The FGD node-order and device-select plugin (see the module docstring)."""

    name = PLUGIN_NAME

    def __init__(self, arguments: Arguments) -> None:
        self.arguments = arguments
        self.weight = arguments.get_int("fgd.weight", 1, owner=PLUGIN_NAME)
        self.coverage = arguments.get_float("fgd.coverage", DEFAULT_COVERAGE, owner=PLUGIN_NAME)
        raw = arguments.get("fgd.typicalPods")
        self.given = (typical_pods(parse_typical_pods(raw), self.coverage)
                      if raw is not None else None)
        self.types: tuple[PodType, ...] = ()
        arguments.warn_unknown(PLUGIN_NAME, ["fgd.weight", "fgd.coverage", "fgd.typicalPods"])
        # Per task kind: scores and devices of every node, and the row versions they hold for.
        self._kept: dict[TypeKey, tuple[FloatArray, IntArray, IntArray]] = {}
        # Per typical pod with GPU models: which of the columns' nodes it accepts.
        self._access: tuple[BoolArray | None, ...] | None = None

    def on_session_open(self, ssn: Session) -> None:
        if self.weight == 0:
            return
        self.types = self.given if self.given is not None else typical_pods_of(
            (task for job in ssn.jobs.values() for task in job.tasks.values()), self.coverage)
        self._kept = {}
        self._access = None
        ssn.add_node_order_fn(self.name, self.score)
        ssn.add_device_select_fn(self.name, self.devices)
        columnar.add_node_order_fn(ssn, self.name,
                                   lambda task, columns, candidates: self.column_scores(
                                       ssn, task, candidates))

    def on_session_close(self, ssn: Session) -> None:
        """Nothing to write back."""

    def score(self, task: TaskInfo, node: NodeInfo) -> float:
        return float(fgd_choice(task, node, self.types)[0] * self.weight)

    def devices(self, task: TaskInfo, node: NodeInfo) -> tuple[int, ...] | None:
        if node.gpu_free is None or gpu_ask(task.resreq, strict=False) is None:
            return None
        chosen = fgd_choice(task, node, self.types)[1]
        return chosen or None

    def column_scores(self, ssn: Session, task: TaskInfo, candidates: Candidates) -> FloatArray:
        gpus = GpuColumns.of(ssn)
        key = _key(task)
        kept = self._kept.get(key)
        if kept is None or len(kept[0]) != len(gpus.nodes):
            size = len(gpus.nodes)
            kept = self._kept[key] = (np.zeros(size), np.zeros(size, dtype=np.int64),
                                      np.full(size, -1, dtype=np.int64))
        scores, _, versions = kept
        rows = candidates.indices
        stale = rows[versions[rows] != gpus.row_version[rows]]
        if len(stale):
            scores[stale] = self._scores_of_rows(task, gpus, stale)
            versions[stale] = gpus.row_version[stale]
        result: FloatArray = scores[rows] * self.weight
        return result

    def _accepted(self, gpus: GpuColumns) -> tuple[BoolArray | None, ...]:
        """For each typical pod, which of the columns' nodes it accepts (None: all)."""
        if self._access is None or any(
                accepted is not None and len(accepted) != len(gpus.nodes)
                for accepted in self._access):
            models = [node_model(node) for node in gpus.nodes]
            self._access = tuple(
                None if not pod.model else np.array([pod.accepts(m) for m in models], dtype=bool)
                for pod in self.types)
        return self._access

    def _scores_of_rows(self, task: TaskInfo, gpus: GpuColumns, rows: IntArray) -> FloatArray:
        types = self.types
        free = gpus.free[rows]
        cpu_left = gpus.cpu_left[rows]
        access = [None if accepted is None else accepted[rows]
                  for accepted in self._accepted(gpus)]
        before = _fragmentation_rows(cpu_left, free, types, access)
        after_cpu = cpu_left - task.resreq.milli_cpu
        ask = gpu_ask(task.resreq, strict=False)
        if ask is None or ask.whole:
            after = free.copy()
            if ask is not None:
                # The lowest-indexed entirely free devices, ask.count of them.
                whole = after == GPU_MILLI
                enough = whole.sum(axis=1) >= ask.count
                taken = whole & (np.cumsum(whole, axis=1) <= ask.count) & enough[:, None]
                after[taken] = 0
            drops = (before - _fragmentation_rows(after_cpu, after, types, access)).tolist()
            return np.array([_score(drop) for drop in drops], dtype=np.float64)
        best = np.full(len(rows), -1.0)
        for device in range(free.shape[1]):
            fits = free[:, device] >= ask.milli
            if not fits.any():
                continue
            after = free.copy()
            after[:, device] -= ask.milli
            drops = (before - _fragmentation_rows(after_cpu, after, types, access)).tolist()
            scores = np.array([_score(drop) for drop in drops], dtype=np.float64)
            best = np.where(fits & (scores > best), scores, best)
        result: FloatArray = np.maximum(best, 0.0)
        return result
