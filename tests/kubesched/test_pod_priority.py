"""Kubernetes knows a pod's own priority (``spec.priority``); Volcano's
``volcano.sh/task-priority`` annotation changes only Volcano's task priority."""

from __future__ import annotations

from batchsched.api.task import TaskInfo
from batchsched.kubesched.queue import default_less


def test_the_annotation_overrides_the_task_priority_not_the_pod_s() -> None:
    annotated = TaskInfo.create("ns", "a", "ns/j", priority=10,
                                annotations={"volcano.sh/task-priority": "1000"})
    assert (annotated.priority, annotated.pod_priority) == (1000, 10)
    plain = TaskInfo.create("ns", "b", "ns/j", priority=100)
    assert (plain.priority, plain.pod_priority) == (100, 100)
    assert annotated.clone().pod_priority == 10
    # kube-scheduler's PrioritySort reads spec.priority: b goes first.
    assert default_less(plain, annotated) and not default_less(annotated, plain)


def test_an_unreadable_annotation_changes_nothing() -> None:
    task = TaskInfo.create("ns", "a", "ns/j", priority=10,
                           annotations={"volcano.sh/task-priority": "high"})
    assert (task.priority, task.pod_priority, task.spec_priority) == (10, 10, None)
