"""unicep: the UNICEP job order of the HPC literature (Tang et al.).

A job's key is ``-w / (log2(n) x r)``, smallest first: w is how long the job has
waited, r its requested run time (``batchsched.io/requested-runtime``), n the
processors it asks (``batchsched.io/processors``, an SWF job's P; else its total cpu
request, in cores). As in the reference formulation, 1e-15 is added to w and to n,
so a one-processor job (log2(1) = 0) gets an extreme key rather than a division by
zero. A job that states no requested run time goes last.

Argument ``unicep.waitingTime``: ``true`` (default) or ``reference``, as for
:mod:`batchsched.plugins.wfp3`.
"""

from __future__ import annotations

import math

from batchsched.api.job import JobInfo, job_processors
from batchsched.framework.arguments import Arguments
from batchsched.plugin import JobKeyOrderPlugin
from batchsched.plugins.wfp3 import waiting_time, waiting_time_mode

__all__ = ["UnicepPlugin"]

_EPSILON = 1e-15


class UnicepPlugin(JobKeyOrderPlugin):
    """-w / (log2(n) x r), ascending."""

    name = "unicep"
    arguments_read = ("unicep.waitingTime",)

    def __init__(self, arguments: Arguments) -> None:
        super().__init__(arguments)
        self.mode = waiting_time_mode(arguments, "unicep.waitingTime")

    def key(self, job: JobInfo, now: float) -> float:
        requested = job.requested_runtime
        if not requested:
            return math.inf
        procs = job_processors(job)
        wait = waiting_time(job, now, self.mode)
        return -(wait + _EPSILON) / (math.log2(procs + _EPSILON) * requested)
