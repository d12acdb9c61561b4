"""Reproduce RLScheduler's Table V (SC'20) through ``batchsched simulate``, side by side.

For each policy (FCFS, WFP3, UNICEP, SJF, F1), without and with EASY
backfilling, every sequence (1024 jobs from each start position) is replayed by
the command line, ``batchsched simulate TRACE --config CONF --first-job K
--jobs 1024 --output json``, and the cell is the mean of the sequences'
average bounded slowdowns. Two rule sets are run: ``reference`` (the reference
simulator's rules, as documented compatibility options) and ``batchsched``
(batchsched's own). The lean special-purpose simulator (``lean_hpc_sim.py``)
runs the same cells in the same run, for the cost per replayed job; with
``--reference-checkout DIR`` (a checkout of DIR-LAB/deep-batch-scheduler) the
reference simulator's own heuristics are timed too (``reference_hpc_timing.py``).

Usage::

    python benchmarks/simulation_table.py ../shared/data/swf/lublin_256.swf \\
        [--rules reference,batchsched] [--workers 2] [--out benchmarks/simulation_results]

Any SWF trace works; ``--published`` compares with Table V's Lublin-1 row only
when the trace is lublin_256.swf.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

HERE = Path(__file__).parent
CONFIGS = HERE / "simulation"
POLICIES = ("fcfs", "wfp3", "unicep", "sjf", "f1")
STARTS = (1981, 2756, 4299, 8850, 3316, 2714, 5228, 7762, 4022, 7085)
#: RLScheduler, SC'20, Table V, Lublin-1 (average bounded slowdown).
PUBLISHED = {
    "lublin_256.swf": {
        ("fcfs", False): 7273.77, ("wfp3", False): 19753.53, ("unicep", False): 22274.74,
        ("sjf", False): 277.35, ("f1", False): 258.37,
        ("fcfs", True): 235.82, ("wfp3", True): 133.87, ("unicep", True): 307.23,
        ("sjf", True): 73.31, ("f1", True): 75.07,
    },
}


def config_path(rules: str, policy: str, backfill: bool) -> Path:
    return CONFIGS / rules / f"{policy}{'-backfill' if backfill else ''}.yaml"


def run_sequence(job: tuple[str, str, str, bool, int, int]) -> dict[str, Any]:
    trace, rules, policy, backfill, start, length = job
    command = [sys.executable, "-m", "batchsched", "simulate", trace,
               "--config", str(config_path(rules, policy, backfill)),
               "--first-job", str(start), "--jobs", str(length), "--output", "json",
               "--no-progress"]
    began = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    seconds = time.perf_counter() - began
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(command)} failed: {done.stderr.strip()}")
    data = json.loads(done.stdout)
    return {"rules": rules, "policy": policy, "backfill": backfill, "start": start,
            "bsld": data["metrics"]["averageBoundedSlowdown"], "seconds": seconds,
            "sessions": data["sessions"], "jobs": data["jobs"]}


def lean_cells(trace: str, length: int, starts: tuple[int, ...]) -> dict[str, Any]:
    done = subprocess.run(
        [sys.executable, str(HERE / "lean_hpc_sim.py"), trace, "--json", "--length", str(length),
         "--starts", ",".join(map(str, starts))],
        capture_output=True, text=True, check=True)
    result: dict[str, Any] = json.loads(done.stdout)
    return result


def reference_cells(checkout: str, trace: str, length: int,
                    starts: tuple[int, ...]) -> dict[str, Any]:
    done = subprocess.run(
        [sys.executable, str(HERE / "reference_hpc_timing.py"), checkout, trace, "--json",
         "--length", str(length), "--starts", ",".join(map(str, starts))],
        capture_output=True, text=True, check=True)
    result: dict[str, Any] = json.loads(done.stdout)
    return result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("trace")
    parser.add_argument("--rules", default="reference,batchsched")
    parser.add_argument("--policies", default=",".join(POLICIES))
    parser.add_argument("--length", type=int, default=1024)
    parser.add_argument("--starts", default=",".join(map(str, STARTS)),
                        help="comma-separated 0-based start positions of the sequences")
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--out", default=str(HERE / "simulation_results"))
    parser.add_argument("--reference-checkout", default=None,
                        help="a checkout of DIR-LAB/deep-batch-scheduler: time its heuristics")
    args = parser.parse_args()
    name = Path(args.trace).name
    starts = tuple(int(start) for start in args.starts.split(","))
    jobs = [(args.trace, rules, policy, backfill, start, args.length)
            for rules in args.rules.split(",") for backfill in (False, True)
            for policy in args.policies.split(",") for start in starts]
    began = time.perf_counter()
    # Each finished sequence is also appended to OUT.jsonl at once: a long run that is
    # stopped keeps what it finished.
    progress = Path(args.out).with_suffix(".jsonl")
    runs = []
    with ProcessPoolExecutor(max_workers=args.workers) as pool, progress.open("a") as log:
        for run in pool.map(run_sequence, jobs):
            runs.append(run)
            log.write(json.dumps(run) + "\n")
            log.flush()
    wall = time.perf_counter() - began
    lean_began = time.perf_counter()
    lean = lean_cells(args.trace, args.length, starts)
    lean_wall = time.perf_counter() - lean_began
    cells: dict[str, dict[str, Any]] = {}
    for run in runs:
        key = f"{run['rules']}/{run['policy']}/{'backfill' if run['backfill'] else 'no-backfill'}"
        cell = cells.setdefault(key, {"sequences": [], "seconds": 0.0, "sessions": 0})
        cell["sequences"].append(run["bsld"])
        cell["seconds"] += run["seconds"]
        cell["sessions"] += run["sessions"]
    published = PUBLISHED.get(name, {})
    for key, cell in cells.items():
        _, policy, kind = key.split("/")
        # A sequence in which no job finished has no average (null): left out.
        finished = [value for value in cell["sequences"] if value is not None]
        cell["bsld"] = statistics.fmean(finished) if finished else None
        reference = published.get((policy, kind == "backfill"))
        if reference is not None and starts == STARTS and cell["bsld"] is not None:
            cell["published"] = reference
            cell["relativeError"] = abs(cell["bsld"] - reference) / reference
    replayed = len(runs) * args.length
    cpu_seconds = sum(run["seconds"] for run in runs)
    result = {
        "trace": name, "length": args.length, "starts": starts, "workers": args.workers,
        "command": "batchsched simulate TRACE --config benchmarks/simulation/RULES/POLICY.yaml "
                   f"--first-job K --jobs {args.length} --output json",
        "cells": cells, "wallSeconds": wall, "processSeconds": cpu_seconds,
        "secondsPerReplayedJob": cpu_seconds / replayed,
        "lean": {"cells": lean["cells"], "wallSeconds": lean_wall,
                 "secondsPerReplayedJob": lean["us_per_job"] / 1e6},
    }
    result["ratioToLean"] = result["secondsPerReplayedJob"] / result["lean"][
        "secondsPerReplayedJob"]
    if args.reference_checkout:
        reference = reference_cells(args.reference_checkout, args.trace, args.length, starts)
        result["reference"] = {"cells": reference["rows"],
                               "secondsPerReplayedJob": reference["usPerJob"] / 1e6}
        result["ratioToReference"] = (result["secondsPerReplayedJob"]
                                      / result["reference"]["secondsPerReplayedJob"])
    out = Path(args.out)
    out.with_suffix(".json").write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
    print(json.dumps({k: (v["bsld"], v.get("published")) for k, v in cells.items()}, indent=1))
    print(f"wall {wall:.0f} s, {result['secondsPerReplayedJob'] * 1e6:.0f} us per replayed job, "
          f"{result['ratioToLean']:.0f}x the lean simulator"
          + (f", {result['ratioToReference']:.0f}x the reference's heuristics"
             if "ratioToReference" in result else ""))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
