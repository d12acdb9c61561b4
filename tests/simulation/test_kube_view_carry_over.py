"""A replay's sessions share one Kubernetes node view and one array mirror of it, carried
from session to session (only the nodes that changed are viewed again): at every
session each must hold exactly what one built afresh over the session's nodes holds,
pods with labels, host ports and pod (anti-)affinity placed, preempted and finished
included."""

from __future__ import annotations

import random
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sim_support import replay_document

from batchsched.columnar.kube_columns import KubeColumns
from batchsched.columnar.node_columns import NodeColumns
from batchsched.framework.session import Session
from batchsched.kube.pod_view import KubeView
from batchsched.simulation import Simulator

CONFIG = {
    "actions": "enqueue, allocate, preempt, backfill",
    "tiers": [
        {"plugins": [{"name": "priority"}, {"name": "gang"}, {"name": "conformance"}]},
        {"plugins": [{"name": "predicates"}, {"name": "proportion"}, {"name": "nodeorder"}]},
    ],
}
HOSTNAME = "kubernetes.io/hostname"


def kube_workload(seed: int, jobs: int) -> dict[str, object]:
    """Jobs over time whose pods carry labels, host ports and pod (anti-)affinity, on
    nodes in two zones."""
    rng = random.Random(seed)
    nodes = [{"name": f"n{n}", "labels": {"zone": f"z{n % 2}", HOSTNAME: f"n{n}"},
              "allocatable": {"cpu": 4, "memory": "16Gi", "pods": 6}} for n in range(4)]
    job_entries, tasks, submit = [], [], 0
    for j in range(jobs):
        submit += rng.choice((0, 1, 5, 30))
        members = rng.choice((1, 2, 3))
        app = rng.choice(("web", "db", "batch"))
        low = rng.random() < 0.6
        job_entries.append({"name": f"j{j}", "minMember": 1 if low else members,
                            "createdAt": submit, "priorityClassName": "low" if low else "high"})
        for t in range(members):
            task: dict[str, Any] = {
                "name": f"j{j}-t{t}", "job": f"j{j}", "labels": {"app": app},
                "priorityClassName": job_entries[-1]["priorityClassName"],
                "requests": {"cpu": rng.choice((1, 2)), "memory": "2Gi"},
                "annotations": {"batchsched.io/run-time": str(rng.choice((5, 20, 60)))}}
            kind = rng.random()
            if kind < 0.25:
                task["affinity"] = {"podAntiAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": [
                        {"labelSelector": {"matchLabels": {"app": app}},
                         "topologyKey": HOSTNAME}]}}
            elif kind < 0.5:
                task["affinity"] = {"podAffinity": {
                    "preferredDuringSchedulingIgnoredDuringExecution": [
                        {"weight": 10, "podAffinityTerm": {
                            "labelSelector": {"matchLabels": {"app": rng.choice(("web", "db"))}},
                            "topologyKey": "zone"}}]}}
            elif kind < 0.6:
                task["hostPorts"] = [rng.choice((8080, 9090))]
            tasks.append(task)
    return {"version": 1, "name": "kube view replay", "config": CONFIG,
            "priorityClasses": [{"name": "low", "value": 1}, {"name": "high", "value": 100}],
            "nodes": nodes, "jobs": job_entries, "tasks": tasks}


def assert_same_view(carried: KubeView, fresh: KubeView) -> None:
    assert list(carried.nodes) == list(fresh.nodes)
    for name, view in fresh.nodes.items():
        mine = carried.nodes[name]
        assert mine.pods == view.pods, name
        assert (mine.milli_cpu, mine.memory, mine.gpu, mine.nonzero_milli_cpu,
                mine.nonzero_memory, mine.pods_with_affinity,
                mine.pods_with_required_anti_affinity) == (
            view.milli_cpu, view.memory, view.gpu, view.nonzero_milli_cpu,
            view.nonzero_memory, view.pods_with_affinity,
            view.pods_with_required_anti_affinity), name
        assert mine.used_ports == view.used_ports, name
    assert carried._where == fresh._where
    for index in ("_all", "_by_label"):
        assert getattr(carried.placed, index) == getattr(fresh.placed, index), index
    for terms in ("_anti", "_preferred"):
        mine_terms, fresh_terms = getattr(carried.placed, terms), getattr(fresh.placed, terms)
        assert mine_terms._by_anchor == fresh_terms._by_anchor, terms
        assert mine_terms._unanchored == fresh_terms._unanchored, terms
    assert carried.affinity_nodes_at_open == fresh.affinity_nodes_at_open
    assert carried.anti_affinity_nodes_at_open == fresh.anti_affinity_nodes_at_open


def replay_checking(tmp_path: Path, seed: int, jobs: int, *, owner: type[Any], method: str,
                    check: Callable[[Any, Any], None], feed: bool = True) -> None:
    """Replay the workload of ``seed`` with each session's ``owner.method(ssn)`` (a
    class method handing out carried objects) checked by ``check(obj, ssn)``; at
    least one object must have been carried over when several sessions asked.
    Without ``feed``, sessions do not tell which nodes have new copies (as a cache
    that does not count its snapshots): every node is looked at."""
    built = getattr(owner, method).__func__
    handed: list[object] = []

    def checked(cls: type[Any], ssn: Any) -> Any:
        obj = built(cls, ssn)
        check(obj, ssn)
        handed.append(obj)
        return obj

    def check_instant(sim: Simulator) -> None:
        for node in sim.cache.nodes.values():
            node.check_invariants()

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(owner, method, classmethod(checked))
        if not feed:
            patch.setattr(Session, "nodes_renewed_since", lambda self, serial: None)
        records, _ = replay_document(tmp_path, f"kube-{seed}-{jobs}.yaml",
                                     kube_workload(seed, jobs), check_instant,
                                     cycles_stop=True)
    assert records
    if len(handed) > 1:
        assert len({id(obj) for obj in handed}) < len(handed)  # carried over


