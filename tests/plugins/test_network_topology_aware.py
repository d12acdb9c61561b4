"""network-topology-aware: Volcano's unit cases (network_topology_aware_test.go at the
pinned commit), transcribed, plus the behaviour allocate relies on.

Volcano's tests compare scores within 0.1; so do these. Where a Go test sets
``task.JobAllocatedHyperNode`` through a pod-group annotation, these set the task's
``job_allocated_hyper_node`` directly (the annotation is read by nothing else).
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from batchsched.api.hypernode import CLUSTER_TOP
from batchsched.api.sub_job import SubJobInfo, sub_jobs_of
from batchsched.framework.arguments import Arguments
from batchsched.framework.session import Session
from batchsched.plugins.network_topology_aware import NetworkTopologyAwarePlugin, reverse_and_cap
from plugins.node_support import document, open_session, plugin

NTA = "network-topology-aware"


def exact(kind: str, name: str) -> dict[str, Any]:
    return {"type": kind, "selector": {"exactMatch": {"name": name}}}


def hyper_node(
    name: str, tier: int, nodes: tuple[str, ...] = (), children: tuple[str, ...] = ()
) -> dict[str, Any]:
    return {
        "name": name,
        "tier": tier,
        "members": [exact("Node", n) for n in nodes] + [exact("HyperNode", c) for c in children],
    }


def three_tiers(top_children: tuple[str, ...] = ("s1", "s2")) -> list[dict[str, Any]]:
    """Volcano's test topology: s0 (tier 3) over s1, s2 (tier 2) over s3..s6 (tier 1),
    each of those with two nodes sX-n1, sX-n2."""
    return [hyper_node(f"s{k}", 1, (f"s{k}-n1", f"s{k}-n2")) for k in range(3, 7)] + [
        hyper_node("s1", 2, children=("s3", "s4")),
        hyper_node("s2", 2, children=("s5", "s6")),
        hyper_node("s0", 3, children=top_children),
    ]


def node(name: str, cpu: str = "4", memory: str = "8G", **scalars: str) -> dict[str, Any]:
    return {"name": name, "allocatable": {"cpu": cpu, "memory": memory, "pods": "10", **scalars}}


def session(
    nodes: list[dict[str, Any]],
    hyper_nodes: list[dict[str, Any]],
    tasks: list[dict[str, Any]],
    *,
    topology: dict[str, Any] | None = None,
    min_member: int = 1,
    arguments: dict[str, Any] | None = None,
) -> Session:
    job: dict[str, Any] = {
        "name": "pg1",
        "namespace": "c1",
        "queue": "q1",
        "minMember": min_member,
        "phase": "Inqueue",
    }
    if topology is not None:
        job["networkTopology"] = topology
    doc = document("", plugin(NTA, arguments))
    doc.update(
        queues=[{"name": "q1"}],
        nodes=nodes,
        hyperNodes=hyper_nodes,
        jobs=[job],
        tasks=[{"namespace": "c1", "job": "pg1", **t} for t in tasks],
    )
    return open_session(doc)


def pod(
    name: str, on: str = "", cpu: str = "2", memory: str = "4G", **scalars: str
) -> dict[str, Any]:
    entry: dict[str, Any] = {"name": name, "requests": {"cpu": cpu, "memory": memory, **scalars}}
    if on:
        entry.update(node=on, phase="Running")
    return entry


def default_sub_job(ssn: Session) -> SubJobInfo:
    job = ssn.jobs["c1/pg1"]
    return sub_jobs_of(job)[job.uid]


def batch_scores(
    ssn: Session, task_uid: str, nodes: list[str], allocated: str = ""
) -> dict[str, float]:
    task = ssn.jobs["c1/pg1"].tasks[task_uid]
    task.job_allocated_hyper_node = allocated
    return ssn.batch_node_order(task, [ssn.nodes[n] for n in nodes])


def assert_close(got: dict[str, float], want: dict[str, float]) -> None:
    assert set(got) == set(want), (got, want)
    for name, score in want.items():
        assert got[name] == pytest.approx(score, abs=0.1), (name, got)


# -- TestNew ---------------------------------------------------------------------------------


def test_arguments_default() -> None:
    p = NetworkTopologyAwarePlugin(Arguments({}))
    assert (p.weight, p.normal_pods, p.fading, p.max_hyper_nodes_for_eviction) == (1, True, 0.8, 8)
    assert p.resource_weights == {"cpu": 1, "memory": 1}


def test_arguments_read_and_unlisted_resource_weights_ignored() -> None:
    p = NetworkTopologyAwarePlugin(
        Arguments(
            {
                "weight": 2,
                "hypernode.binpack.cpu": 3,
                "hypernode.binpack.memory": 4,
                "hypernode.binpack.resources": "nvidia.com/gpu, example.com/foo",
                "hypernode.binpack.resources.nvidia.com/gpuxxx": 5,
                "hypernode.binpack.resources.example.com/foo": 6,
                "hypernode.binpack.normal-pod.enable": False,
                "hypernode.binpack.normal-pod.fading": 0,
            }
        )
    )
    assert (p.weight, p.normal_pods, p.fading) == (2, False, 0.0)
    assert p.resource_weights == {"nvidia.com/gpu": 1, "example.com/foo": 6, "cpu": 3, "memory": 4}


def test_resource_names_are_trimmed_as_go_trims_them() -> None:
    p = NetworkTopologyAwarePlugin(Arguments({"hypernode.binpack.resources": " gpu\x1f\n"}))
    assert p.resource_weights == {"gpu\x1f": 1, "cpu": 1, "memory": 1}


def test_arguments_negative_values_fall_back() -> None:
    p = NetworkTopologyAwarePlugin(
        Arguments(
            {
                "weight": -1,
                "hypernode.binpack.cpu": -1,
                "hypernode.binpack.memory": -1,
                "hypernode.binpack.resources": "nvidia.com/gpuxxx, example.com/foo",
                "hypernode.binpack.resources.nvidia.com/gpu": -1,
                "hypernode.binpack.resources.example.com/foo": -1,
                "hypernode.binpack.normal-pod.fading": -1,
            }
        )
    )
    assert (p.weight, p.fading) == (1, 0.8)
    assert p.resource_weights == {
        "nvidia.com/gpuxxx": 1,
        "example.com/foo": 1,
        "cpu": 1,
        "memory": 1,
    }


# -- TestReverseAndCapEvictionGradients ----------------------------------------------------------


def test_eviction_gradients_are_reversed_and_capped() -> None:
    assert reverse_and_cap([["a", "b"], ["c", "d"]], 3) == [["c", "d"], ["b"]]
    assert reverse_and_cap([["a", "b"], ["c", "d"]], 0) == [["a", "b"], ["c", "d"]]


# -- TestNetworkTopologyAwareNodeScore_Hard / _Soft --------------------------------------------

T3_NODES = [node(f"s{k}-n{i}") for k in range(3, 7) for i in (1, 2)]
SCORED = ["s3-n1", "s4-n1", "s5-n1"]


@pytest.mark.parametrize("mode", ["hard", "soft"])
def test_first_task_of_a_job_gets_no_topology_score(mode: str) -> None:
    ssn = session(T3_NODES, three_tiers(), [pod("p4")], topology={"mode": mode})
    assert batch_scores(ssn, "c1/p4", SCORED) == {}


@pytest.mark.parametrize("mode", ["hard", "soft"])
def test_hypernodes_meeting_only_at_the_virtual_root_score_nothing(mode: str) -> None:
    ssn = session(
        T3_NODES,
        three_tiers(top_children=("s1",)),
        [pod("p1", "s3-n1"), pod("p2", "s3-n2"), pod("p3")],
        topology={"mode": mode},
    )
    assert_close(batch_scores(ssn, "c1/p3", ["s5-n1", "s6-n1"], "s3"), {"s5-n1": 0, "s6-n1": 0})


@pytest.mark.parametrize(
    ("mode", "weight", "want"),
    [
        ("hard", 1, {"s3-n1": 100, "s4-n1": 66.6, "s5-n1": 33.3}),
        ("soft", 1, {"s3-n1": 100, "s4-n1": 66.6, "s5-n1": 33.3}),
        ("hard", 2, {"s3-n1": 200, "s4-n1": 133.3, "s5-n1": 66.6}),
        ("soft", 2, {"s3-n1": 200, "s4-n1": 133.3, "s5-n1": 66.6}),
    ],
)
def test_closer_hypernodes_score_higher(mode: str, weight: int, want: dict[str, float]) -> None:
    ssn = session(
        T3_NODES,
        three_tiers(),
        [pod("p1", "s3-n1"), pod("p2", "s3-n2"), pod("p3")],
        topology={"mode": mode},
        arguments={"weight": weight},
    )
    assert_close(batch_scores(ssn, "c1/p3", SCORED, "s3"), want)


@pytest.mark.parametrize("mode", ["hard", "soft"])
def test_two_tiers(mode: str) -> None:
    nodes = [node(n) for n in ("s1-n1", "s1-n2", "s2-n1", "s2-n2")]
    hyper_nodes = [
        hyper_node("s1", 1, ("s1-n1", "s1-n2")),
        hyper_node("s2", 1, ("s2-n1", "s2-n2")),
        hyper_node("s0", 2, children=("s1", "s2")),
    ]
    ssn = session(nodes, hyper_nodes, [pod("p1", "s1-n1"), pod("p2")], topology={"mode": mode})
    assert_close(batch_scores(ssn, "c1/p2", ["s1-n1", "s2-n1"], "s1"), {"s1-n1": 100, "s2-n1": 50})


@pytest.mark.parametrize("mode", ["hard", "soft"])
def test_one_tier(mode: str) -> None:
    nodes = [node(n) for n in ("s1-n1", "s1-n2", "s2-n1", "s2-n2")]
    hyper_nodes = [hyper_node("s1", 1, ("s1-n1", "s1-n2")), hyper_node("s2", 1, ("s2-n1", "s2-n2"))]
    ssn = session(nodes, hyper_nodes, [pod("p1", "s1-n1"), pod("p2")], topology={"mode": mode})
    assert_close(batch_scores(ssn, "c1/p2", ["s1-n1", "s2-n1"], "s1"), {"s1-n1": 100, "s2-n1": 0})


@pytest.mark.parametrize("mode", ["hard", "soft"])
def test_equal_scores_are_told_apart_by_tasks_already_within(mode: str) -> None:
    ssn = session(
        T3_NODES,
        three_tiers(),
        [pod("p1", "s3-n1"), pod("p2", "s3-n2"), pod("p3", "s4-n1"), pod("p4")],
        topology={"mode": mode},
        min_member=3,
    )
    assert_close(
        batch_scores(ssn, "c1/p4", SCORED, "s1"), {"s3-n1": 116.6, "s4-n1": 91.6, "s5-n1": 33.3}
    )


# -- TestBatchNodeOrderFn (jobs without topology: hypernode binpack over every tier) ---------

BATCH_NODES = (
    [node(f"s3-n{i}", "2", "4G") for i in (1, 2)]
    + [node(f"s4-n{i}", "4", "4G") for i in (1, 2)]
    + [node(f"s5-n{i}", "2", "8G") for i in (1, 2)]
    + [node(f"s6-n{i}", "4", "8G") for i in (1, 2)]
)
ALL = [f"s{k}-n{i}" for k in range(3, 7) for i in (1, 2)]


def test_normal_pods_unscored_when_disabled() -> None:
    ssn = session(
        BATCH_NODES,
        three_tiers(),
        [pod("p1")],
        arguments={"hypernode.binpack.normal-pod.enable": False},
    )
    assert batch_scores(ssn, "c1/p1", ALL) == {}


def test_normal_pods_binpack_over_every_tier_with_fading() -> None:
    ssn = session(BATCH_NODES, three_tiers(), [pod("p1")])
    got = batch_scores(ssn, "c1/p1", ALL)
    assert_close(
        got,
        {
            f"s{k}-n{i}": score
            for k, score in ((3, 25.8), (4, 21.6), (5, 19.9), (6, 15.7))
            for i in (1, 2)
        },
    )


FOO_ARGUMENTS = {
    "weight": 10,
    "hypernode.binpack.cpu": 1,
    "hypernode.binpack.memory": 4,
    "hypernode.binpack.resources": "nvidia.com/gpu, example.com/foo",
    "hypernode.binpack.resources.nvidia.com/gpu": 2,
    "hypernode.binpack.resources.example.com/foo": 3,
    "hypernode.binpack.normal-pod.enable": True,
    "hypernode.binpack.normal-pod.fading": 0,
}


def foo_nodes() -> list[dict[str, Any]]:
    out = []
    for entry in BATCH_NODES:
        foo = "8" if entry["name"][:2] in ("s3", "s4") else "16"
        out.append(
            node(
                entry["name"],
                entry["allocatable"]["cpu"],
                entry["allocatable"]["memory"],
                **{"example.com/foo": foo},
            )
        )
    return out


def test_normal_pods_weighted_resources_fading_zero_keeps_tier_one() -> None:
    ssn = session(
        foo_nodes(), three_tiers(), [pod("p1", **{"example.com/foo": "8"})], arguments=FOO_ARGUMENTS
    )
    got = batch_scores(ssn, "c1/p1", ALL)
    assert_close(
        got,
        {
            f"s{k}-n{i}": score
            for k, score in ((3, 500), (4, 468.75), (5, 281.3), (6, 250))
            for i in (1, 2)
        },
    )


def test_normal_pods_an_overused_hypernode_scores_zero() -> None:
    ssn = session(
        foo_nodes(),
        three_tiers(),
        [
            pod("p1", **{"example.com/foo": "8"}),
            pod("p2", "s3-n1", **{"example.com/foo": "8"}),
            pod("p3", "s3-n2", **{"example.com/foo": "8"}),
        ],
        arguments=FOO_ARGUMENTS,
    )
    got = batch_scores(ssn, "c1/p1", ALL)
    assert_close(
        got,
        {
            f"s{k}-n{i}": score
            for k, score in ((3, 0), (4, 468.8), (5, 281.3), (6, 250))
            for i in (1, 2)
        },
    )


# -- TestHyperNodeOrderFn --------------------------------------------------------------------

EVERY_HYPER_NODE = ["s0", "s1", "s2", "s3", "s4", "s5", "s6", CLUSTER_TOP]


def test_hyper_node_binpack_counts_the_job_s_requests() -> None:
    ssn = session(
        BATCH_NODES,
        three_tiers(),
        [pod("p1", cpu="4", memory="4G"), pod("p2", cpu="4", memory="4G")],
    )
    got = ssn.hyper_node_order(default_sub_job(ssn), EVERY_HYPER_NODE)
    assert_close(
        got,
        {"s0": 25, "s1": 58.3, "s2": 45.8, "s3": 0, "s4": 100, "s5": 0, "s6": 75, CLUSTER_TOP: 25},
    )


def test_hyper_node_binpack_with_weighted_resources() -> None:
    foo = {
        "s3-n1": "8",
        "s3-n2": "0",
        "s4-n1": "8",
        "s4-n2": "0",
        "s5-n1": "16",
        "s5-n2": "0",
        "s6-n1": "16",
        "s6-n2": "0",
    }
    nodes = [
        node(
            e["name"],
            e["allocatable"]["cpu"],
            e["allocatable"]["memory"],
            **{"example.com/foo": foo[e["name"]]},
        )
        for e in BATCH_NODES
    ]
    arguments = dict(FOO_ARGUMENTS, **{"hypernode.binpack.cpu": 3})
    ssn = session(
        nodes,
        three_tiers(),
        [
            pod("p1", cpu="4", memory="4G", **{"example.com/foo": "8"}),
            pod("p2", cpu="4", memory="4G", **{"example.com/foo": "8"}),
        ],
        arguments=arguments,
    )
    got = ssn.hyper_node_order(default_sub_job(ssn), EVERY_HYPER_NODE)
    assert_close(
        got,
        {
            "s0": 266.7,
            "s1": 700,
            "s2": 450,
            "s3": 0,
            "s4": 0,
            "s5": 0,
            "s6": 800,
            CLUSTER_TOP: 266.7,
        },
    )


# -- TestHyperNodeGradientPreFiltering ---------------------------------------------------------


def prefilter_session(
    min_resources: dict[str, str] | None, pending: list[dict[str, Any]], tier: int
) -> Session:
    nodes = [node(f"node-{i}", "4", "8Gi") for i in range(40)]
    hyper_nodes = [
        hyper_node(f"hn-1-{i}", 1, tuple(f"node-{10 * i + j}" for j in range(10))) for i in range(4)
    ]
    hyper_nodes.append(hyper_node("hn-2-0", 2, children=tuple(f"hn-1-{i}" for i in range(4))))
    job: dict[str, Any] = {
        "name": "pg1",
        "namespace": "c1",
        "queue": "q1",
        "minMember": 1,
        "phase": "Inqueue",
        "networkTopology": {"mode": "hard", "highestTierAllowed": tier},
    }
    if min_resources:
        job["minResources"] = min_resources
    doc = document("", plugin(NTA))
    doc.update(
        queues=[{"name": "q1"}],
        nodes=nodes,
        hyperNodes=hyper_nodes,
        jobs=[job],
        tasks=[{"namespace": "c1", "job": "pg1", **t} for t in pending],
    )
    return open_session(doc)


def set_room(ssn: Session, name: str, idle: tuple[int, str], future_idle: tuple[int, str]) -> None:
    from batchsched.api.resource import Resource
    from batchsched.kube.quantity import parse_quantity

    nta = ssn.plugins[NTA]
    # Volcano's test builds its tasks without the implicit pods: 1; a session's tasks
    # carry it, so the room set here has pods to spare.
    nta.resources[name].idle = Resource(idle[0], float(parse_quantity(idle[1])), {"pods": 100.0})
    nta.resources[name].future_idle = Resource(
        future_idle[0], float(parse_quantity(future_idle[1])), {"pods": 100.0}
    )


@pytest.mark.parametrize(
    ("idle", "future_idle", "present"),
    [
        ((30000, "60Gi"), (35000, "70Gi"), True),
        ((30000, "60Gi"), (15000, "30Gi"), True),
        ((15000, "30Gi"), (30000, "60Gi"), True),
        ((15000, "30Gi"), (15000, "30Gi"), False),
    ],
)
def test_job_gradient_keeps_hypernodes_whose_idle_or_future_idle_holds_the_minimum(
    idle: tuple[int, str], future_idle: tuple[int, str], present: bool
) -> None:
    ssn = prefilter_session({"cpu": "20", "memory": "40Gi"}, [pod("p1")], 2)
    set_room(ssn, "hn-1-0", idle, future_idle)
    gradients = ssn.hyper_node_gradient(ssn.jobs["c1/pg1"], "hn-2-0", "allocate")
    assert any("hn-1-0" in g for g in gradients) is present
    tiers = [ssn.topology.tier(g[0]) for g in gradients]
    assert tiers == sorted(tiers)


@pytest.mark.parametrize(
    ("idle", "future_idle", "present"),
    [
        ((20000, "40Gi"), (25000, "50Gi"), True),
        ((20000, "40Gi"), (5000, "10Gi"), True),
        ((5000, "10Gi"), (20000, "40Gi"), True),
        ((5000, "10Gi"), (5000, "10Gi"), False),
    ],
)
def test_sub_job_gradient_uses_the_pending_tasks_requests(
    idle: tuple[int, str], future_idle: tuple[int, str], present: bool
) -> None:
    ssn = prefilter_session(
        None, [pod("p1", cpu="5", memory="10Gi"), pod("p2", cpu="5", memory="10Gi")], 1
    )
    set_room(ssn, "hn-1-0", idle, future_idle)
    gradients = ssn.sub_job_hyper_node_gradient(default_sub_job(ssn), "hn-2-0", "allocate")
    assert any("hn-1-0" in g for g in gradients) is present


@pytest.mark.parametrize(("minimum", "present"), [(("20", "40Gi"), True), (("50", "100Gi"), False)])
def test_eviction_gradient_compares_with_allocatable(
    minimum: tuple[str, str], present: bool
) -> None:
    ssn = prefilter_session({"cpu": minimum[0], "memory": minimum[1]}, [pod("p1")], 2)
    set_room(ssn, "hn-1-0", (15000, "30Gi"), (15000, "30Gi"))
    gradients = ssn.hyper_node_gradient(ssn.jobs["c1/pg1"], "hn-2-0", "evict")
    assert any("hn-1-0" in g for g in gradients) is present


def test_sub_job_gradient_with_nothing_eligible_is_empty_not_the_default() -> None:
    nodes = [node(n, "8", "8Gi") for n in ("a-1", "a-2", "d-1", "d-2")]
    hyper_nodes = [
        hyper_node("zone-a", 1, ("a-1", "a-2")),
        hyper_node("zone-d", 1, ("d-1", "d-2")),
        hyper_node("region", 2, children=("zone-a", "zone-d")),
    ]
    ssn = session(
        nodes,
        hyper_nodes,
        [pod("p1", cpu="20", memory="1Gi")],
        topology={"mode": "hard", "highestTierAllowed": 1},
    )
    assert ssn.sub_job_hyper_node_gradient(default_sub_job(ssn), CLUSTER_TOP, "evict") == []


def test_a_job_without_a_hard_topology_gets_the_hypernode_asked_about() -> None:
    ssn = session(T3_NODES, three_tiers(), [pod("p1")])
    assert ssn.hyper_node_gradient(ssn.jobs["c1/pg1"], "s1", "allocate") == [["s1"]]


def test_without_a_gradient_plugin_the_default_gradient() -> None:
    ssn = session(
        T3_NODES,
        three_tiers(),
        [pod("p1")],
        topology={"mode": "hard", "highestTierAllowed": 1},
        arguments=None,
    )
    ssn._fns["hyper_node_gradient_for_job"].clear()
    ssn._bound.clear()
    assert ssn.hyper_node_gradient(ssn.jobs["c1/pg1"], CLUSTER_TOP, "allocate") == [[CLUSTER_TOP]]


def test_used_resources_follow_placements_and_their_undo() -> None:
    from batchsched.framework.statement import Statement

    ssn = session(T3_NODES, three_tiers(), [pod("p1")])
    nta = ssn.plugins[NTA]
    task = ssn.jobs["c1/pg1"].tasks["c1/p1"]
    stmt = Statement(ssn)
    stmt.allocate(task, ssn.nodes["s3-n1"])
    assert nta.resources["s3"].used.milli_cpu == 2000
    assert nta.resources["s1"].used.milli_cpu == 2000
    assert nta.resources[CLUSTER_TOP].used.milli_cpu == 2000
    assert nta.resources["s4"].used.milli_cpu == 0
    stmt.discard()
    assert nta.resources["s3"].used.milli_cpu == 0
    assert task.job_allocated_hyper_node == ""


def test_a_tier_s_hypernodes_come_parent_by_parent() -> None:
    """Volcano's breadth-first walk takes a hypernode's children together, in Go's set
    order (random); here by name: pA's z1 before pB's a1, an order Volcano can take
    (sorting the tier by name, a1 first, would be one too here, but not always)."""
    nodes = [node("z1-n"), node("a1-n")]
    hyper_nodes = [
        hyper_node("z1", 1, ("z1-n",)),
        hyper_node("a1", 1, ("a1-n",)),
        hyper_node("pA", 2, children=("z1",)),
        hyper_node("pB", 2, children=("a1",)),
    ]
    ssn = session(
        nodes, hyper_nodes, [pod("p1")], topology={"mode": "hard", "highestTierAllowed": 1}
    )
    assert ssn.hyper_node_gradient(ssn.jobs["c1/pg1"], CLUSTER_TOP, "allocate") == [["z1", "a1"]]


def test_a_task_left_pending_keeps_no_allocated_hypernode() -> None:
    """Volcano sets it only once a node passed the predicates; a task that fits nowhere
    scores as a first task would (regression: it kept the job's hypernode)."""
    from batchsched.scheduler import run_actions

    nodes = [node(n, "2", "4G") for n in ("s0-n1", "s0-n2", "s1-n3", "s1-n4")]
    hyper_nodes = [
        hyper_node("s0", 1, ("s0-n1", "s0-n2")),
        hyper_node("s1", 1, ("s1-n3", "s1-n4")),
        hyper_node("s2", 2, children=("s0", "s1")),
    ]
    job = {
        "name": "pg1",
        "namespace": "c1",
        "queue": "q1",
        "minMember": 1,
        "phase": "Inqueue",
        "networkTopology": {"mode": "hard", "highestTierAllowed": 1},
    }
    doc = document("", plugin("gang"), plugin("predicates"), plugin(NTA), actions="allocate")
    doc.update(
        queues=[{"name": "q1"}],
        nodes=nodes,
        hyperNodes=hyper_nodes,
        jobs=[job],
        tasks=[
            {"namespace": "c1", "job": "pg1", **pod("p1")},
            {"namespace": "c1", "job": "pg1", "nodeSelector": {"role": "nowhere"}, **pod("p2")},
        ],
    )
    ssn = open_session(doc)
    run_actions(ssn)
    stuck = ssn.jobs["c1/pg1"].tasks["c1/p2"]
    assert stuck.node_name == ""
    assert stuck.job_allocated_hyper_node == ""
    assert ssn.batch_node_order(stuck, ssn.node_list) == {}


# -- the column form of the normal-pod scores ----------------------------------------------


@settings(max_examples=25, deadline=None)
@given(
    racks=st.integers(1, 4),
    per_rack=st.integers(1, 3),
    used=st.lists(st.integers(0, 3), min_size=12, max_size=12),
    tasks=st.lists(st.tuples(st.integers(1, 4), st.integers(1, 8)), min_size=1, max_size=10),
    fading=st.sampled_from([0.0, 0.5, 0.8, 1.0]),
    weight=st.integers(0, 3),
)
def test_column_and_node_by_node_normal_pod_scores_place_alike(
    *, racks: int, per_rack: int, used: list[int], tasks: list[tuple[int, int]],
    fading: float, weight: int,
) -> None:
    """Jobs without a topology, scored over rows and racks by the column form and
    node by node: the same placements."""
    from batchsched.columnar.selector import FAST_PATH_ENVIRONMENT_VARIABLE
    from batchsched.scheduler import run_actions

    nodes, running = [], []
    for r in range(racks):
        for i in range(per_rack):
            name = f"r{r}-n{i}"
            nodes.append(node(name, "4", "16Gi"))
            if used[len(nodes) - 1]:
                running.append({"name": f"run-{name}", "namespace": "c1", "job": "busy",
                                "node": name, "phase": "Running",
                                "requests": {"cpu": str(used[len(nodes) - 1]), "memory": "1Gi"}})
    hyper_nodes = [hyper_node(f"rack{r}", 1, tuple(f"r{r}-n{i}" for i in range(per_rack)))
                   for r in range(racks)]
    hyper_nodes.append(hyper_node("row", 2, children=tuple(f"rack{r}" for r in range(racks))))
    jobs = [{"name": "busy", "namespace": "c1", "queue": "q1", "phase": "Running"}]
    pending = []
    for k, (cpu, memory) in enumerate(tasks):
        jobs.append({"name": f"j{k}", "namespace": "c1", "queue": "q1", "minMember": 1,
                     "phase": "Inqueue"})
        pending.append({"name": f"t{k}", "namespace": "c1", "job": f"j{k}",
                        "requests": {"cpu": str(cpu), "memory": f"{memory}Gi"}})
    doc = document("", plugin("gang"), plugin("predicates"), plugin("binpack"),
                   plugin(NTA, {"weight": weight, "hypernode.binpack.normal-pod.fading": fading}),
                   actions="allocate")
    doc.update(queues=[{"name": "q1"}], nodes=nodes, hyperNodes=hyper_nodes, jobs=jobs,
               tasks=running + pending)

    def placements() -> dict[str, str]:
        ssn = open_session(doc)
        run_actions(ssn)
        return {t.uid: t.node_name for j in ssn.jobs.values() for t in j.tasks.values()}

    fast = placements()
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv(FAST_PATH_ENVIRONMENT_VARIABLE, "0")
        assert placements() == fast


def test_a_tier_s_hypernodes_are_tried_in_the_walk_s_order_not_by_name() -> None:
    # hn-b hangs from the root, hn-a under a spine: Volcano's breadth-first walk finds
    # hn-b first whatever Go's map order, so hn-a is dry-run last and its fit errors
    # are the ones the task keeps (by name, hn-a would come first).
    from pathlib import Path

    from batchsched.scenario import load_scenario, run_scenario

    scenario = load_scenario(Path(__file__).parent / "data" / "network-topology"
                             / "gradient-walk-order.yaml")
    decisions = run_scenario(scenario)
    assert decisions.binds == {}
    failed = [event["message"] for event in decisions.events
              if event["object"] == "ns/t0" and event["reason"] == "FailedScheduling"]
    assert failed and all(message.startswith("In hyperNode hn-a:") for message in failed)


def test_a_job_kept_pipelined_after_dry_runs_names_its_own_nodes() -> None:
    # The job is pipelined in both hypernodes and kept in hn-a (the better score). Its
    # placements are made again from the operations saved in hn-a's dry run, and, as
    # Volcano's task copies do, the tasks keep the last transaction they had then
    # (none), not what hn-b's later dry run stamped: the events name a-1 and a-2.
    from pathlib import Path

    from batchsched.scenario import load_scenario, run_scenario

    scenario = load_scenario(Path(__file__).parent / "data" / "network-topology"
                             / "kept-pipelined-last-transaction.yaml")
    decisions = run_scenario(scenario)
    assert decisions.pipelined == {"ns/pg1": {"ns/pg1-t-1": "a-2"}}
    messages = [event["message"] for event in decisions.events if "possibly" in event["message"]]
    assert sorted(messages) == [
        "Pod ns/pg1-t-0 can possibly be assigned to a-1, once minAvailable is satisfied",
        "Pod ns/pg1-t-1 can possibly be assigned to a-2, once resource is released and "
        "minAvailable is satisfied"]
