"""A disposed session lets go of its cluster: a one-shot run (which turns the cycle
collector off) writes its output without the jobs and their tasks in memory, and
the loaded objects share one read-only mapping for absent labels and annotations."""

from __future__ import annotations

import gc
import weakref
from collections.abc import Iterator

import pytest
import yaml

from batchsched import JobInfo, NodeInfo, PodGroup, Resource, Session, TaskInfo
from batchsched.api.types import NO_COUNTS, NO_LABELS
from batchsched.conf import configuration_from_text
from batchsched.scenario import parse_scenario
from batchsched.scenario.runner import ScenarioCache, decide

SCENARIO = """
version: 1
name: dispose
config:
  actions: "enqueue, allocate, preempt"
  tiers:
  - plugins: [{name: priority}, {name: gang}]
  - plugins: [{name: drf}, {name: predicates}, {name: proportion}, {name: nodeorder}]
queues: [{name: q}]
nodes: [{name: n1, allocatable: {cpu: 2, pods: 10}}]
jobs:
- {name: a, queue: q, minMember: 1}
- {name: b, queue: q, minMember: 1, labels: {team: x}}
tasks:
- {name: a-0, job: a, requests: {cpu: 1}}
- {name: b-0, job: b, requests: {cpu: 4}, labels: {app: web}}
"""


@pytest.fixture
def no_cycle_collector() -> Iterator[None]:
    enabled = gc.isenabled()
    gc.collect()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


@pytest.mark.usefixtures("no_cycle_collector")
def test_a_decided_run_keeps_no_job_alive() -> None:
    scenario = parse_scenario(yaml.safe_load(SCENARIO), source="<test>")
    jobs = [weakref.ref(job) for job in scenario.jobs]
    tasks = [weakref.ref(task) for task in scenario.tasks]
    decisions, events = decide(scenario, consume=True)
    del scenario
    assert decisions.binds == {"default/a-0": "n1"}
    assert events  # the events outlive the session
    assert [ref() for ref in jobs + tasks] == [None] * 4


@pytest.mark.usefixtures("no_cycle_collector")
def test_dispose_closes_an_open_session_first() -> None:
    cluster = parse_scenario(yaml.safe_load(SCENARIO), source="<test>").to_cluster()
    cache = ScenarioCache(cluster)
    ssn = Session.open(cache, configuration_from_text("actions: allocate\ntiers:\n"
                                                      "- plugins: [{name: gang}]\n"))
    job = weakref.ref(ssn.jobs["default/a"])
    ssn.dispose()
    # Closed on the way: the pod groups' events reached the cache.
    assert any(event.reason == "Unschedulable" for event in cache.events)
    assert ssn.jobs == {} and ssn.nodes == {} and ssn.plugins == {}
    del cluster, cache
    assert job() is None


def test_absent_labels_share_one_read_only_mapping() -> None:
    scenario = parse_scenario(yaml.safe_load(SCENARIO), source="<test>")
    plain, labelled = scenario.tasks
    assert plain.labels is NO_LABELS and plain.annotations is NO_LABELS
    assert plain.node_selector is NO_LABELS
    assert labelled.labels == {"app": "web"}
    first, second = scenario.jobs
    assert first.podgroup.labels is NO_LABELS and first.podgroup.min_task_member is NO_COUNTS
    assert second.podgroup.labels == {"team": "x"}
    # Read-only: a change replaces the mapping instead of reaching every task.
    with pytest.raises(TypeError):
        plain.labels["app"] = "db"  # type: ignore[index]
    plain.labels = {**plain.labels, "app": "db"}
    assert TaskInfo.create("ns", "t", "ns/j", Resource(1000.0)).labels is NO_LABELS


def test_built_objects_share_them_too() -> None:
    job = JobInfo.from_podgroup(PodGroup("pg", "ns", min_member=1))
    assert job.task_min_available is NO_COUNTS and job.podgroup.annotations is NO_LABELS
    assert job.clone().podgroup.min_task_member is NO_COUNTS
    node = NodeInfo.create("n1", Resource(1000.0))
    assert node.clone().labels == {}
