"""A workload: a cluster and jobs that arrive over time, with how long their tasks run.

Jobs are ordinary :class:`~batchsched.api.job.JobInfo` pod groups (tasks
Pending), kept as prototypes: each replay takes a fresh copy when the job
arrives, so one workload can be replayed under many configurations. What the
scheduler may know of the future is what a real user tells it: the job's
``batchsched.io/requested-runtime`` annotation (the time limit). The real run
time of each task is known only to the simulator.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

import attrs

from batchsched.api.cluster import ClusterInfo, PodDisruptionBudget, PriorityClass, ResourceQuota
from batchsched.api.hypernode import HyperNode
from batchsched.api.job import JobInfo
from batchsched.api.node import NodeInfo
from batchsched.api.queue import ROOT_QUEUE, QueueInfo
from batchsched.api.resource import Resource
from batchsched.api.sharding import NodeShard
from batchsched.conf import SchedulerConfiguration
from batchsched.errors import WorkloadError
from batchsched.kube.dra.scheduling import DraObjects

if TYPE_CHECKING:
    from batchsched.framework.registry import Registry

__all__ = ["MOST_SECONDS", "RESTART_GANG", "RESTART_TASK", "Skipped", "Workload", "WorkloadJob",
           "created_in_listed_order"]

#: The largest time a workload may give, in seconds (about 31.7 million years): the
#: replay's clock adds submit, wait and run times as floats, which count whole
#: seconds exactly only below 2**53.
MOST_SECONDS = 10**15

#: An evicted member makes the whole gang start again (MPI-style; the default).
RESTART_GANG = "gang"
#: Only the evicted tasks start again (Spark-style executors).
RESTART_TASK = "task"


@attrs.frozen
class WorkloadJob:
    """One job of a workload: a pod group whose tasks all arrive at ``submit``."""

    prototype: JobInfo
    submit: float
    #: Real run time of each task, in seconds, by task uid.
    run_times: Mapping[str, float]
    restart: str = RESTART_GANG
    #: Where the job came from (``file:line``), for reports.
    origin: str = ""
    #: The prototype's creation times are real (a live cluster's objects), 0 included:
    #: kept as they are when the job arrives.
    keeps_creation_times: bool = False

    @property
    def uid(self) -> str:
        return self.prototype.uid

    @property
    def run_time(self) -> float:
        """The longest task's run time: how long the job runs once all its tasks run."""
        return max(self.run_times.values(), default=0.0)

    def arrive(self) -> JobInfo:
        """A fresh copy of the job, as it enters the cluster. The pod group and pods
        are created then: where the prototype leaves a creation time unset (0), the
        copy's is the submit time (job orders read it: first come, first served)."""
        job = self.prototype.clone()
        submit = self.submit
        if submit and not self.keeps_creation_times:
            if not job.creation_time:
                job.creation_time = submit
            if not job.podgroup.creation_time:
                job.podgroup.creation_time = submit
            for task in job.tasks.values():
                if not task.creation_time:
                    task.creation_time = submit
        return job


@attrs.frozen
class Skipped:
    """A job left out of a replay, and why (for example: larger than the cluster)."""

    job: str
    origin: str
    reason: str
    #: True when the job could never start on the cluster (larger than it, or of a
    #: queue it does not have), as opposed to a trace line the format says to drop.
    oversized: bool = False


