"""The capacity plugin's device quota (Dynamic Resource Allocation).

Transcribed cases: volcano-sh/volcano (Apache-2.0) at commit
ed72c7c815a9fd547a787134676f73d42e9d049c, pkg/scheduler/plugins/capacity/capacity_test.go
(the DRA functions; TestCapacityPluginDRA is in tests/conformance/volcano/dra/) and
pkg/scheduler/api/job_info_test.go (GetMinDRAResources). Capacity dimensions of devices
(``memory.deviceclass/...``) are left out: batchsched does not model consumable capacity.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any

from batchsched.api.dra_usage import DeviceAmount
from batchsched.api.job import JobInfo, PodGroup
from batchsched.api.queue import QueueInfo
from batchsched.api.resource import Resource
from batchsched.api.task import TaskInfo
from batchsched.kube.dra.documents import parse_pod_claims, parse_resource_claim
from batchsched.plugins.capacity.devices import DeviceQuota, Devices, job_min_devices
from batchsched.scenario import parse_scenario, run_scenario

INT64_MAX = 2**63 - 1
GiB = 2**30


def amounts(**counts: int | tuple[int, dict[str, int]]) -> Devices:
    """Devices by class: a count, or (count, capacities)."""
    out: Devices = {}
    for device_class, value in counts.items():
        count, capacity = value if isinstance(value, tuple) else (value, {})
        out[device_class.replace("_", ".")] = DeviceAmount(
            count, {name: Fraction(amount) for name, amount in capacity.items()})
    return out


def counts(devices: Devices | None) -> dict[str, int] | None:
    return None if devices is None else {c: amount.count for c, amount in devices.items()}


def claims_of(*specs: tuple[str, str, int]) -> dict[str, Any]:
    return {f"ns1/{name}": parse_resource_claim({"name": name, "namespace": "ns1", "requests": [
        {"name": "req-1", "exactly": {"deviceClassName": device_class, "count": count}}]})
        for name, device_class, count in specs}


def task(name: str, claim: str, role: str = "") -> TaskInfo:
    return TaskInfo.create("ns1", name, "ns1/job1", role=role, resource_claims=parse_pod_claims(
        [{"name": "claim-1", "resourceClaimName": claim}], "resourceClaims"))


def test_a_shared_claim_is_charged_once() -> None:
    """TestSharedResourceClaimIsChargedOnce."""
    claims = claims_of(("shared", "gpu.com", 1), ("distinct", "gpu.com", 1))
    quota = DeviceQuota(capability=amounts(gpu_com=1))
    first, second = task("a", "shared"), task("b", "shared")
    quota.add_task(first, claims)
    quota.add_task(second, claims)
    assert counts(quota.allocated) == {"gpu.com": 1}
    assert quota.new_claims(first, claims) == {}  # already counted: allocatable
    assert not quota.admits(quota.new_claims(task("d", "distinct"), claims), with_inqueue=False)
    quota.remove_task(first, claims)
    assert counts(quota.allocated) == {"gpu.com": 1}
    quota.remove_task(second, claims)
    assert counts(quota.allocated) == {"gpu.com": 0}


def test_inqueue_counts_for_enqueue_but_not_for_allocate() -> None:
    """TestDRAAllocatableIgnoresInqueue and TestJobEnqueueableAccountsDRAInqueue
    (0 + 1 + 2 > 2 devices)."""
    quota = DeviceQuota(capability=amounts(gpu_com=(2, {"memory": 16 * GiB})),
                        inqueue=amounts(gpu_com=(1, {"memory": 8 * GiB})))
    request = amounts(gpu_com=(2, {"memory": 16 * GiB}))
    assert quota.admits(request, with_inqueue=False)
    assert not quota.admits(request, with_inqueue=True)


def test_a_capacity_the_capability_does_not_name_is_refused() -> None:
    """Volcano's rule with consumable capacity on: the queue must name the capacity."""
    quota = DeviceQuota(capability=amounts(gpu_com=4))
    asking = amounts(gpu_com=(1, {"memory": GiB}))
    assert not quota.admits(asking, with_inqueue=False)
    assert quota.admits(asking, with_inqueue=False, capacity=False)


