"""When will a pending job start? A forward replay of a cluster's state.

:func:`predict_start` takes a scenario (a cluster as it is now: running tasks on
their nodes, pending jobs waiting) and replays it forward with the scheduler's
own configuration, through the same :class:`~batchsched.simulation.Simulator`
that ``batchsched simulate`` uses: running tasks end, freed resources go to
waiting jobs in the order the configured plugins choose, until the job starts.

How long a task runs is read, in this order, from its
``batchsched.io/run-time`` annotation (the real run time, when a test knows
it), else its job's ``batchsched.io/requested-runtime`` (the user's time
limit, an upper bound), else it is unknown: such a task is assumed to run
forever, and the prediction says how many of them it had to assume. A running
task whose start is unknown is taken to have just started. Jobs that have not
arrived yet cannot be known and are not invented: a prediction is what happens
if nothing else arrives.
"""

from __future__ import annotations

import math
import time
from typing import Any

from batchsched.api.types import PodGroupPhase, TaskStatus
from batchsched.errors import ScenarioError
from batchsched.framework.registry import Registry
from batchsched.scenario.loader import Scenario
from batchsched.simulation.engine import Simulator
from batchsched.simulation.scenario_workload import (
    RUN_TIME_ANNOTATION,
    restart_rule,
    seconds_of,
)
from batchsched.simulation.workload import Workload, WorkloadJob

__all__ = ["predict_start"]

_ENDED = (TaskStatus.SUCCEEDED, TaskStatus.FAILED)
#: What a task that has started is (bound tasks start at once in a replay).
_STARTED = (TaskStatus.RUNNING, TaskStatus.BOUND, TaskStatus.BINDING, TaskStatus.SUCCEEDED,
            TaskStatus.FAILED)

#: How far forward a prediction looks by default (simulated seconds).
DEFAULT_HORIZON = 30 * 24 * 3600.0


def predict_start(scenario: Scenario, job: str, *, task: str | None = None,
                  registry: Registry | None = None,
                  horizon: float = DEFAULT_HORIZON) -> dict[str, Any]:
    """The expected start of ``job`` (``namespace/name``), or of its ``task``, if
    nothing else arrives.

    Returns ``{"job", "now", "expectedStart", "waitSeconds", "unknownRunTimes",
    "text"}`` (and ``"task"`` with one); ``expectedStart`` (seconds since the epoch, as
    ``now``) and ``waitSeconds`` are None when it does not start within ``horizon``.
    """
    owner = next((j for j in scenario.jobs if j.uid == job), None)
    if owner is None:
        raise ScenarioError(f"no job {job!r}", source=scenario.source, path="jobs")
    now = scenario.now if scenario.now is not None else time.time()
    if owner.queue not in {queue.name for queue in scenario.queues}:
        return {"job": job, "now": now, "expectedStart": None, "waitSeconds": None,
                "unknownRunTimes": 0,
                "text": f"never, while its queue {owner.queue} does not exist"}
    own = [t for t in scenario.tasks if t.job == job]
    if task is not None and task not in {t.uid for t in own}:
        raise ScenarioError(f"no task {task!r} in job {job!r}", source=scenario.source,
                            path="tasks")
    if not own:
        # A Volcano Job's controller creates its pods once its pod group is admitted:
        # until then nothing says what they will ask, so no replay can place them.
        admitted = owner.podgroup.phase is not PodGroupPhase.PENDING
        return {"job": job, "now": now, "expectedStart": None, "waitSeconds": None,
                "unknownRunTimes": 0,
                "text": "unknown: it has no pods yet (a Volcano Job's controller creates "
                        "them once its pod group is admitted"
                        + (", as it is)" if admitted else ")")}
    pending = {t.uid for t in own if t.status is TaskStatus.PENDING}
    if (task is None and not pending) or (task is not None and task not in pending):
        # Nothing of it waits: it has started (or run) already.
        return {"job": job, **({"task": task} if task is not None else {}), "now": now,
                "expectedStart": now, "waitSeconds": 0.0, "unknownRunTimes": 0,
                "text": "already started: nothing of it waits"}
    workload, unknown = _workload_at(scenario, now, job)
    # A task starts when it does; a job partly running already starts what it waits for
    # when every task it has waiting now has started; a job that waits whole, when it
    # first starts.
    running = any(t.node_name and t.status is not TaskStatus.PENDING
                  and t.status not in _ENDED for t in own)
    waiting = {task} if task is not None else (pending if running else set())
    started: list[float] = []

    def watch(sim: Simulator) -> None:
        tasks = sim.cache.jobs[job].tasks if job in sim.cache.jobs else {}
        if not started and waiting and all(
                uid in tasks and tasks[uid].status in _STARTED for uid in waiting):
            started.append(sim.now)

    # The quotas' use follows the pods from the scenario's (which counts the running
    # pods), and the budgets keep theirs: the first session decides as ``run`` does.
    simulator = Simulator(workload, scenario.configuration, registry=registry, until=horizon,
                          observe=watch, settle_arrivals=True, snapshot_statuses=True)
    simulator.cache.now = now
    timeline = simulator.run()
    record = timeline.jobs.get(job)
    if waiting:
        start = started[0] if started else None
    else:
        start = record.first_start if record is not None else None
    wait = None if start is None else max(start - now, 0.0)
    if wait is None:
        text = f"not within {_duration(horizon)}"
        if unknown:
            text += f" ({unknown} running or waiting task(s) have no known run time: " \
                    "assumed never to end)"
    else:
        text = "now" if wait == 0 else f"in {_duration(wait)}"
        if unknown:
            text += f", assuming {unknown} task(s) with no known run time never end"
    return {"job": job, **({"task": task} if task is not None else {}), "now": now,
            "expectedStart": start, "waitSeconds": wait, "unknownRunTimes": unknown,
            "text": text}


