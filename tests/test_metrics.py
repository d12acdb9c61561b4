"""Scheduling metrics: Volcano's names, read in process or as Prometheus text."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from batchsched.metrics import BUCKETS, Metrics, exponential_buckets_range
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
        count, total = metrics.histogram("action_scheduling_latency_milliseconds", action=action)
        assert count == 1 and total > 0
    for plugin in ("priority", "gang", "drf", "predicates", "proportion", "nodeorder"):
        for point in ("OnSessionOpen", "OnSessionClose"):
            count, _ = metrics.histogram("plugin_scheduling_latency_milliseconds",
                                         plugin=plugin, OnSession=point)
            assert count == 1, (plugin, point)
    assert metrics.value("schedule_attempts_total", result="scheduled") == 1
    assert metrics.value("pod_preemption_victims") == 1
    assert metrics.value("queue_share", queue_name="default") > 0


def test_the_text_exposition_is_prometheus_format() -> None:
    text = run_one_cycle().exposition()
    assert "# TYPE volcano_e2e_scheduling_latency_milliseconds histogram" in text
    assert 'volcano_action_scheduling_latency_milliseconds_count{action="preempt"} 1' in text
    assert 'volcano_schedule_attempts_total{result="scheduled"} 1' in text
    bucket = r'volcano_e2e_scheduling_latency_milliseconds_bucket\{le="([^"]+)"\} (\d+)'
    buckets = re.findall(bucket, text)
    assert [float(b) for b, _ in buckets] == [
        *BUCKETS["e2e_scheduling_latency_milliseconds"], float("inf")]
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
    name = "volcano_e2e_scheduling_latency_milliseconds_bucket"
    bounds = BUCKETS["e2e_scheduling_latency_milliseconds"]
    below = max(b for b in bounds if b < 7.0)
    above = min(b for b in bounds if b >= 7.0)
    assert registry.get_sample_value(name, {"le": repr(below)}) == 0
    assert registry.get_sample_value(name, {"le": repr(above)}) == 1
    assert 'volcano_schedule_attempts_total{result="scheduled"} 1.0' in text
    assert 'volcano_queue_share{queue_name="q1"} 0.5' in text
    assert registry.get_sample_value("volcano_e2e_scheduling_latency_milliseconds_count") == 1


def test_histograms_have_volcano_s_names_units_and_buckets() -> None:
    """pkg/scheduler/metrics/metrics.go: milliseconds everywhere, each histogram with its
    own ExponentialBucketsRange."""
    assert exponential_buckets_range(1, 5000, 20)[0] == 1.0
    assert exponential_buckets_range(1, 5000, 20)[-1] == pytest.approx(5000)
    assert len(BUCKETS["action_scheduling_latency_milliseconds"]) == 20
    assert BUCKETS["action_scheduling_latency_milliseconds"][-1] == pytest.approx(2000)
    plugin = BUCKETS["plugin_scheduling_latency_milliseconds"]
    assert len(plugin) == 15 and plugin[0] == 0.1 and plugin[-1] == pytest.approx(100)
    metrics = run_one_cycle()
    assert metrics.histogram("open_session_duration_milliseconds")[0] == 1
    text = metrics.exposition()
    assert "microseconds" not in text
    assert "# TYPE volcano_open_session_duration_milliseconds histogram" in text


def test_the_victims_gauge_is_preempt_s_candidates_and_outlives_a_quiet_cycle() -> None:
    """Volcano sets pod_preemption_victims in preempt, to the victims the plugins allow
    on a node tried, and nothing else resets it."""
    scenario = load_scenario(PREEMPTION_FILE)
    metrics = Metrics()
    scheduler = Scheduler(scenario.build_cache(), scenario.configuration, metrics=metrics)
    scheduler.run_once()
    assert metrics.value("pod_preemption_victims") == 1
    scheduler.run_once()  # the victim is being deleted: nothing to preempt any more
    assert metrics.value("pod_preemption_victims") == 1


def test_a_capacity_queue_without_deserved_has_a_share_of_one() -> None:
    """capacity's updateQueueAttrShare: a queue without deserved has share 1."""
    from batchsched.scenario import parse_scenario

    scenario = parse_scenario({
        "version": 1, "name": "capacity share",
        "config": {"actions": "enqueue, allocate",
                   "tiers": [{"plugins": [{"name": "gang"}, {"name": "capacity"}]}]},
        "queues": [{"name": "q1", "capability": {"cpu": 4}}],
        "nodes": [{"name": "n1", "allocatable": {"cpu": 4, "memory": "4Gi", "pods": 10}}],
        "jobs": [{"name": "pg", "queue": "q1", "minMember": 1}],
        "tasks": [{"name": "p", "job": "pg", "requests": {"cpu": 1}}],
    })
    metrics = Metrics()
    Scheduler(scenario.build_cache(), scenario.configuration, metrics=metrics).run_once()
    assert metrics.value("queue_share", queue_name="q1") == 1.0



def test_a_scrape_while_the_loop_observes_is_consistent() -> None:
    """exposition() read the histograms after letting go of the lock: an observation
    half done meanwhile (another thread's, between its updates of the count and the
    buckets) showed a +Inf bucket other than the bucket counts. Here the lock lets
    such a half observation in as soon as it is released."""
    import re
    import threading

    from batchsched.metrics import Metrics

    metrics = Metrics()
    metrics.observe("e2e_scheduling_latency_milliseconds", 3.0)
    real = metrics._lock

    class LetsAHalfObservationIn:
        def __enter__(self) -> None:
            real.acquire()

        def __exit__(self, *exc: object) -> None:
            real.release()
            for histogram in metrics._histograms.values():
                histogram.count += 1  # the count moved on, the buckets not yet

    metrics._lock = LetsAHalfObservationIn()  # type: ignore[assignment]
    text = metrics.exposition()
    inf = re.search(r'_bucket\{le="\+Inf"\} (\d+)', text)
    finite = re.findall(r'_bucket\{le="[0-9.e+]+"\} (\d+)', text)
    count = re.search(r"_count (\d+)", text)
    assert inf is not None and count is not None and finite
    # One observation of 3 ms: within the largest finite bucket, +Inf and the count.
    assert (finite[-1], inf.group(1), count.group(1)) == ("1", "1", "1")
    assert isinstance(real, type(threading.Lock()))
