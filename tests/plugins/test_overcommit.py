"""overcommit: enqueue admits jobs until ``factor x cluster - used`` is reserved
(overcommit_test.go TestOvercommitPlugin, plus the Running-job and event rules)."""

from __future__ import annotations

from typing import Any

import pytest
from policy_support import open_scenario, run, scenario

from batchsched.api.queue_accounting import inqueue_resource
from batchsched.framework import Arguments
from batchsched.plugins.overcommit import OvercommitPlugin


def unit_case_document(factor: Any, job: dict[str, Any]) -> dict[str, Any]:
    document = scenario("""
        config:
          actions: ""
          tiers: [{plugins: [{name: overcommit, enableJobEnqueued: true}]}]
        queues: [{name: c1, weight: 1}]
        nodes:
          - {name: n1, allocatable: {cpu: 2, memory: 4Gi}}
          - {name: n2, allocatable: {cpu: 4, memory: 16Gi}}
    """)
    document["config"]["tiers"][0]["plugins"][0]["arguments"] = {"overcommit-factor": factor}
    document["jobs"] = [{"namespace": "test-namespace", "queue": "c1", "minMember": 2,
                         "phase": "Inqueue", **job}]
    return document


@pytest.mark.parametrize(
    ("case", "factor", "job", "expected"),
    [
        ("overCommitFactor is more than 0", 1.2,
         {"name": "pg1", "minResources": {"cpu": "2000m", "memory": "2G"}}, True),
        ("overCommitFactor is less than 0", 0.8,
         {"name": "pg1", "minResources": {"cpu": "2000m", "memory": "2G"}}, True),
        ("when the required resources of pg are too large", 1.2,
         {"name": "pg2", "minResources": {"cpu": "20000m", "memory": "20G"}}, False),
        ("when pg does not fill MinResources", 1.2, {"name": "pg2"}, True),
    ],
)
def test_overcommit_unit_cases(case: str, factor: float, job: dict[str, Any],
                               expected: bool) -> None:
    """UNIT-CASES.md: JobEnqueued then JobEnqueueable for the (Inqueue) job."""
    ssn = open_scenario(unit_case_document(factor, job))
    [info] = ssn.jobs.values()
    ssn.job_enqueued(info)
    assert ssn.job_enqueueable(info) is expected, case


@pytest.mark.parametrize(("given", "used"), [(None, 1.2), (0.8, 1.2), (1, 1.0), (2, 2.0),
                                             ("1.5", 1.2), ("x", 1.2)])
def test_factor_argument(given: Any, used: float) -> None:
    arguments = {} if given is None else {"overcommit-factor": given}
    assert OvercommitPlugin(Arguments(arguments)).factor == used


def enqueue_document(factor: float, *, phase: str = "Running") -> dict[str, Any]:
    """4 cpu cluster, 3 cpu running (of a Running job whose minResources is 4 cpu), and
    two pending jobs of 1 cpu each."""
    document = scenario(f"""
        config:
          actions: enqueue
          tiers: [{{plugins: [{{name: overcommit, arguments: {{overcommit-factor: {factor}}}}}]}}]
        queues: [{{name: q1}}]
        nodes: [{{name: n1, allocatable: {{cpu: 4, memory: 8Gi, pods: 10}}}}]
        jobs:
          - {{name: big, queue: q1, minMember: 3, phase: {phase}, minResources: {{cpu: 4}}}}
          - {{name: a, queue: q1, minMember: 1, minResources: {{cpu: 1}}}}
          - {{name: b, queue: q1, minMember: 1, minResources: {{cpu: 1}}}}
        tasks:
          - {{name: big-1, job: big, node: n1, phase: Running, requests: {{cpu: 1}}}}
          - {{name: big-2, job: big, node: n1, phase: Running, requests: {{cpu: 1}}}}
          - {{name: big-3, job: big, node: n1, phase: Running, requests: {{cpu: 1}}}}
          - {{name: a-1, job: a, requests: {{cpu: 1}}}}
          - {{name: b-1, job: b, requests: {{cpu: 1}}}}
    """)
    return document


def test_running_job_reserves_the_rest_of_its_min_resources() -> None:
    # factor 1.5: idle = 6 - 3 used = 3 cpu; inqueue = 4 - 3 allocated = 1 (big, Running);
    # a: 1 + 1 <= 3 admitted; b: 2 + 1 <= 3 admitted.
    phases = run(enqueue_document(1.5)).pod_group_phases
    assert (phases["default/a"], phases["default/b"]) == ("Inqueue", "Inqueue")
    # factor 1.2: idle = 4.8 - 3 = 1.8; a: 1 + 1 > 1.8 refused; b likewise.
    decisions = run(enqueue_document(1.2))
    assert decisions.pod_group_phases["default/a"] == "Pending"
    assert {"object": "default/a", "type": "Normal", "reason": "Unschedulable",
            "message": "resource in cluster is overused: overused cpu"} in decisions.events


def test_inqueue_job_reserves_its_full_min_resources() -> None:
    # big is Inqueue: its whole 4 cpu count, although 3 are already allocated.
    # factor 2: idle = 8 - 3 = 5; a: 4 + 1 <= 5 admitted; b: 5 + 1 > 5 refused.
    phases = run(enqueue_document(2, phase="Inqueue")).pod_group_phases
    assert (phases["default/a"], phases["default/b"]) == ("Inqueue", "Pending")


def test_inqueue_resource_is_what_the_job_does_not_hold_yet() -> None:
    ssn = open_scenario(enqueue_document(1.2))
    big = ssn.jobs["default/big"]
    assert inqueue_resource(big, big.allocated).milli_cpu == 1000
    assert inqueue_resource(big, big.allocated).memory == 0
