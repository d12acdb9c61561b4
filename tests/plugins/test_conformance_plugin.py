"""conformance: system-critical pods are never victims (conformance_test.go).

(Named ``test_conformance_plugin`` because ``tests/conformance/test_conformance.py``
already holds the basename ``test_conformance``.)
"""

from __future__ import annotations

import pytest
from policy_support import cluster, make_job, make_task, open_cluster

from batchsched.api import TaskStatus
from batchsched.framework.events import EvictionContext, EvictionKind

RUNNING = {"status": TaskStatus.RUNNING, "node": "test-node"}


def test_preemptable_drops_kube_system_pods() -> None:
    """TestConformancePlugin (UNIT-CASES.md): tier conformance with enablePreemptable,
    preemptees not in the session, an empty preemptor."""
    system = make_task("test-pod", namespace="kube-system", job="kube-system/pg1", **RUNNING)
    user = make_task("test-pod", namespace="test-namespace", job="test-namespace/pg1",
                     **RUNNING)
    ssn = open_cluster(cluster(), [{"name": "conformance", "enablePreemptable": True}])
    assert ssn.preemptable(make_task("preemptor", job=""), [system, user]) == [user]


@pytest.mark.parametrize("class_name", ["system-cluster-critical", "system-node-critical"])
def test_critical_priority_classes_are_never_victims(class_name: str) -> None:
    critical = make_task("critical", priority_class_name=class_name, **RUNNING)
    ordinary = make_task("ordinary", priority_class_name="high", **RUNNING)
    job = make_job("pg1", [critical, ordinary])
    ssn = open_cluster(cluster([job]), [{"name": "conformance"}])
    preemptor = make_task("p")
    assert ssn.preemptable(preemptor, [critical, ordinary]) == [ordinary]
    assert ssn.reclaimable(preemptor, [critical, ordinary]) == [ordinary]
    context = EvictionContext(EvictionKind.GANG_RECLAIM, job)
    assert ssn.unified_evictable(context, [critical, ordinary]) == [ordinary]


def test_only_critical_candidates_end_the_tier_with_no_victims() -> None:
    critical = make_task("c", namespace="kube-system", job="kube-system/pg",
                         labels={"app": "dns"}, **RUNNING)
    # pdb (no budgets) would offer the labelled task, but conformance's empty answer
    # ends the tier.
    ssn = open_cluster(cluster(), [{"name": "conformance"}, {"name": "pdb"}])
    assert ssn.preemptable(make_task("p"), [critical]) == []


def test_disabled_flag_leaves_the_point_to_other_plugins() -> None:
    critical = make_task("c", namespace="kube-system", job="kube-system/pg",
                         labels={"app": "dns"}, **RUNNING)
    ssn = open_cluster(cluster(), [{"name": "conformance", "enablePreemptable": False},
                                   {"name": "pdb"}])
    assert ssn.preemptable(make_task("p"), [critical]) == [critical]
    assert ssn.reclaimable(make_task("p"), [critical]) == []  # still enabled there
