"""Ascend vNPU workloads over time: jobs arrive, share cards, get preempted and finish;
at every simulated instant the cards the running pods' annotations name fit each card
(sharing count, memory, cores), and replays are deterministic."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st
from sim_support import replay_document

from batchsched.api.ascend import allocated_annotation, decode_devices
from batchsched.api.types import TaskStatus
from batchsched.simulation import Simulator
from batchsched.simulation.scenario_workload import scenario_workload

CONFIG = {
    "actions": "enqueue, allocate, preempt, backfill",
    "tiers": [
        {"plugins": [{"name": "priority"}, {"name": "gang"}, {"name": "conformance"}]},
        {"plugins": [{"name": "predicates"}, {"name": "proportion"},
                     {"name": "deviceshare", "arguments": {
                         "deviceshare.AscendHAMiVNPUEnable": True,
                         "deviceshare.SchedulePolicy": "binpack",
                         "deviceshare.ScheduleWeight": 10}}]},
    ],
}
SHARING, MEMORY, CORES = 4, 21527, 8
KEY = allocated_annotation("Ascend310P")


def vnpu_workload(seed: int, jobs: int) -> dict[str, object]:
    rng = random.Random(seed)
    nodes = []
    for n in range(2):
        register = json.dumps([{"id": f"npu-{n}-{c}", "count": SHARING, "devmem": MEMORY,
                                "devcore": CORES} for c in range(2)])
        annotations = {"hami.io/node-register-Ascend310P": register}
        if n == 1:
            annotations["hami-vnpu-core"] = "true"
        nodes.append({"name": f"n{n}", "allocatable": {
            "cpu": 32, "memory": "128Gi", "pods": 50, "huawei.com/Ascend310P": 2 * SHARING},
            "annotations": annotations})
    job_entries, tasks, submit = [], [], 0
    for j in range(jobs):
        submit += rng.choice((0, 1, 5, 30))
        members = rng.choice((1, 1, 2))
        low = rng.random() < 0.6
        job_entries.append({"name": f"j{j}", "minMember": 1 if low else members,
                            "createdAt": submit, "priorityClassName": "low" if low else "high"})
        for t in range(members):
            requests: dict[str, object] = {"cpu": 1}
            annotations = {"batchsched.io/run-time": str(rng.choice((5, 20, 60)))}
            kind = rng.choice(("template", "template", "whole", "core"))
            if kind == "whole":
                requests["huawei.com/Ascend310P"] = rng.choice((1, 2))
            else:
                requests["huawei.com/Ascend310P"] = 1
                requests["huawei.com/Ascend310P-memory"] = rng.choice((1000, 4096, 7000, 13000))
            if kind == "core":
                annotations["huawei.com/vnpu-mode"] = "hami-core"
                requests["huawei.com/Ascend310P-core"] = rng.choice((10, 50, 100))
            tasks.append({"name": f"j{j}-t{t}", "job": f"j{j}",
                          "priorityClassName": job_entries[-1]["priorityClassName"],
                          "requests": requests, "annotations": annotations})
    return {"version": 1, "name": "vnpu replay", "config": CONFIG,
            "priorityClasses": [{"name": "low", "value": 1}, {"name": "high", "value": 100}],
            "nodes": nodes, "jobs": job_entries, "tasks": tasks}


def check_instant(sim: Simulator) -> None:
    for node in sim.cache.nodes.values():
        node.check_invariants()
        used: dict[str, list[int]] = {}
        for task in node.tasks.values():
            if task.status in (TaskStatus.RELEASING, TaskStatus.PIPELINED):
                continue
            for card in decode_devices(task.annotations.get(KEY, "")):
                assert card.uuid.startswith(f"npu-{node.name[1:]}-"), (task.uid, card)
                figures = used.setdefault(card.uuid, [0, 0, 0])
                figures[0] += 1
                figures[1] += card.memory
                figures[2] += card.cores
        for uuid, (pods, memory, cores) in used.items():
            assert pods <= SHARING, (uuid, sim.now)
            assert memory <= MEMORY, (uuid, sim.now)
            assert cores <= 100, (uuid, sim.now)


def replay(tmp_path: Path, seed: int, jobs: int) -> list[tuple[str, object, object]]:
    records, fitting = replay_document(tmp_path, f"vnpu-{seed}-{jobs}.yaml",
                                       vnpu_workload(seed, jobs), check_instant)
    # Every job fits the empty cluster once the cards' memory and cores are theirs.
    assert not fitting.skipped
    return records


@settings(max_examples=10, deadline=None)
@given(seed=st.integers(0, 10_000), jobs=st.integers(1, 15))
def test_a_vnpu_replay_keeps_every_card_within_bounds(tmp_path_factory: object, seed: int,
                                                      jobs: int) -> None:
    tmp_path = tmp_path_factory.mktemp("vnpu")  # type: ignore[attr-defined]
    first = replay(tmp_path, seed, jobs)
    assert replay(tmp_path, seed, jobs) == first  # deterministic


def test_the_oversized_check_opens_no_plugin(tmp_path: Path,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """Plugins are asked what they hide, not opened: a plugin that talks to something
    outside (an extender) sees no session the replay does not run."""
    from batchsched.framework.session import Session

    path = tmp_path / "w.yaml"
    path.write_text(yaml.safe_dump(vnpu_workload(3, 6)), encoding="utf-8")
    workload, scenario = scenario_workload(path)

    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("a session was opened")

    monkeypatch.setattr(Session, "open", refuse)
    fitting = workload.without_oversized(scenario.configuration)
    assert len(fitting.jobs) == 6 and not fitting.skipped
