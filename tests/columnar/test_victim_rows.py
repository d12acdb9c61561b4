"""Victim rows follow the nodes, and each built-in victim bound holds every victim its
plugin's Preemptable function returns (a bound that missed one would let preempt
skip a node it should have visited)."""

from __future__ import annotations

import random
import sys
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from batchsched.api.types import TaskStatus
from batchsched.columnar.node_columns import NodeColumns
from batchsched.columnar.victim_rows import VictimRows, preemptable_bounds
from batchsched.framework.session import Session
from batchsched.framework.statement import Statement
from batchsched.scenario import parse_scenario

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "actions"))
from victim_support import random_cluster

CONFIG = {
    "actions": "preempt",
    "tiers": [{"plugins": [{"name": "priority"}, {"name": "gang"}, {"name": "conformance"}]},
              {"plugins": [{"name": "drf"}, {"name": "proportion"}]}],
}
BOUNDED = ("priority", "gang", "drf")
SETTINGS = settings(max_examples=80, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow])


def _open(document: dict[str, Any]) -> Session:
    scenario = parse_scenario({**document, "config": CONFIG}, source="<victim rows test>")
    return Session.open(scenario.build_cache(), scenario.configuration)


def _rows_by_task(rows: VictimRows) -> dict[str, int]:
    return {uid: row for row, uid in enumerate(rows.tasks) if uid is not None}


def _shake(ssn: Session, rng: random.Random) -> None:
    """Evict some placed tasks and pipeline some pending ones (a statement left open)."""
    stmt = Statement(ssn)
    for job in list(ssn.jobs.values()):
        for task in list(job.tasks.values()):
            if task.status in (TaskStatus.RUNNING, TaskStatus.BOUND) and rng.random() < 0.3:
                stmt.evict(task, "test")
            elif task.status is TaskStatus.PENDING and rng.random() < 0.3:
                node = rng.choice(ssn.node_list)
                if task.init_resreq.less_equal(node.future_idle()):
                    stmt.pipeline(task, node, eviction_occurred=False)


@SETTINGS
@given(document=random_cluster(max_queues=2), seed=st.integers(0, 2**32))
def test_every_victim_a_plugin_returns_is_within_its_bound(
    document: dict[str, Any], seed: int
) -> None:
    ssn = _open(document)
    rng = random.Random(seed)
    _shake(ssn, rng)
    columns = NodeColumns.of(ssn)
    columns.sync()
    rows = VictimRows(columns)
    where = _rows_by_task(rows)
    bounds = preemptable_bounds(ssn)
    preemptable = {name: fn for tier in ssn.tiers_for("preemptable") for name, fn in tier}
    assert set(BOUNDED) <= set(bounds)
    preemptors = [t for j in ssn.jobs.values() for t in j.tasks.values()
                  if t.status is TaskStatus.PENDING]
    for preemptor in preemptors:
        for node in ssn.node_list:
            placed = [ssn.jobs[t.job].tasks[t.uid] for t in node.tasks.values()
                      if t.uid in where]
            rng.shuffle(placed)
            offered = placed[:rng.randint(0, len(placed))]
            for name in BOUNDED:
                mask = bounds[name](preemptor, rows)
                assert mask is not None
                for victim in preemptable[name](preemptor, offered) or ():
                    assert mask[where[victim.uid]], (name, preemptor.uid, victim.uid)


@SETTINGS
@given(document=random_cluster(max_queues=2), seed=st.integers(0, 2**32))
def test_rows_rewritten_per_changed_node_equal_a_fresh_build(
    document: dict[str, Any], seed: int
) -> None:
    ssn = _open(document)
    columns = NodeColumns.of(ssn)
    columns.sync()
    kept = VictimRows(columns)
    mark = len(columns.changes)
    _shake(ssn, random.Random(seed))
    columns.sync()
    for i in set(columns.changes[mark:]):
        kept.rewrite(i, columns.nodes[i])
    fresh = VictimRows(columns)

    def content(rows: VictimRows) -> set[tuple[Any, ...]]:
        return {(uid, int(rows.node[row]), rows.job_uids[int(rows.job[row])],
                 int(rows.priority[row]), tuple(rows.request[:, row].tolist()))
                for row, uid in enumerate(rows.tasks) if uid is not None}

    assert content(kept) == content(fresh)
    assert (kept.per_node == fresh.per_node).all()


def test_a_per_job_value_asked_before_any_job_is_worked_out_once_jobs_come() -> None:
    """Asked while no node held a preemptable task, the kept values were a placeholder
    (one 0.0) that a job coming later was taken to be: its value was never worked out."""
    ssn = _open({
        "version": 1,
        "nodes": [{"name": "n1", "allocatable": {"cpu": 4, "memory": "4Gi", "pods": 10}}],
        "jobs": [{"name": "low", "minMember": 1}],
        "tasks": [{"name": "t1", "job": "low", "requests": {"cpu": 1}}],
    })
    columns = NodeColumns.of(ssn)
    columns.sync()
    rows = VictimRows(columns)
    assert rows.per_job("seven", lambda uid: 7.0).tolist() in ([], [0.0])
    stmt = Statement(ssn)
    stmt.allocate(ssn.jobs["default/low"].tasks["default/t1"], "n1")
    columns.sync()
    rows.rewrite(0, columns.nodes[0])
    assert rows.per_job("seven", lambda uid: 7.0)[rows.job[0]] == 7.0
