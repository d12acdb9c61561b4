"""What recording for explanations costs: one session with and without a Recorder.

Usage (from the repository root, with the package installed)::

    python benchmarks/explain_overhead.py [--size 10000x50000] [--repeat 3]

The workload is the headline one (:mod:`workload`: NODES identical nodes,
TASKS pending tasks in gangs, Volcano's default configuration plus binpack).
Each measurement runs in a fresh process, alternating off and on: the scenario
is loaded, then a session is opened (with ``recorder=Recorder()`` or without),
its actions run and it is closed, timed from open to close. The decisions of
both are hashed and must be equal. Reported: the median session time of each
and the overhead of recording. Benchmarks are not part of the test suite.
"""

from __future__ import annotations

import argparse
import gc
import hashlib
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))


def measure(path: str, record: bool) -> dict[str, Any]:
    gc.disable()  # as `batchsched run` does
    from batchsched.framework.recording import Recorder
    from batchsched.framework.session import Session
    from batchsched.scenario import load_scenario
    from batchsched.scenario.runner import ScenarioCache
    from batchsched.scheduler import run_actions

    scenario = load_scenario(path)
    cache = ScenarioCache(scenario.to_cluster(copy=False))
    recorder = Recorder() if record else None
    began = time.perf_counter()
    ssn = Session.open(cache, scenario.configuration, recorder=recorder)
    run_actions(ssn)
    ssn.close()
    seconds = time.perf_counter() - began
    binds = "\n".join(f"{b.task} {b.node}" for b in cache.binds)
    return {"seconds": seconds, "binds": len(cache.binds),
            "answers": sum(len(a) for a in recorder.answers.values()) if recorder else 0,
            "sha256": hashlib.sha256(binds.encode()).hexdigest()}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", default="10000x50000", help="NODESxTASKS")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--measure", nargs=2, metavar=("PATH", "on|off"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.measure:
        print(json.dumps(measure(args.measure[0], args.measure[1] == "on")))
        return 0
    from workload import make_workload

    nodes, tasks = (int(x) for x in args.size.split("x"))
    with tempfile.TemporaryDirectory() as workdir:
        path = Path(workdir) / "workload.json"
        path.write_text(json.dumps(make_workload(nodes, tasks)))
        runs: dict[str, list[dict[str, Any]]] = {"off": [], "on": []}
        for _ in range(args.repeat):
            for mode in ("off", "on"):
                done = subprocess.run(
                    [sys.executable, __file__, "--measure", str(path), mode],
                    capture_output=True, text=True, check=True)
                runs[mode].append(json.loads(done.stdout))
    hashes = {r["sha256"] for mode in runs for r in runs[mode]}
    off = statistics.median(r["seconds"] for r in runs["off"])
    on = statistics.median(r["seconds"] for r in runs["on"])
    print(f"{nodes} nodes x {tasks} tasks, {args.repeat} runs each, "
          f"{runs['on'][0]['binds']} binds, {runs['on'][0]['answers']} answers recorded")
    print(f"session without recorder: {off:.3f} s (median)")
    print(f"session with recorder:    {on:.3f} s (median), overhead {100 * (on / off - 1):+.1f}%")
    print("decisions identical" if len(hashes) == 1 else "DECISIONS DIFFER")
    return 0 if len(hashes) == 1 else 1


if __name__ == "__main__":
    raise SystemExit(main())
