"""RE2 patterns (CEL's ``matches()``, Go's ``regexp``) as Python patterns that match
the same strings.

Where the two syntaxes read a pattern differently, the RE2 reading is written out:
``$`` is the end of the text (Python's also matches before a final newline), the
Perl classes ``\\d``, ``\\w``, ``\\s`` and the word boundaries are ASCII, ``\\z``
is Python's ``\\Z``, a ``{`` that does not open a repetition RE2 knows (``{n}``,
``{n,}``, ``{n,m}``) is a literal brace (Python reads ``{,m}`` as a repetition),
flags set within a pattern hold to the end of their group, ``(?<name>...)`` names a
group, and the ASCII classes (``[[:alpha:]]``) are ranges. Syntax RE2 refuses and
Python accepts (lookaround, backreferences, atomic groups, possessive quantifiers,
``\\Z``) is an error here too. Unicode general categories (``\\pL``,
``\\p{Lu}``, ``\\PN``) are written out as ranges from Python's Unicode tables;
Unicode scripts (``\\p{Greek}``) are not read (:class:`Re2Error` with ``supported``
false). Ungreedy mode (``(?U)``) changes which match is found, not whether one is,
and is dropped. A negated class is written negated (``\\W`` as ``[^...]``), so that
a case-insensitive reading folds it before negating it, as RE2 does; within brackets
(``[\\W\\d]``, ``[[:^upper:]]``) it is written as its complement, which under
``(?i)`` differs from RE2 on letters that have a case.
"""

from __future__ import annotations

import functools
import re
import unicodedata

__all__ = ["Re2Error", "python_pattern"]


class Re2Error(ValueError):
    """The pattern is not one RE2 accepts, or (``supported`` false) one RE2 accepts
    that this reading does not."""

    def __init__(self, message: str, *, supported: bool = True) -> None:
        super().__init__(message)
        self.supported = supported


#: The Perl classes and RE2's ASCII classes (``[[:alpha:]]``), as code-point ranges.
_DIGIT = ((0x30, 0x39),)
_WORD_RANGES = ((0x30, 0x39), (0x41, 0x5A), (0x5F, 0x5F), (0x61, 0x7A))
_SPACE = ((0x09, 0x0A), (0x0C, 0x0D), (0x20, 0x20))  # RE2's \s: no \v
_PERL = {"d": _DIGIT, "w": _WORD_RANGES, "s": _SPACE}
_ASCII_CLASSES = {
    "alnum": ((0x30, 0x39), (0x41, 0x5A), (0x61, 0x7A)), "alpha": ((0x41, 0x5A), (0x61, 0x7A)),
    "ascii": ((0x00, 0x7F),), "blank": ((0x09, 0x09), (0x20, 0x20)),
    "cntrl": ((0x00, 0x1F), (0x7F, 0x7F)), "digit": _DIGIT, "graph": ((0x21, 0x7E),),
    "lower": ((0x61, 0x7A),), "print": ((0x20, 0x7E),),
    "punct": ((0x21, 0x2F), (0x3A, 0x40), (0x5B, 0x60), (0x7B, 0x7E)),
    "space": ((0x09, 0x0D), (0x20, 0x20)), "upper": ((0x41, 0x5A),), "word": _WORD_RANGES,
    "xdigit": ((0x30, 0x39), (0x41, 0x46), (0x61, 0x66)),
}
_ASCII_CLASS = re.compile(r"\[:(\^?)([a-z]+):\]")
_MAX_RUNE = 0x10FFFF


def _complement(ranges: tuple[tuple[int, int], ...]) -> tuple[tuple[int, int], ...]:
    out, low = [], 0
    for start, end in sorted(ranges):
        if start > low:
            out.append((low, start - 1))
        low = max(low, end + 1)
    if low <= _MAX_RUNE:
        out.append((low, _MAX_RUNE))
    return tuple(out)


def _body(ranges: tuple[tuple[int, int], ...]) -> str:
    """The ranges as the inside of a Python character class."""
    return "".join(f"\\U{lo:08x}" if lo == hi else f"\\U{lo:08x}-\\U{hi:08x}"
                   for lo, hi in ranges)


_WORD = "[0-9A-Za-z_]"
# A negated class is written negated, not as its complement: under (?i) RE2 folds the
# class first and then negates it.
_CLASSES_OUTSIDE = {**{name: f"[{_body(ranges)}]" for name, ranges in _PERL.items()},
                    **{name.upper(): f"[^{_body(ranges)}]" for name, ranges in _PERL.items()}}
