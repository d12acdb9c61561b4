"""Scores and arguments computed with Go's arithmetic, where it decides near-ties:
Volcano's operation order, int64 products that wrap, ``math.Pow`` and yaml.v2's
integer types. The scenarios (data/go-arithmetic) were checked against the same
expressions run in Go."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from batchsched.framework.arguments import Arguments
from batchsched.kube.go_math import go_pow
from batchsched.kube.go_strconv import int64
from batchsched.scenario import check_scenario, load_scenario, scenario_files

DATA = Path(__file__).parent / "data" / "go-arithmetic"


@pytest.mark.parametrize("path", scenario_files(DATA), ids=lambda p: p.name)
def test_scenario(path: Path) -> None:
    result = check_scenario(load_scenario(path))
    assert result.passed, result.failures


# math.Pow(x, n) printed by Go 1.19 (amd64): repeated squaring of the mantissa.
GO_POW = [
    (0.8, 2, 0.6400000000000001), (0.8, 3, 0.5120000000000001), (0.8, 4, 0.4096000000000002),
    (0.8, 5, 0.3276800000000002), (0.9, 7, 0.47829690000000014), (0.3, 3, 0.027),
    (0.99, 12, 0.8863848717161291), (10.0, 300, 1.0000000000000006e300),
    (0.1, 400, 0.0), (math.inf, 2, math.inf), (0.0, 0, 1.0),
]


@pytest.mark.parametrize(("x", "n", "expected"), GO_POW)
def test_go_pow_matches_go(x: float, n: int, expected: float) -> None:
    assert repr(go_pow(x, float(n))) == repr(expected)


# Signs, infinities and negative bases, as Go 1.19 prints them.
GO_POW_SIGNED = [
    (-0.0, -7.0, -math.inf), (-0.0, 3.0, -0.0), (-math.inf, 3.0, -math.inf),
    (-math.inf, 2.0, math.inf), (-2.0, 3.0, -8.0), (-0.5, 3.0, -0.125),
    (-0.0, -2.0, math.inf), (-1.0, math.inf, 1.0), (2.0, -math.inf, 0.0),
    (-1.5, 1e20, math.inf),
]


@pytest.mark.parametrize(("x", "y", "expected"), GO_POW_SIGNED)
def test_go_pow_signs_match_go(x: float, y: float, expected: float) -> None:
    got = go_pow(x, y)
    assert got == expected and math.copysign(1, got) == math.copysign(1, expected)


@pytest.mark.parametrize(("x", "y"), [(-2.0, 0.5), (-2.0, -0.5), (-8.0, 1 / 3)])
def test_go_pow_of_a_negative_to_a_fraction_is_nan(x: float, y: float) -> None:
    assert math.isnan(go_pow(x, y))


def test_go_pow_of_nan_to_the_zero_is_one() -> None:
    assert go_pow(math.nan, 0.0) == 1.0
    assert math.isnan(go_pow(math.nan, 1.5))


def test_int64_wraps() -> None:
    assert int64(100 * 92233720368547759) == -9223372036854775716
    assert int64(2**63 - 1) == 2**63 - 1


@pytest.mark.parametrize(("value", "as_int", "as_float"), [
    (2**63 - 1, 2**63 - 1, float(2**63 - 1)),
    (2**63, 7, 7.0),              # yaml.v2's uint64: neither int nor float64
    (-(2**63), -(2**63), -(2.0**63)),
    (-(2**63) - 1, 7, -(2.0**63)),  # yaml.v2's float64: not an int
])
def test_integers_past_int64_are_not_go_ints(value: int, as_int: int, as_float: float) -> None:
    arguments = Arguments({"k": value})
    assert arguments.get_int("k", 7) == as_int
    assert arguments.get_float("k", 7.0) == as_float


def test_a_signed_integer_past_int64_is_a_yaml_v2_float() -> None:
    """yaml.v2 tries ParseInt, then ParseUint (no sign), then ParseFloat."""
    from batchsched.kube.go_yaml import load_first_document, resolved

    doc = resolved(load_first_document(
        "a: +9223372036854775808\nb: 9223372036854775808\nc: -9223372036854775809\n"))
    assert doc == {"a": 9.223372036854776e18, "b": 2**63, "c": -9.223372036854776e18}
    assert isinstance(doc["a"], float) and isinstance(doc["c"], float)
    assert Arguments({"k": doc["a"]}).get_float("k", 7.0) == 9.223372036854776e18
