"""Pods with scheduling gates (Kubernetes' ``spec.schedulingGates``) as Volcano treats
them: no action places one or makes room for one, its condition stays the API
server's, and the queue plugins do not hold its request against other jobs."""

from __future__ import annotations

import textwrap

import pytest
from action_support import Outcome, run_document

from batchsched.api.task import QUEUE_ALLOCATION_GATE
from batchsched.errors import ScenarioError, SchedulingError
from batchsched.scenario import parse_scenario

NODES = """
queues: [{name: q1}]
nodes:
  - {name: n1, allocatable: {cpu: 4, memory: 8Gi, pods: 10}}
"""


def run(config: str, body: str) -> Outcome:
    """A scenario of ``config``, one 4-cpu node, and ``body`` (jobs and tasks)."""
    return run_document(textwrap.dedent(config) + NODES + textwrap.dedent(body))


def test_allocate_leaves_a_gated_pod_pending_and_records_no_failed_scheduling() -> None:
    outcome = run("""
        config: {actions: "enqueue, allocate", tiers: [{plugins: [{name: gang}]}]}
        """, """
        jobs:
          - {name: gated, namespace: c1, queue: q1, minMember: 1}
          - {name: free, namespace: c1, queue: q1, minMember: 1}
        tasks:
          - {name: g0, namespace: c1, job: gated, requests: {cpu: 1},
             schedulingGates: [example.com/wait]}
          - {name: f0, namespace: c1, job: free, requests: {cpu: 1}}
        """)
    assert outcome.binds == {"c1/f0": "n1"}
    assert outcome.events("c1/g0", "FailedScheduling") == []


@pytest.mark.parametrize("gate", ["example.com/wait", QUEUE_ALLOCATION_GATE])
def test_a_gang_with_a_gated_member_does_not_start(gate: str) -> None:
    outcome = run("""
        config: {actions: "enqueue, allocate", tiers: [{plugins: [{name: gang}]}]}
        """, f"""
        jobs:
          - {{name: pg, namespace: c1, queue: q1, minMember: 2}}
        tasks:
          - {{name: p0, namespace: c1, job: pg, requests: {{cpu: 1}}}}
          - {{name: p1, namespace: c1, job: pg, requests: {{cpu: 1}}, schedulingGates: [{gate}]}}
        """)
    assert outcome.binds == {}


def test_backfill_leaves_a_gated_best_effort_pod() -> None:
    outcome = run("""
        config: {actions: "enqueue, allocate, backfill", tiers: [{plugins: [{name: gang}]}]}
        """, """
        jobs:
          - {name: be, namespace: c1, queue: q1, minMember: 1}
        tasks:
          - {name: b0, namespace: c1, job: be, schedulingGates: [example.com/wait]}
        """)
    assert outcome.binds == {}


def test_preempt_makes_no_room_for_a_gated_pod() -> None:
    outcome = run("""
        config:
          actions: "enqueue, allocate, preempt"
          tiers: [{plugins: [{name: priority}, {name: gang}, {name: conformance}]}]
        priorityClasses: [{name: high, value: 1000}, {name: low, value: 1}]
        """, """
        jobs:
          - {name: low, namespace: c1, queue: q1, minMember: 1, phase: Running,
             priorityClassName: low}
          - {name: high, namespace: c1, queue: q1, minMember: 1, priorityClassName: high}
        tasks:
          - {name: l0, namespace: c1, job: low, node: n1, phase: Running, requests: {cpu: 4}}
          - {name: h0, namespace: c1, job: high, requests: {cpu: 4},
             schedulingGates: [example.com/wait]}
        """)
    assert outcome.cache.evictions == []


def test_overcommit_does_not_reserve_what_gated_pods_ask() -> None:
    """Volcano's DeductSchGatedResources: an Inqueue job whose pods wait on gates does
    not keep the next job out of the queue."""
    outcome = run("""
        config:
          actions: "enqueue"
          tiers: [{plugins: [{name: gang}, {name: overcommit,
                                            arguments: {overcommit-factor: 1.0}}]}]
        """, """
        jobs:
          - {name: waiting, namespace: c1, queue: q1, minMember: 1, phase: Inqueue,
             minResources: {cpu: 4}}
          - {name: next, namespace: c1, queue: q1, minMember: 1, minResources: {cpu: 2}}
        tasks:
          - {name: w0, namespace: c1, job: waiting, requests: {cpu: 4},
             schedulingGates: [example.com/wait]}
          - {name: n0, namespace: c1, job: next, requests: {cpu: 2}}
        """)
    assert str(outcome.job("c1/next").podgroup.phase) == "Inqueue"


