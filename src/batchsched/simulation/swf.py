"""The Standard Workload Format (Parallel Workloads Archive) as a workload.

A line is one job of 18 whitespace-separated fields; lines starting with ``;``
are header comments, of which ``MaxNodes`` and ``MaxProcs`` describe the
machine. The reading follows the archive's conventions as RLScheduler's
reference simulator applies them (DIR-LAB/deep-batch-scheduler, ``job.py``),
so that published results replay exactly:

* processors: the larger of "allocated" (field 5) and "requested" (field 8);
* requested time: field 9, or the run time when it is -1 (read before the run
  time's own fix, so a job whose run time is -1 too keeps -1: SJF puts it first and
  a backfill counts it as ending at once); a negative run time becomes 10 s; a job
  that ran 0 s is dropped; jobs are taken in job-number order;
* a job asking no processor at all is dropped (and reported).

The cluster is ``MaxNodes`` nodes of ``MaxProcs / MaxNodes`` cpu each (when
``MaxProcs`` is absent it equals ``MaxNodes``). A job of P processors becomes a
gang of ceil(P / cpu-per-node) tasks (worked out in integers: ceil(P x MaxNodes /
MaxProcs)), each asking one whole node's cpu, with the requested time in its
``batchsched.io/requested-runtime`` annotation and P in ``batchsched.io/processors``
(the HPC job orders read P, as the reference does, not the nodes' cpu). On a cluster given instead
(``nodes``) of a trace whose header gives neither, a processor is one cpu.

Every field of a job line must be a number (digits, a sign, a decimal point and
an exponent: nothing else). The times read here (submit, run and requested time)
may be fractional seconds, as the format allows; the job number and processors
are whole. A job number given twice is an error naming both lines. The header is
the comment lines before the first job line: a ``; Key: value`` comment further
down is a note, not the machine. Comment lines may hold any bytes.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable
from pathlib import Path

import attrs

from batchsched.api.job import (
    PROCESSORS_ANNOTATION,
    REQUESTED_RUNTIME_ANNOTATION,
    JobInfo,
    PodGroup,
)
from batchsched.api.node import NodeInfo
from batchsched.api.resource import Resource
from batchsched.api.task import TaskInfo
from batchsched.errors import WorkloadError
from batchsched.simulation.workload import MOST_SECONDS, Skipped, Workload, WorkloadJob

__all__ = ["NAMESPACE", "SwfJob", "read_swf", "swf_workload"]

NAMESPACE = "swf"
_FIELDS = 18
_HEADER = re.compile(r"^;\s*(\w+)\s*:\s*(.*?)\s*$")
#: What each of the fields read here means, for error messages (1-based as in the format).
_FIELD_NAMES = {1: "job number", 2: "submit time", 4: "run time", 5: "allocated processors",
                8: "requested processors", 9: "requested time"}
#: The fields read as seconds, which the format allows to be fractional.
_TIME_FIELDS = frozenset({2, 4, 9})
#: The most nodes a header's cluster may have (MaxNodes): each is an object of its
#: own; a larger machine is given with ``--cluster``.
MOST_HEADER_NODES = 100_000
# What Python's int() and float() take besides (underscores, "inf", "nan", spaces
# inside) is no SWF number.
_NUMBER = re.compile(r"[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?", re.ASCII)


@attrs.frozen
class SwfJob:
    """One job line, as read (times in seconds)."""

    job_id: int
    submit: float
    run_time: float
    procs: int
    requested_time: float
    line: int


def _number(text: str, field: int, source: str, line: int) -> float:
    """A field's number: an int when whole (``3``, ``3.0``), which the job number and
    processors must be; a time may be fractional; the unread fields only a number
    (some archives write averages with decimals there)."""
    name = _FIELD_NAMES.get(field, "unused")
    if _NUMBER.fullmatch(text) is None:
        raise WorkloadError(f"field {field} ({name}) {text!r} is not a number",
                            source=source, line=line)
    value: float
    try:
        value = int(text)
    except ValueError:
        value = float(text)
        if not math.isfinite(value):
            raise WorkloadError(f"field {field} ({name}) {text!r} is not a finite number",
                                source=source, line=line) from None
        if value.is_integer():
            value = int(value)
        elif field in _FIELD_NAMES and field not in _TIME_FIELDS:
            raise WorkloadError(f"field {field} ({name}) {text!r} is not a whole number",
                                source=source, line=line) from None
    if field in _TIME_FIELDS and abs(value) > MOST_SECONDS:
        raise WorkloadError(f"field {field} ({name}) {text!r} is more seconds than a replay "
                            f"counts exactly (at most {MOST_SECONDS:.0e})",
                            source=source, line=line)
    return value


def read_swf(
    path: str | Path, *, text: str | None = None
) -> tuple[list[SwfJob], dict[str, str], list[Skipped]]:
    """The jobs of an SWF file (in job-number order), its header (the ``; Key: value``
    comments before the first job line), and what was dropped.

    ``text`` replaces the file's content (for tests and in-memory traces).
    """
    read = _read(path, text)
    return read.jobs, read.header, read.dropped


@attrs.frozen
class _Read:
    jobs: list[SwfJob]
    header: dict[str, str]
    #: The line of each header key (errors about the machine name it).
    header_lines: dict[str, int]
    dropped: list[Skipped]
    #: The job number of each of ``dropped`` (a window reports those among its jobs).
    dropped_ids: list[int]


def _read(path: str | Path, text: str | None) -> _Read:
    source = str(path)  # as given: a base name may be another file's
    if text is None:
        try:
            # Bytes that are not UTF-8 are kept (as surrogates): a comment may hold
            # them, and in a job line they fail that field's number.
            text = Path(path).read_bytes().decode("utf-8", errors="surrogateescape")
        except OSError as exc:
            raise WorkloadError(f"cannot read: {exc.strerror}", source=source) from exc
    text = text.removeprefix("\ufeff")  # a byte-order mark, as editors may write one
    header: dict[str, str] = {}
    header_lines: dict[str, int] = {}
    jobs: list[SwfJob] = []
    left_out: list[tuple[int, str, str]] = []  # job number, origin, why
    lines_of: dict[int, int] = {}  # job number -> its line
    # Lines end at "\n" only (a comment may hold a form feed or other separators).
    for number, raw in enumerate(text.split("\n"), start=1):
        line = raw.strip()
        if not line:
            continue
        if line.startswith(";"):
            match = _HEADER.match(line)
            if match and not lines_of:
                header[match[1]] = match[2]
                header_lines[match[1]] = number
            continue
        fields = line.split()
        if len(fields) != _FIELDS:
            raise WorkloadError(f"a job line has {_FIELDS} fields, this one {len(fields)}",
                                source=source, line=number)
        value = [_number(fields[i - 1], i, source, number) for i in range(1, _FIELDS + 1)]
        job_id, submit, run = int(value[0]), value[1], value[3]
        if job_id in lines_of:
            raise WorkloadError(f"job number {job_id} again (first at line {lines_of[job_id]})",
                                source=source, line=number)
        lines_of[job_id] = number
        procs = int(max(value[4], value[7]))
        requested = value[8] if value[8] != -1 else run
        if run < 0:
            run = 10
        origin = f"{source}:{number}"
        if run == 0:
            left_out.append((job_id, origin, "it ran 0 s"))
            continue
        if procs <= 0:
            left_out.append((job_id, origin, "it asks no processor"))
            continue
        jobs.append(SwfJob(job_id, submit, run, procs, requested, number))
    jobs.sort(key=lambda job: job.job_id)
    # Named as the replayed jobs are (padded to the widest replayed id).
    width = len(str(max((job.job_id for job in jobs), default=0)))
    dropped = [Skipped(f"{NAMESPACE}/{_job_name(job_id, width)}", origin, why)
               for job_id, origin, why in left_out]
    return _Read(jobs, header, header_lines, dropped, [job_id for job_id, _, _ in left_out])


def _header_int(header: dict[str, str], key: str, source: str,
                lines: dict[str, int]) -> int | None:
    raw = header.get(key)
    if raw is None:
        return None
    line = lines.get(key)
    try:
        value = float(raw) if _NUMBER.fullmatch(raw) else math.nan
    except ValueError:
        value = math.nan
    if not math.isfinite(value) or not value.is_integer():
        raise WorkloadError(f"header {key}: {raw!r} is not a whole number", source=source,
                            line=line) from None
    if value <= 0:
        raise WorkloadError(f"header {key}: {raw!r} must be positive", source=source,
                            line=line)
    return int(value)


def _job_name(job_id: int, width: int) -> str:
    return f"job-{job_id:0{width}d}"


def swf_workload(path: str | Path, *, text: str | None = None,
                 nodes: Iterable[NodeInfo] | None = None,
                 first: int = 0, count: int | None = None) -> Workload:
    """Read an SWF trace as a :class:`~batchsched.simulation.workload.Workload`.

    ``nodes`` replaces the cluster the header describes (tasks then ask the
    header's cpu per node all the same, so that P processors stay P).
    ``first`` and ``count`` keep a window of the jobs, as
    :meth:`Workload.window` does; every line is still checked, but only the
    window's jobs are built (a trace holds far more jobs than one replay takes).
    """
    source = str(path)
    read = _read(path, text)
    jobs, header = read.jobs, read.header
    if first < 0 or (count is not None and count < 0):
        raise WorkloadError(f"a window needs a start and a length >= 0, not {first}, {count}",
                            source=source)
    # Names are padded to the whole trace's widest id, so that a job has the same
    # name whatever window it is replayed in.
    width = len(str(max((job.job_id for job in jobs), default=0)))
    if first and first >= len(jobs):
        raise WorkloadError(f"the window starts at job {first}, past the trace's {len(jobs)} "
                            "jobs", source=source)
    dropped = read.dropped
    if first or count is not None:
        # What the trace drops between the window's first and last job: the window's own.
        jobs = jobs[first:] if count is None else jobs[first:first + count]
        low, high = (jobs[0].job_id, jobs[-1].job_id) if jobs else (1, 0)
        dropped = [skipped for skipped, job_id in zip(read.dropped, read.dropped_ids,
                                                      strict=True)
                   if low <= job_id <= high]
    max_nodes = _header_int(header, "MaxNodes", source, read.header_lines)
    max_procs = _header_int(header, "MaxProcs", source, read.header_lines)
    if max_nodes is None and max_procs is None:
        if nodes is None:
            raise WorkloadError("the header gives neither MaxNodes nor MaxProcs", source=source)
        max_nodes = max_procs = 1  # on the cluster given, a processor is one cpu
    max_nodes = max_nodes or max_procs
    max_procs = max_procs or max_nodes
    assert max_nodes is not None and max_procs is not None
    per_node = max_procs / max_nodes
    if nodes is None and max_nodes > MOST_HEADER_NODES:
        key = "MaxNodes" if "MaxNodes" in header else "MaxProcs"  # the one read for nodes
        raise WorkloadError(
            f"header {key}: {max_nodes} nodes are more than a replay builds from a header "
            f"(at most {MOST_HEADER_NODES:,}); give the cluster with --cluster",
            source=source, line=read.header_lines.get(key))
    cluster = tuple(nodes) if nodes is not None else tuple(
        NodeInfo.create(f"node-{i:0{len(str(max_nodes - 1))}d}",
                        Resource.from_mapping({"cpu": per_node, "pods": 110}))
        for i in range(max_nodes)
    )
    # A task asks its node's share of the header's cpu. On a cluster given, in whole
    # millicores rounded down, so that P processors ask no more than P cpu (8/3 cpu
    # rounded up thrice is 8.001).
    request = Resource.from_mapping(
        {"cpu": per_node if nodes is None else f"{max(max_procs * 1000 // max_nodes, 1)}m"})
    # No more tasks of a gang than the cluster could hold, and one: a wider gang never
    # starts all the same (the replay reports and skips it), and a trace's 10**7
    # processors do not become 10**7 task objects first.
    most_tasks = int(sum(n.allocatable.milli_cpu for n in cluster)
                     // max(request.milli_cpu, 1.0)) + 1
    workload_jobs = []
    for job in jobs:
        name = _job_name(job.job_id, width)
        podgroup = PodGroup(
            # ceil(P / (MaxProcs / MaxNodes)) in integers: the float quotient can land
            # a hair above a whole number and ask one node too many.
            name=name, namespace=NAMESPACE, min_member=-(-job.procs * max_nodes // max_procs),
            annotations={REQUESTED_RUNTIME_ANNOTATION: str(job.requested_time),
                         PROCESSORS_ANNOTATION: str(job.procs)},
            creation_time=float(job.submit),
        )
        tasks = [
            TaskInfo.create(NAMESPACE, f"{name}-{k}", podgroup.uid, request,
                            creation_time=float(job.submit))
            for k in range(min(podgroup.min_member, most_tasks))
        ]
        prototype = JobInfo.from_podgroup(podgroup, tasks=tasks)
        if job.requested_time < 0:
            # -1 (unknown) kept as the reference keeps it when the run time is -1 too:
            # SJF puts the job first, and a backfill counts it as ending at once.
            prototype.requested_runtime = float(job.requested_time)
        workload_jobs.append(WorkloadJob(
            prototype=prototype, submit=float(job.submit),
            run_times={task.uid: float(job.run_time) for task in tasks},
            origin=f"{source}:{job.line}",
        ))
    return Workload(name=Path(path).name, nodes=cluster, jobs=tuple(workload_jobs),
                    skipped=tuple(dropped))
