"""usage: Volcano's cases, then the shadow load in sessions, and the arguments.

Transcribed from volcano-sh/volcano (Apache-2.0), pkg/scheduler/plugins/usage:

* usage_test.go: ``TestUsageEstimatorConfig``,
  ``TestUsageConfigKeepsDefaultForGenericStringValues``,
  ``TestUsageConfigParsesBestEffortResourceValues``,
  ``TestUsageThresholdsKeepDefaultWhenOutOfRange``,
  ``TestUsageWeightsKeepDefaultWhenNegative`` (on :class:`UsageConfig`);
  ``TestUsage_predicateFn``, ``TestUsage_nodeOrderFn`` and
  ``TestUsage_prioritizeNodesDoesNotDoubleCountNodeOrder`` (on scenario sessions);
  ``TestShouldAddToShadowCache`` (on :func:`in_blind_spot`);
* estimator_test.go: every case of the six formula tests, and the request half of
  ``TestGetPodResourceRequestLimit`` on scenario tasks (below);
* shadow_cache_test.go: every test, on :class:`ShadowLoad`.

Volcano's metrics time "now" is the scenario's ``now``; its zero metrics time is a
``usage`` without ``metricsTime``. batchsched's tasks carry one request for the pod
(``requests``, ``initRequests``) and no limits, so of ``TestGetPodResourceRequestLimit``
only the cases about the request the estimate reads are transcribed; summing
containers and the sidecar rule are the host's business. batchsched's sessions run
on one thread, so ``TestShadowLoadCache_ConcurrentAccess`` becomes an interleaving of
additions and removals.
"""

from __future__ import annotations

import itertools
import logging
import math
import random
from typing import Any

import numpy as np
import pytest
from node_support import document, node_scores, plugin, registry, scores, task

from batchsched import Statement
from batchsched.api.task import TaskInfo
from batchsched.api.types import FitStatusCode, TaskStatus
from batchsched.columnar.node_columns import Candidates, NodeColumns
from batchsched.columnar.selector import FAST_PATH_ENVIRONMENT_VARIABLE, fast_path_available
from batchsched.conf import configuration_from_text
from batchsched.framework.arguments import Arguments
from batchsched.framework.session import Session
from batchsched.plugins.usage import (
    CPU_OVERLOAD_REASON,
    DEFAULT_METRICS_INTERVAL,
    MEMORY_OVERLOAD_REASON,
    PodEstimate,
    ShadowLoad,
    UsageConfig,
    UsagePlugin,
    applied_risk_factor,
    composite_utilization,
    estimate_best_effort,
    estimate_pod_resource,
    in_blind_spot,
    load_composite,
    metrics_fresh,
    node_score,
    read_metrics_interval,
)
from batchsched.scenario import parse_scenario, run_scenario

MI = 1024**2
GI = 1024**3
#: Volcano's ``eps`` (usage_test.go) and ``testEps`` (estimator_test.go).
EPS = 1e-8
TEST_EPS = 1e-6
NOW = "2024-01-01T00:10:00Z"
NOW_SECONDS = 1704067800.0
UNRESOLVABLE = int(FitStatusCode.UNSCHEDULABLE_AND_UNRESOLVABLE)
VOLCANO_WEIGHTS = {"usage.weight": 5, "cpu.weight": 1, "memory.weight": 1,
                   "thresholds": {"cpu": 80, "mem": 80}}


def config(arguments: dict[str, Any]) -> UsageConfig:
    return UsagePlugin(Arguments(arguments)).config


def usage_node(name: str, cpu: float | None = None, memory: float | None = None,
               at: str | None = "-0s", *, cores: int = 4, ram: str = "8Gi") -> dict[str, Any]:
    """Volcano's test node (4 cpu, 8Gi, 10 pods) with its 10m averages measured ``at``
    (relative to ``now``; None: never); no ``usage`` at all when ``cpu`` is None."""
    node: dict[str, Any] = {"name": name,
                            "allocatable": {"cpu": cores, "memory": ram, "pods": 10}}
    if cpu is not None:
        node["usage"] = {"cpuAvg": {"10m": cpu}, "memoryAvg": {"10m": memory}}
        if at is not None:
            node["usage"]["metricsTime"] = at
    return node


def pod(name: str, cpu: str | int = 1, memory: str = "1Gi", **fields: Any) -> dict[str, Any]:
    """A task of Volcano's pod group c1/pg1 (queue q1)."""
    return {"name": name, "namespace": "c1", "job": "pg1",
            "requests": {"cpu": cpu, "memory": memory}, **fields}


def scenario(nodes: list[dict[str, Any]], tasks: list[dict[str, Any]],
             arguments: dict[str, Any] | None = None, *, actions: str = "",
             with_predicates: bool = False, **flags: bool) -> dict[str, Any]:
    """A scenario at ``NOW``: Volcano's pod group c1/pg1 (queue q1, Inqueue), the usage
    plugin (after predicates, if asked) with ``arguments`` and enable ``flags``."""
    body = {"now": NOW, "queues": [{"name": "q1"}],
            "jobs": [{"name": "pg1", "namespace": "c1", "queue": "q1", "phase": "Inqueue"}],
            "nodes": nodes, "tasks": tasks}
    plugins = [plugin("predicates")] if with_predicates else []
    doc = document("", *plugins, plugin("usage", arguments, **flags), actions=actions)
    doc.update(body)
    return doc


def open_session(doc: dict[str, Any], started: dict[str, float] | None = None) -> Session:
    """A session on the scenario; ``started`` gives Bound tasks a start (seconds before
    ``now``), which makes them Running with that start time."""
    parsed = parse_scenario(doc, source="<test>")
    cache = parsed.build_cache()
    for uid, ago in (started or {}).items():
        cache.task_started("c1/pg1", uid, at=NOW_SECONDS - ago)
    return Session.open(cache, parsed.configuration, registry=registry())


def plugin_of(ssn: Session) -> UsagePlugin:
    found = ssn.plugins["usage"]
    assert isinstance(found, UsagePlugin)
    return found


# -- usage_test.go: the arguments ---------------------------------------------------------

def test_estimator_config() -> None:
    """TestUsageEstimatorConfig: the defaults, a configured estimator, and values out of
    range (or unparsable quantities) keeping the defaults."""
    default = config({})
    assert (default.request_ratio, default.burst_ratio, default.risk_threshold,
            default.risk_factor, default.be_cpu, default.be_memory) == (
        0.7, 0.0, 0.6, 1.2, 250, 200 * MI)
    assert default == UsageConfig()
    configured = config({"estimator": {"request_ratio": 0.8, "burst_ratio": 0.3,
                                       "risk_threshold": 0.75, "risk_factor": 1.5,
                                       "be_cpu": "500m", "be_mem": "300Mi"}})
    assert configured == UsageConfig(request_ratio=0.8, burst_ratio=0.3, risk_threshold=0.75,
                                     risk_factor=1.5, be_cpu=500, be_memory=300 * MI)
    invalid = config({"estimator": {"request_ratio": 1.5, "burst_ratio": -0.1,
                                    "risk_threshold": 2.0, "risk_factor": 0.5,
                                    "be_cpu": "-1", "be_mem": "bad"}})
    assert invalid == UsageConfig()


