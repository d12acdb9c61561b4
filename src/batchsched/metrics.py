"""Scheduling metrics, in process, named as Volcano's.

A :class:`Metrics` given to :class:`~batchsched.scheduler.Scheduler` (or to
:meth:`Session.open <batchsched.framework.session.Session.open>`) records, with
Volcano's metric names (prefix ``volcano_``), units and buckets where Volcano has one:

==========================================================  =========  ==========================
name                                                        kind       labels
==========================================================  =========  ==========================
``volcano_e2e_scheduling_latency_milliseconds``             histogram  (one cycle: open to close)
``volcano_open_session_duration_milliseconds``              histogram  (snapshot and plugin opens)
``volcano_action_scheduling_latency_milliseconds``          histogram  ``action``
``volcano_plugin_scheduling_latency_milliseconds``          histogram  ``plugin``, ``OnSession``
``volcano_schedule_attempts_total`` (batchsched's use)      counter    ``result`` (scheduled, error)
``volcano_pod_schedule_successes_total`` (batchsched)       counter
``volcano_pod_preemption_victims``                          gauge      (preempt's candidate victims)
``volcano_queue_share``                                     gauge      ``queue_name``
==========================================================  =========  ==========================

Read them in Python (:meth:`Metrics.value`, :meth:`Metrics.histogram`), as
Prometheus' text exposition format (:meth:`Metrics.exposition`), which any
scraper reads with no client library, or, with the ``[metrics]`` extra
(``prometheus_client``), through a collector registered in a
``prometheus_client`` registry (:func:`register_collector`), so that they are
served with the host's own metrics. Each histogram has Volcano's buckets
(``prometheus.ExponentialBucketsRange``, :data:`BUCKETS`). Recording costs a
clock read per action and per plugin open and close.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Iterable, Mapping

__all__ = ["BUCKETS", "LATENCY_BUCKETS", "Metrics", "exponential_buckets_range",
           "register_collector"]


def exponential_buckets_range(low: float, high: float, count: int) -> tuple[float, ...]:
    """Prometheus' ``ExponentialBucketsRange``: ``count`` bounds from ``low`` to
    ``high``, each the previous one times the same factor."""
    factor = math.pow(high / low, 1.0 / (count - 1))
    return tuple(low * math.pow(factor, i) for i in range(count))


#: Volcano's buckets of each histogram (pkg/scheduler/metrics/metrics.go).
BUCKETS: dict[str, tuple[float, ...]] = {
    "e2e_scheduling_latency_milliseconds": exponential_buckets_range(1, 5000, 20),
    "open_session_duration_milliseconds": exponential_buckets_range(1, 5000, 20),
    "action_scheduling_latency_milliseconds": exponential_buckets_range(1, 2000, 20),
    "plugin_scheduling_latency_milliseconds": exponential_buckets_range(0.1, 100, 15),
}
#: The buckets of a histogram Volcano does not have (kube's ExponentialBuckets(5, 2, 10)).
LATENCY_BUCKETS: tuple[float, ...] = tuple(5.0 * 2**i for i in range(10))

Labels = tuple[tuple[str, str], ...]

_HELP = {
    "e2e_scheduling_latency_milliseconds":
        ("histogram", "Duration of a single scheduling session execution in milliseconds. "
                      "It covers the entire cycle from session open, action executions to "
                      "session close."),
    "open_session_duration_milliseconds":
        ("histogram", "Duration of opening a scheduling session in milliseconds, including "
                      "cache snapshot and session initialization."),
    "action_scheduling_latency_milliseconds":
        ("histogram", "Action scheduling latency in milliseconds"),
    "plugin_scheduling_latency_milliseconds":
        ("histogram", "Plugin scheduling latency in milliseconds"),
    "schedule_attempts_total":
        ("counter", "Number of scheduling cycles, by how they ended (batchsched's use of "
                    "a name Volcano defines for pods and never records)"),
    "pod_schedule_successes_total":
        ("counter", "Number of binds the cache accepted and that stood"),
    "pod_preemption_victims":
        ("gauge", "Number of selected preemption victims"),
    "queue_share":
        ("gauge", "Share for one queue (allocated over deserved, the largest dimension)"),
}


class _Histogram:
    __slots__ = ("bounds", "count", "counts", "total")

    def __init__(self, bounds: tuple[float, ...]) -> None:
        self.bounds = bounds
        self.counts = [0] * len(bounds)
        self.count = 0
        self.total = 0.0

    def observe(self, value: float) -> None:
        self.count += 1
        self.total += value
        for i, bound in enumerate(self.bounds):
            if value <= bound:
                self.counts[i] += 1


class Metrics:
    """The scheduler's metrics (see the module docstring). Thread-safe."""

    def __init__(self, namespace: str = "volcano") -> None:
        self.namespace = namespace
        self._lock = threading.Lock()
        self._histograms: dict[tuple[str, Labels], _Histogram] = {}
        self._values: dict[tuple[str, Labels], float] = {}

    # -- recording -------------------------------------------------------------------------

    def observe(self, name: str, value: float, **labels: str) -> None:
        """One observation of a histogram."""
        key = (name, _labels(labels))
        with self._lock:
            histogram = self._histograms.get(key)
            if histogram is None:
                histogram = self._histograms[key] = _Histogram(
                    BUCKETS.get(name, LATENCY_BUCKETS))
            histogram.observe(value)

    def inc(self, name: str, amount: float = 1.0, **labels: str) -> None:
        """Add to a counter."""
        key = (name, _labels(labels))
        with self._lock:
            self._values[key] = self._values.get(key, 0.0) + amount

    def set(self, name: str, value: float, **labels: str) -> None:
        """Set a gauge."""
        with self._lock:
            self._values[(name, _labels(labels))] = value

    # -- reading ---------------------------------------------------------------------------

    def value(self, name: str, **labels: str) -> float:
        """A counter's or gauge's value (0 when never recorded)."""
        with self._lock:
            return self._values.get((name, _labels(labels)), 0.0)

    def histogram(self, name: str, **labels: str) -> tuple[int, float]:
        """A histogram's (count, sum)."""
        with self._lock:
            histogram = self._histograms.get((name, _labels(labels)))
            return (0, 0.0) if histogram is None else (histogram.count, histogram.total)

    def samples(self) -> tuple[list[tuple[str, Labels, list[tuple[float, int]], int, float]],
                               list[tuple[str, Labels, float]]]:
        """A consistent copy: histograms as (name, labels, (bound, cumulative count)
        per bucket, count, sum), then counters and gauges as (name, labels, value)."""
        with self._lock:
            histograms = [(name, labels, list(zip(h.bounds, h.counts, strict=True)),
                           h.count, h.total)
                          for (name, labels), h in sorted(self._histograms.items())]
            values = [(name, labels, value) for (name, labels), value
                      in sorted(self._values.items())]
        return histograms, values

    def exposition(self) -> str:
        """Every metric in Prometheus' text exposition format (version 0.0.4)."""
        histograms, values = self.samples()  # one consistent copy, under the lock
        lines: list[str] = []
        described: set[str] = set()

        def describe(name: str) -> str:
            full = f"{self.namespace}_{name}"
            if name not in described:
                described.add(name)
                kind, text = _HELP.get(name, ("untyped", name))
                lines.append(f"# HELP {full} {text}")
                lines.append(f"# TYPE {full} {kind}")
            return full

        for name, labels, buckets, count, total in histograms:
            full = describe(name)
            for bound, in_bucket in buckets:
                lines.append(f"{full}_bucket{_format(labels, le=_number(bound))} {in_bucket}")
            lines.append(f"{full}_bucket{_format(labels, le='+Inf')} {count}")
            lines.append(f"{full}_sum{_format(labels)} {_number(total)}")
            lines.append(f"{full}_count{_format(labels)} {count}")
        for name, labels, value in values:
            full = describe(name)
            lines.append(f"{full}{_format(labels)} {_number(value)}")
        return "\n".join(lines) + "\n"


