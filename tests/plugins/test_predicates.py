"""predicates: each Kubernetes filter, its reason and code, the switches, the in-session node
view kept by the event handlers, the predicate cache and the preemption dry run."""

from __future__ import annotations

from typing import Any

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st
from node_support import document, open_session, plugin, predicates, reasons, task

from batchsched import Statement
from batchsched.api import NodeInfo, Resource, TaskInfo
from batchsched.api.types import FitStatusCode
from batchsched.errors import SchedulingError
from batchsched.framework.session import Session
from batchsched.kube.pod_view import KubeView
from batchsched.plugins.predicates import (
    REASON_AFFINITY_RULES,
    REASON_ANTI_AFFINITY_RULES,
    REASON_EXISTING_ANTI_AFFINITY_RULES,
    REASON_NODE_AFFINITY,
    REASON_NODE_PORTS,
    REASON_NODE_UNSCHEDULABLE,
)
from batchsched.scenario import parse_scenario, run_scenario

UU = int(FitStatusCode.UNSCHEDULABLE_AND_UNRESOLVABLE)
UNSCHED = int(FitStatusCode.UNSCHEDULABLE)
ERROR = int(FitStatusCode.ERROR)
POD_NUMBER = "node(s) pod number exceeded"


def _session(nodes: str, tasks: str, arguments: dict[str, Any] | None = None,
             jobs: str = "jobs: [{name: pg, namespace: c1}, {name: other, namespace: c1}]"
             ) -> Session:
    body = f"{nodes}\n{jobs}\ntasks:\n{tasks}"
    return open_session(document(body, plugin("predicates", arguments)))


TWO_NODES = """nodes:
- {name: n1, allocatable: {cpu: 8, memory: 8Gi, pods: 10},
   labels: {kubernetes.io/hostname: n1, zone: a, rank: "5"}}
- {name: n2, allocatable: {cpu: 8, memory: 8Gi, pods: 10},
   labels: {kubernetes.io/hostname: n2, zone: b, rank: "12"}}"""


def _verdicts(ssn: Session, uid: str) -> dict[str, list[tuple[int, str]]]:
    return {name: reasons(err) for name, err in predicates(ssn, uid).items()}


# -- pod count -------------------------------------------------------------------------------------

def test_pod_count_counts_every_pod_on_the_node() -> None:
    nodes = "nodes: [{name: n1, allocatable: {cpu: 8, memory: 8Gi, pods: 2}}]"
    tasks = """- {name: r1, namespace: c1, job: other, node: n1, phase: Running, requests: {cpu: 1}}
- {name: r2, namespace: c1, job: other, node: n1, deleting: true, phase: Running,
   requests: {cpu: 1}}
- {name: p, namespace: c1, job: pg, requests: {cpu: 1}}"""
    # A Releasing task still holds its slot.
    assert _verdicts(_session(nodes, tasks), "c1/p") == {"n1": [(UNSCHED, POD_NUMBER)]}


def test_node_without_pods_allocatable_takes_no_task() -> None:
    nodes = "nodes: [{name: n1, allocatable: {cpu: 8, memory: 8Gi}}]"
    tasks = "- {name: p, namespace: c1, job: pg, requests: {cpu: 1}}"
    assert _verdicts(_session(nodes, tasks), "c1/p") == {"n1": [(UNSCHED, POD_NUMBER)]}


def test_pod_count_does_not_stop_the_other_checks() -> None:
    nodes = "nodes: [{name: n1, allocatable: {cpu: 8, memory: 8Gi, pods: 1}}]"
    tasks = """- {name: r1, namespace: c1, job: other, node: n1, phase: Running, hostPorts: [80]}
- {name: p, namespace: c1, job: pg, requests: {cpu: 1}, hostPorts: [80]}"""
    assert _verdicts(_session(nodes, tasks), "c1/p") == {
        "n1": [(UNSCHED, POD_NUMBER), (UNSCHED, REASON_NODE_PORTS)]}


def test_evicting_one_of_two_pods_on_a_host_port_frees_the_port() -> None:
    # kube-scheduler's used ports are a set (HostPortInfo): removing a pod deletes its
    # ports, though another pod on the node names one too; its undo adds them back.
    nodes = "nodes: [{name: n1, allocatable: {cpu: 8, memory: 8Gi, pods: 10}}]"
    tasks = """- {name: r1, namespace: c1, job: other, node: n1, phase: Running, hostPorts: [80]}
- {name: r2, namespace: c1, job: other, node: n1, phase: Running, hostPorts: [80]}
- {name: p, namespace: c1, job: pg, requests: {cpu: 1}, hostPorts: [80]}"""
    ssn = _session(nodes, tasks)
    p, n1 = task(ssn, "c1/p"), ssn.nodes["n1"]
    ssn.pre_predicate(p)
    assert reasons(ssn.predicate(p, n1)) == [(UNSCHED, REASON_NODE_PORTS)]
    stmt = Statement(ssn)
    stmt.evict(task(ssn, "c1/r1"), "test")
    assert ssn.predicate(p, n1) is None
    stmt.discard()
    assert reasons(ssn.predicate(p, n1)) == [(UNSCHED, REASON_NODE_PORTS)]


