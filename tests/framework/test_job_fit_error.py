"""``Session.job_fit_error``: the summary gang's ``Unschedulable`` condition and the
job's events both give, worked out once per job while the session closes, and again
when the job changed since."""

from __future__ import annotations

from batchsched import JobInfo, MemoryCache, NodeInfo, PodGroup, Resource, Session, TaskInfo
from batchsched.conf import configuration_from_text
from batchsched.scheduler import run_actions

CONF = configuration_from_text("actions: allocate\ntiers:\n- plugins:\n  - name: gang\n")


def closed_session() -> Session:
    cache = MemoryCache(now=1.0, keep_events=True)
    cache.add_node(NodeInfo.create("n1", Resource.from_mapping({"cpu": 2, "pods": 10})))
    job = JobInfo.from_podgroup(PodGroup("too-big", "ns", min_member=1))
    job.add_task(TaskInfo.create("ns", "too-big-0", job.uid,
                                 Resource.from_mapping({"cpu": 8})))
    cache.add_job(job)
    ssn = Session.open(cache, CONF)
    run_actions(ssn)
    ssn.close()
    return ssn


def test_gang_s_condition_and_the_job_s_event_give_the_same_fit_error() -> None:
    ssn = closed_session()
    job = ssn.jobs["ns/too-big"]
    summary = ssn.job_fit_error(job)
    assert summary == job.fit_error()
    (condition,) = job.podgroup.conditions
    assert condition.message == f"1/1 tasks in gang unschedulable: {summary}"
    assert [e.message for e in ssn.events if e.object == job.uid] == [condition.message]


def test_a_job_changed_since_gets_its_fit_error_worked_out_again() -> None:
    ssn = closed_session()
    job = ssn.jobs["ns/too-big"]
    before = ssn.job_fit_error(job)
    job.job_fit_errors = "queue is full"
    after = ssn.job_fit_error(job)
    assert after != before
    assert after == job.fit_error()
    assert after.endswith(". Origin reason is: queue is full")


def test_after_the_close_every_answer_is_worked_out_afresh() -> None:
    ssn = closed_session()
    job = ssn.jobs["ns/too-big"]
    before = ssn.job_fit_error(job)
    # The same number of fit errors, of another task: no count of the job moves.
    job.nodes_fit_errors = {"ns/other": next(iter(job.nodes_fit_errors.values()))}
    assert ssn.job_fit_error(job) == job.fit_error()
    assert ssn.job_fit_error(job) != before


def test_jobs_of_the_same_counts_share_one_message_and_others_get_their_own() -> None:
    """The message kept per shape (the status counts, minAvailable, readiness) is the one
    worked out afresh, for each shape, whichever job asked first."""
    from hypothesis import given, settings
    from hypothesis import strategies as st

    from batchsched.api.types import TaskStatus

    statuses = st.sampled_from([TaskStatus.PENDING, TaskStatus.RUNNING, TaskStatus.ALLOCATED,
                                TaskStatus.PIPELINED, TaskStatus.SUCCEEDED])

    @settings(max_examples=200, deadline=None)
    @given(st.lists(statuses, max_size=6), st.integers(0, 4))
    def check(kinds: list[TaskStatus], minimum: int) -> None:
        jobs = []
        for copy in range(2):
            job = JobInfo.from_podgroup(PodGroup(f"j{copy}", "ns", min_member=minimum))
            for i, status in enumerate(kinds):
                task = TaskInfo.create("ns", f"j{copy}-{i}", job.uid,
                                       Resource.from_mapping({"cpu": 1}))
                task.status = status
                job.add_task(task)
            jobs.append(job)
        for job in jobs:
            assert job.fit_error() == job._fit_error()

    check()


def test_the_origin_reason_does_not_depend_on_the_order_tasks_were_added_in() -> None:
    """A long-lived cache re-adds a pod created again at the end of its job's tasks; a
    fresh cache holding the same state must give the same message (it named whichever
    task came first in the job's insertion order)."""
    messages = []
    for order in (("t0", "t1"), ("t1", "t0")):
        cache = MemoryCache(now=1.0, keep_events=True)
        cache.add_node(NodeInfo.create("n1", Resource.from_mapping({"cpu": 2, "pods": 10})))
        job = JobInfo.from_podgroup(PodGroup("j", "ns", min_member=1))
        for name in order:
            job.add_task(TaskInfo.create("ns", name, job.uid, Resource.from_mapping({"cpu": 8}),
                                         creation_time=1.0))
        cache.add_job(job)
        ssn = Session.open(cache, CONF)
        run_actions(ssn)
        ssn.close()
        messages.append(ssn.job_fit_error(ssn.jobs["ns/j"]))
    assert "Origin reason is t0" in messages[0]
    assert messages[0] == messages[1]
