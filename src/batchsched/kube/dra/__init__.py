"""Dynamic Resource Allocation (``resource.k8s.io/v1``) as kube-scheduler decides it.

==============================================  ========================================
module                                          what it answers
==============================================  ========================================
:mod:`~batchsched.kube.dra.objects`              device classes, resource slices, claims
                                                and claim templates
:mod:`~batchsched.kube.dra.documents`            the same, read from documents (checked as
                                                the API server checks them)
:mod:`~batchsched.kube.dra.pools`                the slices a node can use, as pools, and
                                                their shared counters
:mod:`~batchsched.kube.dra.devices`              a device's CEL view, selector verdicts and
                                                consumable capacity
:mod:`~batchsched.kube.dra.allocator`            which devices of a node serve a pod's
                                                claims (the structured allocator's search)
:mod:`~batchsched.kube.dra.scheduling`           the ``DynamicResources`` plugin's points
                                                (pre-filter, filter, score, reserve) over
                                                one session
:mod:`~batchsched.kube.dra.claims`               the resource claim controller's part:
                                                claims made from templates, reservations
                                                given back when pods go
==============================================  ========================================

Like the rest of :mod:`batchsched.kube`, none of it reads the scheduler's data
model: the predicates plugin and the cache call it.
"""

from batchsched.kube.dra.objects import (
    AllocationResult,
    DeviceClass,
    DraObjectError,
    PodClaim,
    ResourceClaim,
    ResourceClaimTemplate,
    ResourceSlice,
)
from batchsched.kube.dra.scheduling import DraObjects, DynamicResources

__all__ = [
    "AllocationResult",
    "DeviceClass",
    "DraObjectError",
    "DraObjects",
    "DynamicResources",
    "PodClaim",
    "ResourceClaim",
    "ResourceClaimTemplate",
    "ResourceSlice",
]
