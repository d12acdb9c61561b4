"""A task's status change, done in one step, leaves exactly what Volcano's remove-then-add
leaves: the same floats bit for bit, the same dict orders, the same watcher calls."""

from __future__ import annotations

import math
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from batchsched.api import JobInfo, NodeInfo, PodGroup, Resource, TaskInfo, TaskStatus

S = TaskStatus

# Amounts that make (x - r) + r differ from x, and the usual integral ones.
amounts = st.one_of(
    st.sampled_from([0.0, -0.0, 1.0, 0.1, 0.2, 0.3, 1e16, 2.0**53 + 2, 1000.0, 8 * 2.0**30]),
    st.floats(allow_nan=False, allow_infinity=False, min_value=-1e18, max_value=1e18),
)
scalar_names = st.sampled_from(["pods", "nvidia.com/gpu", "example.com/fpga"])


@st.composite
def resources(draw: Any) -> Resource:
    res = Resource(draw(amounts), draw(amounts))
    for name in draw(st.lists(scalar_names, unique=True, max_size=3)):
        res.scalars[name] = draw(amounts)
    return res


def bits(res: Resource) -> tuple[object, ...]:
    """Every amount exactly (sign of zero included), scalars in their order."""
    return (res.milli_cpu.hex(), res.memory.hex(),
            [(name, amount.hex()) for name, amount in res.scalars.items()])


@given(resources(), resources(), resources())
def test_one_step_resource_operations_are_the_two_calls(
    x: Resource, removed: Resource, added: Resource
) -> None:
    assert bits(x.clone().readd(removed)) == bits(x.clone().sub_unchecked(removed).add(removed))
    assert bits(x.clone().sub_then_add(removed, added)) == bits(
        x.clone().sub_unchecked(removed).add(added))
    assert bits(x.clone().add_then_sub(added, removed)) == bits(
        x.clone().add(added).sub_unchecked(removed))


@given(resources(), resources())
def test_one_step_resource_operations_on_themselves(x: Resource, other: Resource) -> None:
    def twice(res: Resource) -> tuple[Resource, Resource]:
        return res.clone(), res.clone()

    a, b = twice(x)
    assert bits(a.readd(a)) == bits(b.sub_unchecked(b).add(b))
    a, b = twice(x)
    assert bits(a.sub_then_add(a, other)) == bits(b.sub_unchecked(b).add(other))
    a, b = twice(x)
    assert bits(a.add_then_sub(other, a)) == bits(b.add(other).sub_unchecked(b))


# -- jobs ---------------------------------------------------------------------------------

statuses = st.sampled_from([S.PENDING, S.ALLOCATED, S.PIPELINED, S.BINDING, S.BOUND,
                            S.RUNNING, S.RELEASING, S.SUCCEEDED])


def job_state(job: JobInfo) -> tuple[object, ...]:
    return (
        list(job.tasks),
        [(status, list(index)) for status, index in job.task_status_index.items()],
        bits(job.total_request), bits(job.allocated),
        None if job._role_counts is None
        else {s: dict(roles) for s, roles in job._role_counts.items()},
        None if job._role_counts is None else list(job._role_counts),
        dict(job._empty_pending_roles or {}),
        job._pending_best_effort, job._ready,
    )


def reference_update(job: JobInfo, task: TaskInfo, status: TaskStatus) -> None:
    """JobInfo.update_task_status as it was: delete_task, then add_task."""
    if task.uid in job.tasks:
        job.delete_task(task)
    task.status = status
    job.add_task(task)


@given(st.lists(st.tuples(resources(), statuses, st.sampled_from(["", "ps", "worker"])),
                min_size=1, max_size=5),
       st.lists(st.tuples(st.integers(0, 4), statuses), max_size=12))
def test_job_status_change_matches_delete_then_add(
    specs: list[tuple[Resource, TaskStatus, str]], moves: list[tuple[int, TaskStatus]]
) -> None:
    job = JobInfo.from_podgroup(PodGroup("pg", "ns", min_member=1))
    for i, (req, status, role) in enumerate(specs):
        job.add_task(TaskInfo.create("ns", f"t{i}", job.uid, req, status=status, role=role))
    # Per-role counts are built when first asked for: one copy counts from the start,
    # the other only at the end, and both must agree then.
    unasked = job.clone()
    job.allocated_roles()
    reference = job.clone()
    for i, status in moves:
        uid = f"ns/t{i % len(specs)}"
        job.update_task_status(job.tasks[uid], status)
        reference_update(reference, reference.tasks[uid], status)
        unasked.update_task_status(unasked.tasks[uid], status)
        assert job_state(job) == job_state(reference)
    assert unasked._role_counts is None

    def nonzero(counts: dict[str, int]) -> dict[str, int]:
        return {role: n for role, n in counts.items() if n}

    assert nonzero(unasked.allocated_roles()) == nonzero(job.allocated_roles())
    for twin in (job, unasked):
        twin.task_min_available = {"": 1, "ps": 1, "worker": 1}
    assert [(j.check_task_valid(), j.check_task_ready(), j.check_task_pipelined())
            for j in (job, unasked)] == [(job.check_task_valid(), job.check_task_ready(),
                                          job.check_task_pipelined())] * 2


