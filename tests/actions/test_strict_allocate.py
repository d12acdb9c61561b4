"""strict-allocate's held head (``holdBlockedHead: true``): a blocked head keeps its
queue's turn across sessions, and once it starts the jobs behind it follow in job
order, ranked only when the queue's turn comes."""

from __future__ import annotations

import math

from hypothesis import given, settings
from hypothesis import strategies as st

from batchsched import JobInfo, MemoryCache, NodeInfo, PodGroup, Resource, Session, TaskInfo
from batchsched.actions.allocate import _AllocateRun
from batchsched.api.priority_queue import PriorityQueue
from batchsched.api.types import PodGroupPhase
from batchsched.conf import configuration_from_text
from batchsched.scheduler import Scheduler

NAN = math.nan
CONF = configuration_from_text("""
actions: "strict-allocate"
configurations:
- name: strict-allocate
  arguments: {holdBlockedHead: true}
tiers:
- plugins: [{name: priority}, {name: gang}]
""")


class BindOrder(MemoryCache):
    def __init__(self) -> None:
        super().__init__(now=100.0)
        self.order: list[str] = []

    def bind(self, task: TaskInfo, node_name: str) -> bool:
        self.order.append(task.job)
        return super().bind(task, node_name)


def add_job(cache: MemoryCache, name: str, created: float, cpu: float) -> None:
    job = JobInfo.from_podgroup(PodGroup(name, "ns", min_member=1, creation_time=created,
                                         phase=PodGroupPhase.INQUEUE))
    job.add_task(TaskInfo.create("ns", f"{name}-0", job.uid, Resource(cpu * 1000)))
    cache.add_job(job)


def test_the_held_head_starts_first_then_the_rest_in_job_order() -> None:
    cache = BindOrder()
    cache.add_node(NodeInfo.create("n1", Resource.from_mapping({"cpu": 1, "pods": 100})))
    for name, created, cpu in [("j0", 1.0, 4), ("j1", 4.0, 0.1), ("j2", 3.0, 0.1),
                               ("j3", 2.0, 0.1)]:
        add_job(cache, name, created, cpu)
    scheduler = Scheduler(cache, CONF)
    scheduler.run_once()
    assert cache.order == []  # j0 needs 4 cpu: it blocks its queue, and is held
    cache.add_node(NodeInfo.create("n2", Resource.from_mapping({"cpu": 8, "pods": 100})))
    scheduler.run_once()
    assert cache.order == ["ns/j0", "ns/j3", "ns/j2", "ns/j1"]


def test_with_a_job_order_that_is_not_total_the_queue_keeps_its_shape() -> None:
    # NaN creation times tie with everything: the order is not total, and the heap's
    # shape decides what comes out (Go's container/heap steps, as Volcano's queues
    # take). The held head is taken out of a heap ranked with it in (as the heap was
    # always built); leaving it out before ranking could rank the rest differently.
    cache = BindOrder()
    cache.add_node(NodeInfo.create("n1", Resource.from_mapping({"cpu": 1, "pods": 100})))
    for i, (created, cpu) in enumerate([(1.0, 4), (NAN, 0.1), (3.0, 0.1), (2.0, 0.1),
                                        (NAN, 0.1)]):
        add_job(cache, f"j{i}", created, cpu)
    scheduler = Scheduler(cache, CONF)
    scheduler.run_once()
    cache.add_node(NodeInfo.create("n2", Resource.from_mapping({"cpu": 8, "pods": 100})))
    scheduler.run_once()
    assert cache.order == ["ns/j0", "ns/j4", "ns/j3", "ns/j2", "ns/j1"]


@settings(max_examples=100, deadline=None)
@given(created=st.lists(st.sampled_from([0.0, 1.0, 2.0, NAN]), min_size=2, max_size=8),
       priorities=st.lists(st.integers(0, 2), min_size=8, max_size=8),
       left_out=st.integers(0, 7))
def test_leaving_a_job_out_ranks_the_rest_as_taking_it_out_of_the_ranked_queue(
    created: list[float], priorities: list[int], left_out: int
) -> None:
    cache = MemoryCache(now=100.0)
    cache.add_node(NodeInfo.create("n1", Resource.from_mapping({"cpu": 1, "pods": 100})))
    for i, when in enumerate(created):
        job = JobInfo.from_podgroup(PodGroup(f"j{i}", "ns", min_member=1, creation_time=when,
                                             phase=PodGroupPhase.INQUEUE), priority=0)
        job.add_task(TaskInfo.create("ns", f"j{i}-0", job.uid, Resource(100)))
        cache.add_job(job)
    ssn = Session.open(cache, CONF)
    for i, job in enumerate(ssn.jobs.values()):
        job.priority = priorities[i]
    run = _AllocateRun(ssn, lambda: None)  # type: ignore[arg-type,return-value]
    found = [job for job in ssn.jobs.values()]
    job = found[left_out % len(found)]
    reference = PriorityQueue.by_comparison(ssn.job_order_total)
    for each in found:
        reference.push(each)
    reference.discard(job)
    run.leave_out("default", job)
    heap = run.job_heap("default")
    assert heap is not None
    assert [heap.pop() for _ in range(len(heap))] == [
        reference.pop() for _ in range(len(reference))]
