"""Job order by key (``add_job_order_key_fn``): the keyed order is the compared order.

Allocate, strict-allocate, easy-backfill and enqueue rank their jobs by key when every
job order plugin of the session gives one; these tests hold that ranking to the
pairwise order (``job_order_total``) on random jobs, through the real plugins.
"""

from __future__ import annotations

import functools
import math
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from probe_support import session as probe_session

from batchsched.api import ClusterInfo, JobInfo, PodGroup, Resource, TaskInfo, TaskStatus
from batchsched.api.priority_queue import PriorityQueue
from batchsched.conf import configuration_from_text
from batchsched.errors import PluginError
from batchsched.framework import Arguments, Session

STATUSES = [TaskStatus.PENDING, TaskStatus.RUNNING, TaskStatus.ALLOCATED]


@st.composite
def jobs(draw: st.DrawFn) -> list[JobInfo]:
    out = []
    for i in range(draw(st.integers(0, 12))):
        annotations = {}
        runtime = draw(st.sampled_from([None, 10, 20, 600]))
        if runtime is not None:
            annotations["batchsched.io/requested-runtime"] = str(runtime)
        podgroup = PodGroup(f"pg{i}", "ns", queue="default", min_member=draw(st.integers(0, 3)),
                            creation_time=draw(st.sampled_from([0.0, 1.0, 2.0, math.nan])),
                            annotations=annotations)
        job = JobInfo.from_podgroup(podgroup, priority=draw(st.integers(0, 2)))
        for t in range(draw(st.integers(1, 3))):
            status = draw(st.sampled_from(STATUSES))
            job.add_task(TaskInfo.create("ns", f"pg{i}-{t}", job.uid, Resource(1000),
                                         status=status,
                                         node_name="" if status == TaskStatus.PENDING else "n"))
        out.append(job)
    return out


def open_session(plugins: list[str], job_list: list[JobInfo]) -> Session:
    text = "actions: allocate\ntiers:\n" + "".join(
        f"- plugins:\n  - name: {name}\n" for name in plugins)
    cluster = ClusterInfo(jobs={job.uid: job for job in job_list}, now=100.0)
    return Session.open(cluster, configuration_from_text(text))


PLUGIN_SETS = [["priority", "gang"], ["gang", "sjf"], ["priority", "gang", "drf"],
               ["tdm"], ["priority"], ["gang", "wfp3"], ["f1", "priority", "gang"]]


@settings(max_examples=150, deadline=None)
@given(job_list=jobs(), plugins=st.sampled_from(PLUGIN_SETS))
def test_keyed_job_order_is_the_compared_job_order(
    job_list: list[JobInfo], plugins: list[str]
) -> None:
    ssn = open_session(plugins, job_list)
    key = ssn.job_order_key()
    nan = any(math.isnan(job.creation_time) for job in job_list)
    assert (key is None) is nan, plugins
    if nan:  # no key: the queue compares, and what it pops is checked below all the same
        keyed, by_comparison = ssn.job_queue(), PriorityQueue.by_comparison(ssn.job_order_total)
        for job in ssn.jobs.values():
            keyed.push(job)
            by_comparison.push(job)
        assert [keyed.pop() for _ in range(len(keyed))] == [
            by_comparison.pop() for _ in range(len(by_comparison))]
        return
    compared = sorted(ssn.jobs.values(), key=functools.cmp_to_key(ssn.job_order_total))
    assert ssn.sorted_jobs(ssn.jobs.values()) == compared
    keyed, by_comparison = ssn.job_queue(), PriorityQueue.by_comparison(ssn.job_order_total)
    for job in ssn.jobs.values():
        keyed.push(job)
        by_comparison.push(job)
    assert [keyed.pop() for _ in range(len(keyed))] == compared
    assert [by_comparison.pop() for _ in range(len(by_comparison))] == compared


def test_a_comparison_only_plugin_turns_the_key_off() -> None:
    ssn = open_session(["priority", "sla"], [])
    assert ssn.job_order_key() is None
    assert isinstance(ssn.job_queue(), PriorityQueue)


def test_a_comparison_registered_after_the_key_replaces_it() -> None:
    def register(ssn: Session, name: str) -> None:
        ssn.add_job_order_key_fn(name, lambda job: job.priority)
        ssn.add_job_order_fn(name, lambda left, right: 0)

    ssn = probe_session([[("late", register)]])
    assert ssn.job_order_key() is None


