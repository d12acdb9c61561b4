"""enqueue: admit Pending pod groups (Volcano's ``actions/enqueue``).

Only pod groups in phase Pending are considered; Inqueue, Running, Unknown and
Completed ones are left alone. Queues take turns in queue order, one job per
turn (job order within the queue):

* a job whose pod group has no ``minResources`` becomes Inqueue at once (an
  explicit empty ``minResources`` is still put to the vote);
* otherwise the enabled job-enqueueable functions vote (any reject keeps the job
  Pending; a permit within a tier, or no vote at all, admits it); an admitted job
  is reported to every enabled job-enqueued function and becomes Inqueue.

A queue goes back into the queue order after each turn, whatever happened to
its job, until it has no Pending job left. Since nothing enqueue changes is read
by the built-in queue orders, queues are in practice drained one after another.
Each job is considered exactly once per session.

A job refused admission stays Pending. Plugins that explain their refusal
record an event in Volcano's wording (proportion and capacity:
``queue resource quota insufficient: insufficient cpu``; overcommit:
``resource in cluster is overused: overused cpu``; resourcequota). When the
vote recorded no event on the job, the action records a Normal
``Unschedulable`` event, ``pod group is not enqueueable: rejected by the
job-enqueueable vote``, so that every refusal is visible. At session close the
job also gets Volcano's ``Unschedulable`` warning
(``<pending>/<tasks> tasks in gang unschedulable: ...``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from batchsched.api.job import JobInfo
from batchsched.api.priority_queue import PriorityQueue
from batchsched.api.types import PodGroupPhase
from batchsched.framework.arguments import Arguments

if TYPE_CHECKING:
    from batchsched.framework.session import Session

__all__ = ["NOT_ENQUEUEABLE", "EnqueueAction"]

#: Event message for a refused job whose refusal no plugin explained.
NOT_ENQUEUEABLE = "pod group is not enqueueable: rejected by the job-enqueueable vote"


class EnqueueAction:
    """Volcano's enqueue action. It takes no arguments."""

    name = "enqueue"

    def __init__(self, arguments: Arguments | None = None) -> None:
        self.arguments = arguments if arguments is not None else Arguments()
        self.arguments.warn_unknown(self.name, kind="action")

    def initialize(self) -> None:
        """Nothing to prepare."""

    def uninitialize(self) -> None:
        """Nothing to release."""

    def execute(self, ssn: Session) -> None:
        """Admit Pending jobs queue by queue, one job per queue turn."""
        queues = ssn.queue_priority_queue()
        seen: set[str] = set()
        pending_by_queue: dict[str, PriorityQueue[JobInfo]] = {}
        for job in ssn.jobs.values():
            queue = ssn.queues.get(job.queue)
            if queue is None:
                continue
            if queue.name not in seen:
                seen.add(queue.name)
                queues.push(queue)
            if job.is_pending():
                if job.queue not in pending_by_queue:
                    pending_by_queue[job.queue] = ssn.job_queue()
                pending_by_queue[job.queue].push(job)

        while queues:
            queue = queues.pop()
            jobs = pending_by_queue.get(queue.name)
            if not jobs:
                continue
            job = jobs.pop()
            events = ssn.events
            recorded = len(events)
            if job.podgroup.min_resources is None or ssn.job_enqueueable(job):
                ssn.job_enqueued(job)
                job.podgroup.phase = PodGroupPhase.INQUEUE
            elif not any(events[i].object == job.uid for i in range(recorded, len(events))):
                ssn.record_event(job.uid, "Normal", "Unschedulable", NOT_ENQUEUEABLE)
            queues.push(queue)
