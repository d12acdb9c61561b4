"""extender: decisions delegated to an HTTP service (Volcano's ``plugins/extender``).

Each configured verb is a POST of a JSON request to ``<extender.urlPrefix>/<verb>``;
the answer (HTTP 200, JSON, read as Go's encoding/json reads it into Volcano's
response structs: keys matched exactly or ignoring case, null as the zero value, a
value of the wrong type a failure) decides at one extension point: predicate,
prioritize (batch node order), preemptable, reclaimable, jobEnqueueable,
jobEnqueued, queueOverused, jobReady, the allocate and deallocate events
(allocateFunc, deallocateFunc), and session open and close (whose answers are not
read). ``extender.managedResources`` leaves tasks asking none of them alone
(``IsInterested``). docs/plugins/extender.md has the table of requests and answers.

``extender.httpTimeout`` (Go duration, default ``1s``; 0 or less: none) bounds each
call. A call that fails (any transport error, a status other than 200, no JSON) is
logged and, with ``extender.ignorable: true``, ignored: the node passes, no score,
no victims, the job may be enqueued, the queue is not overused, the placement
stands. Without it the failure counts against: the node fails (Error), the task
gets no node in that pass (a :class:`~batchsched.errors.NodeOrderError`, as
Volcano's PrioritizeNodes returns no scores), no victims, the job is not enqueued,
the queue is overused, the placement is undone. Job ready follows Volcano's code
literally: a failed call reads as ready when the extender is *not* ignorable, not
ready when it is. When the session-open call fails and the extender is not
ignorable, no other verb is registered, as in Volcano.

Objects are sent as JSON with Volcano's Go field names where batchsched has the
field (``UID``, ``Name``, ``Namespace``, ``Job``, ``NodeName``, ``Status``,
``Priority``, ``Resreq`` with ``MilliCPU``, ``Memory`` and ``ScalarResources``,
...); statuses are their names (``"Running"``), not Go's bit values.
"""

from __future__ import annotations

import ipaddress
import json
import logging
import math
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator, Mapping
from typing import Any

from batchsched.api.fit import FitError, FitStatus
from batchsched.api.job import JobInfo
from batchsched.api.node import NodeInfo
from batchsched.api.queue import QueueInfo
from batchsched.api.resource import CPU, MEMORY, PODS, Resource, format_quantity
from batchsched.api.task import TaskInfo
from batchsched.api.types import FitStatusCode, Vote
from batchsched.errors import ConfigError, NodeOrderError, PluginError, SchedulingError
from batchsched.framework.arguments import Arguments
from batchsched.framework.events import Event, EventHandler
from batchsched.framework.session import Session

__all__ = ["ExtenderError", "ExtenderPlugin", "job_json", "node_json", "task_json"]

log = logging.getLogger("batchsched")

PLUGIN_NAME = "extender"
_VERBS = ("onSessionOpen", "onSessionClose", "predicate", "prioritize", "preemptable",
          "reclaimable", "queueOverused", "jobEnqueueable", "jobEnqueued", "jobReady",
          "allocateFunc", "deallocateFunc")


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


def namespace_info_json(ssn: Session) -> dict[str, Any]:
    """Volcano's ``NamespaceInfo`` of a snapshot: each namespace holding a resource
    quota, with every quota's status (``hard`` and ``used`` as quantities)."""
    out: dict[str, Any] = {}
    for quota in ssn.resource_quotas:
        status: dict[str, Any] = {}
        # As the quota's status holds them: its quantities as given, else worked out.
        hard = {name: quota.hard_texts.get(name) or format_quantity(name, quota.hard.get(name))
                for name in sorted(quota.limited_names)}
        used = {name: quota.used_texts.get(name) or format_quantity(name, quota.used.get(name))
                for name in sorted(quota.used_names or quota.used.to_dict())}
        if hard:
            status["hard"] = hard
        if used:
            status["used"] = used
        entry = out.setdefault(quota.namespace, {"Name": quota.namespace, "QuotaStatus": {}})
        entry["QuotaStatus"][quota.name] = status
    return out


