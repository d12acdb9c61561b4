"""HAMi's Ascend vNPUs (batchsched.api.ascend), with the cases of Volcano's
``pkg/scheduler/api/devices/ascend/hami/device_info_test.go`` and the vNPU cases of
``pkg/scheduler/api/devices/config/config_test.go`` (volcano-sh/volcano, Apache-2.0).

Adapted where Volcano's tests lean on its process-global registry: its AddResource
cases key the annotation by an unregistered chip type (the empty key); here the key is
the chip type's own. The node-lock case is in ``tests/plugins/test_deviceshare_node_lock.py``.
Not transcribed: the ``IgnoredDevicesList`` container's own tests (sessions hide
resources instead).
"""

from __future__ import annotations

import json

import pytest

from batchsched.api.ascend import (
    DEFAULT_CHIP,
    AscendChip,
    AscendDevice,
    AscendDevices,
    SelectionError,
    VnpuRequest,
    VnpuTemplate,
    allocated_annotation,
    assigned_vnpus,
    calc_score,
    decode_devices,
    encode_devices,
    fit,
    release_keys,
    vnpu_request,
)
from batchsched.api.device_config import parse_device_config
from batchsched.api.types import FitStatusCode

ASCEND_310P = DEFAULT_CHIP
#: createTestAscendDevice's configuration: no templates.
ASCEND_910 = AscendChip(common_word="Ascend910", resource_name="huawei.com/Ascend910",
                        resource_memory_name="huawei.com/Ascend910Memory",
                        memory_allocatable=32000, memory_capacity=32000)
#: createTestAscendAllocateDevice's.
ASCEND_910A = AscendChip(common_word="Ascend910A", resource_name="huawei.com/Ascend910A",
                         resource_memory_name="huawei.com/Ascend910A-memory",
                         memory_allocatable=32768, memory_capacity=32768)


@pytest.mark.parametrize(("memory", "expected"), [
    (0, 3072), (1, 3072), (100, 3072), (3071, 3072), (3072, 3072), (3073, 6144),
    (6143, 6144), (6144, 6144), (6144, 6144), (6145, 12288), (12288, 12288),
    (12289, 21527), (21527, 21527), (21528, 21527), (24576, 21527), (24577, 0),
])
def test_trim_memory_rounds_up_to_a_template_then_a_whole_card(memory: int, expected: int
                                                                ) -> None:
    assert ASCEND_310P.trim_memory(memory)[0] == expected


def test_trim_memory_names_the_template() -> None:
    assert ASCEND_310P.trim_memory(4096) == (6144, "vir02")
    assert ASCEND_310P.trim_memory(20000) == (21527, "")


def _310p_card(used: int, used_memory: int, used_cores: int) -> AscendDevice:
    return AscendDevice(id="68496E64-20E05477-92C31323-6E78030A-BD003019", count=7, memory=21527,
                        cores=8, used=used, used_memory=used_memory, used_cores=used_cores)


@pytest.mark.parametrize(("memory", "cores", "usage", "modes", "expected"), [
    # modes: (the card supports hami-core, the task asks it)
    (1024, 0, (1, 3072, 0), (False, False), True),
    (21527, 0, (1, 3072, 0), (False, False), False),
    (6144, 0, (1, 12288, 0), (False, False), True),
    (24576, 0, (0, 0, 0), (False, False), False),
    (6144, 4, (1, 12288, 6), (False, False), False),
    (1024, 20, (0, 0, 0), (False, True), False),   # the node does not support hami-core
    (1024, 20, (0, 0, 90), (True, True), False),   # 100 - 90 < 20
    (1024, 20, (0, 0, 0), (True, True), True),
])
def test_fit(memory: int, cores: int, usage: tuple[int, int, int], modes: tuple[bool, bool],
             expected: bool) -> None:
    request = VnpuRequest("Ascend310P", 1, memory, 101, cores)
    assert fit(request, _310p_card(*usage), ASCEND_310P, hami_core=modes[1],
               device_hami_core=modes[0]) is expected


def _allocate_card(card_id: str, used: int = 0, used_memory: int = 0) -> AscendDevice:
    return AscendDevice(id=card_id, count=1, memory=32768, cores=30, used=used,
                        used_memory=used_memory)


