from __future__ import annotations

import pytest

from batchsched.errors import QuantityError
from batchsched.kube.quantity import milli_value, parse_quantity, value


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
