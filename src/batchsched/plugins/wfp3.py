"""wfp3: the WFP3 job order of the HPC literature (Tang et al.).

A job's key is ``-(w / r)^3 x n``, smallest first: w is how long the job has waited,
r its requested run time (``batchsched.io/requested-runtime``), n the processors it
asks (``batchsched.io/processors``, an SWF job's P; else its total cpu request, in
cores). Long-waiting, short, wide jobs go first. A job that states no requested run
time goes last.

Argument ``wfp3.waitingTime``: ``true`` (default) reads w as the session's
clock minus the job's submit time. ``reference`` reproduces RLScheduler's
simulator (DIR-LAB/deep-batch-scheduler), whose waiting time is read before
the job is scheduled and so is ``-(submit + 1)`` for every waiting job, which
makes the key static; published tables for WFP3 were made that way.
"""

from __future__ import annotations

import math

from batchsched.api.job import JobInfo, job_processors
from batchsched.framework.arguments import Arguments
from batchsched.plugin import JobKeyOrderPlugin

__all__ = ["Wfp3Plugin", "waiting_time"]

WAITING_TIME_MODES = ("true", "reference")


def waiting_time(job: JobInfo, now: float, mode: str) -> float:
    """How long ``job`` has waited at ``now``; ``reference``: RLScheduler's reading."""
    return -(job.creation_time + 1.0) if mode == "reference" else now - job.creation_time


def waiting_time_mode(arguments: Arguments, key: str) -> str:
    # This project's own argument: a YAML ``true`` (unquoted) means "true" too.
    raw = arguments.get(key)
    mode = "true" if raw is True or raw is None else raw
    if mode not in WAITING_TIME_MODES:
        from batchsched.errors import PluginError

        raise PluginError(f"{key}: {mode!r} is not one of {', '.join(WAITING_TIME_MODES)}",
                          plugin=key.partition(".")[0])
    return mode


class Wfp3Plugin(JobKeyOrderPlugin):
    """-(w / r)^3 x n, ascending."""

    name = "wfp3"
    arguments_read = ("wfp3.waitingTime",)

    def __init__(self, arguments: Arguments) -> None:
        super().__init__(arguments)
        self.mode = waiting_time_mode(arguments, "wfp3.waitingTime")

    def key(self, job: JobInfo, now: float) -> float:
        requested = job.requested_runtime
        if not requested:
            return math.inf
        procs = job_processors(job)
        return -((waiting_time(job, now, self.mode) / requested) ** 3) * procs