def test_generic_string_values_keep_defaults() -> None:
    """TestUsageConfigKeepsDefaultForGenericStringValues: numbers written as strings are
    not read (Volcano's getters take YAML numbers only), quantities are."""
    got = config({"usage.weight": "7", "cpu.weight": "2", "memory.weight": "3",
                  "thresholds": {"cpu": "85", "mem": "75"},
                  "estimator": {"request_ratio": "0.8", "burst_ratio": "0.3",
                                "risk_threshold": "0.75", "risk_factor": "1.5",
                                "be_cpu": "500m", "be_mem": "300Mi"}})
    assert got == UsageConfig(be_cpu=500, be_memory=300 * MI)
    assert (got.usage_weight, got.cpu_weight, got.memory_weight) == (5, 1, 1)
    assert (got.cpu_threshold, got.memory_threshold) == (80, 80)


def test_best_effort_values_as_quantities_and_integers() -> None:
    """TestUsageConfigParsesBestEffortResourceValues: a quantity string, or an integer of
    millicores (be_cpu) or of MiB (be_mem)."""
    strings = config({"estimator": {"be_cpu": "500m", "be_mem": "300Mi"}})
    assert (strings.be_cpu, strings.be_memory) == (500, 300 * MI)
    integers = config({"estimator": {"be_cpu": 500, "be_mem": 200}})
    assert (integers.be_cpu, integers.be_memory) == (500, 200 * MI)
    # Past int64, yaml.v2 reads a uint64, which Volcano's `case int` does not take.
    default = UsageConfig()
    past = config({"estimator": {"be_cpu": 2**63, "be_mem": 2**63}})
    assert (past.be_cpu, past.be_memory) == (default.be_cpu, default.be_memory)
    edge = config({"estimator": {"be_cpu": 2**63 - 1}})
    assert edge.be_cpu == float(2**63 - 1)


def test_thresholds_out_of_range_keep_defaults() -> None:
    """TestUsageThresholdsKeepDefaultWhenOutOfRange."""
    got = config({"thresholds": {"cpu": -1, "mem": 101}})
    assert (got.cpu_threshold, got.memory_threshold) == (80, 80)


def test_a_section_with_a_key_that_is_no_string_is_ignored_from_a_config_file() -> None:
    """yaml.v2 reads a mapping nested in an argument with resolved keys (the integer 1,
    the boolean of ``on``); Volcano's getUsageSectionArgs then drops the section."""
    from batchsched.conf import configuration_from_text
    from batchsched.plugins.usage import UsageConfig

    for key in ("1", "on"):
        configuration = configuration_from_text(
            "actions: allocate\ntiers:\n- plugins:\n  - name: usage\n    arguments:\n"
            f"      thresholds: {{cpu: 50, mem: 50, {key}: 0}}\n")
        got = UsageConfig.from_arguments(configuration.tiers[0].plugins[0].arguments)
        assert (got.cpu_threshold, got.memory_threshold) == (80, 80)


def test_integers_past_int64_keep_defaults() -> None:
    """yaml.v2's uint64: Go's assertion to int (and to float64) refuses it."""
    got = config({"usage.weight": 2**63, "risk_factor": 2**64 - 1})
    assert (got.usage_weight, got.risk_factor) == (5, 1.2)


def test_values_written_without_a_value_keep_defaults_and_are_said() -> None:
    """A key with nothing after it (YAML null): Volcano's getters log "Could not parse
    argument: <nil>" and keep the default; so does usage, naming each key."""
    from batchsched.framework.arguments import collect_warnings

    with collect_warnings() as said:
        got = config({"usage.weight": None, "thresholds": {"cpu": None},
                      "estimator": {"request_ratio": None, "be_cpu": None}})
    assert got == UsageConfig()
    assert sorted(m.split("'")[3] for m in said) == [
        "estimator.be_cpu", "estimator.request_ratio", "thresholds.cpu", "usage.weight"]


def test_negative_weights_keep_defaults() -> None:
    """TestUsageWeightsKeepDefaultWhenNegative."""
    got = config({"usage.weight": -1, "cpu.weight": -1, "memory.weight": -1})
    assert (got.usage_weight, got.cpu_weight, got.memory_weight) == (5, 1, 1)


# -- usage_test.go: the predicate and the scores ------------------------------------------

#: TestUsage_predicateFn's nodes: (cpu, memory, measured) and the reason expected.
PREDICATE_CASES = {
    "cpu load exceeds the upper limit": ((81, 60, "-0s"), CPU_OVERLOAD_REASON),
    "memory load exceeds the upper limit": ((60, 81, "-0s"), MEMORY_OVERLOAD_REASON),
    "cpu and memory within the upper limits": ((80, 79, "-0s"), None),
    "metrics not updated in the latest 5 minutes": ((90, 81, "-6m"), None),
    "metrics time in the initial state": ((90, 81, None), None),
}


@pytest.mark.parametrize("case", list(PREDICATE_CASES))
def test_predicate(case: str) -> None:
    """TestUsage_predicateFn: each node alone, both pods of pg1 checked on it."""
    (cpu, memory, at), reason = PREDICATE_CASES[case]
    ssn = open_session(scenario([usage_node("n", cpu, memory, at)], [pod("p1"), pod("p2")],
                                VOLCANO_WEIGHTS))
    for uid in ("c1/p1", "c1/p2"):
        err = ssn.predicate(task(ssn, uid), ssn.nodes["n"])
        if reason is None:
            assert err is None
            continue
        assert err is not None
        assert [(int(s.code), s.reason, s.plugin) for s in err.statuses] == [
            (UNRESOLVABLE, reason, "usage")]
        assert err.unresolvable


#: TestUsage_nodeOrderFn's nodes: (cpu, memory, measured).
NODE_ORDER_NODES = {"n1": (30, 50, "-0s"), "n2": (60, 50, "-0s"), "n3": (60, 80, "-0s"),
                    "n4": (10, 20, "-6m"), "n5": (0, 0, None)}


