"""Allocate/deallocate event handlers, recorded events, and validation results."""

from __future__ import annotations

import enum
from collections.abc import Callable

import attrs

from batchsched.api.job import JobInfo
from batchsched.api.task import TaskInfo

__all__ = [
    "EVENT_FIELDS",
    "Event",
    "EventHandler",
    "EvictionContext",
    "EvictionKind",
    "RecordedEvent",
    "ValidateResult",
]


@attrs.define
class Event:
    """What an allocate/deallocate handler receives: the task that moved."""

    task: TaskInfo


@attrs.frozen
class EventHandler:
    """Callbacks run when a statement places a task on a node (``allocate``: allocate
    and pipeline) or takes it off (``deallocate``: evict, and the undo of a placement).

    Plugins keep their shares and counters current with these; a handler that
    raises makes the statement undo the operation and raise
    :class:`~batchsched.errors.PluginError`.
    """

    allocate: Callable[[Event], None] | None = None
    deallocate: Callable[[Event], None] | None = None
    plugin: str = ""


#: The attributes of a :class:`RecordedEvent`, as :meth:`RecordedEvent.to_dict` names
#: them, in its order.
EVENT_FIELDS = ("object", "type", "reason", "message")


@attrs.frozen
class RecordedEvent:
    """An event on a task or job, as Kubernetes would record it."""

    object: str
    type: str
    reason: str
    message: str

    def to_dict(self) -> dict[str, str]:
        return {"object": self.object, "type": self.type, "reason": self.reason,
                "message": self.message}


@attrs.frozen
class ValidateResult:
    """A job-valid verdict: ``passed`` false keeps the job out of this session."""

    passed: bool
    reason: str = ""
    message: str = ""


class EvictionKind(enum.Enum):
    """Which kind of eviction asks ``unified_evictable`` (Volcano's ``EvictionKind``)."""

    UNKNOWN = "Unknown"
    GANG_PREEMPT = "GangPreempt"
    GANG_RECLAIM = "GangReclaim"
    TASK_PREEMPT = "TaskPreempt"
    TASK_RECLAIM = "TaskReclaim"


@attrs.frozen
class EvictionContext:
    """Who evicts, for ``unified_evictable``: the kind of eviction and the evicting job
    (``task`` only for task-level kinds), and the hypernode whose nodes the victims
    are taken from (the whole cluster's virtual root when the job has no topology)."""

    kind: EvictionKind
    job: JobInfo
    task: TaskInfo | None = None
    hyper_node: str = "<cluster-top-hypernode>"
