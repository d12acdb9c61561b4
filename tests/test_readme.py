"""The README's examples run as written."""

from __future__ import annotations

import re
from pathlib import Path

README = (Path(__file__).parent.parent / "README.md").read_text(encoding="utf-8")
BLOCKS = re.findall(r"```python\n(.*?)```", README, flags=re.S)


def test_the_testing_example_runs() -> None:
    block = next(b for b in BLOCKS if "ScenarioBuilder" in b)
    exec(compile(block, "README.md", "exec"), {})  # our own documentation


def test_the_embedding_example_runs(tmp_path: Path) -> None:
    block = next(b for b in BLOCKS if "Scheduler(cache" in b)
    conf = tmp_path / "volcano-scheduler.conf"
    conf.write_text('actions: "enqueue, allocate"\ntiers:\n- plugins:\n  - name: gang\n')
    import os

    cwd = os.getcwd()
    os.chdir(tmp_path)
    try:
        exec(compile(block, "README.md", "exec"), {})
    finally:
        os.chdir(cwd)
