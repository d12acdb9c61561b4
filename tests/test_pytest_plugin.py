"""batchsched's pytest plugin, used as a platform team or a plugin author would."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from batchsched.testing import ScenarioBuilder
from batchsched.testing.checks import PluginCheck


def test_a_platform_test_builds_runs_and_asserts(
    scenario_builder: ScenarioBuilder, run_session: Callable[..., Any],
    assert_decisions: Callable[..., None],
) -> None:
    scenario_builder.node("n1", cpu=4, memory="8Gi").job("pg", min_member=2) \
        .task("a", job="pg", cpu=1).task("b", job="pg", cpu=1)
    decisions = run_session(scenario_builder)
    assert_decisions(decisions, binds={"default/a": "n1", "default/b": "n1"}, evicted=[])
    with pytest.raises(AssertionError, match="binds: expected but not made"):
        assert_decisions(decisions, binds={"default/a": "n2", "default/b": "n1"})


def test_a_workload_replays_over_time(simulate_workload: Callable[..., Any]) -> None:
    timeline = simulate_workload(
        ScenarioBuilder(actions="enqueue, allocate").node("n1", cpu=1)
        .job("a", min_member=1, submit=0).task("a0", job="a", cpu=1, run_time=60)
        .job("b", min_member=1, submit=1).task("b0", job="b", cpu=1, run_time=5))
    assert timeline.jobs["default/b"].start == 60.0


@pytest.mark.batchsched_plugin("binpack", arguments={"binpack.weight": 2})
def test_the_plugin_check_suite_is_parametrised(batchsched_plugin_check: PluginCheck) -> None:
    assert batchsched_plugin_check.plugin == "binpack"
    batchsched_plugin_check()
