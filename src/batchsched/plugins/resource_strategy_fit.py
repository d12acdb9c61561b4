"""resource-strategy-fit: per-resource most/least allocated scoring, scarce-resource
avoidance and a proportional predicate (Volcano's ``plugins/resource-strategy-fit``).

Node-order score = **strategy fit** part + **sra** part:

* strategy fit (``resourceStrategyFitWeight``, default 10; 0, or the key with no
  value, turns it off): for
  every resource the task requests (cpu, memory, scalars, ``pods``) that has a
  configured strategy -- an exact name, else the longest ``prefix*`` pattern --
  with request ``r``, node used ``u`` and allocatable ``c`` (Volcano's own
  accounting, current within the session):

  - ``MostAllocated``: ``(u + r) * w / c``; ``LeastAllocated``: ``(c - u - r) * w / c``;
  - ``c == 0``: 0 (the weight still counts); ``u + r > c``: the whole part is 0.

  part = ``sum / sum(w) * 100 * resourceStrategyFitWeight``. A task may set its
  own strategy with the annotations ``volcano.sh/resource-strategy-scoring-type``
  (the type for every resource) and ``volcano.sh/resource-strategy-weight``
  (JSON ``{"resource": weight}``; only those resources count, by exact name; a
  null weight is 0; missing or invalid JSON makes the part 0).
* sra, scarce-resource avoidance (``sra.enable`` and ``sra.weight`` > 0): 0 if
  the node lacks (allocatable 0) any resource the task requests, ``pods``
  included; else ``(1 - have / total) * 100 * sra.weight`` where ``have`` sums the
  ``sra.resourceWeight`` of the listed scarce resources the node has and
  ``total`` sums all of them. Nodes without GPUs score high for CPU-only tasks.

Predicate (``proportional.enable``): a task that requests none of the listed
resources R may use a node only if, after it, the node's idle cpu and memory
still cover ``idle[R] * rate`` for each R the node has (rates from
``proportional.resourceProportion``: ``R.cpu`` in millicores per milli-unit of R,
i.e. cores per unit; ``R.memory`` in 10^6 bytes per milli-unit, i.e. GB per
unit) -- else ``proportional of resource R check failed``,
UnschedulableAndUnresolvable. Resources are checked in the order listed.

The pure functions (:func:`most_allocated_part`, :func:`least_allocated_part`,
:func:`strategy_fit_score`, :func:`sra_score`, :func:`check_proportional`) are
the reference a vectorised implementation is checked against.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from typing import Any

import attrs

from batchsched.api.fit import FitError, FitStatus
from batchsched.api.node import NodeInfo
from batchsched.api.resource import CPU, MEMORY, Resource
from batchsched.api.task import TaskInfo
from batchsched.api.types import FitStatusCode
from batchsched.framework.arguments import Arguments, warn_unreadable
from batchsched.framework.arguments import decode_int as _int
from batchsched.framework.session import Session
from batchsched.kube.go_json import GoJsonError, Int, MapOf, decode
from batchsched.kube.go_strconv import int64
from batchsched.kube.go_strings import trim_space

__all__ = [
    "LEAST_ALLOCATED",
    "MOST_ALLOCATED",
    "ProportionalRates",
    "ResourceStrategy",
    "ResourceStrategyFitPlugin",
    "SraConfig",
    "check_proportional",
    "find_strategy",
    "least_allocated_part",
    "most_allocated_part",
    "proportional_reason",
    "sra_score",
    "strategy_fit_score",
]

PLUGIN_NAME = "resource-strategy-fit"

log = logging.getLogger("batchsched")
MOST_ALLOCATED = "MostAllocated"
LEAST_ALLOCATED = "LeastAllocated"
DEFAULT_WEIGHT = 10
MAX_NODE_SCORE = 100
SCORING_TYPE_ANNOTATION = "volcano.sh/resource-strategy-scoring-type"
SCORING_WEIGHT_ANNOTATION = "volcano.sh/resource-strategy-weight"

#: Proportional rates: resource -> (cpu rate, memory rate).
ProportionalRates = Mapping[str, tuple[float, float]]


@attrs.frozen
class ResourceStrategy:
    """How one resource (or ``prefix*`` family) is scored."""

    type: str = LEAST_ALLOCATED
    weight: int = 1


@attrs.frozen
class SraConfig:
    """Scarce-resource avoidance: ``weight`` 0 turns it off.

    ``weight_sum`` is the total of the listed weights: a resource listed twice in
    ``sra.resources`` counts twice there, as in Volcano (``calculateSraWeight``),
    though it has one weight; by default the weights of ``resources`` added up.
    """

    weight: int = 0
    resources: Mapping[str, int] = attrs.field(factory=dict)
    weight_sum: int = attrs.field(
        default=attrs.Factory(lambda self: sum(self.resources.values()), takes_self=True))


# -- pure scoring functions -------------------------------------------------------------------


def most_allocated_part(request: float, used: float, capacity: float, weight: int) -> float | None:
    """``(used + request) * weight / capacity``; None when the node has too little."""
    if weight == 0 or capacity == 0:
        return 0.0
    final = request + used
    if final > capacity:
        return None
    return final * weight / capacity


def least_allocated_part(request: float, used: float, capacity: float, weight: int) -> float | None:
    """``(capacity - used - request) * weight / capacity``; None when the node has too little."""
    if weight == 0 or capacity == 0:
        return 0.0
    final = request + used
    if final > capacity:
        return None
    return (capacity - final) * weight / capacity


def find_strategy(name: str, strategies: Mapping[str, ResourceStrategy], *,
                  exact_only: bool = False) -> ResourceStrategy | None:
    """The strategy for ``name``: exact key, else (unless ``exact_only``) the longest
    matching ``prefix*`` key."""
    exact = strategies.get(name)
    if exact is not None or exact_only:
        return exact
    best: ResourceStrategy | None = None
    best_len = -1
    for key, strategy in strategies.items():
        if key.endswith("*"):
            prefix = key[:-1]
            if name.startswith(prefix) and len(prefix) > best_len:
                best, best_len = strategy, len(prefix)
    return best


def strategy_fit_score(
    request: Resource,
    allocatable: Resource,
    used: Resource,
    strategies: Mapping[str, ResourceStrategy],
    plugin_weight: int,
    *,
    exact_only: bool = False,
) -> float:
    """The strategy-fit part for one node (see the module docstring); a task's own
    weights (``exact_only``) name resources exactly, without patterns."""
    score = 0.0
    weight_sum = 0
    for name in request.resource_names():
        strategy = find_strategy(name, strategies, exact_only=exact_only)
        if strategy is None:
            continue
        args = (request.get(name), used.get(name), allocatable.get(name), strategy.weight)
        if strategy.type == MOST_ALLOCATED:
            part = most_allocated_part(*args)
        elif strategy.type == LEAST_ALLOCATED:
            part = least_allocated_part(*args)
        else:
            part = 0.0
        if part is None:
            return 0.0
        score += part
        weight_sum = int64(weight_sum + strategy.weight)  # Go's int
    if weight_sum > 0:
        score /= weight_sum
    # Volcano: score *= float64(MaxNodeScore) * float64(weight), one product.
    return score * (float(MAX_NODE_SCORE) * float(plugin_weight))


def sra_score(request: Resource, allocatable: Resource, sra: SraConfig) -> float:
    """The scarce-resource-avoidance part for one node (see the module docstring)."""
    for name in request.resource_names():
        if allocatable.get(name) == 0:
            return 0.0
    have = float(sum(w for name, w in sra.resources.items() if allocatable.get(name) > 0))
    total = sra.weight_sum
    if total > 0:
        have = 1.0 - have / total
    # float64(MaxNodeScore * int64(weight)): the integers multiplied first (in int64).
    return have * float(int64(MAX_NODE_SCORE * sra.weight))


def check_proportional(task: TaskInfo, node: NodeInfo, rates: ProportionalRates) -> str | None:
    """The first proportional resource whose reserve the task would eat into, or None."""
    request = task.resreq
    if any(request.scalars.get(name, 0.0) > 0 for name in rates):
        return None
    idle = node.idle
    for name, (cpu_rate, memory_rate) in rates.items():
        if name not in idle.scalars:
            continue
        amount = idle.scalars[name]
        cpu_reserved = amount * cpu_rate
        memory_reserved = amount * memory_rate * 1000 * 1000
        if (idle.milli_cpu - request.milli_cpu < cpu_reserved
                or idle.memory - request.memory < memory_reserved):
            return name
    return None


def proportional_reason(resource: str) -> str:
    return f"proportional of resource {resource} check failed"


# -- arguments ---------------------------------------------------------------------------------


def _float(value: Any, path: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValueError(f"argument {path}: expected a number, got {value!r}")
    return float(value)


def _str(value: Any, path: str) -> str:
    if not isinstance(value, str):
        raise ValueError(f"argument {path}: expected a string, got {value!r}")
    return value


def _name(key: Any, path: str) -> str:
    """A resource name used as a map key: mapstructure decodes it into a string type
    without weak typing, so a number or boolean key fails Volcano's scheduler."""
    if not isinstance(key, str):
        raise ValueError(f"argument {path}: '[{key}]' expected a resource name (a "
                         f"string), got {type(key).__name__} {key!r}")
    return key


