"""The kube-scheduler framework: a profile's plugins at each extension point (seed 002).

A :class:`Profile` names, per extension point, the plugins enabled there (Score
plugins with a weight) and each plugin's arguments; a :class:`Framework` builds
them from a :class:`~batchsched.kubesched.registry.Registry` once and runs
them, with kube-scheduler's rules:

* **PreFilter** runs every plugin; a rejection ends the cycle; ``Skip`` leaves
  that plugin's Filter out for this pod. ``add_pod`` / ``remove_pod`` (the
  PreFilter extensions) update a cloned state for dry runs.
* **Filter** runs the plugins in order on one node and stops at the first that
  does not succeed.
* **PostFilter** (no feasible node) asks the plugins in order for a nominated node.
* **Score**: each plugin scores every node 0..100, its **NormalizeScore** (if it
  has one) may rescale them, a score out of range is an error naming the
  plugin; scores are multiplied by the plugin's weight (0 reads as 1) and
  summed. Weights are checked when the framework is built: if their total
  times 100 could overflow a 64-bit score, building fails.
* **Reserve** runs in order; a failure unreserves every Reserve plugin, last
  first. **Unreserve** always runs all of them, last first.
* **Permit**: a rejection ends the cycle; ``Wait`` (with a timeout, at most 15
  minutes) parks the pod in :attr:`Framework.waiting_pods` until every waiting
  plugin allows it, one rejects it, or a timeout passes.
* **PreBind**, **Bind** (the first plugin that does not ``Skip`` binds),
  **PostBind** (informational).
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

import attrs

from batchsched.api.node import NodeInfo
from batchsched.api.task import TaskInfo
from batchsched.errors import ConfigError, PluginError
from batchsched.framework.arguments import format_duration_ns
from batchsched.kube.go_strconv import quote
from batchsched.kubesched.cycle_state import CycleState
from batchsched.kubesched.events import Registration, registrations_of
from batchsched.kubesched.registry import Registry
from batchsched.kubesched.status import Code, Status

__all__ = [
    "EXTENSION_POINTS",
    "MAX_NODE_SCORE",
    "MAX_TOTAL_SCORE",
    "MAX_WAIT_SECONDS",
    "Framework",
    "PluginRef",
    "Profile",
    "ScoreError",
    "WaitingPod",
    "WaitingPods",
]

log = logging.getLogger("batchsched")

MAX_NODE_SCORE = 100
MIN_NODE_SCORE = 0
MAX_TOTAL_SCORE = 2**63 - 1
#: kube-scheduler's longest Permit wait.
MAX_WAIT_SECONDS = 15 * 60.0
#: kube-scheduler's words for a status a point may not give (its framework runtime).
_ERROR_WORDING = {
    "preFilter": "running PreFilter plugin {name}: {cause}",
    "filter": "running {name} filter plugin: {cause}",
    "postFilter": "{cause}",
    "preScore": "running PreScore plugin {name}: {cause}",
    "reserve": "running Reserve plugin {name}: {cause}",
    "permit": "running Permit plugin {name}: {cause}",
    "preBind": "running PreBind plugin {name}: {cause}",
    "bind": "running Bind plugin {name}: {cause}",
}

#: Extension point (profile key, kube-scheduler's spelling) -> the method a plugin defines.
#: The points whose plugins can turn a pod down: they say which events may undo it
#: (kube's ``EnqueueExtensions``, asked of the plugins of these points only).
_REJECTING_POINTS = ("preEnqueue", "preFilter", "filter", "reserve", "permit")

EXTENSION_POINTS: dict[str, str] = {
    "preEnqueue": "pre_enqueue",
    "queueSort": "less",
    "preFilter": "pre_filter",
    "filter": "filter",
    "postFilter": "post_filter",
    "preScore": "pre_score",
    "score": "score",
    "reserve": "reserve",
    "permit": "permit",
    "preBind": "pre_bind",
    "bind": "bind",
    "postBind": "post_bind",
}


class ScoreError(PluginError):
    """A Score plugin answered an error status (it did not raise): kube-scheduler fails
    the pod's cycle; Volcano's node order logs it and gives the task no scores."""


@attrs.frozen
class PluginRef:
    """A plugin enabled at an extension point (``weight`` counts for Score only)."""

    name: str
    weight: int = 0


@attrs.frozen
class Profile:
    """kube-scheduler's ``KubeSchedulerProfile``: which plugins run where.

    ``from_mapping`` reads its YAML shape::

        schedulerName: gang-scheduler
        plugins:
          queueSort: {enabled: [{name: Coscheduling}]}
          permit:    {enabled: [{name: Coscheduling}]}
          score:     {enabled: [{name: LeastAllocated, weight: 2}]}
        pluginConfig:
        - {name: Coscheduling, args: {permitWaitingTimeSeconds: 10}}
        percentageOfNodesToScore: 30

    ``percentageOfNodesToScore`` (0 to 100; unset: the scheduler's own, see
    :class:`~batchsched.kubesched.scheduler.PodScheduler`) caps how many feasible
    nodes a pod's filtering looks for, as kube-scheduler's profile field does.
    """

    scheduler_name: str = "default-scheduler"
    plugins: Mapping[str, tuple[PluginRef, ...]] = attrs.field(factory=dict)
    plugin_args: Mapping[str, Mapping[str, Any]] = attrs.field(factory=dict)
    percentage_of_nodes_to_score: int | None = None

    @classmethod
    def from_mapping(cls, raw: Mapping[str, Any], *, source: str = "<profile>") -> Profile:
        raw = _mapping(raw, source, "")
        known = {"schedulerName", "plugins", "pluginConfig", "percentageOfNodesToScore"}
        for key in raw:
            if key not in known:
                raise ConfigError(f"unknown key {key!r}", source=source, key=str(key),
                                  known=sorted(known))
        plugins: dict[str, tuple[PluginRef, ...]] = {}
        for point, raw_entry in _mapping(raw.get("plugins"), source, "plugins").items():
            if point not in EXTENSION_POINTS:
                raise ConfigError(f"unknown extension point {point!r}", source=source,
                                  key=f"plugins.{point}", known=sorted(EXTENSION_POINTS))
            entry = _mapping(raw_entry, source, f"plugins.{point}")
            for key in entry:
                if key != "enabled":
                    # A profile lists its plugins in full: there are no defaults to
                    # disable (kube-scheduler merges enabled and disabled into its own).
                    raise ConfigError(f"unknown key {key!r}", source=source,
                                      key=f"plugins.{point}.{key}", known=["enabled"])
            enabled = entry.get("enabled") or []
            if not isinstance(enabled, list):
                raise ConfigError(f"must be a list, not {type(enabled).__name__}",
                                  source=source, key=f"plugins.{point}.enabled")
            refs: list[PluginRef] = []
            for i, item in enumerate(enabled):
                if not isinstance(item, Mapping) or not isinstance(item.get("name"), str):
                    raise ConfigError("must be a mapping with a name", source=source,
                                      key=f"plugins.{point}.enabled[{i}]")
                if any(ref.name == item["name"] for ref in refs):
                    raise ConfigError(f"plugin {item['name']!r} is enabled twice at {point}",
                                      source=source, key=f"plugins.{point}.enabled[{i}]")
                weight = item.get("weight", 0)
                if isinstance(weight, bool) or not isinstance(weight, int) or weight < 0:
                    raise ConfigError(f"weight must be a non-negative integer, not {weight!r}",
                                      source=source, key=f"plugins.{point}.enabled[{i}].weight")
                refs.append(PluginRef(item["name"], weight))
            plugins[point] = tuple(refs)
        args: dict[str, Mapping[str, Any]] = {}
        configs = raw.get("pluginConfig") or []
        if not isinstance(configs, list):
            raise ConfigError(f"must be a list, not {type(configs).__name__}", source=source,
                              key="pluginConfig")
        for i, item in enumerate(configs):
            if not isinstance(item, Mapping) or not isinstance(item.get("name"), str):
                raise ConfigError("must be a mapping with a name", source=source,
                                  key=f"pluginConfig[{i}]")
            if item["name"] in args:
                raise ConfigError(f"plugin {item['name']!r} is configured twice", source=source,
                                  key=f"pluginConfig[{i}]")
            args[item["name"]] = dict(_mapping(item.get("args"), source,
                                               f"pluginConfig[{i}].args"))
        percentage = raw.get("percentageOfNodesToScore")
        if percentage is not None:
            percentage = check_percentage_of_nodes_to_score(
                percentage, source=source, key="percentageOfNodesToScore")
        # kube-scheduler defaults a profile's missing (or null) name; an empty one fails
        # its validation.
        name = raw.get("schedulerName")
        if name is None:
            name = "default-scheduler"
        elif not isinstance(name, str) or not name:
            raise ConfigError("scheduler name is needed" if name == "" else
                              f"must be a string, not {name!r}", source=source,
                              key="schedulerName")
        return cls(name, plugins, args, percentage)


def check_percentage_of_nodes_to_score(value: Any, *, source: str, key: str) -> int:
    """``value`` as kube-scheduler's configuration validation takes it (an integer from
    0 to 100), else a ConfigError at ``key``."""
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= 100:
        raise ConfigError(f"must be an integer from 0 to 100, not {value!r}", source=source,
                          key=key)
    return value


def _mapping(value: Any, source: str, key: str) -> Mapping[str, Any]:
    """A mapping of a profile (absent or null is empty), else a ConfigError at ``key``."""
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise ConfigError(f"must be a mapping, not {type(value).__name__}", source=source,
                          key=key)
    return value


def _with_text_reasons(name: str, point: str, status: Status) -> Status:
    """``status`` if its reasons are texts (what the queue shows and the messages
    join), else a :class:`PluginError` naming the plugin (``Status.error(exc)`` takes
    an exception; a status built field by field may hold anything)."""
    reasons = status.reasons
    if type(reasons) is tuple and not reasons:
        return status  # most answers (a plain success): nothing to check
    if not isinstance(reasons, (tuple, list)) or not all(isinstance(r, str) for r in reasons):
        raise PluginError(f"kube plugin {name!r} answered a Status whose reasons are "
                          f"{reasons!r} at {point}, not texts", plugin=name, point=point)
    # A list (Go's []string) is taken as the tuple the class holds.
    return status if isinstance(reasons, tuple) else attrs.evolve(status, reasons=tuple(reasons))


@attrs.define
class WaitingPod:
    """A pod parked at Permit: the plugins still to allow it, each with a deadline."""

    pod: TaskInfo
    node_name: str
    pending: dict[str, float]
    decision: Status | None = None
    #: Each plugin's wait in seconds, as it asked (capped): the timeout message says it.
    waits: dict[str, float] = attrs.field(factory=dict)

    def allow(self, plugin: str) -> bool:
        """``plugin`` allows the pod; True once no plugin is left to wait for."""
        if self.decision is not None:
            return self.decision.is_success()
        self.pending.pop(plugin, None)
        if not self.pending:
            self.decision = Status.success()
        return self.decision is not None

    def reject(self, plugin: str, message: str) -> bool:
        """Reject the pod (False if it was already decided)."""
        if self.decision is not None:
            return False
        self.decision = Status.unschedulable(message, plugin=plugin)
        return True

    def expire(self, now: float) -> bool:
        """Reject the pod if a plugin's deadline passed; True if that happened."""
        for plugin, deadline in sorted(self.pending.items(), key=lambda item: item[1]):
            if deadline <= now:
                waited = format_duration_ns(round(self.waits.get(plugin, 0.0) * 1e9))
                return self.reject(plugin, f"rejected due to timeout after waiting {waited} "
                                           f"at plugin {plugin}")
        return False


