"""Queue and pod-group status, written at session close as Volcano writes them."""

from __future__ import annotations

import pytest

from batchsched.cache.memory import MemoryCache
from batchsched.errors import ScenarioError
from batchsched.framework import Statement
from batchsched.framework.session import Session
from batchsched.scenario import parse_scenario, run_scenario
from batchsched.scheduler import Scheduler

DOC = {
    "version": 1, "name": "status at close",
    "config": {"actions": "enqueue, allocate", "tiers": [
        {"plugins": [{"name": "priority"}, {"name": "gang"}]},
        {"plugins": [{"name": "predicates"}, {"name": "proportion"}]}]},
    "queues": [{"name": "a", "weight": 1}, {"name": "b", "weight": 1}],
    "nodes": [{"name": "n1", "allocatable": {"cpu": 4, "memory": "8Gi", "pods": 10}}],
    "jobs": [{"name": "running", "queue": "a", "minMember": 1, "phase": "Running"},
             {"name": "done", "queue": "a", "minMember": 1, "phase": "Running"},
             {"name": "waiting", "queue": "b", "minMember": 2, "phase": "Inqueue"}],
    "tasks": [{"name": "r0", "job": "running", "node": "n1", "phase": "Running",
               "requests": {"cpu": 1}},
              {"name": "d0", "job": "done", "node": "n1", "phase": "Succeeded",
               "requests": {"cpu": 1}},
              {"name": "w0", "job": "waiting", "requests": {"cpu": 2}},
              {"name": "w1", "job": "waiting", "requests": {"cpu": 2}}],
}


def test_the_decisions_carry_each_queues_status() -> None:
    status = run_scenario(parse_scenario(DOC, source="<test>")).queue_status
    # cpu and memory always, as Volcano's ConvertRes2ResList writes them.
    assert status["a"]["allocated"] == {"cpu": "1", "memory": "0", "pods": "1"}
    assert status["a"]["podGroups"] == {"Pending": 0, "Inqueue": 0, "Running": 1,
                                        "Unknown": 0, "Completed": 1}
    assert status["b"]["podGroups"]["Inqueue"] == 1
    assert status["b"]["allocated"] == {"cpu": "0", "memory": "0"}


def test_the_cache_keeps_queue_and_pod_group_status() -> None:
    scenario = parse_scenario(DOC, source="<test>")
    cache = scenario.build_cache()
    assert isinstance(cache, MemoryCache)
    Scheduler(cache, scenario.configuration).run_once()
    assert cache.queues["a"].status.running == 1 and cache.queues["a"].status.completed == 1
    assert cache.queues["a"].status.allocated.milli_cpu == 1000
    running = cache.jobs["default/running"].podgroup
    done = cache.jobs["default/done"].podgroup
    assert (running.running, running.succeeded, done.succeeded) == (1, 0, 1)


def _gpu_doc() -> dict[str, object]:
    return {
        "version": 1, "name": "zero gpu",
        "config": {"actions": "allocate", "tiers": [
            {"plugins": [{"name": "gang"}, {"name": "predicates"}]}]},
        "queues": [{"name": "q1"}],
        "nodes": [{"name": "n1", "allocatable": {"cpu": 4, "memory": "8Gi", "pods": 10,
                                                "nvidia.com/gpu": 2}}],
        "jobs": [{"name": "j1", "queue": "q1", "minMember": 1, "phase": "Running"},
                 {"name": "j2", "queue": "q1", "minMember": 1, "phase": "Running"}],
        "tasks": [],
    }


def test_a_queue_status_writes_a_resource_its_tasks_ask_zero_of() -> None:
    # Volcano sums the held tasks' requests (a key asked at 0 kept) and
    # ConvertRes2ResList writes every key.
    doc = _gpu_doc()
    doc["tasks"] = [{"name": "t1", "job": "j1", "node": "n1", "phase": "Running",
                     "requests": {"cpu": 1, "nvidia.com/gpu": 0}}]
    status = run_scenario(parse_scenario(doc, source="<test>")).queue_status
    assert status["q1"]["allocated"] == {"cpu": "1", "memory": "0", "nvidia.com/gpu": "0",
                                         "pods": "1"}


def test_a_resource_only_a_task_that_left_asked_for_is_not_written() -> None:
    doc = _gpu_doc()
    doc["tasks"] = [{"name": "g1", "job": "j2", "node": "n1", "phase": "Running",
                     "requests": {"cpu": 1, "nvidia.com/gpu": 1}}]
    scenario = parse_scenario(doc, source="<test>")
    ssn = Session.open(scenario.build_cache(), scenario.configuration)
    statement = Statement(ssn)
    statement.evict(ssn.jobs["default/j2"].tasks["default/g1"], "test")
    statement.commit()
    ssn.close()
    assert ssn.queues["q1"].status.to_json()["allocated"] == {"cpu": "0", "memory": "0"}


def test_a_status_a_session_wrote_before_decides_the_events_and_is_checked() -> None:
    document = {
        "version": 1, "name": "written status",
        "config": {"actions": "enqueue, allocate", "tiers": [
            {"plugins": [{"name": "gang"}, {"name": "predicates"}]}]},
        "nodes": [{"name": "n1", "allocatable": {"cpu": 2, "memory": "8Gi", "pods": 10}}],
        "jobs": [{"name": "steady", "minMember": 1, "phase": "Running", "running": 1,
                  "conditions": [{"type": "Scheduled", "status": "True",
                                  "reason": "tasks in gang are ready to be scheduled"}]}],
        "tasks": [{"name": "s0", "job": "steady", "node": "n1", "phase": "Running",
                   "requests": {"cpu": 1}}],
    }
    events = run_scenario(parse_scenario(document, source="<test>")).events
    assert not [e for e in events if e["reason"] == "Scheduled"]
    document["jobs"][0]["running"] = 0
    events = run_scenario(parse_scenario(document, source="<test>")).events
    assert [e["object"] for e in events if e["reason"] == "Scheduled"] == ["default/steady"]
    document["jobs"][0]["conditions"] = [{"status": "True"}]
    with pytest.raises(ScenarioError,
                       match=r"\(default/steady\)\.conditions\[0\]\.type: is required"):
        parse_scenario(document, source="<test>")
