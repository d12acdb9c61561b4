"""What a task's resource claims ask for, by device class, as Volcano counts it for queues.

Volcano's cache works this out when a pod arrives (``buildTaskDRAInfo``) from its
claims' specs, not from what was allocated: for each of the pod's claims, each
request ``exactly`` some number of devices of a class counts that many devices
of the class (``allocationMode: All`` and ``firstAvailable`` requests are not
counted: Volcano cannot tell their size in advance). The queue status written at
session close (``deviceclass/<class>`` in ``allocated``) and the capacity
plugin's device quota read it; a claim several tasks of a queue share counts
once for the queue.
"""

from __future__ import annotations

from collections.abc import Mapping

from batchsched.api.task import TaskInfo
from batchsched.kube.dra.claims import claim_keys
from batchsched.kube.dra.objects import EXACT_COUNT, ResourceClaim

__all__ = ["DEVICE_CLASS_PREFIX", "ClaimDevices", "task_claim_devices"]

#: The queue resource name of a device class's device count (``deviceclass/gpu``).
DEVICE_CLASS_PREFIX = "deviceclass/"

#: Claim key -> device class -> number of devices.
ClaimDevices = dict[str, dict[str, int]]


def task_claim_devices(task: TaskInfo, claims: Mapping[str, ResourceClaim]) -> ClaimDevices:
    """The devices each of the task's claims asks for, by class (claims in key order;
    claims that ask for none counted, claims not found left out)."""
    out: ClaimDevices = {}
    for key in sorted(set(claim_keys(task.namespace, task.name, task.resource_claims))):
        claim = claims.get(key)
        if claim is None:
            continue
        per_class: dict[str, int] = {}
        for request in claim.requests:
            spec = request.exactly
            if spec is None or spec.allocation_mode != EXACT_COUNT or not spec.device_class_name:
                continue
            per_class[spec.device_class_name] = per_class.get(spec.device_class_name, 0) + (
                spec.count or 1)
        if per_class:
            out[key] = per_class
    return out
