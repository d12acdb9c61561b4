"""CEL as Kubernetes' device selectors use it: values, errors and their absorption."""

from __future__ import annotations

import re
from fractions import Fraction
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from batchsched.kube.cel import (
    CelEvaluationError,
    CelSyntaxError,
    Quantity,
    Semver,
    UInt,
    compile_expression,
)

DEVICE: dict[str, Any] = {
    "device": {
        "driver": "gpu.example.com",
        "attributes": {"gpu.example.com": {
            "model": "a100", "healthy": True, "index": 3, "driverVersion": Semver("1.2.3")}},
        "capacity": {"gpu.example.com": {"memory": Quantity(Fraction(40 * 2**30), "40Gi")}},
    }
}


def run(text: str, variables: dict[str, Any] | None = None) -> Any:
    return compile_expression(text).evaluate(DEVICE if variables is None else variables)


@pytest.mark.parametrize(("text", "expected"), [
    ('device.driver == "gpu.example.com"', True),
    ("device.driver == 'gpu.example.com'", True),
    ('device.attributes["gpu.example.com"].model == "a100"', True),
    ('device.attributes["gpu.example.com"]["index"] > 2', True),
    ('device.capacity["gpu.example.com"].memory.compareTo(quantity("10Gi")) >= 0', True),
    ('device.capacity["gpu.example.com"].memory.isGreaterThan(quantity("50Gi"))', False),
    ('device.capacity["gpu.example.com"].memory.isLessThan(quantity("50Gi"))', True),
    ('device.attributes["gpu.example.com"].driverVersion.isGreaterThan(semver("1.10.0"))', False),
    ('device.attributes["gpu.example.com"].driverVersion.major() == 1', True),
    ('has(device.attributes["gpu.example.com"].healthy)', True),
    ('has(device.attributes["gpu.example.com"].missing)', False),
    ('"gpu.example.com" in device.attributes', True),
    ('device.driver.startsWith("gpu") && device.driver.endsWith(".com")', True),
    ('device.driver.matches("^gpu\\\\.")', True),
    ("[1, 2, 3].all(x, x > 0)", True),
    ("[1, 2, 3].exists(x, x > 2)", True),
    ("[1, 2, 3].exists_one(x, x > 1)", False),
    ("[1, 2, 3].map(x, x * 2)", [2, 4, 6]),
    ("[1, 2, 3].filter(x, x % 2 == 1)", [1, 3]),
    ("-5 / 2", -2),
    ("-5 % 2", -1),
    ("1 == 1.0", True),
    ("1u == 1", True),
    ('"a" + "b" == "ab"', True),
    ("true ? 1 : 2", 1),
    ("size([1, 2]) + size({'a': 1})", 3),
    ('int("42") + 1', 43),
    ('quantity("1.5").asApproximateFloat()', 1.5),
    ('quantity("2k").asInteger()', 2000),
    ('"Abc".lowerAscii()', "abc"),
    ('["a", "b"].join("-")', "a-b"),
    ("1 != 'a'", True),
    ("r'\\d' == '\\\\d'", True),
    ("0x10", 16),
])
def test_values(text: str, expected: Any) -> None:
    assert run(text) == expected


@pytest.mark.parametrize(("text", "message"), [
    ('device.attributes["some-driver"].healthy', "no such key: some-driver"),
    ('device.attributes["gpu.example.com"].nope == 1', "no such key: nope"),
    ("9223372036854775807 + 1", "integer overflow"),
    ("1 / 0", "division by zero"),
    ("1 % 0", "modulus by zero"),
    ("1 < 'a'", "no such overload: _<_(int, string)"),
    ("!1", "no such overload: !_(int)"),
    ("[1][3]", "index out of bounds: 3"),
    ('quantity("1Qi")', "quantities must match"),
    ("unknown_variable", "no such attribute: unknown_variable"),
])
def test_evaluation_errors(text: str, message: str) -> None:
    with pytest.raises(CelEvaluationError, match="^" + message.replace("(", r"\(").replace(
            ")", r"\)")):
        run(text)


@pytest.mark.parametrize("text", [
    'false && device.attributes["x"].y',
    'device.attributes["x"].y && false',
])
def test_and_absorbs_an_error_when_the_other_side_is_false(text: str) -> None:
    assert run(text) is False


@pytest.mark.parametrize("text", [
    'true || device.attributes["x"].y',
    'device.attributes["x"].y || true',
])
def test_or_absorbs_an_error_when_the_other_side_is_true(text: str) -> None:
    assert run(text) is True


def test_an_error_stands_when_the_other_side_does_not_decide() -> None:
    with pytest.raises(CelEvaluationError, match="no such key: x"):
        run('true && device.attributes["x"].y')


