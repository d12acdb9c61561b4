"""node_search: the node-search rules allocate, backfill, preempt and reclaim share."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from batchsched.actions.node_search import (
    ALLOCATE_FAILING_CODES,
    PREEMPT_FAILING_CODES,
    FeasibleNodeScan,
    node_scores,
    num_feasible_nodes_to_find,
    predicate_for_allocate_action,
    predicate_for_preempt_action,
)
from batchsched.api.cluster import ClusterInfo
from batchsched.api.fit import FitError
from batchsched.api.job import JobInfo, PodGroup
from batchsched.api.node import NodeInfo
from batchsched.api.queue import QueueInfo
from batchsched.api.resource import Resource
from batchsched.api.task import TaskInfo
from batchsched.api.types import FitStatusCode
from batchsched.conf import parse_configuration
from batchsched.framework.arguments import Arguments
from batchsched.framework.registry import Registry
from batchsched.framework.session import Session
from batchsched.plugin import PluginSpec, hookimpl


class _CodePlugin:
    """Fails every node with the status code named by its ``code`` argument, and
    scores node ``nX`` X (except ``n-bad``, whose node-order function fails)."""

    name = "test-code"

    def __init__(self, arguments: Arguments) -> None:
        self.code = FitStatusCode(arguments.get_int("code", 0))

    def on_session_open(self, ssn: Session) -> None:
        def predicate(task: TaskInfo, node: NodeInfo) -> FitError:
            return FitError.of(task.namespace, task.name, node.name, "no", code=self.code)

        def score(task: TaskInfo, node: NodeInfo) -> float:
            if node.name == "n-bad":
                raise FitError.of(task.namespace, task.name, node.name, "unscored")
            return float(node.name[1:])

        ssn.add_predicate_fn(self.name, predicate)
        ssn.add_node_order_fn(self.name, score)
        ssn.add_batch_node_order_fn(self.name, lambda task, nodes: {"n-bad": 7.0})

    def on_session_close(self, ssn: Session) -> None:
        pass


class _Hooks:
    @hookimpl
    def batchsched_register_plugins(self) -> list[PluginSpec]:
        return [PluginSpec("test-code", _CodePlugin)]


def _session(code: FitStatusCode, node_names: tuple[str, ...] = ("n1",)) -> Session:
    registry = Registry(autoload=False)
    registry.register(_Hooks(), name="node-search-test")
    configuration = parse_configuration({"tiers": [{"plugins": [
        {"name": "test-code", "arguments": {"code": int(code)}}]}]})
    task = TaskInfo.create("c1", "p1", "c1/j1", Resource.from_mapping({"cpu": 1}))
    job = JobInfo.from_podgroup(PodGroup("j1", "c1"), tasks=[task])
    nodes = {n: NodeInfo.create(n, Resource.from_mapping({"cpu": 4, "pods": 10}))
             for n in node_names}
    cluster = ClusterInfo(nodes=nodes, jobs={job.uid: job},
                          queues={"default": QueueInfo("default")}, now=0.0)
    return Session.open(cluster, configuration, registry=registry)


@pytest.mark.parametrize("code", list(FitStatusCode))
def test_which_status_codes_fail_a_node_for_which_action(code: FitStatusCode) -> None:
    ssn = _session(code)
    task = next(iter(ssn.jobs["c1/j1"].tasks.values()))
    node = ssn.node_list[0]
    fails_allocate = predicate_for_allocate_action(ssn, task, node) is not None
    fails_preempt = predicate_for_preempt_action(ssn, task, node) is not None
    # The table of the module docstring: Success passes everywhere; Unschedulable fails
    # only allocate (evicting may help); every other code fails both.
    expected = {
        FitStatusCode.SUCCESS: (False, False),
        FitStatusCode.UNSCHEDULABLE: (True, False),
    }.get(code, (True, True))
    assert (fails_allocate, fails_preempt) == expected
    assert (code in ALLOCATE_FAILING_CODES, code in PREEMPT_FAILING_CODES) == expected


def test_a_node_the_node_order_cannot_score_keeps_its_batch_score() -> None:
    ssn = _session(FitStatusCode.SUCCESS, ("n3", "n-bad", "n5"))
    task = next(iter(ssn.jobs["c1/j1"].tasks.values()))
    assert node_scores(ssn, task, ssn.node_list) == [3.0, 7.0, 5.0]


@given(st.integers(min_value=0, max_value=20_000))
def test_feasible_node_count_follows_volcanos_bounds(total: int) -> None:
    wanted = num_feasible_nodes_to_find(total)
    assert wanted <= total
    assert wanted == total if total <= 100 else wanted >= 100


def _nodes(count: int) -> list[NodeInfo]:
    return [NodeInfo.create(f"n{i:03}", Resource.from_mapping({"cpu": 1}))
            for i in range(count)]


def _task(name: str, role: str) -> TaskInfo:
    return TaskInfo.create("c1", name, "c1/j1", role=role)


def test_error_cache_skips_nodes_a_task_of_the_same_role_failed_on() -> None:
    nodes = _nodes(3)
    scan = FeasibleNodeScan(nodes)
    asked: list[tuple[str, str]] = []

    def fails_n001(task: TaskInfo, node: NodeInfo) -> FitError | None:
        asked.append((task.name, node.name))
        if node.name == "n001":
            return FitError.of(task.namespace, task.name, node.name, "no")
        return None

    found, errors = scan.feasible_nodes(_task("w0", "worker"), nodes, fails_n001)
    assert [n.name for n in found] == ["n000", "n002"] and list(errors.nodes) == ["n001"]
    asked.clear()
    found, errors = scan.feasible_nodes(_task("w1", "worker"), nodes, fails_n001)
    assert ("w1", "n001") not in asked and list(errors.nodes) == ["n001"]
    # No role: never cached; a new scope forgets everything.
    asked.clear()
    scan.feasible_nodes(_task("x", ""), nodes, fails_n001)
    assert ("x", "n001") in asked
    scan.new_cache_scope()
    asked.clear()
    scan.feasible_nodes(_task("w2", "worker"), nodes, fails_n001)
    assert ("w2", "n001") in asked


@pytest.mark.parametrize("rotate", [True, False])
def test_a_scan_over_many_nodes_rotates_only_when_asked(rotate: bool) -> None:
    nodes = _nodes(300)
    scan = FeasibleNodeScan(nodes, rotate=rotate)
    wanted = num_feasible_nodes_to_find(300)
    first, _ = scan.feasible_nodes(_task("a", ""), nodes, lambda t, n: None)
    second, _ = scan.feasible_nodes(_task("b", ""), nodes, lambda t, n: None)
    assert [n.name for n in first] == [n.name for n in nodes[:wanted]]
    # Rotating, the second scan starts where the first stopped: past the feasible node
    # after the ones kept, which ended it (Volcano's PredicateNodes examines it, keeps
    # it not); the result is in session node order either way.
    start = wanted + 1 if rotate else 0
    expected = sorted((nodes[(start + i) % 300] for i in range(wanted)), key=lambda n: n.name)
    assert [n.name for n in second] == [n.name for n in expected]


@given(
    st.integers(min_value=1, max_value=260),
    st.lists(st.tuples(st.sampled_from(["", "ps", "worker"]), st.integers(0, 2**16)),
             min_size=1, max_size=6),
    st.booleans(),
)
def test_the_scan_decides_as_placements_own_scan(
    node_count: int, tasks: list[tuple[str, int]], cache_enabled: bool
) -> None:
    """Until placement uses this module, both scans must give the same nodes and errors."""
    from types import SimpleNamespace

    from batchsched.actions.placement import ScalarNodeSelector

    nodes = _nodes(node_count)
    ours = FeasibleNodeScan(nodes, error_cache_enabled=cache_enabled)
    theirs = ScalarNodeSelector(SimpleNamespace(node_list=nodes),  # type: ignore[arg-type]
                                cache_enabled)
    for index, (role, seed) in enumerate(tasks):
        task = _task(f"t{index}", role)

        def predicate(t: TaskInfo, n: NodeInfo, seed: int = seed) -> FitError | None:
            if (seed * 31 + int(n.name[1:])) % 3 == 0:
                return FitError.of(t.namespace, t.name, n.name, "no")
            return None

        found, errors = ours.feasible_nodes(task, nodes, predicate)
        expected, expected_errors = theirs.feasible_nodes(task, nodes, predicate)
        assert [n.name for n in found] == [n.name for n in expected]
        assert sorted(errors.nodes) == sorted(expected_errors.nodes)
