"""The rules that combine plugins across tiers (design table; session_plugins.go)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from probe_support import Probe, Registration, session

from batchsched.api import ClusterInfo, JobInfo, NodeInfo, PodGroup, QueueInfo, Resource, TaskInfo
from batchsched.conf import configuration_from_text
from batchsched.errors import PluginError, SchedulingError
from batchsched.framework import Session
from batchsched.framework.registry import Registry
from batchsched.plugin import Arguments, PluginSpec, Vote, hookimpl


def job(name: str) -> JobInfo:
    return JobInfo.from_podgroup(PodGroup(name, "ns"))


def task(name: str) -> TaskInfo:
    return TaskInfo.create("ns", name, "ns/pg", Resource(1000))


def vote(value: int) -> Registration:
    return lambda ssn, n: ssn.add_job_enqueueable_fn(n, lambda j: value)


def enqueueable(tiers: list[list[tuple[str, Registration]]]) -> bool:
    return session(tiers).job_enqueueable(job("x"))


def test_vote_reject_wins_permit_in_tier_admits_default_yes() -> None:
    permit, reject, abstain = vote(Vote.PERMIT), vote(Vote.REJECT), vote(Vote.ABSTAIN)
    assert not enqueueable([[("a", permit), ("b", reject)]])
    assert enqueueable([[("a", permit)], [("b", reject)]])
    assert enqueueable([[("a", abstain)]])
    assert not enqueueable([[("a", abstain)], [("b", reject)]])


def order_by(compare: Callable[[JobInfo, JobInfo], int]) -> Registration:
    return lambda ssn, n: ssn.add_job_order_fn(n, compare)


def reverse_ids(left: JobInfo, right: JobInfo) -> int:
    return -1 if left.uid > right.uid else 1


def test_compare_first_nonzero_then_fallback() -> None:
    zero = order_by(lambda left, right: 0)
    a, b = job("a"), job("b")
    assert session([[("z", zero)]]).job_order_fn(a, b)  # falls back to id
    assert session([[("z", zero)], [("r", order_by(reverse_ids))]]).job_order_fn(b, a)


def test_disabled_flag_removes_the_function() -> None:
    ssn = session([[("r", order_by(reverse_ids))]], flags="    enableJobOrder: false\n")
    assert ssn.job_order_fn(job("a"), job("b"))


def starving(answer: bool) -> Registration:
    return lambda ssn, n: ssn.add_job_starving_fn(n, lambda j: answer)


def test_starving_first_tier_with_a_function_decides() -> None:
    yes, no = starving(True), starving(False)
    assert session([[("y", yes)], [("n", no)]]).job_starving(job("x"))
    assert not session([[("n", no), ("y", yes)]]).job_starving(job("x"))
    assert not session([[]]).job_starving(job("x"))


def victims(keep: set[str] | None) -> Registration:
    def fn(actor: TaskInfo, cands: list[TaskInfo]) -> list[TaskInfo] | None:
        return None if keep is None else [c for c in cands if c.name in keep]
    return lambda ssn, n: ssn.add_preemptable_fn(n, fn)


def names(tasks: list[TaskInfo]) -> list[str]:
    return [t.name for t in tasks]


def test_preemptable_intersects_per_tier_and_empty_ends_the_tier() -> None:
    cands = [task("a"), task("b"), task("c")]
    ssn = session([[("p", victims({"a", "b"})), ("q", victims({"b", "c"}))]])
    assert names(ssn.preemptable(task("x"), cands)) == ["b"]
    ssn = session([[("p", victims(set())), ("q", victims({"a"}))], [("r", victims({"c"}))]])
    assert names(ssn.preemptable(task("x"), cands)) == ["c"]
    ssn = session([[("p", victims(None))]])
    assert ssn.preemptable(task("x"), cands) == []
    # An empty intersection lets the next plugin of the tier start over (Go's nil slice).
    ssn = session([[("p", victims({"a"})), ("q", victims({"b"})), ("r", victims({"c"}))]])
    assert names(ssn.preemptable(task("x"), cands)) == ["c"]


def score(value: float) -> Registration:
    return lambda ssn, n: ssn.add_node_order_fn(n, lambda t, nd: value)


def overused(value: bool) -> Registration:
    return lambda ssn, n: ssn.add_overused_fn(n, lambda q: value)


def test_node_scores_are_summed_and_overused_is_any() -> None:
    ssn = session([[("a", score(1.5))], [("b", score(2))]])
    assert ssn.node_order(task("t"), None) == 3.5  # type: ignore[arg-type]
    ssn = session([[("a", overused(False)), ("b", overused(True))]])
    assert ssn.overused(None)  # type: ignore[arg-type]


def test_a_raising_plugin_is_named() -> None:
    def boom(*args: Any) -> bool:
        raise ZeroDivisionError("division by zero")
    ssn = session([[("fragile", lambda s, n: s.add_job_ready_fn(n, boom))]])
    expected = "plugin 'fragile' raised in job_ready: ZeroDivisionError"
    with pytest.raises(PluginError, match=expected):
        ssn.job_ready(job("x"))


def test_a_plugin_s_quantity_error_is_blamed_on_it_and_a_refusal_passes_through() -> None:
    """batchsched's own errors raised by a plugin's code: one that says which input was
    wrong but not who read it (a QuantityError from Resource.from_mapping) names the
    plugin and the point; a signal the session acts on (SchedulingError) goes on as it is."""
    def parse(t: TaskInfo, node: Any) -> None:
        Resource.from_mapping({"cpu": t.annotations.get("limit", "2")})
    ssn = session([[("pod-limit", lambda s, n: s.add_predicate_fn(n, parse))]])
    limited = task("t")
    limited.annotations = {"limit": "2 cores"}
    with pytest.raises(PluginError, match="plugin 'pod-limit' raised in predicate: "
                                          "QuantityError: \"2 cores\" is not a quantity"):
        ssn.predicate(limited, None)  # type: ignore[arg-type]

    def refuse(*args: Any) -> bool:
        raise SchedulingError("not now")
    ssn = session([[("strict", lambda s, n: s.add_job_ready_fn(n, refuse))]])
    with pytest.raises(SchedulingError, match="not now"):
        ssn.job_ready(job("x"))
    with pytest.raises(PluginError, match="plugin 'opener' raised in on_session_open: "
                                          "QuantityError") as raised:
        session([[("opener", lambda s, n: Resource.from_mapping({"memory": "lots"}))]])
    assert (raised.value.plugin, raised.value.point) == ("opener", "on_session_open")


def test_a_raising_job_valid_plugin_is_named_after_the_ones_that_passed() -> None:
    def boom(*args: Any) -> Any:
        raise KeyError("minMember")
    ssn = session([[("fine", lambda s, n: s.add_job_valid_fn(n, lambda j: None))],
                   [("fragile", lambda s, n: s.add_job_valid_fn(n, boom))]])
    with pytest.raises(PluginError, match="plugin 'fragile' raised in job_valid: KeyError"):
        ssn.job_valid(job("x"))


def test_a_raising_or_misanswering_enqueue_voter_is_named_after_the_ones_that_voted() -> None:
    def boom(*args: Any) -> Any:
        raise KeyError("minResources")
    abstain = lambda s, n: s.add_job_enqueueable_fn(n, lambda j: Vote.ABSTAIN)  # noqa: E731
    ssn = session([[("fine", abstain)],
                   [("fragile", lambda s, n: s.add_job_enqueueable_fn(n, boom))]])
    with pytest.raises(PluginError, match="plugin 'fragile' raised in job_enqueueable: KeyError"):
        ssn.job_enqueueable(job("x"))
    # An answer that is no vote at all is the plugin's fault too.
    ssn = session([[("fine", abstain)],
                   [("odd", lambda s, n: s.add_job_enqueueable_fn(n, lambda j: "yes"))]])
    with pytest.raises(PluginError, match="plugin 'odd' raised in job_enqueueable: TypeError"):
        ssn.job_enqueueable(job("x"))


def test_plugins_not_named_in_the_configuration_are_not_built() -> None:
    built: list[str] = []
    registry = Registry(autoload=False)

    class Provider:
        @hookimpl
        def batchsched_register_plugins(self) -> list[PluginSpec]:
            def factory(args: Arguments, name: str) -> Probe:
                built.append(name)
                return Probe(name, lambda s, n: None)
            return [PluginSpec("one", lambda a: factory(a, "one")),
                    PluginSpec("two", lambda a: factory(a, "two"))]
    registry.register(Provider(), name="p")
    Session.open(ClusterInfo(now=1.0), configuration_from_text("tiers: [{plugins: [{name: two}]}]"),
                 registry=registry)
    assert built == ["two"]


def test_a_predicate_returning_the_wrong_type_is_named() -> None:
    ssn = session([[("sloppy", lambda s, n: s.add_predicate_fn(n, lambda t, nd: True))]])
    expected = "plugin 'sloppy': predicate must return None or a FitError"
    with pytest.raises(PluginError, match=expected):
        ssn.predicate(task("t"), None)  # type: ignore[arg-type]


def test_registering_under_an_unconfigured_name_is_an_error() -> None:
    def wrong_name(ssn: Session, name: str) -> None:
        ssn.add_job_ready_fn("typo", lambda j: True)
    with pytest.raises(PluginError, match="registered under 'typo', which is not a plugin"):
        session([[("real", wrong_name)]])


def test_best_node_must_name_a_candidate() -> None:
    """A best-node plugin that names a node outside the candidates fails, naming itself;
    a candidate is answered with the session's own node object."""
    n1 = NodeInfo.create("n1", Resource(4000))
    n2 = NodeInfo.create("n2", Resource(4000))
    elsewhere = NodeInfo.create("n9", Resource(4000))
    copy_of_n2 = NodeInfo.create("n2", Resource(4000))
    ssn = session([[("pick-n2", lambda s, n: s.add_best_node_fn(n, lambda t, sc: copy_of_n2))]])
    assert ssn.best_node(task("p1"), {1.0: [n1], 2.0: [n2]}) is n2
    bad = session([[("pick-n9", lambda s, n: s.add_best_node_fn(n, lambda t, sc: elsewhere))]])
    with pytest.raises(PluginError, match=r"plugin 'pick-n9' raised in best_node: .*n9"):
        bad.best_node(task("p1"), {1.0: [n1], 2.0: [n2]})


