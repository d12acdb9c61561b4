"""The hypernode tree a session reads (Volcano's hyper_node_info_test.go,
member_selector_test.go and scheduler_helper_test.go cases that apply to a tree
declared at once), and the loader's checks."""

from __future__ import annotations

from typing import Any

import attrs
import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from batchsched.api.hypernode import (
    CLUSTER_TOP,
    HyperNode,
    HyperNodeMember,
    NetworkTopology,
    TopologyError,
    build_topology,
)
from batchsched.api.node import NodeInfo
from batchsched.api.resource import Resource
from batchsched.errors import ScenarioError
from batchsched.kube.affinity import parse_label_selector
from batchsched.scenario import parse_scenario, run_scenario


def nodes(*names: str, labels: dict[str, dict[str, str]] | None = None) -> list[NodeInfo]:
    labels = labels or {}
    return [NodeInfo.create(n, Resource(1000, 1024), labels=labels.get(n)) for n in names]


def hn(name: str, tier: int, *, node_names: tuple[str, ...] = (), children: tuple[str, ...] = (),
       tier_name: str = "") -> HyperNode:
    members = tuple(HyperNodeMember("Node", exact=n) for n in node_names) + tuple(
        HyperNodeMember("HyperNode", exact=c) for c in children)
    return HyperNode(name, tier, members, tier_name)


def test_a_tree_declared_in_any_order() -> None:
    """UpdateHyperNode_Normal: s2 over s0 and s1, declared parent first."""
    specs = [hn("s2", 2, children=("s1", "s0")), hn("s0", 1, node_names=("node-0", "node-1")),
             hn("s1", 1, node_names=("node-2", "node-3"))]
    topology = build_topology(specs, nodes("node-0", "node-1", "node-2", "node-3"))
    assert topology.parent["s0"] == topology.parent["s1"] == "s2"
    assert topology.parent["s2"] == CLUSTER_TOP
    assert topology.by_tier == {1: ("s0", "s1"), 2: ("s2",), 3: (CLUSTER_TOP,)}
    assert topology.real_nodes["s0"] == {"node-0", "node-1"}
    assert topology.real_nodes["s2"] == {"node-0", "node-1", "node-2", "node-3"}
    assert [n.name for n in topology.real_node_list["s2"]] == ["node-0", "node-1", "node-2",
                                                                "node-3"]
    assert topology.tiers == [1, 2, 3]


def test_exact_members_count_only_nodes_of_the_session() -> None:
    """Volcano keeps exact members without a node object, then a session keeps only its
    own (Ready) nodes: the same sets."""
    topology = build_topology([hn("s0", 1, node_names=("node-0", "gone"))], nodes("node-0"))
    assert topology.real_nodes["s0"] == {"node-0"}


def test_a_cycle_is_refused() -> None:
    """UpdateHyperNode_WithCycle: Volcano stops scheduling topology jobs; batchsched
    refuses the declaration."""
    specs = [hn("s0", 1, node_names=("node-0",)), hn("s1", 2, children=("s0", "s3")),
             hn("s2", 3, children=("s1",)), hn("s3", 4, children=("s2",))]
    with pytest.raises(TopologyError, match="cyclic"):
        build_topology(specs, nodes("node-0"))


def test_two_parents_are_refused() -> None:
    """UpdateHyperNode_MultipleParents."""
    specs = [hn("s0", 1, node_names=("node-0",)), hn("s1", 2, children=("s0",)),
             hn("s2", 3, children=("s0",))]
    with pytest.raises(TopologyError, match="already has a parent 's1'"):
        build_topology(specs, nodes("node-0"))


def test_a_partial_tree_leaves_out_the_links_that_break_it() -> None:
    """What a session keeps while a live cache's tree is broken, as Volcano's cache
    keeps the tree it had: the first parent keeps its child, the link closing a cycle
    goes; the rest of the tree stands (it was thrown away whole)."""
    specs = [hn("s0", 1, node_names=("node-0",)), hn("s1", 1, node_names=("node-1",)),
             hn("p1", 2, children=("s0", "s1")), hn("p2", 2, children=("s0",)),
             hn("x", 3, children=("y",)), hn("y", 4, children=("x",))]
    topology = build_topology(specs, nodes("node-0", "node-1"), partial=True)
    assert topology.parent["s0"] == "p1" and topology.parent["s1"] == "p1"
    assert topology.real_nodes["p1"] == {"node-0", "node-1"}
    assert topology.real_nodes["p2"] == frozenset()
    assert CLUSTER_TOP in (topology.parent["x"], topology.parent["y"])  # the cycle is cut
    assert topology.ancestors("s0") == ["s0", "p1", CLUSTER_TOP]


