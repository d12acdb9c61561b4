"""Why a job or task is pending: the session's reasons, plugin by plugin.

:func:`explain` runs one session on a scenario with a
:class:`~batchsched.framework.recording.Recorder` and reads, for one job (or
one task and its job):

* what each plugin answered about it at the points that decide whether a job
  may start (valid, enqueueable, allocatable, ready, pipelined, overused);
* for each of its tasks: where it went, or why no node took it, summarised as
  kube-scheduler does (``0/5 nodes are unavailable: 3 Insufficient cpu, 2
  node(s) had untolerated taint(s).``) with the count of nodes per reason;
* for each placed task, the node-order scores of the chosen node and of the
  runners-up, plugin by plugin, as they stood just before the placement;
* the quota gaps: for each quota plugin (proportion, capacity), the job's queue's
  allocated plus the job's pending request against each ceiling, per resource;
* the pod group's phase before and after, its conditions and the events;
* a verdict naming what decided: the plugins that said no (with the quota
  they found short), else the node reasons, else the gang's minimum.

The JSON form (``batchsched explain ... --output json``) is a public format;
its keys are listed in docs/explain.md.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from typing import Any

from batchsched.actions.strict_allocate import pending_request
from batchsched.api.dra_usage import device_resources, new_claim_devices
from batchsched.api.job import JobInfo
from batchsched.api.resource import PODS, Resource
from batchsched.api.task import TaskInfo
from batchsched.api.types import (
    ALLOCATED_STATUSES,
    COMPLETED_STATUSES,
    PodGroupPhase,
    TaskStatus,
)
from batchsched.errors import ScenarioError
from batchsched.framework.recording import NodeScore, Placement, QueueQuota, Recorder
from batchsched.framework.registry import Registry
from batchsched.framework.session import Session
from batchsched.framework.statement import BIND_FAILURE_PREFIX
from batchsched.kube.quantity import canonical_quantity
from batchsched.scenario.kubectl import GROUP_NAME, missing_pod_group
from batchsched.scenario.loader import Scenario
from batchsched.scenario.runner import ScenarioCache
from batchsched.scheduler import run_actions

__all__ = ["explain", "render"]

_NEGATIVE = ("no", "reject")
_CONSEQUENCES = ("job_ready", "job_pipelined")
#: Points an action asks about a job it takes on (allocate's, preempt's).
_TURN_POINTS = ("allocatable", "job_ready", "job_pipelined", "job_starving")
#: Points whose answer says something about the job, not a refusal: "overused: no" is
#: a queue with room, "job_starving" steers preemption.
_NOT_REFUSALS = {"overused": ("no",), "job_starving": ("yes", "no")}
#: Points where "yes" is the refusal (a queue over its share takes nothing more).
_REFUSING_YES = ("overused",)


def _refuses(point: str, answer: str) -> bool:
    if answer in _NOT_REFUSALS.get(point, ()):
        return False
    if point in _REFUSING_YES:
        return answer == "yes"
    return answer in _NEGATIVE or answer.startswith(("invalid", "refused"))


def explain(scenario: Scenario, *, job: str | None = None, task: str | None = None,
            registry: Registry | None = None) -> dict[str, Any]:
    """The explanation of ``job`` (``namespace/name``) or of ``task``, after one session."""
    if (job is None) == (task is None):
        raise ScenarioError("explain one job or one task", source=scenario.source)
    if task is not None:
        pod = next((t for t in scenario.tasks if t.uid == task), None)
        if pod is None:
            why = scenario.left_out_pods.get(task)
            if why is not None:
                raise ScenarioError(f"task {task!r} is in no session: {why}",
                                    source=scenario.source, path="tasks")
            raise ScenarioError(f"no task {task!r}", source=scenario.source, path="tasks")
        if not pod.job:
            group = pod.annotations.get(GROUP_NAME)
            why = (f"its PodGroup {pod.namespace}/{group} does not exist (Volcano's snapshot "
                   "leaves such a job out)" if group else
                   "a pod no pod group holds (another scheduler's)")
            raise ScenarioError(f"task {task!r} is in no job: {why}, which no session "
                                "schedules; it only holds its node", source=scenario.source,
                                path="tasks")
        job = pod.job
    assert job is not None
    if job not in {j.uid for j in scenario.jobs}:
        why = missing_pod_group(job)
        pods = sorted(uid for uid, reason in scenario.left_out_pods.items() if reason == why)
        if pods:
            raise ScenarioError(f"no job {job!r}: no PodGroup {job} in the cluster, and "
                                "Volcano leaves the pods that wait for it unscheduled "
                                f"({', '.join(pods)})",
                                source=scenario.source, path="jobs")
        raise ScenarioError(f"no job {job!r}", source=scenario.source, path="jobs")
    watched = [t.uid for t in scenario.tasks if t.job == job]
    recorder = _AdmissionRecorder(job, watch=watched)
    # The cache run_scenario uses: the scenario's faults (bind failures) happen here too.
    cache = ScenarioCache(scenario.to_cluster(), scenario.bind_failures)
    ssn = Session.open(cache, scenario.configuration, registry=registry, recorder=recorder)
    target = ssn.jobs.get(job)
    phase_before = target.podgroup.phase.value if target is not None else None
    # What this session had to place: a job that had nothing (running or done before
    # it) was not placed by it.
    pending_at_open = target is not None and bool(target.tasks_in(TaskStatus.PENDING))
    recorder.session = ssn
    run_actions(ssn)
    # Quota plugins forget their figures at close: read them first. A job left Pending
    # was weighed when enqueue voted on it: the queue's figures then, not after the
    # jobs admitted or placed later in the session.
    quota = []
    if target is not None:
        quota = recorder.at_admission if (
            recorder.at_admission is not None
            and target.podgroup.phase is PodGroupPhase.PENDING) else quota_gaps(ssn, target)
    ssn.close()
    if target is None:
        return _left_out(scenario, job, task)
    report = _job_report(ssn, recorder, target, phase_before, quota,
                         pending_at_open=pending_at_open)
    queue = ssn.queues.get(target.queue)
    # A pod group with no pods yet counts only if it waits for admission (an admitted
    # one waits for its controller, whatever the queue's state now).
    if queue is not None and not queue.is_open and report["verdict"] != "placed" \
            and (pending_at_open or (not target.tasks
                                     and phase_before == PodGroupPhase.PENDING.value)):
        # The plugins that refuse say no, not why: a queue that is not Open admits and
        # places nothing.
        report["verdict"] = f"queue {queue.name} is {queue.state.value}: {report['verdict']}"
        report["decidedBy"] = ["queue", *report["decidedBy"]]
    if task is not None:
        report["tasks"] = [entry for entry in report["tasks"] if entry["task"] == task]
        report["plugins"] = [entry for entry in report["plugins"]
                             if entry["subject"] in (job, task, report["queue"])]
        report["task"] = task
        report["jobVerdict"] = report["verdict"]
        report["verdict"] = _task_verdict(report["tasks"][0]) if report["tasks"] else \
            "not in the session"
        entry = report["tasks"][0] if report["tasks"] else None
        if entry is not None and (entry["status"] in _DONE or ("node" in entry
                                  and entry["status"] not in _HELD_NOT_STARTED)):
            # Placed (or done): nothing decided against the task itself; its job's
            # refusals are in jobVerdict.
            report["decidedBy"] = []
        elif entry is not None and entry["status"] == str(TaskStatus.PIPELINED):
            report["decidedBy"] = ["pipelined"]  # it waits for room being freed
    return report


#: A task's statuses (as reports write them) that ended it: nothing to place.
_DONE = frozenset(str(status) for status in COMPLETED_STATUSES)
#: Statuses of a task on a node that the session has not started yet.
_HELD_NOT_STARTED = frozenset({str(TaskStatus.PIPELINED), str(TaskStatus.ALLOCATED)})


class _AdmissionRecorder(Recorder):
    """A Recorder that also reads the explained job's quota lines when enqueue asks
    whether it may be admitted (before any plugin answers)."""

    def __init__(self, job: str, *, watch: Iterable[str]) -> None:
        super().__init__(watch=watch)
        self.job = job
        self.session: Session | None = None
        self.at_admission: list[dict[str, Any]] | None = None

    def wrap(self, point: str, plugin: str, fn: Callable[..., Any]) -> Callable[..., Any]:
        recorded = super().wrap(point, plugin, fn)
        if point != "job_enqueueable":
            return recorded

        def weighed(*args: Any) -> Any:
            job = args[0] if args else None
            if isinstance(job, JobInfo) and job.uid == self.job and self.session is not None:
                self.at_admission = quota_gaps(self.session, job)
            return recorded(*args)

        return weighed


def _left_out(scenario: Scenario, job: str, task: str | None) -> dict[str, Any]:
    """The report on a job the session left out: its queue does not exist."""
    owner = next(j for j in scenario.jobs if j.uid == job)
    verdict = f"the job is not in the session: its queue {owner.queue} does not exist"
    report: dict[str, Any] = {
        "job": job, "queue": owner.queue, "minMember": owner.min_available,
        "phase": {"before": owner.podgroup.phase.value, "after": owner.podgroup.phase.value},
        "verdict": verdict, "decidedBy": ["queue"], "plugins": [], "notes": [],
        "tasks": [{"task": t.uid, "status": str(t.status), **({"node": t.node_name}
                                                            if t.node_name else {})}
                  for t in sorted(scenario.tasks, key=lambda t: t.uid)
                  if t.job == job and (task is None or t.uid == task)],
        "quota": [], "conditions": [], "events": [],
    }
    if task is not None:
        report["task"] = task
        report["jobVerdict"] = verdict
    return report


def _task_verdict(entry: dict[str, Any]) -> str:
    """One task's outcome: where it went, or why it is pending."""
    status = entry["status"]
    if "node" in entry:
        if status == str(TaskStatus.PIPELINED):
            freed = (f" ({', '.join(entry['victims'])} evicted there in this session)"
                     if entry.get("victims") else "")
            return f"pipelined on {entry['node']}: it waits for room being freed there{freed}"
        if status == str(TaskStatus.ALLOCATED):
            return (f"held on {entry['node']} by its gang's pipelined statement: not bound "
                    "until the gang can start")
        if status == str(TaskStatus.RELEASING):
            why = (f"evicted in this session ({entry['evicted']})" if "evicted" in entry
                   else "evicted or being deleted")
            return f"leaving {entry['node']} (Releasing): {why}, its room is being freed"
        if status in (str(TaskStatus.SUCCEEDED), str(TaskStatus.FAILED)):
            return f"finished on {entry['node']} ({status})"
        if status == str(TaskStatus.UNKNOWN):
            return f"on {entry['node']} ({status}): its state is unknown"
        return f"placed on {entry['node']} ({status})"
    if status == str(TaskStatus.PENDING):
        return f"pending: {entry.get('reason', 'not tried in this session')}"
    if status in _DONE:
        return f"finished ({status})"  # on no node (a pod whose node is gone)
    return str(status)


