"""JSON decoded as Go's ``encoding/json`` decodes it into a typed value.

Device plugins write JSON into annotations that Volcano decodes into Go structs; what
Go accepts, refuses or leaves alone decides whether a node has devices at all. The
rules kept here:

* syntax: standard JSON only (``NaN`` and ``Infinity`` are errors);
* a struct's fields match a key exactly, else case-insensitively (Unicode simple
  folding, so the long s, U+017F, is ``s``); keys naming no field are skipped unread; a key given
  twice sets the field twice, the later value last;
* ``null`` sets a pointer, map, slice or interface to nil and leaves anything else as
  it was;
* integers must be integer literals within the type's range (no fraction, no
  exponent; an unsigned type refuses any sign), floats must not overflow, strings and
  booleans must be of their JSON kind;
* an interface value (``any``) takes objects as maps, arrays as lists and numbers as
  floats;
* an escaped surrogate that is not half of a pair reads as U+FFFD (Go's strings are
  UTF-8: it has no other way to hold it).

:func:`marshal` writes JSON as Go's ``json.Marshal`` does: no blanks, ``<``, ``>``,
``&``, U+2028 and U+2029 escaped, other characters as they are.

A value of the wrong kind makes the whole decode fail (Go records the first such error
and the caller, seeing an error, uses none of the result): :class:`GoJsonError`.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from typing import Any

import attrs

__all__ = ["ANY", "GoJsonError", "GoType", "Int", "MapOf", "Ptr", "SliceOf", "Struct",
           "decode", "fold", "marshal"]

_LONE_SURROGATE = re.compile("[\ud800-\udfff]")
_MARSHAL_ESCAPES = str.maketrans({"<": "\\u003c", ">": "\\u003e", "&": "\\u0026",
                                  "\u2028": "\\u2028", "\u2029": "\\u2029"})


def marshal(value: Any) -> str:
    """``value`` (dicts in field order, lists, strings, numbers, booleans, None) as Go's
    ``json.Marshal`` writes it.

    >>> print(marshal([{"UUID": "npu<0>&卡"}]))
    [{"UUID":"npu\\u003c0\\u003e\\u0026卡"}]
    """
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    return _go_text(text).translate(_MARSHAL_ESCAPES)


def _go_text(text: str) -> str:
    """``text`` with each lone surrogate (Python's json keeps them) as U+FFFD."""
    if _LONE_SURROGATE.search(text) is None:
        return text
    return _LONE_SURROGATE.sub("\ufffd", text)


class GoJsonError(ValueError):
    """The text is not JSON, or a value does not fit its Go type."""


@attrs.frozen
class Int:
    """A Go integer type: its bit size and whether it is unsigned."""

    bits: int = 64
    unsigned: bool = False


@attrs.frozen
class MapOf:
    """``map[string]T``."""

    value: GoType


@attrs.frozen
class SliceOf:
    """``[]T``."""

    element: GoType


@attrs.frozen
class Ptr:
    """``*T``."""

    target: GoType


@attrs.frozen
class Struct:
    """A struct, by JSON field name (each name lower case ASCII, as struct tags are)."""

    fields: Mapping[str, GoType]
    name: str = "struct"


#: ``string``, ``bool``, ``float64`` and ``any`` (interface{}).
GoType = Int | MapOf | SliceOf | Ptr | Struct | str
ANY = "any"


class _Object(list[tuple[str, Any]]):
    """A JSON object as its key-value pairs, in order, duplicates kept."""


class _IntLiteral(int):
    text: str


class _FloatLiteral(float):
    text: str


def _int_literal(text: str) -> _IntLiteral:
    value = _IntLiteral(text)
    value.text = text
    return value


def _float_literal(text: str) -> _FloatLiteral:
    value = _FloatLiteral(text)
    value.text = text
    return value


def _no_constant(name: str) -> object:
    raise GoJsonError(f"invalid character in {name}")


def fold(name: str) -> str:
    """A name as Go's case-insensitive field match compares it."""
    return name.lower().replace("\u017f", "s")


def decode(text: str, go_type: GoType, *, what: str = "value") -> Any:
    """``text`` decoded into a zero value of ``go_type``; raises GoJsonError."""
    try:
        raw = json.loads(text, object_pairs_hook=_Object, parse_int=_int_literal,
                         parse_float=_float_literal, parse_constant=_no_constant)
    except GoJsonError:
        raise
    except (ValueError, RecursionError) as exc:
        raise GoJsonError(f"not JSON: {exc}") from exc
    return _decode(raw, go_type, _zero(go_type), what)


def _zero(go_type: GoType) -> Any:
    if isinstance(go_type, Int):
        return 0
    if isinstance(go_type, Struct):
        return {name: _zero(field) for name, field in go_type.fields.items()}
    if isinstance(go_type, MapOf | SliceOf | Ptr):
        return None
    return {"string": "", "bool": False, "float64": 0.0, ANY: None}[go_type]


def _decode(raw: Any, go_type: GoType, current: Any, where: str) -> Any:
    if raw is None:
        return None if isinstance(go_type, MapOf | SliceOf | Ptr) or go_type == ANY \
            else current
    if isinstance(go_type, Ptr):
        return _decode(raw, go_type.target, _zero(go_type.target), where)
    if isinstance(go_type, Int):
        return _integer(raw, go_type, where)
    if isinstance(go_type, Struct):
        if not isinstance(raw, _Object):
            raise _mismatch(raw, go_type.name, where)
        out = dict(current)
        for raw_key, value in raw:
            key = _go_text(raw_key)
            name = key if key in go_type.fields else next(
                (field for field in go_type.fields if field == fold(key)), None)
            if name is not None:
                out[name] = _decode(value, go_type.fields[name], out[name], f"{where}.{key}")
        return out
    if isinstance(go_type, MapOf):
        if not isinstance(raw, _Object):
            raise _mismatch(raw, "map", where)
        mapping = dict(current) if current is not None else {}
        for key, value in raw:
            mapping[_go_text(key)] = _decode(value, go_type.value, _zero(go_type.value),
                                             f"{where}.{key}")
        return mapping
    if isinstance(go_type, SliceOf):
        if not isinstance(raw, list) or isinstance(raw, _Object):
            raise _mismatch(raw, "slice", where)
        return [_decode(item, go_type.element, _zero(go_type.element), f"{where}[{i}]")
                for i, item in enumerate(raw)]
    if go_type == "string":
        if not isinstance(raw, str):
            raise _mismatch(raw, "string", where)
        return _go_text(raw)
    if go_type == "bool":
        if not isinstance(raw, bool):
            raise _mismatch(raw, "bool", where)
        return raw
    if go_type == "float64":
        return _float(raw, where)
    return _any(raw, where)


def _integer(raw: Any, go_type: Int, where: str) -> int:
    text = getattr(raw, "text", None)
    if text is None or isinstance(raw, bool | _FloatLiteral):
        raise _mismatch(raw, _int_name(go_type), where)
    value = int(raw)
    if go_type.unsigned:
        low, high = 0, 2**go_type.bits - 1
        in_range = not text.startswith("-") and value <= high
    else:
        low, high = -(2 ** (go_type.bits - 1)), 2 ** (go_type.bits - 1) - 1
        in_range = low <= value <= high
    if not in_range:
        raise _mismatch(raw, _int_name(go_type), where)
    return value


def _float(raw: Any, where: str) -> float:
    if isinstance(raw, bool) or not isinstance(raw, _IntLiteral | _FloatLiteral):
        raise _mismatch(raw, "float64", where)
    try:
        value = float(raw)
    except OverflowError:
        raise _mismatch(raw, "float64", where) from None
    if not math.isfinite(value):
        raise _mismatch(raw, "float64", where)
    return value


def _any(raw: Any, where: str) -> Any:
    if isinstance(raw, _Object):
        return {_go_text(key): _any(value, f"{where}.{key}") for key, value in raw}
    if isinstance(raw, list):
        return [_any(item, f"{where}[{i}]") for i, item in enumerate(raw)]
    if isinstance(raw, _IntLiteral | _FloatLiteral) and not isinstance(raw, bool):
        return _float(raw, where)
    if isinstance(raw, str):
        return _go_text(raw)
    return raw


def _int_name(go_type: Int) -> str:
    return f"{'u' if go_type.unsigned else ''}int{go_type.bits}"


def _mismatch(raw: Any, type_name: str, where: str) -> GoJsonError:
    shown = getattr(raw, "text", None) or json.dumps(_plain(raw))
    return GoJsonError(f"{where}: cannot decode {shown} into a Go {type_name}")


def _plain(raw: Any) -> Any:
    if isinstance(raw, _Object):
        return {key: _plain(value) for key, value in raw}
    if isinstance(raw, list):
        return [_plain(item) for item in raw]
    return raw
