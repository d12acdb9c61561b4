"""kube-scheduler's default plugins that the per-pod loop needs, as kube-style plugins.

* ``SchedulingGates`` (preEnqueue): a pod with scheduling gates waits, out of the
  queue, until they are all removed;
* ``PrioritySort`` (queueSort): higher priority first, then earlier creation;
* ``NodeResourcesFit`` (filter): the pod's requests (init containers included)
  fit the node's idle resources, ``pods`` included; else ``Insufficient <name>``;
* ``NodeResourcesLeastAllocated`` (score): the mean over cpu and memory of
  ``(allocatable - used - request) x 100 / allocatable``;
* ``DefaultBinder`` (bind): the host cache's ``bind``.

:func:`default_profile` enables them as kube-scheduler's default profile does.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from batchsched.api.node import NodeInfo
from batchsched.api.resource import CPU, MEMORY, DimensionDefault
from batchsched.api.task import TaskInfo
from batchsched.kubesched.cycle_state import CycleState
from batchsched.kubesched.framework import PluginRef, Profile
from batchsched.kubesched.queue import default_less
from batchsched.kubesched.registry import KubePluginSpec
from batchsched.kubesched.status import Status

__all__ = ["BUILTIN_KUBE_PLUGINS", "default_profile"]


class SchedulingGates:
    name = "SchedulingGates"

    def pre_enqueue(self, pod: TaskInfo) -> Status:
        if not pod.scheduling_gates:
            return Status.success()
        return Status.unschedulable(
            f"waiting for scheduling gates: [{' '.join(pod.scheduling_gates)}]",
            plugin=self.name, unresolvable=True)


class PrioritySort:
    name = "PrioritySort"

    def less(self, left: TaskInfo, right: TaskInfo) -> bool:
        return default_less(left, right)


class NodeResourcesFit:
    name = "NodeResourcesFit"

    def filter(self, state: CycleState, pod: TaskInfo, node: NodeInfo) -> Status:
        request, idle = pod.init_resreq, node.idle
        if request.less_equal(idle, DimensionDefault.ZERO):
            return Status.success()
        short = [name for name in request.names()
                 if request.get(name) > idle.get(name) + 0.1]
        ordered = [n for n in (CPU, MEMORY) if n in short] + sorted(
            n for n in short if n not in (CPU, MEMORY))
        return Status.unschedulable(f"Insufficient {ordered[0] if ordered else 'resources'}",
                                    plugin=self.name)


class NodeResourcesLeastAllocated:
    name = "NodeResourcesLeastAllocated"

    def score(self, state: CycleState, pod: TaskInfo, node: NodeInfo) -> tuple[int, Status]:
        parts = []
        for resource in (CPU, MEMORY):
            allocatable = node.allocatable.get(resource)
            requested = node.used.get(resource) + pod.resreq.get(resource)
            if allocatable <= 0 or requested > allocatable:
                parts.append(0)
            else:
                parts.append(int((allocatable - requested) * 100 // allocatable))
        return sum(parts) // len(parts), Status.success()


class DefaultBinder:
    name = "DefaultBinder"

    def __init__(self, handle: Any) -> None:
        self.handle = handle

    def bind(self, state: CycleState, pod: TaskInfo, node_name: str) -> Status:
        host = self.handle.host
        if host is None:
            return Status.error("no host cache to bind through", plugin=self.name)
        if host.bind(pod, node_name):
            return Status.success()
        return Status.error(f"the host refused to bind {pod.uid} to {node_name}",
                            plugin=self.name)


def _plain(cls: type) -> Any:
    def build(arguments: Mapping[str, Any], handle: Any) -> Any:
        return cls()
    return build


BUILTIN_KUBE_PLUGINS = (
    KubePluginSpec("SchedulingGates", _plain(SchedulingGates),
                   "pods with scheduling gates wait outside the queue"),
    KubePluginSpec("PrioritySort", _plain(PrioritySort), "queue sort by priority, then age"),
    KubePluginSpec("NodeResourcesFit", _plain(NodeResourcesFit), "requests fit idle resources"),
    KubePluginSpec("NodeResourcesLeastAllocated", _plain(NodeResourcesLeastAllocated),
                   "prefer the least allocated nodes"),
    KubePluginSpec("DefaultBinder", lambda arguments, handle: DefaultBinder(handle),
                   "bind through the host cache"),
)


def default_profile(scheduler_name: str = "default-scheduler") -> Profile:
    """kube-scheduler's default plugins, as far as batchsched has them."""
    return Profile(scheduler_name, {
        "preEnqueue": (PluginRef("SchedulingGates"),),
        "queueSort": (PluginRef("PrioritySort"),),
        "filter": (PluginRef("NodeResourcesFit"),),
        "score": (PluginRef("NodeResourcesLeastAllocated", 1),),
        "bind": (PluginRef("DefaultBinder"),),
    })
