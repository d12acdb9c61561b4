"""kube-scheduler's default plugins that the per-pod loop needs, as kube-style plugins.

* ``SchedulingGates`` (preEnqueue): a pod with scheduling gates waits, out of the
  queue, until they are all removed;
* ``PrioritySort`` (queueSort): higher priority first, then earlier creation;
* ``NodeResourcesFit`` (filter): the pod's requests (init containers included)
  fit the node's idle resources and the node has room for one more pod; else every
  reason, as kube gives them (``Too many pods``, ``Insufficient <name>``);
* ``NodeResourcesLeastAllocated`` (score): kube's LeastAllocated strategy, the
  weighted mean of ``(allocatable - requested) x 100 / allocatable`` over cpu and
  memory (kube's non-zero requests) or the ``resources`` configured;
* ``NodeUnschedulable`` (filter): a cordoned node takes only a pod tolerating
  ``node.kubernetes.io/unschedulable:NoSchedule``;
* ``TaintToleration`` (filter, score): a node's ``NoSchedule`` and ``NoExecute``
  taints repel a pod without a matching toleration; the score counts the
  ``PreferNoSchedule`` taints the pod does not tolerate, fewer being better;
* ``DefaultBinder`` (bind): the host cache's ``bind``.

:func:`default_profile` enables them as kube-scheduler's default profile does.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from batchsched.api.node import NodeInfo
from batchsched.api.resource import CPU, MEMORY, PODS
from batchsched.api.resource_names import is_scalar_resource
from batchsched.api.task import TaskInfo
from batchsched.errors import ConfigError
from batchsched.kube.pod_view import kube_int, nonzero_request
from batchsched.kube.quota import is_extended_resource
from batchsched.kube.scores import default_normalize
from batchsched.kube.taints import (
    NO_EXECUTE,
    NO_SCHEDULE,
    UNSCHEDULABLE_TAINT_KEY,
    Taint,
    count_intolerable_taints,
    find_untolerated_taint,
    tolerations_tolerate,
)
from batchsched.kubesched.cycle_state import CycleState
from batchsched.kubesched.events import (
    NODE,
    POD,
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    QueueingHint,
)
from batchsched.kubesched.framework import MAX_NODE_SCORE, PluginRef, Profile
from batchsched.kubesched.queue import default_less
from batchsched.kubesched.registry import KubePluginSpec
from batchsched.kubesched.status import Code, Status

#: Kubernetes' ephemeral-storage resource name.
EPHEMERAL_STORAGE = "ephemeral-storage"

__all__ = ["BUILTIN_KUBE_PLUGINS", "default_profile"]


class SchedulingGates:
    name = "SchedulingGates"

    def pre_enqueue(self, pod: TaskInfo) -> Status:
        if not pod.scheduling_gates:
            return Status.success()
        return Status.unschedulable(
            f"waiting for scheduling gates: [{' '.join(pod.scheduling_gates)}]",
            plugin=self.name, unresolvable=True)

    def events_to_register(self) -> list[ClusterEventWithHint]:
        """Only the pod's own gates going may let it in."""
        return [ClusterEventWithHint(
            ClusterEvent(POD, ActionType.UPDATE_POD_SCHEDULING_GATES_ELIMINATED),
            _same_pod)]


def _same_pod(pod: TaskInfo, old: Any, new: Any) -> QueueingHint:
    changed = new if new is not None else old
    if isinstance(changed, TaskInfo) and changed.uid != pod.uid:
        return QueueingHint.QUEUE_SKIP
    return QueueingHint.QUEUE


class PrioritySort:
    name = "PrioritySort"

    def less(self, left: TaskInfo, right: TaskInfo) -> bool:
        return default_less(left, right)