_CLASSES_INSIDE = {**{name: _body(ranges) for name, ranges in _PERL.items()},
                   **{name.upper(): _body(_complement(ranges)) for name, ranges in _PERL.items()}}
# ASCII whatever (?i) says (Python would fold the Kelvin sign into [A-Za-z]).
_BOUNDARY = f"(?-i:(?<={_WORD})(?!{_WORD})|(?<!{_WORD})(?={_WORD}))"
_NOT_BOUNDARY = f"(?-i:(?<={_WORD})(?={_WORD})|(?<!{_WORD})(?!{_WORD}))"
_REPEAT = re.compile(r"\{([0-9]+)(,([0-9]*))?\}")
_FLAG_GROUP = re.compile(r"\(\?([imsU]*(?:-[imsU]*)?)([:)])")
#: RE2's largest repetition count.
_MAX_REPEAT = 1000


def python_pattern(pattern: str) -> str:
    """The Python pattern matching what the RE2 ``pattern`` matches; :class:`Re2Error`
    for syntax RE2 refuses."""
    return _Translation(pattern).run()


class _Translation:
    """One pass over an RE2 pattern. Flags set inside a pattern (``a(?i)b``) hold to
    the end of their group in RE2, alternatives included; Python takes global flags
    only at the start, so each becomes a scoped group (``(?i:b)``), closed before every
    ``|`` and ``)`` of its group and opened again after a ``|``."""

    def __init__(self, pattern: str) -> None:
        self.pattern = pattern
        self.out: list[str] = []
        #: Per open group (the pattern itself first), the flags set within it so far.
        self.flags: list[list[str]] = [[]]
        #: Per open group, whether ``m`` holds there (``$`` then ends a line).
        self.multiline: list[bool] = [False]

    def run(self) -> str:
        pattern, out = self.pattern, self.out
        i, n = 0, len(pattern)
        while i < n:
            char = pattern[i]
            if char == "\\":
                i = self.escape(i)
            elif char == "[":
                i = self.char_class(i)
            elif char == "(":
                i = self.group(i)
            elif char == ")":
                self.close_flags()
                if len(self.flags) > 1:
                    self.flags.pop()
                    self.multiline.pop()
                out.append(")")
                i += 1
            elif char == "|":
                self.close_flags()
                out.append("|")
                out.extend(f"(?{flags}:" for flags in self.flags[-1])
                i += 1
            elif char == "{":
                i = self.repeat(i)
            elif char in "*+?":
                out.append(char)
                i += 1
                if i < n and pattern[i] == "?":  # lazy
                    out.append("?")
                    i += 1
                _no_possessive(pattern, i)
            elif char == "$":
                # Python's $ also matches before a final newline; RE2's does only with m.
                out.append("(?:$)" if self.multiline[-1] else "(?:\\Z)")
                i += 1
            elif char == "^":
                out.append("(?:^)")  # a group: RE2 lets an assertion be repeated
                i += 1
            else:
                out.append(char)
                i += 1
        self.close_flags()
        return "".join(out)

    def close_flags(self) -> None:
        self.out.append(")" * len(self.flags[-1]))

    def escape(self, i: int) -> int:
        pattern, out = self.pattern, self.out
        if i + 1 >= len(pattern):
            raise Re2Error("trailing backslash at end of expression")
        escaped = pattern[i + 1]
        if escaped == "Q":  # \Q...\E: literal text
            end = pattern.find("\\E", i + 2)
            end = len(pattern) if end == -1 else end
            out.append(re.escape(pattern[i + 2:end]))
            return end + 2
        if escaped in _CLASSES_OUTSIDE:
            out.append(_CLASSES_OUTSIDE[escaped])
        elif escaped in "pP":
            ranges, negated, end = _unicode_class(pattern, i)
            out.append(f"[{'^' if negated else ''}{_body(ranges)}]")
            return end
        elif escaped == "b":
            out.append(_BOUNDARY)
        elif escaped == "B":
            out.append(_NOT_BOUNDARY)
        elif escaped == "z":
            out.append("(?:\\Z)")
        elif escaped == "A":
            out.append("(?:\\A)")
        else:
            text, i = _character_escape(pattern, i)
            out.append(text)
            return i
        return i + 2

    def char_class(self, i: int) -> int:
        pattern, out = self.pattern, self.out
        n = len(pattern)
        out.append("[")
        i += 1
        if i < n and pattern[i] == "^":
            out.append("^")
            i += 1
        if i < n and pattern[i] == "]":  # a leading ] is a literal
            out.append("\\]")
            i += 1
        while i < n:
            char = pattern[i]
            if char == "]":
                out.append("]")
                return i + 1
            if char == "\\":
                if i + 1 >= n:
                    raise Re2Error("trailing backslash at end of expression")
                if pattern[i + 1] in _CLASSES_INSIDE:
                    out.append(_CLASSES_INSIDE[pattern[i + 1]])
                    i += 2
                    continue
                if pattern[i + 1] in "pP":
                    unicode_ranges, negated, i = _unicode_class(pattern, i)
                    out.append(_body(_complement(unicode_ranges) if negated
                                     else unicode_ranges))
                    continue
                text, i = _character_escape(pattern, i)
                out.append(text)
                continue
            if char == "[":
                named = _ASCII_CLASS.match(pattern, i)
                if named is not None:
                    ranges = _ASCII_CLASSES.get(named[2])
                    if ranges is None:
                        raise Re2Error(f"invalid character class range: {named[0]}")
                    out.append(_body(_complement(ranges) if named[1] else ranges))
                    i = named.end()
                    continue
                out.append("\\[")  # a literal in RE2; Python warns of a nested set
                i += 1
                continue
            if char in "&~|" and pattern.startswith(char * 2, i):
                out.append("\\" + char)  # literals; Python warns of set operations
                i += 1
                continue
            out.append(char)
            i += 1
        raise Re2Error(f"missing closing ]: {pattern[pattern.rfind('[', 0, i):]}")

    def group(self, i: int) -> int:
        pattern, out = self.pattern, self.out
        if not pattern.startswith("(?", i):
            self.flags.append([])
            self.multiline.append(self.multiline[-1])
            out.append("(")
            return i + 1
        rest = pattern[i + 2:]
        if rest[:1] in ("=", "!", ">", "(") or rest[:2] in ("<=", "<!", "P="):
            raise Re2Error(f"invalid or unsupported Perl syntax: (?{rest[:2]}")
        if rest[:1] == "<" or rest[:2] == "P<":
            self.flags.append([])
            self.multiline.append(self.multiline[-1])
            out.append("(?P<")
            return i + (3 if rest[:1] == "<" else 4)
        setting = _FLAG_GROUP.match(pattern, i)
        if setting is None:
            raise Re2Error(f"invalid or unsupported Perl syntax: {pattern[i:i + 4]}")
        # Ungreedy mode (U) changes which match is found, never whether one is: the
        # texts matched stay the same without it.
        turned_on, dash, turned_off = setting[1].partition("-")
        if dash and not turned_off:
            raise Re2Error(f"invalid or unsupported Perl syntax: {pattern[i:setting.end()]}")
        turned_on, turned_off = turned_on.replace("U", ""), turned_off.replace("U", "")
        flags = f"{turned_on}-{turned_off}" if turned_off else turned_on
        multiline = self.multiline[-1]
        if "m" in turned_on:
            multiline = True
        elif "m" in turned_off:
            multiline = False
        if setting[2] == ":":  # (?i:...): a group with its own flags
            self.flags.append([])
            self.multiline.append(multiline)
            out.append(f"(?{flags}:")
        elif flags:  # (?i): from here to the end of the group
            at = self.quantifier_after(setting.end())
            self.flags[-1].append(flags)
            self.multiline[-1] = multiline
            out.append(f"(?{flags}:")
            return at
        return setting.end()

    def quantifier_after(self, at: int) -> int:
        """A repetition right after a flag setting applies, in RE2, to what came before
        the setting (which is no expression): written out before the scoped group."""
        pattern = self.pattern
        while at < len(pattern):
            if pattern[at] in "*+?":
                self.out.append(pattern[at])
                at += 1
            elif pattern[at] == "{" and _REPEAT.match(pattern, at):
                at = self.repeat(at)
                continue
            else:
                return at
            if at < len(pattern) and pattern[at] == "?":
                self.out.append("?")
                at += 1
            _no_possessive(pattern, at)
        return at

    def repeat(self, i: int) -> int:
        match = _REPEAT.match(self.pattern, i)
        if match is None:
            self.out.append("\\{")
            return i + 1
        low, high = int(match[1]), match[3]
        if low > _MAX_REPEAT or (high and int(high) > _MAX_REPEAT) or (
                high and int(high) < low):
            raise Re2Error(f"invalid repeat count: {match[0]}")
        self.out.append(match[0])
        _no_possessive(self.pattern, match.end())
        return match.end()


