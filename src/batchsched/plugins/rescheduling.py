"""rescheduling: evict tasks from hot nodes so that they land on cold ones (Volcano's
``plugins/rescheduling``).

The plugin reads each node's *measured* load (``NodeInfo.usage``, the average cpu
and memory use over ``metricsPeriod``, in percent) rather than its requests, and
names the tasks to evict at the **victim tasks** point; the ``shuffle`` action
evicts them, and the next cycles place them again wherever the other plugins say.

**When.** At session open the plugin decides whether it runs in this session: it
does when more than ``interval`` has passed since its last run for the same
scheduler (strictly more; a negative interval always runs). The last run is
recorded at that moment, whether or not ``shuffle`` then asks for victims.
Volcano keeps that time in one process-wide variable on the wall clock;
batchsched keeps it per scheduler cache (``ssn.cache``), in a module-level
:class:`weakref.WeakKeyDictionary`, on the session clock ``ssn.now``, so that
schedulers on different caches never share it and a simulated clock gates it. A
session opened on a bare ClusterInfo (no cache), or on a cache that cannot be
weakly referenced, always runs. The first session on a cache runs (Volcano
starts its clock when the scheduler process starts, so its first run comes one
interval after start-up).

**lowNodeUtilization**, the only strategy Volcano implements. Each node's use
is ``usage.cpu_avg[metricsPeriod]`` and ``usage.memory_avg[metricsPeriod]``
(0 when missing, or when the node has no metrics at all). ``metrics_time`` is not
read: Volcano does not check the age of the figures either.

1. A node is **low** when it is schedulable and its cpu and memory use are both
   below ``thresholds``; a node that is not low is **high** when its cpu or its
   memory use is above ``targetThresholds`` (an unschedulable node can be high).
   Nothing is evicted when no node is low, when every node is low, or when no
   node is high.
2. The **room** the low nodes offer, per resource: the sum over low nodes of
   ``int(target% * allocatable * 0.01) - int(use% * allocatable * 0.01)``, in
   milli-cpu and bytes (Kubernetes' rounded-up ``MilliValue`` and ``Value`` of
   the allocatable; the capacity for a node whose allocatable is empty).
3. High nodes are visited by ``cpu% + memory%``, highest first. On each, the
   tasks are taken by priority (lowest first), then QoS class (best-effort
   first), then task id. Before each task the plugin checks that it should go on
   with this node: its cpu or memory use must still be **at or above** the target
   (``>=``, where rule 1 uses ``>``), and neither room may be exactly zero (a room
   that went negative does not stop it, as in Volcano). A task that is not among
   the candidates (the Running tasks ``shuffle`` hands over) is passed over and
   changes nothing. A candidate becomes a victim: its requests (cpu truncated to
   whole milli-cpu, memory to whole bytes) come off the rooms, and off the node's
   use in percent of the node's **capacity** (not its allocatable, as in Volcano).
   When a node stops, the next one goes on with what is left of the room.

**Arguments** (Volcano's):

* ``interval``: a Go duration string (default ``5m``); one that does not parse is
  logged and the default kept; a value that is not a string is a ConfigError
  (Volcano's scheduler panics on it).
* ``metricsPeriod``: the key of the averages to read (default ``5m``; an empty
  string reads as the default); a value that is not a string is a ConfigError.
* ``strategies``: a list of ``{name, params}`` mappings, in order (default: one
  ``lowNodeUtilization`` with default params). A value that is not a list, or an
  empty list, keeps the default. An entry that is not a mapping, whose ``name``
  is not a string or whose ``params`` is not a mapping with string keys, is
  skipped (Volcano's decoder rejects it); so is an unknown name. The keys
  ``name`` and ``params`` are matched without regard to case, as Volcano's
  decoder does. When ``lowNodeUtilization`` is listed twice it runs once, with
  the params of the last entry.
* ``lowNodeUtilization`` params: ``thresholds`` and ``targetThresholds``, each a
  mapping of resource to an **integer** percentage, default 100 for each
  resource; only ``cpu`` and ``memory`` have an effect (``pods`` is accepted and,
  as in Volcano, does nothing: only cpu and memory are measured). A key that is
  not a string or a value that is not an integer is a ConfigError naming the
  field (Volcano panics). A ``thresholds`` that is not a mapping is logged and
  ends the reading of the params (``targetThresholds`` then keeps its default,
  as in Volcano); a ``targetThresholds`` that is not a mapping is logged and
  ignored. ``thresholdPriorityClassName``, ``nodeFit`` and ``numberOfNodes``
  appear in Volcano's configuration type but are never read: they are logged as
  ignored. With the defaults (100 and 100) no node can be high, so the
  plugin evicts nothing until thresholds are configured.

Argument problems that Volcano would panic on are raised when the plugin is built
(at session open, where the session wraps the ConfigError in a PluginError);
Volcano panics only once the strategy runs.

**Differences from Volcano**, besides the clock and the state above:

* Volcano visits nodes, and the tasks of a node, in Go map order and sorts them
  with an unstable sort, so ties come out in a random order; batchsched breaks
  node ties by the session's node order and task ties by task id.
* Volcano finds a node's pod among the candidates by pod **name** only, so a pod
  with the same name in another namespace can stand in for it; batchsched finds
  the task itself (by id).
* batchsched does not keep container limits, so it cannot tell a Guaranteed pod
  from a Burstable one: within a priority, best-effort tasks (neither a cpu nor a
  memory request) go first and the others are ordered by id. Volcano puts Burstable
  before Guaranteed. (Volcano's comparison also claims that each of two
  best-effort pods goes before the other; batchsched reads that as a tie.)
* Every batchsched task has a priority; Volcano puts pods without one first.
* Volcano's ``metricsPeriod`` is a process-wide variable that keeps the last value
  configured; here each session reads its own configuration.
"""

