"""What a kube-style plugin may get wrong, and the events around a pod's own bind:
each fault fails the pod it happened to (an error naming the plugin, the pod backing
off, the others scheduled), never the scheduler; the framework names the plugin it
ran; a pod this scheduler bound is an AssignedPodAdd once the host shows it bound;
a node's taints updated requeues what a node added would. Each test failed before."""

from __future__ import annotations

from typing import Any

import attrs
import pytest

from batchsched.api.node import NodeInfo
from batchsched.api.resource import Resource
from batchsched.cache.memory import MemoryCache
from batchsched.errors import BatchSchedError, CacheError, ConfigError
from batchsched.kube.taints import Taint
from batchsched.kubesched import (
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    CycleState,
    Framework,
    PluginRef,
    PodScheduler,
    Profile,
    QueueingHint,
    Registry,
    Status,
)
from batchsched.kubesched.builtin_plugins import BUILTIN_KUBE_PLUGINS, NodeResourcesFit
from batchsched.scenario import parse_scenario


def cache(nodes: dict[str, int], pods: list[tuple[Any, ...]]) -> MemoryCache:
    """``nodes``: name -> cpus; ``pods``: (name, cpus, priority[, more task fields])."""
    tasks = [{"name": pod[0], "job": f"j-{pod[0]}", "requests": {"cpu": pod[1]},
              "priority": pod[2], **(pod[3] if len(pod) > 3 else {})} for pod in pods]
    doc = {
        "version": 1, "name": "faults", "config": {"actions": ""},
        "nodes": [{"name": n, "allocatable": {"cpu": c, "memory": "4Gi", "pods": 10}}
                  for n, c in nodes.items()],
        "jobs": [{"name": task["job"], "minMember": 1, "phase": "Inqueue"} for task in tasks],
        "tasks": tasks,
    }
    return parse_scenario(doc, source="<test>").build_cache()


def framework(plugins: dict[str, Any], **points: list[Any]) -> Framework:
    factories = {spec.name: spec.factory for spec in BUILTIN_KUBE_PLUGINS}
    for name, plugin in plugins.items():
        factories[name] = _returning(plugin)
    refs = {point: tuple(PluginRef(*n) if isinstance(n, tuple) else PluginRef(n)
                         for n in names) for point, names in points.items()}
    refs.setdefault("queueSort", (PluginRef("PrioritySort"),))
    refs.setdefault("bind", (PluginRef("DefaultBinder"),))
    return Framework(Registry(factories), Profile("default-scheduler", refs))


def _returning(plugin: Any) -> Any:
    def build(args: Any, handle: Any) -> Any:
        return plugin
    return build


def scheduler(c: MemoryCache, plugins: dict[str, Any] | None = None,
              **points: list[Any]) -> PodScheduler:
    return PodScheduler(c, framework(plugins or {}, **points))


def bound(c: MemoryCache) -> dict[str, str]:
    return {bind.task: bind.node for bind in c.binds}


# -- faults that fail one pod ---------------------------------------------------------


class Unclonable:
    def clone(self) -> Any:
        raise RuntimeError("cannot clone")


class WritesUnclonableState:
    def pre_filter(self, state: CycleState, pod: Any) -> Status:
        state.write("Writes", Unclonable())
        return Status.success()

    def filter(self, state: CycleState, pod: Any, node: Any) -> Status:
        return Status.success()


def test_a_cycle_state_entry_that_cannot_be_cloned_fails_that_pod_only() -> None:
    # The gated pod nominated to n0 makes the filters run twice, on a cloned state.
    c = cache({"n0": 4, "n1": 4}, [
        ("hi", 2, 10, {"nominatedNodeName": "n0", "schedulingGates": ["wait"]}),
        ("lo", 1, 0)])
    s = scheduler(c, {"Writes": WritesUnclonableState()}, preEnqueue=["SchedulingGates"],
                  preFilter=["Writes"], filter=["Writes", "NodeResourcesFit"])
    results = {result.pod: result for result in s.run(0.0)}
    lo = results["default/lo"].status
    assert lo.code.name == "ERROR"
    assert "cycle state 'Writes': Unclonable.clone() raised RuntimeError" in lo.message
    assert "default/lo" in s.queue.backoff and not s.queue.in_flight
    s.run(1.0)  # the scheduler goes on


class Rekeys:
    def score(self, state: CycleState, pod: Any, node: Any) -> tuple[int, Status]:
        return 10, Status.success()

    def normalize_score(self, state: CycleState, pod: Any, scores: dict[str, int]) -> Status:
        for name in list(scores):
            scores[name.upper()] = scores.pop(name)
        return Status.success()