class NodeResourcesFit:
    """kube-scheduler's ``NodeResourcesFit`` filter (``fitsRequest``): every reason the
    pod does not fit, in kube's order (``Too many pods``, then ``Insufficient
    <resource>`` for cpu, memory, ephemeral-storage and each other resource asked),
    UnschedulableAndUnresolvable when a request exceeds the node's allocatable.
    Arguments: ``ignoredResources`` and ``ignoredResourceGroups`` (extended resources,
    by name or by the part before ``/``, that are not checked)."""

    name = "NodeResourcesFit"

    def __init__(self, ignored: frozenset[str] = frozenset(),
                 ignored_groups: frozenset[str] = frozenset()) -> None:
        self.ignored = ignored
        self.ignored_groups = ignored_groups

    @classmethod
    def from_arguments(cls, arguments: Mapping[str, Any]) -> NodeResourcesFit:
        unknown = sorted(set(arguments) - {"ignoredResources", "ignoredResourceGroups",
                                           "scoringStrategy"})
        if unknown:
            raise ConfigError(f"unknown argument(s) {unknown} of kube plugin NodeResourcesFit",
                              key="pluginConfig.NodeResourcesFit.args",
                              known=["ignoredResources", "ignoredResourceGroups"])
        if "scoringStrategy" in arguments:
            raise ConfigError("NodeResourcesFit's scoringStrategy is not modelled: score "
                              "with NodeResourcesLeastAllocated and its resources",
                              key="pluginConfig.NodeResourcesFit.args.scoringStrategy")
        return cls(_names(arguments, "ignoredResources"),
                   _names(arguments, "ignoredResourceGroups"))

    def filter(self, state: CycleState, pod: TaskInfo, node: NodeInfo) -> Status:
        request, idle, allocatable = pod.init_resreq, node.idle, node.allocatable
        reasons: list[str] = []
        # A request larger than the whole node cannot be met by evicting anything:
        # kube-scheduler says UnschedulableAndUnresolvable then (a full node's pod
        # count stays plain Unschedulable); PostFilter plugins see it so (kube's
        # DefaultPreemption passes such a node by).
        unresolvable = False
        if len(node.tasks) + 1 > allocatable.get(PODS):
            reasons.append("Too many pods")
        asked = [(name, request.get(name)) for name in (CPU, MEMORY, EPHEMERAL_STORAGE)]
        asked += sorted((name, amount) for name, amount in request.scalars.items()
                        if name not in (PODS, EPHEMERAL_STORAGE))
        for name, amount in asked:
            if amount <= 0 or self._ignores(name):
                continue
            if amount > idle.get(name) + _TOLERANCE:
                reasons.append(f"Insufficient {name}")
                unresolvable = unresolvable or amount > allocatable.get(name) + _TOLERANCE
        if not reasons:
            return Status.success()
        code = Code.UNSCHEDULABLE_AND_UNRESOLVABLE if unresolvable else Code.UNSCHEDULABLE
        return Status(code, tuple(reasons), self.name)

    def _ignores(self, name: str) -> bool:
        if not is_extended_resource(name):
            return False
        return name in self.ignored or name.partition("/")[0] in self.ignored_groups

    def events_to_register(self) -> list[ClusterEventWithHint]:
        """kube's, with queueing hints on: a pod deleted or scaled down, a node added or
        its allocatable changed."""
        return [
            ClusterEventWithHint(
                ClusterEvent(POD, ActionType.DELETE | ActionType.UPDATE_POD_SCALE_DOWN),
                self.after_pod_event),
            ClusterEventWithHint(
                ClusterEvent(NODE, ActionType.ADD | ActionType.UPDATE_NODE_ALLOCATABLE),
                self.after_node_change),
        ]

    @staticmethod
    def after_pod_event(pod: TaskInfo, old: Any, new: Any) -> QueueingHint:
        """kube's ``isSchedulableAfterPodEvent``: a pod that held a node deleted, or
        the pod itself or a placed pod asking less of something this pod asks."""
        if new is None:
            if not isinstance(old, TaskInfo):
                return QueueingHint.QUEUE  # unreadable: never strand the pod
            # A pod that held a node, or room a preemption freed for it.
            held = old.node_name or old.nominated_node
            return QueueingHint.QUEUE if held else QueueingHint.QUEUE_SKIP
        if not (isinstance(old, TaskInfo) and isinstance(new, TaskInfo)):
            return QueueingHint.QUEUE
        if new.uid == pod.uid:
            return QueueingHint.QUEUE
        if not new.node_name:
            return QueueingHint.QUEUE_SKIP
        for name, _ in _asked(pod):
            if old.init_resreq.get(name) > new.init_resreq.get(name):
                return QueueingHint.QUEUE
        return QueueingHint.QUEUE_SKIP

    @staticmethod
    def after_node_change(pod: TaskInfo, old: Any, new: Any) -> QueueingHint:
        """kube's ``isSchedulableAfterNodeChange``: a node the pod fits when empty,
        added, or with more of something the pod asks (or room for more pods)."""
        if not isinstance(new, NodeInfo):
            return QueueingHint.QUEUE
        allocatable = new.allocatable
        if allocatable.get(PODS) < 1 or any(amount > allocatable.get(name) + _TOLERANCE
                                            for name, amount in _asked(pod)):
            return QueueingHint.QUEUE_SKIP
        if not isinstance(old, NodeInfo):
            return QueueingHint.QUEUE
        before = old.allocatable
        if allocatable.get(PODS) > before.get(PODS):
            return QueueingHint.QUEUE
        grew = any(allocatable.get(name) > before.get(name) for name, _ in _asked(pod))
        return QueueingHint.QUEUE if grew else QueueingHint.QUEUE_SKIP


