"""rescheduling: lowNodeUtilization victims taken by the shuffle action.

Volcano has no unit tests for this plugin; the cases follow its code
(pkg/scheduler/plugins/rescheduling) and its design doc (docs/design/rescheduling.md):
node classification, the room of the low nodes, the eviction order and stop
condition, the candidates, the interval between runs, and argument handling.
"""

from __future__ import annotations

import logging
import math
import re
from pathlib import Path
from typing import Any

import attrs
import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from batchsched.api import TaskInfo
from batchsched.api.cluster import ClusterInfo
from batchsched.api.resource import Resource
from batchsched.api.types import TaskStatus
from batchsched.cache.memory import MemoryCache
from batchsched.errors import ConfigError, PluginError
from batchsched.framework.arguments import Arguments
from batchsched.framework.registry import Registry
from batchsched.framework.session import Session
from batchsched.plugins.rescheduling import (
    DEFAULT_INTERVAL,
    LOW_NODE_UTILIZATION,
    LowNodeUtilizationConfig,
    QosClass,
    ReschedulingConfig,
    ReschedulingPlugin,
    Strategy,
    eviction_order,
    parse_arguments,
    qos_class,
)
from batchsched.scenario import check_scenario, load_scenario, parse_scenario, run_scenario
from batchsched.scheduler import Scheduler

DATA = Path(__file__).parent / "data" / "rescheduling"
REGISTRY = Registry(autoload=False)
NOW = 1_700_000_000.0
SIZE = {"cpu": 10, "memory": "10Gi", "pods": 110}


# -- helpers ---------------------------------------------------------------------------


def lnu(thresholds: Any = None, targets: Any = None, **arguments: Any) -> dict[str, Any]:
    """Plugin arguments with one lowNodeUtilization strategy (20/50 by default)."""
    params = {"thresholds": {"cpu": 20, "memory": 20} if thresholds is None else thresholds,
              "targetThresholds": {"cpu": 50, "memory": 50} if targets is None else targets}
    return {"strategies": [{"name": LOW_NODE_UTILIZATION, "params": params}], **arguments}


def node(name: str, cpu: float | None, memory: float | None = None, *, period: str = "5m",
         **fields: Any) -> dict[str, Any]:
    """A node of 10 cpu and 10Gi; ``cpu=None`` gives it no metrics."""
    entry: dict[str, Any] = {"name": name, "allocatable": dict(SIZE), **fields}
    if cpu is not None:
        entry["usage"] = {"cpuAvg": {period: cpu},
                          "memoryAvg": {period: cpu if memory is None else memory}}
    return entry


def running(name: str, on: str, priority: int = 1, cpu: Any = 1, memory: Any = "1Gi",
            **fields: Any) -> dict[str, Any]:
    """A Running task of job ``j``; cpu and memory 0 make it best-effort."""
    requests = {k: v for k, v in (("cpu", cpu), ("memory", memory)) if v}
    return {"name": name, "job": "j", "node": on, "phase": "Running", "priority": priority,
            "requests": requests, **fields}


def scenario(nodes: list[dict[str, Any]], tasks: list[dict[str, Any]],
             arguments: dict[str, Any] | None, *, actions: str = "shuffle") -> dict[str, Any]:
    plugin: dict[str, Any] = {"name": "rescheduling"}
    if arguments is not None:
        plugin["arguments"] = arguments
    return {"version": 1, "name": "rescheduling", "now": NOW,
            "config": {"actions": actions, "tiers": [{"plugins": [plugin]}]},
            "nodes": nodes, "jobs": [{"name": "j", "minMember": 0, "phase": "Running"}],
            "tasks": tasks}


def evicted(doc: dict[str, Any]) -> list[str]:
    """The tasks one session's shuffle evicts, in eviction order, without the namespace."""
    decisions = run_scenario(parse_scenario(doc, source="<test>"), registry=REGISTRY)
    return [uid.partition("/")[2] for uid in decisions.evicted]


# -- arguments -------------------------------------------------------------------------


