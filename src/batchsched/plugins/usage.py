"""usage: keep new tasks off nodes whose measured load is high, and prefer the least
loaded nodes (Volcano's ``plugins/usage``).

The plugin reads a node's measured load, ``NodeInfo.usage`` (Volcano's
``NodeUsage``): the average cpu and memory use over the last ten minutes, in
percent of the node's capacity (the ``"10m"`` entries of ``cpu_avg`` and
``memory_avg``, Volcano's ``NODE_METRICS_PERIOD``; other periods are not read, a
missing entry reads 0). The figures are **fresh** when they were taken at most
five minutes before the session clock ``ssn.now``; a node without figures, or
with stale ones, is neither filtered nor scored.

* **predicate**: on a node with fresh figures, a cpu average above
  ``thresholds.cpu`` fails the node with ``the CPU load of the node exceeds the
  upper limit.``; else a memory average above ``thresholds.mem`` fails it with
  ``the memory load of the node exceeds the upper limit.``. Both are
  UnschedulableAndUnresolvable (preemption cannot help).
* **node order**: on a node with fresh figures, per resource r (cpu in
  millicores, memory in bytes) the *composite utilisation*
  ``U(r) = (real(r) / 100 * capacity(r) + shadow(r)) / capacity(r)``, clamped to
  [0, 1] (0 when the node's capacity of r is not positive), where ``real`` is the
  measured average and ``shadow`` the estimated load of the node's tasks the
  figures cannot see yet (below). The score is
  ``((1 - U(cpu)) * cpu.weight + (1 - U(mem)) * memory.weight)
  / (cpu.weight + memory.weight) * 100 * usage.weight`` (0 when both weights
  are 0), from 0 (full) to ``100 * usage.weight`` (idle); stale or missing
  figures score 0.

**Shadow load.** Figures lag: a task placed a moment ago does not show in them
yet. A task is in this *blind spot* when it is on a node and Allocated, Binding or
Bound, or Running since less than the metrics interval (30 seconds) before
``ssn.now``, or Running with an unknown ``start_time`` (Volcano: a pod without
``status.startTime``; a scenario gives it as ``tasks[].startTime``, and the
simulator sets it when a task starts). At session open every
such task's estimated load is added to its node's shadow load, node by node and,
within a node, in task id order; then each placement during the session
(allocate, pipeline, and the undo of an eviction: the *allocate* events) adds the
placed task's estimate, replacing the one recorded for that task if there was one,
and each *deallocate* event (an eviction, the undo of a placement) subtracts
exactly the estimate recorded for that task (nothing if none), never leaving a
node's shadow load below 0.

**Estimate** of a task on node N: with the node's *load*
``L = (U(cpu) * cpu.weight + U(mem) * memory.weight) / (cpu.weight +
memory.weight)`` (0 when both weights are 0; U with the node's shadow load so far,
and its measured averages even when they are stale), the *risk* is
``risk_factor`` when ``L >= risk_threshold``, else 1. A best-effort task is
estimated at ``be_cpu * risk`` millicores and ``be_mem * risk`` bytes; any other
at ``(request * request_ratio + (limit - request) * burst_ratio) * risk`` per
resource, clamped to [0, limit], where the limit is the request when it is
missing or below the request. The request is the task's ``init_resreq``
(Volcano's ``GetPodResourceRequest``).

Both answers depend on the node alone, never on the task, so the plugin also
offers column forms of its predicate and score to the fast node selector
(:mod:`batchsched.columnar.selector`): each node's verdict is worked out at
session open (the figures do not change during a session) and each node's score is
kept in an array that the event handlers update when the node's shadow load
moves, with the scalar functions themselves.

Arguments (Volcano's, with its types and fallbacks; a value that is present but
of the wrong type or out of range keeps the default and is logged as a warning):

==============================  ========  ==================================================
argument                        default   accepted
==============================  ========  ==================================================
``usage.weight``                5         an integer >= 0
``cpu.weight``                  1         an integer >= 0
``memory.weight``               1         an integer >= 0
``thresholds.cpu``              80        an integer from 0 to 100 (percent)
``thresholds.mem``              80        an integer from 0 to 100 (percent)
``estimator.request_ratio``     0.7       a number from 0 to 1
``estimator.burst_ratio``       0         a number from 0 to 1
``estimator.risk_threshold``    0.6       a number from 0 to 1
``estimator.risk_factor``       1.2       a number >= 1
``estimator.be_cpu``            250m      a quantity (``"500m"``), or an integer of millicores
``estimator.be_mem``            200Mi     a quantity (``"300Mi"``), or an integer of MiB
==============================  ========  ==================================================

``thresholds`` and ``estimator`` are nested mappings. As in Volcano, numbers
written as strings (``usage.weight: "7"``) are not read, unlike in the other
plugins of batchsched; a section that is not a mapping with string keys is
ignored as a whole.

Differences from Volcano:

* Freshness and the blind spot are judged against the session clock ``ssn.now``
  (one instant for the whole session); Volcano reads the wall clock at each
  call. Task start times (``TaskInfo.start_time``) are on the same clock.
* The metrics interval is the scheduler configuration's ``metrics.interval``
  (a Go duration, used when positive; else 30 seconds), as in Volcano
  (:func:`read_metrics_interval`).
* batchsched's tasks carry no resource limits, so every limit is missing: the
  estimate is ``request * request_ratio * risk``, clamped to the request, and
  ``burst_ratio`` has no effect.
* At session open Volcano visits a node's tasks in Go map order (random), which
  decides which of them get the risk factor when the node crosses the risk
  threshold part way; batchsched visits them in task id order.
* The shadow-load cache has no lock: a session runs on one thread.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import attrs
import numpy as np

from batchsched import columnar
from batchsched.api.fit import FitError
from batchsched.api.node import NodeInfo, NodeUsage
from batchsched.api.task import TaskInfo
from batchsched.api.types import FitStatusCode, TaskStatus
from batchsched.columnar.forms import VectorFallback
from batchsched.columnar.node_columns import BoolArray, Candidates, FloatArray, NodeColumns
from batchsched.errors import QuantityError
from batchsched.framework.arguments import Arguments, parse_duration, warn_unreadable
from batchsched.framework.events import Event, EventHandler
from batchsched.framework.session import Session
from batchsched.kube.go_strconv import in_int64
from batchsched.kube.quantity import milli_value, value

__all__ = [
    "CPU_OVERLOAD_REASON",
    "DEFAULT_METRICS_INTERVAL",
    "MEMORY_OVERLOAD_REASON",
    "METRICS_ACTIVE_TIME",
    "PERIOD",
    "PodEstimate",
    "ShadowLoad",
    "UsageConfig",
    "UsagePlugin",
    "applied_risk_factor",
    "composite_utilization",
    "estimate_best_effort",
    "estimate_pod_resource",
    "in_blind_spot",
    "load_composite",
    "metrics_fresh",
    "node_score",
    "read_metrics_interval",
]

PLUGIN_NAME = "usage"
#: The averaging period the plugin reads (Volcano's ``source.NODE_METRICS_PERIOD``).
PERIOD = "10m"
#: Figures older than this (seconds) are stale (Volcano's ``MetricsActiveTime``).
METRICS_ACTIVE_TIME = 5 * 60.0
#: How long (seconds) a started task stays invisible to the figures, unless the
#: configuration's ``metrics.interval`` says otherwise.
DEFAULT_METRICS_INTERVAL = 30.0
CPU_OVERLOAD_REASON = "the CPU load of the node exceeds the upper limit."
MEMORY_OVERLOAD_REASON = "the memory load of the node exceeds the upper limit."
MAX_NODE_SCORE = 100
_MIB = 1024 * 1024

THRESHOLDS_SECTION = "thresholds"
ESTIMATOR_SECTION = "estimator"
_TOP_LEVEL = ("usage.weight", "cpu.weight", "memory.weight",
              THRESHOLDS_SECTION, ESTIMATOR_SECTION)
_BLIND_WHEN_PLACED = frozenset({TaskStatus.ALLOCATED, TaskStatus.BINDING, TaskStatus.BOUND})


# -- the formulas ---------------------------------------------------------------------------

def load_composite(cpu: float, memory: float, cpu_weight: int, memory_weight: int) -> float:
    """The weighted mean of two composite utilisations (0 when both weights are 0).

    >>> load_composite(0.4, 0.6, 1, 1)
    0.5
    """
    total = cpu_weight + memory_weight
    if total == 0:
        return 0.0
    return (cpu * cpu_weight + memory * memory_weight) / total


def applied_risk_factor(load: float, risk_threshold: float, risk_factor: float) -> float:
    """``risk_factor`` once ``load`` reaches ``risk_threshold``, else 1; a factor below 1
    is never applied (it would make estimates less cautious under pressure)."""
    if risk_factor < 1.0:
        return 1.0
    return risk_factor if load >= risk_threshold else 1.0


def estimate_pod_resource(request: float, limit: float, request_ratio: float,
                          burst_ratio: float, risk: float) -> float:
    """The estimated use of one resource by a task that is not best-effort:
    ``(request * request_ratio + (limit - request) * burst_ratio) * risk`` clamped to
    [0, limit], a missing limit (0) or one below the request reading as the request.

    >>> estimate_pod_resource(500, 2000, 0.5, 0.2, 1.0)
    550.0
    """
    request = max(request, 0.0)
    effective_limit = request if limit <= 0 or limit < request else limit
    burst = max(effective_limit - request, 0.0)
    estimate = (request * request_ratio + burst * burst_ratio) * risk
    return min(max(estimate, 0.0), effective_limit)


def estimate_best_effort(configured: float, risk: float) -> float:
    """The estimated use of one resource by a best-effort task (a negative configured
    amount reads 0)."""
    return max(configured, 0.0) * risk


def composite_utilization(real_percent: float, shadow: float, capacity: float) -> float:
    """``(real_percent / 100 * capacity + shadow) / capacity`` clamped to [0, 1]; 0 when
    the capacity is not positive.

    >>> composite_utilization(50, 2000, 8000)
    0.75
    """
    if capacity <= 0:
        return 0.0
    composite = (real_percent / 100.0 * capacity + shadow) / capacity
    return min(max(composite, 0.0), 1.0)


def node_score(cpu: float, memory: float, cpu_weight: int, memory_weight: int,
               usage_weight: int) -> float:
    """The node-order score from the composite utilisations (see the module docstring).

    >>> node_score(0.6, 0.5, 2, 8, 5)
    240.0
    """
    total = cpu_weight + memory_weight
    if total == 0:
        return 0.0
    free = ((1.0 - cpu) * cpu_weight + (1.0 - memory) * memory_weight) / total
    return free * MAX_NODE_SCORE * usage_weight


def metrics_fresh(usage: NodeUsage | None, now: float) -> bool:
    """Whether ``usage`` was measured at most :data:`METRICS_ACTIVE_TIME` before ``now``."""
    return (usage is not None and usage.metrics_time is not None
            and now - usage.metrics_time <= METRICS_ACTIVE_TIME)


def in_blind_spot(task: TaskInfo, now: float, metrics_interval: float) -> bool:
    """Whether ``task`` holds a node but cannot show in its figures yet: Allocated,
    Binding or Bound, or Running since less than ``metrics_interval`` seconds before
    ``now`` (or since an unknown time)."""
    if not task.node_name:
        return False
    if task.status in _BLIND_WHEN_PLACED:
        return True
    if task.status is TaskStatus.RUNNING:
        return task.start_time is None or now - task.start_time < metrics_interval
    return False


def read_metrics_interval(metrics: Mapping[str, Any] | None) -> float:
    """The metrics interval in seconds from a scheduler configuration's ``metrics``
    mapping: its ``interval`` when that is a positive Go duration, else
    :data:`DEFAULT_METRICS_INTERVAL`.

    >>> read_metrics_interval({"interval": "1m"}), read_metrics_interval({"interval": "0s"})
    (60.0, 30.0)
    """
    raw = metrics.get("interval") if metrics is not None else None
    if isinstance(raw, str):
        try:
            interval = parse_duration(raw)
        except ValueError:
            return DEFAULT_METRICS_INTERVAL
        if interval > 0:
            return interval
    return DEFAULT_METRICS_INTERVAL


# -- the shadow load ------------------------------------------------------------------------

@attrs.frozen
class PodEstimate:
    """What was added for one task: on which node, how many millicores and bytes."""

    node_name: str
    cpu: float
    memory: float


class ShadowLoad:
    """The estimated load of the tasks in the blind spot, per node (Volcano's
    ``ShadowLoadCache``).

    Each task's estimate is recorded when it is added, and removing the task
    subtracts exactly that record, whatever changed in between.
    """

    __slots__ = ("cpu", "estimates", "memory")

    def __init__(self) -> None:
        #: Node -> estimated millicores of its tasks in the blind spot.
        self.cpu: dict[str, float] = {}
        #: Node -> estimated bytes of memory of its tasks in the blind spot.
        self.memory: dict[str, float] = {}
        #: Task id -> what was added for it.
        self.estimates: dict[str, PodEstimate] = {}

    def add(self, node_name: str, task_uid: str, cpu: float, memory: float) -> None:
        """Add a task's estimate to a node, replacing the one recorded for the task."""
        previous = self.estimates.get(task_uid)
        if previous is not None:
            self._subtract(previous)
        self.cpu[node_name] = self.cpu.get(node_name, 0.0) + cpu
        self.memory[node_name] = self.memory.get(node_name, 0.0) + memory
        self.estimates[task_uid] = PodEstimate(node_name, cpu, memory)

    def remove(self, task_uid: str) -> None:
        """Subtract the estimate recorded for a task and forget it (nothing if none)."""
        estimate = self.estimates.pop(task_uid, None)
        if estimate is not None:
            self._subtract(estimate)

    def _subtract(self, estimate: PodEstimate) -> None:
        node = estimate.node_name
        self.cpu[node] = max(self.cpu.get(node, 0.0) - estimate.cpu, 0.0)
        self.memory[node] = max(self.memory.get(node, 0.0) - estimate.memory, 0.0)

    def node_estimate(self, node_name: str) -> tuple[float, float]:
        """(millicores, bytes) estimated on a node; (0, 0) for a node never seen."""
        return self.cpu.get(node_name, 0.0), self.memory.get(node_name, 0.0)

    def estimate_of(self, task_uid: str) -> PodEstimate | None:
        return self.estimates.get(task_uid)

    def reset(self) -> None:
        """Forget everything (the mappings are emptied in place)."""
        self.cpu.clear()
        self.memory.clear()
        self.estimates.clear()

    def is_clean(self) -> bool:
        return not (self.cpu or self.memory or self.estimates)

    def __repr__(self) -> str:
        return f"<ShadowLoad cpu={self.cpu} memory={self.memory}>"


