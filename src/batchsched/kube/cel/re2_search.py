"""Searching with an RE2 pattern in time linear in the text, as Go's ``regexp`` does.

Python's ``re`` backtracks: a pattern Go answers in microseconds, such as
``^(\\w+-?)*\\.local$`` against a long name that does not end in ``.local``, takes
Python minutes. A hypernode's member pattern is searched in every node name at every
session, and a CEL ``matches()`` in every device a claim may take, so a hang there
stops the scheduler. :class:`Re2Search` answers the only question those callers ask
(does the pattern occur in the text?) with an automaton instead:

* the pattern is read as RE2 reads it (:func:`~batchsched.kube.cel.re2.python_pattern`
  writes it out in Python's syntax; Python's own parser then gives its structure);
* the structure becomes a Thompson automaton (characters, splits, zero-width tests);
* the search follows every thread at once, one character at a time, and the sets of
  states met are kept with their successors (a lazily built DFA), so each character
  costs a dictionary lookup once the text's shapes have been seen.

Greedy and lazy repetitions find the same texts, so they are one here. Which match,
and its groups, is not asked.
"""

from __future__ import annotations

import bisect
import itertools
import sys
from collections.abc import Callable, Iterable
from typing import Any

from batchsched.kube.cel.re2 import Re2Error, python_pattern

if sys.version_info >= (3, 11):
    from re import _constants as _sre  # type: ignore[attr-defined]
    from re import _parser as _sre_parse  # type: ignore[attr-defined]
else:  # pragma: no cover - Python 3.10
    import sre_constants as _sre
    import sre_parse as _sre_parse

__all__ = ["MAX_PROGRAM", "Re2Search"]

#: The largest automaton built (RE2 refuses a program past its own size limit with
#: "expression too large"; nested counted repetitions multiply).
MAX_PROGRAM = 100_000
#: Sets of states (and their successors) kept per pattern before starting afresh.
_MAX_KEPT = 20_000

_IGNORECASE = _sre.SRE_FLAG_IGNORECASE
_MULTILINE = _sre.SRE_FLAG_MULTILINE
_DOTALL = _sre.SRE_FLAG_DOTALL

# Instructions: (CHAR, test), (SPLIT, a, b), (JUMP, a), (AT, where), (LOOK, step, test,
# wanted), (MATCH,).
_CHAR, _SPLIT, _JUMP, _AT, _LOOK, _MATCH = range(6)
# Zero-width positions (AT): start of text, start of line, end of text, end of line,
# Python's end of text (before a final newline too).
_TEXT_START, _LINE_START, _TEXT_END, _LINE_END, _END_OR_FINAL_NEWLINE = range(5)

CharTest = Callable[[str], bool]


class Re2Search:
    """An RE2 pattern compiled for :meth:`search`; :class:`Re2Error` for a pattern RE2
    refuses (or one whose automaton would be larger than :data:`MAX_PROGRAM`)."""

    def __init__(self, pattern: str) -> None:
        self.pattern = pattern
        try:
            parsed: Any = _sre_parse.parse(python_pattern(pattern))
        except Re2Error:
            raise
        except Exception as exc:  # re.error and the like: RE2 refuses these too
            raise Re2Error(str(exc)) from None
        builder = _Builder()
        builder.sequence(parsed, parsed.state.flags)
        builder.emit((_MATCH,))
        self._program = builder.program
        self._contextual = builder.contextual
        self._start = frozenset({0})
        self._closures: dict[Any, tuple[tuple[int, ...], bool]] = {}
        self._steps: dict[tuple[tuple[int, ...], str], frozenset[int]] = {}

    def search(self, text: str) -> bool:
        """Whether the pattern matches somewhere in ``text`` (Go's ``MatchString``)."""
        program, closures, steps = self._program, self._closures, self._steps
        if len(closures) > _MAX_KEPT or len(steps) > _MAX_KEPT:
            closures.clear()
            steps.clear()
        start, contextual = self._start, self._contextual
        states: frozenset[int] = start
        last = len(text)
        for at in range(last + 1):
            after = text[at] if at < last else None
            if contextual:
                before = text[at - 1] if at else None
                key: Any = (states, before, after, at == last - 1)
            else:
                key = states
            found = closures.get(key)
            if found is None:
                found = closures[key] = _closure(program, states, text, at)
            waiting, matched = found
            if matched:
                return True
            if after is None:
                return False
            step = (waiting, after)
            following = steps.get(step)
            if following is None:
                following = start.union(pc + 1 for pc in waiting if program[pc][1](after))
                steps[step] = following
            states = following
        return False  # pragma: no cover - the loop returns at the end of the text

    def __repr__(self) -> str:
        return f"Re2Search({self.pattern!r})"