from __future__ import annotations

import enum
import logging
import math
import weakref
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import attrs

from batchsched.api.node import NodeInfo
from batchsched.api.oversubscription import without_oversubscription
from batchsched.api.resource import CPU, MEMORY, Resource
from batchsched.api.task import TaskInfo
from batchsched.errors import ConfigError
from batchsched.framework.arguments import Arguments, parse_duration, warn_unreadable, warned_once
from batchsched.framework.session import Session
from batchsched.kube.go_strconv import in_int64

__all__ = [
    "DEFAULT_INTERVAL",
    "DEFAULT_METRICS_PERIOD",
    "LOW_NODE_UTILIZATION",
    "LowNodeUtilizationConfig",
    "NodeUtilization",
    "QosClass",
    "ReschedulingConfig",
    "ReschedulingPlugin",
    "Strategy",
    "classify_nodes",
    "eviction_order",
    "low_node_utilization_victims",
    "parse_arguments",
    "parse_low_node_utilization",
    "qos_class",
    "time_to_run",
]

log = logging.getLogger("batchsched")

PLUGIN_NAME = "rescheduling"
LOW_NODE_UTILIZATION = "lowNodeUtilization"
#: Seconds between two runs when ``interval`` is missing or does not parse.
DEFAULT_INTERVAL = 300.0
DEFAULT_METRICS_PERIOD = "5m"
#: The percentage every threshold starts at.
DEFAULT_THRESHOLD = 100.0
#: The resources the metrics measure, hence the only ones the strategy weighs.
MEASURED = (CPU, MEMORY)

_ARGUMENTS = ("interval", "metricsPeriod", "strategies")
_THRESHOLDS = "thresholds"
_TARGET_THRESHOLDS = "targetThresholds"
#: Fields of Volcano's configuration type that nothing reads.
_UNREAD_PARAMS = ("numberOfNodes", "thresholdPriority", "thresholdPriorityClassName", "nodeFit")
#: Threshold keys Volcano copies ("pod" is its spelling) though no figure measures them.
_UNMEASURED_KEYS = ("pods", "pod")
#: Go's time.Duration holds whole nanoseconds in an int64.
_MAX_DURATION = (2**63 - 1) / 1e9


# -- configuration ---------------------------------------------------------------------


@attrs.frozen
class Strategy:
    """One entry of ``strategies``: a strategy name and its raw params."""

    name: str
    params: Mapping[str, Any] = attrs.field(factory=dict)