def test_defaults_are_volcano_s() -> None:
    config = parse_arguments(Arguments())
    assert config == ReschedulingConfig()
    assert config.interval == DEFAULT_INTERVAL == 300
    assert config.metrics_period == "5m"
    assert config.strategies == (Strategy(LOW_NODE_UTILIZATION),)
    assert config.low_node_utilization == LowNodeUtilizationConfig(
        {"cpu": 100, "memory": 100}, {"cpu": 100, "memory": 100})


def test_the_default_thresholds_evict_nothing() -> None:
    """With 100% targets no node can be above them: nothing is high."""
    doc = scenario([node("full", 100, 100), node("idle", 0, 0)],
                   [running("t1", "full"), running("t2", "full")], None)
    assert evicted(doc) == []


@pytest.mark.parametrize(("raw", "seconds"), [
    ("90s", 90.0), ("1h30m", 5400.0), ("1.5m", 90.0), ("0", 0.0), ("-1m", -60.0),
])
def test_interval_is_a_go_duration(raw: str, seconds: float) -> None:
    assert parse_arguments(Arguments({"interval": raw})).interval == seconds


@pytest.mark.parametrize("raw", ["soon", "", "5d", "300", "3000000h"])
def test_an_interval_that_does_not_parse_keeps_5m_with_a_warning(
    caplog: pytest.LogCaptureFixture, raw: str,
) -> None:
    with caplog.at_level(logging.WARNING, logger="batchsched"):
        config = parse_arguments(Arguments({"interval": raw}))
    assert config.interval == DEFAULT_INTERVAL
    assert f"plugin 'rescheduling': argument 'interval' = {raw!r} is not a Go duration" \
        in caplog.text


@pytest.mark.parametrize(("raw", "period"), [("10m", "10m"), ("", "5m"), ("1h", "1h")])
def test_metrics_period(raw: str, period: str) -> None:
    assert parse_arguments(Arguments({"metricsPeriod": raw})).metrics_period == period


@pytest.mark.parametrize(("arguments", "key"), [
    ({"interval": 300}, "rescheduling.interval"),
    ({"interval": None}, "rescheduling.interval"),
    ({"metricsPeriod": 5}, "rescheduling.metricsPeriod"),
    (lnu({"cpu": 20.5}), "rescheduling.strategies[0].params.thresholds.cpu"),
    (lnu(None, {"memory": "50"}), "rescheduling.strategies[0].params.targetThresholds.memory"),
    (lnu({"cpu": True}), "rescheduling.strategies[0].params.thresholds.cpu"),
    (lnu({"pods": 1.5}), "rescheduling.strategies[0].params.thresholds.pods"),
    (lnu({1: 20}), "rescheduling.strategies[0].params.thresholds"),
])
def test_values_volcano_panics_on_are_errors_naming_the_field(
    arguments: dict[str, Any], key: str,
) -> None:
    with pytest.raises(ConfigError) as caught:
        ReschedulingPlugin(Arguments(arguments))
    assert caught.value.key == key
    # Through a session, the registry names the plugin and keeps the field.
    with pytest.raises(PluginError, match=r"plugin 'rescheduling'.*" + re.escape(key)):
        run_scenario(parse_scenario(scenario([node("n1", 0)], [], arguments), source="<t>"),
                     registry=REGISTRY)


@pytest.mark.parametrize("strategies", [{"name": LOW_NODE_UTILIZATION}, "lowNodeUtilization",
                                        [], None])
def test_strategies_that_are_not_a_non_empty_list_keep_the_default(
    caplog: pytest.LogCaptureFixture, strategies: Any,
) -> None:
    with caplog.at_level(logging.WARNING, logger="batchsched"):
        config = parse_arguments(Arguments({"strategies": strategies}))
    assert config.strategies == (Strategy(LOW_NODE_UTILIZATION),)
    assert config.low_node_utilization == LowNodeUtilizationConfig()
    assert "argument 'strategies'" in caplog.text