def _workload_at(scenario: Scenario, now: float, target: str) -> tuple[Workload, int]:
    """Every job of the scenario arriving at ``now`` with its tasks as they are, and
    how many tasks (the target's aside) have no known run time."""
    cluster = scenario.to_cluster()
    jobs: list[WorkloadJob] = []
    unknown = 0
    # Jobs that hold nodes arrive first: their pods are on their nodes before a waiting
    # job is placed (they all arrive at ``now``, one after the other).
    def placed(uid: str) -> bool:
        return any(task.node_name and task.status is not TaskStatus.PENDING
                   for task in cluster.jobs[uid].tasks.values())

    # Among them, as their tasks started: a replay releases the completions of one
    # instant in that order (each was scheduled when its task started).
    def first_start(uid: str) -> float:
        starts = [task.start_time for task in cluster.jobs[uid].tasks.values()
                  if task.node_name and task.status is not TaskStatus.PENDING]
        return min((start for start in starts if start is not None), default=now)

    for uid in sorted(cluster.jobs, key=lambda u: (not placed(u), first_start(u),
                                                   cluster.jobs[u].creation_time, u)):
        job = cluster.jobs[uid]
        run_times: dict[str, float] = {}
        for task in job.tasks.values():
            if task.status in (TaskStatus.SUCCEEDED, TaskStatus.FAILED, TaskStatus.RELEASING):
                # Ended, or being deleted: the replay ends a Releasing pod on arrival.
                run_times[task.uid] = 0.0
                continue
            raw = task.annotations.get(RUN_TIME_ANNOTATION)
            seconds = (job.requested_runtime if raw is None else
                       seconds_of(raw, f"task {task.uid}: {RUN_TIME_ANNOTATION}", scenario.source))
            if seconds is None:
                seconds = math.inf
                unknown += uid != target
            run_times[task.uid] = seconds
        if run_times:
            # Created when the scenario says (0 too): job orders read it, as in ``run``.
            jobs.append(WorkloadJob(prototype=job, submit=now, run_times=run_times,
                                    restart=restart_rule(job, f"job {uid}", scenario.source),
                                    origin=f"{scenario.source}: {uid}",
                                    keeps_creation_times=True))
    # The jobs bring their tasks when they arrive. Pods of no job the session sees (of
    # another scheduler, of a missing pod group or queue) are on their nodes from the
    # start, and stay: nothing says when they end.
    nodes = {node.name: node.clone() for node in scenario.nodes}
    for task in scenario.tasks:
        node = nodes.get(task.node_name)
        if (task.job not in cluster.jobs and node is not None
                and task.status not in (TaskStatus.PENDING, TaskStatus.SUCCEEDED,
                                        TaskStatus.FAILED)):
            node.add_task(task.clone())
            unknown += 1
    workload = Workload(name=scenario.source, nodes=tuple(nodes.values()),
                        jobs=tuple(jobs), queues=tuple(cluster.queues.values()),
                        priority_classes=tuple(cluster.priority_classes.values()),
                        config_maps=scenario.config_maps,
                        hyper_nodes=scenario.hyper_nodes, dra=cluster.dra,
                        pdbs=scenario.pdbs, resource_quotas=scenario.resource_quotas,
                        node_shards=scenario.node_shards)
    return workload, unknown


def _duration(seconds: float) -> str:
    if seconds < 120:
        return f"{seconds:g}s"
    if seconds < 7200:
        return f"{seconds / 60:.1f} min"
    if seconds < 172800:
        return f"{seconds / 3600:.1f} h"
    return f"{seconds / 86400:.1f} days"