@pytest.mark.parametrize(("weights", "expected"), [
    pytest.param({"cpu.weight": 1, "memory.weight": 1},
                 {"n1": 300, "n2": 225, "n3": 150, "n4": 0, "n5": 0}, id="default weights"),
    pytest.param({"cpu.weight": 2, "memory.weight": 8},
                 {"n1": 270, "n2": 240, "n3": 120, "n4": 0, "n5": 0}, id="memory first"),
])
def test_node_order(weights: dict[str, int], expected: dict[str, float]) -> None:
    """TestUsage_nodeOrderFn: stale (n4) and never measured (n5) nodes score 0."""
    nodes = [usage_node(name, *figures) for name, figures in NODE_ORDER_NODES.items()]
    arguments = {**VOLCANO_WEIGHTS, **weights}
    ssn = open_session(scenario(nodes, [pod("p1")], arguments, enablePredicate=False))
    got = node_scores(ssn, "c1/p1")
    assert got == pytest.approx(expected, abs=EPS)


def test_prioritize_nodes_counts_the_score_once() -> None:
    """TestUsage_prioritizeNodesDoesNotDoubleCountNodeOrder: node order plus batch node
    order, as allocate ranks the nodes."""
    ssn = open_session(scenario([usage_node("n1", 30, 50), usage_node("n2", 60, 50)],
                                [pod("p1")],
                                {"usage.weight": 5, "cpu.weight": 1, "memory.weight": 1},
                                enablePredicate=False))
    assert scores(ssn) == {"c1/p1": pytest.approx({"n1": 300, "n2": 225}, abs=EPS)}


#: TestShouldAddToShadowCache: (status, node, started seconds before now) -> tracked.
BLIND_SPOT_CASES = {
    "pending without node is not tracked": (TaskStatus.PENDING, "", None, False),
    "pending with node is not treated as allocated": (TaskStatus.PENDING, "node1", None,
                                                      False),
    "allocated task is tracked": (TaskStatus.ALLOCATED, "node1", None, True),
    "binding task is tracked": (TaskStatus.BINDING, "node1", None, True),
    "bound task is tracked": (TaskStatus.BOUND, "node1", None, True),
    "recent running task is tracked": (TaskStatus.RUNNING, "node1", 60.0, True),
    "old running task is not tracked": (TaskStatus.RUNNING, "node1", 600.0, False),
    "completed task is not tracked": (TaskStatus.SUCCEEDED, "node1", None, False),
    # Not among Volcano's cases, but its rule: a pod without status.startTime.
    "running task with an unknown start is tracked": (TaskStatus.RUNNING, "node1", None,
                                                      True),
}


@pytest.mark.parametrize("case", list(BLIND_SPOT_CASES))
def test_should_add_to_shadow_cache(case: str) -> None:
    """TestShouldAddToShadowCache, with Volcano's metrics delay of five minutes."""
    status, node, ago, tracked = BLIND_SPOT_CASES[case]
    now = 10_000.0
    t = TaskInfo.create("c1", "p1", "c1/pg1", status=status, node_name=node,
                        start_time=None if ago is None else now - ago)
    assert in_blind_spot(t, now, 5 * 60.0) is tracked


# -- estimator_test.go ----------------------------------------------------------------------

@pytest.mark.parametrize(("cpu", "memory", "cpu_weight", "memory_weight", "expected"), [
    pytest.param(0.4, 0.6, 1, 1, 0.5, id="equal weights"),
    pytest.param(0.8, 0.2, 3, 1, 0.65, id="cpu weight dominant"),
    pytest.param(0.8, 0.2, 0, 0, 0, id="zero weights"),
])
def test_calc_load_composite_percentage(cpu: float, memory: float, cpu_weight: int,
                                        memory_weight: int, expected: float) -> None:
    """TestCalcLoadCompositePercentage."""
    assert load_composite(cpu, memory, cpu_weight, memory_weight) == pytest.approx(
        expected, abs=TEST_EPS)


@pytest.mark.parametrize(("load", "threshold", "factor", "expected"), [
    pytest.param(0.59, 0.6, 1.2, 1.0, id="below threshold"),
    pytest.param(0.6, 0.6, 1.2, 1.2, id="at threshold"),
    pytest.param(0.9, 0.6, 1.2, 1.2, id="above threshold"),
    pytest.param(0.9, 0.6, 0.8, 1.0, id="risk factor lower than one is ignored"),
])
def test_calc_applied_risk_factor(load: float, threshold: float, factor: float,
                                  expected: float) -> None:
    """TestCalcAppliedRiskFactor."""
    assert applied_risk_factor(load, threshold, factor) == pytest.approx(expected,
                                                                         abs=TEST_EPS)


@pytest.mark.parametrize(("arguments", "expected"), [
    # (request, limit, request ratio, burst ratio, applied risk factor)
    pytest.param((500, 2000, 1.0, 0.0, 1.0), 500, id="default weights estimate request"),
    pytest.param((500, 2000, 0.0, 0.0, 1.0), 0, id="zero weights estimate zero"),
    pytest.param((500, 2000, 1.0, 1.0, 1.0), 2000,
                 id="request and burst weights cover full limit"),
    pytest.param((500, 2000, 0.5, 0.2, 1.0), 550, id="custom burst weight"),
    pytest.param((500, 600, 1.0, 0.0, 1.2), 600,
                 id="risk factor applies and clamps to limit"),
    pytest.param((500, 0, 1.0, 1.0, 1.2), 500,
                 id="missing limit uses request as effective limit"),
])
def test_estimate_pod_resource(arguments: tuple[float, float, float, float, float],
                               expected: float) -> None:
    """TestEstimatePodResource."""
    assert estimate_pod_resource(*arguments) == pytest.approx(expected, abs=TEST_EPS)


@pytest.mark.parametrize(("configured", "risk", "expected"), [
    pytest.param(250, 1.0, 250, id="base configured value"),
    pytest.param(250, 1.2, 300, id="risk factor applies"),
    pytest.param(-1, 1.2, 0, id="negative configured value is clamped to zero"),
])
def test_estimate_best_effort_resource(configured: float, risk: float,
                                       expected: float) -> None:
    """TestEstimateBestEffortResource."""
    assert estimate_best_effort(configured, risk) == pytest.approx(expected, abs=TEST_EPS)


@pytest.mark.parametrize(("real", "shadow", "capacity", "expected"), [
    pytest.param(50, 0, 8000, 0.5, id="no shadow load, 50% real"),
    pytest.param(50, 2000, 8000, 0.75, id="50% real + shadow brings to 75%"),
    pytest.param(80, 5000, 8000, 1.0, id="overflow clamped to 1.0"),
    pytest.param(50, 1000, 0, 0, id="zero capacity returns 0"),
    pytest.param(0, 0, 8000, 0, id="zero everything"),
    pytest.param(100, 0, 8000, 1.0, id="100% real load, no shadow"),
])
def test_calc_composite_utilization(real: float, shadow: float, capacity: float,
                                    expected: float) -> None:
    """TestCalcCompositeUtilization."""
    assert composite_utilization(real, shadow, capacity) == pytest.approx(expected,
                                                                         abs=TEST_EPS)


