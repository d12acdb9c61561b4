"""Every scenario under tests/conformance/ runs through the same code path as
``batchsched check`` and must decide what its ``expect`` says.

A scenario needing an action or plugin that does not exist yet is skipped with
that reason; one we believe Volcano's own expectation is wrong for (or that
depends on behaviour we deliberately do differently) is listed in ``XFAIL`` with
the reason.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from batchsched.framework.registry import Registry
from batchsched.scenario import check_scenario, load_scenario, scenario_files

HERE = Path(__file__).parent
FILES = scenario_files(HERE)

#: file name -> why the expectation is not met (reviewed, defended in docs/conformance.md)
XFAIL: dict[str, str] = {}

_registry = Registry(autoload=False)


def _missing(path: Path) -> str | None:
    scenario = load_scenario(path)
    for action in scenario.configuration.actions:
        if action not in _registry.actions:
            return f"action {action!r} is not implemented yet"
    for name in scenario.configuration.plugin_names():
        if name not in _registry.plugins:
            return f"plugin {name!r} is not implemented yet"
    return None


@pytest.mark.parametrize("path", FILES, ids=[str(p.relative_to(HERE)) for p in FILES])
def test_scenario(path: Path) -> None:
    missing = _missing(path)
    if missing:
        pytest.skip(missing)
    if path.name in XFAIL:
        pytest.xfail(XFAIL[path.name])
    result = check_scenario(load_scenario(path), registry=_registry)
    assert result.passed, "\n".join(result.differences)
