"""sla: waiting-time deadlines order jobs and admit them once reached
(sla_test.go TestSlaPlugin, plus annotations, the session clock and the vote rules)."""

from __future__ import annotations

from typing import Any

import pytest
from policy_support import (
    cluster,
    make_job,
    make_task,
    open_cluster,
    open_scenario,
    run,
    scenario,
)

from batchsched.framework import Arguments
from batchsched.plugins.sla import SlaPlugin

HOUR = 3600.0


@pytest.mark.parametrize(
    ("case", "arguments", "order", "enqueueable"),
    [
        ("sla normal placement", {"sla-waiting-time": "3m"}, True, True),
        ("sla error type placement", {"sla-waiting-time": 1}, False, True),
        ("none placement", {}, False, True),
    ],
)
def test_sla_unit_cases(case: str, arguments: dict[str, Any], order: bool,
                        enqueueable: bool) -> None:
    """UNIT-CASES.md: two hand-built jobs outside the session, both created at the zero
    time; job2 (also named job1) has its own waiting time of 1h; real-time clock."""
    job1 = make_job("job1", [make_task(f"t{i}", job="default/job1") for i in range(3)])
    job2 = make_job("job1", [make_task(f"u{i}", job="default/job1") for i in range(2)])
    job2.waiting_time = HOUR
    ssn = open_cluster(cluster(now=0.0),
                       [{"name": "sla", "enableJobOrder": True, "enableJobEnqueued": True,
                         "arguments": arguments}])
    assert ssn.job_order_fn(job1, job2) is order, case
    assert ssn.job_enqueueable(job1) is enqueueable, case


@pytest.mark.parametrize(("value", "seconds"), [
    ("1h2m3s", 3723.0), ("1h2m3s4ms5µs6ns", 3723.004005006), ("90s", 90.0),
    ("0s", None), ("-5m", None), ("soon", None), (300, None), (None, None),
])
def test_waiting_time_argument(value: Any, seconds: float | None) -> None:
    arguments = {} if value is None else {"sla-waiting-time": value}
    parsed = SlaPlugin(Arguments(arguments)).waiting_time
    assert parsed == (pytest.approx(seconds, abs=1e-9) if seconds is not None else None)


def document(now: str, argument: str | None = None) -> dict[str, Any]:
    doc = scenario(f"""
        config:
          actions: ""
          tiers: [{{plugins: [{{name: sla}}]}}, {{plugins: [{{name: gang}}]}}]
        now: "{now}"
        jobs:
          - {{name: own, minMember: 2, createdAt: "2024-01-01T00:00:00Z",
             annotations: {{sla-waiting-time: 30m}}}}
          - {{name: prefixed, minMember: 2, createdAt: "2024-01-01T00:10:00Z",
             annotations: {{volcano.sh/sla-waiting-time: 10m}}}}
          - {{name: plain, minMember: 2, createdAt: "2023-12-31T00:00:00Z"}}
        tasks:
          - {{name: o1, job: own, requests: {{cpu: 1}}}}
          - {{name: p1, job: prefixed, requests: {{cpu: 1}}}}
          - {{name: x1, job: plain, requests: {{cpu: 1}}}}
    """)
    if argument is not None:
        doc["config"]["tiers"][0]["plugins"][0]["arguments"] = {"sla-waiting-time": argument}
    return doc


def test_job_order_by_deadline_jobs_with_a_waiting_time_first() -> None:
    ssn = open_scenario(document("2024-01-01T00:15:00Z"))
    own, prefixed, plain = (ssn.jobs[f"default/{n}"] for n in ("own", "prefixed", "plain"))
    # prefixed: 00:10 + 10m = 00:20 is before own: 00:00 + 30m = 00:30.
    assert ssn.job_order_fn(prefixed, own)
    assert not ssn.job_order_fn(own, prefixed)
    # plain has no waiting time: after both, although it was created first.
    assert ssn.job_order_fn(own, plain)
    assert not ssn.job_order_fn(plain, prefixed)


def test_argument_gives_jobs_without_annotation_a_waiting_time() -> None:
    ssn = open_scenario(document("2024-01-01T00:15:00Z", argument="1h"))
    own, plain = ssn.jobs["default/own"], ssn.jobs["default/plain"]
    # plain: 2023-12-31 00:00 + 1h is long before own's 00:30 deadline.
    assert ssn.job_order_fn(plain, own)
    assert ssn.job_enqueueable(plain)


