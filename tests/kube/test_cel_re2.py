"""CEL's matches() reads its pattern as RE2 (Go's regexp), not as Python's re. Each
row was printed by Go's regexp.MatchString (None: Go refuses the pattern), and the
translation agreed with Go on 12,000 random patterns when it was written (it errs,
where Go accepts, only on a repetition right after a flag setting that itself follows
a repetition, such as b+(?s){2})."""

from __future__ import annotations

import random
import re
import warnings

import pytest

from batchsched.kube.cel import CelEvaluationError, compile_expression
from batchsched.kube.cel.re2 import Re2Error, python_pattern
from batchsched.kube.cel.re2_search import MAX_PROGRAM, Re2Search

GO_MATCHES: list[tuple[str, str, bool | None]] = [
    ("^a{,1}100$", "a100", False),
    ("^a{,1}100$", "a{,1}100", True),
    ("a{1,3}b", "aaab", True),
    ("x{", "x{", True),
    ("x{a}", "x{a}", True),
    ("^abc$", "abc\n", False),
    ("(?m)^abc$", "abc\nx", True),
    ("\\d+", "\u0661\u0662", False),
    ("\\w", "\u00e9", False),
    ("\\s", "\x0b", False),
    ("\\bfoo\\b", "\u00e9foo\u00e9", True),
    ("\\bfoo\\b", "a foo b", True),
    ("a\\z", "a", True),
    ("a\\Z", "a", None),
    ("(?=a)a", "a", None),
    ("(a)\\1", "aa", None),
    ("a*+", "aaa", None),
    ("(?>a)", "a", None),
    ("(?P<x>a)", "a", True),
    ("[]a]", "]", True),
    ("[^]a]", "b", True),
    ("[[]", "[", True),
    ("[\\d]", "5", True),
    ("\\Qa.b\\E", "axb", False),
    ("\\Qa.b\\E", "a.b", True),
    ("(?s)a.b", "a\nb", True),
    ("a.b", "a\nb", False),
    ("[[:alpha:]]+$", "ab", True),
    ("[[:digit:]]", "a", False),
    ("a(?i)b|c", "aB", True),
    ("a(?i)b|c", "C", True),
    ("x+(?s)?", "x", True),
    ("^*a", "a", True),
    ("a{1001}", "a", None),
    ("(?i)k", "\u212a", True),
    ("[\\D]", "\u0661", True),
    ("^[\\W]$", "\u00e9", True),
    ("^[\\S]$", "\x0b", True),
    ("(?m:a)b$", "ab\n", False),
    ("a(?m:b$)|c$", "c\n", False),
    ("[[:^alpha:]]", "1", True),
    ("[[:^alpha:]]", "a", False),
    ("\\x{41}", "A", True),
    ("\\101", "A", True),
    ("\\12", "\n", True),
    ("\\1", "x", None),
    ("\\u0041", "A", None),
    ("[\\b]", "\x08", None),
    ("\\\u00e9", "\u00e9", None),
    ("\\x4", "J", None),
    ("\\C", "a", None),
    ("\\pL", "\u00e9", True),
    ("^\\pL\\d-", "\u00e91-", True),
    ("\\PN", "1", False),
    ("\\p{^L}", "a", False),
    ("[\\p{Lu}\\d]", "Q", True),
    ("[\\p{Lu}\\d]", "q", False),
    ("\\p{Any}", "\u2603", True),
    ("\\p{Xx}", "a", None),
    ("(?U)^r0-", "r0-a", True),
    ("(?U)a+b", "aab", True),
    ("(?i-U)A", "a", True),
    ("(?U-)a", "a", None),
    # Case folding follows Go's orbits (SimpleFold), a class is folded before it is
    # negated, and \\b stays ASCII under (?i).
    ("(?i)\\P{Lu}", "a", False),
    ("(?i)[^\\p{Lu}]", "a", False),
    ("(?i)\\W", "\u212a", False),
    ("(?i)[\\x{2120}-\\x{212f}]", "k", True),
    ("(?i)\u0131", "i", False),
    ("(?i)i", "\u0131", False),
    ("(?i)\\bx", "\u212ax", True),
    ("(?i)\u017f", "S", True),
    ("(?i)\u00df", "\u1e9e", True),
]


#: Rows only the search's own case folding (Go's orbits) gets right.
_FOLDED_BY_THE_AUTOMATON_ONLY = {("(?i)\u0131", "i"), ("(?i)i", "\u0131")}


@pytest.mark.parametrize(("pattern", "text", "go"), GO_MATCHES)
def test_the_linear_search_matches_what_go_s_regexp_matches(pattern: str, text: str,
                                                           go: bool | None) -> None:
    try:
        matched: bool | None = Re2Search(pattern).search(text)
    except Re2Error:
        matched = None
    assert matched is go


