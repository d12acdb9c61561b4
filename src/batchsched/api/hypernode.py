"""HyperNodes: the network topology Volcano schedules jobs into (``topology.volcano.sh``
``HyperNode``; ``pkg/scheduler/api/hyper_node_info.go``).

A hypernode is a network performance domain (a switch, a rack, a spine) of some
``tier``; the lower the tier, the closer its nodes. Its members are nodes (by exact
name, by a regular expression searched in node names, or by a label selector) or
other hypernodes (by exact name), so hypernodes form a tree whose leaves hold nodes.

:class:`HyperNode` is the object as written; :func:`build_topology` turns the
cluster's hypernodes into the :class:`Topology` a session reads: each hypernode's
tier, parent and children, the real (leaf) nodes under it, the tiers in use, and
Volcano's virtual root :data:`CLUSTER_TOP` one tier above the highest, holding every
node and adopting every parentless hypernode.

Where Volcano's result depends on Go map order (the order of a hypernode's nodes,
siblings, a node found in two lowest-tier hypernodes), batchsched takes the session's
node order and hypernode names in ascending order. Volcano builds its tree
incrementally and, on a cycle or a hypernode claimed by two parents, keeps the tree
it had and stops allocating topology jobs until it is fixed; so does a session here
(``Session.hyper_nodes_ready``; its tree is ``build_topology(..., partial=True)``), and
a live cache keeps such updates as Volcano's does. A scenario, which declares its
whole cluster at once, is refused instead (:class:`TopologyError`).
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Literal

import attrs

from batchsched.errors import BatchSchedError
from batchsched.kube.affinity import LabelSelector
from batchsched.kube.cel.re2 import Re2Error
from batchsched.kube.cel.re2_search import Re2Search

if TYPE_CHECKING:
    from batchsched.api.node import NodeInfo

__all__ = [
    "CLUSTER_TOP",
    "HARD",
    "SOFT",
    "HyperNode",
    "HyperNodeMember",
    "NetworkTopology",
    "Topology",
    "TopologyError",
    "build_topology",
    "unmatched_brackets",
]

log = logging.getLogger("batchsched")

#: Volcano's ``framework.ClusterTopHyperNode``: the virtual root every session adds.
CLUSTER_TOP = "<cluster-top-hypernode>"
HARD = "hard"
SOFT = "soft"


class TopologyError(BatchSchedError, ValueError):
    """The hypernodes do not form a tree (a cycle, a hypernode with two parents)."""


@attrs.frozen
class HyperNodeMember:
    """One ``spec.members`` entry: exactly one of ``exact``, ``regex``, ``labels``."""

    kind: Literal["Node", "HyperNode"]
    exact: str = ""
    regex: str = ""
    labels: LabelSelector | None = None
    #: Why Volcano cannot read the member's selector, which the API server stored (a
    #: label requirement it refuses): the member then selects no node, as Volcano's
    #: ``GetMembers`` logs and returns nothing. Empty: readable.
    unreadable: str = ""

    def nodes(self, all_nodes: Mapping[str, Mapping[str, str]]) -> set[str]:
        """The node names a ``Node`` member selects (``GetMembers``): an exact name
        counts even when no such node exists; a regular expression is searched
        (unanchored) in every node name; an empty label selector selects nothing, and
        so does a pattern Go's regexp refuses or a selector Volcano cannot read."""
        if self.unreadable:
            return set()
        if self.exact:
            return {self.exact}
        if self.regex:
            try:
                pattern = _go_regexp(self.regex)
            except Re2Error as exc:
                if not exc.supported:
                    raise  # Go reads it; selecting nothing would decide otherwise
                if self.regex not in _REFUSED_PATTERNS:
                    _REFUSED_PATTERNS.add(self.regex)
                    log.warning("hypernode member pattern %r: Go's regexp refuses it (%s): "
                                "the member selects no node", self.regex, exc)
                return set()
            return {name for name in all_nodes if pattern.search(name)}
        if self.labels is None or not self.labels.requirements:
            return set()
        selector = self.labels
        return {name for name, labels in all_nodes.items() if selector.matches(labels)}


