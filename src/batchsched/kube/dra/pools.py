"""Which of the slices a node can use, grouped into pools (Kubernetes' ``GatherPools``),
and what a pool's shared counters have left."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from fractions import Fraction
from typing import Any

import attrs

from batchsched.kube.affinity import NodeSelectorTerm, Requirement
from batchsched.kube.dra.objects import ResourceSlice, SliceDevice

__all__ = ["DeviceId", "NodeSelectionError", "Pool", "counters_left", "device_on_node",
           "gather_pools"]

class NodeSelectionError(Exception):
    """A slice's node selector kube cannot parse: no pool can be gathered for any node
    (the allocator turns it into its :class:`~batchsched.kube.dra.devices.AllocationError`)."""


#: A device's identity: (driver, pool, device name).
DeviceId = tuple[str, str, str]

@attrs.frozen
class Pool:
    driver: str
    name: str
    slices: tuple[ResourceSlice, ...]
    incomplete: bool = False
    invalid: bool = False
    generation: int = 0

    @property
    def key(self) -> tuple[str, str]:
        return (self.driver, self.name)


def slice_relevant(slice_: ResourceSlice, node: str, labels: Mapping[str, str]) -> bool:
    if slice_.shared_counters:
        return True  # a counter-only slice counts for every node of its pool
    if slice_.node_name:
        return slice_.node_name == node
    if slice_.all_nodes:
        return True
    if slice_.node_selector is not None:
        if slice_.node_selector.parse_errors:
            raise NodeSelectionError(_unparsable_selector(
                f"slice {slice_.name}", slice_.node_selector))
        return slice_.node_selector.matches(labels, node)
    if slice_.per_device_node_selection:
        # Device after device until one is on the node, as kube's GatherPools goes: a
        # selector it cannot parse on the way fails it.
        for device in slice_.devices:
            selector = device.node_selector
            if not (device.node_name or device.all_nodes) and selector is not None \
                    and selector.parse_errors:
                raise NodeSelectionError(_unparsable_selector(
                    f"device {device.name} in slice {slice_.name}", selector))
            if device_on_node(device, node, labels):
                return True
    return False


def _unparsable_selector(what: str, term: NodeSelectorTerm) -> str:
    """kube's error for a slice (or a device of one) whose node selector its
    ``NewNodeSelector`` cannot parse (the API server checks less): the allocation
    fails, with this text, on every node. (For a device kube writes the whole device
    where this writes its name.)"""
    errors = [f"nodeSelectorTerms[0].{error}" for error in term.parse_errors]
    reasons = errors[0] if len(errors) == 1 else "[" + ", ".join(errors) + "]"
    return (f"gather pool information: failed to perform node selection for {what}: "
            f"failed to parse node selector {_go_string(term)}: {reasons}")


def _go_string(term: NodeSelectorTerm) -> str:
    """A one-term ``v1.NodeSelector`` as its generated ``String()`` writes it."""
    def requirements(items: Sequence[Requirement]) -> str:
        return "[]NodeSelectorRequirement{" + "".join(
            f"NodeSelectorRequirement{{Key:{r.key},Operator:{r.operator},"
            f"Values:[{' '.join(r.values)}],}}," for r in items) + "}"
    return ("&NodeSelector{NodeSelectorTerms:[]NodeSelectorTerm{NodeSelectorTerm{"
            f"MatchExpressions:{requirements(term.match_expressions)},"
            f"MatchFields:{requirements(term.match_fields)},}},}},}}")


def device_on_node(device: SliceDevice, node: str, labels: Mapping[str, str]) -> bool:
    if device.node_name:
        return device.node_name == node
    if device.all_nodes:
        return True
    return device.node_selector is not None and device.node_selector.matches(labels, node)


def gather_pools(slices: Sequence[ResourceSlice], by_pool: Mapping[tuple[str, str],
                 Sequence[ResourceSlice]], node: str, labels: Mapping[str, str]) -> list[Pool]:
    """The node's pools, in search order (``by_pool``: every slice of each pool)."""
    newest: dict[tuple[str, str], list[ResourceSlice]] = {}
    for slice_ in slices:
        if not slice_relevant(slice_, node, labels):
            continue
        key = (slice_.driver, slice_.pool)
        kept = newest.get(key)
        if kept is None or slice_.generation > kept[0].generation:
            newest[key] = [slice_]
        elif slice_.generation == kept[0].generation:
            kept.append(slice_)
    pools: list[Pool] = []
    for key in sorted(newest):
        kept = newest[key]
        generation, wanted = kept[0].generation, kept[0].slice_count
        everyone = by_pool.get(key, kept)
        if len(kept) != wanted:
            if any(s.generation > generation for s in everyone):
                continue  # obsolete: a newer generation is being published elsewhere
            if sum(s.generation == generation for s in everyone) != wanted:
                pools.append(Pool(key[0], key[1], (), incomplete=True))
                continue
        names: set[str] = set()
        invalid = False
        for slice_ in kept:  # the node's own slices, as Kubernetes validates them
            for device in slice_.devices:
                if device.name in names:
                    invalid = True
                names.add(device.name)
        invalid = invalid or not counters_consistent(
            [s for s in everyone if s.generation == generation])
        ordered = tuple(sorted(kept, key=lambda s: s.name))
        pools.append(Pool(key[0], key[1], () if invalid else ordered, invalid=invalid,
                           generation=generation))
    return pools


def counters_consistent(slices: Sequence[ResourceSlice]) -> bool:
    """No counter set declared twice, and every device consumes declared counters."""
    declared: dict[str, Mapping[str, Any]] = {}
    for slice_ in slices:
        for name, counters in slice_.shared_counters.items():
            if name in declared:
                return False
            declared[name] = counters
    return all(counter_set in declared and set(counters) <= set(declared[counter_set])
               for slice_ in slices for device in slice_.devices
               for counter_set, counters in device.consumes_counters.items())


def counters_left(slices: Sequence[ResourceSlice], driver: str, in_use: Iterable[DeviceId]
                   ) -> dict[tuple[str, str], Fraction]:
    """What the pool's counters have left once the devices in use took their share."""
    left: dict[tuple[str, str], Fraction] = {
        (counter_set, counter): amount for slice_ in slices
        for counter_set, counters in slice_.shared_counters.items()
        for counter, amount in counters.items()}
    used = set(in_use)
    for slice_ in slices:
        for device in slice_.devices:
            if (driver, slice_.pool, device.name) not in used:
                continue
            for counter_set, counters in device.consumes_counters.items():
                for counter, amount in counters.items():
                    key = (counter_set, counter)
                    left[key] = left.get(key, Fraction(0)) - amount
    return left
