"""Numbers read, and added, as Go reads and adds them.

Volcano's device code reads numbers out of annotations with ``strconv.ParseInt`` or
``strconv.Atoi`` and often ignores the error, keeping whatever value came back: 0 for
text that is not a number, the nearest bound of the type for a number out of its
range. Python's ``int()`` reads more (``1_000``, surrounding blanks, non-ASCII digits)
and never clamps, so the same annotation would mean something else here. Device ledgers count in
``int32`` and divide truncating toward zero (:func:`int32`, :func:`divide`). Weights
in annotations are read with ``strconv.ParseFloat`` (:func:`parse_float`). Messages
quote text as Go's ``%q`` does (:func:`quote`).
"""

from __future__ import annotations

import math
import re
from decimal import Decimal

__all__ = ["atoi", "divide", "format_g", "int32", "parse_float", "parse_int", "parse_uint",
           "quote"]

_UINT64_MAX = 2**64 - 1
#: The first magnitude whose product by 10 no longer fits 64 bits (Go's ``cutoff``).
_TIMES_TEN_CUTOFF = _UINT64_MAX // 10 + 1


def parse_int(text: str, bit_size: int = 64) -> tuple[int, bool]:
    """Go's ``strconv.ParseInt(text, 10, bit_size)``: ``(value, ok)``.

    An optional sign, then ASCII decimal digits only. On a syntax error the value is 0;
    out of range it is the type's nearest bound. Go stops at the first character that
    overflows, so digits past that point are not checked: ``"99999999999x"`` is out of
    range (the bound), not a syntax error.

    >>> parse_int("-12", 32), parse_int("1_000", 32), parse_int("99999999999", 32)
    ((-12, True), (0, False), (2147483647, False))
    """
    if not 0 < bit_size <= 64:
        raise ValueError(f"bit size {bit_size} is not between 1 and 64")
    body, negative = text, False
    if body[:1] == "+":
        body = body[1:]
    elif body[:1] == "-":
        body, negative = body[1:], True
    magnitude, status = _parse_uint(body, bit_size)
    if status == "syntax":
        return 0, False
    cutoff = 1 << (bit_size - 1)
    if not negative and magnitude >= cutoff:
        return cutoff - 1, False
    if negative and magnitude > cutoff:
        return -cutoff, False
    return (-magnitude if negative else magnitude), status == "ok"


def parse_uint(text: str, bit_size: int = 64) -> tuple[int, bool]:
    """Go's ``strconv.ParseUint(text, 10, bit_size)``: ``(value, ok)``; no sign, ASCII
    decimal digits only; 0 on a syntax error, the type's largest out of range.

    >>> parse_uint("42"), parse_uint("+42"), parse_uint("9" * 30)
    ((42, True), (0, False), (18446744073709551615, False))
    """
    if not 0 < bit_size <= 64:
        raise ValueError(f"bit size {bit_size} is not between 1 and 64")
    value, status = _parse_uint(text, bit_size)
    return value, status == "ok"


def format_g(value: float) -> str:
    """Go's ``strconv.FormatFloat(value, 'g', -1, 64)`` (and ``fmt``'s ``%g``): the
    shortest digits that read back as ``value``, in exponent form when the decimal
    exponent is below -4 or at least 6 (exponents of two digits at least).

    >>> format_g(1.0), format_g(123456789.0), format_g(1e-05), format_g(0.0001)
    ('1', '1.23456789e+08', '1e-05', '0.0001')
    """
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    sign = "-" if math.copysign(1.0, value) < 0 else ""
    if value == 0:
        return sign + "0"
    # repr gives the shortest digits that read back, as Go's shortest formatting does.
    shortest = Decimal(repr(abs(value))).normalize().as_tuple()
    digits = "".join(map(str, shortest.digits))
    point = len(digits) + int(shortest.exponent)  # digits before the decimal point
    decimal_exponent = point - 1
    if decimal_exponent < -4 or decimal_exponent >= 6:
        head, tail = digits[0], digits[1:]
        mark = "-" if decimal_exponent < 0 else "+"
        return (f"{sign}{head}{'.' + tail if tail else ''}e{mark}"
                f"{abs(decimal_exponent):02d}")
    if point <= 0:
        return f"{sign}0.{'0' * -point}{digits}"
    if point >= len(digits):
        return sign + digits + "0" * (point - len(digits))
    return f"{sign}{digits[:point]}.{digits[point:]}"


def atoi(text: str) -> int:
    """Go's ``strconv.Atoi`` on a 64-bit platform, the error ignored.

    >>> atoi("42"), atoi(" 42"), atoi("9" * 30)
    (42, 0, 9223372036854775807)
    """
    return parse_int(text, 64)[0]


def _parse_uint(text: str, bit_size: int) -> tuple[int, str]:
    """Go's ``strconv.ParseUint(text, 10, bit_size)``: the value and ``ok``, ``syntax``
    or ``range`` (the value is then the type's largest)."""
    if not text:
        return 0, "syntax"
    largest = (1 << bit_size) - 1
    value = 0
    for byte in text.encode("utf-8", "surrogatepass"):
        digit = byte - 0x30
        if not 0 <= digit <= 9:
            return 0, "syntax"  # a letter is a digit of some base, but not of 10
        if value >= _TIMES_TEN_CUTOFF:
            return largest, "range"
        value = value * 10 + digit
        if value > largest:
            return largest, "range"
    return value, "ok"


