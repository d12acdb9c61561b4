"""proportion: water-filled deserved shares, queue order, admission, allocation, reclaim
(Volcano's plugins/proportion, including proportion_test.go's two-cycle case)."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from policy_support import open_scenario, scenario
from queue_support import GI, assert_total_order, only, run_two_cycles

from batchsched.api import QueueInfo, Resource
from batchsched.framework import Statement
from batchsched.plugins.proportion import ProportionPlugin


def proportion_of(ssn: Any) -> ProportionPlugin:
    plugin = ssn.plugins["proportion"]
    assert isinstance(plugin, ProportionPlugin)
    return plugin


def cluster_doc(queues: str, jobs: str, tasks: str, *, nodes: str | None = None,
                actions: str = "", plugins: str = "[{name: proportion}]") -> dict[str, Any]:
    return scenario(f"""
config: {{actions: "{actions}", tiers: [{{plugins: {plugins}}}]}}
queues: {queues}
nodes: {nodes or "[{name: n1, allocatable: {cpu: 8, memory: 8Gi, pods: 100}}]"}
jobs: {jobs}
tasks: {tasks}
""")


# -- deserved -----------------------------------------------------------------------------

def test_deserved_is_water_filled_by_weight_and_capped_by_request() -> None:
    # 8 cpu / 8Gi, weights 1:3. Round 1: q1 gets 2 cpu (asks 1: capped at 1),
    # q2 gets 6 (asks 7). Round 2: the unused 1 cpu goes to q2 -> 7.
    ssn = open_scenario(cluster_doc(
        "[{name: q1, weight: 1}, {name: q2, weight: 3}]",
        "[{name: a, queue: q1}, {name: b, queue: q2}]",
        "[{name: a1, job: a, requests: {cpu: 1, memory: 1Gi}},"
        " {name: b1, job: b, requests: {cpu: 7, memory: 1Gi}}]",
    ))
    attrs = proportion_of(ssn).queue_attrs
    assert attrs["q1"].deserved.milli_cpu == 1000
    assert attrs["q2"].deserved.milli_cpu == 7000
    assert attrs["q1"].deserved.memory == GI
    assert attrs["q2"].deserved.memory == GI


def test_deserved_is_capped_by_capability_and_raised_to_guarantee() -> None:
    ssn = open_scenario(cluster_doc(
        "[{name: q1, capability: {cpu: 2}}, {name: q2, guarantee: {cpu: 5}}]",
        "[{name: a, queue: q1}, {name: b, queue: q2}]",
        "[{name: a1, job: a, requests: {cpu: 6}}, {name: b1, job: b, requests: {cpu: 1}}]",
    ))
    attrs = proportion_of(ssn).queue_attrs
    # realCapability: (8 - 5 guaranteed) + own guarantee, capped by capability.
    assert attrs["q1"].real_capability.milli_cpu == 2000
    assert attrs["q2"].real_capability.milli_cpu == 8000
    assert attrs["q1"].deserved.milli_cpu == 2000   # wants 6, capability 2
    assert attrs["q2"].deserved.milli_cpu == 5000   # wants 1, guarantee 5


def test_capability_without_memory_leaves_memory_unbounded() -> None:
    ssn = open_scenario(cluster_doc(
        "[{name: q1, capability: {cpu: 1}}]", "[{name: a, queue: q1}]",
        "[{name: a1, job: a, requests: {cpu: 1, memory: 1Gi}}]",
    ))
    attr = proportion_of(ssn).queue_attrs["q1"]
    assert attr.real_capability.memory == 8 * GI


def test_queues_without_jobs_get_no_share_and_spec_deserved_is_ignored() -> None:
    ssn = open_scenario(cluster_doc(
        "[{name: q1, deserved: {cpu: 1}}, {name: idle}]", "[{name: a, queue: q1}]",
        "[{name: a1, job: a, requests: {cpu: 4}}]",
    ))
    attrs = proportion_of(ssn).queue_attrs
    assert set(attrs) == {"q1"}
    assert attrs["q1"].deserved.milli_cpu == 4000


# -- share, order, overused -------------------------------------------------------------------

def test_queue_order_is_priority_then_share() -> None:
    ssn = open_scenario(cluster_doc(
        "[{name: busy}, {name: calm}, {name: vip, priority: 5}]",
        "[{name: a, queue: busy}, {name: b, queue: calm}, {name: c, queue: vip}]",
        "[{name: a1, job: a, node: n1, phase: Running, requests: {cpu: 2}},"
        " {name: a2, job: a, requests: {cpu: 2}},"
        " {name: b1, job: b, node: n1, phase: Running, requests: {cpu: 1}},"
        " {name: b2, job: b, requests: {cpu: 3}},"
        " {name: c1, job: c, node: n1, phase: Running, requests: {cpu: 4}}]",
    ))
    queues = ssn.queues
    assert ssn.queue_order_fn(queues["vip"], queues["calm"])   # priority wins over share
    # deserved 8/3 cpu each: calm holds 1 (share 0.375), busy 2 (share 0.75)
    assert ssn.queue_order_fn(queues["calm"], queues["busy"])
    assert not ssn.queue_order_fn(queues["busy"], queues["calm"])


def test_overused_when_allocation_reaches_deserved_in_every_dimension() -> None:
    ssn = open_scenario(cluster_doc(
        "[{name: q1}, {name: q2}]",
        "[{name: a, queue: q1}, {name: b, queue: q2}]",
        "[{name: a1, job: a, node: n1, phase: Running, requests: {cpu: 2, memory: 1Gi}},"
        " {name: b1, job: b, node: n1, phase: Running, requests: {cpu: 1, memory: 1Gi}},"
        " {name: b2, job: b, requests: {cpu: 1, memory: 1Gi}}]",
    ))
    assert ssn.overused(ssn.queues["q1"])       # asks only what it holds
    assert not ssn.overused(ssn.queues["q2"])   # holds half of its deserved


# -- allocatable, enqueueable ---------------------------------------------------------------

def test_allocatable_compares_only_requested_dimensions_with_deserved() -> None:
    ssn = open_scenario(cluster_doc(
        "[{name: q1, capability: {cpu: 2, memory: 2Gi}}]", "[{name: a, queue: q1}]",
        "[{name: a1, job: a, node: n1, phase: Running, requests: {cpu: 2}},"
        " {name: a2, job: a, requests: {memory: 1Gi}},"
        " {name: a3, job: a, requests: {cpu: 1}}]",
    ))
    job = ssn.jobs["default/a"]
    queue = ssn.queues["q1"]
    assert ssn.allocatable(queue, job.tasks["default/a2"])      # memory 1Gi <= 1Gi
    assert not ssn.allocatable(queue, job.tasks["default/a3"])  # cpu 2 + 1 > 2


def test_closed_queue_is_neither_allocatable_nor_enqueueable() -> None:
    ssn = open_scenario(cluster_doc(
        "[{name: q1, state: Closed}]", "[{name: a, queue: q1, minResources: {cpu: 1}}]",
        "[{name: a1, job: a, requests: {cpu: 1}}]",
    ))
    job = ssn.jobs["default/a"]
    assert not ssn.allocatable(ssn.queues["q1"], job.tasks["default/a1"])
    assert not ssn.job_enqueueable(job)


def test_enqueue_counts_allocated_inqueue_and_elastic_against_real_capability() -> None:
    # capability 4: 2 allocated (1 elastic beyond min 1) + 1 inqueue reserved.
    doc = cluster_doc(
        "[{name: q1, capability: {cpu: 4}}]",
        "[{name: run, queue: q1, minResources: {cpu: 1}, phase: Running, minMember: 1},"
        " {name: held, queue: q1, minResources: {cpu: 1}, phase: Inqueue},"
        " {name: fits, queue: q1, minResources: {cpu: 2}},"
        " {name: over, queue: q1, minResources: {cpu: 3}}]",
        "[{name: r1, job: run, node: n1, phase: Running, requests: {cpu: 1}},"
        " {name: r2, job: run, node: n1, phase: Running, requests: {cpu: 1}},"
        " {name: h1, job: held, requests: {cpu: 1}},"
        " {name: f1, job: fits, requests: {cpu: 2}},"
        " {name: o1, job: over, requests: {cpu: 3}}]",
    )
    ssn = open_scenario(doc)
    usage = proportion_of(ssn).queue_attrs["q1"].usage
    assert (usage.allocated.milli_cpu, usage.inqueue.milli_cpu, usage.elastic.milli_cpu) == (
        2000, 1000, 1000)
    assert ssn.job_enqueueable(ssn.jobs["default/fits"])   # 2 + 2 + 1 - 1 = 4 <= 4
    assert not ssn.job_enqueueable(ssn.jobs["default/over"])
    assert ssn.events[-1].message == (
        "queue resource quota insufficient: insufficient cpu")
    ssn.job_enqueued(ssn.jobs["default/fits"])
    assert usage.inqueue.milli_cpu == 3000


# -- reclaim ---------------------------------------------------------------------------------

def test_reclaimable_takes_victims_while_the_queue_is_over_deserved() -> None:
    doc = cluster_doc(
        "[{name: q1}, {name: q2}]",
        "[{name: hog, queue: q1}, {name: new, queue: q2}]",
        "[{name: h1, job: hog, node: n1, phase: Running, requests: {cpu: 2}},"
        " {name: h2, job: hog, node: n1, phase: Running, requests: {cpu: 2}},"
        " {name: h3, job: hog, node: n1, phase: Running, requests: {cpu: 2}},"
        " {name: n1, job: new, requests: {cpu: 4}}]",
    )
    ssn = open_scenario(doc)
    hog = ssn.jobs["default/hog"]
    # deserved: 4 cpu each (half of 8). q1 holds 6 > 4: h1 is a victim and the running
    # allocation drops to 4, within deserved, so h2 and h3 are spared.
    victims = ssn.reclaimable(ssn.jobs["default/new"].tasks["default/n1"],
                              list(hog.tasks.values()))
    assert [v.name for v in victims] == ["h1"]


def test_allocate_and_evict_events_keep_allocation_and_share_current() -> None:
    ssn = open_scenario(cluster_doc(
        "[{name: q1}]", "[{name: a, queue: q1}]",
        "[{name: a1, job: a, requests: {cpu: 2}}, {name: a2, job: a, requests: {cpu: 2}}]",
    ))
    attr = proportion_of(ssn).queue_attrs["q1"]
    task = ssn.jobs["default/a"].tasks["default/a1"]
    stmt = Statement(ssn)
    stmt.allocate(task, "n1")
    assert attr.allocated.milli_cpu == 2000 and attr.share == 0.5
    stmt.discard()
    assert attr.allocated.milli_cpu == 0 and attr.share == 0.0


# -- two cycles on one cache (UNIT-CASES.md, TestNoDoubleCountingForInqueueJobWithBindingTasks)

def test_inqueue_job_with_binding_tasks_is_not_counted_twice() -> None:
    entry = only("proportion", "enabledAllocatable", "enabledOverused", "enableJobEnqueued")
    queue = "{name: q1, weight: 1, capability: {cpu: 4, memory: 8Gi}}"
    first, second = run_two_cycles(entry, queue)
    assert first == ["ns1/pA1", "ns1/pA2", "ns1/pA3"]
    # Cycle 2: 1 (pgB) + 3 allocated + 0 inqueue (pgA's minimum is all allocated)
    # - 0 elastic = 4 <= realCapability 4: pgB is admitted and bound.
    assert second == ["ns1/pB1"]


# -- properties ---------------------------------------------------------------------------------

queue_specs = st.lists(
    st.tuples(
        st.integers(0, 4),                                    # weight
        st.one_of(st.none(), st.integers(1, 12)),             # capability cpu
        st.one_of(st.none(), st.integers(0, 3)),              # guarantee cpu
        st.lists(st.integers(1, 6), min_size=1, max_size=4),  # pending task cpus
        st.integers(0, 2),                                    # running tasks (1 cpu each)
    ),
    min_size=1, max_size=5,
)


def _proportion_session(specs: list[tuple[int, int | None, int | None, list[int], int]],
                        node_cpu: int) -> Any:
    queues, jobs, tasks = [], [], []
    for i, (weight, cap, guarantee, pending, running) in enumerate(specs):
        queue: dict[str, Any] = {"name": f"q{i}", "weight": weight}
        if cap is not None:
            queue["capability"] = {"cpu": cap}
        if guarantee is not None:
            queue["guarantee"] = {"cpu": guarantee}
        queues.append(queue)
        jobs.append({"name": f"j{i}", "queue": f"q{i}"})
        tasks += [{"name": f"p{i}-{k}", "job": f"j{i}", "requests": {"cpu": c, "memory": "1Gi"}}
                  for k, c in enumerate(pending)]
        tasks += [{"name": f"r{i}-{k}", "job": f"j{i}", "node": "n1", "phase": "Running",
                   "requests": {"cpu": 1, "memory": "1Gi"}} for k in range(running)]
    doc = scenario("config: {actions: '', tiers: [{plugins: [{name: proportion}]}]}")
    doc.update(queues=queues, jobs=jobs, tasks=tasks, nodes=[
        {"name": "n1", "allocatable": {"cpu": node_cpu, "memory": "64Gi", "pods": 100}}])
    return open_scenario(doc)


def _within(value: float, *limits: float) -> bool:
    return value <= max(limits) + 1e-6


@settings(max_examples=60, deadline=None)
@given(queue_specs, st.integers(10, 40))
def test_deserved_stays_within_real_capability_request_and_cluster(
    specs: list[tuple[int, int | None, int | None, list[int], int]], node_cpu: int
) -> None:
    ssn = _proportion_session(specs, node_cpu)
    attrs = proportion_of(ssn).queue_attrs
    summed = Resource()
    for attr in attrs.values():
        for dim in ("cpu", "memory"):
            deserved, guarantee = attr.deserved.get(dim), attr.guarantee.get(dim)
            # The guarantee is the one thing that may lift deserved above either bound.
            assert _within(deserved, attr.real_capability.get(dim), guarantee)
            assert _within(deserved, attr.request.get(dim), guarantee)
        summed.add(attr.deserved)
    # Each round splits the pool before guarantees lift queues, so the lifts are not
    # taken from the pool (Volcano's arithmetic): deserved adds up to at most the
    # cluster plus the guarantees, and to at most the cluster without guarantees.
    total_guarantee = sum(g or 0 for _, _, g, _, _ in specs) * 1000
    assert summed.milli_cpu <= node_cpu * 1000 + total_guarantee + 1e-6
    if total_guarantee == 0:
        assert summed.milli_cpu <= node_cpu * 1000 + 1e-6
    assert summed.memory <= 64 * GI + 1e-6


def test_guarantee_lifts_are_not_taken_from_the_pool() -> None:
    # 10 cpu; q1 (weight 0, guarantee 2) is lifted to 2 outside the split, while the
    # three others split all 10: q0 3 (its request), q2 2, q3 10/3. Sum 31/3 > 10.
    ssn = _proportion_session([(1, None, None, [1], 2), (0, None, 2, [1], 0),
                               (1, None, None, [1, 1], 0), (1, None, None, [1, 1, 1], 1)], 10)
    deserved = {n: a.deserved.milli_cpu for n, a in proportion_of(ssn).queue_attrs.items()}
    assert deserved["q1"] == 2000
    assert sum(deserved.values()) == pytest.approx(31000 / 3)


@settings(max_examples=40, deadline=None)
@given(queue_specs, st.lists(st.integers(0, 2), min_size=5, max_size=5))
def test_queue_order_is_antisymmetric_and_transitive(
    specs: list[tuple[int, int | None, int | None, list[int], int]], priorities: list[int]
) -> None:
    ssn = _proportion_session(specs, 20)
    plugin = proportion_of(ssn)
    queues: list[QueueInfo] = []
    for i, name in enumerate(sorted(plugin.queue_attrs)):
        queue = ssn.queues[name]
        queue.priority = priorities[i]
        queues.append(queue)
    assert_total_order(queues, plugin.queue_order)


# -- simulated preemption ------------------------------------------------------------------

def test_simulation_works_on_the_figures_of_the_pre_predicate() -> None:
    ssn = open_scenario(cluster_doc(
        "[{name: q1, capability: {cpu: 4}}]", "[{name: a, queue: q1}, {name: p, queue: q1}]",
        "[{name: a1, job: a, node: n1, phase: Running, requests: {cpu: 2}},"
        " {name: a2, job: a, requests: {cpu: 1}},"
        " {name: p1, job: p, requests: {cpu: 2}}]",
    ))
    plugin = proportion_of(ssn)
    queue, node = ssn.queues["q1"], ssn.nodes["n1"]
    running = ssn.jobs["default/a"].tasks["default/a1"]
    preemptor = ssn.jobs["default/p"].tasks["default/p1"]
    assert not ssn.simulate_allocatable(queue, preemptor)   # no pre-predicate yet
    ssn.pre_predicate(preemptor)                             # deserved 4, allocated 2
    Statement(ssn).allocate(ssn.jobs["default/a"].tasks["default/a2"], node)  # live: 3
    assert ssn.simulate_allocatable(queue, preemptor)        # snapshot: 2 + 2 <= 4
    assert not ssn.allocatable(queue, preemptor)             # live: 3 + 2 > 4
    ssn.simulate_remove_task(preemptor, running, node)
    state = plugin.snapshots.state(preemptor.uid)
    assert state is not None and state["q1"].allocated.milli_cpu == 0
    ssn.simulate_add_task(preemptor, running, node)
    assert plugin.queue_attrs["q1"].allocated.milli_cpu == 3000  # the live figures never moved
