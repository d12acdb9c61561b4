"""Shared by the preempt and reclaim tests: an observer plugin that pairs each
committed eviction with the task it made room for, and random clusters for
property tests.

The observer (``preempt-observer`` in a configuration) watches two things:

* every committed statement (``batchsched_statement_committed``): Volcano's
  statements hold, per node attempt, the evictions followed by the pipeline of
  the preemptor, so each eviction is paired with the next pipelined task;
* every eviction as it happens (a deallocate handler, which runs before the
  plugins of later tiers): whether the victim's queue was then above its
  proportion deserved share, read from the proportion plugin.
"""

from __future__ import annotations

from typing import Any

from action_support import make_registry
from hypothesis import strategies as st

from batchsched.api.task import TaskInfo
from batchsched.api.types import PREEMPTABLE_STATUSES, TaskStatus
from batchsched.framework.arguments import Arguments
from batchsched.framework.events import Event, EventHandler
from batchsched.framework.session import Session
from batchsched.framework.statement import Operation, OperationKind
from batchsched.plugin import PluginSpec, hookimpl


class Observer:
    """What the observer plugin saw in the current run (reset before each run)."""

    def __init__(self) -> None:
        self.committed_pairs: list[tuple[TaskInfo, TaskInfo]] = []
        self.over_deserved: dict[str, bool] = {}
        self.evicted_from: dict[str, TaskStatus] = {}
        self.problems: list[str] = []

    def reset(self) -> None:
        self.__init__()  # type: ignore[misc]

    @hookimpl
    def batchsched_register_plugins(self) -> list[PluginSpec]:
        return [PluginSpec("preempt-observer", ObserverPlugin)]

    @hookimpl
    def batchsched_statement_committed(self, session: Session,
                                       operations: list[Operation]) -> None:
        waiting: list[Operation] = []
        for op in operations:
            if op.kind is OperationKind.EVICT:
                if op.before.status not in PREEMPTABLE_STATUSES:
                    self.problems.append(f"{op.task.uid} evicted from {op.before.status}")
                self.evicted_from[op.task.uid] = op.before.status
                waiting.append(op)
            elif op.kind is OperationKind.PIPELINE:
                self.committed_pairs.extend((w.task, op.task) for w in waiting)
                waiting = []
        if waiting:
            self.problems.append(f"evictions without a preemptor: {[w.task.uid for w in waiting]}")


OBSERVER = Observer()


class ObserverPlugin:
    name = "preempt-observer"

    def __init__(self, arguments: Arguments) -> None:
        self.arguments = arguments

    def on_session_open(self, ssn: Session) -> None:
        def deallocate(event: Event) -> None:
            task = event.task
            if task.status is not TaskStatus.RELEASING:
                return
            proportion = ssn.plugins.get("proportion")
            attr = proportion.queue_attrs.get(ssn.jobs[task.job].queue) if proportion else None
            if attr is not None:
                OBSERVER.over_deserved[task.uid] = not attr.allocated.less_equal(attr.deserved)

        ssn.add_event_handler(EventHandler(deallocate=deallocate, plugin=self.name))

    def on_session_close(self, ssn: Session) -> None:
        pass


OBSERVER_REGISTRY = make_registry()
OBSERVER_REGISTRY.register(OBSERVER, name="victim-observer")

PRIORITY_CLASSES = [
    {"name": "low", "value": 5},
    {"name": "mid", "value": 10},
    {"name": "high", "value": 100},
]


@st.composite
def random_cluster(draw: st.DrawFn, *, max_queues: int = 2) -> dict[str, Any]:
    """A scenario document without ``config``: 1-3 small nodes, 1-``max_queues``
    queues, and 2-5 jobs of random priority class. A job is either running (its
    tasks placed first-fit, maybe one more pending, minMember 0 or 1) or waiting (a gang of
    pending tasks, sometimes with a few running ones, minMember its size). Half
    the time the nodes are then filled up with tasks of running jobs. Tasks have
    random priorities; some are not preemptable."""
    nodes = [{"name": f"n{i}", "allocatable": {"cpu": draw(st.integers(2, 3)), "pods": 10}}
             for i in range(draw(st.integers(1, 3)))]
    free = {n["name"]: n["allocatable"]["cpu"] for n in nodes}
    queues = [{"name": f"q{i}", "weight": draw(st.integers(1, 3))}
              for i in range(draw(st.integers(1, max_queues)))]
    jobs: list[dict[str, Any]] = []
    tasks: list[dict[str, Any]] = []

    def place(task: dict[str, Any], first: str) -> None:
        for node in sorted(free, key=lambda n: (n != first, n)):
            if free[node] >= task["requests"]["cpu"]:
                free[node] -= task["requests"]["cpu"]
                task.update(node=node, phase="Running")
                return

    for j in range(draw(st.integers(2, 5))):
        name = f"j{j}"
        waiting = draw(st.booleans())
        running = draw(st.integers(0, 2) if waiting else st.integers(1, 4))
        pending = draw(st.integers(1, 2) if waiting else st.integers(0, 1))
        members = running + pending
        jobs.append({
            "name": name, "namespace": "c1",
            "phase": "Inqueue" if waiting else "Running",
            "queue": draw(st.sampled_from([q["name"] for q in queues])),
            # Waiting gangs tend to outrank running jobs, so that preemption has work.
            "priorityClassName": draw(st.sampled_from(
                ["mid", "high", "high", "low"] if waiting else ["low", "low", "mid", "high"])),
            "minMember": members if waiting else draw(st.integers(0, 1)),
        })
        for t in range(members):
            task: dict[str, Any] = {
                "name": f"{name}t{t}", "namespace": "c1", "job": name,
                "requests": {"cpu": draw(st.integers(1, 2))},
                "priority": draw(st.integers(1, 3)),
            }
            if draw(st.integers(0, 4)) == 0:
                task["annotations"] = {"volcano.sh/preemptable": "false"}
            if t < running:
                place(task, draw(st.sampled_from(sorted(free))))
            tasks.append(task)
    running_jobs = [j["name"] for j in jobs if j["phase"] == "Running"]
    if running_jobs and draw(st.booleans()):
        # Fill every node with 1-CPU tasks of running jobs: no idle room left.
        for node in sorted(free):
            while free[node] >= 1:
                owner = draw(st.sampled_from(running_jobs))
                free[node] -= 1
                tasks.append({"name": f"{owner}f{len(tasks)}", "namespace": "c1",
                              "job": owner, "node": node, "phase": "Running",
                              "requests": {"cpu": 1}, "priority": draw(st.integers(1, 3))})
    return {"version": 1, "name": "random cluster", "priorityClasses": PRIORITY_CLASSES,
            "queues": queues, "nodes": nodes, "jobs": jobs, "tasks": tasks}