def quota_gaps(ssn: Session, job: JobInfo) -> list[dict[str, Any]]:
    """For every plugin offering ``queue_quota``: the job's queue's allocated plus the
    job's pending request against each ceiling, and what is short, per resource
    (the dimensions the request asks for, as Volcano's quota checks compare)."""
    # A job not admitted yet is weighed by its minResources (enqueue's check); an
    # admitted one by what its pending tasks ask (allocate's).
    minimum = job.podgroup.min_resources
    admitted = job.podgroup.phase is not PodGroupPhase.PENDING
    request = _with_claimed_devices(
        ssn, job, pending_request(job) if admitted or minimum is None else minimum.clone())
    # Admission and allocation compare with Volcano's LessEqualWithDimension, which
    # ignores the pods count every request carries.
    asked = [name for name in request.resource_names() if name != PODS]
    out = []
    for name, plugin in ssn.plugins.items():
        for queue, quota in _quota_chain(plugin, job.queue):
            # Admission weighs what the queue has taken its own way (Volcano's enqueue
            # checks: allocated + inqueue - elastic); placements, what it holds.
            taken = quota.allocated if admitted or quota.admitted is None \
                else quota.admitted
            future = taken.clone().add(request)
            gates = quota.allocation if admitted else quota.admission
            out.extend(_gaps(name, queue, quota, taken=taken, future=future, gates=gates,
                             request=request, asked=asked))
    return out


