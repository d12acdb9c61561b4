"""overcommit: admit jobs up to a multiple of the cluster (Volcano's ``plugins/overcommit``).

At session open the plugin computes

* ``idle = total allocatable x overcommit-factor - used`` (used: what the tasks on
  the nodes hold, pipelined tasks excluded), and
* ``inqueue``: the full ``minResources`` of every Inqueue pod group, plus, for a
  Running pod group with at least ``minMember`` tasks holding resources, the part
  of its ``minResources`` it does not hold yet.

A pending job is **enqueueable** when it sets no ``minResources``, or when
``inqueue + minResources <= idle`` on every dimension its ``minResources``
requests (cpu, memory, scalars other than ``pods``; no epsilon). Every admitted
job's ``minResources`` is added to ``inqueue`` (**job enqueued**), so later jobs
of the same session see it. A rejection records a ``Normal`` ``Unschedulable``
event on the pod group naming the overused dimensions.

Argument ``overcommit-factor`` (number, default 1.2; a value below 1, or one
that is not a number, is replaced by the default and logged as a warning).
"""

from __future__ import annotations

from batchsched.api.job import JobInfo
from batchsched.api.queue_accounting import (
    deduct_scheduling_gated,
    format_resource_names,
    running_job_reservation,
)
from batchsched.api.resource import Resource
from batchsched.api.types import PodGroupPhase, Vote
from batchsched.framework.arguments import Arguments, warn_unreadable
from batchsched.framework.session import Session

__all__ = ["DEFAULT_OVERCOMMIT_FACTOR", "OVERCOMMIT_FACTOR", "OvercommitPlugin"]

#: Name of the argument.
OVERCOMMIT_FACTOR = "overcommit-factor"
#: Factor used when the argument is missing or below 1.
DEFAULT_OVERCOMMIT_FACTOR = 1.2


class OvercommitPlugin:
    """Volcano's overcommit plugin: enqueue admits jobs until ``factor x total`` is reserved."""

    name = "overcommit"

    def __init__(self, arguments: Arguments) -> None:
        self.arguments = arguments
        factor = arguments.get_float(OVERCOMMIT_FACTOR, DEFAULT_OVERCOMMIT_FACTOR,
                                     owner=self.name)
        if factor < 1.0:
            warn_unreadable(self.name, OVERCOMMIT_FACTOR, arguments.get(OVERCOMMIT_FACTOR),
                            "at least 1", DEFAULT_OVERCOMMIT_FACTOR)
            factor = DEFAULT_OVERCOMMIT_FACTOR
        arguments.warn_unknown(self.name, [OVERCOMMIT_FACTOR])
        self.factor = factor
        self.idle = Resource()
        self.inqueue = Resource()

    def on_session_open(self, ssn: Session) -> None:
        self.inqueue = Resource()
        minimums = False
        for job in ssn.jobs.values():
            minimum = job.podgroup.min_resources
            minimums = minimums or minimum is not None
            # Neither counts what the job's scheduling-gated pods ask (Volcano's
            # DeductSchGatedResources).
            if minimum is not None and job.podgroup.phase == PodGroupPhase.INQUEUE:
                # The full minimum, as Volcano's overcommit counts it (proportion and
                # capacity deduct what an Inqueue job already holds).
                self.inqueue.add(deduct_scheduling_gated(job, minimum))
            else:
                self.inqueue.add(deduct_scheduling_gated(job, running_job_reservation(job)))
        # What the cluster has left, as the session opens: read only for a job with a
        # minimum (a session without one, a replay's, say, skips the sum over the nodes).
        self.idle = Resource()
        if minimums:
            used = Resource.sum(node.used for node in ssn.node_list)
            self.idle = ssn.total_resource.clone().multi(self.factor).sub_unchecked(used)

        # The refusal's wording per set of short dimensions (most refusals share one).
        refusals: dict[tuple[str, ...], str] = {}

        def enqueueable(job: JobInfo) -> Vote:
            minimum = job.podgroup.min_resources
            if minimum is None:
                return Vote.PERMIT
            fits, short = (self.inqueue + minimum).less_equal_with_dimension(self.idle, minimum)
            if fits:
                return Vote.PERMIT
            names = tuple(short)
            message = refusals.get(names)
            if message is None:
                message = refusals[names] = format_resource_names(
                    "resource in cluster is overused", "overused", short)
            ssn.record_event(job.uid, "Normal", "Unschedulable", message)
            return Vote.REJECT

        def enqueued(job: JobInfo) -> None:
            if job.podgroup.min_resources is not None:
                self.inqueue.add(deduct_scheduling_gated(job, job.podgroup.min_resources))

        ssn.add_job_enqueueable_fn(self.name, enqueueable)
        ssn.add_job_enqueued_fn(self.name, enqueued)

    def on_session_close(self, ssn: Session) -> None:
        self.idle = Resource()
        self.inqueue = Resource()