def test_votes_permit_once_the_waiting_time_has_passed() -> None:
    ssn = open_scenario(document("2024-01-01T00:25:00Z"))
    own, prefixed, plain = (ssn.jobs[f"default/{n}"] for n in ("own", "prefixed", "plain"))
    sla = ssn.registered("job_pipelined")["sla"]
    assert sla(own) == 0  # waited 25m of 30m: abstain
    assert sla(prefixed) == 1  # waited 15m of 10m: permit
    assert sla(plain) == 0  # no waiting time: abstain
    # gang (tier 2) rejects both (nothing placed), but sla's permit in tier 1 decides.
    assert ssn.job_pipelined(prefixed)
    assert not ssn.job_pipelined(own)
    assert ssn.registered("job_enqueueable")["sla"](prefixed) == 1


def test_a_reject_in_the_same_tier_beats_the_permit() -> None:
    job = make_job("pg1", [make_task("t1")], min_member=1)
    job.waiting_time = 60.0
    ssn = open_cluster(cluster([job], now=3600.0), [{"name": "sla"}, {"name": "gang"}])
    assert not ssn.job_pipelined(job)


def test_waiting_is_measured_from_creation_with_the_session_clock() -> None:
    job = make_job("pg1", [make_task("t1")], creation_time=1000.0)
    job.waiting_time = 60.0
    early = open_cluster(cluster([job], now=1059.0), [{"name": "sla"}])
    late = open_cluster(cluster([job], now=1060.0), [{"name": "sla"}])
    assert early.registered("job_enqueueable")["sla"](job) == 0
    assert late.registered("job_enqueueable")["sla"](job) == 1


def test_enqueue_admits_a_job_whose_deadline_passed_despite_a_later_tier() -> None:
    doc = scenario("""
        config:
          actions: enqueue
          tiers: [{plugins: [{name: sla}]}, {plugins: [{name: overcommit}]}]
        now: "2024-01-01T01:00:00Z"
        nodes: [{name: n1, allocatable: {cpu: 1, memory: 1Gi, pods: 10}}]
        jobs:
          - {name: late, minMember: 1, minResources: {cpu: 4}, createdAt: "2024-01-01T00:00:00Z",
             annotations: {sla-waiting-time: 30m}}
          - {name: fresh, minMember: 1, minResources: {cpu: 4}, createdAt: "2024-01-01T00:50:00Z",
             annotations: {sla-waiting-time: 30m}}
    """)
    # overcommit (tier 2) would refuse both: 4 cpu > 1 x 1.2. sla permits late in tier 1,
    # so tier 2 is not asked; fresh has waited 10m of 30m, sla abstains, overcommit refuses.
    phases = run(doc).pod_group_phases
    assert phases == {"default/late": "Inqueue", "default/fresh": "Pending"}


def test_an_abstaining_vote_asks_for_a_session_when_the_time_runs_out() -> None:
    """The first instant at which the vote permits, in floating point:
    ``518798.764 + 23315.0`` falls a rounding short of it."""
    job = make_job("pg1", [make_task("t1")], creation_time=518798.764)
    job.waiting_time = 23315.0
    ssn = open_cluster(cluster([job], now=520000.0), [{"name": "sla"}])
    assert ssn.registered("job_enqueueable")["sla"](job) == 0
    at = ssn.wake_ups["sla"]
    assert at > 518798.764 + 23315.0
    woken = open_cluster(cluster([job], now=at), [{"name": "sla"}])
    assert woken.registered("job_enqueueable")["sla"](job) == 1
    assert "sla" not in woken.wake_ups


def test_a_job_without_created_at_was_created_at_go_s_zero_time() -> None:
    """A pod group without ``createdAt`` was created at 0001-01-01 (Go's zero time), so
    it has waited as long as Go's ``time.Since`` can say (about 292 years): a waiting
    time of 57 years has passed, although 2024 is only 54 years after 1970."""
    doc = scenario("""
        config:
          actions: enqueue
          tiers: [{plugins: [{name: sla}]}, {plugins: [{name: overcommit}]}]
        now: "2024-01-01T12:00:00Z"
        nodes: [{name: n1, allocatable: {cpu: 1, memory: 1Gi, pods: 10}}]
        jobs:
          - {name: old, minMember: 1, minResources: {cpu: 4},
             annotations: {sla-waiting-time: 500000h}}
          - {name: ancient, minMember: 1, minResources: {cpu: 4},
             annotations: {sla-waiting-time: 2000000h}}
    """)
    # 2,000,000 hours (228 years) has passed too: less than Go's longest duration.
    phases = run(doc).pod_group_phases
    assert phases == {"default/old": "Inqueue", "default/ancient": "Inqueue"}
