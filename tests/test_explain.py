"""``batchsched explain``: on every transcribed Volcano scenario, each job left with an
unplaced task is explained by a configured plugin, the node reasons, or the gang."""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path

import pytest

from batchsched.api.types import TaskStatus
from batchsched.cli import main
from batchsched.explain import explain
from batchsched.scenario import load_scenario, run_scenario

CORPUS = sorted((Path(__file__).parent / "conformance" / "volcano").rglob("*.yaml"))


def unplaced_jobs(path: Path) -> list[str]:
    scenario = load_scenario(path)
    decisions = run_scenario(scenario).to_json()
    jobs = []
    for job in scenario.jobs:
        tasks = [t for t in scenario.tasks if t.job == job.uid]
        if any(t.status is TaskStatus.PENDING and t.uid not in decisions["binds"]
               for t in tasks) and job.queue in {q.name for q in scenario.queues} | {"default"}:
            jobs.append(job.uid)
    return jobs


@pytest.mark.parametrize("path", CORPUS, ids=[p.stem for p in CORPUS])
def test_every_unplaced_job_is_explained(path: Path) -> None:
    scenario = load_scenario(path)
    configured = set(scenario.configuration.plugin_names())
    for job in unplaced_jobs(path):
        report = explain(scenario, job=job)
        if report["verdict"] == "placed":
            continue  # placed by a later action (backfill, preempt)
        assert report["decidedBy"], report
        for who in report["decidedBy"]:
            assert who in configured | {"predicates", "gang", "queue"}, (job, who)


def test_the_json_report_names_the_refusing_plugin() -> None:
    path = next(p for p in CORPUS if p.name == "allocate-04-two-jobs-one-node.yaml")
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(["explain", str(path), "--task", "c1/pg1-p-2", "--output", "json"]) == 0
    report = json.loads(out.getvalue())
    assert report["decidedBy"] == ["proportion"]
    assert report["tasks"] == [{"task": "c1/pg1-p-2", "status": "Pending",
                                "reason": "proportion said no at allocatable"}]


def test_node_reasons_are_counted_per_reason() -> None:
    path = next(p for p in CORPUS if p.name == "allocate-00-fairshare-low-share-queue-first.yaml")
    report = explain(load_scenario(path), job="ns-1/pg-large-1")
    assert report["decidedBy"] == ["predicates"]
    assert report["tasks"][0]["nodes"] == {"Insufficient cpu": 1}
    assert report["tasks"][0]["reason"] == "0/1 nodes are unavailable: 1 Insufficient cpu."


def test_an_unknown_job_is_a_clear_error() -> None:
    err = io.StringIO()
    path = CORPUS[0]
    with contextlib.redirect_stderr(err):
        assert main(["explain", str(path), "--job", "nowhere/none"]) == 2
    assert "no job 'nowhere/none'" in err.getvalue()
