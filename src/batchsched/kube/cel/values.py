"""CEL's values and operators: types, equality, ordering, arithmetic, field selection,
with cel-go's error texts."""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Callable, Mapping
from fractions import Fraction
from typing import Any

import attrs

__all__ = [
    "CelEvaluationError",
    "CelSyntaxError",
    "Node",
    "Quantity",
    "Semver",
    "UInt",
]

INT_MIN, INT_MAX = -(2**63), 2**63 - 1
UINT_MAX = 2**64 - 1

#: A compiled node: the activation (variables) in, the value out (or CelEvaluationError).
Node = Callable[[Mapping[str, Any]], Any]


class CelSyntaxError(ValueError):
    """The expression does not parse, or names a function CEL does not have here."""


class CelEvaluationError(Exception):
    """Evaluating the expression failed (cel-go's runtime error text)."""


class UInt(int):
    """A CEL ``uint`` (a Python int of its own type, so that ``1u`` and ``1`` differ in
    type as in CEL)."""


@functools.total_ordering
class Quantity:
    """A Kubernetes quantity as CEL's quantity library sees it (exact value)."""

    __slots__ = ("text", "value")

    def __init__(self, value: Fraction, text: str = "") -> None:
        self.value = value
        self.text = text or str(value)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Quantity) and self.value == other.value

    def __lt__(self, other: Quantity) -> bool:
        return self.value < other.value

    def __hash__(self) -> int:
        return hash(self.value)

    def __repr__(self) -> str:
        return f"quantity({self.text!r})"


# blang/semver v4's Parse, which Kubernetes' semver library calls: no identifier is
# empty, and a numeric one (of a version or a pre-release) has no leading zero.
_PRE_RELEASE_IDENTIFIER = r"(?:0|[1-9]\d*|\d*[A-Za-z-][0-9A-Za-z-]*)"
SEMVER_PATTERN = re.compile(
    r"^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)"
    rf"(?:-({_PRE_RELEASE_IDENTIFIER}(?:\.{_PRE_RELEASE_IDENTIFIER})*))?"
    r"(?:\+[0-9A-Za-z-]+(?:\.[0-9A-Za-z-]+)*)?$")


class Semver:
    """A semantic version as CEL's semver library and DRA's version attributes see it."""

    __slots__ = ("major", "minor", "patch", "pre", "text")

    def __init__(self, text: str) -> None:
        match = SEMVER_PATTERN.match(text)
        if match is None:
            raise ValueError(f"invalid semver: {text}")
        self.text = text
        self.major, self.minor, self.patch = int(match[1]), int(match[2]), int(match[3])
        self.pre: tuple[str, ...] = tuple(match[4].split(".")) if match[4] else ()

    def _key(self) -> tuple[Any, ...]:
        # A release sorts after its pre-releases; numeric identifiers before others.
        pre = tuple((0, int(p), "") if p.isdigit() else (1, 0, p) for p in self.pre)
        return (self.major, self.minor, self.patch, not self.pre, pre)

    def compare(self, other: Semver) -> int:
        left, right = self._key(), other._key()
        return (left > right) - (left < right)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Semver) and self.compare(other) == 0

    def __hash__(self) -> int:
        return hash(self._key())

    def __repr__(self) -> str:
        return f"semver({self.text!r})"



def variable(act: Mapping[str, Any], name: str) -> Any:
    try:
        return act[name]
    except KeyError:
        raise CelEvaluationError(f"no such attribute: {name}") from None


def show(value: Any) -> str:
    if isinstance(value, str):
        return value
    if value is True or value is False:
        return "true" if value else "false"
    return str(value)


@attrs.frozen
class CelType:
    """A type as a value (``type(x)``, ``int``): equal to the same type only."""

    name: str

    def __str__(self) -> str:
        return self.name


#: The type names an expression may use as values (``type(x) == int``).
TYPE_NAMES = frozenset({"int", "uint", "double", "bool", "string", "bytes", "list", "map",
                        "null_type", "type"})


def type_name(value: Any) -> str:
    if value is None:
        return "null_type"
    if isinstance(value, CelType):
        return "type"
    if type(value) is bool:
        return "bool"
    if type(value) is UInt:
        return "uint"
    if type(value) is int:
        return "int"
    if type(value) is float:
        return "double"
    if type(value) is str:
        return "string"
    if type(value) is bytes:
        return "bytes"
    if isinstance(value, list):
        return "list"
    if isinstance(value, Mapping):
        return "map"
    if isinstance(value, Quantity):
        return "kubernetes.Quantity"
    if isinstance(value, Semver):
        return "kubernetes.Semver"
    return type(value).__name__