def test_ancestors_and_lowest_common_ancestor() -> None:
    """GetAncestors and GetLCAHyperNode (a parentless hypernode meets the others at the
    session's virtual root, where Volcano's bare map answers "")."""
    specs = [hn("s0", 1, node_names=("node-0", "node-1")), hn("s1", 1, node_names=("node-0",)),
             hn("s2", 2, children=("s0", "s1")), hn("s3", 3, children=("s2",)),
             hn("s4", 4, children=("s3",)), hn("orphan", 1, node_names=("node-8",))]
    topology = build_topology(specs, nodes("node-0", "node-1", "node-8"))
    assert topology.ancestors("s0") == ["s0", "s2", "s3", "s4", CLUSTER_TOP]
    assert topology.ancestors("s4") == ["s4", CLUSTER_TOP]
    assert topology.lca("s0", "s1") == "s2"
    assert topology.lca("s2", "s0") == "s2"
    assert topology.lca("s0", "orphan") == CLUSTER_TOP
    assert topology.lca("", "s1") == "s1"
    assert topology.lca("unknown", "unknown") == "unknown"


def test_a_child_named_but_not_declared_is_a_placeholder() -> None:
    topology = build_topology([hn("s1", 2, children=("later",))], nodes("node-0"))
    assert topology.tier("later") == 0
    assert topology.parent["later"] == "s1"
    assert topology.real_nodes["later"] == frozenset()
    assert all("later" not in names for names in topology.by_tier.values())


def test_the_virtual_root_holds_every_node_one_tier_up() -> None:
    empty = build_topology([], nodes("a", "b"))
    assert empty.tiers == [1]
    assert [n.name for n in empty.real_node_list[CLUSTER_TOP]] == ["a", "b"]
    assert empty.leaf_of("a") == CLUSTER_TOP


def test_regex_members_are_searched_unanchored() -> None:
    """member_selector_test.go; Go's regexp.MatchString finds the pattern anywhere."""
    member = HyperNodeMember("Node", regex="node-2")
    topology = build_topology([HyperNode("s0", 1, (member,))],
                              nodes("node-2", "node-20", "xnode-2", "node-3"))
    assert topology.real_nodes["s0"] == {"node-2", "node-20", "xnode-2"}
    anchored = HyperNode("s1", 1, (HyperNodeMember("Node", regex="^worker-"),))
    workers = build_topology([anchored], nodes("worker-1", "worker-2", "control-plane-1"))
    assert workers.real_nodes["s1"] == {"worker-1", "worker-2"}


def test_regex_members_are_read_as_go_s_regexp_reads_them() -> None:
    """RE2 syntax: POSIX classes are classes, ``$`` is the end of the name, ``\\z``
    too (Python's ``re`` reads the first as a nested set)."""
    names = nodes("a1", "a2", "ab", "a1\n")
    for pattern, want in (("^a[[:digit:]]$", {"a1", "a2"}), (r"^a\d\z", {"a1", "a2"}),
                          ("^a[[:^digit:]]", {"ab"})):
        topology = build_topology([HyperNode("s", 1, (HyperNodeMember("Node", regex=pattern),))],
                                  names)
        assert topology.real_nodes["s"] == want, pattern


@pytest.mark.parametrize(("selector", "want"), [
    ({"matchLabels": {"role": "worker"}}, {"node1"}),
    ({"matchLabels": {"role": "invalid-role"}}, set()),
    ({"matchExpressions": [{"key": "role", "operator": "In", "values": ["worker"]}]}, {"node1"}),
    ({"matchExpressions": [{"key": "role", "operator": "NotIn", "values": ["master"]}]},
     {"node1", "node3"}),
    ({"matchExpressions": [{"key": "role", "operator": "Exists"}]}, {"node1", "node2"}),
    ({"matchExpressions": [{"key": "role", "operator": "DoesNotExist"}]}, {"node3"}),
    ({}, set()),
])
def test_label_members(selector: dict[str, Any], want: set[str]) -> None:
    """GetMembers' label cases; an empty selector selects nothing."""
    member = HyperNodeMember("Node", labels=parse_label_selector(selector, "labelMatch"))
    cluster = nodes("node1", "node2", "node3",
                    labels={"node1": {"role": "worker"}, "node2": {"role": "master"}})
    assert build_topology([HyperNode("s0", 1, (member,))], cluster).real_nodes["s0"] == want


