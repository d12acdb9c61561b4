"""The three-way orders allocate's heaps use agree with the boolean orders, and the
written-out arithmetic of the per-task and per-placement hooks agrees with the
Resource operations it restates."""

from __future__ import annotations

import math
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from probe_support import Registration
from probe_support import session as probe_session

from batchsched.api import JobInfo, PodGroup, Resource, TaskInfo
from batchsched.api.queue_accounting import dominant_share, share
from batchsched.api.resource import PODS
from batchsched.errors import PluginError
from batchsched.framework import Session
from batchsched.framework.session_plugins import _compare_task_default_total, compare_task_default
from batchsched.plugins.proportion import QueueAttr, _fits


def session(plugins: list[tuple[str, Registration]]) -> Session:
    """One tier per plugin, in the given order."""
    return probe_session([[plugin] for plugin in plugins])


def sign(value: int) -> int:
    return (value > 0) - (value < 0)


NAMES = ["a-b-1", "a-b-2", "a-b-10", "x-3", "a-b-c", "a-b--4", "a-b-+7", "w-w-2", "plain",
         "a-b-99999999999999999999", "a-b--9223372036854775809"]
TIMES = [0.0, 1.0, 2.5, math.nan]


@st.composite
def tasks(draw: st.DrawFn) -> TaskInfo:
    return TaskInfo.create(
        "ns", draw(st.sampled_from(NAMES)), "ns/pg", Resource(1000),
        creation_time=draw(st.sampled_from(TIMES)),
        order_uid=draw(st.sampled_from(["u1", "u2", "u3"])),
        priority=draw(st.integers(0, 2)),
    )


@settings(max_examples=300, deadline=None)
@given(left=tasks(), right=tasks())
def test_task_default_total_is_compare_task_default_both_ways(
    left: TaskInfo, right: TaskInfo
) -> None:
    expected = -1 if compare_task_default(left, right) else (
        1 if compare_task_default(right, left) else 0)
    assert _compare_task_default_total(left, right) == expected


def test_a_name_index_past_int64_is_no_index_as_for_strconv_atoi() -> None:
    """Volcano's CompareTask reads the index with strconv.Atoi, which fails past
    int64: creation time then decides."""
    huge = TaskInfo.create("ns", "job-w-99999999999999999999", "ns/pg", Resource(1000),
                           creation_time=1.0)
    small = TaskInfo.create("ns", "job-w-5", "ns/pg", Resource(1000), creation_time=2.0)
    assert compare_task_default(huge, small)
    edge = TaskInfo.create("ns", f"job-w-{2**63 - 1}", "ns/pg", Resource(1000),
                           creation_time=1.0)
    assert compare_task_default(small, edge)  # still an index: 5 < 2**63 - 1


# Plugin answers of any magnitude; 0 passes to the next tier.
ANSWERS = st.lists(st.sampled_from([0, 0, 3, -2, 1]), min_size=0, max_size=3)


def fixed_orders(answers: list[int], point: str) -> list[tuple[str, Registration]]:
    def register(answer: int) -> Registration:
        def fn(left: Any, right: Any) -> int:  # antisymmetric, as the orders must be
            if left.name == right.name:
                return 0
            return answer if left.name < right.name else -answer
        if point == "job_order":
            return lambda ssn, n: ssn.add_job_order_fn(n, fn)
        return lambda ssn, n: ssn.add_task_order_fn(n, fn)
    return [(f"p{i}", register(a)) for i, a in enumerate(answers)]


@settings(max_examples=100, deadline=None)
@given(answers=ANSWERS, left=tasks(), right=tasks())
def test_task_order_total_matches_task_order_fn(
    answers: list[int], left: TaskInfo, right: TaskInfo
) -> None:
    ssn = session(fixed_orders(answers, "task_order"))
    expected = -1 if ssn.task_order_fn(left, right) else (
        1 if ssn.task_order_fn(right, left) else 0)
    assert ssn.task_order_total(left, right) == expected


@settings(max_examples=100, deadline=None)
@given(answers=ANSWERS, names=st.tuples(st.sampled_from("abc"), st.sampled_from("abc")),
       times=st.tuples(st.sampled_from([0.0, 1.0]), st.sampled_from([0.0, 1.0])))
def test_job_order_total_matches_job_order_fn(
    answers: list[int], names: tuple[str, str], times: tuple[float, float]
) -> None:
    ssn = session(fixed_orders(answers, "job_order"))
    left, right = (JobInfo.from_podgroup(PodGroup(n, "ns", creation_time=t))
                   for n, t in zip(names, times, strict=True))
    expected = -1 if ssn.job_order_fn(left, right) else (
        1 if ssn.job_order_fn(right, left) else 0)
    assert ssn.job_order_total(left, right) == expected


@pytest.mark.parametrize("point", ["job_order", "task_order"])
def test_a_raising_order_plugin_is_named(point: str) -> None:
    def boom(left: Any, right: Any) -> int:
        raise ZeroDivisionError("division by zero")

    def register(ssn: Session, name: str) -> None:
        if point == "job_order":
            ssn.add_job_order_fn(name, boom)
        else:
            ssn.add_task_order_fn(name, boom)

    ssn = session([("calm", fixed_orders([0], point)[0][1]), ("fragile", register)])
    with pytest.raises(PluginError, match=f"plugin 'fragile' raised in {point}: ZeroDivision"):
        if point == "job_order":
            ssn.job_order_total(JobInfo.from_podgroup(PodGroup("a", "ns")),
                                JobInfo.from_podgroup(PodGroup("b", "ns")))
        else:
            ssn.task_order_total(TaskInfo.create("ns", "a", "ns/pg"),
                                 TaskInfo.create("ns", "b", "ns/pg"))


AMOUNTS = st.sampled_from([0.0, 0.05, 0.1, 1.0, 500.0, 1000.0, 1500.0, -1.0, math.nan])


@st.composite
def resources(draw: st.DrawFn) -> Resource:
    res = Resource(draw(AMOUNTS), draw(AMOUNTS))
    for name in draw(st.lists(st.sampled_from([PODS, "nvidia.com/gpu", "rdma/hca"]),
                              unique=True)):
        res.scalars[name] = draw(AMOUNTS)
    return res


@settings(max_examples=400, deadline=None)
@given(allocated=resources(), deserved=resources(), request=resources())
def test_proportion_fits_is_less_equal_with_dimension_of_the_sum(
    allocated: Resource, deserved: Resource, request: Resource
) -> None:
    attr = QueueAttr("q", 1, deserved=deserved)
    attr.usage.allocated = allocated
    expected, _ = allocated.clone().add(request).less_equal_with_dimension(deserved, request)
    assert _fits(attr, request) == expected


@settings(max_examples=400, deadline=None)
@given(allocated=resources(), reference=resources())
def test_dominant_share_is_the_largest_share(allocated: Resource, reference: Resource) -> None:
    result = 0.0
    for name in reference.resource_names():
        ratio = share(allocated.get(name), reference.get(name))
        result = max(result, ratio)  # a NaN ratio is never kept
    assert dominant_share(allocated, reference) == result
