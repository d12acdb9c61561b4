"""Alibaba's cluster-trace-gpu-v2023 (``openb_*`` CSV files) as a workload.

Nodes (``openb_node_list_*.csv``: ``sn, cpu_milli, memory_mib, gpu, model``)
become nodes with that cpu, memory and ``nvidia.com/gpu``, labelled with their
GPU model. Pods (``openb_pod_list_*.csv``: ``name, cpu_milli, memory_mib,
num_gpu, gpu_milli, gpu_spec, qos, pod_phase, creation_time, deletion_time,
scheduled_time``) become single-task jobs arriving at ``creation_time`` and
running ``deletion_time - scheduled_time`` seconds (``deletion_time -
creation_time`` when never scheduled). ``gpu_spec`` (models separated by
``|``) becomes a required node affinity on the model label.

A pod asks ``num_gpu x gpu_milli`` milli of ``nvidia.com/gpu``: whole GPUs
(``gpu_milli`` 1000) or a share of one GPU (``num_gpu`` 1, ``gpu_milli`` below
1000), which the ``deviceshare`` plugin places device by device
(:mod:`batchsched.api.devices`). ``gpu_milli`` is also kept in the
``batchsched.io/gpu-milli`` annotation.

With ``arrived_load`` (the FGD paper's experiment, its simulator's rules):
the trace's pods arrive in an order shuffled with ``seed``, one per second,
followed by pods drawn from the trace at random (with replacement) for as long
as needed; none leaves, and arrivals stop once the pods that arrived ask for
``arrived_load`` times the cluster's GPUs. The nodes are shuffled with the
same seed too: among equally scored nodes the first in node order wins, which
makes the paper's tie-break (a random rank per node, fixed for the run). The
workload's ``pod_mix`` is the trace's pods counted by kind (FGD's typical pods).
"""

from __future__ import annotations

import csv
import math
import random
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import attrs

from batchsched.api.devices import GPU, GPU_MILLI
from batchsched.api.job import JobInfo, PodGroup
from batchsched.api.node import NodeInfo
from batchsched.api.resource import Resource
from batchsched.api.task import TaskInfo
from batchsched.errors import WorkloadError
from batchsched.simulation.workload import Workload, WorkloadJob

__all__ = ["GPU", "GPU_MILLI_ANNOTATION", "MODEL_LABEL", "alibaba_nodes", "alibaba_workload"]

MODEL_LABEL = "alibabacloud.com/gpu-model"
GPU_MILLI_ANNOTATION = "batchsched.io/gpu-milli"
NAMESPACE = "openb"
_NODE_COLUMNS = ("sn", "cpu_milli", "memory_mib", "gpu", "model")
_POD_COLUMNS = ("name", "cpu_milli", "memory_mib", "num_gpu", "gpu_milli", "gpu_spec", "qos",
                "pod_phase", "creation_time", "deletion_time", "scheduled_time")
_MIB = 1024 * 1024


def _rows(
    path: Path, columns: tuple[str, ...], text: str | None
) -> Iterator[tuple[int, dict[str, str]]]:
    source = path.name
    try:
        content = text if text is not None else path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise WorkloadError(f"cannot read: {exc}", source=source) from exc
    reader = csv.DictReader(content.splitlines())
    header = tuple(reader.fieldnames or ())
    unknown = [name for name in header if name not in columns]
    missing = [name for name in columns if name not in header]
    if unknown or missing:
        problem = f"unknown column {unknown[0]!r}" if unknown else f"missing column {missing[0]!r}"
        raise WorkloadError(f"{problem} (expected {', '.join(columns)})", source=source, line=1)
    yield from enumerate(reader, start=2)


def _int(row: dict[str, str], column: str, source: str, line: int, *, default: int | None = None
         ) -> int:
    raw = (row.get(column) or "").strip()
    if not raw and default is not None:
        return default
    try:
        value = int(float(raw))
    except ValueError:
        raise WorkloadError(f"column {column}: {raw!r} is not a number",
                            source=source, line=line) from None
    if value < 0:
        raise WorkloadError(f"column {column}: {raw!r} is negative", source=source, line=line)
    return value


def alibaba_nodes(path: str | Path, *, text: str | None = None) -> tuple[NodeInfo, ...]:
    """The nodes of an ``openb_node_list_*.csv`` file."""
    file = Path(path)
    nodes = []
    for line, row in _rows(file, _NODE_COLUMNS, text):
        allocatable = Resource.from_mapping({
            "cpu": f"{_int(row, 'cpu_milli', file.name, line)}m",
            "memory": _int(row, "memory_mib", file.name, line) * _MIB,
            GPU: _int(row, "gpu", file.name, line),
            "pods": 110,
        })
        nodes.append(NodeInfo.create(row["sn"], allocatable,
                                     labels={MODEL_LABEL: row["model"] or "none"}))
    return tuple(nodes)


