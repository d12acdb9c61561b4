"""Go's ``math.Pow``, step for step: Volcano's scores raise weights to powers with it,
and its repeated squaring differs from the C library's ``pow`` in the last place
(``Pow(0.8, 4)`` is 0.4096000000000002 in Go, ``0.8 ** 4`` 0.4096000000000001 here),
which decides near-ties between nodes."""

from __future__ import annotations

import math

__all__ = ["go_pow"]


def _is_odd_int(value: float) -> bool:
    if abs(value) >= 2.0**53:
        return False  # every float this large is an even integer
    fraction, integral = math.modf(value)
    return fraction == 0 and int(integral) % 2 == 1


def go_pow(x: float, y: float) -> float:
    """``math.Pow(x, y)`` as Go computes it (its special cases, then repeated
    squaring of the mantissa for the integral part of ``y``). The fractional part of
    ``y``, when there is one, goes through this library's ``exp`` and ``log``, which
    may differ from Go's in the last place.

    >>> go_pow(0.8, 4), go_pow(0.0, 0.0), go_pow(math.nan, 0.0), go_pow(2.0, -2.0)
    (0.4096000000000002, 1.0, 1.0, 0.25)
    """
    if y == 0 or x == 1:
        return 1.0
    if y == 1:
        return x
    if math.isnan(x) or math.isnan(y):
        return math.nan
    if x == 0:
        odd = math.copysign(1.0, x) < 0 and _is_odd_int(y)
        if y < 0:
            return -math.inf if odd else math.inf
        return x if odd else 0.0
    if math.isinf(y):
        if x == -1:
            return 1.0
        return 0.0 if (abs(x) < 1) == (y > 0) else math.inf
    if math.isinf(x):
        if x < 0:
            return go_pow(1 / x, -y)
        return 0.0 if y < 0 else math.inf
    if y == 0.5:
        return math.sqrt(x) if x >= 0 else math.nan  # Go's Sqrt of a negative is NaN
    if y == -0.5:
        return 1 / math.sqrt(x) if x >= 0 else math.nan
    fraction, integral = math.modf(abs(y))
    if fraction != 0 and x < 0:
        return math.nan
    if integral >= 2.0**63:
        if x == -1:
            return 1.0
        return 0.0 if (abs(x) < 1) == (y > 0) else math.inf
    a1, ae = 1.0, 0
    if fraction != 0:
        if fraction > 0.5:
            fraction -= 1
            integral += 1
        a1 = math.exp(fraction * math.log(x))
    x1, xe = math.frexp(x)
    i = int(integral)
    while i != 0:
        if not -(1 << 12) <= xe <= (1 << 12):
            ae += xe  # catastrophic overflow: Ldexp takes it
            break
        if i & 1:
            a1 *= x1
            ae += xe
        x1 *= x1
        xe <<= 1
        if x1 < 0.5:
            x1 += x1
            xe -= 1
        i >>= 1
    if y < 0:
        a1 = 1 / a1
        ae = -ae
    try:
        return math.ldexp(a1, ae)
    except OverflowError:
        return math.copysign(math.inf, a1)
