"""A replay keeps the statuses Kubernetes' controllers keep: a quota's ``used`` and a
budget's ``disruptionsAllowed`` follow the pods, session after session, as
Volcano's resourcequota and pdb plugins see them in a live cluster."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from batchsched.api.types import TaskStatus
from batchsched.cli import main
from batchsched.scenario import parse_scenario
from batchsched.simulation.controllers import ClusterControllers, quota_usage

DATA = Path(__file__).parent / "data" / "controllers"
CONFIG = {"actions": "allocate", "tiers": [{"plugins": [{"name": "gang"}]}]}


def replay(capsys: pytest.CaptureFixture[str], path: Path) -> dict[str, dict[str, Any]]:
    assert main(["simulate", str(path), "--output", "json", "--no-progress"]) == 0
    report = json.loads(capsys.readouterr().out)
    return {entry["job"]: entry for entry in report["perJob"]}


def test_a_quota_counts_the_pods_of_the_jobs_it_admitted(
        capsys: pytest.CaptureFixture[str]) -> None:
    # Once a's pods exist they are in the quota's used: b waits for a to end (the
    # plugin forgets what it admitted when its session closes).
    jobs = replay(capsys, DATA / "quota.yaml")
    assert jobs["team/a"]["start"] == 0
    assert jobs["team/b"]["start"] == 1000


def test_usage_outside_the_replay_stays_in_the_quota(
        capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    document = yaml.safe_load((DATA / "quota.yaml").read_text())
    document["resourceQuotas"][0].update(hard={"cpu": 2}, used={"cpu": 1})
    path = tmp_path / "outside.yaml"
    path.write_text(yaml.safe_dump(document))
    jobs = replay(capsys, path)
    assert (jobs["team/a"]["start"], jobs["team/b"]["start"]) == (0, 1000)


def test_a_budget_counts_the_pods_running_now(capsys: pytest.CaptureFixture[str]) -> None:
    # Loaded before any web pod ran, the budget allowed no disruption; by the time the
    # high-priority job comes both run, and one of them may go.
    jobs = replay(capsys, DATA / "pdb-preempt.yaml")
    assert jobs["ns/hi"]["start"] == 10
    assert jobs["ns/web"]["restarts"] == 1


def test_quota_usage_as_kubernetes_pod_evaluator() -> None:
    scenario = parse_scenario({
        "version": 1, "config": CONFIG, "nodes": [], "jobs": [{"name": "j", "namespace": "ns"}],
        "tasks": [{"name": f"t{i}", "namespace": "ns", "job": "j",
                   "requests": {"cpu": "500m", "memory": "1Gi", "example.com/gpu": 1,
                                "hugepages-2Mi": "4Mi"}} for i in range(2)]})
    names = ["pods", "count/pods", "cpu", "requests.cpu", "memory", "requests.memory",
             "requests.example.com/gpu", "example.com/gpu", "hugepages-2Mi",
             "requests.hugepages-2Mi", "limits.cpu", "count/services"]
    usage = quota_usage(names, scenario.tasks)
    gib = 2.0**30
    assert usage == {"pods": 2.0, "count/pods": 2000.0, "cpu": 1000.0, "requests.cpu": 1000.0,
                     "memory": 2 * gib, "requests.memory": 2000 * gib,
                     "requests.example.com/gpu": 2000.0, "hugepages-2Mi": 8 * 2.0**20 * 1000,
                     "requests.hugepages-2Mi": 8 * 2.0**20 * 1000}


def test_budgets_follow_their_pods_and_a_budget_given_by_status_stays() -> None:
    scenario = parse_scenario({
        "version": 1, "config": CONFIG, "nodes": [{"name": "n1", "allocatable": {"cpu": 4}}],
        "jobs": [{"name": "j", "namespace": "ns", "phase": "Running"}],
        "tasks": [{"name": f"t{i}", "namespace": "ns", "job": "j", "labels": {"app": "a"},
                   "phase": "Running", "node": "n1"} for i in range(3)],
        "pdbs": [{"name": "min", "namespace": "ns", "selector": {"app": "a"},
                  "minAvailable": "50%"},
                 {"name": "max", "namespace": "ns", "selector": {"app": "a"},
                  "maxUnavailable": 1},
                 {"name": "fixed", "namespace": "ns", "selector": {"app": "a"},
                  "disruptionsAllowed": 5}]})
    cluster = scenario.to_cluster()
    budgets = {budget.name: budget for budget in cluster.pdbs}
    assert [b.disruptions_allowed for b in budgets.values()] == [1, 1, 5]
    controllers = ClusterControllers([], cluster.pdbs, cluster.jobs.values())
    job = cluster.jobs["ns/j"]
    job.update_task_status(job.tasks["ns/t0"], TaskStatus.SUCCEEDED)
    controllers.refresh(cluster.jobs.values())
    # Two pods left, both running: 50% of 2 is 1 to keep, 1 may go; one may be away.
    assert [b.disruptions_allowed for b in budgets.values()] == [1, 1, 5]
    job.update_task_status(job.tasks["ns/t1"], TaskStatus.PENDING)
    controllers.refresh(cluster.jobs.values())
    assert [b.disruptions_allowed for b in budgets.values()] == [0, 0, 5]