def test_pod_count_follows_allocations_and_their_undo() -> None:
    nodes = "nodes: [{name: n1, allocatable: {cpu: 8, memory: 8Gi, pods: 1}}]"
    tasks = """- {name: a, namespace: c1, job: pg, requests: {cpu: 1}}
- {name: b, namespace: c1, job: pg, requests: {cpu: 1}}"""
    ssn = _session(nodes, tasks)
    a, b, n1 = task(ssn, "c1/a"), task(ssn, "c1/b"), ssn.nodes["n1"]
    stmt = Statement(ssn)
    stmt.allocate(a, n1)
    ssn.pre_predicate(b)
    assert reasons(ssn.predicate(b, n1)) == [(UNSCHED, POD_NUMBER)]
    stmt.discard()
    assert ssn.predicate(b, n1) is None


def test_eviction_frees_the_slot_at_once() -> None:
    nodes = "nodes: [{name: n1, allocatable: {cpu: 8, memory: 8Gi, pods: 1}}]"
    tasks = """- {name: r1, namespace: c1, job: other, node: n1, phase: Running, requests: {cpu: 1}}
- {name: p, namespace: c1, job: pg, requests: {cpu: 1}}"""
    ssn = _session(nodes, tasks)
    p, n1 = task(ssn, "c1/p"), ssn.nodes["n1"]
    ssn.pre_predicate(p)
    assert ssn.predicate(p, n1) is not None
    Statement(ssn).evict(task(ssn, "c1/r1"), "test")
    assert ssn.predicate(p, n1) is None


# -- node-static checks ---------------------------------------------------------------------------

def test_unschedulable_node_unless_tolerated() -> None:
    nodes = "nodes: [{name: n1, unschedulable: true, allocatable: {cpu: 8, pods: 10}}]"
    tasks = """- {name: p, namespace: c1, job: pg, requests: {cpu: 1}}
- {name: t, namespace: c1, job: pg, requests: {cpu: 1},
   tolerations: [{key: node.kubernetes.io/unschedulable, operator: Exists}]}"""
    ssn = _session(nodes, tasks)
    assert _verdicts(ssn, "c1/p") == {"n1": [(UU, REASON_NODE_UNSCHEDULABLE)]}
    assert _verdicts(ssn, "c1/t") == {"n1": []}


def test_node_selector() -> None:
    tasks = "- {name: p, namespace: c1, job: pg, nodeSelector: {zone: b}, requests: {cpu: 1}}"
    assert _verdicts(_session(TWO_NODES, tasks), "c1/p") == {
        "n1": [(UU, REASON_NODE_AFFINITY)], "n2": []}


def _required(*terms: dict[str, Any]) -> str:
    affinity = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
        "nodeSelectorTerms": list(terms)}}}
    return yaml.safe_dump({"name": "p", "namespace": "c1", "job": "pg", "affinity": affinity},
                          default_flow_style=True).strip()


@pytest.mark.parametrize(("terms", "passing"), [
    ([{"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a", "c"]}]}], ["n1"]),
    ([{"matchExpressions": [{"key": "zone", "operator": "NotIn", "values": ["a"]}]}], ["n2"]),
    ([{"matchExpressions": [{"key": "zone", "operator": "Exists"}]}], ["n1", "n2"]),
    ([{"matchExpressions": [{"key": "gpu", "operator": "DoesNotExist"}]}], ["n1", "n2"]),
    ([{"matchExpressions": [{"key": "rank", "operator": "Gt", "values": ["7"]}]}], ["n2"]),
    ([{"matchExpressions": [{"key": "rank", "operator": "Lt", "values": ["7"]}]}], ["n1"]),
    ([{"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n2"]}]}], ["n2"]),
    ([{"matchFields": [{"key": "metadata.name", "operator": "NotIn", "values": ["n2"]}]}],
     ["n1"]),
    # Terms are ORed; expressions inside a term are ANDed.
    ([{"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]},
                            {"key": "rank", "operator": "Gt", "values": ["7"]}]},
      {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["b"]}]}], ["n2"]),
    # An empty term matches no node; so does an empty list of terms.
    ([{}], []),
    ([], []),
])
def test_required_node_affinity(terms: list[dict[str, Any]], passing: list[str]) -> None:
    verdicts = _verdicts(_session(TWO_NODES, "- " + _required(*terms)), "c1/p")
    assert [n for n, r in verdicts.items() if not r] == passing
    assert all(r == [(UU, REASON_NODE_AFFINITY)] for r in verdicts.values() if r)


def test_non_integer_label_never_satisfies_gt() -> None:
    nodes = "nodes: [{name: n1, allocatable: {pods: 10}, labels: {rank: high}}]"
    term = {"matchExpressions": [{"key": "rank", "operator": "Gt", "values": ["1"]}]}
    assert _verdicts(_session(nodes, "- " + _required(term)), "c1/p") == {
        "n1": [(UU, REASON_NODE_AFFINITY)]}


