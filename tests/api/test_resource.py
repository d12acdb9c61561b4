"""Resource arithmetic and Volcano's comparison rules (api/resource_info.go)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from batchsched.api.resource import MIN_RESOURCE, DimensionDefault, Resource
from batchsched.errors import QuantityError

ZERO, INF = DimensionDefault.ZERO, DimensionDefault.INFINITY


def r(**kw: object) -> Resource:
    names = {"nvidia_com_gpu": "nvidia.com/gpu"}
    return Resource.from_mapping({names.get(k, k): v for k, v in kw.items()})


def test_units() -> None:
    res = Resource.from_mapping({"cpu": "1500m", "memory": "1Gi", "nvidia.com/gpu": 2, "pods": 110})
    assert res.milli_cpu == 1500
    assert res.memory == 2**30
    assert res.get("nvidia.com/gpu") == 2000  # scalars in milli-units
    assert res.get("pods") == 110  # pods is a plain count


def test_negative_quantity_is_refused() -> None:
    with pytest.raises(QuantityError, match="negative"):
        Resource.from_mapping({"cpu": "-1"})


def test_less_equal_epsilon() -> None:
    assert Resource(1000.05).less_equal(Resource(1000))  # within 0.1
    assert not Resource(1000.2).less_equal(Resource(1000))


def test_missing_scalar_on_the_right_is_zero_or_skipped() -> None:
    gpu = r(cpu=1, nvidia_com_gpu=1)
    cpu_only = r(cpu=2)
    assert not gpu.less_equal(cpu_only, ZERO)
    assert gpu.less_equal(cpu_only, INF)


def test_scalar_only_on_the_right_fails_less_equal_under_infinity() -> None:
    # Volcano's rule, kept as is: with Infinity, a dimension the right side has
    # and the left lacks makes LessEqual false.
    assert not r(cpu=1).less_equal(r(cpu=2, nvidia_com_gpu=1), INF)
    assert r(cpu=1).less_equal(r(cpu=2, nvidia_com_gpu=1), ZERO)


def test_less_equal_with_names() -> None:
    ok, short = r(cpu=3, memory="1Gi").less_equal_with_names(r(cpu=2, memory="2Gi"))
    assert not ok and short == ["cpu"]


def test_less_equal_with_dimension_looks_only_at_requested() -> None:
    used = r(cpu=3, memory="1Gi")
    cap = r(cpu=2, memory="2Gi")
    assert used.less_equal_with_dimension(cap, r(memory="1Gi")) == (True, [])
    assert used.less_equal_with_dimension(cap, r(cpu=1)) == (False, ["cpu"])


def test_fit_delta() -> None:
    delta = r(cpu=2, memory="1Gi").fit_delta(r(cpu=2))
    assert delta.milli_cpu == pytest.approx(-MIN_RESOURCE)
    assert delta.memory == 2**30  # not requested: untouched


def test_is_empty_ignores_pods() -> None:
    assert Resource(scalars={"pods": 1}).is_empty()
    assert not r(nvidia_com_gpu=1).is_empty()
    assert Resource(0.05).is_empty()


def test_sub_refuses_to_go_negative() -> None:
    with pytest.raises(ValueError, match="not sufficient"):
        r(cpu=1).sub(r(cpu=2))
    assert r(cpu=1).sub_unchecked(r(cpu=2)).milli_cpu == -1000


def test_set_max_and_min_dimension() -> None:
    a = r(cpu=1, memory="2Gi")
    assert a.clone().set_max(r(cpu=2, nvidia_com_gpu=1)) == r(cpu=2, memory="2Gi", nvidia_com_gpu=1)
    gpu = r(cpu=4, nvidia_com_gpu=4)
    assert gpu.clone().min_dimension(r(cpu=2), ZERO).get("nvidia.com/gpu") == 0
    assert gpu.clone().min_dimension(r(cpu=2), INF).get("nvidia.com/gpu") == 4000


def test_partly_comparisons() -> None:
    assert r(cpu=1, memory="4Gi").less_partly(r(cpu=2, memory="1Gi"))
    assert not r(cpu=3, memory="4Gi").less_partly(r(cpu=2, memory="1Gi"))
    assert r(cpu=2, memory="4Gi").less_equal_partly(r(cpu=2, memory="1Gi"))


amounts = st.floats(min_value=0, max_value=1e6, allow_nan=False)
resources = st.builds(
    lambda c, m, g: Resource(c, m, {"nvidia.com/gpu": g} if g else None), amounts, amounts, amounts
)


@given(resources, resources)
def test_add_then_subtract_round_trips(a: Resource, b: Resource) -> None:
    assert (a + b - b).equal(a)


@given(resources, resources)
def test_sum_dominates_each_part(a: Resource, b: Resource) -> None:
    assert a.less_equal(a + b) and b.less_equal(a + b)


@given(resources)
def test_clone_is_independent(a: Resource) -> None:
    twin = a.clone()
    twin.add(Resource(1, 1, {"x": 1}))
    assert not twin.equal(a) or a.milli_cpu > 1e15


@pytest.mark.parametrize("amount", ["-0.5m", "-1n", "-0.5", "-100u"])
def test_a_negative_amount_that_rounds_to_zero_is_still_refused(amount: str) -> None:
    # It was read as 0: the sign was checked after rounding up.
    with pytest.raises(QuantityError, match="negative"):
        Resource.from_mapping({"cpu": amount})


def test_a_quantity_of_many_digits_is_read_as_kubernetes_reads_it() -> None:
    # Python reads at most 4300 digits at once: a ValueError and a traceback before.
    assert Resource.from_mapping({"cpu": "0." + "0" * 4400 + "1"}).milli_cpu == 1


def test_the_infinite_resource_is_volcano_s() -> None:
    # math.inf made it no less-or-equal to itself, and inf - inf NaN.
    unbounded = Resource.infinite()
    assert unbounded.less_equal(unbounded)
    assert (unbounded - unbounded).is_empty()


@given(st.lists(st.builds(
    Resource,
    st.floats(0, 1e6, allow_nan=False),
    st.floats(0, 1e12, allow_nan=False),
    st.dictionaries(st.sampled_from(["nvidia.com/gpu", "pods", "example.com/fpga"]),
                    st.floats(0, 1e4, allow_nan=False), max_size=2),
), max_size=6))
def test_a_sum_is_the_additions_one_after_the_other(parts: list[Resource]) -> None:
    added = Resource()
    for part in parts:
        added.add(part)
    total = Resource.sum(iter(parts))
    assert (total.milli_cpu, total.memory, total.scalars) == (
        added.milli_cpu, added.memory, added.scalars)  # bit for bit, the same names
