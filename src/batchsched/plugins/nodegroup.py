"""nodegroup: keep a queue's tasks on its node groups (Volcano's ``plugins/nodegroup``).

Nodes are grouped by the label ``volcano.sh/nodegroup-name``. A queue's
``affinity`` lists groups in four sets: required and preferred affinity,
required and preferred anti-affinity.

**Predicate** (all failures UnschedulableAndUnresolvable):

1. the queue's ``volcano.sh/nodegroup-resource-limits`` annotation is not valid
   JSON -- ``node group resource limit annotation invalid`` on every node;
2. the node has no group label -- it passes only when ``strict`` is false and
   the queue has no affinity (none, or four empty lists); otherwise ``node group
   label not found``;
3. the queue has no affinity -- ``node group affinity not specified``;
4. the group must be allowed: in required or preferred affinity; then a required
   anti-affinity forbids it; then a preferred anti-affinity allows it again --
   else ``node does not satisfy the node group affinity``;
5. resource limits: for each resource the annotation names for the group,
   ``allocated + request`` must not exceed the limit by 0.1 or more, where
   ``allocated`` is what the queue's tasks hold (Bound, Binding, Running,
   Allocated) on nodes of that group, kept current as the session places and
   evicts -- else ``node group resource limit exceeded``.

**Score** (node-order, not normalised): 0 for a node without group label or a
queue without affinity; else +100 if the group is required, +50 if preferred
(with ``enablePreferredOrder``, ``50 * (n - i) / n`` for the i-th of n preferred
groups), and -1 overriding everything if the group is a preferred anti-affinity.

**Hierarchy** (the plugin's ``enableHierarchy`` flag): a queue without affinity
takes that of its nearest ancestor that has one (parent ``""`` means ``root``).

Arguments: ``strict`` (default true), ``enablePreferredOrder`` (default false). A
value that is not a boolean keeps the default (Volcano's fallback) and is logged
as a warning, as is any other argument.
The annotation reads ``{"group1": {"cpu": "3", "memory": "8Gi"}}``.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping
from json.decoder import py_scanstring  # type: ignore[attr-defined]
from json.scanner import py_make_scanner  # type: ignore[attr-defined]

import attrs

from batchsched.api.fit import FitError, FitStatus
from batchsched.api.node import NodeInfo
from batchsched.api.queue import ROOT_QUEUE, NodeGroupAffinity, QueueInfo
from batchsched.api.resource import MIN_RESOURCE, Resource
from batchsched.api.resource_names import counted_by_volcano
from batchsched.api.task import TaskInfo
from batchsched.api.types import ALLOCATED_STATUSES, FitStatusCode
from batchsched.errors import QuantityError
from batchsched.framework.arguments import Arguments, warned_once
from batchsched.framework.events import Event, EventHandler
from batchsched.framework.session import Session

__all__ = [
    "NODE_GROUP_LABEL",
    "REASON_AFFINITY_NOT_SPECIFIED",
    "REASON_LABEL_NOT_FOUND",
    "REASON_LIMIT_EXCEEDED",
    "REASON_LIMIT_INVALID",
    "REASON_UNSATISFIED",
    "RESOURCE_LIMITS_ANNOTATION",
    "NodeGroupPlugin",
    "group_allowed",
    "group_score",
]

PLUGIN_NAME = "nodegroup"
BASE_SCORE = 100
NODE_GROUP_LABEL = "volcano.sh/nodegroup-name"
RESOURCE_LIMITS_ANNOTATION = "volcano.sh/nodegroup-resource-limits"

REASON_AFFINITY_NOT_SPECIFIED = "node group affinity not specified"
REASON_LABEL_NOT_FOUND = "node group label not found"
REASON_UNSATISFIED = "node does not satisfy the node group affinity"
REASON_LIMIT_INVALID = "node group resource limit annotation invalid"
REASON_LIMIT_EXCEEDED = "node group resource limit exceeded"


def group_allowed(affinity: NodeGroupAffinity, group: str) -> bool:
    """Required or preferred allows; required anti forbids; preferred anti allows again."""
    allowed = group in affinity.required or group in affinity.preferred
    if group in affinity.anti_required:
        allowed = False
    if group in affinity.anti_preferred:
        allowed = True
    return allowed


def group_score(affinity: NodeGroupAffinity, group: str, *, preferred_order: bool) -> float:
    """The node-order score of a node in ``group`` (see the module docstring)."""
    score = 0.0
    if group in affinity.required:
        score += BASE_SCORE
    if preferred_order:
        # Volcano indexes the preferred list by group, so a repeated group keeps
        # its last position and n counts distinct groups.
        index = {g: i for i, g in enumerate(affinity.preferred)}
        if group in index:
            n = len(index)
            score += 0.5 * BASE_SCORE * float(n - index[group]) / float(n)
    elif group in affinity.preferred:
        score += 0.5 * BASE_SCORE
    if group in affinity.anti_preferred:
        score = -1.0
    return score


@attrs.define
class _QueueAttr:
    """What the plugin knows of one queue during a session."""

    affinity: NodeGroupAffinity | None
    limits: dict[str, tuple[Resource, frozenset[str]]] | None
    limits_invalid: bool
    allocated: dict[str, Resource] = attrs.field(factory=dict)


Limits = dict[str, tuple[Resource, frozenset[str]]]


def _parse_limits(queue: QueueInfo) -> tuple[Limits | None, bool]:
    """(group -> (limit, named resources), invalid?) from the queue's annotation; an
    invalid one is logged (once per queue and value), as Volcano logs it."""
    raw = queue.annotations.get(RESOURCE_LIMITS_ANNOTATION, "")
    if not raw:
        return None, False
    try:
        return _read_limits(raw), False
    except (ValueError, QuantityError) as exc:
        if (queue.name, raw) not in _WARNED and len(_WARNED) < 1024:
            _WARNED.add((queue.name, raw))
            log.warning("nodegroup: queue %s has invalid %s annotation: %s", queue.name,
                        RESOURCE_LIMITS_ANNOTATION, exc)
        return None, True


log = logging.getLogger("batchsched")
#: The (queue, annotation) pairs already logged as invalid.
_WARNED: set[tuple[str, str]] = warned_once()


def _read_limits(raw: str) -> Limits:
    """The limits the annotation gives; ValueError (or QuantityError) saying why not."""
    document = _LIMITS_DECODER.decode(raw)
    if document is None:
        return {}  # Go decodes a null map: no group is limited
    if not isinstance(document, _Pairs):
        raise ValueError(f"not a JSON object of node group to resources: {raw!r}")
    limits: Limits = {}
    # Go decodes every value of a key given twice (a malformed one fails the whole
    # annotation) and keeps the last.
    for group, resources in document:
        if resources is None:
            # Go decodes a null ResourceList: no resource limited in the group.
            limits[str(group)] = (Resource(), frozenset())
            continue
        if not isinstance(resources, _Pairs):
            raise ValueError(f"group {group!r}: {resources!r} is not a resource list")
        amounts = {str(name): _limit_amount(str(name), raw_amount)
                   for name, raw_amount in resources}
        limit = Resource()
        for name, amount in amounts.items():
            # Volcano's NewResource keeps only the names it counts: a limit on
            # another is 0 against 0 used, whatever its amount.
            if amount and counted_by_volcano(name):
                limit.set(name, amount)
        limits[str(group)] = (limit, frozenset(amounts))
    return limits


class _EscapedText(str):
    """A JSON string written with an escape sequence (``\\u0033``)."""

    __slots__ = ()


def _scan_string(text: str, end: int, strict: bool = True) -> tuple[str, int]:
    value, after = py_scanstring(text, end, strict)
    if "\\" in text[end:after]:
        return _EscapedText(value), after
    return value, after


class _Pairs(list[tuple[str, object]]):
    """A JSON object as its key-value pairs, in order, a key given twice kept twice."""


class _NumberText(str):
    """A JSON number, as written (Go's ``Quantity.UnmarshalJSON`` reads its text)."""

    __slots__ = ()


def _limits_decoder() -> json.JSONDecoder:
    """A JSON decoder that marks the strings written with escapes: Go's
    ``Quantity.UnmarshalJSON`` parses the text between the quotes as it is written,
    so ``"\\u0033"`` is no quantity there, though it decodes to ``"3"``; a number's
    text is kept too (``1.0000000000000001`` is more than a float holds), and an
    object's pairs, duplicates included."""
    decoder = json.JSONDecoder(object_pairs_hook=_Pairs, parse_float=_NumberText,
                               parse_int=_NumberText)
    decoder.parse_string = _scan_string  # type: ignore[attr-defined]
    decoder.scan_once = py_make_scanner(decoder)  # type: ignore[attr-defined]
    return decoder


_LIMITS_DECODER = _limits_decoder()


def _limit_amount(name: str, raw: object) -> float:
    """One quantity of the annotation, as Go's ``Quantity.UnmarshalJSON`` reads it:
    null is 0, blanks around the text are trimmed, a negative amount is kept; a
    boolean, or a string written with an escape, is no quantity."""
    if raw is None:
        return 0.0
    if isinstance(raw, (bool, _EscapedText)):
        raise QuantityError(str(raw), f"resource {name}: not a quantity as written")
    text = raw.strip() if isinstance(raw, str) else raw
    negative = isinstance(text, str) and text.startswith("-")
    if negative:
        assert isinstance(text, str)
        text = text[1:]
    elif isinstance(text, (int, float)) and not isinstance(text, bool) and text < 0:
        negative, text = True, -text
    amount = Resource.from_mapping({name: text}).get(name)
    return -amount if negative else amount


def _exceeds(used: float, limit: float) -> bool:
    return used > limit and used - limit >= MIN_RESOURCE


class NodeGroupPlugin:
    """Volcano's nodegroup plugin (see the module docstring)."""

    name = PLUGIN_NAME

    def __init__(self, arguments: Arguments) -> None:
        self.arguments = arguments
        self.strict = arguments.get_bool("strict", True, owner=self.name)
        self.preferred_order = arguments.get_bool("enablePreferredOrder", False,
                                                  owner=self.name)
        arguments.warn_unknown(self.name, ["strict", "enablePreferredOrder"])
        self._attrs: dict[str, _QueueAttr] = {}
        self._charged: dict[str, str] = {}

    # -- session ---------------------------------------------------------------------------

    def on_session_open(self, ssn: Session) -> None:
        self._attrs = {}
        self._charged = {}
        for name, queue in ssn.queues.items():
            limits, invalid = _parse_limits(queue)
            self._attrs[name] = _QueueAttr(queue.affinity, limits, invalid)
        option = ssn.configuration.plugin_option(self.name)
        if option is not None and option.hierarchy:
            self._inherit_affinity(ssn.queues)
        for job in ssn.jobs.values():
            attr = self._attrs.get(job.queue)
            if attr is None:
                continue
            for status in ALLOCATED_STATUSES:
                for task in job.tasks_in(status).values():
                    self._charge(ssn, attr, task)

        def on_allocate(event: Event) -> None:
            self._on_event(ssn, event.task, 1)

        def on_deallocate(event: Event) -> None:
            self._on_event(ssn, event.task, -1)

        ssn.add_node_order_fn(self.name, lambda task, node: self.score(ssn, task, node))
        ssn.add_predicate_fn(self.name, lambda task, node: self.predicate(ssn, task, node))
        ssn.add_event_handler(EventHandler(on_allocate, on_deallocate, plugin=self.name))

    def on_session_close(self, ssn: Session) -> None:
        self._attrs = {}

    def _inherit_affinity(self, queues: Mapping[str, QueueInfo]) -> None:
        """A queue without affinity takes its nearest ancestor's (cycles are cut)."""
        for name, attr in self._attrs.items():
            if attr.affinity is not None:
                continue
            seen = {name}
            current = name
            while current != ROOT_QUEUE:
                parent = queues[current].parent or ROOT_QUEUE
                if parent in seen or parent not in queues:
                    break
                seen.add(parent)
                inherited = queues[parent].affinity
                if inherited is not None:
                    attr.affinity = inherited
                    break
                current = parent

    # -- accounting ---------------------------------------------------------------------------

    def _charge(self, ssn: Session, attr: _QueueAttr, task: TaskInfo) -> None:
        node = ssn.nodes.get(task.node_name)
        group = node.labels.get(NODE_GROUP_LABEL) if node is not None else None
        if group is None:
            return
        attr.allocated.setdefault(group, Resource()).add(task.resreq)
        self._charged[task.uid] = group

    def _on_event(self, ssn: Session, task: TaskInfo, sign: int) -> None:
        job = ssn.jobs.get(task.job)
        attr = self._attrs.get(job.queue) if job is not None else None
        if attr is None:
            return
        if sign > 0:
            self._charge(ssn, attr, task)
            return
        # The group is remembered: an undone placement has already cleared the
        # task's node by the time the handler runs.
        group = self._charged.pop(task.uid, None)
        if group is not None and group in attr.allocated:
            attr.allocated[group].sub_unchecked(task.resreq)

    # -- verdicts --------------------------------------------------------------------------------

    def score(self, ssn: Session, task: TaskInfo, node: NodeInfo) -> float:
        group = node.labels.get(NODE_GROUP_LABEL)
        job = ssn.jobs.get(task.job)
        if group is None or job is None:
            return 0.0
        attr = self._attrs.get(job.queue)
        if attr is None or attr.affinity is None:
            return 0.0
        return group_score(attr.affinity, group, preferred_order=self.preferred_order)

    def predicate(self, ssn: Session, task: TaskInfo, node: NodeInfo) -> FitError | None:
        job = ssn.jobs.get(task.job)
        if job is None:
            return self._fail(task, node, f"job {task.job} not found in session",
                              FitStatusCode.ERROR)
        attr = self._attrs.get(job.queue)
        if attr is not None and attr.limits_invalid:
            return self._fail(task, node, REASON_LIMIT_INVALID)
        affinity = attr.affinity if attr is not None else None
        unset = affinity is None or affinity.empty
        group = node.labels.get(NODE_GROUP_LABEL)
        if group is None:
            if not self.strict and unset:
                return None
            return self._fail(task, node, REASON_LABEL_NOT_FOUND)
        if unset or affinity is None:
            return self._fail(task, node, REASON_AFFINITY_NOT_SPECIFIED)
        if not group_allowed(affinity, group):
            return self._fail(task, node, REASON_UNSATISFIED)
        assert attr is not None
        if attr.limits and group in attr.limits:
            limit, names = attr.limits[group]
            future = attr.allocated.get(group, Resource()) + task.resreq
            if any(_exceeds(future.get(name), limit.get(name)) for name in names):
                return self._fail(task, node, REASON_LIMIT_EXCEEDED)
        return None

    def _fail(self, task: TaskInfo, node: NodeInfo, reason: str,
              code: FitStatusCode = FitStatusCode.UNSCHEDULABLE_AND_UNRESOLVABLE) -> FitError:
        return FitError(task.namespace, task.name, node.name, [FitStatus(code, reason, self.name)])
