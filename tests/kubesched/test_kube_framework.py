"""The kube-scheduler framework (seed 002): its rules, the per-pod loop, and a
third-party Coscheduling plugin at Permit found through its entry point."""

from __future__ import annotations

import importlib
import sys
from pathlib import Path
from typing import Any

import attrs
import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from batchsched.api import NodeInfo, Resource, TaskInfo, TaskStatus
from batchsched.cache.memory import MemoryCache
from batchsched.errors import ConfigError, PluginError
from batchsched.framework.registry import Registry as BatchschedRegistry
from batchsched.kubesched import (
    Code,
    CycleState,
    Framework,
    PluginRef,
    PodScheduler,
    Profile,
    Registry,
    SchedulingQueue,
    StateNotFoundError,
    Status,
    default_profile,
    from_entry_points,
)
from batchsched.kubesched.framework import MAX_TOTAL_SCORE
from batchsched.plugin import hookimpl
from batchsched.scenario import parse_scenario, run_scenario

EXAMPLE = Path(__file__).parents[2] / "examples" / "plugins" / "batchsched-coscheduling" / "src"


@pytest.fixture(scope="module")
def coscheduling() -> Any:
    sys.path.insert(0, str(EXAMPLE))
    try:
        yield importlib.import_module("batchsched_coscheduling")
    finally:
        sys.path.remove(str(EXAMPLE))
        sys.modules.pop("batchsched_coscheduling", None)


@pytest.fixture()
def kube_registry(coscheduling: Any) -> Registry:
    """The kube plugins of batchsched and of the example distribution, as entry
    points provide them."""
    registry = BatchschedRegistry(autoload=False)
    registry.manager.register(coscheduling)
    return from_entry_points(registry)


GANG_PROFILE = """
plugins:
  queueSort: {enabled: [{name: Coscheduling}]}
  preFilter: {enabled: [{name: Coscheduling}]}
  filter:    {enabled: [{name: NodeResourcesFit}]}
  score:     {enabled: [{name: NodeResourcesLeastAllocated, weight: 1}]}
  reserve:   {enabled: [{name: Coscheduling}]}
  permit:    {enabled: [{name: Coscheduling}]}
  bind:      {enabled: [{name: DefaultBinder}]}
pluginConfig:
- {name: Coscheduling, args: {permitWaitingTimeSeconds: 10}}
"""


def gang_cache(nodes: int, members: int, minimum: int) -> MemoryCache:
    doc = {
        "version": 1, "name": "gang", "config": {"actions": ""},
        "nodes": [{"name": f"n{i}", "allocatable": {"cpu": 2, "memory": "4Gi", "pods": 10}}
                  for i in range(nodes)],
        "jobs": [{"name": "pg", "minMember": minimum, "phase": "Inqueue"}],
        "tasks": [{"name": f"p{i}", "job": "pg", "requests": {"cpu": 2}}
                  for i in range(members)],
    }
    cache = parse_scenario(doc, source="<test>").build_cache()
    assert isinstance(cache, MemoryCache)
    return cache


def gang_scheduler(kube_registry: Registry, cache: MemoryCache, *,
                   pop_from_backoff: bool = True) -> PodScheduler:
    profile = Profile.from_mapping(yaml.safe_load(GANG_PROFILE))
    scheduler = PodScheduler(cache, Framework(kube_registry, profile))
    scheduler.queue.pop_from_backoff = pop_from_backoff
    return scheduler


def test_the_example_distribution_is_found_through_its_entry_point(
        kube_registry: Registry) -> None:
    assert {"Coscheduling", "DefaultBinder", "NodeResourcesFit"} <= set(kube_registry)