@attrs.frozen
class LowNodeUtilizationConfig:
    """The percentages that make a node low (all below ``thresholds``) or high (one
    above ``target_thresholds``), for cpu and memory."""

    thresholds: Mapping[str, float] = attrs.field(
        factory=lambda: dict.fromkeys(MEASURED, DEFAULT_THRESHOLD))
    target_thresholds: Mapping[str, float] = attrs.field(
        factory=lambda: dict.fromkeys(MEASURED, DEFAULT_THRESHOLD))


@attrs.frozen
class ReschedulingConfig:
    """The plugin's arguments, read (see :func:`parse_arguments`).

    ``low_node_utilization`` is the strategy's configuration when it is listed,
    else None (then the plugin selects no victim).
    """

    interval: float = DEFAULT_INTERVAL
    metrics_period: str = DEFAULT_METRICS_PERIOD
    strategies: tuple[Strategy, ...] = (Strategy(LOW_NODE_UTILIZATION),)
    low_node_utilization: LowNodeUtilizationConfig | None = LowNodeUtilizationConfig()


def parse_arguments(arguments: Mapping[str, Any], *, owner: str = PLUGIN_NAME
                    ) -> ReschedulingConfig:
    """Read the plugin's arguments as Volcano does (see the module docstring).

    Raises :class:`~batchsched.errors.ConfigError` naming the field for a value
    Volcano's scheduler would panic on; logs the values it falls back from.
    """
    interval = _interval(arguments, owner)
    period = arguments.get("metricsPeriod", DEFAULT_METRICS_PERIOD)
    if not isinstance(period, str):
        raise ConfigError(f"must be a string such as \"5m\", not {period!r}",
                          key=f"{owner}.metricsPeriod")
    entries = _strategies(arguments, owner)
    if entries is None:
        return ReschedulingConfig(interval, period or DEFAULT_METRICS_PERIOD)
    lnu = None
    lnu_entries = [(i, s) for i, s in entries if s.name == LOW_NODE_UTILIZATION]
    if lnu_entries:
        index, strategy = lnu_entries[-1]  # the last entry's params win
        lnu = parse_low_node_utilization(
            strategy.params, where=f"{owner}.strategies[{index}].params", owner=owner)
    return ReschedulingConfig(interval, period or DEFAULT_METRICS_PERIOD,
                              tuple(s for _, s in entries), lnu)


def _interval(arguments: Mapping[str, Any], owner: str) -> float:
    if "interval" not in arguments:
        return DEFAULT_INTERVAL
    raw = arguments["interval"]
    if not isinstance(raw, str):
        raise ConfigError(f"must be a Go duration string such as \"5m\", not {raw!r}",
                          key=f"{owner}.interval")
    try:
        seconds = parse_duration(raw)
    except ValueError:
        seconds = math.inf
    if not abs(seconds) <= _MAX_DURATION:
        warn_unreadable(owner, "interval", raw, "a Go duration such as \"5m\"", "5m")
        return DEFAULT_INTERVAL
    return seconds


def _strategies(arguments: Mapping[str, Any], owner: str
                ) -> list[tuple[int, Strategy]] | None:
    """The entries of ``strategies`` that decode, with their index; None for the
    default (no list, or an empty one)."""
    if "strategies" not in arguments:
        return None
    raw = arguments["strategies"]
    if not isinstance(raw, list) or not raw:
        log.warning("plugin %r: argument 'strategies' = %r is not a non-empty list of "
                    "{name, params}; using the default %s", owner, raw, LOW_NODE_UTILIZATION)
        return None
    entries = []
    for index, item in enumerate(raw):
        strategy = _strategy(item)
        if strategy is None:
            log.warning("plugin %r: skipping strategies[%d] = %r: not a mapping with a string "
                        "name and mapping params", owner, index, item)
            continue
        if strategy.name != LOW_NODE_UTILIZATION:
            log.warning("plugin %r: strategies[%d]: unknown strategy %r does nothing "
                        "(known: %s)", owner, index, strategy.name, LOW_NODE_UTILIZATION)
        entries.append((index, strategy))
    return entries


def _strategy(item: Any) -> Strategy | None:
    """An entry decoded as Volcano's decoder does, or None when it rejects it."""
    if not isinstance(item, Mapping):
        return None
    name, params = _field(item, "Name"), _field(item, "Params")
    name = "" if name is None else name
    params = {} if params is None else params
    if not isinstance(name, str) or not isinstance(params, Mapping):
        return None
    if not all(isinstance(key, str) for key in params):
        return None
    return Strategy(name, dict(params))


