"""The structured-parameters allocator: which devices of a node serve a pod's claims.

It answers as Kubernetes 1.36's allocator (``k8s.io/dynamic-resource-allocation/
structured``, the variant its default feature gates select) does for one node:

* **pools**: the slices a node can use (``nodeName``, ``allNodes``, a matching
  ``nodeSelector``, or a device of a ``perDeviceNodeSelection`` slice placed on
  it), grouped by driver and pool, the highest generation only. A pool with
  fewer slices of that generation than its ``resourceSliceCount`` is
  incomplete and skipped (a request for ``All`` devices fails outright on it);
  one with the same device name twice is invalid. Pools are tried by driver
  then pool name, slices by name, devices in order.
* **search**: claims in the pod's order, requests in the claim's, and for a
  ``firstAvailable`` request its alternatives in order; within a request the
  devices are combinations in ascending order. Depth first with backtracking:
  the first complete solution wins, there is no preference among solutions.
* **a device** is taken when it is not in use (allocated to another claim or
  taken earlier in this search; an admin-access request may share it), the
  class's then the request's selectors are true for it (CEL; an error ends
  the whole allocation), its ``NoSchedule``/``NoExecute`` taints are tolerated
  by the request, and the claim's constraints hold (``matchAttribute``: one
  value for all; ``distinctAttribute``: Kubernetes' own bookkeeping, which
  remembers one value per request).
* **result**: per claim, the devices in pick order and the nodes they can be
  used from: this node when a device is node-local, else the network-attached
  slices' node selectors merged, else any node.

* **partitionable devices**: a pool's counter-only slices declare shared
  counters; a device consuming them is taken only while every counter of the
  pool covers what the devices in use and those taken in the search consume.
  (Kubernetes does not give back what a device consumed when a later check
  refuses it, until the node's search ends; nor does this.)

* **consumable capacity**: a request may ask for part of a device's
  capacities (``capacity.requests``), rounded up as the device's request policy
  says (``default``, ``validValues``, ``validRange``); a device without a
  capacity asked for, or whose policy refuses the amount, is passed over, and so
  is one whose capacities the allocations on it and the search's picks would
  exceed. A device with ``allowMultipleAllocations`` is never in use: each pick
  takes a share (an id and what it consumes of every capacity).

Binding conditions are not modelled: the loaders refuse documents that use them.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from fractions import Fraction

import attrs

from batchsched.kube.affinity import NODE_NAME_FIELD, NodeSelectorTerm, Requirement
from batchsched.kube.dra.devices import (
    AllocationError,
    Candidate,
    SelectorCache,
    attribute_of,
    consumed_capacity,
    same_value,
    selectors_pass,
    share_id,
)
from batchsched.kube.dra.objects import (
    ALL,
    MAX_DEVICES_PER_CLAIM,
    AllocationResult,
    AttributeValue,
    DeviceClass,
    DeviceConstraint,
    DeviceResult,
    RequestSpec,
    ResourceClaim,
    ResourceSlice,
    SliceDevice,
)
from batchsched.kube.dra.pools import (
    DeviceId,
    NodeSelectionError,
    Pool,
    counters_left,
    device_on_node,
    gather_pools,
)
from batchsched.kube.taints import NO_EXECUTE, NO_SCHEDULE

__all__ = ["AllocationError", "Allocator", "DeviceId", "NodeAllocation", "SelectorCache",
           "subrequest_score"]

#: What the scheduler reports when a node has no solution but some pool is invalid.
INVALID_POOLS = "invalid resource pools were encountered"
#: A ``firstAvailable`` alternative's score: 8 for the first, 7 for the second...
_SUBREQUEST_SCORE_BASE = 8


@attrs.frozen
class NodeAllocation:
    """One node's answer: an allocation per claim (in the claims' order), and the
    alternative chosen for each ``firstAvailable`` request, by (claim, request)."""

    results: tuple[AllocationResult, ...]
    chosen: Mapping[tuple[str, str], int]


# -- one request's data ------------------------------------------------------------------------

@attrs.frozen
class _Request:
    """A request, or one ``firstAvailable`` alternative, ready for the search."""

    claim: int
    name: str  # the result's request name: "req" or "req/alternative"
    spec: RequestSpec
    class_selectors: tuple[str, ...]
    class_name: str
    selectors: tuple[str, ...]
    all_devices: tuple[Candidate, ...] | None  # allocationMode All: every matching device

    @property
    def count(self) -> int:
        return len(self.all_devices) if self.all_devices is not None else self.spec.count


class _Constraint:
    """One claim constraint's bookkeeping during the search."""

    def __init__(self, constraint: DeviceConstraint) -> None:
        self.constraint = constraint
        self.requests = frozenset(constraint.requests)
        self.reference: AttributeValue | None = None
        self.members = 0
        self.distinct: dict[str, AttributeValue] = {}

    def applies(self, request: str) -> bool:
        if not self.requests:
            return True
        return request in self.requests or request.partition("/")[0] in self.requests

    def add(self, request: str, candidate: Candidate) -> bool:
        if not self.applies(request):
            return True
        if self.constraint.match_attribute:
            value = attribute_of(candidate, self.constraint.match_attribute)
            if value is None:
                return False
            if (self.members and self.reference is not None
                    and not same_value(value, self.reference)):
                return False
            if not self.members:
                self.reference = value
            self.members += 1
            return True
        value = attribute_of(candidate, self.constraint.distinct_attribute)
        if value is None:
            return False
        if any(same_value(value, other) for other in self.distinct.values()):
            return False
        # Kubernetes keeps one value per request: the request's next device may repeat
        # a value of its earlier ones.
        self.distinct[request.partition("/")[0]] = value
        return True

    def remove(self, request: str) -> None:
        if not self.applies(request):
            return
        if self.constraint.match_attribute:
            self.members -= 1
            return
        self.distinct.pop(request.partition("/")[0], None)


