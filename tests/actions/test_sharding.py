"""Scheduler sharding (Volcano's ``--scheduler-sharding-mode``/``-name`` and its
NodeShard objects): hard mode keeps every action on the shard's nodes, soft mode tries
them first. Volcano's own cases are scenarios (tests/conformance/volcano/sharding);
these pin what they leave open (their shard is always the first node)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from batchsched.actions.node_search import FeasibleNodeScan, shard_groups
from batchsched.api.node import NodeInfo
from batchsched.api.resource import Resource
from batchsched.api.sharding import NodeShard, nodes_in_shard
from batchsched.api.task import TaskInfo
from batchsched.conf import parse_configuration
from batchsched.errors import ConfigError
from batchsched.scenario import parse_scenario, run_scenario
from batchsched.scheduler import Scheduler
from batchsched.simulation import Simulator
from batchsched.simulation.scenario_workload import scenario_workload

CASES = Path(__file__).parent.parent / "conformance" / "volcano" / "sharding"


def case(name: str, *, mode: str | None = None, shard: list[str] | None = None,
         **changes: Any) -> dict[str, Any]:
    """One of the transcribed Volcano cases, with its mode or its shard changed."""
    path = next(CASES.glob(f"{name}-*.yaml"))
    doc: dict[str, Any] = yaml.safe_load(path.read_text())
    if mode is not None:
        doc["config"]["sharding"]["mode"] = mode
    if shard is not None:
        doc["nodeShards"][0]["nodesDesired"] = shard
    doc.update(changes)
    doc.pop("expect", None)
    return doc


def decide(doc: dict[str, Any]) -> dict[str, Any]:
    return run_scenario(parse_scenario(doc, source="<test>")).to_json()


def test_a_shard_is_what_it_wants_less_what_other_shards_use() -> None:
    # TestGetAvailableNodesFromShard (shard_coordinator_test.go).
    shards = [NodeShard("test-shard", ("node-1", "node-2", "node-3", "node-4"),
                        ("node-1", "node-2")),
              NodeShard("other-shard-1", ("node-2", "node-3"), ("node-2",)),
              NodeShard("other-shard-2", ("node-3", "node-4"), ("node-3", "node-4"))]
    assert nodes_in_shard(shards, "test-shard") == {"node-1"}
    assert nodes_in_shard(shards, "other-shard-1") == set()
    assert nodes_in_shard(shards, "other-shard-2") == {"node-3", "node-4"}
    assert nodes_in_shard(shards, "non-existent-shard") == set()


def _nodes(*names: str) -> list[NodeInfo]:
    return [NodeInfo.create(name, Resource.from_mapping({"cpu": 4, "pods": 10}))
            for name in names]


def test_hard_sharding_fails_other_nodes_in_the_scan_and_caches_it() -> None:
    # TestPredicateNodes, "hard allows inside": only node1 passes; node2 and node3
    # fail with Volcano's words, kept in the error cache of job1/worker.
    nodes = _nodes("node1", "node2", "node3")
    scan = FeasibleNodeScan(nodes, error_cache_enabled=False, rotate=False,
                            shard=frozenset({"node1"}))
    task = TaskInfo.create("default", "t", "job1", Resource.from_mapping({"cpu": 1}),
                           role="worker")
    found, errors = scan.feasible_nodes(task, nodes, lambda t, n: None)
    assert [node.name for node in found] == ["node1"]
    assert sorted(scan.error_cache["job1/worker"]) == ["node2", "node3"]
    assert str(errors) == "0/2 nodes are unavailable: 2 node isn't in scheduler node shard."


def test_soft_groups_keep_the_order_given() -> None:
    # TestGetPredicatedNodeByShard: the shard's nodes, then the others.
    class Soft:
        sharding = parse_configuration({"sharding": {"mode": "soft"}}).sharding
        nodes_in_shard = frozenset({"node1", "node3"})

    nodes = _nodes("node1", "node2", "node3")
    assert [[n.name for n in group] for group in shard_groups(Soft(), nodes)] == [
        ["node1", "node3"], ["node2"]]
    Soft.nodes_in_shard = frozenset()
    assert [[n.name for n in group] for group in shard_groups(Soft(), nodes)] == [
        ["node1", "node2", "node3"]]


def test_hard_sharding_places_only_on_the_shard() -> None:
    decisions = decide(case("backfill-00", shard=["n4"]))
    assert decisions["binds"] == {"c1/p1": "n4"}
    decisions = decide(case("allocate-00", shard=["n2"]))
    assert decisions["binds"] == {"c1/p1": "n2"}


def test_hard_sharding_without_a_shard_places_nothing_and_says_why() -> None:
    decisions = decide(case("allocate-00", nodeShards=[]))
    assert decisions["binds"] == {}
    messages = [event["message"] for event in decisions["events"]
                if event["reason"] == "FailedScheduling"]
    assert messages == ["0/4 nodes are unavailable: 4 node isn't in scheduler node shard."]


def test_soft_sharding_goes_elsewhere_when_the_shard_is_full() -> None:
    doc = case("allocate-01", shard=["n1"])
    doc["tasks"][0]["requests"] = {"cpu": "11", "memory": "1G"}
    assert decide(doc)["binds"] == {"c1/p1": "n3"}  # the best of the others


def test_soft_sharding_binds_elsewhere_before_pipelining_in_the_shard() -> None:
    # Volcano's prioritizeNodes: idle nodes of the shard, idle nodes of other shards,
    # then future idle ones. n1 (the shard) frees its cpu only once a pod leaves.
    doc = case("allocate-02", shard=["n1"])
    doc["jobs"].append({"name": "gone", "namespace": "c1", "queue": "c1", "minMember": 0,
                        "phase": "Running"})
    doc["tasks"].append({"name": "leaving", "namespace": "c1", "job": "gone", "node": "n1",
                         "phase": "Running", "deleting": True,
                         "requests": {"cpu": "10", "memory": "1G"}})
    assert decide(doc)["binds"] == {"c1/p1": "n2"}


@pytest.mark.parametrize("mode", ["hard", "soft"])
def test_preempt_and_reclaim_take_their_victims_in_the_shard(mode: str) -> None:
    # The Volcano cases' shard is the first node, which is also where a scheduler
    # without shards looks first: with the second node as the shard, the victim there.
    assert decide(case("preempt-00", mode=mode, shard=["n2"]))["evicted"] == [
        "c1/preemptee2"]
    assert decide(case("reclaim-00", mode=mode, shard=["n2"]))["evicted"] == [
        "c1/preemptee2"]


def test_a_shard_used_by_another_scheduler_is_not_ours() -> None:
    doc = case("allocate-00", shard=["n1", "n3"])
    doc["nodeShards"].append({"name": "other", "nodesDesired": ["n3"], "nodesInUse": ["n1"]})
    assert decide(doc)["binds"] == {"c1/p1": "n3"}


def test_the_sharding_block_is_checked() -> None:
    with pytest.raises(ConfigError, match=r"sharding\.mode"):
        parse_configuration({"sharding": {"mode": "Hard"}})
    with pytest.raises(ConfigError, match=r"sharding\.shard"):
        parse_configuration({"sharding": {"shard": "x"}})
    sharding = parse_configuration({"sharding": {"mode": "soft"}}).sharding
    assert sharding.name == "volcano" and sharding.active
    assert not parse_configuration({}).sharding.active


def test_node_shards_are_read_from_a_scenario_and_checked() -> None:
    doc = case("allocate-00")
    doc["nodeShards"] = [{"name": "s", "nodesDesired": ["n1", 3]}]
    with pytest.raises(Exception, match=r"nodeShards\[0\]\.nodesDesired\[1\]"):
        parse_scenario(doc, source="<test>")


def test_reports_rank_only_the_shard_nodes() -> None:
    from batchsched.explain import explain
    from batchsched.framework.session import Session
    from batchsched.scenario.runner import session_scores

    doc = case("allocate-00", shard=["n1"])
    doc["config"]["tiers"][0]["plugins"][2]["arguments"] = {"leastrequested.weight": 1}
    parsed = parse_scenario(doc, source="<test>")
    scores = session_scores(Session.open(parsed.build_cache(), parsed.configuration))
    assert list(scores["c1/p1"]) == ["n1"]
    report = explain(parsed, task="c1/p1")
    placement = report["tasks"][0]["placement"]
    assert placement["chosen"]["node"] == "n1" and placement["runnersUp"] == []


def test_a_replay_keeps_a_hard_shard_at_every_instant(tmp_path: Path) -> None:
    """``batchsched simulate`` decides as ``run``: the workload's NodeShards are the
    cluster's, so a hard-sharded replay never places outside its shard."""
    doc = case("allocate-00", shard=["n2", "n4"])
    doc["jobs"] = [{"name": f"j{i}", "namespace": "c1", "queue": "c1", "minMember": 1,
                    "createdAt": i} for i in range(6)]
    doc["tasks"] = [{"name": f"t{i}", "namespace": "c1", "job": f"j{i}",
                     "requests": {"cpu": "1", "memory": "1G"},
                     "annotations": {"batchsched.io/run-time": "30"}} for i in range(6)]
    path = tmp_path / "sharded.yaml"
    path.write_text(yaml.safe_dump(doc), encoding="utf-8")
    workload, scenario = scenario_workload(path)
    used: set[str] = set()

    def observe(sim: Simulator) -> None:
        used.update(task.node_name for job in sim.cache.jobs.values()
                    for task in job.tasks.values() if task.node_name)

    timeline = Simulator(workload, scenario.configuration, observe=observe).run()
    assert timeline.finished_count == 6
    assert used <= {"n2", "n4"} and used


