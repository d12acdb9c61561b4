"""Resource claims over time: jobs whose pods ask for devices through claim templates (or
share a named claim) arrive, run, get preempted and finish. At every simulated instant
no device is allocated to two claims, every running pod's claims are allocated and
reserved for it with devices of its node, and a claim made for a pod is gone with it."""

from __future__ import annotations

import random
from collections import Counter
from pathlib import Path

import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from batchsched.api.types import TaskStatus
from batchsched.kube.dra.claims import claim_keys
from batchsched.simulation import Simulator
from batchsched.simulation.scenario_workload import scenario_workload

GPU = "gpu.example.com"
CONFIG = {
    "actions": "enqueue, allocate, preempt, backfill",
    "tiers": [
        {"plugins": [{"name": "priority"}, {"name": "gang"}, {"name": "conformance"}]},
        {"plugins": [{"name": "predicates"}, {"name": "proportion"}, {"name": "nodeorder"}]},
    ],
}
_PLACED = frozenset({TaskStatus.BINDING, TaskStatus.BOUND, TaskStatus.RUNNING})


def dra_workload(seed: int, jobs: int) -> dict[str, object]:
    rng = random.Random(seed)
    nodes, slices = [], []
    for n in range(3):
        nodes.append({"name": f"n{n}", "allocatable": {"cpu": 16, "memory": "64Gi", "pods": 20}})
        slices.append({"name": f"n{n}-gpus", "driver": GPU, "nodeName": f"n{n}",
                       "pool": {"name": f"n{n}", "generation": 1, "resourceSliceCount": 1},
                       "devices": [{"name": f"gpu-{g}", "attributes": {
                           "model": {"string": rng.choice(("a100", "h100"))}}}
                           for g in range(2)]})
    job_entries, tasks, templates, submit = [], [], [], 0
    for j in range(jobs):
        submit += rng.choice((0, 1, 5, 30))
        members = rng.choice((1, 1, 2))
        low = rng.random() < 0.6
        job_entries.append({"name": f"j{j}", "minMember": 1 if low else members,
                            "createdAt": submit, "priorityClassName": "low" if low else "high"})
        model = rng.choice(("a100", "h100", "any"))
        selectors = [] if model == "any" else [{"cel": {"expression":
                     f'device.attributes["{GPU}"].model == "{model}"'}}]
        templates.append({"name": f"j{j}-gpu", "requests": [{"name": "gpu", "exactly": {
            "deviceClassName": "gpu", "count": rng.choice((1, 1, 2)), "selectors": selectors}}]})
        for t in range(members):
            tasks.append({"name": f"j{j}-t{t}", "job": f"j{j}",
                          "priorityClassName": job_entries[-1]["priorityClassName"],
                          "requests": {"cpu": 1},
                          "annotations": {"batchsched.io/run-time": str(rng.choice((5, 20)))},
                          "resourceClaims": [{"name": "gpu",
                                              "resourceClaimTemplateName": f"j{j}-gpu"}]})
    return {"version": 1, "name": "dra replay", "config": CONFIG,
            "priorityClasses": [{"name": "low", "value": 1}, {"name": "high", "value": 100}],
            "deviceClasses": [{"name": "gpu", "selectors": [
                {"cel": {"expression": f'device.driver == "{GPU}"'}}]}],
            "resourceSlices": slices, "resourceClaimTemplates": templates,
            "nodes": nodes, "jobs": job_entries, "tasks": tasks}


def check_instant(sim: Simulator) -> None:
    claims = sim.cache.resource_claims
    devices = Counter(result.device_id for claim in claims.values()
                      if claim.allocation is not None for result in claim.allocation.results)
    assert all(count == 1 for count in devices.values()), (devices, sim.now)
    for job in sim.cache.jobs.values():
        for task in job.tasks.values():
            keys = claim_keys(task.namespace, task.name, task.resource_claims)
            if task.status not in _PLACED:
                continue
            assert keys, task.uid
            for key in keys:
                claim = claims[key]
                assert claim.allocation is not None, (key, sim.now)
                assert task.uid in claim.reserved_for, (key, sim.now)
                assert all(result.pool == task.node_name for result in claim.allocation.results)
    owners = {claim.owner for claim in claims.values() if claim.owner}
    live = {task.uid for job in sim.cache.jobs.values() for task in job.tasks.values()
            if task.status not in (TaskStatus.SUCCEEDED, TaskStatus.FAILED)}
    assert owners <= live, (owners - live, sim.now)


def replay(tmp_path: Path, seed: int, jobs: int, *, any_single_device: bool = False
           ) -> list[tuple[str, object, object]]:
    document = dra_workload(seed, jobs)
    if any_single_device:  # every job then fits the empty cluster
        for template in document["resourceClaimTemplates"]:  # type: ignore[attr-defined]
            template["requests"][0]["exactly"].update(count=1, selectors=[])
    path = tmp_path / f"dra-{seed}-{jobs}.yaml"
    path.write_text(yaml.safe_dump(document), encoding="utf-8")
    workload, scenario = scenario_workload(path)
    timeline = Simulator(workload, scenario.configuration, observe=check_instant).run()
    assert timeline.finished_count + len(timeline.never_started) == len(workload.jobs)
    return [(record.uid, record.start, record.end) for record in timeline.jobs.values()]


@settings(max_examples=10, deadline=None)
@given(seed=st.integers(0, 10_000), jobs=st.integers(1, 12))
def test_a_dra_replay_never_gives_a_device_twice(tmp_path_factory: object, seed: int,
                                                jobs: int) -> None:
    tmp_path = tmp_path_factory.mktemp("dra")  # type: ignore[attr-defined]
    first = replay(tmp_path, seed, jobs)
    assert replay(tmp_path, seed, jobs) == first  # deterministic


def test_every_job_that_fits_the_empty_cluster_finishes(tmp_path: Path) -> None:
    records = replay(tmp_path, 7, 12, any_single_device=True)
    assert all(end is not None for _, _, end in records)
