"""Every bundled example scenario runs, and those with an ``expect`` decide as it says."""

from __future__ import annotations

from pathlib import Path

import pytest

from batchsched.scenario import check_scenario, load_scenario, run_scenario

EXAMPLES = sorted((Path(__file__).parent.parent / "examples").glob("*.yaml"))


@pytest.mark.parametrize("path", EXAMPLES, ids=[path.name for path in EXAMPLES])
def test_the_example_runs_as_documented(path: Path) -> None:
    scenario = load_scenario(path)
    if scenario.expect:
        result = check_scenario(scenario)
        assert result.passed, "\n".join(result.differences)
    else:
        run_scenario(scenario)