def test_job_status_change_of_another_object_under_the_same_id() -> None:
    job = JobInfo.from_podgroup(PodGroup("pg", "ns", min_member=1))
    held = TaskInfo.create("ns", "t0", job.uid, Resource(1000.1), status=S.ALLOCATED)
    job.add_task(held)
    job.add_task(TaskInfo.create("ns", "t1", job.uid, Resource(1000)))
    job.allocated_roles()  # the per-role counts are kept from here on
    reference = job.clone()
    stranger = held.clone()
    stranger.resreq = Resource(3000.3)
    job.update_task_status(stranger, S.BINDING)
    reference_update(reference, stranger.clone(), S.BINDING)
    assert job_state(job) == job_state(reference)
    assert job.tasks["ns/t0"] is stranger
    job.check_invariants()


# -- nodes --------------------------------------------------------------------------------


def node_state(node: NodeInfo) -> tuple[object, ...]:
    return (
        [(uid, t.status, t.node_name, bits(t.resreq)) for uid, t in node.tasks.items()],
        bits(node.idle), bits(node.used), bits(node.releasing), bits(node.pipelined),
    )


def reference_node_update(node: NodeInfo, task: TaskInfo, heard: list[str]) -> None:
    """NodeInfo.update_task as it was: remove, add, tell the watcher if a figure moved."""
    before = node._figures()
    node.remove_task(task)
    node.add_task(task)
    if node._figures() != before:
        heard.append(node.name)


@given(resources(), st.lists(st.tuples(st.integers(0, 3), statuses, st.booleans()),
                             max_size=12),
       st.lists(resources(), min_size=4, max_size=4))
def test_node_status_change_matches_remove_then_add(
    allocatable: Resource, moves: list[tuple[int, TaskStatus, bool]], requests: list[Resource]
) -> None:
    node = NodeInfo.create("n1", allocatable)
    reference = node.clone()
    heard: list[str] = []
    heard_reference: list[str] = []
    node.on_change = lambda changed: heard.append(changed.name)
    tasks = [TaskInfo.create("ns", f"t{i}", "ns/pg", req, status=S.ALLOCATED)
             for i, req in enumerate(requests)]
    for i, status, new_request in moves:
        task = tasks[i]
        task.status = status
        if new_request:  # the task's request changed since the node took its copy
            task.resreq = Resource(task.resreq.milli_cpu + 0.1, task.resreq.memory * 3)
        if task.uid not in node.tasks:
            node.add_task(task)
            reference.add_task(task)
            heard_reference.append(node.name)
            continue
        node.update_task(task)
        reference_node_update(reference, task, heard_reference)
        assert node_state(node) == node_state(reference)
        assert heard == heard_reference
        assert node.tasks[task.uid] is not task


def test_a_changed_figure_that_compares_equal_is_not_heard() -> None:
    """-0.0 becomes 0.0 on the way (x + 0) - 0: equal, so the watcher is not told,
    exactly as the before/after comparison decided."""
    node = NodeInfo.create("n1", Resource(4000, 2**30))
    task = TaskInfo.create("ns", "t0", "ns/pg", Resource(0.0, 0.0, {"example.com/fpga": 0.0}),
                           status=S.ALLOCATED)
    node.add_task(task)
    node.idle.scalars["example.com/fpga"] = -0.0
    heard: list[str] = []
    node.on_change = lambda changed: heard.append(changed.name)
    task.status = S.BINDING
    node.update_task(task)
    assert heard == []
    assert math.copysign(1.0, node.idle.scalars["example.com/fpga"]) == 1.0


@given(st.lists(st.tuples(resources(), st.booleans()), min_size=1, max_size=4),
       st.lists(st.tuples(st.integers(0, 3), st.sampled_from(["move", "delete", "add"]),
                          statuses), max_size=10))
def test_a_job_s_total_request_is_volcano_s_running_sum(
    specs: list[tuple[Resource, bool]], steps: list[tuple[int, str, TaskStatus]]
) -> None:
    """``total_request`` is, bit for bit, the sum Volcano keeps (its request added at
    each AddTaskInfo, subtracted at each DeleteTaskInfo, both at a status change),
    though a job of one task shares that task's request vector; no task's request
    ever changes. Tasks may share one request vector, as the loader's do."""
    job = JobInfo.from_podgroup(PodGroup("pg", "ns", min_member=1))
    expected = Resource()
    tasks: list[TaskInfo] = []
    for i, (req, shares_previous) in enumerate(specs):
        task = TaskInfo.create("ns", f"t{i}", job.uid, req, status=S.PENDING)
        if shares_previous and tasks:
            task.resreq = task.init_resreq = tasks[-1].resreq
        tasks.append(task)
    asked = [bits(task.resreq) for task in tasks]
    job.add_task(tasks[0])
    expected.add(tasks[0].resreq)
    for i, action, status in steps:
        task = tasks[i % len(tasks)]
        if action == "add":
            if task.uid in job.tasks:
                continue
            job.add_task(task)
            expected.add(task.resreq)
        elif task.uid not in job.tasks:
            continue
        elif action == "delete":
            job.delete_task(task)
            expected.sub_unchecked(task.resreq)
        else:
            job.update_task_status(task, status)
            expected.readd(task.resreq)
        assert bits(job.total_request) == bits(expected)
        twin = job.clone()
        assert bits(twin.total_request) == bits(expected)
        for held in list(twin.tasks.values()):  # the copy's changes stay its own
            twin.delete_task(held)
        assert bits(job.total_request) == bits(expected)
    assert bits(job.total_request) == bits(expected)
    assert [bits(task.resreq) for task in tasks] == asked
