from __future__ import annotations

from fractions import Fraction

import pytest
from hypothesis import given
from hypothesis import strategies as st

from batchsched.errors import QuantityError
from batchsched.kube.quantity import canonical_quantity, milli_value, parse_quantity, value


@pytest.mark.parametrize(
    ("raw", "milli"),
    [("500m", 500), ("2", 2000), (2, 2000), (1.5, 1500), ("0.1", 100), ("1k", 1_000_000),
     ("1e3", 1_000_000), ("100u", 1), ("1n", 1), ("+3", 3000)],
)
def test_milli_value(raw: object, milli: int) -> None:
    assert milli_value(raw) == milli


@pytest.mark.parametrize(
    ("raw", "whole"),
    [("1Gi", 2**30), ("1G", 10**9), ("1Mi", 2**20), ("128974848", 128974848), ("1.5Gi", 3 * 2**29),
     ("129e6", 129_000_000), ("500m", 1), ("1Ki", 1024)],
)
def test_value_rounds_up_like_kubernetes(raw: object, whole: int) -> None:
    assert value(raw) == whole


@pytest.mark.parametrize("raw", ["1Qi", "abc", "", "1.2.3", "Gi", "1 Gi", None, True, [], {}, "1e",
                                 float("nan"), float("inf")])
def test_malformed_quantities_are_refused(raw: object) -> None:
    with pytest.raises(QuantityError):
        parse_quantity(raw)


def test_error_message_quotes_the_value() -> None:
    with pytest.raises(QuantityError, match='"1Qi" is not a quantity'):
        parse_quantity("1Qi")


# -- canonical form (Quantity.String) -----------------------------------------------------------

@pytest.mark.parametrize(("amount", "scale", "binary", "text"), [
    (2_000_000, -3, False, "2k"), (1500, -3, False, "1500m"), (100, -3, False, "100m"),
    (1000, -3, False, "1"), (0, -3, False, "0"), (12_000_000, -3, False, "12k"),
    (10**10, 0, False, "10G"), (1, 0, False, "1"), (-2500, -3, False, "-2500m"),
    (2**32, 0, True, "4Gi"), (6 * 2**20, 0, True, "6Mi"), (1536, 0, True, "1536"),
    (1000, 0, True, "1k"), (1023, 0, True, "1023"), (1024, 0, True, "1Ki"),
    (10**9, 0, True, "1000000000"), (-2048, 0, True, "-2Ki"), (2**60, 0, True, "1Ei"),
])
def test_canonical_form_as_kubernetes_writes_it(amount: int, scale: int, binary: bool,
                                                 text: str) -> None:
    assert canonical_quantity(amount, scale, binary=binary) == text


@given(st.integers(-(2**63), 2**63 - 1), st.sampled_from([0, -3]), st.booleans())
def test_canonical_form_reads_back_as_the_same_amount(amount: int, scale: int,
                                                     binary: bool) -> None:
    text = canonical_quantity(amount, scale, binary=binary and scale == 0)
    assert parse_quantity(text) == Fraction(amount) * Fraction(10) ** scale
