"""The capacity plugin's quota on devices claimed through Dynamic Resource Allocation.

A queue limits the devices of a class its tasks' claims may ask for with a
``deviceclass/<class>`` entry in its ``capability`` (a count; 0 is no limit), and
the capacity they ask of them with ``<capacity>.deviceclass/<class>`` entries
(``capacity.DRAConsumableCapacityEnable``), as Volcano's capacity plugin reads
them (``capacity.DynamicResourceAllocationEnable``, on by default, as its feature
gate). A queue with such an entry in its
capability, deserved or guarantee keeps a device quota (only capability is
enforced, as in Volcano):

* **allocated**: the devices of its placed tasks' claims
  (:func:`~batchsched.api.dra_usage.task_claim_devices`), a claim shared by
  several of its tasks counted once (reference counts per claim);
* **allocatable**: a task whose claims not yet counted in the queue would take a
  class over its capability is not allocatable (what waits in ``inqueue`` is not
  counted here); with consumable capacity, a claim asking a capacity the queue's
  capability does not name for its class is refused too (Volcano's rule);
* **enqueueable**: a job whose minimum device request (that of its first
  ``minAvailable`` tasks by name, or of one task per role times the role's
  minimum) plus what the queue holds and has admitted would exceed a capability
  is rejected (``dra-resource-exceeded``); an admitted job's minimum joins
  ``inqueue``.

With hierarchical queues every ancestor that has a device quota counts too. Volcano
counts at session open only the classes an ancestor's capability names, in its
events every class: both are kept.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from fractions import Fraction

import attrs

from batchsched.api.dra_usage import (
    CAPACITY_SEPARATOR,
    DEVICE_CLASS_PREFIX,
    INT64_MAX,
    DeviceAmount,
    add_amounts,
    task_claim_devices,
    total_amounts,
)
from batchsched.api.job import JobInfo
from batchsched.api.queue import QueueInfo
from batchsched.api.resource import Resource
from batchsched.api.task import TaskInfo
from batchsched.kube.dra.objects import ResourceClaim

__all__ = ["DRA_RESOURCE_EXCEEDED", "DeviceQuota", "Devices", "job_min_devices"]

#: The reason an enqueue check gives for a job over a queue's device quota.
DRA_RESOURCE_EXCEEDED = "dra-resource-exceeded"

#: Device class -> devices and capacities.
Devices = dict[str, DeviceAmount]


def _amounts(resource: Resource | None) -> Devices | None:
    """The ``deviceclass/`` entries of a queue's resource list (scalars in milli-units):
    counts rounded up, capacities as quantities."""
    if resource is None:
        return None
    out: Devices = {}
    for name, milli in resource.scalars.items():
        separator = name.find(CAPACITY_SEPARATOR)
        if separator > 0:
            dimension = name[:separator]
            device_class = name[separator + len(CAPACITY_SEPARATOR):]
            if dimension and device_class:
                out.setdefault(device_class, DeviceAmount()).capacity[dimension] = (
                    Fraction(milli) / 1000)
        elif name.startswith(DEVICE_CLASS_PREFIX) and name != DEVICE_CLASS_PREFIX:
            out.setdefault(name[len(DEVICE_CLASS_PREFIX):], DeviceAmount()).count = math.ceil(
                milli / 1000.0)
    return out or None


@attrs.define
class DeviceQuota:
    """One queue's device figures for the session (see the module docstring)."""

    capability: Devices = attrs.field(factory=dict)
    allocated: Devices = attrs.field(factory=dict)
    inqueue: Devices = attrs.field(factory=dict)
    claim_refs: dict[str, int] = attrs.field(factory=dict)

    @classmethod
    def of(cls, queue: QueueInfo,
           written: Callable[[QueueInfo, str], Resource | None] | None = None
           ) -> DeviceQuota | None:
        """The queue's quota; None when its spec names no device class. ``written``
        gives a field of the queue's spec as written (``Session.queue_quota_as_written``:
        a device capacity's or class's name need not be a resource name Volcano
        counts, and Volcano reads these entries from the spec itself); without it,
        the queue's own fields."""
        def field(name: str) -> Resource | None:
            return written(queue, name) if written is not None else getattr(queue, name)

        capability = _amounts(field("capability"))
        if capability is None and _amounts(field("deserved")) is None \
                and _amounts(field("guarantee")) is None:
            return None
        return cls(capability=capability or {})

    def clone(self) -> DeviceQuota:
        def copy(devices: Devices) -> Devices:
            return {c: amount.clone() for c, amount in devices.items()}
        return DeviceQuota(copy(self.capability), copy(self.allocated), copy(self.inqueue),
                           dict(self.claim_refs))

    def new_claims(self, task: TaskInfo, claims: Mapping[str, ResourceClaim],
                   *, capacity: bool = True) -> Devices:
        """What the task's claims not yet counted in this queue ask for."""
        out: Devices = {}
        for key, per_class in task_claim_devices(task, claims, capacity=capacity).items():
            if self.claim_refs.get(key, 0) == 0:
                add_amounts(out, per_class)
        return out

    def add_task(self, task: TaskInfo, claims: Mapping[str, ResourceClaim],
                 *, capacity: bool = True) -> Devices:
        """Count the task's claims (each once per queue); the devices newly counted."""
        added: Devices = {}
        for key, per_class in task_claim_devices(task, claims, capacity=capacity).items():
            if self.claim_refs.get(key, 0) == 0:
                add_amounts(added, per_class)
            self.claim_refs[key] = self.claim_refs.get(key, 0) + 1
        add_amounts(self.allocated, added)
        return added

    def remove_task(self, task: TaskInfo, claims: Mapping[str, ResourceClaim],
                    *, capacity: bool = True) -> None:
        """Stop counting the task's claims (a claim goes when its last task does)."""
        for key, per_class in task_claim_devices(task, claims, capacity=capacity).items():
            refs = self.claim_refs.get(key, 0)
            if refs <= 1:
                self.claim_refs.pop(key, None)
                for device_class, amount in per_class.items():
                    if device_class in self.allocated:
                        self.allocated[device_class].sub(amount)
            else:
                self.claim_refs[key] = refs - 1

    def admits(self, request: Mapping[str, DeviceAmount], *, with_inqueue: bool,
               capacity: bool = True) -> bool:
        """Whether ``request`` fits every class's capability: its count (a class without
        one, or with 0, is not limited) and, with ``capacity``, each capacity it asks
        (one the capability does not name for the class is refused)."""
        for device_class, asked in request.items():
            limit = self.capability.get(device_class)
            if limit is None:
                continue
            held = self.allocated.get(device_class, DeviceAmount())
            waiting = self.inqueue.get(device_class, DeviceAmount()) if with_inqueue \
                else DeviceAmount()
            if limit.count > 0 and min(held.count + waiting.count + asked.count,
                                       INT64_MAX) > limit.count:
                return False
            if not capacity:
                continue
            for dimension, amount in asked.capacity.items():
                cap = limit.capacity.get(dimension)
                if cap is None:
                    return False
                used = held.capacity.get(dimension, 0) + waiting.capacity.get(dimension, 0)
                if used + amount > cap:
                    return False
        return True


def job_min_devices(job: JobInfo, claims: Mapping[str, ResourceClaim],
                    *, capacity: bool = True) -> Devices | None:
    """The devices the job needs to start (Volcano's ``GetMinDRAResources``): without
    per-role minimums, those of its first ``minAvailable`` tasks with claims (by
    namespace, name, uid); with them, one task's per role times the role's minimum
    (the first by name: Volcano takes any). None when it needs none."""
    tasks = sorted((task for task in job.tasks.values() if task.resource_claims),
                   key=lambda t: (t.namespace, t.name, t.uid))
    if not tasks:
        return None
    requests = {task.uid: total_amounts(
        task_claim_devices(task, claims, capacity=capacity).values()) for task in tasks}
    out: Devices = {}
    if not job.task_min_available:
        if job.min_available <= 0:
            return None
        for task in [t for t in tasks if requests[t.uid]][:job.min_available]:
            add_amounts(out, requests[task.uid])
        return out or None
    done: set[str] = set()
    for task in tasks:
        minimum = job.task_min_available.get(task.role, 0)
        if not requests[task.uid] or minimum <= 0 or task.role in done:
            continue
        done.add(task.role)
        add_amounts(out, requests[task.uid], minimum)
    return out or None