def answer(*victims: Any) -> Registration:
    return lambda ssn, n: ssn.add_preemptable_fn(n, lambda p, c: list(victims))


def test_victims_must_be_among_the_candidates() -> None:
    """A victim the action was not offered (a task of another node, a task id) fails,
    naming the plugin; a copy of a candidate is answered with the candidate itself."""
    a, b = task("a"), task("b")
    copy_of_b = task("b")
    ssn = session([[("pick-b", answer(copy_of_b))]])
    assert ssn.preemptable(task("x"), [a, b])[0] is b
    for stranger in (task("z"), "ns/a", None):
        bad = session([[("stranger", answer(stranger))]])
        with pytest.raises(PluginError, match=r"plugin 'stranger': preemptable answered "
                           r".*not one of the tasks it may name"):
            bad.preemptable(task("x"), [a, b])


def test_victim_tasks_are_offered_tasks_or_the_session_s_own() -> None:
    a = task("a")
    ssn = session([[("pick", lambda s, n: s.add_victim_tasks_fn(n, lambda tasks: [task("a")]))]])
    assert ssn.victim_tasks([a])[0] is a
    bad = session([[("ids", lambda s, n: s.add_victim_tasks_fn(n, lambda tasks: ["ns/a"]))]])
    with pytest.raises(PluginError, match="plugin 'ids': victim_tasks answered 'ns/a'"):
        bad.victim_tasks([a])