class ExtenderPlugin:
    """Volcano's extender plugin (see the module docstring)."""

    name = PLUGIN_NAME

    def __init__(self, arguments: Arguments) -> None:
        self.url_prefix = arguments.get_str("extender.urlPrefix", "", owner=PLUGIN_NAME).rstrip("/")
        timeout = arguments.get_duration("extender.httpTimeout", 1.0, owner=PLUGIN_NAME)
        #: Go's http.Client timeout: 0 or less means none.
        self.timeout: float | None = timeout if timeout is not None and timeout > 0 else None
        self.ignorable = arguments.get_bool("extender.ignorable", False, owner=PLUGIN_NAME)
        self.verbs = {verb: _verb(arguments, f"extender.{verb}Verb") for verb in _VERBS}
        managed = arguments.get("extender.managedResources")
        if managed is not None and not (isinstance(managed, list)
                                        and all(isinstance(name, str) for name in managed)):
            # Volcano decodes it into a []string and exits (klog.Fatalf) when it cannot.
            raise ConfigError(f"extender.managedResources must be a list of resource names, "
                              f"not {managed!r}", key=f"{PLUGIN_NAME}.arguments")
        self.managed: frozenset[str] = frozenset(managed or ())
        self._ssn: Session | None = None
        arguments.warn_unknown(PLUGIN_NAME, [f"extender.{verb}Verb" for verb in _VERBS] + [
            "extender.urlPrefix", "extender.httpTimeout", "extender.ignorable",
            "extender.managedResources"])

    # -- the client --------------------------------------------------------------------------

    def send(self, verb: str, request: Mapping[str, Any], *, read: bool = True) -> Any:
        """POST ``request`` to the verb's URL; the answer's first JSON value (None when
        ``read`` is false: the answer's body is not read, as Volcano's session open and
        close do not). Any failure, of the transport or of the answer (a status other
        than 200, no JSON), is an :class:`ExtenderError`."""
        url = f"{self.url_prefix}/{verb}"
        try:
            body = json.dumps(request).encode("utf-8")
            call = urllib.request.Request(url, data=body, method="POST",
                                          headers={"Content-Type": "application/json"})
            with _open(call, self.timeout) as answer:
                if answer.status != 200:
                    raise _status_error(verb, url, answer.status)
                if not read:
                    return None
                raw = answer.read(_MAX_BODY_BYTES + 1)
                # Go's http.MaxBytesReader fails a read past the limit: an answer whose
                # first value does not end within it is refused (below).
                over = len(raw) > _MAX_BODY_BYTES
                text = raw[:_MAX_BODY_BYTES].decode("utf-8", "replace")
        except ExtenderError:
            raise
        except urllib.error.HTTPError as exc:
            raise _status_error(verb, url, exc.code) from exc
        except Exception as exc:  # the transport's failure, whatever its kind
            raise ExtenderError(f"extender: {verb} at {url} failed: {type(exc).__name__}: "
                                f"{exc}", plugin=PLUGIN_NAME) from exc
        # Go's json.Decoder.Decode: the first value, after blanks; what follows is not read.
        text = text.lstrip(" \t\r\n")
        if not text:
            raise ExtenderError(f"extender: {verb} at {url} answered nothing (EOF)",
                                plugin=PLUGIN_NAME)
        try:
            value, _ = _DECODER.raw_decode(text)
        except ValueError as exc:
            if over:
                raise ExtenderError(f"extender: {verb} at {url} answered more than "
                                    f"{_MAX_BODY_BYTES} bytes (http: request body too large)",
                                    plugin=PLUGIN_NAME) from exc
            raise ExtenderError(f"extender: {verb} at {url} answered unreadable JSON: {exc}",
                                plugin=PLUGIN_NAME) from exc
        return value

    def interested(self, task: TaskInfo) -> bool:
        """Volcano's ``IsInterested``: one of the pod's containers asks for a resource
        the extender manages (every task when it manages none). The implicit ``pods``
        is asked by no container, nor cpu or memory by a pod that asks none. Volcano
        reads the pod's containers, so a resource a device model hides from the
        session's requests (Ascend vNPU memory and cores) counts too."""
        if not self.managed:
            return True
        if any(name in self.managed
               for name in (*_asked(task.resreq), *_asked(task.init_resreq))):
            return True
        ssn = self._ssn
        return ssn is not None and any(
            name in self.managed for name in ssn.device_requests(task) if name != PODS)

    def _failed(self, error: ExtenderError) -> None:
        log.warning("%s%s", error, " (ignored: extender.ignorable)" if self.ignorable else "")

    def _ask(self, verb: str, request: Mapping[str, Any], fields: Mapping[str, str]
             ) -> dict[str, Any] | None:
        """The answer of the configured ``verb``, decoded into ``fields`` as Go decodes it
        into the response struct, or None when the call or the decoding failed (logged)."""
        try:
            return _decode(self.send(self.verbs[verb], request), fields, verb)
        except ExtenderError as error:
            self._failed(error)
            return None

    # -- session -----------------------------------------------------------------------------

    def on_session_open(self, ssn: Session) -> None:
        self._ssn = ssn
        verbs = self.verbs
        if verbs["onSessionOpen"]:
            # Volcano's OnSessionOpenRequest has no JSON tags: Go's field names.
            request = {
                "Jobs": {uid: job_json(job) for uid, job in ssn.jobs.items()},
                "Nodes": {name: node_json(node) for name, node in ssn.nodes.items()},
                "Queues": {name: queue_json(queue) for name, queue in ssn.queues.items()},
                "NamespaceInfo": namespace_info_json(ssn),
                # The nodes of a revocable zone (the volcano.sh/revocable-zone label),
                # as Volcano's snapshot gathers them.
                "RevocableNodes": {name: node_json(node) for name, node in ssn.nodes.items()
                                   if node.revocable_zone},
                "NodeList": None}
            try:
                self.send(verbs["onSessionOpen"], request, read=False)
            except ExtenderError as error:
                self._failed(error)
                if not self.ignorable:
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
        if verbs["jobEnqueued"]:
            ssn.add_job_enqueued_fn(self.name, self.job_enqueued)
        if verbs["queueOverused"]:
            ssn.add_overused_fn(self.name, self.queue_overused)
        if verbs["jobReady"]:
            ssn.add_job_ready_fn(self.name, self.job_ready)
        if verbs["allocateFunc"] or verbs["deallocateFunc"]:
            ssn.add_event_handler(EventHandler(
                allocate=(lambda event: self.on_event("allocateFunc", event))
                if verbs["allocateFunc"] else None,
                deallocate=(lambda event: self.on_event("deallocateFunc", event))
                if verbs["deallocateFunc"] else None,
                plugin=self.name))

    def on_session_close(self, ssn: Session) -> None:
        if self.verbs["onSessionClose"]:
            try:
                self.send(self.verbs["onSessionClose"], {}, read=False)
            except ExtenderError as error:
                self._failed(error)
        self._ssn = None

    # -- the points --------------------------------------------------------------------------

    def predicate(self, task: TaskInfo, node: NodeInfo) -> FitError | None:
        if not self.interested(task):
            return None
        try:
            answer = _decode(self.send(self.verbs["predicate"], {
                "task": task_json(task), "node": node_json(node)}), _PREDICATE, "predicate")
        except ExtenderError as error:
            self._failed(error)
            return None if self.ignorable else FitError.of(
                task.namespace, task.name, node.name, str(error), plugin=self.name)
        message = answer["status"]
        if not message:
            return None
        # Volcano keeps an old extender's answer without a code working: code 0 is Error.
        code = answer["code"] or int(FitStatusCode.ERROR)
        try:
            status_code = FitStatusCode(code)
        except ValueError:
            # Volcano keeps the code as given: the session's predicates stop at this
            # answer (the plugins after the extender are not asked), and the actions'
            # checks fail a node only for the codes they know, so the node passes. A
            # status no check fails on says both.
            log.debug("extender: predicate code %s is no status code; the node passes", code)
            return FitError(task.namespace, task.name, node.name, [FitStatus(
                FitStatusCode.SUCCESS, f"{message} (extender status code {code})", self.name)])
        return FitError(task.namespace, task.name, node.name,
                        [FitStatus(status_code, message, self.name)])

    def prioritize(self, task: TaskInfo, nodes: list[NodeInfo]) -> dict[str, float]:
        """The extender's scores; a failure it may not ignore, or an answer with an
        error message or no scores, is a :class:`NodeOrderError` (Volcano's
        PrioritizeNodes then leaves the task without a node in that pass)."""
        if not self.interested(task):
            return {}
        try:
            answer = _decode(self.send(self.verbs["prioritize"], {
                "task": task_json(task), "nodes": [node_json(node) for node in nodes]}),
                _PRIORITIZE, "prioritize")
        except ExtenderError as error:
            self._failed(error)
            if self.ignorable:
                return {}
            raise NodeOrderError(str(error), plugin=self.name) from error
        scores = answer["nodeScore"]
        if not answer["errorMessage"] and scores is not None:
            return dict(scores)
        raise NodeOrderError(f"extender: prioritize answered {answer['errorMessage']!r}",
                             plugin=self.name)

    def victims(self, verb: str, evictor: TaskInfo, evictees: list[TaskInfo]
                ) -> list[TaskInfo] | None:
        if not self.interested(evictor):
            return None  # Volcano's Abstain
        answer = self._ask(verb, {"evictor": task_json(evictor),
                                  "evictees": [task_json(task) for task in evictees]},
                           _VICTIMS)
        if answer is None:
            # Volcano answers (nil, Permit) or (nil, Reject): a vote with no victims,
            # which ends the tier with none, ignorable or not.
            return []
        if answer["status"] == 0:
            return None
        chosen = {victim for victim in answer["victims"]}
        return [task for task in evictees if task.uid in chosen]

    def job_enqueueable(self, job: JobInfo) -> Vote:
        answer = self._ask("jobEnqueueable", {"job": job_json(job)}, _STATUS_INT)
        if answer is None:
            return Vote.PERMIT if self.ignorable else Vote.REJECT
        return Vote(max(-1, min(1, answer["status"])))

    def job_enqueued(self, job: JobInfo) -> None:
        self._ask("jobEnqueued", {"job": job_json(job)}, {})

    def queue_overused(self, queue: QueueInfo) -> bool:
        answer = self._ask("queueOverused", {"queue": queue_json(queue)}, _OVERUSED)
        return not self.ignorable if answer is None else bool(answer["overused"])

    def job_ready(self, job: JobInfo) -> bool:
        # Volcano answers "ready" to a failed call exactly when it may not ignore it.
        answer = self._ask("jobReady", {"job": job_json(job)}, _STATUS_BOOL)
        return not self.ignorable if answer is None else bool(answer["status"])

    def on_event(self, verb: str, event: Event) -> None:
        """allocateFunc / deallocateFunc: an answer with an error message, or a failure
        the extender may not ignore, refuses an allocation (the statement undoes it,
        as Volcano's event error does); a deallocation is only told."""
        if not self.interested(event.task):
            return
        try:
            answer = _decode(self.send(self.verbs[verb], {"task": task_json(event.task)}),
                             _EVENT, verb)
        except ExtenderError as error:
            self._failed(error)
            if verb == "allocateFunc" and not self.ignorable:
                raise SchedulingError(f"task {event.task.uid}: {error}") from None
            return
        if answer["errorMessage"] and verb == "allocateFunc":
            raise SchedulingError(f"task {event.task.uid}: extender {verb}: "
                                  f"{answer['errorMessage']}")