@attrs.frozen
class Workload:
    """A cluster (nodes, queues, priority classes) and the jobs that arrive on it, in
    trace order (a job arrives at its submit time; equal times keep trace order)."""

    name: str
    nodes: tuple[NodeInfo, ...]
    jobs: tuple[WorkloadJob, ...]
    queues: tuple[QueueInfo, ...] = ()
    priority_classes: tuple[PriorityClass, ...] = ()
    skipped: tuple[Skipped, ...] = ()
    #: The trace's own mix of pods, ``{cpu, gpu, weight}`` per kind, for plugins that
    #: plan for the workload to come (``fgd.typicalPods``); empty when not known.
    pod_mix: tuple[dict[str, object], ...] = ()
    #: ConfigMaps plugins read (``namespace/name`` -> data), as a scenario's
    #: ``configMaps`` give them.
    config_maps: Mapping[str, Mapping[str, str]] = attrs.field(factory=dict)
    #: The network topology, as a scenario's ``hyperNodes`` give it.
    hyper_nodes: tuple[HyperNode, ...] = ()
    #: Scheduler sharding's NodeShard objects, as a scenario's ``nodeShards`` give them.
    node_shards: tuple[NodeShard, ...] = ()
    #: Device classes, resource slices, claims and claim templates (Dynamic Resource
    #: Allocation), as a scenario gives them.
    dra: DraObjects = attrs.field(factory=DraObjects)
    #: Pod disruption budgets and resource quotas, as a scenario gives them: a replay
    #: works their statuses out again as pods start and end
    #: (:mod:`batchsched.simulation.controllers`).
    pdbs: tuple[PodDisruptionBudget, ...] = ()
    resource_quotas: tuple[ResourceQuota, ...] = ()
    #: When the replay's clock starts; None: the submit time of its first job (job K
    #: of a window of a trace in job-number order, as the simulation contract says;
    #: a job submitted earlier arrives then). Set by :meth:`without_oversized`, so
    #: that a dropped first job still starts it.
    start: float | None = None

    def window(self, first: int = 0, count: int | None = None) -> Workload:
        """The jobs at positions ``first`` .. ``first + count - 1`` (0-based, in
        trace order), on the same cluster."""
        if first < 0 or (count is not None and count < 0):
            raise WorkloadError(f"a window needs a start and a length >= 0, not {first}, "
                                f"{count}", source=self.name)
        if first and first >= len(self.jobs):
            raise WorkloadError(f"the window starts at job {first}, past the workload's "
                                f"{len(self.jobs)} jobs", source=self.name)
        end = len(self.jobs) if count is None else first + count
        return attrs.evolve(self, jobs=self.jobs[first:end])

    def capacity(self) -> Resource:
        """The cluster's total allocatable resources."""
        total = Resource()
        for node in self.nodes:
            total.add(node.allocatable)
        return total

    def without_oversized(self, configuration: SchedulerConfiguration | None = None, *,
                          registry: Registry | None = None) -> Workload:
        """The workload less the jobs that could never start on this cluster: a job of
        a queue it does not have (``default`` and ``root`` always exist), a task
        larger than every node, a gang larger than the whole cluster, or a gang of
        alike tasks that fit fewer times than its minimum on the empty cluster's nodes
        (three tasks of 2.5 cpu on two nodes of 4). With the configuration the replay
        runs, the resources its plugins account for themselves (Ascend card memory,
        say: ``hidden_resources``) are not compared; ``registry`` holds its plugins
        (the default registry when None)."""
        hidden = self.hidden_resources(configuration, registry=registry) \
            if configuration is not None else frozenset()
        nodes = tuple(_without(node, hidden) for node in self.nodes) if hidden else self.nodes
        capacity = Resource()
        for node in nodes:
            capacity.add(node.allocatable)
        # Nodes alike count alike: a trace's machine is often one kind of node.
        kinds = Counter(_figures(node.allocatable) for node in nodes)
        kept: list[WorkloadJob] = []
        skipped = list(self.skipped)
        queues = {queue.name for queue in self.queues} | {"default", ROOT_QUEUE}
        for job in self.jobs:
            prototype = job.prototype
            if prototype.queue not in queues:
                # Left out, as a session leaves it out: it could never start.
                skipped.append(Skipped(job.uid, job.origin,
                                       f"queue {prototype.queue!r} does not exist (a session "
                                       "leaves its jobs out, as Volcano does)", oversized=True))
                continue
            if hidden:
                prototype = prototype.clone()
                prototype.hide_resources(hidden)
            reason = _never_fits(prototype, nodes, capacity) or _never_packs(prototype, kinds)
            if reason is None:
                kept.append(job)
            else:
                skipped.append(Skipped(job.uid, job.origin, reason, oversized=True))
        start = self.start
        if start is None and self.jobs:
            start = self.jobs[0].submit
        return attrs.evolve(self, jobs=tuple(kept), skipped=tuple(skipped), start=start)


    def hidden_resources(self, configuration: SchedulerConfiguration, *,
                         registry: Registry | None = None) -> frozenset[str]:
        """What the configured plugins (of ``registry``, the default one when None)
        hide in a session on this cluster, empty (no plugin is opened:
        ``Session.resources_hidden``)."""
        from batchsched.framework.session import Session

        cluster = ClusterInfo(nodes={node.name: node for node in self.nodes},
                              queues={queue.name: queue for queue in self.queues},
                              config_maps=dict(self.config_maps), dra=self.dra)
        return Session.resources_hidden(cluster, configuration, registry=registry)


