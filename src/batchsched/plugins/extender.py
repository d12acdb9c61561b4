"""extender: decisions delegated to an HTTP service (Volcano's ``plugins/extender``).

Each configured verb is a POST of a JSON request to ``<extender.urlPrefix>/<verb>``;
the answer (HTTP 200, JSON) decides at one extension point:

* ``extender.predicateVerb`` (predicate): ``{task, node}`` -> ``{status, code}``;
  an empty ``status`` passes, else a FitError with that reason and code (0 reads
  as Error);
* ``extender.prioritizeVerb`` (batch node order): ``{task, nodes}`` ->
  ``{nodeScore, errorMessage}``;
* ``extender.preemptableVerb`` / ``extender.reclaimableVerb`` (preemptable /
  reclaimable): ``{evictor, evictees}`` -> ``{status, victims}``; status 0
  abstains; victims are matched to the evictees by ``UID``;
* ``extender.jobEnqueueableVerb`` (job enqueueable): ``{job}`` -> ``{status}``
  (-1, 0, 1: a vote);
* ``extender.queueOverusedVerb`` (overused): ``{queue}`` -> ``{overused}``;
* ``extender.jobReadyVerb`` (job ready): ``{job}`` -> ``{status}`` (a boolean);
* ``extender.onSessionOpenVerb`` / ``extender.onSessionCloseVerb``: ``{jobs,
  nodes, queues, nodeList}`` at open, ``{}`` at close; the answer is not read.

``extender.httpTimeout`` (Go duration, default ``1s``) bounds each call. A call
that fails (no answer, timeout, a status other than 200, unreadable JSON) is
logged and, with ``extender.ignorable: true``, ignored: the node passes, no
score, the plugin abstains, the job may be enqueued, the queue is not overused.
Without it the failure counts against: the node fails (Error), the scores are a
PluginError naming the plugin, no victims, the job is not enqueued, the queue is
overused. Job ready follows Volcano's code literally: a failed call reads as
ready when the extender is *not* ignorable, not ready when it is. When the
session-open call fails and the extender is not ignorable, no other verb is
registered, as in Volcano.

Objects are sent as JSON with Volcano's Go field names where batchsched has the
field (``UID``, ``Name``, ``Namespace``, ``Job``, ``NodeName``, ``Status``,
``Priority``, ``Resreq`` with ``MilliCPU``, ``Memory`` and ``ScalarResources``,
...); statuses are their names (``"Running"``), not Go's bit values.
"""

from __future__ import annotations

import json
import logging
import urllib.error
import urllib.request
from collections.abc import Mapping
from typing import Any

from batchsched.api.fit import FitError, FitStatus
from batchsched.api.job import JobInfo
from batchsched.api.node import NodeInfo
from batchsched.api.queue import QueueInfo
from batchsched.api.resource import CPU, MEMORY, Resource
from batchsched.api.task import TaskInfo
from batchsched.api.types import FitStatusCode, Vote
from batchsched.errors import PluginError
from batchsched.framework.arguments import Arguments
from batchsched.framework.session import Session

__all__ = ["ExtenderError", "ExtenderPlugin", "job_json", "node_json", "task_json"]

log = logging.getLogger("batchsched")

PLUGIN_NAME = "extender"
_VERBS = ("onSessionOpen", "onSessionClose", "predicate", "prioritize", "preemptable",
          "reclaimable", "queueOverused", "jobEnqueueable", "jobReady")


class ExtenderError(PluginError):
    """A call to the extender failed (no answer, a bad status, unreadable JSON)."""


def resource_json(resource: Resource) -> dict[str, Any]:
    scalars = {name: amount for name, amount in resource.scalars.items()}
    return {"MilliCPU": resource.get(CPU), "Memory": resource.get(MEMORY),
            "ScalarResources": scalars}


def task_json(task: TaskInfo) -> dict[str, Any]:
    return {"UID": task.uid, "Job": task.job, "Name": task.name, "Namespace": task.namespace,
            "TaskRole": task.role, "Resreq": resource_json(task.resreq),
            "InitResreq": resource_json(task.init_resreq), "NodeName": task.node_name,
            "Status": str(task.status), "Priority": task.priority,
            "Preemptable": task.preemptable, "BestEffort": task.best_effort,
            "Labels": dict(task.labels), "Annotations": dict(task.annotations)}


