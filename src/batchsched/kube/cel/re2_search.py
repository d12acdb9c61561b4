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
import functools
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
# Zero-width positions (AT): start of text, start of line, end of text, end of line.
_TEXT_START, _LINE_START, _TEXT_END, _LINE_END = range(4)

CharTest = Callable[[str], bool]


class Re2Search:
    """An RE2 pattern compiled for :meth:`search`; :class:`Re2Error` for a pattern RE2
    refuses (or one whose automaton would be larger than :data:`MAX_PROGRAM`)."""

    def __init__(self, pattern: str) -> None:
        self.pattern = pattern
        try:
            parsed: Any = _sre_parse.parse(python_pattern(pattern))
            builder = _Builder()
            builder.sequence(parsed, parsed.state.flags)
        except Re2Error:
            raise
        except RecursionError:
            raise Re2Error("the pattern nests too deeply for this reading",
                           supported=False) from None
        except Exception as exc:  # re.error and the like: RE2 refuses these too
            raise Re2Error(str(exc)) from None
        builder.emit((_MATCH,))
        self._program = builder.program
        self._contextual = builder.contextual
        self._start = frozenset({0})
        #: Whether every match starts at the start of the text (``^...`` without m):
        #: then no thread starts later, and the search ends when none is left.
        self._anchored = _anchored(builder.program)
        self._closures: dict[Any, tuple[tuple[int, ...], bool]] = {}
        self._steps: dict[tuple[tuple[int, ...], str], frozenset[int]] = {}
        #: Texts already answered (node names come back at every session).
        self._answers: dict[str, bool] = {}

    def search(self, text: str) -> bool:
        """Whether the pattern matches somewhere in ``text`` (Go's ``MatchString``)."""
        answer = self._answers.get(text)
        if answer is None:
            if len(self._answers) >= _MAX_KEPT:
                self._answers.clear()
            answer = self._answers[text] = self._search(text)
        return answer

    def _search(self, text: str) -> bool:
        program, closures, steps = self._program, self._closures, self._steps
        start, contextual = self._start, self._contextual
        restart: frozenset[int] = frozenset() if self._anchored else start
        states: frozenset[int] = start
        last = len(text)
        for at in range(last + 1):
            if len(closures) >= _MAX_KEPT or len(steps) >= _MAX_KEPT:
                closures.clear()  # bounded within one long text too
                steps.clear()
            after = text[at] if at < last else None
            key: Any = (states, text[at - 1] if at else None, after) if contextual else states
            found = closures.get(key)
            if found is None:
                found = closures[key] = _closure(program, states, text, at)
            waiting, matched = found
            if matched:
                return True
            if after is None or (not waiting and not restart):
                return False
            step = (waiting, after)
            following = steps.get(step)
            if following is None:
                following = restart.union(pc + 1 for pc in waiting if program[pc][1](after))
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
            if _at(instruction[1], before, after):
                stack.append(pc + 1)
        elif op == _LOOK:
            seen_char = before if instruction[1] < 0 else after
            if (seen_char is not None and instruction[2](seen_char)) == instruction[3]:
                stack.append(pc + 1)
        else:
            return tuple(sorted(waiting)), True
    return tuple(sorted(waiting)), False


def _at(where: int, before: str | None, after: str | None) -> bool:
    if where == _TEXT_START:
        return before is None
    if where == _LINE_START:
        return before is None or before == "\n"
    if where == _TEXT_END:
        return after is None
    return after is None or after == "\n"


def _anchored(program: list[tuple[Any, ...]]) -> bool:
    """Whether every way from the first instruction meets the start-of-text test
    before it reads a character or matches."""
    seen: set[int] = set()
    stack = [0]
    while stack:
        pc = stack.pop()
        if pc in seen:
            continue
        seen.add(pc)
        instruction = program[pc]
        op = instruction[0]
        if op == _SPLIT:
            stack.extend(instruction[1:])
        elif op == _JUMP:
            stack.append(instruction[1])
        elif op == _AT and instruction[1] == _TEXT_START:
            continue
        elif op == _AT:
            stack.append(pc + 1)  # another zero-width test: the start may still follow
        else:
            return False
    return True


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
            # The translation writes only \b and \B so: ASCII, whatever (?i) says.
            self.emit((_LOOK, step, _char_test(tests[0][0], tests[0][1],
                                               flags & ~_IGNORECASE), op == _sre.ASSERT))
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
    if code == _sre.AT_END and multiline:  # the translation writes $ as \Z or (?m:$)
        return _LINE_END
    if code == _sre.AT_END_STRING:
        return _TEXT_END
    raise Re2Error(f"invalid or unsupported syntax: {code}")


def _char_test(op: Any, argument: Any, flags: int) -> CharTest:
    """What one character must be, under the flags in force: ``s`` lets ``.`` take a
    newline; ``i`` takes a character when one of its case-folding orbit (Go's
    ``SimpleFold``: K, k and the Kelvin sign are one orbit) would be taken."""
    folded = bool(flags & _IGNORECASE)
    if op == _sre.ANY:
        if flags & _DOTALL:
            return lambda char: True
        return lambda char: char != "\n"
    if op in (_sre.LITERAL, _sre.NOT_LITERAL):
        wanted = chr(argument)
        if not folded:
            return wanted.__eq__ if op == _sre.LITERAL else wanted.__ne__
        key = _fold_key(wanted)
        if op == _sre.LITERAL:
            return lambda char: _fold_key(char) == key
        return lambda char: _fold_key(char) != key
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
    ranges.sort()
    lows = [low for low, _ in ranges]
    # The highest end of the ranges so far: ranges may overlap or nest, and the last
    # range starting at or below a code covers it if any does within this reach.
    reach = list(itertools.accumulate((high for _, high in ranges), max))

    def holds(char: str) -> bool:
        if char in singles:
            return True
        index = bisect.bisect_right(lows, ord(char)) - 1
        return index >= 0 and ord(char) <= reach[index]

    # Folded before it is negated, as Go's parser folds a class and then negates it.
    inside = (lambda char: any(map(holds, _orbit(char)))) if folded else holds
    if negated:
        return lambda char: not inside(char)
    return inside


def _fold_key(char: str) -> str:
    """The character Unicode's simple case folding maps ``char`` to (Python's tables:
    its case fold where that is one character, else its lower case)."""
    folded = char.casefold()
    if len(folded) == 1:
        return folded
    lower = char.lower()
    return lower if len(lower) == 1 else char


@functools.cache
def _orbits() -> dict[str, frozenset[str]]:
    """Every character whose case folds to another, grouped by what it folds to (built
    once, on the first case-insensitive pattern)."""
    groups: dict[str, set[str]] = {}
    for code in range(0x110000):
        char = chr(code)
        key = _fold_key(char)
        if key != char:
            groups.setdefault(key, {key}).add(char)
    return {key: frozenset(group) for key, group in groups.items()}


def _orbit(char: str) -> frozenset[str]:
    """The characters that fold as ``char`` does (itself alone when none other does)."""
    return _orbits().get(_fold_key(char)) or frozenset((char,))