def test_conflicting_node_name_pins_fail_the_pre_predicate() -> None:
    term = {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n1"]}]}
    term2 = {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n2"]},
                             {"key": "metadata.name", "operator": "In", "values": ["n1"]}]}
    ssn = _session(TWO_NODES, "- " + _required(term2))
    err = ssn.pre_predicate(task(ssn, "c1/p"))
    assert err is not None and err.unresolvable
    assert "pod affinity terms conflict" in err.reasons[0]
    ssn = _session(TWO_NODES, "- " + _required(term, term2))
    assert ssn.pre_predicate(task(ssn, "c1/p")) is None


TAINTED = """nodes:
- {name: ns, allocatable: {pods: 10}, taints: [{key: k, value: v, effect: NoSchedule}]}
- {name: ne, allocatable: {pods: 10}, taints: [{key: k, value: v, effect: NoExecute}]}
- {name: np, allocatable: {pods: 10}, taints: [{key: k, value: v, effect: PreferNoSchedule}]}
- {name: two, allocatable: {pods: 10}, taints: [{key: a, value: "1", effect: PreferNoSchedule},
   {key: b, value: "2", effect: NoSchedule}, {key: c, value: "3", effect: NoSchedule}]}"""


@pytest.mark.parametrize(("tolerations", "expected"), [
    ([], {"ns": "{k: v}", "ne": "{k: v}", "np": None, "two": "{b: 2}"}),
    ([{"key": "k", "operator": "Equal", "value": "v"}],
     {"ns": None, "ne": None, "np": None, "two": "{b: 2}"}),
    ([{"key": "k", "operator": "Equal", "value": "other"}],
     {"ns": "{k: v}", "ne": "{k: v}", "np": None, "two": "{b: 2}"}),
    ([{"key": "k", "operator": "Exists", "effect": "NoSchedule"}],
     {"ns": None, "ne": "{k: v}", "np": None, "two": "{b: 2}"}),
    ([{"operator": "Exists"}], {"ns": None, "ne": None, "np": None, "two": None}),
    ([{"key": "b", "operator": "Exists"}], {"ns": "{k: v}", "ne": "{k: v}", "np": None,
                                            "two": "{c: 3}"}),
])
def test_taints_and_tolerations(tolerations: list[dict[str, Any]],
                                expected: dict[str, str | None]) -> None:
    entry = {"name": "p", "namespace": "c1", "job": "pg", "tolerations": tolerations}
    ssn = _session(TAINTED, "- " + yaml.safe_dump(entry, default_flow_style=True).strip())
    # kube-scheduler 1.35+ names no taint in the reason; explain's detail does.
    got = {name: [(int(s.code), s.reason, s.detail) for s in err.statuses] if err else []
           for name, err in predicates(ssn, "c1/p").items()}
    for node, taint in expected.items():
        wanted = [] if taint is None else [
            (UU, "node(s) had untolerated taint(s)", f"untolerated taint {taint}")]
        assert got[node] == wanted, node


def test_static_checks_stop_at_the_first_failure() -> None:
    nodes = """nodes:
- {name: n1, unschedulable: true, allocatable: {pods: 0},
   taints: [{key: k, effect: NoSchedule}]}"""
    tasks = "- {name: p, namespace: c1, job: pg, nodeSelector: {zone: a}}"
    assert _verdicts(_session(nodes, tasks), "c1/p") == {
        "n1": [(UNSCHED, POD_NUMBER), (UU, REASON_NODE_UNSCHEDULABLE)]}


# -- host ports --------------------------------------------------------------------------------

def test_host_ports_conflict_only_on_the_same_port() -> None:
    tasks = """- {name: web, namespace: c1, job: other, node: n1, phase: Running,
   hostPorts: [80, 443]}
- {name: p80, namespace: c1, job: pg, hostPorts: [8080, 80]}
- {name: p81, namespace: c1, job: pg, hostPorts: [81]}"""
    ssn = _session(TWO_NODES, tasks)
    assert _verdicts(ssn, "c1/p80") == {"n1": [(UNSCHED, REASON_NODE_PORTS)], "n2": []}
    assert _verdicts(ssn, "c1/p81") == {"n1": [], "n2": []}


def test_host_ports_conflict_only_for_the_same_protocol_and_overlapping_address() -> None:
    """Kubernetes' HostPortInfo.CheckConflict: 53/UDP leaves 53/TCP free; an address
    clashes with itself and with 0.0.0.0, not with another address."""
    tasks = """- {name: dns, namespace: c1, job: other, node: n1, phase: Running,
   hostPorts: [{port: 53, protocol: UDP}, {port: 8080, hostIP: 10.0.0.1}]}
- {name: tcp53, namespace: c1, job: pg, hostPorts: [53]}
- {name: udp53, namespace: c1, job: pg, hostPorts: [{port: 53, protocol: UDP}]}
- {name: other-ip, namespace: c1, job: pg, hostPorts: [{port: 8080, hostIP: 10.0.0.2}]}
- {name: same-ip, namespace: c1, job: pg, hostPorts: [{port: 8080, hostIP: 10.0.0.1}]}
- {name: any-ip, namespace: c1, job: pg, hostPorts: [8080]}"""
    ssn = _session(TWO_NODES, tasks)
    assert _verdicts(ssn, "c1/tcp53") == {"n1": [], "n2": []}
    assert _verdicts(ssn, "c1/udp53") == {"n1": [(UNSCHED, REASON_NODE_PORTS)], "n2": []}
    assert _verdicts(ssn, "c1/other-ip") == {"n1": [], "n2": []}
    assert _verdicts(ssn, "c1/same-ip") == {"n1": [(UNSCHED, REASON_NODE_PORTS)], "n2": []}
    assert _verdicts(ssn, "c1/any-ip") == {"n1": [(UNSCHED, REASON_NODE_PORTS)], "n2": []}


