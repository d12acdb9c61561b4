"""kube-scheduler's rules around one pod's cycles, as PodScheduler keeps them: gates
asked again, one pod's error failing that pod only, failed binding cycles freeing
their node for others, Unreserve once, statuses a point may not give turned into
errors, PreFilter results, PostFilter nominations, the queue's timestamps, and the
profiles kube-scheduler refuses. Each test failed before the rule was kept."""

from __future__ import annotations

from typing import Any

import pytest

from batchsched.api.node import NodeInfo
from batchsched.api.resource import Resource
from batchsched.cache.memory import MemoryCache
from batchsched.errors import ConfigError, PluginError
from batchsched.kubesched import (
    Code,
    CycleState,
    Framework,
    PluginRef,
    PodScheduler,
    Profile,
    Registry,
    SchedulingQueue,
    Status,
)
from batchsched.kubesched.builtin_plugins import BUILTIN_KUBE_PLUGINS, NodeResourcesFit
from batchsched.kubesched.scheduler import num_feasible_nodes_to_find
from batchsched.scenario import parse_scenario


def cache(nodes: dict[str, int], pods: list[tuple[str, int, int]]) -> MemoryCache:
    """``nodes``: name -> cpus; ``pods``: (name, cpus, priority), each its own job."""
    doc = {
        "version": 1, "name": "loop", "config": {"actions": ""},
        "nodes": [{"name": n, "allocatable": {"cpu": c, "memory": "4Gi", "pods": 10}}
                  for n, c in nodes.items()],
        "jobs": [{"name": f"j-{name}", "minMember": 1, "phase": "Inqueue"}
                 for name, _, _ in pods],
        "tasks": [{"name": name, "job": f"j-{name}", "requests": {"cpu": cpu},
                   "priority": priority} for name, cpu, priority in pods],
    }
    return parse_scenario(doc, source="<test>").build_cache()


def registry(**plugins: Any) -> Registry:
    factories = {spec.name: spec.factory for spec in BUILTIN_KUBE_PLUGINS}
    for name, plugin in plugins.items():
        factories[name] = _returning(plugin)
    return Registry(factories)


def _returning(plugin: Any) -> Any:
    def build(args: Any, handle: Any) -> Any:
        return plugin
    return build


def profile(**points: list[Any]) -> Profile:
    plugins = {point: tuple(PluginRef(*n) if isinstance(n, tuple) else PluginRef(n)
                            for n in names) for point, names in points.items()}
    plugins.setdefault("queueSort", (PluginRef("PrioritySort"),))
    plugins.setdefault("bind", (PluginRef("DefaultBinder"),))
    return Profile("default-scheduler", plugins)


def scheduler(c: MemoryCache, **points: list[Any]) -> PodScheduler:
    plugins = {name: plugin for name, plugin in points.pop("plugins", [])}  # type: ignore[misc]
    return PodScheduler(c, Framework(registry(**plugins), profile(**points)))


def bound(c: MemoryCache) -> dict[str, str]:
    return {bind.task: bind.node for bind in c.binds}


class Gate:
    def __init__(self) -> None:
        self.open = False

    def pre_enqueue(self, pod: Any) -> Status:
        return Status.success() if self.open else Status.unschedulable("gated")


def test_a_gated_pod_stays_out_after_events_and_the_flush_and_enters_once_admitted() -> None:
    c, gate = cache({"n0": 2}, [("p", 1, 0)]), Gate()
    s = scheduler(c, plugins=[("Gate", gate)], preEnqueue=["Gate"], filter=["NodeResourcesFit"])
    s.run(0.0)
    s.queue.move_all_to_active_or_backoff(5.0, "NodeAdd")
    s.run(6.0)
    s.run(400.0)
    assert c.binds == []
    gate.open = True
    s.run(401.0)  # asked again at the next run, as a pod update would
    assert bound(c) == {"default/p": "n0"}


class FailingScore:
    def score(self, state: CycleState, pod: Any, node: Any) -> tuple[int, Status]:
        if pod.name == "bad":
            return 0, Status.error("cannot score")
        return 50, Status.success()


class RaisingFilter:
    def filter(self, state: CycleState, pod: Any, node: Any) -> Status:
        if pod.name == "bad":
            raise RuntimeError("boom")
        return Status.success()


@pytest.mark.parametrize("point", ["score", "filter"])
def test_one_pod_s_error_fails_that_pod_only(point: str) -> None:
    c = cache({"n0": 2, "n1": 2}, [("bad", 1, 100), ("good", 1, 0)])
    if point == "score":
        s = scheduler(c, plugins=[("S", FailingScore())], score=[("S", 1)])
    else:
        s = scheduler(c, plugins=[("F", RaisingFilter())], filter=["F"])
    results = {result.pod: result for result in s.run(0.0)}
    assert "default/good" in bound(c)
    assert results["default/bad"].status.code.name == "ERROR"
    assert "default/bad" in s.queue.backoff


class Waits:
    """Permit makes the first pod wait 10 s (and nobody allows it)."""

    def permit(self, state: CycleState, pod: Any, node: str) -> tuple[Status, float]:
        if pod.name == "a":
            return Status.wait(), 10.0
        return Status.success(), 0.0


def test_a_failed_binding_cycle_moves_the_unschedulable_pods_back() -> None:
    c = cache({"n0": 2}, [("a", 2, 100), ("b", 2, 0)])
    s = scheduler(c, plugins=[("W", Waits())], filter=["NodeResourcesFit"], permit=["W"])
    s.run(0.0)  # a waits on n0; b does not fit beside it
    assert "default/b" in s.queue.unschedulable
    s.run(11.0)  # a times out and gives n0 back: b is moved back at once
    assert bound(c) == {"default/b": "n0"}


class Reserves:
    def __init__(self, name: str, log: list[str], fail: bool = False) -> None:
        self.name, self.log, self.fail = name, log, fail

    def reserve(self, state: CycleState, pod: Any, node: str) -> Status:
        self.log.append(f"reserve {self.name}")
        return Status.unschedulable("no") if self.fail else Status.success()

    def unreserve(self, state: CycleState, pod: Any, node: str) -> None:
        self.log.append(f"unreserve {self.name}")
        if self.name == "B":
            raise RuntimeError("unreserve raised")


def test_a_failed_reserve_unreserves_every_plugin_once_even_when_one_raises() -> None:
    log: list[str] = []
    c = cache({"n0": 2}, [("p", 1, 0)])
    s = scheduler(c, plugins=[("A", Reserves("A", log)), ("B", Reserves("B", log)),
                              ("C", Reserves("C", log, fail=True))],
                  filter=["NodeResourcesFit"], reserve=["A", "B", "C"])
    s.run(0.0)
    assert log == ["reserve A", "reserve B", "reserve C",
                   "unreserve C", "unreserve B", "unreserve A"]


class Answers:
    """A Filter that answers Wait, a PreScore that answers Unschedulable."""

    def filter(self, state: CycleState, pod: Any, node: Any) -> Status:
        return Status.wait() if pod.name == "w" else Status.success()

    def pre_score(self, state: CycleState, pod: Any, nodes: Any) -> Status:
        return Status.unschedulable("no") if pod.name == "u" else Status.success()


class CountsPostFilter:
    calls = 0

    def post_filter(self, state: CycleState, pod: Any, statuses: Any) -> tuple[None, Status]:
        CountsPostFilter.calls += 1
        return None, Status.unschedulable("nothing to preempt")


class Flat:
    def score(self, state: CycleState, pod: Any, node: Any) -> tuple[int, Status]:
        return 0, Status.success()


@pytest.mark.parametrize("pod", ["w", "u"])
def test_a_status_a_point_may_not_give_is_an_error(pod: str) -> None:
    CountsPostFilter.calls = 0
    c = cache({"n0": 2, "n1": 2}, [(pod, 1, 0)])
    s = scheduler(c, plugins=[("X", Answers()), ("P", CountsPostFilter()), ("S", Flat())],
                  filter=["X"], preScore=["X"], score=["S"], postFilter=["P"])
    result = s.run(0.0)[0]
    assert result.status.code.name == "ERROR"
    assert f"default/{pod}" in s.queue.backoff
    assert CountsPostFilter.calls == 0  # an error ends the cycle before PostFilter


class OnlyN1:
    def pre_filter(self, state: CycleState, pod: Any) -> tuple[set[str], Status]:
        return {"n1"}, Status.success()


class Refuses:
    def pre_filter(self, state: CycleState, pod: Any) -> Status:
        return Status.unschedulable("refused at PreFilter")


class Nominates:
    def post_filter(self, state: CycleState, pod: Any, statuses: Any) -> tuple[str, Status]:
        assert set(statuses) == {"n0", "n1"}  # every node carries the PreFilter's verdict
        return "n1", Status.success()


class SeesCodesPerNode:
    def __init__(self) -> None:
        self.codes: dict[str, Code] = {}

    def post_filter(self, state: CycleState, pod: Any, statuses: Any) -> tuple[None, Status]:
        self.codes = {node: status.code for node, status in statuses.items()}
        return None, Status.unschedulable("no victims")


def test_post_filter_sees_a_node_smaller_than_the_pod_as_unresolvable() -> None:
    c = cache({"n0": 4, "n1": 2}, [("r", 3, 0), ("p", 3, 0)])  # r fills n0 first
    sees = SeesCodesPerNode()
    s = scheduler(c, plugins=[("Sees", sees)], filter=["NodeResourcesFit"],
                  postFilter=["Sees"])
    s.run(0.0)
    assert sees.codes == {"n0": Code.UNSCHEDULABLE, "n1": Code.UNSCHEDULABLE_AND_UNRESOLVABLE}