def test_a_gang_binds_only_once_every_member_is_reserved(kube_registry: Registry) -> None:
    cache = gang_cache(nodes=3, members=3, minimum=3)
    scheduler = gang_scheduler(kube_registry, cache)
    first = scheduler.run(now=0.0, max_pods=2)
    assert [result.status.is_wait() for result in first] == [True, True]
    assert cache.binds == [] and len(scheduler.frameworks["default-scheduler"].waiting_pods) == 2
    scheduler.run(now=1.0)
    assert sorted(bind.task for bind in cache.binds) == ["default/p0", "default/p1",
                                                         "default/p2"]
    assert not scheduler.assumed


@pytest.mark.parametrize("pop_from_backoff", [False, True])
def test_an_incomplete_gang_times_out_and_gives_back_its_reservations(
        kube_registry: Registry, pop_from_backoff: bool) -> None:
    cache = gang_cache(nodes=2, members=3, minimum=3)
    scheduler = gang_scheduler(kube_registry, cache, pop_from_backoff=pop_from_backoff)
    results = scheduler.run(now=0.0)
    assert sum(result.status.is_wait() for result in results) == 2
    assert any("0/2 nodes are available: 2 Insufficient cpu." in result.status.message
               for result in results)
    assert scheduler.run(now=5.0) == [] or cache.binds == []
    assert len(scheduler.assumed) == 2
    expired = scheduler.run(now=10.5)
    assert cache.binds == []
    assert any("timeout" in result.status.message for result in expired)
    # The timed-out members gave their nodes back and wait again; freeing the nodes
    # moved the third member (NodeResourcesFit turned it down, and registers a pod
    # deleted: kube-scheduler's AssignedPodDelete) back to the active queue, and it
    # now waits at Permit on a node of its own. Coscheduling, which turned the first
    # two down, registers only a pod added, but its Permit activates the waiting
    # pod's siblings (as scheduler-plugins' does): one waits on the other node, the
    # last finds no room.
    queue = scheduler.queue
    waiting = scheduler.frameworks["default-scheduler"].waiting_pods
    assert scheduler.view is not None
    placed = sum(len(node.tasks) for node in scheduler.view.nodes.values())
    assert set(scheduler.assumed) == {pod.pod.uid for pod in waiting}
    assert len(scheduler.assumed) == 2 and "default/p2" in scheduler.assumed
    assert len({"default/p0", "default/p1"} & set(queue.unschedulable)) == 1
    assert placed == 2


def test_a_bind_the_host_fails_is_an_error_that_unreserves_and_requeues(
        kube_registry: Registry) -> None:
    cache = gang_cache(nodes=3, members=3, minimum=1)

    def binder(task: Any, node_name: str) -> bool:
        if task.name == "p1":
            raise ConnectionError("api server unreachable")
        return True

    cache.binder = binder
    scheduler = gang_scheduler(kube_registry, cache)
    results = {result.pod: result.status for result in scheduler.run(now=0.0)}
    assert results["default/p1"].code is Code.ERROR
    assert "api server unreachable" in results["default/p1"].message
    assert not scheduler.assumed  # unreserved and forgotten, not left assumed
    assert "default/p1" in scheduler.queue.backoff
    assert sorted(bind.task for bind in cache.binds) == ["default/p0", "default/p2"]


def test_a_pod_deleted_while_it_waits_at_permit_is_let_go(kube_registry: Registry) -> None:
    cache = gang_cache(nodes=2, members=4, minimum=3)
    scheduler = gang_scheduler(kube_registry, cache)
    scheduler.run(now=0.0)
    waiting = scheduler.frameworks["default-scheduler"].waiting_pods
    assert {pod.pod.uid for pod in waiting} == {"default/p0", "default/p1"}
    cache.delete_task(cache.jobs["default/pg"].tasks["default/p0"])
    for name in ("n2", "n3"):
        cache.add_node(NodeInfo.create(name, Resource.from_mapping(
            {"cpu": 2, "memory": "4Gi", "pods": 10})))
    scheduler.queue.move_all_to_active_or_backoff(1.0, "NodeAdd")
    scheduler.run(now=2.0)  # no KeyError: the deleted pod is no longer waited for
    assert "default/p0" not in scheduler.assumed
    assert all(pod.pod.uid != "default/p0" for pod in waiting)


