"""The README's examples run as written."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

README = (Path(__file__).parent.parent / "README.md").read_text(encoding="utf-8")
BLOCKS = re.findall(r"```python\n(.*?)```", README, flags=re.S)


def test_the_testing_example_runs() -> None:
    block = next(b for b in BLOCKS if "ScenarioBuilder" in b)
    exec(compile(block, "README.md", "exec"), {})  # our own documentation


def test_the_embedding_example_runs() -> None:
    """From the repository, where the configuration it names is."""
    block = next(b for b in BLOCKS if "Scheduler(cache" in b)
    import os

    cwd = os.getcwd()
    os.chdir(Path(__file__).parent.parent)
    try:
        exec(compile(block, "README.md", "exec"), {})
    finally:
        os.chdir(cwd)


def _shell_commands() -> list[str]:
    """The README's ``batchsched ...`` commands, continuation lines joined, comments off."""
    commands = []
    for block in re.findall(r"```sh\n(.*?)```", README, flags=re.S):
        joined = re.sub(r"\\\n\s*", " ", block)
        for raw in joined.splitlines():
            line = raw.split("#", 1)[0].strip()
            if line.startswith("batchsched "):
                commands.append(line)
    return commands


def test_the_readme_s_commands_run_from_the_repository(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Every file a command names is in the repository (``check`` of the whole corpus
    is left to the conformance tests, which run the same code)."""
    import os
    import shlex

    from batchsched.cli import main

    commands = [c for c in _shell_commands() if not c.startswith("batchsched check")]
    assert len(commands) >= 8
    cwd = os.getcwd()
    os.chdir(Path(__file__).parent.parent)
    try:
        for command in commands:
            argv = shlex.split(command)[1:]
            if "-o" in argv:
                argv[argv.index("-o") + 1] = str(tmp_path / "out.yaml")
            assert main(argv) == 0, (command, capsys.readouterr().err)
    finally:
        os.chdir(cwd)
