"""cdp: a Running task inside its cooldown is no victim (cdp_test.go, transcribed, plus
the strict boundary, the reclaimable point, the statuses and a preemption that goes
around the protected task)."""

from __future__ import annotations

from typing import Any

import pytest

from batchsched.api import Resource, TaskInfo, TaskStatus
from batchsched.framework import Session
from batchsched.plugins.cdp import COOLDOWN_TIME, cooldown_of
from batchsched.scenario import parse_scenario, run_scenario

NOW = 10_000.0


def task(name: str, cooldown: str | None, started_ago: float | None, *,
         status: TaskStatus = TaskStatus.RUNNING, as_label: bool = False) -> TaskInfo:
    tags = {} if cooldown is None else {COOLDOWN_TIME: cooldown}
    made = TaskInfo.create("default", name, "default/pg", Resource(1000), status=status,
                           node_name="n1", labels=tags if as_label else {},
                           annotations={} if as_label else tags)
    made.start_time = None if started_ago is None else NOW - started_ago
    return made


def session(flags: str = "") -> Session:
    doc: dict[str, Any] = {
        "version": 1, "now": NOW, "queues": [{"name": "default"}],
        "config": {"actions": "", "tiers": [{"plugins": [
            {"name": "cdp", **({"enablePreemptable": True} if not flags else {})}]}]},
    }
    parsed = parse_scenario(doc, source="<test>")
    return Session.open(parsed.build_cache(), parsed.configuration)


@pytest.mark.parametrize(("value", "enabled", "seconds"), [
    ("600s", True, 600.0),        # "normal"
    ("600abcde", False, None),    # "not-enabled"
])
def test_pod_cooldown_time(value: str, enabled: bool, seconds: float | None) -> None:
    """Test_CooldownTimePlugin_podPreemptStableTime."""
    found = cooldown_of(task("p", value, 100))
    assert (found is not None) is enabled
    assert found == seconds


def test_preemptable_keeps_the_cooling_down_task() -> None:
    """TestPreemptableFn: task1 (600s, started 100s ago) is protected; task2 (an
    unreadable cooldown) and task3 (started 800s ago) are victims, in order."""
    ssn = session()
    task1, task2, task3 = task("t1", "600s", 100), task("t2", "600abcde", 100), task(
        "t3", "600s", 800)
    preemptor = TaskInfo.create("default", "hi", "default/hi", Resource(1000))
    assert ssn.preemptable(preemptor, [task1, task2, task3]) == [task2, task3]
    assert ssn.reclaimable(preemptor, [task1, task2, task3]) == [task2, task3]


def test_the_label_wins_over_the_annotation_and_the_boundary_is_strict() -> None:
    ssn = session()
    labelled = task("l", "600s", 100, as_label=True)
    labelled.annotations = {COOLDOWN_TIME: "1s"}  # the label is read first
    at_boundary = task("b", "600s", 600)  # start + cooldown == now: no longer protected
    preemptor = TaskInfo.create("default", "hi", "default/hi", Resource(1000))
    assert ssn.preemptable(preemptor, [labelled, at_boundary]) == [at_boundary]


@pytest.mark.parametrize("status", [TaskStatus.BOUND, TaskStatus.BINDING, TaskStatus.RELEASING])
def test_only_running_tasks_are_protected(status: TaskStatus) -> None:
    ssn = session()
    candidate = task("t", "600s", 100, status=status)
    preemptor = TaskInfo.create("default", "hi", "default/hi", Resource(1000))
    assert ssn.preemptable(preemptor, [candidate]) == [candidate]


def test_a_running_task_without_a_start_is_a_victim() -> None:
    ssn = session()
    candidate = task("t", "600s", None)
    preemptor = TaskInfo.create("default", "hi", "default/hi", Resource(1000))
    assert ssn.preemptable(preemptor, [candidate]) == [candidate]


PREEMPTION = """
version: 1
now: 10000
config:
  actions: "allocate, preempt"
  tiers:
  - plugins: [{name: priority}, {name: cdp}]
  - plugins: [{name: predicates}, {name: proportion}]
priorityClasses: [{name: low, value: 1}, {name: high, value: 100}]
queues: [{name: q}]
nodes:
- {name: n1, allocatable: {cpu: 1, memory: 1Gi, pods: 10}}
- {name: n2, allocatable: {cpu: 1, memory: 1Gi, pods: 10}}
jobs:
- {name: low1, queue: q, minMember: 1, priorityClassName: low, phase: Running}
- {name: low2, queue: q, minMember: 1, priorityClassName: low, phase: Running}
- {name: high, queue: q, minMember: 1, priorityClassName: high, phase: Inqueue}
tasks:
- {name: fresh, job: low1, node: n1, phase: Running, requests: {cpu: 1, memory: 1Gi},
   priorityClassName: low, annotations: {volcano.sh/cooldown-time: 10m}, startTime: -1m}
- {name: settled, job: low2, node: n2, phase: Running, requests: {cpu: 1, memory: 1Gi},
   priorityClassName: low, annotations: {volcano.sh/cooldown-time: 10m}, startTime: -1h}
- {name: hi, job: high, requests: {cpu: 1, memory: 1Gi}, priorityClassName: high}
"""


def test_preemption_goes_around_the_task_in_its_cooldown() -> None:
    without = run_scenario(parse_scenario_text(PREEMPTION.replace(", {name: cdp}", "")))
    assert without.evicted == ["default/fresh"]  # the first node in order
    decisions = run_scenario(parse_scenario_text(PREEMPTION))
    assert decisions.evicted == ["default/settled"]


def parse_scenario_text(text: str) -> Any:
    import yaml

    return parse_scenario(yaml.safe_load(text), source="<test>")


def test_start_time_needs_a_node() -> None:
    from batchsched.errors import ScenarioError

    bad = PREEMPTION.replace("priorityClassName: high}", "priorityClassName: high, "
                             "startTime: -1m}")
    with pytest.raises(ScenarioError, match=r"tasks\[2\].*startTime: only a task on a node"):
        parse_scenario_text(bad)
