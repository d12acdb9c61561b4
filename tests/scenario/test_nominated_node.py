"""Nominated nodes (seed 004): the room a preemption freed on a node is kept for the
preemptor, and for tasks of equal or higher priority, until it is placed."""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from batchsched.api.cluster import PriorityClass
from batchsched.api.job import JobInfo, PodGroup
from batchsched.api.node import NodeInfo
from batchsched.api.resource import Resource
from batchsched.api.task import TaskInfo
from batchsched.api.types import TaskStatus
from batchsched.cache.memory import MemoryCache
from batchsched.errors import ScenarioError
from batchsched.scenario import parse_scenario, run_scenario
from batchsched.scheduler import Scheduler


def two_queues(nominated: str | None, other_priority: int = 10) -> dict[str, Any]:
    """One free node n1; the high-priority preemptor `p` (queue `q2`) and another
    pending task `other` (queue `q1`, which allocate visits first)."""
    preemptor: dict[str, Any] = {"name": "p", "job": "pj", "priority": 100,
                                 "requests": {"cpu": 2}}
    if nominated:
        preemptor["nominatedNodeName"] = nominated
    return {
        "version": 1, "name": "nominated node",
        "config": {"actions": "allocate", "tiers": [
            {"plugins": [{"name": "priority"}, {"name": "gang"}]},
            {"plugins": [{"name": "nodeorder"}]}]},
        "queues": [{"name": "q1", "weight": 10}, {"name": "q2", "weight": 1}],
        "nodes": [{"name": "n1", "allocatable": {"cpu": 2, "memory": "4Gi", "pods": 10}}],
        "jobs": [{"name": "oj", "queue": "q1", "minMember": 1, "phase": "Inqueue"},
                 {"name": "pj", "queue": "q2", "minMember": 1, "phase": "Inqueue"}],
        "tasks": [{"name": "other", "job": "oj", "priority": other_priority,
                   "requests": {"cpu": 2}}, preemptor],
    }


def binds(doc: dict[str, Any]) -> dict[str, str]:
    return dict(run_scenario(parse_scenario(doc, source="<test>")).binds)


def test_without_a_nomination_the_first_queue_takes_the_freed_room() -> None:
    assert binds(two_queues(None)) == {"default/other": "n1"}


def test_the_nominated_node_is_kept_for_the_preemptor() -> None:
    assert binds(two_queues("n1")) == {"default/p": "n1"}


def test_a_task_of_higher_priority_than_the_nominee_may_take_it() -> None:
    assert binds(two_queues("n1", other_priority=1000)) == {"default/other": "n1"}


def test_a_nomination_to_an_unknown_node_is_named() -> None:
    with pytest.raises(ScenarioError, match=r"nominatedNodeName: no node 'n9'"):
        parse_scenario(two_queues("n9"), source="<test>")


