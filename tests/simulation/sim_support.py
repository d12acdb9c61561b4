"""Small workloads for the simulation tests, made here (the real traces are not shipped)."""

from __future__ import annotations

import random
from collections.abc import Callable
from pathlib import Path

import yaml

from batchsched.simulation import Simulator
from batchsched.simulation.scenario_workload import scenario_workload
from batchsched.simulation.workload import Workload

HEADER = "; Version: 2\n; MaxNodes: {nodes}\n; MaxProcs: {procs}\n"


def swf_line(job_id: int, submit: int, run: int, procs: int, requested: int = -1) -> str:
    fields = [job_id, submit, -1, run, procs, -1, -1, -1, requested, -1, 1, -1, -1, -1, 0, -1,
              -1, -1]
    return " ".join(str(field) for field in fields)


def random_swf(seed: int, jobs: int, nodes: int = 16, *, estimates: bool = False,
               simultaneous: bool = True, per_node: int = 1, unknown_runs: bool = False) -> str:
    """A synthetic trace: bursts of arrivals, wide and narrow jobs, ties in submit time
    (unless ``simultaneous`` is false: then every job arrives at a time of its own).
    ``per_node`` processors per node (MaxProcs = per_node x MaxNodes); with
    ``unknown_runs`` some jobs give -1 for both run and requested time."""
    rng = random.Random(seed)
    lines = [HEADER.format(nodes=nodes, procs=nodes * per_node).rstrip("\n")]
    submit = 0
    gaps = (0, 0, 1, 5, 30, 120, 600) if simultaneous else (1, 2, 5, 30, 120, 600)
    for job_id in range(1, jobs + 1):
        submit += rng.choice(gaps)
        run = rng.choice((1, 5, 10, 60, 300, 1800))
        procs = rng.choice((1, 1, 2, 3, 4, nodes // 2, nodes)) * per_node - rng.choice(
            (0, per_node - 1))
        requested = run * rng.choice((1, 2, 3)) if estimates else -1
        if unknown_runs and rng.random() < 0.2:
            run = requested = -1
        lines.append(swf_line(job_id, submit, run, procs, requested))
    return "\n".join(lines) + "\n"


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


STRICT = """
actions: "strict-allocate"
tiers:
- plugins:
  - name: gang
  - name: {policy}
"""

BACKFILL = """
actions: "strict-allocate, easy-backfill"
tiers:
- plugins:
  - name: gang
  - name: {policy}
"""


def document_simulator(tmp_path: Path, name: str, document: dict[str, object],
                       observe: Callable[[Simulator], None] | None = None) -> Simulator:
    """A simulator of a scenario workload (written to ``tmp_path / name``), less the
    jobs that could never start under its configuration."""
    path = tmp_path / name
    path.write_text(yaml.safe_dump(document), encoding="utf-8")
    workload, scenario = scenario_workload(path)
    return Simulator(workload.without_oversized(scenario.configuration),
                     scenario.configuration, observe=observe)


def replay_document(tmp_path: Path, name: str, document: dict[str, object],
                    observe: Callable[[Simulator], None], *, cycles_stop: bool = False
                    ) -> tuple[list[tuple[str, object, object]], Workload]:
    """Replay a scenario workload (written to ``tmp_path / name``) with ``observe`` at
    every instant, less the jobs that could never start under its configuration; the
    start and end of every job, and the workload replayed. Every job replayed either
    finishes or is reported as never started; with ``cycles_stop``, unless the replay
    stopped on jobs evicting each other for ever (Volcano's cyclic evictions, which a
    configuration with preempt may reach: the simulator reports them and stops)."""
    simulator = document_simulator(tmp_path, name, document, observe)
    fitting = simulator.workload
    timeline = simulator.run()
    if cycles_stop and simulator.stopped_looping:
        # Some job was left behind, and the report says so.
        assert timeline.finished_count < len(fitting.jobs)
        assert timeline.unfinished or timeline.never_started
    else:
        assert not simulator.stopped_looping
        assert timeline.finished_count + len(timeline.never_started) == len(fitting.jobs)
    return [(record.uid, record.start, record.end) for record in timeline.jobs.values()], fitting