def _asked(pod: TaskInfo) -> list[tuple[str, float]]:
    """The resources the pod asks a positive amount of (the implicit pod aside)."""
    request = pod.init_resreq
    asked = [(name, request.get(name)) for name in (CPU, MEMORY, EPHEMERAL_STORAGE)]
    asked += [(name, amount) for name, amount in request.scalars.items()
              if name not in (PODS, EPHEMERAL_STORAGE)]
    return [(name, amount) for name, amount in asked if amount > 0]


class NodeResourcesLeastAllocated:
    """kube-scheduler's LeastAllocated scoring: per resource, ``(allocatable -
    requested) x 100 / allocatable`` (0 when over), their weighted mean, resources a
    node has none of left out. For cpu and memory the requests are kube's non-zero
    figures (a container asking none counts 100m and 200Mi), the node's pods' and the
    pod's alike. Argument: ``resources``, a list of ``{name, weight}`` (default cpu
    and memory, weight 1)."""

    name = "NodeResourcesLeastAllocated"

    def __init__(self, resources: tuple[tuple[str, int], ...] = ((CPU, 1), (MEMORY, 1))) -> None:
        self.resources = resources
        #: Node name -> (the node, its mutation count, its pods' non-zero milli-cpu and
        #: bytes): kube's NodeInfo keeps the sums; here they are worked out once per
        #: node state, not for every pod scored there.
        self._held: dict[str, tuple[NodeInfo, int, int, int]] = {}

    @classmethod
    def from_arguments(cls, arguments: Mapping[str, Any]) -> NodeResourcesLeastAllocated:
        unknown = sorted(set(arguments) - {"resources"})
        if unknown:
            raise ConfigError(
                f"unknown argument(s) {unknown} of kube plugin NodeResourcesLeastAllocated",
                key="pluginConfig.NodeResourcesLeastAllocated.args", known=["resources"])
        raw = arguments.get("resources")
        if raw is None:
            return cls()
        key = "pluginConfig.NodeResourcesLeastAllocated.args.resources"
        if not isinstance(raw, list) or not raw:
            raise ConfigError("must be a non-empty list of {name, weight}", key=key)
        resources: list[tuple[str, int]] = []
        for i, entry in enumerate(raw):
            if not isinstance(entry, Mapping) or not isinstance(entry.get("name"), str):
                raise ConfigError("must be a mapping with a name", key=f"{key}[{i}]")
            weight = entry.get("weight", 1)
            # kube's validateResources: each weight in (0, 100].
            if isinstance(weight, bool) or not isinstance(weight, int) or not 0 < weight <= 100:
                raise ConfigError(f"resource weight of {entry['name']} not in valid range "
                                  f"(0, 100]: {weight!r}", key=f"{key}[{i}].weight")
            resources.append((_resource_name(entry["name"]), weight))
        return cls(tuple(resources))

    def score(self, state: CycleState, pod: TaskInfo, node: NodeInfo) -> tuple[int, Status]:
        held_cpu, held_memory = self._non_zero_held(node)
        pod_cpu, pod_memory = nonzero_request(pod)
        total = weights = 0
        for resource, weight in self.resources:
            if resource == CPU:
                requested, allocatable = held_cpu + pod_cpu, kube_int(node.allocatable.milli_cpu)
            elif resource == MEMORY:
                requested, allocatable = (held_memory + pod_memory,
                                          kube_int(node.allocatable.memory))
            else:
                asked = kube_int(pod.resreq.get(resource))
                if resource != EPHEMERAL_STORAGE and (
                        asked == 0 or not is_scalar_resource(resource)):
                    # kube's calculateResourceAllocatableRequest: no score for a scalar
                    # resource the pod does not ask for (nor for an unknown name).
                    continue
                requested = kube_int(node.used.get(resource)) + asked
                allocatable = kube_int(node.allocatable.get(resource))
            if allocatable == 0:
                continue  # kube leaves a resource the node has none of out
            part = 0 if requested > allocatable else \
                (allocatable - requested) * MAX_NODE_SCORE // allocatable
            total += part * weight
            weights += weight
        return (total // weights if weights else 0), Status.success()

    def _non_zero_held(self, node: NodeInfo) -> tuple[int, int]:
        kept = self._held.get(node.name)
        if kept is not None and kept[0] is node and kept[1] == node.mutations:
            return kept[2], kept[3]
        cpu = memory = 0
        for task in node.tasks.values():
            task_cpu, task_memory = nonzero_request(task)
            cpu += task_cpu
            memory += task_memory
        self._held[node.name] = (node, node.mutations, cpu, memory)
        return cpu, memory


class NodeUnschedulable:
    """kube-scheduler's ``NodeUnschedulable`` filter."""

    name = "NodeUnschedulable"

    def filter(self, state: CycleState, pod: TaskInfo, node: NodeInfo) -> Status:
        if node.unschedulable and not tolerations_tolerate(pod.tolerations, _CORDONED):
            return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
                          ("node(s) were unschedulable",), self.name)
        return Status.success()

    def events_to_register(self) -> list[ClusterEventWithHint]:
        """kube's: a node added, or its taints changed (cordoning is one), and the
        pod's own tolerations updated."""
        return [
            ClusterEventWithHint(ClusterEvent(NODE, ActionType.ADD | ActionType.UPDATE_NODE_TAINT),
                                 self.after_node_change),
            ClusterEventWithHint(ClusterEvent(POD, ActionType.UPDATE_POD_TOLERATIONS),
                                 self.after_toleration_change),
        ]

    @staticmethod
    def after_node_change(pod: TaskInfo, old: Any, new: Any) -> QueueingHint:
        """kube's ``isSchedulableAfterNodeChange``: a node uncordoned, or added
        schedulable. The pod's tolerations are not read: a pod this plugin turned
        down did not tolerate the cordon (its own toleration update has a hint of its
        own)."""
        if not isinstance(new, NodeInfo) or not (old is None or isinstance(old, NodeInfo)):
            return QueueingHint.QUEUE
        if not new.unschedulable and (old is None or old.unschedulable):
            return QueueingHint.QUEUE
        return QueueingHint.QUEUE_SKIP

    @staticmethod
    def after_toleration_change(pod: TaskInfo, old: Any, new: Any) -> QueueingHint:
        """kube's ``isSchedulableAfterPodTolerationChange``: the pod itself now
        tolerates the cordon."""
        if not isinstance(new, TaskInfo):
            return QueueingHint.QUEUE
        if new.uid == pod.uid and tolerations_tolerate(new.tolerations, _CORDONED):
            return QueueingHint.QUEUE
        return QueueingHint.QUEUE_SKIP