def test_counts_saturate_instead_of_overflowing() -> None:
    """TestCheckDRAAllocatable_overflowRejected."""
    assert not DeviceQuota(capability=amounts(gpu_example_com=8),
                           inqueue=amounts(gpu_example_com=INT64_MAX)).admits(
        amounts(gpu_example_com=INT64_MAX), with_inqueue=True)
    assert DeviceQuota(capability=amounts(gpu_example_com=8)).admits(
        amounts(gpu_example_com=4), with_inqueue=True)


def test_a_capability_of_zero_or_a_class_without_one_is_no_limit() -> None:
    quota = DeviceQuota(capability=amounts(gpu_com=0))
    assert quota.admits(amounts(gpu_com=1000, nic_com=5), with_inqueue=True)


def test_only_queues_naming_a_device_class_keep_a_quota() -> None:
    """TestParseDRAResourceListCombinesCountAndCapacity (scalars are in milli-units)."""
    named = QueueInfo("q1", capability=Resource(scalars={
        "deviceclass/gpu.example.com": 2000.0,
        "memory.deviceclass/gpu.example.com": 120.0 * GiB * 1000}))
    quota = DeviceQuota.of(named)
    assert quota is not None
    assert quota.capability == {"gpu.example.com": DeviceAmount(2, {"memory": 120 * GiB})}
    assert DeviceQuota.of(QueueInfo("q2", capability=Resource(4000, 0))) is None
    assert DeviceQuota.of(QueueInfo("q3", deserved=Resource(scalars={
        "deviceclass/nic.com": 1000.0}))) is not None


def _job(min_available: int, task_min: dict[str, int], tasks: list[TaskInfo]) -> JobInfo:
    job = JobInfo.from_podgroup(PodGroup("job1", "ns1", "q1", min_member=min_available,
                                         min_task_member=task_min), tasks=tasks)
    return job


def test_min_devices_per_role_times_the_role_minimum() -> None:
    """TestGetMinDRAResourcesIdempotent."""
    claims = claims_of(("c0", "gpu.com", 1))
    job = _job(2, {"worker": 2}, [task("worker-0", "c0", "worker")])
    assert counts(job_min_devices(job, claims)) == {"gpu.com": 2}
    assert counts(job_min_devices(job, claims)) == {"gpu.com": 2}
    assert job.task_min_available == {"worker": 2}


def test_min_devices_of_the_first_tasks_by_name_without_role_minimums() -> None:
    """TestGetMinDRAResourcesFallbackWithoutTaskMinAvailable."""
    claims = claims_of(("b", "gpu.com", 1), ("a", "gpu.com", 2), ("c", "gpu.com", 4))
    job = _job(2, {}, [task("task-b", "b"), task("task-a", "a"), task("task-c", "c")])
    assert counts(job_min_devices(job, claims)) == {"gpu.com": 3}


def test_a_huge_role_minimum_saturates() -> None:
    """TestGetMinDRAResources_constantTimeForHugeTaskMinAvailable (counts only)."""
    claims = claims_of(("c0", "gpu.com", 1))
    job = _job(1, {"worker": 2**31 - 1}, [task("worker-0", "c0", "worker")])
    assert counts(job_min_devices(job, claims)) == {"gpu.com": 2**31 - 1}


def _enqueue_scenario(capability: int, phase: str, count: int,
                      min_resources: bool) -> dict[str, Any]:
    return {
        "version": 1, "name": "dra enqueue",
        "config": {"actions": "enqueue", "tiers": [{"plugins": [{"name": "capacity"}]}]},
        "queues": [{"name": "q1", "capability": {"deviceclass/gpu.com": capability}}],
        "resourceClaims": [{"name": "dra-job-claim", "namespace": "ns1", "requests": [
            {"name": "req-1", "exactly": {"deviceClassName": "gpu.com", "count": count}}]}],
        "jobs": [{"name": "dra-pg", "namespace": "ns1", "queue": "q1", "minMember": 1,
                  "minTaskMember": {"worker": 1}, "phase": phase,
                  **({"minResources": {"cpu": 0}} if min_resources else {})}],
        "tasks": [{"name": "dra-pod", "namespace": "ns1", "job": "dra-pg", "role": "worker",
                   "resourceClaims": [{"name": "claim-1",
                                       "resourceClaimName": "dra-job-claim"}]}],
    }


