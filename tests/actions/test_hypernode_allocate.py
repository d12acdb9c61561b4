"""allocate's hypernode and sub-job path: scenarios for behaviours the transcribed
Volcano cases do not pin down (regressions found in review)."""

from __future__ import annotations

from pathlib import Path

import pytest

from batchsched.api.sub_job import SubGroupPolicy, sub_jobs_of
from batchsched.scenario import check_scenario, load_scenario

DATA = Path(__file__).parent / "data" / "topology"
SCENARIOS = sorted(DATA.glob("*.yaml"))


@pytest.mark.parametrize("path", SCENARIOS, ids=[p.name for p in SCENARIOS])
def test_scenario(path: Path) -> None:
    result = check_scenario(load_scenario(path))
    assert result.passed, "\n".join(result.differences)


def test_a_match_index_beyond_64_bits_reads_as_zero() -> None:
    """Go's strconv.Atoi fails there, and the index stays 0."""
    from batchsched.api import JobInfo, PodGroup, Resource, TaskInfo

    policy = SubGroupPolicy("p", match_label_keys=("i",))
    job = JobInfo.from_podgroup(PodGroup("pg", "ns", sub_group_policies=(policy,)), tasks=[
        TaskInfo.create("ns", name, "ns/pg", Resource(1000, 0), labels={"i": value})
        for name, value in (("a", "99999999999999999999"), ("b", "5"))])
    assert {s.uid: s.match_index for s in sub_jobs_of(job).values()} == {
        "ns/pg/p-99999999999999999999": 0, "ns/pg/p-5": 5}


def test_a_replay_that_fails_is_undone_whole() -> None:
    """Should a dry run's placements not replay (they should), none of them stands."""
    from types import SimpleNamespace

    from batchsched.actions.hypernode_allocate import _replay
    from batchsched.api.task import TransactionContext
    from batchsched.api.types import TaskStatus
    from batchsched.framework.session import Session
    from batchsched.framework.statement import Operation, OperationKind, Statement
    from batchsched.scenario import parse_scenario

    doc = {"version": 1, "config": {"actions": "allocate", "tiers": [{"plugins": [
        {"name": "gang"}]}]},
        "nodes": [{"name": n, "allocatable": {"cpu": 4, "pods": 10}} for n in ("n1", "n2")],
        "jobs": [{"name": "j", "minMember": 1, "phase": "Inqueue"}],
        "tasks": [{"name": "t1", "job": "j", "requests": {"cpu": 1}},
                  {"name": "t2", "job": "j", "requests": {"cpu": 1}}]}
    scenario = parse_scenario(doc)
    ssn = Session.open(scenario.build_cache(), scenario.configuration)
    t1, t2 = (ssn.jobs["default/j"].tasks[f"default/{n}"] for n in ("t1", "t2"))
    Statement(ssn).allocate(t2, ssn.nodes["n2"])  # t2 is elsewhere: its replay fails
    pending = TransactionContext("", TaskStatus.PENDING)
    operations = [Operation(OperationKind.ALLOCATE, t1, "n1", pending),
                  Operation(OperationKind.ALLOCATE, t2, "n1", pending)]
    assert _replay(SimpleNamespace(ssn=ssn), operations) is None  # type: ignore[arg-type]
    assert (t1.status, t1.node_name) == (TaskStatus.PENDING, "")
    assert "default/t1" not in ssn.nodes["n1"].tasks