@pytest.mark.parametrize("entry", [
    "lowNodeUtilization",                                          # not a mapping
    {"name": 7},                                                   # name not a string
    {"name": LOW_NODE_UTILIZATION, "params": [20, 50]},            # params not a mapping
    {"name": LOW_NODE_UTILIZATION, "params": {1: {"cpu": 20}}},    # a key not a string
])
def test_an_entry_volcano_cannot_decode_is_skipped(
    caplog: pytest.LogCaptureFixture, entry: Any,
) -> None:
    with caplog.at_level(logging.WARNING, logger="batchsched"):
        config = parse_arguments(Arguments({"strategies": [entry]}))
    assert config.strategies == ()
    assert config.low_node_utilization is None
    assert "skipping strategies[0]" in caplog.text


def test_unknown_strategies_do_nothing(caplog: pytest.LogCaptureFixture) -> None:
    """The design doc's offlineOnly and lowPriorityFirst were never implemented."""
    with caplog.at_level(logging.WARNING, logger="batchsched"):
        config = parse_arguments(Arguments({"strategies": [{"name": "offlineOnly"},
                                                           {"name": "lowPriorityFirst"}]}))
    assert [s.name for s in config.strategies] == ["offlineOnly", "lowPriorityFirst"]
    assert config.low_node_utilization is None
    assert "unknown strategy 'offlineOnly' does nothing" in caplog.text
    doc = scenario([node("hot", 90), node("cold", 0)], [running("t", "hot")],
                   {"strategies": [{"name": "offlineOnly"}]})
    assert evicted(doc) == []


def test_strategy_keys_are_matched_without_regard_to_case() -> None:
    config = parse_arguments(Arguments({"strategies": [
        {"NAME": LOW_NODE_UTILIZATION, "Params": {"thresholds": {"cpu": 30}}}]}))
    assert config.low_node_utilization is not None
    assert config.low_node_utilization.thresholds == {"cpu": 30, "memory": 100}


def test_null_params_are_the_defaults() -> None:
    config = parse_arguments(Arguments({"strategies": [
        {"name": LOW_NODE_UTILIZATION, "params": None}]}))
    assert config.low_node_utilization == LowNodeUtilizationConfig()


def test_the_last_lownodeutilization_entry_s_params_win() -> None:
    """Only those params are read: the first entry's float would not be looked at."""
    arguments = {"strategies": [
        {"name": LOW_NODE_UTILIZATION, "params": {"thresholds": {"cpu": 20.5}}},
        {"name": LOW_NODE_UTILIZATION, "params": {"thresholds": {"cpu": 30, "memory": 40}}},
    ]}
    config = parse_arguments(Arguments(arguments))
    assert config.low_node_utilization is not None
    assert config.low_node_utilization.thresholds == {"cpu": 30, "memory": 40}


