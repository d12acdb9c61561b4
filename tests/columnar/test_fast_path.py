"""The vectorised node choice decides exactly as the scalar reference does.

Random clusters (small ones, and ones above 100 nodes where Volcano's partial
scan and its rotating start matter), random gang workloads with roles,
releasing tasks (future idle above idle, so pipelining happens), best-effort
tasks for backfill, and several plugin configurations: the fast path must give
the same binds in the same order, the same pipelined tasks, statuses, phases
and events (fit-error messages included), and the same per-node scores.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
import yaml
from fast_path_support import (
    REGISTRY,
    SELECTORS,
    assert_same_decisions,
    close,
    decide,
    decide_both,
    kube_node,
    kube_task,
    random_document,
    strict_vector_selector,
    volcano_default_with_binpack,
)
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from batchsched.actions.node_search import node_scores
from batchsched.actions.placement import (
    ScalarNodeSelector,
    predicate_for_allocate_action,
)
from batchsched.api import Resource, TaskInfo
from batchsched.columnar import selector as fast_placement
from batchsched.columnar.forms import (
    TaskSetCache,
    VectorFallback,
    batch_node_order_scores,
    many_scores,
    many_tiers,
    node_order_scores,
    predicate_mask,
    vector_tiers,
)
from batchsched.columnar.kept_answers import StackedStore
from batchsched.columnar.node_columns import Candidates, NodeColumns, fits_mask
from batchsched.columnar.selector import (
    FAST_PATH_ENVIRONMENT_VARIABLE,
    VectorNodeSelector,
    default_node_selector,
)
from batchsched.errors import PluginError
from batchsched.framework.session import Session
from batchsched.scenario import parse_scenario

PLUGIN_SETS: list[list[str]] = [
    [],
    ["drf", "proportion"],
    ["vt-predicate"],
    ["vt-order", "vt-batch"],
    ["drf", "vt-predicate", "proportion", "vt-order", "vt-batch"],
    ["vt-predicate", "vt-order", "vt-best"],
    ["vt-batch", "vt-predicate", "vt-best", "vt-order"],
]

SETTINGS = settings(max_examples=40, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


def plugins(names: list[str]) -> list[dict[str, Any]]:
    return [{"name": name} for name in names]


@SETTINGS
@given(seed=st.integers(0, 2**32), nodes=st.sampled_from([0, 1, 2, 3, 5, 8]),
       jobs=st.integers(1, 8), names=st.sampled_from(PLUGIN_SETS), error_cache=st.booleans())
def test_small_clusters_same_decisions(
    seed: int, nodes: int, jobs: int, names: list[str], error_cache: bool
) -> None:
    document = random_document(seed, nodes=nodes, jobs=jobs, plugins=plugins(names),
                               error_cache=error_cache)
    assert_same_decisions(*decide_both(document))


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**32), nodes=st.integers(101, 260), jobs=st.integers(20, 80),
       names=st.sampled_from(PLUGIN_SETS[2:]), error_cache=st.booleans())
def test_partial_scans_same_decisions(
    seed: int, nodes: int, jobs: int, names: list[str], error_cache: bool
) -> None:
    document = random_document(seed, nodes=nodes, jobs=jobs, plugins=plugins(names),
                               error_cache=error_cache)
    assert_same_decisions(*decide_both(document))


def open_session(document: dict[str, Any]) -> Session:
    scenario = parse_scenario(document, source="<fast path test>")
    return Session.open(scenario.to_cluster(), scenario.configuration, registry=REGISTRY)


@SETTINGS
@given(seed=st.integers(0, 2**32), nodes=st.integers(1, 40))
def test_masks_and_scores_agree_node_by_node(seed: int, nodes: int) -> None:
    names = ["vt-predicate", "vt-order", "vt-batch"]
    check_masks_and_scores(open_session(random_document(seed, nodes=nodes, jobs=4,
                                                        plugins=plugins(names))))


def check_masks_and_scores(ssn: Session) -> None:
    """For every task: the predicate mask, the resource fit, and the scores over the
    nodes passing the predicates, array against node by node."""
    columns = NodeColumns.of(ssn)
    columns.sync()
    predicates = vector_tiers(ssn, "predicate")
    orders = vector_tiers(ssn, "node_order")
    batches = vector_tiers(ssn, "batch_node_order")
    assert predicates is not None and orders is not None and batches is not None
    for job in ssn.jobs.values():
        for task in job.tasks.values():
            if ssn.pre_predicate(task) is not None:
                continue
            expected = [predicate_for_allocate_action(ssn, task, n) is None
                        for n in ssn.node_list]
            try:
                mask = predicate_mask(predicates, task, columns)
            except VectorFallback:
                continue
            got = [True] * len(ssn.node_list) if mask is None else mask.tolist()
            assert got == expected
            rows, amounts = columns.request(task.init_resreq)
            fit = fits_mask(amounts, columns.future_idle[rows])
            assert fit.tolist() == [
                task.init_resreq.less_equal(n.future_idle()) for n in ssn.node_list]
            chosen = [i for i, ok in enumerate(expected) if ok]
            if not chosen:
                continue
            reference = node_scores(ssn, task, [ssn.node_list[i] for i in chosen])
            candidates = Candidates(np.array(chosen, dtype=np.intp))
            try:
                fast = (node_order_scores(orders, task, columns, candidates)
                        + batch_node_order_scores(batches, task, columns, candidates))
            except VectorFallback:
                continue
            assert all(close(a, b) for a, b in zip(reference, fast.tolist(), strict=True)), (
                task.uid, reference, fast.tolist())


def test_columns_follow_the_nodes_through_a_session() -> None:
    document = random_document(11, nodes=30, jobs=12, plugins=plugins(["vt-predicate"]))
    scenario = parse_scenario(document, source="<fast path test>")
    ssn = Session.open(scenario.to_cluster(), scenario.configuration, registry=REGISTRY)
    columns = NodeColumns.of(ssn)
    from batchsched.scheduler import run_actions

    run_actions(ssn)
    columns.sync()
    for i, node in enumerate(ssn.node_list):
        for row, name in enumerate(columns.dimensions):
            assert columns.idle[row, i] == node.idle.get(name)
            assert columns.used[row, i] == node.used.get(name)
            assert columns.future_idle[row, i] == node.future_idle().get(name)
        assert columns.task_count[i] == len(node.tasks)


class _Counting:
    """Counts the session's per-node scalar dispatches."""

    def __init__(self, ssn: Session) -> None:
        self.calls = 0
        for point in ("predicate", "node_order", "batch_node_order"):
            original = getattr(ssn, point)

            def counted(*args: Any, _original: Any = original) -> Any:
                self.calls += 1
                return _original(*args)

            setattr(ssn, point, counted)