def test_a_pre_filter_result_narrows_the_nodes() -> None:
    c = cache({"n0": 4, "n1": 2}, [("p", 1, 0)])
    s = scheduler(c, plugins=[("Only", OnlyN1())], preFilter=["Only"],
                  filter=["NodeResourcesFit"], score=[("NodeResourcesLeastAllocated", 1)])
    s.run(0.0)
    assert bound(c) == {"default/p": "n1"}


def test_post_filter_runs_after_a_pre_filter_rejection_and_its_nomination_is_kept() -> None:
    c = cache({"n0": 2, "n1": 2}, [("p", 1, 0)])
    s = scheduler(c, plugins=[("R", Refuses()), ("N", Nominates())], preFilter=["R"],
                  postFilter=["N"])
    result = s.run(0.0)[0]
    assert result.node == "n1"
    assert c.nominations == {"default/p": "n1"}


def test_equal_priorities_go_by_when_they_were_queued_not_created() -> None:
    # a failed last (queued again at t=10), b at t=5: b goes first, though a's name
    # (and creation, equal here) would put a first.
    c = cache({"n0": 1}, [("a", 1, 0), ("b", 1, 0)])
    s = scheduler(c, filter=["NodeResourcesFit"])
    a = c.jobs["default/j-a"].tasks["default/a"]
    b = c.jobs["default/j-b"].tasks["default/b"]
    s.queue.add_unschedulable(a, 10.0, attempts=1)
    s.queue.add_unschedulable(b, 5.0, attempts=1)
    s.queue.move_all_to_active_or_backoff(20.0)
    popped = s.queue.pop(20.0)
    assert popped is not None and popped.pod.uid == "default/b"


class RaisingPostBind:
    def post_bind(self, state: CycleState, pod: Any, node: str) -> None:
        raise RuntimeError("post bind raised")


def test_a_post_bind_plugin_raising_leaves_the_pod_bound_and_the_queue_going() -> None:
    c = cache({"n0": 2}, [("a", 1, 1), ("b", 1, 0)])
    s = scheduler(c, plugins=[("P", RaisingPostBind())], filter=["NodeResourcesFit"],
                  postBind=["P"])
    s.run(0.0)
    assert bound(c) == {"default/a": "n0", "default/b": "n0"}


@pytest.mark.parametrize(("raw", "key"), [
    ({"plugins": {"filter": {"enabled": [{"name": "F"}, {"name": "F"}]}}},
     "plugins.filter.enabled[1]"),
    ({"plugins": {"filter": {"disabled": [{"name": "F"}]}}}, "plugins.filter.disabled"),
    ({"plugins": {"filter": [{"name": "F"}]}}, "plugins.filter"),
    ({"plugins": [{"name": "F"}]}, "plugins"),
    ({"pluginConfig": [{"name": "F", "args": [1]}]}, "pluginConfig[0].args"),
    ({"pluginConfig": [{"name": "F"}, {"name": "F"}]}, "pluginConfig[1]"),
])
def test_a_profile_kube_scheduler_refuses_is_a_config_error(raw: Any, key: str) -> None:
    with pytest.raises(ConfigError) as info:
        Profile.from_mapping(raw)
    assert info.value.key == key


def test_profiles_without_one_queue_sort_or_a_binder_or_with_different_sorts_are_refused(
) -> None:
    c = cache({"n0": 1}, [])
    no_sort = Profile("default-scheduler", {"bind": (PluginRef("DefaultBinder"),)})
    with pytest.raises(ConfigError, match=r"only one queue sort plugin required .* but got 0"):
        PodScheduler(c, Framework(registry(), no_sort))
    no_bind = Profile("default-scheduler", {"queueSort": (PluginRef("PrioritySort"),),
                                            "filter": (PluginRef("NodeResourcesFit"),)})
    with pytest.raises(ConfigError, match="at least one bind plugin is needed"):
        PodScheduler(c, Framework(registry(), no_bind))
    other = Profile("other", {"queueSort": (PluginRef("Coscheduling"),),
                              "bind": (PluginRef("DefaultBinder"),)})
    with pytest.raises(ConfigError, match="different queue sort plugins"):
        PodScheduler(c, {"default-scheduler": Framework(registry(), profile()),
                         "other": Framework(registry(Coscheduling=_Sort()), other)})


class _Sort:
    def less(self, left: Any, right: Any) -> bool:
        return False


# -- kube-scheduler's rules kept after an audit against schedule_one.go and framework.go --------

def _where(s: PodScheduler, uid: str) -> str:
    q = s.queue
    return ("active" if uid in q.active else "backoff" if uid in q.backoff
            else "unschedulable" if uid in q.unschedulable else "none")


class PreFilters:
    def __init__(self, answer: Status, calls: list[str], name: str) -> None:
        self.answer, self.calls, self.name = answer, calls, name

    def pre_filter(self, state: CycleState, pod: Any) -> Status:
        self.calls.append(self.name)
        return self.answer


class SeesStatuses:
    def __init__(self) -> None:
        self.seen: list[str] = []

    def post_filter(self, state: CycleState, pod: Any, statuses: Any) -> tuple[None, Status]:
        self.seen = sorted({s.code.name for s in statuses.values()})
        return None, Status.unschedulable("no")


def test_an_unschedulable_pre_filter_lets_the_others_run() -> None:
    """kubernetes#119770: only UnschedulableAndUnresolvable (or an error) stops PreFilter."""
    calls: list[str] = []
    post = SeesStatuses()
    s = scheduler(cache({"n0": 2}, [("p", 1, 0)]), plugins=[
        ("A", PreFilters(Status.unschedulable("a"), calls, "A")),
        ("B", PreFilters(Status.unschedulable("b", unresolvable=True), calls, "B")),
        ("P", post)], preFilter=["A", "B"], postFilter=["P"])
    s.run(0.0)
    assert calls == ["A", "B"]
    assert post.seen == ["UNSCHEDULABLE_AND_UNRESOLVABLE"]


class NominatesAsTold:
    def __init__(self, answer: tuple[str | None, Status]) -> None:
        self.answer = answer

    def post_filter(self, state: CycleState, pod: Any, statuses: Any) -> Any:
        return self.answer


def test_post_filter_errors_fail_the_pod_as_unschedulable_and_an_empty_nomination_clears() -> None:
    c = cache({"n0": 1}, [("p", 2, 0)])
    post = NominatesAsTold(("n0", Status.success()))
    s = scheduler(c, plugins=[("P", post)], filter=["NodeResourcesFit"], postFilter=["P"])
    s.run(0.0)
    assert c.nominations == {"default/p": "n0"}
    post.answer = ("", Status.unschedulable("preemption is not helpful"))
    s.queue.move_all_to_active_or_backoff(100.0, "NodeAdd")
    s.run(100.0)
    assert c.nominations == {}
    post.answer = (None, Status.error("api down"))
    s.queue.move_all_to_active_or_backoff(200.0, "NodeAdd")
    result = s.run(200.0)[-1]
    assert result.status.code.name == "UNSCHEDULABLE"
    assert _where(s, "default/p") == "unschedulable"


def test_the_nominated_node_is_tried_first_and_taken_unscored() -> None:
    c = cache({"n0": 8, "n1": 2}, [("p", 1, 0)])
    c.nominate(c.snapshot().jobs["default/j-p"].tasks["default/p"], "n1")
    s = scheduler(c, filter=["NodeResourcesFit"], score=[("NodeResourcesLeastAllocated", 1)])
    s.run(0.0)
    assert bound(c) == {"default/p": "n1"}


class Rejects:
    def permit(self, state: CycleState, pod: Any, node: str) -> tuple[Status, float]:
        return (Status.unschedulable("no") if pod.name == "q" else Status.success()), 0.0


def test_a_permit_rejection_in_the_scheduling_cycle_moves_no_other_pod() -> None:
    c = cache({"n0": 2}, [("big", 4, 10), ("q", 1, 0)])
    s = scheduler(c, plugins=[("R", Rejects())], filter=["NodeResourcesFit"], permit=["R"])
    s.run(0.0)
    assert _where(s, "default/big") == "unschedulable"
    assert _where(s, "default/q") == "unschedulable"


class Binding:
    def __init__(self, point: str, answer: Status) -> None:
        self.point, self.answer = point, answer

    def pre_bind(self, state: CycleState, pod: Any, node: str) -> Status:
        return self.answer if self.point == "preBind" else Status.success()

    def reserve(self, state: CycleState, pod: Any, node: str) -> Status:
        return self.answer if self.point == "reserve" else Status.success()


@pytest.mark.parametrize(("point", "answer", "code"), [
    ("preBind", Status.unschedulable("no"), "UNSCHEDULABLE"),   # binding cycle: backoff
    ("preBind", Status.wait(), "ERROR"),                        # a code it may not give
    ("reserve", Status.skip(), "ERROR"),
])
def test_binding_failures_and_unexpected_codes_back_off(point: str, answer: Status,
                                                        code: str) -> None:
    c = cache({"n0": 2}, [("p", 1, 0)])
    s = scheduler(c, plugins=[("X", Binding(point, answer))], filter=["NodeResourcesFit"],
                  **{point: ["X"]})
    result = s.run(0.0)[0]
    assert result.status.code.name == code
    assert _where(s, "default/p") == "backoff"


class FailingPreScore:
    def pre_score(self, state: CycleState, pod: Any, nodes: Any) -> Status:
        return Status.error("boom")


def test_without_score_plugins_pre_score_is_not_run_and_the_first_feasible_node_wins() -> None:
    c = cache({"n0": 2, "n1": 2}, [("p", 1, 0)])
    s = scheduler(c, plugins=[("X", FailingPreScore())], filter=["NodeResourcesFit"],
                  preScore=["X"])
    s.run(0.0)
    assert bound(c) == {"default/p": "n0"}


