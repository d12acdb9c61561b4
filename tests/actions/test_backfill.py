"""backfill: best-effort tasks onto nodes that pass the predicates."""

from __future__ import annotations

from action_support import Outcome, run_document

from batchsched.actions.backfill import pick_up_pending_tasks
from batchsched.api.types import TaskStatus
from batchsched.framework.session import Session
from batchsched.framework.statement import Statement
from batchsched.scenario import parse_scenario


def run(body: str, tiers: str = "[{name: test-selector}]", actions: str = "backfill",
        before_actions: object = None) -> Outcome:
    head = f"""
config:
  actions: "{actions}"
  tiers:
    - plugins: {tiers}
"""
    return run_document(head + body, before_actions=before_actions)  # type: ignore[arg-type]


FULL_NODE = """
queues: [{name: q1}]
jobs:
  - {name: busy, namespace: c1, queue: q1, minMember: 0, phase: Running}
  - {name: pg1, namespace: c1, queue: q1, minMember: 0, phase: %s}
tasks:
  - {name: r1, namespace: c1, job: busy, node: n1, phase: Running, requests: {cpu: 2}}
  - {name: be1, namespace: c1, job: pg1}
nodes: [{name: n1, allocatable: {cpu: 2, pods: 10}}]
"""


def test_a_best_effort_task_needs_no_free_resources() -> None:
    outcome = run(FULL_NODE % "Inqueue")
    assert outcome.binds == {"c1/be1": "n1"}


def test_pending_pod_groups_are_not_backfilled() -> None:
    outcome = run(FULL_NODE % "Pending")
    assert outcome.binds == {}


def test_a_task_failing_the_predicates_everywhere_gets_a_failed_scheduling_event() -> None:
    outcome = run("""
queues: [{name: q1}]
jobs: [{name: pg1, namespace: c1, queue: q1, minMember: 0, phase: Inqueue}]
tasks:
  - {name: be1, namespace: c1, job: pg1, nodeSelector: {zone: a}}
  - {name: be2, namespace: c1, job: pg1, nodeSelector: {zone: b}}
nodes:
  - {name: n1, allocatable: {cpu: 2, pods: 10}, labels: {zone: a}}
  - {name: n2, allocatable: {cpu: 2, pods: 10}, labels: {zone: a}}
""")
    assert outcome.binds == {"c1/be1": "n1"}
    message = ("0/2 nodes are unavailable: 2 node(s) didn't match Pod's node "
               "affinity/selector.")
    assert str(outcome.job("c1/pg1").nodes_fit_errors["c1/be2"]) == message
    assert [e.message for e in outcome.events("c1/be2", "FailedScheduling")] == [message]


def test_tasks_run_in_queue_then_job_then_task_order_and_respect_pod_counts() -> None:
    outcome = run("""
queues: [{name: q2}, {name: q1}]
jobs:
  - {name: pb, namespace: c1, queue: q2, minMember: 0, phase: Inqueue}
  - {name: pa, namespace: c1, queue: q1, minMember: 0, phase: Inqueue}
tasks:
  - {name: b1, namespace: c1, job: pb}
  - {name: a2, namespace: c1, job: pa}
  - {name: a1, namespace: c1, job: pa}
nodes: [{name: n1, allocatable: {cpu: 2, pods: 2}}]
""")
    assert outcome.bind_order == ["c1/a1", "c1/a2"]
    assert str(outcome.job("c1/pb").nodes_fit_errors["c1/b1"]) == (
        "0/1 nodes are unavailable: 1 node(s) pod number exceeded."
    )


def test_once_the_job_is_ready_every_allocated_task_of_it_binds() -> None:
    # test-ready wants both tasks placed before the job is ready: the first backfilled
    # task waits Allocated, the second makes the job ready and both bind together.
    outcome = run("""
queues: [{name: q1}]
jobs: [{name: pg1, namespace: c1, queue: q1, minMember: 2, phase: Inqueue}]
tasks:
  - {name: be1, namespace: c1, job: pg1}
  - {name: be2, namespace: c1, job: pg1}
nodes: [{name: n1, allocatable: {cpu: 2, pods: 10}}]
""", tiers="[{name: test-selector}, {name: test-ready}]")
    assert outcome.binds == {"c1/be1": "n1", "c1/be2": "n1"}
    assert outcome.status("c1/be1") == TaskStatus.BINDING