def unmatched_brackets(pattern: str) -> str:
    """What Volcano's HyperNode admission policy finds unmatched in a member pattern
    (it counts each kind of bracket, escaped or not), or ``""``."""
    for opening, closing, name in (("(", ")", "parentheses"), ("[", "]", "square brackets"),
                                   ("{", "}", "curly braces")):
        if opening in pattern and pattern.count(opening) != pattern.count(closing):
            return name
    return ""


#: Member patterns Go refuses, said once per process (sessions resolve them again).
_REFUSED_PATTERNS: set[str] = set()


@functools.lru_cache(maxsize=256)
def _go_regexp(pattern: str) -> Re2Search:
    """Go's ``regexp.Compile`` of a member pattern (RE2 syntax, read as RE2 reads it:
    ``[[:digit:]]`` is a class, and searched in linear time);
    :class:`~batchsched.kube.cel.re2.Re2Error` for a pattern Go refuses."""
    return Re2Search(pattern)


@attrs.frozen
class HyperNode:
    """A ``HyperNode`` object (cluster-scoped)."""

    name: str
    tier: int
    members: tuple[HyperNodeMember, ...]
    tier_name: str = ""

    def children(self) -> list[str]:
        """The hypernodes named as members (Volcano follows exact names only)."""
        return [m.exact for m in self.members if m.kind == "HyperNode" and m.exact]


@attrs.frozen
class NetworkTopology:
    """A pod group's ``spec.networkTopology``: ``mode`` hard or soft, and the highest
    tier the job may span, as a number or as a hypernode ``tierName``."""

    mode: str = HARD
    highest_tier_allowed: int | None = None
    highest_tier_name: str = ""

    def hard_tier(self) -> int | None:
        """``IsHardTopologyMode``: the tier limit of a hard topology, else None."""
        if self.mode == HARD and self.highest_tier_allowed is not None:
            return self.highest_tier_allowed
        return None


@attrs.define(eq=False)
class Topology:
    """The hypernode tree of one session (Volcano's ``ssn.HyperNodes``,
    ``HyperNodesSetByTier``, ``HyperNodesTiers``, ``RealNodesSet``/``RealNodesList``
    and ``HyperNodeTierNameMap``), the virtual root included."""

    tiers_of: dict[str, int]
    parent: dict[str, str]
    children: dict[str, tuple[str, ...]]
    #: tier -> its hypernodes, by name.
    by_tier: dict[int, tuple[str, ...]]
    #: hypernode -> the names of the session's nodes under it.
    real_nodes: dict[str, frozenset[str]]
    #: hypernode -> those nodes, in session node order.
    real_node_list: dict[str, list[NodeInfo]]
    tier_names: dict[str, int]
    _first: dict[int, dict[str, str]] = attrs.field(factory=dict, init=False)
    _holding: dict[str, tuple[str, ...]] | None = attrs.field(default=None, init=False)

    @property
    def tiers(self) -> list[int]:
        """Every tier in use, ascending (the root's included)."""
        return sorted(self.by_tier)

    def holding(self, node: str) -> tuple[str, ...]:
        """The hypernodes whose real nodes include ``node`` (the root's included)."""
        if self._holding is None:
            holding: dict[str, list[str]] = {}
            for name, nodes in self.real_nodes.items():
                for member in nodes:
                    holding.setdefault(member, []).append(name)
            self._holding = {member: tuple(names) for member, names in holding.items()}
        return self._holding.get(node, ())

    @property
    def top_tier(self) -> int:
        return self.tiers_of[CLUSTER_TOP]

    def __contains__(self, name: object) -> bool:
        return name in self.tiers_of

    def tier(self, name: str) -> int:
        return self.tiers_of[name]

    def ancestors(self, name: str) -> list[str]:
        """``GetAncestors``: the hypernode itself, then its parent, and so on up."""
        chain = [name]
        current = self.parent.get(name, "")
        while current and current not in chain:
            chain.append(current)
            current = self.parent.get(current, "")
        return chain

    def lca(self, a: str, b: str) -> str:
        """``GetLCAHyperNode``: the lowest common ancestor ("" and x give x)."""
        if not a:
            return b
        if not b:
            return a
        mine = set(self.ancestors(a))
        return next((x for x in self.ancestors(b) if x in mine), "")

    def leaf_of(self, node: str) -> str:
        """``FindHyperNodeForNode``: the hypernode of the lowest tier holding the node
        ("" when none does; the first by name when several do)."""
        tiers = self.tiers
        return self.holder(tiers[0], node) if tiers else ""

    def holder(self, tier: int, node: str) -> str:
        """The first hypernode (by name) of ``tier`` holding the node, or ""."""
        first = self._first.get(tier)
        if first is None:
            first = self._first[tier] = {}
            for name in self.by_tier.get(tier, ()):
                for member in self.real_nodes.get(name, ()):
                    first.setdefault(member, name)
        return first.get(node, "")

    def tasks_within(self, name: str, node_names: Iterable[str]) -> int:
        """``FindJobTaskNumOfHyperNode``: how many of the tasks (by node) run under it."""
        nodes = self.real_nodes.get(name, frozenset())
        return sum(1 for node in node_names if node and node in nodes)