class TaintToleration:
    """kube-scheduler's ``TaintToleration``: the filter refuses a node with a
    ``NoSchedule`` or ``NoExecute`` taint the pod does not tolerate
    (``node(s) had untolerated taint {key: value}``, the first in the node's order);
    the score is the number of ``PreferNoSchedule`` taints the pod's tolerations
    (those of no effect or ``PreferNoSchedule``) do not tolerate, normalised so that
    fewer is better (kube's ``DefaultNormalizeScore(100, reverse)``)."""

    name = "TaintToleration"

    def filter(self, state: CycleState, pod: TaskInfo, node: NodeInfo) -> Status:
        taint = find_untolerated_taint(node.taints, pod.tolerations, _REPELLING)
        if taint is None:
            return Status.success()
        return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
                      (f"node(s) had untolerated taint {taint}",), self.name)

    def score(self, state: CycleState, pod: TaskInfo, node: NodeInfo) -> tuple[int, Status]:
        return count_intolerable_taints(node.taints, pod.tolerations), Status.success()

    def normalize_score(self, state: CycleState, pod: TaskInfo,
                        scores: dict[str, int]) -> Status:
        names = list(scores)
        for name, score in zip(names, default_normalize([scores[n] for n in names],
                                                         reverse=True), strict=True):
            scores[name] = score
        return Status.success()

    def events_to_register(self) -> list[ClusterEventWithHint]:
        """kube's: a node added or its taints changed, and the pod's own tolerations
        updated."""
        return [
            ClusterEventWithHint(ClusterEvent(NODE, ActionType.ADD | ActionType.UPDATE_NODE_TAINT),
                                 self.after_node_change),
            ClusterEventWithHint(ClusterEvent(POD, ActionType.UPDATE_POD_TOLERATIONS),
                                 _same_pod),
        ]

    @staticmethod
    def after_node_change(pod: TaskInfo, old: Any, new: Any) -> QueueingHint:
        """kube's ``isSchedulableAfterNodeChange``: the node's taints are tolerated now,
        and were not before (or the node is new)."""
        if not isinstance(new, NodeInfo):
            return QueueingHint.QUEUE
        if find_untolerated_taint(new.taints, pod.tolerations, _REPELLING) is not None:
            return QueueingHint.QUEUE_SKIP
        if isinstance(old, NodeInfo) and find_untolerated_taint(
                old.taints, pod.tolerations, _REPELLING) is None:
            return QueueingHint.QUEUE_SKIP
        return QueueingHint.QUEUE