def _requests(chip: AscendChip, count: str, memory: str) -> dict[str, float]:
    return {chip.resource_name: float(count) * 1000,
            chip.resource_memory_name: float(memory) * 1000}


@pytest.mark.parametrize(("chip", "cards", "count", "memory", "code"), [
    # busy cards: waiting may help
    (ASCEND_910A, {"device-1": _allocate_card("device-1", 1, 32768)}, "1", "32768",
     FitStatusCode.UNSCHEDULABLE),
    # no card at all
    (ASCEND_910A, {}, "1", "32768", FitStatusCode.ERROR),
    # several cards with less than a whole card's memory each
    (AscendChip(common_word="Ascend910A", resource_name="huawei.com/Ascend910A",
                resource_memory_name="huawei.com/Ascend910A-memory", memory_allocatable=32768,
                memory_capacity=32768, templates=(VnpuTemplate("vir01", 4096),)),
     {"device-1": _allocate_card("device-1")}, "2", "4096", FitStatusCode.ERROR),
])
def test_filter_says_whether_waiting_may_help(chip: AscendChip, cards: dict[str, AscendDevice],
                                              count: str, memory: str,
                                              code: FitStatusCode) -> None:
    devices = AscendDevices("node-a", chip, False, cards)
    request = vnpu_request(_requests(chip, count, memory), chip)
    assert request is not None
    got, why = devices.filter(request, "binpack", hami_core=False)
    assert got == code and why


REGISTER = '[{"id":"dev-1","index":0,"count":1,"devmem":32768,"devcore":30}]'


@pytest.mark.parametrize(("annotations", "expected"), [
    ({"hami-vnpu-core": "true"}, True),
    ({"hami-vnpu-core": "false"}, False),
    ({}, False),
])
def test_a_node_says_whether_it_supports_hami_core(annotations: dict[str, str],
                                                   expected: bool) -> None:
    node_annotations = {"hami.io/node-register-Ascend910A": REGISTER, **annotations}
    devices = AscendDevices.from_node("test-node", node_annotations,
                                      {"huawei.com/Ascend910A": 1000.0}, ASCEND_910A)
    assert devices is not None and len(devices.devices) == 1
    assert devices.hami_core is expected


def test_the_configuration_s_hami_core_holds_unless_the_node_says_otherwise() -> None:
    annotations = {"hami.io/node-register-Ascend910A": REGISTER}
    allocatable = {"huawei.com/Ascend910A": 1000.0}
    devices = AscendDevices.from_node("n", annotations, allocatable, ASCEND_910A, True)
    assert devices is not None and devices.hami_core
    devices = AscendDevices.from_node("n", {**annotations, "hami-vnpu-core": "no"},
                                      allocatable, ASCEND_910A, True)
    assert devices is not None and not devices.hami_core


@pytest.mark.parametrize(("annotations", "allocatable", "why"), [
    ({"hami.io/node-register-Ascend910A": REGISTER}, {}, "allocatable has no"),
    ({}, {"huawei.com/Ascend910A": 1000.0}, "annos not found"),
    ({"hami.io/node-register-Ascend910A": "[]"}, {"huawei.com/Ascend910A": 1000.0},
     "no device found"),
    ({"hami.io/node-register-Ascend910A": "{"}, {"huawei.com/Ascend910A": 1000.0},
     "not JSON"),
])
def test_a_node_without_readable_cards_has_none(annotations: dict[str, str],
                                                allocatable: dict[str, float], why: str) -> None:
    assert AscendDevices.from_node("n", annotations, allocatable, ASCEND_910A) is None
    reason = AscendDevices.why_none(annotations, allocatable, ASCEND_910A)
    assert reason is not None and why in reason


def _free_310p_cards(count: int) -> AscendDevices:
    return AscendDevices("n", ASCEND_310P, False, {
        f"d{i}": AscendDevice(id=f"d{i}", count=7, memory=21527, cores=8) for i in range(count)})


@pytest.mark.parametrize(("count", "memory", "partial"), [
    (1, 1024, False),
    (2, 1024, True),      # 1024 rounds to 3072, not a whole card
    (2, 21527, False),
])
def test_several_cards_take_whole_cards(count: int, memory: int, partial: bool) -> None:
    devices = _free_310p_cards(2)
    request = VnpuRequest("Ascend310P", count, memory, 101, 0)
    if partial:
        with pytest.raises(SelectionError, match="partial memory") as caught:
            devices.select(request, "", hami_core=False)
        assert caught.value.code == FitStatusCode.ERROR
    else:
        chosen, _ = devices.select(request, "", hami_core=False)
        assert len(chosen) == count


