"""YAML read as Go's ``gopkg.in/yaml.v2`` reads it into ``interface{}`` values.

Volcano reads its scheduler configuration with yaml.v2, whose plain scalars resolve
differently from PyYAML's: ``y``/``n`` are booleans, ``3e0`` and ``1_5`` numbers,
``0o17`` and ``017`` octal, ``1:30`` a string (PyYAML's sexagesimal 90), and dates
stay strings here (a configuration has no use for them). Only the first document of
a stream is read, as ``yaml.Unmarshal`` reads it. A plain mapping key is a
:class:`GoScalar` too: its text where Go decodes the mapping into a struct or a
string-keyed map (a configuration's fields, a plugin's arguments), its resolved
value where into ``interface{}`` (a mapping nested inside an argument's value, where
``on: 1`` has the boolean key true and ``1: 50`` the integer key 1):
:func:`resolved` gives the latter.
"""

from __future__ import annotations

import base64
import binascii
import math
import re
from typing import Any

import yaml

from batchsched.kube.go_strconv import parse_float

__all__ = ["ExcessiveAliasingError", "GoScalar", "GoYamlLoader", "check_aliasing",
           "load_first_document", "resolved", "text_keys"]

_BOOL = "tag:yaml.org,2002:bool"
_INT = "tag:yaml.org,2002:int"
_FLOAT = "tag:yaml.org,2002:float"
_NULL = "tag:yaml.org,2002:null"

#: yaml.v2's resolveMap: plain scalars it looks up.
_TRUE = {"y", "Y", "yes", "Yes", "YES", "on", "On", "ON", "true", "True", "TRUE"}
_FALSE = {"n", "N", "no", "No", "NO", "off", "Off", "OFF", "false", "False", "FALSE"}
_NULLS = {"", "~", "null", "Null", "NULL"}
_SPECIAL_FLOATS = {
    **dict.fromkeys((".nan", ".NaN", ".NAN"), math.nan),
    **dict.fromkeys((".inf", ".Inf", ".INF", "+.inf", "+.Inf", "+.INF"), math.inf),
    **dict.fromkeys(("-.inf", "-.Inf", "-.INF"), -math.inf),
}
#: yaml.v2's yamlStyleFloat.
_STYLE_FLOAT = re.compile(r"[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?")
_INT64 = 2**63
_UINT64 = 2**64


def resolve(text: str) -> tuple[str, Any]:
    """yaml.v2's ``resolve`` of a plain scalar: its tag and value."""
    if text == "<<":
        return "tag:yaml.org,2002:merge", text
    if text in _NULLS:
        return _NULL, None
    if text in _TRUE:
        return _BOOL, True
    if text in _FALSE:
        return _BOOL, False
    if text in _SPECIAL_FLOATS:
        return _FLOAT, _SPECIAL_FLOATS[text]
    head = text[0]
    if head == ".":
        number, ok = parse_float(text)
        return (_FLOAT, number) if ok else ("tag:yaml.org,2002:str", text)
    if head.isdigit() or head in "+-":
        plain = text.replace("_", "")
        integer = _go_int(plain)
        if integer is not None:
            return _INT, integer
        if _STYLE_FLOAT.fullmatch(plain):
            number, ok = parse_float(plain)
            if ok:
                return _FLOAT, number
        for prefix, sign in (("0b", 1), ("-0b", -1)):
            if plain.startswith(prefix) and plain[len(prefix):] and \
                    set(plain[len(prefix):]) <= {"0", "1"}:
                value = sign * int(plain[len(prefix):], 2)
                if -_INT64 <= value < _INT64:
                    return _INT, value
    return "tag:yaml.org,2002:str", text