class WaitingPods:
    """The pods waiting at Permit, by pod uid (kube-scheduler's ``waitingPodsMap``)."""

    def __init__(self) -> None:
        self._pods: dict[str, WaitingPod] = {}

    def add(self, waiting: WaitingPod) -> None:
        self._pods[waiting.pod.uid] = waiting

    def remove(self, uid: str) -> WaitingPod | None:
        return self._pods.pop(uid, None)

    def get(self, uid: str) -> WaitingPod | None:
        return self._pods.get(uid)

    def __iter__(self) -> Iterator[WaitingPod]:
        return iter(list(self._pods.values()))

    def __len__(self) -> int:
        return len(self._pods)


class Framework:
    """A profile's plugins, built once, run per pod (see the module docstring).

    ``handle`` is what plugins receive at construction besides their arguments
    (kube-scheduler's framework handle): this framework, whose ``waiting_pods``,
    ``cluster`` (the cluster the current cycle sees), ``host`` (the cache) and
    ``now`` they may read.
    """

    def __init__(self, registry: Registry, profile: Profile) -> None:
        self.profile = profile
        self.waiting_pods = WaitingPods()
        self.cluster: Any = None
        #: The host's cache, which the built-in DefaultBinder binds through.
        self.host: Any = None
        self.now = 0.0
        self.instances: dict[str, Any] = {}
        self.points: dict[str, list[tuple[str, Any]]] = {}
        self.weights: dict[str, int] = {}
        for point, refs in profile.plugins.items():
            method = EXTENSION_POINTS[point]
            chosen = []
            for ref in refs:
                plugin = self._instance(registry, ref.name)
                if not callable(getattr(plugin, method, None)):
                    raise PluginError(f"kube plugin {ref.name!r} is enabled at {point} but has "
                                      f"no {method}()", plugin=ref.name, point=point)
                chosen.append((ref.name, plugin))
                if point == "score":
                    self.weights[ref.name] = ref.weight or 1
            self.points[point] = chosen
        #: The events each plugin that can turn a pod down registered, with their
        #: queueing hints (:mod:`batchsched.kubesched.events`), in profile order.
        self.registrations: list[Registration] = []
        seen: set[str] = set()
        for point in _REJECTING_POINTS:
            for name, plugin in self.points.get(point, ()):
                if name not in seen:
                    seen.add(name)
                    register = getattr(plugin, "events_to_register", None)
                    given = None if register is None else self._call(
                        name, "eventsToRegister", lambda ask=register: list(ask()))
                    self.registrations.extend(registrations_of(name, given))
        if len(self.points.get("queueSort", ())) > 1:
            raise PluginError("only one queueSort plugin may be enabled", point="queueSort")
        total = 0
        for name, weight in self.weights.items():
            if weight * MAX_NODE_SCORE > MAX_TOTAL_SCORE - total:
                raise PluginError("total score of Score plugins could overflow", plugin=name,
                                  point="score")
            total += weight * MAX_NODE_SCORE

    def _instance(self, registry: Registry, name: str) -> Any:
        if name not in self.instances:
            args = self.profile.plugin_args.get(name, {})
            try:
                self.instances[name] = registry[name](args, self)
            except PluginError:
                raise
            except Exception as exc:
                raise PluginError(f"kube plugin {name!r} could not be built: {exc}",
                                  plugin=name) from exc
        return self.instances[name]

    def plugins_at(self, point: str) -> list[tuple[str, Any]]:
        return self.points.get(point, [])

    def _call(self, name: str, point: str, fn: Callable[..., Any], *args: Any) -> Any:
        try:
            return fn(*args)
        except Exception as exc:
            raise PluginError(f"kube plugin {name!r} raised at {point}: "
                              f"{type(exc).__name__}: {exc}", plugin=name, point=point) from exc

    def _status(self, name: str, point: str, fn: Callable[..., Any], *args: Any) -> Status:
        """A plugin call that must answer a :class:`Status` (anything else is named)."""
        status = self._call(name, point, fn, *args)
        if not isinstance(status, Status):
            raise PluginError(f"kube plugin {name!r} answered {status!r} at {point}, "
                              "not a Status", plugin=name, point=point)
        return _with_text_reasons(name, point, status)

    @staticmethod
    def _as_error(name: str, point: str, status: Status) -> Status:
        """A status a point may not answer (Wait at Filter, say) is an error there, as
        kube-scheduler makes it one, in its words (``running "F" filter plugin: ...``;
        a PostFilter's message as it is): the pod is retried after a backoff."""
        # Go's Status.AsError: no error for Success, Wait and Skip, which %w prints so.
        cause = "%!w(<nil>)" if status.is_wait() or status.is_skip() else status.message
        template = _ERROR_WORDING.get(point, "{cause}")
        return Status.error(template.format(name=quote(name), cause=cause), plugin=name)

    # -- queueing -------------------------------------------------------------------------

    def run_pre_enqueue(self, pod: TaskInfo) -> Status:
        for name, plugin in self.plugins_at("preEnqueue"):
            status = self._status(name, "preEnqueue", plugin.pre_enqueue, pod)
            if not status.is_success():
                return status.with_plugin(name)
        return Status.success()

    def queue_sort_less(self) -> Callable[[TaskInfo, TaskInfo], bool] | None:
        """The QueueSort plugin's ``less`` as it is: the queue calls it at every
        comparison (:class:`~batchsched.kubesched.scheduler.PodScheduler` names the
        plugin when it raises)."""
        plugins = self.plugins_at("queueSort")
        if not plugins:
            return None
        less: Callable[[TaskInfo, TaskInfo], bool] = plugins[0][1].less
        return less

    def queue_sort_name(self) -> str:
        """The QueueSort plugin's name ("" when the profile has none)."""
        plugins = self.plugins_at("queueSort")
        return plugins[0][0] if plugins else ""

    # -- filtering -------------------------------------------------------------------------

    def run_pre_filter(self, state: CycleState, pod: TaskInfo) -> Status:
        """Every PreFilter plugin. A plugin may answer a Status, or ``(node names or
        None, Status)`` as kube-scheduler's ``PreFilterResult``: the nodes it leaves
        (None: all), intersected over the plugins into ``state.pre_filter_nodes``."""
        state.pre_filter_nodes = None
        state.pre_filter_node_plugins = ()
        state.pre_filter_rejectors = ()
        # A plain Unschedulable lets the other PreFilter plugins run (preemption may
        # still help, and they may find the pod unresolvable): kubernetes#119770. The
        # last such answer is the one returned, as kube's ``returnStatus``.
        rejected: Status | None = None
        for name, plugin in self.plugins_at("preFilter"):
            answer = self._call(name, "preFilter", plugin.pre_filter, state, pod)
            nodes: Any = None
            if isinstance(answer, tuple) and len(answer) == 2:
                nodes, answer = answer
            if not isinstance(answer, Status) or not (
                    nodes is None or isinstance(nodes, (set, frozenset, list, tuple))):
                raise PluginError(f"kube plugin {name!r} answered {answer!r} at preFilter, "
                                  "not a Status or (node names, Status)", plugin=name,
                                  point="preFilter")
            status = _with_text_reasons(name, "preFilter", answer)
            if status.is_skip():
                state.skip_filter_plugins.add(name)
                continue
            if not status.is_success():
                if status.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE:
                    state.pre_filter_rejectors = (name,)
                    return status.with_plugin(name)
                if status.is_rejected():
                    rejected = status.with_plugin(name)
                    continue
                return self._as_error(name, "preFilter", status)
            if nodes is not None:
                kept = frozenset(nodes) if state.pre_filter_nodes is None \
                    else state.pre_filter_nodes & frozenset(nodes)
                state.pre_filter_nodes = kept
                state.pre_filter_node_plugins = tuple(
                    sorted({*state.pre_filter_node_plugins, name}))
                if not kept:
                    names = state.pre_filter_node_plugins
                    message = (f"node(s) didn't satisfy plugin {names[0]}" if len(names) == 1
                               else f"node(s) didn't satisfy plugin(s) [{' '.join(names)}] "
                                    "simultaneously")
                    state.pre_filter_rejectors = names
                    return Status.unschedulable(message, plugin=name, unresolvable=True)
        # kube's diagnosis: the plugins that narrowed the nodes, and the last that
        # turned the pod down.
        state.pre_filter_rejectors = state.pre_filter_node_plugins + (
            (rejected.plugin,) if rejected is not None else ())
        return rejected or Status.success()

    def run_pre_filter_add_pod(self, state: CycleState, pod: TaskInfo, added: TaskInfo,
                               node: NodeInfo) -> Status:
        return self._pre_filter_extension(state, pod, added, node, "add_pod")

    def run_pre_filter_remove_pod(self, state: CycleState, pod: TaskInfo, removed: TaskInfo,
                                  node: NodeInfo) -> Status:
        return self._pre_filter_extension(state, pod, removed, node, "remove_pod")

    def _pre_filter_extension(self, state: CycleState, pod: TaskInfo, other: TaskInfo,
                              node: NodeInfo, method: str) -> Status:
        for name, plugin in self.plugins_at("preFilter"):
            fn = getattr(plugin, method, None)
            if fn is None or name in state.skip_filter_plugins:
                continue
            status = self._status(name, "preFilter", fn, state, pod, other, node)
            if not status.is_success():
                return status.with_plugin(name)
        return Status.success()

    def run_filter(self, state: CycleState, pod: TaskInfo, node: NodeInfo) -> Status:
        for name, plugin in self.plugins_at("filter"):
            if name in state.skip_filter_plugins:
                continue
            status = self._status(name, "filter", plugin.filter, state, pod, node)
            if not status.is_success():
                if status.is_rejected():
                    return status.with_plugin(name)
                return self._as_error(name, "filter", status)
        return Status.success()

    def run_post_filter(self, state: CycleState, pod: TaskInfo,
                        statuses: Mapping[str, Status]) -> tuple[str | None, Status]:
        """The node a PostFilter plugin nominates (kube's preemption), if any: the
        plugins run in order until one succeeds, finds the pod unresolvable, or
        errs (kube-scheduler's ``RunPostFilterPlugins``). When every plugin rejects
        the pod, the status carries all their reasons and names the first of them."""
        # The last nomination a rejecting plugin still made ("" clears the pod's), as
        # kube keeps a rejecting plugin's non-noop PostFilterResult.
        kept: str | None = None
        reasons: list[str] = []
        rejector = ""
        for name, plugin in self.plugins_at("postFilter"):
            answer = self._call(name, "postFilter", plugin.post_filter, state, pod, statuses)
            if not (isinstance(answer, tuple) and len(answer) == 2
                    and isinstance(answer[1], Status)
                    and (answer[0] is None or isinstance(answer[0], str))):
                raise PluginError(f"kube plugin {name!r} answered {answer!r} at postFilter, "
                                  "not (nominated node or None, Status)", plugin=name,
                                  point="postFilter")
            nominated, status = answer
            status = _with_text_reasons(name, "postFilter", status)
            if status.is_success():
                return nominated, status
            if status.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE:
                return nominated, status.with_plugin(name)
            if not status.is_rejected():
                return None, self._as_error(name, "postFilter", status)
            if nominated is not None:
                kept = nominated
            reasons.extend(status.reasons)
            rejector = rejector or name
        return kept, Status(Code.UNSCHEDULABLE, tuple(reasons), rejector)

    # -- scoring ---------------------------------------------------------------------------

    def run_pre_score(self, state: CycleState, pod: TaskInfo,
                      nodes: Sequence[NodeInfo]) -> Status:
        """Success, or an error (kube-scheduler makes any other answer one)."""
        for name, plugin in self.plugins_at("preScore"):
            status = self._status(name, "preScore", plugin.pre_score, state, pod, nodes)
            if status.is_skip():
                state.skip_score_plugins.add(name)
            elif not status.is_success():
                return self._as_error(name, "preScore", status)
        return Status.success()

    def run_score(self, state: CycleState, pod: TaskInfo,
                  nodes: Sequence[NodeInfo]) -> dict[str, int]:
        """Each node's weighted total; a plugin's error or out-of-range score raises
        :class:`PluginError` naming it. In kube-scheduler's three passes
        (``RunScorePlugins``): every Score on every node (node by node), then every
        NormalizeScore, then the range check and the weights, so that an error of an
        earlier pass is the one reported."""
        totals = {node.name: 0 for node in nodes}
        scoring = [(name, plugin) for name, plugin in self.plugins_at("score")
                   if name not in state.skip_score_plugins]
        scores: dict[str, dict[str, int]] = {name: {} for name, _ in scoring}
        for node in nodes:
            for name, plugin in scoring:
                scores[name][node.name] = self._score_of(name, plugin, state, pod, node)
        for name, plugin in scoring:
            normalize = getattr(plugin, "normalize_score", None)
            if normalize is None:
                continue
            status = self._status(name, "score", normalize, state, pod, scores[name])
            if not status.is_success():
                raise ScoreError(f"running Normalize on Score plugins: plugin {quote(name)} "
                                 f"failed with: {status.message}", plugin=name, point="score")
            if scores[name].keys() != totals.keys():
                # kube hands NormalizeScore a list it may only rescale in place.
                odd = sorted(map(repr, scores[name].keys() ^ totals.keys()))
                raise PluginError(f"kube plugin {name!r} normalized the scores to other "
                                  f"nodes than those scored ({', '.join(odd)})",
                                  plugin=name, point="score")
        for name, _ in scoring:
            weight = self.weights[name]
            for node_name, score in scores[name].items():
                if not isinstance(score, (int, float)) or isinstance(score, bool) \
                        or not math.isfinite(score):
                    raise PluginError(f"kube plugin {name!r} normalized the score of node "
                                      f"{node_name} to {score!r}, not a number",
                                      plugin=name, point="score")
                if not MIN_NODE_SCORE <= score <= MAX_NODE_SCORE:
                    raise PluginError(
                        f"applying score defaultWeights on Score plugins: plugin {quote(name)} "
                        f"returns an invalid score {score}, it should in the range of "
                        f"[{MIN_NODE_SCORE}, {MAX_NODE_SCORE}] after normalizing",
                        plugin=name, point="score")
                totals[node_name] += score * weight
        return totals

    def _score_of(self, name: str, plugin: Any, state: CycleState, pod: TaskInfo,
                  node: NodeInfo) -> int:
        answer = self._call(name, "score", plugin.score, state, pod, node)
        if not (isinstance(answer, tuple) and len(answer) == 2
                and isinstance(answer[1], Status)
                and isinstance(answer[0], (int, float))
                and not isinstance(answer[0], bool)):
            raise PluginError(f"kube plugin {name!r} answered {answer!r} at score, "
                              "not (score, Status)", plugin=name, point="score")
        score, status = answer
        status = _with_text_reasons(name, "score", status)
        if not status.is_success():
            raise ScoreError(f"running Score plugins: plugin {quote(name)} failed "
                             f"with: {status.message}", plugin=name, point="score")
        if isinstance(score, float) and not math.isfinite(score):
            raise PluginError(f"kube plugin {name!r} answered the score {score} for "
                              f"node {node.name}, not an integer", plugin=name,
                              point="score")
        return int(score)

    # -- reserving and permitting ------------------------------------------------------------

    def run_reserve(self, state: CycleState, pod: TaskInfo, node_name: str) -> Status:
        """The first failure ends Reserve; the caller then runs :meth:`run_unreserve`
        (once), as kube-scheduler's ``RunReservePluginsReserve`` leaves it to."""
        for name, plugin in self.plugins_at("reserve"):
            status = self._status(name, "reserve", plugin.reserve, state, pod, node_name)
            if not status.is_success():
                return status.with_plugin(name) if status.is_rejected() \
                    else self._as_error(name, "reserve", status)
        return Status.success()

    def run_unreserve(self, state: CycleState, pod: TaskInfo, node_name: str) -> None:
        """Every Reserve plugin's Unreserve, last first; one that raises is logged and
        the others still run (Unreserve cannot fail in kube-scheduler)."""
        for name, plugin in reversed(self.plugins_at("reserve")):
            unreserve = getattr(plugin, "unreserve", None)
            if unreserve is None:
                continue
            try:
                self._call(name, "reserve", unreserve, state, pod, node_name)
            except PluginError as exc:
                log.warning("batchsched: unreserving %s: %s", pod.uid, exc)

    def run_permit(self, state: CycleState, pod: TaskInfo, node_name: str) -> Status:
        """Success, a rejection, or Wait (the pod is then in :attr:`waiting_pods`)."""
        waits: dict[str, float] = {}
        deadlines: dict[str, float] = {}
        for name, plugin in self.plugins_at("permit"):
            answer = self._call(name, "permit", plugin.permit, state, pod, node_name)
            if not (isinstance(answer, tuple) and len(answer) == 2
                    and isinstance(answer[0], Status)):
                raise PluginError(f"kube plugin {name!r} answered {answer!r} at permit, not "
                                  "(Status, timeout seconds)", plugin=name, point="permit")
            status: Status = _with_text_reasons(name, "permit", answer[0])
            timeout = answer[1]
            if status.is_wait():
                if not isinstance(timeout, (int, float)) or isinstance(timeout, bool) \
                        or math.isnan(timeout):
                    raise PluginError(f"kube plugin {name!r} answered Wait with the timeout "
                                      f"{timeout!r}, not a number of seconds", plugin=name,
                                      point="permit")
                waits[name] = min(max(float(timeout), 0.0), MAX_WAIT_SECONDS)
                deadlines[name] = self.now + waits[name]
            elif not status.is_success():
                if not status.is_rejected():
                    return self._as_error(name, "permit", status)
                # kube's RunPermitPlugins: the plugin's own status (code and message).
                return status.with_plugin(name)
        if waits:
            self.waiting_pods.add(WaitingPod(pod, node_name, deadlines, waits=waits))
            return Status.wait(f"waiting at permit for {', '.join(sorted(waits))}")
        return Status.success()

    # -- binding ---------------------------------------------------------------------------

    def run_pre_bind(self, state: CycleState, pod: TaskInfo, node_name: str) -> Status:
        for name, plugin in self.plugins_at("preBind"):
            status = self._status(name, "preBind", plugin.pre_bind, state, pod, node_name)
            if not status.is_success():
                return status.with_plugin(name) if status.is_rejected() \
                    else self._as_error(name, "preBind", status)
        return Status.success()

    def run_bind(self, state: CycleState, pod: TaskInfo, node_name: str) -> Status:
        for name, plugin in self.plugins_at("bind"):
            status = self._status(name, "bind", plugin.bind, state, pod, node_name)
            if status.is_skip():
                continue
            return status.with_plugin(name) if status.is_success() or status.is_rejected() \
                else self._as_error(name, "bind", status)
        return Status.error("no bind plugin bound the pod")

    def run_post_bind(self, state: CycleState, pod: TaskInfo, node_name: str) -> None:
        """Informational: a plugin that raises is logged, the pod stays bound."""
        for name, plugin in self.plugins_at("postBind"):
            try:
                self._call(name, "postBind", plugin.post_bind, state, pod, node_name)
            except PluginError as exc:
                log.warning("batchsched: after binding %s: %s", pod.uid, exc)
