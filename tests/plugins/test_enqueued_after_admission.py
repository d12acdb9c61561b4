"""proportion_test.go and capacity_test.go ``TestJobEnqueuedOnOtherPluginsReject``
(listed as skipped in UNIT-CASES.md for their mock plugin): a plugin's job-enqueued
function runs only for a job every plugin admitted, so a job another plugin of the
tier refuses reserves none of its queue. Here overcommit refuses pgA (its memory), in
place of Volcano's rejecter test plugin; pgB then fits the queue's 1 cpu."""

from __future__ import annotations

import pytest
from policy_support import run, scenario


@pytest.mark.parametrize("plugin", ["proportion", "capacity"])
def test_a_job_another_plugin_rejects_reserves_none_of_its_queue(plugin: str) -> None:
    decisions = run(scenario(f"""
        config:
          actions: enqueue
          tiers: [{{plugins: [{{name: {plugin}}}, {{name: overcommit}}]}}]
        queues: [{{name: q1, weight: 1, capability: {{cpu: 1, memory: 4Ti}},
                  deserved: {{cpu: 1, memory: 4Ti}}}}]
        nodes: [{{name: n1, allocatable: {{cpu: 4, memory: 4Gi, pods: 10}}}}]
        jobs:
          - {{name: pgA, namespace: ns1, queue: q1, minMember: 1,
             minResources: {{cpu: 1, memory: 100Gi}}, createdAt: 1}}
          - {{name: pgB, namespace: ns1, queue: q1, minMember: 1,
             minResources: {{cpu: 1, memory: 1Gi}}, createdAt: 2}}
    """))
    assert decisions.pod_group_phases == {"ns1/pgA": "Pending", "ns1/pgB": "Inqueue"}
