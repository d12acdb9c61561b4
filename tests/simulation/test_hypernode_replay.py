"""Network-topology workloads over time: jobs confined to hypernodes arrive, run,
grow and finish; at every simulated instant each hard job's running tasks lie within
one hypernode of a tier it allows, and the replay is deterministic."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from batchsched.api.hypernode import build_topology
from batchsched.api.types import ALLOCATED_STATUSES
from batchsched.simulation import Simulator
from batchsched.simulation.scenario_workload import scenario_workload

CONFIG = {
    "actions": "enqueue, allocate, backfill",
    "tiers": [
        {"plugins": [{"name": "priority"}, {"name": "gang"}, {"name": "conformance"}]},
        {"plugins": [{"name": "predicates"}, {"name": "proportion"}, {"name": "binpack"},
                     {"name": "network-topology-aware"}]},
    ],
}


def member(kind: str, name: str) -> dict[str, Any]:
    return {"type": kind, "selector": {"exactMatch": {"name": name}}}


def topology_workload(seed: int, jobs: int) -> dict[str, Any]:
    rng = random.Random(seed)
    # Four racks of three nodes (tier 1), two rows of two racks (tier 2).
    nodes = [{"name": f"r{r}-n{n}", "allocatable": {"cpu": 4, "memory": "16Gi", "pods": 20}}
             for r in range(4) for n in range(3)]
    hyper_nodes = [{"name": f"rack{r}", "tier": 1,
                    "members": [member("Node", f"r{r}-n{n}") for n in range(3)]}
                   for r in range(4)]
    hyper_nodes += [{"name": f"row{w}", "tier": 2,
                     "members": [member("HyperNode", f"rack{2 * w + k}") for k in range(2)]}
                    for w in range(2)]
    entries, tasks, submit = [], [], 0
    for j in range(jobs):
        submit += rng.choice((0, 1, 10))
        members = rng.choice((1, 2, 3, 4, 6))
        entry: dict[str, Any] = {"name": f"j{j}", "minMember": rng.choice((1, members)),
                                 "createdAt": submit}
        mode = rng.choice(("hard", "soft", None))
        if mode == "hard":
            entry["networkTopology"] = {"mode": "hard", "highestTierAllowed": rng.choice((1, 2))}
        elif mode == "soft":
            entry["networkTopology"] = {"mode": "soft"}
        entries.append(entry)
        for t in range(members):
            tasks.append({"name": f"j{j}-t{t}", "job": f"j{j}",
                          "requests": {"cpu": rng.choice((1, 2, 4)), "memory": "1Gi"},
                          "annotations": {"batchsched.io/run-time": str(rng.choice((5, 20, 60)))}})
    return {"version": 1, "name": "topology replay", "config": CONFIG, "nodes": nodes,
            "hyperNodes": hyper_nodes, "jobs": entries, "tasks": tasks}


def check_instant(sim: Simulator) -> None:
    cache = sim.cache
    topology = build_topology(tuple(cache.hyper_nodes.values()), list(cache.nodes.values()))
    for job in cache.jobs.values():
        spec = job.podgroup.network_topology
        if spec is None or spec.hard_tier() is None:
            continue
        placed = {task.node_name for status in ALLOCATED_STATUSES
                  for task in job.tasks_in(status).values()}
        if not placed:
            continue
        within = [name for name in topology.tiers_of
                  if placed <= topology.real_nodes.get(name, frozenset())]
        lowest = min(topology.tier(name) for name in within)
        assert lowest <= spec.hard_tier(), (job.uid, placed, sim.now)
        for node in cache.nodes.values():
            node.check_invariants()


def replay(tmp_path: Path, seed: int, jobs: int) -> list[tuple[str, object, object]]:
    path = tmp_path / f"topology-{seed}-{jobs}.yaml"
    path.write_text(yaml.safe_dump(topology_workload(seed, jobs)), encoding="utf-8")
    workload, scenario = scenario_workload(path)
    fitting = workload.without_oversized()
    timeline = Simulator(fitting, scenario.configuration, observe=check_instant).run()
    assert timeline.finished_count + len(timeline.never_started) == len(fitting.jobs)
    return [(record.uid, record.start, record.end) for record in timeline.jobs.values()]


@settings(max_examples=10, deadline=None)
@given(seed=st.integers(0, 10_000), jobs=st.integers(1, 15))
def test_hard_jobs_stay_within_their_tier_at_every_instant(tmp_path_factory: Any, seed: int,
                                                           jobs: int) -> None:
    tmp_path = tmp_path_factory.mktemp("topology")
    first = replay(tmp_path, seed, jobs)
    assert replay(tmp_path, seed, jobs) == first
