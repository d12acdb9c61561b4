"""Why a job or task is pending: the session's reasons, plugin by plugin.

:func:`explain` runs one session on a scenario with a
:class:`~batchsched.framework.recording.Recorder` and reads, for one job (or
one task and its job):

* what each plugin answered about it at the points that decide whether a job
  may start (valid, enqueueable, allocatable, ready, pipelined, overused);
* for each of its tasks: where it went, or why no node took it, summarised as
  kube-scheduler does (``0/5 nodes are unavailable: 3 Insufficient cpu, 2
  node(s) had untolerated taint {dedicated: infra}.``) with the count of nodes
  per reason;
* the pod group's phase before and after, its conditions and the events;
* a verdict naming what decided: the plugins that said no, else the node
  reasons, else the gang's minimum.

The JSON form (``batchsched explain ... --output json``) is a public format;
its keys are listed in docs/explain.md.
"""

from __future__ import annotations

from typing import Any

import attrs

from batchsched.api.job import JobInfo
from batchsched.api.node import NodeInfo
from batchsched.api.resource import PODS, Resource
from batchsched.api.types import TaskStatus
from batchsched.errors import ScenarioError
from batchsched.framework.recording import Recorder
from batchsched.framework.registry import Registry
from batchsched.framework.session import Session
from batchsched.scenario.loader import Scenario
from batchsched.scheduler import run_actions

__all__ = ["counterfactuals", "explain", "render"]

_NEGATIVE = ("no", "reject")


def explain(scenario: Scenario, *, job: str | None = None, task: str | None = None,
            registry: Registry | None = None) -> dict[str, Any]:
    """The explanation of ``job`` (``namespace/name``) or of ``task``, after one session."""
    if (job is None) == (task is None):
        raise ScenarioError("explain one job or one task", source=scenario.source)
    if task is not None:
        owner = next((t.job for t in scenario.tasks if t.uid == task), None)
        if owner is None:
            raise ScenarioError(f"no task {task!r}", source=scenario.source, path="tasks")
        job = owner
    assert job is not None
    if job not in {j.uid for j in scenario.jobs}:
        raise ScenarioError(f"no job {job!r}", source=scenario.source, path="jobs")
    recorder = Recorder()
    ssn = Session.open(scenario.to_cluster(), scenario.configuration, registry=registry,
                       recorder=recorder)
    target = ssn.jobs.get(job)
    phase_before = target.podgroup.phase.value if target is not None else None
    run_actions(ssn)
    ssn.close()
    if target is None:
        return {"job": job, "verdict": "the job is not in the session: its queue does not "
                "exist", "decidedBy": ["queue"], "tasks": [], "plugins": []}
    report = _job_report(ssn, recorder, target, phase_before)
    if task is not None:
        report["tasks"] = [entry for entry in report["tasks"] if entry["task"] == task]
        report["plugins"] = [entry for entry in report["plugins"]
                             if entry["subject"] in (job, task, report["queue"])]
        report["task"] = task
    return report


def _starts(scenario: Scenario, job: str, task: str | None,
            registry: Registry | None) -> bool:
    """Whether, in one session on ``scenario``, the job starts (its gang is ready with a
    task placed) or, for ``task``, that task is placed."""
    ssn = Session.open(scenario.to_cluster(), scenario.configuration, registry=registry)
    run_actions(ssn)
    ssn.close()
    target = ssn.jobs.get(job)
    if target is None:
        return False
    if task is not None:
        placed = target.tasks.get(task)
        return placed is not None and placed.status is not TaskStatus.PENDING
    return (target.ready_task_num() >= max(target.min_available, 1)
            and not any(not t.resreq.is_empty() for t in target.tasks_in(TaskStatus.PENDING)
                        .values()))


def _with_nodes(scenario: Scenario, template: NodeInfo, count: int) -> Scenario:
    extra = tuple(
        NodeInfo.create(f"{template.name}-extra-{k}", template.allocatable,
                        capacity=template.capacity, labels=dict(template.labels),
                        annotations=dict(template.annotations), taints=template.taints)
        for k in range(count)
    )
    return attrs.evolve(scenario, nodes=scenario.nodes + extra)


def _with_smaller_requests(scenario: Scenario, job: str, factor: float) -> Scenario:
    def smaller(request: Resource) -> Resource:
        scaled = request.clone().multi(factor)
        if request.has(PODS):
            scaled.set(PODS, request.get(PODS))
        return scaled

    tasks = tuple(
        attrs.evolve(task, resreq=smaller(task.resreq), init_resreq=smaller(task.init_resreq))
        if task.job == job and task.status is TaskStatus.PENDING else task
        for task in scenario.tasks
    )
    return attrs.evolve(scenario, tasks=tasks)


