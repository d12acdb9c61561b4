"""The node plugins' template functions (what the fast path's windows worked out ahead
rely on) and the pod view they read: equal for tasks the plugins answer alike,
different as soon as something a vectorised answer reads differs, None when an
answer depends on more than the task and the node."""

from __future__ import annotations

from typing import Any

import yaml
from node_support import document, open_session, plugin, task

from batchsched.framework.session import Session
from batchsched.kube.pod_view import ANY_IP, KubeView, pod_info
from batchsched.plugins.nodeorder import NodeOrderPlugin

NODES = """
nodes:
- {name: n1, allocatable: {cpu: 4, memory: 8Gi, pods: 10}, labels: {zone: a}}
- {name: n2, allocatable: {cpu: 4, memory: 8Gi, pods: 10}, labels: {zone: b}}
jobs: [{name: pg, namespace: c1}]
"""
PREFER_NO_SCHEDULE = """
nodes:
- {name: n1, allocatable: {cpu: 4, memory: 8Gi, pods: 10}}
- {name: n2, allocatable: {cpu: 4, memory: 8Gi, pods: 10},
   taints: [{key: k, value: v, effect: PreferNoSchedule}]}
jobs: [{name: pg, namespace: c1}]
"""


def _session(nodes: str, *tasks: dict[str, Any]) -> Session:
    entries = [{"namespace": "c1", "job": "pg", **t} for t in tasks]
    body = nodes + "tasks:\n" + "\n".join(
        "- " + yaml.safe_dump(e, default_flow_style=True).strip() for e in entries)
    return open_session(document(body, plugin("predicates"), plugin("nodeorder")))


def _nodeorder(ssn: Session) -> NodeOrderPlugin:
    found = [p for p in ssn.plugins.values() if isinstance(p, NodeOrderPlugin)]
    assert len(found) == 1
    return found[0]


def test_nodeorder_template_tells_apart_what_the_scores_read() -> None:
    ssn = _session(
        NODES,
        {"name": "a", "requests": {"cpu": "1", "memory": "1Gi"}},
        {"name": "b", "requests": {"cpu": "1", "memory": "1Gi"}},
        {"name": "c", "requests": {"cpu": "2", "memory": "1Gi"}},
        # No cpu request counts as 100m for spreading, not for balance: not the same.
        {"name": "d", "requests": {"memory": "1Gi"}},
        {"name": "e", "requests": {"cpu": "100m", "memory": "1Gi"}},
        {"name": "f", "requests": {"cpu": "1", "memory": "1Gi"}, "images": ["busybox"]},
    )
    template = _nodeorder(ssn).vector_template
    a, b, c, d, e, f = (template(task(ssn, f"c1/{n}")) for n in "abcdef")
    assert a is not None and a == b
    assert len({a, c, d, e, f}) == 5


def test_nodeorder_template_declines_normalised_scores() -> None:
    preferred = {"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
        {"weight": 1, "preference": {"matchExpressions": [
            {"key": "zone", "operator": "In", "values": ["a"]}]}}]}}
    ssn = _session(NODES, {"name": "p", "affinity": preferred})
    assert _nodeorder(ssn).vector_template(task(ssn, "c1/p")) is None

    tolerating = [{"key": "k", "operator": "Exists", "effect": "PreferNoSchedule"}]
    ssn = _session(PREFER_NO_SCHEDULE, {"name": "plain"},
                   {"name": "tolerating", "tolerations": tolerating})
    template = _nodeorder(ssn).vector_template
    # Untolerated PreferNoSchedule taints are normalised over the candidates.
    assert template(task(ssn, "c1/plain")) is None
    assert template(task(ssn, "c1/tolerating")) is not None


def test_pod_info_without_and_with_affinity() -> None:
    anti = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
        {"labelSelector": {"matchLabels": {"app": "x"}}, "topologyKey": "zone"}]}}
    ssn = _session(NODES, {"name": "plain", "hostPorts": [8080]},
                   {"name": "anti", "labels": {"app": "x"}, "affinity": anti})
    plain = pod_info(task(ssn, "c1/plain"))
    assert plain.host_ports == ((ANY_IP, "TCP", 8080),)
    assert (plain.required_affinity, plain.required_anti_affinity, plain.preferred_affinity,
            plain.preferred_anti_affinity) == ((), (), (), ())
    assert not plain.has_pod_affinity
    anti_pod = KubeView.of(ssn).pod(task(ssn, "c1/anti"))
    assert anti_pod.host_ports == ()
    assert [t.topology_key for t in anti_pod.required_anti_affinity] == ["zone"]
    assert anti_pod.required_anti_affinity[0].namespaces == frozenset({"c1"})
    assert anti_pod.has_pod_affinity