def _link_order(hyper_nodes: Sequence[HyperNode],
                link_claims: Mapping[tuple[str, str], int] | None) -> dict[tuple[str, str], int]:
    """Each ``(parent, child)`` link's rank in claim order: those ``link_claims``
    names by it, the others after them in hypernode and member order."""
    known = link_claims or {}
    later = max(known.values(), default=0) + 1
    order: dict[tuple[str, str], int] = {}
    for spec in hyper_nodes:
        for child in spec.children():
            link = (spec.name, child)
            if link not in order:
                claimed = known.get(link)
                order[link] = claimed if claimed is not None else later + len(order)
    return order


def build_topology(hyper_nodes: Sequence[HyperNode], session_nodes: Sequence[NodeInfo], *,
                   partial: bool = False,
                   link_claims: Mapping[tuple[str, str], int] | None = None) -> Topology:
    """The session's tree from the cluster's hypernodes and the session's nodes.

    Volcano resolves member selectors against every node, Ready or not, and keeps
    the session's among them; selecting among the session's nodes gives the same
    sets. A hypernode named as a child but not declared is kept as Volcano's
    placeholder (tier 0, no nodes, in no tier).

    Hypernodes that form no tree raise :class:`TopologyError`; with ``partial`` the
    tree is built without the links that break it instead, as Volcano's cache keeps
    the tree it had: a hypernode a second parent claims stays with the parent that
    claimed it first, and of the links of a cycle the one claimed last is left out.
    When each ``(parent, child)`` link was claimed is ``link_claims`` (lower is
    older; :class:`~batchsched.cache.MemoryCache` records it); a link it does not
    name is newer than those it names, and such links are ordered as the hypernodes
    and their members are.
    """
    all_nodes = {node.name: node.labels for node in session_nodes}
    specs = {h.name: h for h in hyper_nodes}
    claimed_at = _link_order(hyper_nodes, link_claims)
    parent: dict[str, str] = {}
    for claimant, child in sorted(claimed_at, key=claimed_at.__getitem__):
        held = parent.get(child)
        if held is not None and held != claimant:
            if partial:
                continue
            raise TopologyError(f"hypernode {child!r} already has a parent {held!r}, and "
                                f"cannot set another parent {claimant!r}")
        parent[child] = claimant
    tiers_of = {name: spec.tier for name, spec in specs.items()}
    for child in parent:
        tiers_of.setdefault(child, 0)  # a placeholder: named by a parent, not declared
    for name in tiers_of:
        seen = [name]
        current = parent.get(name, "")
        while current:
            if current in seen:
                if partial:
                    # The cycle's link claimed last goes.
                    cycle = seen[seen.index(current):]
                    newest = max(cycle, key=lambda child: claimed_at[parent[child], child])
                    del parent[newest]
                    break
                raise TopologyError(f"cyclic dependency detected: hypernode {current!r} is "
                                    f"its own ancestor ({' -> '.join([*seen, current])})")
            seen.append(current)
            current = parent.get(current, "")

    real = _resolved(hyper_nodes, session_nodes, all_nodes, specs, tiers_of, parent=parent)
    by_tier: dict[int, list[str]] = {}
    for name, spec in specs.items():
        by_tier.setdefault(spec.tier, []).append(name)
    top_tier = max(1, max((t + 1 for t in by_tier), default=1))
    children: dict[str, list[str]] = {name: [] for name in tiers_of}
    children[CLUSTER_TOP] = []
    for name in tiers_of:
        up = parent.get(name)
        if up is None:
            parent[name] = up = CLUSTER_TOP
        children[up].append(name)
    parent[CLUSTER_TOP] = ""
    tiers_of[CLUSTER_TOP] = top_tier
    by_tier[top_tier] = [CLUSTER_TOP]
    in_session = {node.name for node in session_nodes}
    real_nodes = {name: frozenset(nodes & in_session) for name, nodes in real.items()}
    real_nodes[CLUSTER_TOP] = frozenset(in_session)
    position = {node.name: (i, node) for i, node in enumerate(session_nodes)}
    real_node_list = {
        name: [position[n][1] for n in sorted(nodes, key=lambda n: position[n][0])]
        for name, nodes in real_nodes.items()
    }
    real_node_list[CLUSTER_TOP] = list(session_nodes)
    tier_names: dict[str, int] = {}
    for spec in sorted(specs.values(), key=lambda s: s.name):
        if spec.tier_name:
            tier_names[spec.tier_name] = spec.tier
    return Topology(
        tiers_of=tiers_of,
        parent=parent,
        children={name: tuple(sorted(kids)) for name, kids in children.items()},
        by_tier={tier: tuple(sorted(names)) for tier, names in by_tier.items()},
        real_nodes=real_nodes,
        real_node_list=real_node_list,
        tier_names=tier_names,
    )


