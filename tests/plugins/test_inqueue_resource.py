"""queue accounting: the part of minResources a job does not hold yet
(Volcano pkg/scheduler/plugins/util/util_test.go TestGetInqueueResource, commit
ed72c7c815a9fd547a787134676f73d42e9d049c, Apache-2.0).

Volcano's ``util.GetInqueueResource`` is ``batchsched.api.queue_accounting.inqueue_resource``.
As in the Go test, only MilliCPU, Memory and the expected scalar names are checked.
"""

from __future__ import annotations

import pytest

from batchsched.api import JobInfo, PodGroup, Resource
from batchsched.api.queue_accounting import inqueue_resource

GPU = "nvidia.com/gpu"


def job_with_min_resources(min_resources: dict[str, str]) -> JobInfo:
    podgroup = PodGroup("pg", "default", min_resources=Resource.from_mapping(min_resources))
    return JobInfo.from_podgroup(podgroup)


@pytest.mark.parametrize(
    ("case", "min_resources", "allocated", "expected"),
    [
        ("nothing allocated yet: full request reserved",
         {"cpu": "4", "memory": "4096", GPU: "8"},
         Resource(),
         Resource(4000, 4096, {GPU: 8000})),
        ("partial GPU allocation: remainder reserved in milli-units",
         {"cpu": "4", "memory": "4096", GPU: "8"},
         Resource(1000, 1024, {GPU: 4000}),
         Resource(3000, 3072, {GPU: 4000})),
        ("GPU fully allocated: no scalar reserved",
         {GPU: "2"},
         Resource(0, 0, {GPU: 2000}),
         Resource()),
        ("partial pods allocation: remainder reserved in whole units",
         {"cpu": "4", "pods": "10"},
         Resource(1000, 0, {"pods": 4}),
         Resource(3000, 0, {"pods": 6})),
    ],
)
def test_get_inqueue_resource(case: str, min_resources: dict[str, str],
                              allocated: Resource, expected: Resource) -> None:
    got = inqueue_resource(job_with_min_resources(min_resources), allocated)
    assert got.milli_cpu == expected.milli_cpu, case
    assert got.memory == expected.memory, case
    for name, want in expected.scalars.items():
        assert got.scalars.get(name, 0.0) == want, (case, name)
