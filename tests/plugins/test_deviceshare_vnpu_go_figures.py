"""HAMi vNPU ledgers read and count numbers as Volcano's Go does: annotation numbers
through ``strconv.ParseInt(.., 10, 32)``, int32 sums and differences, truncating
division, scores with the ratio first, ``json.Marshal``'s escapes, and the node-by-node
and column forms agreeing on malformed registrations."""

from __future__ import annotations

import json
from typing import Any

import pytest

from batchsched.api.ascend import (
    DEFAULT_CHIP,
    AscendDevice,
    AscendDevices,
    allocated_annotation,
    calc_score,
    runtime_annotation,
    vnpu_request,
)
from batchsched.api.ascend_annotations import decode_devices
from batchsched.api.types import FitStatusCode
from batchsched.columnar.selector import FAST_PATH_ENVIRONMENT_VARIABLE
from batchsched.kube.go_json import marshal
from batchsched.kube.go_strconv import atoi, divide, int32, parse_int
from batchsched.scenario import parse_scenario, run_scenario
from plugins.node_support import document, plugin

ALLOCATED = allocated_annotation("Ascend310P")


@pytest.mark.parametrize(("text", "bits", "expected"), [
    ("12", 32, (12, True)),
    ("+12", 32, (12, True)),
    ("-2147483648", 32, (-2147483648, True)),
    ("2147483648", 32, (2147483647, False)),
    ("-2147483649", 32, (-2147483648, False)),
    ("99999999999x", 32, (2147483647, False)),  # out of range before the bad character
    ("12x", 32, (0, False)),
    ("1_000", 32, (0, False)),
    (" 5", 32, (0, False)),
    ("\u0663", 32, (0, False)),  # ARABIC-INDIC DIGIT THREE: Python's int() reads 3
    ("", 32, (0, False)),
    ("-", 32, (0, False)),
    ("9" * 30, 64, (2**63 - 1, False)),
    ("-9223372036854775808", 64, (-(2**63), True)),
])
def test_numbers_are_parsed_as_go_parses_them(
        text: str, bits: int, expected: tuple[int, bool]) -> None:
    assert parse_int(text, bits) == expected
    if bits == 64:
        assert atoi(text) == expected[0]


def test_int32_wraps_and_division_truncates() -> None:
    assert int32(4_000_000_000) == -294_967_296
    assert int32(-(2**31)) == -(2**31)
    assert divide(-50, 100) == 0
    assert divide(-150, 100) == -1
    assert divide(150, -100) == -1


def test_a_pod_annotation_s_numbers_are_clamped_not_read_unbounded() -> None:
    devices = decode_devices("A,Ascend310P,99999999999999999999,0:B,Ascend310P,1_0000,-7:;")
    assert [(d.memory, d.cores) for d in devices] == [(2**31 - 1, 0), (0, -7)]


def test_used_memory_is_an_int32_sum_as_in_go() -> None:
    cards = AscendDevices("n1", DEFAULT_CHIP, False,
                          {"A": AscendDevice("A", count=4, memory=21527, cores=8)})
    for uid in ("o1", "o2"):
        cards.add_task(uid, {ALLOCATED: "A,Ascend310P,2000000000,0:;"})
    assert cards.devices["A"].used_memory == -294_967_296
    # 21527 - (-294967296) is within int32: the card has room, as Go computes it.
    request = vnpu_request({"huawei.com/Ascend310P-memory": 3072000.0}, DEFAULT_CHIP)
    assert cards.filter(request, "binpack", hami_core=False)[0] is FitStatusCode.SUCCESS
    cards.remove_task("o1")
    cards.remove_task("o2")
    assert cards.devices["A"].used_memory == 0


def test_a_count_only_request_takes_the_card_memory_in_int32() -> None:
    request = vnpu_request({"huawei.com/Ascend310P": 1000.0}, DEFAULT_CHIP)
    cards = AscendDevices("n1", DEFAULT_CHIP, True,
                          {"A": AscendDevice("A", count=4, memory=30_000_000, cores=8)})
    written = cards.allocate("p1", request, "binpack", hami_core=True, node="n1", now=0)
    # int32(30000000 * 100) / 100, Go's ResourceReqs.
    assert written[ALLOCATED] == "A,Ascend310P,-12949672,0:;"


def test_binpack_scores_with_the_ratio_first() -> None:
    card = AscendDevice("A", count=4, memory=3, cores=8, used_memory=1)
    assert calc_score("binpack", card) == 100.0 * (1 / 3)
    assert calc_score("binpack", card) != 100.0 / 3  # the other rounding


