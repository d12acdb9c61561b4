"""What a task's claims ask for by device class (Volcano's ``buildTaskDRAInfo``), and the
queue status they give at session close (``deviceclass/<class>``, a shared claim counted
once per queue, ancestors of a hierarchy included).

Transcribed cases: volcano-sh/volcano (Apache-2.0) at commit
ed72c7c815a9fd547a787134676f73d42e9d049c, pkg/scheduler/cache/cache_dra_test.go
TestBuildTaskDRAResreq and pkg/scheduler/framework/session_dra_queue_status_test.go.
"""

from __future__ import annotations

from typing import Any

import pytest

from batchsched.api.dra_usage import task_claim_devices
from batchsched.api.task import TaskInfo
from batchsched.kube.dra.documents import parse_pod_claims, parse_resource_claim
from batchsched.scenario import parse_scenario, run_scenario


def claim(name: str, *requests: tuple[str, str, int]) -> dict[str, Any]:
    return {"name": name, "namespace": "default", "requests": [
        {"name": request, "exactly": {"deviceClassName": device_class, "count": count}}
        for request, device_class, count in requests]}


def task_with(entries: list[dict[str, str]]) -> TaskInfo:
    return TaskInfo.create("default", "pod", "default/pg",
                           resource_claims=parse_pod_claims(entries, "resourceClaims"))


CLAIMS = {c.key: c for c in map(parse_resource_claim, [
    claim("claim1-obj", ("req1", "gpu.com", 2)),
    claim("claim2-obj", ("req1", "gpu.com", 3)),
    claim("single", ("req1", "gpu.com", 1)),
    claim("mixed", ("req1", "gpu.com", 1), ("req2", "nic.com", 2)),
])}


@pytest.mark.parametrize(("entries", "expected"), [
    pytest.param([], {}, id="No ResourceClaims"),
    pytest.param([{"name": "claim1", "resourceClaimName": "single"}],
                 {"default/single": {"gpu.com": 1}}, id="Single ResourceClaim with one request"),
    pytest.param([{"name": "claim1", "resourceClaimName": "claim1-obj"},
                  {"name": "claim2", "resourceClaimName": "claim2-obj"}],
                 {"default/claim1-obj": {"gpu.com": 2}, "default/claim2-obj": {"gpu.com": 3}},
                 id="Multiple ResourceClaims aggregating same device class"),
    pytest.param([{"name": "claim1", "resourceClaimName": "mixed"}],
                 {"default/mixed": {"gpu.com": 1, "nic.com": 2}}, id="Mixed device classes"),
    # Volcano's cache refuses the pod (it is not cached until its next update); here the
    # task stays and counts no device.
    pytest.param([{"name": "claim1", "resourceClaimName": "missing-claim"}], {},
                 id="Missing ResourceClaim"),
    pytest.param([{"name": "claim1", "resourceClaimTemplateName": "claim-template"}], {},
                 id="Unresolved ResourceClaimTemplate"),
])
def test_what_a_task_s_claims_ask_for(entries: list[dict[str, str]],
                                      expected: dict[str, dict[str, int]]) -> None:
    counts = {key: {c: amount.count for c, amount in per_class.items()}
              for key, per_class in task_claim_devices(task_with(entries), CLAIMS).items()}
    assert counts == expected


def test_count_multiplies_consumable_capacity() -> None:
    """TestBuildTaskDRAResreq "Count multiplies consumable capacity"."""
    claims = {"default/claim-capacity": parse_resource_claim({
        "name": "claim-capacity", "requests": [{"name": "req1", "exactly": {
            "deviceClassName": "gpu.com", "count": 2,
            "capacity": {"requests": {"memory": "8Gi"}}}}]})}
    task = task_with([{"name": "claim1", "resourceClaimName": "claim-capacity"}])
    [per_class] = task_claim_devices(task, claims).values()
    assert (per_class["gpu.com"].count, per_class["gpu.com"].capacity) == (
        2, {"memory": 16 * 2**30})
    [without] = task_claim_devices(task, claims, capacity=False).values()
    assert without["gpu.com"].capacity == {}