def _affinity(spec: str) -> dict[str, object] | None:
    models = [model for model in spec.split("|") if model]
    if not models:
        return None
    term = {"matchExpressions": [{"key": MODEL_LABEL, "operator": "In", "values": models}]}
    return {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
        "nodeSelectorTerms": [term]}}}


@attrs.frozen
class _Pod:
    """One row of a pod list."""

    name: str
    cpu: int
    memory: int
    gpu: int  # nvidia.com/gpu, milli
    gpu_milli: int
    spec: str
    created: int
    run: int
    origin: str

    def job(self, *, submit: float, run: float, created: int) -> WorkloadJob:
        requests = Resource.from_mapping({"cpu": f"{self.cpu}m", "memory": self.memory,
                                          GPU: f"{self.gpu}m"})
        podgroup = PodGroup(name=self.name, namespace=NAMESPACE, min_member=1,
                            creation_time=float(created))
        task = TaskInfo.create(NAMESPACE, self.name, podgroup.uid, requests,
                               annotations={GPU_MILLI_ANNOTATION: str(self.gpu_milli)},
                               affinity=_affinity(self.spec), creation_time=float(created))
        return WorkloadJob(prototype=JobInfo.from_podgroup(podgroup, tasks=[task]),
                           submit=submit, run_times={task.uid: run}, origin=self.origin)


def _gpu_request(gpus: int, milli: int, source: str, line: int) -> int:
    """The pod's ``nvidia.com/gpu`` request in milli."""
    if gpus == 0:
        return 0
    milli = min(milli or GPU_MILLI, GPU_MILLI)
    if milli < GPU_MILLI and gpus != 1:
        raise WorkloadError(f"column gpu_milli: a share ({milli}) of {gpus} GPUs; a pod shares "
                            "one GPU or asks whole ones", source=source, line=line)
    return gpus * milli


def alibaba_workload(path: str | Path, nodes: tuple[NodeInfo, ...], *, text: str | None = None,
                     arrived_load: float | None = None, seed: int = 0) -> Workload:
    """The pods of an ``openb_pod_list_*.csv`` file as a workload on ``nodes``."""
    file = Path(path)
    source = file.name
    capacity = sum(node.allocatable.get(GPU) for node in nodes)  # milli
    pods: list[_Pod] = []
    for line, row in _rows(file, _POD_COLUMNS, text):
        gpus = _int(row, "num_gpu", source, line, default=0)
        share = _int(row, "gpu_milli", source, line, default=0)
        created = _int(row, "creation_time", source, line, default=0)
        deleted = _int(row, "deletion_time", source, line, default=created)
        scheduled = _int(row, "scheduled_time", source, line, default=created)
        pods.append(_Pod(
            name=row["name"], cpu=_int(row, "cpu_milli", source, line),
            memory=_int(row, "memory_mib", source, line) * _MIB,
            gpu=_gpu_request(gpus, share, source, line), gpu_milli=share,
            spec=row.get("gpu_spec") or "", created=created,
            run=max(deleted - scheduled, 0), origin=f"{source}:{line}"))
    mix = Counter((pod.cpu, pod.gpu) for pod in pods)
    pod_mix = tuple({"cpu": f"{cpu}m", "gpu": f"{gpu}m", "weight": count}
                    for (cpu, gpu), count in sorted(mix.items()))
    if arrived_load is None:
        jobs = [pod.job(submit=float(pod.created), run=float(pod.run), created=pod.created)
                for pod in pods]
        jobs.sort(key=lambda job: job.submit)
        return Workload(name=source, nodes=nodes, jobs=tuple(jobs), pod_mix=pod_mix)
    rng = random.Random(seed)
    order = list(pods)
    rng.shuffle(order)
    jobs = []
    arrived = 0.0
    target = arrived_load * capacity
    drawn = 0
    while arrived < target and pods:
        if len(jobs) < len(order):
            pod = order[len(jobs)]
        else:
            drawn += 1
            drawn_pod = pods[rng.randrange(len(pods))]
            pod = attrs.evolve(drawn_pod, name=f"{drawn_pod.name}-tuned-{drawn}")
        jobs.append(pod.job(submit=float(len(jobs)), run=math.inf, created=len(jobs)))
        arrived += pod.gpu
    shuffled = list(nodes)
    rng.shuffle(shuffled)
    return Workload(name=source, nodes=tuple(shuffled), jobs=tuple(jobs), pod_mix=pod_mix)