def test_leaf_of_a_node_looks_at_the_lowest_tier_only() -> None:
    """FindHyperNodeForNode."""
    specs = [hn("hN1", 1, node_names=("node1",)), hn("hN2", 1, node_names=("node1", "node2")),
             hn("up", 2, node_names=("node3",))]
    topology = build_topology(specs, nodes("node1", "node2", "node3", "node4"))
    assert topology.leaf_of("node1") == "hN1"
    assert topology.leaf_of("node3") == ""
    assert topology.leaf_of("node4") == ""


def test_tasks_within_count_each_task_once() -> None:
    """FindJobTaskNumOfHyperNode."""
    topology = build_topology([hn("s0", 1, node_names=("a", "b"))], nodes("a", "b", "c"))
    assert topology.tasks_within("s0", ["a", "a", "c", ""]) == 2


@pytest.mark.parametrize(("spec", "hard"), [
    (NetworkTopology("hard", None), None),
    (NetworkTopology("hard", 1), 1),
    (NetworkTopology("soft", 2), None),
])
def test_hard_tier(spec: NetworkTopology, hard: int | None) -> None:
    """IsHardTopologyMode."""
    assert spec.hard_tier() == hard


def scenario(hyper_nodes: Any, topology: Any = None) -> Any:
    job: dict[str, Any] = {"name": "pg", "queue": "q"}
    if topology is not None:
        job["networkTopology"] = topology
    return parse_scenario({"version": 1, "config": {"actions": "allocate", "tiers": []},
                           "queues": [{"name": "q"}],
                           "nodes": [{"name": "n1", "allocatable": {"cpu": 1}}],
                           "hyperNodes": hyper_nodes, "jobs": [job]})


@pytest.mark.parametrize(("hyper_nodes", "topology", "message"), [
    ([{"name": "s0", "tier": 1, "members": []}], None,
     r"hyperNodes\[0\].members: must have at least one member"),
    ([{"name": "s0", "tier": -1, "members": [{"type": "Node", "selector": {
        "exactMatch": {"name": "n1"}}}]}], None, r"hyperNodes\[0\].tier: must be a non-negative"),
    ([{"name": "s0", "tier": 1, "members": [{"type": "Switch", "selector": {
        "exactMatch": {"name": "n1"}}}]}], None, r"members\[0\].type: must be Node or HyperNode"),
    ([{"name": "s0", "tier": 1, "members": [{"type": "Node", "selector": {
        "exactMatch": {"name": "n1"}, "regexMatch": {"pattern": "n"}}}]}], None,
     "exactly one of exactMatch, regexMatch or labelMatch"),
    ([{"name": "s0", "tier": 1, "members": [{"type": "Node", "selector": {
        "regexMatch": {"pattern": "("}}}]}], None, "invalid: unmatched parentheses"),
    ([{"name": "s0", "tier": 1, "members": [{"type": "Node", "selector": {
        "regexMatch": {"pattern": r"\p{Greek}"}}}]}], None,
     "Unicode scripts .* are not supported here"),
    ([{"name": "s0", "tier": 1, "members": [{"type": "HyperNode", "selector": {
        "exactMatch": {"name": "s1"}}}]},
      {"name": "s1", "tier": 2, "members": [{"type": "HyperNode", "selector": {
          "exactMatch": {"name": "s0"}}}]}], None, "cyclic dependency"),
    ([], {"mode": "strict"}, r"networkTopology.mode: must be hard or soft"),
    ([], {"mode": "hard", "highestTierAllowed": 1, "highestTierName": "rack"},
     "cannot both be set"),
])
def test_the_loader_names_what_is_wrong(hyper_nodes: Any, topology: Any, message: str) -> None:
    with pytest.raises(ScenarioError, match=message):
        scenario(hyper_nodes, topology)