def _bool(value: Any, path: str) -> bool:
    if not isinstance(value, bool):
        raise ValueError(f"argument {path}: expected true or false, got {value!r}")
    return value


def _mapping(value: Any, path: str) -> Mapping[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise ValueError(f"argument {path}: expected a mapping, got {value!r}")
    return value


def _field(obj: Mapping[str, Any], name: str) -> Any:
    """The value of Go struct field ``name`` as mapstructure decodes it: the key spelt
    as the field (``Weight``) first, else a key equal to it in any case."""
    exact = name[:1].upper() + name[1:]
    if exact in obj:
        return obj[exact]
    for key, value in obj.items():
        if str(key).lower() == name.lower():
            return value
    return None


def _valid_pattern(key: str) -> bool:
    if "*" not in key:
        return True
    if key == "*":
        # Volcano's words (it logs them too).
        log.warning("plugin %r: argument 'resources.*': a single asterisk '*' is not "
                    "supported as default strategy; use specific resource patterns like "
                    "'cloudml.gpu/*'; pattern ignored", PLUGIN_NAME)
        return False
    if key.endswith("*") and key.count("*") == 1:
        return True
    log.warning("plugin %r: argument 'resources.%s': invalid wildcard pattern: only a "
                "single trailing asterisk is supported (e.g. 'cloudml.gpu/*'); pattern "
                "ignored", PLUGIN_NAME, key)
    return False


def _warn_unread(raw: Mapping[Any, Any], path: str, fields: Iterable[str]) -> None:
    """Log the keys of block ``path`` that name none of its ``fields`` (in any case, as
    mapstructure matches them): Volcano drops them silently, a typo included."""
    known = {field.lower() for field in fields}
    unread = [f"{path}.{key}" for key in raw if str(key).lower() not in known]
    if unread:
        Arguments(dict.fromkeys(unread)).warn_unknown(
            PLUGIN_NAME, [f"{path}.{field}" for field in fields])


def read_strategies(arguments: Arguments) -> dict[str, ResourceStrategy]:
    """``resources``: absent or empty -> cpu and memory LeastAllocated, weight 1."""
    raw = _mapping(arguments.get("resources"), "resources")
    if not raw:
        return {CPU: ResourceStrategy(), MEMORY: ResourceStrategy()}
    out: dict[str, ResourceStrategy] = {}
    for key, value in raw.items():
        name = _name(key, "resources")
        path = f"resources.{name}"
        spec = _mapping(value, path)
        _warn_unread(spec, path, ("type", "weight"))
        kind = _field(spec, "type")
        kind = _str(kind, f"{path}.type") if kind is not None else ""
        weight = _field(spec, "weight")
        weight = _int(weight, f"{path}.weight") if weight is not None else 0
        if not _valid_pattern(name):
            continue
        if kind not in (MOST_ALLOCATED, LEAST_ALLOCATED):
            if kind:  # unset is LeastAllocated by design; anything else is a slip
                warn_unreadable(PLUGIN_NAME, f"{path}.type", kind,
                                f"{LEAST_ALLOCATED} or {MOST_ALLOCATED}", LEAST_ALLOCATED)
            kind = LEAST_ALLOCATED
        if weight <= 0:
            if _field(spec, "weight") is not None:
                warn_unreadable(PLUGIN_NAME, f"{path}.weight", weight, "above 0", 1)
            weight = 1
        out[name] = ResourceStrategy(kind, weight)
    return out


def _names(text: str) -> list[str]:
    return [name for name in map(trim_space, text.split(",")) if name]


# Volcano decodes each block whole (``framework.Get``, mapstructure) before it looks
# at ``enable``: a value of the wrong type fails the scheduler even in a disabled
# block, and a key written without a value decodes as the zero value.


def read_sra(arguments: Arguments) -> SraConfig:
    raw = _mapping(arguments.get("sra"), "sra")
    _warn_unread(raw, "sra", ("enable", "resources", "weight", "resourceWeight"))
    enable = _field(raw, "enable")
    enabled = _bool(enable, "sra.enable") if enable is not None else False
    names = _field(raw, "resources")
    listed = _names(_str(names, "sra.resources") if names is not None else "")
    weight = _field(raw, "weight")
    weight = _int(weight, "sra.weight") if weight is not None else 0
    weights = {_name(key, "sra.resourceWeight"): _int(value, f"sra.resourceWeight.{key}")
               if value is not None else 0
               for key, value in _mapping(_field(raw, "resourceWeight"),
                                          "sra.resourceWeight").items()}
    if not enabled:
        return SraConfig()
    resources: dict[str, int] = {}
    weight_sum = 0
    for name in listed:
        w = weights.get(name, 1)
        if w < 0:
            warn_unreadable(PLUGIN_NAME, f"sra.resourceWeight.{name}", w, "at least 0", 1)
            w = 1
        resources[name] = w
        weight_sum = int64(weight_sum + resources[name])  # Go's int
    return SraConfig(weight, resources, weight_sum)


def read_proportional(arguments: Arguments) -> dict[str, tuple[float, float]] | None:
    """None unless ``proportional.enable`` is true."""
    raw = _mapping(arguments.get("proportional"), "proportional")
    _warn_unread(raw, "proportional", ("enable", "resources", "resourceProportion"))
    enable = _field(raw, "enable")
    enabled = _bool(enable, "proportional.enable") if enable is not None else False
    names = _field(raw, "resources")
    listed = _names(_str(names, "proportional.resources") if names is not None else "")
    rates_raw = {
        _name(key, "proportional.resourceProportion"):
        _float(value, f"proportional.resourceProportion.{key}")
        if value is not None else 0.0
        for key, value in _mapping(_field(raw, "resourceProportion"),
                                   "proportional.resourceProportion").items()}
    if not enabled:
        return None
    rates: dict[str, tuple[float, float]] = {}
    for name in listed:
        pair = []
        for part in ("cpu", "memory"):
            rate = rates_raw.get(f"{name}.{part}", 1.0)
            if rate < 0:
                warn_unreadable(PLUGIN_NAME, f"proportional.resourceProportion.{name}.{part}",
                                rate, "at least 0", 1.0)
                rate = 1.0
            pair.append(rate)
        rates[name] = (pair[0], pair[1])
    return rates


def _pod_level(task: TaskInfo) -> tuple[str, dict[str, int] | None] | None:
    """The task's own strategy: (type, weights), weights None when unreadable."""
    kind = task.annotations.get(SCORING_TYPE_ANNOTATION, "")
    if not kind:
        return None
    text = task.annotations.get(SCORING_WEIGHT_ANNOTATION, "")
    # Go's json.Unmarshal into map[ResourceName]int: a null is the zero weight, and
    # anything but an integer of int64 (a fraction, a string, a boolean) an error,
    # in every value of a key given twice (the last is kept).
    try:
        weights = decode(text, _WEIGHTS, what=SCORING_WEIGHT_ANNOTATION) if text else None
    except GoJsonError:
        return kind, None
    if weights is None:
        return kind, None
    return kind, dict(weights)


_WEIGHTS = MapOf(Int(64))


class ResourceStrategyFitPlugin:
    """Volcano's resource-strategy-fit plugin (see the module docstring)."""

    name = PLUGIN_NAME

    def __init__(self, arguments: Arguments) -> None:
        self.arguments = arguments
        weight = arguments.get("resourceStrategyFitWeight")
        if weight is not None:
            weight = _int(weight, "resourceStrategyFitWeight")
            if weight < 0:
                warn_unreadable(PLUGIN_NAME, "resourceStrategyFitWeight", weight,
                                "at least 0", DEFAULT_WEIGHT)
                weight = DEFAULT_WEIGHT
        else:
            # Go's Get[int] decodes a key written without a value as 0 (the part off).
            weight = 0 if "resourceStrategyFitWeight" in arguments else DEFAULT_WEIGHT
        self.weight = weight
        self.strategies = read_strategies(arguments)
        self.sra = read_sra(arguments)
        self.proportional = read_proportional(arguments)
        arguments.warn_unknown(self.name, ["resourceStrategyFitWeight", "resources", "sra",
                                           "proportional"])

    def score(self, task: TaskInfo, node: NodeInfo) -> float:
        """Strategy-fit part plus sra part for one node."""
        total = 0.0
        if self.weight > 0:
            strategies: Mapping[str, ResourceStrategy] = self.strategies
            pod_level = _pod_level(task)
            if pod_level is not None:
                kind, weights = pod_level
                strategies = {n: ResourceStrategy(kind, w) for n, w in (weights or {}).items()}
            if pod_level is None or pod_level[1] is not None:
                total += strategy_fit_score(
                    task.resreq, node.allocatable, node.used, strategies, self.weight,
                    exact_only=pod_level is not None)
        if self.sra.weight > 0:
            total += sra_score(task.resreq, node.allocatable, self.sra)
        return total

    def predicate(self, task: TaskInfo, node: NodeInfo) -> FitError | None:
        failed = check_proportional(task, node, self.proportional or {})
        if failed is None:
            return None
        return FitError(task.namespace, task.name, node.name, [FitStatus(
            FitStatusCode.UNSCHEDULABLE_AND_UNRESOLVABLE, proportional_reason(failed), self.name)])

    def on_session_open(self, ssn: Session) -> None:
        if self.proportional is not None:
            ssn.add_predicate_fn(self.name, self.predicate)
        if self.weight > 0 or self.sra.weight > 0:
            ssn.add_node_order_fn(self.name, self.score)

    def on_session_close(self, ssn: Session) -> None:
        pass
