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
  another scheduler, say): ``AssignedPodAdd``; a pod deleted and created again under
  its name, or on another node: both. The pods of a node that left the snapshot
  (or came into it) are the node's event, not pod events;
* a pod of the scheduler's pending in the new snapshot only (a new pod, or one
  created again): ``UnschedulablePodAdd`` (a gang plugin waiting for its members
  registers it); one pending and nominated to a node in the old snapshot only
  (deleted): ``AssignedPodDelete``, for the pods of its priority or lower, as the
  room a preemption freed for it is free.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

import attrs

from batchsched.api.cluster import ClusterInfo
from batchsched.api.node import NodeInfo
from batchsched.api.task import TaskInfo, same_pod
from batchsched.api.types import TaskStatus

__all__ = ["Change", "cluster_changes", "not_ready_nodes"]


@attrs.frozen
class Change:
    """One change: its event label and the object before and after (None: absent)."""

    event: str
    old: NodeInfo | TaskInfo | None
    new: NodeInfo | TaskInfo | None


def cluster_changes(before: ClusterInfo, after: ClusterInfo, *,
                    owned: Callable[[TaskInfo], bool] | None = None) -> list[Change]:
    """The changes from ``before`` to ``after``: nodes first, then pods, each in the
    snapshots' order (see the module docstring). A node object handed out again
    unchanged (an incremental snapshot's) is passed over, with its pods: the cost is
    that of what changed. ``owned`` says which pending pods are the scheduler's own:
    only these are events while pending (kube's ``responsibleForPod``)."""
    changes: list[Change] = []
    for name, node in after.nodes.items():
        old = before.nodes.get(name)
        if old is None:
            changes.append(Change("NodeAdd", None, node))
        elif old is not node:
            changes.extend(Change(event, old, node) for event in _node_updates(old, node))
    changes.extend(Change("NodeDelete", node, None)
                   for name, node in before.nodes.items() if name not in after.nodes)
    nodes_before = _all_nodes(before)
    nodes_after = _all_nodes(after)
    placed_before = _placed_on_changed(nodes_before, nodes_after)
    placed_after = _placed_on_changed(nodes_after, nodes_before)
    for uid, task in placed_before.items():
        now = placed_after.get(uid)
        if now is not None and _same_placement(task, now):
            continue
        if now is None and task.node_name not in nodes_after:
            continue  # its node left the snapshot: the node's own event says so
        changes.append(Change("AssignedPodDelete", task, None))
    for uid, task in placed_after.items():
        then = placed_before.get(uid)
        if then is not None and _same_placement(then, task):
            continue
        if then is None and task.node_name not in nodes_before:
            continue  # its node came into the snapshot with it
        changes.append(Change("AssignedPodAdd", None, task))
    mine = owned or (lambda task: True)
    # A pending pod nominated to a node, deleted: the room a preemption freed for it
    # is free (kube's deletePodFromSchedulingQueue reports AssignedPodDelete).
    changes.extend(Change("AssignedPodDelete", task, None)
                   for task in _new_pending(after, before, placed_after)
                   if task.nominated_node and mine(task))
    changes.extend(Change("UnschedulablePodAdd", None, task)
                   for task in _new_pending(before, after, placed_before) if mine(task))
    return changes


def _new_pending(before: ClusterInfo, after: ClusterInfo,
                 placed: dict[str, TaskInfo]) -> Iterator[TaskInfo]:
    """The pending pods of ``after`` that ``before`` did not have pending (new pods, or
    created again), but for those ``placed`` holds (bound since): kube's
    ``UnscheduledPodAdd``, which a gang plugin waiting for its members registers. A
    job object handed out again unchanged is passed over."""
    for uid, job in after.jobs.items():
        old_job = before.jobs.get(uid)
        if old_job is job:
            continue
        old_tasks = old_job.tasks if old_job is not None else {}
        for task in job.tasks_in(TaskStatus.PENDING).values():
            if task.node_name or task.uid in placed:
                continue
            then = old_tasks.get(task.uid)
            if then is None or not same_pod(then, task):
                yield task


def _node_updates(old: NodeInfo, new: NodeInfo) -> Iterator[str]:
    if old.allocatable != new.allocatable:
        yield "NodeUpdateNodeAllocatable"
    if old.labels != new.labels:
        yield "NodeUpdateNodeLabel"
    if old.taints != new.taints or old.unschedulable != new.unschedulable:
        yield "NodeUpdateNodeTaint"
    if old.annotations != new.annotations:
        yield "NodeUpdateNodeAnnotation"


def not_ready_nodes(cluster: ClusterInfo) -> dict[str, NodeInfo]:
    """The snapshot's nodes that are not Ready (a host's snapshot may have no such
    list: none)."""
    nodes: dict[str, NodeInfo] = getattr(cluster, "not_ready_nodes", None) or {}
    return nodes


def _all_nodes(cluster: ClusterInfo) -> dict[str, NodeInfo]:
    # A node that stopped being Ready still holds its pods: they are not deleted.
    return {**not_ready_nodes(cluster), **cluster.nodes}


def _placed_on_changed(nodes: dict[str, NodeInfo],
                       others: dict[str, NodeInfo]) -> dict[str, TaskInfo]:
    """The pods on the nodes that are not the very object the other snapshot has."""
    placed: dict[str, TaskInfo] = {}
    for name, node in nodes.items():
        if others.get(name) is not node:
            placed.update(node.tasks)
    return placed


def _same_placement(one: TaskInfo, other: TaskInfo) -> bool:
    """The same pod on the same node (a pod deleted and created again under its name
    is another: its creation time or order differs)."""
    return one.node_name == other.node_name and same_pod(one, other)
