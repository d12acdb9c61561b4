"""NodeInfo's figures move with each task as Volcano's do; idle + used == allocatable."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from batchsched.api import NodeInfo, Resource, TaskInfo, TaskStatus
from batchsched.errors import SchedulingError


def node() -> NodeInfo:
    return NodeInfo.create("n1", Resource.from_mapping({"cpu": 8, "memory": "16Gi", "pods": 10}))


def task(name: str, status: TaskStatus, cpu: int = 1) -> TaskInfo:
    return TaskInfo.create("ns", name, "ns/pg", Resource.from_mapping({"cpu": cpu}), status=status)


def test_running_releasing_pipelined_accounting() -> None:
    n = node()
    n.add_task(task("a", TaskStatus.RUNNING, 2))
    n.add_task(task("b", TaskStatus.RELEASING, 1))
    n.add_task(task("c", TaskStatus.PIPELINED, 3))
    assert n.used.milli_cpu == 3000 and n.idle.milli_cpu == 5000
    assert n.releasing.milli_cpu == 1000 and n.pipelined.milli_cpu == 3000
    assert n.future_idle().milli_cpu == 3000  # 5 + 1 - 3
    n.check_invariants()


def test_task_on_another_node_is_refused_and_nothing_changes() -> None:
    n = node()
    t = task("a", TaskStatus.RUNNING)
    t.node_name = "n2"
    with pytest.raises(SchedulingError, match="already on node n2"):
        n.add_task(t)
    assert not n.tasks and n.used.is_empty()


def test_node_holds_its_own_copy() -> None:
    n = node()
    t = task("a", TaskStatus.ALLOCATED)
    n.add_task(t)
    t.status = TaskStatus.RELEASING  # not through update_task: the node must not change
    n.check_invariants()
    n.update_task(t)
    assert n.releasing.milli_cpu == 1000
    n.check_invariants()


statuses = st.sampled_from([TaskStatus.RUNNING, TaskStatus.RELEASING, TaskStatus.PIPELINED,
                            TaskStatus.ALLOCATED, TaskStatus.BOUND])


@given(st.lists(st.tuples(st.integers(0, 5), statuses, st.booleans()), max_size=40))
def test_figures_always_add_up(ops: list[tuple[int, TaskStatus, bool]]) -> None:
    n = node()
    tasks = {i: task(f"t{i}", TaskStatus.RUNNING, 1 + i % 3) for i in range(6)}
    for i, status, remove in ops:
        t = tasks[i]
        if remove:
            n.remove_task(t)
            t.node_name = ""
        elif t.uid in n.tasks:
            t.status = status
            n.update_task(t)
        else:
            t.status = status
            n.add_task(t)
        n.check_invariants()


def test_watchers_hear_of_status_changes_that_move_a_figure() -> None:
    """update_task re-accounts the task as Volcano does (remove, then add); a watcher
    (the columnar node view) is told only when a figure moved."""
    n = node()
    heard: list[str] = []
    t = task("a", TaskStatus.ALLOCATED, 2)
    n.add_task(t)
    n.on_change = lambda changed: heard.append(changed.name)
    t.status = TaskStatus.BINDING  # the same accounting: every figure stays as it was
    n.update_task(t)
    assert heard == []
    assert n.tasks[t.uid].status is TaskStatus.BINDING
    t.status = TaskStatus.RELEASING  # releasing moves
    n.update_task(t)
    assert heard == ["n1"]
    n.check_invariants()


def test_a_failed_update_still_tells_watchers() -> None:
    n = node()
    heard: list[str] = []
    t = task("a", TaskStatus.ALLOCATED, 2)
    n.add_task(t)
    n.on_change = lambda changed: heard.append(changed.name)
    t.node_name = "elsewhere"
    with pytest.raises(SchedulingError):
        n.update_task(t)
    assert heard == ["n1"]  # the task left the node: its figures moved
    assert t.uid not in n.tasks