#: The last resolution of member selectors that needed the nodes' names or labels
#: (regular expressions, label selectors): a simulator's sessions see the same
#: hypernodes and nodes again and again.
_LAST_RESOLVED: list[tuple[object, dict[str, set[str]]]] = []


def _resolved(hyper_nodes: Sequence[HyperNode], session_nodes: Sequence[NodeInfo],
              all_nodes: Mapping[str, Mapping[str, str]], specs: Mapping[str, HyperNode],
              tiers_of: Mapping[str, int], *, parent: Mapping[str, str]
              ) -> dict[str, set[str]]:
    """Each hypernode's nodes: its Node members' plus its children's (those ``parent``
    links to it: a partial tree leaves some members out)."""
    selective = any(m.regex or m.labels is not None for h in hyper_nodes for m in h.members)
    key: object = None
    if selective:
        key = (tuple(hyper_nodes),
               tuple((node.name, tuple(sorted(node.labels.items()))) for node in session_nodes))
        # One read of the entry: another thread's build may replace it meanwhile.
        last = _LAST_RESOLVED[0] if _LAST_RESOLVED else None
        if last is not None and last[0] == key:
            return last[1]  # read, never changed, by build_topology
    real: dict[str, set[str]] = {}

    def resolve(name: str) -> set[str]:
        known = real.get(name)
        if known is not None:
            return known
        found: set[str] = set()
        spec = specs.get(name)
        if spec is not None:
            for member in spec.members:
                if member.kind == "Node":
                    found |= member.nodes(all_nodes)
                elif member.exact and parent.get(member.exact) == name:
                    found |= resolve(member.exact)
        real[name] = found
        return found

    for name in tiers_of:
        resolve(name)
    if selective:
        _LAST_RESOLVED[:] = [(key, real)]
    return real
