"""Queue figures of the capacity plugin, flat and hierarchical.

Flat (:func:`build_flat`): every queue with jobs gets its spec ``deserved``
(capped by its realCapability, raised to its guarantee), its ``capability`` and
``realCapability`` = (cluster total minus all guarantees) + own guarantee,
capped by capability.

Hierarchical (:func:`build_hierarchy`, ``enableHierarchy``): queues form a tree
under the queue named ``root`` through ``parent`` (empty: ``root``). Every queue
gets figures; a leaf's jobs are also counted in every ancestor. From the root
down, a child's deserved is raised to its guarantee, a capability dimension the
child does not set is inherited from its parent, and its realCapability is
(parent's realCapability minus the guarantees of all siblings, never below 0) +
own guarantee, capped by its capability. The root's deserved and guarantee are
the sums of its children's; its capability is unbounded unless set. The tree is
*not ready* (capacity then refuses everything) when a queue's parent is missing,
``root`` is missing, or a job sits in a queue that has
children.

Determinism: children are visited (and summed) in name order. As Volcano's
``checkHierarchicalQueue``, a child capability above its parent's and children's
deserved or guarantees summing above their parent's are logged (once per process),
not refused.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable

import attrs

from batchsched.api.job import JobInfo
from batchsched.api.queue import ROOT_QUEUE, QueueInfo
from batchsched.api.queue_accounting import (
    MAX_AMOUNT,
    QueueUsage,
    capability_from_spec,
    exceeded_part,
    resource_max,
    share,
    spec_resource,
    spec_written,
)
from batchsched.api.resource import DimensionDefault, Resource, format_quantity
from batchsched.framework.arguments import warned_once
from batchsched.plugins.capacity.devices import DeviceQuota

__all__ = [
    "ROOT",
    "CapacityQueue",
    "ancestor_at_depth",
    "build_flat",
    "build_hierarchy",
    "common_level",
    "shares_non_root_ancestor",
]

ROOT = ROOT_QUEUE
_INFINITY = DimensionDefault.INFINITY
log = logging.getLogger("batchsched")
#: Volcano's ``math.MaxInt64`` given to every scalar of the root's unbounded capability.
_MAX_SCALAR = float(2**63 - 1)


@attrs.define(eq=False)
class CapacityQueue:
    """One queue's figures for the session. ``ancestors`` runs from the root to the
    parent (empty in flat mode and for the root)."""

    name: str
    usage: QueueUsage = attrs.field(factory=QueueUsage)
    deserved: Resource = attrs.field(factory=Resource)
    guarantee: Resource = attrs.field(factory=Resource)
    capability: Resource = attrs.field(factory=Resource)
    real_capability: Resource = attrs.field(factory=Resource)
    share: float = 0.0
    ancestors: list[str] = attrs.field(factory=list)
    children: dict[str, CapacityQueue] = attrs.field(factory=dict)
    #: The quota on devices claimed through DRA (None: the queue names no device class).
    devices: DeviceQuota | None = None

    @property
    def allocated(self) -> Resource:
        return self.usage.allocated

    @property
    def is_leaf(self) -> bool:
        return not self.children

    def update_share(self) -> None:
        """1 for a queue without deserved (best effort), else the largest
        allocated / deserved over deserved's dimensions."""
        if self.deserved.is_empty():
            self.share = 1.0
            return
        result = 0.0
        for name in self.deserved.resource_names():
            result = max(result, share(self.allocated.get(name), self.deserved.get(name)))
        self.share = result

    def clone(self) -> CapacityQueue:
        """A copy of the figures (children are not copied: only names matter there)."""
        usage = QueueUsage(self.usage.allocated.clone(), self.usage.request.clone(),
                           self.usage.inqueue.clone(), self.usage.elastic.clone())
        return CapacityQueue(self.name, usage, self.deserved.clone(), self.guarantee.clone(),
                             self.capability.clone(), self.real_capability.clone(), self.share,
                             list(self.ancestors), dict(self.children),
                             self.devices.clone() if self.devices is not None else None)


def _guarantee(queue: QueueInfo) -> Resource:
    return spec_resource(queue, "guarantee") if spec_written(queue, "guarantee") else Resource()


