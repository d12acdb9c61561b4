"""The capacity plugin's quota on devices claimed through Dynamic Resource Allocation.

A queue limits the devices of a class its tasks' claims may ask for with a
``deviceclass/<class>`` entry in its ``capability`` (a count; 0 is no limit), as
Volcano's capacity plugin reads it (``capacity.DynamicResourceAllocationEnable``,
on by default, as its feature gate). A queue with such an entry in its
capability, deserved or guarantee keeps a device quota (only capability is
enforced, as in Volcano):

* **allocated**: the devices of its placed tasks' claims
  (:func:`~batchsched.api.dra_usage.task_claim_devices`), a claim shared by
  several of its tasks counted once (reference counts per claim);
* **allocatable**: a task whose claims not yet counted in the queue would take a
  class over its capability is not allocatable (what waits in ``inqueue`` is not
  counted here);
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
from collections.abc import Iterable, Mapping

import attrs

from batchsched.api.dra_usage import DEVICE_CLASS_PREFIX, task_claim_devices
from batchsched.api.job import JobInfo
from batchsched.api.queue import QueueInfo
from batchsched.api.resource import Resource
from batchsched.api.task import TaskInfo
from batchsched.kube.dra.objects import ResourceClaim

__all__ = ["DRA_RESOURCE_EXCEEDED", "DeviceQuota", "job_min_devices", "merge_devices"]

#: The reason an enqueue check gives for a job over a queue's device quota.
DRA_RESOURCE_EXCEEDED = "dra-resource-exceeded"
_INT64_MAX = 2**63 - 1

Devices = dict[str, int]


def _counts(resource: Resource | None) -> Devices | None:
    if resource is None:
        return None
    out = {name[len(DEVICE_CLASS_PREFIX):]: math.ceil(amount / 1000.0)
           for name, amount in resource.scalars.items()
           if name.startswith(DEVICE_CLASS_PREFIX) and name != DEVICE_CLASS_PREFIX}
    return out or None


def _saturating(value: int) -> int:
    return min(value, _INT64_MAX)


@attrs.define
class DeviceQuota:
    """One queue's device figures for the session (see the module docstring)."""

    capability: Devices = attrs.field(factory=dict)
    allocated: Devices = attrs.field(factory=dict)
    inqueue: Devices = attrs.field(factory=dict)
    claim_refs: dict[str, int] = attrs.field(factory=dict)

    @classmethod
    def of(cls, queue: QueueInfo) -> DeviceQuota | None:
        """The queue's quota; None when its spec names no device class."""
        capability = _counts(queue.capability)
        if capability is None and _counts(queue.deserved) is None \
                and _counts(queue.guarantee) is None:
            return None
        return cls(capability=capability or {})

    def clone(self) -> DeviceQuota:
        return DeviceQuota(dict(self.capability), dict(self.allocated), dict(self.inqueue),
                           dict(self.claim_refs))

    def new_claims(self, task: TaskInfo, claims: Mapping[str, ResourceClaim]) -> Devices:
        """What the task's claims not yet counted in this queue ask for."""
        out: Devices = {}
        for key, per_class in task_claim_devices(task, claims).items():
            if self.claim_refs.get(key, 0) == 0:
                _merge(out, per_class)
        return out

    def add_task(self, task: TaskInfo, claims: Mapping[str, ResourceClaim]) -> Devices:
        """Count the task's claims (each once per queue); the devices newly counted."""
        added: Devices = {}
        for key, per_class in task_claim_devices(task, claims).items():
            if self.claim_refs.get(key, 0) == 0:
                _merge(added, per_class)
            self.claim_refs[key] = self.claim_refs.get(key, 0) + 1
        _merge(self.allocated, added)
        return added

    def remove_task(self, task: TaskInfo, claims: Mapping[str, ResourceClaim]) -> None:
        """Stop counting the task's claims (a claim goes when its last task does)."""
        for key, per_class in task_claim_devices(task, claims).items():
            refs = self.claim_refs.get(key, 0)
            if refs <= 1:
                self.claim_refs.pop(key, None)
                for device_class, count in per_class.items():
                    if device_class in self.allocated:
                        self.allocated[device_class] = max(
                            0, self.allocated[device_class] - count)
            else:
                self.claim_refs[key] = refs - 1

    def admits(self, request: Devices, *, with_inqueue: bool) -> bool:
        """Whether ``request`` fits every class's capability (a class without one, or
        with 0, is not limited)."""
        for device_class, count in request.items():
            limit = self.capability.get(device_class, 0)
            if limit <= 0:
                continue
            used = self.allocated.get(device_class, 0)
            if with_inqueue:
                used = _saturating(used + self.inqueue.get(device_class, 0))
            if _saturating(used + count) > limit:
                return False
        return True


def _merge(target: Devices, more: Mapping[str, int]) -> None:
    for device_class, count in more.items():
        target[device_class] = _saturating(target.get(device_class, 0) + count)


def merge_devices(target: Devices, more: Mapping[str, int]) -> None:
    """Add ``more`` to ``target`` (counts saturate at the largest 64-bit integer)."""
    _merge(target, more)


def job_min_devices(job: JobInfo, claims: Mapping[str, ResourceClaim]) -> Devices | None:
    """The devices the job needs to start (Volcano's ``GetMinDRAResources``): without
    per-role minimums, those of its first ``minAvailable`` tasks with claims (by
    namespace, name, uid); with them, one task's per role times the role's minimum
    (the first by name: Volcano takes any). None when it needs none."""
    tasks = [task for task in job.tasks.values() if task.resource_claims]
    if not tasks:
        return None
    requests = {task.uid: _total(task_claim_devices(task, claims).values()) for task in tasks}
    out: Devices = {}
    if not job.task_min_available:
        if job.min_available <= 0:
            return None
        ordered = sorted(tasks, key=lambda t: (t.namespace, t.name, t.uid))
        for task in [t for t in ordered if requests[t.uid]][:job.min_available]:
            _merge(out, requests[task.uid])
        return out or None
    done: set[str] = set()
    for task in sorted(tasks, key=lambda t: (t.namespace, t.name, t.uid)):
        minimum = job.task_min_available.get(task.role, 0)
        if not requests[task.uid] or minimum <= 0 or task.role in done:
            continue
        done.add(task.role)
        _merge(out, {c: _saturating(n * minimum) for c, n in requests[task.uid].items()})
    return out or None


def _total(per_claim: Iterable[Mapping[str, int]]) -> Devices:
    out: Devices = {}
    for per_class in per_claim:
        _merge(out, per_class)
    return out