def _field(entry: Mapping[Any, Any], name: str) -> Any:
    """The value for a field of Volcano's strategy type: under the field's exact name,
    else under any string key equal to it without regard to case (None: absent)."""
    if name in entry:
        return entry[name]
    for key, value in entry.items():
        if isinstance(key, str) and key.lower() == name.lower():
            return value
    return None


def parse_low_node_utilization(params: Mapping[str, Any], *, where: str = "params",
                               owner: str = PLUGIN_NAME) -> LowNodeUtilizationConfig:
    """Read ``lowNodeUtilization``'s params over the defaults (see the module docstring);
    ``where`` is the dotted path of the params, for messages."""
    unread = sorted(k for k in params if k in _UNREAD_PARAMS)
    unknown = sorted(k for k in params
                     if k not in (_THRESHOLDS, _TARGET_THRESHOLDS, *_UNREAD_PARAMS))
    if unread:
        log.warning("plugin %r: %s: ignoring %s: Volcano accepts but never reads them", owner,
                    where, ", ".join(repr(k) for k in unread))
    if unknown:
        log.warning("plugin %r: %s: ignoring %s (%s reads %s and %s)", owner, where,
                    ", ".join(repr(k) for k in unknown), LOW_NODE_UTILIZATION, _THRESHOLDS,
                    _TARGET_THRESHOLDS)
    levels = {key: dict.fromkeys(MEASURED, DEFAULT_THRESHOLD)
              for key in (_THRESHOLDS, _TARGET_THRESHOLDS)}
    for key in (_THRESHOLDS, _TARGET_THRESHOLDS):
        if key not in params:
            continue
        raw = params[key]
        if not isinstance(raw, Mapping):
            log.warning("plugin %r: %s.%s = %r is not a mapping of resource to percentage; "
                        "the rest of the params is not read", owner, where, key, raw)
            break
        levels[key].update(_percentages(raw, f"{where}.{key}", owner))
    return LowNodeUtilizationConfig(levels[_THRESHOLDS], levels[_TARGET_THRESHOLDS])


def _percentages(raw: Mapping[Any, Any], where: str, owner: str) -> dict[str, float]:
    """The cpu and memory percentages of a thresholds mapping; every entry must be a
    string key with an integer value."""
    out: dict[str, float] = {}
    for key, value in raw.items():
        if not isinstance(key, str):
            raise ConfigError(f"the resource name {key!r} is not a string", key=where)
        if not isinstance(value, int) or isinstance(value, bool) or not in_int64(value):
            raise ConfigError(f"must be an integer percentage, not {value!r}",
                              key=f"{where}.{key}")
        if key in MEASURED:
            out[key] = float(value)
        elif key not in _UNMEASURED_KEYS:
            log.warning("plugin %r: %s.%s has no effect (only cpu and memory are measured)",
                        owner, where, key)
    return out


# -- when to run -----------------------------------------------------------------------

#: The session clock of each scheduler cache's last run.
_LAST_RUN: weakref.WeakKeyDictionary[Any, float] = weakref.WeakKeyDictionary()
#: Cache types already warned about (they cannot hold the last run).
_WARNED_TYPES: set[type] = warned_once()


def time_to_run(ssn: Session, interval: float) -> bool:
    """Whether more than ``interval`` seconds passed since the last run on this
    session's cache (the first session on a cache, and a session without one,
    always run); records ``ssn.now`` as the last run when it answers yes."""
    cache = ssn.cache
    if cache is None:
        return True
    try:
        last = _LAST_RUN.get(cache)
        if last is not None and not last + interval < ssn.now:
            _ask_for_next_run(ssn, last, interval)
            return False
        _LAST_RUN[cache] = ssn.now
        _ask_for_next_run(ssn, ssn.now, interval)
    except TypeError:
        kind = type(cache)
        if kind not in _WARNED_TYPES:
            _WARNED_TYPES.add(kind)
            log.warning("plugin %r: a %s cannot be weakly referenced and hashed, so the "
                        "interval between runs cannot be kept: every session runs",
                        PLUGIN_NAME, kind.__name__)
    return True


