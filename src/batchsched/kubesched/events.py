"""Cluster events and queueing hints: which event may help which unschedulable pod.

kube-scheduler does not retry every unschedulable pod on every cluster change. Each
plugin at PreEnqueue, PreFilter, Filter, Reserve or Permit says which events may
undo its rejections (``events_to_register()``, kube's ``EnqueueExtensions``), each
with an optional hint function that looks at the objects the event carries and
answers :attr:`QueueingHint.QUEUE` or :attr:`QueueingHint.QUEUE_SKIP`. A pod that
failed remembers the plugins that rejected it; an event moves it back to the active
(or backoff) queue only when one of them registered the event and its hint says
Queue. A plugin without ``events_to_register`` is retried on every event (kube's
default for a plugin that is no ``EnqueueExtensions``); one that registers nothing
leaves its pods to the unschedulable timeout and ``activate``.

Events are named as kube-scheduler labels them: ``NodeAdd``, ``AssignedPodDelete``,
``NodeUpdateNodeAllocatable``... (the resource, then the action); ``""``,
``UnschedulableTimeout`` and ``ForceActivate`` are the wildcard, which moves every
pod.

Where batchsched differs: an event reported without its objects (the host calls
``move_all_to_active_or_backoff(now, "NodeAdd")`` without the node) cannot be
looked at, so the hints of the plugins that registered it are not called and the
pod is queued (kube would hand the hint nil objects); and there is no Pending
status code, so no hint queues a pod straight to active past its backoff.
"""

from __future__ import annotations

import enum
import logging
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import attrs

from batchsched.api.task import TaskInfo
from batchsched.errors import PluginError

__all__ = [
    "ASSIGNED_POD",
    "FORCE_ACTIVATE",
    "NODE",
    "POD",
    "UNSCHEDULABLE_POD",
    "WILDCARD",
    "ActionType",
    "ClusterEvent",
    "ClusterEventWithHint",
    "QueueingHint",
    "QueueingHints",
    "Registration",
    "event_named",
    "matches",
]

log = logging.getLogger("batchsched")

#: Resources an event is about (kube's ``EventResource``); any other name is allowed.
POD = "Pod"
#: The incoming forms of pod events (a plugin registers ``Pod``, which matches both).
ASSIGNED_POD = "AssignedPod"
UNSCHEDULABLE_POD = "UnschedulablePod"
NODE = "Node"
WILDCARD = "*"
_RESOURCES = (ASSIGNED_POD, UNSCHEDULABLE_POD, "PersistentVolumeClaim", "PersistentVolume",
              "CSINode", "CSIDriver", "CSIStorageCapacity", "StorageClass",
              "VolumeAttachment", "ResourceClaim", "ResourceSlice", "DeviceClass", POD, NODE)


class ActionType(enum.IntFlag):
    """What happened to the resource (kube's ``ActionType``, same bits and order: an
    incoming event matches a registration of the same or a broader action)."""

    ADD = 1 << 0
    DELETE = 1 << 1
    UPDATE_NODE_ALLOCATABLE = 1 << 2
    UPDATE_NODE_LABEL = 1 << 3
    UPDATE_NODE_TAINT = 1 << 4
    UPDATE_NODE_CONDITION = 1 << 5
    UPDATE_NODE_ANNOTATION = 1 << 6
    UPDATE_POD_LABEL = 1 << 7
    UPDATE_POD_SCALE_DOWN = 1 << 8
    UPDATE_POD_TOLERATIONS = 1 << 9
    UPDATE_POD_SCHEDULING_GATES_ELIMINATED = 1 << 10
    UPDATE_POD_GENERATED_RESOURCE_CLAIM = 1 << 11
    UPDATE_POD_OTHER = 1 << 12
    UPDATE = ((1 << 13) - 1) & ~(ADD | DELETE)
    ALL = (1 << 13) - 1


#: kube's names of the actions, as its event labels spell them.
_ACTION_NAMES = {
    ActionType.ADD: "Add", ActionType.DELETE: "Delete", ActionType.UPDATE: "Update",
    ActionType.UPDATE_NODE_ALLOCATABLE: "UpdateNodeAllocatable",
    ActionType.UPDATE_NODE_LABEL: "UpdateNodeLabel",
    ActionType.UPDATE_NODE_TAINT: "UpdateNodeTaint",
    ActionType.UPDATE_NODE_CONDITION: "UpdateNodeCondition",
    ActionType.UPDATE_NODE_ANNOTATION: "UpdateNodeAnnotation",
    ActionType.UPDATE_POD_LABEL: "UpdatePodLabel",
    ActionType.UPDATE_POD_SCALE_DOWN: "UpdatePodScaleDown",
    ActionType.UPDATE_POD_TOLERATIONS: "UpdatePodToleration",
    ActionType.UPDATE_POD_SCHEDULING_GATES_ELIMINATED: "UpdatePodSchedulingGatesEliminated",
    ActionType.UPDATE_POD_GENERATED_RESOURCE_CLAIM: "UpdatePodGeneratedResourceClaim",
    ActionType.ALL: "All",
}
_ACTIONS_BY_NAME = {name: action for action, name in _ACTION_NAMES.items()}