def _topology_cluster() -> Any:
    from batchsched import JobInfo, MemoryCache, PodGroup, Resource, TaskInfo

    cache = MemoryCache()
    for name in ("n0", "n1"):
        cache.add_node(NodeInfo.create(name, Resource.from_mapping({"cpu": 1, "pods": 10})))
    for name, topology in (("plain", None), ("ranked", NetworkTopology("hard", 2))):
        job = JobInfo.from_podgroup(PodGroup(name, "ns", min_member=1,
                                             network_topology=topology))
        job.add_task(TaskInfo.create("ns", f"{name}-0", job.uid,
                                     Resource.from_mapping({"cpu": 1})))
        cache.add_job(job)
    return cache


def _placed(cache: Any) -> set[str]:
    from batchsched import Session
    from batchsched.conf import configuration_from_text
    from batchsched.scheduler import run_actions

    configuration = configuration_from_text(
        "actions: allocate\ntiers:\n- plugins:\n  - {name: gang}\n  - {name: predicates}\n"
        "  - {name: network-topology-aware}\n")
    session = Session.open(cache, configuration)
    run_actions(session)
    placed = {task.job for job in session.jobs.values()
              for task in job.tasks.values() if task.node_name}
    session.close()
    return placed


def test_a_leaf_moved_between_spines_in_either_order_converges() -> None:
    """An informer may deliver "p1 claims s0" before "p0 lets s0 go". Volcano's cache
    keeps the first update (its tree is not ready meanwhile: jobs with a network
    topology wait, the others are placed) and is whole after the second."""
    cache = _topology_cluster()
    for spec in (hn("s0", 1, node_names=("n0",)), hn("s1", 1, node_names=("n1",)),
                 hn("p0", 2, children=("s0",)), hn("p1", 2, children=("s1",))):
        cache.set_hyper_node(spec)
    cache.set_hyper_node(hn("p1", 2, children=("s1", "s0")))  # two parents for now
    assert _placed(cache) == {"ns/plain"}
    cache.set_hyper_node(hn("p0", 2, node_names=("spare",)))  # p0 lets s0 go
    assert [m.exact for m in cache.hyper_nodes["p1"].members] == ["s1", "s0"]
    assert _placed(cache) == {"ns/plain", "ns/ranked"}


def test_a_leaf_claimed_anew_by_an_older_spine_stays_with_its_parent() -> None:
    """Volcano refuses the new claim while the leaf has its parent: in the session's
    partial tree the leaf stays under s1, though s2 was created first (it moved to s2,
    the first object in the cache)."""
    from batchsched.framework.session import Session

    cache = _topology_cluster()
    cache.set_hyper_node(hn("s2", 2, node_names=("spare",)))
    cache.set_hyper_node(hn("leaf", 1, node_names=("n0",)))
    cache.set_hyper_node(hn("s1", 2, children=("leaf",)))
    cache.set_hyper_node(hn("s2", 2, children=("leaf",)))  # claimed before s1 lets go
    ssn = Session.open(cache, parse_scenario(yaml.safe_load(
        "version: 1\nconfig: {actions: allocate}"), source="<t>").configuration)
    try:
        assert ssn.topology.parent["leaf"] == "s1" and not ssn.hyper_nodes_ready
    finally:
        ssn.close()


def test_a_parent_updated_with_another_child_keeps_the_child_it_holds() -> None:
    """P holds C; Q claims C too (refused: the tree is partial); P is then updated to
    claim D as well. C stays with P (it went to Q: P had moved behind it)."""
    from batchsched.framework.session import Session

    cache = _topology_cluster()
    cache.set_hyper_node(hn("C", 1, node_names=("n0",)))
    cache.set_hyper_node(hn("D", 1, node_names=("n1",)))
    cache.set_hyper_node(hn("P", 2, children=("C",)))
    cache.set_hyper_node(hn("Q", 2, children=("C",)))
    cache.set_hyper_node(hn("P", 2, children=("C", "D")))
    ssn = Session.open(cache, parse_scenario(yaml.safe_load(
        "version: 1\nconfig: {actions: allocate}"), source="<t>").configuration)
    try:
        assert ssn.topology.parent["C"] == "P" and ssn.topology.parent["D"] == "P"
    finally:
        ssn.close()


def _session_parents(cache: Any) -> dict[str, str]:
    from batchsched.framework.session import Session

    ssn = Session.open(cache, parse_scenario(yaml.safe_load(
        "version: 1\nconfig: {actions: allocate}"), source="<t>").configuration)
    try:
        return dict(ssn.topology.parent)
    finally:
        ssn.close()