def test_a_deleted_shard_leaves_its_scheduler_the_nodes_it_had() -> None:
    # Volcano's shard coordinator skips a refresh without its own shard: the last set
    # stays in force until the shard comes back.
    doc = case("allocate-00", shard=["n2"])
    doc["jobs"] = [{"name": f"pg{i}", "namespace": "c1", "queue": "c1", "minMember": 0,
                    "phase": "Inqueue"} for i in (1, 2, 3)]
    doc["tasks"] = [{"name": "p1", "namespace": "c1", "job": "pg1",
                     "requests": {"cpu": "1", "memory": "1G"}}]
    parsed = parse_scenario(doc, source="<test>")
    cache = parsed.build_cache()
    scheduler = Scheduler(cache, parsed.configuration)
    scheduler.run_once()
    cache.delete_node_shard("test-shard")
    cache.set_node_shard(NodeShard("other", ("n1", "n2", "n3", "n4"), ("n4",)))
    for job in ("pg2", "pg3"):
        cache.add_task(TaskInfo.create("c1", f"p-{job}", f"c1/{job}",
                                       Resource.from_mapping({"cpu": 1})))
        scheduler.run_once()
    assert {bind.node for bind in cache.binds} == {"n2"}
    cache.set_node_shard(NodeShard("test-shard", ("n3",)))
    assert cache.gone_shard_nodes == {}
