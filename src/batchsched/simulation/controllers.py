"""The Kubernetes controllers a replay stands in for, between sessions.

Volcano reads two statuses that controllers outside the scheduler keep up to date:
a ResourceQuota's ``status.used`` (the resource quota controller) and a
PodDisruptionBudget's ``status.disruptionsAllowed`` (the disruption controller). A
single ``batchsched run`` takes them as the scenario gives them; a replay moves pods
over time, so before each session :class:`ClusterControllers` works them out again
from the pods of the moment, as the controllers would:

* a pod exists once its job's pod group has left Pending (Volcano's job controller
  creates a job's pods when its pod group is Inqueue) or once it is placed, and until
  it ends (Succeeded or Failed pods count for nothing);
* a quota's ``used``: Kubernetes' pod evaluator over the existing pods of its
  namespace (``pods``, ``count/pods``, ``cpu``/``requests.cpu``,
  ``memory``/``requests.memory``, ``ephemeral-storage`` and ``hugepages-*`` with and
  without ``requests.``, ``requests.<extended resource>``), from each pod's requests
  with its init containers. What the workload's own ``used`` says beyond its pods at
  the start (usage outside the trace) stays added; a name the evaluator does not
  compute (``limits.*``, object counts other than pods) keeps its given value;
* a budget's ``disruptionsAllowed``: from its ``minAvailable`` or ``maxUnavailable``
  over the existing pods it selects, the Running ones healthy
  (:meth:`~batchsched.api.cluster.PodDisruptionBudget.allowed_for`). A budget given by
  its status alone keeps it. An eviction in a replay takes its pod at once, so no
  disrupted pod is ever on its way: the budget's ``disruptedPods`` are cleared.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from batchsched.api.cluster import PodDisruptionBudget, ResourceQuota
from batchsched.api.job import JobInfo
from batchsched.api.resource import CPU, MEMORY, PODS
from batchsched.api.task import TaskInfo
from batchsched.api.types import COMPLETED_STATUSES, PodGroupPhase, TaskStatus
from batchsched.kube.quota import REQUESTS_PREFIX, pod_quota_usage

__all__ = ["ClusterControllers", "quota_usage"]


def _loaded(name: str, amount: float) -> float:
    """An amount in a resource's own unit as the scenario loader holds it for a quota
    (memory and pods whole, cpu and every other name in thousandths)."""
    return amount if name in (MEMORY, PODS) else amount * 1000.0


def quota_usage(names: Iterable[str], pods: Iterable[TaskInfo]) -> dict[str, float]:
    """What Kubernetes' pod evaluator charges ``pods`` (their requests with their init
    containers) on each quota resource of ``names`` it computes, zero included, in the
    units the scenario loader gives a quota. Limits are not modelled: ``limits.*``
    names are left out."""
    count = 0
    requests: dict[str, float] = {CPU: 0.0, MEMORY: 0.0}
    for pod in pods:
        count += 1
        request = pod.init_resreq
        requests[CPU] += request.milli_cpu / 1000.0
        requests[MEMORY] += request.memory
        for name, amount in request.scalars.items():
            if name != PODS:
                requests[name] = requests.get(name, 0.0) + amount / 1000.0
    usage = pod_quota_usage(requests, {}, pods=float(count))
    return {name: _loaded(name, usage.get(name, 0.0)) for name in names if _computed(name)}


def _computed(name: str) -> bool:
    """Whether the pod evaluator computes the quota resource ``name`` (whether a pod
    asks for it or not)."""
    return name in pod_quota_usage({name.removeprefix(REQUESTS_PREFIX): 0.0}, {}, pods=0.0)


def _existing_pods(jobs: Iterable[JobInfo]) -> Iterator[TaskInfo]:
    for job in jobs:
        created = job.podgroup.phase is not PodGroupPhase.PENDING
        for task in job.tasks.values():
            if task.status in COMPLETED_STATUSES:
                continue
            if created or task.status is not TaskStatus.PENDING:
                yield task


class ClusterControllers:
    """The quota and disruption controllers of a replay: :meth:`refresh` before each
    session brings the quotas' ``used`` and the budgets' ``disruptionsAllowed`` to the
    pods of the moment. Built on the cluster as the replay starts (the quotas' usage
    beyond their pods then is kept as usage outside the trace)."""

    def __init__(self, quotas: list[ResourceQuota], budgets: list[PodDisruptionBudget],
                 jobs: Iterable[JobInfo], *, snapshot: bool = False) -> None:
        self.quotas = quotas
        #: ``snapshot``: the workload is a cluster's state replayed forward (its pods
        #: arrive at the start): the quotas' given use counts them, so what it says
        #: beyond them is taken at the first refresh, and the budgets keep their given
        #: status (their disrupted pods are on their way out).
        self.budgets = [] if snapshot else [
            b for b in budgets if b.min_available is not None or b.max_unavailable is not None]
        #: Per quota, what its given ``used`` says beyond the workload's pods.
        self._outside: list[dict[str, float]] | None = None
        if not snapshot:
            self._outside = self._beyond(list(_existing_pods(jobs)) if quotas else [])

    def _beyond(self, pods: list[TaskInfo]) -> list[dict[str, float]]:
        outside = []
        for quota in self.quotas:
            computed = quota_usage(quota.limited_names,
                                   (p for p in pods if p.namespace == quota.namespace))
            outside.append({name: max(0.0, quota.used.get(name) - amount)
                            for name, amount in computed.items()})
        return outside

    @property
    def active(self) -> bool:
        """Whether there is anything to keep up to date."""
        return bool(self.quotas or self.budgets)

    def refresh(self, jobs: Iterable[JobInfo]) -> None:
        if not self.active:
            return
        pods = list(_existing_pods(jobs))
        if self._outside is None:
            self._outside = self._beyond(pods)
        for quota, outside in zip(self.quotas, self._outside, strict=True):
            computed = quota_usage(quota.limited_names,
                                   (p for p in pods if p.namespace == quota.namespace))
            used = quota.used.clone()
            for name, amount in computed.items():
                used.set(name, outside[name] + amount)
            quota.used = used
            quota.used_names = quota.used_names | quota.limited_names
            quota.used_texts = {}  # recounted: the texts given no longer say it
        for budget in self.budgets:
            matching = [p for p in pods if budget.matches(p.namespace, p.labels)]
            healthy = sum(1 for p in matching if p.status is TaskStatus.RUNNING)
            allowed = budget.allowed_for(len(matching), healthy)
            assert allowed is not None  # only budgets with a spec are kept
            budget.disruptions_allowed = allowed
            budget.disrupted_pods = frozenset()
