"""Helpers for testing with batchsched: build a scenario in Python, run it, assert.

Opt-in (nothing here is loaded by pytest automatically)::

    from batchsched.testing import ScenarioBuilder, assert_decisions, run

    scenario = (
        ScenarioBuilder(actions="enqueue, allocate")
        .queue("q1")
        .node("n1", cpu=4, memory="8Gi")
        .job("pg1", namespace="c1", queue="q1", min_member=2)
        .task("p1", job="pg1", namespace="c1", cpu=1, memory="1Gi")
        .task("p2", job="pg1", namespace="c1", cpu=1, memory="1Gi")
    )
    decisions = run(scenario)
    assert decisions.binds == {"c1/p1": "n1", "c1/p2": "n1"}
    assert_decisions(decisions, evicted=[])

The builders write scenario documents (the public scenario format), so a
scenario built here behaves exactly as the same scenario in a file; ``to_yaml``
gives that file. The builder names follow Volcano's test helpers (BuildNode,
BuildPod, BuildPodGroup, BuildQueue).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import yaml

from batchsched.conf import DEFAULT_CONFIGURATION_YAML
from batchsched.framework.registry import Registry
from batchsched.scenario import Decisions, compare_decisions, parse_scenario, run_scenario

__all__ = [
    "ScenarioBuilder",
    "assert_decisions",
    "build_job",
    "build_node",
    "build_queue",
    "build_task",
    "run",
]


def _resources(cpu: object = None, memory: object = None, pods: object = None,
               extra: Mapping[str, object] | None = None) -> dict[str, object]:
    out: dict[str, object] = {}
    if cpu is not None:
        out["cpu"] = cpu
    if memory is not None:
        out["memory"] = memory
    if pods is not None:
        out["pods"] = pods
    out.update(extra or {})
    return out


def build_node(name: str, *, cpu: object = None, memory: object = None, pods: object = 110,
               scalars: Mapping[str, object] | None = None, **fields: Any) -> dict[str, Any]:
    """A node entry (Volcano's ``BuildNode``); ``pods`` defaults to 110 like a kubelet."""
    return {"name": name, "allocatable": _resources(cpu, memory, pods, scalars), **fields}


def build_task(name: str, *, job: str, namespace: str = "default", cpu: object = None,
               memory: object = None, scalars: Mapping[str, object] | None = None,
               **fields: Any) -> dict[str, Any]:
    """A task (pod) entry (Volcano's ``BuildPod``); other fields in the format's camelCase."""
    entry: dict[str, Any] = {"name": name, "namespace": namespace, "job": job}
    requests = _resources(cpu, memory, None, scalars)
    if requests:
        entry["requests"] = requests
    entry.update(fields)
    return entry


def build_job(name: str, *, namespace: str = "default", queue: str = "default",
              min_member: int = 0, **fields: Any) -> dict[str, Any]:
    """A job (pod group) entry (Volcano's ``BuildPodGroup``)."""
    return {"name": name, "namespace": namespace, "queue": queue, "minMember": min_member,
            **fields}


def build_queue(name: str, *, weight: int = 1, **fields: Any) -> dict[str, Any]:
    """A queue entry (Volcano's ``BuildQueue``)."""
    return {"name": name, "weight": weight, **fields}


class ScenarioBuilder:
    """Accumulates a scenario document; every method returns the builder."""

    def __init__(self, *, actions: str | None = None, config: Mapping[str, Any] | None = None,
                 name: str = "built scenario", now: object = None) -> None:
        base = dict(config) if config is not None else yaml.safe_load(DEFAULT_CONFIGURATION_YAML)
        if actions is not None:
            base["actions"] = actions
        self.document: dict[str, Any] = {"version": 1, "name": name, "config": base,
                                         "queues": [], "nodes": [], "jobs": [], "tasks": []}
        if now is not None:
            self.document["now"] = now

    def _append(self, section: str, entry: dict[str, Any]) -> ScenarioBuilder:
        self.document.setdefault(section, []).append(entry)
        return self

    def queue(self, name: str, **kw: Any) -> ScenarioBuilder:
        return self._append("queues", build_queue(name, **kw))

    def node(self, name: str, **kw: Any) -> ScenarioBuilder:
        return self._append("nodes", build_node(name, **kw))

    def job(self, name: str, **kw: Any) -> ScenarioBuilder:
        return self._append("jobs", build_job(name, **kw))

    def task(self, name: str, **kw: Any) -> ScenarioBuilder:
        return self._append("tasks", build_task(name, **kw))

    def priority_class(self, name: str, value: int, **kw: Any) -> ScenarioBuilder:
        return self._append("priorityClasses", {"name": name, "value": value, **kw})

    def expect(self, **expect: Any) -> ScenarioBuilder:
        self.document["expect"] = expect
        return self

    def to_yaml(self) -> str:
        return yaml.safe_dump(self.document, sort_keys=False)


def run(scenario: ScenarioBuilder | Mapping[str, Any], *, scores: bool | None = None,
        registry: Registry | None = None) -> Decisions:
    """Run one session on a built scenario (or a scenario document) and return its decisions."""
    document = scenario.document if isinstance(scenario, ScenarioBuilder) else scenario
    return run_scenario(parse_scenario(document, source="<built scenario>"), scores=scores,
                        registry=registry)


def assert_decisions(decisions: Decisions, **expect: Any) -> None:
    """Assert decisions with the scenario format's ``expect`` keys, in snake_case or camelCase
    (``binds``, ``evicted``, ``bind_count``, ``pod_group_phases``, ...); one line per difference."""
    camel = {"bind_count": "bindCount", "evict_count": "evictCount",
             "pod_group_phases": "podGroupPhases", "task_status_counts": "taskStatusCounts"}
    wanted = {camel.get(k, k): v for k, v in expect.items()}
    diffs = compare_decisions(wanted, decisions.to_json())
    if diffs:
        raise AssertionError("decisions differ:\n  " + "\n  ".join(diffs))
