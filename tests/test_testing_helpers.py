from __future__ import annotations

import pytest

from batchsched.testing import ScenarioBuilder, assert_decisions, run


def test_builder_round_trips_through_the_scenario_format() -> None:
    built = (ScenarioBuilder(actions="")
             .node("n1", cpu=4, memory="8Gi")
             .job("pg1", namespace="c1", min_member=1)
             .task("p1", job="pg1", namespace="c1", cpu=1, memory="1Gi"))
    decisions = run(built)
    assert decisions.binds == {}
    assert_decisions(decisions, evicted=[], pod_group_phases={"c1/pg1": "Pending"})
    with pytest.raises(AssertionError, match="podGroupPhases: c1/pg1 expected Running"):
        assert_decisions(decisions, pod_group_phases={"c1/pg1": "Running"})
    assert "name: p1" in built.to_yaml()


def test_a_built_workload_replays_over_time() -> None:
    from batchsched.testing import simulate

    timeline = simulate(
        ScenarioBuilder(actions="enqueue, allocate")
        .node("n1", cpu=2, memory="4Gi")
        .job("a", min_member=2, submit=0, requested_runtime="2m")
        .task("a0", job="a", cpu=1, memory="1Gi", run_time=60)
        .task("a1", job="a", cpu=1, memory="1Gi", run_time="1m")
        .job("b", min_member=1, submit=10)
        .task("b0", job="b", cpu=1, memory="1Gi", run_time=5)
    )
    a, b = timeline.jobs["default/a"], timeline.jobs["default/b"]
    assert (a.start, a.end) == (0.0, 60.0)
    assert (b.start, b.end) == (60.0, 65.0)  # waited for a's gang to leave
    assert timeline.metrics()["averageWait"] == 25.0