def test_thresholds_start_at_100_and_only_cpu_and_memory_count(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with caplog.at_level(logging.WARNING, logger="batchsched"):
        config = parse_arguments(Arguments(lnu({"cpu": 20, "pods": 20, "pod": 20},
                                               {"memory": 50, "gpu": 10})))
    assert config.low_node_utilization == LowNodeUtilizationConfig(
        {"cpu": 20, "memory": 100}, {"cpu": 100, "memory": 50})
    assert "targetThresholds.gpu has no effect" in caplog.text
    assert "pods" not in caplog.text


def test_thresholds_that_are_not_a_mapping_end_the_reading_of_the_params(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with caplog.at_level(logging.WARNING, logger="batchsched"):
        config = parse_arguments(Arguments(lnu([20], {"cpu": 60.5})))
    # targetThresholds is never read: its float is not an error, as in Volcano.
    assert config.low_node_utilization == LowNodeUtilizationConfig()
    assert "thresholds = [20] is not a mapping" in caplog.text
    config = parse_arguments(Arguments(lnu({"cpu": 10}, "high")))
    assert config.low_node_utilization is not None
    assert config.low_node_utilization.target_thresholds == {"cpu": 100, "memory": 100}
    assert config.low_node_utilization.thresholds == {"cpu": 10, "memory": 100}


def test_arguments_volcano_never_reads_are_logged(caplog: pytest.LogCaptureFixture) -> None:
    arguments = lnu(queueSelector=["default"], labelSelector={"business": "offline"})
    params = arguments["strategies"][0]["params"]
    params.update(nodeFit=True, thresholdPriorityClassName="system-cluster-critical",
                  typo=1)
    with caplog.at_level(logging.WARNING, logger="batchsched"):
        ReschedulingPlugin(Arguments(arguments))
    text = caplog.text
    assert "ignoring 'nodeFit', 'thresholdPriorityClassName': Volcano accepts but never" \
        in text
    assert "ignoring 'typo'" in text
    assert "ignoring argument(s) 'labelSelector', 'queueSelector'" in text


# -- classification --------------------------------------------------------------------


def test_nodes_without_metrics_read_as_idle_so_nothing_moves() -> None:
    doc = scenario([node("a", None), node("b", None)], [running("t", "a")], lnu())
    assert evicted(doc) == []


def test_the_metrics_period_picks_the_averages() -> None:
    nodes = [node("hot", 90, period="10m"), node("cold", 0, period="10m")]
    tasks = [running("t", "hot", cpu=5, memory="5Gi")]
    assert evicted(scenario(nodes, tasks, lnu())) == []        # no 5m figure: all idle
    assert evicted(scenario(nodes, tasks, lnu(metricsPeriod="10m"))) == ["t"]


@pytest.mark.parametrize(("usages", "why"), [
    ([(10, 10), (15, 5)], "every node is low"),
    ([(90, 90), (30, 30)], "no node is low"),
    ([(40, 50), (10, 10)], "no node is above a target (50 is not above 50)"),
    ([(90, 90), (20, 10)], "20 is not below the cpu threshold of 20"),
])
def test_nothing_moves_without_both_low_and_high_nodes(
    usages: list[tuple[float, float]], why: str,
) -> None:
    nodes = [node(f"n{i}", cpu, memory) for i, (cpu, memory) in enumerate(usages)]
    tasks = [running(f"t{i}", f"n{i}", cpu=5, memory="5Gi") for i in range(len(usages))]
    assert evicted(scenario(nodes, tasks, lnu())) == [], why


def test_one_resource_above_its_target_makes_a_node_high() -> None:
    nodes = [node("hot", 10, 51), node("cold", 10, 10)]
    assert evicted(scenario(nodes, [running("t", "hot")], lnu())) == ["t"]


def test_an_unschedulable_node_is_never_low_but_can_be_high() -> None:
    tasks = [running("t", "hot")]
    cold_cordoned = [node("hot", 90), node("cold", 0, unschedulable=True)]
    assert evicted(scenario(cold_cordoned, tasks, lnu())) == []
    hot_cordoned = [node("hot", 90, unschedulable=True), node("cold", 0)]
    assert evicted(scenario(hot_cordoned, tasks, lnu())) == ["t"]


# -- victims ---------------------------------------------------------------------------


def test_victims_go_in_volcano_s_order_until_the_node_is_below_its_targets() -> None:
    """Priority first (lowest first), best-effort before the rest, then task id. The
    node goes on while cpu or memory is at or above 50%: 70/60 -> (be: no request)
    70/60 -> 60/50 -> 50/40 (cpu still at 50) -> 40/30, stop."""
    tasks = [running("p100", "hot", 100), running("p1-b", "hot", 1),
             running("p50", "hot", 50), running("be", "hot", 1, cpu=0, memory=0),
             running("p1000", "hot", 1000), running("p1-a", "hot", 1),
             running("cold-task", "cold", 0)]
    doc = scenario([node("hot", 70, 60), node("cold", 10, 10)], tasks, lnu())
    assert evicted(doc) == ["be", "p1-a", "p1-b", "p50"]


def test_the_scenario_files_check() -> None:
    files = sorted(DATA.glob("*.yaml"))
    assert files
    for path in files:
        result = check_scenario(load_scenario(path), registry=REGISTRY)
        assert result.passed, (path.name, result.differences)


def test_hotter_nodes_go_first_and_share_the_room_of_the_low_nodes() -> None:
    """Room on cold (target 30%, use 10%): 2000m cpu. warm (60+60) comes after hot
    (40+90) though it is listed first; hot's two victims use the whole cpu room, which
    stops everything at exactly zero."""
    nodes = [node("warm", 60, 60), node("hot", 40, 90), node("cold", 10, 10)]
    tasks = [running("h1", "hot"), running("h2", "hot"), running("h3", "hot"),
             running("w1", "warm")]
    assert evicted(scenario(nodes, tasks, lnu(None, {"cpu": 30, "memory": 30}))) == [
        "h1", "h2"]


def test_a_room_that_went_negative_does_not_stop_the_eviction() -> None:
    """Room 1500m: after one victim 500m, after two -500m (not zero: go on) until the
    node is below its targets: 80 -> 70 -> 60 -> 50 -> 40."""
    nodes = [node("hot", 80, 10), node("cold", 35, 10)]
    tasks = [running(f"t{i}", "hot") for i in range(6)]
    assert evicted(scenario(nodes, tasks, lnu({"cpu": 40, "memory": 40}))) == [
        "t0", "t1", "t2", "t3"]


def test_room_is_counted_on_the_allocatable_and_use_on_the_capacity() -> None:
    """hot has 8 cpu allocatable out of 10: each 1-cpu victim lowers its use by 10%
    (of capacity), so 70% needs three victims to get below 50% (not two, as 12.5%
    steps would). cold's room: 50% of its 10 allocatable cpu minus 10%: 4 cpu."""
    nodes = [node("hot", 70, 10, allocatable={"cpu": 8, "memory": "10Gi", "pods": 110},
                  capacity=dict(SIZE)),
             node("cold", 10, 10)]
    tasks = [running(f"t{i}", "hot", memory=0) for i in range(5)]
    assert evicted(scenario(nodes, tasks, lnu())) == ["t0", "t1", "t2"]


def test_only_running_tasks_are_victims() -> None:
    """A Releasing task and a Bound one sit first in the order but are passed over:
    they take no room and do not lower the node's use (65 -> 55 -> 45)."""
    tasks = [running("releasing", "hot", 0, deleting=True),
             {**running("bound", "hot", 0), "phase": "Pending"},
             running("r1", "hot", 5), running("r2", "hot", 5), running("r3", "hot", 5)]
    doc = scenario([node("hot", 65, 10), node("cold", 10, 10)], tasks, lnu())
    assert evicted(doc) == ["r1", "r2"]


def test_victims_are_the_candidates_themselves() -> None:
    doc = scenario([node("hot", 90), node("cold", 0)],
                   [running("a", "hot"), running("b", "hot")], lnu(), actions="")
    parsed = parse_scenario(doc, source="<test>")
    ssn = Session.open(parsed.build_cache(), parsed.configuration, registry=REGISTRY)
    job = next(iter(ssn.jobs.values()))
    candidates = list(job.tasks.values())
    victims = ssn.victim_tasks(candidates)
    assert [v.name for v in victims] == ["a", "b"]
    assert all(any(v is c for c in candidates) for v in victims)
    # Not among the candidates: not a victim, whatever the node holds.
    assert [v.name for v in ssn.victim_tasks(candidates[1:])] == ["b"]


def test_eviction_order_and_qos() -> None:
    def make(name: str, priority: int, cpu: float) -> TaskInfo:
        return TaskInfo.create("ns", name, "ns/j", Resource(cpu), priority=priority)

    tasks = [make("c", 2, 0), make("b", 1, 100), make("a", 1, 100), make("z", 1, 0)]
    assert [t.name for t in eviction_order(tasks)] == ["z", "a", "b", "c"]
    assert qos_class(tasks[0]) is QosClass.BEST_EFFORT
    assert qos_class(tasks[1]) is QosClass.BURSTABLE


# -- when to run -----------------------------------------------------------------------


def _cache(interval: str, *, actions: str = "shuffle") -> tuple[MemoryCache, Scheduler]:
    tasks = [running(f"t{i}", "hot") for i in range(6)]
    doc = scenario([node("hot", 70, 10), node("cold", 10, 10)], tasks,
                   lnu(interval=interval), actions=actions)
    parsed = parse_scenario(doc, source="<test>")
    cache = parsed.build_cache()
    return cache, Scheduler(cache, parsed.configuration, registry=REGISTRY)


def _evictions(cache: MemoryCache) -> list[str]:
    return [e.task.partition("/")[2] for e in cache.evictions]


def test_the_interval_gates_runs_across_sessions_on_one_cache() -> None:
    """The first session runs; the next ones wait until strictly more than the interval
    has passed on the session clock. The measured use does not change (no new metrics),
    so the second run evicts the next tasks in order."""
    cache, scheduler = _cache("5m")
    scheduler.run_once()
    assert _evictions(cache) == ["t0", "t1", "t2"]
    for step in (60, 240):  # +1m, then +5m exactly: not yet
        cache.now = (cache.now or 0) + step
        scheduler.run_once()
        assert len(cache.evictions) == 3
    cache.now = (cache.now or 0) + 1
    scheduler.run_once()
    assert _evictions(cache) == ["t0", "t1", "t2", "t3", "t4", "t5"]


def test_each_session_says_when_the_next_run_is_due() -> None:
    """The first instant strictly more than the interval after the last run, for a host
    that opens sessions on events only (``Session.wake_up_at``)."""
    cache, scheduler = _cache("5m")
    start = cache.now or 0.0
    due = math.nextafter(start + 300, math.inf)
    assert scheduler.run_once().wake_ups["rescheduling"] == due
    cache.now = start + 60
    assert scheduler.run_once().wake_ups["rescheduling"] == due


@pytest.mark.parametrize(("interval", "actions"), [("5m", "allocate"), ("0s", "shuffle")])
def test_no_wake_up_without_shuffle_or_with_no_interval(interval: str, actions: str) -> None:
    """Without shuffle nothing evicts the victims; with no interval every session runs."""
    _, scheduler = _cache(interval, actions=actions)
    assert "rescheduling" not in scheduler.run_once().wake_ups


def test_a_run_is_recorded_at_session_open_even_without_shuffle() -> None:
    """As in Volcano, the clock restarts when the plugin opens in a session that is due,
    whatever the actions then do."""
    cache, allocating = _cache("5m", actions="allocate")
    allocating.run_once()
    shuffling = Scheduler(cache, attrs.evolve(allocating.configuration, actions=("shuffle",)),
                          registry=REGISTRY)
    cache.now = (cache.now or 0) + 60
    shuffling.run_once()
    assert cache.evictions == []
    cache.now += 241
    shuffling.run_once()
    assert _evictions(cache) == ["t0", "t1", "t2"]


def test_each_cache_keeps_its_own_last_run() -> None:
    one, first = _cache("5m")
    two, second = _cache("5m")
    first.run_once()
    second.run_once()
    assert len(one.evictions) == len(two.evictions) == 3
    first.run_once()
    assert len(one.evictions) == 3


def test_a_zero_interval_needs_the_clock_to_move_and_a_negative_one_does_not() -> None:
    cache, scheduler = _cache("0s")
    scheduler.run_once()
    scheduler.run_once()                       # same session clock: 0 is not more than 0
    assert len(cache.evictions) == 3
    cache.now = (cache.now or 0) + 0.001
    scheduler.run_once()
    assert len(cache.evictions) == 6
    cache, scheduler = _cache("-1s")
    scheduler.run_once()
    scheduler.run_once()
    assert len(cache.evictions) == 6


def test_a_session_without_a_cache_always_runs() -> None:
    cache, scheduler = _cache("1h", actions="")
    for _ in range(2):
        ssn = Session.open(cache.snapshot(), scheduler.configuration, registry=REGISTRY)
        assert ssn.cache is None
        assert len(ssn.victim_tasks(_running(ssn))) == 3


class _SlottedCache:
    """A host cache that cannot be weakly referenced."""

    __slots__ = ("inner",)

    def __init__(self, inner: MemoryCache) -> None:
        self.inner = inner

    def snapshot(self) -> ClusterInfo:
        return self.inner.snapshot()

    def bind(self, task: TaskInfo, node_name: str) -> bool:
        return self.inner.bind(task, node_name)

    def evict(self, task: TaskInfo, reason: str) -> bool:
        return self.inner.evict(task, reason)

    def update_job_status(self, job: Any) -> None:
        self.inner.update_job_status(job)

    def record_event(self, event: Any) -> None:
        self.inner.record_event(event)


def test_a_cache_that_cannot_be_weakly_referenced_runs_every_session(
    caplog: pytest.LogCaptureFixture,
) -> None:
    cache, scheduler = _cache("1h", actions="")
    host = _SlottedCache(cache)
    with caplog.at_level(logging.WARNING, logger="batchsched"):
        for _ in range(2):
            ssn = Session.open(host, scheduler.configuration, registry=REGISTRY)
            assert len(ssn.victim_tasks(_running(ssn))) == 3
    assert caplog.text.count("cannot be weakly referenced") == 1


def _running(ssn: Session) -> list[TaskInfo]:
    return [t for job in ssn.jobs.values() for t in job.tasks.values()
            if t.status == TaskStatus.RUNNING]


# -- property --------------------------------------------------------------------------

_use = st.integers(0, 100) | st.integers(0, 25)   # more often low
_nodes = st.lists(st.tuples(_use, _use,
                            st.sampled_from([False, False, False, True]),
                            st.sampled_from([4, 8, 16]), st.sampled_from(["8Gi", "16Gi"])),
                  min_size=2, max_size=5)
_tasks = st.lists(st.tuples(st.integers(0, 4), st.sampled_from([1, 10, 100]),
                            st.sampled_from([0, "500m", 1, 2]),
                            st.sampled_from([0, "512Mi", "1Gi"]),
                            st.sampled_from(["Running", "Running", "Running", "Pending"])),
                  min_size=1, max_size=14)
_low_levels = st.tuples(st.integers(10, 60), st.integers(10, 60))
_target_levels = st.tuples(st.integers(20, 80), st.integers(20, 80))


def _key(task: TaskInfo) -> tuple[int, int, str]:
    best_effort = task.resreq.milli_cpu == 0 and task.resreq.memory == 0
    return task.priority, 0 if best_effort else 1, task.uid


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_nodes, _tasks, _low_levels, _target_levels)
def test_victims_follow_the_rules_of_low_node_utilization(
    nodes: list[tuple[int, int, bool, int, str]],
    tasks: list[tuple[int, int, Any, Any, str]],
    low: tuple[int, int], target: tuple[int, int],
) -> None:
    """Victims are Running candidates, once each, from high nodes only; the high nodes
    are visited hottest first (ties in node order), each from the front of its
    candidates in eviction order; each victim is taken while its node is at or above a
    target and no room is exactly zero, and a node keeps candidates only when that
    condition failed."""
    node_docs = [{**node(f"n{i}", cpu, memory, unschedulable=cordoned),
                  "allocatable": {"cpu": size, "memory": mem, "pods": 110}}
                 for i, (cpu, memory, cordoned, size, mem) in enumerate(nodes)]
    task_docs = [{**running(f"t{i:02}", f"n{on % len(nodes)}", priority, cpu, memory),
                  "phase": phase}
                 for i, (on, priority, cpu, memory, phase) in enumerate(tasks)]
    thresholds = {"cpu": low[0], "memory": low[1]}
    targets = {"cpu": target[0], "memory": target[1]}
    parsed = parse_scenario(scenario(node_docs, task_docs, lnu(thresholds, targets),
                                     actions=""), source="<test>")
    ssn = Session.open(parsed.to_cluster(), parsed.configuration, registry=REGISTRY)
    candidates = _running(ssn)
    victims = ssn.victim_tasks(candidates)

    use = {f"n{i}": {"cpu": float(cpu), "memory": float(memory)}
           for i, (cpu, memory, *_rest) in enumerate(nodes)}
    is_low = {n: not ssn.nodes[n].unschedulable
              and all(use[n][r] < thresholds[r] for r in targets) for n in use}
    is_high = {n: not is_low[n] and any(use[n][r] > targets[r] for r in targets) for n in use}
    assert all(any(v is c for c in candidates) for v in victims)
    assert len({v.uid for v in victims}) == len(victims)
    assert all(is_high[v.node_name] for v in victims)
    if not any(is_low.values()) or all(is_low.values()):
        assert victims == []
        return

    room = {"cpu": 0, "memory": 0}
    for name in (n for n in use if is_low[n]):
        alloc = ssn.nodes[name].allocatable
        for r, amount in (("cpu", alloc.milli_cpu), ("memory", alloc.memory)):
            room[r] += int(targets[r] * amount * 0.01) - int(use[name][r] * amount * 0.01)

    def going_on(percent: dict[str, float]) -> bool:
        return any(percent[r] >= targets[r] for r in targets) and 0 not in room.values()

    visited: list[TaskInfo] = []
    high = [n.name for n in ssn.node_list if is_high[n.name]]
    for name in sorted(high, key=lambda n: use[n]["cpu"] + use[n]["memory"], reverse=True):
        taken = [v for v in victims if v.node_name == name]
        mine = sorted((c for c in candidates if c.node_name == name), key=_key)
        assert [t.uid for t in taken] == [t.uid for t in mine[:len(taken)]]
        capacity = ssn.nodes[name].capacity
        percent = dict(use[name])
        for task in taken:
            assert going_on(percent)
            cpu, memory = int(task.resreq.milli_cpu), int(task.resreq.memory)
            room["cpu"] -= cpu
            room["memory"] -= memory
            percent["cpu"] -= cpu / 1000 * 100 / (capacity.milli_cpu / 1000)
            percent["memory"] -= memory * 100 / capacity.memory
        if len(taken) < len(mine):
            assert not going_on(percent)
        visited.extend(taken)
    assert visited == victims


OVERSUBSCRIBED_HOT_NODE = """
version: 1
name: rescheduling on an oversubscribed hot node
now: "2024-01-01T00:10:00Z"
config:
  actions: "shuffle"
  tiers:
  - plugins:
    - name: rescheduling
      arguments:
        interval: 1m
        metricsPeriod: 10m
        strategies:
        - name: lowNodeUtilization
          params:
            thresholds: {cpu: 20, memory: 20}
            targetThresholds: {cpu: 80, memory: 80}
nodes:
- name: hot
  allocatable: {cpu: '10', memory: 20Gi, pods: 110}
  annotations: {volcano.sh/oversubscription-cpu: "%s"}
  usage: {cpuAvg: {10m: 85}, memoryAvg: {10m: 10}, metricsTime: -1m}
- name: cold
  allocatable: {cpu: '10', memory: 20Gi, pods: 110}
  usage: {cpuAvg: {10m: 10}, memoryAvg: {10m: 10}, metricsTime: -1m}
jobs:
- {name: j1, minMember: 1}
tasks:
- {name: a, job: j1, phase: Running, node: hot, requests: {cpu: '1', memory: 1Gi}}
- {name: b, job: j1, phase: Running, node: hot, requests: {cpu: '1', memory: 1Gi}}
- {name: c, job: j1, phase: Running, node: hot, requests: {cpu: '1', memory: 1Gi}}
"""


@pytest.mark.parametrize("oversubscription", ["0", "10000"])
def test_utilisation_is_measured_on_the_node_s_own_capacity(oversubscription: str) -> None:
    # Volcano's lowNodeUtilization reads the Kubernetes node (node.Status), which the
    # oversubscription annotations do not change: each 1-cpu victim takes 10% off the
    # hot node's 85%, and one eviction brings it under 80% with or without them.
    decisions = run_scenario(parse_scenario(yaml.safe_load(
        OVERSUBSCRIBED_HOT_NODE % oversubscription)))
    assert decisions.evicted == ["default/a"]
