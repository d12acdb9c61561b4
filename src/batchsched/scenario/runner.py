"""Run a scenario for one session and collect its decisions."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import attrs

from batchsched.actions.node_search import hard_shard_of, shard_groups
from batchsched.api.ascend import assigned_vnpus
from batchsched.api.cluster import ClusterInfo
from batchsched.api.fit import FitError
from batchsched.api.gpushare import GPU_INDEX_ANNOTATION, gpu_index
from batchsched.api.job import JobInfo
from batchsched.api.task import TaskInfo
from batchsched.api.types import TaskStatus
from batchsched.api.vgpu import assigned_devices
from batchsched.cache.memory import Bind, Eviction, check_bind_room
from batchsched.conf import SchedulerConfiguration
from batchsched.errors import NodeOrderError, SchedulingError
from batchsched.framework.events import RecordedEvent
from batchsched.framework.registry import Registry
from batchsched.framework.session import Session
from batchsched.kube.dra.claims import check_reservations, claim_keys, reserve_claims
from batchsched.kube.dra.objects import AllocationResult, ResourceClaim
from batchsched.scenario.loader import Scenario
from batchsched.scheduler import run_actions

__all__ = ["Decisions", "decide", "run_scenario", "session_scores"]


@attrs.frozen
class Decisions:
    """What one session decided, in the scenario format's terms.

    ``binds``: task id -> node; ``evicted``: task ids (a multiset, in eviction
    order); ``pipelined``: job id -> {task id -> node}; ``pod_group_phases``: job
    id -> phase after the session's job status update; ``task_status_counts``: job
    id -> {status -> count}; ``events``: dicts with object, type, reason, message;
    ``scores``: task id -> node -> score (only when asked for);
    ``bind_failures``: task ids whose bind the cache refused (``faults``), in order;
    ``nominated``: preemptor task id -> the node its victims were evicted on;
    ``queue_status``: queue -> its status at session close (``allocated``
    quantities, ``podGroups`` counted by phase); ``gpu_devices``: bound task id ->
    the indexes of its node's GPUs it holds (tasks holding GPUs one by one only);
    ``vgpu_devices``: bound task id -> the vGPUs it holds, per container (its
    ``volcano.sh/vgpu-ids-new`` annotation read); ``vnpu_devices``: bound task id ->
    the Ascend cards it holds (its ``hami.io/<chip>-devices-allocated`` annotations
    read); ``claim_allocations``: resource
    claim -> the devices a bind allocated to it (Dynamic Resource Allocation).
    """

    binds: dict[str, str]
    evicted: list[str]
    pipelined: dict[str, dict[str, str]]
    pod_group_phases: dict[str, str]
    task_status_counts: dict[str, dict[str, int]]
    events: list[dict[str, str]]
    scores: dict[str, dict[str, float]] | None = None
    bind_failures: list[str] = attrs.field(factory=list)
    nominated: dict[str, str] = attrs.field(factory=dict)
    queue_status: dict[str, dict[str, Any]] = attrs.field(factory=dict)
    gpu_devices: dict[str, list[int]] = attrs.field(factory=dict)
    vgpu_devices: dict[str, list[list[dict[str, object]]]] = attrs.field(factory=dict)
    claim_allocations: dict[str, list[dict[str, Any]]] = attrs.field(factory=dict)
    vnpu_devices: dict[str, list[dict[str, object]]] = attrs.field(factory=dict)

    def to_json(self) -> dict[str, Any]:
        """The CLI's JSON object: every key present, ``scores`` only when computed and
        ``vgpuDevices`` (``vnpuDevices``) only when a bound task holds vGPUs (Ascend
        cards), ``claimAllocations`` only
        when a bind allocated a resource claim."""
        out: dict[str, Any] = {
            "binds": self.binds,
            "evicted": self.evicted,
            "pipelined": self.pipelined,
            "podGroupPhases": self.pod_group_phases,
            "taskStatusCounts": self.task_status_counts,
            "bindFailures": self.bind_failures,
            "nominated": self.nominated,
            "queueStatus": self.queue_status,
            "gpuDevices": self.gpu_devices,
            "events": self.events,
        }
        if self.scores is not None:
            out["scores"] = self.scores
        if self.vgpu_devices:
            out["vgpuDevices"] = self.vgpu_devices
        if self.vnpu_devices:
            out["vnpuDevices"] = self.vnpu_devices
        if self.claim_allocations:
            out["claimAllocations"] = self.claim_allocations
        return out


def session_scores(ssn: Session) -> dict[str, dict[str, float]]:
    """For every task and every node its predicates pass on (resource fit aside), the
    node-order plus batch node-order score allocate would rank the node by."""
    out: dict[str, dict[str, float]] = {}
    shard = hard_shard_of(ssn)  # sharded hard, allocate never ranks the other nodes
    for job in sorted(ssn.jobs.values(), key=lambda j: j.uid):
        for task in sorted(job.tasks.values(), key=lambda t: t.uid):
            with ssn.for_report():
                candidates = [n for n in ssn.node_list
                              if (shard is None or n.name in shard)
                              and ssn.predicate(task, n) is None]
            scores: dict[str, float] = {}
            for node in candidates:
                try:
                    scores[node.name] = ssn.node_order(task, node)
                except FitError:
                    continue  # left out of the report (the format's rule)
            try:
                # Over every node the predicates pass, the failing one included: the
                # batch scores allocate ranks by (Volcano's PrioritizeNodes). Sharded
                # soft, allocate ranks the shard's nodes, then the others, each group
                # on its own: so are their batch scores.
                batch: dict[str, float] = {}
                for group in shard_groups(ssn, candidates):
                    batch.update(ssn.batch_node_order(task, group))
            except NodeOrderError:
                out[task.uid] = {}  # no scores, as Volcano's PrioritizeNodes on an error
                continue
            for node_name, score in batch.items():
                if node_name in scores:
                    scores[node_name] += score
            out[task.uid] = scores
    return out


class ScenarioCache:
    """A cache for one session over a scenario: hands out the snapshot once and only
    records the decisions (the scenario's own objects are the session's). Binds of
    the tasks in ``refuse`` are refused (the scenario's ``faults``)."""

    def __init__(self, snapshot: ClusterInfo, refuse: frozenset[str] = frozenset()) -> None:
        self._snapshot = snapshot
        self.refuse = refuse
        self.binds: list[Bind] = []
        self.evictions: list[Eviction] = []
        self.events: list[RecordedEvent] = []
        self.bind_failures: list[str] = []
        self.nominated: dict[str, str] = {}
        self.gpu_devices: dict[str, list[int]] = {}
        self.vgpu_devices: dict[str, list[list[dict[str, object]]]] = {}
        self.vnpu_devices: dict[str, list[dict[str, object]]] = {}
        #: Task uid -> the claims its bind allocated (claim key -> allocation).
        self.claim_allocations: dict[str, dict[str, AllocationResult]] = {}
        #: The claims as binds leave them (kube's PreBind checks and writes them here).
        self.claims: dict[str, ResourceClaim] = dict(snapshot.dra.resource_claims)
        #: Each node's idle as the cache holds it: the snapshot's, less the binds made.
        #: The session's own node counts its allocations before they are bound (and
        #: its pipelined tasks); Volcano checks a Binding task against the cache's.
        self._idle = {name: node.idle.clone() for name, node in snapshot.nodes.items()}

    def snapshot(self) -> ClusterInfo:
        return self._snapshot

    def bind(self, task: TaskInfo, node_name: str) -> bool:
        if task.uid in self.refuse:
            self.bind_failures.append(task.uid)
            return False
        idle = self._idle.get(node_name)
        if idle is not None:
            # Backfill places best-effort pods by predicates alone, and a pod slot may be
            # held by a pod still being deleted: the cache's node has the last word.
            try:
                check_bind_room(task, node_name, idle)
            except SchedulingError:
                self.bind_failures.append(task.uid)
                raise
        if task.resource_claims and task.claim_allocations is not None:
            keys = claim_keys(task.namespace, task.name, task.resource_claims)
            problem = check_reservations(task.uid, keys, task.claim_allocations, self.claims)
            if problem:
                self.bind_failures.append(task.uid)
                raise SchedulingError(f"task {task.uid}: PreBind plugin DynamicResources "
                                      f"failed: {problem}")
            reserve_claims(task.uid, keys, task.claim_allocations, self.claims)
        if idle is not None:
            idle.sub_unchecked(task.resreq)
        self.binds.append(Bind(task.uid, node_name))
        if task.gpu_devices:
            self.gpu_devices[task.uid] = list(task.gpu_devices)
        elif GPU_INDEX_ANNOTATION in task.annotations:
            cards = gpu_index(task.annotations)  # Volcano gpushare's cards
            if cards is not None:
                self.gpu_devices[task.uid] = cards
        vgpus = assigned_devices(task.annotations)
        if vgpus is not None:
            self.vgpu_devices[task.uid] = vgpus
        vnpus = assigned_vnpus(task.annotations)
        if vnpus is not None:
            self.vnpu_devices[task.uid] = vnpus
        if task.claim_allocations:
            self.claim_allocations[task.uid] = dict(task.claim_allocations)
        return True

    def unbind(self, task: TaskInfo, reason: str) -> None:
        """A bind taken back (its gang fell below minMember): it does not stand."""
        bound = next((b for b in self.binds if b.task == task.uid), None)
        if bound is not None and bound.node in self._idle:
            self._idle[bound.node].add(task.resreq)
        self.binds = [b for b in self.binds if b.task != task.uid]
        self.gpu_devices.pop(task.uid, None)
        self.vgpu_devices.pop(task.uid, None)
        self.vnpu_devices.pop(task.uid, None)
        self.claim_allocations.pop(task.uid, None)

    def nominate(self, task: TaskInfo, node_name: str) -> None:
        if node_name:
            self.nominated[task.uid] = node_name
        else:
            self.nominated.pop(task.uid, None)  # cleared

    def evict(self, task: TaskInfo, reason: str) -> bool:
        self.evictions.append(Eviction(task.uid, reason))
        return True

    def update_job_status(self, job: JobInfo) -> None:
        pass

    def record_event(self, event: RecordedEvent) -> None:
        self.events.append(event)


def run_scenario(
    scenario: Scenario,
    *,
    scores: bool | None = None,
    configuration: SchedulerConfiguration | None = None,
    registry: Registry | None = None,
    consume: bool = False,
) -> Decisions:
    """Open a session on the scenario's cluster, run its actions, close it.

    ``scores`` defaults to whether the scenario's ``expect`` asks for them;
    ``configuration`` replaces the scenario's own. With ``consume=True`` the session
    works on the scenario's own objects instead of copies (faster; the scenario must
    not be run again), and jobs with the same task status counts share one map of
    them in the decisions (read them, do not change them).
    """
    decisions, events = decide(scenario, scores=scores, configuration=configuration,
                               registry=registry, consume=consume)
    return attrs.evolve(decisions, events=[event.to_dict() for event in events])


def decide(
    scenario: Scenario,
    *,
    scores: bool | None = None,
    configuration: SchedulerConfiguration | None = None,
    registry: Registry | None = None,
    consume: bool = False,
) -> tuple[Decisions, list[RecordedEvent]]:
    """:func:`run_scenario`'s decisions without their events, and the session's events
    as recorded: a caller that writes them one by one (the CLI) never holds them all
    as dicts."""
    if scores is None:
        scores = "scores" in scenario.expect
    cache = ScenarioCache(scenario.to_cluster(copy=not consume), scenario.bind_failures)
    ssn = Session.open(cache, configuration or scenario.configuration, registry=registry)
    computed = session_scores(ssn) if scores else None
    try:
        run_actions(ssn)
    except BaseException:
        ssn.abort()
        raise
    pipelined: dict[str, dict[str, str]] = {}
    for job in ssn.jobs.values():
        tasks = job.tasks_in(TaskStatus.PIPELINED)
        if tasks:
            pipelined[job.uid] = {uid: t.node_name for uid, t in sorted(tasks.items())}
    counts = {
        uid: _status_counts(job.task_status_index)
        for uid, job in sorted(ssn.jobs.items())
    }
    if consume:
        # The caller writes the decisions out and drops them: jobs with the same counts
        # (100,000 waiting pod groups, say) share one map.
        shared: dict[tuple[tuple[str, int], ...], dict[str, int]] = {}
        counts = {uid: shared.setdefault(tuple(count.items()), count)
                  for uid, count in counts.items()}
    ssn.close()
    decisions = Decisions(
        binds={b.task: b.node for b in cache.binds},
        evicted=[e.task for e in cache.evictions],
        pipelined=pipelined,
        pod_group_phases={uid: str(job.podgroup.phase) for uid, job in sorted(ssn.jobs.items())},
        task_status_counts=counts,
        events=[],
        scores=computed,
        bind_failures=list(cache.bind_failures),
        nominated=dict(sorted(cache.nominated.items())),
        queue_status={name: queue.status.to_json()
                      for name, queue in sorted(ssn.queues.items())},
        gpu_devices=dict(sorted(cache.gpu_devices.items())),
        vgpu_devices=dict(sorted(cache.vgpu_devices.items())),
        vnpu_devices=dict(sorted(cache.vnpu_devices.items())),
        claim_allocations={
            key: [result.to_json() for result in allocation.results]
            for key, allocation in sorted(
                ((key, allocation) for held in cache.claim_allocations.values()
                 for key, allocation in held.items()), key=lambda item: item[0])},
    )
    events = ssn.events
    # The decisions are out: the cluster need not outlive them (a large run's output
    # is written while it would still be held).
    ssn.dispose()
    return decisions, events


def _status_counts(index: Mapping[TaskStatus, Mapping[str, Any]]) -> dict[str, int]:
    return {str(status): len(tasks) for status, tasks in sorted(index.items()) if tasks}
