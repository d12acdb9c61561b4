"""Queue order by key (``add_queue_order_key_fn``): the keyed order is the compared order.

Allocate and enqueue rank their queues with ``Session.queue_priority_queue``, keyed when
every queue order plugin gives a key (proportion does); it must pop the queues exactly
as a priority queue comparing them through ``queue_order_fn`` would.
"""

from __future__ import annotations

import math

from hypothesis import given, settings
from hypothesis import strategies as st

from batchsched.api import ClusterInfo, JobInfo, NodeInfo, PodGroup, Resource, TaskInfo, TaskStatus
from batchsched.api.priority_queue import PriorityQueue, _KeyedPriorityQueue
from batchsched.api.queue import QueueInfo
from batchsched.conf import configuration_from_text
from batchsched.framework import Session


@st.composite
def clusters(draw: st.DrawFn) -> ClusterInfo:
    queues = {}
    for i in range(draw(st.integers(1, 6))):
        queues[f"q{i}"] = QueueInfo(
            f"q{i}", weight=draw(st.integers(1, 4)), priority=draw(st.integers(0, 2)),
            creation_time=draw(st.sampled_from([0.0, 1.0, 2.0, math.nan])))
    node = NodeInfo.create("n1", Resource(64_000, 256 * 2**30))
    jobs = {}
    for j in range(draw(st.integers(0, 10))):
        podgroup = PodGroup(f"pg{j}", "ns", queue=draw(st.sampled_from(sorted(queues))))
        job = JobInfo.from_podgroup(podgroup)
        for t in range(draw(st.integers(1, 3))):
            running = draw(st.booleans())
            task = TaskInfo.create(
                "ns", f"pg{j}-{t}", job.uid, Resource(draw(st.sampled_from([500, 1000, 3000]))),
                status=TaskStatus.RUNNING if running else TaskStatus.PENDING,
                node_name="n1" if running else "")
            job.add_task(task)
            if running:
                node.add_task(task)
        jobs[job.uid] = job
    return ClusterInfo(nodes={"n1": node}, jobs=jobs, queues=queues, now=100.0)


def open_session(plugins: list[str], cluster: ClusterInfo) -> Session:
    text = "actions: allocate\ntiers:\n- plugins:\n" + "".join(
        f"  - name: {name}\n" for name in plugins)
    return Session.open(cluster, configuration_from_text(text))


@settings(max_examples=150, deadline=None)
@given(cluster=clusters(), plugins=st.sampled_from([["proportion"], ["priority", "proportion"],
                                                    ["capacity"], ["drf", "proportion"]]))
def test_keyed_queue_order_is_the_compared_queue_order(
    cluster: ClusterInfo, plugins: list[str]
) -> None:
    ssn = open_session(plugins, cluster)
    queues = list(ssn.queues.values())
    keyed = ssn.queue_priority_queue(queues)
    compared = PriorityQueue(ssn.queue_order_fn, queues)
    nan = any(math.isnan(q.creation_time) for q in queues)
    # Keyed exactly when every queue order plugin gives a key and no creation time is NaN.
    assert isinstance(keyed, _KeyedPriorityQueue) is (not nan and "capacity" not in plugins)
    assert [keyed.pop() for _ in range(len(keyed))] == [
        compared.pop() for _ in range(len(compared))]