def _unicode_class(pattern: str, i: int) -> tuple[tuple[tuple[int, int], ...], bool, int]:
    """The ranges of the Unicode class escape at ``pattern[i]`` (``\\pL``,
    ``\\p{Lu}``, ``\\P{N}``, ``\\p{^L}``), whether it is negated, and where the
    pattern goes on. General
    categories and ``Any`` are read (from Python's Unicode tables); scripts
    (``\\p{Greek}``) are refused, as not supported here."""
    negated = pattern[i + 1] == "P"
    at = i + 2
    if at >= len(pattern):
        raise Re2Error(f"invalid character class range: {pattern[i:]}")
    if pattern[at] == "{":
        end = pattern.find("}", at)
        if end == -1:
            raise Re2Error(f"invalid character class range: {pattern[i:]}")
        name, at = pattern[at + 1:end], end + 1
        if name.startswith("^"):
            negated, name = not negated, name[1:]
    else:
        name, at = pattern[at], at + 1
    ranges = _category_ranges(name)
    if ranges is None:
        # Python has no script table: a name that is no category may be a script.
        raise Re2Error(f"\\p{{{name}}} is no general category (such as L or Lu) nor Any; "
                       "Unicode scripts (Greek, Han...) are not supported here",
                       supported=False)
    return ranges, negated, at