def test_a_gang_smaller_than_its_minimum_is_refused_at_prefilter(
        kube_registry: Registry) -> None:
    cache = gang_cache(nodes=3, members=2, minimum=3)
    results = gang_scheduler(kube_registry, cache).run(now=0.0)
    assert all(result.status.is_rejected() and "fewer than its minMember 3"
               in result.status.message for result in results)


@attrs.define
class FixedScore:
    """A score plugin answering fixed scores, optionally normalised by a factor."""

    scores: dict[str, int]
    factor: int | None = None
    name: str = "Fixed"

    def score(self, state: CycleState, pod: Any, node: Any) -> tuple[int, Status]:
        return self.scores[node.name], Status.success()


@attrs.define
class NormalisedScore(FixedScore):
    def normalize_score(self, state: CycleState, pod: Any, scores: dict[str, int]) -> Status:
        top = max(scores.values())
        for name, score in list(scores.items()):
            scores[name] = score * (self.factor or 100) // top
        return Status.success()


def _nodes(*names: str) -> list[Any]:
    cache = gang_cache(nodes=len(names), members=1, minimum=1)
    return list(cache.snapshot().nodes.values())


def test_scores_are_normalised_then_weighted_and_summed() -> None:
    registry = Registry({
        "A": lambda args, handle: FixedScore({"n0": 10, "n1": 40}),
        "B": lambda args, handle: NormalisedScore({"n0": 3, "n1": 6}),
    })
    profile = Profile(plugins={"score": (PluginRef("A", 2), PluginRef("B", 3))})
    totals = Framework(registry, profile).run_score(CycleState(), None, _nodes("n0", "n1"))
    # A: 10, 40 (weight 2); B normalised to 50, 100 (weight 3).
    assert totals == {"n0": 2 * 10 + 3 * 50, "n1": 2 * 40 + 3 * 100}


def test_a_score_out_of_range_after_normalising_is_an_error_naming_the_plugin() -> None:
    registry = Registry({"B": lambda args, handle: NormalisedScore({"n0": 3, "n1": 6},
                                                                   factor=150)})
    framework = Framework(registry, Profile(plugins={"score": (PluginRef("B", 1),)}))
    with pytest.raises(PluginError, match=r'plugin "B" returns an invalid score 150, .*\[0, 100\]'):
        framework.run_score(CycleState(), None, _nodes("n0", "n1"))


def test_weights_that_could_overflow_the_total_score_are_refused() -> None:
    registry = Registry({"A": lambda args, handle: FixedScore({}),
                         "B": lambda args, handle: FixedScore({})})
    heavy = MAX_TOTAL_SCORE // 100
    Framework(registry, Profile(plugins={"score": (PluginRef("A", heavy),)}))
    with pytest.raises(PluginError, match="could overflow"):
        Framework(registry, Profile(plugins={"score": (PluginRef("A", heavy),
                                                       PluginRef("B", 1))}))


@attrs.define
class Counter:
    count: int

    def clone(self) -> Counter:
        return Counter(self.count)


def test_a_cloned_cycle_state_is_isolated_both_ways() -> None:
    state = CycleState()
    state.write("counter", Counter(1))
    twin = state.clone()
    twin.read("counter").count = 5  # type: ignore[attr-defined]
    twin.write("extra", Counter(9))
    assert state.read("counter").count == 1  # type: ignore[attr-defined]
    assert "extra" not in state
    state.read("counter").count = 2  # type: ignore[attr-defined]
    assert twin.read("counter").count == 5  # type: ignore[attr-defined]
    state.delete("counter")
    with pytest.raises(StateNotFoundError):
        state.read("counter")
    with pytest.raises(TypeError, match="no clone"):
        state.write("plain", object())  # type: ignore[arg-type]