def node_json(node: NodeInfo) -> dict[str, Any]:
    return {"Name": node.name, "Allocatable": resource_json(node.allocatable),
            "Capacity": resource_json(node.capacity), "Idle": resource_json(node.idle),
            "Used": resource_json(node.used), "Releasing": resource_json(node.releasing),
            "Pipelined": resource_json(node.pipelined), "Labels": dict(node.labels),
            "Tasks": {uid: task_json(task) for uid, task in node.tasks.items()}}


def job_json(job: JobInfo) -> dict[str, Any]:
    return {"UID": job.uid, "Name": job.name, "Namespace": job.namespace, "Queue": job.queue,
            "Priority": job.priority, "MinAvailable": job.min_available,
            "TaskMinAvailable": dict(job.task_min_available),
            "PodGroupPhase": str(job.podgroup.phase),
            "Allocated": resource_json(job.allocated),
            "TotalRequest": resource_json(job.total_request),
            "Tasks": {uid: task_json(task) for uid, task in job.tasks.items()}}


def queue_json(queue: QueueInfo) -> dict[str, Any]:
    def optional(resource: Resource | None) -> dict[str, Any] | None:
        return None if resource is None else resource_json(resource)
    return {"UID": queue.name, "Name": queue.name, "Weight": queue.weight,
            "Capability": optional(queue.capability), "Deserved": optional(queue.deserved),
            "Guarantee": optional(queue.guarantee), "Reclaimable": queue.reclaimable}