@pytest.mark.parametrize(("pattern", "text", "go"), GO_MATCHES)
def test_a_pattern_matches_what_go_s_regexp_matches(pattern: str, text: str,
                                                    go: bool | None) -> None:
    if (pattern, text) in _FOLDED_BY_THE_AUTOMATON_ONLY:
        pytest.skip("Python's re folds the dotless i with I; Go's orbit for it is itself")
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no FutureWarning from Python's re either
        try:
            matched: bool | None = re.search(python_pattern(pattern), text) is not None
        except (Re2Error, re.error):
            matched = None
    assert matched is go


def test_a_selector_s_matches_follows_re2() -> None:
    device = {"device": {"attributes": {"gpu.example.com": {"model": "a100"}}}}
    selector = 'device.attributes["gpu.example.com"].model.matches("^a{,1}100$")'
    assert compile_expression(selector).evaluate(device) is False
    with pytest.raises(CelEvaluationError, match="invalid regular expression"):
        compile_expression('"aa".matches("(a)\\\\1")').evaluate({})


def test_a_pattern_python_would_backtrack_on_for_ever_is_answered_at_once() -> None:
    """Go's regexp runs in time linear in the text; so does this search. Python's re
    takes minutes on this pattern against a 34-character name (x4 per 2 characters)."""
    pattern = Re2Search(r"^(\w+-?)*\.cluster\.local$")
    name = "worker-0123456789-abcdefghijklmn-k" * 8
    assert pattern.search(name) is False
    assert pattern.search("worker-1.cluster.local") is True
    assert Re2Search("(a|aa)*b").search("a" * 5000) is False


def test_a_script_class_is_refused_as_unsupported_not_as_invalid() -> None:
    with pytest.raises(Re2Error, match=r"Unicode scripts \(Greek, Han...\) are not") as caught:
        Re2Search(r"\p{Greek}")
    assert caught.value.supported is False


def test_an_automaton_past_the_size_limit_is_refused() -> None:
    with pytest.raises(Re2Error, match="expression too large"):
        Re2Search("(((a{100}){100}){100})")
    assert MAX_PROGRAM >= 10_000


# Random patterns over a small alphabet: the search and Python's re (on the same
# translation) agree wherever re answers, flags, classes and anchors included.
_ATOMS = ["a", "b", "A", ".", "[ab]", "[^a]", "[a-c]", "\\d", "\\w", "\\s", "\\b", "\\B",
          "^", "$", "\\z", "\\A", "\\n", "(?i)a", "(?i:[a-b])", "(?s).", "(?m)^", "(?m)$",
          "[[:upper:]]", "\\pL", "\\PL", "k"]
_TEXT = "abAB1 \n-k\u212a\u00e9"


def _random_pattern(rng: random.Random, depth: int = 0) -> str:
    roll = rng.random()
    if depth > 2 or roll < 0.35:
        return rng.choice(_ATOMS)
    if roll < 0.55:
        return "".join(_random_pattern(rng, depth + 1) for _ in range(rng.randint(2, 3)))
    if roll < 0.7:
        return "(" + "|".join(_random_pattern(rng, depth + 1)
                              for _ in range(rng.randint(2, 3))) + ")"
    suffix = rng.choice(["*", "+", "?", "{2}", "{1,3}", "{0,}", "*?", "+?", "{2,}?"])
    return "(?:" + _random_pattern(rng, depth + 1) + ")" + suffix


def test_the_linear_search_agrees_with_python_s_re_on_random_patterns() -> None:
    rng = random.Random(20261128)
    checked = 0
    for _ in range(1500):
        pattern = _random_pattern(rng)
        try:
            translated = re.compile(python_pattern(pattern))
        except (Re2Error, re.error):
            continue
        search = Re2Search(pattern)
        for _ in range(8):
            text = "".join(rng.choice(_TEXT) for _ in range(rng.randint(0, 8)))
            assert search.search(text) == (translated.search(text) is not None), (
                pattern, text)
            checked += 1
    assert checked > 5000


def test_a_pattern_nested_too_deeply_for_this_reading_is_not_called_refused_by_go() -> None:
    with pytest.raises(Re2Error) as caught:
        Re2Search("(" * 2000 + "n" + ")" * 2000)
    assert caught.value.supported is False


def test_an_anchored_pattern_stops_at_the_first_character_it_cannot_take() -> None:
    pattern = Re2Search("^r0-")
    assert pattern.search("r0-a") and not pattern.search("x" * 100_000 + "r0-")
