"""Coscheduling: a gang admitted at Permit only when all its members are reserved."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from batchsched.api.task import TaskInfo
from batchsched.kubesched import (
    PODS_TO_ACTIVATE_KEY,
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    CycleState,
    KubePluginSpec,
    PodsToActivate,
    QueueingHint,
    Status,
)
from batchsched.plugin import hookimpl

__all__ = ["Coscheduling", "batchsched_register_kube_plugins"]

NAME = "Coscheduling"


class Coscheduling:
    """The gang rule at QueueSort, PreFilter, Reserve/Unreserve and Permit."""

    name = NAME

    def __init__(self, arguments: Mapping[str, Any], handle: Any) -> None:
        self.handle = handle
        self.timeout = float(arguments.get("permitWaitingTimeSeconds", 60))

    def _group(self, pod: TaskInfo) -> Any:
        return self.handle.cluster.jobs.get(pod.job)

    def less(self, left: TaskInfo, right: TaskInfo) -> bool:
        if left.priority != right.priority:
            return left.priority > right.priority
        jobs = self.handle.cluster.jobs if self.handle.cluster is not None else {}
        def created(pod: TaskInfo) -> float:
            job = jobs.get(pod.job)
            return job.creation_time if job is not None else pod.creation_time
        return (created(left), left.job, left.uid) < (created(right), right.job, right.uid)

    def pre_filter(self, state: CycleState, pod: TaskInfo) -> Status:
        group = self._group(pod)
        if group is not None and len(group.tasks) < group.min_available:
            return Status.unschedulable(
                f"pod group {group.uid} has {len(group.tasks)} pods, fewer than its "
                f"minMember {group.min_available}", plugin=NAME, unresolvable=True)
        return Status.success()

    def events_to_register(self) -> list[ClusterEventWithHint]:
        """As scheduler-plugins' Coscheduling: a pod added (a group short of members
        may be complete now), with a hint that reads it: a pod of another group
        cannot help."""
        return [ClusterEventWithHint(ClusterEvent("Pod", ActionType.ADD), self._same_group)]

    @staticmethod
    def _same_group(pod: TaskInfo, old: Any, new: Any) -> QueueingHint:
        if isinstance(new, TaskInfo) and new.job != pod.job:
            return QueueingHint.QUEUE_SKIP
        return QueueingHint.QUEUE

    def reserve(self, state: CycleState, pod: TaskInfo, node_name: str) -> Status:
        return Status.success()

    def unreserve(self, state: CycleState, pod: TaskInfo, node_name: str) -> None:
        for waiting in self.handle.waiting_pods:
            if waiting.pod.job == pod.job and waiting.pod.uid != pod.uid:
                waiting.reject(NAME, f"a member of pod group {pod.job} was rejected")

    def permit(self, state: CycleState, pod: TaskInfo, node_name: str
               ) -> tuple[Status, float]:
        group = self._group(pod)
        if group is None:
            return Status.success(), 0.0
        assumed = sum(1 for task in group.tasks.values() if task.node_name)
        if assumed < group.min_available:
            # The siblings that wait in the queue are tried now (scheduler-plugins'
            # ActivateSiblings): the gang completes while this pod holds its node.
            activate = state.read(PODS_TO_ACTIVATE_KEY)
            if isinstance(activate, PodsToActivate):
                for task in group.tasks.values():
                    if task.uid != pod.uid and not task.node_name:
                        activate.pods[task.uid] = task
            return Status.wait(f"{assumed}/{group.min_available} of pod group {group.uid} "
                               "assumed", plugin=NAME), self.timeout
        for waiting in self.handle.waiting_pods:
            if waiting.pod.job == pod.job:
                waiting.allow(NAME)
        return Status.success(), 0.0


@hookimpl
def batchsched_register_kube_plugins() -> Iterable[KubePluginSpec]:
    return [KubePluginSpec(NAME, Coscheduling, "gang scheduling at Permit")]