def _go_int(text: str) -> int | None:
    """``strconv.ParseInt(text, 0, 64)``, else ``ParseUint(text, 0, 64)``: a sign,
    then a base prefix (0x, 0o, 0b, or a leading 0 for octal) and digits."""
    body, sign = text, 1
    if body[:1] in "+-":
        sign, body = (-1 if body[0] == "-" else 1), body[1:]
    if not body:
        return None
    base, digits = 10, body
    lowered = body[:2].lower()
    if lowered in ("0x", "0o", "0b"):
        base, digits = {"0x": 16, "0o": 8, "0b": 2}[lowered], body[2:]
    elif body[0] == "0" and len(body) > 1:
        base, digits = 8, body[1:]
    if not digits or not all(c in "0123456789abcdefABCDEF"[:base + (6 if base == 16 else 0)]
                             for c in digits):
        return None
    value = sign * int(digits, base)
    # ParseUint takes no sign: a "+" past int64 is no integer (it reads as a float).
    if -_INT64 <= value < _INT64 or (text[0] not in "+-" and value < _UINT64):
        return value
    return None


class GoScalar(str):
    """A plain scalar: its text (what yaml.v2 puts in a ``string`` field; a null's is
    ""), and in ``resolved`` the value it puts in an ``interface{}`` field."""

    resolved: Any

    def __new__(cls, text: str, resolved: Any) -> GoScalar:
        scalar = super().__new__(cls, text)
        scalar.resolved = resolved
        return scalar


def resolved(value: Any) -> Any:
    """``value`` with every :class:`GoScalar` replaced by its resolved value (as it
    is read into ``interface{}``)."""
    if isinstance(value, GoScalar):
        return value.resolved
    if isinstance(value, list):
        return [resolved(item) for item in value]
    if isinstance(value, dict):
        return {resolved(key): resolved(item) for key, item in value.items()}
    return value


def text_keys(value: Any) -> Any:
    """A mapping Go decodes into a string-keyed map (``map[string]interface{}``): its
    keys as text, its values :func:`resolved`."""
    if isinstance(value, dict):
        return {str(key): resolved(item) for key, item in value.items()}
    return resolved(value)


