"""pdb: victims never break a PodDisruptionBudget (pdb_test.go
TestPreemptableAndReclaimableFn, plus selectors, disrupted pods and budgets the loader
derives from minAvailable / maxUnavailable)."""

from __future__ import annotations

import pytest
import yaml
from policy_support import cluster, make_task, open_cluster, open_scenario, scenario

from batchsched.api import PodDisruptionBudget, TaskInfo, TaskStatus
from batchsched.scenario import parse_scenario, run_scenario

PDB = [{"name": "pdb", "enablePreemptable": True, "enableReclaimable": True,
        "enabledVictim": True}]
JOB_LABEL = {"volcano.sh/job-name": "job-1"}


def candidate(name: str, labels: dict[str, str] | None = None,
              namespace: str = "default") -> TaskInfo:
    return make_task(name, namespace=namespace, job=f"{namespace}/pg1",
                     status=TaskStatus.RUNNING, node="n1", labels=labels)


def budget(allowed: int, selector: dict[str, str] | None = None, *, name: str = "test-pdb",
           namespace: str = "default", disrupted: frozenset[str] = frozenset(),
           ) -> PodDisruptionBudget:
    return PodDisruptionBudget(name, namespace, dict(JOB_LABEL if selector is None else selector),
                               allowed, disrupted)


@pytest.mark.parametrize(
    ("case", "pdbs", "victims"),
    [
        ("test without pdbs", [], ["test-pod1", "test-pod2"]),
        ("test with pdbs(can evict 0 pod)", [budget(0)], []),
        ("test with pdbs(can evict 1 pod)", [budget(1)], ["test-pod1"]),
    ],
)
def test_pdb_unit_cases(case: str, pdbs: list[PodDisruptionBudget], victims: list[str]) -> None:
    """UNIT-CASES.md: candidates outside the session, an empty preemptor."""
    candidates = [candidate("test-pod1", JOB_LABEL), candidate("test-pod2", JOB_LABEL)]
    ssn = open_cluster(cluster(pdbs=pdbs), PDB)
    preemptor = make_task("preemptor", job="")
    assert [t.name for t in ssn.preemptable(preemptor, candidates)] == victims, case
    assert [t.name for t in ssn.reclaimable(preemptor, candidates)] == victims, case
    assert {t.name for t in ssn.victim_tasks(candidates)} == set(victims), case


def test_pods_without_labels_are_never_victims() -> None:
    ssn = open_cluster(cluster(), PDB)
    plain, labelled = candidate("plain"), candidate("labelled", {"app": "web"})
    assert ssn.preemptable(make_task("p"), [plain, labelled]) == [labelled]


def test_only_budgets_of_the_same_namespace_with_a_matching_selector_count() -> None:
    pdbs = [
        budget(0, {"app": "web"}, namespace="other"),  # other namespace
        budget(0, {"app": "db"}),  # selector does not match
        budget(0, {}),  # an empty selector matches nothing
    ]
    ssn = open_cluster(cluster(pdbs=pdbs), PDB)
    web = candidate("web", {"app": "web"})
    assert ssn.preemptable(make_task("p"), [web]) == [web]


def test_pods_already_disrupted_do_not_use_the_budget() -> None:
    pdbs = [budget(1, disrupted=frozenset({"test-pod1"}))]
    ssn = open_cluster(cluster(pdbs=pdbs), PDB)
    pods = [candidate(f"test-pod{i}", JOB_LABEL) for i in (1, 2, 3)]
    assert [t.name for t in ssn.victim_tasks(pods)] == ["test-pod1", "test-pod2"]


def test_a_rejected_candidate_still_uses_up_its_other_budgets() -> None:
    pdbs = [budget(0, {"app": "web"}, name="web"), budget(1, {"tier": "x"}, name="tier")]
    ssn = open_cluster(cluster(pdbs=pdbs), PDB)
    both = candidate("both", {"app": "web", "tier": "x"})
    tier_only = candidate("tier-only", {"tier": "x"})
    # "both" breaks the web budget and takes the tier budget's only disruption with it.
    assert ssn.preemptable(make_task("p"), [both, tier_only]) == []
    assert ssn.preemptable(make_task("p"), [tier_only, both]) == [tier_only]


def test_budgets_are_fresh_for_every_call() -> None:
    ssn = open_cluster(cluster(pdbs=[budget(1)]), PDB)
    pod = candidate("test-pod1", JOB_LABEL)
    assert ssn.preemptable(make_task("p"), [pod]) == [pod]
    assert ssn.preemptable(make_task("p"), [pod]) == [pod]