def test_no_nodes_is_unresolvable_before_pre_filter() -> None:
    calls: list[str] = []
    post = SeesStatuses()
    s = scheduler(cache({}, [("p", 1, 0)]), plugins=[
        ("A", PreFilters(Status.success(), calls, "A")), ("P", post)],
        preFilter=["A"], postFilter=["P"])
    result = s.run(0.0)[0]
    assert result.status.code.name == "UNSCHEDULABLE_AND_UNRESOLVABLE"
    assert calls == [] and post.seen == []


def test_waiting_pods_are_shared_by_every_profile() -> None:
    """kube-scheduler hands every profile's framework one map of waiting pods: a
    plugin of one profile sees (and may allow or reject) a pod waiting in another."""
    seen: dict[str, bool] = {}

    class Gang:
        def __init__(self, handle: Any) -> None:
            self.handle = handle

        def permit(self, state: CycleState, pod: Any, node: str) -> tuple[Status, float]:
            if pod.name == "a":
                return Status.wait(), 30.0
            seen["b"] = self.handle.waiting_pods.get("default/a") is not None
            return Status.success(), 0.0

    factories = {spec.name: spec.factory for spec in BUILTIN_KUBE_PLUGINS}
    factories["Gang"] = lambda args, handle: Gang(handle)

    def framework(name: str) -> Framework:
        return Framework(Registry(factories), Profile(name, {
            "queueSort": (PluginRef("PrioritySort"),), "permit": (PluginRef("Gang"),),
            "bind": (PluginRef("DefaultBinder"),)}))

    c = cache({"n0": 4}, [("a", 1, 10), ("b", 1, 0)])
    c.jobs["default/j-b"].tasks["default/b"].scheduler_name = "other"
    s = PodScheduler(c, {"default-scheduler": framework("default-scheduler"),
                         "other": framework("other")})
    s.run(0.0)
    assert seen == {"b": True}


def test_a_plugin_activates_pods_through_the_cycle_state() -> None:
    """kube-scheduler's PodsToActivate: a plugin names pods to retry now (a gang
    waking its members); once the pod's cycle succeeds they move to active, and the
    same run tries them again."""
    from batchsched.kubesched import PODS_TO_ACTIVATE_KEY, PodsToActivate

    class Wakes:
        def permit(self, state: CycleState, pod: Any, node: str) -> tuple[Status, float]:
            wanted = state.read(PODS_TO_ACTIVATE_KEY)
            assert isinstance(wanted, PodsToActivate)
            if pod.name == "q":
                wanted.pods["default/big"] = pod
            return Status.success(), 0.0

    c = cache({"n0": 2}, [("big", 4, 10), ("q", 1, 0)])
    s = scheduler(c, plugins=[("W", Wakes())], filter=["NodeResourcesFit"], permit=["W"])
    s.run(0.0)
    assert bound(c) == {"default/q": "n0"}
    assert s.attempts["default/big"] == 2          # tried, woken by q's cycle, tried again
    assert _where(s, "default/big") == "unschedulable"


# -- percentageOfNodesToScore: filtering stops once numFeasibleNodesToFind nodes passed,
# and each pod's filtering starts where the last one stopped (nextStartNodeIndex). The
# table's cases are those of kube-scheduler's own TestNumFeasibleNodesToFind.

@pytest.mark.parametrize(("percentage", "nodes", "expected"), [
    (0, 10, 10),        # under 100 nodes: every node
    (40, 10, 10),
    (0, 1000, 420),     # adaptive: 50 - 1000/125 = 42%
    (40, 1000, 400),
    (0, 6000, 300),     # adaptive floor: 5%
    (40, 6000, 2400),
    (0, 100, 100),      # never fewer than 100
    (1, 5000, 100),
    (100, 150, 150),
])
def test_num_feasible_nodes_to_find(percentage: int, nodes: int, expected: int) -> None:
    assert num_feasible_nodes_to_find(percentage, nodes) == expected


class Takes:
    """Filter: the nodes named pass. Score: the highest-numbered node wins."""

    def __init__(self, passing: set[str] | None = None) -> None:
        self.passing = passing
        self.filtered: list[str] = []

    def filter(self, state: CycleState, pod: Any, node: Any) -> Status:
        self.filtered.append(node.name)
        if self.passing is None or node.name in self.passing:
            return Status.success()
        return Status.unschedulable("not this one")

    def score(self, state: CycleState, pod: Any, node: Any) -> tuple[int, Status]:
        return int(node.name[1:]) % 101, Status.success()


def names(count: int) -> dict[str, int]:
    return {f"n{i:03d}": 4 for i in range(count)}


def test_without_scoring_each_pod_starts_where_the_last_one_stopped() -> None:
    # Nothing scores: kube looks for one feasible node, from the rotating start.
    c = cache({"n0": 4, "n1": 4, "n2": 4}, [("a", 1, 3), ("b", 1, 2), ("c", 1, 1)])
    s = PodScheduler(c, Framework(registry(), profile(filter=["NodeResourcesFit"])))
    s.run(0.0)
    assert bound(c) == {"default/a": "n0", "default/b": "n1", "default/c": "n2"}


def test_failed_nodes_count_as_examined() -> None:
    # The first pod examines n0 (refused) and n1 (taken): the next starts at n2.
    takes = Takes({"n1", "n2", "n3"})
    c = cache({"n0": 4, "n1": 4, "n2": 4, "n3": 4}, [("a", 1, 2), ("b", 1, 1)])
    s = PodScheduler(c, Framework(registry(Takes=takes), profile(filter=["Takes"])))
    s.run(0.0)
    assert bound(c) == {"default/a": "n1", "default/b": "n2"}
    assert takes.filtered == ["n0", "n1", "n2"]
    assert s.next_start_node_index == 3


def test_filtering_stops_at_the_profile_s_share_of_nodes() -> None:
    # 200 nodes, 50%: the first 100 feasible nodes from the start are scored, so the
    # best of all (n100, score 100) is not seen by the first pod, and is by the next.
    takes = Takes()
    c = cache(names(200), [("a", 1, 2), ("b", 1, 1)])
    points = profile(filter=["Takes"], score=[("Takes", 1)])
    framework = Framework(registry(Takes=takes), Profile(
        points.scheduler_name, points.plugins, percentage_of_nodes_to_score=50))
    s = PodScheduler(c, framework)
    s.run(0.0)
    assert bound(c) == {"default/a": "n099", "default/b": "n100"}
    assert len(takes.filtered) == 200
    assert s.next_start_node_index == 0


def test_the_scheduler_s_share_applies_when_the_profile_sets_none() -> None:
    takes = Takes()
    c = cache(names(200), [("a", 1, 1)])
    framework = Framework(registry(Takes=takes),
                          profile(filter=["Takes"], score=[("Takes", 1)]))
    s = PodScheduler(c, framework, percentage_of_nodes_to_score=60)
    s.run(0.0)
    assert len(takes.filtered) == 120
    assert bound(c) == {"default/a": "n100"}


def test_the_adaptive_share_under_100_nodes_filters_every_node() -> None:
    takes = Takes()
    c = cache(names(99), [("a", 1, 1)])
    s = PodScheduler(c, Framework(registry(Takes=takes),
                                  profile(filter=["Takes"], score=[("Takes", 1)])))
    s.run(0.0)
    assert len(takes.filtered) == 99
    assert bound(c) == {"default/a": "n098"}


@pytest.mark.parametrize("value", [-1, 101, "50", True, 12.5])
def test_a_percentage_out_of_range_is_refused(value: Any) -> None:
    with pytest.raises(ConfigError, match="percentageOfNodesToScore"):
        Profile.from_mapping({"percentageOfNodesToScore": value})
    c = cache({"n0": 1}, [])
    with pytest.raises(ConfigError, match="percentage_of_nodes_to_score"):
        PodScheduler(c, Framework(registry(), profile()),
                     percentage_of_nodes_to_score=value)


def test_a_profile_reads_the_percentage() -> None:
    assert Profile.from_mapping({"percentageOfNodesToScore": 30}).percentage_of_nodes_to_score \
        == 30
    assert Profile.from_mapping({}).percentage_of_nodes_to_score is None


# -- SchedulerPopFromBackoffQ (kube 1.33, on by default): with no active pod, the first
# pod of backoff (not an error's) is popped at once; backoffs end by whole-second
# windows, and within a window the active order decides.

def _queued(c: MemoryCache) -> dict[str, Any]:
    snapshot = c.snapshot()
    return {task.name: task for job in snapshot.jobs.values() for task in job.tasks.values()}


def test_with_nothing_active_the_first_backoff_pod_is_popped_at_once() -> None:
    pods = _queued(cache({"n0": 1}, [("a", 1, 0)]))
    queue = SchedulingQueue(initial_backoff=1.0, max_backoff=10.0)
    queue.add_unschedulable(pods["a"], 0.0, attempts=2)
    queue.move_all_to_active_or_backoff(1.0, "NodeAdd")
    assert "default/a" in queue.backoff
    popped = queue.pop(1.5)
    assert popped is not None and popped.pod.name == "a"
    old = SchedulingQueue(initial_backoff=1.0, max_backoff=10.0, pop_from_backoff=False)
    old.add_unschedulable(pods["a"], 0.0, attempts=2)
    old.move_all_to_active_or_backoff(1.0, "NodeAdd")
    assert old.pop(1.5) is None


def test_an_error_s_backoff_is_waited_out_by_whole_seconds() -> None:
    pods = _queued(cache({"n0": 1}, [("a", 1, 0)]))
    queue = SchedulingQueue(initial_backoff=1.0, max_backoff=10.0)
    queue.add_backoff(pods["a"], 0.0, attempts=1)  # ends at 1.0: in window 1
    assert queue.pop(0.5) is None
    assert queue.pop(1.5) is None  # still the backoff's window
    popped = queue.pop(2.0)
    assert popped is not None and popped.pod.name == "a"