def test_a_preemption_nominates_through_the_cache_and_the_next_session_keeps_it() -> None:
    """Session 1 evicts a low-priority task for `p` on the full node and the cache
    records the nomination on `p`, so the next session's snapshot carries it (the
    rule it then applies is the scenarios' above); once placed, `p` has none."""
    doc = {
        "version": 1, "name": "preempt, then keep the room",
        "config": {"actions": "allocate, preempt", "tiers": [
            {"plugins": [{"name": "priority"}, {"name": "gang"}]},
            {"plugins": [{"name": "predicates"}, {"name": "nodeorder"}]}]},
        "priorityClasses": [{"name": "low", "value": 10}, {"name": "high", "value": 1000}],
        "queues": [{"name": "q1", "weight": 1}, {"name": "q2", "weight": 1}],
        "nodes": [{"name": "n1", "allocatable": {"cpu": 2, "memory": "4Gi", "pods": 10}}],
        "jobs": [{"name": "low", "queue": "q2", "minMember": 1, "priorityClassName": "low",
                  "phase": "Running"},
                 {"name": "pj", "queue": "q2", "minMember": 1, "priorityClassName": "high",
                  "phase": "Inqueue"}],
        "tasks": [{"name": f"low-{i}", "job": "low", "node": "n1", "phase": "Running",
                   "priorityClassName": "low", "requests": {"cpu": 1}} for i in (0, 1)]
        + [{"name": "p", "job": "pj", "priorityClassName": "high", "requests": {"cpu": 1}}],
    }
    scenario = parse_scenario(doc, source="<test>")
    cache = scenario.build_cache()
    assert isinstance(cache, MemoryCache)
    scheduler = Scheduler(cache, scenario.configuration)
    scheduler.run_once()
    assert cache.nominations == {"default/p": "n1"}
    assert cache.snapshot().jobs["default/pj"].tasks["default/p"].nominated_node == "n1"
    victim = cache.evictions[0].task
    cache.delete_task(cache.jobs["default/low"].tasks[victim])  # the eviction completed
    other = parse_scenario({**doc, "jobs": [{"name": "oj", "queue": "q1", "minMember": 1,
                                             "phase": "Inqueue"}],
                            "tasks": [{"name": "other", "job": "oj", "requests": {"cpu": 1}}],
                            "priorityClasses": []}, source="<test>")
    cache.add_job(other.jobs[0])
    scheduler.run_once()
    assert [bind.task for bind in cache.binds] == ["default/p"]
    assert cache.jobs["default/pj"].tasks["default/p"].nominated_node == ""


def test_a_host_nomination_reaches_the_next_incremental_snapshot() -> None:
    """A nomination the host records between sessions moves no task status; a cache
    that hands out unchanged jobs again (incremental snapshots) must still show it."""
    cache = parse_scenario(two_queues(None), source="<test>").build_cache()
    assert isinstance(cache, MemoryCache)
    cache.incremental_snapshots = True
    before = cache.snapshot().jobs["default/pj"]
    assert before.tasks["default/p"].nominated_node == ""
    cache.nominate(cache.jobs["default/pj"].tasks["default/p"], "n1")
    after = cache.snapshot().jobs["default/pj"]
    assert after.tasks["default/p"].nominated_node == "n1"


def test_sessions_on_reused_objects_see_each_nomination_and_its_end() -> None:
    """With incremental snapshots a session keeps the nominated tasks with the job
    object; a nomination, and the bind that ends it, still show in the next one."""
    from batchsched.framework.session import Session

    doc = two_queues(None)
    # A victim leaving n1: the nomination waits for its room (one waiting for nothing
    # is cleared at close).
    doc["jobs"].append({"name": "vj", "queue": "q1", "minMember": 1, "phase": "Running"})
    doc["tasks"].append({"name": "victim", "job": "vj", "node": "n1", "phase": "Running",
                         "requests": {"cpu": 1}})
    scenario = parse_scenario(doc, source="<test>")
    cache = scenario.build_cache()
    assert isinstance(cache, MemoryCache)
    cache.incremental_snapshots = True
    assert cache.evict(cache.jobs["default/vj"].tasks["default/victim"], "preempted")

    def nominees() -> dict[str, list[str]]:
        ssn = Session.open(cache, scenario.configuration)
        ssn.close()
        return {node: [t.uid for t in tasks] for node, tasks in ssn.nominees.items()}

    assert nominees() == {}
    cache.nominate(cache.jobs["default/pj"].tasks["default/p"], "n1")
    assert nominees() == {"n1": ["default/p"]}
    assert nominees() == {"n1": ["default/p"]}  # the same objects, handed out again
    cache.delete_task(cache.jobs["default/vj"].tasks["default/victim"])  # it left
    cache.bind(cache.jobs["default/pj"].tasks["default/p"], "n1")
    assert nominees() == {}