def counterfactuals(scenario: Scenario, *, job: str | None = None, task: str | None = None,
                    registry: Registry | None = None, max_nodes: int = 16
                    ) -> list[dict[str, Any]]:
    """The smallest changes, of each kind, that let the job (or task) start now; each
    one found and checked by running a session on the changed scenario.

    Kinds: ``moreNodes`` (N more nodes like an existing one, for each distinct node
    shape, the smallest N up to ``max_nodes``) and ``smallerRequests`` (the job's
    pending requests scaled down, the largest factor of 3/4, 1/2, 1/4, 1/10).
    """
    if task is not None:
        job = next((t.job for t in scenario.tasks if t.uid == task), None)
    if job is None:
        raise ScenarioError("explain one job or one task", source=scenario.source)
    if _starts(scenario, job, task, registry):
        return []
    found: list[dict[str, Any]] = []
    shapes: dict[tuple[Any, ...], NodeInfo] = {}
    for node in scenario.nodes:
        key = (tuple(sorted(node.allocatable.to_dict().items())),
               tuple(sorted(node.labels.items())), node.taints)
        shapes.setdefault(key, node)
    for template in shapes.values():
        for count in range(1, max_nodes + 1):
            if _starts(_with_nodes(scenario, template, count), job, task, registry):
                found.append({"kind": "moreNodes", "like": template.name, "count": count,
                              "text": f"{count} more node(s) like {template.name}"})
                break
    for factor in (0.75, 0.5, 0.25, 0.1):
        if _starts(_with_smaller_requests(scenario, job, factor), job, task, registry):
            found.append({"kind": "smallerRequests", "factor": factor,
                          "text": f"the job's pending requests times {factor}"})
            break
    found.sort(key=lambda change: change.get("count", 0))
    return found


def _job_report(ssn: Session, recorder: Recorder, job: JobInfo,
                phase_before: str | None) -> dict[str, Any]:
    plugins = [
        {"point": a.point, "plugin": a.plugin, "subject": a.subject, "answer": a.answer,
         **({"about": a.about} if a.about else {})}
        for subject in (job.uid, *sorted(job.tasks), job.queue)
        for a in recorder.about(subject)
    ]
    tasks = []
    for uid, task in sorted(job.tasks.items()):
        entry: dict[str, Any] = {"task": uid, "status": str(task.status)}
        if task.node_name:
            entry["node"] = task.node_name
        errors = job.nodes_fit_errors.get(uid)
        if errors is not None:
            entry["reason"] = str(errors)
            histogram: dict[str, int] = {}
            for err in errors.nodes.values():
                for reason in err.reasons:
                    histogram[reason] = histogram.get(reason, 0) + 1
            entry["nodes"] = dict(sorted(histogram.items()))
        elif task.status is TaskStatus.PENDING:
            refusals = [f"{a.plugin} said {a.answer} at {a.point}"
                        for a in recorder.about(uid) if a.answer in _NEGATIVE]
            entry["reason"] = ("; ".join(refusals) or job.job_fit_errors
                               or "not tried in this session")
        tasks.append(entry)
    said_no = sorted({p["plugin"] for p in plugins
                      if p["answer"] in _NEGATIVE or p["answer"].startswith("invalid")})
    unplaced = [t for t in tasks if t["status"] == str(TaskStatus.PENDING)]
    started = job.ready_task_num() >= job.min_available and not unplaced
    decided_by: list[str]
    if started:
        verdict, decided_by = "placed", []
    elif said_no:
        verdict = f"held back by {', '.join(said_no)}"
        decided_by = said_no
    elif any("nodes" in t for t in unplaced):
        reasons = sorted({r for t in unplaced for r in t.get("nodes", {})})
        verdict = "no node fits: " + "; ".join(reasons)
        decided_by = ["predicates"]
    else:
        verdict = (f"gang: {job.ready_task_num()} of minMember {job.min_available} placed")
        decided_by = ["gang"]
    return {
        "job": job.uid, "queue": job.queue, "minMember": job.min_available,
        "phase": {"before": phase_before, "after": job.podgroup.phase.value},
        "verdict": verdict, "decidedBy": decided_by,
        "plugins": plugins,
        "notes": [{"plugin": p, "text": text} for subject in (job.uid, *job.tasks)
                  for p, text in recorder.notes.get(subject, [])],
        "tasks": tasks,
        "conditions": [{"type": c.type.value, "status": c.status, "reason": c.reason,
                        "message": c.message} for c in job.podgroup.conditions],
        "events": [e.to_dict() for e in ssn.events
                   if e.object == job.uid or e.object in job.tasks],
    }


def render(report: dict[str, Any]) -> str:
    """The report as a readable tree."""
    lines = [f"job {report['job']}: {report['verdict']}"]
    if "phase" in report:
        lines.append(f"  queue {report['queue']}, minMember {report['minMember']}, pod group "
                     f"{report['phase']['before']} -> {report['phase']['after']}")
    if report.get("plugins"):
        lines.append("  plugins:")
        for p in report["plugins"]:
            about = f" (queue {p['about']})" if p.get("about") else ""
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
    for c in report.get("conditions", []):
        message = f": {c['message']}" if c["message"] else ""
        lines.append(f"  condition {c['type']}={c['status']}{message}")
    if "counterfactuals" in report:
        changes = report["counterfactuals"]
        lines.append("  it would start now with:" if changes else
                     "  no change tried lets it start now")
        lines.extend(f"    {change['text']}" for change in changes)
    return "\n".join(lines)
