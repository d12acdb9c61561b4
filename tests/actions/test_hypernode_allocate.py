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
