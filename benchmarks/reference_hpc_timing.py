"""Time the reference simulator's own Table V heuristics, per replayed job.

The simulation issue measures ``batchsched simulate`` against a lean special-purpose
simulator, either one written here (``lean_hpc_sim.py``) or the reference's own
heuristics timed. This script does the second: it imports RLScheduler's environment
from a checkout of DIR-LAB/deep-batch-scheduler given on the command line (nothing of
it is copied here), runs ``HPCEnv.schedule_curr_sequence_reset`` with each heuristic
score on the Table V sequences, and prints the mean bounded slowdown (which must be
the published value) and the process time per replayed job.

The environment module imports tensorflow, gym and scipy at the top for its RL parts;
the heuristic path never calls them, so they are stood in for by empty modules when
they are not installed. Only the reference's own ``job.py``, ``cluster.py`` and
``HPCSimPickJobs.py`` run.

Usage::

    python benchmarks/reference_hpc_timing.py REFERENCE_CHECKOUT TRACE.swf \\
        [--starts 1981,2756,...] [--length 1024] [--json]
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import importlib.util
import io
import json
import sys
import time
import types
from pathlib import Path
from typing import Any

from lean_hpc_sim import DEFAULT_LENGTH, DEFAULT_STARTS, POLICIES, PUBLISHED_LUBLIN_256

#: The reference's score function of each Table V heuristic.
SCORES = {"fcfs": "fcfs_score", "wfp3": "wfp_score", "unicep": "uni_score",
          "sjf": "sjf_score", "f1": "f1_score"}


def _stand_in_for_rl_imports() -> None:
    """Empty modules for the RL-only imports that are not installed."""

    class _Space:
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            pass

    def stand_in(name: str, **attributes: Any) -> types.ModuleType:
        module = types.ModuleType(name)
        module.__dict__.update(attributes)
        sys.modules[name] = module
        return module

    if importlib.util.find_spec("tensorflow") is None:
        stand_in("tensorflow")
    if importlib.util.find_spec("scipy") is None:
        stand_in("scipy", signal=stand_in("scipy.signal"))
    if importlib.util.find_spec("gym") is None:
        spaces = stand_in("gym.spaces", Box=_Space, Discrete=_Space)
        utils = stand_in("gym.utils", seeding=stand_in("gym.utils.seeding"))
        stand_in("gym", Env=type("Env", (), {}), spaces=spaces, utils=utils)


def run(checkout: Path, trace: Path, starts: list[int], length: int) -> list[dict[str, Any]]:
    _stand_in_for_rl_imports()
    sys.path.insert(0, str(checkout))
    hpc = importlib.import_module("HPCSimPickJobs")
    rows = []
    for backfill in (False, True):
        with contextlib.redirect_stdout(io.StringIO()):  # it prints as it loads
            env = hpc.HPCEnv(backfil=backfill, job_score_type=0, batch_job_slice=0,
                             build_sjf=False)
            env.my_init(workload_file=str(trace))
        for policy in POLICIES:
            score = getattr(env, SCORES[policy])
            seconds, values = 0.0, []
            for start in starts:
                # What the reference's reset does for a chosen start (its own reset draws
                # the start at random).
                env.start = env.start_idx_last_reset = start
                env.num_job_in_batch = length
                env.last_job_in_batch = start + length
                env.current_timestamp = env.loads[start].submit_time
                env.job_queue = [env.loads[start]]
                env.next_arriving_job_idx = start + 1
                began = time.process_time()
                logs = env.schedule_curr_sequence_reset(score)
                seconds += time.process_time() - began
                values.append(sum(logs.values()))
            published = PUBLISHED_LUBLIN_256.get(policy, (None, None))[int(backfill)]
            rows.append({
                "policy": policy, "backfill": backfill,
                "bsld": sum(values) / len(values), "published": published,
                "seconds": seconds, "usPerJob": seconds / (len(starts) * length) * 1e6,
            })
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("checkout", type=Path, help="a checkout of DIR-LAB/deep-batch-scheduler")
    parser.add_argument("trace", type=Path, help="an SWF trace (e.g. lublin_256.swf)")
    parser.add_argument("--starts", default=",".join(map(str, DEFAULT_STARTS)))
    parser.add_argument("--length", type=int, default=DEFAULT_LENGTH)
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    args = parser.parse_args(argv)
    starts = [int(s) for s in args.starts.split(",")]
    rows = run(args.checkout, args.trace, starts, args.length)
    total_seconds = sum(row["seconds"] for row in rows)
    jobs = len(rows) * len(starts) * args.length
    if args.json:
        print(json.dumps({"rows": rows, "seconds": total_seconds,
                          "usPerJob": total_seconds / jobs * 1e6}))
        return 0
    print("| cell | mean bsld | published | process s | us per job |")
    print("|---|---:|---:|---:|---:|")
    for row in rows:
        cell = f"{row['policy']}/{'backfill' if row['backfill'] else 'no-backfill'}"
        published = "" if row["published"] is None else f"{row['published']:.2f}"
        print(f"| {cell} | {row['bsld']:.2f} | {published} | {row['seconds']:.2f} | "
              f"{row['usPerJob']:.1f} |")
    print(f"\nall cells: {total_seconds:.1f} s of process time, "
          f"{total_seconds / jobs * 1e6:.1f} us per replayed job")
    return 0


if __name__ == "__main__":
    sys.exit(main())
