"""resourcequota: namespace ResourceQuotas gate admission (Volcano's ``plugins/resourcequota``).

A pending job is **enqueueable** when it sets no ``minResources``, when its
namespace has no ResourceQuota, or when for every quota of its namespace

    used + admitted this session + minResources <= hard

on each resource the quota limits (``hard``) and the job's ``minResources``
names. Names match exactly (``cpu`` in minResources is not ``requests.cpu`` in a
quota) and amounts are compared exactly, without epsilon. A rejection records a
``Normal`` ``Unschedulable`` event on the pod group. Each admitted job's
``minResources`` is added to its namespace's "admitted this session" usage
(**job enqueued**). It takes no arguments.

Which resources ``minResources`` names: every scalar it lists, and ``cpu`` /
``memory`` when non-zero (the data model cannot tell ``cpu: 0`` from no cpu;
the difference shows only when a quota is already exceeded).
"""

from __future__ import annotations

from batchsched.api.cluster import ResourceQuota
from batchsched.api.job import JobInfo
from batchsched.api.resource import CPU, MEMORY, Resource, format_quantity
from batchsched.api.types import Vote
from batchsched.framework.arguments import Arguments
from batchsched.framework.session import Session
from batchsched.kube.quantity import canonical_quantity

__all__ = ["ResourceQuotaPlugin", "quota_exceeded"]


class ResourceQuotaPlugin:
    """Volcano's resourcequota plugin."""

    name = "resourcequota"

    def __init__(self, arguments: Arguments) -> None:
        self.arguments = arguments
        arguments.warn_unknown(self.name)
        #: namespace -> minResources of the jobs admitted in this session
        self.pending: dict[str, Resource] = {}

    def on_session_open(self, ssn: Session) -> None:
        self.pending = {}
        quotas: dict[str, list[ResourceQuota]] = {}
        for quota in ssn.resource_quotas:
            quotas.setdefault(quota.namespace, []).append(quota)

        def enqueueable(job: JobInfo) -> Vote:
            minimum = ssn.pod_group_min_resources(job)
            if minimum is None or job.namespace not in quotas:
                return Vote.PERMIT
            pending = self.pending.get(job.namespace)
            for quota in quotas[job.namespace]:
                exceeded = quota_exceeded(quota, minimum, pending)
                if exceeded:
                    # Volcano's Mask keeps every name the lists hold, a zero too.
                    ssn.record_event(job.uid, "Normal", "Unschedulable", (
                        f"resource quota insufficient, requested: {_masked(minimum, exceeded)}, "
                        f"used: {_masked(quota.used, exceeded, quota.used_names)}, "
                        f"limited: {_masked(quota.hard, exceeded, quota.limited_names)}"
                    ))
                    return Vote.REJECT
            return Vote.PERMIT

        def enqueued(job: JobInfo) -> None:
            minimum = ssn.pod_group_min_resources(job)
            if minimum is None or job.namespace not in quotas:
                return
            self.pending.setdefault(job.namespace, Resource()).add(minimum)

        ssn.add_job_enqueueable_fn(self.name, enqueueable)
        ssn.add_job_enqueued_fn(self.name, enqueued)

    def on_session_close(self, ssn: Session) -> None:
        self.pending = {}


def quota_exceeded(
    quota: ResourceQuota, request: Resource, pending: Resource | None = None
) -> list[str]:
    """The resources (sorted) on which ``used + pending + request`` exceeds the quota's
    ``hard``, looking only at resources both the quota and the request name."""
    limited = quota.limited_names
    exceeded = []
    for name in sorted(limited & _requested_names(request)):
        total = quota.used.get(name) + request.get(name)
        if pending is not None:
            total += pending.get(name)
        if total > quota.hard.get(name):
            exceeded.append(name)
    return exceeded


def _requested_names(request: Resource) -> set[str]:
    names = set(request.scalars)
    if request.milli_cpu:
        names.add(CPU)
    if request.memory:
        names.add(MEMORY)
    return names


def _masked(resource: Resource, names: list[str],
            present: frozenset[str] = frozenset()) -> str:
    """``names`` of ``resource`` as Kubernetes writes a resource list: each one the list
    holds (not zero, a scalar listed, or one of ``present``)."""
    parts = []
    for name in names:
        amount = resource.get(name)
        if amount or name in present or name in resource.scalars:
            parts.append(f"{name}:{_quota_quantity(name, amount)}")
    return "map[" + " ".join(parts) + "]"


_BYTES = frozenset({MEMORY, "ephemeral-storage", "storage"})


def _quota_quantity(name: str, amount: float) -> str:
    """One amount in Kubernetes' canonical form; a quota name (``requests.memory``)
    in the form of the resource it limits (a scalar holds thousandths)."""
    limited = name.partition(".")[2] if name.startswith(("requests.", "limits.")) else ""
    if limited in _BYTES:
        return canonical_quantity(int(amount) // 1000, binary=True)
    return format_quantity(name, amount)