@pytest.mark.parametrize("unrelated_cycle", [False, True])
def test_a_parent_updated_with_a_child_another_holds_gets_only_what_is_free(
        unrelated_cycle: bool) -> None:
    """P holds C, R holds D, Q claims C (refused); P is then updated to claim D too:
    D stays with R (its older claimant) and C with P, whatever else is broken (with an
    unrelated cycle X <-> Y the update kept P's place and took D from R)."""
    cache = _topology_cluster()
    cache.set_hyper_node(hn("C", 1, node_names=("n0",)))
    cache.set_hyper_node(hn("D", 1, node_names=("n1",)))
    cache.set_hyper_node(hn("P", 2, children=("C",)))
    cache.set_hyper_node(hn("R", 2, children=("D",)))
    cache.set_hyper_node(hn("Q", 2, children=("C",)))
    if unrelated_cycle:
        cache.set_hyper_node(hn("X", 3, children=("Y",)))
        cache.set_hyper_node(hn("Y", 3, children=("X",)))
    cache.set_hyper_node(hn("P", 2, children=("C", "D")))
    parents = _session_parents(cache)
    assert (parents["C"], parents["D"]) == ("P", "R")


def test_a_cycle_closed_before_an_update_keeps_its_own_newest_link_out() -> None:
    """A claims B, B claims C, C claims A (closing a cycle: C's link is the newest);
    A is then updated with another child. The cycle still loses C -> A, not A -> B
    (an updated hypernode's old links keep their age)."""
    cache = _topology_cluster()
    cache.set_hyper_node(hn("E", 1, node_names=("n1",)))
    cache.set_hyper_node(hn("A", 3, children=("B",)))
    cache.set_hyper_node(hn("B", 2, children=("C",)))
    cache.set_hyper_node(hn("C", 1, children=("A",), node_names=("n0",)))
    cache.set_hyper_node(hn("A", 3, children=("B", "E")))
    parents = _session_parents(cache)
    assert (parents["A"], parents["B"], parents["C"], parents["E"]) == (
        CLUSTER_TOP, "A", "B", "A")


def test_a_malformed_update_of_a_hypernode_is_refused_by_name() -> None:
    """Replacing a hypernode with a bad pattern or tier while it claims a child anew:
    the same SchedulingError as a new one (a raw Re2Error or TypeError escaped)."""
    from batchsched.cache.memory import MemoryCache
    from batchsched.errors import SchedulingError

    cache = MemoryCache()
    cache.set_hyper_node(hn("leaf", 1, node_names=("n0",)))
    cache.set_hyper_node(hn("s", 2, node_names=("n9",)))
    bad_pattern = HyperNode("s", 2, (HyperNodeMember("HyperNode", exact="leaf"),
                                     HyperNodeMember("Node", regex=r"\p{Greek}")))
    with pytest.raises(SchedulingError, match="hypernode s: a member's pattern"):
        cache.set_hyper_node(bad_pattern)
    with pytest.raises(SchedulingError, match="hypernode s: TypeError"):
        cache.set_hyper_node(HyperNode("s", "2", (  # type: ignore[arg-type]
            HyperNodeMember("HyperNode", exact="leaf"),)))
    assert cache.hyper_nodes["s"].children() == []


def test_a_partial_tree_leaves_out_the_cycle_s_newest_link() -> None:
    # A claims B, then B claims C, then C claims A (closing the cycle): C's claim goes.
    specs = [hn("A", 3, children=("B",)), hn("B", 2, children=("C",)),
             hn("C", 1, children=("A",), node_names=("node-0",))]
    topology = build_topology(specs, nodes("node-0"), partial=True)
    assert (topology.parent["A"], topology.parent["B"], topology.parent["C"]) == (
        CLUSTER_TOP, "A", "B")


def test_a_host_snapshot_with_a_hypernode_cycle_places_the_jobs_without_topology() -> None:
    from batchsched import MemoryCache

    class CyclicHost(MemoryCache):
        def snapshot(self) -> Any:
            cluster = super().snapshot()
            return attrs.evolve(cluster, hyper_nodes=(hn("x", 2, children=("y",)),
                                                      hn("y", 1, children=("x",))))

    cache = _topology_cluster()
    cache.__class__ = CyclicHost
    assert _placed(cache) == {"ns/plain"}


