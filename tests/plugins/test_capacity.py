"""capacity: deserved, capability and guarantee per queue, flat and hierarchical
(Volcano's plugins/capacity, including capacity_test.go's unit cases)."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from policy_support import open_scenario, registry, run, scenario
from queue_support import GI, assert_total_order, only, run_two_cycles

from batchsched.api import (
    JobInfo,
    NodeInfo,
    PodGroup,
    PodGroupPhase,
    QueueInfo,
    Resource,
    TaskInfo,
)
from batchsched.api.queue import ROOT_QUEUE
from batchsched.api.queue_accounting import QueueUsage
from batchsched.cache import MemoryCache
from batchsched.conf import parse_configuration
from batchsched.framework import Statement
from batchsched.framework.arguments import Arguments
from batchsched.framework.session import Session
from batchsched.plugins.capacity import CapacityPlugin
from batchsched.plugins.capacity.hierarchy import CapacityQueue
from batchsched.scenario import parse_scenario
from batchsched.scheduler import Scheduler


def capacity_of(ssn: Any) -> CapacityPlugin:
    plugin = ssn.plugins["capacity"]
    assert isinstance(plugin, CapacityPlugin)
    return plugin


def res(cpu: float = 0, memory_gi: float = 0) -> Resource:
    return Resource(cpu * 1000, memory_gi * GI)


def doc(queues: str, jobs: str, tasks: str, *, hierarchy: bool = False, actions: str = "",
        nodes: str = "[{name: n1, allocatable: {cpu: 8, memory: 8Gi, pods: 100}}]",
        arguments: str = "{}") -> dict[str, Any]:
    return scenario(f"""
config:
  actions: "{actions}"
  tiers: [{{plugins: [{{name: capacity, enableHierarchy: {str(hierarchy).lower()},
                        arguments: {arguments}}}]}}]