# -- inter-pod affinity ----------------------------------------------------------------------------

def _pod(name: str, *, job: str = "pg", node: str | None = None,
         labels: dict[str, str] | None = None, affinity: dict[str, Any] | None = None,
         namespace: str = "c1", **extra: Any) -> str:
    entry: dict[str, Any] = {"name": name, "namespace": namespace, "job": job,
                             "requests": {"cpu": 1}, **extra}
    if node:
        entry.update(node=node, phase="Running")
    if labels:
        entry["labels"] = labels
    if affinity:
        entry["affinity"] = affinity
    return "- " + yaml.safe_dump(entry, default_flow_style=True).strip()


def _term(labels: dict[str, str], key: str = "kubernetes.io/hostname",
          **extra: Any) -> dict[str, Any]:
    return {"labelSelector": {"matchLabels": labels}, "topologyKey": key, **extra}


def _required_pod(kind: str, *terms: dict[str, Any]) -> dict[str, Any]:
    return {kind: {"requiredDuringSchedulingIgnoredDuringExecution": list(terms)}}


def test_required_pod_affinity_follows_the_matching_pods_domain() -> None:
    tasks = "\n".join([
        _pod("db", job="other", node="n1", labels={"app": "db"}),
        _pod("p", affinity=_required_pod("podAffinity", _term({"app": "db"}))),
        _pod("z", affinity=_required_pod("podAffinity", _term({"app": "db"}, "zone"))),
        _pod("none", affinity=_required_pod("podAffinity", _term({"app": "db"}, "rack"))),
    ])
    ssn = _session(TWO_NODES, tasks)
    assert _verdicts(ssn, "c1/p") == {"n1": [], "n2": [(UU, REASON_AFFINITY_RULES)]}
    assert _verdicts(ssn, "c1/z") == {"n1": [], "n2": [(UU, REASON_AFFINITY_RULES)]}
    # No node has the topology label: nowhere.
    assert _verdicts(ssn, "c1/none") == {"n1": [(UU, REASON_AFFINITY_RULES)],
                                         "n2": [(UU, REASON_AFFINITY_RULES)]}


def test_first_pod_of_a_self_affine_group_may_go_anywhere() -> None:
    affinity = _required_pod("podAffinity", _term({"app": "web"}))
    tasks = "\n".join([_pod("p", labels={"app": "web"}, affinity=affinity),
                       _pod("q", labels={"app": "other"}, affinity=affinity)])
    ssn = _session(TWO_NODES, tasks)
    assert _verdicts(ssn, "c1/p") == {"n1": [], "n2": []}
    assert _verdicts(ssn, "c1/q") == {"n1": [(UU, REASON_AFFINITY_RULES)],
                                      "n2": [(UU, REASON_AFFINITY_RULES)]}


def test_required_anti_affinity_and_namespaces() -> None:
    tasks = "\n".join([
        _pod("db", job="other", node="n1", labels={"app": "db"}),
        _pod("p", affinity=_required_pod("podAntiAffinity", _term({"app": "db"}))),
        _pod("zone", affinity=_required_pod("podAntiAffinity", _term({"app": "db"}, "zone"))),
        # Terms look in the task's own namespace unless told otherwise.
        _pod("elsewhere", job="pg2", namespace="c2",
             affinity=_required_pod("podAntiAffinity", _term({"app": "db"}))),
        _pod("listed", job="pg2", namespace="c2",
             affinity=_required_pod("podAntiAffinity", _term({"app": "db"}, namespaces=["c1"]))),
        _pod("all", job="pg2", namespace="c2", affinity=_required_pod(
            "podAntiAffinity", _term({"app": "db"}, namespaceSelector={}))),
    ])
    jobs = "jobs: [{name: pg, namespace: c1}, {name: other, namespace: c1}, " \
           "{name: pg2, namespace: c2}]"
    ssn = _session(TWO_NODES, tasks, jobs=jobs)
    blocked = {"n1": [(UNSCHED, REASON_ANTI_AFFINITY_RULES)], "n2": []}
    assert _verdicts(ssn, "c1/p") == blocked
    assert _verdicts(ssn, "c1/zone") == blocked
    assert _verdicts(ssn, "c2/elsewhere") == {"n1": [], "n2": []}
    assert _verdicts(ssn, "c2/listed") == blocked
    assert _verdicts(ssn, "c2/all") == blocked