def test_a_broken_live_tree_still_scores_on_its_intact_part() -> None:
    # Volcano's cache keeps the tree it had: a job without a network topology is
    # scored on it (the hypernode binpack prefers the fuller leaf); the session
    # threw the whole tree away.
    from batchsched import Scheduler
    from batchsched.scenario import parse_scenario

    doc = yaml.safe_load("""
version: 1
config:
  actions: "enqueue, allocate"
  tiers:
  - plugins: [{name: priority}, {name: gang}]
  - plugins: [{name: predicates}, {name: network-topology-aware, arguments: {weight: 10}}]
nodes:
- {name: n1, allocatable: {cpu: 4, memory: 8Gi, pods: 110}}
- {name: n2, allocatable: {cpu: 4, memory: 8Gi, pods: 110}}
- {name: n3, allocatable: {cpu: 4, memory: 8Gi, pods: 110}}
- {name: n4, allocatable: {cpu: 4, memory: 8Gi, pods: 110}}
hyperNodes:
- {name: a, tier: 1, members: [{type: Node, selector: {regexMatch: {pattern: "^n[12]$"}}}]}
- {name: b, tier: 1, members: [{type: Node, selector: {regexMatch: {pattern: "^n[34]$"}}}]}
- {name: spine1, tier: 2, members: [{type: HyperNode, selector: {exactMatch: {name: a}}},
                                    {type: HyperNode, selector: {exactMatch: {name: b}}}]}
jobs:
- {name: busy, minMember: 1, phase: Running}
- {name: plain, minMember: 1, phase: Inqueue}
tasks:
- {name: busy-0, job: busy, node: n3, phase: Running, requests: {cpu: 2, memory: 1Gi}}
- {name: plain-0, job: plain, requests: {cpu: 1, memory: 1Gi}}
""")
    scenario = parse_scenario(doc, source="<test>")
    cache = scenario.build_cache()
    cache.set_hyper_node(HyperNode("spine2", 2, (HyperNodeMember("HyperNode", exact="a"),)))
    Scheduler(cache, scenario.configuration).run_once()
    assert [(b.task, b.node) for b in cache.binds] == [("default/plain-0", "n3")]


def test_the_cache_refuses_a_hypernode_named_as_the_virtual_root() -> None:
    from batchsched.cache.memory import MemoryCache
    from batchsched.errors import SchedulingError

    cache = MemoryCache()
    with pytest.raises(SchedulingError, match="the name of Volcano's virtual root"):
        cache.set_hyper_node(hn(CLUSTER_TOP, 1, node_names=("n0",)))
    with pytest.raises(SchedulingError, match="the name of Volcano's virtual root"):
        cache.set_hyper_node(hn("s1", 2, children=(CLUSTER_TOP,)))
    assert not cache.hyper_nodes


def test_the_cache_refuses_a_malformed_hypernode_with_its_own_errors() -> None:
    from batchsched.cache.memory import MemoryCache
    from batchsched.errors import BatchSchedError, SchedulingError

    assert issubclass(TopologyError, BatchSchedError)
    cache = MemoryCache()
    with pytest.raises(SchedulingError, match=r"hypernode r: members\[0\] pattern '\(' is "
                       "invalid: unmatched parentheses"):
        cache.set_hyper_node(HyperNode("r", 1, (HyperNodeMember("Node", regex="("),)))
    with pytest.raises(SchedulingError, match=r"hypernode u: a member's pattern: .* Unicode"):
        cache.set_hyper_node(HyperNode("u", 1, (HyperNodeMember("Node", regex=r"\p{Han}"),)))
    with pytest.raises(SchedulingError, match="hypernode t: TypeError"):
        cache.set_hyper_node(HyperNode("t", "x", ()))  # type: ignore[arg-type]
    assert cache.hyper_nodes == {}


def test_the_cache_keeps_a_pattern_go_refuses_and_the_member_selects_no_node() -> None:
    from batchsched.cache.memory import MemoryCache

    refused = HyperNodeMember("Node", regex="n(?=1)")
    cache = MemoryCache()
    cache.set_hyper_node(HyperNode("r", 1, (refused, HyperNodeMember("Node", exact="n2"))))
    assert "r" in cache.hyper_nodes
    assert refused.nodes({"n1": {}, "n2": {}}) == set()