queues: {queues}
nodes: {nodes}
jobs: {jobs}
tasks: {tasks}
""")


# -- Test_updateQueueAttrShare (UNIT-CASES.md) --------------------------------------------

EMPTY = None


@pytest.mark.parametrize(
    ("case", "deserved", "allocated", "requested", "expected"),
    [
        ("best-effort queue with allocated resources", EMPTY, res(1, 1), EMPTY, 1.0),
        ("best-effort queue with pending requests only", EMPTY, EMPTY, res(1, 1), 1.0),
        ("best-effort queue with both allocated and request", EMPTY, res(1, 1),
         res(0.5, 0.5), 1.0),
        ("best-effort queue completely idle", EMPTY, EMPTY, EMPTY, 1.0),
        ("queue with deserved but no allocated", res(2, 2), EMPTY, EMPTY, 0.0),
        ("allocated < deserved (CPU dimension)", res(2, 2), res(1, 1), EMPTY, 0.5),
        ("allocated = deserved", res(2, 2), res(2, 2), EMPTY, 1.0),
        ("allocated > deserved (CPU dimension)", res(2, 2), res(3, 2), EMPTY, 1.5),
        ("memory is dominant resource", res(2, 4), res(1, 3), EMPTY, 0.75),
        ("CPU is dominant resource", res(2, 4), res(1.5, 2), EMPTY, 0.75),
        ("allocated exceeds on both dimensions", res(2, 2), res(3, 3), EMPTY, 1.5),
        ("request should not affect share calculation", res(2, 2), res(1, 1), res(1, 1), 0.5),
        ("deserved but zero values", res(0, 0), res(1, 1), EMPTY, 1.0),
        ("deserved, allocated is zero", res(2, 2), res(0, 0), EMPTY, 0.0),
        ("best-effort queue with only CPU allocated", EMPTY, res(1, 0), EMPTY, 1.0),
        ("best-effort queue with only memory allocated", EMPTY, res(0, 1), EMPTY, 1.0),
        ("best-effort queue with only CPU request", EMPTY, EMPTY, res(1, 0), 1.0),
    ],
)
def test_update_queue_attr_share(case: str, deserved: Resource | None,
                                 allocated: Resource | None, requested: Resource | None,
                                 expected: float) -> None:
    usage = QueueUsage(allocated=allocated or Resource(), request=requested or Resource())
    attr = CapacityQueue(
        "q", usage=usage,
        deserved=deserved or Resource(),
    )
    attr.update_share()
    assert attr.share == pytest.approx(expected), case


# -- TestNoDoubleCountingForInqueueJobWithBindingTasks (UNIT-CASES.md) ---------------------

def test_inqueue_job_with_binding_tasks_is_not_counted_twice() -> None:
    entry = only("capacity", "enabledAllocatable", "enabledOverused", "enableJobEnqueued")
    queue = "{name: q1, weight: 1, capability: {cpu: 4, memory: 8Gi}}"  # deserved unset
    first, second = run_two_cycles(entry, queue)
    assert first == ["ns1/pA1", "ns1/pA2", "ns1/pA3"]
    # Cycle 2: 1 (pgB) + 3 allocated + 0 inqueue - 0 elastic = 4 <= 4.
    assert second == ["ns1/pB1"]


# -- Test_buildHierarchicalQueueAttrs_nilSafety case 1 (UNIT-CASES.md) ---------------------

def test_job_of_a_deleted_queue_does_not_break_the_hierarchy() -> None:
    cache = MemoryCache()
    cache.delete_queue("default")
    cache.add_queue(QueueInfo("root"))
    cache.add_node(NodeInfo.create("n1", Resource(4000, 4 * GI, {"pods": 10})))
    podgroup = PodGroup("pg-orphan", "ns1", queue="deleted-queue", min_member=1,
                        phase=PodGroupPhase.INQUEUE)
    cache.add_job(JobInfo.from_podgroup(podgroup, tasks=[
        TaskInfo.create("ns1", "orphan", "ns1/pg-orphan", Resource(1000, GI))]))
    configuration = parse_configuration({"actions": "allocate", "tiers": [{"plugins": [
        only("capacity", "enabledAllocatable", "enableReclaimable", "enableQueueOrder",
             "enableHierarchy", "enableJobEnqueued"),
        only("predicates", "enablePredicate"),
        only("gang", "enableJobStarving"),
    ]}]})
    ssn = Scheduler(cache, configuration, registry=registry()).run_once()
    assert cache.binds == [] and cache.evictions == []
    assert ssn.jobs == {}              # the cache leaves the orphan out of the session
    assert capacity_of(ssn).ready      # and the hierarchy (root alone) stays usable


# -- flat -------------------------------------------------------------------------------------

def test_flat_deserved_is_capped_by_real_capability_and_raised_to_guarantee() -> None:
    ssn = open_scenario(doc(
        "[{name: q1, deserved: {cpu: 6}, capability: {cpu: 3}},"
        " {name: q2, deserved: {cpu: 1}, guarantee: {cpu: 2}}]",
        "[{name: a, queue: q1}, {name: b, queue: q2}]",
        "[{name: a1, job: a, requests: {cpu: 1}}, {name: b1, job: b, requests: {cpu: 1}}]",
    ))
    attrs = capacity_of(ssn).queue_attrs
    assert attrs["q1"].real_capability.milli_cpu == 3000      # min(8 - 2, capability 3)
    assert attrs["q1"].deserved.milli_cpu == 3000
    assert attrs["q2"].real_capability.milli_cpu == 8000      # (8 - 2) + own 2
    assert attrs["q2"].deserved.milli_cpu == 2000


def test_flat_allocatable_checks_real_capability_on_requested_dimensions() -> None:
    ssn = open_scenario(doc(
        "[{name: q1, capability: {cpu: 2, memory: 1Gi}}]", "[{name: a, queue: q1}]",
        "[{name: a1, job: a, node: n1, phase: Running, requests: {cpu: 1, memory: 1Gi}},"
        " {name: a2, job: a, requests: {cpu: 1}}, {name: a3, job: a, requests: {memory: 1Gi}}]",
    ))
    tasks = ssn.jobs["default/a"].tasks
    assert ssn.allocatable(ssn.queues["q1"], tasks["default/a2"])      # cpu 2 <= 2
    assert not ssn.allocatable(ssn.queues["q1"], tasks["default/a3"])  # memory 2Gi > 1Gi


def test_queue_order_is_priority_then_share_then_having_deserved() -> None:
    ssn = open_scenario(doc(
        "[{name: half, deserved: {cpu: 4}}, {name: none}, {name: full, deserved: {cpu: 1}},"
        " {name: vip, priority: 3}]",
        "[{name: a, queue: half}, {name: b, queue: none}, {name: c, queue: full},"
        " {name: d, queue: vip}]",
        "[{name: a1, job: a, node: n1, phase: Running, requests: {cpu: 2}},"
        " {name: b1, job: b, requests: {cpu: 1}},"
        " {name: c1, job: c, node: n1, phase: Running, requests: {cpu: 1}},"
        " {name: d1, job: d, requests: {cpu: 1}}]",
    ))
    q = ssn.queues
    assert ssn.queue_order_fn(q["vip"], q["half"])
    assert ssn.queue_order_fn(q["half"], q["full"])     # share 0.5 < 1
    assert ssn.queue_order_fn(q["full"], q["none"])     # both 1: deserved first


def test_reclaim_never_takes_a_queue_below_its_guarantee() -> None:
    ssn = open_scenario(doc(
        "[{name: q1, deserved: {cpu: 1}, guarantee: {cpu: 2}}, {name: q2, deserved: {cpu: 6}}]",
        "[{name: a, queue: q1}, {name: b, queue: q2}]",
        "[{name: a1, job: a, node: n1, phase: Running, requests: {cpu: 1}},"
        " {name: a2, job: a, node: n1, phase: Running, requests: {cpu: 1}},"
        " {name: a3, job: a, node: n1, phase: Running, requests: {cpu: 1}},"
        " {name: b1, job: b, requests: {cpu: 2}}]",
    ))
    reclaimer = ssn.jobs["default/b"].tasks["default/b1"]
    candidates = list(ssn.jobs["default/a"].tasks.values())
    assert ssn.preemptive(ssn.queues["q2"], reclaimer)
    # q1 holds 3 > deserved 2 (raised to its guarantee): one victim, then 2 = guarantee.
    assert len(ssn.reclaimable(reclaimer, candidates)) == 1


def test_preemptive_needs_room_within_deserved_on_some_dimension() -> None:
    ssn = open_scenario(doc(
        "[{name: q1, deserved: {cpu: 2, memory: 1Gi}}]", "[{name: a, queue: q1}]",
        "[{name: a1, job: a, node: n1, phase: Running, requests: {cpu: 2}},"
        " {name: a2, job: a, requests: {cpu: 1, memory: 1Gi}},"
        " {name: a3, job: a, requests: {cpu: 1, memory: 2Gi}}]",
    ))
    tasks = ssn.jobs["default/a"].tasks
    assert ssn.preemptive(ssn.queues["q1"], tasks["default/a2"])      # memory 1Gi <= 1Gi
    assert not ssn.preemptive(ssn.queues["q1"], tasks["default/a3"])  # cpu 3 > 2, memory 2 > 1


def test_events_update_allocated_and_share() -> None:
    ssn = open_scenario(doc("[{name: q1, deserved: {cpu: 4}}]", "[{name: a, queue: q1}]",
                            "[{name: a1, job: a, requests: {cpu: 2}}]"))
    attr = capacity_of(ssn).queue_attrs["q1"]
    stmt = Statement(ssn)
    stmt.allocate(ssn.jobs["default/a"].tasks["default/a1"], "n1")
    assert (attr.allocated.milli_cpu, attr.share) == (2000, 0.5)
    stmt.discard()
    assert (attr.allocated.milli_cpu, attr.share) == (0, 0.0)


# -- hierarchical ------------------------------------------------------------------------------

TREE = """[{name: root},
  {name: eng, parent: root, capability: {cpu: 4}, deserved: {cpu: 4}, guarantee: {cpu: 1}},
  {name: dev, parent: eng, deserved: {cpu: 1}},
  {name: prod, parent: eng, capability: {memory: 2Gi}, deserved: {cpu: 3}, guarantee: {cpu: 2}},
  {name: ops, parent: root, deserved: {cpu: 2}}]"""


def test_hierarchy_inherits_capability_and_bounds_real_capability_by_parent() -> None:
    ssn = open_scenario(doc(TREE, "[{name: a, queue: dev}]",
                            "[{name: a1, job: a, requests: {cpu: 1}}]", hierarchy=True))
    attrs = capacity_of(ssn).queue_attrs
    assert attrs["dev"].ancestors == ["root", "eng"]
    assert attrs["dev"].capability.milli_cpu == 4000              # from eng
    assert attrs["prod"].capability.milli_cpu == 4000             # cpu from eng, memory its own
    assert attrs["prod"].capability.memory == 2 * GI
    # eng's children guarantee 2 in total: dev gets 4 - 2 + 0, prod 4 - 2 + 2.
    assert attrs["dev"].real_capability.milli_cpu == 2000
    assert attrs["prod"].real_capability.milli_cpu == 4000
    assert attrs["prod"].real_capability.memory == 2 * GI
    # root's deserved and guarantee are its children's sums.
    assert attrs["root"].deserved.milli_cpu == 6000
    assert attrs["root"].guarantee.milli_cpu == 1000


def test_a_scenario_without_a_root_queue_gets_volcano_s() -> None:
    # Volcano's cache creates `root` (not reclaimable, weight 1) when it is missing, as
    # it creates `default`: a tree of queues without a declared root is usable.
    decisions = run(doc("[{name: eng, capability: {cpu: 4}}]",
                        "[{name: j, queue: eng, minMember: 1, minResources: {cpu: 1}}]",
                        "[{name: t, job: j, requests: {cpu: 1}}]", hierarchy=True,
                        actions="enqueue, allocate"))
    assert decisions.binds == {"default/t": "n1"}
    for cache in (parse_scenario(doc("[]", "[]", "[]"), source="<test>").build_cache(),
                  MemoryCache()):
        root = cache.queues[ROOT_QUEUE]
        assert (root.reclaimable, root.weight, root.parent) == (False, 1, "")


def test_hierarchy_checks_every_ancestor_and_only_leaves_take_jobs() -> None:
    ssn = open_scenario(doc(
        TREE, "[{name: a, queue: dev}, {name: b, queue: prod}]",
        "[{name: b1, job: b, node: n1, phase: Running, requests: {cpu: 3}},"
        " {name: a1, job: a, requests: {cpu: 1}}, {name: a2, job: a, requests: {cpu: 2}}]",
        hierarchy=True,
    ))
    attrs = capacity_of(ssn).queue_attrs
    assert attrs["eng"].allocated.milli_cpu == 3000 and attrs["root"].allocated.milli_cpu == 3000
    tasks = ssn.jobs["default/a"].tasks
    assert ssn.allocatable(ssn.queues["dev"], tasks["default/a1"])       # eng: 3 + 1 <= 4
    assert not ssn.allocatable(ssn.queues["dev"], tasks["default/a2"])   # eng: 3 + 2 > 4
    assert not ssn.allocatable(ssn.queues["eng"], tasks["default/a1"])   # not a leaf


@pytest.mark.parametrize(
    ("queues", "why"),
    [
        ("[{name: root}, {name: a, parent: nowhere}]", "missing parent"),
        ("[{name: root}, {name: a, parent: b}, {name: b, parent: a}]", "cycle"),
        ("[{name: a}]", "no root queue"),
    ],
)
def test_unusable_hierarchy_refuses_everything(queues: str, why: str) -> None:
    parsed = parse_scenario(doc(queues, "[{name: j, queue: a, minResources: {cpu: 1}}]",
                                "[{name: t, job: j, requests: {cpu: 1}}]", hierarchy=True),
                            source="<test>")
    cluster = parsed.to_cluster()
    if why == "no root queue":
        # Only a cluster built by hand can lack it: scenarios and caches add it.
        del cluster.queues[ROOT_QUEUE]
    ssn = Session.open(cluster, parsed.configuration, registry=registry())
    plugin = capacity_of(ssn)
    job = ssn.jobs["default/j"]
    task = job.tasks["default/t"]
    assert plugin.ready is False, why
    assert not ssn.allocatable(ssn.queues["a"], task)
    assert not ssn.job_enqueueable(job)
    assert not ssn.preemptive(ssn.queues["a"], task)


def test_job_in_inner_queue_makes_the_hierarchy_unusable() -> None:
    decisions = run(doc(TREE, "[{name: a, queue: eng, phase: Inqueue}]",
                        "[{name: a1, job: a, requests: {cpu: 1}}]", hierarchy=True,
                        actions="allocate"))
    assert decisions.binds == {}


@pytest.mark.parametrize(("value", "level"), [(None, 0), (2, 2), (-3, 0)])
def test_ancestor_reclaim_level_argument(value: int | None, level: int) -> None:
    arguments = Arguments({} if value is None else {"ancestorReclaimLevel": value})
    assert CapacityPlugin(arguments).ancestor_reclaim_level == level


def test_hierarchical_orders_compare_diverging_ancestors() -> None:
    ssn = open_scenario(doc(
        TREE, "[{name: a, queue: dev}, {name: b, queue: prod}, {name: c, queue: ops}]",
        "[{name: a1, job: a, node: n1, phase: Running, requests: {cpu: 1}},"
        " {name: b1, job: b, node: n1, phase: Running, requests: {cpu: 1}},"
        " {name: c1, job: c, node: n1, phase: Running, requests: {cpu: 2}}]",
        hierarchy=True,
    ))
    q = ssn.queues
    plugin = capacity_of(ssn)
    # dev (1/1) vs prod (1/3): siblings compare themselves.
    assert plugin.hierarchical_queue_order(q["prod"], q["dev"]) < 0
    # dev vs ops: eng (2/4 = 0.5) vs ops (2/2 = 1).
    assert plugin.hierarchical_queue_order(q["dev"], q["ops"]) < 0
    assert plugin.hierarchical_queue_order(q["dev"], q["eng"]) < 0     # leaves first
    # victims closer to the reclaimer's queue (dev) first: prod (shares eng) before ops.
    assert plugin.victim_queue_order(q["prod"], q["ops"], q["dev"]) < 0


# -- properties ------------------------------------------------------------------------------

leaf_specs = st.lists(
    st.tuples(st.integers(0, 1),                                # parent index
              st.one_of(st.none(), st.integers(1, 6)),          # capability cpu
              st.one_of(st.none(), st.integers(0, 4)),          # deserved cpu
              st.lists(st.integers(1, 3), min_size=1, max_size=4)),  # pending task cpus
    min_size=1, max_size=4,
)
parent_caps = st.lists(st.one_of(st.none(), st.integers(2, 8)), min_size=2, max_size=2)


def _capacity_doc(leaves: list[tuple[int, int | None, int | None, list[int]]],
                  parents: list[int | None], hierarchy: bool, actions: str) -> dict[str, Any]:
    queues: list[dict[str, Any]] = [{"name": "root"}] if hierarchy else []
    if hierarchy:
        for i, cap in enumerate(parents):
            queue: dict[str, Any] = {"name": f"p{i}", "parent": "root"}
            if cap is not None:
                queue["capability"] = {"cpu": cap}
            queues.append(queue)
    jobs, tasks = [], []
    for i, (parent, cap, deserved, pending) in enumerate(leaves):
        leaf: dict[str, Any] = {"name": f"l{i}"}
        if hierarchy:
            leaf["parent"] = f"p{parent}"
        if cap is not None:
            leaf["capability"] = {"cpu": cap}
        if deserved is not None:
            leaf["deserved"] = {"cpu": deserved}
        queues.append(leaf)
        jobs.append({"name": f"j{i}", "queue": f"l{i}", "phase": "Inqueue"})
        tasks += [{"name": f"t{i}-{k}", "job": f"j{i}", "requests": {"cpu": c, "memory": "1Gi"}}
                  for k, c in enumerate(pending)]
    document = scenario(f"config: {{actions: '{actions}', tiers: [{{plugins: [{{name: capacity,"
                        f" enableHierarchy: {str(hierarchy).lower()}}}]}}]}}")
    document.update(queues=queues, jobs=jobs, tasks=tasks, nodes=[
        {"name": "n1", "allocatable": {"cpu": 64, "memory": "64Gi", "pods": 100}}])
    return document


@settings(max_examples=40, deadline=None)
@given(leaf_specs, parent_caps, st.booleans())
def test_allocate_never_takes_a_queue_beyond_its_capability(
    leaves: list[tuple[int, int | None, int | None, list[int]]], parents: list[int | None],
    hierarchy: bool,
) -> None:
    document = _capacity_doc(leaves, parents, hierarchy, "allocate")
    decisions = run(document)
    requests = {f"default/{t['name']}": t["requests"]["cpu"] * 1000 for t in document["tasks"]}
    held: dict[str, float] = {}
    for task in decisions.binds:
        leaf = int(task.split("/")[1][1:].split("-")[0])
        held[f"l{leaf}"] = held.get(f"l{leaf}", 0.0) + requests[task]
        if hierarchy:
            parent = f"p{leaves[leaf][0]}"
            held[parent] = held.get(parent, 0.0) + requests[task]
    for i, (parent, cap, _, _) in enumerate(leaves):
        limit = cap
        if hierarchy and limit is None:
            limit = parents[parent]          # a leaf inherits its parent's cpu capability
        if limit is not None:
            assert held.get(f"l{i}", 0.0) <= limit * 1000
    if hierarchy:
        for i, cap in enumerate(parents):
            if cap is not None:
                assert held.get(f"p{i}", 0.0) <= cap * 1000


@settings(max_examples=40, deadline=None)
@given(leaf_specs, parent_caps, st.booleans(),
       st.lists(st.integers(0, 1), min_size=7, max_size=7))
def test_queue_orders_are_antisymmetric_and_transitive(
    leaves: list[tuple[int, int | None, int | None, list[int]]], parents: list[int | None],
    hierarchy: bool, priorities: list[int],
) -> None:
    ssn = open_scenario(_capacity_doc(leaves, parents, hierarchy, ""))
    plugin = capacity_of(ssn)
    names = sorted(plugin.queue_attrs)
    queues = [ssn.queues[n] for n in names]
    for queue, priority in zip(queues, priorities, strict=False):
        queue.priority = priority
    if hierarchy:
        # Two leaves compare through their ancestors below the deepest shared one, so
        # ties are not transitive: leaves a and c under p may differ while both tie
        # with a leaf b elsewhere because p ties with b (Volcano's order, kept).
        assert_total_order(queues, plugin.hierarchical_queue_order, transitive_ties=False)
    else:
        assert_total_order(queues, plugin.queue_order)
    if hierarchy:
        for preemptor in queues:
            assert_total_order(queues, lambda a, b, p=preemptor: plugin.victim_queue_order(a, b, p))


def test_simulation_follows_the_task_and_its_ancestors() -> None:
    ssn = open_scenario(doc(
        TREE, "[{name: a, queue: dev}, {name: b, queue: prod}]",
        "[{name: b1, job: b, node: n1, phase: Running, requests: {cpu: 3}},"
        " {name: a1, job: a, requests: {cpu: 2}}]", hierarchy=True,
    ))
    plugin = capacity_of(ssn)
    task = ssn.jobs["default/a"].tasks["default/a1"]
    victim = ssn.jobs["default/b"].tasks["default/b1"]
    ssn.pre_predicate(task)
    assert not ssn.simulate_allocatable(ssn.queues["dev"], task)   # eng: 3 + 2 > 4
    ssn.simulate_remove_task(task, victim, ssn.nodes["n1"])
    assert ssn.simulate_allocatable(ssn.queues["dev"], task)       # eng: 0 + 2 <= 4
    state = plugin.snapshots.state(task.uid)
    assert state is not None and state["eng"].allocated.milli_cpu == 0
    assert plugin.queue_attrs["eng"].allocated.milli_cpu == 3000