def test_existing_pods_anti_affinity_is_symmetric() -> None:
    tasks = "\n".join([
        _pod("loner", job="other", node="n1",
             affinity=_required_pod("podAntiAffinity", _term({"app": "web"}, "zone"))),
        _pod("web", labels={"app": "web"}),
        _pod("api", labels={"app": "api"}),
    ])
    ssn = _session(TWO_NODES, tasks)
    assert _verdicts(ssn, "c1/web") == {
        "n1": [(UNSCHED, REASON_EXISTING_ANTI_AFFINITY_RULES)], "n2": []}
    assert _verdicts(ssn, "c1/api") == {"n1": [], "n2": []}


def test_placements_in_the_session_count_for_anti_affinity() -> None:
    """The event handlers keep the node view current (Volcano's TestEventHandler idea)."""
    anti = _required_pod("podAntiAffinity", _term({"role": "worker"}))
    tasks = "\n".join([_pod("w1", labels={"role": "worker"}, affinity=anti),
                       _pod("w2", labels={"role": "worker"}, affinity=anti)])
    ssn = _session(TWO_NODES, tasks)
    w1, w2 = task(ssn, "c1/w1"), task(ssn, "c1/w2")
    stmt = Statement(ssn)
    stmt.allocate(w1, ssn.nodes["n1"])
    assert _verdicts(ssn, "c1/w2") == {"n1": [(UNSCHED, REASON_ANTI_AFFINITY_RULES)], "n2": []}
    stmt.discard()
    assert _verdicts(ssn, "c1/w2") == {"n1": [], "n2": []}
    assert w2.node_name == ""


def test_a_skipped_inter_pod_check_stays_skipped_for_the_session() -> None:
    """Volcano's PrePredicate skip set only grows: a task without required terms, first seen
    when no placed pod had an anti-affinity against it, is never checked again."""
    anti = _required_pod("podAntiAffinity", _term({"app": "web"}))
    tasks = "\n".join([_pod("guard", job="other", affinity=anti),
                       _pod("web", labels={"app": "web"})])
    ssn = _session(TWO_NODES, tasks)
    guard, web = task(ssn, "c1/guard"), task(ssn, "c1/web")
    assert ssn.pre_predicate(web) is None
    Statement(ssn).allocate(guard, ssn.nodes["n1"])
    assert ssn.pre_predicate(web) is None
    assert ssn.predicate(web, ssn.nodes["n1"]) is None
    # A task first pre-predicated after the placement is checked, on a node that held a
    # pod with required anti-affinity when the session opened (see the next test).
    keeper = _pod("keeper", job="other", node="n1",
                  affinity=_required_pod("podAntiAffinity", _term({"app": "db"})))
    fresh = _session(TWO_NODES, f"{tasks}\n{keeper}")
    Statement(fresh).allocate(task(fresh, "c1/guard"), fresh.nodes["n1"])
    assert _verdicts(fresh, "c1/web")["n1"] == [(UNSCHED, REASON_EXISTING_ANTI_AFFINITY_RULES)]


def test_existing_anti_affinity_counts_on_the_nodes_listed_at_session_open() -> None:
    """Volcano's session lists the nodes holding pods with required anti-affinity once, at
    open (``k8s.NewSnapshot``): a pod placed during the session on a node outside the list
    keeps later pods without terms of their own away only from the next session on; on a
    listed node it does at once."""
    anti = _required_pod("podAntiAffinity", _term({"app": "web"}))
    keeper = _pod("keeper", job="other", node="n2",
                  affinity=_required_pod("podAntiAffinity", _term({"app": "db"})))
    tasks = "\n".join([_pod("guard1", job="other", affinity=anti),
                       _pod("guard2", job="other", affinity=anti),
                       _pod("web", labels={"app": "web"}), keeper])
    jobs = "jobs: [{name: pg, namespace: c1}, {name: other, namespace: c1}]"
    nodes = TWO_NODES.replace("zone: a", "zone: x").replace("zone: b", "zone: y")
    ssn = _session(nodes, tasks, jobs=jobs)
    Statement(ssn).allocate(task(ssn, "c1/guard1"), ssn.nodes["n1"])   # n1 not listed
    assert _verdicts(ssn, "c1/web") == {"n1": [], "n2": []}
    fresh = _session(nodes, tasks, jobs=jobs)
    Statement(fresh).allocate(task(fresh, "c1/guard2"), fresh.nodes["n2"])   # n2 listed
    assert _verdicts(fresh, "c1/web") == {
        "n1": [], "n2": [(UNSCHED, REASON_EXISTING_ANTI_AFFINITY_RULES)]}
    # The task's own terms see every placement.
    own = _pod("own", labels={"app": "db"},
               affinity=_required_pod("podAntiAffinity", _term({"app": "web"})))
    again = _session(nodes, f"{tasks}\n{own}", jobs=jobs)
    Statement(again).allocate(task(again, "c1/web"), again.nodes["n1"])
    assert _verdicts(again, "c1/own")["n1"] == [(UNSCHED, REASON_ANTI_AFFINITY_RULES)]


# -- switches, cache, proportional ----------------------------------------------------------------

