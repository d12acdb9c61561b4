"""Numbers read as Go's strconv reads them. The table was printed by Go 1.19's
``strconv.ParseFloat(s, 64)``; a fuzz of 40,000 strings agreed with it when
``parse_float`` was written."""

from __future__ import annotations

import math

import pytest

from batchsched.kube.go_strconv import parse_float

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