class GoYamlLoader(yaml.SafeLoader):
    """A SafeLoader whose plain scalars are :class:`GoScalar`: their text and the
    value yaml.v2 resolves them to."""

    yaml_implicit_resolvers: dict[Any, Any] = {}

    #: The ids of the mapping nodes yaml.v2 decodes into a struct (see
    #: :meth:`construct_document`).
    _structs: frozenset[int] = frozenset()

    def construct_document(self, node: Any) -> Any:
        """The document, its configuration's structs known first: yaml.v2 decodes a
        scheduler configuration's root, its tiers, their plugins and its configurations
        into structs, whose map fields (``metrics``, a plugin's or an action's
        ``arguments``) a key given twice fills twice; a mapping it decodes into
        ``interface{}`` (an argument's value) keeps a repeated key's last value. A
        ConfigMap whose configuration is a mapping (not text) has it under ``data``."""
        self._pairs_of: dict[int, list[tuple[yaml.Node, yaml.Node]]] = {}
        root = self._configuration_root(node)
        self._structs = frozenset(map(id, self._configuration_structs(root)))
        return super().construct_document(node)

    def pairs(self, node: yaml.MappingNode) -> list[tuple[yaml.Node, yaml.Node]]:
        """yaml.v2's pairs of a mapping: each merge key ``<<`` replaced by what it merges,
        where it stands, so a key after it overrides what it merged and a merge
        overrides the keys before it; of a sequence of mappings, the earlier ones win.
        (PyYAML lets every explicit key win.) The node itself is left as it is: it may
        be read elsewhere by other rules (a scenario's anchors)."""
        cache: dict[int, list[tuple[yaml.Node, yaml.Node]]] = self.__dict__.setdefault(
            "_pairs_of", {})
        found = cache.get(id(node))
        if found is None:
            found = cache[id(node)] = _merged_in_order(node)
        return found

    def _configuration_root(self, node: Any) -> Any:
        if not isinstance(node, yaml.MappingNode):
            return node
        for key, value in self.pairs(node):
            if isinstance(key, yaml.ScalarNode) and key.value == "data" \
                    and isinstance(value, yaml.MappingNode):
                node = value
                break
        for key, value in self.pairs(node):
            if isinstance(key, yaml.ScalarNode) and key.value == "volcano-scheduler.conf" \
                    and isinstance(value, yaml.MappingNode):
                return value
        return node

    def _configuration_structs(self, root: Any) -> list[yaml.MappingNode]:
        if not isinstance(root, yaml.MappingNode):
            return []
        structs = [root]
        for key, value in self.pairs(root):
            if not (isinstance(key, yaml.ScalarNode) and isinstance(value, yaml.SequenceNode)
                    and key.value in ("tiers", "configurations")):
                continue
            for entry in value.value:
                if not isinstance(entry, yaml.MappingNode):
                    continue
                if key.value == "configurations":
                    structs.append(entry)
                    continue
                for field, plugins in self.pairs(entry):  # a tier: its plugins
                    if (isinstance(field, yaml.ScalarNode) and field.value == "plugins"
                            and isinstance(plugins, yaml.SequenceNode)):
                        structs.extend(plugin for plugin in plugins.value
                                       if isinstance(plugin, yaml.MappingNode))
        return structs

    def construct_object(self, node: yaml.Node, deep: bool = False) -> Any:
        if isinstance(node, yaml.ScalarNode):
            if node.style is None and getattr(node, "implicit_tag", False):
                value = resolve(node.value)[1]
                return GoScalar("" if value is None else node.value, value)
            if node.tag != _STR and (node.tag in _RESOLVABLE or node.tag == _BINARY
                                     or not node.tag.startswith(_YAML_TAGS)):
                return _tagged(node)
        return super().construct_object(node, deep=deep)

    def compose_scalar_node(self, anchor: Any) -> yaml.ScalarNode:
        """PyYAML's, remembering whether the tag was resolved (no tag written)."""
        event = self.get_event()  # type: ignore[no-untyped-call]
        written = event.tag is not None and event.tag != "!"
        tag = event.tag if written else self.resolve(yaml.ScalarNode, event.value,
                                                     event.implicit)
        node = yaml.ScalarNode(tag, event.value, event.start_mark, event.end_mark,
                               style=event.style)
        node.implicit_tag = not written  # type: ignore[attr-defined]
        if anchor is not None:
            self.anchors[anchor] = node
        return node

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        """Keys as :class:`GoScalar` (their text, and their resolved value) for plain
        scalars, a scalar's text for the others (a quoted or tagged key)."""
        if not isinstance(node, yaml.MappingNode):
            raise yaml.constructor.ConstructorError(
                None, None, f"expected a mapping node, but found {node.id}", node.start_mark)
        mapping: dict[Any, Any] = {}
        pairs = self.pairs(node)
        if id(node) in self._structs:
            pairs = _repeated_mappings_merged(pairs)
        for key_node, value_node in pairs:
            if isinstance(key_node, yaml.ScalarNode):
                key = self.construct_object(key_node, deep=deep)
                if not isinstance(key, GoScalar):
                    key = key_node.value  # quoted or tagged: a string
            else:
                key = self.construct_object(key_node, deep=deep)
            try:
                hash(key)
            except TypeError:
                # yaml.v2 refuses a sequence or mapping as a key ("invalid map key").
                raise yaml.constructor.ConstructorError(
                    "while constructing a mapping", node.start_mark,
                    f"found a {'mapping' if isinstance(key_node, yaml.MappingNode) else 'sequence'}"
                    " as a key, which is no text", key_node.start_mark,
                ) from None
            mapping[key] = self.construct_object(value_node, deep=deep)
        return mapping

    def resolve(self, kind: Any, value: Any, implicit: Any) -> str:
        if kind is yaml.ScalarNode and implicit[0]:
            return resolve(value)[0]
        tag: str = super().resolve(kind, value, implicit)  # type: ignore[no-untyped-call]
        return tag