def test_within_a_window_the_active_order_decides_and_earlier_windows_go_first() -> None:
    pods = _queued(cache({"n0": 1}, [("low", 1, 1), ("high", 1, 9), ("later", 1, 99)]))
    queue = SchedulingQueue(initial_backoff=1.0, max_backoff=60.0)
    queue.add_unschedulable(pods["low"], 2.2, attempts=1)     # ends 3.2: window 3
    queue.add_unschedulable(pods["high"], 2.7, attempts=1)    # ends 3.7: window 3
    queue.add_unschedulable(pods["later"], 2.0, attempts=2)   # ends 4.0: window 4
    queue.move_all_to_active_or_backoff(2.9, "NodeAdd")
    order = []
    while (queued := queue.pop(2.9)) is not None:
        order.append(queued.pod.name)
    assert order == ["high", "low", "later"]


def test_without_a_maximum_backoff_there_is_none() -> None:
    pods = _queued(cache({"n0": 1}, [("a", 1, 0)]))
    queue = SchedulingQueue(initial_backoff=0.0, max_backoff=0.0)
    queue.add_backoff(pods["a"], 5.0, attempts=3)
    popped = queue.pop(5.0)
    assert popped is not None and popped.pod.name == "a"


def test_the_loop_tries_a_backed_off_pod_in_the_same_run_once_nothing_is_active() -> None:
    # b fails (n0 is full); a node is added, the event moves b to backoff (its backoff
    # runs to 1.0), and with nothing active b is tried at once, not a second later.
    c = cache({"n0": 1}, [("a", 1, 5), ("b", 1, 1)])
    s = scheduler(c, filter=["NodeResourcesFit"])
    s.run(0.0)
    assert bound(c) == {"default/a": "n0"}
    assert "default/b" in s.queue.unschedulable
    c.add_node(NodeInfo.create("n1", Resource.from_mapping(
        {"cpu": 1, "memory": "4Gi", "pods": 10})))
    s.queue.move_all_to_active_or_backoff(0.2, "NodeAdd")
    assert "default/b" in s.queue.backoff
    s.run(0.2)
    assert bound(c) == {"default/a": "n0", "default/b": "n1"}


# -- RunFilterPluginsWithNominatedPods: pods of the pod's priority or higher nominated
# to a node are on it for the first filter pass (added through PreFilter's add_pod),
# and the pod must pass without them too.

def nominated_cache(nominee_priority: int) -> MemoryCache:
    """n0 and n1 of 2 cpus; ``hi`` (2 cpus) waits behind a scheduling gate, nominated to
    n0 by an earlier preemption; ``lo`` (1 cpu, priority 5) is to be scheduled."""
    doc = {
        "version": 1, "name": "nominees", "config": {"actions": ""},
        "nodes": [{"name": n, "allocatable": {"cpu": 2, "memory": "4Gi", "pods": 10}}
                  for n in ("n0", "n1")],
        "jobs": [{"name": "j-hi", "minMember": 1, "phase": "Inqueue"},
                 {"name": "j-lo", "minMember": 1, "phase": "Inqueue"}],
        "tasks": [{"name": "hi", "job": "j-hi", "requests": {"cpu": 2},
                   "priority": nominee_priority, "nominatedNodeName": "n0",
                   "schedulingGates": ["example.com/wait"]},
                  {"name": "lo", "job": "j-lo", "requests": {"cpu": 1}, "priority": 5}],
    }
    return parse_scenario(doc, source="<test>").build_cache()


@pytest.mark.parametrize(("nominee_priority", "node"), [(10, "n1"), (5, "n1"), (1, "n0")])
def test_a_pod_leaves_room_for_nominees_it_must_yield_to(nominee_priority: int,
                                                         node: str) -> None:
    c = nominated_cache(nominee_priority)
    s = scheduler(c, preEnqueue=["SchedulingGates"], filter=["NodeResourcesFit"])
    s.run(0.0)
    assert bound(c) == {"default/lo": node}


class Company:
    """PreFilter with add_pod (records what is added); Filter: a node passes only with
    another pod on it (an affinity-like rule, which the second pass exists for)."""

    def __init__(self, fail_add: bool = False) -> None:
        self.added: list[tuple[str, str]] = []
        self.fail_add = fail_add

    def pre_filter(self, state: CycleState, pod: Any) -> tuple[None, Status]:
        return None, Status.success()

    def add_pod(self, state: CycleState, pod: Any, added: Any, node: Any) -> Status:
        self.added.append((added.name, node.name))
        return Status.unschedulable("cannot add") if self.fail_add else Status.success()

    def filter(self, state: CycleState, pod: Any, node: Any) -> Status:
        return Status.success() if node.tasks else Status.unschedulable("alone")


def test_nominees_are_added_through_pre_filter_and_the_pod_must_fit_without_them() -> None:
    c, company = nominated_cache(10), Company()
    s = scheduler(c, plugins=[("Company", company)], preEnqueue=["SchedulingGates"],
                  preFilter=["Company"], filter=["Company"])
    results = s.run(0.0)
    # n0 passes with hi on it, not without: the pod fits nowhere.
    assert company.added == [("hi", "n0")]
    assert bound(c) == {}
    assert [r.status.code.name for r in results if r.pod == "default/lo"] == ["UNSCHEDULABLE"]


def test_a_failing_add_pod_is_an_error() -> None:
    c = nominated_cache(10)
    s = scheduler(c, plugins=[("Company", Company(fail_add=True))],
                  preEnqueue=["SchedulingGates"], preFilter=["Company"], filter=["Company"])
    results = s.run(0.0)
    lo = [r for r in results if r.pod == "default/lo"]
    assert lo and lo[0].status.code.name == "ERROR"
    assert 'running AddPod on PreFilter plugin "Company"' in lo[0].status.message


def test_a_failed_binding_clears_the_pod_s_nomination() -> None:
    # kube-scheduler fails an assumed pod with clearNominatedNode.
    c = cache({"n0": 2, "n1": 2}, [("a", 1, 1)])
    c.nominate(next(t for j in c.snapshot().jobs.values() for t in j.tasks.values()), "n1")
    s = scheduler(c, plugins=[("X", Binding("preBind", Status.error("down")))],
                  filter=["NodeResourcesFit"], preBind=["X"])
    s.run(0.0)
    assert c.binds == []
    assert "default/a" not in c.nominations


# -- NodeResourcesFit and LeastAllocated as kube-scheduler's (fit.go, least_allocated.go,
# resource_allocation.go), and FitError's message (types.go).

def kube_cluster(nodes: list[dict[str, Any]], running: list[dict[str, Any]],
                 pod: dict[str, Any]) -> MemoryCache:
    """``nodes`` as scenario nodes; ``running`` pods already on them; ``pod`` pending."""
    tasks = [{"job": f"j-{t['name']}", "phase": "Running", **t} for t in running]
    tasks.append({"job": f"j-{pod['name']}", **pod})
    doc = {
        "version": 1, "name": "kube", "config": {"actions": ""}, "nodes": nodes,
        "jobs": [{"name": t["job"], "minMember": 1,
                  "phase": "Running" if t.get("node") else "Inqueue"} for t in tasks],
        "tasks": tasks,
    }
    return parse_scenario(doc, source="<test>").build_cache()


def fit_scheduler(c: MemoryCache, **args: Any) -> PodScheduler:
    points = profile(filter=["NodeResourcesFit"], score=[("NodeResourcesLeastAllocated", 1)])
    config = {"NodeResourcesFit": args} if args else {}
    return PodScheduler(c, Framework(registry(), Profile(points.scheduler_name, points.plugins,
                                                         config)))


def node(name: str, cpu: Any, memory: str, pods: int = 10, **more: Any) -> dict[str, Any]:
    return {"name": name, "allocatable": {"cpu": cpu, "memory": memory, "pods": pods, **more}}


@pytest.mark.parametrize(("nodes", "running", "pod", "message"), [
    ([node("n1", 1, "1Gi")], [], {"name": "p", "requests": {"cpu": 2, "memory": "2Gi"}},
     "0/1 nodes are available: 1 Insufficient cpu, 1 Insufficient memory."),
    ([node("n1", 4, "4Gi", pods=1)], [{"name": "r", "node": "n1"}], {"name": "p"},
     "0/1 nodes are available: 1 Too many pods."),
    ([node("n1", 1, "8Gi"), node("n2", 1, "8Gi"), node("n3", 8, "1Gi")], [],
     {"name": "p", "requests": {"cpu": 2, "memory": "2Gi"}},
     "0/3 nodes are available: 1 Insufficient memory, 2 Insufficient cpu."),
    ([node("n1", 4, "4Gi")], [], {"name": "p", "requests": {"example.com/foo": 1,
                                                            "nvidia.com/gpu": 1}},
     "0/1 nodes are available: 1 Insufficient example.com/foo, 1 Insufficient nvidia.com/gpu."),
])
def test_every_reason_a_node_refuses_is_counted_in_the_message(
        nodes: list[dict[str, Any]], running: list[dict[str, Any]], pod: dict[str, Any],
        message: str) -> None:
    c = kube_cluster(nodes, running, pod)
    [result] = [r for r in fit_scheduler(c).run(0.0) if r.pod == "default/p"]
    assert result.status.message == message


