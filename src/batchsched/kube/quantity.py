"""Kubernetes resource quantities: ``"500m"``, ``"1Gi"``, ``"1G"``, ``"2"``, ``1.5``, ``"1e3"``.

Parsing is exact (:class:`fractions.Fraction`), and the conversions round up,
as Kubernetes' ``Quantity.MilliValue`` and ``Quantity.Value`` do.

>>> milli_value("500m"), milli_value(2), value("1Gi"), value("1G")
(500, 2000, 1073741824, 1000000000)
"""

from __future__ import annotations

import math
import re
from fractions import Fraction

from batchsched.errors import QuantityError

__all__ = ["as_int64_of_milli", "canonical_quantity", "canonical_text", "milli_value",
           "parse_quantity", "value"]

_BINARY = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60}
_DECIMAL = {
    "n": Fraction(1, 10**9),
    "u": Fraction(1, 10**6),
    "m": Fraction(1, 10**3),
    "": Fraction(1),
    "k": Fraction(10**3),
    "M": Fraction(10**6),
    "G": Fraction(10**9),
    "T": Fraction(10**12),
    "P": Fraction(10**15),
    "E": Fraction(10**18),
}
#: The largest exponent read (``1e400`` is far past any resource amount, and past what
#: Kubernetes' 64-bit values hold).
_MAX_EXPONENT = 400
_QUANTITY = re.compile(
    r"(?P<sign>[+-]?)(?P<number>(?:\d+(?:\.\d*)?|\.\d+))"
    r"(?:(?P<suffix>Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE])|[eE](?P<exp>[+-]?\d+))?",
    re.ASCII,  # Kubernetes reads 0-9 only, not other scripts' digits
)


def parse_quantity(raw: object) -> Fraction:
    """Return the exact value of a quantity given as a string or a number.

    Raises :class:`~batchsched.errors.QuantityError` for anything else
    (booleans, ``None``, ``"1Qi"``, ``"abc"``, ``" 1"``, NaN and infinities).
    """
    if isinstance(raw, bool) or raw is None:
        raise QuantityError(raw)
    if isinstance(raw, int):
        return Fraction(raw)
    if isinstance(raw, float):
        if not math.isfinite(raw):
            raise QuantityError(raw, "not finite")
        return Fraction(str(raw))
    if not isinstance(raw, str):
        raise QuantityError(raw)
    # The whole text, as Kubernetes' ParseQuantity reads it: no surrounding blanks.
    match = _QUANTITY.fullmatch(raw)
    if match is None:
        raise QuantityError(raw)
    number = _exact(match["number"], raw)
    if match["sign"] == "-":
        number = -number
    if match["exp"] is not None:
        exponent = int(match["exp"])
        if abs(exponent) > _MAX_EXPONENT:
            # Exact powers of ten this large take minutes; no resource needs them.
            raise QuantityError(raw, "exponent out of range")
        return number * Fraction(10) ** exponent
    suffix = match["suffix"] or ""
    if suffix in _BINARY:
        return number * _BINARY[suffix]
    return number * _DECIMAL[suffix]


def _exact(number: str, raw: str) -> Fraction:
    """``digits[.digits]`` exactly, however many digits (Python reads at most 4300 in
    one go; Kubernetes scans any number of them)."""
    whole, _, fraction = number.partition(".")
    if len(whole) + len(fraction) > _MOST_DIGITS:
        raise QuantityError(raw, "too many digits")
    value = Fraction(_digits(whole) if whole else 0)
    if fraction:
        value += Fraction(_digits(fraction), 10 ** len(fraction))
    return value


def _digits(text: str) -> int:
    value = 0
    for start in range(0, len(text), _CHUNK):
        chunk = text[start:start + _CHUNK]
        value = value * 10 ** len(chunk) + int(chunk)
    return value


#: Digits a quantity may have at most (far past any amount; bounds the work), and
#: how many are read at a time.
_MOST_DIGITS = 100_000
_CHUNK = 4000


def milli_value(raw: object) -> int:
    """The quantity in thousandths, rounded up (Kubernetes ``MilliValue``)."""
    return math.ceil(parse_quantity(raw) * 1000)