# -- the allocator -----------------------------------------------------------------------------

class Allocator:
    """Allocates ``claims`` (unallocated, in the pod's order) on one node at a time;
    ``in_use`` are the devices other claims hold (admin-access results and shares
    excluded), ``shared`` what the shares of other claims consume of each device's
    capacities. ``cache`` may be shared by the allocators of a session."""

    def __init__(self, claims: Sequence[ResourceClaim], classes: Mapping[str, DeviceClass],
                 slices: Sequence[ResourceSlice], in_use: frozenset[DeviceId] | set[DeviceId],
                 cache: SelectorCache | None = None, *,
                 shared: Mapping[DeviceId, Mapping[str, Fraction]] | None = None) -> None:
        self.claims = tuple(claims)
        self.classes = classes
        self.in_use = in_use
        self.shared: Mapping[DeviceId, Mapping[str, Fraction]] = shared or {}
        self.local: dict[str, list[ResourceSlice]] = {}
        self.everywhere: list[ResourceSlice] = []
        self.by_pool: dict[tuple[str, str], list[ResourceSlice]] = {}
        #: Each pool's counters left by the devices in use, by pool name (Kubernetes keys
        #: them by the pool's name alone: pools of two drivers with one name share them).
        self._counters: dict[str, dict[tuple[str, str], Fraction]] = {}
        for slice_ in slices:
            if slice_.node_name and not slice_.shared_counters:
                self.local.setdefault(slice_.node_name, []).append(slice_)
            else:
                self.everywhere.append(slice_)
            self.by_pool.setdefault((slice_.driver, slice_.pool), []).append(slice_)
        self.cache = cache if cache is not None else SelectorCache()

    def allocate(self, node: str, labels: Mapping[str, str]) -> NodeAllocation | None:
        """The node's allocation, None when the claims do not fit there
        (:class:`AllocationError` when the attempt itself fails). When no solution
        exists and a pool of the node is invalid, the reason is
        :data:`INVALID_POOLS` (``last_failure``)."""
        self.last_failure = "cannot allocate all claims"
        try:
            pools = gather_pools([*self.local.get(node, ()), *self.everywhere], self.by_pool,
                                 node, labels)
        except NodeSelectionError as exc:
            raise AllocationError(str(exc)) from None
        search = _Search(self, pools, node, labels)
        answer = search.run()
        if answer is None and any(pool.invalid for pool in pools):
            self.last_failure = INVALID_POOLS
        return answer

    def counters_left(self, pool: Pool) -> dict[tuple[str, str], Fraction]:
        """The pool's counters left by the devices in use, whole or shared (worked out
        once, for the first pool of that name)."""
        left = self._counters.get(pool.name)
        if left is None:
            slices = [s for s in self.by_pool.get(pool.key, ())
                      if s.generation == pool.generation]
            left = self._counters[pool.name] = counters_left(
                slices, pool.driver, [*self.in_use, *self.shared])
        return left

    def candidate(self, slice_: ResourceSlice, device: SliceDevice) -> Candidate:
        """One object per device for the allocator's life (their CEL views are kept)."""
        candidates = self.cache.candidates
        kept = candidates.get(id(device))
        if kept is None:
            kept = candidates[id(device)] = Candidate(slice_, device)
        return kept