@settings(max_examples=10, deadline=None)
@given(seed=st.integers(0, 10_000), jobs=st.integers(1, 15), feed=st.booleans())
def test_a_carried_kube_view_equals_a_fresh_one(tmp_path_factory: Any, seed: int,
                                                jobs: int, feed: bool) -> None:
    def check(view: KubeView, ssn: Any) -> None:
        assert_same_view(view, KubeView(ssn.nodes))

    replay_checking(tmp_path_factory.mktemp("kube-view"), seed, jobs, owner=KubeView,
                    method="_carried_or_built", check=check, feed=feed)


@settings(max_examples=10, deadline=None)
@given(seed=st.integers(0, 10_000), jobs=st.integers(1, 15), feed=st.booleans())
def test_a_carried_kube_mirror_equals_a_fresh_one(tmp_path_factory: Any, seed: int,
                                                  jobs: int, feed: bool) -> None:
    def check(mirror: KubeColumns, ssn: Any) -> None:
        mirror.sync()
        fresh = KubeColumns(mirror.view, mirror.columns)
        for name in ("_figures", "room", "max_pods", "allocatable"):
            np.testing.assert_array_equal(getattr(mirror, name), getattr(fresh, name), name)
        assert mirror.port_nodes == fresh.port_nodes
        assert (mirror.exact, mirror.cpu_memory_everywhere, mirror.cpu_memory_small) == (
            fresh.exact, fresh.cpu_memory_everywhere, fresh.cpu_memory_small)
        for key in ("zone", HOSTNAME):
            assert mirror.labels(key).values == fresh.labels(key).values
            np.testing.assert_array_equal(mirror.labels(key).codes, fresh.labels(key).codes)

    replay_checking(tmp_path_factory.mktemp("kube-columns"), seed, jobs, owner=KubeColumns,
                    method="of", check=check, feed=feed)


def test_a_view_an_open_session_reads_is_not_carried_into_another() -> None:
    """Two sessions open at once on one cache: the second builds a view and node
    columns of its own."""
    from batchsched.api.node import NodeInfo
    from batchsched.api.resource import Resource
    from batchsched.cache.memory import MemoryCache
    from batchsched.conf import configuration_from_text

    cache = MemoryCache(incremental_snapshots=True)
    cache.add_node(NodeInfo.create("n1", Resource.from_mapping({"cpu": 4, "pods": 10})))
    configuration = configuration_from_text("""
actions: allocate
tiers:
- plugins:
  - name: predicates
""")
    first = Session.open(cache, configuration)
    second = Session.open(cache, configuration)
    assert KubeView.of(first) is not KubeView.of(second)
    assert NodeColumns.of(first) is not NodeColumns.of(second)
    second.close()
    first.close()
    third = Session.open(cache, configuration)
    assert KubeView.of(third) in (KubeView.of(first), KubeView.of(second))
    third.close()


def test_a_node_whose_labels_or_allocatable_moved_gets_a_fresh_mirror() -> None:
    """The arrays of what does not move within a replay (allocatable, label codes) are
    made again when a node update changed them between two sessions."""
    from batchsched.api.node import NodeInfo
    from batchsched.api.resource import Resource
    from batchsched.cache.memory import MemoryCache
    from batchsched.conf import configuration_from_text

    def node(name: str, zone: str, pods: int) -> NodeInfo:
        return NodeInfo.create(name, Resource.from_mapping({"cpu": 4, "pods": pods}),
                               labels={"zone": zone})

    configuration = configuration_from_text("""
actions: allocate
tiers:
- plugins:
  - name: predicates
""")
    cache = MemoryCache(incremental_snapshots=True)
    cache.add_node(node("n1", "a", 10))
    cache.add_node(node("n2", "a", 10))

    def mirror() -> KubeColumns:
        ssn = Session.open(cache, configuration)
        columns = KubeColumns.of(ssn)
        fresh = KubeColumns(columns.view, columns.columns)
        np.testing.assert_array_equal(columns.max_pods, fresh.max_pods)
        np.testing.assert_array_equal(columns.labels("zone").codes, fresh.labels("zone").codes)
        ssn.close()
        return columns

    first = mirror()
    assert mirror() is first  # nothing moved: carried over
    cache.add_node(node("n2", "b", 10))
    assert mirror().labels("zone").equal("b").tolist() == [False, True]
    cache.add_node(node("n1", "a", 3))
    assert mirror().max_pods.tolist() == [3, 10]


@settings(max_examples=8, deadline=None)
@given(seed=st.integers(0, 10_000), jobs=st.integers(5, 20))
def test_carried_state_decides_as_full_copies(tmp_path_factory: Any, seed: int,
                                              jobs: int) -> None:
    """The same replay with sessions on full copies of the cluster (nothing carried
    over) starts and ends every job at the same instants."""
    import yaml

    from batchsched.simulation.scenario_workload import scenario_workload

    path = tmp_path_factory.mktemp("kube-decisions") / "workload.yaml"
    path.write_text(yaml.safe_dump(kube_workload(seed, jobs)), encoding="utf-8")
    timelines = []
    for incremental in (True, False):
        workload, scenario = scenario_workload(path)
        timeline = Simulator(workload.without_oversized(scenario.configuration),
                             scenario.configuration,
                             incremental_snapshots=incremental).run()
        timelines.append([(r.uid, r.start, r.end) for r in timeline.jobs.values()])
    assert timelines[0] == timelines[1]
