"""Preempt and reclaim skip the nodes where no eviction can make room, and decide
exactly as the reference path that visits every node."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from action_support import Outcome, run_document, run_parsed
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from victim_support import random_cluster

from batchsched.actions.victims import worth_visiting
from batchsched.api.types import TaskStatus
from batchsched.columnar.eviction_room import EvictionRoom
from batchsched.columnar.selector import FAST_PATH_ENVIRONMENT_VARIABLE
from batchsched.framework.statement import Statement

PREEMPT = {
    "actions": "preempt",
    "tiers": [{"plugins": [{"name": "priority"}, {"name": "gang"}, {"name": "conformance"}]},
              {"plugins": [{"name": "drf"}, {"name": "predicates"}, {"name": "proportion"},
                           {"name": "nodeorder"}, {"name": "binpack"}]}],
}
RECLAIM = {
    "actions": "reclaim",
    "tiers": [{"plugins": [{"name": "priority"}, {"name": "gang"}, {"name": "conformance"}]},
              {"plugins": [{"name": "drf"}, {"name": "predicates"}, {"name": "proportion"}]}],
}


def _decisions(outcome: Outcome) -> tuple[Any, ...]:
    statuses = sorted((uid, str(task.status), task.node_name)
                      for job in outcome.ssn.jobs.values() for uid, task in job.tasks.items())
    return ([(e.task, e.reason) for e in outcome.cache.evictions],
            [(b.task, b.node) for b in outcome.cache.binds], statuses)


def _both(document: dict[str, Any], config: dict[str, Any]) -> tuple[Any, Any]:
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv(FAST_PATH_ENVIRONMENT_VARIABLE, "0")
        reference = _decisions(run_parsed({**document, "config": config}))
    return reference, _decisions(run_parsed({**document, "config": config}))


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(document=random_cluster(max_queues=3), action=st.sampled_from([PREEMPT, RECLAIM]))
def test_skipping_hopeless_nodes_decides_as_the_reference(
    document: dict[str, Any], action: dict[str, Any]
) -> None:
    reference, fast = _both(document, action)
    assert fast == reference


@st.composite
def busy_cluster(draw: st.DrawFn) -> dict[str, Any]:
    """4-12 nodes filled by running gangs of low and mid priority (some at their
    minimum), and waiting gangs of mid and high priority: the shape where earlier
    preemptions leave nodes that later preemptors must not waste visits on."""
    nodes = [{"name": f"n{i}", "allocatable": {"cpu": draw(st.integers(2, 6)), "pods": 20}}
             for i in range(draw(st.integers(4, 12)))]
    queues = [{"name": "q0", "weight": 1}, {"name": "q1", "weight": draw(st.integers(1, 3))}]
    jobs: list[dict[str, Any]] = []
    tasks: list[dict[str, Any]] = []
    free = {n["name"]: n["allocatable"]["cpu"] for n in nodes}
    for j in range(draw(st.integers(2, 8))):
        size = draw(st.integers(1, 5))
        jobs.append({"name": f"r{j}", "namespace": "c1",
                     "queue": draw(st.sampled_from(["q0", "q1"])), "phase": "Running",
                     "priorityClassName": draw(st.sampled_from(["low", "mid"])),
                     "minMember": draw(st.integers(0, size))})
        for t in range(size):
            cpu = draw(st.integers(1, 2))
            spot = [n for n in sorted(free) if free[n] >= cpu]
            if not spot:
                break
            node = draw(st.sampled_from(spot))
            free[node] -= cpu
            task: dict[str, Any] = {"name": f"r{j}t{t}", "namespace": "c1", "job": f"r{j}",
                                    "node": node, "phase": "Running", "requests": {"cpu": cpu},
                                    "priority": draw(st.integers(1, 3))}
            if draw(st.integers(0, 5)) == 0:
                task["annotations"] = {"volcano.sh/preemptable": "false"}
            tasks.append(task)
    for j in range(draw(st.integers(1, 4))):
        size = draw(st.integers(1, 4))
        jobs.append({"name": f"w{j}", "namespace": "c1",
                     "queue": draw(st.sampled_from(["q0", "q1"])), "phase": "Inqueue",
                     "priorityClassName": draw(st.sampled_from(["mid", "high"])),
                     "minMember": draw(st.integers(1, size))})
        tasks.extend({"name": f"w{j}t{t}", "namespace": "c1", "job": f"w{j}",
                      "requests": {"cpu": draw(st.integers(1, 3))},
                      "priority": draw(st.integers(1, 3))} for t in range(size))
    return {"version": 1, "name": "busy cluster",
            "priorityClasses": [{"name": "low", "value": 1}, {"name": "mid", "value": 10},
                                {"name": "high", "value": 100}],
            "queues": queues, "nodes": nodes, "jobs": jobs, "tasks": tasks}


def _preempt_with(*tiers: list[str]) -> dict[str, Any]:
    return {"actions": "preempt",
            "tiers": [{"plugins": [{"name": name} for name in tier]} for tier in tiers]}


#: Tier layouts where the victim bounds combine differently: a bounded plugin alone
#: in a tier, bounded and unbounded plugins together, a tier with no bound at all.
LAYOUTS = [
    PREEMPT, RECLAIM,
    _preempt_with(["priority"], ["drf"]),
    _preempt_with(["gang", "drf"]),
    _preempt_with(["drf", "conformance"], ["priority", "gang"]),
    _preempt_with(["conformance"]),
    _preempt_with(["drf"], ["gang"], ["priority"]),
]


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(document=busy_cluster(), action=st.sampled_from(LAYOUTS))
def test_busy_clusters_decide_as_the_reference(
    document: dict[str, Any], action: dict[str, Any]
) -> None:
    reference, fast = _both(document, action)
    assert fast == reference


FULL_NODES = """
priorityClasses: [{name: low, value: 1}, {name: high, value: 100}]
queues: [{name: q}]
config:
  actions: preempt
  tiers:
  - plugins: [{name: priority}, {name: gang}, {name: conformance}]
  - plugins: [{name: predicates}]
