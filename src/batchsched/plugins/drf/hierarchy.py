"""Hierarchical DRF (HDRF): the share tree of Volcano's drf plugin with ``enableHierarchy``.

Queues place themselves in a tree with two annotations: ``volcano.sh/hierarchy``
(a path such as ``root/eng/dev``; the first element names the root and is
ignored) and ``volcano.sh/hierarchy-weights`` (one weight per path element, such
as ``1/2/8``). Every job hangs as a leaf under its queue's path.

A leaf's share is its job's DRF share. An inner node's allocation is the sum of
its children's allocations after scaling every unsaturated child to the smallest
dominant share among them, so that a child that asked for more than its siblings
does not raise its parent's share beyond what the siblings would have got. A leaf
is *saturated* when its job holds all it asked for in some dimension, or asks for
a dimension the cluster has run out of; an inner node is saturated when all its
children are. Queues compare along their paths: unsaturated before saturated,
then lower ``share / weight`` first.

Cost: :class:`ShareTree` recomputes only the changed job's ancestors when the
set of dimensions the cluster still has room in is unchanged and the job's leaf
already existed (the common case of an allocate or deallocate event); otherwise
the whole tree. Both give bit-identical results: a node's figures depend only on
its children's and on that set, and the children off the changed path keep
theirs.

Determinism: Volcano sums children in Go map order (so float rounding may vary);
here children are visited in name order.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable

import attrs

from batchsched.api.resource import Resource
from batchsched.kube.go_strconv import parse_float

__all__ = [
    "HierarchyNode",
    "JobShare",
    "ShareTree",
    "compare_queue_paths",
    "place_job",
    "recompute",
    "refresh_path",
]

log = logging.getLogger("batchsched")

ShareOf = Callable[[Resource], float]


@attrs.define(eq=False)
class JobShare:
    """A job's DRF state: what it holds and its dominant share of the cluster."""

    allocated: Resource = attrs.field(factory=Resource)
    share: float = 0.0

    def clone(self) -> JobShare:
        return JobShare(self.allocated.clone(), self.share)


@attrs.define(eq=False)
class HierarchyNode:
    """A node of the share tree. A leaf (``children is None``) is a job and shares the
    job's :class:`JobShare`; an inner node owns a computed one."""

    name: str
    weight: float
    state: JobShare = attrs.field(factory=JobShare)
    request: Resource = attrs.field(factory=Resource)
    saturated: bool = False
    children: dict[str, HierarchyNode] | None = attrs.field(factory=dict)

    @property
    def is_leaf(self) -> bool:
        return self.children is None

    def clone(self) -> HierarchyNode:
        """A deep copy; leaves get their own copy of the job state."""
        twin = HierarchyNode(self.name, self.weight, self.state.clone(), self.request.clone(),
                             self.saturated, None)
        if self.children is not None:
            twin.children = {name: child.clone() for name, child in self.children.items()}
        return twin


def new_root() -> HierarchyNode:
    return HierarchyNode("root", 1.0)


@functools.lru_cache(maxsize=64)
def _warn_short_weights(hierarchy: str, weights: str) -> None:
    """Once per pair: a session places every job of such a queue."""
    log.warning("batchsched: drf: volcano.sh/hierarchy-weights %r has fewer weights than "
                "volcano.sh/hierarchy %r has elements; the missing ones are 1 (Volcano "
                "panics)", weights, hierarchy)


def _weight(weights: list[str], index: int) -> float:
    """The weight of path element ``index``, read as Volcano reads it (Go's
    ``strconv.ParseFloat``, its error ignored: unreadable text counts as 0), anything
    below 1 counting as 1 (NaN stays). Volcano panics on a weights list shorter than
    the path (its queue webhook refuses one); here the missing weight is 1."""
    if index >= len(weights):
        return 1.0
    value, _ = parse_float(weights[index])
    return 1.0 if value < 1 else value


def place_job(
    root: HierarchyNode, job_uid: str, state: JobShare, request: Resource, *,
    hierarchy: str, weights: str,
) -> tuple[list[HierarchyNode], bool]:
    """Put (or replace) the job's leaf under its queue's path, creating missing inner
    nodes. An inner node's weight is fixed by the first queue that creates it.

    Returns the path from the root to the new leaf, and whether the tree's shape
    changed (a node was created, or anything but a leaf of this job replaced).
    """
    paths = hierarchy.split("/")
    weight_list = weights.split("/")
    if len(weight_list) < len(paths):
        _warn_short_weights(hierarchy, weights)
    node = root
    path = [root]
    reshaped = False
    for i in range(1, len(paths)):
        children = node.children
        assert children is not None  # only leaves have no children, and leaves end paths
        child = children.get(paths[i])
        if child is None or child.is_leaf:
            child = HierarchyNode(paths[i], _weight(weight_list, i))
            children[paths[i]] = child
            reshaped = True
        node = child
        path.append(node)
    assert node.children is not None
    previous = node.children.get(job_uid)
    if previous is None or not previous.is_leaf:
        reshaped = True
    leaf = HierarchyNode(job_uid, 1.0, state, request.clone(), children=None)
    node.children[job_uid] = leaf
    path.append(leaf)
    return path, reshaped