def test_budgets_derived_from_min_available_and_max_unavailable() -> None:
    ssn = open_scenario(scenario("""
        config:
          actions: ""
          tiers: [{plugins: [{name: pdb}]}]
        nodes: [{name: n1, allocatable: {cpu: 8, memory: 8Gi, pods: 10}}]
        jobs: [{name: pg1, namespace: c1}]
        pdbs:
          - {name: web, namespace: c1, selector: {app: web}, minAvailable: 2}
          - {name: db, namespace: c1, selector: {app: db}, maxUnavailable: 1}
        tasks:
          - {name: web-1, namespace: c1, job: pg1, node: n1, phase: Running,
             labels: {app: web}, requests: {cpu: 1}}
          - {name: web-2, namespace: c1, job: pg1, node: n1, phase: Running,
             labels: {app: web}, requests: {cpu: 1}}
          - {name: web-3, namespace: c1, job: pg1, node: n1, phase: Running,
             labels: {app: web}, requests: {cpu: 1}}
          - {name: db-1, namespace: c1, job: pg1, node: n1, phase: Running,
             labels: {app: db}, requests: {cpu: 1}}
          - {name: db-2, namespace: c1, job: pg1, node: n1, phase: Running, deleting: true,
             labels: {app: db}, requests: {cpu: 1}}
    """))
    tasks = ssn.jobs["c1/pg1"].tasks
    running = [tasks[f"c1/{n}"] for n in ("web-1", "web-2", "web-3", "db-1")]
    # web: 3 healthy - minAvailable 2 = 1 disruption; db: 1 - (2 matching - 1 healthy) = 0.
    assert [t.name for t in ssn.victim_tasks(running)] == ["web-1"]


def test_the_budget_ledger_spends_a_disruption_even_on_a_refused_task() -> None:
    from batchsched.api import BudgetLedger

    web = budget(1, {"app": "web"})
    ledger = BudgetLedger([web])
    first, second = candidate("w1", {"app": "web"}), candidate("w2", {"app": "web"})
    assert ledger.charge(first) is True
    assert ledger.charge(second) is False
    assert ledger.charge(candidate("plain")) is True  # no labels: no budget
    # The ledger works on its own copy of the allowance.
    assert web.disruptions_allowed == 1


def test_percentages_round_up_as_the_disruption_controller_does() -> None:
    """Kubernetes scales both minAvailable and maxUnavailable percentages rounding up
    (``GetScaledValueFromIntOrPercent(..., true)``)."""
    from batchsched.scenario import parse_scenario

    def allowed(field: str, value: str) -> int:
        doc = {"version": 1, "config": {"actions": ""},
               "nodes": [{"name": "n1", "allocatable": {"cpu": 8, "pods": 10}}],
               "jobs": [{"name": "pg1", "namespace": "c1"}],
               "pdbs": [{"name": "b", "namespace": "c1", "selector": {"app": "w"},
                         field: value}],
               "tasks": [{"name": f"w{i}", "namespace": "c1", "job": "pg1", "node": "n1",
                          "phase": "Running", "labels": {"app": "w"}, "requests": {"cpu": 1}}
                         for i in range(3)]}
        (pdb,) = parse_scenario(doc).pdbs
        return pdb.disruptions_allowed

    assert allowed("maxUnavailable", "50%") == 2   # ceil(1.5) = 2
    assert allowed("minAvailable", "50%") == 1     # 3 healthy - ceil(1.5)


@pytest.mark.parametrize("disrupted", [["web-1"], {"web-1": "2024-05-01T00:00:30Z"}])
def test_a_scenario_names_the_pods_a_budget_counts_as_disrupted(disrupted: object) -> None:
    """``disruptedPods`` (a list, or Kubernetes' status map): web-1 is being evicted,
    so the budget, which allows none, does not charge it again."""
    from batchsched.scenario import parse_scenario, run_scenario

    document = scenario("""
        config: {actions: shuffle, tiers: [{plugins: [{name: pdb}]}]}
        nodes: [{name: n1, allocatable: {cpu: 8, memory: 8Gi, pods: 110}}]
        jobs: [{name: pg1, namespace: c1, minMember: 1, phase: Running}]
        tasks:
        - {name: web-1, namespace: c1, job: pg1, node: n1, phase: Running,
           requests: {cpu: 1}, labels: {app: web}}
        - {name: web-2, namespace: c1, job: pg1, node: n1, phase: Running,
           requests: {cpu: 1}, labels: {app: web}}
        pdbs: [{name: web, namespace: c1, selector: {app: web}, disruptionsAllowed: 0}]
    """)
    document["pdbs"][0]["disruptedPods"] = disrupted
    assert run_scenario(parse_scenario(document)).evicted == ["c1/web-1"]


