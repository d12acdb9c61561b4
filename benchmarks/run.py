"""Time one scheduling session on large generated workloads, with and without the fast path.

Usage (from the repository root, with the package installed)::

    python benchmarks/run.py                                  # the default matrix
    python benchmarks/run.py --sizes 1000x10000 10000x50000   # NODESxTASKS
    python benchmarks/run.py --scalar-sizes 1000x2000 --repeat 3 --floor FLOOR.py

For every size the harness writes a workload (:mod:`workload`, into a
temporary directory unless ``--workdir`` is given), then runs, each in a fresh
Python process:

* ``measure`` with the fast path (``BATCHSCHED_FAST_PATH=1``): the scenario is
  loaded, a session opened, its actions run and the session closed, exactly as
  ``batchsched run FILE --output json`` does, with a clock around each phase;
  the decisions (the JSON the CLI would print) are hashed;
* the same with the fast path off (``BATCHSCHED_FAST_PATH=0``) for the sizes of
  ``--scalar-sizes`` (the reference path is slow), checking that both paths
  produced byte-identical decisions;
* for ``--end-to-end`` sizes, the command ``batchsched run FILE --output json``
  itself, timed from outside (whole process: interpreter start, imports,
  loading, session, JSON output), and, given ``--floor SCRIPT``, that script on
  the same file right after, so both are measured side by side. The package's
  modules are compiled to bytecode first, as ``pip install`` leaves them.

Reported: tasks placed per second over the allocate action and over the whole
session (open to close), the session wall time and its phases, and the
end-to-end process times. Results go to ``--results`` (``.json`` and ``.md``),
headed by a line describing the machine. Benchmarks are not part of the test
suite.
"""

from __future__ import annotations

import argparse
import gc
import hashlib
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from workload import make_workload  # noqa: E402

DEFAULT_SIZES = ["1000x2000", "1000x10000", "1000x50000", "10000x2000", "10000x10000",
                 "10000x50000", "10000x100000", "50000x2000", "50000x50000", "50000x100000"]
DEFAULT_SCALAR_SIZES = ["1000x2000", "10000x2000", "50000x2000", "10000x50000"]
DEFAULT_END_TO_END = ["10000x50000"]


# -- one measurement, in its own process ----------------------------------------------------------


def measure(path: str) -> dict[str, Any]:
    """Run one session on the scenario at ``path`` the way ``batchsched run`` does, timing
    each phase; return the timings, the number of binds and a hash of the decisions."""
    started = time.perf_counter()
    gc.disable()  # as `batchsched run` does
    from batchsched.api.types import TaskStatus
    from batchsched.columnar.selector import fast_path_enabled
    from batchsched.framework.registry import default_registry
    from batchsched.framework.session import Session
    from batchsched.scenario import load_scenario
    from batchsched.scenario.json_output import dumps_decisions
    from batchsched.scenario.runner import Decisions, ScenarioCache, _status_counts

    imported = time.perf_counter()
    scenario = load_scenario(path)
    loaded = time.perf_counter()
    cache = ScenarioCache(scenario.to_cluster(copy=False))
    ssn = Session.open(cache, scenario.configuration)
    opened = time.perf_counter()
    registry = ssn.registry or default_registry()
    actions: dict[str, float] = {}
    for name in ssn.configuration.actions:
        begin = time.perf_counter()
        action = registry.create_action(name, ssn.configuration.action_arguments(name))
        action.initialize()
        action.execute(ssn)
        action.uninitialize()
        actions[name] = time.perf_counter() - begin
    acted = time.perf_counter()
    pipelined: dict[str, dict[str, str]] = {}
    for job in ssn.jobs.values():
        tasks = job.tasks_in(TaskStatus.PIPELINED)
        if tasks:
            pipelined[job.uid] = {uid: t.node_name for uid, t in sorted(tasks.items())}
    counts = {uid: _status_counts(job.task_status_index) for uid, job in sorted(ssn.jobs.items())}
    ssn.close()
    closed = time.perf_counter()
    decisions = Decisions(
        binds={b.task: b.node for b in cache.binds},
        evicted=[e.task for e in cache.evictions],
        pipelined=pipelined,
        pod_group_phases={uid: str(job.podgroup.phase) for uid, job in sorted(ssn.jobs.items())},
        task_status_counts=counts,
        events=[e.to_dict() for e in ssn.events],
    )
    text = dumps_decisions(decisions.to_json()) + "\n"  # the CLI's writer
    written = time.perf_counter()
    return {
        "fast_path": fast_path_enabled(),
        "binds": len(cache.binds),
        "tasks": sum(len(job.tasks) for job in ssn.jobs.values()),
        "nodes": len(ssn.nodes),
        "decisions_sha256": hashlib.sha256(text.encode()).hexdigest(),
        "seconds": {
            "import": imported - started,
            "load": loaded - imported,
            "open": opened - loaded,
            **{f"action:{name}": t for name, t in actions.items()},
            "close": closed - acted,
            "session": closed - loaded,
            "output": written - closed,
        },
    }