def _labels(labels: Mapping[str, str]) -> Labels:
    return tuple(sorted((k, str(v)) for k, v in labels.items()))


def _escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


def _format(labels: Iterable[tuple[str, str]], **extra: str) -> str:
    pairs = [*labels, *extra.items()]
    if not pairs:
        return ""
    return "{" + ",".join(f'{k}="{_escape(v)}"' for k, v in pairs) + "}"


def _number(value: float) -> str:
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    if value == int(value):
        return str(int(value))
    return repr(value)


def register_collector(metrics: Metrics, registry: object | None = None) -> object:
    """Serve ``metrics`` through ``prometheus_client`` (the ``[metrics]`` extra): a
    collector registered in ``registry`` (default: the client's global one) that
    reads the metrics at each scrape. Returns the collector (to unregister it).

    Raises ImportError naming the extra when ``prometheus_client`` is missing.
    """
    try:
        from prometheus_client import REGISTRY
        from prometheus_client.core import (
            CounterMetricFamily,
            GaugeMetricFamily,
            HistogramMetricFamily,
        )
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ImportError("register_collector needs prometheus_client: "
                          "pip install 'batchsched[metrics]'") from exc

    namespace = metrics.namespace

    class _Collector:
        def collect(self) -> Iterable[object]:
            histograms, values = metrics.samples()
            families: dict[str, object] = {}
            for name, labels, counts, count, total in histograms:
                family = families.get(name)
                if family is None:
                    family = families[name] = HistogramMetricFamily(
                        f"{namespace}_{name}", _HELP.get(name, ("", name))[1],
                        labels=[key for key, _ in labels])
                buckets = [(_number(bound), cumulative) for bound, cumulative in counts]
                family.add_metric([value for _, value in labels],  # type: ignore[attr-defined]
                                  [*buckets, ("+Inf", count)], total)
            for name, labels, value in values:
                kind = _HELP.get(name, ("gauge", name))[0]
                family = families.get(name)
                if family is None:
                    # The client adds _total to a counter's samples itself.
                    full = f"{namespace}_{name}".removesuffix("_total")
                    maker = CounterMetricFamily if kind == "counter" else GaugeMetricFamily
                    family = families[name] = maker(full, _HELP.get(name, ("", name))[1],
                                                    labels=[key for key, _ in labels])
                family.add_metric([v for _, v in labels], value)  # type: ignore[attr-defined]
            return list(families.values())

    collector = _Collector()
    (registry if registry is not None else REGISTRY).register(collector)  # type: ignore[attr-defined]
    return collector