def test_default_allocate_path_calls_no_scalar_node_function() -> None:
    """With every node plugin vectorised, no per-node scalar call remains (here every
    task fits somewhere, so no fit-error message has to be written)."""
    document = random_document(5, nodes=150, jobs=30,
                               plugins=plugins(["vt-predicate", "vt-order", "vt-batch"]))
    for node in document["nodes"]:
        node["allocatable"] = {"cpu": 64, "memory": "256Gi", "pods": 110}
        node["labels"].pop("harmless", None)
    for task in document["tasks"]:
        task.pop("labels", None)
        task.pop("node", None)
    scenario = parse_scenario(document, source="<fast path test>")
    ssn = Session.open(scenario.to_cluster(), scenario.configuration, registry=REGISTRY)
    counter = _Counting(ssn)
    selectors: list[Any] = []

    def factory(session: Session, cache: bool = True) -> Any:
        chosen = default_node_selector(session, cache)
        selectors.append(chosen)
        return chosen

    from fast_path_support import selector

    from batchsched.scheduler import run_actions

    with selector(factory):
        run_actions(ssn)
    assert selectors and all(isinstance(s, VectorNodeSelector) for s in selectors)
    assert sum(len(j.tasks) for j in ssn.jobs.values()) > 50
    assert counter.calls == 0