_MERGE = "tag:yaml.org,2002:merge"
_STR = "tag:yaml.org,2002:str"
_BINARY = "tag:yaml.org,2002:binary"
_TIMESTAMP = "tag:yaml.org,2002:timestamp"
_YAML_TAGS = "tag:yaml.org,2002:"
#: yaml.v2's resolvableTag: a scalar written with one of these is resolved, and must
#: resolve to it (a timestamp is kept as its text here).
_RESOLVABLE = {_STR, _BOOL, _INT, _FLOAT, _NULL, _TIMESTAMP}
#: The texts yaml.v2's parseTimestamp reads: a date, with a time after "T", "t" or
#: a space (then fractional seconds and a zone).
_TIMESTAMP_TEXT = re.compile(
    r"[0-9]{4}-[0-9]{1,2}-[0-9]{1,2}"
    r"(?:[Tt ][0-9]{1,2}:[0-9]{1,2}:[0-9]{1,2}(?:\.[0-9]+)?(?:Z|[+-][0-9]{2}:[0-9]{2})?)?")


def _tagged(node: yaml.ScalarNode) -> GoScalar:
    """A scalar written with a tag (``!!bool y``), as yaml.v2's ``resolve`` reads it: its
    text (what a string field takes) and the text resolved as a plain scalar would be,
    which must be of the tag written (an integer within int64 may be read as a float);
    else the file is refused, as yaml.v2 refuses it. ``!!binary`` is base64 for its
    text; a tag yaml.v2 does not resolve (``!custom``) leaves the text as it is."""
    tag, text = node.tag, node.value
    if tag == _BINARY:
        try:
            decoded = base64.b64decode(text.replace("\n", "").replace("\r", ""),
                                       validate=True).decode("utf-8", "surrogateescape")
        except (binascii.Error, ValueError):
            raise yaml.constructor.ConstructorError(
                None, None, "!!binary value contains invalid base64 data",
                node.start_mark) from None
        return GoScalar(decoded, decoded)
    if tag not in _RESOLVABLE:
        return GoScalar(text, text)
    if tag == _TIMESTAMP:
        if _TIMESTAMP_TEXT.fullmatch(text):
            return GoScalar(text, text)  # a configuration has no use for its time
        got, value = resolve(text) if text else (_NULL, None)
    else:
        got, value = resolve(text) if text else (_NULL, None)
        if got == tag:
            return GoScalar("" if value is None else text, value)
        if tag == _FLOAT and got == _INT and isinstance(value, int) \
                and -_INT64 <= value < _INT64:
            return GoScalar(text, float(value))
    short = {_BOOL: "!!bool", _INT: "!!int", _FLOAT: "!!float", _NULL: "!!null",
             _STR: "!!str", _TIMESTAMP: "!!timestamp"}
    raise yaml.constructor.ConstructorError(
        None, None, f"cannot decode {short.get(got, got)} `{text}` as a "
        f"{short.get(tag, tag)}", node.start_mark)


def _merged_in_order(node: yaml.MappingNode) -> list[tuple[yaml.Node, yaml.Node]]:
    """The pairs of ``node`` with each merge key replaced by what it merges, in place."""
    out: list[tuple[yaml.Node, yaml.Node]] = []
    for key_node, value_node in node.value:
        if key_node.tag != _MERGE:
            out.append((key_node, value_node))
            continue
        merged = value_node.value if isinstance(value_node, yaml.SequenceNode) \
            else [value_node]
        # yaml.v2 merges a sequence's mappings last first: the earlier ones win.
        for part in reversed(merged):
            if not isinstance(part, yaml.MappingNode):
                raise yaml.constructor.ConstructorError(
                    "while constructing a mapping", node.start_mark,
                    "map merge requires map or sequence of maps as the value",
                    part.start_mark)
            out.extend(_merged_in_order(part))
    return out