def test_allocate_tries_the_nominated_node_first() -> None:
    """Volcano's allocate (and kube-scheduler) evaluate a task's nominated node before
    the others: the task goes there even when another node scores higher."""
    doc = {
        "version": 1, "name": "nominated node first",
        "config": {"actions": "allocate", "tiers": [
            {"plugins": [{"name": "priority"}, {"name": "gang"}]},
            {"plugins": [{"name": "predicates"}, {"name": "nodeorder"}]}]},
        "queues": [{"name": "q"}],
        "nodes": [{"name": "idle", "allocatable": {"cpu": 8, "memory": "16Gi", "pods": 10}},
                  {"name": "busy", "allocatable": {"cpu": 8, "memory": "16Gi", "pods": 10}}],
        "jobs": [{"name": "j", "queue": "q", "minMember": 1, "phase": "Inqueue"},
                 {"name": "r", "queue": "q", "minMember": 1, "phase": "Running"}],
        "tasks": [{"name": "running", "job": "r", "node": "busy", "phase": "Running",
                   "requests": {"cpu": 4, "memory": "8Gi"}},
                  {"name": "p", "job": "j", "requests": {"cpu": 2, "memory": "1Gi"},
                   "nominatedNodeName": "busy"}],
    }
    assert binds(doc) == {"default/p": "busy"}
    del doc["tasks"][1]["nominatedNodeName"]
    assert binds(doc) == {"default/p": "idle"}  # least requested prefers the idle node


def test_a_nominated_node_that_no_longer_fits_is_passed_over() -> None:
    doc = {
        "version": 1, "name": "nominated node full",
        "config": {"actions": "allocate", "tiers": [{"plugins": [{"name": "gang"}]},
                                                    {"plugins": [{"name": "predicates"}]}]},
        "queues": [{"name": "q"}],
        "nodes": [{"name": "a", "allocatable": {"cpu": 2, "pods": 10}},
                  {"name": "b", "allocatable": {"cpu": 2, "pods": 10}}],
        "jobs": [{"name": "j", "queue": "q", "minMember": 1, "phase": "Inqueue"},
                 {"name": "r", "queue": "q", "minMember": 1, "phase": "Running"}],
        "tasks": [{"name": "running", "job": "r", "node": "b", "phase": "Running",
                   "requests": {"cpu": 2}},
                  {"name": "p", "job": "j", "requests": {"cpu": 2}, "nominatedNodeName": "b"}],
    }
    assert binds(doc) == {"default/p": "a"}


@pytest.mark.parametrize("name", ["room-kept.yaml", "error-cache.yaml"])
def test_the_nominated_node_goes_through_the_node_choice(name: str) -> None:
    from pathlib import Path

    from batchsched.scenario import check_scenario, load_scenario

    result = check_scenario(load_scenario(Path(__file__).parent / "data" / "nominated" / name))
    assert result.passed, "\n".join(result.differences)


@pytest.mark.parametrize("actions", ["enqueue, allocate, preempt", "enqueue, allocate, backfill"])
def test_nominees_that_cannot_all_fit_and_wait_for_nothing_lose_their_nominations(
        actions: str) -> None:
    """Two equal-priority pods nominated to an empty node that holds one of them: each
    keeps room for the other, so neither fits. Nothing is leaving the node for them,
    so the nominations are cleared at close (kube's preemption clears a nomination
    when it finds no victims; with no action that preempts, as Volcano's default
    actions, nothing would ever renew nor clear them), and the next cycle places one;
    they stalled for ever."""
    doc = yaml.safe_load("""
version: 1
config:
  tiers:
  - plugins: [{name: priority}, {name: gang}, {name: conformance}]
  - plugins: [{name: drf}, {name: predicates}, {name: proportion}, {name: nodeorder}]
nodes: [{name: n1, allocatable: {cpu: 4, memory: 8Gi, pods: 10}}]
jobs:
- {name: a, minMember: 1, phase: Inqueue}
- {name: b, minMember: 1, phase: Inqueue}
tasks:
- {name: a0, job: a, requests: {cpu: 2}, nominatedNodeName: n1}
- {name: b0, job: b, requests: {cpu: 3}, nominatedNodeName: n1}
""")
    doc["config"]["actions"] = actions
    scenario = parse_scenario(doc, source="<test>")
    cache = scenario.build_cache()
    scheduler = Scheduler(cache, scenario.configuration)
    scheduler.run_once()
    assert cache.binds == []
    assert [t.nominated_node for job in cache.jobs.values() for t in job.tasks.values()] \
        == ["", ""]
    scheduler.run_once()
    assert len(cache.binds) == 1