def _verb(arguments: Arguments, key: str) -> str:
    """A verb as Volcano reads it (``arguments[key].(string)``): a value that is no
    string is no verb (logged)."""
    value = arguments.get(key)
    if value is None or isinstance(value, str):
        return value or ""
    log.warning("batchsched: plugin %r: argument %r = %r is not a string; no verb",
                PLUGIN_NAME, key, value)
    return ""


#: Response fields (JSON name -> kind), as Volcano's response structs declare them.
_PREDICATE = {"status": "string", "code": "int"}
_PRIORITIZE = {"nodeScore": "scores", "errorMessage": "string"}
_VICTIMS = {"status": "int", "victims": "tasks"}
_STATUS_INT = {"status": "int"}
_STATUS_BOOL = {"status": "bool"}
_OVERUSED = {"overused": "bool"}
_EVENT = {"errorMessage": "string"}
_ZERO: dict[str, Any] = {"string": "", "int": 0, "bool": False, "scores": None, "tasks": []}
_SCALAR_KINDS: dict[str, type] = {"string": str, "int": int, "bool": bool}
#: Volcano reads at most this much of an answer (``maxBodySize``: 10 MiB).
_MAX_BODY_BYTES = 10 << 20


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


_DECODER = json.JSONDecoder(parse_constant=_reject_constant)