def _without(node: NodeInfo, hidden: frozenset[str]) -> NodeInfo:
    twin = node.clone()
    twin.allocatable = twin.allocatable.without(hidden)
    return twin


def _figures(resource: Resource) -> tuple[tuple[str, float], ...]:
    return tuple(sorted((name, resource.get(name)) for name in resource.names()))


def _never_packs(job: JobInfo, kinds: Counter[tuple[tuple[str, float], ...]]) -> str | None:
    """Why a gang of alike tasks can never start: its tasks fit fewer times on the
    empty cluster's nodes than its minimum (each node taking as many as all its
    resources allow); None when they can, or the tasks differ."""
    tasks = list(job.tasks.values())
    if job.min_available <= 1 or not tasks:
        return None
    request = tasks[0].resreq
    if any(task.resreq != request for task in tasks[1:]):
        return None
    asked = [(name, request.get(name)) for name in request.names() if request.get(name) > 0]
    if not asked:
        return None
    fits = 0
    for figures, count in kinds.items():
        have = dict(figures)
        # Volcano's tolerance (0.1 milli) in each comparison, as less_equal has it.
        fits += count * min(int((have.get(name, 0.0) + 0.1) // amount) for name, amount in asked)
        if fits >= job.min_available:
            return None
    return (f"its gang of {job.min_available} tasks of {request} fits only {fits} times "
            "on the cluster's nodes")


def _never_fits(job: JobInfo, nodes: Sequence[NodeInfo], capacity: Resource) -> str | None:
    for task in job.tasks.values():
        if not any(task.resreq.less_equal(node.allocatable) for node in nodes):
            return f"task {task.name} asks {task.resreq}, more than any node has"
    # The least any ``min_available`` of its tasks ask, dimension by dimension (the
    # smallest ones in each): more than the cluster has, and the gang never starts.
    count = max(job.min_available, 1)
    requests = [task.resreq for task in job.tasks.values()]
    if requests and len(requests) < count and all(r == requests[0] for r in requests[1:]):
        # A gang of alike tasks given fewer task objects than its minimum (a trace's
        # job wider than the cluster): what its minimum of them asks.
        need = requests[0].clone().multi(float(count))
    else:
        need = Resource(
            sum(sorted(r.milli_cpu for r in requests)[:count]),
            sum(sorted(r.memory for r in requests)[:count]),
            {name: sum(sorted(r.scalars.get(name, 0.0) for r in requests)[:count])
             for name in {name for r in requests for name in r.scalars}})
    if not need.less_equal(capacity):
        return f"its gang asks {need}, more than the cluster's {capacity}"
    return None


def created_in_listed_order(jobs: list[WorkloadJob]) -> None:
    """Among jobs submitted at the same time (sorted by submit time, the trace's order
    kept), each later one is created the smallest step after the one before, so that
    orders breaking ties by creation time keep the trace's order (FCFS: submit time,
    then trace order)."""
    previous: float | None = None
    for job in jobs:
        created = job.prototype.creation_time
        if previous is not None and created <= previous and job.submit == created:
            created = math.nextafter(previous, math.inf)
            job.prototype.creation_time = created
            job.prototype.podgroup.creation_time = created
        previous = created