class ExtenderPlugin:
    """Volcano's extender plugin (see the module docstring)."""

    name = PLUGIN_NAME

    def __init__(self, arguments: Arguments) -> None:
        self.url_prefix = arguments.get_str("extender.urlPrefix", "").rstrip("/")
        self.timeout = arguments.get_duration("extender.httpTimeout", 1.0,
                                              owner=PLUGIN_NAME) or 1.0
        self.ignorable = arguments.get_bool("extender.ignorable", False, owner=PLUGIN_NAME)
        self.verbs = {verb: arguments.get_str(f"extender.{verb}Verb", "") for verb in _VERBS}
        arguments.warn_unknown(PLUGIN_NAME, [f"extender.{verb}Verb" for verb in _VERBS] + [
            "extender.urlPrefix", "extender.httpTimeout", "extender.ignorable"])

    # -- the client --------------------------------------------------------------------------

    def send(self, verb: str, request: Mapping[str, Any]) -> Any:
        """POST ``request`` to the verb's URL; the decoded JSON answer."""
        url = f"{self.url_prefix}/{verb}"
        body = json.dumps(request).encode("utf-8")
        call = urllib.request.Request(url, data=body, method="POST",
                                      headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(call, timeout=self.timeout) as answer:
                text = answer.read()
        except urllib.error.HTTPError as exc:
            raise ExtenderError(f"extender: {verb} at {url} answered HTTP {exc.code}",
                                plugin=PLUGIN_NAME) from exc
        except (urllib.error.URLError, OSError) as exc:
            raise ExtenderError(f"extender: {verb} at {url} failed: {exc}",
                                plugin=PLUGIN_NAME) from exc
        if not text:
            return {}
        try:
            return json.loads(text)
        except ValueError as exc:
            raise ExtenderError(f"extender: {verb} at {url} answered unreadable JSON: {exc}",
                                plugin=PLUGIN_NAME) from exc

    def _failed(self, error: ExtenderError) -> None:
        log.warning("%s%s", error, " (ignored: extender.ignorable)" if self.ignorable else "")

    def _ask(self, verb: str, request: Mapping[str, Any]) -> dict[str, Any] | None:
        """The answer of the configured ``verb`` as a mapping (``{}`` for an answer of
        another shape), or None when the call failed (logged)."""
        try:
            answer = self.send(self.verbs[verb], request)
        except ExtenderError as error:
            self._failed(error)
            return None
        return answer if isinstance(answer, dict) else {}

    # -- session -----------------------------------------------------------------------------

    def on_session_open(self, ssn: Session) -> None:
        verbs = self.verbs
        if verbs["onSessionOpen"]:
            opened = self._ask("onSessionOpen", {
                "jobs": {uid: job_json(job) for uid, job in ssn.jobs.items()},
                "nodes": {name: node_json(node) for name, node in ssn.nodes.items()},
                "queues": {name: queue_json(queue) for name, queue in ssn.queues.items()},
                "nodeList": [node.name for node in ssn.node_list]})
            if opened is None and not self.ignorable:
                return
        if verbs["predicate"]:
            ssn.add_predicate_fn(self.name, self.predicate)
        if verbs["prioritize"]:
            ssn.add_batch_node_order_fn(self.name, self.prioritize)
        if verbs["preemptable"]:
            ssn.add_preemptable_fn(self.name, lambda evictor, evictees: self.victims(
                "preemptable", evictor, evictees))
        if verbs["reclaimable"]:
            ssn.add_reclaimable_fn(self.name, lambda evictor, evictees: self.victims(
                "reclaimable", evictor, evictees))
        if verbs["jobEnqueueable"]:
            ssn.add_job_enqueueable_fn(self.name, self.job_enqueueable)
        if verbs["queueOverused"]:
            ssn.add_overused_fn(self.name, self.queue_overused)
        if verbs["jobReady"]:
            ssn.add_job_ready_fn(self.name, self.job_ready)

    def on_session_close(self, ssn: Session) -> None:
        if self.verbs["onSessionClose"]:
            self._ask("onSessionClose", {})

    # -- the points --------------------------------------------------------------------------

    def predicate(self, task: TaskInfo, node: NodeInfo) -> FitError | None:
        try:
            answer = self.send(self.verbs["predicate"], {"task": task_json(task),
                                                         "node": node_json(node)})
        except ExtenderError as error:
            self._failed(error)
            return None if self.ignorable else FitError.of(
                task.namespace, task.name, node.name, str(error), plugin=self.name)
        message = str(answer.get("status") or "") if isinstance(answer, dict) else ""
        if not message:
            return None
        code = answer.get("code") or FitStatusCode.ERROR
        try:
            status_code = FitStatusCode(int(code))
        except (TypeError, ValueError):
            status_code = FitStatusCode.ERROR
        if status_code == FitStatusCode.SUCCESS:
            status_code = FitStatusCode.ERROR
        return FitError(task.namespace, task.name, node.name,
                        [FitStatus(status_code, message, self.name)])

    def prioritize(self, task: TaskInfo, nodes: list[NodeInfo]) -> dict[str, float]:
        try:
            answer = self.send(self.verbs["prioritize"], {
                "task": task_json(task), "nodes": [node_json(node) for node in nodes]})
        except ExtenderError as error:
            self._failed(error)
            if self.ignorable:
                return {}
            raise
        scores = answer.get("nodeScore") if isinstance(answer, dict) else None
        if isinstance(answer, dict) and not answer.get("errorMessage") and isinstance(
                scores, dict):
            return {str(name): float(score) for name, score in scores.items()}
        message = answer.get("errorMessage") if isinstance(answer, dict) else answer
        raise ExtenderError(f"extender: prioritize answered {message!r}", plugin=self.name)

    def victims(self, verb: str, evictor: TaskInfo, evictees: list[TaskInfo]
                ) -> list[TaskInfo] | None:
        answer = self._ask(verb, {"evictor": task_json(evictor),
                                  "evictees": [task_json(task) for task in evictees]})
        if answer is None:
            return None if self.ignorable else []
        if int(answer.get("status") or 0) == 0:
            return None
        chosen = {str(victim.get("UID")) for victim in answer.get("victims") or []
                  if isinstance(victim, dict)}
        return [task for task in evictees if task.uid in chosen]

    def job_enqueueable(self, job: JobInfo) -> Vote:
        answer = self._ask("jobEnqueueable", {"job": job_json(job)})
        if answer is None:
            return Vote.PERMIT if self.ignorable else Vote.REJECT
        return Vote(max(-1, min(1, int(answer.get("status") or 0))))

    def queue_overused(self, queue: QueueInfo) -> bool:
        answer = self._ask("queueOverused", {"queue": queue_json(queue)})
        return not self.ignorable if answer is None else bool(answer.get("overused"))

    def job_ready(self, job: JobInfo) -> bool:
        # Volcano answers "ready" to a failed call exactly when it may not ignore it.
        answer = self._ask("jobReady", {"job": job_json(job)})
        return not self.ignorable if answer is None else bool(answer.get("status"))