def _repeated_mappings_merged(pairs: list[tuple[yaml.Node, yaml.Node]]
                              ) -> list[tuple[yaml.Node, yaml.Node]]:
    """A struct's pairs with a key given twice whose values are both mappings made
    one, its entries in order (a later one wins): yaml.v2 decodes a repeated map field
    of a struct (a plugin's ``arguments``, ``metrics``) into the map it already made.
    A key repeated with a scalar or sequence keeps its last value, as yaml.v2 does."""
    out: list[tuple[yaml.Node, yaml.Node]] = []
    first: dict[str, int] = {}
    for key_node, value_node in pairs:
        if isinstance(key_node, yaml.ScalarNode) and not isinstance(value_node,
                                                                    yaml.MappingNode):
            # A null (or any other value) sets the field anew: a mapping after it makes
            # a fresh map.
            first.pop(key_node.value, None)
        if isinstance(key_node, yaml.ScalarNode) and isinstance(value_node, yaml.MappingNode):
            index = first.get(key_node.value)
            earlier = out[index][1] if index is not None else None
            if index is not None and isinstance(earlier, yaml.MappingNode):
                out[index] = (out[index][0], yaml.MappingNode(
                    earlier.tag, [*earlier.value, *value_node.value], earlier.start_mark,
                    value_node.end_mark, flow_style=earlier.flow_style))
                continue
            first[key_node.value] = len(out)
        out.append((key_node, value_node))
    return out


class ExcessiveAliasingError(yaml.YAMLError):
    """yaml.v2's "document contains excessive aliasing" (an alias bomb), or a document
    nested too deeply to read."""

    def __init__(self, problem: str) -> None:
        super().__init__(problem)
        self.problem = problem


def _allowed_alias_ratio(decoded: int) -> float:
    """yaml.v2's ``allowedAliasRatio``: 0.99 of the nodes decoded may come from
    aliases up to 400,000 nodes, 0.10 from 4,000,000 on, linear between."""
    if decoded <= 400_000:
        return 0.99
    if decoded >= 4_000_000:
        return 0.10
    return 0.99 - 0.89 * (decoded - 400_000) / 3_600_000


def check_aliasing(root: yaml.Node | None) -> None:
    """Raise :class:`ExcessiveAliasingError` where yaml.v2 refuses the document: it
    counts every node it decodes, those reached through an alias again each time,
    and gives up once more than 100 of over 1,000 came from aliases beyond
    :func:`_allowed_alias_ratio`. (PyYAML shares an aliased node; reading the
    document as Go does would expand it.)"""
    if root is None:
        return
    sizes: dict[int, int] = {}

    def size(node: yaml.Node) -> int:
        known = sizes.get(id(node))
        if known is None:
            known = sizes[id(node)] = 1 + sum(size(child) for child in _children(node))
        return known

    seen: set[int] = set()
    decoded = aliased = 0

    def walk(node: yaml.Node) -> None:
        nonlocal decoded, aliased
        if id(node) in seen:  # an alias: its whole node decoded again
            expanded = size(node)
            decoded += expanded
            aliased += expanded
            if (aliased > 100 and decoded > 1000
                    and aliased / decoded > _allowed_alias_ratio(decoded)):
                raise ExcessiveAliasingError("document contains excessive aliasing")
            return
        seen.add(id(node))
        decoded += 1
        for child in _children(node):
            walk(child)

    try:
        walk(root)
    except RecursionError:
        raise ExcessiveAliasingError("document nested too deeply") from None


def _children(node: yaml.Node) -> list[yaml.Node]:
    if isinstance(node, yaml.SequenceNode):
        return list(node.value)
    if isinstance(node, yaml.MappingNode):
        return [part for pair in node.value for part in pair]
    return []


def load_first_document(text: str) -> Any:
    """The first document of ``text`` read as yaml.v2 reads it (None when empty);
    raises :class:`yaml.YAMLError` as PyYAML does on malformed text, and
    :class:`ExcessiveAliasingError` on an alias bomb (as yaml.v2) or a document
    nested too deeply."""
    loader = GoYamlLoader(text)
    try:
        loader.get_event()  # type: ignore[no-untyped-call]  # the stream's start
        if loader.check_event(yaml.StreamEndEvent):
            return None
        # The first document only: yaml.Unmarshal reads no further.
        root = loader.compose_document()
        check_aliasing(root)
        return loader.construct_document(root)
    except RecursionError:
        raise ExcessiveAliasingError("document nested too deeply") from None
    finally:
        loader.dispose()
