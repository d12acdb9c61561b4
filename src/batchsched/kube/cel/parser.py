"""CEL's grammar: text to tokens to a tree of closures (:data:`~.values.Node`)."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any

import attrs

from batchsched.kube.cel.library import FUNCTIONS, METHODS
from batchsched.kube.cel.values import (
    INT_MAX,
    INT_MIN,
    RELATIONS,
    TYPE_NAMES,
    UINT_MAX,
    CelEvaluationError,
    CelSyntaxError,
    CelType,
    Node,
    UInt,
    add,
    binary,
    conditional,
    divide,
    has_field,
    logical_and,
    logical_not,
    logical_or,
    map_macro,
    modulo,
    multiply,
    negate,
    overload,
    quantifier,
    select,
    show,
    subscript,
    subtract,
    variable,
)

__all__ = ["Parser"]

_TOKEN = re.compile(r"""
    (?P<space>\s+|//[^\n]*)
  | (?P<number>0[xX][0-9a-fA-F]+[uU]?|(?:\d+\.\d*|\.\d+|\d+)(?:[eE][+-]?\d+)?[uU]?)
  | (?P<string>(?:[rR]?[bB]?|[bB]?[rR]?)(?:\"\"\"[\s\S]*?\"\"\"|'''[\s\S]*?'''
                |"(?:[^"\\\n]|\\.)*"|'(?:[^'\\\n]|\\.)*'))
  | (?P<name>[A-Za-z_][A-Za-z0-9_]*)
  | (?P<op>\|\||&&|==|!=|<=|>=|[<>!?:.\[\](){},+\-*/%])
""", re.VERBOSE)

_ESCAPES = {"a": "\a", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t", "v": "\v",
            "\\": "\\", "'": "'", '"': '"', "`": "`", "?": "?"}


def _tokens(text: str) -> list[tuple[str, Any, int]]:
    tokens: list[tuple[str, Any, int]] = []
    position = 0
    while position < len(text):
        match = _TOKEN.match(text, position)
        if match is None:
            raise CelSyntaxError(f"Syntax error: token recognition error at: "
                                 f"'{text[position]}' (column {position + 1})")
        kind = match.lastgroup
        assert kind is not None
        raw = match.group()
        if kind == "number":
            tokens.append(("literal", _number(raw, position), position))
        elif kind == "string":
            tokens.append(("literal", _string(raw, position), position))
        elif kind == "name":
            if raw in ("true", "false"):
                tokens.append(("literal", raw == "true", position))
            elif raw == "null":
                tokens.append(("literal", None, position))
            elif raw == "in":
                tokens.append(("op", "in", position))
            else:
                tokens.append(("name", raw, position))
        elif kind == "op":
            tokens.append(("op", raw, position))
        position = match.end()
    tokens.append(("end", None, len(text)))
    return tokens


def _number(raw: str, position: int) -> Any:
    unsigned = raw[-1] in "uU"
    body = raw[:-1] if unsigned else raw
    try:
        if body[:2] in ("0x", "0X"):
            value: Any = int(body, 16)
        elif any(c in body for c in ".eE"):
            if unsigned:
                raise ValueError
            return float(body)
        else:
            value = int(body)
    except ValueError:
        raise CelSyntaxError(f"Syntax error: invalid number {raw!r} (column {position + 1})") \
            from None
    if unsigned:
        if value > UINT_MAX:
            raise CelSyntaxError(f"Syntax error: uint literal out of range: {raw}")
        return UInt(value)
    if value == INT_MAX + 1:
        return _IntMinMagnitude(raw)  # valid only with a minus before it (-2^63)
    if value > INT_MAX:
        raise CelSyntaxError(f"Syntax error: int literal out of range: {raw}")
    return value


@attrs.frozen
class _IntMinMagnitude:
    """The literal 9223372036854775808: cel-go reads the sign as part of an int
    literal, so ``-9223372036854775808`` is the smallest int; alone it is out of range."""

    raw: str

    def __repr__(self) -> str:
        return self.raw  # as a syntax error names the token

    def refused(self) -> CelSyntaxError:
        return CelSyntaxError(f"Syntax error: int literal out of range: {self.raw}")


def _string(raw: str, position: int) -> str | bytes:
    prefix_end = 0
    while raw[prefix_end] in "rRbB":
        prefix_end += 1
    prefix = raw[:prefix_end].lower()
    body = raw[prefix_end:]
    quote = 3 if body[:3] in ('"""', "'''") else 1
    inner = body[quote:-quote]
    if "b" in prefix:
        # In a bytes literal an escape is one octet (cel-go's unescape, isBytes).
        return inner.encode("utf-8") if "r" in prefix else _unescape_bytes(inner, position)
    if "r" not in prefix:
        inner = _unescape(inner, position)
    return inner


def _unescape(text: str, position: int) -> str:
    return "".join(part if isinstance(part, str) else chr(part)
                   for part in _unescaped(text, position, octets=False))


def _unescape_bytes(text: str, position: int) -> bytes:
    return b"".join(part.encode("utf-8") if isinstance(part, str) else bytes([part])
                    for part in _unescaped(text, position, octets=True))


def _unescaped(text: str, position: int, *, octets: bool) -> list[str | int]:
    """The characters of a literal's text, each escape a code point (an octet in a
    bytes literal, which takes no ``\\u`` or ``\\U``)."""
    out: list[str | int] = []
    i = 0
    while i < len(text):
        char = text[i]
        if char != "\\":
            out.append(char)
            i += 1
            continue
        code = text[i + 1] if i + 1 < len(text) else ""
        if code in _ESCAPES:
            out.append(_ESCAPES[code])
            i += 2
        elif code in "xXuU":
            if octets and code in "uU":
                # cel-go: no code point escapes in a bytes literal.
                raise CelSyntaxError(f"Syntax error: invalid escape '\\{code}' in a bytes "
                                     f"literal (column {position + 1})")
            width = {"x": 2, "X": 2, "u": 4, "U": 8}[code]
            digits = text[i + 2:i + 2 + width]
            if len(digits) != width or not all(c in "0123456789abcdefABCDEF" for c in digits):
                raise CelSyntaxError(f"Syntax error: invalid escape (column {position + 1})")
            number = int(digits, 16)
            if not octets and not (number <= 0x10FFFF and not 0xD800 <= number <= 0xDFFF):
                raise CelSyntaxError(f"Syntax error: invalid code point escape "
                                     f"(column {position + 1})")
            out.append(number if octets else chr(number))
            i += 2 + width
        elif code and code in "0123":
            # CEL's octal escape: \\[0-3][0-7][0-7].
            digits = text[i + 1:i + 4]
            if len(digits) != 3 or not all(c in "01234567" for c in digits):
                raise CelSyntaxError(f"Syntax error: invalid octal escape "
                                     f"(column {position + 1})")
            number = int(digits, 8)
            out.append(number if octets else chr(number))
            i += 4
        else:
            raise CelSyntaxError(f"Syntax error: invalid escape sequence '\\{code}' "
                                 f"(column {position + 1})")
    return out



_MACROS = frozenset({"all", "exists", "exists_one", "map", "filter"})
#: Standard functions cel-go has and this evaluator does not, and why.
_NOT_AVAILABLE = {"timestamp": "CEL's time types are not modelled",
                  "duration": "CEL's time types are not modelled"}


class Parser:
    def __init__(self, text: str, declared: frozenset[str] | None = None) -> None:
        self.text = text
        self.tokens = _tokens(text)
        self.at = 0
        #: The variables the expression may name (None: any, checked when evaluated).
        self.declared = declared
        #: The variables macros in scope bind (``x`` in ``l.all(x, ...)``).
        self.bound: list[str] = []
        #: The last field selection parsed: (its node, the selected node, the field).
        self.last_select: tuple[Node, Node, str] | None = None

    def peek(self) -> tuple[str, Any, int]:
        return self.tokens[self.at]

    def take(self) -> tuple[str, Any, int]:
        token = self.tokens[self.at]
        self.at += 1
        return token

    def accept(self, op: str) -> bool:
        kind, value, _ = self.tokens[self.at]
        if kind == "op" and value == op:
            self.at += 1
            return True
        return False

    def peek_two_variables(self) -> bool:
        """Whether a second variable name follows (``all(k, v, ...)``)."""
        kind, _, _ = self.tokens[self.at]
        following = self.tokens[self.at + 1] if self.at + 1 < len(self.tokens) else None
        return kind == "name" and following is not None and following[:2] == ("op", ",")

    def expect(self, op: str) -> None:
        if not self.accept(op):
            kind, value, position = self.peek()
            found = "end of expression" if kind == "end" else repr(value)
            raise CelSyntaxError(f"Syntax error: expected {op!r}, found {found} "
                                 f"(column {position + 1})")

    def parse(self) -> Node:
        node = self.expression()
        kind, value, position = self.peek()
        if kind != "end":
            raise CelSyntaxError(f"Syntax error: unexpected {value!r} (column {position + 1})")
        return node

    def expression(self) -> Node:
        condition = self.logical("||")
        if not self.accept("?"):
            return condition
        then = self.logical("||")
        self.expect(":")
        otherwise = self.expression()
        return conditional(condition, then, otherwise)

    def logical(self, op: str) -> Node:
        lower: Callable[[], Node] = self.conjunction if op == "||" else self.relation
        node = lower()
        while self.accept(op):
            node = (logical_or if op == "||" else logical_and)(node, lower())
        return node

    def conjunction(self) -> Node:
        return self.logical("&&")

    def relation(self) -> Node:
        node = self.addition()
        while True:
            kind, value, _ = self.peek()
            if kind != "op" or value not in RELATIONS:
                return node
            self.take()
            node = binary(RELATIONS[value], node, self.addition())

    def addition(self) -> Node:
        node = self.multiplication()
        while True:
            kind, value, _ = self.peek()
            if kind != "op" or value not in ("+", "-"):
                return node
            self.take()
            node = binary(add if value == "+" else subtract, node, self.multiplication())

    def multiplication(self) -> Node:
        node = self.unary()
        while True:
            kind, value, _ = self.peek()
            if kind != "op" or value not in ("*", "/", "%"):
                return node
            self.take()
            fn = {"*": multiply, "/": divide, "%": modulo}[value]
            node = binary(fn, node, self.unary())

    def unary(self) -> Node:
        if self.accept("!"):
            operand = self.unary()
            return lambda act: logical_not(operand(act))
        if self.accept("-"):
            kind, value, _ = self.peek()
            if kind == "literal" and isinstance(value, _IntMinMagnitude):
                self.take()
                return self.member(lambda act: INT_MIN)
            if kind == "literal" and type(value) in (int, float) and type(value) is not bool:
                self.take()
                literal = -value
                if type(literal) is int and literal < INT_MIN:
                    raise CelSyntaxError("Syntax error: int literal out of range")
                return self.member(lambda act: literal)
            operand = self.unary()
            return lambda act: negate(operand(act))
        return self.member(self.primary())

    def member(self, node: Node) -> Node:
        while True:
            if self.accept("."):
                kind, name, position = self.take()
                if kind != "name":
                    raise CelSyntaxError(f"Syntax error: expected a field name "
                                         f"(column {position + 1})")
                if self.accept("("):
                    node = self.method(node, name, position)
                else:
                    target, node = node, select(node, name)
                    self.last_select = (node, target, name)
            elif self.accept("["):
                index = self.expression()
                self.expect("]")
                node = binary(subscript, node, index)
            else:
                return node

    def arguments(self) -> list[Node]:
        args: list[Node] = []
        if self.accept(")"):
            return args
        while True:
            args.append(self.expression())
            if self.accept(")"):
                return args
            self.expect(",")

    def method(self, target: Node, name: str, position: int) -> Node:
        if name in _MACROS:
            return self.macro(target, name, position)
        args = self.arguments()
        if name not in METHODS:
            raise CelSyntaxError(f"undeclared reference to '{name}' (in container '')")
        fn = METHODS[name]
        return lambda act: _call(name, fn, [target(act), *[arg(act) for arg in args]])

    def macro(self, target: Node, name: str, position: int) -> Node:
        kind, variable, _ = self.take()
        if kind != "name":
            raise CelSyntaxError(f"Syntax error: {name}() needs a variable name "
                                 f"(column {position + 1})")
        self.expect(",")
        if name != "map" and self.peek_two_variables():
            raise CelSyntaxError(f"{name}() with two variables (a two-variable "
                                 f"comprehension) is not supported (column {position + 1})")
        self.bound.append(variable)
        try:
            first = self.expression()
            second: Node | None = None
            if self.accept(","):
                second = self.expression()
        finally:
            self.bound.pop()
        self.expect(")")
        if name == "map":
            return map_macro(target, variable, first, second)
        if name == "filter" and second is None:
            return map_macro(target, variable, first, lambda act: act[variable])
        if second is not None:
            raise CelSyntaxError(f"Syntax error: {name}() takes a variable and one expression")
        return quantifier(name, target, variable, first)

    def primary(self) -> Node:
        kind, value, position = self.take()
        if kind == "literal":
            if isinstance(value, _IntMinMagnitude):
                raise value.refused()
            return lambda act: value
        if kind == "op" and value == "(":
            node = self.expression()
            self.expect(")")
            return node
        if kind == "op" and value == "[":
            items = self.sequence("]")
            return lambda act: [item(act) for item in items]
        if kind == "op" and value == "{":
            return self.map_literal()
        if kind == "op" and value == ".":
            kind, value, position = self.take()
        if kind == "name":
            if value == "cel" and self.peek()[:2] == ("op", ".") \
                    and self.tokens[self.at + 1][1] == "bind":
                self.take()
                self.take()
                self.expect("(")
                return self.bind_macro(position)
            if (value == "strings" and self.peek()[:2] == ("op", ".")
                    and self.tokens[self.at + 1][1] == "quote"
                    and self.tokens[self.at + 2][:2] == ("op", "(")
                    and "strings" not in self.bound
                    and (self.declared is None or "strings" not in self.declared)):
                # The strings extension's one namespaced function (version 1).
                self.take()
                self.take()
                self.expect("(")
                return self.call("strings.quote", position)
            if self.accept("("):
                return self.call(value, position)
            name = value
            if name in TYPE_NAMES and name not in self.bound and (
                    self.declared is None or name not in self.declared):
                the_type = CelType(name)
                return lambda act: the_type
            if (self.declared is not None and name not in self.declared
                    and name not in self.bound):
                raise CelSyntaxError(f"undeclared reference to '{name}' (in container '')")
            return lambda act: variable(act, name)
        found = "end of expression" if kind == "end" else repr(value)
        raise CelSyntaxError(f"Syntax error: unexpected {found} (column {position + 1})")

    def bind_macro(self, position: int) -> Node:
        """``cel.bind(name, value, expression)``: ``expression`` with ``name`` bound."""
        kind, name, _ = self.take()
        if kind != "name":
            raise CelSyntaxError(f"Syntax error: cel.bind() needs a variable name "
                                 f"(column {position + 1})")
        self.expect(",")
        init = self.expression()
        self.expect(",")
        self.bound.append(name)
        try:
            body = self.expression()
        finally:
            self.bound.pop()
        self.expect(")")

        def evaluate(act: Mapping[str, Any]) -> Any:
            scope = dict(act)
            scope[name] = init(act)
            return body(scope)
        return evaluate

    def sequence(self, close: str) -> list[Node]:
        items: list[Node] = []
        while not self.accept(close):
            items.append(self.expression())
            if not self.accept(","):
                self.expect(close)
                break
        return items

    def map_literal(self) -> Node:
        entries: list[tuple[Node, Node]] = []
        while not self.accept("}"):
            key = self.expression()
            self.expect(":")
            entries.append((key, self.expression()))
            if not self.accept(","):
                self.expect("}")
                break

        def build(act: Mapping[str, Any]) -> dict[Any, Any]:
            out: dict[Any, Any] = {}
            for key_node, value_node in entries:
                key = key_node(act)
                if key in out:
                    raise CelEvaluationError(f"Failed with repeated key: {show(key)}")
                out[key] = value_node(act)
            return out
        return build

    def call(self, name: str, position: int) -> Node:
        if name == "has":
            return self.has()
        args = self.arguments()
        if name in METHODS and name not in FUNCTIONS and args:
            # Receiver-style functions may be called globally with the receiver first.
            fn = METHODS[name]
            return lambda act: _call(name, fn, [arg(act) for arg in args])
        if name in _NOT_AVAILABLE:
            raise CelSyntaxError(f"{name}() is not available here ({_NOT_AVAILABLE[name]})")
        if name not in FUNCTIONS:
            raise CelSyntaxError(f"undeclared reference to '{name}' (in container '')")
        fn = FUNCTIONS[name]
        return lambda act: _call(name, fn, [arg(act) for arg in args])

    def has(self) -> Node:
        node = self.member(self.primary())
        self.expect(")")
        step = self.last_select
        # has() takes a field selection: its last step must be ``.name``.
        if step is None or step[0] is not node:
            raise CelSyntaxError("invalid argument to has() macro")
        _, target, name = step
        return lambda act: has_field(target(act), name)


def _call(name: str, fn: Callable[..., Any], values: list[Any]) -> Any:
    """``fn(*values)``; arguments it does not take are CEL's no-such-overload error."""
    try:
        return fn(*values)
    except TypeError:
        raise overload(name, *values) from None