# -- the harness ---------------------------------------------------------------------------------


def machine() -> str:
    """One line describing the machine: cores, CPU model, Python and numpy versions."""
    model = platform.processor() or "unknown CPU"
    try:
        for line in subprocess.run(["lscpu"], capture_output=True, text=True,
                                   check=False).stdout.splitlines():
            if line.startswith("Model name:"):
                model = line.split(":", 1)[1].strip()
    except OSError:
        pass
    import numpy

    return (f"{os.cpu_count()} cores, {model}, {platform.system()} {platform.machine()}, "
            f"Python {platform.python_version()}, numpy {numpy.__version__}")


def parse_size(text: str) -> tuple[int, int]:
    nodes, tasks = text.lower().split("x")
    return int(nodes), int(tasks)


def run_measure(path: Path, fast: bool) -> dict[str, Any]:
    env = dict(os.environ, BATCHSCHED_FAST_PATH="1" if fast else "0",
               BATCHSCHED_DISABLE_PLUGIN_AUTOLOAD="1")
    begin = time.perf_counter()
    done = subprocess.run([sys.executable, str(Path(__file__)), "--measure", str(path)],
                          capture_output=True, text=True, env=env, check=True)
    result: dict[str, Any] = json.loads(done.stdout)
    result["process_seconds"] = time.perf_counter() - begin
    return result


def compile_package() -> None:
    """Compile the package's modules to bytecode, as ``pip install`` does, before the
    end-to-end runs: an editable install under ``PYTHONDONTWRITEBYTECODE`` would
    otherwise compile every module at every start, which no installed package does."""
    import batchsched

    package = Path(batchsched.__file__).parent
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(package)],
                   stdout=subprocess.DEVNULL, check=True)


def timed(command: list[str], env: dict[str, str] | None = None) -> float:
    begin = time.perf_counter()
    subprocess.run(command, stdout=subprocess.DEVNULL, check=True, env=env)
    return time.perf_counter() - begin


def workload_file(workdir: Path, nodes: int, tasks: int) -> Path:
    path = workdir / f"bench-{nodes}-{tasks}.json"
    if not path.exists():
        path.write_text(json.dumps(make_workload(nodes, tasks)))
    return path