def _asked(resource: Resource) -> Iterator[str]:
    """The resources a request asks for: cpu and memory when not zero, every scalar
    it names but the implicit ``pods``."""
    if resource.milli_cpu:
        yield CPU
    if resource.memory:
        yield MEMORY
    yield from (name for name in resource.scalars if name != PODS)


#: No proxy: a loopback extender is called directly whatever the environment says.
_DIRECT = urllib.request.build_opener(urllib.request.ProxyHandler({}))


def _open(call: urllib.request.Request, timeout: float | None) -> Any:
    """Open ``call`` as Go's default transport does: through the proxy the environment
    names (``http_proxy``, ``no_proxy``...), except to localhost or a loopback address,
    which Go never sends through a proxy."""
    host = urllib.parse.urlsplit(call.full_url).hostname or ""
    if host == "localhost" or _is_loopback(host):
        return _DIRECT.open(call, timeout=timeout)
    return urllib.request.urlopen(call, timeout=timeout)


def _is_loopback(host: str) -> bool:
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _status_error(verb: str, url: str, status: int) -> ExtenderError:
    """An answer other than 200, in Volcano's words (they become fit-error reasons)."""
    return ExtenderError(f"failed {verb} with extender at URL {url}, code {status}",
                         plugin=PLUGIN_NAME)


