"""Property tests: the job orders gang, priority and sla register are antisymmetric
and transitive over random jobs, and so is the session's combined job order."""

from __future__ import annotations

from collections.abc import Callable
from itertools import permutations
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st
from policy_support import cluster, make_job, make_task, open_cluster

from batchsched.api import JobInfo, TaskStatus
from batchsched.framework.session import Session

STATUSES = [TaskStatus.PENDING, TaskStatus.ALLOCATED, TaskStatus.PIPELINED,
            TaskStatus.RUNNING, TaskStatus.SUCCEEDED, TaskStatus.FAILED]


@st.composite
def jobs(draw: st.DrawFn, count: int = 3) -> list[JobInfo]:
    out = []
    for i in range(count):
        name = f"job{i}"
        statuses = draw(st.lists(st.sampled_from(STATUSES), max_size=4))
        tasks = [
            make_task(f"{name}-t{k}", job=f"default/{name}", status=status,
                      node="" if status == TaskStatus.PENDING else "n1",
                      cpu=draw(st.sampled_from([0, 1000])))
            for k, status in enumerate(statuses)
        ]
        job = make_job(name, tasks, min_member=draw(st.integers(0, 4)),
                       priority=draw(st.integers(-2, 2)),
                       creation_time=draw(st.sampled_from([0.0, 10.0, 0.1, 1e9])))
        job.waiting_time = draw(st.one_of(st.none(), st.sampled_from([0.2, 10.0, 60.0])))
        out.append(job)
    return out


def job_order_of(plugin: str, arguments: dict[str, Any] | None = None,
                 ) -> Callable[[list[JobInfo]], tuple[Session, Callable[..., int]]]:
    def build(sample: list[JobInfo]) -> tuple[Session, Callable[..., int]]:
        entry: dict[str, Any] = {"name": plugin}
        if arguments:
            entry["arguments"] = arguments
        ssn = open_cluster(cluster(sample), [entry])
        fn: Callable[..., int] = ssn.registered("job_order")[plugin]
        return ssn, fn
    return build


def sign(value: int) -> int:
    return (value > 0) - (value < 0)


def check_antisymmetric_and_transitive(order: Callable[[JobInfo, JobInfo], int],
                                       sample: list[JobInfo]) -> None:
    for a in sample:
        assert order(a, a) == 0
    for a, b in permutations(sample, 2):
        assert sign(order(a, b)) == -sign(order(b, a))
    for a, b, c in permutations(sample, 3):
        if order(a, b) <= 0 and order(b, c) <= 0:
            assert order(a, c) <= 0
        if order(a, b) < 0 and order(b, c) < 0:
            assert order(a, c) < 0


BUILDERS = {
    "gang": job_order_of("gang"),
    "priority": job_order_of("priority"),
    "sla": job_order_of("sla"),
    "sla with a default waiting time": job_order_of("sla", {"sla-waiting-time": "30s"}),
}


@settings(max_examples=60, deadline=None)
@given(sample=jobs(), plugin=st.sampled_from(sorted(BUILDERS)))
def test_registered_job_orders_are_antisymmetric_and_transitive(
    sample: list[JobInfo], plugin: str
) -> None:
    _, order = BUILDERS[plugin](sample)
    check_antisymmetric_and_transitive(order, sample)


@settings(max_examples=60, deadline=None)
@given(sample=jobs())
def test_session_job_order_with_all_three_is_a_strict_total_order(
    sample: list[JobInfo],
) -> None:
    ssn = open_cluster(cluster(sample), [{"name": "gang"}, {"name": "sla"}],
                       [{"name": "priority"}])
    before = ssn.job_order_fn
    for a in sample:
        assert not before(a, a)
    for a, b in permutations(sample, 2):
        assert before(a, b) != before(b, a)
    for a, b, c in permutations(sample, 3):
        if before(a, b) and before(b, c):
            assert before(a, c)
