"""The resource claim controller's part, which a cluster without Kubernetes plays itself.

* A pod naming a claim template gets a claim of its own, made from the template
  and owned by the pod (``<pod>-<entry>``, then ``-1``, ``-2``... while the name is
  taken; Kubernetes adds a random suffix), and the pod records its name
  (``status.resourceClaimStatuses``).
* When a pod no longer needs its claims (it ended, was deleted or evicted), it
  is taken off their ``reservedFor``; a claim reserved for no pod any more is
  deallocated, and a claim made for that pod is deleted.
* A bind writes what the scheduler allocated (its PreBind): the allocation of
  each claim it allocated, and the pod in every claim's ``reservedFor``.
"""

from __future__ import annotations

from collections.abc import Mapping, MutableMapping, Sequence

import attrs

from batchsched.kube.dra.objects import (
    MAX_RESERVED_FOR,
    AllocationResult,
    PodClaim,
    ResourceClaim,
    ResourceClaimTemplate,
)
from batchsched.kube.dra.scheduling import claim_key_of

__all__ = ["MAX_RESERVED_FOR", "check_reservations", "claim_keys", "instantiate_templates",
           "release_claims", "reserve_claims"]


def instantiate_templates(entries: Sequence[PodClaim], *, namespace: str, pod: str,
                          pod_uid: str, templates: Mapping[str, ResourceClaimTemplate],
                          claims: MutableMapping[str, ResourceClaim]) -> tuple[PodClaim, ...]:
    """Make the claims of the pod's template entries that have none yet (in ``claims``);
    the entries with the names of the claims made. A template that does not exist
    leaves the entry without a claim (the scheduler reports it)."""
    out: list[PodClaim] = []
    for entry in entries:
        if not entry.template_name or entry.generated is not None:
            out.append(entry)
            continue
        template = templates.get(f"{namespace}/{entry.template_name}")
        if template is None:
            out.append(entry)
            continue
        name = base = f"{pod}-{entry.name}"
        suffix = 0
        while f"{namespace}/{name}" in claims:
            suffix += 1
            name = f"{base}-{suffix}"
        claims[f"{namespace}/{name}"] = ResourceClaim(
            namespace, name, template.requests, template.constraints, owner=pod_uid)
        out.append(attrs.evolve(entry, generated=name))
    return tuple(out)


def claim_keys(namespace: str, pod: str, entries: Sequence[PodClaim]) -> list[str]:
    """The keys of the claims the pod's entries name (those that name one)."""
    keys = []
    for entry in entries:
        key = claim_key_of(namespace, pod, entry)
        if isinstance(key, str):
            keys.append(key)
    return keys


def check_reservations(pod_uid: str, keys: Sequence[str],
                       allocations: Mapping[str, AllocationResult],
                       claims: Mapping[str, ResourceClaim]) -> str:
    """Why a bind's allocations and reservations (kube's PreBind) cannot be written
    (a claim gone, allocated or deallocated elsewhere meanwhile, reserved for too
    many pods); "" when they can."""
    seen: set[str] = set()
    for key in keys:
        claim = claims.get(key)
        if claim is None or claim.deleting:
            return f"claim {key} got deleted in the meantime"
        if key in allocations and (claim.allocation is not None or key in seen):
            # A pod naming one claim in two entries: kube allocates it for each and
            # writes the first; the second finds it allocated.
            return f"claim {key} got allocated elsewhere in the meantime"
        seen.add(key)
        if key not in allocations and claim.allocation is None:
            return f"claim {key} got deallocated elsewhere in the meantime"
        if pod_uid not in claim.reserved_for and len(claim.reserved_for) >= MAX_RESERVED_FOR:
            return (f"add reservation to claim {key}: status.reservedFor: Too many: "
                    f"{len(claim.reserved_for) + 1}: must have at most {MAX_RESERVED_FOR} "
                    f"items")
    return ""


def reserve_claims(pod_uid: str, keys: Sequence[str],
                   allocations: Mapping[str, AllocationResult],
                   claims: MutableMapping[str, ResourceClaim]) -> None:
    """Write a bind's allocations and reservations (after
    :func:`check_reservations` found nothing against them)."""
    for key in keys:
        claim = claims[key]
        reserved = claim.reserved_for if pod_uid in claim.reserved_for else (
            *claim.reserved_for, pod_uid)
        claims[key] = attrs.evolve(claim, allocation=allocations.get(key, claim.allocation),
                                   reserved_for=reserved)


def release_claims(pod_uid: str, keys: Sequence[str],
                   claims: MutableMapping[str, ResourceClaim]) -> None:
    """The pod no longer uses its claims: off their reservations, deallocated when no
    pod is left, deleted when made for the pod. A claim made for the pod that other
    pods still reserve is only marked for deletion (kube's garbage collector deletes
    it, its finalizer keeps it while reserved): it stays allocated to them, takes no
    new pod, and goes with the last of them."""
    for key in keys:
        claim = claims.get(key)
        if claim is None:
            continue
        reserved = tuple(uid for uid in claim.reserved_for if uid != pod_uid)
        if claim.owner == pod_uid or (claim.deleting and not reserved):
            if not reserved:
                del claims[key]
            else:
                claims[key] = attrs.evolve(claim, reserved_for=reserved, deleting=True)
            continue
        if reserved == claim.reserved_for:
            continue
        claims[key] = attrs.evolve(claim, reserved_for=reserved,
                                   allocation=claim.allocation if reserved else None)
