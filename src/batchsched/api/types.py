"""Statuses, phases and the small value types shared by the data model."""

from __future__ import annotations

import enum
from collections.abc import Mapping
from types import MappingProxyType

import attrs

__all__ = [
    "ALLOCATED_STATUSES",
    "COMPLETED_STATUSES",
    "GO_MAX_DURATION",
    "GO_ZERO_TIME",
    "NO_COUNTS",
    "NO_LABELS",
    "PREEMPTABLE_STATUSES",
    "SCHEDULED_STATUSES",
    "FitStatusCode",
    "NodePhase",
    "PodGroupConditionType",
    "PodGroupPhase",
    "QueueState",
    "TaskStatus",
    "Vote",
    "allocated_status",
    "completed_status",
    "preemptable_status",
    "scheduled_status",
]

#: The read-only empty mapping every task, pod group and job without labels,
#: annotations or a node selector shares (a large cluster has hundreds of thousands
#: of them, and one empty dict each costs 64 bytes): these mappings are read-only
#: once the object is built, so an object given others replaces the whole mapping.
NO_LABELS: Mapping[str, str] = MappingProxyType({})
#: The same for per-role counts (a pod group's ``minTaskMember``).
NO_COUNTS: Mapping[str, int] = MappingProxyType({})

#: Go's zero ``time.Time`` (0001-01-01T00:00:00Z) in seconds since the epoch: the
#: creation time of an object that has none (a scenario object without ``createdAt``).
GO_ZERO_TIME = -62135596800.0
#: Go's longest ``time.Duration`` in seconds: ``time.Since`` saturates there.
GO_MAX_DURATION = 9223372036.854775807


class TaskStatus(enum.IntEnum):
    """A task's status in a session (Volcano's ``api.TaskStatus``, same values)."""

    PENDING = 1
    ALLOCATED = 2
    PIPELINED = 4
    BINDING = 8
    BOUND = 16
    RUNNING = 32
    RELEASING = 64
    SUCCEEDED = 128
    FAILED = 256
    UNKNOWN = 512

    def __str__(self) -> str:
        return self.name.capitalize()

    @classmethod
    def parse(cls, text: str) -> TaskStatus:
        """``"Pending"`` (any case) to ``TaskStatus.PENDING``."""
        return cls[text.upper()]


#: Holding resources on a node: Bound, Binding, Running, Allocated.
ALLOCATED_STATUSES = frozenset(
    {TaskStatus.BOUND, TaskStatus.BINDING, TaskStatus.RUNNING, TaskStatus.ALLOCATED}
)
#: Counted as scheduled by the pod-group phase rule: Running, Bound, Succeeded, Failed.
SCHEDULED_STATUSES = frozenset(
    {TaskStatus.RUNNING, TaskStatus.BOUND, TaskStatus.SUCCEEDED, TaskStatus.FAILED}
)
#: May be chosen as a preemption victim: Bound, Running.
PREEMPTABLE_STATUSES = frozenset({TaskStatus.BOUND, TaskStatus.RUNNING})
#: Finished: Succeeded, Failed.
COMPLETED_STATUSES = frozenset({TaskStatus.SUCCEEDED, TaskStatus.FAILED})


def allocated_status(status: TaskStatus) -> bool:
    return status in ALLOCATED_STATUSES


def scheduled_status(status: TaskStatus) -> bool:
    return status in SCHEDULED_STATUSES


def preemptable_status(status: TaskStatus) -> bool:
    return status in PREEMPTABLE_STATUSES


def completed_status(status: TaskStatus) -> bool:
    return status in COMPLETED_STATUSES


class PodGroupPhase(str, enum.Enum):
    """A pod group's phase (Volcano's ``PodGroupPhase``)."""

    PENDING = "Pending"
    RUNNING = "Running"
    UNKNOWN = "Unknown"
    INQUEUE = "Inqueue"
    COMPLETED = "Completed"

    def __str__(self) -> str:
        return self.value


class PodGroupConditionType(str, enum.Enum):
    UNSCHEDULABLE = "Unschedulable"
    SCHEDULED = "Scheduled"

    def __str__(self) -> str:
        return self.value


class QueueState(str, enum.Enum):
    OPEN = "Open"
    CLOSED = "Closed"
    CLOSING = "Closing"
    UNKNOWN = "Unknown"

    def __str__(self) -> str:
        return self.value


class NodePhase(str, enum.Enum):
    READY = "Ready"
    NOT_READY = "NotReady"

    def __str__(self) -> str:
        return self.value


class FitStatusCode(enum.IntEnum):
    """Outcome of a predicate (Volcano's status codes, same values)."""

    SUCCESS = 0
    ERROR = 1
    UNSCHEDULABLE = 2
    UNSCHEDULABLE_AND_UNRESOLVABLE = 3
    WAIT = 4
    SKIP = 5


class Vote(enum.IntEnum):
    """A plugin's answer to a voting point (job enqueueable, job pipelined)."""

    REJECT = -1
    ABSTAIN = 0
    PERMIT = 1


@attrs.frozen
class PodGroupCondition:
    """A condition set on a pod group at session close (gang's Unschedulable / Scheduled)."""

    type: PodGroupConditionType
    status: str
    reason: str
    message: str
    transition_id: str = ""
