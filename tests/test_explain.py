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


def _apply(scenario: object, job: str, change: dict[str, object]) -> object:
    from batchsched.explain import _with_nodes, _with_smaller_requests

    if change["kind"] == "moreNodes":
        template = next(n for n in scenario.nodes if n.name == change["like"])  # type: ignore[attr-defined]
        return _with_nodes(scenario, template, int(change["count"]))  # type: ignore[arg-type,call-overload]
    return _with_smaller_requests(scenario, job, float(change["factor"]))  # type: ignore[arg-type]


NODE_BOUND = [
    (path, job) for path in CORPUS for job in unplaced_jobs(path)
    if explain(load_scenario(path), job=job)["decidedBy"] == ["predicates"]
]


@pytest.mark.parametrize(("path", "job"), NODE_BOUND,
                         ids=[f"{p.stem}:{j}" for p, j in NODE_BOUND])
def test_a_proposed_change_does_let_the_job_start(path: Path, job: str) -> None:
    from batchsched.explain import counterfactuals

    scenario = load_scenario(path)
    pending = {t.uid for t in scenario.tasks if t.job == job and not t.node_name}
    # No change of the kinds tried may help (a node selector no node matches): then
    # none is proposed. Every one proposed must work when applied.
    for change in counterfactuals(scenario, job=job, max_nodes=4):
        changed = _apply(scenario, job, change)
        binds = run_scenario(changed).binds  # type: ignore[arg-type]
        assert pending & set(binds), (job, change)


def test_insufficient_cpu_proposes_a_node_and_a_smaller_request() -> None:
    from batchsched.explain import counterfactuals

    path = next(p for p in CORPUS if p.name == "allocate-00-fairshare-low-share-queue-first.yaml")
    changes = counterfactuals(load_scenario(path), job="ns-1/pg-large-1")
    assert [c["text"] for c in changes] == ["the job's pending requests times 0.5",
                                            "1 more node(s) like node-1"]
