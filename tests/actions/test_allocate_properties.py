"""Properties every allocate run keeps, on random small clusters and gang jobs.

* No node is charged beyond its allocatable, and pipelined tasks never claim more
  than the node's idle plus releasing resources.
* All or nothing: a job that got any task placed in the session has at least
  ``minMember`` tasks holding resources (bound or allocated) - or, when it was
  kept as pipelined, holding or waiting for them.
* Every job's and node's bookkeeping still adds up, and the same cluster gives
  the same decisions twice.
"""

from __future__ import annotations

from typing import Any

from action_support import Outcome, run_parsed
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from batchsched.api.resource import DimensionDefault
from batchsched.api.types import TaskStatus

CONFIG: dict[str, Any] = {
    "actions": "allocate",
    "tiers": [
        {"plugins": [{"name": "priority"}, {"name": "gang"}]},
        {"plugins": [{"name": "drf"}, {"name": "predicates"}, {"name": "proportion"},
                     {"name": "nodeorder"}]},
    ],
}

PLACED = (TaskStatus.ALLOCATED, TaskStatus.BINDING, TaskStatus.PIPELINED)


@st.composite
def clusters(draw: st.DrawFn) -> dict[str, Any]:
    nodes = []
    free: dict[str, list[int]] = {}
    for i in range(draw(st.integers(1, 4))):
        cpu, memory = draw(st.integers(1, 8)), draw(st.integers(1, 8))
        pods = draw(st.integers(1, 6))
        name = f"n{i}"
        nodes.append({"name": name, "allocatable": {"cpu": cpu, "memory": f"{memory}Gi",
                                                     "pods": pods},
                      "labels": {"zone": draw(st.sampled_from(["a", "b"]))}})
        free[name] = [cpu, memory, pods]
    queues = [{"name": f"q{i}", "weight": draw(st.integers(1, 3))}
              for i in range(draw(st.integers(1, 2)))]
    jobs, tasks = [], []
    for j in range(draw(st.integers(1, 4))):
        count = draw(st.integers(1, 4))
        queue = draw(st.sampled_from(queues))["name"]
        jobs.append({"name": f"pg{j}", "namespace": "ns", "queue": queue,
                     "minMember": draw(st.integers(0, count)),
                     "phase": draw(st.sampled_from(["Pending", "Inqueue"]))})
        for t in range(count):
            cpu, memory = draw(st.integers(1, 4)), draw(st.integers(0, 3))
            task: dict[str, Any] = {"name": f"pg{j}-t-{t}", "namespace": "ns", "job": f"pg{j}",
                                    "requests": {"cpu": cpu, "memory": f"{memory}Gi"}}
            role = draw(st.sampled_from(["", "", "ps", "worker"]))
            if role:
                task["role"] = role
            if draw(st.integers(0, 4)) == 0:
                task["nodeSelector"] = {"zone": draw(st.sampled_from(["a", "b"]))}
            # Some tasks already run (or are being deleted) where they fit.
            where = draw(st.sampled_from([None, None, *free]))
            if where is not None:
                room = free[where]
                if cpu <= room[0] and memory <= room[1] and room[2] >= 1:
                    room[0] -= cpu
                    room[1] -= memory
                    room[2] -= 1
                    task.update(node=where, phase="Running", deleting=draw(st.booleans()))
            tasks.append(task)
    return {"version": 1, "name": "random allocate", "config": CONFIG, "queues": queues,
            "nodes": nodes, "jobs": jobs, "tasks": tasks}


def placed_this_session(outcome: Outcome, uid: str) -> int:
    job = outcome.job(uid)
    return sum(len(job.tasks_in(s)) for s in PLACED)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(clusters())
def test_allocate_never_overcommits_and_places_gangs_whole(document: dict[str, Any]) -> None:
    outcome = run_parsed(document)
    for node in outcome.ssn.node_list:
        node.check_invariants()
        assert node.used.less_equal(node.allocatable, DimensionDefault.ZERO), node
        assert node.pipelined.less_equal(node.idle + node.releasing, DimensionDefault.ZERO), node
    for job in outcome.ssn.jobs.values():
        job.check_invariants()
        if not placed_this_session(outcome, job.uid):
            continue
        if job.tasks_in(TaskStatus.BINDING):
            assert job.ready_task_num() >= job.min_available, job
        else:
            assert job.ready_task_num() + job.waiting_task_num() >= job.min_available, job

    again = run_parsed(document)
    assert again.bind_order == outcome.bind_order
    assert {uid: {t: str(task.status) for t, task in job.tasks.items()}
            for uid, job in again.ssn.jobs.items()} == {
        uid: {t: str(task.status) for t, task in job.tasks.items()}
        for uid, job in outcome.ssn.jobs.items()}