def test_scores_normalized_to_other_nodes_are_the_plugin_s_error() -> None:
    c = cache({"n0": 4, "n1": 4}, [("a", 1, 0)])
    s = scheduler(c, {"Rekeys": Rekeys()}, filter=["NodeResourcesFit"], score=[("Rekeys", 1)])
    (result,) = s.run(0.0)
    assert result.status.code.name == "ERROR" and result.status.plugin == "Rekeys"
    assert "normalized the scores to other nodes than those scored" in result.status.message
    assert "default/a" in s.queue.backoff and not s.queue.in_flight


class FailsWithException:
    def filter(self, state: CycleState, pod: Any, node: Any) -> Status:
        try:
            raise ConnectionError("lookup failed")
        except ConnectionError as exc:
            return Status.error(exc)  # kube's AsStatus(err)


class FailsWithOddReasons:
    def filter(self, state: CycleState, pod: Any, node: Any) -> Status:
        return Status(Status.error("x").code, (ConnectionError("lookup failed"),))


def test_a_status_of_an_exception_reads_as_its_message() -> None:
    c = cache({"n0": 4}, [("a", 1, 0)])
    s = scheduler(c, {"F": FailsWithException()}, filter=["F"])
    (result,) = s.run(0.0)
    assert result.status.code.name == "ERROR"
    assert result.status.message == 'running "F" filter plugin: lookup failed'


def test_a_status_whose_reasons_are_not_texts_is_the_plugin_s_error() -> None:
    c = cache({"n0": 4}, [("a", 1, 0), ("b", 1, 0)])
    s = scheduler(c, {"F": FailsWithOddReasons()}, filter=["F"])
    results = s.run(0.0)
    assert {result.pod for result in results} == {"default/a", "default/b"}
    for result in results:
        assert result.status.plugin == "F"
        assert "whose reasons are (ConnectionError('lookup failed'),) at filter, not " \
               "texts" in result.status.message
    assert not s.queue.in_flight


class PreFiltersWithOddReasons:
    def pre_filter(self, state: CycleState, pod: Any) -> Status:
        return Status(Status.error("x").code.UNSCHEDULABLE, (ConnectionError("lookup failed"),))


def test_a_pre_filter_status_whose_reasons_are_not_texts_fails_the_pod_only() -> None:
    """As at filter: the pod fails naming the plugin (a TypeError escaped the run)."""
    c = cache({"n0": 4}, [("a", 1, 0)])
    s = scheduler(c, {"P": PreFiltersWithOddReasons()}, preFilter=["P"],
                  filter=["NodeResourcesFit"])
    (result,) = s.run(0.0)
    assert result.status.plugin == "P"
    assert "at preFilter, not texts" in result.status.message


class NoneReasons:
    def pre_filter(self, state: CycleState, pod: Any) -> Status:
        return Status(Status.error("x").code.UNSCHEDULABLE, None)  # type: ignore[arg-type]

    def filter(self, state: CycleState, pod: Any, node: Any) -> Status:
        return Status(Status.error("x").code.UNSCHEDULABLE, None)  # type: ignore[arg-type]


@pytest.mark.parametrize("point", ["preFilter", "filter"])
def test_reasons_that_are_none_fail_the_pod_naming_the_plugin(point: str) -> None:
    """An empty answer that is no tuple (None) is checked too (a TypeError escaped)."""
    c = cache({"n0": 4}, [("a", 1, 0)])
    points: dict[str, Any] = {"filter": ["NodeResourcesFit"], point: ["N"]}
    s = scheduler(c, {"N": NoneReasons()}, **points)
    (result,) = s.run(0.0)
    assert result.status.plugin == "N"
    assert f"whose reasons are None at {point}, not texts" in result.status.message


class RefusesWithAList:
    def filter(self, state: CycleState, pod: Any, node: Any) -> Status:
        if node.name == "n0":
            return Status(Status.error("x").code.UNSCHEDULABLE,
                          ["node(s) too small", "really"])  # type: ignore[arg-type]
        return Status.success()


def test_a_status_with_a_list_of_reasons_is_taken() -> None:
    c = cache({"n0": 4, "n1": 4}, [("a", 1, 0)])
    s = scheduler(c, {"F": RefusesWithAList()}, filter=["F"])
    s.run(0.0)
    assert bound(c) == {"default/a": "n1"}


# -- the plugin a status names ----------------------------------------------------------


class WrapsFit:
    """A plugin of one's own that hands on the built-in fit check's status."""

    def __init__(self) -> None:
        self.inner = NodeResourcesFit()

    def filter(self, state: CycleState, pod: Any, node: Any) -> Status:
        return self.inner.filter(state, pod, node)

    def events_to_register(self) -> list[ClusterEventWithHint]:
        return [ClusterEventWithHint(ClusterEvent("Node", ActionType.ADD))]


