"""kube-scheduler's ``DynamicResources`` plugin over one scheduling session.

:class:`DynamicResources` answers the plugin's extension points for the
session's pods, against the session's claims, slices and classes
(:class:`DraObjects`):

* **pre_filter** (once per attempt of a pod): its claims, by name or as made
  from a template for it (``pod "<ns>/<pod>": ResourceClaim not created yet``,
  ``could not find ResourceClaim "<ns>/<name>"``, ``resourceclaim "<name>" is
  being deleted``, ``... (Pod is not owner)``); a claim another pod is
  allocating right now (``resource claim <ns>/<name> is in the process of being
  allocated``); a class that does not exist (``request <r>: device class <c>
  does not exist``). A pod without claims skips the plugin.
* **filter** (per node): a claim already allocated must be usable from the node
  (``resourceclaim not available on the node``); the others are allocated there
  (:mod:`~batchsched.kube.dra.allocator`: ``cannot allocate all claims``, or an
  error for the whole attempt such as a selector that fails to evaluate).
* **score**: 8 less the index of the alternative a ``firstAvailable`` request got,
  summed, then scaled to 0-100 over the nodes.
* **reserve** / **unreserve**: the node's allocation is held for the pod (its
  devices count as in use, its claims as being allocated) and written on the
  task (``TaskInfo.claim_allocations``), for the cache to store at bind (the
  plugin's PreBind); given back when the placement is undone. Once the pod is
  bound, the claims count as allocated for the other pods of the session.

An attempt's answers are worked out from the devices in use when it asks: a
reservation given or taken back since makes them stale, and they are worked
out again.

Every rejection is ``UnschedulableAndUnresolvable`` (preemption cannot help);
errors of the allocation itself have code ``Error``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from fractions import Fraction

import attrs

from batchsched.kube.dra.allocator import (
    AllocationError,
    Allocator,
    DeviceId,
    NodeAllocation,
    SelectorCache,
    subrequest_score,
)
from batchsched.kube.dra.objects import (
    MAX_RESERVED_FOR,
    AllocationResult,
    DeviceClass,
    PodClaim,
    ResourceClaim,
    ResourceClaimTemplate,
    ResourceSlice,
)

__all__ = ["DraObjects", "DraRejection", "DynamicResources", "claim_key_of"]

PLUGIN = "DynamicResources"
UNSCHEDULABLE_AND_UNRESOLVABLE = "UnschedulableAndUnresolvable"
ERROR = "Error"
NOT_AVAILABLE = "resourceclaim not available on the node"
MAX_NODE_SCORE = 100


@attrs.frozen
class DraObjects:
    """A cluster's Dynamic Resource Allocation objects: classes by name, slices,
    claims and claim templates by ``namespace/name``."""

    device_classes: Mapping[str, DeviceClass] = attrs.field(factory=dict)
    resource_slices: tuple[ResourceSlice, ...] = ()
    resource_claims: Mapping[str, ResourceClaim] = attrs.field(factory=dict)
    claim_templates: Mapping[str, ResourceClaimTemplate] = attrs.field(factory=dict)

    def __bool__(self) -> bool:
        return bool(self.device_classes or self.resource_slices or self.resource_claims
                    or self.claim_templates)


@attrs.frozen
class DraRejection:
    """Why the plugin turned a pod (or a node) down: its status code and message."""

    code: str
    message: str


def claim_key_of(namespace: str, pod: str, entry: PodClaim) -> str | DraRejection | None:
    """The key of the claim ``entry`` names for pod ``namespace/pod``; None when a
    template entry was deliberately left without a claim."""
    if entry.claim_name:
        return f"{namespace}/{entry.claim_name}"
    if entry.template_name:
        if entry.generated is None:
            return DraRejection(UNSCHEDULABLE_AND_UNRESOLVABLE,
                                f'pod "{namespace}/{pod}": ResourceClaim not created yet')
        if not entry.generated:
            return None  # the pod's status says it needs no claim for this entry
        return f"{namespace}/{entry.generated}"
    return DraRejection(UNSCHEDULABLE_AND_UNRESOLVABLE,
                        f'pod "{namespace}/{pod}", spec.resourceClaim "{entry.name}": none of '
                        f"the supported fields are set")


class _Attempt:
    """One pod's scheduling attempt: its claims, and the answers per node."""

    __slots__ = ("allocated", "allocator", "nodes", "pending", "version")

    def __init__(self, claims: list[ResourceClaim], version: int) -> None:
        self.version = version
        self.allocated = [c for c in claims if c.allocation is not None]
        self.pending = [c for c in claims if c.allocation is None]
        self.allocator: Allocator | None = None
        self.nodes: dict[str, NodeAllocation | DraRejection] = {}