def total_guarantee(queues: Iterable[QueueInfo]) -> Resource:
    total = Resource()
    for queue in queues:
        if spec_written(queue, "guarantee"):
            total.add(spec_resource(queue, "guarantee"))
    return total


def build_flat(
    queues: dict[str, QueueInfo], jobs: Iterable[JobInfo], total: Resource
) -> dict[str, CapacityQueue]:
    """Figures for every queue that has jobs (flat mode)."""
    guarantees = total_guarantee(queues.values())
    out: dict[str, CapacityQueue] = {}
    for job in jobs:
        attr = out.get(job.queue)
        if attr is None:
            queue = queues.get(job.queue)
            if queue is None:
                continue
            guarantee = _guarantee(queue)
            capability = capability_from_spec(queue)
            real = exceeded_part(total, guarantees).add(guarantee)
            if capability is not None:
                real.min_dimension(capability, _INFINITY)
            attr = CapacityQueue(
                name=queue.name, deserved=spec_resource(queue, "deserved"),
                guarantee=guarantee,
                capability=capability if capability is not None else Resource(),
                real_capability=real,
            )
            out[job.queue] = attr
        attr.usage.add_job(job)
    for attr in out.values():
        attr.deserved.min_dimension(attr.real_capability, _INFINITY)
        attr.deserved = resource_max(attr.deserved, attr.guarantee)
        attr.update_share()
    return out


class HierarchyError(Exception):
    """The queue tree cannot be used this session (the message says why)."""


def build_hierarchy(
    queues: dict[str, QueueInfo], jobs: Iterable[JobInfo], total: Resource
) -> dict[str, CapacityQueue]:
    """Figures for every queue of the tree; raises :class:`HierarchyError` when the
    tree is not ready to schedule."""
    out = {
        name: CapacityQueue(
            name=name, deserved=spec_resource(q, "deserved"), guarantee=_guarantee(q),
            capability=spec_resource(q, "capability") if spec_written(q, "capability")
            else Resource(),
        )
        for name, q in queues.items()
    }
    for name in sorted(queues):
        _link(name, queues, out)
    for job in jobs:
        attr = out.get(job.queue)
        if attr is None:
            continue
        if attr.children:
            # A queue of a parent cycle counts the next one round as its child, as
            # Volcano's walk records them.
            cycle = " (its parents form a cycle)" if job.queue in attr.ancestors else ""
            raise HierarchyError(
                f"queue {job.queue!r} of job {job.uid} is not a leaf queue{cycle}")
        delta = attr.usage.add_job(job)
        for ancestor in attr.ancestors:
            out[ancestor].usage.merge(delta)
    root = out.get(ROOT)
    if root is None:
        raise HierarchyError(f"the root queue {ROOT!r} is missing")
    if root.capability.is_empty():
        root.capability = Resource(MAX_AMOUNT, MAX_AMOUNT,
                                   {name: _MAX_SCALAR for name in total.scalars})
    root.real_capability = root.capability.clone()
    _settle(root)
    for attr in out.values():
        attr.update_share()
    return out


def _link(name: str, queues: dict[str, QueueInfo], out: dict[str, CapacityQueue]) -> None:
    """Set the ancestors of ``name`` (and of its own ancestors) and register it as a
    child of its parent."""
    chain: list[str] = []
    current = name
    # A linked queue other than the root always has ancestors (at least the root).
    while current != ROOT and not out[current].ancestors:
        if current in chain:
            # Parents in a cycle: Volcano's walk stops at a queue it has seen and links
            # the chain under it (its cycle check never fires), so the cycle, and the
            # queues under it, hang off no root: their realCapability stays empty.
            break
        chain.append(current)
        parent = queues[current].parent or ROOT
        if parent not in queues:
            raise HierarchyError(f"the queue {current!r} has invalid parent queue {parent!r}")
        current = parent
    # ``current`` is the root or a queue already linked; link the chain from the top.
    for child in reversed(chain):
        parent = queues[child].parent or ROOT
        out[child].ancestors = [*out[parent].ancestors, parent]
        out[parent].children[child] = out[child]