def _ask_for_next_run(ssn: Session, last: float, interval: float) -> None:
    """Tell the host when the next run is due (a simulator opens a session then): only
    when shuffle, which evicts the plugin's victims, runs, and the interval is no
    instant (one of 0 or less runs at every session anyway)."""
    if interval > 0 and "shuffle" in ssn.configuration.actions:
        ssn.wake_up_at(PLUGIN_NAME, math.nextafter(last + interval, math.inf))


# -- lowNodeUtilization ----------------------------------------------------------------


class QosClass(enum.IntEnum):
    """A pod's Kubernetes QoS class; a lower value is evicted first."""

    BEST_EFFORT = 0
    BURSTABLE = 1
    GUARANTEED = 2


def qos_class(task: TaskInfo) -> QosClass:
    """Best-effort without a cpu or memory request; else Burstable (limits are not
    kept, so Guaranteed cannot be told)."""
    req = task.resreq
    if req.milli_cpu <= 0 and req.memory <= 0:
        return QosClass.BEST_EFFORT
    return QosClass.BURSTABLE


def eviction_order(tasks: Iterable[TaskInfo]) -> list[TaskInfo]:
    """Tasks by the pod's priority (lowest first: ``spec.priority``, not the
    ``volcano.sh/task-priority`` annotation, as Volcano's ``sortPods`` reads the pods),
    then QoS class (best-effort first), then id."""
    return sorted(tasks, key=lambda t: (t.pod_priority, qos_class(t), t.uid))


@attrs.define
class NodeUtilization:
    """A node and its use of cpu and memory in percent, lowered as victims are taken."""

    node: NodeInfo
    percent: dict[str, float]

    @classmethod
    def of(cls, node: NodeInfo, period: str) -> NodeUtilization:
        usage = node.usage
        if usage is None:
            return cls(node, dict.fromkeys(MEASURED, 0.0))
        return cls(node, {CPU: usage.cpu_avg.get(period, 0.0),
                          MEMORY: usage.memory_avg.get(period, 0.0)})

    @property
    def score(self) -> float:
        """How hot the node is: cpu% + memory%."""
        return self.percent[CPU] + self.percent[MEMORY]

    def is_low(self, thresholds: Mapping[str, float]) -> bool:
        return not self.node.unschedulable and all(
            self.percent[r] < thresholds[r] for r in MEASURED)

    def is_high(self, targets: Mapping[str, float]) -> bool:
        return any(self.percent[r] > targets[r] for r in MEASURED)

    def reaches(self, targets: Mapping[str, float]) -> bool:
        """Still at or above a target: the check before each eviction."""
        return any(self.percent[r] >= targets[r] for r in MEASURED)

    def release(self, task: TaskInfo) -> None:
        """Take a victim's requests off the node's use, in percent of its capacity."""
        cpu, memory = _whole_request(task)
        # The Kubernetes node's capacity (Volcano reads node.Status): without what
        # the oversubscription annotations add to the scheduler's figures.
        capacity = without_oversubscription(self.node.capacity, self.node.annotations)
        # Volcano's convertQuanToPercent: each quantity's AsApproximateFloat64, which
        # is value x 10^scale (a victim's milli-cpu times 0.001, not over 1000).
        self.percent[CPU] -= _ratio(cpu * 0.001 * 100, _approximate_cores(capacity.milli_cpu))
        self.percent[MEMORY] -= _ratio(memory * 100, capacity.memory)


def classify_nodes(utilizations: Iterable[NodeUtilization], config: LowNodeUtilizationConfig
                   ) -> tuple[list[NodeUtilization], list[NodeUtilization]]:
    """The low nodes and the high nodes (a node is at most one of them), in order."""
    low: list[NodeUtilization] = []
    high: list[NodeUtilization] = []
    for utilization in utilizations:
        if utilization.is_low(config.thresholds):
            low.append(utilization)
        elif utilization.is_high(config.target_thresholds):
            high.append(utilization)
    return low, high