def _ledger_card(card_id: str, usage: tuple[int, int, int] = (0, 0, 0),
                 pods: dict[str, tuple[int, int]] | None = None) -> AscendDevice:
    return AscendDevice(id=card_id, count=1, memory=32000, cores=100, used=usage[0],
                        used_memory=usage[1], used_cores=usage[2], pods=dict(pods or {}))


KEY = allocated_annotation("Ascend910")


@pytest.mark.parametrize(("cards", "uid", "value", "twice", "expected"), [
    ([_ledger_card("device-1")], "test-pod", "device-1,Ascend910,16000,50", False,
     {"device-1": (1, 16000, 50)}),
    ([_ledger_card("device-1"), _ledger_card("device-2")], "test-pod",
     "device-1,Ascend910,8000,25:device-2,Ascend910,8000,25", False,
     {"device-1": (1, 8000, 25), "device-2": (1, 8000, 25)}),
    ([_ledger_card("device-1", (1, 8000, 25), {"existing-pod": (8000, 25)})], "new-pod",
     "device-1,Ascend910,8000,25", False, {"device-1": (2, 16000, 50)}),
    ([_ledger_card("device-1")], "test-pod", "device-1,Ascend910,16000,50", True,
     {"device-1": (1, 16000, 50)}),
    ([_ledger_card("device-1")], "test-pod", "invalid format", False,
     {"device-1": (0, 0, 0)}),
    ([_ledger_card("device-1")], "test-pod", None, False, {"device-1": (0, 0, 0)}),
    ([_ledger_card("device-1")], "test-pod", "non-existent-device,Ascend910,16000,50", False,
     {"device-1": (0, 0, 0)}),
    ([_ledger_card("device-1"), _ledger_card("device-2"), _ledger_card("device-3")],
     "test-pod", "device-1,Ascend910,4000,10:device-2,Ascend910,4000,10", False,
     {"device-1": (1, 4000, 10), "device-2": (1, 4000, 10), "device-3": (0, 0, 0)}),
])
def test_the_ledger_counts_what_a_task_s_annotation_names(
        cards: list[AscendDevice], uid: str, value: str | None, twice: bool,
        expected: dict[str, tuple[int, int, int]]) -> None:
    devices = AscendDevices("n", ASCEND_910, False, {card.id: card for card in cards})
    annotations = {} if value is None else {KEY: value}
    devices.add_task(uid, annotations)
    if twice:
        devices.add_task(uid, annotations)
    assert {card.id: (card.used, card.used_memory, card.used_cores)
            for card in devices.devices.values()} == expected


def test_the_ledger_gives_back_what_it_counted() -> None:
    devices = AscendDevices("n", ASCEND_910, False, {"device-1": _ledger_card("device-1")})
    devices.add_task("p", {KEY: "device-1,Ascend910,16000,50"})
    devices.remove_task("p")
    devices.remove_task("p")
    card = devices.devices["device-1"]
    assert (card.used, card.used_memory, card.used_cores, card.pods) == (0, 0, 0, {})


def test_release_takes_off_the_annotations_of_every_configured_chip_type() -> None:
    keys = set(release_keys([ASCEND_910A.common_word, ASCEND_310P.common_word]))
    assert keys == {
        "hami.io/vgpu-node", "hami.io/vgpu-time", "hami.io/bind-phase", "hami.io/bind-time",
        "predicate-time",
        "hami.io/Ascend910A-devices-to-allocate", "hami.io/Ascend910A-devices-allocated",
        "huawei.com/Ascend910A",
        "hami.io/Ascend310P-devices-to-allocate", "hami.io/Ascend310P-devices-allocated",
        "huawei.com/Ascend310P",
    }


@pytest.mark.parametrize(("policy", "usage", "memory", "expected"), [
    ("spread", (0, 0), 32768, 100.0),
    ("spread", (0, 0), 0, 0.0),
    ("binpack", (0, 0), 0, 0.0),
    ("spread", (1, 0), 32768, 0.0),
    ("binpack", (0, 32768), 32768, 100.0),
    ("binpack", (0, 0), 32768, 0.0),
    ("binpack", (0, 16384), 32768, 50.0),
])
def test_calc_score(policy: str, usage: tuple[int, int], memory: int, expected: float) -> None:
    card = AscendDevice(id="d", count=4, memory=memory, cores=30, used=usage[0],
                        used_memory=usage[1])
    assert calc_score(policy, card) == expected


