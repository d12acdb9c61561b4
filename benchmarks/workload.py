"""Benchmark workloads: large clusters and many pending gang jobs, as scenario documents.

``make_workload(nodes, tasks)`` builds a scenario (the format of
``docs/scenario-format.md``): ``nodes`` identical nodes (32 cpu, 128Gi, 110 pods,
eight zones), ``tasks`` pending tasks in gang jobs of 1, 2, 4 or 8 tasks
(minMember = job size) spread round-robin over four queues of weights 1 to 4,
each job with one request shape (cpu 500m/1/2/4, memory 1/2/4/8Gi) and a
low or high priority class, all Inqueue; the configuration is Volcano's
default plus binpack, with the actions enqueue, allocate, backfill. The same
arguments and seed always give the same document.

Run ``python benchmarks/workload.py NODES TASKS OUT.json [SEED]`` to write one.
Workloads are generated, never committed.
"""

from __future__ import annotations

import json
import random
import sys
from typing import Any

__all__ = ["VOLCANO_DEFAULT_WITH_BINPACK", "make_workload"]

VOLCANO_DEFAULT_WITH_BINPACK: dict[str, Any] = {
    "actions": "enqueue, allocate, backfill",
    "tiers": [
        {"plugins": [{"name": "priority"}, {"name": "gang"}, {"name": "conformance"}]},
        {"plugins": [{"name": "overcommit"}, {"name": "drf"}, {"name": "predicates"},
                     {"name": "proportion"}, {"name": "nodeorder"}, {"name": "binpack"}]},
    ],
}


def make_workload(nodes: int, tasks: int, seed: int = 7) -> dict[str, Any]:
    """The scenario document described in the module docstring."""
    rng = random.Random(seed)
    node_docs = [{"name": f"node-{i:05d}",
                  "allocatable": {"cpu": 32, "memory": "128Gi", "pods": 110},
                  "labels": {"zone": f"z{i % 8}"}} for i in range(nodes)]
    queues = [{"name": f"q{i}", "weight": i + 1} for i in range(4)]
    jobs: list[dict[str, Any]] = []
    task_docs: list[dict[str, Any]] = []
    placed = 0
    while placed < tasks:
        size = min(rng.choice([1, 2, 4, 8]), tasks - placed)
        cpu = rng.choice(["500m", "1", "2", "4"])
        memory = rng.choice(["1Gi", "2Gi", "4Gi", "8Gi"])
        name = f"job-{len(jobs):06d}"
        jobs.append({"name": name, "namespace": "bench", "queue": f"q{len(jobs) % 4}",
                     "minMember": size, "phase": "Inqueue",
                     "priorityClassName": rng.choice(["low", "high"])})
        task_docs.extend({"name": f"{name}-t-{k}", "namespace": "bench", "job": name,
                          "requests": {"cpu": cpu, "memory": memory}} for k in range(size))
        placed += size
    return {"version": 1, "name": f"benchmark {nodes} nodes {tasks} tasks",
            "config": VOLCANO_DEFAULT_WITH_BINPACK,
            "priorityClasses": [{"name": "low", "value": 10}, {"name": "high", "value": 1000}],
            "queues": queues, "nodes": node_docs, "jobs": jobs, "tasks": task_docs}


def main(argv: list[str]) -> int:
    if len(argv) not in (3, 4):
        print("usage: workload.py NODES TASKS OUT.json [SEED]", file=sys.stderr)
        return 2
    document = make_workload(int(argv[0]), int(argv[1]), int(argv[3]) if len(argv) > 3 else 7)
    with open(argv[2], "w") as out:
        json.dump(document, out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
