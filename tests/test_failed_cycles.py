"""A cycle that fails after some of its decisions went through: what went through
stands, and what it implies for the next cycle is handed over (the nominations of its
evictions, each plugin's own part), but no status is handed over half-way."""

from __future__ import annotations

from typing import Any

import pytest

from batchsched import ActionSpec, PluginSpec, Scheduler, hookimpl
from batchsched.errors import PluginError
from batchsched.framework.registry import Registry
from batchsched.framework.session import Session
from batchsched.scenario import parse_scenario


class Breaking:
    """A plugin that raises where the test says, while ``armed``."""

    armed = False

    def __init__(self, point: str) -> None:
        self.name, self.point = "breaking", point

    def on_session_open(self, ssn: Session) -> None:
        if self.point == "queue_resource":
            ssn.add_queue_resource_fn(self.name, self._raise)

    def on_session_close(self, ssn: Session) -> None:
        if self.point == "close":
            self._raise()

    def _raise(self, *args: Any) -> Any:
        if Breaking.armed:
            raise RuntimeError(f"breaking raised at {self.point}")
        return {}


class BreakingAction:
    name = "breaking-action"

    def initialize(self) -> None:
        pass

    def execute(self, ssn: Session) -> None:
        raise RuntimeError("breaking-action raised")

    def uninitialize(self) -> None:
        pass


def scheduler(document: dict[str, Any], point: str) -> tuple[Any, Scheduler]:
    registry = Registry()

    class Provider:
        @hookimpl
        def batchsched_register_plugins(self) -> list[PluginSpec]:
            return [PluginSpec("breaking", lambda args: Breaking(point))]

        @hookimpl
        def batchsched_register_actions(self) -> list[ActionSpec]:
            return [ActionSpec("breaking-action", BreakingAction)]
    registry.register(Provider(), name="breaking")
    scenario = parse_scenario(document, source="<test>")
    cache = scenario.build_cache()
    return cache, Scheduler(cache, scenario.configuration, registry=registry)


def fails_once(loop: Scheduler, message: str) -> None:
    """One cycle with the breaking plugin armed: it fails with ``message``."""
    Breaking.armed = True
    try:
        with pytest.raises(PluginError, match=message):
            loop.run_once()
    finally:
        Breaking.armed = False


def preempting(actions: str) -> dict[str, Any]:
    return {
        "version": 1,
        "priorityClasses": [{"name": "low", "value": 1}, {"name": "high", "value": 100}],
        "config": {"actions": actions, "tiers": [
            {"plugins": [{"name": "priority"}, {"name": "gang"}, {"name": "conformance"},
                         {"name": "breaking"}]},
            {"plugins": [{"name": "drf"}, {"name": "predicates"}, {"name": "proportion"},
                         {"name": "nodeorder"}]}]},
        "nodes": [{"name": f"n{i}", "allocatable": {"cpu": 2, "memory": "4Gi", "pods": 10}}
                  for i in (1, 2)],
        "jobs": [{"name": "low", "minMember": 1, "phase": "Running", "priorityClassName": "low"},
                 {"name": "hi", "minMember": 2, "phase": "Inqueue", "priorityClassName": "high"}],
        "tasks": [
            *[{"name": f"low-{i}", "job": "low", "node": f"n{1 + i // 2}", "phase": "Running",
               "priorityClassName": "low", "requests": {"cpu": 1, "memory": "1Gi"}}
              for i in range(4)],
            *[{"name": f"hi-{i}", "job": "hi", "priorityClassName": "high",
               "requests": {"cpu": 1, "memory": "1Gi"}} for i in range(2)]],
    }


def test_a_close_that_fails_still_nominates_the_preemptors_of_its_evictions() -> None:
    """Without the nominations, the next cycle would evict for the same preemptors
    again."""
    cache, loop = scheduler(preempting("enqueue, allocate, preempt"), "close")
    fails_once(loop, "plugin 'breaking' raised in on_session_close")
    evicted = [e.task for e in cache.evictions]
    assert len(evicted) == 2
    assert cache.nominations == {"default/hi-0": "n1", "default/hi-1": "n1"}
    loop.run_once()
    assert [e.task for e in cache.evictions] == evicted


def test_a_status_that_fails_to_be_worked_out_hands_over_no_status() -> None:
    document = preempting("enqueue, allocate")
    document["jobs"][1]["phase"] = "Pending"
    cache, loop = scheduler(document, "queue_resource")
    before = {uid: (job.podgroup.phase, list(job.podgroup.conditions))
              for uid, job in cache.jobs.items()}
    queues = {name: queue.status for name, queue in cache.queues.items()}
    fails_once(loop, "plugin 'breaking' raised in queue_resource")
    assert {uid: (job.podgroup.phase, list(job.podgroup.conditions))
            for uid, job in cache.jobs.items()} == before
    assert {name: queue.status for name, queue in cache.queues.items()} == queues



def test_an_action_that_fails_after_evictions_still_nominates_their_preemptors() -> None:
    cache, loop = scheduler(preempting("enqueue, allocate, preempt, breaking-action"), "none")
    with pytest.raises(PluginError, match="action 'breaking-action' raised"):
        loop.run_once()
    assert len(cache.evictions) == 2
    assert cache.nominations == {"default/hi-0": "n1", "default/hi-1": "n1"}
    # No pod-group status is handed over: hi is still Inqueue with no condition.
    assert not cache.jobs["default/hi"].podgroup.conditions


def test_the_binds_of_a_failed_cycle_count_as_scheduled_pods() -> None:
    """metrics.md: ``pod_schedule_successes_total`` counts the binds the cache took; a
    cycle that fails after allocate committed keeps its binds, so they count."""
    from batchsched.metrics import Metrics

    document = preempting("allocate, breaking-action")
    document["tasks"] = [task for task in document["tasks"] if task["job"] == "hi"]
    cache, built = scheduler(document, "none")
    metrics = Metrics()
    loop = Scheduler(cache, built.configuration, registry=built.registry, metrics=metrics)
    with pytest.raises(PluginError, match="breaking-action raised"):
        loop.run_once()
    assert len(cache.binds) == 2
    assert metrics.value("pod_schedule_successes_total") == 2
    assert metrics.value("schedule_attempts_total", result="error") == 1


def test_the_binds_of_a_cycle_failing_at_close_count_as_scheduled_pods() -> None:
    from batchsched.metrics import Metrics

    document = preempting("allocate")
    document["tasks"] = [task for task in document["tasks"] if task["job"] == "hi"]
    cache, built = scheduler(document, "close")
    metrics = Metrics()
    loop = Scheduler(cache, built.configuration, registry=built.registry, metrics=metrics)
    Breaking.armed = True
    try:
        with pytest.raises(PluginError, match="breaking raised at close"):
            loop.run_once()
    finally:
        Breaking.armed = False
    assert len(cache.binds) == 2
    assert metrics.value("pod_schedule_successes_total") == 2