@pytest.mark.parametrize(("arguments", "expected"), [
    # (cpu composite, memory composite, cpu weight, memory weight, usage weight)
    pytest.param((0, 0, 1, 1, 1), 100, id="zero utilization - max score with usageWeight=1"),
    pytest.param((1.0, 1.0, 1, 1, 1), 0, id="full utilization - zero score"),
    pytest.param((0.5, 0.5, 1, 1, 5), 250, id="50% utilization both - score 250"),
    pytest.param((0.3, 0.5, 1, 1, 5), 300, id="cpu 30%, mem 50%, equal weights"),
    pytest.param((0.6, 0.5, 2, 8, 5), 240,
                 id="cpu 60%, mem 50%, cpu weight=2, mem weight=8"),
    pytest.param((0.5, 0.5, 0, 0, 5), 0, id="zero weights returns 0"),
])
def test_calc_node_score(arguments: tuple[float, float, int, int, int],
                         expected: float) -> None:
    """TestCalcNodeScore."""
    assert node_score(*arguments) == pytest.approx(expected, abs=TEST_EPS)


@pytest.mark.parametrize(("requests", "init_requests", "expected"), [
    pytest.param({"cpu": "500m", "memory": "1Gi"}, None, (500, GI),
                 id="single container with cpu and memory request"),
    pytest.param({"cpu": "500m", "memory": "1Gi"}, {"cpu": "2000m", "memory": "4Gi"},
                 (2000, 4 * GI), id="init container takes max"),
    pytest.param(None, None, (250, 200 * MI), id="no resources specified (BestEffort)"),
])
def test_pod_request_read_by_the_estimate(requests: dict[str, str] | None,
                                          init_requests: dict[str, str] | None,
                                          expected: tuple[float, float]) -> None:
    """TestGetPodResourceRequestLimit, the request half: with request_ratio 1 and no risk
    the estimate is the request the task starts with (init containers included); a
    best-effort task is estimated at be_cpu and be_mem."""
    entry: dict[str, Any] = {"name": "p1", "namespace": "c1", "job": "pg1"}
    if requests is not None:
        entry["requests"] = requests
    if init_requests is not None:
        entry["initRequests"] = init_requests
    doc = scenario([usage_node("n1")], [entry])
    (job,) = parse_scenario(doc, source="<test>").to_cluster().jobs.values()
    estimator = UsagePlugin(Arguments({"estimator": {"request_ratio": 1}}))
    assert estimator.estimate(job.tasks["c1/p1"], 1.0) == expected


# -- shadow_cache_test.go -------------------------------------------------------------------

def test_new_shadow_load_cache() -> None:
    """TestNewShadowLoadCache."""
    assert ShadowLoad().is_clean()


def test_shadow_load_add_estimate() -> None:
    """TestShadowLoadCache_AddEstimate."""
    cache = ShadowLoad()
    cache.add("node1", "task1", 1000, 2048)
    assert cache.node_estimate("node1") == pytest.approx((1000, 2048), abs=TEST_EPS)
    cache.add("node1", "task2", 500, 1024)
    assert cache.node_estimate("node1") == pytest.approx((1500, 3072), abs=TEST_EPS)
    cache.add("node1", "task3", 800, 1600)
    assert cache.node_estimate("node1") == pytest.approx((2300, 4672), abs=TEST_EPS)
    assert cache.estimate_of("task1") == PodEstimate("node1", 1000, 2048)
    assert cache.estimate_of("task3") == PodEstimate("node1", 800, 1600)


def test_shadow_load_add_estimate_update_existing_task() -> None:
    """TestShadowLoadCache_AddEstimate_UpdateExistingTask: a second estimate for a task
    replaces the first, on whichever node."""
    cache = ShadowLoad()
    cache.add("node1", "task1", 1000, 2048)
    cache.add("node2", "task1", 500, 1024)
    assert cache.node_estimate("node1") == pytest.approx((0, 0), abs=TEST_EPS)
    assert cache.node_estimate("node2") == pytest.approx((500, 1024), abs=TEST_EPS)
    cache.remove("task1")
    assert cache.node_estimate("node2") == pytest.approx((0, 0), abs=TEST_EPS)


def test_shadow_load_sub_estimate_by_snapshot() -> None:
    """TestShadowLoadCache_SubEstimateBySnapshot."""
    cache = ShadowLoad()
    cache.add("node1", "task1", 1000, 2048)
    cache.add("node1", "task2", 500, 1024)
    cache.remove("task2")
    assert cache.node_estimate("node1") == pytest.approx((1000, 2048), abs=TEST_EPS)
    cache.remove("task1")
    assert cache.node_estimate("node1") == (0, 0)
    assert cache.estimate_of("task1") is None


def test_shadow_load_sub_estimate_of_an_unknown_task() -> None:
    """TestShadowLoadCache_SubEstimateBySnapshot_NonExistent."""
    cache = ShadowLoad()
    cache.add("node1", "task1", 100, 200)
    cache.remove("nonexistent")
    assert cache.node_estimate("node1") == pytest.approx((100, 200), abs=TEST_EPS)


def test_shadow_load_snapshot_consistency() -> None:
    """TestShadowLoadCache_SnapshotConsistency: removals subtract what was added, in any
    order."""
    cache = ShadowLoad()
    cache.add("node1", "pod1", 800, 1600)
    cache.add("node1", "pod2", 960, 1920)
    cache.add("node1", "pod3", 1152, 2304)
    assert cache.node_estimate("node1") == pytest.approx(
        (800.0 + 960.0 + 1152.0, 1600.0 + 1920.0 + 2304.0), abs=TEST_EPS)
    cache.remove("pod3")
    assert cache.node_estimate("node1") == pytest.approx((800.0 + 960.0, 1600.0 + 1920.0),
                                                         abs=TEST_EPS)
    cache.remove("pod1")
    assert cache.node_estimate("node1")[0] == pytest.approx(960, abs=TEST_EPS)
    cache.remove("pod2")
    assert cache.node_estimate("node1") == (0, 0)


def test_shadow_load_multiple_nodes() -> None:
    """TestShadowLoadCache_MultipleNodes."""
    cache = ShadowLoad()
    cache.add("node1", "t1", 1000, 2000)
    cache.add("node2", "t2", 3000, 4000)
    cache.add("node3", "t3", 500, 800)
    assert cache.node_estimate("node1") == pytest.approx((1000, 2000), abs=TEST_EPS)
    assert cache.node_estimate("node2") == pytest.approx((3000, 4000), abs=TEST_EPS)
    assert cache.node_estimate("node3") == pytest.approx((500, 800), abs=TEST_EPS)