def test_order_keys_that_cannot_be_compared_are_blamed_on_their_plugin() -> None:
    """Keyed queues compare keys in C, where no plugin is named: the action's TypeError
    is traced back to the plugin whose keys do not sort among themselves."""
    from batchsched.scheduler import run_actions

    registry = Registry(autoload=False)
    mixed = Probe("mixed", lambda s, n: s.add_task_order_key_fn(
        n, lambda t: None if t.name.endswith("0") else 1))

    class Provider:
        @hookimpl
        def batchsched_register_plugins(self) -> list[PluginSpec]:
            return [PluginSpec("mixed", lambda args: mixed)]
    registry.register(Provider(), name="probes")
    pg = PodGroup("pg", "ns", min_member=1)
    tasks = [TaskInfo.create("ns", f"t{i}", "ns/pg", Resource(1000)) for i in range(3)]
    cluster = ClusterInfo(nodes={"n1": NodeInfo.create("n1", Resource(4000, scalars={
        "pods": 10_000}))}, jobs={"ns/pg": JobInfo.from_podgroup(pg, tasks=tasks)},
        queues={"default": QueueInfo("default")}, now=1.0)
    text = "actions: allocate\ntiers:\n- plugins:\n  - name: mixed\n"
    ssn = Session.open(cluster, configuration_from_text(text), registry=registry)
    with pytest.raises(PluginError, match=r"plugin 'mixed': its task_order keys cannot be "
                       r"compared with each other: '<' not supported") as caught:
        run_actions(ssn)
    assert (caught.value.plugin, caught.value.point) == ("mixed", "task_order")


