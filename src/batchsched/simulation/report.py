"""The report of a replay: the JSON object of ``batchsched simulate`` and its plots.

The JSON keys listed in the simulation contract (``workload``, ``jobs``,
``simulatedSeconds``, ``metrics`` with ``averageBoundedSlowdown``,
``averageWait``, ``averageResponse``, ``makespan``, ``utilization``, and
``perJob`` with ``job``, ``submit``, ``start``, ``end``, ``boundedSlowdown``)
are a public format: outside tools parse them. More keys may be added.

Plots need matplotlib (the ``[sim]`` extra); without it :func:`write_report`
writes the JSON and says the plots were left out.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

from batchsched.api.devices import GPU
from batchsched.simulation.timeline import Timeline, json_seconds
from batchsched.simulation.workload import Workload

__all__ = ["gpu_allocation_by_arrived_load", "report", "text_summary", "write_report"]


def gpu_allocation_by_arrived_load(workload: Workload, timeline: Timeline
                                   ) -> list[list[float]]:
    """The FGD paper's curve: GPU allocation against arrived load, both in percent of
    the cluster's GPUs, for a replay where nothing leaves (``--arrived-load``).

    After each arrival the allocated GPUs are those of the pods placed so far (a
    pod is placed in its turn or never, as nothing frees room); the value at an
    integer load ``x`` is the mean over the arrivals whose load rounds to ``x``,
    as the paper's analysis reads its simulator's log. Empty for other replays.
    """
    capacity = sum(node.allocatable.get(GPU) for node in workload.nodes)
    if capacity <= 0 or not workload.jobs or not all(
            math.isinf(run) for job in workload.jobs for run in job.run_times.values()):
        return []
    arrived = allocated = 0.0
    buckets: dict[int, list[float]] = {}
    for job in sorted(workload.jobs, key=lambda job: job.submit):
        asked = sum(task.resreq.get(GPU) for task in job.prototype.tasks.values())
        arrived += asked
        record = timeline.jobs.get(job.uid)
        if record is not None and record.start is not None:
            allocated += asked
        buckets.setdefault(round(arrived * 100 / capacity), []).append(
            allocated * 100 / capacity)
    return [[float(load), round(math.fsum(values) / len(values), 4)]
            for load, values in sorted(buckets.items())]


def report(workload: Workload, timeline: Timeline, *, sessions: int = 0) -> dict[str, Any]:
    """The JSON-ready report of one replay."""
    curve = gpu_allocation_by_arrived_load(workload, timeline)
    # The contract's keys first, in its order.
    return {
        "workload": workload.name,
        "jobs": len(workload.jobs),
        "simulatedSeconds": json_seconds(timeline.end - timeline.start),
        "metrics": timeline.metrics(),
        "perJob": [record.to_json() for record in timeline.jobs.values()],
        "sessions": sessions,
        **({"gpuAllocationByArrivedLoad": curve} if curve else {}),
        "neverStarted": timeline.never_started,
        "unfinished": timeline.unfinished,
        "skipped": [{"job": s.job, "origin": s.origin, "reason": s.reason}
                    for s in workload.skipped],
        "utilizationOverTime": [[at - timeline.start, cores] for at, cores in timeline.usage],
    }


def _unfinished(metrics: dict[str, Any]) -> str:
    count = metrics.get("unfinished", 0)
    return f"{count} unfinished, " if count else ""


def _not_arrived(data: dict[str, Any]) -> str:
    """The jobs the replay ended before (a horizon, ``--until``, or a replay stopped
    by jobs restarting each other): in none of the other counts."""
    metrics = data["metrics"]
    rest = data["jobs"] - metrics["finishedJobs"] - metrics.get("unfinished", 0) \
        - metrics["neverStarted"]
    return f", {rest} not arrived when the replay ended" if rest > 0 else ""


def text_summary(data: dict[str, Any]) -> str:
    """A few readable lines of a report."""
    metrics = data["metrics"]
    lines = [
        f"workload          {data['workload']} ({data['jobs']} jobs, "
        f"{metrics['finishedJobs']} finished, {_unfinished(metrics)}"
        f"{metrics['neverStarted']} never started{_not_arrived(data)})",
        f"simulated         {data['simulatedSeconds']:.0f} s in {data['sessions']} sessions",
        f"bounded slowdown  {_shown(metrics['averageBoundedSlowdown'], '.2f')} (average)",
        f"wait              {_shown(metrics['averageWait'], '.1f', ' s')} (average)",
        f"response          {_shown(metrics['averageResponse'], '.1f', ' s')} (average)",
        f"makespan          {metrics['makespan']:.0f} s",
        f"utilization       {metrics['utilization']:.3f} of the cluster's cpu",
        f"restarts          {metrics['restarts']}",
    ]
    if "gpuAllocationRatio" in metrics:
        lines.append(f"GPUs allocated    {metrics['gpuAllocationRatio']:.4f} of the cluster's")
    if len(metrics["queueShare"]) > 1:
        shares = ", ".join(f"{q} {s:.3f}" for q, s in metrics["queueShare"].items())
        lines.append(f"queue shares      {shares} (Jain {metrics['jainFairness']:.3f})")
    return "\n".join(lines)


def _shown(value: float | None, spec: str, unit: str = "") -> str:
    return "n/a (no job finished)" if value is None else f"{value:{spec}}{unit}"


def write_report(data: dict[str, Any], directory: str | Path) -> list[Path]:
    """Write ``report.json`` and, with matplotlib, PNG plots; return the files written."""
    out = Path(directory)
    out.mkdir(parents=True, exist_ok=True)
    written = [out / "report.json"]
    written[0].write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return written

    def plot(name: str, title: str, xlabel: str, ylabel: str,
             draw: Callable[[Any], object]) -> None:
        fig, ax = plt.subplots(figsize=(8, 3))
        draw(ax)
        ax.set_xlabel(xlabel)
        ax.set_ylabel(ylabel)
        ax.set_title(f"{data['workload']}: {title}")
        fig.tight_layout()
        written.append(out / name)
        fig.savefig(written[-1], dpi=120)
        plt.close(fig)

    usage = data["utilizationOverTime"]
    if usage:
        plot("utilization.png", "cluster use over time", "hours since the clock's start",
             "allocated cpu (cores)",
             lambda ax: ax.step([t / 3600 for t, _ in usage], [c for _, c in usage],
                                where="post"))
    curve = data.get("gpuAllocationByArrivedLoad")
    if curve:
        plot("gpu-allocation.png", "GPU allocation against arrived load",
             "arrived GPU load (% of the cluster's GPUs)", "GPUs allocated (%)",
             lambda ax: ax.plot([x for x, _ in curve], [y for _, y in curve]))
    slowdowns = [job["boundedSlowdown"] for job in data["perJob"]
                 if job["boundedSlowdown"] is not None]
    if slowdowns:
        plot("slowdown.png", "bounded slowdown per job", "bounded slowdown", "jobs",
             lambda ax: ax.hist(slowdowns, bins=50, log=True))
    return written