def test_registry_merge_and_unregister_refuse_conflicts() -> None:
    registry = Registry({"A": lambda args, handle: None})
    with pytest.raises(PluginError, match="'A' already exists"):
        registry.merge({"B": lambda args, handle: None, "A": lambda args, handle: None})
    assert "B" in registry  # merged up to the conflict, as kube-scheduler does
    registry.unregister("B")
    with pytest.raises(PluginError, match="no kube plugin named 'B'"):
        registry.unregister("B")


def test_the_queue_backs_off_exponentially_and_moves_on_events() -> None:
    cache = gang_cache(nodes=1, members=1, minimum=1)
    pod = next(iter(next(iter(cache.snapshot().jobs.values())).tasks.values()))
    queue = SchedulingQueue(initial_backoff=1.0, max_backoff=4.0, pop_from_backoff=False)
    assert [queue.backoff_seconds(n) for n in (1, 2, 3, 4)] == [1.0, 2.0, 4.0, 4.0]
    queue.add_unschedulable(pod, 0.0, attempts=2)
    assert queue.pop(1.0) is None
    assert queue.move_all_to_active_or_backoff(1.0, "NodeAdd") == 1
    assert pod.uid in queue.backoff
    assert queue.pop(1.5) is None
    queued = queue.pop(2.0)
    assert queued is not None and queued.pod.uid == pod.uid


def test_the_default_profile_schedules_pods_one_by_one() -> None:
    cache = gang_cache(nodes=2, members=2, minimum=1)
    scheduler = PodScheduler(cache, Framework(from_entry_points(
        BatchschedRegistry(autoload=False)), default_profile()))
    results = scheduler.run(now=0.0)
    assert [result.status.is_success() for result in results] == [True, True]
    assert sorted(bind.node for bind in cache.binds) == ["n0", "n1"]


def test_the_default_profile_keeps_a_gated_pod_out_until_its_gates_are_lifted() -> None:
    """kube-scheduler's SchedulingGates plugin (PreEnqueue), in its default profile."""
    cache = gang_cache(nodes=1, members=1, minimum=1)
    job = next(iter(cache.jobs.values()))
    pod = next(iter(job.tasks.values()))
    pod.scheduling_gates = ("example.com/wait",)
    scheduler = PodScheduler(cache, Framework(from_entry_points(
        BatchschedRegistry(autoload=False)), default_profile()))
    scheduler.run(now=0.0)
    assert cache.binds == []
    cache.set_scheduling_gates(job.uid, pod.uid, [])
    scheduler.run(now=1.0)
    assert [bind.task for bind in cache.binds] == [pod.uid]


def test_kube_filter_and_score_plugins_run_inside_a_volcano_session() -> None:
    doc = {
        "version": 1, "name": "kube plugins in a session",
        "config": {"actions": "allocate", "tiers": [{"plugins": [{"name": "gang"}, {
            "name": "kube-plugins", "arguments": {"kube.profile": {"plugins": {
                "filter": {"enabled": [{"name": "NodeResourcesFit"}]},
                "score": {"enabled": [{"name": "NodeResourcesLeastAllocated",
                                       "weight": 1}]}}}}}]}]},
        "nodes": [{"name": "busy", "allocatable": {"cpu": 4, "memory": "4Gi", "pods": 10}},
                  {"name": "empty", "allocatable": {"cpu": 4, "memory": "4Gi", "pods": 10}}],
        "jobs": [{"name": "old", "minMember": 1, "phase": "Running"},
                 {"name": "new", "minMember": 1, "phase": "Inqueue"}],
        "tasks": [{"name": "o", "job": "old", "node": "busy", "phase": "Running",
                   "requests": {"cpu": 3}},
                  {"name": "n", "job": "new", "requests": {"cpu": 1}}],
    }
    decisions = run_scenario(parse_scenario(doc, source="<test>"))
    assert decisions.binds == {"default/n": "empty"}


