"""QueueInfo: a tenant's queue (seed 000 §4.3)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import attrs

from batchsched.api.resource import CPU, MEMORY, Resource, format_quantity
from batchsched.api.types import QueueState

__all__ = ["ROOT_QUEUE", "NodeGroupAffinity", "QueueInfo", "QueueStatus"]

#: The queue every queue without a parent hangs from, when it exists (hierarchical queues).
ROOT_QUEUE = "root"

HIERARCHY_ANNOTATION = "volcano.sh/hierarchy"
HIERARCHY_WEIGHTS_ANNOTATION = "volcano.sh/hierarchy-weights"


@attrs.frozen
class NodeGroupAffinity:
    """A queue's node-group affinity rules (read by the nodegroup plugin)."""

    required: tuple[str, ...] = ()
    preferred: tuple[str, ...] = ()
    anti_required: tuple[str, ...] = ()
    anti_preferred: tuple[str, ...] = ()

    @property
    def empty(self) -> bool:
        return not (self.required or self.preferred or self.anti_required or self.anti_preferred)


@attrs.define
class QueueStatus:
    """What a session writes on its queue at close (Volcano's ``QueueStatus``): the
    resources its jobs hold, and how many of its pod groups are in each phase."""

    allocated: Resource = attrs.field(factory=Resource)
    pending: int = 0
    inqueue: int = 0
    running: int = 0
    unknown: int = 0
    completed: int = 0

    def to_json(self) -> dict[str, Any]:
        # cpu and memory always, and every scalar the sum holds, a zero too (a task
        # asking 0 of a resource), as Volcano's ConvertRes2ResList writes the status.
        held = self.allocated
        allocated = {"cpu": format_quantity(CPU, held.milli_cpu),
                     "memory": format_quantity(MEMORY, held.memory),
                     **{name: format_quantity(name, amount)
                        for name, amount in held.scalars.items()}}
        return {"allocated": allocated,
                "podGroups": {"Pending": self.pending, "Inqueue": self.inqueue,
                              "Running": self.running, "Unknown": self.unknown,
                              "Completed": self.completed}}


@attrs.define(eq=False, repr=False)
class QueueInfo:
    """A queue.

    ``capability``, ``deserved`` and ``guarantee`` are ``None`` when the queue
    does not set them; :meth:`defines` tells whether a dimension was written
    out (Volcano distinguishes an unset cpu from ``cpu: 0``).
    """

    name: str
    weight: int = 1
    capability: Resource | None = None
    deserved: Resource | None = None
    guarantee: Resource | None = None
    reclaimable: bool = True
    parent: str = ""
    priority: int = 0
    state: QueueState = QueueState.OPEN
    annotations: dict[str, str] = attrs.field(factory=dict)
    affinity: NodeGroupAffinity | None = None
    creation_time: float = 0.0
    defined: Mapping[str, frozenset[str]] = attrs.field(factory=dict)
    #: Written at session close (:class:`QueueStatus`).
    status: QueueStatus = attrs.field(factory=QueueStatus)

    @property
    def uid(self) -> str:
        return self.name

    @property
    def hierarchy(self) -> str:
        """``volcano.sh/hierarchy`` (e.g. ``root/eng/prod``), read by hierarchical drf."""
        return self.annotations.get(HIERARCHY_ANNOTATION, "")

    @property
    def weights(self) -> str:
        """``volcano.sh/hierarchy-weights`` (e.g. ``1/2/8``)."""
        return self.annotations.get(HIERARCHY_WEIGHTS_ANNOTATION, "")

    @property
    def is_open(self) -> bool:
        return self.state == QueueState.OPEN

    def defines(self, field: str, dimension: str) -> bool:
        """Whether the spec wrote ``dimension`` in ``field`` (capability/deserved/guarantee)."""
        names = self.defined.get(field)
        if names is not None:
            return dimension in names
        res: Resource | None = getattr(self, field)
        if res is None:
            return False
        if dimension in (CPU, MEMORY):
            return res.get(dimension) > 0
        return dimension in res.scalars

    def clone(self) -> QueueInfo:
        return attrs.evolve(
            self,
            capability=self.capability.clone() if self.capability else None,
            deserved=self.deserved.clone() if self.deserved else None,
            guarantee=self.guarantee.clone() if self.guarantee else None,
            annotations=dict(self.annotations),
            status=attrs.evolve(self.status, allocated=self.status.allocated.clone()),
        )

    def __repr__(self) -> str:
        return f"<Queue {self.name} weight={self.weight} state={self.state}>"
