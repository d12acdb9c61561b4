"""resourcequota: namespace quotas gate enqueue (resourcequota_test.go
TestResourceQuotaPlugin, plus admitted-this-session usage, used, names and events)."""

from __future__ import annotations

from typing import Any

import pytest
from policy_support import open_scenario, run, scenario

from batchsched.api import Resource, ResourceQuota
from batchsched.plugins.resourcequota import quota_exceeded


def unit_case_document(job: dict[str, Any], *, quota: bool) -> dict[str, Any]:
    document = scenario("""
        config:
          actions: ""
          tiers: [{plugins: [{name: resourcequota, enableJobEnqueued: true}]}]
        queues: [{name: c1, weight: 1}]
    """)
    document["jobs"] = [{"namespace": "default", "queue": "c1", "minMember": 2,
                         "phase": "Inqueue", **job}]
    if quota:
        document["resourceQuotas"] = [{"name": "test", "namespace": "default",
                                       "hard": {"cpu": "2000m", "memory": "2G"}}]
    return document


@pytest.mark.parametrize(
    ("case", "quota", "job", "expected"),
    [
        ("ResourceQuota capacity can match the needs of this pg", True,
         {"name": "pg1", "minResources": {"cpu": "2000m", "memory": "2G"}}, True),
        ("ResourceQuota capacity can't match the needs of this pg", True,
         {"name": "pg2", "minResources": {"cpu": "20000m", "memory": "20G"}}, False),
        ("No ResourceQuota resource object", False,
         {"name": "pg2", "minResources": {"cpu": "20000m", "memory": "20G"}}, True),
        ("MinResources field of pg is not set", True, {"name": "pg3"}, True),
    ],
)
def test_resourcequota_unit_cases(case: str, quota: bool, job: dict[str, Any],
                                  expected: bool) -> None:
    """UNIT-CASES.md: JobEnqueueable only (no JobEnqueued call)."""
    ssn = open_scenario(unit_case_document(job, quota=quota))
    [info] = ssn.jobs.values()
    assert ssn.job_enqueueable(info) is expected, case


def enqueue_document(quota_hard: dict[str, Any], used: dict[str, Any] | None = None,
                     ) -> dict[str, Any]:
    document = scenario("""
        config:
          actions: enqueue
          tiers: [{plugins: [{name: resourcequota}]}]
        jobs:
          - {name: a, namespace: team, minMember: 1, minResources: {cpu: 1, memory: 1Gi},
             createdAt: 1}
          - {name: b, namespace: team, minMember: 1, minResources: {cpu: 1, memory: 1Gi},
             createdAt: 2}
          - {name: c, namespace: free, minMember: 1, minResources: {cpu: 100}, createdAt: 3}
    """)
    quota: dict[str, Any] = {"name": "rq", "namespace": "team", "hard": quota_hard}
    if used is not None:
        quota["used"] = used
    document["resourceQuotas"] = [quota]
    return document


def test_jobs_admitted_in_the_session_count_against_the_quota() -> None:
    decisions = run(enqueue_document({"cpu": "1500m", "memory": "8Gi"}))
    assert decisions.pod_group_phases == {
        "team/a": "Inqueue", "team/b": "Pending", "free/c": "Inqueue"}
    assert {"object": "team/b", "type": "Normal", "reason": "Unschedulable",
            "message": "resource quota insufficient, requested: map[cpu:1], used: map[], "
                       "limited: map[cpu:1500m]"} in decisions.events


def test_used_counts_and_unrequested_names_are_ignored() -> None:
    # pods is limited but not requested: not compared. cpu: used 1 + 1 <= 2 for a only.
    decisions = run(enqueue_document({"cpu": 2, "pods": 0}, used={"cpu": 1}))
    assert decisions.pod_group_phases["team/a"] == "Inqueue"
    assert decisions.pod_group_phases["team/b"] == "Pending"