def test_the_runtime_annotation_is_go_s_json() -> None:
    assert marshal([{"UUID": "npu<0>&\u5361", "n": 1}, None]) == \
        '[{"UUID":"npu\\u003c0\\u003e\\u0026\u5361","n":1},null]'
    cards = AscendDevices("n1", DEFAULT_CHIP, False,
                          {"": AscendDevice("", count=1, memory=21527, cores=8)})
    request = vnpu_request({"huawei.com/Ascend310P": 1000.0}, DEFAULT_CHIP)
    written = cards.allocate("p1", request, "", hami_core=False, node="n1", now=0)
    # Every field of Go's RuntimeInfo is omitempty: a card without an id, asked whole.
    assert written[runtime_annotation("Ascend310P")] == "[{}]"


def test_an_unpaired_surrogate_in_a_card_id_reads_as_go_reads_it() -> None:
    text = '[{"id":"npu\\ud800","count":1,"devmem":21527,"devcore":8}]'
    cards = AscendDevices.from_node("n1", {"hami.io/node-register-Ascend310P": text},
                                    {"huawei.com/Ascend310P": 1000.0}, DEFAULT_CHIP)
    assert cards is not None
    assert list(cards.devices) == ["npu\ufffd"]


def _scenario(register: list[dict[str, Any]], running: str, policy: str = "binpack",
              pending_annotation: str = "") -> dict[str, Any]:
    registered = json.dumps(register)
    annotations = f", annotations: {{{ALLOCATED}: '{pending_annotation}'}}" \
        if pending_annotation else ""
    lines = [
        "nodes:",
        "- {name: n1, allocatable: {cpu: 64, memory: 256Gi, pods: 110, "
        "huawei.com/Ascend310P: 8}, "
        f"annotations: {{hami.io/node-register-Ascend310P: '{registered}'}}}}",
        "jobs:", "- {name: old, minMember: 1, phase: Running}",
        "- {name: j1, minMember: 1, createdAt: 0, phase: Inqueue}",
        "tasks:",
        "- {name: o, job: old, phase: Running, node: n1, requests: {cpu: 1, "
        f"huawei.com/Ascend310P: 1}}, annotations: {{{ALLOCATED}: '{running}', "
        "hami.io/bind-phase: success}}",
        "- {name: a, job: j1, requests: {cpu: 1, huawei.com/Ascend310P: 1, "
        f"huawei.com/Ascend310P-memory: 12288}}{annotations}}}",
    ]
    return document("\n".join(lines), plugin("predicates"), plugin("deviceshare", {
        "deviceshare.AscendHAMiVNPUEnable": True, "deviceshare.SchedulePolicy": policy,
        "deviceshare.ScheduleWeight": 1}), actions="allocate")


def _both_paths(doc: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    fast = run_scenario(parse_scenario(doc, source="<test>")).to_json()
    monkeypatch.setenv(FAST_PATH_ENVIRONMENT_VARIABLE, "0")
    reference = run_scenario(parse_scenario(doc, source="<test>")).to_json()
    assert fast == reference
    return fast


@pytest.mark.parametrize("policy", ["binpack", "spread"])
def test_a_card_registered_with_negative_memory_is_judged_alike_on_both_paths(
        policy: str, monkeypatch: pytest.MonkeyPatch) -> None:
    register = [{"id": "A", "count": 4, "devmem": 21527, "devcore": 8},
                {"id": "B", "count": 4, "devmem": -1, "devcore": 8}]
    got = _both_paths(_scenario(register, "A,Ascend310P,3072,0:;", policy), monkeypatch)
    assert "default/a" in got["binds"]


def test_a_running_pod_s_huge_number_does_not_break_the_column_form(
        monkeypatch: pytest.MonkeyPatch) -> None:
    register = [{"id": "A", "count": 4, "devmem": 21527, "devcore": 8},
                {"id": "B", "count": 4, "devmem": 21527, "devcore": 8}]
    got = _both_paths(_scenario(register, "A,Ascend310P,99999999999999999999,0:;"),
                      monkeypatch)
    assert [device["uuid"] for device in got["vnpuDevices"]["default/a"]] == ["B"]


def test_a_pending_pod_s_stale_cards_stay_counted_while_its_cards_are_chosen(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Volcano's node.AddTask counts the card the stale annotation names; Allocate then
    chooses on that state: A (21527 MiB) has 21527 - 12288 left, short of 12288."""
    register = [{"id": "A", "count": 2, "devmem": 21527, "devcore": 8}]
    got = _both_paths(_scenario(register, "", pending_annotation="A,Ascend310P,12288,0:;"),
                      monkeypatch)
    assert "default/a" not in got["binds"]
