"""queue_accounting: the one version of the job-resource helpers every queue plugin uses."""

from __future__ import annotations

from batchsched.api import JobInfo, PodGroup, Resource, TaskInfo, TaskStatus
from batchsched.api.queue_accounting import QueueUsage, exceeded_part, job_min_resources


def test_exceeded_part_drops_scalars_that_are_not_above_the_reference() -> None:
    held = Resource.from_mapping({"cpu": 3, "memory": "1Gi", "nvidia.com/gpu": 1})
    minimum = Resource.from_mapping({"cpu": 1, "memory": "2Gi", "nvidia.com/gpu": 1})
    rest = exceeded_part(held, minimum)
    assert (rest.milli_cpu, rest.memory) == (2000.0, 0.0)
    assert "nvidia.com/gpu" not in rest.scalars  # Volcano's Diff drops non-positive scalars


def test_elastic_is_what_a_job_holds_beyond_its_min_resources() -> None:
    minimum = Resource.from_mapping({"cpu": 1, "nvidia.com/gpu": 1})
    job = JobInfo.from_podgroup(PodGroup("pg", "ns", min_member=1, min_resources=minimum))
    for i in range(3):
        job.add_task(TaskInfo.create(
            "ns", f"t{i}", job.uid, Resource.from_mapping({"cpu": 1, "nvidia.com/gpu": 1})
            if i == 0 else Resource.from_mapping({"cpu": 1}),
            status=TaskStatus.RUNNING, node_name="n1"))
    assert job_min_resources(job).equal(minimum)
    elastic = QueueUsage().add_job(job).elastic
    assert elastic.milli_cpu == 2000.0
    assert "nvidia.com/gpu" not in elastic.scalars
