"""The Cache protocol: where a session's snapshot comes from and its decisions go."""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from batchsched.api.cluster import ClusterInfo
from batchsched.api.job import JobInfo
from batchsched.api.task import TaskInfo
from batchsched.framework.events import RecordedEvent

__all__ = ["Cache"]


@runtime_checkable
class Cache(Protocol):
    """What a host implements to drive sessions from its own cluster state.

    ``snapshot`` returns a ClusterInfo the session may mutate freely (a deep copy);
    ``bind`` and ``evict`` carry out one decision each and return whether it took
    effect: False refuses it without a reason (the task or node is gone), and a
    :class:`~batchsched.errors.SchedulingError` refuses it with one, which the
    session's ``failed to bind to node`` event then carries (:class:`MemoryCache`
    raises for a node filled since the snapshot, a task placed since); any other
    exception is the host failing, kept in the session's ``host_errors``.
    ``update_job_status`` receives a job whose pod-group phase and
    conditions were updated at session close; ``record_event`` receives events on
    tasks and jobs.

    A cache may also offer ``update_job_statuses(jobs)``: every job's status at
    once, instead of ``update_job_status`` job by job, and then the jobs' events (if
    it raises, the failure is kept in the session's ``host_errors`` and the statuses
    go over again one by one). A cache object carrying its own ``update_job_status``
    or ``record_event`` (set on the object) gets them one by one, each status before
    its job's event.

    A cache may also offer ``unbind(task, reason)`` (take back a bind it accepted,
    when a failed bind left the task's gang below its minimum; without it the
    session evicts) and ``nominate(task, node_name)`` (a preemptor was pipelined
    on a node where its victims were evicted: kube-scheduler's nominated node; an
    empty ``node_name`` clears a nomination a preemption then found nothing for,
    nothing leaving the node for the task any more).

    A cache may also offer ``annotate_node(node_name, key, value)``: a plugin writes
    an annotation on a node at once, whatever becomes of the statement (deviceshare's
    node lock, :mod:`batchsched.api.node_lock`, as Volcano writes it on the API
    server); without it the annotation lives in the session only.

    A cache may also carry ``keep_events = False`` (an attribute outside the
    protocol, read with ``getattr``): sessions then skip building the warnings
    that only describe a decision (a long simulated replay would build millions).
    Decisions do not depend on it.
    """

    def snapshot(self) -> ClusterInfo: ...

    def bind(self, task: TaskInfo, node_name: str) -> bool: ...

    def evict(self, task: TaskInfo, reason: str) -> bool: ...

    def update_job_status(self, job: JobInfo) -> None: ...

    def record_event(self, event: RecordedEvent) -> None: ...