def test_label_and_regex_members_follow_node_changes_between_builds() -> None:
    """The last resolution is kept for the next session only while the hypernodes and
    the nodes' names and labels are the same."""
    member = HyperNodeMember("Node", labels=parse_label_selector(
        {"matchLabels": {"rack": "a"}}, "labelMatch"))
    by_name = HyperNodeMember("Node", regex="^x")
    specs = [HyperNode("a", 1, (member,)), HyperNode("b", 1, (by_name,))]
    cluster = nodes("n1", "n2", "x1", labels={"n1": {"rack": "a"}})
    assert build_topology(specs, cluster).real_nodes["a"] == {"n1"}
    assert build_topology(specs, cluster).real_nodes["a"] == {"n1"}
    cluster[1].labels["rack"] = "a"
    assert build_topology(specs, cluster).real_nodes["a"] == {"n1", "n2"}
    cluster.append(nodes("x2")[0])
    assert build_topology(specs, cluster).real_nodes["b"] == {"x1", "x2"}


@pytest.mark.parametrize("selector", [
    {"regexMatch": {"pattern": "n(?=1)"}},
    {"labelMatch": {"matchExpressions": [{"key": "rack", "operator": "In", "values": []}]}},
])
def test_a_member_volcano_cannot_read_selects_no_node_and_is_said(selector: Any) -> None:
    """The API server stores a pattern Go's regexp refuses (Volcano's admission policy
    only counts brackets) and a label requirement it does not check; Volcano's
    GetMembers logs the error and the member selects nothing. The rest schedules."""
    scenario = parse_scenario({
        "version": 1, "config": {"actions": "allocate", "tiers": [{"plugins": [
            {"name": "gang"}, {"name": "predicates"}, {"name": "network-topology-aware"}]}]},
        "queues": [{"name": "q"}],
        "nodes": [{"name": "n1", "allocatable": {"cpu": 1, "pods": 10}, "labels": {"rack": "a"}},
                  {"name": "n2", "allocatable": {"cpu": 2, "pods": 10}}],
        "hyperNodes": [
            {"name": "bad", "tier": 1, "members": [{"type": "Node", "selector": selector}]},
            {"name": "good", "tier": 1, "members": [
                {"type": "Node", "selector": {"exactMatch": {"name": "n2"}}}]}],
        "jobs": [{"name": "j", "queue": "q", "minMember": 1,
                  "networkTopology": {"mode": "hard", "highestTierAllowed": 1}}],
        "tasks": [{"name": "t", "job": "j", "requests": {"cpu": 2}}],
    })
    assert any("the member selects no node" in warning for warning in scenario.warnings)
    assert run_scenario(scenario).binds == {"default/t": "n2"}


def test_a_broken_tree_leaves_a_running_job_s_hypernode_as_it_was() -> None:
    """Volcano's OpenSession neither drops nor recovers allocated hypernodes while the
    tree is not ready: a tier-1 job running in s0 is still held to s0 afterwards."""
    from batchsched import JobInfo, MemoryCache, PodGroup, Resource, Session, TaskInfo
    from batchsched.api.types import TaskStatus
    from batchsched.conf import configuration_from_text

    cache = MemoryCache()
    for name in ("n0", "n1", "n2", "n3"):
        cache.add_node(NodeInfo.create(name, Resource.from_mapping({"cpu": 4, "pods": 10})))
    for spec in (hn("s0", 1, node_names=("n0", "n1")), hn("s1", 1, node_names=("n2", "n3")),
                 hn("p0", 2, children=("s0",)), hn("p1", 2, children=("s1",))):
        cache.set_hyper_node(spec)
    job = JobInfo.from_podgroup(PodGroup("j", "ns", min_member=1,
                                         network_topology=NetworkTopology("hard", 1)))
    job.add_task(TaskInfo.create("ns", "j-0", job.uid, Resource.from_mapping({"cpu": 1}),
                                 status=TaskStatus.RUNNING, node_name="n0"))
    cache.add_job(job)
    configuration = configuration_from_text(
        "actions: allocate\ntiers:\n- plugins:\n  - {name: gang}\n  - {name: predicates}\n"
        "  - {name: network-topology-aware}\n")

    def held() -> str:
        session = Session.open(cache, configuration)
        hyper_node = session.jobs["ns/j"].allocated_hyper_node
        session.close()
        return hyper_node

    assert held() == "s0"
    cache.set_hyper_node(hn("p1", 2, children=("s1", "s0")))  # s0 claimed twice for now
    assert held() == "s0"
    cache.set_hyper_node(hn("p0", 2, node_names=("spare",)))
    assert held() == "s0"