def test_a_profile_with_points_a_session_does_not_run_is_refused() -> None:
    from batchsched.framework.arguments import Arguments
    from batchsched.plugins.kube_plugins import KubePluginsPlugin

    with pytest.raises(ConfigError, match="'permit' does not run in a Volcano session"):
        KubePluginsPlugin(Arguments({"kube.profile": {"plugins": {
            "permit": {"enabled": [{"name": "Coscheduling"}]}}}}))


@settings(max_examples=30, deadline=None)
@given(st.lists(st.integers(1, 4), min_size=1, max_size=6),
       st.lists(st.integers(1, 4), min_size=1, max_size=4))
def test_coscheduled_gangs_bind_whole_or_not_at_all(gangs: list[int], nodes: list[int]) -> None:
    """Random gangs (size = minMember, 1 cpu per pod) on random nodes, the loop run at
    t = 0..12 (Permit timeout 10): a gang is never partly bound, no node is
    over-committed, and once every wait has timed out nothing stays assumed."""
    sys.path.insert(0, str(EXAMPLE))
    try:
        module = importlib.import_module("batchsched_coscheduling")
    finally:
        sys.path.remove(str(EXAMPLE))
    batch = BatchschedRegistry(autoload=False)
    batch.manager.register(module)
    doc = {
        "version": 1, "name": "gangs", "config": {"actions": ""},
        "nodes": [{"name": f"n{i}", "allocatable": {"cpu": cpu, "memory": "4Gi", "pods": 10}}
                  for i, cpu in enumerate(nodes)],
        "jobs": [{"name": f"g{j}", "minMember": size, "phase": "Inqueue"}
                 for j, size in enumerate(gangs)],
        "tasks": [{"name": f"g{j}-{k}", "job": f"g{j}", "requests": {"cpu": 1}}
                  for j, size in enumerate(gangs) for k in range(size)],
    }
    cache = parse_scenario(doc, source="<test>").build_cache()
    assert isinstance(cache, MemoryCache)
    scheduler = PodScheduler(cache, Framework(from_entry_points(batch),
                                              Profile.from_mapping(yaml.safe_load(GANG_PROFILE))))
    for now in range(13):
        scheduler.run(now=float(now))
        for node in cache.nodes.values():
            node.check_invariants()
            assert node.used.milli_cpu <= node.allocatable.milli_cpu
        bound: dict[str, int] = {}
        for bind in cache.binds:
            job = bind.task.rsplit("-", 1)[0]
            bound[job] = bound.get(job, 0) + 1
        for j, size in enumerate(gangs):
            assert bound.get(f"default/g{j}", 0) in (0, size)
    waiting = scheduler.frameworks["default-scheduler"].waiting_pods
    assert set(scheduler.assumed) == {pod.pod.uid for pod in waiting}


class _FailingScore:
    name = "FailingScore"

    def __init__(self, args: Any, handle: Any) -> None:
        pass

    def score(self, state: CycleState, pod: Any, node: Any) -> tuple[int, Status]:
        return 0, Status.error("cannot score")


class _FailingScoreDistribution:
    @staticmethod
    @hookimpl
    def batchsched_register_kube_plugins() -> list[Any]:
        from batchsched.kubesched import KubePluginSpec
        return [KubePluginSpec("FailingScore", _FailingScore)]


def test_a_kube_score_error_in_a_session_leaves_the_task_without_a_node() -> None:
    # Volcano's PrioritizeNodes logs a scoring error and returns no scores: the task
    # gets no node in that pass, and the session goes on (it used to fail the cycle).
    registry = BatchschedRegistry()
    registry.manager.register(_FailingScoreDistribution())
    doc = {
        "version": 1, "name": "a failing kube score",
        "config": {"actions": "allocate", "tiers": [{"plugins": [{"name": "gang"}, {
            "name": "kube-plugins", "arguments": {"kube.profile": {"plugins": {
                "score": {"enabled": [{"name": "FailingScore", "weight": 1}]}}}}}]}]},
        "nodes": [{"name": f"n{i}", "allocatable": {"cpu": 4, "memory": "4Gi", "pods": 10}}
                  for i in (1, 2)],
        "jobs": [{"name": "new", "minMember": 1, "phase": "Inqueue"}],
        "tasks": [{"name": "n", "job": "new", "requests": {"cpu": 1}}],
    }
    decisions = run_scenario(parse_scenario(doc, source="<test>"), registry=registry)
    assert decisions.binds == {}


