"""What a task's resource claims ask for, by device class, as Volcano counts it for queues.

Volcano's cache works this out when a pod arrives (``buildTaskDRAInfo``) from its
claims' specs, not from what was allocated: for each of the pod's claims, each
request ``exactly`` some number of devices of a class counts that many devices
of the class, and, with consumable capacity, that many times the capacity it
asks of each (``allocationMode: All`` and ``firstAvailable`` requests are not
counted: Volcano cannot tell their size in advance). The queue status written at
session close (``deviceclass/<class>`` and ``<capacity>.deviceclass/<class>`` in
``allocated``) and the capacity plugin's device quota read it; a claim several
tasks of a queue share counts once for the queue.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from fractions import Fraction

import attrs

from batchsched.api.task import TaskInfo
from batchsched.kube.dra.claims import claim_keys
from batchsched.kube.dra.objects import EXACT_COUNT, ResourceClaim

__all__ = [
    "CAPACITY_SEPARATOR",
    "DEVICE_CLASS_PREFIX",
    "INT64_MAX",
    "ClaimDevices",
    "DeviceAmount",
    "add_amounts",
    "device_resources",
    "new_claim_devices",
    "task_claim_devices",
    "total_amounts",
]

#: The queue resource name of a device class's device count (``deviceclass/gpu``).
DEVICE_CLASS_PREFIX = "deviceclass/"
#: Between a capacity and its class in a queue resource name (``memory.deviceclass/gpu``).
CAPACITY_SEPARATOR = ".deviceclass/"
#: Counts saturate here, as Volcano's int64 arithmetic does.
INT64_MAX = 2**63 - 1


@attrs.define
class DeviceAmount:
    """Devices of one class: how many, and how much of each capacity."""

    count: int = 0
    capacity: dict[str, Fraction] = attrs.field(factory=dict)

    def clone(self) -> DeviceAmount:
        return DeviceAmount(self.count, dict(self.capacity))

    def add(self, other: DeviceAmount, times: int = 1) -> None:
        """Add ``times`` ``other`` (counts saturate at the largest 64-bit integer)."""
        self.count = min(self.count + other.count * times, INT64_MAX)
        for name, amount in other.capacity.items():
            self.capacity[name] = self.capacity.get(name, Fraction(0)) + amount * times

    def sub(self, other: DeviceAmount) -> None:
        """Take ``other`` away, never below 0 (capacities only where present)."""
        self.count = max(0, self.count - other.count)
        for name, amount in other.capacity.items():
            if name in self.capacity:
                self.capacity[name] = max(Fraction(0), self.capacity[name] - amount)


#: Claim key -> device class -> what the claim asks of the class.
ClaimDevices = dict[str, dict[str, DeviceAmount]]


def add_amounts(target: dict[str, DeviceAmount], more: Mapping[str, DeviceAmount],
                times: int = 1) -> None:
    """Add every class of ``more`` (``times`` over) to ``target``."""
    for device_class, amount in more.items():
        target.setdefault(device_class, DeviceAmount()).add(amount, times)


def task_claim_devices(task: TaskInfo, claims: Mapping[str, ResourceClaim], *,
                       capacity: bool = True) -> ClaimDevices:
    """What each of the task's claims asks for, by class (claims in key order; claims
    that ask for nothing countable, or that are not found, left out). ``capacity``:
    count the capacities requests ask for (Volcano's DRAConsumableCapacity gate)."""
    out: ClaimDevices = {}
    for key in sorted(set(claim_keys(task.namespace, task.name, task.resource_claims))):
        claim = claims.get(key)
        if claim is None:
            continue
        per_class: dict[str, DeviceAmount] = {}
        for request in claim.requests:
            spec = request.exactly
            if spec is None or spec.allocation_mode != EXACT_COUNT or not spec.device_class_name:
                continue
            count = spec.count or 1
            asked = DeviceAmount(count, {name: amount * count for name, amount
                                         in spec.capacity_requests.items()} if capacity else {})
            per_class.setdefault(spec.device_class_name, DeviceAmount()).add(asked)
        if per_class:
            out[key] = per_class
    return out


def device_resources(device_class: str, amount: DeviceAmount) -> dict[str, float]:
    """The queue resources (scalars, in milli-units) naming a class's devices:
    ``deviceclass/<class>`` for the count, ``<capacity>.deviceclass/<class>`` for
    each capacity (zeros left out, as Volcano writes them)."""
    out: dict[str, float] = {}
    if amount.count > 0:
        out[DEVICE_CLASS_PREFIX + device_class] = amount.count * 1000.0
    for dimension, value in amount.capacity.items():
        if value:
            out[f"{dimension}{CAPACITY_SEPARATOR}{device_class}"] = float(value * 1000)
    return out


def new_claim_devices(tasks: Iterable[TaskInfo], claims: Mapping[str, ResourceClaim],
                      seen: set[str]) -> dict[str, DeviceAmount]:
    """What the tasks' claims not in ``seen`` ask for, by class; their keys join
    ``seen`` (a claim counts once)."""
    out: dict[str, DeviceAmount] = {}
    for task in tasks:
        if not task.resource_claims:
            continue
        for key, per_class in task_claim_devices(task, claims).items():
            if key not in seen:
                seen.add(key)
                add_amounts(out, per_class)
    return out


def total_amounts(per_claim: Iterable[Mapping[str, DeviceAmount]]) -> dict[str, DeviceAmount]:
    """The classes of several claims added up."""
    out: dict[str, DeviceAmount] = {}
    for per_class in per_claim:
        add_amounts(out, per_class)
    return out
