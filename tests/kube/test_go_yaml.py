"""Scheduler configurations read as Volcano's yaml.v2 reads them. The plain scalars'
table was printed by gopkg.in/yaml.v2 v2.4.0 (yaml.Unmarshal into interface{})."""

from __future__ import annotations

import math
from typing import Any

import pytest

from batchsched.kube.go_yaml import load_first_document, resolved, text_keys

YAML_V2_SCALARS: list[tuple[str, Any]] = [
    ("y", True), ("N", False), ("yes", True), ("off", False), ("TRUE", True),
    ("3e0", 3.0), ("1e3", 1000.0), ("1.5e-3", 0.0015), ("0o3", 3), ("017", 15),
    ("019", 19.0), ("0x1F", 31), ("0b101", 5), ("-0b11", -3), ("1_000", 1000),
    ("1:30", "1:30"), ("1.50", 1.5), (".5", 0.5), ("5.", 5.0), ("~", None), ("", None),
    ("2001-12-14", "2001-12-14"), ("18446744073709551615", 18446744073709551615),
    ("18446744073709551616", 1.8446744073709552e19), ("+12", 12), ("1e", "1e"),
    ("0x", "0x"), ("NaN", "NaN"), ("12:30:00", "12:30:00"), ("0xG", "0xG"),
]


@pytest.mark.parametrize(("text", "value"), YAML_V2_SCALARS)
def test_a_plain_scalar_resolves_as_yaml_v2_resolves_it(text: str, value: Any) -> None:
    got = resolved(load_first_document(f"v: {text}\n"))["v"]
    assert got == value and type(got) is type(value)


def test_special_floats_keys_merges_and_written_tags() -> None:
    raw = load_first_document(
        "a: .inf\nb: -.Inf\nc: .nan\nn: 1\ny: {<<: {x: 1, z: 2}, z: 3}\nq: !!str 12\n"
        "'on': 2\n")
    doc = text_keys(raw)
    assert doc["a"] == math.inf and doc["b"] == -math.inf and math.isnan(doc["c"])
    assert doc["n"] == 1  # into a string-keyed map a key is its text: "n", not false
    assert doc["y"] == {"x": 1, "z": 3}  # merge keys merge
    assert doc["q"] == "12"  # a written tag is kept
    # Into interface{} (a mapping nested in an argument) a plain key is resolved too;
    # a quoted one stays a string.
    assert resolved(raw)[False] == 1 and resolved(raw)[True] == {"x": 1, "z": 3}
    assert resolved(raw)["on"] == 2


def test_nested_keys_are_resolved_in_arguments_and_text_elsewhere() -> None:
    from batchsched.conf import configuration_from_text

    configuration = configuration_from_text(
        "actions: allocate\ntiers:\n- plugins:\n  - name: usage\n    arguments:\n"
        "      1: top\n      thresholds: {cpu: 50, 2: 0, on: 3}\n")
    arguments = configuration.tiers[0].plugins[0].arguments
    assert arguments["1"] == "top"  # map[string]interface{}: the key's text
    assert arguments["thresholds"] == {"cpu": 50, 2: 0, True: 3}


def test_only_the_first_document_is_read() -> None:
    assert resolved(load_first_document("a: 1\n---\na: [2\n")) == {"a": 1}
    assert load_first_document("") is None