def _waiting_for_gates(gates: Iterable[str]) -> str:
    return (f"waiting for scheduling gates: [{' '.join(gates)}] (no action places a gated "
            "pod; the controller that set them lifts them)")


def _quota_chain(plugin: Any, queue: str) -> list[tuple[str, QueueQuota]]:
    """The (queue, quota) pairs a quota plugin checks for a job of ``queue``."""
    chain = getattr(plugin, "queue_quota_chain", None)
    if chain is not None:
        pairs: list[tuple[str, QueueQuota]] = chain(queue)
        return pairs
    read = getattr(plugin, "queue_quota", None)
    quota: QueueQuota | None = read(queue) if read is not None else None
    return [] if quota is None else [(queue, quota)]


#: A ceiling at or above this bounds nothing (an unset capability is set to the largest
#: float, the pods count to the largest integer): not shown.
_UNBOUNDED = 1e18


def _gaps(plugin: str, queue: str, quota: QueueQuota, *, taken: Resource, future: Resource,
          gates: frozenset[str] | None, request: Resource,
          asked: Iterable[str]) -> list[dict[str, Any]]:
    """One quota's lines: per ceiling, what is short on the dimensions asked."""
    out = []
    for ceiling, unbounded in quota.ceilings.items():
        limit = Resource()
        for dimension, amount in unbounded.to_dict().items():
            if amount < _UNBOUNDED:
                limit.set(dimension, amount)
        if all(amount >= _UNBOUNDED for amount in unbounded.to_dict().values()):
            continue  # an unset (or unbounded) ceiling limits nothing; one of 0 does
        # The quota plugins' own test (Volcano's LessEqualWithDimension): a dimension
        # the request asks and the ceiling does not name is a ceiling of 0.
        short = Resource()
        _, over = future.less_equal_with_dimension(unbounded, request)
        for dimension in over:
            # A device class the ceiling gives no positive count limits nothing
            # (capacity's checkDRAAllocatable; proportion counts no device at all).
            if dimension in asked and not (_is_device(dimension)
                                           and not unbounded.get(dimension) > 0):
                short.set(dimension, future.get(dimension) - unbounded.get(dimension))
        shown_limit = quantities(limit)
        for dimension in short.to_dict():
            # A ceiling of 0 is a limit too: the line says what the shortfall is against.
            shown_limit.setdefault(dimension, "0")
        out.append({
            "plugin": plugin, "queue": queue, "ceiling": ceiling,
            "allocated": quantities(taken), "request": quantities(request),
            # The shortfall rounded up: a fraction of a pod short is short.
            "limit": shown_limit, "short": quantities(short, rounding=math.ceil),
            # Whether the plugin refuses by this ceiling at the job's stage (admission
            # for a job not admitted, placements for one admitted).
            "gates": gates is None or ceiling in gates,
            **({"boundBy": quota.bounds[ceiling][0]}
               if ceiling in quota.bounds and quota.bounds[ceiling][1] & set(short.to_dict())
               else {}),
        })
    return out


