"""Transcribed from volcano-sh/volcano (Apache-2.0) at commit
ed72c7c815a9fd547a787134676f73d42e9d049c,
pkg/scheduler/framework/session_plugins_victim_order_test.go
``TestBuildVictimsPriorityQueueJobTieBreaksWithTaskOrder``: two victims whose jobs the
job order leaves equal come off the victims' queue by task order (the lower priority
first), whichever was pushed first, whether the preemptor's job is known or not."""

from __future__ import annotations

import pytest

from batchsched.framework.session import Session
from batchsched.scenario import parse_scenario
from batchsched.scenario.runner import ScenarioCache

_OFF = {flag: False for flag in (
    "enableHierarchy", "enableJobReady", "enableJobPipelined", "enablePreemptable",
    "enableReclaimable", "enablePreemptive", "enableQueueOrder", "enablePredicate",
    "enableBestNode", "enableNodeOrder", "enableTargetJob", "enableReservedNodes",
    "enableJobEnqueued", "enabledVictim", "enableJobStarving", "enabledOverused",
    "enabledAllocatable")}


def _session() -> Session:
    running = {"node": "n1", "phase": "Running", "requests": {"cpu": 1, "memory": "1Gi"}}
    doc = {
        "version": 1, "name": "victim order",
        "config": {"actions": "", "tiers": [{"plugins": [
            {"name": "priority", "enableJobOrder": True, "enableTaskOrder": True, **_OFF}]}]},
        "queues": [{"name": "q1", "weight": 1}],
        "nodes": [{"name": "n1", "allocatable": {"cpu": 10, "memory": "10Gi", "pods": 20}}],
        "jobs": [
            {"name": "pg-high", "namespace": "ns1", "queue": "q1", "minMember": 1,
             "phase": "Running", "createdAt": 20},
            {"name": "pg-low", "namespace": "ns1", "queue": "q1", "minMember": 1,
             "phase": "Running", "createdAt": 10},
            {"name": "pg-preemptor", "namespace": "ns1", "queue": "q1", "minMember": 1,
             "phase": "Pending"},
        ],
        "tasks": [
            {"name": "p-high", "namespace": "ns1", "job": "pg-high", "priority": 100, **running},
            {"name": "p-low", "namespace": "ns1", "job": "pg-low", "priority": 1, **running},
            {"name": "p-preemptor", "namespace": "ns1", "job": "pg-preemptor", "priority": 100,
             "requests": {"cpu": 1, "memory": "1Gi"}},
        ],
    }
    scenario = parse_scenario(doc, source="<victim order>")
    return Session.open(ScenarioCache(scenario.to_cluster(), scenario.bind_failures),
                        scenario.configuration)


@pytest.mark.parametrize("preemptor_job_known", [True, False])
@pytest.mark.parametrize("low_first", [True, False])
def test_victims_of_equal_jobs_come_off_by_task_order(preemptor_job_known: bool,
                                                      low_first: bool) -> None:
    ssn = _session()
    tasks = {task.name: task for job in ssn.jobs.values() for task in job.tasks.values()}
    high, low = tasks["p-high"], tasks["p-low"]
    # The job order (priority's, by the jobs' priorities, both 0) cannot tell them apart.
    assert ssn.job_order_compare(ssn.jobs[high.job], ssn.jobs[low.job]) == 0
    preemptor = tasks["p-preemptor"].clone()
    if not preemptor_job_known:
        preemptor.job = "ns1/missing"
    pushed = [low, high] if low_first else [high, low]
    assert ssn.build_victims_priority_queue(pushed, preemptor).pop().name == "p-low"
    ssn.close()