def test_switches_turn_checks_off() -> None:
    nodes = """nodes:
- {name: n1, allocatable: {pods: 10}, labels: {kubernetes.io/hostname: n1},
   taints: [{key: k, effect: NoSchedule}]}"""
    tasks = "\n".join([
        _pod("db", job="other", node="n1", labels={"app": "db"}, hostPorts=[80]),
        "- {name: p, namespace: c1, job: pg, nodeSelector: {zone: x}, hostPorts: [80],"
        " affinity: {podAntiAffinity: {requiredDuringSchedulingIgnoredDuringExecution:"
        " [{labelSelector: {matchLabels: {app: db}}, topologyKey: kubernetes.io/hostname}]}}}",
    ])
    off = {"predicate.NodeAffinityEnable": False, "predicate.TaintTolerationEnable": "false",
           "predicate.NodePortsEnable": False, "predicate.PodAffinityEnable": False}
    assert _verdicts(_session(nodes, tasks, off), "c1/p") == {"n1": []}
    on = _verdicts(_session(nodes, tasks), "c1/p")
    assert on == {"n1": [(UU, REASON_NODE_AFFINITY)]}


def test_predicate_cache_by_pod_template() -> None:
    tasks = """- {name: a, namespace: c1, job: pg, nodeSelector: {zone: a},
   annotations: {volcano.sh/template-uid: t1}}
- {name: b, namespace: c1, job: pg, nodeSelector: {zone: b},
   annotations: {volcano.sh/template-uid: t1}}"""
    ssn = _session(TWO_NODES, tasks, {"predicate.CacheEnable": True})
    assert _verdicts(ssn, "c1/a") == {"n1": [], "n2": [(UU, REASON_NODE_AFFINITY)]}
    # Same template: the remembered outcomes are reused, whatever b's own selector says.
    assert _verdicts(ssn, "c1/b") == {
        "n1": [], "n2": [(ERROR, "plugin equivalence cache predicates failed")]}
    uncached = _session(TWO_NODES, tasks)
    assert _verdicts(uncached, "c1/b") == {"n1": [(UU, REASON_NODE_AFFINITY)], "n2": []}


def test_legacy_proportional_arguments() -> None:
    nodes = """nodes:
- {name: n1, allocatable: {cpu: 30, memory: 30G, nvidia.com/gpu: 6, pods: 10}}
- {name: n2, allocatable: {cpu: 26, memory: 26G, nvidia.com/gpu: 2, pods: 10}}"""
    tasks = "- {name: p, namespace: c1, job: pg, requests: {cpu: 10, memory: 10G}}"
    args = {"predicate.ProportionalEnable": True, "predicate.resources": "nvidia.com/gpu",
            "predicate.resources.nvidia.com/gpu.cpu": 4,
            "predicate.resources.nvidia.com/gpu.memory": 4}
    assert _verdicts(_session(nodes, tasks, args), "c1/p") == {
        "n1": [(UU, "proportional of resource nvidia.com/gpu check failed")], "n2": []}
    assert _verdicts(_session(nodes, tasks), "c1/p") == {"n1": [], "n2": []}


# -- codes for preemption, dry run, errors --------------------------------------------------------

def test_resolvable_and_unresolvable_failures() -> None:
    tasks = "\n".join([
        _pod("db", job="other", node="n1", labels={"app": "db"}),
        _pod("anti", affinity=_required_pod("podAntiAffinity", _term({"app": "db"}))),
        "- {name: sel, namespace: c1, job: pg, nodeSelector: {zone: b}}",
    ])
    ssn = _session(TWO_NODES, tasks)
    anti = predicates(ssn, "c1/anti")["n1"]
    sel = predicates(ssn, "c1/sel")["n1"]
    assert anti is not None and not anti.unresolvable    # evicting db would help
    assert sel is not None and sel.unresolvable          # nothing on n1 can change its labels


def test_simulate_predicate_sees_the_node_copy() -> None:
    tasks = "\n".join([
        _pod("db", job="other", node="n1", labels={"app": "db"}),
        _pod("anti", affinity=_required_pod("podAntiAffinity", _term({"app": "db"}))),
    ])
    ssn = _session(TWO_NODES, tasks)
    anti, db = task(ssn, "c1/anti"), task(ssn, "c1/db")
    ssn.pre_predicate(anti)
    copy = ssn.nodes["n1"].clone()
    assert ssn.simulate_predicate(anti, copy) is not None
    copy.remove_task(db)
    assert ssn.simulate_predicate(anti, copy) is None
    assert ssn.predicate(anti, ssn.nodes["n1"]) is not None     # the session is untouched


SESSION_PLACED_GUARD = """
version: 1
config:
  actions: "allocate"
  tiers:
  - plugins: [{name: priority}, {name: gang}]
  - plugins: [{name: predicates}, {name: binpack}]
nodes:
- {name: n1, allocatable: {cpu: 4, memory: 8Gi, pods: 10}, labels: {kubernetes.io/hostname: n1}}
- {name: n2, allocatable: {cpu: 4, memory: 8Gi, pods: 10}, labels: {kubernetes.io/hostname: n2}}
jobs:
- {name: guard, minMember: 1, phase: Inqueue, createdAt: 0}
- {name: web, minMember: 1, phase: Inqueue, createdAt: 1}
- {name: keeper, minMember: 1, phase: Running, createdAt: 2}
tasks:
- name: guard-0
  job: guard
  requests: {cpu: 3, memory: 1Gi}
  affinity:
    podAntiAffinity:
      requiredDuringSchedulingIgnoredDuringExecution:
      - {labelSelector: {matchLabels: {app: web}}, topologyKey: kubernetes.io/hostname}
- {name: web-0, job: web, requests: {cpu: 1, memory: 1Gi}, labels: {app: web}}
"""