@attrs.frozen
class ClusterEvent:
    """A change in the cluster: a resource and an action (kube's ``ClusterEvent``)."""

    resource: str
    action: ActionType
    label: str = attrs.field(default="", eq=False)

    @property
    def name(self) -> str:
        """kube's ``Label()``: the label given, else the resource then the action (an
        event of several actions names each: ``Node{Add,UpdateNodeAllocatable}``)."""
        if self.label:
            return self.label
        known = _ACTION_NAMES.get(self.action)
        if known is not None:
            return self.resource + known
        parts = [name for action, name in _ACTION_NAMES.items()
                 if action not in (ActionType.UPDATE, ActionType.ALL) and action & self.action]
        return f"{self.resource}{{{','.join(parts)}}}"

    def is_wildcard(self) -> bool:
        return self.resource == WILDCARD and self.action == ActionType.ALL


WILDCARD_EVENT = ClusterEvent(WILDCARD, ActionType.ALL, "WildCard")
#: A plugin's request to retry one pod now (``new`` names it): for that pod only.
FORCE_ACTIVATE = ClusterEvent(WILDCARD, ActionType.ALL, "ForceActivate")
_SPECIAL = {"": WILDCARD_EVENT, "WildCard": WILDCARD_EVENT,
            "UnschedulableTimeout": ClusterEvent(WILDCARD, ActionType.ALL,
                                                 "UnschedulableTimeout"),
            "ForceActivate": FORCE_ACTIVATE}


def event_named(label: str | ClusterEvent) -> ClusterEvent:
    """The event a kube-style label names (``NodeAdd``, ``AssignedPodDelete``,
    ``NodeUpdateNodeAllocatable``; ``""`` is the wildcard). A label of no known
    resource and action is a ``ValueError`` naming it."""
    if isinstance(label, ClusterEvent):
        return label
    special = _SPECIAL.get(label)
    if special is not None:
        return special
    for resource in _RESOURCES:
        if label.startswith(resource):
            action = _ACTIONS_BY_NAME.get(label[len(resource):])
            if action is not None:
                return ClusterEvent(resource, action, label)
    raise ValueError(f"{label!r} is no cluster event: a resource ({', '.join(_RESOURCES)}) "
                     "then an action (Add, Delete, Update, UpdateNodeAllocatable, ...), "
                     "as NodeAdd or AssignedPodDelete, or '' for any event")


def matches(registered: ClusterEvent, incoming: ClusterEvent) -> bool:
    """Whether an incoming event is one a plugin registered (kube's
    ``MatchClusterEvents``): the same resource (``Pod`` covers assigned and
    unschedulable pods; ``*`` any) and an action the same as or narrower than the
    registered one."""
    if registered.is_wildcard():
        return True
    resource = registered.resource
    same = (resource in (WILDCARD, incoming.resource)
            or (resource == POD and incoming.resource in (ASSIGNED_POD, UNSCHEDULABLE_POD)))
    return (same and bool(registered.action & incoming.action)
            and int(incoming.action) <= int(registered.action))


class QueueingHint(enum.Enum):
    """A hint function's answer: the event may help the pod, or not."""

    QUEUE = "Queue"
    QUEUE_SKIP = "QueueSkip"


#: ``hint(pod, old_object, new_object)``: may this change make the pod schedulable?
HintFn = Callable[[TaskInfo, Any, Any], QueueingHint]


@attrs.frozen
class ClusterEventWithHint:
    """An event a plugin registers, with its hint (None: always Queue)."""

    event: ClusterEvent
    hint: HintFn | None = None


@attrs.frozen
class Registration:
    """One plugin's registered event and hint, in a profile's queueing hint map."""

    plugin: str
    event: ClusterEvent
    hint: HintFn | None = None


def registrations_of(name: str, given: Iterable[Any] | None) -> list[Registration]:
    """What a plugin registered (the answer of its ``events_to_register()``; None: it
    has none, and is interested in every event). Anything but events is a
    :class:`PluginError` naming the plugin.

    As kube's ``buildQueueingHintMap``, a plugin that registers a node added and not a
    node's taints updated is registered for the latter too, without a hint (a node
    that was not Ready is untainted, not added: kubernetes#109437)."""
    if given is None:
        return [Registration(name, WILDCARD_EVENT)]
    out: list[Registration] = []
    for item in given:
        entry = ClusterEventWithHint(item) if isinstance(item, ClusterEvent) else item
        event = getattr(entry, "event", None)
        if not isinstance(entry, ClusterEventWithHint) or not (
                entry.hint is None or callable(entry.hint)) or not (
                isinstance(event, ClusterEvent) and isinstance(event.resource, str)
                and isinstance(event.action, ActionType)):
            raise PluginError(f"kube plugin {name!r} registered {entry!r}, not a "
                              "ClusterEventWithHint of a ClusterEvent(resource, ActionType)",
                              plugin=name, point="eventsToRegister")
        out.append(Registration(name, entry.event, entry.hint))
    on_nodes = [entry.event.action for entry in out if entry.event.resource == NODE]
    if any(action & ActionType.ADD for action in on_nodes) and not any(
            action & ActionType.UPDATE_NODE_TAINT for action in on_nodes):
        out.append(Registration(name, ClusterEvent(NODE, ActionType.UPDATE_NODE_TAINT)))
    return out


