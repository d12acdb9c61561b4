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
(``gpu_milli`` 1000, or 0 or absent on a pod asking GPUs) or a share of one GPU
(``num_gpu`` 1, ``gpu_milli`` below 1000), which the ``deviceshare`` plugin places
device by device (:mod:`batchsched.api.devices`); a ``gpu_milli`` above 1000, or a
share of several GPUs, is an error naming the line. The milli of each GPU is also
kept in the ``batchsched.io/gpu-milli`` annotation. Every figure read is a whole
number (milli, MiB, seconds).

Only ``name, cpu_milli, memory_mib, num_gpu, gpu_milli`` are required (some of the
trace's files have no more); without ``creation_time`` every pod arrives at 0, and
without ``deletion_time`` it never leaves.

With ``arrived_load`` (the FGD paper's experiment), the trace's pods arrive one per
second and none leaves, until the pods that arrived ask for ``arrived_load`` times
the cluster's GPUs. In trace order (``arrival_order="trace"``, the simulation
contract's rule), arrivals also stop at the trace's end. With
``arrival_order="sampled"`` (the paper's simulator's rules) they arrive in an order
shuffled with ``seed``, followed by pods drawn from the trace at random (with
replacement) for as long as needed (up to ``MOST_SAMPLED_LOAD`` times the cluster's
GPUs, and only from a trace with pods asking GPUs), and the nodes are shuffled with the same seed
too: among equally scored nodes the first in node order wins, which makes the
paper's tie-break (a random rank per node, fixed for the run). The workload's
``pod_mix`` is the trace's pods counted by kind (FGD's typical pods).
"""

from __future__ import annotations

import csv
import math
import random
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import attrs

from batchsched.api.devices import GPU, GPU_MILLI, GPU_MODEL_LABEL, GPU_MODELS_ANNOTATION
from batchsched.api.job import JobInfo, PodGroup
from batchsched.api.node import NodeInfo
from batchsched.api.resource import Resource
from batchsched.api.task import TaskInfo
from batchsched.conf import SchedulerConfiguration
from batchsched.errors import WorkloadError
from batchsched.simulation.workload import Workload, WorkloadJob, created_in_listed_order

__all__ = ["ARRIVAL_ORDERS", "GPU", "GPU_MILLI_ANNOTATION", "MODEL_LABEL", "alibaba_nodes",
           "alibaba_workload", "gpu_trace_warnings"]

MODEL_LABEL = GPU_MODEL_LABEL
GPU_MILLI_ANNOTATION = "batchsched.io/gpu-milli"
NAMESPACE = "openb"
_NODE_COLUMNS = ("sn", "cpu_milli", "memory_mib", "gpu", "model")
_POD_COLUMNS = ("name", "cpu_milli", "memory_mib", "num_gpu", "gpu_milli", "gpu_spec", "qos",
                "pod_phase", "creation_time", "deletion_time", "scheduled_time")
#: The pod list's columns every file of the trace has.
_REQUIRED_POD_COLUMNS = _POD_COLUMNS[:5]
#: How ``--arrived-load`` orders arrivals: the trace's order (the contract's), or the
#: FGD paper's sampling.
ARRIVAL_ORDERS = ("trace", "sampled")
#: The most GPUs sampled arrivals may ask, as a multiple of the cluster's (the FGD
#: paper's loads stay below 1.5): the samples are drawn again and again, one job each.
MOST_SAMPLED_LOAD = 100.0
_MIB = 1024 * 1024


def _rows(
    path: Path, columns: tuple[str, ...], text: str | None,
    required: tuple[str, ...] | None = None,
) -> Iterator[tuple[int, dict[str, str]]]:
    source = str(path)  # as given: a base name may be another file's
    try:
        # A byte-order mark (a spreadsheet's export) is no part of the first column.
        content = (text if text is not None else path.read_text(encoding="utf-8-sig")
                   ).removeprefix("\ufeff")
    except (OSError, UnicodeDecodeError) as exc:
        raise WorkloadError(f"cannot read: {exc}", source=source) from exc
    reader = csv.reader(content.splitlines())
    header = tuple(next(reader, ()))
    twice = [name for index, name in enumerate(header) if name in header[:index]]
    if twice:
        raise WorkloadError(f"column {twice[0]!r} named twice", source=source, line=1)
    unknown = [name for name in header if name not in columns]
    missing = [name for name in (columns if required is None else required)
               if name not in header]
    if unknown or missing:
        problem = f"unknown column {unknown[0]!r}" if unknown else f"missing column {missing[0]!r}"
        raise WorkloadError(f"{problem} (expected {', '.join(columns)})", source=source, line=1)
    for line, fields in enumerate(reader, start=2):
        if not fields:
            continue  # a blank line
        if len(fields) != len(header):
            raise WorkloadError(f"{len(fields)} fields, the header has {len(header)}",
                                source=source, line=line)
        yield line, dict(zip(header, fields, strict=True))


def _int(row: dict[str, str], column: str, source: str, line: int, *, default: int | None = None
         ) -> int:
    raw = (row.get(column) or "").strip()
    if not raw and default is not None:
        return default
    try:
        number = float(raw)
    except ValueError:
        raise WorkloadError(f"column {column}: {raw!r} is not a number",
                            source=source, line=line) from None
    if not math.isfinite(number):  # inf, or 1e400
        raise WorkloadError(f"column {column}: {raw!r} is not a finite number",
                            source=source, line=line)
    if not number.is_integer():
        # The trace's figures are whole milli, MiB and seconds: a fraction is no rounding
        # to make silently.
        raise WorkloadError(f"column {column}: {raw!r} is not a whole number",
                            source=source, line=line)
    value = int(number)
    if value < 0:
        raise WorkloadError(f"column {column}: {raw!r} is negative", source=source, line=line)
    return value


def alibaba_nodes(path: str | Path, *, text: str | None = None) -> tuple[NodeInfo, ...]:
    """The nodes of an ``openb_node_list_*.csv`` file."""
    file = Path(path)
    source = str(path)
    nodes = []
    first_line: dict[str, int] = {}
    for line, row in _rows(file, _NODE_COLUMNS, text):
        if not row["sn"]:
            raise WorkloadError("column sn: a node needs a name", source=source, line=line)
        seen = first_line.setdefault(row["sn"], line)
        if seen != line:
            raise WorkloadError(f"column sn: node {row['sn']!r} again (first on line {seen})",
                                source=source, line=line)
        allocatable = Resource.from_mapping({
            "cpu": f"{_int(row, 'cpu_milli', source, line)}m",
            "memory": _int(row, "memory_mib", source, line) * _MIB,
            GPU: _int(row, "gpu", source, line),
            # The paper's simulator gives every node room for 1001 pods.
            "pods": 1001,
        })
        model = _text(row["model"])
        nodes.append(NodeInfo.create(row["sn"], allocatable,
                                     labels={MODEL_LABEL: model or "none"}))
    return tuple(nodes)


def _text(value: str | None) -> str:
    """A text column as pandas reads it for the paper's simulator: ``nan`` (any case)
    is no value."""
    return "" if value is None or value.strip().lower() == "nan" else value


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
        annotations = {GPU_MILLI_ANNOTATION: str(self.gpu_milli)}
        if self.spec:
            annotations[GPU_MODELS_ANNOTATION] = self.spec
        task = TaskInfo.create(NAMESPACE, self.name, podgroup.uid, requests,
                               annotations=annotations,
                               affinity=_affinity(self.spec), creation_time=float(created))
        return WorkloadJob(prototype=JobInfo.from_podgroup(podgroup, tasks=[task]),
                           submit=submit, run_times={task.uid: run}, origin=self.origin)


def _gpu_share(gpus: int, milli: int, source: str, line: int) -> int:
    """The milli of each GPU the pod asks for: ``gpu_milli``, 1000 when it is 0 or
    absent on a pod asking GPUs (the trace writes 1000 there), 0 without GPUs."""
    if gpus == 0:
        if milli:
            raise WorkloadError(f"column gpu_milli: {milli} on a pod asking no GPU (num_gpu 0)",
                                source=source, line=line)
        return 0
    milli = milli or GPU_MILLI
    if milli > GPU_MILLI:
        raise WorkloadError(f"column gpu_milli: {milli} is more than a whole GPU "
                            f"({GPU_MILLI})", source=source, line=line)
    if milli < GPU_MILLI and gpus != 1:
        raise WorkloadError(f"column gpu_milli: a share ({milli}) of {gpus} GPUs; a pod shares "
                            "one GPU or asks whole ones", source=source, line=line)
    return milli


def alibaba_workload(path: str | Path, nodes: tuple[NodeInfo, ...], *, text: str | None = None,
                     arrived_load: float | None = None, seed: int = 0,
                     arrival_order: str = "trace", first: int = 0) -> Workload:
    """The pods of an ``openb_pod_list_*.csv`` file as a workload on ``nodes``. With
    ``arrived_load`` in trace order, pods arrive from position ``first`` on."""
    if arrival_order not in ARRIVAL_ORDERS:
        raise ValueError(f"arrival_order must be one of {ARRIVAL_ORDERS}, not {arrival_order!r}")
    file = Path(path)
    source = str(path)
    capacity = sum(node.allocatable.get(GPU) for node in nodes)  # milli
    if arrived_load is not None and not capacity:
        # The load is counted in the cluster's GPUs: none would stop arrivals at once.
        raise WorkloadError("--arrived-load counts in the cluster's GPUs, and its nodes "
                            "have none", source=source)
    pods: list[_Pod] = []
    first_line: dict[str, int] = {}
    for line, row in _rows(file, _POD_COLUMNS, text, _REQUIRED_POD_COLUMNS):
        if not row["name"]:
            raise WorkloadError("column name: a pod needs a name", source=source, line=line)
        seen = first_line.setdefault(row["name"], line)
        if seen != line:
            # Each pod becomes a job named after it: two would be one pod group.
            raise WorkloadError(f"column name: pod {row['name']!r} again (first on line "
                                f"{seen})", source=source, line=line)
        gpus = _int(row, "num_gpu", source, line, default=0)
        share = _gpu_share(gpus, _int(row, "gpu_milli", source, line, default=0), source, line)
        created = _int(row, "creation_time", source, line, default=0)
        # Without a deletion time the pod runs to the end of the replay.
        deleted = _int(row, "deletion_time", source, line, default=-1)
        scheduled = _int(row, "scheduled_time", source, line, default=created)
        if scheduled < created:
            raise WorkloadError(f"column scheduled_time: {scheduled} is before the pod was "
                                f"created ({created})", source=source, line=line)
        if deleted >= 0 and deleted < max(created, scheduled):
            raise WorkloadError(f"column deletion_time: {deleted} is before the pod was "
                                f"{'scheduled' if scheduled > created else 'created'} "
                                f"({max(created, scheduled)})", source=source, line=line)
        pods.append(_Pod(
            name=row["name"], cpu=_int(row, "cpu_milli", source, line),
            memory=_int(row, "memory_mib", source, line) * _MIB,
            gpu=gpus * share, gpu_milli=share,
            # A model only for a pod asking GPUs (the paper's simulator writes it then).
            spec=_text(row.get("gpu_spec")) if gpus else "", created=created,
            run=max(deleted - scheduled, 0) if deleted >= 0 else -1,
            origin=f"{source}:{line}"))
    mix = Counter((pod.cpu, pod.gpu, pod.spec) for pod in pods)
    pod_mix = tuple({"cpu": f"{cpu}m", "gpu": f"{gpu}m", "weight": count,
                     **({"model": spec} if spec else {})}
                    for (cpu, gpu, spec), count in sorted(mix.items()))
    if arrived_load is None:
        jobs = [pod.job(submit=float(pod.created),
                        run=float(pod.run) if pod.run >= 0 else math.inf, created=pod.created)
                for pod in pods]
        jobs.sort(key=lambda job: job.submit)
        created_in_listed_order(jobs)
        return Workload(name=file.name, nodes=nodes, jobs=tuple(jobs), pod_mix=pod_mix)
    if arrival_order == "trace":
        if first > len(pods) or (first and first == len(pods)):
            raise WorkloadError(f"the window starts at job {first}, past the trace's "
                                f"{len(pods)} pods", source=source)
        jobs = []
        arrived = 0.0
        for pod in pods[first:]:
            if arrived >= arrived_load * capacity:
                break
            jobs.append(pod.job(submit=float(len(jobs)), run=math.inf, created=len(jobs)))
            arrived += pod.gpu
        return Workload(name=file.name, nodes=nodes, jobs=tuple(jobs), pod_mix=pod_mix)
    if arrived_load > MOST_SAMPLED_LOAD:
        raise WorkloadError(f"--arrived-load {arrived_load:g}: sampled arrivals stop at "
                            f"{MOST_SAMPLED_LOAD:g} times the cluster's GPUs", source=source)
    target = arrived_load * capacity
    if target > 0 and pods and not any(pod.gpu > 0 for pod in pods):
        # No sample would ever reach the load: refused rather than drawn forever.
        raise WorkloadError(f"--arrived-load {arrived_load:g}: no pod of the trace asks a GPU, "
                            "so no sample of them reaches a GPU load", source=source)
    rng = random.Random(seed)
    order = list(pods)
    rng.shuffle(order)
    jobs = []
    arrived = 0.0
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
    return Workload(name=file.name, nodes=tuple(shuffled), jobs=tuple(jobs), pod_mix=pod_mix)


def gpu_trace_warnings(workload: Workload,
                          configuration: SchedulerConfiguration) -> str | None:
    """The warnings for a GPU trace replayed by a configuration that does not do what
    the trace asks, joined by lines, or None:

    * shares of one GPU without deviceshare's GPU model (``deviceshare`` with
      ``GPUSharingEnable`` or ``GPUNumberEnable``): ``nvidia.com/gpu`` is then a plain
      resource, so shares are pooled across a node's GPUs (two pods of 600 milli share
      a node's two GPUs) instead of placed GPU by GPU;
    * GPU models asked (``gpu_spec``, a required node affinity) without ``predicates``,
      which alone reads node affinity: the model is not kept to.
    """
    from batchsched.plugins.deviceshare import NUMBER_KEY, SHARING_KEY

    said: list[str] = []
    option = configuration.plugin_option("deviceshare")
    per_gpu = option is not None and (
        option.arguments.get_bool(SHARING_KEY, False, owner="deviceshare")
        or option.arguments.get_bool(NUMBER_KEY, False, owner="deviceshare"))
    if not per_gpu and any(Resource.from_mapping({GPU: kind["gpu"]}).get(GPU) % GPU_MILLI
                           for kind in workload.pod_mix):
        said.append(f"batchsched: warning: {workload.name}: pods ask shares of one GPU but "
                    "the configuration has no deviceshare with GPUSharingEnable or "
                    "GPUNumberEnable: their shares are pooled across each node's GPUs, not "
                    "placed GPU by GPU")
    if workload.pod_mix and configuration.plugin_option("predicates") is None and any(
            task.affinity for job in workload.jobs for task in job.prototype.tasks.values()):
        said.append(f"batchsched: warning: {workload.name}: pods ask GPU models (gpu_spec) "
                    "but the configuration has no predicates, which reads node affinity: "
                    "the models are not kept to")
    return "\n".join(said) or None