def _leaf_saturated(allocated: Resource, request: Resource, demanding: set[str]) -> bool:
    for name in allocated.resource_names():
        held, wanted = allocated.get(name), request.get(name)
        if held != 0 and wanted != 0 and held >= wanted:
            return True
        if name not in demanding and wanted != 0:
            return True
    return False


def recompute(node: HierarchyNode, demanding: set[str], share_of: ShareOf) -> None:
    """Refresh saturation, allocation and share of ``node`` and everything below it.

    ``demanding``: the dimensions the cluster still has room in; ``share_of``: the
    dominant share of an allocation in the cluster.
    """
    if node.children is None:
        node.saturated = _leaf_saturated(node.state.allocated, node.request, demanding)
        return
    for child in node.children.values():
        recompute(child, demanding, share_of)
    _aggregate(node, share_of)


def refresh_path(path: list[HierarchyNode], demanding: set[str], share_of: ShareOf) -> None:
    """Refresh a leaf (``path[-1]``) and its ancestors (``path[:-1]``, root first),
    trusting every other node: what :func:`recompute` of the root gives when only
    that leaf changed since the tree was last computed for the same ``demanding``."""
    leaf = path[-1]
    leaf.saturated = _leaf_saturated(leaf.state.allocated, leaf.request, demanding)
    for node in reversed(path[:-1]):
        _aggregate(node, share_of)


def _aggregate(node: HierarchyNode, share_of: ShareOf) -> None:
    """An inner node's allocation, share and saturation from its (current) children."""
    assert node.children is not None
    children = [node.children[name] for name in sorted(node.children)]
    smallest = 1.0
    for child in children:
        if child.state.share != 0 and not child.saturated:
            smallest = min(smallest, share_of(child.state.allocated))
    allocated = Resource()
    saturated = True
    for child in children:
        if not child.saturated:
            saturated = False
        if child.state.share != 0:
            if child.saturated:
                allocated.add(child.state.allocated)
            else:
                allocated.add(child.state.allocated.clone().multi(smallest / child.state.share))
    node.state = JobShare(allocated, share_of(allocated))
    node.saturated = saturated


@attrs.define(eq=False)
class ShareTree:
    """The share tree and the ``demanding`` set it was last computed for.

    :meth:`update_job` refreshes only the job's path when it can (see the module
    docstring); ``demanding`` is None while the tree is not known to be current.
    """

    root: HierarchyNode = attrs.field(factory=new_root)
    demanding: frozenset[str] | None = None

    def clone(self) -> ShareTree:
        return ShareTree(self.root.clone(), self.demanding)

    def place(self, job_uid: str, state: JobShare, request: Resource, *,
              hierarchy: str, weights: str) -> None:
        """Place a job without computing anything (call :meth:`recompute` after)."""
        place_job(self.root, job_uid, state, request, hierarchy=hierarchy, weights=weights)
        self.demanding = None

    def recompute(self, demanding: set[str], share_of: ShareOf) -> None:
        """Recompute the whole tree."""
        recompute(self.root, demanding, share_of)
        self.demanding = frozenset(demanding)

    def update_job(self, job_uid: str, state: JobShare, request: Resource, *,
                   hierarchy: str, weights: str, demanding: set[str],
                   share_of: ShareOf) -> None:
        """Replace the job's leaf and bring the tree up to date."""
        path, reshaped = place_job(self.root, job_uid, state, request,
                                   hierarchy=hierarchy, weights=weights)
        if reshaped or self.demanding != frozenset(demanding):
            self.recompute(demanding, share_of)
            return
        refresh_path(path, demanding, share_of)


_MISSING = HierarchyNode("", 1.0, children={})


def compare_queue_paths(root: HierarchyNode, left: str, right: str) -> float:
    """Negative when the queue at path ``left`` goes before the one at ``right``.

    Walks both paths from the root while the nodes tie; a path element with no node
    (a queue without jobs) reads as an empty, unsaturated node.
    """
    left_path, right_path = left.split("/"), right.split("/")
    lnode = rnode = root
    depth = min(len(left_path), len(right_path))
    for i in range(depth):
        if not lnode.saturated and rnode.saturated:
            return -1.0
        if lnode.saturated and not rnode.saturated:
            return 1.0
        lvalue = lnode.state.share / lnode.weight
        rvalue = rnode.state.share / rnode.weight
        if lvalue != rvalue:
            return lvalue - rvalue
        if i < depth - 1:
            lnode = _child(lnode, left_path[i + 1])
            rnode = _child(rnode, right_path[i + 1])
    return 0.0


def _child(node: HierarchyNode, name: str) -> HierarchyNode:
    if node.children is None:
        return _MISSING
    return node.children.get(name, _MISSING)