class Strategy(enum.Enum):
    """Where an event sends an unschedulable pod (kube's ``queueingStrategy``)."""

    SKIP = 0
    AFTER_BACKOFF = 1


@attrs.frozen
class _Received:
    """An event the queue received while pods were in flight."""

    cycle: int
    event: ClusterEvent
    old: Any
    new: Any


class QueueingHints:
    """The queueing hint maps of a scheduler's profiles (kube's
    ``QueueingHintMapPerProfile``), and kube's ``isPodWorthRequeuing``.

    With ``hint_functions=False`` (kube with ``SchedulerQueueingHints`` off) the events
    registered still decide which pods an event may move, but no hint is asked (each
    answers Queue), and an event received while a pod was in flight counts for it
    whatever the event (kube's ``moveRequestCycle``). kube's pre-filters of that mode
    (``AssignedPodAdded``'s affinity match, ``preCheckForNode``) are not kept: more
    pods are retried."""

    def __init__(self, by_profile: Mapping[str, Sequence[Registration]],
                 profile_of: Callable[[TaskInfo], str], *,
                 hint_functions: bool = True) -> None:
        self.by_profile = {name: tuple(found) for name, found in by_profile.items()}
        self.profile_of = profile_of
        self.hint_functions = hint_functions

    def interested(self, event: ClusterEvent) -> bool:
        """Whether any plugin of any profile registered the event (kube's
        ``isEventOfInterest``): an event none did moves no pod."""
        if event.is_wildcard():
            return True
        return any(matches(entry.event, event)
                   for found in self.by_profile.values() for entry in found)

    def awaited(self, pod: TaskInfo, rejectors: Iterable[str]) -> tuple[str, ...]:
        """The events the pod's rejecting plugins registered (their names; ``*`` for a
        plugin retried on any event), in profile order: what may move it."""
        rejected_by = frozenset(rejectors)
        if not rejected_by:
            return ("*",)
        found = self.by_profile.get(self.profile_of(pod), ())
        names: dict[str, None] = {}
        for entry in found:
            if entry.plugin in rejected_by:
                names["*" if entry.event.is_wildcard() else entry.event.name] = None
        return tuple(names)

    def strategy(self, pod: TaskInfo, rejectors: Iterable[str], event: ClusterEvent,
                 old: Any = None, new: Any = None) -> Strategy:
        """Whether the event may help the pod its ``rejectors`` turned down. A pod no
        plugin rejected (an error, no node at all) and the wildcard event always
        queue; else the rejectors' hints for the event decide (a hint that raises, or
        answers anything but a :class:`QueueingHint`, queues: the pod must not be
        stranded; it is logged)."""
        rejected_by = frozenset(rejectors)
        if event.is_wildcard():
            # A wildcard event naming a pod (a forced activation) is for that pod only.
            target = new.uid if isinstance(new, TaskInfo) else new
            if isinstance(target, str) and target != pod.uid:
                return Strategy.SKIP
            return Strategy.AFTER_BACKOFF
        if not rejected_by:
            return Strategy.AFTER_BACKOFF
        found = self.by_profile.get(self.profile_of(pod))
        if found is None:
            return Strategy.AFTER_BACKOFF
        described = old is not None or new is not None
        for entry in found:
            if entry.plugin not in rejected_by or not matches(entry.event, event):
                continue
            if entry.hint is None or not described or not self.hint_functions:
                return Strategy.AFTER_BACKOFF
            try:
                hint = entry.hint(pod, old, new)
            except Exception as exc:
                log.warning("batchsched: queueing hint of %s for %s on %s raised %s: %s",
                            entry.plugin, pod.uid, event.name, type(exc).__name__, exc)
                return Strategy.AFTER_BACKOFF
            if hint is QueueingHint.QUEUE_SKIP:
                continue
            if hint is not QueueingHint.QUEUE:
                log.warning("batchsched: queueing hint of %s answered %r, not a "
                            "QueueingHint: queued", entry.plugin, hint)
            return Strategy.AFTER_BACKOFF
        return Strategy.SKIP

    def strategy_in_flight(self, pod: TaskInfo, rejectors: Iterable[str],
                           received: Iterable[_Received]) -> Strategy:
        """kube's ``determineSchedulingHintForInFlightPod``: whether an event received
        while the pod was being scheduled may help it, now that it failed."""
        rejected_by = frozenset(rejectors)
        if not rejected_by:
            return Strategy.AFTER_BACKOFF
        for entry in received:
            if self.strategy(pod, rejected_by, entry.event, entry.old,
                             entry.new) is Strategy.AFTER_BACKOFF:
                return Strategy.AFTER_BACKOFF
        return Strategy.SKIP
