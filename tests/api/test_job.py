"""JobInfo's counts exactly as seed 000 §4.6 (Volcano's api/job_info.go) defines them."""

from __future__ import annotations

import attrs
import pytest

from batchsched.api import JobInfo, PodGroup, Resource, TaskInfo, TaskStatus
from batchsched.api.hypernode import NetworkTopology
from batchsched.api.sub_job import SubGroupPolicy
from batchsched.api.types import PodGroupCondition, PodGroupConditionType, PodGroupPhase

S = TaskStatus


def job_with(statuses: list[tuple[TaskStatus, str, bool]], min_member: int,
             min_task: dict[str, int] | None = None) -> JobInfo:
    """statuses: (status, role, best_effort) per task."""
    job = JobInfo.from_podgroup(PodGroup("pg", "ns", min_member=min_member,
                                         min_task_member=min_task or {}))
    for i, (status, role, best_effort) in enumerate(statuses):
        req = None if best_effort else Resource(1000, 2**30)
        task = TaskInfo.create("ns", f"t{i}", job.uid, req, role=role, status=status,
                               node_name="n1" if status != S.PENDING else "")
        job.add_task(task)
    job.check_invariants()
    return job


def test_ready_counts_bound_binding_running_allocated_succeeded() -> None:
    job = job_with([(S.BOUND, "", False), (S.BINDING, "", False), (S.RUNNING, "", False),
                    (S.ALLOCATED, "", False), (S.SUCCEEDED, "", False), (S.PIPELINED, "", False),
                    (S.PENDING, "", False), (S.FAILED, "", False), (S.RELEASING, "", False)], 5)
    assert job.ready_task_num() == 5
    assert job.waiting_task_num() == 1
    assert job.valid_task_num() == 7  # ready + pipelined + pending
    assert job.is_ready() and job.is_pipelined() and not job.is_starving()


def test_pending_best_effort_counts_for_ready_but_not_starving() -> None:
    job = job_with([(S.RUNNING, "", False), (S.PENDING, "", True)], 2)
    assert job.pending_best_effort_task_num() == 1
    assert job.is_ready()
    assert job.is_starving()  # waiting + ready = 1 < 2


@pytest.mark.parametrize(
    ("statuses", "min_member", "ready", "pipelined", "starving"),
    [
        ([S.ALLOCATED, S.PENDING], 2, False, False, True),
        ([S.ALLOCATED, S.PIPELINED], 2, False, True, False),
        ([S.RUNNING, S.RUNNING], 2, True, True, False),
        ([], 0, True, True, False),
    ],
)
def test_gang_predicates(statuses: list[TaskStatus], min_member: int, ready: bool,
                         pipelined: bool, starving: bool) -> None:
    job = job_with([(s, "", False) for s in statuses], min_member)
    assert (job.is_ready(), job.is_pipelined(), job.is_starving()) == (ready, pipelined, starving)


def test_per_role_minimums() -> None:
    roles = {"master": 1, "worker": 2}
    job = job_with([(S.ALLOCATED, "master", False), (S.ALLOCATED, "worker", False),
                    (S.PENDING, "worker", False)], 3, roles)
    assert job.check_task_valid()
    assert not job.check_task_ready()  # one worker short
    assert not job.check_task_pipelined()
    assert job.check_task_starving()
    job.update_task_status(job.tasks["ns/t2"], S.PIPELINED)
    assert job.check_task_pipelined() and not job.check_task_ready()
    assert not job.check_task_starving()


def test_role_checks_pass_when_min_available_is_below_role_total() -> None:
    job = job_with([(S.PENDING, "worker", False)], 1, {"master": 1, "worker": 1})
    assert job.check_task_valid() and job.check_task_ready() and job.check_task_starving()


def test_update_task_status_keeps_allocated_and_index_exact() -> None:
    job = job_with([(S.PENDING, "", False), (S.PENDING, "", False)], 2)
    task = job.tasks["ns/t0"]
    job.update_task_status(task, S.ALLOCATED)
    assert job.allocated == Resource(1000, 2**30, {"pods": 1})
    job.update_task_status(task, S.PIPELINED)
    assert job.allocated.is_empty()
    job.check_invariants()
    assert set(job.task_status_index) == {S.PENDING, S.PIPELINED}


def test_need_continue_allocating() -> None:
    # minAvailable == number of tasks: stop at the first failure.
    job = job_with([(S.PENDING, "", False)] * 2, 2)
    assert not job.need_continue_allocating()
    # A failed role with an unmet minimum stops the job.
    job = job_with([(S.PENDING, "master", False), (S.PENDING, "worker", False),
                    (S.PENDING, "worker", False)], 2, {"master": 1, "worker": 1})
    from batchsched.api.fit import FitErrors
    job.nodes_fit_errors["ns/t0"] = FitErrors()
    assert not job.need_continue_allocating()
    assert job.task_has_fit_errors(job.tasks["ns/t0"])
    assert not job.task_has_fit_errors(job.tasks["ns/t1"])


def test_clone_is_deep() -> None:
    job = job_with([(S.PENDING, "", False)], 1)
    twin = job.clone()
    twin.update_task_status(twin.tasks["ns/t0"], S.ALLOCATED)
    assert job.tasks["ns/t0"].status == S.PENDING
    job.check_invariants()
    twin.check_invariants()


def test_a_copy_keeps_no_memo_of_its_original() -> None:
    """Answers kept with a job object (plugins check them against ``mutations``) do
    not travel to its copies, whose state may move apart."""
    job = job_with([(S.PENDING, "", False)], 1)
    job.memo["plugin.answer"] = (job.mutations, "kept")
    twin = job.clone()
    assert twin.memo == {}
    assert job.memo == {"plugin.answer": (job.mutations, "kept")}


def test_sla_waiting_time_falls_back_past_an_invalid_annotation() -> None:
    pg = PodGroup("pg", "ns", annotations={"volcano.sh/sla-waiting-time": "soon",
                                           "sla-waiting-time": "1h2m3s"})
    assert JobInfo.from_podgroup(pg).waiting_time == 3723
    assert JobInfo.from_podgroup(PodGroup("pg", "ns", annotations={
        "sla-waiting-time": "-5m"})).waiting_time is None


def test_pod_group_clone_copies_every_field() -> None:
    """The clone is written field by field: a field added to PodGroup must be copied."""
    podgroup = PodGroup(
        name="pg", namespace="ns", queue="q", min_member=3, min_task_member={"worker": 2},
        min_resources=Resource(1000, 2048), phase=PodGroupPhase.RUNNING,
        priority_class_name="high", annotations={"a": "1"}, labels={"l": "2"},
        creation_time=7.0,
        conditions=[PodGroupCondition(PodGroupConditionType.SCHEDULED, "True", "r", "m", "t")],
        running=1, succeeded=2, failed=3,
        network_topology=NetworkTopology("soft", 2),
        sub_group_policies=(SubGroupPolicy("workers", match_label_keys=("rack",)),),
    )
    defaults = PodGroup(name="other")
    twin = podgroup.clone()
    for field in attrs.fields(PodGroup):
        value = getattr(podgroup, field.name)
        assert value != getattr(defaults, field.name), f"set {field.name} in this test"
        assert getattr(twin, field.name) == value, field.name
    # Read-only once built (replaced whole, never changed in place): shared.
    assert twin.min_task_member is podgroup.min_task_member
    assert twin.min_resources is podgroup.min_resources
    assert twin.conditions is not podgroup.conditions
