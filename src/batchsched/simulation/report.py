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
from collections.abc import Callable
from pathlib import Path
from typing import Any

from batchsched.simulation.timeline import Timeline
from batchsched.simulation.workload import Workload

__all__ = ["report", "text_summary", "write_report"]


def report(workload: Workload, timeline: Timeline, *, sessions: int = 0) -> dict[str, Any]:
    """The JSON-ready report of one replay."""
    return {
        "workload": workload.name,
        "jobs": len(workload.jobs),
        "simulatedSeconds": timeline.end - timeline.start,
        "sessions": sessions,
        "metrics": timeline.metrics(),
        "perJob": [record.to_json() for record in timeline.jobs.values()],
        "neverStarted": timeline.never_started,
        "skipped": [{"job": s.job, "origin": s.origin, "reason": s.reason}
                    for s in workload.skipped],
        "utilizationOverTime": [[at - timeline.start, cores] for at, cores in timeline.usage],
    }


def text_summary(data: dict[str, Any]) -> str:
    """A few readable lines of a report."""
    metrics = data["metrics"]
    lines = [
        f"workload          {data['workload']} ({data['jobs']} jobs, "
        f"{metrics['finishedJobs']} finished, {metrics['neverStarted']} never started)",
        f"simulated         {data['simulatedSeconds']:.0f} s in {data['sessions']} sessions",
        f"bounded slowdown  {metrics['averageBoundedSlowdown']:.2f} (average)",
        f"wait              {metrics['averageWait']:.1f} s (average)",
        f"response          {metrics['averageResponse']:.1f} s (average)",
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
        plot("utilization.png", "cluster use over time", "hours since the first arrival",
             "allocated cpu (cores)",
             lambda ax: ax.step([t / 3600 for t, _ in usage], [c for _, c in usage],
                                where="post"))
    slowdowns = [job["boundedSlowdown"] for job in data["perJob"]
                 if job["boundedSlowdown"] is not None]
    if slowdowns:
        plot("slowdown.png", "bounded slowdown per job", "bounded slowdown", "jobs",
             lambda ax: ax.hist(slowdowns, bins=50, log=True))
    return written