def _is_device(dimension: str) -> bool:
    """A device class's count or capacity (``deviceclass/<class>``,
    ``<capacity>.deviceclass/<class>``), as ``device_resources`` names them."""
    return dimension.startswith("deviceclass/") or ".deviceclass/" in dimension


def _with_claimed_devices(ssn: Session, job: JobInfo, request: Resource) -> Resource:
    """``request`` plus the devices the pending tasks' claims ask for
    (``deviceclass/<class>``), each claim once and none the queue's placed tasks
    already hold, as the capacity plugin counts them."""
    if not ssn.dra:
        return request
    claims = ssn.dra.resource_claims
    held: set[str] = set()
    new_claim_devices((task for other in ssn.jobs.values() if other.queue == job.queue
                       for status, tasks in other.task_status_index.items()
                       if status in ALLOCATED_STATUSES for task in tasks.values()),
                      claims, held)
    total = request.clone()
    asked = new_claim_devices(job.tasks_in(TaskStatus.PENDING).values(), claims, held)
    for device_class, amount in asked.items():
        for name, value in device_resources(device_class, amount).items():
            total.set(name, total.get(name) + value)
    return total


_MEMORY_UNITS = (("Ti", 2**40), ("Gi", 2**30), ("Mi", 2**20), ("T", 10**12),
                 ("G", 10**9), ("M", 10**6), ("Ki", 2**10), ("k", 10**3))


def quantities(resource: Resource,
               rounding: Callable[[float], int] = round) -> dict[str, str]:
    """Kubernetes quantities, memory in the largest unit that divides it exactly. Where
    Volcano's resource lists would cut a fraction to a whole number (a deserved share of
    0.67 pods), it is written in thousandths (``670m``), and memory in whole bytes,
    ``rounding`` (to the nearest by default)."""
    out = resource.to_quantities()
    for name, amount in resource.to_dict().items():
        if amount == int(amount) or math.isinf(amount):
            continue
        if name == "memory":
            out[name] = canonical_quantity(rounding(amount), binary=True)
        elif name == "pods":
            out[name] = canonical_quantity(rounding(amount * 1000), -3)
        else:  # kept in thousandths already
            out[name] = canonical_quantity(rounding(amount), -3)
    # Bytes (ephemeral storage is kept in milli-bytes, as Volcano keeps scalars).
    for name, amount in (("memory", float(rounding(resource.memory))),
                         ("ephemeral-storage", resource.get("ephemeral-storage") / 1000)):
        if amount and amount == int(amount):
            for suffix, size in _MEMORY_UNITS:
                if amount % size == 0:
                    out[name] = f"{int(amount) // size}{suffix}"
                    break
    return out


def _score(score: NodeScore) -> dict[str, Any]:
    return {"node": score.node, "total": score.total, "plugins": dict(score.by_plugin)}


def _placement(placement: Placement) -> dict[str, Any]:
    return {
        "kind": placement.kind, "feasibleNodes": placement.feasible,
        "chosen": _score(placement.chosen) if placement.chosen is not None else None,
        "runnersUp": [_score(s) for s in placement.runners_up],
    }


_NOT_TRIED = "not tried in this session"