def test_the_wrapper_shape_of_the_vnpus_section() -> None:
    config = parse_device_config("""
vnpus:
  hamiVnpuCore: false
  configs:
  - chipName: 910A
    commonWord: Ascend910A
    resourceName: huawei.com/Ascend910A
    resourceMemoryName: huawei.com/Ascend910A-memory
    memoryAllocatable: 32768
    memoryCapacity: 32768
    aiCore: 30
    templates:
    - name: vir02
      memory: 2184
      aiCore: 2
""")
    vnpus = config.vnpus
    assert not vnpus.hami_core and len(vnpus.chips) == 1
    chip = vnpus.chips[0]
    assert (chip.chip_name, chip.common_word, chip.memory_allocatable) == (
        "910A", "Ascend910A", 32768)
    assert [t.name for t in chip.templates] == ["vir02"]


def test_the_list_shape_of_the_vnpus_section() -> None:
    config = parse_device_config("""
vnpus:
- chipName: 910A
  commonWord: Ascend910A
  resourceName: huawei.com/Ascend910A
  resourceMemoryName: huawei.com/Ascend910A-memory
  memoryAllocatable: 32768
  memoryCapacity: 32768
  aiCore: 30
  templates: [{name: vir02, memory: 2184, aiCore: 2}]
- chipName: 310P3
  commonWord: Ascend310P
  resourceName: huawei.com/Ascend310P
  resourceMemoryName: huawei.com/Ascend310P-memory
  memoryAllocatable: 21527
  memoryCapacity: 24576
  aiCore: 8
  aiCPU: 7
  templates: [{name: vir01, memory: 3072, aiCore: 1, aiCPU: 1}]
""")
    vnpus = config.vnpus
    assert not vnpus.hami_core
    assert [(c.chip_name, c.common_word) for c in vnpus.chips] == [
        ("910A", "Ascend910A"), ("310P3", "Ascend310P")]
    assert vnpus.chips[1].memory_allocatable == 21527


def test_a_wrapper_with_no_chip_types() -> None:
    vnpus = parse_device_config("vnpus: {hamiVnpuCore: true, configs: []}\n").vnpus
    assert vnpus.hami_core and vnpus.chips == ()


def test_a_file_without_the_section_names_no_chip_type_and_volcano_s_default_has_310p() -> None:
    from batchsched.api.device_config import DEFAULT

    assert parse_device_config("nvidia: {resourceCountName: a}\n").vnpus.chips == ()
    assert DEFAULT.vnpus.chips == (ASCEND_310P,)


@pytest.mark.parametrize("text", [
    "vnpus: 3\n",
    "vnpus: [{commonWord: [a]}]\n",
    "vnpus: [{memoryCapacity: lots}]\n",
    "vnpus: {configs: [{templates: [{memory: x}]}]}\n",
    "vnpus: {hamiVnpuCore: maybe}\n",
])
def test_a_vnpus_section_of_the_wrong_kinds_makes_the_file_unreadable(text: str) -> None:
    with pytest.raises(ValueError, match="vnpus"):
        parse_device_config(text)


def test_templates_are_tried_smallest_first_whatever_their_order() -> None:
    chip = AscendChip(common_word="X", resource_name="x", resource_memory_name="x-memory",
                      memory_allocatable=100, memory_capacity=100,
                      templates=(VnpuTemplate("big", 50), VnpuTemplate("small", 10)))
    assert chip.trim_memory(5) == (10, "small")


def test_the_annotation_encoding_round_trips() -> None:
    from batchsched.api.vgpu import ContainerDevice

    held = [ContainerDevice("d1", "Ascend310P", 3072, 0),
            ContainerDevice("d2", "Ascend310P", 3072, 0)]
    text = encode_devices([held])
    assert text == "d1,Ascend310P,3072,0:d2,Ascend310P,3072,0:;"
    assert decode_devices(text) == tuple(held)
    assert assigned_vnpus({allocated_annotation("Ascend310P"): text}) == [
        d.to_json() for d in held]
    with pytest.raises(ValueError, match="information missing"):
        decode_devices("d1,Ascend310P:")


