"""Alibaba's cluster-trace-gpu-v2023 (``openb_*`` CSV files) as a workload.

Nodes (``openb_node_list_*.csv``: ``sn, cpu_milli, memory_mib, gpu, model``)
become nodes with that cpu, memory and ``nvidia.com/gpu``, labelled with their
GPU model. Pods (``openb_pod_list_*.csv``: ``name, cpu_milli, memory_mib,
num_gpu, gpu_milli, gpu_spec, qos, pod_phase, creation_time, deletion_time,
scheduled_time``) become single-task jobs arriving at ``creation_time`` and
running ``deletion_time - scheduled_time`` seconds (``deletion_time -
creation_time`` when never scheduled). ``gpu_spec`` (models separated by
``|``) becomes a required node affinity on the model label.

GPUs are whole in this version: a pod asks ``num_gpu`` whole GPUs, and its
``gpu_milli`` (a share of one GPU) is kept in the ``batchsched.io/gpu-milli``
annotation for the GPU-sharing policies to come; a fractional pod therefore
holds a whole GPU here.

With ``arrived_load`` (the FGD paper's experiment), pods arrive in trace order,
one per second, none leaves, and arrivals stop once the pods that arrived ask
for that multiple of the cluster's GPUs.
"""

from __future__ import annotations

import csv
import math
from collections.abc import Iterator
from pathlib import Path

from batchsched.api.job import JobInfo, PodGroup
from batchsched.api.node import NodeInfo
from batchsched.api.resource import Resource
from batchsched.api.task import TaskInfo
from batchsched.errors import WorkloadError
from batchsched.simulation.workload import Workload, WorkloadJob

__all__ = ["GPU", "GPU_MILLI_ANNOTATION", "MODEL_LABEL", "alibaba_nodes", "alibaba_workload"]

GPU = "nvidia.com/gpu"
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


def alibaba_workload(path: str | Path, nodes: tuple[NodeInfo, ...], *, text: str | None = None,
                     arrived_load: float | None = None) -> Workload:
    """The pods of an ``openb_pod_list_*.csv`` file as a workload on ``nodes``."""
    file = Path(path)
    source = file.name
    capacity = sum(node.allocatable.get(GPU) for node in nodes)
    jobs: list[WorkloadJob] = []
    arrived = 0.0
    for line, row in _rows(file, _POD_COLUMNS, text):
        if arrived_load is not None and arrived >= arrived_load * capacity:
            break
        gpus = _int(row, "num_gpu", source, line, default=0)
        created = _int(row, "creation_time", source, line, default=0)
        deleted = _int(row, "deletion_time", source, line, default=created)
        scheduled = _int(row, "scheduled_time", source, line, default=created)
        name = row["name"]
        requests = Resource.from_mapping({
            "cpu": f"{_int(row, 'cpu_milli', source, line)}m",
            "memory": _int(row, "memory_mib", source, line) * _MIB,
            GPU: gpus,
        })
        podgroup = PodGroup(name=name, namespace=NAMESPACE, min_member=1,
                            creation_time=float(created))
        annotations = {GPU_MILLI_ANNOTATION: str(_int(row, "gpu_milli", source, line,
                                                      default=0))}
        task = TaskInfo.create(NAMESPACE, name, podgroup.uid, requests, annotations=annotations,
                               affinity=_affinity(row.get("gpu_spec") or ""),
                               creation_time=float(created))
        if arrived_load is not None:
            submit, run = float(len(jobs)), math.inf  # in trace order; none leaves
        else:
            submit, run = float(created), float(max(deleted - scheduled, 0))
        jobs.append(WorkloadJob(prototype=JobInfo.from_podgroup(podgroup, tasks=[task]),
                                submit=submit, run_times={task.uid: run},
                                origin=f"{source}:{line}"))
        arrived += requests.get(GPU)
    if arrived_load is None:
        jobs.sort(key=lambda job: job.submit)
    return Workload(name=source, nodes=nodes, jobs=tuple(jobs))