def test_soft_sharded_scores_are_those_allocate_ranks_by() -> None:
    """Sharded soft, allocate ranks the shard's nodes as a group of their own (Volcano's
    prioritizeNodes): the batch scores --scores reports are normalised over that
    group too (over every node, they ranked n2 first while allocate chose n1)."""
    from pathlib import Path

    from batchsched.scenario import load_scenario
    from batchsched.scenario.compare import compare_decisions

    scenario = load_scenario(Path(__file__).parent / "data" / "soft-shard-scores.yaml")
    decisions = run_scenario(scenario)
    assert not compare_decisions(scenario.expect, decisions.to_json())


def test_a_nominee_whose_room_is_on_its_way_keeps_its_nomination() -> None:
    doc = two_queues("n1")
    doc["config"]["actions"] = "allocate, preempt"
    doc["jobs"].append({"name": "vj", "queue": "q1", "minMember": 1, "phase": "Running"})
    doc["tasks"].append({"name": "victim", "job": "vj", "node": "n1", "phase": "Running",
                         "requests": {"cpu": 2}})
    scenario = parse_scenario(doc, source="<test>")
    cache = scenario.build_cache()
    assert cache.evict(cache.jobs["default/vj"].tasks["default/victim"], "preempted")
    Scheduler(cache, scenario.configuration).run_once()
    assert cache.jobs["default/pj"].tasks["default/p"].nominated_node == "n1"


def test_asking_for_scores_changes_no_decision() -> None:
    from pathlib import Path

    from batchsched.scenario import load_scenario

    path = Path(__file__).parent / "data" / "scores-with-predicate-cache.yaml"
    plain = run_scenario(load_scenario(path), scores=False).to_json()
    scored = run_scenario(load_scenario(path), scores=True).to_json()
    assert scored.pop("scores") == {"default/a": {"n2": 398.0},
                                    "default/z": {"n1": 463.0, "n2": 398.0}}
    assert scored == plain and plain["binds"] == {"default/z": "n1", "default/a": "n1"}


def test_a_nominee_whose_node_is_deleted_loses_its_nomination_and_preempts_again() -> None:
    """hi preempted on n1 and was nominated there; n1 is deleted and n2 comes with a
    low job. Preempt never takes a preemptor nominated to a node missing from the
    session (Volcano's taskEligibleToPreempt), so hi starved for good: the nomination
    is cleared at close, and hi preempts on n2."""
    doc = yaml.safe_load("""
version: 1
config:
  actions: "enqueue, allocate, preempt"
  tiers:
  - plugins: [{name: priority}, {name: gang}, {name: conformance}]
  - plugins: [{name: drf}, {name: predicates}, {name: proportion}, {name: nodeorder}]
priorityClasses: [{name: low, value: 10}, {name: high, value: 1000}]
nodes:
- {name: n1, allocatable: {cpu: 4, memory: 64Gi, pods: 110}}
- {name: n2, allocatable: {cpu: 4, memory: 64Gi, pods: 110}}
jobs:
- {name: low2, minMember: 1, priorityClassName: low, phase: Running}
- {name: hi, minMember: 1, priorityClassName: high, phase: Inqueue}
tasks:
- {name: low2-0, job: low2, node: n2, phase: Running, requests: {cpu: 2, memory: 1Gi}}
- {name: low2-1, job: low2, node: n2, phase: Running, requests: {cpu: 2, memory: 1Gi}}
- {name: hi-0, job: hi, requests: {cpu: 2, memory: 1Gi}, nominatedNodeName: n1}
""")
    scenario = parse_scenario(doc, source="<test>")
    cache = scenario.build_cache()
    cache.delete_node("n1")
    scheduler = Scheduler(cache, scenario.configuration)
    scheduler.run_once()
    (hi,) = cache.jobs["default/hi"].tasks.values()
    assert hi.nominated_node == "" and cache.nominations.get("default/hi-0", "") == ""
    scheduler.run_once()
    assert len(cache.evictions) == 1 and cache.evictions[0].task.startswith("default/low2-")


