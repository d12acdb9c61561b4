"""vGPU workloads over time: jobs arrive, share GPUs, get preempted and finish; at every
simulated instant each node's vGPU ledger adds up from the tasks it holds and no GPU
is over its memory, cores or sharing count."""

from __future__ import annotations

import logging
import random
from pathlib import Path

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from sim_support import document_simulator, replay_document

from batchsched.simulation import Simulator

CONFIG = {
    "actions": "enqueue, allocate, preempt, backfill",
    "tiers": [
        {"plugins": [{"name": "priority"}, {"name": "gang"}, {"name": "conformance"}]},
        {"plugins": [{"name": "predicates"}, {"name": "proportion"},
                     {"name": "deviceshare", "arguments": {
                         "deviceshare.VGPUEnable": True,
                         "deviceshare.SchedulePolicy": "binpack",
                         "deviceshare.ScheduleWeight": 10}}]},
    ],
}


def vgpu_workload(seed: int, jobs: int) -> dict[str, object]:
    rng = random.Random(seed)
    nodes = []
    for n in range(2):
        gpus = 2
        register = "".join(f"GPU-{n}-{g},4,16384,NVIDIA-A10,true,hami-core:"
                           for g in range(gpus))
        nodes.append({"name": f"n{n}", "allocatable": {
            "cpu": 32, "memory": "128Gi", "pods": 50, "volcano.sh/vgpu-number": gpus * 4,
            "volcano.sh/vgpu-memory": gpus * 16384, "volcano.sh/vgpu-cores": gpus * 100},
            "annotations": {"volcano.sh/node-vgpu-register": register}})
    job_entries, tasks, submit = [], [], 0
    for j in range(jobs):
        submit += rng.choice((0, 1, 5, 30))
        members = rng.choice((1, 1, 2, 3))
        low = rng.random() < 0.6
        # Low-priority jobs run elastic (minMember 1), so preemption may take members.
        job_entries.append({"name": f"j{j}", "minMember": 1 if low else members,
                            "createdAt": submit, "priorityClassName": "low" if low else "high",
                            "annotations": {"batchsched.io/restart": rng.choice(("gang",
                                                                                 "task"))}})
        for t in range(members):
            requests = {"cpu": 1, "volcano.sh/vgpu-number": rng.choice((1, 1, 2)),
                        "volcano.sh/vgpu-memory": rng.choice((2048, 4096, 8192)),
                        "volcano.sh/vgpu-cores": rng.choice((0, 25, 50, 100))}
            annotations = {"batchsched.io/run-time": str(rng.choice((5, 20, 60)))}
            if rng.random() < 0.3:
                annotations["volcano.sh/vgpu-podgroup-policy"] = "spread"
            tasks.append({"name": f"j{j}-t{t}", "job": f"j{j}",
                          "priorityClassName": job_entries[-1]["priorityClassName"],
                          "requests": requests, "annotations": annotations})
    return {"version": 1, "name": "vgpu replay", "config": CONFIG,
            "priorityClasses": [{"name": "low", "value": 1}, {"name": "high", "value": 100}],
            "nodes": nodes, "jobs": job_entries, "tasks": tasks}


def check_instant(sim: Simulator) -> None:
    for node in sim.cache.nodes.values():
        node.check_invariants()
        assert node.vgpu is not None
        for device in node.vgpu.devices.values():
            assert device.used_memory <= device.memory, (node.name, device.uuid, sim.now)
            assert device.used_cores <= 100, (node.name, device.uuid, sim.now)
            assert device.used_num <= device.number, (node.name, device.uuid, sim.now)


def replay(tmp_path: Path, seed: int, jobs: int) -> list[tuple[str, object, object]]:
    records, _ = replay_document(tmp_path, f"vgpu-{seed}-{jobs}.yaml",
                                 vgpu_workload(seed, jobs), check_instant, cycles_stop=True)
    return records


@settings(max_examples=10, deadline=None)
@given(seed=st.integers(0, 10_000), jobs=st.integers(1, 15))
@example(seed=316, jobs=11)  # a discarded preemption's nomination once stalled the replay
@example(seed=1125, jobs=9)  # an eviction cycle Volcano makes too (see test below)
def test_a_vgpu_replay_keeps_every_gpu_within_bounds(tmp_path_factory: object, seed: int,
                                                     jobs: int) -> None:
    tmp_path = tmp_path_factory.mktemp("vgpu")  # type: ignore[attr-defined]
    first = replay(tmp_path, seed, jobs)
    assert replay(tmp_path, seed, jobs) == first  # deterministic


def test_a_vgpu_eviction_cycle_stops_the_replay_and_is_reported(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """Volcano's cyclic evictions, found by the property above: a high-priority gang
    (j8, minMember 3, one member asking a GPU of its own with ``spread``) fits n0 only
    with its three members on the node's two GPUs in one arrangement; preempt evicts a
    low-priority pod there and pipelines the gang in that arrangement, but allocate's
    member-by-member GPU choice (binpack) finds no such arrangement in the next session,
    and the evicted pod's restart takes its place back; preempt then evicts the other
    low-priority pod, and so on. Volcano decides the same at each session (its allocate
    keeps no pipelined task across sessions): the simulator reports the cycle and stops
    instead of looping."""
    simulator = document_simulator(tmp_path, "cycle.yaml", vgpu_workload(1125, 9))
    with caplog.at_level(logging.WARNING, logger="batchsched"):
        timeline = simulator.run()
    assert simulator.stopped_looping
    assert timeline.end == 83
    assert "default/j8" in timeline.never_started
    assert any("lost 100 runs to evictions while no job finished, at t=83" in message
               for message in caplog.messages)
