"""Pod topology spread constraints: the kube module on its own, and through the
predicates (DoNotSchedule) and nodeorder (ScheduleAnyway) plugins."""

from __future__ import annotations

import json
import math
from collections import Counter
from pathlib import Path
from typing import Any

import attrs
import pytest

from batchsched.columnar.selector import FAST_PATH_ENVIRONMENT_VARIABLE
from batchsched.errors import ScenarioError
from batchsched.kube.affinity import Affinity
from batchsched.kube.taints import Taint, Toleration
from batchsched.kube.topology_spread import (
    REASON_CONSTRAINTS_NOT_MATCH,
    REASON_NODE_LABEL_NOT_MATCH,
    TopologySpreadError,
    domain_counts,
    parse_topology_spread,
    spread_filter,
    spread_scores,
)
from batchsched.scenario import parse_scenario, run_scenario
from batchsched.scenario.kubectl import load_kubectl_dump
from batchsched.scenario.runner import Decisions

WEB = {"matchLabels": {"app": "web"}}


@attrs.frozen
class Pod:
    namespace: str = "default"
    labels: dict[str, str] = attrs.field(factory=lambda: {"app": "web"})
    node_selector: dict[str, str] = attrs.field(factory=dict)
    affinity: Affinity = attrs.field(factory=Affinity)
    tolerations: tuple[Toleration, ...] = ()


@attrs.frozen
class Node:
    name: str
    labels: dict[str, str]
    taints: tuple[Taint, ...] = ()


def constraint(when: str = "DoNotSchedule", key: str = "zone", skew: int = 1,
               **extra: Any) -> dict[str, Any]:
    return {"maxSkew": skew, "topologyKey": key, "whenUnsatisfiable": when,
            "labelSelector": WEB, **extra}


# -- the module on its own ----------------------------------------------------------------------


def test_parsing_reads_kubernetes_shape_and_defaults() -> None:
    (c,) = parse_topology_spread([constraint(minDomains=3, matchLabelKeys=["rev"])],
                                 {"app": "web", "rev": "7"})
    assert (c.max_skew, c.topology_key, c.hard, c.min_domains) == (1, "zone", True, 3)
    assert (c.node_affinity_policy, c.node_taints_policy) == ("Honor", "Ignore")
    assert c.selects({"app": "web", "rev": "7"}) and not c.selects({"app": "web", "rev": "6"})
    (no_selector,) = parse_topology_spread([{"maxSkew": 1, "topologyKey": "zone",
                                             "whenUnsatisfiable": "ScheduleAnyway"}])
    assert not no_selector.hard and not no_selector.selects({})


@pytest.mark.parametrize(("raw", "path"), [
    ([constraint(skew=0)], "[0].maxSkew"),
    ([constraint(when="Sometimes")], "[0].whenUnsatisfiable"),
    ([constraint(key="")], "[0].topologyKey"),
    ([constraint(when="ScheduleAnyway", minDomains=2)], "[0].minDomains"),
    ([constraint(nodeTaintsPolicy="Maybe")], "[0].nodeTaintsPolicy"),
    ([constraint(labelSelector={"matchExpressions": [{"key": "a", "operator": "Is"}]})],
     "[0].labelSelector.matchExpressions[0].operator"),
    ([constraint(), constraint(skew=2)], "[1]"),
    ([constraint(extra=1)], "[0].extra"),
    # What the API server refuses in matchLabelKeys.
    ([constraint(labelSelector=None, matchLabelKeys=["app"])], "[0].matchLabelKeys"),
    ([constraint(matchLabelKeys=["app"])], "[0].matchLabelKeys[0]"),
])
def test_parsing_names_the_bad_field(raw: list[Any], path: str) -> None:
    with pytest.raises(TopologySpreadError) as caught:
        parse_topology_spread(raw)
    assert caught.value.path == path