@pytest.mark.parametrize(("listed", "web"), [(False, "n1"), (True, "n2")])
def test_volcano_binds_next_to_a_guard_placed_in_the_same_session(listed: bool, web: str) -> None:
    """The decision Volcano makes: guard-0 goes first (binpack: n1), and web-0, which has
    no terms of its own, is not kept off n1 by guard-0's anti-affinity because n1 held no
    such pod when the session opened; binpack then prefers n1. With a pod of required
    anti-affinity already on n1 at open (here against nothing web-0 matches), n1 is
    listed and web-0 goes to n2."""
    text = SESSION_PLACED_GUARD
    if listed:
        text += """- name: old
  job: keeper
  node: n1
  phase: Running
  requests: {cpu: 100m}
  affinity:
    podAntiAffinity:
      requiredDuringSchedulingIgnoredDuringExecution:
      - {labelSelector: {matchLabels: {app: db}}, topologyKey: kubernetes.io/hostname}
"""
    decisions = run_scenario(parse_scenario(yaml.safe_load(text)))
    assert decisions.binds == {"default/guard-0": "n1", "default/web-0": web}


def test_a_dry_run_takes_away_its_victims_anti_affinity_even_where_it_was_not_counted(
) -> None:
    """kube's RemovePod subtracts a victim's anti-affinity from the pre-filter's counts
    wherever the victim ran: a victim placed during the session on a node not listed at
    open (never counted) takes away another pod's count in the same zone."""
    zone_anti = _required_pod("podAntiAffinity", _term({"app": "web"}, "zone"))
    tasks = "\n".join([
        _pod("keeper", job="other", node="n2", affinity=zone_anti),
        _pod("guard", job="other", affinity=zone_anti),
        _pod("web", labels={"app": "web"}),
    ])
    nodes = TWO_NODES.replace("zone: b", "zone: a")
    ssn = _session(nodes, tasks)
    guard, web = task(ssn, "c1/guard"), task(ssn, "c1/web")
    Statement(ssn).allocate(guard, ssn.nodes["n1"])
    ssn.pre_predicate(web)
    blocked = [(UNSCHED, REASON_EXISTING_ANTI_AFFINITY_RULES)]
    assert reasons(ssn.predicate(web, ssn.nodes["n1"])) == blocked     # keeper's zone
    copy = ssn.nodes["n1"].clone()
    assert reasons(ssn.simulate_predicate(web, copy)) == blocked
    copy.remove_task(guard)
    assert ssn.simulate_predicate(web, copy) is None


def test_node_missing_from_the_view_is_an_error() -> None:
    ssn = _session(TWO_NODES, "- {name: p, namespace: c1, job: pg}")
    stranger = NodeInfo.create("n9", Resource.from_mapping({"pods": 10}))
    err = ssn.predicate(task(ssn, "c1/p"), stranger)
    assert reasons(err) == [(ERROR, "node info not found")]


def test_bad_affinity_on_a_programmatic_task_names_the_task() -> None:
    ssn = _session(TWO_NODES, "- {name: p, namespace: c1, job: pg}")
    required = "requiredDuringSchedulingIgnoredDuringExecution"
    bad = TaskInfo.create("c1", "bad", "c1/pg", Resource(),
                          affinity={"podAffinity": {required: [{"labelSelector": {}}]}})
    with pytest.raises(SchedulingError, match=r"task c1/bad: affinity\.podAffinity"):
        ssn.predicate(bad, ssn.nodes["n1"])


# -- the node view stays exact ---------------------------------------------------------------------

VIEW_NODES = """nodes:
- {name: n1, allocatable: {cpu: 64, memory: 64Gi, pods: 50}}
- {name: n2, allocatable: {cpu: 64, memory: 64Gi, pods: 50}}"""
VIEW_TASKS = "\n".join(
    f"- {{name: t{i}, namespace: c1, job: pg, requests: {{cpu: {i % 3}, memory: {i}Gi}},"
    f" hostPorts: [{8000 + i % 2}]}}" for i in range(6))


def _sums(ssn: Session) -> dict[str, tuple[int, int, int, int, int]]:
    out = {}
    for name, view in KubeView.of(ssn).nodes.items():
        out[name] = (len(view.pods), view.milli_cpu, view.memory, view.nonzero_milli_cpu,
                     sum(view.used_ports.values()))
    return out


@given(st.lists(st.tuples(st.integers(0, 5), st.sampled_from(["n1", "n2"])), max_size=6,
                unique_by=lambda pair: pair[0]),
       st.booleans())