def test_a_plugin_without_variant_selects_the_reference_path(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    vectorised = open_session(random_document(1, nodes=3, jobs=1,
                                              plugins=plugins(["vt-predicate", "vt-order"])))
    assert isinstance(default_node_selector(vectorised), VectorNodeSelector)
    mixed = open_session(random_document(1, nodes=3, jobs=1,
                                         plugins=plugins(["vt-order", "vt-scalar-only"])))
    assert type(default_node_selector(mixed)) is ScalarNodeSelector
    monkeypatch.setenv(FAST_PATH_ENVIRONMENT_VARIABLE, "0")
    assert type(default_node_selector(vectorised)) is ScalarNodeSelector


def test_disabled_plugin_points_do_not_count() -> None:
    """A plugin whose node-order flag is off does not need a variant."""
    names = [{"name": "vt-order"}, {"name": "vt-scalar-only", "enableNodeOrder": False}]
    ssn = open_session(random_document(2, nodes=3, jobs=1, plugins=names))
    assert isinstance(default_node_selector(ssn), VectorNodeSelector)


def test_tasks_a_variant_declines_take_the_scalar_path() -> None:
    def mark(rng: Any, task: dict[str, Any]) -> None:
        task.setdefault("labels", {})["scalar-only"] = "yes"

    document = random_document(3, nodes=120, jobs=6, extra_task=mark,
                               plugins=plugins(["vt-predicate", "vt-order"]))
    reference, fast = decide_both(document)
    assert_same_decisions(reference, fast)
    assert fast.binds


def test_strict_factory_refuses_unvectorised_sessions() -> None:
    document = random_document(4, nodes=2, jobs=1, plugins=plugins(["vt-scalar-only"]))
    with pytest.raises(PluginError, match="not all vectorised"):
        decide(document, strict_vector_selector)


# -- the built-in node plugins --------------------------------------------------------------------

BUILTIN_CONFIGURATIONS: list[list[dict[str, Any]]] = [
    volcano_default_with_binpack(),
    volcano_default_with_binpack(
        nodeorder={"mostrequested.weight": 2, "leastrequested.weight": 0,
                   "balancedresource.weight": 3, "nodeaffinity.weight": 5,
                   "podaffinity.weight": 1, "tainttoleration.weight": 1},
        binpack={"binpack.weight": 3, "binpack.cpu": 2, "binpack.resources": "nvidia.com/gpu",
                 "binpack.resources.nvidia.com/gpu": 4}),
    volcano_default_with_binpack(
        predicates={"predicate.NodeAffinityEnable": False, "predicate.PodAffinityEnable": False,
                    "predicate.TaintTolerationEnable": False},
        nodeorder={"imagelocality.weight": 0}),
    [{"name": "drf"}, {"name": "nodeorder"}, {"name": "binpack"}],
    [{"name": "predicates"}, {"name": "binpack", "arguments": {"binpack.memory": 0}}],
    volcano_default_with_binpack(predicates={"predicate.CacheEnable": True}),
    volcano_default_with_binpack(predicates={"predicate.ProportionalEnable": True,
                                             "predicate.resources": "nvidia.com/gpu"}),
    [*volcano_default_with_binpack(),
     {"name": "usage", "arguments": {"usage.weight": 3, "thresholds": {"cpu": 80, "mem": 80}}}],
    # No node plugin: resource fit alone, every score 0 (the HPC replays' configurations).
    [{"name": "drf"}],
]


def builtin_document(seed: int, nodes: int, jobs: int, plugins: list[dict[str, Any]],
                     error_cache: bool = True) -> dict[str, Any]:
    document = random_document(seed, nodes=nodes, jobs=jobs, plugins=plugins,
                               error_cache=error_cache, extra_node=kube_node,
                               extra_task=kube_task)
    document["config"]["tiers"][0]["plugins"].append({"name": "conformance"})
    return document


@SETTINGS
@given(seed=st.integers(0, 2**32), nodes=st.sampled_from([1, 2, 4, 7, 12]),
       jobs=st.integers(1, 10), plugins=st.sampled_from(BUILTIN_CONFIGURATIONS),
       error_cache=st.booleans())
def test_builtin_plugins_small_clusters_same_decisions(
    seed: int, nodes: int, jobs: int, plugins: list[dict[str, Any]], error_cache: bool
) -> None:
    document = builtin_document(seed, nodes, jobs, plugins, error_cache)
    assert_same_decisions(*decide_both(document))


@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**32), nodes=st.integers(101, 220), jobs=st.integers(20, 60),
       plugins=st.sampled_from(BUILTIN_CONFIGURATIONS))
def test_builtin_plugins_partial_scans_same_decisions(
    seed: int, nodes: int, jobs: int, plugins: list[dict[str, Any]]
) -> None:
    document = builtin_document(seed, nodes, jobs, plugins)
    assert_same_decisions(*decide_both(document))


@SETTINGS
@given(seed=st.integers(0, 2**32), nodes=st.integers(1, 30),
       plugins=st.sampled_from(BUILTIN_CONFIGURATIONS[:5]))
