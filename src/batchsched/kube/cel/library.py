"""CEL's functions: the standard ones, Kubernetes' string extensions, and its quantity
and semver libraries."""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Mapping
from fractions import Fraction
from typing import Any

from batchsched.errors import QuantityError
from batchsched.kube.cel.re2 import Re2Error
from batchsched.kube.cel.re2_search import Re2Search
from batchsched.kube.cel.values import (
    INT_MAX,
    INT_MIN,
    SEMVER_PATTERN,
    CelEvaluationError,
    CelType,
    Quantity,
    Semver,
    UInt,
    checked,
    checked_uint,
    overload,
    type_name,
)
from batchsched.kube.go_strconv import format_g, parse_float, parse_int, parse_uint
from batchsched.kube.quantity import parse_quantity

__all__ = ["FUNCTIONS", "METHODS"]

def _size(value: Any) -> int:
    if isinstance(value, (str, bytes, list, Mapping)):
        return len(value)
    raise overload("size", value)


def _to_int(value: Any) -> int:
    if type(value) in (int, UInt):
        return checked(int(value))
    if type(value) is float:
        if math.isnan(value) or not INT_MIN <= value < 2.0**63:
            raise CelEvaluationError("double is out of range for int")
        return int(value)
    if type(value) is str:
        number, ok = parse_int(value, 64)  # cel-go's strconv.ParseInt(s, 10, 64)
        if not ok:
            raise CelEvaluationError(f"cannot convert {value!r} to int")
        return number
    raise overload("int", value)


def _to_uint(value: Any) -> UInt:
    if type(value) in (int, UInt):
        return checked_uint(int(value))
    if type(value) is float:
        if math.isnan(value) or not 0 <= value < 2.0**64:
            raise CelEvaluationError("double is out of range for uint")
        return UInt(int(value))
    if type(value) is str:
        number, ok = parse_uint(value, 64)  # cel-go's strconv.ParseUint(s, 10, 64)
        if not ok:
            raise CelEvaluationError(f"cannot convert {value!r} to uint")
        return UInt(number)
    raise overload("uint", value)


def _to_double(value: Any) -> float:
    if type(value) in (int, UInt, float):
        return float(value)
    if type(value) is str:
        number, ok = parse_float(value)  # cel-go's strconv.ParseFloat(s, 64)
        if not ok:
            raise CelEvaluationError(f"cannot convert {value!r} to double")
        return number
    raise overload("double", value)


def _to_string(value: Any) -> str:
    if type(value) is str:
        return value
    if type(value) is bool:
        return "true" if value else "false"
    if type(value) in (int, UInt):
        return str(int(value))
    if type(value) is float:
        return format_g(value)  # cel-go: fmt.Sprintf("%g", value)
    if type(value) is bytes:
        return value.decode("utf-8", errors="replace")
    if isinstance(value, Quantity):
        return value.text
    if isinstance(value, Semver):
        return value.text
    raise overload("string", value)


def _to_bool(value: Any) -> bool:
    if type(value) is bool:
        return value
    if type(value) is str and value in ("true", "false", "True", "False", "TRUE", "FALSE",
                                        "t", "f", "1", "0"):
        return value in ("true", "True", "TRUE", "t", "1")
    raise overload("bool", value)


def _to_bytes(value: Any) -> bytes:
    if type(value) is bytes:
        return value
    if type(value) is str:
        return value.encode("utf-8")
    raise overload("bytes", value)


@functools.lru_cache(maxsize=256)
def _pattern(pattern: str) -> Re2Search:
    """An RE2 pattern (cel-go's ``matches`` uses Go's ``regexp``), read as RE2 reads it
    and searched in linear time."""
    try:
        return Re2Search(pattern)
    except Re2Error as exc:
        raise CelEvaluationError(f"invalid regular expression {pattern!r}: {exc}") from None


def _string_method(name: str, fn: Callable[..., Any]) -> Callable[..., Any]:
    def apply(target: Any, *args: Any) -> Any:
        if type(target) is not str or not all(type(a) in (str, int) for a in args):
            raise overload(name, target, *args)
        return fn(target, *args)
    return apply


