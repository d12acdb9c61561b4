"""The placed-pod index finds exactly the inter-pod affinity counts a full scan finds."""

from __future__ import annotations

import random
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from batchsched.api.task import TaskInfo
from batchsched.kube.pod_index import PlacedPodIndex
from batchsched.kube.pod_view import PodInfo, pod_info
from batchsched.plugins.predicates import (
    indexed_inter_pod_affinity_counts,
    inter_pod_affinity_counts,
)

KEYS = ("app", "tier", "team")
VALUES = ("a", "b", "c")
TOPOLOGY = ("zone", "kubernetes.io/hostname", "rack")


def _requirement(rng: random.Random) -> dict[str, Any]:
    operator = rng.choice(["In", "In", "NotIn", "Exists", "DoesNotExist"])
    requirement: dict[str, Any] = {"key": rng.choice(KEYS), "operator": operator}
    if operator in ("In", "NotIn"):
        requirement["values"] = rng.sample(VALUES, rng.randint(1, 2))
    return requirement


def _term(rng: random.Random) -> dict[str, Any]:
    selector: dict[str, Any] = {}
    if rng.random() < 0.7:
        selector["matchLabels"] = {rng.choice(KEYS): rng.choice(VALUES)}
    if rng.random() < 0.4:
        selector["matchExpressions"] = [_requirement(rng) for _ in range(rng.randint(1, 2))]
    term: dict[str, Any] = {"labelSelector": selector, "topologyKey": rng.choice(TOPOLOGY)}
    if rng.random() < 0.2:
        term["namespaces"] = rng.sample(["ns1", "ns2"], rng.randint(1, 2))
    return term


def _pod(rng: random.Random, name: str) -> PodInfo:
    labels = {key: rng.choice(VALUES) for key in KEYS if rng.random() < 0.6}
    affinity: dict[str, Any] = {}
    for kind in ("podAffinity", "podAntiAffinity"):
        if rng.random() < 0.5:
            affinity[kind] = {"requiredDuringSchedulingIgnoredDuringExecution": [
                _term(rng) for _ in range(rng.randint(1, 2))]}
        if rng.random() < 0.4:
            affinity.setdefault(kind, {})["preferredDuringSchedulingIgnoredDuringExecution"] = [
                {"weight": rng.randint(1, 100), "podAffinityTerm": _term(rng)}]
    task = TaskInfo.create(rng.choice(["ns1", "ns2"]), name, "ns1/job", labels=labels,
                           affinity=affinity or None)
    return pod_info(task)


def _node_labels(rng: random.Random, name: str) -> dict[str, str]:
    labels = {"kubernetes.io/hostname": name}
    if rng.random() < 0.8:
        labels["zone"] = rng.choice(["z0", "z1"])
    if rng.random() < 0.5:
        labels["rack"] = rng.choice(["r0", "r1", "r2"])
    return labels


@settings(max_examples=150, deadline=None)
@given(seed=st.integers(0, 2**32), pods=st.integers(0, 40), nodes=st.integers(1, 8))
def test_indexed_counts_equal_a_full_scan(seed: int, pods: int, nodes: int) -> None:
    rng = random.Random(seed)
    node_labels = {f"n{i}": _node_labels(rng, f"n{i}") for i in range(nodes)}
    index = PlacedPodIndex()
    placed: dict[str, tuple[PodInfo, str]] = {}
    for k in range(pods):
        pod, node = _pod(rng, f"p{k}"), rng.choice(sorted(node_labels))
        index.add(pod, node)
        placed[pod.uid] = (pod, node)
    for uid in rng.sample(sorted(placed), len(placed) // 4):  # some leave again
        index.remove(placed.pop(uid)[0])
    for k in range(5):
        incoming = _pod(rng, f"new{k}")
        scan = inter_pod_affinity_counts(
            incoming, [(node_labels[node], pod) for pod, node in placed.values()])
        indexed = indexed_inter_pod_affinity_counts(incoming, index, node_labels.__getitem__)
        assert +indexed.existing_anti == +scan.existing_anti
        assert +indexed.affinity == +scan.affinity
        assert +indexed.anti == +scan.anti


@settings(max_examples=100, deadline=None)
@given(seed=st.integers(0, 2**32), pods=st.integers(0, 40))
def test_the_index_returns_every_pod_and_term_that_matches(seed: int, pods: int) -> None:
    rng = random.Random(seed)
    index = PlacedPodIndex()
    placed = [_pod(rng, f"p{k}") for k in range(pods)]
    for pod in placed:
        index.add(pod, "n0")
    for k in range(5):
        incoming = _pod(rng, f"new{k}")
        for weighted in (*incoming.preferred_affinity, *incoming.preferred_anti_affinity):
            term = weighted.term
            found = {pod.uid for pod, _ in index.selected_by(term)}
            assert {p.uid for p in placed if term.matches(p.namespace, p.labels)} <= found
        expected = {
            (pod.uid, term, sign * w.weight)
            for pod in placed
            for sign, terms in ((1, pod.preferred_affinity), (-1, pod.preferred_anti_affinity))
            for w in terms for term in (w.term,)
            if term.matches(incoming.namespace, incoming.labels)
        }
        found_terms = {(pod.uid, term, weight) for term, weight, _, pod
                       in index.preferred_terms_selecting(incoming.labels)}
        assert expected <= found_terms