def test_ignored_extended_resources_are_not_checked() -> None:
    c = kube_cluster([node("n1", 4, "4Gi")], [],
                     {"name": "p", "requests": {"cpu": 1, "example.com/foo": 1,
                                                "vendor.io/bar": 1}})
    view = c.snapshot()
    pod = next(t for job in view.jobs.values() for t in job.tasks.values())
    fit = NodeResourcesFit.from_arguments({"ignoredResources": ["example.com/foo"],
                                           "ignoredResourceGroups": ["vendor.io"]})
    assert fit.filter(CycleState(), pod, view.nodes["n1"]).is_success()
    assert NodeResourcesFit().filter(CycleState(), pod, view.nodes["n1"]).reasons == (
        "Insufficient example.com/foo", "Insufficient vendor.io/bar")


@pytest.mark.parametrize(("nodes", "running", "pod", "code"), [
    # Larger than the whole node: no eviction helps (kube-scheduler's Unresolvable).
    ([node("n1", 4, "4Gi")], [], {"name": "p", "requests": {"cpu": 8}},
     Code.UNSCHEDULABLE_AND_UNRESOLVABLE),
    ([node("n1", 4, "4Gi")], [], {"name": "p", "requests": {"example.com/foo": 1}},
     Code.UNSCHEDULABLE_AND_UNRESOLVABLE),
    # Short only of what others hold, or of pod slots: evicting may help.
    ([node("n1", 4, "4Gi")], [{"name": "r", "node": "n1", "requests": {"cpu": 3}}],
     {"name": "p", "requests": {"cpu": 2}}, Code.UNSCHEDULABLE),
    ([node("n1", 4, "4Gi", pods=1)], [{"name": "r", "node": "n1"}], {"name": "p"},
     Code.UNSCHEDULABLE),
    # One unresolvable shortfall among others makes the node's answer unresolvable.
    ([node("n1", 4, "4Gi")], [{"name": "r", "node": "n1", "requests": {"cpu": 3}}],
     {"name": "p", "requests": {"cpu": 2, "memory": "8Gi"}},
     Code.UNSCHEDULABLE_AND_UNRESOLVABLE),
])
def test_a_request_larger_than_the_node_is_unresolvable(
        nodes: list[dict[str, Any]], running: list[dict[str, Any]], pod: dict[str, Any],
        code: Code) -> None:
    view = kube_cluster(nodes, running, pod).snapshot()
    task = view.jobs[f"default/j-{pod['name']}"].tasks[f"default/{pod['name']}"]
    assert NodeResourcesFit().filter(CycleState(), task, view.nodes["n1"]).code == code


@pytest.mark.parametrize(("nodes", "running", "pod", "chosen"), [
    # A best-effort pod counts 100m and 200Mi, on the node and as the pod: n2 is freer.
    ([node("n1", 4, "4Gi"), node("n2", 4, "4Gi")], [{"name": "r", "node": "n1"}],
     {"name": "p"}, "n2"),
    ([node("n1", 1, "1Gi"), node("n2", 2, "2Gi")], [], {"name": "p"}, "n2"),
    # A resource the node has none of is left out of its mean (n1: cpu alone, 87).
    ([node("n1", 8, "0"), node("n2", 4, "1Gi")], [], {"name": "p", "requests": {"cpu": 1}},
     "n1"),
])
def test_least_allocated_scores_as_kube_does(
        nodes: list[dict[str, Any]], running: list[dict[str, Any]], pod: dict[str, Any],
        chosen: str) -> None:
    c = kube_cluster(nodes, running, pod)
    fit_scheduler(c).run(0.0)
    assert bound(c)["default/p"] == chosen


def test_least_allocated_sees_the_pods_placed_before_on_the_node() -> None:
    # Two best-effort pods, two like nodes: the second sees the first on n1.
    c = cache({"n1": 4, "n2": 4}, [("a", 0, 2), ("b", 0, 1)])
    fit_scheduler(c).run(0.0)
    assert sorted(bound(c).values()) == ["n1", "n2"]


def test_built_in_plugins_refuse_arguments_they_do_not_take() -> None:
    c = kube_cluster([node("n1", 4, "4Gi")], [], {"name": "p"})
    with pytest.raises(PluginError, match="unknown argument"):
        fit_scheduler(c, ignoredResource=["x"]).run(0.0)
    points = profile(preEnqueue=["SchedulingGates"])
    with pytest.raises(PluginError, match="takes no arguments"):
        PodScheduler(c, Framework(registry(), Profile(
            points.scheduler_name, points.plugins, {"SchedulingGates": {"x": 1}}))).run(0.0)


class Names:
    """PreFilter naming nodes (kube's PreFilterResult)."""

    def __init__(self, *nodes: str) -> None:
        self.nodes = set(nodes)

    def pre_filter(self, state: CycleState, pod: Any) -> tuple[set[str], Status]:
        return set(self.nodes), Status.success()


def test_nodes_a_pre_filter_result_leaves_out_are_counted_under_its_plugins() -> None:
    c = cache({"n0": 4, "n1": 1, "n2": 4}, [("p", 2, 0)])
    s = scheduler(c, plugins=[("Only", Names("n1"))], preFilter=["Only"],
                  filter=["NodeResourcesFit"])
    [result] = s.run(0.0)
    assert result.status.message == ("0/3 nodes are available: 1 Insufficient cpu, "
                                     "2 node(s) didn't satisfy plugin(s) [Only].")


@pytest.mark.parametrize(("plugins", "message"), [
    ([("A", Names())], "node(s) didn't satisfy plugin A"),
    ([("B", Names("n0")), ("A", Names("n1"))],
     "node(s) didn't satisfy plugin(s) [A B] simultaneously"),
])
def test_pre_filter_results_that_leave_no_node_say_whose_they_were(
        plugins: list[tuple[str, Any]], message: str) -> None:
    c = cache({"n0": 4, "n1": 4}, [("p", 1, 0)])
    s = scheduler(c, plugins=plugins, preFilter=[name for name, _ in plugins],
                  filter=["NodeResourcesFit"])
    [result] = s.run(0.0)
    assert result.status.message == f"0/2 nodes are available: {message}."


class RejectsUnresolvably:
    def permit(self, state: CycleState, pod: Any, node: str) -> tuple[Status, float]:
        return Status.unschedulable("nope", unresolvable=True), 0.0


def test_a_permit_rejection_keeps_the_plugin_s_own_status() -> None:
    """kube's RunPermitPlugins returns the plugin's status (its code and message) with
    the plugin's name; the scheduling cycle words it as a fit error on the one node."""
    c = cache({"n0": 2}, [("p", 1, 0)])
    s = scheduler(c, plugins=[("X", RejectsUnresolvably())], filter=["NodeResourcesFit"],
                  permit=["X"])
    result = s.run(0.0)[0]
    assert result.status.code.name == "UNSCHEDULABLE_AND_UNRESOLVABLE"
    assert (result.status.message, result.status.plugin) == (
        "0/1 nodes are available: 1 nope.", "X")


class WaitsFor:
    def __init__(self, name: str) -> None:
        self.name = name

    def permit(self, state: CycleState, pod: Any, node: str) -> tuple[Status, float]:
        return (Status.wait(), 100.0) if pod.name == self.name else (Status.success(), 0.0)


def test_deleting_a_pod_waiting_at_permit_moves_the_pods_it_kept_out() -> None:
    """kube's deletePodFromSchedulingQueue: RejectWaitingPod, then
    MoveAllToActiveOrBackoffQueue(AssignedPodDelete): the pod its room kept out binds
    at the next run, not after the 300 s unschedulable timeout."""
    c = cache({"n0": 2}, [("p0", 2, 10), ("p1", 2, 0)])
    s = scheduler(c, plugins=[("W", WaitsFor("p0"))], filter=["NodeResourcesFit"],
                  permit=["W"])
    s.run(0.0)
    assert _where(s, "default/p1") == "unschedulable"
    c.delete_task(c.jobs["default/j-p0"].tasks["default/p0"])
    s.run(2.0)
    assert bound(c) == {"default/p1": "n0"}


def test_a_plugin_may_keep_its_handle_s_waiting_pods_from_when_it_was_built() -> None:
    """kube's handle gives one waiting-pods map for the framework's life: a plugin that
    kept it at build time sees the pods that wait, and can let them go."""
    kept: list[Any] = []

    class Gang:
        def __init__(self, handle: Any) -> None:
            self.waiting = handle.waiting_pods
            kept.append(self)

        def permit(self, state: CycleState, pod: Any, node: str) -> tuple[Status, float]:
            if pod.name == "a":
                return Status.wait(), 100.0
            for waiting in self.waiting:
                waiting.allow("Gang")
            return Status.success(), 0.0

    factories = {spec.name: spec.factory for spec in BUILTIN_KUBE_PLUGINS}
    factories["Gang"] = lambda args, handle: Gang(handle)
    framework = Framework(Registry(factories), Profile("default-scheduler", {
        "queueSort": (PluginRef("PrioritySort"),), "permit": (PluginRef("Gang"),),
        "bind": (PluginRef("DefaultBinder"),)}))
    c = cache({"n0": 4}, [("a", 1, 10), ("b", 1, 0)])
    s = PodScheduler(c, framework)
    s.run(0.0)
    assert kept[0].waiting is framework.waiting_pods
    assert bound(c) == {"default/b": "n0", "default/a": "n0"}


# -- kube-scheduler's failure paths, kept after a second audit (schedule_one.go, framework.go,
# -- scheduling_queue.go, resource_allocation.go, waiting_pods_map.go) ------------------------

def _pod(c: MemoryCache, name: str) -> Any:
    return c.snapshot().jobs[f"default/j-{name}"].tasks[f"default/{name}"]


class FailsFilter:
    def filter(self, state: CycleState, pod: Any, node: Any) -> Status:
        return Status.error("api down")