def test_a_key_that_raises_is_blamed_on_its_plugin() -> None:
    def good(ssn: Session, name: str) -> None:
        ssn.add_job_order_key_fn(name, lambda job: 0)

    def bad(ssn: Session, name: str) -> None:
        def key(job: JobInfo) -> Any:
            raise KeyError("no such label")
        ssn.add_job_order_key_fn(name, key)

    ssn = probe_session([[("good", good)], [("broken", bad)]])
    sort_key = ssn.job_order_key()
    assert sort_key is not None
    job = JobInfo.from_podgroup(PodGroup("pg", "ns"))
    with pytest.raises(PluginError, match="'broken' raised in job_order") as caught:
        sort_key(job)
    assert caught.value.plugin == "broken"


def test_discard_takes_the_item_out_of_either_queue() -> None:
    for queue in (PriorityQueue.by_key(abs), PriorityQueue.by_comparison(
            lambda a, b: (abs(a) > abs(b)) - (abs(a) < abs(b)))):
        for item in [3, -1, 2, 5]:
            queue.push(item)
        queue.discard(2)
        assert [queue.pop() for _ in range(len(queue))] == [-1, 3, 5]


TASK_NAMES = ["w-x-1", "w-x-2", "w-x-10", "plain", "other", "a-b-c", "w-x-+3"]


@st.composite
def task_lists(draw: st.DrawFn) -> list[TaskInfo]:
    names = draw(st.lists(st.sampled_from(TASK_NAMES), unique=True, max_size=7))
    return [TaskInfo.create("ns", name, "ns/pg", Resource(1000),
                            creation_time=draw(st.sampled_from([0.0, 1.0, 2.0, math.nan])),
                            priority=draw(st.integers(0, 2)))
            for name in names]


@settings(max_examples=300, deadline=None)
@given(tasks=task_lists(), plugins=st.sampled_from([["priority"], ["gang"], ["priority", "gang"],
                                                   ["task-topology"]]))
def test_a_task_queue_pops_in_the_compared_task_order(
    tasks: list[TaskInfo], plugins: list[str]
) -> None:
    """Keyed or not (mixed name indexes, NaN times and comparison-only plugins fall
    back), a task queue pops what a queue compared pair by pair pops."""
    ssn = open_session(plugins, [])
    queue, compared = ssn.task_queue(tasks), PriorityQueue.by_comparison(ssn.task_order_total)
    for task in tasks:
        compared.push(task)
    assert [queue.pop() for _ in range(len(queue))] == [
        compared.pop() for _ in range(len(compared))]


def test_tasks_are_keyed_when_every_name_has_an_index_or_none_has() -> None:
    ssn = open_session(["priority"], [])
    indexed = [TaskInfo.create("ns", f"w-x-{i}", "ns/pg", Resource(1000)) for i in (3, 1, 2)]
    plain = [TaskInfo.create("ns", name, "ns/pg", Resource(1000)) for name in ("b", "a")]
    assert type(ssn.task_queue(indexed)) is not PriorityQueue
    assert type(ssn.task_queue(plain)) is not PriorityQueue
    assert type(ssn.task_queue(indexed + plain)) is PriorityQueue  # a mix compares
    queue = ssn.task_queue(indexed)
    assert [queue.pop().name for _ in range(3)] == ["w-x-1", "w-x-2", "w-x-3"]


def test_a_key_order_plugin_with_a_nan_key_compares_pairs_as_before() -> None:
    """A NaN key ties with every key in a comparison, which no sort key can say: the
    plugin then registers its comparison, and queues compare pairs."""
    from batchsched.plugin import JobKeyOrderPlugin

    scores = {"ns/a": 3.0, "ns/b": math.nan, "ns/c": 1.0, "ns/d": 2.0}

    class Scored(JobKeyOrderPlugin):
        name = "scored"

        def key(self, job: JobInfo, now: float) -> Any:
            return scores[job.uid]

    jobs = {uid: JobInfo.from_podgroup(PodGroup(uid.split("/")[1], "ns")) for uid in scores}
    ssn = probe_session([[("scored", lambda ssn, name: None)]])
    ssn.jobs.update(jobs)
    Scored(Arguments()).on_session_open(ssn)
    assert ssn.job_order_key() is None
    queue, compared = ssn.job_queue(), PriorityQueue.by_comparison(ssn.job_order_total)
    for uid in "dcba":
        queue.push(jobs[f"ns/{uid}"])
        compared.push(jobs[f"ns/{uid}"])
    assert [queue.pop() for _ in range(4)] == [compared.pop() for _ in range(4)]