def _closure(program: list[tuple[Any, ...]], states: frozenset[int], text: str,
             at: int) -> tuple[tuple[int, ...], bool]:
    """The character-reading states reached from ``states`` at ``text[at]`` without
    reading, and whether the match state is among them."""
    before = text[at - 1] if at else None
    after = text[at] if at < len(text) else None
    seen: set[int] = set()
    waiting: list[int] = []
    stack = sorted(states, reverse=True)
    while stack:
        pc = stack.pop()
        if pc in seen:
            continue
        seen.add(pc)
        instruction = program[pc]
        op = instruction[0]
        if op == _CHAR:
            waiting.append(pc)
        elif op == _SPLIT:
            stack.append(instruction[2])
            stack.append(instruction[1])
        elif op == _JUMP:
            stack.append(instruction[1])
        elif op == _AT:
            if _at(instruction[1], before, after, at == len(text) - 1):
                stack.append(pc + 1)
        elif op == _LOOK:
            seen_char = before if instruction[1] < 0 else after
            if (seen_char is not None and instruction[2](seen_char)) == instruction[3]:
                stack.append(pc + 1)
        else:
            return tuple(sorted(waiting)), True
    return tuple(sorted(waiting)), False


def _at(where: int, before: str | None, after: str | None, final: bool) -> bool:
    if where == _TEXT_START:
        return before is None
    if where == _LINE_START:
        return before is None or before == "\n"
    if where == _TEXT_END:
        return after is None
    if where == _LINE_END:
        return after is None or after == "\n"
    return after is None or (after == "\n" and final)


class _Builder:
    """Python's parse of a pattern, as automaton instructions."""

    def __init__(self) -> None:
        self.program: list[tuple[Any, ...]] = []
        #: Whether a zero-width test reads the characters around a position.
        self.contextual = False

    def emit(self, instruction: tuple[Any, ...]) -> int:
        if len(self.program) >= MAX_PROGRAM:
            raise Re2Error("expression too large")
        self.program.append(instruction)
        return len(self.program) - 1

    def patch(self, pc: int, instruction: tuple[Any, ...]) -> None:
        self.program[pc] = instruction

    def sequence(self, items: Iterable[tuple[Any, Any]], flags: int) -> None:
        for op, argument in items:
            self.item(op, argument, flags)

    def item(self, op: Any, argument: Any, flags: int) -> None:
        if op in (_sre.LITERAL, _sre.NOT_LITERAL, _sre.ANY, _sre.IN):
            self.emit((_CHAR, _char_test(op, argument, flags)))
        elif op == _sre.SUBPATTERN:
            _group, turned_on, turned_off, items = argument
            self.sequence(items, (flags | turned_on) & ~turned_off)
        elif op == _sre.BRANCH:
            self.branch(argument[1], flags)
        elif op in (_sre.MAX_REPEAT, _sre.MIN_REPEAT):  # greedy or lazy: the same texts
            low, high, items = argument
            self.repeat(low, high, items, flags)
        elif op == _sre.AT:
            self.contextual = True
            self.emit((_AT, _position(argument, flags)))
        elif op in (_sre.ASSERT, _sre.ASSERT_NOT):
            step, items = argument
            tests = list(items)
            if len(tests) != 1 or tests[0][0] not in (_sre.LITERAL, _sre.NOT_LITERAL,
                                                      _sre.ANY, _sre.IN):
                raise Re2Error("invalid or unsupported Perl syntax: lookaround")
            self.contextual = True
            self.emit((_LOOK, step, _char_test(tests[0][0], tests[0][1], flags),
                       op == _sre.ASSERT))
        else:
            raise Re2Error(f"invalid or unsupported syntax: {op}")

    def branch(self, alternatives: list[Any], flags: int) -> None:
        jumps: list[int] = []
        for index, alternative in enumerate(alternatives):
            if index < len(alternatives) - 1:
                split = self.emit((_SPLIT, -1, -1))
                self.sequence(alternative, flags)
                jumps.append(self.emit((_JUMP, -1)))
                self.patch(split, (_SPLIT, split + 1, len(self.program)))
            else:
                self.sequence(alternative, flags)
        for jump in jumps:
            self.patch(jump, (_JUMP, len(self.program)))

    def repeat(self, low: int, high: int, items: Any, flags: int) -> None:
        for _ in range(low):
            self.sequence(items, flags)
        if high == _sre.MAXREPEAT:
            loop = self.emit((_SPLIT, -1, -1))
            self.sequence(items, flags)
            self.emit((_JUMP, loop))
            self.patch(loop, (_SPLIT, loop + 1, len(self.program)))
            return
        splits = []
        for _ in range(high - low):
            splits.append(self.emit((_SPLIT, -1, -1)))
            self.sequence(items, flags)
        for split in splits:
            self.patch(split, (_SPLIT, split + 1, len(self.program)))


