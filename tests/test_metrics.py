"""Scheduling metrics: Volcano's names, read in process or as Prometheus text."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from batchsched.metrics import LATENCY_BUCKETS, Metrics
from batchsched.scenario import load_scenario
from batchsched.scheduler import Scheduler

#: One high-priority task preempts a low-priority one on a full node.
PREEMPTION_FILE = Path(__file__).parent / "scenario" / "data" / "one-preemption.yaml"


def run_one_cycle() -> Metrics:
    scenario = load_scenario(PREEMPTION_FILE)
    metrics = Metrics()
    Scheduler(scenario.build_cache(), scenario.configuration, metrics=metrics).run_once()
    return metrics


def test_a_cycle_records_its_latencies_and_its_evictions() -> None:
    metrics = run_one_cycle()
    assert metrics.histogram("e2e_scheduling_latency_milliseconds")[0] == 1
    for action in ("allocate", "preempt"):
        count, total = metrics.histogram("action_scheduling_latency_microseconds", action=action)
        assert count == 1 and total > 0
    for plugin in ("priority", "gang", "drf", "predicates", "proportion", "nodeorder"):
        for point in ("OnSessionOpen", "OnSessionClose"):
            count, _ = metrics.histogram("plugin_scheduling_latency_microseconds",
                                         plugin=plugin, OnSession=point)
            assert count == 1, (plugin, point)
    assert metrics.value("schedule_attempts_total", result="scheduled") == 1
    assert metrics.value("pod_preemption_victims") == 1
    assert metrics.value("queue_share", queue_name="default") > 0


def test_the_text_exposition_is_prometheus_format() -> None:
    text = run_one_cycle().exposition()
    assert "# TYPE volcano_e2e_scheduling_latency_milliseconds histogram" in text
    assert 'volcano_action_scheduling_latency_microseconds_count{action="preempt"} 1' in text
    assert 'volcano_schedule_attempts_total{result="scheduled"} 1' in text
    bucket = r'volcano_e2e_scheduling_latency_milliseconds_bucket\{le="([^"]+)"\} (\d+)'
    buckets = re.findall(bucket, text)
    assert [b for b, _ in buckets] == [f"{b:g}" for b in LATENCY_BUCKETS] + ["+Inf"]
    counts = [int(c) for _, c in buckets]
    assert counts == sorted(counts) and counts[-1] == 1  # cumulative
    sample = r'[a-z0-9_]+(\{[^}]*\})? [0-9.e+-]+|.*Inf.*'
    for line in text.splitlines():
        assert line.startswith("#") or re.fullmatch(sample, line)


def test_labels_are_escaped() -> None:
    metrics = Metrics()
    metrics.set("queue_share", 0.5, queue_name='a "q"\n')
    assert 'volcano_queue_share{queue_name="a \\"q\\"\\n"} 0.5' in metrics.exposition()


def test_a_failed_cycle_counts_as_an_error() -> None:
    import pytest

    from batchsched.cache import MemoryCache
    from batchsched.errors import BatchSchedError

    class Broken(MemoryCache):
        def snapshot(self):  # type: ignore[no-untyped-def]
            raise ConnectionError("api server unreachable")

    metrics = Metrics()
    scheduler = Scheduler(Broken(now=0.0), None, metrics=metrics)
    with pytest.raises(BatchSchedError):
        scheduler.run_once()
    assert metrics.value("schedule_attempts_total", result="error") == 1


def test_the_metrics_are_served_through_prometheus_client() -> None:
    prometheus_client = pytest.importorskip("prometheus_client")
    from batchsched.metrics import register_collector

    metrics = Metrics()
    metrics.observe("e2e_scheduling_latency_milliseconds", 7.0)
    metrics.inc("schedule_attempts_total", result="scheduled")
    metrics.set("queue_share", 0.5, queue_name="q1")
    registry = prometheus_client.CollectorRegistry()
    register_collector(metrics, registry)
    text = prometheus_client.generate_latest(registry).decode()
    assert 'volcano_e2e_scheduling_latency_milliseconds_bucket{le="10"} 1.0' in text
    assert 'volcano_schedule_attempts_total{result="scheduled"} 1.0' in text
    assert 'volcano_queue_share{queue_name="q1"} 0.5' in text
    assert registry.get_sample_value("volcano_e2e_scheduling_latency_milliseconds_count") == 1
