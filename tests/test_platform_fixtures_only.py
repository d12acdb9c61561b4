"""A platform team's test, written with batchsched's pytest fixtures alone: the file
imports nothing from batchsched (the ``pytest11`` entry point provides everything)."""

from __future__ import annotations

from typing import Any


def test_a_gang_waits_until_the_whole_gang_fits(
    scenario_builder: Any, run_session: Any, assert_decisions: Any,
) -> None:
    scenario_builder.node("n1", cpu=2, memory="4Gi").job("train", min_member=3)
    for i in range(3):
        scenario_builder.task(f"worker-{i}", job="train", cpu=1)
    assert_decisions(run_session(scenario_builder), binds={}, evicted=[])


def test_the_whole_gang_binds_once_there_is_room(
    scenario_builder: Any, run_session: Any, assert_decisions: Any,
) -> None:
    scenario_builder.node("n1", cpu=2, memory="4Gi").node("n2", cpu=2, memory="4Gi")
    scenario_builder.job("train", min_member=3)
    for i in range(3):
        scenario_builder.task(f"worker-{i}", job="train", cpu=1)
    decisions = run_session(scenario_builder)
    assert sorted(decisions.binds) == ["default/worker-0", "default/worker-1",
                                       "default/worker-2"]


def test_jobs_replay_over_time(scenario_builder: Any, simulate_workload: Any) -> None:
    scenario_builder.node("n1", cpu=1)
    scenario_builder.job("first", min_member=1, submit=0).task("f", job="first", cpu=1,
                                                              run_time=30)
    scenario_builder.job("second", min_member=1, submit=5).task("s", job="second", cpu=1,
                                                               run_time=10)
    timeline = simulate_workload(scenario_builder)
    assert timeline.jobs["default/second"].start == 30.0