def test_names_match_exactly() -> None:
    # requests.cpu is not the cpu the pod groups name: nothing is compared.
    decisions = run(enqueue_document({"requests.cpu": "500m"}))
    assert decisions.pod_group_phases["team/b"] == "Inqueue"


def test_quota_exceeded_compares_exactly_without_epsilon() -> None:
    quota = ResourceQuota("rq", "ns", Resource(1000), hard_names=frozenset({"cpu"}))
    assert quota_exceeded(quota, Resource(1000)) == []
    assert quota_exceeded(quota, Resource(1000.05)) == ["cpu"]
    assert quota_exceeded(quota, Resource(500), pending=Resource(600)) == ["cpu"]


def test_a_job_another_plugin_rejects_uses_no_quota() -> None:
    """resourcequota_test.go TestJobEnqueuedOnOtherPluginsReject (listed as skipped in
    UNIT-CASES.md for its mock plugin): job-enqueued runs only for admitted jobs. Here
    overcommit refuses pgA (memory), so pgA's cpu does not count against rq1."""
    decisions = run(scenario("""
        config:
          actions: enqueue
          tiers: [{plugins: [{name: resourcequota}, {name: overcommit}]}]
        nodes: [{name: n1, allocatable: {cpu: 4, memory: 4Gi, pods: 10}}]
        resourceQuotas: [{name: rq1, namespace: ns1, hard: {cpu: 1, memory: 1Ti}}]
        jobs:
          - {name: pgA, namespace: ns1, minMember: 1, minResources: {cpu: 1, memory: 100Gi},
             createdAt: 1}
          - {name: pgB, namespace: ns1, minMember: 1, minResources: {cpu: 1, memory: 1Gi},
             createdAt: 2}
    """))
    assert decisions.pod_group_phases == {"ns1/pgA": "Pending", "ns1/pgB": "Inqueue"}


def test_the_refusal_writes_the_lists_as_kubernetes_holds_them() -> None:
    """Volcano's Mask keeps every name the lists hold, a zero too; a quota name
    (requests.memory) is written as the quantity it limits."""
    import yaml

    from batchsched.scenario import parse_scenario, run_scenario

    document = yaml.safe_load("""
version: 1
config: {actions: enqueue, tiers: [{plugins: [{name: resourcequota}]}]}
queues: [{name: q1}]
nodes: [{name: n1, allocatable: {cpu: 10, memory: 10Gi, pods: 110}}]
resourceQuotas:
- {name: fresh, namespace: a, hard: {cpu: "2", memory: 4Gi}, used: {cpu: "0", memory: "0"}}
- {name: nogpu, namespace: b, hard: {nvidia.com/gpu: "0"}, used: {nvidia.com/gpu: "0"}}
- {name: reqmem, namespace: c, hard: {requests.memory: 1Gi}, used: {requests.memory: 512Mi}}
jobs:
- {name: pa, namespace: a, queue: q1, minMember: 1, minResources: {cpu: 3, memory: 1Gi}}
- {name: pb, namespace: b, queue: q1, minMember: 1, minResources: {cpu: 1, nvidia.com/gpu: 1}}
- {name: pc, namespace: c, queue: q1, minMember: 1, minResources: {requests.memory: 1Gi}}
""")
    prefix = "resource quota insufficient, requested: "
    events = {event["object"]: event["message"]
              for event in run_scenario(parse_scenario(document)).events
              if event["message"].startswith(prefix)}
    assert events["a/pa"] == prefix + "map[cpu:3], used: map[cpu:0], limited: map[cpu:2]"
    assert events["b/pb"] == (prefix + "map[nvidia.com/gpu:1], used: map[nvidia.com/gpu:0], "
                              "limited: map[nvidia.com/gpu:0]")
    assert events["c/pc"] == (prefix + "map[requests.memory:1Gi], used: "
                              "map[requests.memory:512Mi], limited: map[requests.memory:1Gi]")
