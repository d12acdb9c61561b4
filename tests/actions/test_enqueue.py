"""enqueue: which Pending pod groups become Inqueue, in which order, and what a refusal leaves."""

from __future__ import annotations

from action_support import Outcome, config, run_parsed

from batchsched.actions.enqueue import NOT_ENQUEUEABLE
from batchsched.api.types import PodGroupPhase


def document(jobs: list[dict[str, object]], *tiers: list[str], actions: str = "enqueue",
             queues: tuple[str, ...] = ("q1",)) -> dict[str, object]:
    return {
        "version": 1, "name": "enqueue test",
        "config": config(actions, *(tiers or (["test-vote"],))),
        "queues": [{"name": q} for q in queues],
        "nodes": [{"name": "n1", "allocatable": {"cpu": 4, "memory": "4Gi", "pods": 10}}],
        "jobs": jobs,
        "tasks": [{"name": f"{j['name']}-t", "namespace": "c1", "job": j["name"],
                   "requests": {"cpu": 1}} for j in jobs],
    }


def job(name: str, vote: str | None = None, *, queue: str = "q1", min_resources: bool = True,
        phase: str = "Pending", created: str | None = None) -> dict[str, object]:
    entry: dict[str, object] = {"name": name, "namespace": "c1", "queue": queue,
                                "minMember": 1, "phase": phase}
    if min_resources:
        entry["minResources"] = {"cpu": 1}
    if vote is not None:
        entry["annotations"] = {"test/vote": vote}
    if created is not None:
        entry["createdAt"] = created
    return entry


def phase(outcome: Outcome, uid: str) -> PodGroupPhase:
    return outcome.job(uid).podgroup.phase


def test_job_without_min_resources_is_admitted_without_asking_the_plugins() -> None:
    outcome = run_parsed(document([job("pg1", "reject", min_resources=False)]))
    assert phase(outcome, "c1/pg1") == PodGroupPhase.INQUEUE
    # Volcano reports it to the job-enqueued functions all the same.
    assert outcome.ssn.extra["enqueued"] == ["c1/pg1"]


def test_a_rejection_keeps_the_job_pending_and_is_recorded() -> None:
    outcome = run_parsed(document([job("pg1", "reject"), job("pg2", "permit")]))
    assert phase(outcome, "c1/pg1") == PodGroupPhase.PENDING
    assert phase(outcome, "c1/pg2") == PodGroupPhase.INQUEUE
    assert outcome.ssn.extra["enqueued"] == ["c1/pg2"]
    [refusal] = [e for e in outcome.events("c1/pg1", "Unschedulable") if e.type == "Normal"]
    assert refusal.message == NOT_ENQUEUEABLE


def test_a_plugin_that_explains_its_rejection_is_not_repeated_by_the_action() -> None:
    doc = document([job("pg1", "reject")])
    doc["config"]["tiers"][0]["plugins"][0]["arguments"] = {"explain": True}  # type: ignore[index]
    outcome = run_parsed(doc)
    messages = [e.message for e in outcome.events("c1/pg1") if e.type == "Normal"]
    assert messages == ["test-vote says no"]


def test_abstaining_everywhere_admits() -> None:
    outcome = run_parsed(document([job("pg1", "abstain")]))
    assert phase(outcome, "c1/pg1") == PodGroupPhase.INQUEUE


def test_only_pending_pod_groups_are_considered() -> None:
    outcome = run_parsed(document([
        job("pg1", "reject", phase="Inqueue"),
        job("pg2", "reject", phase="Running"),
    ]))
    assert phase(outcome, "c1/pg1") == PodGroupPhase.INQUEUE
    assert "enqueued" not in outcome.ssn.extra
    assert not [e for e in outcome.ssn.events if e.message == NOT_ENQUEUEABLE]


def test_queues_are_drained_in_queue_order_and_jobs_in_job_order() -> None:
    jobs = [
        job("b2", "permit", queue="qb", created="2024-01-01T00:00:02Z"),
        job("a2", "permit", queue="qa", created="2024-01-01T00:00:02Z"),
        job("b1", "permit", queue="qb", created="2024-01-01T00:00:01Z"),
        job("a1", "permit", queue="qa", created="2024-01-01T00:00:01Z"),
    ]
    outcome = run_parsed(document(jobs, queues=("qb", "qa")))
    # No queue-order plugin: queues by name; jobs by creation time.
    assert outcome.ssn.extra["enqueued"] == ["c1/a1", "c1/a2", "c1/b1", "c1/b2"]


def test_allocate_after_enqueue_skips_jobs_left_pending() -> None:
    outcome = run_parsed(document(
        [job("pg1", "reject"), job("pg2", "permit")], ["test-vote"], actions="enqueue, allocate"
    ))
    assert outcome.binds == {"c1/pg2-t": "n1"}
    assert phase(outcome, "c1/pg1") == PodGroupPhase.PENDING


def test_an_explicit_empty_min_resources_is_still_put_to_the_vote() -> None:
    empty = job("pg1", "reject")
    empty["minResources"] = {}
    outcome = run_parsed(document([empty]))
    assert phase(outcome, "c1/pg1") == PodGroupPhase.PENDING


def test_the_documented_proportion_example() -> None:
    doc = document(
        [job("pg1", created="2024-01-01T00:00:01Z"), job("pg2", created="2024-01-01T00:00:02Z")],
        ["proportion"],
    )
    doc["queues"] = [{"name": "q1", "capability": {"cpu": 4}}]
    doc["nodes"] = [{"name": "n1", "allocatable": {"cpu": 8, "memory": "8Gi", "pods": 10}}]
    doc["jobs"][1]["minResources"] = {"cpu": 2}  # type: ignore[index]
    doc["jobs"][0]["minResources"] = {"cpu": 3}  # type: ignore[index]
    outcome = run_parsed(doc)
    assert phase(outcome, "c1/pg1") == PodGroupPhase.INQUEUE
    assert phase(outcome, "c1/pg2") == PodGroupPhase.PENDING
    [refusal] = [e for e in outcome.events("c1/pg2") if e.type == "Normal"]
    assert refusal.message == "queue resource quota insufficient: insufficient cpu"