HELPER_CONF = """
  actions: "enqueue, allocate, preempt, reclaim, backfill"
  tiers:
  - plugins: [{name: priority}, {name: gang}, {name: conformance}]
  - plugins: [{name: drf}, {name: predicates}, {name: proportion}, {name: nodeorder}]
"""


def test_a_nominee_of_a_deleted_node_placed_elsewhere_loses_the_nomination() -> None:
    """hi-0 is pipelined on n2 (a victim still leaving it): its nomination to the
    deleted n1 was kept, as only a nominee left pending was cleared."""
    cache = MemoryCache(now=1000.0)
    cache.add_priority_class(PriorityClass("low", 10))
    cache.add_priority_class(PriorityClass("high", 1000))
    for name in ("n1", "n2"):
        cache.add_node(NodeInfo.create(name, Resource.from_mapping(
            {"cpu": 2, "memory": "4Gi", "pods": 10})))

    def job(name: str, priority_class: str, priority: int, node: str = "") -> None:
        owner = JobInfo.from_podgroup(PodGroup(name, "ns", min_member=1,
                                               priority_class_name=priority_class),
                                      priority=priority)
        task = TaskInfo.create("ns", f"{name}-0", owner.uid,
                               Resource.from_mapping({"cpu": 2, "memory": "1Gi"}),
                               priority=priority, priority_class_name=priority_class)
        if node:
            task.status, task.node_name = TaskStatus.RUNNING, node
        owner.add_task(task)
        cache.add_job(owner)

    job("low", "low", 10, "n2")
    job("hi", "high", 1000)
    cache.evict(cache.jobs["ns/low"].tasks["ns/low-0"], "preempt")  # still leaving n2
    cache.nominate(cache.jobs["ns/hi"].tasks["ns/hi-0"], "n1")
    cache.delete_node("n1")
    conf = yaml.safe_load("x:" + HELPER_CONF.replace("reclaim, backfill", "reclaim"))["x"]
    Scheduler(cache, parse_scenario({"version": 1, "config": conf},
                                    source="<test>").configuration).run_once()
    assert cache.nominations == {}


def test_a_nominee_no_eviction_action_takes_on_does_not_keep_its_room_for_ever() -> None:
    """hi's minimum is met by hi-0, so preempt and reclaim never try hi-1: its room on
    n1 (3 cpu, 2 free, nothing leaving) was kept in every session, and mid-0, which
    fits n1, never started."""
    doc = yaml.safe_load("""
version: 1
config:""" + HELPER_CONF + """
priorityClasses: [{name: mid, value: 100}, {name: high, value: 1000}, {name: top, value: 2000}]
nodes:
- {name: n1, allocatable: {cpu: 4, memory: 8Gi, pods: 10}}
- {name: n2, allocatable: {cpu: 2, memory: 8Gi, pods: 10}}
jobs:
- {name: top, minMember: 1, priorityClassName: top, phase: Running}
- {name: hi, minMember: 1, priorityClassName: high, phase: Running}
- {name: mid, minMember: 1, priorityClassName: mid, phase: Inqueue}
tasks:
- {name: top-0, job: top, node: n1, phase: Running, requests: {cpu: 2, memory: 1Gi}}
- {name: hi-0, job: hi, node: n2, phase: Running, requests: {cpu: 2, memory: 1Gi}}
- {name: hi-1, job: hi, requests: {cpu: 3, memory: 1Gi}, nominatedNodeName: n1}
- {name: mid-0, job: mid, requests: {cpu: 2, memory: 1Gi}}
""")
    scenario = parse_scenario(doc, source="<test>")
    cache = scenario.build_cache()
    scheduler = Scheduler(cache, scenario.configuration)
    for _ in range(3):
        scheduler.run_once()
    assert cache.nominations == {}
    assert [bind.task for bind in cache.binds] == ["default/mid-0"]
