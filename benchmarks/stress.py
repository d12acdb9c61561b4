"""Every action at scale, each beside the numpy floor measured in the same run.

Usage (from the repository root, with the package installed)::

    python benchmarks/stress.py --generator ../shared/tools/gen_stress.py \\
        --floor ../shared/tools/floor.py [--only preempt,affinity] [--out benchmarks/stress_results]

For each workload kind and size the generator writes a scenario (``gen_stress.py
KIND SIZE OUT.json``: preempt, reclaim, enqueue, affinity), then, each in a
fresh process and right after each other:

* ``batchsched run FILE --output json`` (the whole process: interpreter,
  imports, loading, the session, the JSON), its wall and CPU time and peak
  resident memory; the decisions (the JSON printed) are hashed;
* the floor script on the same file (its whole process as well).

Reported per workload: process seconds of both and their ratio, peak memory,
and per kind the growth of batchsched's time per doubling of the size. The
decision hashes are recorded so that a later change can show it decided the
same. Benchmarks are not part of the test suite.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from run import compile_package

#: kind -> sizes (the last is the one the targets are about), and the target ratio.
MATRIX: dict[str, tuple[tuple[int, ...], float]] = {
    "preempt": ((500, 1000, 2000), 1.0),
    "reclaim": ((1000, 2000, 4000), 1.0),
    "affinity": ((1250, 2500, 5000), 2.0),
    "enqueue": ((25000, 50000, 100000), 3.0),
}


def run(command: list[str]) -> tuple[float, float, int, str]:
    """Wall seconds, CPU seconds, peak RSS (KB) and the stdout's sha256 of one child."""
    with tempfile.TemporaryFile() as out:
        began = time.perf_counter()
        child = subprocess.Popen(command, stdout=out)
        _, status, usage = os.wait4(child.pid, 0)
        wall = time.perf_counter() - began
        child.returncode = os.waitstatus_to_exitcode(status)
        if child.returncode != 0:
            raise subprocess.CalledProcessError(child.returncode, command)
        out.seek(0)
        digest = hashlib.sha256(out.read()).hexdigest()
    return wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss, digest


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--generator", required=True, help="gen_stress.py")
    parser.add_argument("--floor", required=True, help="floor.py")
    parser.add_argument("--only", default="", help="comma-separated kinds")
    parser.add_argument("--out", default="benchmarks/stress_results")
    args = parser.parse_args(argv)
    kinds = [k for k in MATRIX if not args.only or k in args.only.split(",")]
    rows: list[dict[str, Any]] = []
    env = dict(os.environ)
    compile_package()  # as `pip install` leaves the package (benchmarks/run.py does the same)
    with tempfile.TemporaryDirectory() as workdir:
        for kind in kinds:
            sizes, target = MATRIX[kind]
            for size in sizes:
                path = Path(workdir) / f"{kind}-{size}.json"
                subprocess.run([sys.executable, args.generator, kind, str(size), str(path)],
                               check=True, env=env)
                ours = [sys.executable, "-m", "batchsched", "run", str(path), "--output", "json"]
                wall, cpu, rss, digest = run(ours)
                floor_wall, floor_cpu, _, _ = run([sys.executable, args.floor, str(path)])
                row = {"kind": kind, "size": size, "seconds": wall, "cpu": cpu,
                       "floor_seconds": floor_wall, "floor_cpu": floor_cpu,
                       "ratio": wall / floor_wall, "peak_rss_mb": rss / 1024,
                       "target_ratio": target, "decisions_sha256": digest}
                rows.append(row)
                print(json.dumps(row), flush=True)
                path.unlink()
    report = {"machine": f"{os.cpu_count()} cores, {platform.processor() or platform.machine()}, "
                         f"Python {platform.python_version()}",
              "rows": rows}
    Path(args.out + ".json").write_text(json.dumps(report, indent=1) + "\n")
    Path(args.out + ".md").write_text(markdown(report))
    return 0


def markdown(report: dict[str, Any]) -> str:
    lines = ["| workload | size | batchsched s | floor s | ratio (target) | growth per doubling "
             "| peak MB | decisions sha256 |", "|---|---:|---:|---:|---:|---:|---:|---|"]
    previous: dict[str, float] = {}
    for row in report["rows"]:
        growth = ""
        if row["kind"] in previous:
            growth = f"{row['seconds'] / previous[row['kind']]:.2f}x"
        previous[row["kind"]] = row["seconds"]
        lines.append(
            f"| {row['kind']} | {row['size']} | {row['seconds']:.2f} | {row['floor_seconds']:.2f} "
            f"| {row['ratio']:.1f}x ({row['target_ratio']:g}x) | {growth} "
            f"| {row['peak_rss_mb']:.0f} | `{row['decisions_sha256'][:12]}` |")
    return f"Machine: {report['machine']}\n\n" + "\n".join(lines) + "\n"


if __name__ == "__main__":
    raise SystemExit(main())