def value(raw: object) -> int:
    """The quantity as a whole number, rounded up (Kubernetes ``Value``)."""
    return math.ceil(parse_quantity(raw))


_INT64_MAX = 2**63 - 1


def as_int64_of_milli(milli: float) -> tuple[int, bool]:
    """Kubernetes' ``Quantity.AsInt64`` of a quantity kept in thousandths (as every
    scalar request is): ``(value, True)`` for a whole number within int64, else
    ``(0, False)``. The thousandths were rounded up when read, so a quantity finer
    than a thousandth reads as the next thousandth.

    >>> as_int64_of_milli(4000.0), as_int64_of_milli(4500.0), as_int64_of_milli(1e22)
    ((4, True), (0, False), (0, False))
    """
    whole = round(milli)
    if whole % 1000:
        return 0, False
    number = whole // 1000
    if not -_INT64_MAX - 1 <= number <= _INT64_MAX:
        return 0, False
    return number, True


_DECIMAL_SUFFIXES = {-9: "n", -6: "u", -3: "m", 0: "", 3: "k", 6: "M", 9: "G", 12: "T",
                     15: "P", 18: "E"}
_BINARY_SUFFIXES = {0: "", 1: "Ki", 2: "Mi", 3: "Gi", 4: "Ti", 5: "Pi", 6: "Ei"}


def _remove_factors(amount: int, base: int) -> tuple[int, int]:
    times = 0
    while amount and amount % base == 0:
        amount //= base
        times += 1
    return amount, times


def canonical_quantity(amount: int, scale: int = 0, *, binary: bool = False) -> str:
    """The text Kubernetes writes for the quantity ``amount * 10**scale`` built with
    ``NewScaledQuantity`` (``NewMilliQuantity``: scale -3) in the DecimalSI format, or,
    with ``binary``, ``NewQuantity`` in the BinarySI format: ``Quantity.String``'s
    canonical form, the largest suffix that keeps the number whole.

    >>> canonical_quantity(2000000, -3), canonical_quantity(1500, -3), canonical_quantity(1)
    ('2k', '1500m', '1')
    >>> [canonical_quantity(n, binary=True) for n in (2**32, 6 * 2**20, 1000, 3000, 0)]
    ['4Gi', '6Mi', '1k', '3000', '0']
    """
    if amount == 0:
        return "0"
    if binary and not -1024 < amount < 1024 and scale >= 0:
        number, exponent = _remove_factors(amount * 10**scale, 1024)
        if exponent in _BINARY_SUFFIXES:
            return f"{number}{_BINARY_SUFFIXES[exponent]}"
    # Decimal: trailing zeros become the exponent, which is then made a multiple of 3.
    number, times = _remove_factors(amount, 10)
    exponent = scale + times
    shift = exponent % 3
    number, exponent = number * 10**shift, exponent - shift
    suffix = _DECIMAL_SUFFIXES.get(exponent)
    return f"{number}{suffix}" if suffix is not None else f"{number}e{exponent}"


def canonical_text(raw: object) -> str:
    """The text Kubernetes writes back for a quantity it read (``Quantity.String``
    after ``ParseQuantity``): the format its suffix chose (a binary suffix: BinarySI;
    an exponent: DecimalExponent; else DecimalSI), in canonical form, to the nano.

    >>> [canonical_text(q) for q in ("16Gi", "1024Mi", "16G", "1500m", "0.5", "1e3", 8, "512Ki")]
    ['16Gi', '1Gi', '16G', '1500m', '500m', '1e3', '8', '512Ki']
    """
    amount = parse_quantity(raw)
    text = raw if isinstance(raw, str) else ""
    match = _QUANTITY.fullmatch(text) if text else None
    suffix = match["suffix"] if match is not None else None
    if suffix in _BINARY and amount.denominator == 1 and not -1024 < amount < 1024:
        return canonical_quantity(int(amount), binary=True)
    nanos = math.ceil(amount * 10**9)
    if match is None or match["exp"] is None:
        return canonical_quantity(nanos, -9)
    if nanos == 0:
        return "0"
    number, times = _remove_factors(nanos, 10)
    exponent = times - 9
    shift = exponent % 3
    number, exponent = number * 10**shift, exponent - shift
    return f"{number}e{exponent}" if exponent else str(number)