# -- the arguments --------------------------------------------------------------------------

@attrs.frozen
class UsageConfig:
    """The plugin's settings; :meth:`from_arguments` reads them as Volcano does."""

    usage_weight: int = 5
    cpu_weight: int = 1
    memory_weight: int = 1
    #: Percent.
    cpu_threshold: float = 80.0
    memory_threshold: float = 80.0
    request_ratio: float = 0.7
    burst_ratio: float = 0.0
    risk_threshold: float = 0.6
    risk_factor: float = 1.2
    #: Millicores.
    be_cpu: float = 250.0
    #: Bytes.
    be_memory: float = float(200 * _MIB)

    @classmethod
    def from_arguments(cls, arguments: Mapping[str, Any]) -> UsageConfig:
        """Read the plugin's arguments; a value present but unreadable or out of range
        keeps its default and is logged (Volcano keeps the default silently)."""
        default = cls()
        read = _Reader(arguments)
        fields: dict[str, Any] = {
            "usage_weight": read.integer("usage.weight", default.usage_weight, 0),
            "cpu_weight": read.integer("cpu.weight", default.cpu_weight, 0),
            "memory_weight": read.integer("memory.weight", default.memory_weight, 0),
        }
        cpu_threshold, memory_threshold = int(default.cpu_threshold), int(
            default.memory_threshold)
        thresholds = read.section(THRESHOLDS_SECTION,
                                  {"cpu": cpu_threshold, "mem": memory_threshold})
        if thresholds is not None:
            fields["cpu_threshold"] = float(thresholds.integer("cpu", cpu_threshold, 0, 100))
            fields["memory_threshold"] = float(
                thresholds.integer("mem", memory_threshold, 0, 100))
        estimator = read.section(ESTIMATOR_SECTION, {
            "request_ratio": default.request_ratio, "burst_ratio": default.burst_ratio,
            "risk_threshold": default.risk_threshold, "risk_factor": default.risk_factor,
            "be_cpu": _shown(default.be_cpu, _MILLICORES),
            "be_mem": _shown(default.be_memory, _MIB_UNIT)})
        if estimator is not None:
            fields["request_ratio"] = estimator.number("request_ratio", default.request_ratio,
                                                       0, 1)
            fields["burst_ratio"] = estimator.number("burst_ratio", default.burst_ratio, 0, 1)
            fields["risk_threshold"] = estimator.number("risk_threshold",
                                                        default.risk_threshold, 0, 1)
            fields["risk_factor"] = estimator.number("risk_factor", default.risk_factor, 1)
            fields["be_cpu"] = estimator.quantity("be_cpu", default.be_cpu, milli_value,
                                                  _MILLICORES)
            fields["be_memory"] = estimator.quantity("be_mem", default.be_memory, value,
                                                     _MIB_UNIT)
        return cls(**fields)


