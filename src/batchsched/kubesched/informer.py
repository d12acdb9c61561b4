"""What changed between two snapshots, as kube-scheduler's informers report it.

kube-scheduler hears of every change to nodes and pods and tells its scheduling
queue (``MoveAllToActiveOrBackoffQueue`` and the assigned-pod events), so that the
pods a change may help are tried again. :class:`~batchsched.kubesched.scheduler.
PodScheduler` sees the host's cluster as snapshots, one per run: it compares each
with the last and reports what changed the same way, with the objects before and
after, which the queueing hints read (:mod:`batchsched.kubesched.events`):

* a node in the new snapshot only: ``NodeAdd`` (a node that became Ready too: the
  snapshot holds Ready nodes only, and the pods tried meanwhile never saw it);
* a node in the old one only: ``NodeDelete``;
* a node in both, for each part that changed, as kube's
  ``NodeSchedulingPropertiesChange`` splits an update: ``NodeUpdateNodeAllocatable``,
  ``NodeUpdateNodeLabel``, ``NodeUpdateNodeTaint`` (taints or the unschedulable
  flag), ``NodeUpdateNodeAnnotation``;
* a pod on a node in the old snapshot and on none in the new (deleted, finished,
  or evicted): ``AssignedPodDelete``; a pod on a node in the new one only (bound by
  another scheduler, say): ``AssignedPodAdd``.
"""

from __future__ import annotations

from collections.abc import Iterator

import attrs

from batchsched.api.cluster import ClusterInfo
from batchsched.api.node import NodeInfo
from batchsched.api.task import TaskInfo

__all__ = ["Change", "cluster_changes"]


@attrs.frozen
class Change:
    """One change: its event label and the object before and after (None: absent)."""

    event: str
    old: NodeInfo | TaskInfo | None
    new: NodeInfo | TaskInfo | None


def cluster_changes(before: ClusterInfo, after: ClusterInfo) -> list[Change]:
    """The changes from ``before`` to ``after``: nodes first, then pods, each in the
    snapshots' order (see the module docstring)."""
    changes: list[Change] = []
    for name, node in after.nodes.items():
        old = before.nodes.get(name)
        if old is None:
            changes.append(Change("NodeAdd", None, node))
        else:
            changes.extend(Change(event, old, node) for event in _node_updates(old, node))
    changes.extend(Change("NodeDelete", node, None)
                   for name, node in before.nodes.items() if name not in after.nodes)
    placed_before = dict(_placed(before))
    placed_after = dict(_placed(after))
    changes.extend(Change("AssignedPodDelete", task, None)
                   for uid, task in placed_before.items() if uid not in placed_after)
    changes.extend(Change("AssignedPodAdd", None, task)
                   for uid, task in placed_after.items() if uid not in placed_before)
    return changes


def _node_updates(old: NodeInfo, new: NodeInfo) -> Iterator[str]:
    if not old.allocatable.equal(new.allocatable):
        yield "NodeUpdateNodeAllocatable"
    if old.labels != new.labels:
        yield "NodeUpdateNodeLabel"
    if old.taints != new.taints or old.unschedulable != new.unschedulable:
        yield "NodeUpdateNodeTaint"
    if old.annotations != new.annotations:
        yield "NodeUpdateNodeAnnotation"


def _placed(cluster: ClusterInfo) -> Iterator[tuple[str, TaskInfo]]:
    # A node that stopped being Ready still holds its pods: they are not deleted.
    for nodes in (cluster.nodes, cluster.not_ready_nodes):
        for node in nodes.values():
            yield from node.tasks.items()