@pytest.mark.parametrize("case", ["filter error", "no nodes", "no postFilter plugin"])
def test_a_failure_clears_the_pod_s_nomination_unless_a_post_filter_nominates(case: str) -> None:
    """kube's schedulingCycle returns clearNominatedNode on every failure but a
    PostFilter's: an error, no nodes, a pod nothing may preempt for."""
    nodes = {} if case == "no nodes" else {"n0": 1, "n1": 1}
    c = cache(nodes, [("p", 2, 0)])
    c.nominate(_pod(c, "p"), "n1")
    if case == "filter error":
        s = scheduler(c, plugins=[("F", FailsFilter())], filter=["F"])
    else:
        s = scheduler(c, filter=["NodeResourcesFit"])
    s.run(0.0)
    assert c.nominations == {}
    assert _pod(c, "p").nominated_node == ""


def test_post_filter_rejections_give_every_reason_the_first_plugin_and_the_pod_s_message() -> None:
    """kube's RunPostFilterPlugins: Unschedulable with every rejecting plugin's reasons,
    named after the first; FitError.Error appends that message."""
    c = cache({"n0": 1}, [("p", 2, 0)])
    s = scheduler(c, plugins=[("A", NominatesAsTold((None, Status.unschedulable("a says no")))),
                              ("B", NominatesAsTold((None, Status.unschedulable("b says no"))))],
                  filter=["NodeResourcesFit"], postFilter=["A", "B"])
    framework = s.frameworks["default-scheduler"]
    nominated, status = framework.run_post_filter(CycleState(), _pod(c, "p"), {})
    assert nominated is None
    assert (status.code.name, status.plugin, status.reasons) == (
        "UNSCHEDULABLE", "A", ("a says no", "b says no"))
    result = s.run(0.0)[0]
    assert result.status.message == \
        "0/1 nodes are available: 1 Insufficient cpu. a says no, b says no"


def test_the_last_unschedulable_pre_filter_answer_is_the_pod_s() -> None:
    """kube's RunPreFilterPlugins keeps the last Unschedulable (``returnStatus = s``)."""
    calls: list[str] = []
    s = scheduler(cache({"n0": 2}, [("p", 1, 0)]), plugins=[
        ("A", PreFilters(Status.unschedulable("a says no"), calls, "A")),
        ("B", PreFilters(Status.unschedulable("b says no"), calls, "B"))],
        preFilter=["A", "B"])
    result = s.run(0.0)[0]
    assert result.status.message == "0/1 nodes are available: b says no."


def test_least_allocated_scores_no_extended_resource_the_pod_does_not_ask_for() -> None:
    """kube's calculateResourceAllocatableRequest: (0, 0) for a scalar resource the pod
    asks none of, so a node's idle GPUs do not make it look emptier."""
    doc = {
        "version": 1, "name": "least", "config": {"actions": ""},
        "nodes": [{"name": "n0", "allocatable": {"cpu": 4, "memory": "4Gi", "pods": 10,
                                                  "nvidia.com/gpu": 4}},
                  {"name": "n1", "allocatable": {"cpu": 4, "memory": "4Gi", "pods": 10}}],
        "jobs": [{"name": "j-r0", "minMember": 1, "phase": "Running"},
                 {"name": "j-r1", "minMember": 1, "phase": "Running"},
                 {"name": "j-p", "minMember": 1, "phase": "Inqueue"}],
        "tasks": [{"name": "r0", "job": "j-r0", "phase": "Running", "node": "n0",
                   "requests": {"cpu": "1500m", "memory": "2Gi"}},
                  {"name": "r1", "job": "j-r1", "phase": "Running", "node": "n1",
                   "requests": {"cpu": 1, "memory": "1Gi"}},
                  {"name": "p", "job": "j-p", "requests": {"cpu": 1, "memory": "1Gi"}}],
    }
    c = parse_scenario(doc, source="<test>").build_cache()
    weights = [{"name": name, "weight": 1} for name in ("cpu", "memory", "nvidia.com/gpu")]
    raw = {"plugins": {"queueSort": {"enabled": [{"name": "PrioritySort"}]},
                       "filter": {"enabled": [{"name": "NodeResourcesFit"}]},
                       "score": {"enabled": [{"name": "NodeResourcesLeastAllocated"}]},
                       "bind": {"enabled": [{"name": "DefaultBinder"}]}},
           "pluginConfig": [{"name": "NodeResourcesLeastAllocated",
                             "args": {"resources": weights}}]}
    framework = Framework(registry(), Profile.from_mapping(raw))
    view = c.snapshot()
    plugin = framework.instances["NodeResourcesLeastAllocated"]
    pod = view.jobs["default/j-p"].tasks["default/p"]
    assert [plugin.score(CycleState(), pod, view.nodes[n])[0] for n in ("n0", "n1")] == [31, 50]
    PodScheduler(c, framework).run(0.0)
    assert bound(c) == {"default/p": "n1"}


def open_gate() -> Gate:
    gate = Gate()
    gate.open = True
    return gate


def test_pre_enqueue_is_asked_again_when_an_admitted_pod_moves_back() -> None:
    """kube's moveToActiveQ runs PreEnqueue on every move: a pod it now refuses is
    gated among the unschedulable pods, and never tried."""
    c = cache({"n0": 1}, [("p", 2, 0)])
    gate = open_gate()
    s = scheduler(c, plugins=[("G", gate)], preEnqueue=["G"], filter=["NodeResourcesFit"])
    assert [r.status.code.name for r in s.run(0.0)] == ["UNSCHEDULABLE"]
    gate.open = False
    assert s.queue.move_all_to_active_or_backoff(100.0, "NodeAdd") == 0
    assert s.queue.unschedulable["default/p"].gated
    assert s.run(100.0) == []
    s.queue.activate(["default/p"])
    assert _where(s, "default/p") == "unschedulable"
    gate.open = True
    s.queue.activate(["default/p"])
    assert _where(s, "default/p") == "active"


def test_another_scheduler_s_nominee_holds_no_room() -> None:
    """kube's nominator holds only the pods of the scheduler's own profiles."""
    doc = {
        "version": 1, "name": "nominees", "config": {"actions": ""},
        "nodes": [{"name": n, "allocatable": {"cpu": 2, "memory": "4Gi", "pods": 10}}
                  for n in ("n0", "n1")],
        "jobs": [{"name": f"j-{n}", "minMember": 1, "phase": "Inqueue"} for n in ("hi", "lo")],
        "tasks": [{"name": "hi", "job": "j-hi", "requests": {"cpu": 2}, "priority": 10,
                   "nominatedNodeName": "n0", "schedulerName": "other-scheduler"},
                  {"name": "lo", "job": "j-lo", "requests": {"cpu": 1}, "priority": 5}],
    }
    c = parse_scenario(doc, source="<test>").build_cache()
    scheduler(c, filter=["NodeResourcesFit"]).run(0.0)
    assert bound(c) == {"default/lo": "n0"}


class WaitsNinetySeconds:
    def permit(self, state: CycleState, pod: Any, node: str) -> tuple[Status, float]:
        return Status.wait(), 90.5


def test_a_permit_timeout_says_how_long_the_pod_waited() -> None:
    c = cache({"n0": 2}, [("p", 1, 0)])
    s = scheduler(c, plugins=[("W", WaitsNinetySeconds())], filter=["NodeResourcesFit"],
                  permit=["W"])
    s.run(0.0)
    result = s.run(91.0)[0]
    # kube's bindingCycle: a rejection while waiting is a fit error on the pod's node.
    assert result.status.message == \
        "0/1 nodes are available: 1 rejected due to timeout after waiting 1m30.5s at plugin W."


class RaisesAtPostFilter:
    def post_filter(self, state: CycleState, pod: Any, statuses: Any) -> Any:
        raise RuntimeError("boom")


def test_a_post_filter_raising_keeps_the_pod_s_nomination_as_an_error_status_does() -> None:
    """kube's RunPostFilterPlugins returns no result with an error: no nomination
    change; a plugin raising is an error status."""
    c = cache({"n0": 1}, [("p", 2, 0)])
    c.nominate(_pod(c, "p"), "n0")
    s = scheduler(c, plugins=[("P", RaisesAtPostFilter())], filter=["NodeResourcesFit"],
                  postFilter=["P"])
    assert s.run(0.0)[0].status.code.name == "UNSCHEDULABLE"
    assert c.nominations == {"default/p": "n0"}


class ClosesTheGateAndFails:
    """A filter that errs once, closing the pod's gate meanwhile."""

    def __init__(self, gate: Gate) -> None:
        self.gate, self.calls = gate, 0

    def filter(self, state: CycleState, pod: Any, node: Any) -> Status:
        self.calls += 1
        if self.calls > 1:
            return Status.success()
        self.gate.open = False
        return Status.error("api down")


def test_a_pod_an_error_sends_to_backoff_is_asked_pre_enqueue_on_the_way_in() -> None:
    """kube's moveToBackoffQ runs PreEnqueue (SchedulerPopFromBackoffQ): a pod it now
    refuses waits gated instead of popping out of backoff."""
    c = cache({"n0": 2}, [("p", 1, 0)])
    gate = open_gate()
    s = scheduler(c, plugins=[("G", gate), ("F", ClosesTheGateAndFails(gate))],
                  preEnqueue=["G"], filter=["F"])
    assert [r.status.code.name for r in s.run(0.0)] == ["ERROR"]
    assert _where(s, "default/p") == "unschedulable"
    assert s.run(5.0) == [] and bound(c) == {}
    gate.open = True
    s.run(6.0)
    assert bound(c) == {"default/p": "n0"}


def _failed_then_gated_again_then_admissible() -> PodScheduler:
    """A pod that failed at 0 (backoff until 1), gated again by an event at 0.5, whose
    gate then opens."""
    c = cache({"n0": 1}, [("p", 2, 0)])
    gate = open_gate()
    s = scheduler(c, plugins=[("G", gate)], preEnqueue=["G"], filter=["NodeResourcesFit"])
    s.run(0.0)
    gate.open = False
    s.queue.move_all_to_active_or_backoff(0.5, "NodeAdd")
    gate.open = True
    return s


