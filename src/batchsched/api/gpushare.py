"""Volcano's GPU sharing devices: ``volcano.sh/gpu-memory`` and ``volcano.sh/gpu-number``
(Volcano's ``api/devices/nvidia/gpushare``, the model of ``deviceshare.GPUSharingEnable``
and ``deviceshare.GPUNumberEnable``).

A node has cards when its capacity holds both ``volcano.sh/gpu-memory`` (the memory of
all its cards) and a non-zero ``volcano.sh/gpu-number``: cards ``0`` to ``number - 1``,
each with ``memory // number``, less the ids its ``volcano.sh/gpu-unhealthy-ids``
annotation lists (comma-separated; an id that is not a number is skipped).

A pod asks ``volcano.sh/gpu-memory`` (memory on one card, in the node's unit) or
``volcano.sh/gpu-number`` (that many cards no pod uses). The cards it got are in its
``volcano.sh/gpu-index`` annotation (comma-separated ids), which is also how a node, in a
later snapshot, knows what a pod holds: a pod asking either resource is counted on the
cards its annotation names that the node has, and on none without the annotation.

:class:`GpuShareDevices` is a node's ledger: per card, the pods on it and the memory they
ask. A card's idle memory is its memory less theirs (never below 0); a card is idle when
no pod is on it. The deviceshare plugin checks a pod against it and, from the
predicates plugin's allocate handler as in Volcano, takes the cards: in sharing mode the
lowest-numbered card with enough idle memory; in number mode the first idle cards, in
card order (Volcano walks a Go map there, so its order is not fixed: the lowest ids are
one of its answers).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

import attrs

from batchsched.api.resource import Resource
from batchsched.kube.go_strconv import parse_int

if TYPE_CHECKING:
    from batchsched.api.task import TaskInfo

__all__ = [
    "GPU_INDEX_ANNOTATION",
    "GPU_MEMORY",
    "GPU_NUMBER",
    "PREDICATE_TIME_ANNOTATION",
    "UNHEALTHY_ANNOTATION",
    "GpuShareDevices",
    "drop_gpu_index",
    "gpu_index",
    "memory_asked",
    "number_asked",
]

GPU_MEMORY = "volcano.sh/gpu-memory"
GPU_NUMBER = "volcano.sh/gpu-number"
#: The cards a pod holds (Volcano's ``GPUIndex``), written when it is given them.
GPU_INDEX_ANNOTATION = "volcano.sh/gpu-index"
#: When the scheduler gave the pod its cards (Volcano's ``PredicateTime``, in ns).
PREDICATE_TIME_ANNOTATION = "volcano.sh/predicate-time"
#: The node's cards its device plugin found unhealthy (Volcano's ``UnhealthyGPUIDs``).
UNHEALTHY_ANNOTATION = "volcano.sh/gpu-unhealthy-ids"


def _value(milli: float) -> int:
    """Kubernetes' ``Quantity.Value()`` of a scalar kept in thousandths: rounded up."""
    return -(-round(milli) // 1000)


def memory_asked(request: Resource) -> int:
    """The ``volcano.sh/gpu-memory`` a request asks (0: none)."""
    milli = request.scalars.get(GPU_MEMORY, 0.0) if request.scalars else 0.0
    return max(0, _value(milli)) if milli else 0


def number_asked(request: Resource) -> int:
    """The ``volcano.sh/gpu-number`` a request asks (0: none)."""
    milli = request.scalars.get(GPU_NUMBER, 0.0) if request.scalars else 0.0
    return _value(milli) if milli else 0


def gpu_index(annotations: Mapping[str, str]) -> list[int] | None:
    """The card ids of a pod's ``volcano.sh/gpu-index`` (Volcano's ``GetGPUIndex``):
    None without the annotation or when an id is not a number."""
    value = annotations.get(GPU_INDEX_ANNOTATION)
    if value is None:
        return None
    ids: list[int] = []
    for part in value.split(","):
        card, ok = parse_int(part, 64)  # Go's strconv.Atoi
        if not ok:
            return None
        ids.append(card)
    return ids


def drop_gpu_index(task: TaskInfo) -> None:
    """Take off a task the annotations the scheduler wrote when it gave the pod cards
    (a pod created again does not carry them)."""
    if GPU_INDEX_ANNOTATION in task.annotations or PREDICATE_TIME_ANNOTATION in task.annotations:
        task.annotations = {key: value for key, value in task.annotations.items()
                            if key not in (GPU_INDEX_ANNOTATION, PREDICATE_TIME_ANNOTATION)}


@attrs.define(eq=False)
class GpuShareDevices:
    """A node's cards and the pods on them (see the module docstring)."""

    #: The memory of each card.
    memory: int
    #: Card id -> (pod uid -> the memory it asks), in card order.
    cards: dict[int, dict[str, int]]

    @classmethod
    def from_node(cls, capacity: Resource, annotations: Mapping[str, str]
                  ) -> GpuShareDevices | None:
        """The node's cards (Volcano's ``NewGPUDevices``), or None when its capacity does
        not name both resources or names no card."""
        scalars = capacity.scalars
        if not scalars or GPU_MEMORY not in scalars or GPU_NUMBER not in scalars:
            return None
        total = _value(scalars[GPU_MEMORY])
        number = _value(scalars[GPU_NUMBER])
        if number <= 0:
            return None
        per_card = total // number if total > 0 else 0
        cards: dict[int, dict[str, int]] = {i: {} for i in range(number)}
        unhealthy = annotations.get(UNHEALTHY_ANNOTATION)
        for part in unhealthy.split(",") if unhealthy is not None else ():
            card, ok = parse_int(part, 64)  # an id Atoi refuses: Volcano logs it, goes on
            if ok:
                cards.pop(card, None)
        return cls(per_card, cards)

    def clone(self) -> GpuShareDevices:
        return GpuShareDevices(self.memory, {i: dict(pods) for i, pods in self.cards.items()})

    # -- pods ------------------------------------------------------------------------------

    def add_task(self, uid: str, request: Resource, annotations: Mapping[str, str]) -> None:
        """A pod on the node (Volcano's ``AddResource``): counted on the cards its
        ``volcano.sh/gpu-index`` names, if it asks either resource."""
        memory = memory_asked(request)
        if memory <= 0 and number_asked(request) <= 0:
            return
        for card in gpu_index(annotations) or ():
            pods = self.cards.get(card)
            if pods is not None:
                pods[uid] = memory

    def take(self, uid: str, request: Resource, ids: list[int]) -> None:
        """Put the pod on the cards ``ids`` (Volcano's ``Allocate``)."""
        memory = memory_asked(request)
        for card in ids:
            self.cards[card][uid] = memory

    def remove_task(self, uid: str, annotations: Mapping[str, str]) -> None:
        """The pod leaves (Volcano's ``removePodFromDeviceMap``): off the cards its
        annotation names, or off every card without one."""
        ids = gpu_index(annotations)
        if not ids:
            for every in self.cards.values():
                every.pop(uid, None)
            return
        for card in ids:
            named = self.cards.get(card)
            if named is not None:
                named.pop(uid, None)

    def holds(self, uid: str) -> bool:
        return any(uid in pods for pods in self.cards.values())

    # -- what is free ----------------------------------------------------------------------

    def idle_memory(self, card: int) -> int:
        used = sum(self.cards[card].values())
        return 0 if used >= self.memory else self.memory - used

    def cards_with_memory(self, memory: int) -> list[int]:
        """The cards with at least ``memory`` idle, lowest id first (Volcano's
        ``predicateGPUbyMemory``)."""
        return sorted(card for card in self.cards if self.idle_memory(card) >= memory)

    def idle_cards(self, number: int) -> list[int]:
        """``number`` cards no pod uses, lowest id first, or [] when fewer are idle
        (Volcano's ``predicateGPUbyNumber``)."""
        idle = [card for card in sorted(self.cards) if not self.cards[card]]
        return idle[:number] if len(idle) >= number else []

    def check(self, tasks: Mapping[str, object]) -> None:
        """Every pod counted on a card is a task of the node."""
        for card, pods in self.cards.items():
            stray = [uid for uid in pods if uid not in tasks]
            assert not stray, f"GPU card {card} counts pods not on the node: {stray}"