#: cel-go's quote: CEL's escape sequences written out, the rest as it is.
_QUOTED = {"\a": "\\a", "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r",
           "\t": "\\t", "\v": "\\v", "\\": "\\\\", '"': '\\"'}


def _quote(text: str) -> str:
    """``strings.quote`` (the strings extension, version 1, which Kubernetes' CEL
    environment has): the text in double quotes, escapes written out; a lone
    surrogate (no valid rune) becomes U+FFFD."""
    body = "".join(_QUOTED.get(c, "\ufffd" if 0xD800 <= ord(c) <= 0xDFFF else c)
                   for c in text)
    return f'"{body}"'


def _quantity(text: Any) -> Quantity:
    if type(text) is not str:
        raise overload("quantity", text)
    try:
        return Quantity(parse_quantity(text), text)
    except QuantityError:
        raise CelEvaluationError(
            f"quantities must match the regular expression "
            f"'^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$': {text}") from None


def _is_quantity(text: Any) -> bool:
    if type(text) is not str:
        raise overload("isQuantity", text)
    try:
        parse_quantity(text)
    except QuantityError:
        return False
    return True


def _quantity_operand(name: str, target: Any, other: Any) -> tuple[Fraction, Fraction]:
    if not isinstance(target, Quantity):
        raise overload(name, target, other)
    if isinstance(other, Quantity):
        return target.value, other.value
    if type(other) is int:
        return target.value, Fraction(other)
    raise overload(name, target, other)


def _compare_to(target: Any, other: Any) -> int:
    if isinstance(target, Semver) and isinstance(other, Semver):
        return target.compare(other)
    left, right = _quantity_operand("compareTo", target, other)
    return (left > right) - (left < right)


def _greater(target: Any, other: Any) -> bool:
    return _compare_to(target, other) > 0


def _less(target: Any, other: Any) -> bool:
    return _compare_to(target, other) < 0


def _quantity_add(target: Any, other: Any) -> Quantity:
    left, right = _quantity_operand("add", target, other)
    return Quantity(left + right)


def _quantity_sub(target: Any, other: Any) -> Quantity:
    left, right = _quantity_operand("sub", target, other)
    return Quantity(left - right)


def _quantity_only(name: str, fn: Callable[[Fraction], Any]) -> Callable[[Any], Any]:
    def apply(target: Any) -> Any:
        if not isinstance(target, Quantity):
            raise overload(name, target)
        return fn(target.value)
    return apply


def _as_integer(value: Fraction) -> int:
    if value.denominator != 1 or not INT_MIN <= value <= INT_MAX:
        raise CelEvaluationError("cannot convert value to integer")
    return int(value)


def _normalized(text: str) -> str:
    """Kubernetes' semver normalisation: no ``v`` prefix, a missing minor or patch read
    as 0, no leading zeros."""
    text = text.removeprefix("v")
    cut = min((i for i in (text.find("-"), text.find("+")) if i >= 0), default=len(text))
    parts = text[:cut].split(".")
    parts += ["0"] * (3 - len(parts))
    return ".".join((p.lstrip("0") or "0") if p.isdigit() else p for p in parts) + text[cut:]


def _semver(text: Any, normalize: Any = False) -> Semver:
    if type(text) is not str or type(normalize) is not bool:
        raise overload("semver", text, normalize)
    try:
        return Semver(_normalized(text) if normalize else text)
    except ValueError as exc:
        raise CelEvaluationError(str(exc)) from None


def _is_semver(text: Any, normalize: Any = False) -> bool:
    if type(text) is not str or type(normalize) is not bool:
        raise overload("isSemver", text, normalize)
    return SEMVER_PATTERN.match(_normalized(text) if normalize else text) is not None


def _semver_part(name: str) -> Callable[[Any], int]:
    def apply(target: Any) -> int:
        if not isinstance(target, Semver):
            raise overload(name, target)
        return int(getattr(target, name))
    return apply


def _out_of_range(index: int) -> str:
    raise CelEvaluationError(f"index out of range: {index}")


def _substring(text: str, start: int, end: int) -> str:
    if not 0 <= start <= end <= len(text):
        raise CelEvaluationError(f"index out of range: {start if start > len(text) else end}")
    return text[start:end]


