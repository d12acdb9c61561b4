"""Hierarchical drf recomputes only the changed job's ancestors on an event, with results
identical to recomputing the whole share tree."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from policy_support import open_scenario, scenario

from batchsched.api.queue_accounting import dominant_share
from batchsched.api.resource import Resource
from batchsched.framework import Statement
from batchsched.plugins.drf import DrfPlugin
from batchsched.plugins.drf import hierarchy as drf_hierarchy
from batchsched.plugins.drf.hierarchy import HierarchyNode, JobShare, ShareTree, recompute

TOTAL = Resource.from_mapping({"cpu": 6, "memory": "6Gi", "nvidia.com/gpu": 2})
# Queue paths sharing prefixes at several depths, with weights (some below 1 or odd).
QUEUES = [
    ("root/a", "1/1"), ("root/a/x", "1/1/3"), ("root/a/y", "1/1/0.5"),
    ("root/b", "1/2"), ("root/b/z/w", "1/2/1/4"), ("root/c", "1/x"),
]
TASK = st.sampled_from([
    {"cpu": 1}, {"cpu": 2, "memory": "1Gi"}, {"memory": "2Gi"},
    {"cpu": 1, "nvidia.com/gpu": 1}, {"nvidia.com/gpu": 1},
])


def share_of(allocated: Resource) -> float:
    return dominant_share(allocated, TOTAL)


def demanding(jobs: list[JobShare]) -> set[str]:
    used = Resource()
    for job in jobs:
        used.add(job.allocated)
    return {n for n in TOTAL.resource_names() if used.get(n) < TOTAL.get(n)}


def same_tree(left: HierarchyNode, right: HierarchyNode) -> None:
    """Bit-identical figures on every node."""
    assert (left.name, left.weight, left.saturated) == (right.name, right.weight, right.saturated)
    assert left.state.share == right.state.share
    assert left.state.allocated.milli_cpu == right.state.allocated.milli_cpu
    assert left.state.allocated.memory == right.state.allocated.memory
    assert left.state.allocated.scalars == right.state.allocated.scalars
    assert (left.children is None) == (right.children is None)
    if left.children is not None and right.children is not None:
        assert sorted(left.children) == sorted(right.children)
        for name in left.children:
            same_tree(left.children[name], right.children[name])


@st.composite
def histories(draw: st.DrawFn) -> tuple[list[tuple[int, list[dict[str, Any]]]], list[int]]:
    """Jobs (queue index, task requests) and a sequence of task toggles (allocate when
    not held, deallocate when held), as flat task indexes."""
    jobs = draw(st.lists(st.tuples(st.integers(0, len(QUEUES) - 1),
                                   st.lists(TASK, min_size=1, max_size=4)),
                         min_size=1, max_size=7))
    tasks = sum(len(requests) for _, requests in jobs)
    toggles = draw(st.lists(st.integers(0, tasks - 1), max_size=40))
    return jobs, toggles


@settings(max_examples=150, deadline=None)
@given(histories())
def test_incremental_updates_equal_full_recomputes(
    history: tuple[list[tuple[int, list[dict[str, Any]]]], list[int]],
) -> None:
    jobs, toggles = history
    owners = [(j, Resource.from_mapping(req)) for j, (_, reqs) in enumerate(jobs) for req in reqs]
    requests = [Resource() for _ in jobs]
    for j, request in owners:
        requests[j].add(request)
    incremental_states = [JobShare() for _ in jobs]
    full_states = [JobShare() for _ in jobs]
    incremental, full = ShareTree(), HierarchyNode("root", 1.0)
    for j, (queue, _) in enumerate(jobs):
        path, weights = QUEUES[queue]
        incremental.place(f"job{j}", incremental_states[j], requests[j],
                          hierarchy=path, weights=weights)
        drf_hierarchy.place_job(full, f"job{j}", full_states[j], requests[j],
                                hierarchy=path, weights=weights)
    incremental.recompute(demanding(incremental_states), share_of)
    recompute(full, demanding(full_states), share_of)
    same_tree(incremental.root, full)
    held = [False] * len(owners)
    for toggle in toggles:
        j, request = owners[toggle]
        for states in (incremental_states, full_states):
            if held[toggle]:
                states[j].allocated.sub_unchecked(request)
            else:
                states[j].allocated.add(request)
            states[j].share = share_of(states[j].allocated)
        held[toggle] = not held[toggle]
        path, weights = QUEUES[jobs[j][0]]
        incremental.update_job(f"job{j}", incremental_states[j], requests[j],
                               hierarchy=path, weights=weights,
                               demanding=demanding(incremental_states), share_of=share_of)
        drf_hierarchy.place_job(full, f"job{j}", full_states[j], requests[j],
                                hierarchy=path, weights=weights)
        recompute(full, demanding(full_states), share_of)
        same_tree(incremental.root, full)
        # A copy (as reclaimable takes) stays identical too.
        same_tree(incremental.clone().root, full)


HQUEUES = """[
  {name: qa, annotations: {volcano.sh/hierarchy: root/a, volcano.sh/hierarchy-weights: 1/1}},
  {name: qb, annotations: {volcano.sh/hierarchy: root/b, volcano.sh/hierarchy-weights: 1/2}}]"""


def test_an_event_recomputes_only_the_jobs_ancestors(monkeypatch: pytest.MonkeyPatch) -> None:
    visits: list[str] = []
    original = drf_hierarchy.recompute

    def counting(node: HierarchyNode, *args: Any) -> None:
        visits.append(node.name)
        original(node, *args)

    monkeypatch.setattr(drf_hierarchy, "recompute", counting)
    jobs = ", ".join(f"{{name: j{i}, queue: {'qa' if i % 2 else 'qb'}}}" for i in range(20))
    tasks = ", ".join(f"{{name: t{i}, job: j{i}, requests: {{cpu: 1}}}}" for i in range(20))
    ssn = open_scenario(scenario(f"""
config: {{actions: "", tiers: [{{plugins: [{{name: drf, enableHierarchy: true}}]}}]}}
queues: {HQUEUES}
nodes: [{{name: n1, allocatable: {{cpu: 100, memory: 20Gi, pods: 100}}}}]
jobs: [{jobs}]
tasks: [{tasks}]
"""))
    # Session open computes the tree once: root, two queues, twenty jobs.
    assert len(visits) == 23
    visits.clear()
    drf = ssn.plugins["drf"]
    assert isinstance(drf, DrfPlugin)
    stmt = Statement(ssn)
    stmt.allocate(ssn.jobs["default/j3"].tasks["default/t3"], "n1")
    assert visits == []  # only the path root -> a -> j3 was refreshed
    assert drf.root.children is not None
    assert drf.root.children["a"].children is not None
    assert drf.root.children["a"].children["default/j3"].state.share == pytest.approx(0.01)
    reference = drf.root.clone()
    recompute(reference, set(drf.tree.demanding or ()), drf.share_of)
    same_tree(drf.root, reference)