def test_shadow_load_of_an_unknown_node() -> None:
    """TestShadowLoadCache_GetNodeEst_NonExistentNode."""
    assert ShadowLoad().node_estimate("nonexistent") == (0, 0)


def test_shadow_load_reset() -> None:
    """TestShadowLoadCache_Reset."""
    cache = ShadowLoad()
    cache.add("node1", "t1", 1000, 2000)
    cache.add("node2", "t2", 3000, 4000)
    assert not cache.is_clean()
    cache.reset()
    assert cache.is_clean()
    assert cache.node_estimate("node1") == (0, 0)
    assert cache.estimate_of("t1") is None


def test_shadow_load_reset_reuses_maps() -> None:
    """TestShadowLoadCache_ResetReusesMaps: the mappings are emptied in place."""
    cache = ShadowLoad()
    cache.add("node1", "t1", 1000, 2000)
    cpu, memory, estimates = cache.cpu, cache.memory, cache.estimates
    cache.reset()
    assert cache.cpu is cpu and cache.memory is memory and cache.estimates is estimates


def test_shadow_load_is_clean() -> None:
    """TestShadowLoadCache_IsClean."""
    cache = ShadowLoad()
    assert cache.is_clean()
    cache.add("node1", "t1", 100, 200)
    assert not cache.is_clean()


def test_shadow_load_interleaved_access() -> None:
    """TestShadowLoadCache_ConcurrentAccess, on one thread: 100 additions and removals
    (of tasks never added) interleaved with reads leave the additions' sum, never a
    negative estimate."""
    cache = ShadowLoad()
    for i in range(100):
        if i % 2 == 0:
            cache.add("node1", f"task-{i}", 10, 20)
        else:
            cache.remove(f"task-{i}")
        cache.node_estimate("node1")
        cache.is_clean()
    cpu, memory = cache.node_estimate("node1")
    assert cpu == 500 and memory == 1000


def test_shadow_load_allocate_deallocate_exact_match() -> None:
    """TestShadowLoadCache_AllocateDeallocateExactMatch."""
    cache = ShadowLoad()
    cache.add("node1", "task-a", 1234.5678, 9876543.21)
    cache.add("node1", "task-b", 567.89, 1234567.89)
    cache.remove("task-a")
    cache.remove("task-b")
    cpu, memory = cache.node_estimate("node1")
    assert abs(cpu) <= TEST_EPS and abs(memory) <= TEST_EPS


def test_shadow_load_never_goes_below_zero() -> None:
    """subtractSnapshot's clamp: a node's estimate is never negative (the float
    remainder of a subtraction included)."""
    cache = ShadowLoad()
    cache.add("node1", "a", 0.1, 0.1)
    cache.add("node1", "b", 0.2, 0.2)
    cache.cpu["node1"] = cache.memory["node1"] = 0.25
    cache.remove("b")
    cache.remove("a")
    assert cache.node_estimate("node1") == (0.0, 0.0)


# -- the shadow load in sessions (usage.go) -------------------------------------------------

#: A task of 1 cpu / 1Gi estimated with the default request ratio.
EST_CPU, EST_MEMORY = 700.0, 0.7 * GI


def test_a_bound_task_counts_in_the_score() -> None:
    """A task bound at session open (phase Pending on a node) is in the blind spot:
    U(cpu) = (1200 + 700) / 4000, U(mem) = (4Gi + 0.7Gi) / 8Gi."""
    ssn = open_session(scenario([usage_node("n1", 30, 50)],
                                [pod("p0", node="n1"), pod("p1")], VOLCANO_WEIGHTS))
    shadow = plugin_of(ssn).shadow
    assert shadow.estimate_of("c1/p0") == PodEstimate("n1", EST_CPU, EST_MEMORY)
    # ((1 - 0.475) + (1 - 0.5875)) / 2 * 100 * 5
    assert node_scores(ssn, "c1/p1") == pytest.approx({"n1": 234.375}, abs=EPS)


@pytest.mark.parametrize(("started", "counted"), [
    pytest.param(None, True, id="start unknown (scenario tasks)"),
    pytest.param(20.0, True, id="started 20s ago, within the 30s interval"),
    pytest.param(30.0, False, id="started 30s ago"),
    pytest.param(600.0, False, id="started 10 minutes ago"),
])
def test_a_running_task_counts_while_the_metrics_cannot_see_it(started: float | None,
                                                                counted: bool) -> None:
    doc = scenario([usage_node("n1", 30, 50)], [pod("p0", node="n1"), pod("p1")])
    if started is None:
        doc["tasks"][0]["phase"] = "Running"
        ssn = open_session(doc)
    else:
        ssn = open_session(doc, started={"c1/p0": started})
    assert task(ssn, "c1/p0").status is TaskStatus.RUNNING
    expected = (EST_CPU, EST_MEMORY) if counted else (0.0, 0.0)
    assert plugin_of(ssn).shadow.node_estimate("n1") == expected


def test_tasks_that_hold_no_node_or_finished_are_not_counted() -> None:
    ssn = open_session(scenario(
        [usage_node("n1", 30, 50)],
        [pod("done", node="n1", phase="Succeeded"), pod("leaving", node="n1", deleting=True,
                                                          phase="Running"), pod("p1")]))
    assert plugin_of(ssn).shadow.is_clean()


def test_a_loaded_node_applies_the_risk_factor() -> None:
    """At 70% cpu and memory the node's load (0.7) reaches the risk threshold (0.6):
    the bound task is estimated at 1.2 times 700 millicores and 0.7Gi."""
    ssn = open_session(scenario([usage_node("n1", 70, 70)], [pod("p0", node="n1"),
                                                             pod("p1")]))
    assert plugin_of(ssn).shadow.estimate_of("c1/p0") == PodEstimate(
        "n1", 1000 * 0.7 * 1.2, GI * 0.7 * 1.2)
    # U(cpu) = (2800 + 840) / 4000 = 0.91, U(mem) = 0.7 + 0.105 = 0.805
    assert node_scores(ssn, "c1/p1")["n1"] == pytest.approx((0.09 + 0.195) / 2 * 500,
                                                            abs=EPS)


def test_the_risk_factor_can_start_part_way_through_a_node() -> None:
    """Tasks already on a node are estimated in task id order, each with the load the
    earlier ones left: "a" (2 cpu) brings the node from 0.5 to 0.7625, so "b" (1 cpu)
    gets the risk factor. (Volcano's order is Go map order.)"""
    ssn = open_session(scenario([usage_node("n1", 50, 50)],
                                [pod("b", node="n1"), pod("a", 2, "2Gi", node="n1")]))
    shadow = plugin_of(ssn).shadow
    assert shadow.estimate_of("c1/a") == PodEstimate("n1", 1400, 2 * GI * 0.7)
    assert shadow.estimate_of("c1/b") == PodEstimate("n1", 1000 * 0.7 * 1.2, GI * 0.7 * 1.2)