def overload(name: str, *values: Any) -> CelEvaluationError:
    types = ", ".join(type_name(v) for v in values)
    return CelEvaluationError(f"no such overload: {name}({types})")


def select(target: Node, name: str) -> Node:
    def select(act: Mapping[str, Any]) -> Any:
        value = target(act)
        if isinstance(value, Mapping):
            try:
                return value[name]
            except KeyError:
                raise CelEvaluationError(f"no such key: {name}") from None
        raise CelEvaluationError(f"type '{type_name(value)}' does not support field "
                                 f"selection")
    return select


def has_field(value: Any, name: str) -> bool:
    if isinstance(value, Mapping):
        return name in value
    raise CelEvaluationError(f"invalid type for field selection: {type_name(value)}")


def subscript(value: Any, key: Any) -> Any:
    if isinstance(value, Mapping):
        try:
            return value[key]
        except (KeyError, TypeError):
            raise CelEvaluationError(f"no such key: {show(key)}") from None
    if isinstance(value, list):
        if not _is_integer(key) and not (type(key) is float and key.is_integer()):
            raise overload("_[_]", value, key)
        position = int(key)
        if not 0 <= position < len(value):
            raise CelEvaluationError(f"index out of bounds: {position}")
        return value[position]
    raise overload("_[_]", value, key)


def _is_integer(value: Any) -> bool:
    return type(value) is int or type(value) is UInt


def _is_number(value: Any) -> bool:
    return type(value) in (int, UInt, float)


def conditional(condition: Node, then: Node, otherwise: Node) -> Node:
    def choose(act: Mapping[str, Any]) -> Any:
        test = condition(act)
        if type(test) is not bool:
            raise overload("_?_:_", test)
        return then(act) if test else otherwise(act)
    return choose


def _logical(name: str, decisive: bool) -> Callable[[Node, Node], Node]:
    """``&&`` (``decisive`` False) or ``||`` (True): either side being ``decisive``
    decides, even when the other fails (CEL's commutative error absorption); otherwise
    an error of either side stands."""
    def combine(left: Node, right: Node) -> Node:
        def evaluate(act: Mapping[str, Any]) -> Any:
            try:
                first = left(act)
                first_error = None
            except CelEvaluationError as exc:
                first, first_error = None, exc
            if first is decisive:
                return decisive
            second = right(act)  # an error here stands, unless the left side decided
            if second is decisive:
                return decisive
            if first_error is not None:
                raise first_error
            if type(first) is not bool or type(second) is not bool:
                raise overload(name, first, second)
            return not decisive
        return evaluate
    return combine


logical_and = _logical("_&&_", False)
logical_or = _logical("_||_", True)


def logical_not(value: Any) -> bool:
    if type(value) is not bool:
        raise overload("!_", value)
    return not value


def negate(value: Any) -> Any:
    if type(value) is int:
        return checked(-value)
    if type(value) is float:
        return -value
    raise overload("-_", value)


def binary(fn: Callable[[Any, Any], Any], left: Node, right: Node) -> Node:
    return lambda act: fn(left(act), right(act))


def checked(value: int) -> int:
    if not INT_MIN <= value <= INT_MAX:
        raise CelEvaluationError("integer overflow")
    return value


def checked_uint(value: int) -> UInt:
    if not 0 <= value <= UINT_MAX:
        raise CelEvaluationError("unsigned integer overflow")
    return UInt(value)


def _arithmetic(name: str, int_fn: Callable[[int, int], int],
                float_fn: Callable[[float, float], float]) -> Callable[[Any, Any], Any]:
    def apply(left: Any, right: Any) -> Any:
        kinds = (type(left), type(right))
        if kinds == (int, int):
            return checked(int_fn(left, right))
        if kinds == (UInt, UInt):
            return checked_uint(int_fn(left, right))
        if kinds == (float, float):
            return float_fn(left, right)
        raise overload(name, left, right)
    return apply


def add(left: Any, right: Any) -> Any:
    if type(left) is str and type(right) is str:
        return left + right
    if type(left) is bytes and type(right) is bytes:
        return left + right
    if isinstance(left, list) and isinstance(right, list):
        return left + right
    return _plus(left, right)


def _truncated_division(left: int, right: int) -> int:
    if right == 0:
        raise CelEvaluationError("division by zero")
    quotient = abs(left) // abs(right)
    return quotient if (left >= 0) == (right >= 0) else -quotient