def test_allocate_writes_volcano_s_annotations() -> None:
    devices = _free_310p_cards(2)
    request = vnpu_request(_requests(ASCEND_310P, "1", "4096"), ASCEND_310P)
    assert request is not None
    written = devices.allocate("p", request, "binpack", hami_core=False, node="n", now=7)
    assert written == {
        "hami.io/Ascend310P-devices-to-allocate": "d0,Ascend310P,6144,0:;",
        "hami.io/Ascend310P-devices-allocated": "d0,Ascend310P,6144,0:;",
        "predicate-time": "7",
        "huawei.com/Ascend310P": '[{"UUID":"d0","temp":"vir02"}]',
        "hami.io/vgpu-node": "n",
        "hami.io/vgpu-time": "7",
        "hami.io/bind-phase": "allocating",
        "hami.io/bind-time": "7",
    }
    assert devices.devices["d0"].pods == {"p": (6144, 0)}
    whole = devices.allocate("q", vnpu_request(
        {ASCEND_310P.resource_name: 1000.0}, ASCEND_310P) or request, "binpack",
        hami_core=False, node="n", now=7)
    assert whole["huawei.com/Ascend310P"] == '[{"UUID":"d1"}]'
    devices.hami_core = True
    core = devices.allocate("r", VnpuRequest("Ascend310P", 1, 1000, 101, 20), "",
                            hami_core=True, node="n", now=7)
    assert core["huawei.com/Ascend310P"] == '[{"UUID":"d0","memory":1000,"core":20}]'


def _network_cards(networks: list[object]) -> AscendDevices:
    chip = AscendChip(common_word="Ascend910B3", resource_name="huawei.com/Ascend910B3",
                      resource_memory_name="huawei.com/Ascend910B3-memory",
                      memory_allocatable=65536, memory_capacity=65536)
    return AscendDevices("n", chip, False, {
        f"d{i}": AscendDevice(id=f"d{i}", count=1, memory=65536, cores=20,
                              custom_info={"NetworkID": network})
        for i, network in enumerate(networks)})


def test_910_cards_come_from_the_largest_network_group() -> None:
    devices = _network_cards([1, 2, 2, 1, 2])
    chosen, _ = devices.select(VnpuRequest("Ascend910B3", 2, 0, 100, 0), "",
                               hami_core=False)
    assert [card.id for card in chosen] == ["d1", "d2"]
    # one card: scored with the bonus of its (single-card) group
    score = devices.score(VnpuRequest("Ascend910B3", 1, 0, 100, 0), "spread",
                          hami_core=False)
    assert score == 110.0


def test_a_non_numeric_network_drops_the_card() -> None:
    devices = _network_cards(["x", 1])
    chosen, _ = devices.select(VnpuRequest("Ascend910B3", 2, 0, 100, 0), "",
                               hami_core=False)
    assert [card.id for card in chosen] == ["d1"]  # fewer than asked, as in Volcano
    devices = _network_cards(["x", "y"])
    chosen, _ = devices.select(VnpuRequest("Ascend910B3", 1, 0, 100, 0), "",
                               hami_core=False)
    assert chosen == ()
    assert devices.score(VnpuRequest("Ascend910B3", 1, 0, 100, 0), "spread",
                         hami_core=False) == 0.0


def test_a_request_reads_count_memory_and_cores() -> None:
    chip = ASCEND_310P
    assert vnpu_request({chip.resource_memory_name: 4096_000.0}, chip) == VnpuRequest(
        "Ascend310P", 1, 4096, 101, 0)
    assert vnpu_request({chip.resource_name: 2000.0}, chip) == VnpuRequest(
        "Ascend310P", 2, 0, 100, 0)
    assert vnpu_request({chip.resource_name: 1500.0}, chip) == VnpuRequest(
        "Ascend310P", 0, 0, 100, 0)
    assert vnpu_request({chip.core_name: 90_000.0}, chip) is None


def test_register_annotation_reads_custom_info() -> None:
    register = json.dumps([{"id": "a", "count": 2, "devmem": 100, "devcore": 20,
                            "custominfo": {"NetworkID": 3}}])
    devices = AscendDevices.from_node("n", {"hami.io/node-register-Ascend910A": register},
                                      {"huawei.com/Ascend910A": 1000.0}, ASCEND_910A)
    assert devices is not None
    card = devices.devices["a"]
    assert (card.count, card.memory, card.cores, card.network_id) == (2, 100, 20, 3)


