"""QueueUsage.add_job, which skips the reservations of jobs without minResources and reads
the minimum without copying it, leaves exactly what the version it replaced left (kept
below as the reference): the same floats bit for bit, signs of zero included, and the
same scalar orders, in the queue's figures and in the returned delta. count_job (the
same accounting without the delta) leaves the same figures too."""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from batchsched.api import JobInfo, PodGroup, Resource, TaskInfo, TaskStatus
from batchsched.api.queue_accounting import (
    QueueUsage,
    exceeded_part,
    inqueue_resource,
    job_min_resources,
    running_job_reservation,
)
from batchsched.api.types import ALLOCATED_STATUSES, PodGroupPhase

amounts = st.one_of(
    st.sampled_from([0.0, -0.0, 0.1, 0.3, 1000.0, 2.0**53 + 2, 8 * 2.0**30]),
    st.floats(allow_nan=False, allow_infinity=False, min_value=-1e12, max_value=1e12),
)
scalar_names = st.sampled_from(["pods", "nvidia.com/gpu", "count/pods", "example.com/fpga"])


@st.composite
def resources(draw: Any) -> Resource:
    res = Resource(draw(amounts), draw(amounts))
    for name in draw(st.lists(scalar_names, unique=True, max_size=3)):
        res.scalars[name] = draw(amounts)
    return res


@st.composite
def jobs(draw: Any) -> JobInfo:
    minimum = draw(st.one_of(st.none(), resources()))
    podgroup = PodGroup("pg", "ns", min_member=draw(st.integers(0, 3)), min_resources=minimum,
                        phase=draw(st.sampled_from(list(PodGroupPhase))))
    job = JobInfo.from_podgroup(podgroup)
    for i in range(draw(st.integers(0, 5))):
        status = draw(st.sampled_from(list(TaskStatus)))
        task = TaskInfo.create("ns", f"t{i}", job.uid, status=status, node_name="n1")
        task.resreq = draw(resources())
        job.add_task(task)
    return job


def bits(res: Resource) -> tuple[object, ...]:
    return (res.milli_cpu.hex(), res.memory.hex(),
            [(name, amount.hex()) for name, amount in res.scalars.items()])


def usage_bits(usage: QueueUsage) -> tuple[object, ...]:
    return tuple(bits(r) for r in (usage.allocated, usage.request, usage.inqueue, usage.elastic))


def reference_add_job(usage: QueueUsage, job: JobInfo) -> QueueUsage:
    """QueueUsage.add_job as it was written before."""
    delta = QueueUsage()
    for status, tasks in job.task_status_index.items():
        if status in ALLOCATED_STATUSES:
            for task in tasks.values():
                delta.allocated.add(task.resreq)
                delta.request.add(task.resreq)
        elif status == TaskStatus.PENDING:
            for task in tasks.values():
                delta.request.add(task.resreq)
    if job.podgroup.min_resources is not None and job.podgroup.phase == PodGroupPhase.INQUEUE:
        delta.inqueue.add(inqueue_resource(job, job.allocated))
    delta.inqueue.add(running_job_reservation(job))
    delta.elastic.add(exceeded_part(job.allocated, job_min_resources(job)))
    usage.merge(delta)
    return delta


@given(st.lists(jobs(), max_size=4), st.booleans())
def test_add_job_accounts_as_before(queue_jobs: list[JobInfo], start_negative: bool) -> None:
    usage, reference = QueueUsage(), QueueUsage()
    if start_negative:  # figures at -0.0: the one value adding +0.0 would change
        for target in (usage, reference):
            for res in (target.allocated, target.request, target.inqueue, target.elastic):
                res.milli_cpu = res.memory = -0.0
    for job in queue_jobs:
        minimum_before = bits(job.podgroup.min_resources or Resource())
        delta = usage.add_job(job)
        expected = reference_add_job(reference, job)
        assert usage_bits(delta) == usage_bits(expected)
        assert usage_bits(usage) == usage_bits(reference)
        assert bits(job.podgroup.min_resources or Resource()) == minimum_before


@given(st.lists(jobs(), max_size=4))
def test_count_job_accounts_as_add_job(queue_jobs: list[JobInfo]) -> None:
    # count_job leaves out the parts that add nothing: the same bits, from the +0.0
    # every QueueUsage starts at (no sum of them ever reaches -0.0).
    counted, reference = QueueUsage(), QueueUsage()
    for job in queue_jobs:
        counted.count_job(job)
        reference_add_job(reference, job)
        assert usage_bits(counted) == usage_bits(reference)