@attrs.frozen
class _Unit:
    """What an integer ``be_cpu`` or ``be_mem`` counts: its size, its quantity suffix
    and its name."""

    size: int
    suffix: str
    name: str


_MILLICORES = _Unit(1, "m", "millicores")
_MIB_UNIT = _Unit(_MIB, "Mi", "MiB")


def _shown(amount: float, unit: _Unit) -> str:
    """An amount as a quantity string: 250 millicores are ``"250m"``."""
    return f"{amount / unit.size:g}{unit.suffix}"


def _range(low: float, high: float | None) -> str:
    return f"at least {low}" if high is None else f"between {low} and {high}"


class _Reader:
    """Reads one level of the plugin's arguments, with Volcano's strict types: an integer
    argument takes a YAML integer only, a number a YAML integer or float (no strings,
    no booleans, no null: a key written without a value is refused, and logged)."""

    def __init__(self, values: Mapping[str, Any], prefix: str = "") -> None:
        self.values = values
        self.prefix = prefix

    def _warn(self, key: str, found: object, expected: str, fallback: object) -> None:
        warn_unreadable(PLUGIN_NAME, self.prefix + key, found, expected, fallback)

    def integer(self, key: str, default: int, low: int, high: int | None = None) -> int:
        """An integer from ``low`` to ``high`` (no bound when None)."""
        if key not in self.values:
            return default
        found = self.values[key]
        if isinstance(found, bool) or not isinstance(found, int) or not in_int64(found):
            # Past int64 yaml.v2 reads a uint64 (or a float64), which Go's int refuses.
            self._warn(key, found, "an unquoted integer", default)
        elif found < low or (high is not None and found > high):
            self._warn(key, found, _range(low, high), default)
        else:
            return found
        return default

    def number(self, key: str, default: float, low: float, high: float | None = None) -> float:
        """A number from ``low`` to ``high`` (no bound when None); NaN is out of range."""
        if key not in self.values:
            return default
        found = self.values[key]
        if isinstance(found, bool) or not isinstance(found, (int, float)) or (
                isinstance(found, int) and found >= 2**63):  # yaml.v2's uint64
            self._warn(key, found, "an unquoted number", default)
        elif not (low <= found and (high is None or found <= high)):
            self._warn(key, found, _range(low, high), default)
        else:
            return float(found)
        return default

    def quantity(self, key: str, default: float, convert: Callable[[object], int],
                 unit: _Unit) -> float:
        """A quantity string converted with ``convert``, or an integer counted in the
        unit (Volcano reads ``be_cpu: 500`` as 500 millicores and ``be_mem: 200`` as
        200 MiB); negative amounts keep the default."""
        if key not in self.values:
            return default
        found = self.values[key]
        shown_default = _shown(default, unit)
        # Past int64 yaml.v2 reads a uint64 (or a float64), which Volcano's `case int`
        # does not take: the default stays, as for any other value it cannot read.
        if isinstance(found, int) and not isinstance(found, bool) and in_int64(found):
            if found < 0:
                self._warn(key, found, "at least 0", shown_default)
                return default
            return float(found) * unit.size
        if isinstance(found, str):
            try:
                amount = convert(found)
            except QuantityError:
                pass
            else:
                if amount >= 0:
                    return float(amount)
        self._warn(key, found, f"a non-negative quantity or an integer of {unit.name}",
                   shown_default)
        return default

    def section(self, key: str, defaults: Mapping[str, object]) -> _Reader | None:
        """The nested mapping ``key`` whose keys are those of ``defaults`` (None when
        absent, or not a mapping with string keys: Volcano then ignores the whole
        section); other keys are logged."""
        if key not in self.values:
            return None
        found = self.values[key]
        if not isinstance(found, Mapping) or not all(isinstance(k, str) for k in found):
            self._warn(key, found, "a mapping with string keys", dict(defaults))
            return None
        prefix = f"{self.prefix}{key}."
        Arguments({prefix + k: v for k, v in found.items()}).warn_unknown(
            PLUGIN_NAME, [prefix + k for k in defaults])
        return _Reader(found, prefix)