def test_all_and_first_available_requests_are_not_counted() -> None:
    document = {"name": "odd", "namespace": "default", "requests": [
        {"name": "every", "exactly": {"deviceClassName": "gpu.com", "allocationMode": "All"}},
        {"name": "either", "firstAvailable": [{"name": "a", "deviceClassName": "gpu.com"}]}]}
    claims = {"default/odd": parse_resource_claim(document)}
    assert task_claim_devices(task_with([{"name": "c", "resourceClaimName": "odd"}]),
                              claims) == {}


def _scenario(queues: list[dict[str, Any]], pods: list[tuple[str, str, str]]) -> dict[str, Any]:
    """Pods ``(name, queue, claim)`` already running on n1, each in a pod group of its own."""
    return {
        "version": 1, "name": "queue status",
        "config": {"actions": "", "tiers": [{"plugins": [{"name": "gang"}]}]},
        "deviceClasses": [{"name": "gpu.example.com"}],
        "resourceClaims": [claim("shared", ("gpu", "gpu.example.com", 1)),
                           claim("own", ("gpu", "gpu.example.com", 2))],
        "queues": queues,
        "nodes": [{"name": "n1", "allocatable": {"cpu": 8, "memory": "8Gi", "pods": 10}}],
        "jobs": [{"name": f"pg-{name}", "queue": queue, "phase": "Running"}
                 for name, queue, _ in pods],
        "tasks": [{"name": name, "job": f"pg-{name}", "node": "n1", "phase": "Running",
                   "requests": {"cpu": 1},
                   "resourceClaims": [{"name": "gpu", "resourceClaimName": used}]}
                  for name, _, used in pods],
    }


def test_a_claim_shared_by_tasks_of_a_queue_counts_once() -> None:
    """session_dra_queue_status_test.go TestAddTaskDRAAllocatedByQueueDeduplicatesSharedClaims."""
    document = _scenario([{"name": "q1"}], [("a", "q1", "shared"), ("b", "q1", "shared")])
    status = run_scenario(parse_scenario(document)).queue_status["q1"]
    assert status["allocated"]["deviceclass/gpu.example.com"] == "1"
    assert status["allocated"]["cpu"] == "2"


def test_queue_status_names_the_capacities_claims_ask_for() -> None:
    """TestMergeDRAAllocatedIntoResourceList: count and capacities of a class."""
    document = _scenario([{"name": "q1"}], [("a", "q1", "sliced")])
    document["resourceClaims"].append({"name": "sliced", "namespace": "default", "requests": [
        {"name": "gpu", "exactly": {"deviceClassName": "gpu.example.com", "count": 2,
                                    "capacity": {"requests": {"memory": "4Gi",
                                                              "cores": "150"}}}}]})
    status = run_scenario(parse_scenario(document)).queue_status["q1"]["allocated"]
    assert status["deviceclass/gpu.example.com"] == "2"
    assert status["cores.deviceclass/gpu.example.com"] == "300"
    assert status["memory.deviceclass/gpu.example.com"] == str(8 * 2**30)


def test_queue_status_counts_for_the_ancestors_of_a_hierarchy() -> None:
    """Volcano's updateQueueStatus: with a root queue, a task's resources and devices count
    for its queue's parents up to the root; a claim shared across queues counts in each."""
    queues = [{"name": "root"}, {"name": "team", "parent": "root"},
              {"name": "q1", "parent": "team"}, {"name": "q2"}]
    document = _scenario(queues, [("a", "q1", "shared"), ("b", "q2", "shared"),
                                  ("c", "q1", "own")])
    status = run_scenario(parse_scenario(document)).queue_status
    devices = {name: s["allocated"].get("deviceclass/gpu.example.com") for name, s in
               status.items()}
    cpus = {name: s["allocated"].get("cpu") for name, s in status.items()}
    assert devices == {"root": "3", "team": "3", "q1": "3", "q2": "1", "default": None}
    assert cpus == {"root": "3", "team": "2", "q1": "2", "q2": "1", "default": "0"}