def test_an_unready_job_keeps_its_backfilled_task_allocated() -> None:
    outcome = run("""
queues: [{name: q1}]
jobs: [{name: pg1, namespace: c1, queue: q1, minMember: 2, phase: Inqueue}]
tasks:
  - {name: be1, namespace: c1, job: pg1}
  - {name: p2, namespace: c1, job: pg1, requests: {cpu: 4}}
nodes: [{name: n1, allocatable: {cpu: 2, pods: 10}}]
""", tiers="[{name: test-selector}, {name: test-ready}]")
    assert outcome.binds == {}
    assert outcome.status("c1/be1") == TaskStatus.ALLOCATED


def test_a_pipelined_best_effort_task_is_taken_back_and_placed_for_real() -> None:
    def pipeline_be1(ssn: Session) -> None:
        job = ssn.jobs["c1/pg1"]
        Statement(ssn).pipeline(job.tasks["c1/be1"], "n2")

    outcome = run("""
queues: [{name: q1}]
jobs: [{name: pg1, namespace: c1, queue: q1, minMember: 0, phase: Inqueue}]
tasks:
  - {name: be1, namespace: c1, job: pg1}
nodes:
  - {name: n1, allocatable: {cpu: 2, pods: 10}, labels: {score: "10"}}
  - {name: n2, allocatable: {cpu: 2, pods: 10}}
""", tiers="[{name: test-selector}, {name: test-label-score}]", before_actions=pipeline_be1)
    assert outcome.binds == {"c1/be1": "n1"}
    assert "c1/be1" not in outcome.ssn.nodes["n2"].tasks



def test_pick_up_pending_tasks_as_volcano_orders_them() -> None:
    """Volcano's ``TestPickUpPendingTasks`` (``actions/backfill/backfill_test.go``,
    volcano-sh/volcano at ed72c7c8, Apache-2.0): the best-effort tasks, pending and
    pipelined alike (un-pipelined), by job order (priority: pg2 first), then task
    priority; the tasks asking cpu are not backfill's."""
    tasks = []
    for job in ("pg1", "pg2"):
        for index in (1, 2, 3, 4):
            for kind, requests in (("besteffort", {}), ("unbesteffort", {"cpu": "500m"})):
                tasks.append({"name": f"{job}-{kind}-task-{index}", "job": job,
                              "priority": index, "requests": requests})
    doc = {"version": 1, "name": "pick up pending tasks",
           "config": {"actions": "", "tiers": [{"plugins": [
               {"name": "priority", "enablePreemptable": True, "enableTaskOrder": True,
                "enableJobOrder": True, **{flag: False for flag in (
                    "enableJobReady", "enableJobPipelined", "enableReclaimable",
                    "enablePreemptive", "enableQueueOrder", "enablePredicate",
                    "enableNodeOrder", "enableJobStarving")}},
               {"name": "drf", "enableQueueOrder": True, **{flag: False for flag in (
                   "enableJobOrder", "enablePreemptable", "enableReclaimable")}}]}]},
           "priorityClasses": [{"name": "job-priority-1", "value": 1},
                               {"name": "job-priority-2", "value": 2}],
           "queues": [{"name": "q1", "weight": 1}],
           "nodes": [{"name": "node1", "allocatable": {"cpu": 8, "memory": "8Gi",
                                                        "pods": 100}}],
           "jobs": [{"name": job, "queue": "q1", "minMember": 1, "minTaskMember": {"": 3},
                     "phase": "Inqueue", "priorityClassName": f"job-priority-{p}"}
                    for job, p in (("pg1", 1), ("pg2", 2))],
           "tasks": tasks}
    parsed = parse_scenario(doc, source="<test>")
    ssn = Session.open(parsed.build_cache(), parsed.configuration)
    for job in ("pg1", "pg2"):
        for index in (2, 4):  # the Go test pipelines tasks 2 and 4 of each job on node1
            for kind in ("besteffort", "unbesteffort"):
                task = ssn.jobs[f"default/{job}"].tasks[f"default/{job}-{kind}-task-{index}"]
                Statement(ssn).pipeline(task, "node1")
    assert [task.name for task in pick_up_pending_tasks(ssn)] == [
        "pg2-besteffort-task-4", "pg2-besteffort-task-3", "pg2-besteffort-task-2",
        "pg2-besteffort-task-1", "pg1-besteffort-task-4", "pg1-besteffort-task-3",
        "pg1-besteffort-task-2", "pg1-besteffort-task-1"]