def test_stale_or_missing_figures_still_estimate_but_do_not_score() -> None:
    """The shadow load of a node with stale figures is kept (its risk factor reads the
    stale averages), but the node scores 0; a node without figures reads 0% load."""
    ssn = open_session(scenario([usage_node("stale", 70, 70, "-10m"), usage_node("none")],
                                [pod("p0", node="stale"), pod("p2", node="none"),
                                 pod("p1")]))
    shadow = plugin_of(ssn).shadow
    assert shadow.estimate_of("c1/p0") == PodEstimate("stale", 840, GI * 0.7 * 1.2)
    assert shadow.estimate_of("c1/p2") == PodEstimate("none", EST_CPU, EST_MEMORY)
    assert node_scores(ssn, "c1/p1") == {"stale": 0.0, "none": 0.0}


def test_a_best_effort_task_is_estimated_at_be_cpu_and_be_mem() -> None:
    ssn = open_session(scenario([usage_node("n1", 10, 10)],
                                [{"name": "be", "namespace": "c1", "job": "pg1",
                                  "node": "n1"}, pod("p1")],
                                {"estimator": {"be_cpu": "1", "be_mem": 512}}))
    assert plugin_of(ssn).shadow.estimate_of("c1/be") == PodEstimate("n1", 1000, 512 * MI)


def test_a_placement_adds_its_estimate_and_its_undo_removes_it_exactly() -> None:
    """The allocate event adds the task's estimate to its node; discarding the statement
    (a deallocate event) subtracts exactly that, and the scores are back."""
    ssn = open_session(scenario([usage_node("n1", 30, 50), usage_node("n2", 30, 50)],
                                [pod("p1"), pod("p2")], VOLCANO_WEIGHTS))
    shadow = plugin_of(ssn).shadow
    before = node_scores(ssn, "c1/p2")
    assert before == {"n1": 300.0, "n2": 300.0}
    stmt = Statement(ssn)
    stmt.allocate(task(ssn, "c1/p1"), "n1")
    assert shadow.estimate_of("c1/p1") == PodEstimate("n1", EST_CPU, EST_MEMORY)
    assert node_scores(ssn, "c1/p2") == pytest.approx({"n1": 234.375, "n2": 300}, abs=EPS)
    stmt.discard()
    assert shadow.estimate_of("c1/p1") is None
    assert shadow.node_estimate("n1") == (0.0, 0.0)
    assert node_scores(ssn, "c1/p2") == before


def test_a_pipelined_task_counts_too() -> None:
    ssn = open_session(scenario([usage_node("n1", 30, 50)], [pod("p1"), pod("p2")]))
    Statement(ssn).pipeline(task(ssn, "c1/p1"), "n1")
    assert plugin_of(ssn).shadow.estimate_of("c1/p1") == PodEstimate("n1", EST_CPU,
                                                                     EST_MEMORY)


def test_an_eviction_removes_an_estimate_and_its_undo_adds_one() -> None:
    """Volcano's rule, kept: an eviction is a deallocate event (the task's estimate, if
    any, is removed) and undoing it an allocate event, which adds an estimate even for a
    task that had none (one running for long)."""
    doc = scenario([usage_node("n1", 30, 50)],
                   [pod("young", node="n1", phase="Running"), pod("old", node="n1"),
                    pod("p1")])
    ssn = open_session(doc, started={"c1/old": 600.0})
    shadow = plugin_of(ssn).shadow
    assert shadow.estimate_of("c1/young") is not None and shadow.estimate_of("c1/old") is None
    stmt = Statement(ssn)
    stmt.evict(task(ssn, "c1/young"))
    stmt.evict(task(ssn, "c1/old"))
    assert shadow.node_estimate("n1") == (0.0, 0.0)
    stmt.discard()
    assert shadow.estimate_of("c1/young") == PodEstimate("n1", EST_CPU, EST_MEMORY)
    assert shadow.estimate_of("c1/old") == PodEstimate("n1", EST_CPU, EST_MEMORY)


def test_worked_example_of_the_docs() -> None:
    """docs/plugins/usage.md: n1 (300) beats n2 (287.5) for the first task; once it is
    placed there n1 scores 234.375 and the second task goes to n2."""
    doc = scenario([usage_node("n1", 30, 50), usage_node("n2", 35, 50)],
                   [pod("p1"), pod("p2")], actions="allocate", with_predicates=True)
    ssn = open_session(doc)
    assert node_scores(ssn, "c1/p1") == pytest.approx({"n1": 300, "n2": 287.5}, abs=EPS)
    Statement(ssn).allocate(task(ssn, "c1/p1"), "n1")
    assert node_scores(ssn, "c1/p2")["n1"] == pytest.approx(234.375, abs=EPS)
    decisions = run_scenario(parse_scenario(doc, source="<test>"), registry=registry())
    assert decisions.binds == {"c1/p1": "n1", "c1/p2": "n2"}
    # Without the shadow load (estimates of 0), n1 keeps its 300 and takes both.
    doc["config"]["tiers"][0]["plugins"][1]["arguments"] = {
        "estimator": {"request_ratio": 0}}
    unshadowed = run_scenario(parse_scenario(doc, source="<test>"), registry=registry())
    assert unshadowed.binds == {"c1/p1": "n1", "c1/p2": "n1"}


def test_the_shadow_load_lives_for_one_session() -> None:
    ssn = open_session(scenario([usage_node("n1", 30, 50)], [pod("p0", node="n1")]))
    usage = plugin_of(ssn)
    assert not usage.shadow.is_clean()
    ssn.close()
    assert usage.shadow.is_clean()


# -- freshness, flags, the metrics interval -------------------------------------------------

@pytest.mark.parametrize(("at", "fresh"), [
    pytest.param("-5m", True, id="exactly five minutes old"),
    pytest.param("-5m1s", False, id="older"),
    pytest.param("+1m", True, id="in the future"),
])
def test_figures_are_fresh_for_five_minutes(at: str, fresh: bool) -> None:
    ssn = open_session(scenario([usage_node("n1", 81, 10, at)], [pod("p1")]))
    assert metrics_fresh(ssn.nodes["n1"].usage, ssn.now) is fresh
    assert (ssn.predicate(task(ssn, "c1/p1"), ssn.nodes["n1"]) is None) is not fresh
    assert (node_scores(ssn, "c1/p1")["n1"] > 0) is fresh