@pytest.mark.parametrize("text", [
    "device.", "foo(1)", "has(device)", "1 +", "x.bar()", "(1", "'unterminated", "1 ? 2",
    "9223372036854775808",
])
def test_syntax_errors(text: str) -> None:
    with pytest.raises(CelSyntaxError):
        compile_expression(text)


def test_uint_is_its_own_type() -> None:
    assert type(run("1u + 2u")) is UInt
    with pytest.raises(CelEvaluationError, match="no such overload"):
        run("1u + 1")


def test_semver_orders_pre_releases_before_the_release() -> None:
    assert run('semver("1.0.0-alpha").isLessThan(semver("1.0.0"))') is True
    assert run('semver("1.0.0-alpha.2").isLessThan(semver("1.0.0-alpha.10"))') is True


@given(st.integers(-(2**40), 2**40), st.integers(-(2**40), 2**40).filter(bool))
def test_integer_division_truncates_toward_zero(left: int, right: int) -> None:
    quotient = run(f"{left} / {right}", {})
    remainder = run(f"{left} % {right}", {})
    assert quotient * right + remainder == left
    assert abs(remainder) < abs(right)
    assert remainder == 0 or (remainder > 0) == (left > 0)


@pytest.mark.parametrize(("text", "expected"), [
    ('semver("v1.2", true).minor() == 2', True),
    ('isSemver("1.2", true)', True),
    ('isSemver("1.2")', False),
    ('"a,b,c".split(",", 2)', ["a", "b,c"]),
    # Go's strings.SplitN: an empty separator splits between characters.
    ('"a100".split("")', ["a", "1", "0", "0"]),
    ('"a100".split("", 2)', ["a", "100"]),
    ('"".split("")', []),
    ('"".split(",")', [""]),
    # cel-go formats a double with %g and parses strings with strconv.
    ("string(1.0)", "1"),
    ("string(123456789.0)", "1.23456789e+08"),
    ('double("1e3")', 1000.0),
    ('int("-12")', -12),
    ('"abcdef".substring(1, 3)', "bc"),
    ('"abc".charAt(1)', "b"),
    ("cel.bind(x, 3, x * x)", 9),
])
def test_kubernetes_library_calls(text: str, expected: Any) -> None:
    assert run(text, {}) == expected


@pytest.mark.parametrize("text", [
    '"a".startsWith(1)', 'semver("1.2.3", "yes")', 'size(1, 2)', 'semver("1.2.3") == "1.2.3"',
    'quantity("1") == 1',
])
def test_a_call_or_comparison_of_the_wrong_types_is_an_overload_error(text: str) -> None:
    """Not a crash: Kubernetes' libraries define these only among their own types."""
    with pytest.raises(CelEvaluationError, match="no such overload"):
        run(text, {})


def test_a_selector_naming_an_undeclared_variable_does_not_compile() -> None:
    with pytest.raises(CelSyntaxError, match="undeclared reference to 'foo'"):
        compile_expression("foo == 1", frozenset({"device"}))
    assert compile_expression("[1].all(x, x > 0) && cel.bind(y, 1, y == 1)",
                              frozenset({"device"})).evaluate({}) is True


@pytest.mark.parametrize("text", [
    'int("1_000")', 'int(" 1")', 'int("\u0661")', 'uint("+1")', 'int("9223372036854775808")',
    'double(" 1.5")', 'double("0x")',
])
def test_a_string_go_s_strconv_does_not_read_is_a_conversion_error(text: str) -> None:
    with pytest.raises(CelEvaluationError, match="cannot convert"):
        run(text, {})


@pytest.mark.parametrize(("text", "message"), [
    ('{"a": 1}.all(k, v, v > 0)', "all() with two variables"),
    ('timestamp("2024-01-01T00:00:00Z") > timestamp("2023-01-01T00:00:00Z")',
     "timestamp() is not available here"),
])
def test_what_is_not_available_says_so(text: str, message: str) -> None:
    with pytest.raises(CelSyntaxError, match=re.escape(message)):
        compile_expression(text)


