"""strict-allocate's and easy-backfill's free total reads the node columns when a
session built them: the same amounts, bit for bit, as the loop over the nodes."""

from __future__ import annotations

from typing import Any

from fast_path_support import REGISTRY, random_document
from hypothesis import given, settings
from hypothesis import strategies as st

from batchsched.actions import strict_allocate
from batchsched.api import Resource, TaskStatus
from batchsched.columnar.node_columns import NodeColumns
from batchsched.framework.session import Session
from batchsched.framework.statement import Statement
from batchsched.scenario import parse_scenario


def open_session(document: dict[str, Any]) -> Session:
    scenario = parse_scenario(document, source="<cluster free test>")
    return Session.open(scenario.to_cluster(), scenario.configuration, registry=REGISTRY)


def amounts(res: Resource) -> dict[str, float]:
    """Every dimension with its amount; a missing scalar reads as 0 (as comparisons do)."""
    out = {"cpu": res.milli_cpu, "memory": res.memory}
    out.update({name: amount for name, amount in res.scalars.items() if amount})
    return out


def loop_total(ssn: Session) -> Resource:
    ssn.extra.pop(strict_allocate._FREE_KEY, None)
    assert NodeColumns.built_for(ssn) is None
    return strict_allocate.cluster_free(ssn)


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 2**32), nodes=st.integers(0, 30), pipelined=st.integers(0, 4))
def test_column_total_equals_the_loop(seed: int, nodes: int, pipelined: int) -> None:
    # Releasing tasks (deleting) and pipelined ones make future idle differ from idle.
    ssn = open_session(random_document(seed, nodes=nodes, jobs=6, plugins=[], deleting=0.5))
    pending = [task for job in ssn.jobs.values()
               for task in job.tasks_in(TaskStatus.PENDING).values()]
    stmt = Statement(ssn)
    for task, node in zip(pending[:pipelined], ssn.node_list, strict=False):
        stmt.pipeline(task, node)
    expected = loop_total(ssn)
    NodeColumns.of(ssn)
    ssn.extra.pop(strict_allocate._FREE_KEY, None)
    total = strict_allocate.cluster_free(ssn)
    assert amounts(total) == amounts(expected)
    # Both are fresh objects the caller may change.
    total.add(Resource(1000.0, 1.0))
    assert amounts(strict_allocate.cluster_free(ssn)) == amounts(expected)
