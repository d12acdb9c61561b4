"""Topology hints and the kubelet topology manager's policies, as Volcano's
``numa-aware`` plugin applies them to a node before the kubelet does.

A **hint** is a set of NUMA nodes a container's resource could come from
(``affinity``; None: anywhere) and whether it is *preferred* (as narrow as the
request allows). Each hint provider gives, per resource, the hints it can serve:
``None`` for a resource means "no preference", an empty list "cannot be served
anywhere"; a provider answering ``None`` has no preference for any resource.

The policies merge the providers' hints into the best one and say whether the
container is admitted:

=================  ==========================================  ==========================
policy             hints merged                                admits
=================  ==========================================  ==========================
none               none (the best hint is ``TopologyHint()``)  always
best-effort        all                                         always
restricted         all                                         when the best is preferred
single-numa-node   the preferred ones on one NUMA node (or     when the best is preferred
                   anywhere)
=================  ==========================================  ==========================

Merging takes one hint per resource in every combination; a combination's affinity
is the intersection of its hints' (anywhere reads as every NUMA node of the node),
and it is preferred when all its hints are. An empty intersection is skipped. The
best is a preferred combination over one that is not, then the narrower affinity
(fewer NUMA nodes; with as many, the smaller bit mask of their ids: ``{1, 2}``
before ``{0, 3}``), the first found among equals; with no combination left it is
every NUMA node, not preferred. A policy name the node does not know works as
``none``.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Protocol

import attrs

if TYPE_CHECKING:
    from batchsched.api.numa import NumaTopology, ResourceSets
    from batchsched.api.resource import Resource

__all__ = [
    "BEST_EFFORT",
    "NONE",
    "RESTRICTED",
    "SINGLE_NUMA_NODE",
    "HintProvider",
    "ProviderHints",
    "TopologyHint",
    "TopologyPolicy",
    "policy_for",
]

NONE = "none"
BEST_EFFORT = "best-effort"
RESTRICTED = "restricted"
SINGLE_NUMA_NODE = "single-numa-node"


@attrs.frozen
class TopologyHint:
    """NUMA nodes a resource may come from (None: anywhere), and whether that is a
    preferred (narrowest possible) choice."""

    affinity: frozenset[int] | None = None
    preferred: bool = False

    def narrower_than(self, other: TopologyHint) -> bool:
        """Fewer NUMA nodes than ``other``'s affinity; with as many, the one whose
        ids make the smaller bit mask (the kubelet's ``IsNarrowerThan``)."""
        mine, theirs = self.affinity or frozenset(), other.affinity or frozenset()
        if len(mine) != len(theirs):
            return len(mine) < len(theirs)
        return _mask_value(mine) < _mask_value(theirs)


#: One provider's answer: resource name -> its hints (None: no preference), or None.
ProviderHints = Mapping[str, Sequence[TopologyHint] | None] | None


class HintProvider(Protocol):
    """A source of hints for some resources, and of their assignment once a hint is
    chosen (Volcano's ``HintProvider``). ``free`` is what the node has free now."""

    @property
    def name(self) -> str:
        """The provider's name, for logs."""
        ...

    def topology_hints(self, requests: Resource, topology: NumaTopology,
                       free: ResourceSets) -> Mapping[str, Sequence[TopologyHint] | None] | None:
        """Per resource the hints that could serve a container of ``requests``."""
        ...

    def allocate(self, requests: Resource, hint: TopologyHint, topology: NumaTopology,
                 free: ResourceSets) -> Mapping[str, frozenset[int]]:
        """Per resource the ids handed to a container of ``requests`` under ``hint``."""
        ...


class TopologyPolicy(Protocol):
    """A topology manager policy over one node's NUMA nodes."""

    @property
    def name(self) -> str:
        """The policy's name, as the kubelet spells it."""
        ...

    def predicate(self, providers_hints: Sequence[ProviderHints]) -> tuple[TopologyHint, bool]:
        """The best hint for one container, and whether the container is admitted."""
        ...


@attrs.frozen
class _NonePolicy:
    name: str = NONE

    def predicate(self, providers_hints: Sequence[ProviderHints]) -> tuple[TopologyHint, bool]:
        return TopologyHint(), True


@attrs.frozen
class _MergingPolicy:
    """best-effort, restricted and single-numa-node: merge, then admit by the rule."""

    name: str
    numa_nodes: tuple[int, ...]

    def predicate(self, providers_hints: Sequence[ProviderHints]) -> tuple[TopologyHint, bool]:
        per_resource = _hints_per_resource(providers_hints)
        if self.name == SINGLE_NUMA_NODE:
            per_resource = [[hint for hint in hints if _on_one_numa_node(hint)]
                            for hints in per_resource]
        best = _merge(self.numa_nodes, per_resource)
        return best, self.name == BEST_EFFORT or best.preferred


def policy_for(name: str, numa_nodes: Iterable[int]) -> TopologyPolicy:
    """The node's topology manager policy ``name`` over its NUMA nodes (Volcano's
    ``GetPolicy``); an unknown name gives ``none``."""
    if name in (BEST_EFFORT, RESTRICTED, SINGLE_NUMA_NODE):
        return _MergingPolicy(name, tuple(numa_nodes))
    return _NonePolicy()


def _hints_per_resource(providers_hints: Sequence[ProviderHints]) -> list[list[TopologyHint]]:
    """One list of hints per (provider, resource): a provider or resource without a
    preference gives a preferred "anywhere", a resource no NUMA node can serve a
    non-preferred "anywhere"."""
    out: list[list[TopologyHint]] = []
    for hints in providers_hints:
        if not hints:
            out.append([TopologyHint(None, True)])
            continue
        for resource_hints in hints.values():
            if resource_hints is None:
                out.append([TopologyHint(None, True)])
            elif not resource_hints:
                out.append([TopologyHint(None, False)])
            else:
                out.append(list(resource_hints))
    return out


def _on_one_numa_node(hint: TopologyHint) -> bool:
    return hint.preferred and (hint.affinity is None or len(hint.affinity) == 1)


def _merge(numa_nodes: tuple[int, ...], per_resource: list[list[TopologyHint]]) -> TopologyHint:
    everywhere = frozenset(numa_nodes)
    best = TopologyHint(everywhere, False)
    for combination in itertools.product(*per_resource):
        affinity = everywhere
        for hint in combination:
            affinity &= hint.affinity if hint.affinity is not None else everywhere
        if not affinity:
            continue
        merged = TopologyHint(affinity, all(hint.preferred for hint in combination))
        if merged.preferred != best.preferred:
            if merged.preferred:
                best = merged
            continue
        if merged.narrower_than(best):
            best = merged
    return best


def _mask_value(ids: frozenset[int]) -> int:
    return sum(1 << numa for numa in ids)