def test_a_sub_group_topology_no_task_falls_under_holds_nothing_back() -> None:
    """Volcano's ContainsNetworkTopology looks at the job's sub-jobs: a policy whose
    selector takes no task makes none, so a broken tree does not hold the job."""
    from batchsched import JobInfo, MemoryCache, PodGroup, Resource, TaskInfo
    from batchsched.api.sub_job import SubGroupPolicy

    cache = MemoryCache()
    cache.add_node(NodeInfo.create("n0", Resource.from_mapping({"cpu": 4, "pods": 10})))
    for spec in (hn("s0", 1, node_names=("n0",)), hn("p0", 2, children=("s0",)),
                 hn("p1", 2, children=("s0",))):
        cache.set_hyper_node(spec)
    policy = SubGroupPolicy("workers", network_topology=NetworkTopology("hard", 1),
                            label_selector=parse_label_selector(
                                {"matchLabels": {"role": "worker"}}, "p"))
    job = JobInfo.from_podgroup(PodGroup("j", "ns", min_member=1, sub_group_policies=(policy,)))
    job.add_task(TaskInfo.create("ns", "j-0", job.uid, Resource.from_mapping({"cpu": 1}),
                                 labels={"role": "ps"}))
    cache.add_job(job)
    assert _placed(cache) == {"ns/j"}


_NAMES = ("a", "b", "c", "d", "e")


@settings(max_examples=300, deadline=None)
@given(st.lists(st.one_of(
    st.tuples(st.just("set"), st.sampled_from(_NAMES),
              st.lists(st.sampled_from(_NAMES), max_size=3, unique=True)),
    st.tuples(st.just("delete"), st.sampled_from(_NAMES), st.just([]))), max_size=12))
def test_a_cache_s_hypernodes_always_give_a_tree_and_the_oldest_claim_wins(
        updates: list[tuple[str, str, list[str]]]) -> None:
    """Whatever updates arrive: the session's tree has no cycle; it is the whole tree
    when the hypernodes form one; and a child two parents claim, outside any cycle,
    is under the one whose claim is the oldest still standing."""
    from batchsched.cache.memory import MemoryCache

    cache = MemoryCache()
    claimed: dict[tuple[str, str], int] = {}
    for step, (kind, name, children) in enumerate(updates):
        if kind == "delete":
            cache.delete_hyper_node(name)
            claimed = {link: at for link, at in claimed.items() if link[0] != name}
            continue
        kept = [c for c in children if c != name]
        cache.set_hyper_node(hn(name, 1, node_names=(f"{name}-node",), children=tuple(kept)))
        claimed = {link: at for link, at in claimed.items()
                   if link[0] != name or link[1] in kept}
        for child in kept:
            claimed.setdefault((name, child), step)
    specs = tuple(cache.hyper_nodes.values())
    links = cache.snapshot().hyper_node_links
    partial = build_topology(specs, (), partial=True, link_claims=links)
    for start in partial.parent:
        seen, current = set(), start
        while current:
            assert current not in seen
            seen.add(current)
            current = partial.parent.get(current, "")
    try:
        whole = build_topology(specs, ())
    except TopologyError:
        pass
    else:
        assert whole.parent == partial.parent
    claimants: dict[str, list[tuple[int, str]]] = {}
    for (parent, child), at in claimed.items():
        claimants.setdefault(child, []).append((at, parent))
    in_cycles = {child for child, parent in claimed if _in_a_cycle(claimed, child)}
    for child, found in claimants.items():
        if len(found) > 1 and child not in in_cycles and not any(
                parent in in_cycles for _, parent in found):
            assert partial.parent[child] == min(found)[1]


def _in_a_cycle(claimed: dict[tuple[str, str], int], start: str) -> bool:
    graph: dict[str, set[str]] = {}
    for parent, child in claimed:
        graph.setdefault(child, set()).add(parent)
    stack, seen = [start], set()
    while stack:
        for up in graph.get(stack.pop(), ()):
            if up == start:
                return True
            if up not in seen:
                seen.add(up)
                stack.append(up)
    return False
