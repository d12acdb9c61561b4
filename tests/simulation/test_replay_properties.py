"""Properties of every replay: no node over-committed at any instant, no gang partly
running, every job that fits the empty cluster finishes, and the same replay twice
gives the same timeline (also when sessions copy only what changed)."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sim_support import BACKFILL, STRICT, random_swf

from batchsched.api.types import ALLOCATED_STATUSES, TaskStatus
from batchsched.conf import configuration_from_text
from batchsched.simulation import Simulator, swf_workload

CONFIGS = {
    "fcfs": STRICT.format(policy="priority"),
    "sjf-backfill": BACKFILL.format(policy="sjf"),
    "wfp3-backfill": BACKFILL.format(policy="wfp3"),
    "f1": STRICT.format(policy="f1"),
    "unicep-backfill": BACKFILL.format(policy="unicep"),
    "volcano-default": None,
}

_RUNNING = ALLOCATED_STATUSES | {TaskStatus.RELEASING}


def check_instant(sim: Simulator) -> None:
    for node in sim.cache.nodes.values():
        assert node.used.less_equal(node.allocatable), f"{node.name} over-committed at {sim.now}"
        node.check_invariants()
    for job in sim.cache.jobs.values():
        running = sum(len(job.tasks_in(status)) for status in _RUNNING)
        assert running == 0 or running >= job.min_available, (
            f"{job.uid}: {running} of {job.min_available} running at {sim.now}"
        )


def replay(text: str, config: str | None, **options: Any) -> list[tuple[str, Any, Any]]:
    configuration = configuration_from_text(config) if config else None
    workload = swf_workload("random.swf", text=text).without_oversized()
    sim = Simulator(workload, configuration, observe=check_instant, **options)
    timeline = sim.run()
    assert not timeline.never_started
    assert timeline.finished_count == len(workload.jobs)
    return [(record.uid, record.start, record.end) for record in timeline.jobs.values()]


@settings(max_examples=12, deadline=None)
@given(seed=st.integers(0, 10_000), jobs=st.integers(1, 25),
       config=st.sampled_from(sorted(CONFIGS)), estimates=st.booleans())
def test_a_replay_keeps_the_invariants_and_finishes_every_job(
    seed: int, jobs: int, config: str, estimates: bool
) -> None:
    text = random_swf(seed, jobs, estimates=estimates)
    first = replay(text, CONFIGS[config])
    assert replay(text, CONFIGS[config]) == first  # deterministic


@settings(max_examples=8, deadline=None)
@given(seed=st.integers(0, 10_000), config=st.sampled_from(sorted(CONFIGS)))
def test_incremental_snapshots_decide_as_full_copies(seed: int, config: str) -> None:
    text = random_swf(seed, 20, estimates=True)
    assert replay(text, CONFIGS[config]) == replay(
        text, CONFIGS[config], incremental_snapshots=False)


@settings(max_examples=8, deadline=None)
@given(seed=st.integers(0, 10_000), config=st.sampled_from(sorted(CONFIGS)))
def test_dropping_events_decides_as_keeping_them(seed: int, config: str) -> None:
    text = random_swf(seed, 20, estimates=True)
    assert replay(text, CONFIGS[config]) == replay(text, CONFIGS[config], keep_events=True)


def test_a_session_period_batches_events() -> None:
    text = random_swf(7, 20)
    every_event = Simulator(swf_workload("r.swf", text=text),
                            configuration_from_text(CONFIGS["fcfs"] or ""))
    every_event.run()
    periodic = Simulator(swf_workload("r.swf", text=text),
                         configuration_from_text(CONFIGS["fcfs"] or ""), schedule_period=600)
    timeline = periodic.run()
    assert periodic.sessions < every_event.sessions
    assert all(record.start is not None and record.start % 600 == 0
               for record in timeline.jobs.values())


@settings(max_examples=8, deadline=None)
@given(seed=st.integers(0, 10_000), config=st.sampled_from(sorted(CONFIGS)))
def test_node_columns_carried_over_equal_a_fresh_build(seed: int, config: str) -> None:
    """When sessions reuse node objects, the node columns are carried from session to
    session and only changed rows are copied again: at every session they must hold
    exactly what a mirror built afresh holds."""
    import numpy as np

    from batchsched.columnar.node_columns import NodeColumns

    built = NodeColumns.of.__func__  # type: ignore[attr-defined]
    compared = []

    def checked(cls: type[NodeColumns], ssn: Any) -> NodeColumns:
        columns: NodeColumns = built(cls, ssn)
        columns.sync()
        fresh = NodeColumns(ssn.node_list, columns.dimensions[2:])
        assert columns.dimensions == fresh.dimensions
        assert [n.name for n in columns.nodes] == [n.name for n in fresh.nodes]
        assert all(a is b for a, b in zip(columns.nodes, ssn.node_list, strict=True))
        np.testing.assert_array_equal(columns.allocatable, fresh.allocatable)
        np.testing.assert_array_equal(columns._moving, fresh._moving)
        np.testing.assert_array_equal(columns.task_count, fresh.task_count)
        np.testing.assert_array_equal(columns.in_transition, fresh.in_transition)
        assert columns.everywhere == fresh.everywhere
        compared.append(columns)
        return columns

    text = random_swf(seed, 20, estimates=True)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(NodeColumns, "of", classmethod(checked))
        replay(text, CONFIGS[config])
    assert len({id(columns) for columns in compared}) < len(compared)  # carried over