def _job_report(ssn: Session, recorder: Recorder, job: JobInfo,
                phase_before: str | None, quota: list[dict[str, Any]], *,
                pending_at_open: bool = True) -> dict[str, Any]:
    plugins = [
        {"point": a.point, "plugin": a.plugin, "subject": a.subject, "answer": a.answer,
         **({"about": a.about} if a.about else {})}
        # A pod may bear its job's name: each subject once.
        for subject in dict.fromkeys((job.uid, *sorted(job.tasks), job.queue))
        for a in recorder.about(subject)
    ]
    # The host refused these binds (a fault, a node gone): the task is pending again.
    bind_failures = {e.object: e.message for e in ssn.events if e.reason == "FailedScheduling"
                     and e.message.startswith(BIND_FAILURE_PREFIX) and e.object in job.tasks}
    # Tasks of a pod group left Pending wait for its admission first (enqueue's votes
    # are about the job, not its tasks).
    not_admitted = ""
    if job.podgroup.phase is PodGroupPhase.PENDING:
        votes = [f"{a.plugin} said {a.answer} at {a.point}"
                 for a in recorder.last_answers(job.uid) if _refuses(a.point, a.answer)]
        not_admitted = "its pod group is not admitted" + (
            f": {'; '.join(votes)}" if votes else "")
    # The pods this session evicted (a victim's Warning Evict event), and by node: an
    # evicted pod says so, and a pod pipelined on a node names who leaves it.
    evicted = {e.object: e.message for e in ssn.events
               if e.reason == "Evict" and e.type == "Warning"}
    evicted_on: dict[str, list[str]] = {}
    if evicted:
        for other in ssn.jobs.values():
            for victim in evicted.keys() & other.tasks.keys():
                node = other.tasks[victim].node_name
                if node:
                    evicted_on.setdefault(node, []).append(victim)
    tasks = []
    for uid, task in sorted(job.tasks.items()):
        entry: dict[str, Any] = {"task": uid, "status": str(task.status)}
        if task.node_name:
            entry["node"] = task.node_name
        if uid in evicted:
            entry["evicted"] = evicted[uid]
        elif task.status is TaskStatus.PIPELINED and task.node_name in evicted_on:
            entry["victims"] = sorted(evicted_on[task.node_name])
        placements = recorder.placements.get(uid)
        if placements and task.node_name:
            entry["placement"] = _placement(placements[-1])
        errors = job.nodes_fit_errors.get(uid)
        # A placement a statement made and undid says why first (Volcano's
        # TaskSchedulingReason reads the last transaction before the fit errors).
        undone = _undone_placement(task) if task.status is TaskStatus.PENDING else ""
        if undone:
            entry["reason"] = undone
        elif errors is not None:
            entry["reason"] = str(errors)
            histogram: dict[str, int] = {}
            details: dict[str, int] = {}
            for err in errors.nodes.values():
                for status in err.statuses:
                    histogram[status.reason] = histogram.get(status.reason, 0) + 1
                    if status.detail:
                        details[status.explained] = details.get(status.explained, 0) + 1
            entry["nodes"] = dict(sorted(histogram.items()))
            if getattr(errors, "hyper_node", ""):  # its hard network topology confined it
                entry["hyperNode"] = errors.hyper_node
            if details:  # what plugins add to reasons Volcano words generically
                entry["details"] = dict(sorted(details.items()))
        elif task.status is TaskStatus.PENDING and task.scheduling_gated:
            entry["reason"] = _waiting_for_gates(task.scheduling_gates)
        elif task.status is TaskStatus.PENDING:
            refusals = [f"{a.plugin} said {a.answer} at {a.point}"
                        for a in recorder.last_answers(uid) if _refuses(a.point, a.answer)]
            skipped = recorder.notes.get(uid, [])  # an action passed the task over, and why
            entry["reason"] = (bind_failures.get(uid) or "; ".join(refusals)
                               or "; ".join(dict.fromkeys(f"{action}: {text}"
                                                          for action, text in skipped))
                               or job.job_fit_errors or not_admitted or _NOT_TRIED)
            if skipped and not refusals and uid not in bind_failures:
                entry["skippedBy"] = sorted({action for action, _ in skipped})
        tasks.append(entry)
    # What decides is each plugin's last answer (a later round may have said yes); of
    # the answers about the queue, those given by the job's last turn (a queue full
    # after the job was placed, or was tried, held nothing of this job back).
    subjects = (job.uid, *sorted(job.tasks))
    final = [a for subject in subjects for a in recorder.last_answers(subject)]
    # The job's turn: its answers where an action took it on. A valid, admitted job
    # that had none was passed over (its queue overused): every answer about the queue
    # counts; an invalid or unadmitted one never reached a queue's turn.
    last_turn = recorder.last_given(subjects, points=_TURN_POINTS)
    if last_turn is not None:
        until: float = last_turn
    elif job.podgroup.phase is not PodGroupPhase.PENDING and not any(
            a.point == "job_valid" and _refuses(a.point, a.answer) for a in final):
        until = math.inf
    else:
        until = -1
    final += recorder.last_answers(job.queue, until=until)
    # A placement refused at an allocate event and later made elsewhere (preempt's
    # next node, a dry run's replay) explains nothing about the outcome.
    placed = {uid for uid, task in job.tasks.items() if task.node_name}
    refused = [a for a in final if _refuses(a.point, a.answer)
               and not (a.point == "allocate event" and a.subject in placed)]
    unplaced = [t for t in tasks if t["status"] == str(TaskStatus.PENDING)]
    # "Not ready" follows from a task refused elsewhere (by a plugin, or by every
    # node): a cause only when nothing else is.
    causes = [a for a in refused if a.point not in _CONSEQUENCES]
    if not causes and not any("nodes" in t for t in unplaced):
        causes = refused
    said_no = sorted({a.plugin for a in causes})
    waiting = job.tasks_in(TaskStatus.PIPELINED)
    # Something must have started: a job of minMember 0 whose pods were all evicted
    # has nothing placed.
    started = (job.ready_task_num() >= max(job.min_available, 1) and not unplaced
               and not waiting)
    gated = [job.tasks[t["task"]] for t in unplaced if job.tasks[t["task"]].scheduling_gated]
    decided_by: list[str]
    if started and not pending_at_open:
        # Running (or done) before this session, with nothing pending: not its doing.
        verdict = "nothing to place: no task is pending (" + ", ".join(
            f"{len(index)} {status}" for status, index in sorted(job.task_status_index.items())
            if index) + ")"
        decided_by = []
    elif started:
        verdict, decided_by = "placed", []
    elif waiting and job.ready_task_num() + len(waiting) >= job.min_available:
        # Volcano's pipelined job: its gang holds room that is being freed.
        nodes = sorted({t.node_name for t in waiting.values()})
        verdict = (f"pipelined: {len(waiting)} task(s) wait on {', '.join(nodes)} for room "
                   "being freed (pods evicted or being deleted); it starts once it is free")
        decided_by = ["pipelined"]
        if unplaced:
            # Tasks beyond the pipelined ones do not start when that room is free.
            verdict += (f"; {len(unplaced)} other task(s) are not placed: "
                        + "; ".join(sorted({t["reason"] for t in unplaced})))
    elif any(t["task"] in bind_failures for t in unplaced):
        verdict = "bind failed: " + "; ".join(
            bind_failures[t["task"]] for t in unplaced if t["task"] in bind_failures)
        decided_by = ["bind"]
    elif not job.tasks and all(a.plugin == "gang" and a.point == "job_valid"
                               for a in causes):
        # Volcano's job controller makes the pods once the group leaves Pending (gang
        # finds a group without pods invalid: that is no cause of its own).
        verdict = "nothing to place: the pod group has no pods (yet)"
        decided_by = []
    elif not unplaced and not waiting and job.tasks:
        left = {str(status): len(index) for status, index in sorted(job.task_status_index.items())
                if index and status not in ALLOCATED_STATUSES}
        verdict = ("nothing to place: no task is pending ("
                   + ", ".join(f"{count} {status}" for status, count in left.items()) + ")")
        decided_by = []
    elif (unplaced and not waiting and recorder.notes.get(job.uid)
          and all(t.get("reason") == _NOT_TRIED for t in unplaced)
          and not any(a.point not in _CONSEQUENCES for a in refused)):
        # An action said why it tried none of them (allocate: no hypernode of the
        # job's hard network topology has room): gang's "not ready" follows from it.
        said = recorder.notes[job.uid]
        verdict = "not placed: " + "; ".join(dict.fromkeys(f"{p}: {t}" for p, t in said))
        decided_by = sorted({p for p, _ in said})
    elif unplaced and not waiting and all("skippedBy" in t for t in unplaced) \
            and not any(a.point not in _CONSEQUENCES for a in refused):
        # The actions that could place them passed them over (a pod that never
        # preempts): gang's "not ready" follows from it.
        verdict = "not placed: " + "; ".join(sorted({t["reason"] for t in unplaced}))
        decided_by = sorted({action for t in unplaced for action in t["skippedBy"]})
    elif said_no:
        verdict = f"held back by {', '.join(said_no)}"
        shortages = [f"queue {q['queue']}'s {q['ceiling']} ({q['plugin']}"
                     + (f": {q['boundBy']}" if "boundBy" in q else "") + ") is short by "
                     + ", ".join(f"{k} {v}" for k, v in q["short"].items())
                     for q in quota if q["short"] and q["gates"] and q["plugin"] in said_no]
        if shortages:
            verdict += ": " + "; ".join(shortages)
        decided_by = said_no
    elif any("nodes" in t for t in unplaced):
        counts: dict[str, int] = {}
        for t in unplaced:
            for reason, count in t.get("nodes", {}).items():
                counts[reason] = counts.get(reason, 0) + count
        # The reason most nodes give first: it is the one to act on.
        reasons = sorted(counts, key=lambda reason: (-counts[reason], reason))
        scopes = sorted({t["hyperNode"] for t in unplaced if "hyperNode" in t})
        if scopes:
            # Only the nodes of the hypernodes its hard network topology allows were
            # asked: the tier is the constraint, not the cluster.
            verdict = (f"no node fits within hypernode(s) {', '.join(scopes)} (its network "
                       "topology keeps it there): " + "; ".join(reasons))
        else:
            verdict = "no node fits: " + "; ".join(reasons)
        decided_by = ["predicates"]
    elif waiting:
        # Pipelined in part (reclaim or preempt made room for some tasks): short of the
        # gang's minimum, what is not pipelined says why.
        nodes = sorted({t.node_name for t in waiting.values()})
        verdict = (f"gang: {job.ready_task_num()} of minMember {job.min_available} placed, "
                   f"{len(waiting)} pipelined on {', '.join(nodes)} (room being freed)")
        if unplaced:
            verdict += (f"; {len(unplaced)} not placed: "
                        + "; ".join(sorted({t.get("reason", _NOT_TRIED) for t in unplaced})))
        decided_by = ["gang"]
    elif gated and len(gated) == len(unplaced):
        verdict = _waiting_for_gates(
            sorted({gate for task in gated for gate in task.scheduling_gates}))
        decided_by = ["schedulingGates"]
    elif job.ready_task_num() >= job.min_available:
        # No gang holds these back: no action tried them.
        best_effort = [t for t in unplaced if job.tasks[t["task"]].resreq.is_empty()]
        if best_effort and "backfill" not in ssn.configuration.actions:
            verdict = ("not tried: tasks asking for nothing (best-effort) are backfill's to "
                       "place, and the configuration runs no backfill")
        else:
            verdict = "not tried: no action of the configuration took these tasks on"
        decided_by = ["actions"]
    elif unplaced and all(t.get("reason") == _NOT_TRIED for t in unplaced):
        # Nothing refused them and no node was asked: no action took them on (a
        # configuration of enqueue alone), whatever the gang would need.
        verdict = "not tried: no action of the configuration took these tasks on"
        decided_by = ["actions"]
    else:
        verdict = (f"gang: {job.ready_task_num()} of minMember {job.min_available} placed")
        decided_by = ["gang"]
    more = len(unplaced) + len(waiting)
    if more and job.ready_task_num() >= job.min_available and not verdict.startswith(
            "nothing"):
        # The gang runs (or needs none); what follows is about the tasks beyond it.
        ready = job.ready_task_num()
        if ready:
            verdict = (f"started ({ready} task(s) placed, minMember "
                       f"{job.min_available}); {more} more wait: {verdict}")
        else:
            verdict = (f"no gang to wait for (minMember 0), none placed; "
                       f"{more} wait: {verdict}")
    return {
        "job": job.uid, "queue": job.queue, "minMember": job.min_available,
        "phase": {"before": phase_before, "after": job.podgroup.phase.value},
        "verdict": verdict, "decidedBy": decided_by,
        "plugins": plugins,
        "notes": [{"plugin": p, "text": text}
                  for subject in dict.fromkeys((job.uid, *job.tasks))
                  for p, text in recorder.notes.get(subject, [])],
        "tasks": tasks,
        "quota": quota,
        "conditions": [{"type": c.type.value, "status": c.status, "reason": c.reason,
                        "message": c.message} for c in job.podgroup.conditions],
        "events": [e.to_dict() for e in ssn.events
                   if e.object == job.uid or e.object in job.tasks],
    }


