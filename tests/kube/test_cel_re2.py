"""CEL's matches() reads its pattern as RE2 (Go's regexp), not as Python's re. Each
row was printed by Go's regexp.MatchString (None: Go refuses the pattern), and the
translation agreed with Go on 12,000 random patterns when it was written (it errs,
where Go accepts, only on a repetition right after a flag setting that itself follows
a repetition, such as b+(?s){2})."""

from __future__ import annotations

import re
import warnings

import pytest

from batchsched.kube.cel import CelEvaluationError, compile_expression
from batchsched.kube.cel.re2 import Re2Error, python_pattern

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
]


@pytest.mark.parametrize(("pattern", "text", "go"), GO_MATCHES)
def test_a_pattern_matches_what_go_s_regexp_matches(pattern: str, text: str,
                                                    go: bool | None) -> None:
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