def summarize(result: dict[str, Any]) -> dict[str, Any]:
    seconds = result["seconds"]
    allocate = seconds.get("action:allocate", 0.0)
    session = seconds["session"]
    return {
        "binds": result["binds"],
        "allocate_seconds": allocate,
        "session_seconds": session,
        "tasks_per_second_allocate": result["binds"] / allocate if allocate else 0.0,
        "tasks_per_second_session": result["binds"] / session if session else 0.0,
        "load_seconds": seconds["load"],
        "output_seconds": seconds["output"],
        "process_seconds": result["process_seconds"],
        "decisions_sha256": result["decisions_sha256"],
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--measure", help=argparse.SUPPRESS)
    parser.add_argument("--sizes", nargs="*", default=DEFAULT_SIZES, metavar="NODESxTASKS")
    parser.add_argument("--scalar-sizes", nargs="*", default=DEFAULT_SCALAR_SIZES,
                        metavar="NODESxTASKS", help="also run these with the fast path off")
    parser.add_argument("--end-to-end", nargs="*", default=DEFAULT_END_TO_END,
                        metavar="NODESxTASKS", help="time `batchsched run` on these")
    parser.add_argument("--floor", help="a script timed side by side with `batchsched run`")
    parser.add_argument("--repeat", type=int, default=1, help="runs per measurement (median)")
    parser.add_argument("--end-to-end-repeat", type=int, default=3,
                        help="alternating runs of `batchsched run` and the floor (median)")
    parser.add_argument("--workdir", help="where workloads are written (default: a temp dir)")
    parser.add_argument("--results", default=str(HERE / "results"),
                        help="results path without extension (.json and .md are written)")
    args = parser.parse_args(argv)
    if args.measure:
        print(json.dumps(measure(args.measure)))
        return 0

    with tempfile.TemporaryDirectory(prefix="batchsched-bench-") as scratch:
        workdir = Path(args.workdir or scratch)
        workdir.mkdir(parents=True, exist_ok=True)
        report: dict[str, Any] = {"machine": machine(), "fast": {}, "scalar": {},
                                  "end_to_end": {}}
        print(report["machine"], flush=True)
        for label, sizes, fast in (("fast", args.sizes, True),
                                   ("scalar", args.scalar_sizes, False)):
            for size in sizes:
                nodes, tasks = parse_size(size)
                path = workload_file(workdir, nodes, tasks)
                runs = [summarize(run_measure(path, fast)) for _ in range(args.repeat)]
                best = sorted(runs, key=lambda r: r["session_seconds"])[len(runs) // 2]
                report[label][size] = best
                print(f"{label:6s} {size:>14s}: {best['binds']:7d} binds, allocate "
                      f"{best['allocate_seconds']:8.2f}s ({best['tasks_per_second_allocate']:8.0f}"
                      f" tasks/s), session {best['session_seconds']:8.2f}s", flush=True)
        for size in args.scalar_sizes:
            if size in report["fast"]:
                same = (report["fast"][size]["decisions_sha256"]
                        == report["scalar"][size]["decisions_sha256"])
                report["scalar"][size]["same_decisions_as_fast"] = same
        if args.end_to_end:
            compile_package()
        for size in args.end_to_end:
            nodes, tasks = parse_size(size)
            path = workload_file(workdir, nodes, tasks)
            ours, floor = [], []
            env = dict(os.environ, BATCHSCHED_DISABLE_PLUGIN_AUTOLOAD="1")
            for _ in range(args.end_to_end_repeat):
                ours.append(timed([sys.executable, "-m", "batchsched", "run", str(path),
                                   "--output", "json"], env))
                if args.floor:
                    floor.append(timed([sys.executable, args.floor, str(path)]))
            entry = {"batchsched_run_seconds": statistics.median(ours), "runs": ours}
            if floor:
                entry["floor_seconds"] = statistics.median(floor)
                entry["floor_runs"] = floor
                entry["ratio"] = entry["batchsched_run_seconds"] / entry["floor_seconds"]
            entry["tasks_per_second_end_to_end"] = tasks / entry["batchsched_run_seconds"]
            report["end_to_end"][size] = entry
            print(f"end-to-end {size}: {json.dumps(entry)}", flush=True)
    results = Path(args.results)
    results.with_suffix(".json").write_text(json.dumps(report, indent=1) + "\n")
    results.with_suffix(".md").write_text(markdown(report))
    return 0


def markdown(report: dict[str, Any]) -> str:
    lines = ["# Benchmark results", "", f"Machine: {report['machine']}", "",
             "Workload: `benchmarks/workload.py` (Volcano's default configuration plus binpack, "
             "gang jobs over 4 queues). One session each, in a fresh process.", ""]
    for label, title in (("fast", "Fast path (default)"), ("scalar", "Reference path "
                                                                      "(BATCHSCHED_FAST_PATH=0)")):
        if not report[label]:
            continue
        lines += [f"## {title}", "",
                  "| nodes x tasks | binds | allocate s | tasks/s (allocate) | session s | "
                  "tasks/s (session) | load s | output s |",
                  "|---|---:|---:|---:|---:|---:|---:|---:|"]
        for size, r in report[label].items():
            lines.append(
                f"| {size} | {r['binds']} | {r['allocate_seconds']:.2f} | "
                f"{r['tasks_per_second_allocate']:.0f} | {r['session_seconds']:.2f} | "
                f"{r['tasks_per_second_session']:.0f} | {r['load_seconds']:.2f} | "
                f"{r['output_seconds']:.2f} |")
        lines.append("")
    same = {size: r.get("same_decisions_as_fast") for size, r in report["scalar"].items()
            if "same_decisions_as_fast" in r}
    if same:
        lines += ["Same decisions (byte-identical JSON) on both paths: "
                  + ", ".join(f"{s}: {'yes' if v else 'NO'}" for s, v in same.items()), ""]
    if report["end_to_end"]:
        lines += ["## End to end: `batchsched run FILE --output json`", "",
                  "Whole processes, timed from outside, alternating with the floor script "
                  "(given with `--floor`) on the same file; medians.", "",
                  "| nodes x tasks | batchsched run s | floor s | ratio | tasks/s end to end |",
                  "|---|---:|---:|---:|---:|"]
        for size, e in report["end_to_end"].items():
            floor = f"{e['floor_seconds']:.2f}" if "floor_seconds" in e else "-"
            ratio = f"{e['ratio']:.2f}" if "ratio" in e else "-"
            lines.append(f"| {size} | {e['batchsched_run_seconds']:.2f} | {floor} | {ratio} | "
                         f"{e['tasks_per_second_end_to_end']:.0f} |")
        lines.append("")
    return "\n".join(lines)


if __name__ == "__main__":
    raise SystemExit(main())
