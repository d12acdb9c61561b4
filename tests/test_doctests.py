"""The examples in batchsched's docstrings, and the tutorials' Python, run as written."""

from __future__ import annotations

import doctest
import importlib
import pkgutil
import re
from pathlib import Path

import pytest

import batchsched

DOCS = Path(__file__).parent.parent / "docs"
MODULES = sorted(info.name for info in pkgutil.walk_packages(batchsched.__path__, "batchsched.")
                 if not info.name.endswith(("__main__", "pytest_plugin")))


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples_run(name: str) -> None:
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS, report=False)
    assert result.failed == 0, f"{name}: {result.failed} of {result.attempted} examples failed"


def python_blocks(page: str) -> list[str]:
    return re.findall(r"```python\n(.*?)```", (DOCS / page).read_text(encoding="utf-8"), re.S)


def test_the_embedding_tutorial_runs() -> None:
    namespace: dict[str, object] = {}
    for block in python_blocks("tutorials/embed.md")[:2]:  # the third runs forever
        exec(compile(block, "tutorials/embed.md", "exec"), namespace)
    binds = namespace["cache"].binds  # type: ignore[attr-defined]
    assert [bind.task for bind in binds] == ["default/w0", "default/w1"]


def test_the_plugin_tutorials_plugin_registers_and_scores() -> None:
    from batchsched.framework.arguments import Arguments

    namespace: dict[str, object] = {}
    exec(compile(python_blocks("tutorials/plugin-distribution.md")[0],
                 "tutorials/plugin-distribution.md", "exec"), namespace)
    specs = namespace["batchsched_register_plugins"]()  # type: ignore[operator]
    plugin = specs[0].factory(Arguments({"fewest-tasks.weight": 2}))
    assert specs[0].name == "fewest-tasks" and plugin.weight == 2
