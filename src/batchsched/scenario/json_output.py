"""The decisions as JSON text: exactly ``json.dumps(obj, indent=1)``, written faster.

With ``indent`` set, the json module encodes with its pure-Python encoder, one
generator step per value; on 50,000 binds and the per-job maps that takes longer
than the rest of the output. The decisions object has a known, shallow shape
(dicts and lists of strings, numbers and small dicts of them), so it is written
here with the C-accelerated string quoting of the json module and ``str.join``.

Every scalar is spelled the way json's encoder spells it (its checks, in its
order). Anything outside the known shape (other containers, non-string keys,
deeper nesting, unknown objects) sends the whole object to ``json.dumps``, so
the text, or the error, is always the json module's own.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Sequence
from itertools import chain, islice
from json.encoder import encode_basestring_ascii
from operator import add, attrgetter
from typing import Any, TextIO

import attrs

__all__ = ["MappedMembers", "decision_pieces", "dumps_decisions", "write_decisions"]

_INFINITY = float("inf")

#: Containers deeper than this are not the decisions' shape (top-level object ->
#: section -> per-job, per-task or per-queue map or event -> a queue's allocated
#: quantities or pod-group counts -> scalars); the bound also keeps a
#: self-containing object from recursing here: json.dumps reports it instead.
_MAX_DEPTH = 4

#: indent=1: a member of a container at depth d starts a line with d + 1 spaces; the
#: closing bracket starts one with d spaces.
_LINE_STARTS = ["\n" + " " * depth for depth in range(_MAX_DEPTH + 1)]
_MEMBER_SEPARATORS = ["," + line_start for line_start in _LINE_STARTS]


class _OtherShapeError(Exception):
    """A value this writer does not encode itself."""


#: Members of a large section encoded and joined at a time: the text of 100,000 pod
#: groups is then held once, in pieces, instead of as member strings, the joined
#: section and the joined whole at the same moment.
_PIECE_MEMBERS = 4096


def dumps_decisions(obj: Any) -> str:
    """``json.dumps(obj, indent=1)``, byte for byte (the CLI's ``--output json``)."""
    try:
        return _value(obj, 0)
    except _OtherShapeError:
        return json.dumps(obj, indent=1)


def decision_pieces(obj: Any) -> list[str]:
    """:func:`dumps_decisions`'s text cut in pieces (their concatenation is that text).

    Every piece is encoded before any is returned, so a value of another shape still
    gets the json module's own text, or error, whole.
    """
    if type(obj) is not dict or not obj:
        return [dumps_decisions(obj)]
    try:
        return list(_pieces(obj))
    except _OtherShapeError:
        return [json.dumps(obj, indent=1)]


def _pieces(obj: dict[Any, Any]) -> Iterator[str]:
    """The text of a non-empty dict in pieces, each encoded when asked for (raises
    ``_OtherShapeError`` on reaching a value of another shape)."""
    yield "{"
    yield _LINE_STARTS[1]
    for i, (key, value) in enumerate(obj.items()):
        if i:
            yield _MEMBER_SEPARATORS[1]
        yield f"{_key(key)}: "
        yield from _section_pieces(value)
    yield _LINE_STARTS[0] + "}"


@attrs.frozen
class MappedMembers:
    """A top-level list section for :func:`write_decisions` whose members are made as
    they are written: ``convert(item)`` for each of ``items``, a chunk at a time (the
    events of 100,000 pod groups are then never all held as dicts). Written exactly as
    the list of converted members would be."""

    items: Sequence[Any]
    convert: Callable[[Any], Any]
    #: When given: ``convert(item)`` is the map of these attributes of the item, by
    #: their names (the events' ``to_dict``); string members are then written from the
    #: attributes, without making the maps.
    fields: tuple[str, ...] = ()

    def __len__(self) -> int:
        return len(self.items)

    def chunks(self) -> Iterator[list[Any]]:
        """The converted members, ``_PIECE_MEMBERS`` at a time."""
        items = self.items
        for start in range(0, len(items), _PIECE_MEMBERS):
            yield [self.convert(item) for item in items[start:start + _PIECE_MEMBERS]]

    def strings_only(self) -> bool:
        """Whether ``fields`` are given and every item's are strings."""
        if not self.fields:
            return False
        # Every value's type, gathered by C loops (a Python test per value cost a
        # second on the events of 100,000 pod groups). An item without the fields
        # is written through ``convert``.
        try:
            return set(map(type, chain.from_iterable(map(self._values(), self.items)))) \
                <= {str}
        except AttributeError:
            return False

    def _values(self) -> Callable[[Any], tuple[Any, ...]]:
        """An item's ``fields``, as a tuple however many they are."""
        if len(self.fields) == 1:
            single = attrgetter(self.fields[0])
            return lambda item: (single(item),)
        return attrgetter(*self.fields)

    def string_member_chunks(self, depth: int) -> Iterator[list[str]]:
        """The members' text at ``depth``, ``_PIECE_MEMBERS`` at a time, when
        :meth:`strings_only` (what the converted maps would be written as)."""
        opening = "{" + _LINE_STARTS[depth + 2]
        separator = _MEMBER_SEPARATORS[depth + 2]
        closing = _LINE_STARTS[depth + 1] + "}"
        encode = encode_basestring_ascii
        names = [encode(name) + ": " for name in self.fields]
        values = self._values()
        items = self.items
        join = separator.join
        for start in range(0, len(items), _PIECE_MEMBERS):
            yield [opening + join(map(add, names, map(encode, values(item)))) + closing
                   for item in items[start:start + _PIECE_MEMBERS]]


def write_decisions(obj: Any, out: TextIO) -> None:
    """Write :func:`dumps_decisions`'s text to ``out``, a piece at a time.

    The object's shape is checked first (:func:`_fits`): a decision-shaped object is
    then encoded and written piece by piece, so no more than one piece's text is
    held at a time; any other object gets the json module's own text, or error,
    before anything is written.
    """
    if type(obj) is not dict or not obj or not _fits(obj, 0):
        if type(obj) is dict and any(type(value) is MappedMembers for value in obj.values()):
            obj = {key: [member for chunk in value.chunks() for member in chunk]
                   if type(value) is MappedMembers else value for key, value in obj.items()}
        out.write(dumps_decisions(obj))
        return
    for piece in _pieces(obj):
        out.write(piece)


def _fits(value: Any, depth: int) -> bool:
    """Whether :func:`_value` encodes ``value`` at ``depth`` itself (without
    ``_OtherShapeError``): the same checks, without the text."""
    kind = type(value)
    if kind is str or kind is int:
        return True
    if kind is MappedMembers:
        return depth == 1 and (value.strings_only()
                               or all(_fits(chunk, depth) for chunk in value.chunks()))
    if kind is dict:
        if not value:
            return True
        if depth >= _MAX_DEPTH:
            return False
        if not (set(map(type, value)) <= _STR or all(isinstance(k, str) for k in value)):
            return False
        if set(map(type, value.values())) <= _PLAIN:
            return True
        return all(_fits(member, depth + 1) for member in value.values())
    if kind is list:
        if not value:
            return True
        if depth >= _MAX_DEPTH:
            return False
        if set(map(type, value)) <= _PLAIN:
            return True
        return all(_fits(member, depth + 1) for member in value)
    return isinstance(value, (str, int, float)) or value is None


#: Member types encoded as scalars whatever the depth (bool is an int).
_PLAIN = frozenset({str, int, float, bool, type(None)})
_STR = frozenset({str})


def _section_pieces(value: Any) -> Iterator[str]:
    """A top-level section's text (depth 1), in pieces of at most ``_PIECE_MEMBERS``
    members."""
    kind = type(value)
    if kind is MappedMembers:
        yield from _mapped_pieces(value)
        return
    if (kind is not dict and kind is not list) or len(value) <= _PIECE_MEMBERS:
        yield _value(value, 1)
        return
    yield ("{" if kind is dict else "[") + _LINE_STARTS[2]
    items = iter(value.items()) if kind is dict else iter(value)
    for start in range(0, len(value), _PIECE_MEMBERS):
        chunk = list(islice(items, _PIECE_MEMBERS))
        if start:
            yield _MEMBER_SEPARATORS[2]
        encoded = (_dict_members(dict(chunk), 1) if kind is dict
                   else _list_members(chunk, 1))
        yield _MEMBER_SEPARATORS[2].join(encoded)
    yield _LINE_STARTS[1] + ("}" if kind is dict else "]")


def _mapped_pieces(value: MappedMembers) -> Iterator[str]:
    """A :class:`MappedMembers` section's text (depth 1), a chunk at a time."""
    if not len(value):
        yield "[]"
        return
    yield "[" + _LINE_STARTS[2]
    members = (value.string_member_chunks(1) if value.strings_only()
               else (_list_members(chunk, 1) for chunk in value.chunks()))
    for i, chunk in enumerate(members):
        if i:
            yield _MEMBER_SEPARATORS[2]
        yield _MEMBER_SEPARATORS[2].join(chunk)
    yield _LINE_STARTS[1] + "]"


def _value(value: Any, depth: int) -> str:
    kind = type(value)
    if kind is str:
        return encode_basestring_ascii(value)
    if kind is dict:
        return _container("{", _dict_members(value, depth), "}", depth) if value else "{}"
    if kind is list:
        return _container("[", _list_members(value, depth), "]", depth) if value else "[]"
    if kind is int:
        return int.__repr__(value)
    return _scalar(value)


def _dict_members(mapping: dict[Any, Any], depth: int) -> list[str]:
    if depth >= _MAX_DEPTH:
        raise _OtherShapeError
    if type(next(iter(mapping.values()))) is str:
        # Most maps are strings to strings: both quoted by the C function, which
        # refuses anything but a string with a TypeError.
        try:
            return [f"{encode_basestring_ascii(k)}: {encode_basestring_ascii(v)}"
                    for k, v in mapping.items()]
        except TypeError:
            pass
    return [f"{_key(k)}: {_value(v, depth + 1)}" for k, v in mapping.items()]


def _list_members(items: list[Any], depth: int) -> list[str]:
    if depth >= _MAX_DEPTH:
        raise _OtherShapeError
    first = type(items[0])
    if first is str:
        try:
            return [encode_basestring_ascii(v) for v in items]
        except TypeError:
            pass
    elif first is dict and depth + 1 < _MAX_DEPTH:
        # A list of string maps (the events): each written here as _value would write
        # it, without two calls per map; anything else in it goes through _value.
        opening = "{" + _LINE_STARTS[depth + 2]
        separator = _MEMBER_SEPARATORS[depth + 2]
        closing = _LINE_STARTS[depth + 1] + "}"
        encode = encode_basestring_ascii
        try:
            return [
                opening + separator.join([f"{encode(k)}: {encode(v)}" for k, v in item.items()])
                + closing if type(item) is dict and item else _value(item, depth + 1)
                for item in items
            ]
        except TypeError:
            pass
    return [_value(v, depth + 1) for v in items]


def _container(opening: str, members: list[str], closing: str, depth: int) -> str:
    return (opening + _LINE_STARTS[depth + 1] + _MEMBER_SEPARATORS[depth + 1].join(members)
            + _LINE_STARTS[depth] + closing)


def _key(key: Any) -> str:
    if isinstance(key, str):
        return encode_basestring_ascii(key)
    raise _OtherShapeError  # json turns numbers, booleans and None into key strings


def _scalar(value: Any) -> str:
    # json.encoder's checks in json.encoder's order, so subclasses (a str enum, a
    # bool) come out the way json writes them.
    if isinstance(value, str):
        return encode_basestring_ascii(value)
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, int):
        return int.__repr__(value)
    if isinstance(value, float):
        return _float(value)
    raise _OtherShapeError


def _float(value: float) -> str:
    if value != value:  # noqa: PLR0124 - NaN is the one float unequal to itself
        return "NaN"
    if value == _INFINITY:
        return "Infinity"
    if value == -_INFINITY:
        return "-Infinity"
    return float.__repr__(value)
