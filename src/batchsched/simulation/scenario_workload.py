"""batchsched's own workload format: a scenario file (version 1) whose jobs arrive over time.

Every field keeps its scenario meaning (docs/scenario-format.md); three
annotations add time:

* a job's ``createdAt`` is its submit time (it arrives then; without it, at the
  file's ``now``, or at 0 when the file gives none); jobs submitted at
  the same time were created in file order (each a few ulps after the one before:
  the job orders that fall back to the creation time keep trace order, as the
  simulation contract's FCFS does, instead of the job ids');
* each task's ``batchsched.io/run-time`` annotation (seconds, or a Go duration
  such as ``"10m"``) is how long it runs once started; only the simulator
  reads it;
* a job's ``batchsched.io/requested-runtime`` annotation is the time limit the
  user asked for (read by sjf, wfp3, unicep, f1 and easy-backfill), and
  ``batchsched.io/restart`` (``gang``, the default, or ``task``) says whether
  an evicted member restarts the whole gang or only itself.

Tasks must be Pending and on no node (they arrive with their job).
"""

from __future__ import annotations

import math
from pathlib import Path

from batchsched.api.job import JobInfo
from batchsched.api.task import TaskInfo
from batchsched.api.types import GO_ZERO_TIME, TaskStatus
from batchsched.errors import WorkloadError
from batchsched.framework.arguments import parse_seconds
from batchsched.scenario.loader import Scenario, load_scenario
from batchsched.simulation.workload import (
    MOST_SECONDS,
    RESTART_GANG,
    RESTART_TASK,
    Workload,
    WorkloadJob,
    created_in_listed_order,
)

__all__ = ["RESTART_ANNOTATION", "RUN_TIME_ANNOTATION", "restart_rule", "scenario_workload",
           "seconds_of",
           "workload_from"]

RUN_TIME_ANNOTATION = "batchsched.io/run-time"
RESTART_ANNOTATION = "batchsched.io/restart"


def seconds_of(raw: str, what: str, source: str) -> float:
    """A number of seconds or a Go duration; a WorkloadError naming ``what`` otherwise."""
    try:
        return parse_seconds(raw)
    except ValueError:
        raise WorkloadError(f"{what}: {raw!r} is not a number of seconds nor a duration "
                            "(or it is negative)", source=source) from None


def restart_rule(job: JobInfo, where: str, source: str) -> str:
    """The job's ``batchsched.io/restart`` rule (``gang`` unless it says ``task``); a
    WorkloadError naming ``where`` for anything else."""
    restart = job.podgroup.annotations.get(RESTART_ANNOTATION, RESTART_GANG)
    if restart not in (RESTART_GANG, RESTART_TASK):
        raise WorkloadError(f"{where}.annotations.{RESTART_ANNOTATION}: {restart!r} is not "
                            f"{RESTART_GANG} or {RESTART_TASK}", source=source)
    return restart


def workload_from(scenario: Scenario) -> Workload:
    """The workload a loaded scenario describes (see the module docstring). A job
    of a queue the scenario does not declare is kept: :meth:`Workload.without_oversized`
    (which the commands call) lists it as skipped, at its place in the trace."""
    source = scenario.source
    if scenario.wall_clock_times:
        raise WorkloadError(f"{scenario.wall_clock_times[0]}: a time relative to now, and the "
                            "workload gives no `now`: a replay needs a fixed clock (give "
                            "`now`, or absolute times)", source=source)
    tasks_by_job: dict[str, list[TaskInfo]] = {}
    for index, task in enumerate(scenario.tasks):
        where = f"tasks[{index}] ({task.uid})"
        if task.node_name or task.status is not TaskStatus.PENDING:
            raise WorkloadError(f"{where}: a workload's tasks arrive Pending, on no node",
                                source=source)
        if RUN_TIME_ANNOTATION not in task.annotations:
            raise WorkloadError(f"{where}.annotations: {RUN_TIME_ANNOTATION} is missing "
                                "(how long the task runs: ScenarioBuilder.task(..., "
                                "run_time=SECONDS) writes it)", source=source)
        tasks_by_job.setdefault(task.job, []).append(task)
    jobs = []
    unset = scenario.now if scenario.now is not None else 0.0
    for index, job in enumerate(scenario.jobs):
        where = f"jobs[{index}] ({job.uid})"
        restart = restart_rule(job, where, source)
        prototype = job.clone()
        # A job without createdAt is submitted at the file's `now`, else at 0 (the
        # loader's Go zero time is a session's reading of "never set"; a workload's
        # clock starts at its first submission): its times are left unset, for
        # arrive() to fill in.
        if prototype.creation_time == GO_ZERO_TIME:
            prototype.creation_time = unset
        if prototype.podgroup.creation_time == GO_ZERO_TIME:
            prototype.podgroup.creation_time = unset
        run_times: dict[str, float] = {}
        for task in tasks_by_job.get(job.uid, []):
            copy = task.clone()
            if copy.creation_time == GO_ZERO_TIME:
                copy.creation_time = 0.0  # created when its job arrives (arrive())
            prototype.add_task(copy)
            what = f"task {task.uid}: {RUN_TIME_ANNOTATION}"
            seconds = run_times[task.uid] = seconds_of(task.annotations[RUN_TIME_ANNOTATION],
                                                       what, source)
            if MOST_SECONDS < seconds < math.inf:
                # Every job's, as an SWF trace's every line: not only the replayed ones.
                raise WorkloadError(f"{what}: {seconds:g} is more seconds than a replay "
                                    f"counts exactly (at most {MOST_SECONDS:.0e})",
                                    source=source)
        if not run_times:
            continue  # a pod group without pods never asks for anything
        jobs.append(WorkloadJob(prototype=prototype, submit=prototype.creation_time,
                                run_times=run_times, restart=restart, origin=f"{source}: {where}"))
    jobs.sort(key=lambda job: job.submit)  # stable: file order among equal submit times
    created_in_listed_order(jobs)
    return Workload(name=source, nodes=scenario.nodes, jobs=tuple(jobs), queues=scenario.queues,
                    priority_classes=scenario.priority_classes,
                    config_maps=scenario.config_maps,
                    hyper_nodes=scenario.hyper_nodes, node_shards=scenario.node_shards,
                    dra=scenario.dra,
                    pdbs=scenario.pdbs, resource_quotas=scenario.resource_quotas)


def scenario_workload(path: str | Path) -> tuple[Workload, Scenario]:
    """Read a workload file; also returns the scenario (for its configuration: the
    default one when the file gives none)."""
    scenario = load_scenario(path, config_required=False)
    return workload_from(scenario), scenario