def _position(code: Any, flags: int) -> int:
    multiline = bool(flags & _MULTILINE)
    if code == _sre.AT_BEGINNING:
        return _LINE_START if multiline else _TEXT_START
    if code == _sre.AT_BEGINNING_STRING:
        return _TEXT_START
    if code == _sre.AT_END:
        return _LINE_END if multiline else _END_OR_FINAL_NEWLINE
    if code == _sre.AT_END_STRING:
        return _TEXT_END
    raise Re2Error(f"invalid or unsupported syntax: {code}")


def _char_test(op: Any, argument: Any, flags: int) -> CharTest:
    """What one character must be, under the flags in force (Python's reading of
    ``i`` and ``s``)."""
    folded = bool(flags & _IGNORECASE)
    if op == _sre.ANY:
        if flags & _DOTALL:
            return lambda char: True
        return lambda char: char != "\n"
    if op in (_sre.LITERAL, _sre.NOT_LITERAL):
        wanted = chr(argument)
        variants = _variants(wanted) if folded else {wanted}
        if not folded:
            return variants.__contains__ if op == _sre.LITERAL else wanted.__ne__
        # Case folding is no function: the Kelvin sign's lower case is k, k's upper K.
        if op == _sre.LITERAL:
            return lambda char: not variants.isdisjoint(_variants(char))
        return lambda char: variants.isdisjoint(_variants(char))
    negated = False
    singles: set[str] = set()
    ranges: list[tuple[int, int]] = []
    for member, value in argument:
        if member == _sre.NEGATE:
            negated = True
        elif member == _sre.LITERAL:
            singles.add(chr(value))
        elif member == _sre.RANGE:
            ranges.append(value)
        else:  # the translation writes every class out as ranges
            raise Re2Error(f"invalid or unsupported syntax in a class: {member}")
    if folded:
        singles = {variant for single in singles for variant in _variants(single)}

    ranges.sort()
    lows = [low for low, _ in ranges]
    # The highest end of the ranges so far: ranges may overlap or nest, and the last
    # range starting at or below a code covers it if any does within this reach.
    reach = list(itertools.accumulate((high for _, high in ranges), max))

    def inside(char: str) -> bool:
        for candidate in _variants(char) if folded else (char,):
            if candidate in singles:
                return True
            index = bisect.bisect_right(lows, ord(candidate)) - 1
            if index >= 0 and ord(candidate) <= reach[index]:
                return True
        return False

    if negated:
        return lambda char: not inside(char)
    return inside


def _variants(char: str) -> set[str]:
    """The characters a case-insensitive test takes for ``char``: itself and its one-
    character lower and upper cases (``K``, ``k`` and the Kelvin sign are one)."""
    found = {char}
    for other in (char.lower(), char.upper()):
        if len(other) == 1:
            found.add(other)
            for again in (other.lower(), other.upper()):
                if len(again) == 1:
                    found.add(again)
    return found