def test_a_gang_short_of_members_is_retried_when_one_arrives(kube_registry: Registry) -> None:
    """Coscheduling registers a pod of its group added; the loop reports a new pending
    pod (kube's UnscheduledPodAdd), so the waiting members are tried again at once
    instead of after the unschedulable timeout."""
    cache = gang_cache(nodes=2, members=1, minimum=2)
    scheduler = gang_scheduler(kube_registry, cache)
    scheduler.run(now=0.0)
    assert "default/p0" in scheduler.queue.unschedulable
    job = cache.jobs["default/pg"]
    cache.add_task(TaskInfo.create("default", "p1", job.uid,
                                   Resource.from_mapping({"cpu": 2})))
    scheduler.run(now=20.0)
    assert sorted(bind.task for bind in cache.binds) == ["default/p0", "default/p1"]


def test_a_gang_blocked_by_a_pod_binds_once_the_pod_goes(kube_registry: Registry) -> None:
    """One member waits at Permit, the other finds no room; the first times out. When
    the blocking pod goes, the member it blocked waits at Permit and activates its
    sibling (scheduler-plugins' ActivateSiblings): the gang binds, instead of the two
    timing out out of phase for ever."""
    cache = gang_cache(nodes=1, members=2, minimum=2)
    blocker = TaskInfo.create("other", "blocker", "", Resource.from_mapping({"cpu": 1}),
                              status=TaskStatus.RUNNING, node_name="n0")
    cache.add_foreign_pod(blocker)
    for task in cache.jobs["default/pg"].tasks.values():
        task.resreq = task.init_resreq = Resource.from_mapping({"cpu": 1})
    scheduler = gang_scheduler(kube_registry, cache)
    bound: dict[str, float] = {}
    for now in range(0, 200):
        if now == 70:
            cache.delete_task(blocker)
        for result in scheduler.run(now=float(now)):
            if result.node and result.status.is_success():
                bound[result.pod] = now
    assert bound == {"default/p0": 70, "default/p1": 70}


class _NarrowsToN2:
    def pre_filter(self, state: Any, pod: Any) -> tuple[set[str], Any]:
        from batchsched.kubesched import Status
        return {"n2"}, Status.success()


class _NarrowingDistribution:
    @staticmethod
    @hookimpl
    def batchsched_register_kube_plugins() -> list[Any]:
        from batchsched.kubesched import KubePluginSpec
        return [KubePluginSpec("Narrow", lambda args, handle: _NarrowsToN2())]


def test_a_session_s_kube_plugins_word_a_pre_filter_result_as_kube_does() -> None:
    registry = BatchschedRegistry()
    registry.manager.register(_NarrowingDistribution())
    doc = {
        "version": 1, "name": "a narrowing kube prefilter",
        "config": {"actions": "allocate", "tiers": [{"plugins": [{"name": "gang"}, {
            "name": "kube-plugins", "arguments": {"kube.profile": {"plugins": {
                "preFilter": {"enabled": [{"name": "Narrow"}]}}}}}]}]},
        "nodes": [{"name": "n1", "allocatable": {"cpu": 4, "memory": "4Gi", "pods": 10}}],
        "jobs": [{"name": "new", "minMember": 1, "phase": "Inqueue"}],
        "tasks": [{"name": "n", "job": "new", "requests": {"cpu": 1}}],
    }
    decisions = run_scenario(parse_scenario(doc, source="<test>"), registry=registry)
    assert decisions.binds == {}
    message = next(event["message"] for event in decisions.events
                   if event["object"] == "default/n")
    assert "node(s) didn't satisfy plugin(s) [Narrow]" in message