def test_the_loader_refuses_gates_on_a_placed_pod_and_twice_the_same_gate() -> None:
    def load(task: str) -> None:
        parse_scenario({"version": 1, "name": "g", "config": {"actions": ""},
                        "nodes": [{"name": "n1", "allocatable": {"cpu": 1, "pods": 1}}],
                        "jobs": [{"name": "pg"}], "tasks": [eval(task)]}, source="<g>")

    with pytest.raises(ScenarioError, match="only a pod not yet scheduled has scheduling gates"):
        load('{"name": "p", "job": "pg", "node": "n1", "phase": "Running",'
             ' "schedulingGates": ["x"]}')
    with pytest.raises(ScenarioError, match="gate 'x' is given twice"):
        load('{"name": "p", "job": "pg", "schedulingGates": ["x", {"name": "x"}]}')
    # A gated pod being deleted (a finalizer holds it) is still a pod on no node.
    load('{"name": "p", "job": "pg", "deleting": True, "schedulingGates": ["x"]}')


def test_a_lifted_gate_lets_the_next_session_place_the_pod() -> None:
    scenario = parse_scenario({
        "version": 1, "name": "g", "config": {"actions": "enqueue, allocate"},
        "nodes": [{"name": "n1", "allocatable": {"cpu": 1, "pods": 1}}],
        "jobs": [{"name": "pg", "minMember": 1}],
        "tasks": [{"name": "p", "job": "pg", "requests": {"cpu": 1},
                   "schedulingGates": ["a", "b"]}]}, source="<g>")
    cache = scenario.build_cache()
    from batchsched.scheduler import Scheduler

    scheduler = Scheduler(cache, scenario.configuration)
    scheduler.run_once()
    assert cache.binds == []
    with pytest.raises(SchedulingError, match="cannot be added"):
        cache.set_scheduling_gates("default/pg", "default/p", ["a", "c"])
    cache.set_scheduling_gates("default/pg", "default/p", ["b"])
    scheduler.run_once()
    assert cache.binds == []
    cache.set_scheduling_gates("default/pg", "default/p", [])
    scheduler.run_once()
    assert [b.node for b in cache.binds] == ["n1"]


@pytest.mark.parametrize("plugin", ["proportion", "capacity"])
def test_the_queue_plugins_do_not_reserve_what_gated_pods_ask(plugin: str) -> None:
    """Volcano's proportion and capacity deduct gated requests from an Inqueue job's
    reservation: the next job fits the queue's capability."""
    outcome = run(f"""
        config:
          actions: "enqueue, allocate"
          tiers: [{{plugins: [{{name: gang}}, {{name: {plugin}}}]}}]
        """, """
        jobs:
          - {name: a, namespace: c1, queue: q, minMember: 2, phase: Inqueue,
             minResources: {cpu: 4}}
          - {name: b, namespace: c1, queue: q, minMember: 1, minResources: {cpu: 2}}
        tasks:
          - {name: a0, namespace: c1, job: a, requests: {cpu: 2},
             schedulingGates: [example.com/wait]}
          - {name: a1, namespace: c1, job: a, requests: {cpu: 2},
             schedulingGates: [example.com/wait]}
          - {name: b0, namespace: c1, job: b, requests: {cpu: 2}}
        """.replace("queue: q,", "queue: q1,"))
    assert outcome.binds == {"c1/b0": "n1"}


@pytest.mark.parametrize("plugin", ["proportion", "capacity"])
def test_a_gated_pod_being_deleted_is_deducted_too(plugin: str) -> None:
    """Volcano's GetSchGatedPodResources walks every pod of the job, whatever its
    status: a gated pod being deleted (Releasing) is deducted like a Pending one, so
    the Inqueue job reserves nothing of its queue's 2 cpu and b is admitted."""
    import yaml

    from batchsched.scenario import parse_scenario, run_scenario

    document = yaml.safe_load(f"""
        version: 1
        name: gated pod being deleted
        config:
          actions: enqueue
          tiers: [{{plugins: [{{name: {plugin}}}]}}]
        queues: [{{name: q1, weight: 1, capability: {{cpu: 2}}}}]
        nodes: [{{name: n1, allocatable: {{cpu: 4, memory: 4Gi, pods: 10}}}}]
        jobs:
          - {{name: a, namespace: ns, queue: q1, minMember: 2, minResources: {{cpu: 2}},
             phase: Inqueue}}
          - {{name: b, namespace: ns, queue: q1, minMember: 1, minResources: {{cpu: 2}}}}
        tasks:
          - {{name: a1, namespace: ns, job: a, requests: {{cpu: 1}},
             schedulingGates: [example.com/hold]}}
          - {{name: a2, namespace: ns, job: a, deleting: true, requests: {{cpu: 1}},
             schedulingGates: [example.com/hold]}}
          - {{name: b1, namespace: ns, job: b, requests: {{cpu: 2}}}}
        """)
    phases = run_scenario(parse_scenario(document)).pod_group_phases
    assert phases["ns/b"] == "Inqueue"
