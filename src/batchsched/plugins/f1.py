"""f1: the F1 job order learned by Carastan-Santos and de Camargo (SC'17).

A job's key is ``log10(r) x n + 870 x log10(s)``, smallest first: r is its requested
run time (``batchsched.io/requested-runtime``), n the processors it asks
(``batchsched.io/processors``, an SWF job's P; else its total cpu request, in
cores), s its submit time; an r or s of zero or less counts as 0.1. A job that
states no requested run time goes last. Takes no arguments.
"""

from __future__ import annotations

import math

from batchsched.api.job import JobInfo, job_processors
from batchsched.plugin import JobKeyOrderPlugin

__all__ = ["F1Plugin"]


class F1Plugin(JobKeyOrderPlugin):
    """log10(r) x n + 870 x log10(s), ascending."""

    name = "f1"

    def key(self, job: JobInfo, now: float) -> float:
        requested = job.requested_runtime
        if requested is None:
            return math.inf
        procs = job_processors(job)
        submit = job.creation_time
        return (math.log10(requested if requested > 0 else 0.1) * procs
                + 870.0 * math.log10(submit if submit > 0 else 0.1))