nodes:
- {name: guarded, allocatable: {cpu: 4, pods: 10}}
- {name: open, allocatable: {cpu: 4, pods: 10}}
jobs:
- {name: low-a, queue: q, phase: Running, priorityClassName: low, minMember: 0}
- {name: low-b, queue: q, phase: Running, priorityClassName: low, minMember: 0}
- {name: high, queue: q, phase: Inqueue, priorityClassName: high, minMember: 1}
tasks:
- {name: a0, job: low-a, node: guarded, phase: Running, requests: {cpu: 4},
   annotations: {volcano.sh/preemptable: "false"}}
- {name: b0, job: low-b, node: open, phase: Running, requests: {cpu: 4}}
- {name: h0, job: high, requests: {cpu: 3}}
"""


def _only_task(ssn: Any, job_name: str) -> Any:
    job = next(job for job in ssn.jobs.values() if job.name == job_name)
    (task,) = job.tasks.values()
    return task


def test_a_node_of_unpreemptable_tasks_is_hopeless_and_the_bound_follows_the_node(
) -> None:
    seen: list[list[bool]] = []

    def check(ssn: Any) -> None:
        room = EvictionRoom(ssn)
        preemptor, victim = _only_task(ssn, "high"), _only_task(ssn, "low-b")
        nodes = ssn.node_list

        def hopeless() -> list[bool]:
            answer = room.hopeless(preemptor, nodes)
            assert answer is not None
            return [bool(flag) for flag in answer]

        seen.append(hopeless())
        assert [n.name for n in worth_visiting(ssn, room, preemptor, nodes)] == ["open"]
        stmt = Statement(ssn)
        stmt.evict(victim, "test")
        seen.append(hopeless())  # Releasing: its request is in the future idle now
        stmt.pipeline(preemptor, ssn.nodes["open"], eviction_occurred=True)
        seen.append(hopeless())  # the pipelined preemptor took that room
        stmt.discard()
        seen.append(hopeless())

    outcome = run_document(FULL_NODES, before_actions=check)
    assert seen == [[True, False], [True, False], [True, True], [True, False]]
    assert [e.task for e in outcome.cache.evictions] == [_only_task(outcome.ssn, "low-b").uid]
    assert _only_task(outcome.ssn, "high").status is TaskStatus.PIPELINED


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(document=busy_cluster())
def test_a_few_nodes_are_judged_as_among_all(document: dict[str, Any]) -> None:
    """Asked about a few nodes, the room reads only their tasks' rows: the same
    verdicts as when asked about every node."""
    def check(ssn: Any) -> None:
        room = EvictionRoom(ssn)
        everywhere = np.arange(len(ssn.node_list), dtype=np.intp)
        for job in ssn.jobs.values():
            for task in job.tasks.values():
                if task.status is not TaskStatus.PENDING:
                    continue
                whole = room.hopeless_at(task, everywhere).tolist()
                alone = [bool(room.hopeless_at(task, everywhere[i:i + 1])[0])
                         for i in range(len(everywhere))]
                assert alone == whole

    run_parsed({**document, "config": PREEMPT}, before_actions=check)