def test_builtin_masks_and_scores_agree_node_by_node(
    seed: int, nodes: int, plugins: list[dict[str, Any]]
) -> None:
    ssn = open_session(builtin_document(seed, nodes, 5, plugins))
    check_masks_and_scores(ssn)


@SETTINGS
@given(seed=st.integers(0, 2**32), nodes=st.integers(1, 30),
       plugins=st.sampled_from(BUILTIN_CONFIGURATIONS[:5]), kube=st.booleans())
def test_scores_for_several_tasks_are_the_single_task_rows(
    seed: int, nodes: int, plugins: list[dict[str, Any]], kube: bool
) -> None:
    """The built-in variants for several tasks at once (``many=``) give, row by row, the
    single-task variants' scores, whether they compute the tasks together or fall back
    to one at a time (images, GPUs, most-allocated, affinity, taints...)."""
    document = random_document(seed, nodes=nodes, jobs=6, plugins=plugins,
                               extra_node=kube_node if kube else None,
                               extra_task=kube_task if kube else None)
    ssn = open_session(document)
    columns = NodeColumns.of(ssn)
    columns.sync()
    orders, batches = vector_tiers(ssn, "node_order"), vector_tiers(ssn, "batch_node_order")
    many_orders, many_batches = many_tiers(ssn, "node_order"), many_tiers(ssn, "batch_node_order")
    assert orders is not None and batches is not None
    assert many_orders is not None and many_batches is not None
    tasks = [task for job in ssn.jobs.values() for task in job.tasks.values()
             if ssn.pre_predicate(task) is None]
    candidates = Candidates(np.arange(len(ssn.node_list)))
    if not tasks or not len(candidates):
        return
    try:
        many = many_scores(many_orders, many_batches, tasks, columns, candidates)
    except VectorFallback:
        return
    for row, task in enumerate(tasks):
        single = node_order_scores(orders, task, columns, candidates)
        single += batch_node_order_scores(batches, task, columns, candidates)
        assert many[row].tolist() == single.tolist(), task.uid


# -- windows worked out ahead ---------------------------------------------------------------------

LOOKAHEAD_CONFIGURATIONS: list[list[dict[str, Any]]] = [
    plugins(["vt-predicate", "vt-order"]),
    volcano_default_with_binpack(),
    [{"name": "predicates"}, {"name": "nodeorder", "arguments": {"mostrequested.weight": 1}},
     {"name": "binpack", "arguments": {"binpack.weight": 2}}],
]


def lookahead_document(seed: int, nodes: int, jobs: int, plugins: list[dict[str, Any]],
                       running: float, *, kube: bool = True) -> dict[str, Any]:
    builtin = kube and plugins is not LOOKAHEAD_CONFIGURATIONS[0]
    return random_document(seed, nodes=nodes, jobs=jobs, plugins=plugins, running=running,
                           deleting=0.0, roles=0.0, job_size=8, uniform_jobs=True,
                           extra_node=kube_node if builtin else None,
                           extra_task=kube_task if builtin else None)


@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**32), nodes=st.integers(4000, 7000), jobs=st.integers(5, 20),
       plugins=st.sampled_from(LOOKAHEAD_CONFIGURATIONS), running=st.sampled_from([0.0, 0.3]))
def test_windows_planned_ahead_decide_the_same(
    seed: int, nodes: int, jobs: int, plugins: list[dict[str, Any]], running: float
) -> None:
    """Gang jobs of up to 8 tasks sharing a request, no releasing tasks and no roles, on
    clusters where a scan window is a small fraction of the nodes (5% from 5625 nodes
    on): the selector works several windows out at once, and still decides as the
    reference."""
    assert_same_decisions(*decide_both(lookahead_document(seed, nodes, jobs, plugins, running)))


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**32),
       nodes=st.sampled_from([3, 7, 40, 99, 100, 101, 150, 230, 400, 5000]),
       jobs=st.integers(3, 25), running=st.sampled_from([0.0, 0.3, 0.8]))
def test_without_node_plugins_resource_fit_alone_decides_the_same(
    seed: int, nodes: int, jobs: int, running: float
) -> None:
    """No node plugin (the HPC replays' configurations): the selector picks among the
    scan's candidates by resource fit alone, in a few array operations, and still
    decides as the reference, wherever the rotation stands and however full the
    cluster (the candidates may run past the end of the node list)."""
    document = random_document(seed, nodes=nodes, jobs=jobs, plugins=[{"name": "drf"}],
                               running=running, deleting=0.0, roles=0.0, job_size=8,
                               uniform_jobs=bool(seed % 2))
    assert_same_decisions(*decide_both(document))