def test_the_filter_keeps_the_skew_and_refuses_nodes_without_the_label() -> None:
    hard = parse_topology_spread([constraint()])
    pod = Pod()
    a, b = Node("a1", {"zone": "a"}), Node("b1", {"zone": "b"})
    other_ns = Pod(namespace="other")
    counts = domain_counts(pod, hard, [(a, [Pod(), Pod(), other_ns]), (b, [Pod()]),
                                       (Node("x", {}), [Pod(), Pod()])])
    assert counts == [{"a": 2, "b": 1}]
    assert spread_filter(pod, hard, counts, a.labels) == REASON_CONSTRAINTS_NOT_MATCH
    assert spread_filter(pod, hard, counts, b.labels) is None
    assert spread_filter(pod, hard, counts, {}) == REASON_NODE_LABEL_NOT_MATCH
    # A pod its own selector does not match adds nothing to the skew.
    assert spread_filter(Pod(labels={}), hard, counts, a.labels) is None
    # Fewer eligible domains than minDomains: the global minimum is 0.
    two = parse_topology_spread([constraint(minDomains=3, skew=2)])
    assert spread_filter(pod, two, counts, a.labels) == REASON_CONSTRAINTS_NOT_MATCH
    assert spread_filter(pod, parse_topology_spread([constraint(skew=2)]), counts,
                         a.labels) is None


def test_inclusion_policies_decide_which_nodes_count() -> None:
    tainted = Node("b1", {"zone": "b"}, (Taint("dedicated", "x", "NoSchedule"),))
    placements = [(Node("a1", {"zone": "a", "disk": "ssd"}), [Pod()]), (tainted, [Pod()])]
    pod = Pod(node_selector={"disk": "ssd"})
    honor = parse_topology_spread([constraint()])
    assert domain_counts(pod, honor, placements) == [{"a": 1}]
    ignore = parse_topology_spread([constraint(nodeAffinityPolicy="Ignore")])
    assert domain_counts(pod, ignore, placements) == [{"a": 1, "b": 1}]
    taints = parse_topology_spread([constraint(nodeAffinityPolicy="Ignore",
                                               nodeTaintsPolicy="Honor")])
    assert domain_counts(pod, taints, placements) == [{"a": 1}]


