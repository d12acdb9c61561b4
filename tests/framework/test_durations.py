"""Durations are read as Go's ``time.ParseDuration`` reads them, in integer
nanoseconds: what it rejects is rejected, what it truncates is truncated."""

from __future__ import annotations

import pytest

from batchsched.framework.arguments import parse_duration, parse_duration_ns


@pytest.mark.parametrize(("text", "nanoseconds"), [
    ("1h2m3s4ms", 3_723_004_000_000),
    ("-1.5us", -1_500),
    ("1\u00b5s", 1_000),                     # micro sign
    ("1\u03bcs", 1_000),                     # Greek mu
    (".5s", 500_000_000),
    ("5.s", 5_000_000_000),
    ("+0", 0),
    ("0.5ns", 0),                           # the fraction of a nanosecond is dropped
    ("1.0000000000000000000001s", 1_000_000_000),  # digits past an int64 are ignored
    ("9223372036854775807ns", 2**63 - 1),
    ("-9223372036854775808ns", -(2**63)),
    ("2562047h47m16.854775807s", 2**63 - 1),
])
def test_what_go_reads(text: str, nanoseconds: int) -> None:
    assert parse_duration_ns(text) == nanoseconds
    assert parse_duration(text) == nanoseconds / 1e9


@pytest.mark.parametrize("text", [
    "", "-", "1", ".s", " 1s", "1s ", "1d",
    "9223372036854775808ns",                 # one past int64
    "2562047h47m16.854775808s",
    "\u0661h",                              # an Arabic-Indic digit: not an ASCII digit
    "\uff11s",                              # a fullwidth digit
])
def test_what_go_rejects(text: str) -> None:
    with pytest.raises(ValueError, match="invalid duration"):
        parse_duration_ns(text)