class _Search:
    def __init__(self, allocator: Allocator, pools: list[Pool], node: str,
                 labels: Mapping[str, str]) -> None:
        self.allocator = allocator
        self.pools = pools
        self.node = node
        self.labels = labels
        self.order: list[Candidate] = [
            allocator.candidate(slice_, device)
            for pool in pools if not pool.incomplete and not pool.invalid
            for slice_ in pool.slices for device in slice_.devices]
        self.requests: list[list[list[_Request]]] = []  # claim -> request -> alternatives
        self.selectable: dict[tuple[int, str, DeviceId], bool] = {}
        self.picked: dict[DeviceId, set[int]] = {}
        #: Per claim, its picks: the request, the device, and what a share of a device
        #: several claims may hold consumes of its capacities (None: a whole device).
        self.results: list[list[tuple[_Request, Candidate, dict[str, Fraction] | None]]] = []
        #: What this search's shares consume of each device's capacities.
        self.capacity_used: dict[DeviceId, dict[str, Fraction]] = {}
        self.pool_of = {pool.key: pool for pool in pools}
        #: Counters the devices taken in this search consume, per pool name.
        self.consumed: dict[str, dict[tuple[str, str], Fraction]] = {}
        self.constraints: list[list[_Constraint]] = []
        self.chosen: dict[tuple[str, str], int] = {}

    # -- validation ------------------------------------------------------------------------

    def run(self) -> NodeAllocation | None:
        for index, claim in enumerate(self.allocator.claims):
            self.requests.append([self._request_data(index, claim, request.alternatives())
                                  for request in claim.requests])
            minimum = sum(min(r.count for r in alternatives) if alternatives else 0
                          for alternatives in self.requests[-1])
            if minimum > MAX_DEVICES_PER_CLAIM:
                raise AllocationError(
                    f"claim {claim.key}: number of requested devices {minimum} exceeds the "
                    f"claim limit of {MAX_DEVICES_PER_CLAIM}")
            self.results.append([])
            self.constraints.append([_Constraint(c) for c in claim.constraints])
        if not self._claim(0):
            return None
        return NodeAllocation(tuple(self._result(i) for i in range(len(self.results))),
                              dict(self.chosen))

    def _request_data(self, index: int, claim: ResourceClaim,
                      alternatives: Sequence[tuple[str, RequestSpec]]) -> list[_Request]:
        out = []
        for result_name, spec in alternatives:
            device_class = self.allocator.classes.get(spec.device_class_name)
            if device_class is None:
                raise AllocationError(
                    f"claim {claim.key}, request {spec.name}: could not retrieve device class "
                    f"{spec.device_class_name}: deviceclass.resource.k8s.io "
                    f"\"{spec.device_class_name}\" not found")
            data = _Request(index, result_name, spec, device_class.selectors,
                            device_class.name, spec.selectors, None)
            if spec.allocation_mode == ALL:
                data = attrs.evolve(data, all_devices=self._all_devices(data, claim, spec))
            out.append(data)
        return out

    def _all_devices(self, data: _Request, claim: ResourceClaim, spec: RequestSpec
                     ) -> tuple[Candidate, ...]:
        """Every selectable device of the node's pools, pool by pool; a pool being
        updated or invalid fails the request when reached."""
        out: list[Candidate] = []
        for pool in self.pools:
            if pool.incomplete or pool.invalid:
                state = "being updated" if pool.incomplete else "invalid"
                raise AllocationError(
                    f"claim {claim.key}, request {spec.name}: asks for all devices, but "
                    f"resource pool {pool.driver}/{pool.name} is currently {state}")
            for slice_ in pool.slices:
                for device in slice_.devices:
                    candidate = self.allocator.candidate(slice_, device)
                    if self._selectable(data, candidate) \
                            and self._consumption(data, candidate) is not None:
                        out.append(candidate)
        return tuple(out)

    # -- the search --------------------------------------------------------------------------

    def _claim(self, index: int) -> bool:
        if index == len(self.requests):
            return True
        return self._request(index, 0)

    def _request(self, index: int, position: int) -> bool:
        requests = self.requests[index]
        if position == len(requests):
            return self._claim(index + 1)
        alternatives = requests[position]
        if not alternatives:
            return self._request(index, position + 1)
        claim = self.allocator.claims[index]
        request_name = claim.requests[position].name
        if len(alternatives) == 1 and claim.requests[position].exactly is not None:
            return self._device(alternatives[0], index, position, 0, 0)
        for choice, data in enumerate(alternatives):
            if self._device(data, index, position, 0, 0):
                self.chosen[(claim.key, request_name)] = choice
                return True
        return False

    def _device(self, data: _Request, index: int, position: int, number: int,
                start: int) -> bool:
        if data.all_devices is not None and not data.all_devices:
            return False
        if number == data.count:
            return self._request(index, position + 1)
        if len(self.results[index]) + data.count - number > MAX_DEVICES_PER_CLAIM:
            return False
        if data.all_devices is not None:
            candidate = data.all_devices[number]
            if not self._add(data, candidate, must=True):
                return False
            if self._device(data, index, position, number + 1, 0):
                return True
            self._undo(data)
            return False
        for offset, candidate in enumerate(self.order[start:]):
            if self._in_use(data, candidate) or not self._selectable(data, candidate) \
                    or self._consumption(data, candidate) is None:
                continue
            if not self._add(data, candidate, must=False):
                continue
            if self._device(data, index, position, number + 1, start + offset + 1):
                return True
            self._undo(data)
        return False

    def _in_use(self, data: _Request, candidate: Candidate) -> bool:
        if candidate.device.allow_multiple_allocations:
            # Shares never make it in use; an allocation of it written without a share does.
            return candidate.device_id in self.allocator.in_use
        picked_by = self.picked.get(candidate.device_id)
        if data.spec.admin_access:
            return picked_by is not None and data.claim in picked_by
        return candidate.device_id in self.allocator.in_use or bool(picked_by)

    def _selectable(self, data: _Request, candidate: Candidate) -> bool:
        key = (data.claim, data.name, candidate.device_id)
        known = self.selectable.get(key)
        if known is not None:
            return known
        verdicts = self.allocator.cache.verdicts
        verdict = (selectors_pass(data.class_selectors, candidate, f"class {data.class_name}",
                           verdicts)
                   and selectors_pass(data.selectors, candidate,
                               f"claim {self.allocator.claims[data.claim].key}", verdicts)
                   # A device of a per-device slice on another node: after its selectors,
                   # as Kubernetes checks (their errors count on every node).
                   and (not candidate.slice.per_device_node_selection
                        or device_on_node(candidate.device, self.node, self.labels)))
        self.selectable[key] = verdict
        return verdict

    def _consumption(self, data: _Request, candidate: Candidate) -> dict[str, Fraction] | None:
        """What a pick of the device for the request consumes of each of its capacities,
        if it may be picked: every capacity asked for exists, the device's policies
        allow the amounts, and the shares on it leave room; else None."""
        device = candidate.device
        requests = data.spec.capacity_requests
        if not device.capacity:
            return None if requests else {}
        amounts = consumed_capacity(device, requests)
        if amounts is None:
            return None
        held = self.allocator.shared.get(candidate.device_id, {})
        mine = self.capacity_used.get(candidate.device_id, {})
        for name, amount in amounts.items():
            if held.get(name, 0) + mine.get(name, 0) + amount > device.capacity[name]:
                return None
        return amounts

    def _add(self, data: _Request, candidate: Candidate, *, must: bool) -> bool:
        if self._in_use(data, candidate):
            return False
        device = candidate.device
        multiple = device.allow_multiple_allocations
        # Kubernetes skips the counter check of a device whose capacity is in use: one
        # another claim's share consumed some of (a share without capacities is
        # not tracked there), or this search shared already (kept even after undone).
        shared_already = multiple and (bool(self.allocator.shared.get(candidate.device_id))
                                       or candidate.device_id in self.capacity_used)
        if device.consumes_counters and not shared_already and not self._consume(candidate):
            return False
        for taint in candidate.device.taints:
            if taint.effect in (NO_SCHEDULE, NO_EXECUTE) and not any(
                    t.tolerates(taint) for t in data.spec.tolerations):
                return False
        added: list[_Constraint] = []
        for constraint in self.constraints[data.claim]:
            if not constraint.add(data.name, candidate):
                for earlier in added:
                    earlier.remove(data.name)
                if must:
                    claim = self.allocator.claims[data.claim]
                    raise AllocationError(
                        f"claim {claim.key}, request {data.spec.name}: cannot add device "
                        f"{'/'.join(candidate.device_id)} because a claim constraint would not be "
                        f"satisfied")
                return False
            added.append(constraint)
        amounts = self._consumption(data, candidate)
        if amounts is None:
            for constraint in added:
                constraint.remove(data.name)
            return False
        if multiple:
            used = self.capacity_used.setdefault(candidate.device_id, {})
            for name, amount in amounts.items():
                used[name] = used.get(name, Fraction(0)) + amount
            self.results[data.claim].append((data, candidate, amounts))
        else:
            self.picked.setdefault(candidate.device_id, set()).add(data.claim)
            self.results[data.claim].append((data, candidate, None))
        return True

    def _consume(self, candidate: Candidate) -> bool:
        """Take the device's share of its pool's counters, if every counter of the pool
        still covers what is taken; else take nothing."""
        consumed = self.consumed.setdefault(candidate.slice.pool, {})
        self._count(consumed, candidate, 1)
        left = self.allocator.counters_left(
            self.pool_of[(candidate.slice.driver, candidate.slice.pool)])
        if all(amount - consumed.get(counter, 0) >= 0 for counter, amount in left.items()):
            return True
        self._count(consumed, candidate, -1)
        return False

    @staticmethod
    def _count(consumed: dict[tuple[str, str], Fraction], candidate: Candidate,
               sign: int) -> None:
        for counter_set, counters in candidate.device.consumes_counters.items():
            for counter, amount in counters.items():
                key = (counter_set, counter)
                consumed[key] = consumed.get(key, Fraction(0)) + sign * amount

    def _undo(self, data: _Request) -> None:
        _, candidate, amounts = self.results[data.claim].pop()
        for constraint in self.constraints[data.claim]:
            constraint.remove(data.name)
        if amounts is not None:  # a share: its capacity goes back (its counters do not)
            if amounts:  # Kubernetes keeps the entry of a share that consumed nothing
                used = self.capacity_used[candidate.device_id]
                for name, amount in amounts.items():
                    used[name] -= amount
                if not any(used.values()):
                    del self.capacity_used[candidate.device_id]  # as if never shared here
            return
        if candidate.device.consumes_counters:
            self._count(self.consumed[candidate.slice.pool], candidate, -1)
        picked_by = self.picked[candidate.device_id]
        picked_by.discard(data.claim)
        if not picked_by:
            del self.picked[candidate.device_id]

    # -- the answer ----------------------------------------------------------------------------

    def _result(self, index: int) -> AllocationResult:
        picks = self.results[index]
        claim = self.allocator.claims[index]
        results = tuple(
            DeviceResult(data.name, *candidate.device_id, admin_access=data.spec.admin_access,
                         share_id=share_id(claim.key, data.name, candidate.device_id, number)
                         if amounts is not None else "",
                         consumed_capacity=amounts or {},
                         tolerations=data.spec.tolerations)
            for number, (data, candidate, amounts) in enumerate(picks))
        pinned = any(c.slice.node_name or c.device.node_name for _, c, _ in picks)
        if pinned:
            return AllocationResult(results, NodeSelectorTerm(
                match_fields=(Requirement(NODE_NAME_FIELD, "In", (self.node,)),)))
        expressions: list[Requirement] = []
        fields: list[Requirement] = []
        for _, candidate, _ in picks:
            term = candidate.slice.node_selector or candidate.device.node_selector
            if term is None:
                continue
            for requirement in term.match_expressions:
                if requirement not in expressions:
                    expressions.append(requirement)
            for requirement in term.match_fields:
                if requirement not in fields:
                    fields.append(requirement)
        if not expressions and not fields:
            return AllocationResult(results, None)
        return AllocationResult(results, NodeSelectorTerm(tuple(expressions), tuple(fields)))


def subrequest_score(allocations: Iterator[tuple[ResourceClaim, AllocationResult]],
                     chosen: Mapping[tuple[str, str], int]) -> int:
    """A node's raw DRA score: for each ``firstAvailable`` request, 8 less the index of
    the alternative it got (the chosen ones of this node's search in ``chosen``; those
    of claims already allocated read from their results)."""
    score = 0
    for claim, allocation in allocations:
        for request in claim.requests:
            if not request.first_available:
                continue
            choice = chosen.get((claim.key, request.name))
            if choice is None:
                names = [spec.name for spec in request.first_available]
                used = {r.request.partition("/")[2] for r in allocation.results
                        if r.request.partition("/")[0] == request.name}
                choice = next((i for i, name in enumerate(names) if name in used), None)
            if choice is not None:
                score += _SUBREQUEST_SCORE_BASE - choice
    return score