def test_scores_follow_kube_scheduler() -> None:
    soft = parse_topology_spread([constraint("ScheduleAnyway")])
    a1, a2, b1 = (Node("a1", {"zone": "a"}), Node("a2", {"zone": "a"}),
                  Node("b1", {"zone": "b"}))
    no_zone = Node("x", {})
    placements = [(a1, [Pod(), Pod()]), (a2, [Pod()]), (b1, []), (no_zone, [Pod()])]
    scores = spread_scores(Pod(), soft, [a1, a2, b1, no_zone], placements)
    # zone a holds 3, zone b 0; weight log(2 domains + 2); raw round(3 * 1.386) = 4 and 0.
    assert round(3 * math.log(4)) == 4
    assert scores == [100 * (4 + 0 - 4) // 4, 0, 100, 0]
    # Nothing placed anywhere: every candidate scores 100.
    assert spread_scores(Pod(), soft, [a1, b1], [(a1, []), (b1, [])]) == [100, 100]
    # Hostname spreading counts the node's own pods; weight log(candidates + 2).
    by_host = parse_topology_spread([constraint("ScheduleAnyway",
                                                key="kubernetes.io/hostname", skew=2)])
    hosts = [Node(n, {"kubernetes.io/hostname": n}) for n in ("h1", "h2")]
    raw_h1 = round(2 * math.log(4) + 1)
    assert spread_scores(Pod(), by_host, hosts, [(hosts[0], [Pod(), Pod()]), (hosts[1], [])]) == [
        100 * (raw_h1 + 1 - raw_h1) // raw_h1, 100 * (raw_h1 + 1 - 1) // raw_h1]


# -- through the scheduler ------------------------------------------------------------------------


def document(nodes: list[tuple[str, str | None, int]], tasks: list[dict[str, Any]],
             arguments: dict[str, Any] | None = None) -> dict[str, Any]:
    """Nodes (name, zone or None, cpus); pending tasks of job "web" unless they say."""
    args = arguments or {}
    predicates = {"name": "predicates", "arguments": {
        k: v for k, v in args.items() if k.startswith("predicate.")}}
    nodeorder = {"name": "nodeorder", "arguments": {
        k: v for k, v in args.items() if not k.startswith("predicate.")}}
    return {
        "version": 1, "name": "spread",
        "config": {"actions": "enqueue, allocate", "tiers": [
            {"plugins": [{"name": "priority"}, {"name": "gang"}]},
            {"plugins": [predicates, {"name": "proportion"}, nodeorder]}]},
        "nodes": [{"name": name, "labels": {"zone": zone} if zone else {},
                   "allocatable": {"cpu": cpu, "memory": "64Gi", "pods": 110}}
                  for name, zone, cpu in nodes],
        "jobs": [{"name": "web", "minMember": 1, "phase": "Inqueue"},
                 {"name": "old", "minMember": 1, "phase": "Running"}],
        "tasks": [{"job": "web", "labels": {"app": "web"}, "requests": {"cpu": 1}, **t}
                  for t in tasks],
    }


def replicas(count: int, *constraints: dict[str, Any]) -> list[dict[str, Any]]:
    return [{"name": f"web-{i}", "topologySpreadConstraints": list(constraints)}
            for i in range(count)]


def run(doc: dict[str, Any]) -> Decisions:
    return run_scenario(parse_scenario(doc, source="<test>"))


def zones(doc: dict[str, Any], binds: dict[str, str]) -> Counter[str]:
    zone_of = {n["name"]: n["labels"].get("zone", "-") for n in doc["nodes"]}
    return Counter(zone_of[node] for node in binds.values())


# Zone a has three nodes, zone b one: least-requested alone puts one replica per node.
UNEVEN = [("a1", "a", 8), ("a2", "a", 8), ("a3", "a", 8), ("b1", "b", 8)]


def test_do_not_schedule_spreads_replicas_evenly_over_the_zones() -> None:
    doc = document(UNEVEN, replicas(4, constraint()))
    assert zones(doc, run(doc).binds) == {"a": 2, "b": 2}
    off = document(UNEVEN, replicas(4, constraint()),
                   {"predicate.PodTopologySpreadEnable": False})
    assert zones(off, run(off).binds) == {"a": 3, "b": 1}


def test_a_node_without_the_topology_label_is_refused() -> None:
    doc = document([("x", None, 64), ("a1", "a", 2)], replicas(1, constraint()))
    assert run(doc).binds == {"default/web-0": "a1"}
    alone = document([("x", None, 64)], replicas(1, constraint()))
    result = run(alone)
    assert result.binds == {}
    assert any(REASON_NODE_LABEL_NOT_MATCH in e.get("message", "") for e in result.events)


def test_schedule_anyway_prefers_the_emptier_zone() -> None:
    nodes = [("a1", "a", 16), ("a2", "a", 16), ("b1", "b", 4)]
    running = {"name": "old-0", "job": "old", "node": "a1", "phase": "Running",
               "requests": {"cpu": "100m"}}
    doc = document(nodes, [running, *replicas(1, constraint("ScheduleAnyway"))])
    assert run(doc).binds == {"default/web-0": "b1"}
    # Without the spread score, least-requested prefers the larger zone-a nodes.
    off = document(nodes, [running, *replicas(1, constraint("ScheduleAnyway"))],
                   {"podtopologyspread.weight": 0})
    assert run(off).binds["default/web-0"] in {"a1", "a2"}


def test_a_bad_constraint_fails_the_scenario_naming_the_field() -> None:
    doc = document(UNEVEN, replicas(1, constraint(skew=0)))
    with pytest.raises(ScenarioError, match=r"topologySpreadConstraints\[0\]\.maxSkew"):
        parse_scenario(doc, source="<test>")


def test_the_fast_path_decides_as_the_scalar_reference() -> None:
    nodes = [(f"n{i}", "abc"[i % 3], 4 + i % 5) for i in range(24)]
    tasks = [*replicas(20, constraint(), constraint("ScheduleAnyway", key="rack", skew=2)),
             *({"name": f"plain-{i}", "requests": {"cpu": 1 + i % 3}} for i in range(30)),
             *({"name": f"soft-{i}", "topologySpreadConstraints": [constraint("ScheduleAnyway")]}
               for i in range(10))]
    doc = document(nodes, tasks)
    for i, node in enumerate(doc["nodes"]):
        node["labels"]["rack"] = f"r{i % 4}"
    fast = run(doc).binds
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv(FAST_PATH_ENVIRONMENT_VARIABLE, "0")
        reference = run(doc).binds
    assert fast == reference
    assert len(fast) == len(tasks)


def test_kubectl_pods_keep_their_constraints(tmp_path: Path) -> None:
    dump = json.loads((Path(__file__).parent.parent / "scenario" / "data"
                       / "kubectl-dump.json").read_text())
    pod = next(i for i in dump["items"]
               if i["kind"] == "Pod" and i["metadata"]["name"] == "infer-server-0")
    pod["spec"]["topologySpreadConstraints"] = [constraint("ScheduleAnyway",
                                                           key="kubernetes.io/hostname")]
    path = tmp_path / "dump.json"
    path.write_text(json.dumps(dump))
    tasks = {t.uid: t for t in load_kubectl_dump(path).tasks}
    (spread,) = tasks["team-a/infer-server-0"].topology_spread
    assert spread.topology_key == "kubernetes.io/hostname" and not spread.hard


@pytest.mark.parametrize("fast_path", ["0", "1"])
@pytest.mark.parametrize("when", ["DoNotSchedule", "ScheduleAnyway"])
def test_an_empty_selector_counts_no_placed_pod_but_the_pod_itself(
        monkeypatch: pytest.MonkeyPatch, fast_path: str, when: str) -> None:
    # kube-scheduler's countPodsMatchSelector counts nothing for labelSelector {}
    # (selector.Empty()), while the incoming pod still matches itself: a1 holds two
    # pods, and the skew on a1 is 0 + 1 - 0, not 2 + 1 - 0.
    monkeypatch.setenv(FAST_PATH_ENVIRONMENT_VARIABLE, fast_path)
    spread = {"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": when,
              "labelSelector": {}}
    doc = document([("a1", "a", 8), ("b1", "b", 8)],
                   [{"name": "web-0", "topologySpreadConstraints": [spread]}])
    doc["nodes"][1]["taints"] = [{"key": "k", "value": "v", "effect": "NoSchedule"}]
    doc["tasks"] += [{"name": f"old-{i}", "job": "old", "node": "a1", "phase": "Running",
                      "labels": {"app": "other"}, "requests": {"cpu": 1}} for i in range(2)]
    assert run(doc).binds == {"default/web-0": "a1"}
    # Scored alone, both zones are alike (the two placed pods do not count).
    weights = {f"{name}.weight": 0 for name in (
        "leastrequested", "balancedresource", "mostrequested", "nodeaffinity", "podaffinity",
        "tainttoleration", "imagelocality")}
    alone = document([("a1", "a", 8), ("b1", "b", 8)],
                     [{"name": "web-0", "topologySpreadConstraints": [spread]}], weights)
    alone["tasks"] += doc["tasks"][1:]
    scores = run_scenario(parse_scenario(alone, source="<test>"), scores=True).scores
    assert scores is not None
    scored = scores["default/web-0"]
    assert scored["a1"] == scored["b1"]
    assert (scored["a1"] > 0) is (when == "ScheduleAnyway")  # DoNotSchedule is a filter