class DynamicResources:
    """The plugin's state for one session (see the module docstring). ``objects`` are
    the session's; the plugin never changes them: what it holds for pods is kept
    beside them."""

    def __init__(self, objects: DraObjects) -> None:
        self.objects = objects
        #: Claims a pod of this session reserved: claim key -> (pod uid, allocation).
        self.held: dict[str, tuple[str, AllocationResult]] = {}
        #: Whether a pod holding claims is bound (its claims then count as allocated).
        self._bound: dict[str, Callable[[], bool]] = {}
        self._attempts: dict[str, _Attempt] = {}
        self._selectors = SelectorCache()  # the session's slices do not change
        #: Moves with every reservation given or taken back: answers worked out before
        #: are stale.
        self._version = 0

    # -- the claims as the session sees them ---------------------------------------------

    def claim(self, key: str) -> ResourceClaim | None:
        """The claim as it stands now: with the allocation a bound pod of the session
        gave it."""
        claim = self.objects.resource_claims.get(key)
        if claim is None:
            return None
        held = self.held.get(key)
        if held is not None and claim.allocation is None and self._bound[held[0]]():
            return attrs.evolve(claim, allocation=held[1],
                                reserved_for=(*claim.reserved_for, held[0]))
        return claim

    def in_use(self) -> tuple[set[DeviceId], dict[DeviceId, dict[str, Fraction]]]:
        """Devices allocated to claims or held for a pod, whole (admin access aside),
        and what the shares of devices several claims hold consume of their
        capacities."""
        used: set[DeviceId] = set()
        shared: dict[DeviceId, dict[str, Fraction]] = {}
        allocations: Iterable[AllocationResult] = [
            *(c.allocation for c in self.objects.resource_claims.values()
              if c.allocation is not None),
            *(allocation for _, allocation in self.held.values())]
        for allocation in allocations:
            for result in allocation.results:
                if result.admin_access:
                    continue
                if not result.share_id:
                    used.add(result.device_id)
                    continue
                consumed = shared.setdefault(result.device_id, {})
                for name, amount in result.consumed_capacity.items():
                    consumed[name] = consumed.get(name, Fraction(0)) + amount
        return used, shared

    def pod_claims(self, namespace: str, pod: str, pod_uid: str,
                   entries: Sequence[PodClaim]) -> list[ResourceClaim] | DraRejection:
        """The pod's claims, in its order (kube's claim-name resolution and checks)."""
        claims: list[ResourceClaim] = []
        for entry in entries:
            key = claim_key_of(namespace, pod, entry)
            if key is None:
                continue
            if isinstance(key, DraRejection):
                return key
            claim = self.claim(key)
            if claim is None:
                return DraRejection(UNSCHEDULABLE_AND_UNRESOLVABLE,
                                    f'could not find ResourceClaim "{key}"')
            if claim.deleting:
                return DraRejection(UNSCHEDULABLE_AND_UNRESOLVABLE,
                                    f'resourceclaim "{claim.name}" is being deleted')
            if entry.template_name and claim.owner != pod_uid:
                return DraRejection(UNSCHEDULABLE_AND_UNRESOLVABLE,
                                    f"ResourceClaim {claim.key} was not created for Pod "
                                    f"{namespace}/{pod} (Pod is not owner)")
            claims.append(claim)
        return claims

    # -- extension points ---------------------------------------------------------------

    def pre_filter(self, pod_uid: str, namespace: str, pod: str,
                   entries: Sequence[PodClaim]) -> DraRejection | None:
        """Start the pod's attempt; a rejection holds for every node. A pod without
        claims has nothing to check (kube's Skip)."""
        self._attempts.pop(pod_uid, None)
        if not entries:
            return None
        claims = self.pod_claims(namespace, pod, pod_uid, entries)
        if isinstance(claims, DraRejection):
            return claims
        if not claims:  # its status says it needs none: nothing to reserve either
            self._attempts[pod_uid] = _Attempt([], self._version)
            return None
        for claim in claims:
            if claim.allocation is not None:
                # Reserved for as many pods as a claim may be, none of them this one:
                # the pod has to wait (kube's PreFilter, "resourceclaim in use").
                if (pod_uid not in claim.reserved_for
                        and len(claim.reserved_for) >= MAX_RESERVED_FOR):
                    return DraRejection(UNSCHEDULABLE_AND_UNRESOLVABLE, "resourceclaim in use")
                continue
            holder = self.held.get(claim.key)
            if holder is not None and holder[0] != pod_uid:
                return DraRejection(UNSCHEDULABLE_AND_UNRESOLVABLE,
                                    f"resource claim {claim.key} is in the process of being "
                                    f"allocated")
            for request in claim.requests:
                for name, spec in request.alternatives():
                    if spec.device_class_name not in self.objects.device_classes:
                        return DraRejection(UNSCHEDULABLE_AND_UNRESOLVABLE,
                                            f"request {name}: device class "
                                            f"{spec.device_class_name} does not exist")
        attempt = _Attempt(claims, self._version)
        self._fresh(attempt)
        self._attempts[pod_uid] = attempt
        return None

    def _fresh(self, attempt: _Attempt) -> None:
        """Allocate from the devices in use now (an attempt started before a reservation
        was given or taken back would read a stale answer)."""
        attempt.version = self._version
        attempt.nodes.clear()
        if attempt.pending:
            used, shared = self.in_use()
            attempt.allocator = Allocator(attempt.pending, self.objects.device_classes,
                                          self.objects.resource_slices, used, self._selectors,
                                          shared=shared)

    def allocates(self, pod_uid: str) -> bool:
        """Whether the pod's current attempt has claims to allocate (not yet allocated)."""
        attempt = self._attempts.get(pod_uid)
        return attempt is not None and bool(attempt.pending)

    def filter(self, pod_uid: str, node: str, labels: Mapping[str, str]) -> DraRejection | None:
        """Whether the pod's claims can be served from ``node`` (after :meth:`pre_filter`)."""
        attempt = self._attempts.get(pod_uid)
        if attempt is None:
            return None
        if attempt.version != self._version:
            self._fresh(attempt)
        known = attempt.nodes.get(node)
        if known is None:
            known = attempt.nodes[node] = self._filter(attempt, node, labels)
        return known if isinstance(known, DraRejection) else None

    def _filter(self, attempt: _Attempt, node: str, labels: Mapping[str, str]
                ) -> NodeAllocation | DraRejection:
        unavailable = any(not c.allocation.available_on(labels, node)  # type: ignore[union-attr]
                          for c in attempt.allocated)
        answer = NodeAllocation((), {})
        if attempt.allocator is not None:
            try:
                found = attempt.allocator.allocate(node, labels)
            except AllocationError as exc:
                return DraRejection(ERROR, str(exc))
            if found is None:
                return DraRejection(UNSCHEDULABLE_AND_UNRESOLVABLE,
                                    attempt.allocator.last_failure)
            answer = found
        if unavailable:
            return DraRejection(UNSCHEDULABLE_AND_UNRESOLVABLE, NOT_AVAILABLE)
        return answer

    def scores(self, pod_uid: str, nodes: Sequence[tuple[str, Mapping[str, str]]]
               ) -> dict[str, int]:
        """Each node's score, 0-100 (0 for all when the pod has no claims)."""
        attempt = self._attempts.get(pod_uid)
        raw: dict[str, int] = {}
        for name, labels in nodes:
            if attempt is None:
                raw[name] = 0
                continue
            self.filter(pod_uid, name, labels)
            found = attempt.nodes.get(name)
            if not isinstance(found, NodeAllocation):
                raw[name] = 0
                continue
            pairs = [(c, c.allocation) for c in attempt.allocated if c.allocation is not None]
            pairs += list(zip(attempt.pending, found.results, strict=True))
            raw[name] = subrequest_score(iter(pairs), found.chosen)
        highest = max(raw.values(), default=0)
        if highest == 0:
            return dict.fromkeys(raw, 0)
        return {name: MAX_NODE_SCORE * score // highest for name, score in raw.items()}

    def reserve(self, pod_uid: str, node: str, labels: Mapping[str, str],
                is_bound: Callable[[], bool]) -> dict[str, AllocationResult]:
        """Hold the node's allocation for the pod; the allocations by claim key (what
        the bind writes). ``is_bound()`` tells, later, whether the pod was bound (its
        claims are then allocated for the other pods of the session). Raises
        :class:`AllocationError` when the node cannot serve the claims (it passed the
        filter, so only a placement made without asking could)."""
        attempt = self._attempts.get(pod_uid)
        if attempt is None:
            # No pre-filter ran for the pod (the predicates plugin's predicate is off):
            # kube's Reserve finds no state for it and fails.
            raise AllocationError("no pre-filter state for the pod's claims")
        if attempt.version != self._version:
            self._fresh(attempt)
        if not attempt.pending:
            return {}
        found = attempt.nodes.get(node)
        if found is None:
            found = attempt.nodes[node] = self._filter(attempt, node, labels)
        if isinstance(found, DraRejection):
            raise AllocationError(f"claim allocation not found for node {node}: "
                                  f"{found.message}")
        held = {claim.key: result
                for claim, result in zip(attempt.pending, found.results, strict=True)}
        for key, result in held.items():
            self.held[key] = (pod_uid, result)
        self._bound[pod_uid] = is_bound
        self._version += 1
        return held

    def unreserve(self, pod_uid: str) -> None:
        """Give back what the pod held (its placement was undone)."""
        released = [k for k, (holder, _) in self.held.items() if holder == pod_uid]
        for key in released:
            del self.held[key]
        self._bound.pop(pod_uid, None)
        if released:
            self._version += 1