def test_a_kubectl_dump_carries_the_disrupted_pods() -> None:
    from pathlib import Path

    from batchsched.scenario import run_scenario
    from batchsched.scenario.kubectl import load_scenario_or_dump

    dump = Path(__file__).parent.parent / "scenario" / "data" / "kubectl-pdb-disrupted.json"
    assert run_scenario(load_scenario_or_dump(dump)).evicted == ["c1/web-1"]


PDB_WITH_DISRUPTED = """
version: 1
config: {actions: "allocate, preempt", tiers: [{plugins: [{name: priority},
  {name: gang, enablePreemptable: false}, {name: pdb}, {name: conformance}]}]}
priorityClasses: [{name: low, value: 100}, {name: high, value: 1000}]
queues: [{name: q1}]
nodes: [{name: n1, allocatable: {cpu: 3, memory: 3Gi, pods: 10}}]
jobs:
- {name: web, namespace: c1, queue: q1, minMember: 1, phase: Running, priorityClassName: low}
- {name: hi, namespace: c1, queue: q1, minMember: 1, phase: Inqueue, priorityClassName: high}
tasks:
- {name: w1, namespace: c1, job: web, node: n1, phase: Running, labels: {app: web},
   requests: {cpu: 1, memory: 1Gi}, createdAt: "2024-01-01T00:00:00Z"}
- {name: w2, namespace: c1, job: web, node: n1, phase: Running, labels: {app: web},
   requests: {cpu: 1, memory: 1Gi}, createdAt: "2024-01-01T00:01:00Z"}
- {name: w3, namespace: c1, job: web, node: n1, phase: Running, labels: {app: web},
   requests: {cpu: 1, memory: 1Gi}, createdAt: "2024-01-01T00:02:00Z"}
- {name: p1, namespace: c1, job: hi, requests: {cpu: 1, memory: 1Gi},
   createdAt: "2024-01-01T00:03:00Z"}
pdbs: [{name: web-pdb, namespace: c1, selector: {app: web}, minAvailable: 2,
        disruptedPods: %s}]
now: "2024-01-01T00:10:00Z"
"""


@pytest.mark.parametrize(("disrupted", "allowed"), [
    ("[w1]", 0),                                   # no time: on its way out
    ('{w1: "2024-01-01T00:09:00Z"}', 0),          # a minute ago: not healthy
    ('{w1: "2024-01-01T00:05:00Z"}', 1),          # past DeletionTimeout: healthy again
    ('{w1: "-1m"}', 0),                            # a time relative to now (refused before)
    ('{w1: "-5m"}', 1),
])
def test_a_budget_does_not_count_pods_it_recorded_as_disrupted_lately(
        disrupted: str, allowed: int) -> None:
    # Kubernetes' disruption controller leaves a pod of disruptedPods out of the
    # healthy ones for DeletionTimeout (2 minutes): minAvailable 2 of 3 allows 0.
    parsed = parse_scenario(yaml.safe_load(PDB_WITH_DISRUPTED % disrupted))
    assert parsed.pdbs[0].disruptions_allowed == allowed
    if allowed == 0:
        # Only w1 (passed over by pdb) may go: Volcano evicts it and no other.
        assert run_scenario(parsed).evicted == ["c1/w1"]


@pytest.mark.parametrize(("max_unavailable", "pods", "healthy", "allowed"), [
    (1, 3, 3, 1),
    (1, 3, 2, 0),
    # More than the matching pods: the controller wants no pod healthy, so every
    # healthy pod may go, no more (desiredHealthy is floored at 0).
    (3, 2, 1, 1),
    (5, 3, 0, 0),
    ("100%", 4, 2, 2),
])
def test_max_unavailable_never_allows_more_than_the_healthy_pods(
        max_unavailable: int | str, pods: int, healthy: int, allowed: int) -> None:
    budget = PodDisruptionBudget("web", "c1", {"app": "web"}, 0, max_unavailable=max_unavailable)
    assert budget.allowed_for(pods, healthy) == allowed


def test_a_budget_computed_from_its_spec_keeps_only_its_recent_disruptions() -> None:
    # The status Kubernetes writes with the count (buildDisruptedPodMap) drops an
    # entry past DeletionTimeout: w1 is healthy again, and a victim like the others.
    parsed = parse_scenario(yaml.safe_load(PDB_WITH_DISRUPTED % '{w1: "2024-01-01T00:05:00Z"}'))
    assert parsed.pdbs[0].disrupted_pods == frozenset()
    recent = parse_scenario(yaml.safe_load(PDB_WITH_DISRUPTED % '{w1: "2024-01-01T00:09:00Z"}'))
    assert recent.pdbs[0].disrupted_pods == frozenset({"w1"})