def test_a_node_without_figures_passes_and_scores_zero() -> None:
    ssn = open_session(scenario([usage_node("n1")], [pod("p1")]))
    assert ssn.predicate(task(ssn, "c1/p1"), ssn.nodes["n1"]) is None
    assert node_scores(ssn, "c1/p1") == {"n1": 0.0}


def test_a_missing_period_reads_zero() -> None:
    """Only the 10m averages are read."""
    doc = scenario([usage_node("n1")], [pod("p1")])
    doc["nodes"][0]["usage"] = {"cpuAvg": {"5m": 99}, "memoryAvg": {"5m": 99},
                                "metricsTime": "-0s"}
    ssn = open_session(doc)
    assert ssn.predicate(task(ssn, "c1/p1"), ssn.nodes["n1"]) is None
    assert node_scores(ssn, "c1/p1") == {"n1": 500.0}


def test_the_cpu_reason_wins_when_both_exceed() -> None:
    ssn = open_session(scenario([usage_node("n1", 90, 90)], [pod("p1")]))
    err = ssn.predicate(task(ssn, "c1/p1"), ssn.nodes["n1"])
    assert err is not None and err.reasons == [CPU_OVERLOAD_REASON]


def test_thresholds_are_configurable() -> None:
    ssn = open_session(scenario([usage_node("n1", 50, 60)], [pod("p1")],
                                {"thresholds": {"cpu": 50, "mem": 59}}))
    err = ssn.predicate(task(ssn, "c1/p1"), ssn.nodes["n1"])
    assert err is not None and err.reasons == [MEMORY_OVERLOAD_REASON]


def test_the_enable_flags_switch_the_predicate_and_the_score_off() -> None:
    ssn = open_session(scenario([usage_node("n1", 90, 90)], [pod("p1")],
                                enablePredicate=False, enableNodeOrder=False))
    assert ssn.predicate(task(ssn, "c1/p1"), ssn.nodes["n1"]) is None
    assert node_scores(ssn, "c1/p1") == {"n1": 0.0}


def test_read_metrics_interval() -> None:
    """Volcano's ``metrics.interval``: a positive Go duration, else 30s."""
    assert read_metrics_interval(None) == DEFAULT_METRICS_INTERVAL == 30.0
    assert read_metrics_interval({"interval": "1m30s"}) == 90.0
    for unusable in ({}, {"interval": "0s"}, {"interval": "-1m"}, {"interval": "30"},
                     {"interval": "soon"}, {"interval": 60}):
        assert read_metrics_interval(unusable) == DEFAULT_METRICS_INTERVAL


def test_sessions_use_the_default_metrics_interval() -> None:
    ssn = open_session(scenario([usage_node("n1", 30, 50)], [pod("p1")]))
    assert plugin_of(ssn).metrics_interval == DEFAULT_METRICS_INTERVAL


def test_the_configuration_s_metrics_interval_is_read() -> None:
    doc = scenario([usage_node("n1", 30, 50)], [pod("p1")])
    doc["config"]["metrics"] = {"type": "prometheus", "interval": "2m"}
    ssn = open_session(doc)
    assert plugin_of(ssn).metrics_interval == 120.0


# -- the arguments: Volcano's documented configuration, and bad values ---------------------

def test_volcano_s_documented_configuration() -> None:
    """The configuration of usage.go's comment, read from YAML."""
    configuration = configuration_from_text("""
actions: "enqueue, allocate, backfill"
tiers:
- plugins:
  - name: usage
    enablePredicate: false
    arguments:
      usage.weight: 5
      cpu.weight: 1
      memory.weight: 1
      thresholds:
        cpu: 80
        mem: 80
      estimator:
        request_ratio: 0.7
        burst_ratio: 0
        risk_threshold: 0.6
        risk_factor: 1.2
        be_cpu: 250m
        be_mem: 200Mi
""")
    option = configuration.plugin_option("usage")
    assert option is not None and not option.enabled("enablePredicate")
    assert UsagePlugin(option.arguments).config == UsageConfig()


def test_configured_values_are_read() -> None:
    got = config({"usage.weight": 0, "cpu.weight": 3, "memory.weight": 0,
                  "thresholds": {"cpu": 0, "mem": 100},
                  "estimator": {"request_ratio": 1, "burst_ratio": 1, "risk_threshold": 0,
                                "risk_factor": 1, "be_cpu": 0, "be_mem": "1Gi"}})
    assert got == UsageConfig(usage_weight=0, cpu_weight=3, memory_weight=0, cpu_threshold=0,
                              memory_threshold=100, request_ratio=1.0, burst_ratio=1.0,
                              risk_threshold=0.0, risk_factor=1.0, be_cpu=0, be_memory=GI)


@pytest.mark.parametrize(("arguments", "logged"), [
    ({"usage.weight": "7"},
     "argument 'usage.weight' = '7' is not an unquoted integer; using 5 instead"),
    ({"cpu.weight": -1}, "argument 'cpu.weight' = -1 is not at least 0; using 1 instead"),
    ({"memory.weight": True},
     "argument 'memory.weight' = True is not an unquoted integer; using 1 instead"),
    ({"usage.weight": 2.0},
     "argument 'usage.weight' = 2.0 is not an unquoted integer; using 5 instead"),
    ({"thresholds": {"cpu": 85.5}},
     "argument 'thresholds.cpu' = 85.5 is not an unquoted integer; using 80 instead"),
    ({"thresholds": {"mem": 101}},
     "argument 'thresholds.mem' = 101 is not between 0 and 100; using 80 instead"),
    ({"estimator": {"request_ratio": "0.8"}},
     "argument 'estimator.request_ratio' = '0.8' is not an unquoted number; using 0.7"),
    ({"estimator": {"risk_factor": 0.5}},
     "argument 'estimator.risk_factor' = 0.5 is not at least 1; using 1.2 instead"),
    ({"estimator": {"risk_threshold": math.nan}},
     "argument 'estimator.risk_threshold' = nan is not between 0 and 1; using 0.6"),
    ({"estimator": {"be_cpu": "-1"}},
     "argument 'estimator.be_cpu' = '-1' is not a non-negative quantity or an integer of "
     "millicores; using '250m' instead"),
    ({"estimator": {"be_cpu": 0.5}},
     "argument 'estimator.be_cpu' = 0.5 is not a non-negative quantity"),
    ({"estimator": {"be_cpu": " 500m"}},
     "argument 'estimator.be_cpu' = ' 500m' is not a non-negative quantity"),
    ({"estimator": {"be_mem": -1}},
     "argument 'estimator.be_mem' = -1 is not at least 0; using '200Mi' instead"),
    ({"estimator": {"be_mem": "bad"}},
     "argument 'estimator.be_mem' = 'bad' is not a non-negative quantity or an integer of "
     "MiB; using '200Mi' instead"),
])
def test_an_unreadable_argument_keeps_its_default_with_a_warning(
    caplog: pytest.LogCaptureFixture, arguments: dict[str, Any], logged: str
) -> None:
    with caplog.at_level(logging.WARNING, logger="batchsched"):
        got = config(arguments)
    assert got == UsageConfig()
    assert f"plugin 'usage': {logged}" in caplog.text