@pytest.mark.parametrize("plugins", LOOKAHEAD_CONFIGURATIONS)
def test_windows_are_planned_ahead(plugins: list[dict[str, Any]]) -> None:
    SELECTORS.clear()
    reference, fast = decide_both(lookahead_document(21, 6000, 12, plugins, 0.0, kube=False))
    assert_same_decisions(reference, fast)
    assert sum(s.served_from_plans for s in SELECTORS) >= len(fast.binds) // 3


@pytest.mark.parametrize("stacked", [True, False])
@pytest.mark.parametrize(("capacity", "from_use"), [(1, 1), (2, 2), (64, 1)])
def test_answers_kept_per_template_decide_the_same(
    capacity: int, from_use: int, stacked: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Scores and feasibility kept over every node for each template, worked out anew
    where nodes changed (template by template, or all templates together), give the
    reference's decisions, also when templates keep being pushed out of a small store
    and come back."""
    monkeypatch.setattr(fast_placement, "_KEPT_FROM_USE", from_use)
    monkeypatch.setattr(fast_placement, "_KEPT_ANSWERS_BUDGET", capacity * 9 * 6000)
    monkeypatch.setattr(fast_placement.VectorNodeSelector, "stack_templates", stacked)
    SELECTORS.clear()
    document = lookahead_document(5, 6000, 30, volcano_default_with_binpack(), 0.3, kube=False)
    reference, fast = decide_both(document)
    assert_same_decisions(reference, fast)
    assert sum(s.scored_from_kept for s in SELECTORS) > 0
    assert all(isinstance(s._kept, StackedStore) is stacked for s in SELECTORS)


def session_after(document: dict[str, Any], factory: Any) -> Session:
    from fast_path_support import selector

    from batchsched.scheduler import run_actions

    scenario = parse_scenario(document, source="<fast path test>")
    ssn = Session.open(scenario.to_cluster(), scenario.configuration, registry=REGISTRY)
    with selector(factory):
        run_actions(ssn)
    return ssn


def described(errors: Any) -> tuple[str, list[tuple[str, str, list[str], list[str]]], set[str]]:
    return (str(errors),
            [(name, err.node_name, err.reasons, [str(s.code) for s in err.statuses])
             for name, err in errors.nodes.items()],
            errors.unresolvable_nodes())


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**32), nodes=st.sampled_from([3, 40, 130]),
       plugins=st.sampled_from([["vt-predicate"], ["vt-predicate", "vt-order"], []]))
def test_fit_errors_of_unplaced_tasks_are_the_reference_ones(
    seed: int, nodes: int, plugins: list[str]
) -> None:
    """Overloaded clusters: many tasks fit nowhere. Their fit errors (summary, every
    node's error in scan order, unresolvable nodes) are the reference's."""
    def tiny(rng: Any, node: dict[str, Any]) -> None:
        node["allocatable"]["cpu"] = rng.choice(["500m", 1, 2])

    document = random_document(seed, nodes=nodes, jobs=25, extra_node=tiny,
                               plugins=[{"name": n} for n in plugins])
    reference = session_after(document, ScalarNodeSelector)
    fast = session_after(document, strict_vector_selector)
    unplaced = 0
    for uid, job in reference.jobs.items():
        other = fast.jobs[uid].nodes_fit_errors
        assert set(other) == set(job.nodes_fit_errors)
        for task_uid, errors in job.nodes_fit_errors.items():
            assert described(other[task_uid]) == described(errors)
            unplaced += 1
    # Some draws fit everything (130 small nodes may take 25 jobs): nothing to compare.
    assume(unplaced > 0)


def test_task_set_cache_computes_once_per_set_and_stays_bounded() -> None:
    tasks = [TaskInfo.create("ns", f"t{i}", "ns/j", Resource(1000)) for i in range(4)]
    cache: TaskSetCache[int] = TaskSetCache(limit=2)
    calls: list[int] = []

    def compute(n: int) -> int:
        calls.append(n)
        return n

    assert cache.get(tasks[:2], lambda: compute(1)) == 1
    assert cache.get(tasks[:2], lambda: compute(9)) == 1  # the same tasks: kept
    assert cache.get(tasks[1::-1], lambda: compute(2)) == 2  # order matters (rows)
    assert cache.get(tasks[2:], lambda: compute(3)) == 3  # beyond the limit: all dropped
    assert cache.get(tasks[:2], lambda: compute(4)) == 4
    assert calls == [1, 2, 3, 4]


@SETTINGS
@given(seed=st.integers(0, 2**32), nodes=st.integers(2, 30),
       plugins=st.sampled_from(BUILTIN_CONFIGURATIONS[:5]), subset=st.integers(0, 2**32))
def test_preempt_candidate_scores_equal_the_reference(
    seed: int, nodes: int, plugins: list[dict[str, Any]], subset: int
) -> None:
    """preempt and reclaim score their candidate nodes over the columns: the same
    numbers as ``node_scores``, for any subset of nodes in session order."""
    ssn = open_session(builtin_document(seed, nodes, 5, plugins))
    rng = np.random.default_rng(subset)
    for job in ssn.jobs.values():
        for task in job.tasks.values():
            chosen = [n for n in ssn.node_list if rng.random() < 0.7]
            fast = fast_placement.vector_node_scores(ssn, task, chosen)
            if fast is None:
                continue  # a plugin declined the task: the reference answers alone
            assert fast == node_scores(ssn, task, chosen)


@SETTINGS
@given(seed=st.integers(0, 2**32), nodes=st.integers(1, 30),
       plugins=st.sampled_from(BUILTIN_CONFIGURATIONS[:5]), roles=st.booleans(),
       excluded=st.integers(0, 2**32))
def test_preempt_scans_find_the_reference_nodes(
    seed: int, nodes: int, plugins: list[dict[str, Any]], roles: bool, excluded: int
) -> None:
    """The preempt and reclaim scan over the columns: the nodes the scalar scan finds
    (among the session's nodes less some left out, as an earlier allocate's
    unresolvable failures are), and the same nodes left failed in the error cache,
    task after task."""
    from batchsched.actions.node_search import FeasibleNodeScan, predicate_for_preempt_action

    document = builtin_document(seed, nodes, 6, plugins)
    for task in document["tasks"]:
        if roles:
            task["role"] = "worker"
    ssn = open_session(document)
    reference = FeasibleNodeScan(ssn.node_list, rotate=False)
    fast = FeasibleNodeScan(ssn.node_list, rotate=False)
    answered = 0
    for job in ssn.jobs.values():
        for task in job.tasks.values():
            ssn.pre_predicate(task)
            rng = np.random.default_rng(excluded)
            left_out = {n.name for n in ssn.node_list if rng.random() < 0.2}
            found = fast_placement.vector_preempt_scan(ssn, fast, task, ssn.node_list,
                                                       exclude=left_out)
            expected, _ = reference.feasible_nodes(
                task, [n for n in ssn.node_list if n.name not in left_out],
                lambda t, n: predicate_for_preempt_action(ssn, t, n))
            if found is None:
                fast = FeasibleNodeScan(ssn.node_list, rotate=False)  # start again in step
                fast.error_cache = {k: dict(v) for k, v in reference.error_cache.items()}
                continue
            answered += 1
            assert [n.name for n in found] == [n.name for n in expected]
            assert ({k: set(v) for k, v in fast.error_cache.items()}
                    == {k: set(v) for k, v in reference.error_cache.items()})


def test_a_cordoned_node_is_checked_against_each_task_s_tolerations() -> None:
    """The unschedulable-node check reads tolerations whatever the taint switch: two
    tasks that differ only in tolerations share no kept answer (found by a fuzzer:
    the task that does not tolerate the cordon was placed on it)."""
    document = yaml.safe_load("""
version: 1
name: cordoned
config:
  actions: allocate
  tiers:
  - plugins:
    - name: predicates
      arguments: {predicate.TaintTolerationEnable: false}
nodes:
- {name: n1, allocatable: {cpu: 4, memory: 4Gi, pods: 110}, unschedulable: true}
jobs:
- {name: j1}
- {name: j2}
tasks:
- {name: a, job: j1, requests: {cpu: 1}, tolerations: [{operator: Exists}]}
- {name: b, job: j2, requests: {cpu: 1}}
""")
    reference, fast = decide_both(document)
    assert_same_decisions(reference, fast)
    assert "default/b" not in fast.binds


GPU_RANDOM_FALLBACK = """
version: 1
name: random draws
config:
  actions: allocate
  tiers:
  - plugins:
    - {name: gpu-random, arguments: {gpu-random.seed: 3}}
    - {name: network-topology-aware}
nodes:
- {name: n006, allocatable: {memory: 16Gi, pods: 110}}
- {name: n007, allocatable: {memory: 16Gi, pods: 110}}
jobs:
- {name: pg06, namespace: ns, networkTopology: {}}
tasks:
- {name: pg06-0, namespace: ns, job: pg06, requests: {memory: 3000Mi}}
- {name: pg06-1, namespace: ns, job: pg06, requests: {memory: 3000Mi}}
"""
GPU_RANDOM_BACKFILL = """
version: 1
name: random draws in backfill
config:
  actions: allocate, preempt, backfill
  tiers:
  - plugins: [{name: gang}]
  - plugins:
    - name: predicates
      arguments: {predicate.ProportionalEnable: true, predicate.resources: nvidia.com/gpu,
                  predicate.resources.nvidia.com/gpu.cpu: 4}
    - {name: gpu-random}
nodes:
- {name: n000, allocatable: {pods: 110}}
- {name: n002, allocatable: {nvidia.com/gpu: 4}}
- {name: n003, allocatable: {pods: 110}}
jobs:
- {name: pg02, namespace: ot, minMember: 2}
- {name: pg07, namespace: ot}
tasks:
- {name: pg02-0, namespace: ot, job: pg02}
- {name: pg02-1, namespace: ot, job: pg02, node: n002}
- {name: pg07-2, namespace: ot, job: pg07}
"""


@pytest.mark.parametrize("text", [GPU_RANDOM_FALLBACK, GPU_RANDOM_BACKFILL],
                         ids=["fallback", "backfill"])
def test_random_draws_are_the_same_on_both_paths(
        monkeypatch: pytest.MonkeyPatch, text: str) -> None:
    """gpu-random's draws are a function of the task and its candidates: the column
    form, which scores a task a different number of times (windows planned ahead,
    a fallback to the node-by-node form), draws what the reference draws (found by
    a fuzzer, when the draws came from one generator)."""
    from batchsched.columnar.selector import FAST_PATH_ENVIRONMENT_VARIABLE
    from batchsched.scenario import parse_scenario, run_scenario

    document = yaml.safe_load(text)
    outputs = []
    for fast in ("1", "0"):
        monkeypatch.setenv(FAST_PATH_ENVIRONMENT_VARIABLE, fast)
        outputs.append(run_scenario(parse_scenario(document)).to_json())
    assert outputs[0] == outputs[1]


def _scan_by_loop(passes: list[bool], start: int, wanted: int) -> tuple[int, int]:
    """Volcano's PredicateNodes, node by node: the reference for ``first_in_scan``."""
    total = len(passes)
    candidates: list[int] = []
    read = 0
    for offset in range(total):
        node = (start + offset) % total
        read += 1
        if passes[node]:
            if len(candidates) == wanted:
                break  # the next feasible node ends the scan, unkept
            candidates.append(node)
    return min(candidates), read


def test_the_first_candidate_of_a_scan_is_the_loop_s() -> None:
    """Every feasibility pattern of up to 7 nodes, every start and every count wanted."""
    import itertools

    import numpy as np

    from batchsched.columnar.selector import first_in_scan

    for total in range(1, 8):
        for passes in itertools.product((False, True), repeat=total):
            if not any(passes):
                continue
            feasible = np.flatnonzero(np.array(passes))
            for start in range(total):
                for wanted in range(1, total + 1):
                    assert first_in_scan(feasible, start, total, wanted) == \
                        _scan_by_loop(list(passes), start, wanted), (passes, start, wanted)


@pytest.mark.parametrize("name", ["huge-placed-request-room", "huge-requests-host-port",
                                  "huge-placed-request-binpack"])
def test_amounts_too_large_for_the_scores_columns_keep_the_masks_exact(name: str) -> None:
    # A node holding 2**52 bytes or more falls back to the scalar scores; its pod count
    # and ports stay read by the vectorised predicates (they went stale).
    document = yaml.safe_load((Path(__file__).parent / "data" / f"{name}.yaml").read_text())
    assert_same_decisions(*decide_both(document))