def _go_float(number: float) -> float | None:
    """A JSON number as Go decodes it into a float64: None when out of its range (a
    literal such as 1e400, which Python reads as infinity, fails Go's decoding)."""
    try:
        value = float(number)
    except OverflowError:
        return None
    return value if math.isfinite(value) else None


_INT64 = range(-(1 << 63), 1 << 63)


def _decode(value: Any, fields: Mapping[str, str], verb: str) -> dict[str, Any]:
    """``value`` decoded as Go's encoding/json decodes it into a struct of ``fields``:
    an object whose keys match the fields exactly or, failing that, ignoring case
    (other keys are ignored; null leaves a field's zero value); a value of another
    type fails the whole decoding (an :class:`ExtenderError`)."""
    def fail(what: str) -> ExtenderError:
        return ExtenderError(f"extender: {verb} answered {what}", plugin=PLUGIN_NAME)

    if value is None:
        value = {}  # Go decodes null into a struct as nothing: every field its zero value
    if not isinstance(value, dict):
        raise fail(f"{json.dumps(value)[:80]}, not a JSON object")
    out = {name: _ZERO[kind] for name, kind in fields.items()}
    folded = {name.lower(): name for name in fields}
    for key, item in value.items():
        name = key if key in fields else folded.get(key.lower())
        if name is None or item is None:
            continue
        kind = fields[name]
        # bool is no int here: exact types; Go's int is an int64.
        if _SCALAR_KINDS.get(kind) is type(item) and (kind != "int" or item in _INT64):
            out[name] = item
        elif kind == "scores" and isinstance(item, dict) and all(
                score is None or (isinstance(score, (int, float)) and not isinstance(score, bool)
                                  and _go_float(score) is not None)
                for score in item.values()):
            out[name] = {str(node): float(score or 0) for node, score in item.items()}
        elif kind == "tasks" and isinstance(item, list) and all(
                victim is None or isinstance(victim, dict) for victim in item):
            out[name] = [_task_uid(victim, fail) for victim in item if victim is not None]
        else:
            raise fail(f"{key!r}: {json.dumps(item)[:80]}, which is not a {kind}")
    return out


def _task_uid(victim: dict[str, Any], fail: Any) -> str:
    """A victim's ``UID`` (Go's TaskInfo field, matched ignoring case)."""
    for key, item in victim.items():
        if key == "UID" or key.lower() == "uid":
            if item is None:
                return ""
            if not isinstance(item, str):
                raise fail(f"a victim's UID {json.dumps(item)[:40]}, which is not a string")
            return item
    return ""