def test_a_node_score_of_nan_is_an_error_naming_the_plugin() -> None:
    """NaN orders nothing: which node wins would depend on the order nodes are listed
    (a node that cannot be scored says so with a FitError)."""
    ssn = session([[("a", score(1.0))], [("nan", score(float("nan")))]])
    with pytest.raises(PluginError, match="plugin 'nan': node_order answered NaN"):
        ssn.node_order(task("t"), None)  # type: ignore[arg-type]



def test_a_batch_node_score_of_nan_is_an_error_naming_the_plugin() -> None:
    """As for node_order: with NaN among the scores the winner would be wherever the
    NaN sits."""
    batch = lambda s, n: s.add_batch_node_order_fn(  # noqa: E731
        n, lambda t, nodes: {"n0": float("nan"), "n1": 5.0})
    ssn = session([[("a", batch)]])
    with pytest.raises(PluginError, match="plugin 'a': batch_node_order answered NaN "
                                          "for node 'n0'") as caught:
        ssn.batch_node_order(task("t"), [])
    assert (caught.value.plugin, caught.value.point) == ("a", "batch_node_order")


def test_infinite_vector_batch_scores_are_no_nan() -> None:
    """inf and -inf are answers (the scalar form takes them): only NaN is refused."""
    import numpy as np

    from batchsched.columnar.forms import batch_node_order_scores
    from batchsched.columnar.node_columns import Candidates

    tiers = [[("topo", lambda *args: np.array([np.inf, -np.inf]))]]
    scores = batch_node_order_scores(tiers, task("t"), None,  # type: ignore[arg-type]
                                     Candidates(np.arange(2)))
    assert list(scores) == [np.inf, -np.inf]


@pytest.mark.parametrize("many", [False, True])
def test_a_vector_batch_node_score_of_nan_is_an_error_naming_the_plugin(many: bool) -> None:
    import numpy as np

    from batchsched.columnar.forms import batch_node_order_scores, many_scores
    from batchsched.columnar.node_columns import Candidates

    def nan_at_first(*args: Any) -> Any:
        return np.array([np.nan, 5.0]) if not many else np.array([[np.nan, 5.0]])

    tiers = [[("vb", nan_at_first)]]
    candidates = Candidates(np.arange(2))
    with pytest.raises(PluginError, match="plugin 'vb': batch_node_order answered NaN"):
        if many:
            many_scores([], tiers, [task("t")], None, candidates)  # type: ignore[arg-type]
        else:
            batch_node_order_scores(tiers, task("t"), None, candidates)  # type: ignore[arg-type]


def test_a_type_error_that_is_no_comparison_stays_the_action_s() -> None:
    """Keys a plugin gives of different kinds are no fault while nothing compares them:
    an action's own TypeError is not put on the plugin."""
    ssn = session([[("mixed", lambda s, n: s.add_task_order_key_fn(
        n, lambda t: None if t.name.endswith("0") else 1))]])
    assert ssn.order_key_fault(TypeError("object of type 'NoneType' has no len()")) is None