def test_a_failed_pod_gated_again_keeps_its_attempts_when_admitted() -> None:
    s = _failed_then_gated_again_then_admissible()
    s.run(0.6, max_pods=0)
    queued = s.queue.active["default/p"]
    assert (queued.attempts, queued.since) == (1, 0.0)


def test_a_gated_pod_an_event_admits_goes_to_active_even_within_its_backoff() -> None:
    """kube's isPodBackingoff: a gated pod is not backing off."""
    s = _failed_then_gated_again_then_admissible()
    assert s.queue.move_all_to_active_or_backoff(0.6, "NodeAdd") == 1
    assert _where(s, "default/p") == "active"


# -- kube-scheduler's wording and requeueing, as its framework runtime and queue keep them --


class RejectsSilently:
    def pre_filter(self, state: CycleState, pod: Any) -> Status:
        return Status(Code.UNSCHEDULABLE)


class Errs:
    def pre_filter(self, state: CycleState, pod: Any) -> Status:
        return Status.error("boom")

    def filter(self, state: CycleState, pod: Any, node: Any) -> Status:
        return Status.error("boom")

    def post_filter(self, state: CycleState, pod: Any, statuses: Any) -> tuple[None, Status]:
        return None, Status.error("boom")


@pytest.mark.parametrize(("points", "message"), [
    ({"preFilter": ["X"]}, 'running PreFilter plugin "X": boom'),
    ({"filter": ["X"]}, 'running "X" filter plugin: boom'),
    # A PostFilter's error is its own message, after the pod's filter reasons.
    ({"filter": ["NodeResourcesFit"], "postFilter": ["X"]},
     "0/1 nodes are available: 1 Insufficient cpu. boom"),
])
def test_errors_are_worded_as_kube_scheduler_words_them(points: dict[str, list[str]],
                                                        message: str) -> None:
    s = scheduler(cache({"n0": 1}, [("p", 2, 0)]), plugins=[("X", Errs())], **points)
    assert s.run(0.0)[0].status.message == message


def test_a_pre_filter_rejection_without_a_reason_adds_nothing_to_the_message() -> None:
    s = scheduler(cache({"n0": 2}, [("p", 1, 0)]), plugins=[("A", RejectsSilently())],
                  preFilter=["A"])
    assert s.run(0.0)[0].status.message == "0/1 nodes are available:"


class ReserveRefuses:
    def reserve(self, state: CycleState, pod: Any, node: str) -> Status:
        return Status.unschedulable("quota exhausted")


def test_a_reserve_rejection_is_a_fit_error_on_the_pod_s_node() -> None:
    s = scheduler(cache({"n0": 2}, [("p", 1, 0)]), plugins=[("R", ReserveRefuses())],
                  filter=["NodeResourcesFit"], reserve=["R"])
    result = s.run(0.0)[0]
    assert (result.status.message, result.status.plugin) == (
        "0/1 nodes are available: 1 quota exhausted.", "R")


class WaitsOnce:
    def __init__(self) -> None:
        self.seen: set[str] = set()

    def permit(self, state: CycleState, pod: Any, node: str) -> tuple[Status, float]:
        if pod.uid in self.seen:
            return Status.success(), 0.0
        self.seen.add(pod.uid)
        return Status.wait(), 10.0


def test_an_event_while_a_pod_waits_at_permit_requeues_it_when_it_fails() -> None:
    # kube's in-flight pods: an event received while the pod was being scheduled may
    # have helped, so its failure sends it to backoff (popped at once with nothing
    # active), not to wait for another event.
    c = cache({"n0": 2}, [("w", 1, 0)])
    s = scheduler(c, plugins=[("W", WaitsOnce())], filter=["NodeResourcesFit"], permit=["W"])
    s.run(0.0)
    s.queue.move_all_to_active_or_backoff(5.0, "NodeAdd")
    s.run(11.0)   # the wait times out, the pod is requeued and tried again
    assert bound(c) == {"default/w": "n0"}


def test_without_an_event_a_pod_that_timed_out_at_permit_waits_unschedulable() -> None:
    c = cache({"n0": 2}, [("w", 1, 0)])
    s = scheduler(c, plugins=[("W", WaitsOnce())], filter=["NodeResourcesFit"], permit=["W"])
    s.run(0.0)
    s.run(11.0)
    assert c.binds == [] and _where(s, "default/w") == "unschedulable"


def test_no_nodes_sends_the_pod_to_backoff_not_to_wait_for_an_event() -> None:
    c = cache({}, [("p", 1, 0)])
    s = scheduler(c, filter=["NodeResourcesFit"])
    s.run(0.0)
    assert _where(s, "default/p") == "backoff"
    c.add_node(NodeInfo.create("n0", Resource(2000, 4 * 2**30, {"pods": 10})))
    s.run(2.0)
    assert bound(c) == {"default/p": "n0"}


def test_a_gated_pod_keeps_when_it_was_queued_when_its_gate_lifts() -> None:
    # PrioritySort compares the time a pod was queued (kube's Timestamp, set when it was
    # added): p1, queued first and gated, goes before p2 once its gate lifts.
    doc = {"version": 1, "name": "gates", "config": {"actions": ""},
           "nodes": [{"name": "n0", "allocatable": {"cpu": 1, "memory": "4Gi", "pods": 10}}],
           "jobs": [{"name": f"j-{p}", "minMember": 1, "phase": "Inqueue"} for p in ("p1", "p2")],
           "tasks": [{"name": "p1", "job": "j-p1", "requests": {"cpu": 1},
                      "schedulingGates": ["g"]},
                     {"name": "p2", "job": "j-p2", "requests": {"cpu": 1}}]}
    c = parse_scenario(doc, source="<test>").build_cache()
    later = parse_scenario(doc, source="<test>").build_cache().jobs["default/j-p2"]
    c.delete_job("default/j-p2")
    s = scheduler(c, preEnqueue=["SchedulingGates"], filter=["NodeResourcesFit"])
    s.run(0.0)
    c.add_job(later)
    s.run(5.0, max_pods=0)
    c.set_scheduling_gates("default/j-p1", "default/p1", [])
    s.run(6.0)
    assert bound(c) == {"default/p1": "n0"}


def test_an_unschedulable_pod_is_flushed_only_after_more_than_the_timeout() -> None:
    s = scheduler(cache({"n0": 1}, [("p", 2, 0)]), filter=["NodeResourcesFit"])
    s.run(0.0)
    assert s.run(300.0) == []
    assert [r.pod for r in s.run(300.5)] == ["default/p"]


class NaNScore:
    def score(self, state: CycleState, pod: Any, node: Any) -> tuple[float, Status]:
        return (float("nan") if pod.name == "bad" else 1.0), Status.success()


def test_a_score_that_is_not_a_number_fails_that_pod_only() -> None:
    c = cache({"n0": 2, "n1": 2}, [("bad", 1, 10), ("good", 1, 0)])
    s = scheduler(c, plugins=[("S", NaNScore())], filter=["NodeResourcesFit"],
                  score=[("S", 1)])
    results = {r.pod: r.status for r in s.run(0.0)}
    assert results["default/bad"].code == Code.ERROR and results["default/bad"].plugin == "S"
    assert bound(c) == {"default/good": "n0"}


class RaisingSort:
    def less(self, left: Any, right: Any) -> bool:
        raise KeyError("priorityClassName")


def test_a_queue_sort_plugin_raising_is_a_plugin_error_naming_it() -> None:
    c = cache({"n0": 4}, [("a", 1, 0), ("b", 1, 0)])
    framework = Framework(registry(BadSort=RaisingSort()), Profile("default-scheduler", {
        "queueSort": (PluginRef("BadSort"),), "bind": (PluginRef("DefaultBinder"),)}))
    with pytest.raises(PluginError, match="'BadSort' raised at queueSort") as info:
        PodScheduler(c, framework).run(0.0)
    assert info.value.plugin == "BadSort"


def test_a_profile_without_a_scheduler_name_is_the_default_scheduler_s() -> None:
    assert Profile.from_mapping({"schedulerName": None}).scheduler_name == "default-scheduler"
    with pytest.raises(ConfigError, match="scheduler name is needed"):
        Profile.from_mapping({"schedulerName": ""})



class CmpSort:
    def less(self, left: Any, right: Any) -> Any:
        return -1 if left.name < right.name else 1


def test_a_queue_sort_answering_no_bool_is_a_plugin_error() -> None:
    c = cache({"n0": 4}, [("a", 1, 0), ("b", 1, 0)])
    framework = Framework(registry(S=CmpSort()), Profile("default-scheduler", {
        "queueSort": (PluginRef("S"),), "bind": (PluginRef("DefaultBinder"),)}))
    with pytest.raises(PluginError, match="'S' raised at queueSort: TypeError: less answered"):
        PodScheduler(c, framework).run(0.0)


class WaitsForTimeout:
    def __init__(self, timeout: Any) -> None:
        self.timeout = timeout

    def permit(self, state: CycleState, pod: Any, node: str) -> tuple[Status, Any]:
        return Status.wait(), self.timeout


@pytest.mark.parametrize("timeout", [None, float("nan"), "30s", True])
def test_a_wait_without_a_number_of_seconds_fails_that_pod_naming_the_plugin(
        timeout: Any) -> None:
    """A NaN would wait for ever past the 15-minute cap; None or text has no length."""
    c = cache({"n0": 2}, [("p", 1, 0)])
    s = scheduler(c, plugins=[("W", WaitsForTimeout(timeout))], filter=["NodeResourcesFit"],
                  permit=["W"])
    result = s.run(0.0)[0]
    assert result.status.code == Code.ERROR
    assert "kube plugin 'W' answered Wait with the timeout" in result.status.message
    assert result.status.plugin == "W"
    assert s.run(10_000.0) == [] or bound(c) == {}
    assert not s.assumed