@pytest.mark.parametrize("section", ["thresholds", "estimator"])
@pytest.mark.parametrize("value", [80, "cpu: 90", [90], {1: 90, "cpu": 90}])
def test_a_section_that_is_not_a_mapping_is_ignored_as_a_whole(
    caplog: pytest.LogCaptureFixture, section: str, value: object
) -> None:
    """Volcano's getUsageSectionArgs: anything but a mapping with string keys, even one
    holding a good value, leaves the whole section at its defaults."""
    with caplog.at_level(logging.WARNING, logger="batchsched"):
        assert config({section: value}) == UsageConfig()
    assert f"argument '{section}' = {value!r} is not a mapping with string keys" in caplog.text


def test_unknown_arguments_are_logged(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="batchsched"):
        got = config({"usage.wieght": 3, "thresholds": {"cpu": 70, "memory": 70},
                      "estimator": {"request-ratio": 0.5}})
    assert got == UsageConfig(cpu_threshold=70)
    text = caplog.text
    assert "plugin 'usage': ignoring argument(s) 'usage.wieght'" in text
    assert "ignoring argument(s) 'thresholds.memory' (it reads: thresholds.cpu, " \
           "thresholds.mem)" in text
    assert "ignoring argument(s) 'estimator.request-ratio'" in text


def test_good_arguments_log_nothing(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="batchsched"):
        config({"usage.weight": 1, "cpu.weight": 2, "memory.weight": 3,
                "thresholds": {"cpu": 90}, "estimator": {"be_cpu": "1", "be_mem": "1Gi",
                                                         "risk_factor": 2}})
    assert caplog.text == ""


# -- the column forms (the fast node selector) ----------------------------------------------

def _mixed_cluster(seed: int) -> dict[str, Any]:
    """Nodes with fresh, stale, overloaded or no figures, some tasks already placed (bound,
    or running since an unknown time), and three jobs of pending tasks."""
    rng = random.Random(seed)
    nodes = []
    for i in range(12):
        at = rng.choice(["-0s", "-2m", "-6m", None])
        figures = rng.choice([None, (rng.uniform(0, 95), rng.uniform(0, 95))])
        cpu, memory = figures if figures is not None else (None, None)
        nodes.append(usage_node(f"n{i:02d}", cpu, memory, at, cores=rng.choice([2, 4, 8]),
                                ram=rng.choice(["4Gi", "8Gi", "16Gi"])))
    tasks = []
    for i in range(8):
        placed = pod(f"placed{i}", rng.choice(["250m", 1, 2]), rng.choice(["512Mi", "2Gi"]),
                     node=rng.choice(nodes)["name"])
        if rng.random() < 0.5:
            placed["phase"] = "Running"
        tasks.append(placed)
    jobs = [{"name": "pg1", "namespace": "c1", "queue": "q1", "phase": "Inqueue"}]
    for j in range(2, 5):
        jobs.append({"name": f"pg{j}", "namespace": "c1", "queue": "q1", "phase": "Inqueue",
                     "minMember": 1})
        for t in range(rng.randint(3, 8)):
            entry = pod(f"pg{j}-{t}", rng.choice(["100m", "500m", 1, 2]),
                        rng.choice(["128Mi", "1Gi", "3Gi"]), job=f"pg{j}")
            if rng.random() < 0.15:
                del entry["requests"]
            tasks.append(entry)
    doc = scenario(nodes, tasks, {"estimator": {"risk_threshold": 0.4}},
                   actions="allocate, backfill", with_predicates=True)
    doc["jobs"] = jobs
    return doc


def _assert_columns_agree(ssn: Session) -> None:
    usage = plugin_of(ssn)
    columns = NodeColumns.of(ssn)
    everywhere = Candidates(np.arange(len(ssn.node_list), dtype=np.intp))
    some = Candidates(np.arange(0, len(ssn.node_list), 3, dtype=np.intp))
    for job in ssn.jobs.values():
        for t in job.tasks.values():
            expected = [ssn.node_order(t, node) for node in ssn.node_list]
            assert usage.vector_node_order(t, columns, everywhere).tolist() == expected
            assert usage.vector_node_order(t, columns, some).tolist() == expected[::3]
            verdicts = [usage.predicate(t, node) for node in ssn.node_list]
            mask = usage.vector_predicate(t, columns)
            passes = [err is None for err in verdicts]
            assert (mask is None and all(passes)) or (mask is not None
                                                      and mask.tolist() == passes)
            preempt = usage.vector_preempt_predicate(t, columns)
            assert (preempt is None) is (mask is None)
            if preempt is not None:
                assert preempt[0].tolist() == passes and not preempt[1].any()
                assert all(err.unresolvable for err in verdicts if err is not None)
    tasks = [t for job in ssn.jobs.values() for t in job.tasks.values()][:3]
    many = usage.vector_node_order_many(tasks, columns, everywhere)
    assert many.shape == (len(tasks), len(ssn.node_list))
    assert all(row == [ssn.node_order(tasks[0], n) for n in ssn.node_list]
               for row in many.tolist())


@pytest.mark.parametrize("seed", range(4))
def test_the_column_forms_give_the_scalar_answers(seed: int) -> None:
    """At session open and after every placement and its undo (the events rescore the
    node), bit for bit."""
    ssn = open_session(_mixed_cluster(seed))
    assert fast_path_available(ssn)
    _assert_columns_agree(ssn)
    stmt = Statement(ssn)
    pending = [t for job in ssn.jobs.values() for t in job.tasks.values()
               if t.status is TaskStatus.PENDING]
    for t, node in zip(pending, itertools.cycle(ssn.node_list)):
        stmt.allocate(t, node.name)
    _assert_columns_agree(ssn)
    stmt.discard()
    _assert_columns_agree(ssn)


@pytest.mark.parametrize("seed", range(6))
def test_the_fast_path_decides_as_the_reference(monkeypatch: pytest.MonkeyPatch,
                                                seed: int) -> None:
    doc = _mixed_cluster(seed)
    fast = run_scenario(parse_scenario(doc, source="<test>"), registry=registry())
    monkeypatch.setenv(FAST_PATH_ENVIRONMENT_VARIABLE, "0")
    reference = run_scenario(parse_scenario(doc, source="<test>"), registry=registry())
    assert fast.binds == reference.binds
    assert fast.pipelined == reference.pipelined
    assert reference.binds, "the scenario should place something"