@settings(max_examples=30, deadline=None)
def test_view_follows_placements_and_returns_after_discard(
        moves: list[tuple[int, str]], evict_first: bool) -> None:
    ssn = _session(VIEW_NODES, VIEW_TASKS)
    before = _sums(ssn)
    stmt = Statement(ssn)
    for index, node in moves:
        stmt.allocate(task(ssn, f"c1/t{index}"), ssn.nodes[node])
    for name, (count, *_rest) in _sums(ssn).items():
        assert count == len(ssn.nodes[name].tasks)
    if evict_first and moves:
        # Evicted: off the Kubernetes view at once, though still on the node (Releasing).
        index, node = moves[0]
        stmt.evict(task(ssn, f"c1/t{index}"), "test")
        assert _sums(ssn)[node][0] == len(ssn.nodes[node].tasks) - 1
    stmt.discard()
    assert _sums(ssn) == before


def test_without_its_pre_predicate_a_task_fails_with_volcano_s_error_unless_reported(
) -> None:
    """Volcano's filters after the stable ones read the pre-predicate's state from the
    task's cycle state: none yet, the first enabled one fails with an Error. A report
    (``Session.for_report``) computes the state instead, until a real pre-predicate."""
    tasks = "- {name: p, namespace: c1, job: pg, requests: {cpu: 1}}"
    ssn = _session(TWO_NODES, tasks)
    p, n1 = task(ssn, "c1/p"), ssn.nodes["n1"]
    assert reasons(ssn.predicate(p, n1)) == [
        (ERROR, 'reading "PreFilterNodePorts" from cycleState: not found')]
    with ssn.for_report():
        assert ssn.predicate(p, n1) is None
    assert ssn.predicate(p, n1) is not None
    ssn.pre_predicate(p)
    assert ssn.predicate(p, n1) is None
    # The first enabled of those filters answers; none enabled, DynamicResources does
    # (Volcano always registers it: the feature gate is on).
    ports_off = _session(TWO_NODES, tasks, {"predicate.NodePortsEnable": False})
    assert reasons(ports_off.predicate(task(ports_off, "c1/p"), ports_off.nodes["n1"])) == [
        (ERROR, 'error reading "PreFilterInterPodAffinity" from cycleState: not found')]
    none = _session(TWO_NODES, tasks, {
        "predicate.NodePortsEnable": False, "predicate.PodAffinityEnable": False,
        "predicate.PodTopologySpreadEnable": False, "predicate.VolumeBindingEnable": False})
    assert reasons(none.predicate(task(none, "c1/p"), none.nodes["n1"])) == [
        (ERROR, "not found")]


@pytest.mark.parametrize("arguments", [
    {"volumebinding.weight": "x"}, {"volumebinding.bindTimeoutSeconds": "600s"},
    {"volumebinding.bindTimeoutSeconds": -1},  # kube's volumebinding.New refuses it
    {"dynamicresources.filterTimeoutSeconds": "abc"}])
def test_arguments_volcano_stops_on_are_refused(arguments: dict[str, Any]) -> None:
    # Volcano reads them with framework.Get[int], which exits on a value that is no
    # number (klog.Fatalf).
    from batchsched.framework.arguments import Arguments
    from batchsched.plugins.predicates import PredicatesPlugin
    with pytest.raises(ValueError, match=next(iter(arguments))):
        PredicatesPlugin(Arguments(arguments))


def test_volcano_s_volume_binding_arguments_are_read_not_unknown(
        caplog: pytest.LogCaptureFixture) -> None:
    from batchsched.framework.arguments import Arguments
    from batchsched.plugins.predicates import PredicatesPlugin
    PredicatesPlugin(Arguments({"volumebinding.weight": 3,
                                "volumebinding.bindTimeoutSeconds": 600,
                                "dynamicresources.filterTimeoutSeconds": 2.5}))
    assert "ignoring" not in caplog.text
    # Volcano keeps its default for a negative DRA timeout, and reads no volume
    # binding argument with volume binding off.
    PredicatesPlugin(Arguments({"dynamicresources.filterTimeoutSeconds": -5,
                                "predicate.VolumeBindingEnable": False,
                                "volumebinding.bindTimeoutSeconds": -1}))


def test_topology_spread_leaves_out_a_pod_being_deleted_whatever_its_phase() -> None:
    # kube's countPodsMatchSelector skips every pod with a deletion timestamp; an
    # Unknown one keeps its status (Volcano's) but is not counted.
    doc = yaml.safe_load("""
version: 1
name: spread and a deleted pod of phase Unknown
config: {actions: "enqueue, allocate", tiers: [{plugins: [{name: gang}, {name: predicates}]}]}
nodes:
- {name: n1, allocatable: {cpu: 4, memory: 4Gi, pods: 10}, labels: {zone: a}}
- {name: n2, allocatable: {cpu: 1, memory: 4Gi, pods: 10}, labels: {zone: b}}
jobs: [{name: pg, namespace: c1, minMember: 1, phase: Inqueue}]
tasks:
- {name: r0, namespace: c1, node: n1, phase: Unknown, deleting: true, labels: {app: web},
   requests: {cpu: 1}}
- {name: p, namespace: c1, job: pg, labels: {app: web}, requests: {cpu: 2},
   topologySpreadConstraints: [{maxSkew: 1, topologyKey: zone,
     whenUnsatisfiable: DoNotSchedule, labelSelector: {matchLabels: {app: web}}}]}
""")
    assert run_scenario(parse_scenario(doc)).binds == {"c1/p": "n1"}