#: The taint a cordoned node is read as carrying (kube's NodeUnschedulable).
_CORDONED = Taint(UNSCHEDULABLE_TAINT_KEY, "", NO_SCHEDULE)
#: The taint effects that keep pods off a node.
_REPELLING = frozenset({NO_SCHEDULE, NO_EXECUTE})


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
        if arguments:
            raise ConfigError(f"kube plugin {cls.__name__} takes no arguments, not "
                              f"{sorted(arguments)}", key=f"pluginConfig.{cls.__name__}.args")
        return cls()
    return build


def _configured(cls: Any) -> Any:
    def build(arguments: Mapping[str, Any], handle: Any) -> Any:
        return cls.from_arguments(arguments)
    return build


def _names(arguments: Mapping[str, Any], key: str) -> frozenset[str]:
    raw = arguments.get(key)
    if raw is None:
        return frozenset()
    if not isinstance(raw, list) or not all(isinstance(item, str) for item in raw):
        raise ConfigError("must be a list of names",
                          key=f"pluginConfig.NodeResourcesFit.args.{key}")
    return frozenset(raw)


def _resource_name(name: str) -> str:
    return {"cpu": CPU, "memory": MEMORY}.get(name, name)


#: How far a float figure may exceed another and still count as equal (milli-units).
_TOLERANCE = 0.1


BUILTIN_KUBE_PLUGINS = (
    KubePluginSpec("SchedulingGates", _plain(SchedulingGates),
                   "pods with scheduling gates wait outside the queue"),
    KubePluginSpec("PrioritySort", _plain(PrioritySort), "queue sort by priority, then age"),
    KubePluginSpec("NodeResourcesFit", _configured(NodeResourcesFit),
                   "requests fit idle resources"),
    KubePluginSpec("NodeResourcesLeastAllocated", _configured(NodeResourcesLeastAllocated),
                   "prefer the least allocated nodes"),
    KubePluginSpec("NodeUnschedulable", _plain(NodeUnschedulable),
                   "cordoned nodes take only pods tolerating it"),
    KubePluginSpec("TaintToleration", _plain(TaintToleration),
                   "taints repel pods that do not tolerate them"),
    KubePluginSpec("DefaultBinder", lambda arguments, handle: DefaultBinder(handle),
                   "bind through the host cache"),
)


def default_profile(scheduler_name: str = "default-scheduler") -> Profile:
    """kube-scheduler's default plugins, as far as batchsched has them."""
    return Profile(scheduler_name, {
        "preEnqueue": (PluginRef("SchedulingGates"),),
        "queueSort": (PluginRef("PrioritySort"),),
        # kube's order: the first filter to refuse a node names the reason and the
        # plugin whose events may bring the pod back.
        "filter": (PluginRef("NodeUnschedulable"), PluginRef("TaintToleration"),
                   PluginRef("NodeResourcesFit")),
        "score": (PluginRef("TaintToleration", 3), PluginRef("NodeResourcesLeastAllocated", 1)),
        "bind": (PluginRef("DefaultBinder"),),
    })
