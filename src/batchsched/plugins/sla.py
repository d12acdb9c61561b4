"""sla: jobs that waited long enough go first and are admitted (Volcano's ``plugins/sla``).

A job's waiting time is its own (pod-group annotation
``volcano.sh/sla-waiting-time``, else ``sla-waiting-time``; read by the loader
into :attr:`JobInfo.waiting_time`), else the plugin's ``sla-waiting-time``
argument, else none.

* **job order**: a job with a waiting time goes before a job without one; two
  jobs with one are ordered by deadline, ``creation time + waiting time``
  (earlier first);
* **job enqueueable** and **job pipelined**: once ``now - creation time`` reaches
  the waiting time the plugin votes Permit, which admits the job (or keeps its
  pipelined tasks) unless a plugin of the same tier rejects; before that, and for
  a job with no waiting time, it abstains.

Argument ``sla-waiting-time``: a Go duration string such as ``"1h2m3s"``; it is
ignored unless it is a string that parses to a positive duration (a bare number
is ignored, as in Volcano, and logged as a warning). Default: none.
"""

from __future__ import annotations

import math

from batchsched.api.job import JobInfo
from batchsched.api.types import GO_MAX_DURATION, Vote
from batchsched.framework.arguments import Arguments, warn_unreadable
from batchsched.framework.session import Session

__all__ = ["SLA_WAITING_TIME", "SlaPlugin"]

#: Name of the argument (and of the job annotation).
SLA_WAITING_TIME = "sla-waiting-time"


class SlaPlugin:
    """Volcano's sla plugin."""

    name = "sla"

    def __init__(self, arguments: Arguments) -> None:
        self.arguments = arguments
        waiting = arguments.get_duration(SLA_WAITING_TIME, owner=self.name)
        if waiting is not None and waiting <= 0:
            warn_unreadable(self.name, SLA_WAITING_TIME, arguments[SLA_WAITING_TIME],
                            "a positive duration", None)
            waiting = None
        arguments.warn_unknown(self.name, [SLA_WAITING_TIME])
        #: The default waiting time in seconds, None when not configured.
        self.waiting_time: float | None = waiting

    def job_waiting_time(self, job: JobInfo) -> float | None:
        """The job's own waiting time, else the configured one (seconds), else None."""
        return job.waiting_time if job.waiting_time is not None else self.waiting_time

    def on_session_open(self, ssn: Session) -> None:
        def job_order(left: JobInfo, right: JobInfo) -> int:
            left_wait, right_wait = self.job_waiting_time(left), self.job_waiting_time(right)
            if left_wait is None:
                return 0 if right_wait is None else 1
            if right_wait is None:
                return -1
            left_deadline = left.creation_time + left_wait
            right_deadline = right.creation_time + right_wait
            if left_deadline == right_deadline:
                return 0
            return -1 if left_deadline < right_deadline else 1

        def waited_enough(job: JobInfo) -> Vote:
            wait = self.job_waiting_time(job)
            # Go's time.Since saturates at its longest duration (a job created at the
            # zero time has waited that long, not two thousand years).
            if wait is None:
                return Vote.ABSTAIN
            if min(ssn.now - job.creation_time, GO_MAX_DURATION) < wait:
                if wait <= GO_MAX_DURATION:
                    # Permit once the time runs out, with no cluster event: the host
                    # is told when (a simulator opens a session then).
                    ssn.wake_up_at(self.name, _waited_at(job.creation_time, wait))
                return Vote.ABSTAIN
            return Vote.PERMIT

        ssn.add_job_order_fn(self.name, job_order)
        ssn.add_job_enqueueable_fn(self.name, waited_enough)
        ssn.add_job_pipelined_fn(self.name, waited_enough)

    def on_session_close(self, ssn: Session) -> None:
        pass


def _waited_at(creation: float, wait: float) -> float:
    """The first instant ``now`` at which ``now - creation >= wait`` holds in floating
    point (``creation + wait`` may fall a rounding short of it)."""
    at = creation + wait
    while at - creation < wait:
        at = math.nextafter(at, math.inf)
    return at