def _truncated_modulo(left: int, right: int) -> int:
    if right == 0:
        raise CelEvaluationError("modulus by zero")
    return left - right * _truncated_division(left, right)


def _float_divide(left: float, right: float) -> float:
    if right == 0:
        if left == 0 or math.isnan(left):
            return math.nan
        return math.copysign(math.inf, left) * math.copysign(1.0, right)
    return left / right


_plus = _arithmetic("_+_", lambda a, b: a + b, lambda a, b: a + b)
subtract = _arithmetic("_-_", lambda a, b: a - b, lambda a, b: a - b)
multiply = _arithmetic("_*_", lambda a, b: a * b, lambda a, b: a * b)
divide = _arithmetic("_/_", _truncated_division, _float_divide)


def modulo(left: Any, right: Any) -> Any:
    kinds = (type(left), type(right))
    if kinds == (int, int):
        return checked(_truncated_modulo(left, right))
    if kinds == (UInt, UInt):
        return UInt(_truncated_modulo(left, right))
    raise overload("_%_", left, right)


def _equal(left: Any, right: Any) -> bool:
    if _is_number(left) and _is_number(right):
        return bool(left == right)
    if isinstance(left, Quantity | Semver) or isinstance(right, Quantity | Semver):
        if type(left) is not type(right):  # the libraries define equality among themselves
            raise overload("_==_", left, right)
        return bool(left == right)
    if type(left) is not type(right):
        # Maps of any kind compare alike; anything else of another type is unequal.
        both_maps = isinstance(left, Mapping) and isinstance(right, Mapping)
        if not both_maps and not (isinstance(left, list) and isinstance(right, list)):
            return False
    if isinstance(left, list):
        return len(left) == len(right) and all(map(_equal, left, right))
    if isinstance(left, Mapping):
        if len(left) != len(right):
            return False
        for key, value in left.items():
            if key not in right or not _equal(value, right[key]):
                return False
        return True
    return bool(left == right)


def _compare(name: str, left: Any, right: Any) -> int:
    comparable = (_is_number(left) and _is_number(right)) or (
        type(left) is type(right) and type(left) in (str, bytes, bool))
    if not comparable:
        raise overload(name, left, right)
    return int(left > right) - int(left < right)


def _in(item: Any, container: Any) -> bool:
    if isinstance(container, list):
        return any(_equal(item, member) for member in container)
    if isinstance(container, Mapping):
        return any(_equal(item, key) for key in container)
    raise overload("@in", item, container)


RELATIONS: dict[str, Callable[[Any, Any], Any]] = {
    "==": _equal,
    "!=": lambda a, b: not _equal(a, b),
    "<": lambda a, b: _compare("_<_", a, b) < 0,
    "<=": lambda a, b: _compare("_<=_", a, b) <= 0,
    ">": lambda a, b: _compare("_>_", a, b) > 0,
    ">=": lambda a, b: _compare("_>=_", a, b) >= 0,
    "in": _in,
}


def quantifier(name: str, target: Node, variable: str, predicate: Node) -> Node:
    def evaluate(act: Mapping[str, Any]) -> Any:
        items = _range(name, target(act))
        scope = dict(act)
        matched = 0
        error: CelEvaluationError | None = None
        for item in items:
            scope[variable] = item
            try:
                verdict = predicate(scope)
            except CelEvaluationError as exc:
                error = error or exc  # as && and ||: a decisive element wins over errors
                continue
            if type(verdict) is not bool:
                raise overload(name, verdict)
            if name == "all" and not verdict:
                return False
            if name == "exists" and verdict:
                return True
            matched += verdict
        if error is not None:
            raise error
        if name == "all":
            return True
        if name == "exists":
            return False
        return matched == 1  # exists_one
    return evaluate


def map_macro(target: Node, variable: str, first: Node, second: Node | None) -> Node:
    def evaluate(act: Mapping[str, Any]) -> list[Any]:
        scope = dict(act)
        out: list[Any] = []
        for item in _range("map", target(act)):
            scope[variable] = item
            if second is None:
                out.append(first(scope))
                continue
            keep = first(scope)
            if type(keep) is not bool:
                raise overload("map", keep)
            if keep:
                out.append(second(scope))
        return out
    return evaluate


def _range(name: str, value: Any) -> list[Any]:
    if isinstance(value, list):
        return value
    if isinstance(value, Mapping):
        return list(value)
    raise overload(name, value)