def _undone_placement(task: TaskInfo) -> str:
    """Why a task a statement placed and then undid is pending ('' when it was not)."""
    context = task.last_transaction
    if context is None or not context.node_name:
        return ""
    if context.status is TaskStatus.PIPELINED:
        return (f"could go to {context.node_name}, once room is freed there and the gang's "
                "minimum is satisfied: the placement was undone")
    if context.status not in ALLOCATED_STATUSES:
        return ""
    return (f"could go to {context.node_name}, once the gang's minimum is satisfied: the "
            "placement was undone")


def render(report: dict[str, Any]) -> str:
    """The report as a readable tree."""
    if "task" in report:
        lines = [f"task {report['task']}: {report['verdict']}",
                 f"job {report['job']}: {report['jobVerdict']}"]
    else:
        lines = [f"job {report['job']}: {report['verdict']}"]
    if "phase" in report:
        lines.append(f"  queue {report['queue']}, minMember {report['minMember']}, pod group "
                     f"{report['phase']['before']} -> {report['phase']['after']}")
    if report.get("plugins"):
        lines.append("  plugins:")
        for p in report["plugins"]:
            what = "node" if p["point"] == "allocate event" else "queue"
            about = f" ({what} {p['about']})" if p.get("about") else ""
            lines.append(f"    {p['point']:16} {p['plugin']:14} {p['subject']}: "
                         f"{p['answer']}{about}")
    for note in report.get("notes", []):
        lines.append(f"  {note['plugin']}: {note['text']}")
    if report.get("tasks"):
        lines.append("  tasks:")
        for t in report["tasks"]:
            where = f" on {t['node']}" if "node" in t else ""
            lines.append(f"    {t['task']}: {t['status']}{where}")
            if "reason" in t:
                lines.append(f"      {t['reason']}")
            for reason, count in t.get("details", {}).items():
                lines.append(f"      {count} node(s): {reason}")
            placement = t.get("placement")
            if placement and placement["chosen"] is not None:
                lines.extend(_render_placement(placement))
    for q in report.get("quota", []):
        short = ", ".join(f"{k} {v}" for k, v in q["short"].items())
        used = ", ".join(f"{k} {v}" for k, v in q["allocated"].items()) or "nothing"
        asked = ", ".join(f"{k} {v}" for k, v in q["request"].items()) or "nothing"
        limit = ", ".join(f"{k} {v}" for k, v in q["limit"].items())
        # A ceiling the plugin does not refuse by at the job's stage (capacity's
        # deserved, which reclaim protects) is shown, and said to be no limit here.
        aside = "" if q.get("gates", True) else f" ({q['plugin']} does not refuse by it here)"
        lines.append(f"  quota {q['plugin']} {q['queue']} {q['ceiling']} {limit}: allocated "
                     f"{used} + request {asked}" + (f", short by {short}" if short else ", fits")
                     + aside)
    for c in report.get("conditions", []):
        message = f": {c['message']}" if c["message"] else ""
        lines.append(f"  condition {c['type']}={c['status']}{message}")
    for e in report.get("events", []):
        # What a plugin said on the job (a quota refusal's figures, say); the pods'
        # FailedScheduling and gang's summary say what the tasks and condition say.
        if e["reason"] == "FailedScheduling" or "tasks in gang unschedulable" in e["message"]:
            continue
        lines.append(f"  event {e['type']} {e['reason']}: {e['message']}")
    prediction = report.get("startPrediction")
    if prediction is not None:
        lines.append(f"  start: {prediction['text']}")
    if "counterfactuals" in report:
        changes = report["counterfactuals"]
        # A task's report speaks of that task: its own verdict, not its job's.
        outcome = report["verdict"]
        placed = outcome.startswith("placed on") if "task" in report else outcome == "placed"
        if changes:
            lines.append("  it would start now with:")
            lines.extend(f"    {change['text']}" for change in changes)
        elif placed:
            lines.append("  it starts in this session: nothing to change")
        elif outcome.startswith(("leaving", "finished", "on ",
                                  "nothing to place: no task is pending")):
            lines.append("  it does not wait to start: nothing to change")
        elif outcome.startswith("pipelined"):
            lines.append("  it starts once the room it waits for is free: nothing to change")
        elif outcome.startswith("nothing to place: the pod group has no pods"):
            # No change applies to pods that do not exist: it was or is now admitted.
            lines.append("  admitted: it waits for its controller to create its pods, "
                         "nothing to change")
        elif "not tried:" in outcome:
            lines.append("  no change of the cluster or the quotas applies: no action of "
                         "the configuration places what waits")
        else:
            lines.append("  no change tried lets it start now")
    return "\n".join(lines)


def _render_placement(placement: dict[str, Any]) -> list[str]:
    def parts(score: dict[str, Any]) -> str:
        # A plugin that could not score the node (null) made Volcano drop the node's
        # other scores: say so, or the parts would not add up to the total.
        shown = ", ".join(f"{plugin} {value:g}" if value is not None
                          else f"{plugin} could not score it: 0 in all"
                          for plugin, value in score["plugins"].items())
        return f"{score['total']:g}" + (f" ({shown})" if shown else "")

    chosen = placement["chosen"]
    # An action of one's own may not take the best-scored node (first fit, say).
    best = all(s["total"] <= chosen["total"] for s in placement["runnersUp"])
    lines = [f"      scored {parts(chosen)}, "
             + ("best" if best else "chosen by the action") + " of "
             f"{placement['feasibleNodes']} feasible node(s)"]
    lines.extend(f"      runner-up {s['node']}: {parts(s)}" for s in placement["runnersUp"])
    return lines