def int32(value: int) -> int:
    """Go's ``int32`` arithmetic: ``value`` wrapped to 32-bit two's complement.

    >>> int32(2**31), int32(-(2**31) - 1), int32(7)
    (-2147483648, 2147483647, 7)
    """
    return (value + 2**31) % 2**32 - 2**31


def int64(value: int) -> int:
    """Go's ``int64`` arithmetic: ``value`` wrapped to 64-bit two's complement.

    >>> int64(2**63), int64(100 * 92233720368547759)
    (-9223372036854775808, -9223372036854775716)
    """
    return (value + 2**63) % 2**64 - 2**63


def in_int64(value: int) -> bool:
    """Whether ``value`` is an int64: yaml.v2 reads a larger integer as a uint64 and a
    smaller one as a float64, which Go code asserting an ``int`` refuses.

    >>> in_int64(2**63 - 1), in_int64(2**63)
    (True, False)
    """
    return -(2**63) <= value < 2**63


def divide(numerator: int, denominator: int) -> int:
    """Go's integer ``/``: the quotient truncated toward zero (Python's ``//`` floors).

    >>> divide(-50, 100), divide(50, 100), divide(-150, 100)
    (0, 0, -1)
    """
    quotient = abs(numerator) // abs(denominator)
    return quotient if (numerator < 0) == (denominator < 0) else -quotient


#: Go's float syntax (``readFloat``), underscores allowed anywhere for now: a decimal
#: mantissa with an optional exponent, or a hexadecimal one with a mandatory ``p``
#: exponent. ASCII only: Go reads bytes.
_DECIMAL_FLOAT = re.compile(
    r"[+-]?(?=_*\.?_*[0-9])[0-9_]*(?:\.[0-9_]*)?(?:[eE][+-]?[0-9][0-9_]*)?", re.ASCII)
_HEX_FLOAT = re.compile(
    r"[+-]?0[xX](?=[0-9a-fA-F_.]*[0-9a-fA-F])[0-9a-fA-F_]*(?:\.[0-9a-fA-F_]*)?"
    r"[pP][+-]?[0-9][0-9_]*", re.ASCII)
_SPECIAL = {"inf": math.inf, "+inf": math.inf, "-inf": -math.inf, "infinity": math.inf,
            "+infinity": math.inf, "-infinity": -math.inf, "nan": math.nan}


def parse_float(text: str) -> tuple[float, bool]:
    """Go's ``strconv.ParseFloat(text, 64)``: ``(value, ok)``; the value is 0 for text
    that is not a number, and infinite (``ok`` false) for one beyond float64's range.

    Go reads hexadecimal mantissas (``0x1p2``), ``inf``, ``infinity`` and ``nan`` in
    any case, and underscores only between digits; not surrounding blanks nor
    non-ASCII digits, which Python's ``float()`` takes.

    >>> parse_float("0x1p2"), parse_float(" 4"), parse_float("1_000.5")
    ((4.0, True), (0.0, False), (1000.5, True))
    """
    special = _SPECIAL.get(text.lower()) if text.isascii() else None
    if special is not None:
        return special, True
    hexadecimal = _HEX_FLOAT.fullmatch(text) is not None
    if not hexadecimal and _DECIMAL_FLOAT.fullmatch(text) is None:
        return 0.0, False
    if "_" in text and not _underscores_ok(text):
        return 0.0, False
    plain = text.replace("_", "")
    try:
        value = float.fromhex(plain) if hexadecimal else float(plain)
    except OverflowError:
        return (-math.inf if plain.startswith("-") else math.inf), False
    return value, not math.isinf(value)


def _underscores_ok(text: str) -> bool:
    """Go's ``underscoreOK``: each underscore between two digits (a base prefix counts
    as a digit)."""
    body = text[1:] if text[:1] in "+-" else text
    saw = "^"
    hexadecimal = False
    start = 0
    if len(body) >= 2 and body[0] == "0" and body[1] in "bBoOxX":
        start, saw, hexadecimal = 2, "0", body[1] in "xX"
    for char in body[start:]:
        if "0" <= char <= "9" or (hexadecimal and char.lower() in "abcdef"):
            saw = "0"
        elif char == "_":
            if saw != "0":
                return False
            saw = "_"
        elif saw == "_":
            return False
        else:
            saw = "!"
    return saw != "_"


_GO_ESCAPES = {"\a": "\\a", "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r",
               "\t": "\\t", "\v": "\\v", "\\": "\\\\", '"': '\\"'}


def quote(text: str) -> str:
    """Go's ``strconv.Quote`` (what ``%q`` writes for a string): double quotes; the
    backslash escapes Go has a letter for; other control characters as ``\\xNN``
    (ASCII) or ``\\uNNNN``/``\\UNNNNNNNN``; printable characters as they are (Go's
    ``unicode.IsPrint`` and Python's ``isprintable`` keep the same categories; a
    character added in a Unicode version only one of the two knows differs)."""
    out = ['"']
    for char in text:
        escaped = _GO_ESCAPES.get(char)
        if escaped is not None:
            out.append(escaped)
        elif char.isprintable():
            out.append(char)
        elif ord(char) < 0x80:
            out.append(f"\\x{ord(char):02x}")
        elif ord(char) < 0x10000:
            out.append(f"\\u{ord(char):04x}")
        else:
            out.append(f"\\U{ord(char):08x}")
    out.append('"')
    return "".join(out)