@pytest.mark.parametrize(("text", "problem"), [
    ('[{"id":"a","devmem":NaN}]', "invalid character"),
    ('[{"id":"a","count":"4"}]', "count: cannot decode \"4\" into a Go int32"),
    ('[{"id":"a","devmem":21527.5}]', "into a Go int32"),
    ('[{"id":"a","devmem":1e3}]', "into a Go int32"),
    ('[{"id":"a","devcore":3000000000}]', "into a Go int32"),
    ('[{"id":"a","index":-0}]', "into a Go uint64"),
    ('[{"id":7}]', "into a Go string"),
    ('[{"id":"a","custominfo":"x"}]', "into a Go map"),
    ('[{"id":"a","custominfo":{"n":1e400}}]', "into a Go float64"),
    ('[{"id":"a","health":"yes"}]', "into a Go bool"),
    ('[{"id":"a","count":"x","count":1}]', "into a Go int32"),
    ('[{"id":"a","devicepairscore":{"uuid":5}}]', "into a Go string"),
    ('[{"id":"a","devicepairscore":{"score":{"x":1.5}}}]', "into a Go int64"),
    ('[{"id":"a","cu\\u017ftominfo":5}]', "into a Go map"),
    ('{"id":"a"}', "into a Go slice"),
    ('["a"]', "into a Go DeviceInfo"),
    ('[null]', "device 0 is null"),
])
def test_a_register_annotation_is_read_as_go_reads_it(text: str, problem: str) -> None:
    from batchsched.api.ascend_annotations import read_register

    with pytest.raises(ValueError, match=problem):
        read_register(text)


def test_register_fields_match_as_go_matches_them() -> None:
    from batchsched.api.ascend_annotations import read_register

    [device] = read_register('[{"ID":"a","DevMem":5,"customInfo":{"NetworkID":1},"x":1e400,'
                             '"id":"c","count":4,"Count":null}]')
    assert (device["id"], device["devmem"], device["count"]) == ("c", 5, 4)
    assert device["custominfo"] == {"NetworkID": 1.0}
    [device] = read_register('[{"id":"a","ID":"b","id":"c","index":0,"numa":-0}]')
    assert device["id"] == "c"
    assert read_register("null") == []


def test_integer_fields_of_the_configuration_take_floats_as_yaml_v2_does() -> None:
    vnpus = parse_device_config(
        "vnpus: [{commonWord: X, memoryAllocatable: 65536.0, memoryCapacity: 19000.0, "
        "templates: [{name: t, memory: 100.7}]}]\n").vnpus
    chip = vnpus.chips[0]
    assert (chip.memory_allocatable, chip.memory_capacity, chip.templates[0].memory) == (
        65536, 19000, 100)


def test_numbers_are_read_with_yaml_v2_s_rules_and_field_sizes() -> None:
    # yaml.v2 reads 2e3 as a float (truncated into the int64 field) and 0o17 as an
    # integer, which PyYAML takes for strings; a null template is the zero template.
    vnpus = parse_device_config(
        "vnpus: [{commonWord: X, memoryAllocatable: 0o17, memoryCapacity: 19000, "
        "templates: [{name: t, memory: 2e3}, null]}]\n").vnpus
    chip = vnpus.chips[0]
    assert chip.memory_allocatable == 15
    assert set(chip.templates) == {VnpuTemplate("t", 2000), VnpuTemplate("", 0)}
    # aiCore and aiCPU are int32 fields: past them, yaml.v2 fails the whole file.
    with pytest.raises(ValueError, match=r"aiCore: not an integer of 32 bits"):
        parse_device_config("vnpus: [{commonWord: X, aiCore: 3000000000}]\n")


def test_a_chip_type_given_twice_is_one_type() -> None:
    # Volcano keeps a node's devices by common word: the last given counts, once.
    vnpus = parse_device_config(
        "vnpus: [{commonWord: X, memoryCapacity: 1}, {commonWord: Y}, "
        "{commonWord: X, memoryCapacity: 2}]\n").vnpus
    assert [(c.common_word, c.memory_capacity) for c in vnpus.chips] == [("X", 2), ("Y", 0)]