def _settle(parent: CapacityQueue) -> None:
    children = [parent.children[name] for name in sorted(parent.children)]
    guarantees, deserved = Resource(), Resource()
    for child in children:
        child.deserved = resource_max(child.deserved, child.guarantee)
        deserved.add(child.deserved)
        guarantees.add(child.guarantee)
        if child.capability.milli_cpu <= 0:
            child.capability.milli_cpu = parent.capability.milli_cpu
        if child.capability.memory <= 0:
            child.capability.memory = parent.capability.memory
        for name, amount in parent.capability.scalars.items():
            child.capability.scalars.setdefault(name, amount)
        over = _greater_on(child.capability, parent.capability)
        if over:
            _say(f"capacity: child queue {child.name} capability ({_shown(child.capability)}) "
                 f"exceeds parent queue {parent.name} capability "
                 f"({_shown(parent.capability)}) on {', '.join(over)}; the child's "
                 "effective capability is limited by the parent")
    if parent.name == ROOT:
        parent.guarantee = guarantees
        parent.deserved = deserved
    # Volcano's checkHierarchicalQueue logs these and goes on (they only skew shares).
    for what, total, own in (("deserved", deserved, parent.deserved),
                             ("guarantees", guarantees, parent.guarantee)):
        if own.less_partly(total):
            _say(f"capacity: sum of child queue {what} ({_shown(total)}) exceeds parent "
                 f"queue {parent.name} {what.rstrip('s')} ({_shown(own)})")
    for child in children:
        child.real_capability = exceeded_part(parent.real_capability, guarantees).add(
            child.guarantee).min_dimension(child.capability, _INFINITY)
    for child in children:
        _settle(child)


def _greater_on(child: Resource, parent: Resource) -> list[str]:
    """The dimensions where ``child`` is above ``parent`` (a scalar the parent does not
    name is unbounded there: Volcano's ``GreaterPartly`` with ``Infinity``)."""
    over = [name for name, mine, theirs in (("cpu", child.milli_cpu, parent.milli_cpu),
                                             ("memory", child.memory, parent.memory))
            if mine > theirs]
    over.extend(name for name, amount in sorted(child.scalars.items())
                if name in parent.scalars and amount > parent.scalars[name])
    return over


#: What the hierarchy checks said, once per process each: every session checks the
#: tree again, and a replay opens thousands of them.
_SAID: set[str] = warned_once()
_MOST_SAID = 1024


def _shown(resource: Resource) -> str:
    """``cpu 2, memory 4Gi``, an unbounded dimension (an unset capability) left out."""
    return ", ".join(f"{name} {format_quantity(name, amount)}"
                     for name, amount in resource.to_dict().items()
                     if amount < _MAX_SCALAR) or "nothing"


def _say(message: str) -> None:
    if message in _SAID or len(_SAID) >= _MOST_SAID:
        return
    _SAID.add(message)
    log.error("%s", message)


# -- tree geometry --------------------------------------------------------------------


def common_level(left: CapacityQueue, right: CapacityQueue) -> int:
    """The depth of the deepest ancestor two queues share (0: only the root)."""
    level = 0
    for i in range(min(len(left.ancestors), len(right.ancestors))):
        if left.ancestors[i] != right.ancestors[i]:
            return level
        level = i
    return level


def ancestor_at_depth(attr: CapacityQueue, depth: int) -> str | None:
    """The ancestor ``depth`` levels up (1: the parent), or None."""
    if depth <= 0 or len(attr.ancestors) < depth:
        return None
    return attr.ancestors[len(attr.ancestors) - depth]


def shares_non_root_ancestor(left: CapacityQueue, right: CapacityQueue, levels: int) -> bool:
    """Whether some queue other than the root is among both queues' ancestors within
    ``levels`` levels up (at any depths)."""
    if levels <= 0:
        return False
    mine = {ancestor_at_depth(left, d) for d in range(1, levels + 1)}
    theirs = {ancestor_at_depth(right, d) for d in range(1, levels + 1)}
    return any(a is not None and a != ROOT and a in theirs for a in mine)
