"""The benchmark scripts the documentation tells users to run still run (on tiny
sizes: what they measure is benchmarks/' business, never a test's)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

BENCHMARKS = Path(__file__).resolve().parent.parent / "benchmarks"


@pytest.mark.parametrize("command", [
    ["run.py", "--sizes", "20x50", "--scalar-sizes", "20x50", "--end-to-end", "--repeat", "1"],
    ["explain_overhead.py", "--size", "20x50", "--repeat", "1"],
], ids=["run", "explain_overhead"])
def test_a_documented_benchmark_runs(command: list[str], tmp_path: Path) -> None:
    extra = (["--workdir", str(tmp_path), "--results", str(tmp_path / "results")]
             if command[0] == "run.py" else [])
    done = subprocess.run([sys.executable, str(BENCHMARKS / command[0]), *command[1:], *extra],
                          check=False, capture_output=True, text=True, cwd=tmp_path,
                          timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