class NormalizesToText:
    def score(self, state: CycleState, pod: Any, node: Any) -> tuple[int, Status]:
        return 10, Status.success()

    def normalize_score(self, state: CycleState, pod: Any, scores: dict[str, Any]) -> Status:
        for name in scores:
            scores[name] = "high"
        return Status.success()


def test_a_normalized_score_that_is_no_number_fails_that_pod_naming_the_plugin() -> None:
    c = cache({"n0": 2, "n1": 2}, [("p", 1, 0)])
    s = scheduler(c, plugins=[("S", NormalizesToText())], filter=["NodeResourcesFit"],
                  score=[("S", 1)])
    result = s.run(0.0)[0]
    assert result.status.code == Code.ERROR and result.status.plugin == "S"
    assert "normalized the score of node n0 to 'high', not a number" in result.status.message


def _recreated(c: MemoryCache, name: str, cpu: int, created: float) -> None:
    """The host's informer: the pod deleted, and a new pod of its name created."""
    old = c.snapshot().jobs[f"default/j-{name}"].tasks[f"default/{name}"]
    c.delete_task(old)
    new = parse_scenario({
        "version": 1, "config": {"actions": ""},
        "jobs": [{"name": f"j-{name}", "minMember": 1, "phase": "Inqueue"}],
        "tasks": [{"name": name, "job": f"j-{name}", "requests": {"cpu": cpu},
                   "createdAt": created}],
    }, source="<test>").build_cache().jobs[f"default/j-{name}"].tasks[f"default/{name}"]
    c.add_task(new)


def test_a_pod_created_again_while_it_waits_at_permit_is_a_new_pod() -> None:
    """kube gives the new pod a new UID: the old one is rejected and unreserved, and
    the new one (3 cpu on a 2-cpu node) is scheduled from scratch, not bound on the
    old one's reservation."""
    calls: list[str] = []

    class Hold:
        def name(self) -> str:
            return "Hold"

        def reserve(self, state: CycleState, pod: Any, node: str) -> Status:
            calls.append(f"reserve {pod.resreq.milli_cpu:g}")
            return Status()

        def unreserve(self, state: CycleState, pod: Any, node: str) -> None:
            calls.append("unreserve")

        def permit(self, state: CycleState, pod: Any, node: str) -> tuple[Status, float]:
            return Status(Code.WAIT), 60.0

    c = cache({"n0": 2}, [("w", 1, 0)])
    s = scheduler(c, plugins=[("Hold", Hold())],
                  filter=["NodeResourcesFit"], reserve=["Hold"], permit=["Hold"])
    (waiting,) = s.run(0.0)
    assert waiting.status.code == Code.WAIT
    _recreated(c, "w", 3, created=5.0)
    (result,) = s.run(6.0)
    assert result.status.code == Code.UNSCHEDULABLE and result.node is None
    assert calls == ["reserve 1000", "unreserve"]
    assert s.assumed == {} and bound(c) == {}
    assert c.nodes["n0"].used.milli_cpu == 0


def test_a_pod_created_again_while_queued_starts_afresh_in_the_active_queue() -> None:
    c = cache({"n0": 2}, [("p", 4, 0)])
    s = scheduler(c, filter=["NodeResourcesFit"])
    (failed,) = s.run(0.0)
    assert failed.status.code == Code.UNSCHEDULABLE
    _recreated(c, "p", 1, created=20.0)
    s.run(30.0)
    assert bound(c) == {"default/p": "n0"}


def test_a_queue_given_to_the_scheduler_is_the_queue_it_uses() -> None:
    """An empty queue has a length of 0 (falsy): it must still be the one used, with
    the profile's QueueSort unless it was built with an order of its own."""
    queue = SchedulingQueue(initial_backoff=5.0, pop_from_backoff=False)
    c = cache({"n0": 2}, [("a", 1, 0)])
    s = PodScheduler(c, Framework(registry(), profile()), queue=queue)
    assert s.queue is queue
    assert queue.less is not None and queue.initial_backoff == 5.0


def test_a_pod_created_again_while_assumed_starts_without_the_old_attempts() -> None:
    class Refuse:
        def name(self) -> str:
            return "Refuse"

        def permit(self, state: CycleState, pod: Any, node: str) -> tuple[Status, float]:
            return Status(Code.WAIT), 60.0

    c = cache({"n0": 2}, [("w", 1, 0)])
    s = scheduler(c, plugins=[("Refuse", Refuse())], filter=["NodeResourcesFit"],
                  permit=["Refuse"])
    s.attempts["default/w"] = 3  # three earlier failures of the old pod
    s.run(0.0)
    _recreated(c, "w", 3, created=5.0)
    s.run(6.0)
    assert s.attempts["default/w"] == 1


def test_a_waiting_pod_binds_on_the_gpus_its_refreshed_view_gives_it() -> None:
    """Pod a waits at Permit on GPU 0; another scheduler's pod takes GPU 0 meanwhile.
    The next run's view holds a on GPU 1, and that is what its bind names."""
    from batchsched.api.task import TaskInfo
    from batchsched.api.types import TaskStatus

    class Hold:
        def name(self) -> str:
            return "Hold"

        def permit(self, state: CycleState, pod: Any, node: str) -> tuple[Status, float]:
            return Status(Code.WAIT), 60.0

    c = parse_scenario({
        "version": 1, "config": {"actions": ""},
        "nodes": [{"name": "n0", "allocatable": {"cpu": 8, "memory": "4Gi", "pods": 10,
                                                 "nvidia.com/gpu": 2}}],
        "jobs": [{"name": "j-a", "minMember": 1, "phase": "Inqueue"}],
        "tasks": [{"name": "a", "job": "j-a", "requests": {"cpu": 1, "nvidia.com/gpu": 1}}],
    }, source="<test>").build_cache()
    s = scheduler(c, plugins=[("Hold", Hold())], filter=["NodeResourcesFit"],
                  permit=["Hold"])
    s.run(0.0)
    assert s.assumed["default/a"].pod.gpu_devices == (0,)
    c.add_foreign_pod(TaskInfo.create("other", "f", "", Resource.from_mapping(
        {"cpu": 1, "nvidia.com/gpu": 1}), status=TaskStatus.RUNNING, node_name="n0",
        gpu_devices=(0,)))
    for waiting in list(s.frameworks["default-scheduler"].waiting_pods):
        waiting.allow("Hold")
    (result,) = s.run(1.0)
    assert result.status.code == Code.SUCCESS
    assert c.jobs["default/j-a"].tasks["default/a"].gpu_devices == (1,)


class NarrowsToN2:
    def pre_filter(self, state: CycleState, pod: Any) -> tuple[set[str], Status]:
        return {"n2"}, Status.success()


def test_a_nominated_node_the_pre_filter_result_leaves_out_keeps_its_own_status() -> None:
    """kube evaluates the nominated node first and SetAbsentNodesStatus fills only the
    nodes without a status: PostFilter sees n1 refused for room (resolvable by
    preemption), not as left out by the PreFilter result."""
    doc = {
        "version": 1, "name": "nominee", "config": {"actions": ""},
        "nodes": [{"name": f"n{i}", "allocatable": {"cpu": 1, "memory": "4Gi", "pods": 10}}
                  for i in (1, 2, 3)],
        "jobs": [{"name": "j-p", "minMember": 1, "phase": "Inqueue"}],
        "tasks": [{"name": "p", "job": "j-p", "requests": {"cpu": 2},
                   "nominatedNodeName": "n1"}],
    }
    c = parse_scenario(doc, source="<test>").build_cache()
    sees = SeesCodesPerNode()
    s = scheduler(c, plugins=[("Narrow", NarrowsToN2()), ("Sees", sees)],
                  preFilter=["Narrow"], filter=["NodeResourcesFit"], postFilter=["Sees"])
    result = s.run(0.0)[0]
    assert result.status.message.startswith(
        "0/3 nodes are available: 1 node(s) didn't satisfy plugin(s) [Narrow], 2 Insufficient "
        "cpu.")
    assert sees.codes["n3"] == Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    assert sees.codes["n1"] == sees.codes["n2"]  # both refused for room by the filter


class TooHigh:
    def score(self, state: CycleState, pod: Any, node: Any) -> tuple[int, Status]:
        return 150, Status.success()


class Fails:
    def score(self, state: CycleState, pod: Any, node: Any) -> tuple[int, Status]:
        return 0, Status.error("boom")


def test_a_score_error_is_reported_before_an_earlier_plugin_s_score_out_of_range() -> None:
    """kube's RunScorePlugins scores with every plugin first, then normalizes, then checks
    the range: a later plugin's Score error is the one reported."""
    c = cache({"n1": 2, "n2": 2}, [("p", 1, 0)])
    s = scheduler(c, plugins=[("Big", TooHigh()), ("Bad", Fails())],
                  filter=["NodeResourcesFit"], score=["Big", "Bad"])
    result = s.run(0.0)[0]
    assert result.status.message == 'running Score plugins: plugin "Bad" failed with: boom'


def test_least_allocated_weights_are_kube_s_range() -> None:
    from batchsched.kubesched.builtin_plugins import NodeResourcesLeastAllocated

    with pytest.raises(ConfigError, match=r"resource weight of cpu not in valid range "
                                          r"\(0, 100\]: 1000"):
        NodeResourcesLeastAllocated.from_arguments({"resources": [{"name": "cpu",
                                                                   "weight": 1000}]})
    assert NodeResourcesLeastAllocated.from_arguments(
        {"resources": [{"name": "cpu", "weight": 100}]}) is not None