# -- the plugin -----------------------------------------------------------------------------

class UsagePlugin:
    """Volcano's usage plugin (see the module docstring)."""

    name = PLUGIN_NAME

    def __init__(self, arguments: Arguments) -> None:
        self.arguments = arguments
        self.config = UsageConfig.from_arguments(arguments)
        arguments.warn_unknown(self.name, _TOP_LEVEL)
        self.metrics_interval = DEFAULT_METRICS_INTERVAL
        self.shadow = ShadowLoad()
        self.now = 0.0
        self._nodes: Mapping[str, NodeInfo] = {}
        # The column forms' view: the session's nodes, each node's score and verdict.
        self._node_list: list[NodeInfo] = []
        self._positions: dict[str, int] = {}
        self._scores: FloatArray = np.zeros(0)
        self._passes: BoolArray | None = None
        self._unresolvable: BoolArray = np.zeros(0, dtype=np.bool_)

    def on_session_open(self, ssn: Session) -> None:
        self.shadow.reset()
        self.now = ssn.now
        self._nodes = ssn.nodes
        self.metrics_interval = read_metrics_interval(ssn.configuration.metrics)
        for node in ssn.node_list:
            blind = [task for task in node.tasks.values()
                     if in_blind_spot(task, self.now, self.metrics_interval)]
            for task in sorted(blind, key=lambda task: task.uid):
                self.add_task(node, task)
        self._open_columns(ssn.node_list)
        ssn.add_event_handler(EventHandler(allocate=self._on_allocate,
                                           deallocate=self._on_deallocate, plugin=self.name))
        ssn.add_predicate_fn(self.name, self.predicate)
        ssn.add_node_order_fn(self.name, self.node_order)
        columnar.add_predicate_fn(ssn, self.name, self.vector_predicate)
        columnar.add_preempt_predicate_fn(ssn, self.name, self.vector_preempt_predicate)
        columnar.add_node_order_fn(ssn, self.name, self.vector_node_order,
                                   many=self.vector_node_order_many)
        columnar.add_template_fn(ssn, self.name, self.vector_template)

    def on_session_close(self, ssn: Session) -> None:
        self.shadow.reset()
        self._nodes = {}
        self._open_columns([])

    # -- decisions ------------------------------------------------------------------------

    def overload_reason(self, node: NodeInfo) -> str | None:
        """Why the predicate fails the node (None: it passes)."""
        usage = node.usage
        if usage is None or not metrics_fresh(usage, self.now):
            return None
        if usage.cpu_avg.get(PERIOD, 0.0) > self.config.cpu_threshold:
            return CPU_OVERLOAD_REASON
        if usage.memory_avg.get(PERIOD, 0.0) > self.config.memory_threshold:
            return MEMORY_OVERLOAD_REASON
        return None

    def predicate(self, task: TaskInfo, node: NodeInfo) -> FitError | None:
        reason = self.overload_reason(node)
        if reason is None:
            return None
        return FitError.of(task.namespace, task.name, node.name, reason,
                           code=FitStatusCode.UNSCHEDULABLE_AND_UNRESOLVABLE, plugin=self.name)

    def score(self, node: NodeInfo) -> float:
        """The node's score, the same for every task."""
        if not metrics_fresh(node.usage, self.now):
            return 0.0
        config = self.config
        cpu, memory = self.composites(node)
        return node_score(cpu, memory, config.cpu_weight, config.memory_weight,
                          config.usage_weight)

    def node_order(self, task: TaskInfo, node: NodeInfo) -> float:
        return self.score(node)

    # -- the shadow load ------------------------------------------------------------------

    def composites(self, node: NodeInfo) -> tuple[float, float]:
        """The node's composite cpu and memory utilisations: its measured averages
        (stale or not; 0 without figures) plus its shadow load."""
        usage = node.usage
        real_cpu = usage.cpu_avg.get(PERIOD, 0.0) if usage is not None else 0.0
        real_memory = usage.memory_avg.get(PERIOD, 0.0) if usage is not None else 0.0
        shadow_cpu, shadow_memory = self.shadow.node_estimate(node.name)
        return (composite_utilization(real_cpu, shadow_cpu, node.capacity.milli_cpu),
                composite_utilization(real_memory, shadow_memory, node.capacity.memory))

    def risk_factor(self, node: NodeInfo) -> float:
        """The risk factor a task placed on the node now is estimated with."""
        config = self.config
        load = load_composite(*self.composites(node), config.cpu_weight, config.memory_weight)
        return applied_risk_factor(load, config.risk_threshold, config.risk_factor)

    def estimate(self, task: TaskInfo, risk: float) -> tuple[float, float]:
        """(millicores, bytes) the task is expected to use, with the given risk factor."""
        config = self.config
        if task.best_effort:
            return (estimate_best_effort(config.be_cpu, risk),
                    estimate_best_effort(config.be_memory, risk))
        request = task.init_resreq
        # Tasks carry no limits: 0 reads as a missing limit.
        return (estimate_pod_resource(request.milli_cpu, 0.0, config.request_ratio,
                                      config.burst_ratio, risk),
                estimate_pod_resource(request.memory, 0.0, config.request_ratio,
                                      config.burst_ratio, risk))

    def add_task(self, node: NodeInfo, task: TaskInfo) -> None:
        """Add the task's estimate to the node's shadow load (replacing its earlier one)."""
        previous = self.shadow.estimate_of(task.uid)
        cpu, memory = self.estimate(task, self.risk_factor(node))
        self.shadow.add(node.name, task.uid, cpu, memory)
        if previous is not None and previous.node_name != node.name:
            self._rescore(previous.node_name)
        self._rescore(node.name)

    def remove_task(self, task: TaskInfo) -> None:
        """Take the task's recorded estimate off its node's shadow load."""
        previous = self.shadow.estimate_of(task.uid)
        if previous is not None:
            self.shadow.remove(task.uid)
            self._rescore(previous.node_name)

    def _on_allocate(self, event: Event) -> None:
        node = self._nodes.get(event.task.node_name)
        if node is not None:
            self.add_task(node, event.task)

    def _on_deallocate(self, event: Event) -> None:
        self.remove_task(event.task)

    # -- column forms ---------------------------------------------------------------------
    # Both answers depend on the node alone, and a node's score changes only when a task
    # on it moves (an event), so they are kept per node, in session order.

    def _open_columns(self, nodes: list[NodeInfo]) -> None:
        self._node_list = nodes
        self._positions = {node.name: i for i, node in enumerate(nodes)}
        self._scores = np.array([self.score(node) for node in nodes], dtype=np.float64)
        passes = np.array([self.overload_reason(node) is None for node in nodes],
                          dtype=np.bool_)
        self._passes = None if bool(passes.all()) else passes
        self._unresolvable = np.zeros(len(nodes), dtype=np.bool_)

    def _rescore(self, node_name: str) -> None:
        position = self._positions.get(node_name)
        if position is not None:
            self._scores[position] = self.score(self._node_list[position])

    def _check_columns(self, columns: NodeColumns) -> None:
        if columns.source is not self._node_list:
            raise VectorFallback("usage: the columns are not the session's nodes")

    def vector_predicate(self, task: TaskInfo, columns: NodeColumns) -> BoolArray | None:
        """:meth:`predicate` for every node: True where it passes (None: everywhere)."""
        self._check_columns(columns)
        return self._passes

    def vector_preempt_predicate(
        self, task: TaskInfo, columns: NodeColumns
    ) -> tuple[BoolArray, BoolArray] | None:
        """:meth:`predicate` as preempt reads it: no failure is resolvable by evicting."""
        self._check_columns(columns)
        return None if self._passes is None else (self._passes, self._unresolvable)

    def vector_node_order(self, task: TaskInfo, columns: NodeColumns,
                          candidates: Candidates) -> FloatArray:
        """:meth:`node_order` for the candidates."""
        self._check_columns(columns)
        scores: FloatArray = candidates.pick(self._scores)
        return scores

    def vector_node_order_many(self, tasks: Sequence[TaskInfo], columns: NodeColumns,
                               candidates: Candidates) -> FloatArray:
        """:meth:`vector_node_order` for several tasks: one row each, all alike."""
        row = self.vector_node_order(tasks[0], columns, candidates)
        rows: FloatArray = np.broadcast_to(row, (len(tasks), len(row)))
        return rows

    def vector_template(self, task: TaskInfo) -> tuple[()]:
        """Every task gets the same answers."""
        return ()