@functools.cache
def _category_table() -> dict[str, tuple[tuple[int, int], ...]]:
    """Code-point ranges per two-letter general category (unassigned left out)."""
    found: dict[str, list[tuple[int, int]]] = {}
    category, start = "", 0
    for code in range(_MAX_RUNE + 2):
        current = unicodedata.category(chr(code)) if code <= _MAX_RUNE else ""
        if current != category:
            if category and category != "Cn":
                found.setdefault(category, []).append((start, code - 1))
            category, start = current, code
    return {name: tuple(ranges) for name, ranges in found.items()}


@functools.cache
def _category_ranges(name: str) -> tuple[tuple[int, int], ...] | None:
    """Go's ``unicode.Categories[name]`` as ranges (``L`` is every ``L*``), ``Any``
    everything; None for a name that is no category."""
    if name == "Any":
        return ((0, _MAX_RUNE),)
    table = _category_table()
    if len(name) == 1:
        parts = [ranges for category, ranges in table.items() if category[0] == name]
        if not parts:
            return None
        return tuple(sorted(r for ranges in parts for r in ranges))
    return table.get(name)


def _character_escape(pattern: str, i: int) -> tuple[str, int]:
    """The escape at ``pattern[i]`` (a backslash) that stands for one character, as
    RE2 reads it (the Python for it, and where the pattern goes on): octal
    (``\\0``, ``\\12``, ``\\101``; a lone ``\\1``..``\\9`` is a backreference,
    refused), ``\\xHH`` and ``\\x{HHHH}``, the C escapes and any punctuation."""
    escaped = pattern[i + 1]
    at = i + 2
    if escaped in "01234567":
        digits = escaped
        while len(digits) < 3 and at < len(pattern) and pattern[at] in "01234567":
            digits += pattern[at]
            at += 1
        if escaped != "0" and len(digits) == 1:
            raise Re2Error(f"invalid escape sequence: \\{escaped}")
        return re.escape(chr(int(digits, 8))), at
    if escaped == "x":
        if pattern.startswith("{", at):
            end = pattern.find("}", at)
            code = pattern[at + 1:end] if end != -1 else ""
            if not code or not all(c in "0123456789abcdefABCDEF" for c in code) or \
                    int(code, 16) > _MAX_RUNE:
                raise Re2Error(f"invalid escape sequence: {pattern[i:end + 1 or None]}")
            return re.escape(chr(int(code, 16))), end + 1
        code = pattern[at:at + 2]
        if len(code) < 2 or not all(c in "0123456789abcdefABCDEF" for c in code):
            raise Re2Error(f"invalid escape sequence: {pattern[i:at + 2]}")
        return re.escape(chr(int(code, 16))), at + 2
    if escaped in _C_ESCAPES:
        return "\\" + escaped, at
    if escaped.isalnum() or escaped == "_" or not escaped.isascii():
        # RE2 escapes no other letter or digit, and only ASCII punctuation.
        raise Re2Error(f"invalid escape sequence: \\{escaped}")
    return re.escape(escaped), at


#: The character escapes RE2 and Python read alike.
_C_ESCAPES = frozenset("afnrtv")


def _no_possessive(pattern: str, at: int) -> None:
    if at < len(pattern) and pattern[at] in "*+":
        raise Re2Error(f"bad repetition operator: {pattern[at - 1:at + 1]}")