def low_node_utilization_victims(
    nodes: Sequence[NodeInfo], candidates: Iterable[TaskInfo],
    config: LowNodeUtilizationConfig, period: str = DEFAULT_METRICS_PERIOD,
) -> list[TaskInfo]:
    """The victims lowNodeUtilization selects among ``candidates`` (the objects of that
    list, in eviction order) on these nodes, with the averages of ``period``."""
    low, high = classify_nodes((NodeUtilization.of(n, period) for n in nodes), config)
    if not low or len(low) == len(nodes) or not high:
        return []
    targets = config.target_thresholds
    room = _room(low, targets)
    by_uid: dict[str, TaskInfo] = {}
    for candidate in candidates:
        by_uid.setdefault(candidate.uid, candidate)
    victims: list[TaskInfo] = []
    for source in sorted(high, key=lambda u: u.score, reverse=True):
        for held in eviction_order(source.node.tasks.values()):
            if not source.reaches(targets) or 0 in room.values():
                break
            task = by_uid.get(held.uid)
            if task is None:
                continue
            cpu, memory = _whole_request(task)
            room[CPU] -= cpu
            room[MEMORY] -= memory
            source.release(task)
            victims.append(task)
    return victims


def _room(low: Iterable[NodeUtilization], targets: Mapping[str, float]) -> dict[str, int]:
    """What the low nodes can take before reaching the targets: milli-cpu and bytes."""
    room = dict.fromkeys(MEASURED, 0)
    for utilization in low:
        size = _allocatable(utilization.node)
        for resource in MEASURED:
            room[resource] += (_amount(targets[resource], size[resource])
                               - _amount(utilization.percent[resource], size[resource]))
    return room


def _allocatable(node: NodeInfo) -> dict[str, int]:
    """The node's allocatable (its capacity when the allocatable is empty) in whole
    milli-cpu and bytes, rounded up as Kubernetes' MilliValue and Value do."""
    # The Kubernetes node's figures, as for the capacity in release().
    size: Resource = without_oversubscription(node.allocatable, node.annotations)
    if size.milli_cpu == 0 and size.memory == 0 and not size.scalars:
        size = without_oversubscription(node.capacity, node.annotations)
    return {CPU: math.ceil(size.milli_cpu), MEMORY: math.ceil(size.memory)}


def _amount(percent: float, size: int) -> int:
    """``percent`` of ``size``, truncated, computed in Volcano's order."""
    return int(percent * float(size) * 0.01)


def _whole_request(task: TaskInfo) -> tuple[int, int]:
    """A task's cpu (milli) and memory (bytes) requests, truncated to integers."""
    return int(task.resreq.milli_cpu), int(task.resreq.memory)


def _approximate_cores(milli_cpu: float) -> float:
    """A node's cpu capacity as ``Quantity.AsApproximateFloat64`` reads it, written
    as Kubernetes writes it: whole cores exactly, else milli-cores times 0.001."""
    whole = int(milli_cpu)
    if whole == milli_cpu and whole % 1000 == 0:
        return float(whole // 1000)
    return math.ceil(milli_cpu) * 0.001


def _ratio(amount: float, whole: float) -> float:
    """``amount / whole`` with IEEE semantics: a zero capacity gives inf or NaN."""
    if whole:
        return amount / whole
    if amount == 0 or math.isnan(amount):
        return math.nan
    return math.copysign(math.inf, amount)


# -- the plugin ------------------------------------------------------------------------


class ReschedulingPlugin:
    """Volcano's rescheduling plugin (see the module docstring)."""

    name = PLUGIN_NAME

    def __init__(self, arguments: Arguments) -> None:
        self.arguments = arguments
        self.config = parse_arguments(arguments, owner=self.name)
        arguments.warn_unknown(self.name, _ARGUMENTS)

    def on_session_open(self, ssn: Session) -> None:
        if not time_to_run(ssn, self.config.interval):
            log.debug("plugin %r: not the time to run (interval %ss)", self.name,
                      self.config.interval)
            return
        lnu = self.config.low_node_utilization
        if lnu is None:
            return
        period = self.config.metrics_period

        def victim_tasks(tasks: list[TaskInfo]) -> list[TaskInfo]:
            return low_node_utilization_victims(ssn.node_list, tasks, lnu, period)

        ssn.add_victim_tasks_fn(self.name, victim_tasks)

    def on_session_close(self, ssn: Session) -> None:
        pass