def test_the_framework_names_the_plugin_it_ran_whatever_the_status_says() -> None:
    c = cache({"n0": 1}, [("big", 2, 0)])
    s = scheduler(c, {"MyFit": WrapsFit()}, filter=["MyFit"])
    s.run(0.0)
    wait = s.where("default/big")
    assert wait is not None and wait.rejected_by == ("MyFit",)
    # MyFit registered a node added (NodeResourcesFit's hints would be asked else).
    c.add_node(NodeInfo.create("n1", Resource.from_mapping(
        {"cpu": 4, "memory": "4Gi", "pods": 10})))
    s.run(20.0)
    assert bound(c) == {"default/big": "n1"}


# -- events -----------------------------------------------------------------------------


class FollowsLeader:
    """The follower needs the leader on its node (a pod affinity of one's own),
    registered as kube's InterPodAffinity registers."""

    def filter(self, state: CycleState, pod: Any, node: Any) -> Status:
        if pod.name != "follower" or any(t.name == "leader" for t in node.tasks.values()):
            return Status.success()
        return Status.unschedulable("node(s) didn't match pod affinity rules")

    def events_to_register(self) -> list[ClusterEventWithHint]:
        return [ClusterEventWithHint(ClusterEvent(
            "Pod", ActionType.ADD | ActionType.UPDATE_POD_LABEL | ActionType.DELETE))]


def test_a_pod_this_scheduler_bound_is_an_assigned_pod_add() -> None:
    # kube's informer reports the bound pod (addPodToCache): the follower turned down
    # before its leader was placed is tried again at the next run, not after 300 s.
    c = cache({"n0": 4, "n1": 4}, [("follower", 1, 10), ("leader", 1, 0)])
    s = scheduler(c, {"Follow": FollowsLeader()}, filter=["Follow", "NodeResourcesFit"])
    s.run(0.0)
    assert set(bound(c)) == {"default/leader"}
    s.run(5.0)
    assert bound(c)["default/follower"] == bound(c)["default/leader"]


class RefusesTainted:
    def filter(self, state: CycleState, pod: Any, node: Any) -> Status:
        return Status.unschedulable("node(s) had untolerated taint") if node.taints \
            else Status.success()

    def events_to_register(self) -> list[ClusterEventWithHint]:
        return [ClusterEventWithHint(
            ClusterEvent("Node", ActionType.ADD),
            lambda pod, old, new: QueueingHint.QUEUE if not new.taints
            else QueueingHint.QUEUE_SKIP)]


def test_a_plugin_registering_a_node_added_hears_of_taints_updated() -> None:
    c = cache({"n0": 4}, [("a", 1, 0)])
    c.add_node(attrs.evolve(c.nodes["n0"], taints=(Taint("k", "v", "NoSchedule"),)))
    s = scheduler(c, {"NoTaint": RefusesTainted()}, filter=["NoTaint"])
    s.run(0.0)
    c.add_node(attrs.evolve(c.nodes["n0"], taints=()))
    s.run(20.0)
    assert bound(c) == {"default/a": "n0"}


# -- the scheduler's own inputs ---------------------------------------------------------


@pytest.mark.parametrize(("frameworks", "words"), [
    ({}, "frameworks: at least one profile is required"),
    ("framework list", "must be a Framework or a mapping"),
    ("other key", "frameworks['other']: the profile's scheduler name is "
                  "'default-scheduler'"),
])
def test_profiles_a_scheduler_cannot_use_are_refused(frameworks: Any, words: str) -> None:
    c = cache({"n0": 4}, [("a", 1, 0)])
    if frameworks == "framework list":
        frameworks = [framework({})]
    elif frameworks == "other key":
        frameworks = {"other": framework({})}
    with pytest.raises(ConfigError, match=words.replace("[", r"\[").replace("]", r"\]")):
        PodScheduler(c, frameworks)


class UnreachableHost:
    def __init__(self, inner: MemoryCache) -> None:
        self.inner = inner

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def snapshot(self) -> Any:
        raise ConnectionError("apiserver unreachable")


def test_a_snapshot_that_fails_is_a_cache_error() -> None:
    s = PodScheduler(UnreachableHost(cache({"n0": 4}, [("a", 1, 0)])),  # type: ignore[arg-type]
                     framework({}, filter=["NodeResourcesFit"]))
    with pytest.raises(CacheError, match="snapshot raised ConnectionError") as raised:
        s.run(0.0)
    assert isinstance(raised.value, BatchSchedError) and raised.value.operation == "snapshot"
