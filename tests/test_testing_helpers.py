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