def _index_of(text: str, part: str, offset: int = 0) -> int:
    """cel-go's ``indexOf`` (v0.26.0): an empty part is found at the offset itself, a
    negative offset is out of range, one past the end finds nothing."""
    if not part:
        return offset
    if offset < 0:
        _out_of_range(offset)
    return text.find(part, offset) if offset < len(text) else -1


def _last_index_of(text: str, part: str, *offset: int) -> int:
    """cel-go's ``lastIndexOf``: the last match starting at or before the offset (the
    end of the text when none is given), searching backward."""
    if not offset:
        return len(text) if not part else text.rfind(part)
    start = offset[0]
    if not part:
        return start
    if start < 0:
        _out_of_range(start)
    if start >= len(text):
        return -1
    return text.rfind(part, 0, start + len(part))


def _replace(text: str, old: str, new: str, *count: int) -> str:
    """Go's ``strings.Replace``: a negative count (or none) replaces every match."""
    if type(old) is not str or type(new) is not str or len(count) > 1 or any(
            type(n) is not int for n in count):
        raise overload("replace", text, old, new, *count)
    return text.replace(old, new, count[0] if count else -1)


def _split(text: str, separator: str, limit: int) -> list[str]:
    """Go's ``strings.SplitN``: at most ``limit`` parts (all when negative, none when
    0); an empty separator splits between characters."""
    if limit == 0:
        return []
    if separator:
        return text.split(separator, limit - 1 if limit > 0 else -1)
    if limit < 0 or limit > len(text):
        return list(text)
    return [*text[:limit - 1], text[limit - 1:]]


def _join(target: Any, separator: str = "") -> str:
    if not isinstance(target, list) or not all(type(item) is str for item in target):
        raise overload("join", target)
    return separator.join(target)


def _matches(target: Any, pattern: Any) -> bool:
    if type(target) is not str or type(pattern) is not str:
        raise overload("matches", target, pattern)
    return _pattern(pattern).search(target)


FUNCTIONS: dict[str, Callable[..., Any]] = {
    "size": _size,
    "int": _to_int,
    "uint": _to_uint,
    "double": _to_double,
    "string": _to_string,
    "bool": _to_bool,
    "bytes": _to_bytes,
    "dyn": lambda value: value,
    "type": lambda value: CelType(type_name(value)),
    "quantity": _quantity,
    "isQuantity": _is_quantity,
    "semver": _semver,
    "isSemver": _is_semver,
    "strings.quote": _string_method("strings.quote", _quote),
}

METHODS: dict[str, Callable[..., Any]] = {
    "size": _size,
    "matches": _matches,
    "startsWith": _string_method("startsWith", str.startswith),
    "endsWith": _string_method("endsWith", str.endswith),
    "contains": _string_method("contains", lambda s, part: part in s),
    "lowerAscii": _string_method(
        "lowerAscii", lambda s: "".join(c.lower() if c.isascii() else c for c in s)),
    "upperAscii": _string_method(
        "upperAscii", lambda s: "".join(c.upper() if c.isascii() else c for c in s)),
    "trim": _string_method("trim", str.strip),
    "indexOf": _string_method("indexOf", _index_of),
    "lastIndexOf": _string_method("lastIndexOf", _last_index_of),
    "split": _string_method("split", lambda s, sep, limit=-1: _split(s, sep, limit)),
    "charAt": _string_method("charAt", lambda s, i: s[i] if 0 <= i < len(s) else (
        "" if i == len(s) else _out_of_range(i))),
    "substring": _string_method("substring", lambda s, start, end=None: _substring(
        s, start, len(s) if end is None else end)),
    "replace": _string_method("replace", _replace),
    "join": _join,
    "compareTo": _compare_to,
    "isGreaterThan": _greater,
    "isLessThan": _less,
    "add": _quantity_add,
    "sub": _quantity_sub,
    "asInteger": _quantity_only("asInteger", _as_integer),
    "asApproximateFloat": _quantity_only("asApproximateFloat", float),
    "isInteger": _quantity_only("isInteger", lambda v: v.denominator == 1),
    "sign": _quantity_only("sign", lambda v: (v > 0) - (v < 0)),
    "major": _semver_part("major"),
    "minor": _semver_part("minor"),
    "patch": _semver_part("patch"),
}