# cel-go's strings extension at the version Volcano pins (v0.26.0, ext/strings.go):
# lastIndexOf searches backward from its offset, an empty substring is found at the
# offset itself, a negative offset is an error, and replace takes a count.
@pytest.mark.parametrize(("text", "expected"), [
    ('"a-b-c".lastIndexOf("-", 2)', 1),
    ('"aXbXc".lastIndexOf("X", 2)', 1),
    ('"aXbXc".lastIndexOf("X", 3)', 3),
    ('"aXbXc".lastIndexOf("X", 0)', -1),
    ('"abc".lastIndexOf("bc", 2)', 1),
    ('"abc".lastIndexOf("a", 5)', -1),
    ('"abc".lastIndexOf("", 1)', 1),
    ('"abc".lastIndexOf("")', 3),
    ('"abc".lastIndexOf("c")', 2),
    ('"ab".lastIndexOf("abc")', -1),
    ('"abc".indexOf("", 5)', 5),
    ('"abc".indexOf("")', 0),
    ('"abc".indexOf("a", 5)', -1),
    ('"abcabc".indexOf("b", 2)', 4),
    ('"a-b-c".replace("-", "", 1)', "ab-c"),
    ('"a-b-c".replace("-", "", -1)', "abc"),
    ('"a-b-c".replace("-", "", 0)', "a-b-c"),
    ('"ab".replace("", "-", 2)', "-a-b"),
])
def test_string_extension_calls_as_cel_go(text: str, expected: Any) -> None:
    assert run(text, {}) == expected


@pytest.mark.parametrize("text", ['"abc".indexOf("c", -1)', '"abc".lastIndexOf("c", -1)'])
def test_a_negative_string_offset_is_out_of_range(text: str) -> None:
    with pytest.raises(CelEvaluationError, match="index out of range: -1"):
        run(text, {})


# Kubernetes' semver library parses with blang/semver v4: a numeric pre-release
# identifier has no leading zero and no identifier (pre-release or build) is empty.
@pytest.mark.parametrize(("text", "valid"), [
    ("1.2.3-01", False), ("1.2.3-0", True), ("1.2.3-0a", True), ("1.2.3-a.01", False),
    ("1.2.3+01", True), ("1.2.3+a..b", False), ("1.2.3+.a", False), ("1.2.3+a.b", True),
])
def test_semver_identifiers_follow_blang_semver(text: str, valid: bool) -> None:
    assert run(f'isSemver("{text}")', {}) is valid


@pytest.mark.parametrize(("text", "expected"), [
    ("""strings.quote('single-quote with "double quote"')""",
     '"single-quote with \\"double quote\\""'),
    ('strings.quote("two escape sequences \\\\a\\\\n")', '"two escape sequences \\\\a\\\\n"'),
    ("strings.quote(device.driver) == '\"gpu.example.com\"'", True),
])
def test_strings_quote_of_the_strings_extension_version_kubernetes_uses(
        text: str, expected: Any) -> None:
    assert run(text) == expected


def test_string_reverse_is_not_in_kubernetes_strings_extension() -> None:
    # Kubernetes' CEL environment has the strings extension at version 2; reverse()
    # comes with version 3.
    with pytest.raises((CelSyntaxError, CelEvaluationError)):
        run("device.driver.reverse() == 'x'")


@pytest.mark.parametrize("text", [
    '[{"quote": "a"}].exists(strings, strings.quote == "a")',
    'cel.bind(strings, {"quote": "a"}, strings.quote == "a")',
])
def test_a_variable_named_strings_is_still_a_variable(text: str) -> None:
    assert run(text) is True


@pytest.mark.parametrize(("text", "expected"), [
    ("type(1) == int", True),
    ("type(1) == uint", False),
    ("type(1u) == uint && type('a') == string && type(b'a') == bytes", True),
    ("type([1]) == list && type({}) == map && type(null) == null_type", True),
    ("type(type(1)) == type", True),
    ("-9223372036854775808 == -9223372036854775807 - 1", True),
    ("size(b'\\xff') == 1 && size(b'\\377') == 1", True),
    ("'\\xff' == '\\u00ff'", True),
])
def test_type_values_the_smallest_int_and_bytes_escapes_as_cel_go(text: str,
                                                                   expected: Any) -> None:
    """cel-go's standard type() and type names, the sign of an int literal read with it
    (-9223372036854775808 is an int), and an escape in a bytes literal as one octet."""
    assert compile_expression(text).evaluate({}) is expected


def test_the_int64_magnitude_alone_is_out_of_range() -> None:
    with pytest.raises(CelSyntaxError, match="int literal out of range"):
        compile_expression("9223372036854775808 > 0")
    with pytest.raises(CelSyntaxError, match="unexpected 9223372036854775808"):
        compile_expression("1 9223372036854775808")


@pytest.mark.parametrize("text", ["b'\\477'", "'\\477'", "b'\\0a1'", "b'\\u00ff'",
                                  "b'\\U000000ff'"])
def test_escapes_cel_go_refuses_are_syntax_errors(text: str) -> None:
    """Octal escapes are \\[0-3][0-7][0-7] and a bytes literal takes no \\u or \\U
    (b'\\477' failed the whole session with a ValueError)."""
    with pytest.raises(CelSyntaxError):
        compile_expression(text)
