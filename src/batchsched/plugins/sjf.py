"""sjf: shortest job first, by requested run time (an HPC job order).

The job that asks for the shortest run (``batchsched.io/requested-runtime``)
goes first; equal requests go in submit order. A job that states no requested
run time goes after every job that does. Takes no arguments.
"""

from __future__ import annotations

import math

from batchsched.api.job import JobInfo
from batchsched.plugin import JobKeyOrderPlugin

__all__ = ["SjfPlugin"]


class SjfPlugin(JobKeyOrderPlugin):
    """Shortest requested run time first, then earlier submit."""

    name = "sjf"

    def key(self, job: JobInfo, now: float) -> tuple[float, float]:
        requested = job.requested_runtime
        return (math.inf if requested is None else requested, job.creation_time)