def test_a_job_asking_only_for_devices_is_enqueued() -> None:
    """TestJobEnqueuedUpdatesDRAInqueueForDRAOnlyJob."""
    decisions = run_scenario(parse_scenario(_enqueue_scenario(4, "Pending", 2, False)))
    assert decisions.pod_group_phases == {"ns1/dra-pg": "Inqueue"}


def test_a_job_over_the_device_quota_is_not_enqueued() -> None:
    """TestJobEnqueueableChecksDRAWithoutMinResources, through the enqueue action (which
    asks the plugins only about jobs with minResources, as Volcano's does)."""
    decisions = run_scenario(parse_scenario(_enqueue_scenario(1, "Pending", 2, True)))
    assert decisions.pod_group_phases == {"ns1/dra-pg": "Pending"}
    assert any(e["message"] == "queue resource quota insufficient: insufficient "
               "dra-resource-exceeded" for e in decisions.events)


_LONG_CLASS = ".".join(["abcdefghij"] * 6) + ".example.com"  # 72 characters: no resource name


def _quota_scenario(device_class: str, quota: dict[str, str], claims: list[dict[str, Any]],
                    *, phase: str = "Inqueue", arguments: dict[str, bool] | None = None) -> Any:
    """One job per claim in queue q1 of ``quota``; each job's task holds its claim."""
    jobs, tasks, documents = [], [], []
    for index, request in enumerate(claims, 1):
        documents.append({"name": f"c{index}", "namespace": "ns1", "requests": [
            {"name": "r", "exactly": {"deviceClassName": device_class, **request}}]})
        jobs.append({"name": f"pg{index}", "namespace": "ns1", "queue": "q1", "minMember": 1,
                     "phase": phase, "minResources": {"cpu": 1}})
        tasks.append({"name": f"p{index}", "namespace": "ns1", "job": f"pg{index}",
                      "requests": {"cpu": 1, "memory": "1Gi"},
                      "resourceClaims": [{"name": "claim", "resourceClaimName": f"c{index}"}]})
    return parse_scenario({
        "version": 1,
        "config": {"actions": "enqueue, allocate", "tiers": [{"plugins": [{
            "name": "capacity", "arguments": {
                "capacity.DynamicResourceAllocationEnable": True, **(arguments or {})}}]}]},
        "queues": [{"name": "q1", "capability": quota}],
        "nodes": [{"name": "n1", "allocatable": {"cpu": 10, "memory": "10Gi", "pods": 10}}],
        "resourceClaims": documents, "jobs": jobs, "tasks": tasks,
    })


def test_a_device_class_name_longer_than_a_resource_name_keeps_its_quota() -> None:
    # Volcano reads the device quota from the queue's spec as written
    # (parseDRAResourceList), not through NewResource, which drops such a name.
    quota = {f"deviceclass/{_LONG_CLASS}": "1"}
    decisions = run_scenario(_quota_scenario(_LONG_CLASS, quota, [{"count": 1}, {"count": 1}]))
    assert decisions.binds == {"ns1/p1": "n1"}
    waiting = run_scenario(_quota_scenario(_LONG_CLASS, quota, [{"count": 2}], phase="Pending"))
    assert waiting.pod_group_phases == {"ns1/pg1": "Pending"}


def test_a_domain_qualified_capacity_name_keeps_its_quota() -> None:
    quota = {"deviceclass/nic.example.com": "4",
             "dra.example.com/bw.deviceclass/nic.example.com": "10"}
    asked = [{"count": 1, "capacity": {"requests": {"dra.example.com/bw": "5"}}}]
    decisions = run_scenario(_quota_scenario(
        "nic.example.com", quota, asked,
        arguments={"capacity.DRAConsumableCapacityEnable": True}))
    assert decisions.binds == {"ns1/p1": "n1"}
