"""The structured allocator, on the examples of Kubernetes 1.36's behaviour: device order,
backtracking, alternatives, constraints, admin access, pools, taints, node selectors."""

from __future__ import annotations

import itertools
import re
from fractions import Fraction
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from batchsched.kube.dra.allocator import INVALID_POOLS, AllocationError, Allocator
from batchsched.kube.dra.documents import (
    parse_device_class,
    parse_resource_claim,
    parse_resource_slice,
)
from batchsched.kube.dra.objects import DraObjectError, ResourceClaim, ResourceSlice

GPU = "gpu.example.com"
CLASSES = {"gpu": parse_device_class({"name": "gpu", "selectors": [
    {"cel": {"expression": f'device.driver == "{GPU}"'}}]})}


def slice_(name: str, devices: list[dict[str, Any]], *, node: str = "n1", pool: str = "n1",
           generation: int = 1, count: int = 1, **placement: Any) -> ResourceSlice:
    doc: dict[str, Any] = {"name": name, "driver": GPU,
                           "pool": {"name": pool, "generation": generation,
                                    "resourceSliceCount": count},
                           "devices": devices, **placement}
    if not placement:
        doc["nodeName"] = node
    return parse_resource_slice(doc)


def claim(name: str, requests: list[dict[str, Any]], **extra: Any) -> ResourceClaim:
    return parse_resource_claim({"name": name, "namespace": "default", "requests": requests,
                                 **extra})


def exactly(name: str = "r", **spec: Any) -> dict[str, Any]:
    return {"name": name, "exactly": {"deviceClassName": "gpu", **spec}}


def devices_of(answer: Any, index: int = 0) -> list[str]:
    return [f"{r.request}:{r.device}" for r in answer.results[index].results]


def test_devices_come_in_slice_name_order_and_skip_those_in_use() -> None:
    slices = [slice_("s-b", [{"name": "gpu-2"}, {"name": "gpu-3"}], count=2),
              slice_("s-a", [{"name": "gpu-0"}, {"name": "gpu-1"}], count=2)]
    allocator = Allocator([claim("c1", [exactly(count=2)])], CLASSES, slices,
                          {(GPU, "n1", "gpu-0")})
    answer = allocator.allocate("n1", {})
    assert answer is not None
    assert devices_of(answer) == ["r:gpu-1", "r:gpu-2"]
    selector = answer.results[0].node_selector
    assert selector is not None and selector.matches({}, "n1") and not selector.matches({}, "n2")


def test_an_incomplete_pool_is_skipped_and_fails_a_request_for_all() -> None:
    slices = [slice_("s-a", [{"name": "gpu-0"}, {"name": "gpu-1"}], count=2)]
    allocator = Allocator([claim("c1", [exactly(count=1)])], CLASSES, slices, set())
    assert allocator.allocate("n1", {}) is None
    assert allocator.last_failure == "cannot allocate all claims"
    every = Allocator([claim("c1", [exactly(allocationMode="All")])], CLASSES, slices, set())
    with pytest.raises(AllocationError, match=re.escape(
            "asks for all devices, but resource pool gpu.example.com/n1 is currently being "
            "updated")):
        every.allocate("n1", {})


def test_an_older_generation_is_ignored() -> None:
    slices = [slice_("old", [{"name": "gpu-0"}], generation=1),
              slice_("new", [{"name": "gpu-9"}], generation=2)]
    answer = Allocator([claim("c1", [exactly()])], CLASSES, slices, set()).allocate("n1", {})
    assert answer is not None and devices_of(answer) == ["r:gpu-9"]


def test_a_pool_with_a_device_twice_is_invalid() -> None:
    slices = [slice_("a", [{"name": "gpu-0"}], count=2), slice_("b", [{"name": "gpu-0"}],
                                                                  count=2)]
    allocator = Allocator([claim("c1", [exactly()])], CLASSES, slices, set())
    assert allocator.allocate("n1", {}) is None
    assert allocator.last_failure == INVALID_POOLS


def test_first_available_takes_the_first_alternative_that_fits() -> None:
    big = {"name": "big", "deviceClassName": "gpu", "selectors": [{"cel": {"expression":
           f'device.attributes["{GPU}"].memory >= 80'}}]}
    small = {"name": "small", "deviceClassName": "gpu", "count": 2}
    request = {"name": "r", "firstAvailable": [big, small]}
    slices = [slice_("n1", [{"name": "g0", "attributes": {"memory": {"int": 80}}}]),
              slice_("n2", [{"name": "g0", "attributes": {"memory": {"int": 40}}},
                            {"name": "g1", "attributes": {"memory": {"int": 40}}}],
                     node="n2", pool="n2")]
    allocator = Allocator([claim("c1", [request])], CLASSES, slices, set())
    on_n1, on_n2 = allocator.allocate("n1", {}), allocator.allocate("n2", {})
    assert on_n1 is not None and devices_of(on_n1) == ["r/big:g0"]
    assert on_n2 is not None and devices_of(on_n2) == ["r/small:g0", "r/small:g1"]
    assert on_n1.chosen == {("default/c1", "r"): 0}
    assert on_n2.chosen == {("default/c1", "r"): 1}


def test_match_attribute_backtracks_to_a_consistent_pair() -> None:
    slices = [slice_("s", [{"name": "d0", "attributes": {"numa": {"int": 0}}},
                           {"name": "d1", "attributes": {"numa": {"int": 1}}},
                           {"name": "d2", "attributes": {"numa": {"int": 1}}}])]
    wanted = claim("c1", [exactly("a"), exactly("b")],
                   constraints=[{"requests": ["a", "b"], "matchAttribute": f"{GPU}/numa"}])
    answer = Allocator([wanted], CLASSES, slices, set()).allocate("n1", {})
    assert answer is not None and devices_of(answer) == ["a:d1", "b:d2"]


def test_match_attribute_refuses_a_device_without_it() -> None:
    slices = [slice_("s", [{"name": "d0"}, {"name": "d1", "attributes": {
        "other.com/numa": {"int": 0}}}])]
    wanted = claim("c1", [exactly("a")], constraints=[{"matchAttribute": f"{GPU}/numa"}])
    assert Allocator([wanted], CLASSES, slices, set()).allocate("n1", {}) is None


def test_all_fails_on_a_device_in_use_unless_admin_access() -> None:
    slices = [slice_("s", [{"name": "d1"}, {"name": "d2"}])]
    in_use = {(GPU, "n1", "d1")}
    assert Allocator([claim("c1", [exactly(allocationMode="All")])], CLASSES, slices,
                     in_use).allocate("n1", {}) is None
    admin = Allocator([claim("c1", [exactly(allocationMode="All", adminAccess=True)])],
                      CLASSES, slices, in_use).allocate("n1", {})
    assert admin is not None and devices_of(admin) == ["r:d1", "r:d2"]
    assert all(r.admin_access for r in admin.results[0].results)


def test_two_claims_of_a_pod_do_not_share_a_device() -> None:
    slices = [slice_("s", [{"name": "d0"}, {"name": "d1"}])]
    answer = Allocator([claim("c1", [exactly()]), claim("c2", [exactly()])], CLASSES, slices,
                       set()).allocate("n1", {})
    assert answer is not None
    assert devices_of(answer, 0) == ["r:d0"] and devices_of(answer, 1) == ["r:d1"]


def test_a_cel_error_ends_the_attempt_with_kubernetes_text() -> None:
    classes = {"gpu": parse_device_class({"name": "gpu", "selectors": [
        {"cel": {"expression": f'device.attributes["{GPU}"].model == "a100"'}}]})}
    slices = [slice_("s", [{"name": "d0"}])]
    with pytest.raises(AllocationError, match=r"^class gpu: selector #0: CEL runtime error: "
                       r"no such key: model$"):
        Allocator([claim("c1", [exactly()])], classes, slices, set()).allocate("n1", {})


def test_a_request_selector_error_names_the_claim() -> None:
    slices = [slice_("s", [{"name": "d0"}])]
    request = exactly(selectors=[{"cel": {"expression": "device.nope"}}])
    with pytest.raises(AllocationError, match=r"^claim default/c1: selector #0: CEL runtime "
                       r"error: no such key: nope$"):
        Allocator([claim("c1", [request])], CLASSES, slices, set()).allocate("n1", {})


def test_an_untolerated_taint_keeps_a_device_out() -> None:
    slices = [slice_("s", [{"name": "d0", "taints": [{"key": "broken", "effect": "NoSchedule"}]},
                           {"name": "d1"}])]
    answer = Allocator([claim("c1", [exactly()])], CLASSES, slices, set()).allocate("n1", {})
    assert answer is not None and devices_of(answer) == ["r:d1"]
    tolerant = exactly(tolerations=[{"key": "broken", "operator": "Exists"}])
    answer = Allocator([claim("c1", [tolerant])], CLASSES, slices, set()).allocate("n1", {})
    assert answer is not None and devices_of(answer) == ["r:d0"]


def test_a_network_attached_slice_gives_its_node_selector() -> None:
    selector = {"nodeSelectorTerms": [{"matchExpressions": [
        {"key": "rack", "operator": "In", "values": ["r1"]}]}]}
    slices = [slice_("s", [{"name": "d0"}], pool="rack-r1", nodeSelector=selector)]
    allocator = Allocator([claim("c1", [exactly()])], CLASSES, slices, set())
    assert allocator.allocate("n1", {"rack": "r2"}) is None
    answer = allocator.allocate("n1", {"rack": "r1"})
    assert answer is not None
    result_selector = answer.results[0].node_selector
    assert result_selector is not None and result_selector.matches({"rack": "r1"}, "other")


def test_more_than_32_devices_is_an_error() -> None:
    with pytest.raises(AllocationError, match="exceeds the claim limit of 32"):
        Allocator([claim("c1", [exactly(count=33)])], CLASSES, [], set()).allocate("n1", {})


@pytest.mark.parametrize(("document", "path"), [
    ({"name": "c", "requests": [{"name": "r"}]}, "resourceClaim.requests[0]"),
    ({"name": "c", "requests": [exactly(count=0)]}, "resourceClaim.requests[0].exactly.count"),
    ({"name": "c", "requests": [exactly(allocationMode="Some")]},
     "resourceClaim.requests[0].exactly.allocationMode"),
    ({"name": "c", "requests": [exactly(capacity={"limits": {"memory": "1Gi"}})]},
     "resourceClaim.requests[0].exactly.capacity.limits"),
    ({"name": "c", "requests": [exactly()], "constraints": [{"requests": ["x"],
                                                           "matchAttribute": "a/b"}]},
     "resourceClaim.constraints[0].requests[0]"),
    # validateFullyQualifiedName: an attribute without its domain.
    ({"name": "c", "requests": [exactly()], "constraints": [{"matchAttribute": "numa"}]},
     "resourceClaim.constraints[0].matchAttribute"),
    ({"name": "c", "requests": [exactly()], "constraints": [{"distinctAttribute": "/numa"}]},
     "resourceClaim.constraints[0].distinctAttribute"),
])
def test_claims_the_api_server_would_refuse(document: dict[str, Any], path: str) -> None:
    with pytest.raises(DraObjectError) as raised:
        parse_resource_claim(document)
    assert raised.value.path == path


# -- against a brute-force search ------------------------------------------------------------

def _brute_force(counts: list[int], matching: list[list[bool]], free: list[bool]
                 ) -> list[list[int]] | None:
    """The first assignment, in the allocator's order, of distinct free devices to each
    request (``matching[r][d]``: device d passes request r's selector)."""
    devices = range(len(free))

    def place(request: int, taken: frozenset[int]) -> list[list[int]] | None:
        if request == len(counts):
            return []
        options = [d for d in devices if free[d] and matching[request][d] and d not in taken]
        for combination in itertools.combinations(options, counts[request]):
            rest = place(request + 1, taken | frozenset(combination))
            if rest is not None:
                return [list(combination), *rest]
        return None
    return place(0, frozenset())


@settings(max_examples=150, deadline=None)
@given(st.data())
def test_the_search_finds_the_first_solution_in_order(data: st.DataObject) -> None:
    size = data.draw(st.integers(1, 6))
    colours = data.draw(st.lists(st.sampled_from(["red", "blue"]), min_size=size,
                                 max_size=size))
    free = data.draw(st.lists(st.booleans(), min_size=size, max_size=size))
    requests = data.draw(st.lists(st.tuples(st.integers(1, 3),
                                            st.sampled_from(["red", "blue", "any"])),
                                  min_size=1, max_size=3))
    slices = [slice_("s", [{"name": f"d{i}", "attributes": {"colour": {"string": c}}}
                           for i, c in enumerate(colours)])]
    in_use = {(GPU, "n1", f"d{i}") for i, ok in enumerate(free) if not ok}
    documents = []
    for k, (count, colour) in enumerate(requests):
        selectors = [] if colour == "any" else [{"cel": {"expression":
                                                 f'device.attributes["{GPU}"].colour == '
                                                 f'"{colour}"'}}]
        documents.append(exactly(f"r{k}", count=count, selectors=selectors))
    answer = Allocator([claim("c1", documents)], CLASSES, slices, in_use).allocate("n1", {})
    matching = [[colour in ("any", c) for c in colours] for _, colour in requests]
    expected = _brute_force([count for count, _ in requests], matching, free)
    if expected is None:
        assert answer is None
        return
    assert answer is not None
    got = [int(r.device[1:]) for r in answer.results[0].results]
    assert got == [d for chosen in expected for d in chosen]


# -- cases a review found (each failed before its fix) ------------------------------------------

def test_a_selector_s_verdict_is_kept_per_device_not_per_device_name() -> None:
    """Two pools may publish a device of the same driver/pool/name to different nodes;
    a verdict kept across the session's allocations must not mix them up."""
    from batchsched.kube.dra.allocator import SelectorCache

    def rack(name: str, generation: int, model: str) -> ResourceSlice:
        return slice_(name, [{"name": "d0", "attributes": {"model": {"string": model}}}],
                      pool="net", generation=generation, nodeSelector={"nodeSelectorTerms": [
                          {"matchExpressions": [{"key": "rack", "operator": "In",
                                                 "values": [name]}]}]})
    slices = [rack("r1", 1, "a"), rack("r2", 2, "b")]
    wanted = claim("c1", [exactly(selectors=[{"cel": {"expression":
                                               f'device.attributes["{GPU}"].model == "b"'}}])])
    cache = SelectorCache()
    assert Allocator([wanted], CLASSES, slices, set(), cache).allocate(
        "n2", {"rack": "r2"}) is not None
    assert Allocator([wanted], CLASSES, slices, set(), cache).allocate(
        "n1", {"rack": "r1"}) is None


def test_distinct_attribute_refuses_a_repeat_within_a_request_of_two() -> None:
    slices = [slice_("s", [{"name": "g0", "attributes": {"numa": {"int": 0}}},
                           {"name": "g1", "attributes": {"numa": {"int": 0}}}])]
    wanted = claim("c1", [exactly(count=2)], constraints=[{"distinctAttribute": f"{GPU}/numa"}])
    assert Allocator([wanted], CLASSES, slices, set()).allocate("n1", {}) is None


def test_a_duplicate_device_name_in_another_node_s_slice_does_not_invalidate() -> None:
    slices = [slice_("a", [{"name": "d0"}], pool="p", count=2),
              slice_("b", [{"name": "d0"}], node="n2", pool="p", count=2)]
    answer = Allocator([claim("c1", [exactly()])], CLASSES, slices, set()).allocate("n1", {})
    assert answer is not None and devices_of(answer) == ["r:d0"]


def test_a_per_device_slice_s_selector_error_counts_on_every_node() -> None:
    """Kubernetes evaluates the selectors before the device's own node."""
    classes = {"gpu": parse_device_class({"name": "gpu", "selectors": [
        {"cel": {"expression": f'device.attributes["{GPU}"].model == "x"'}}]})}
    slices = [parse_resource_slice({
        "name": "s", "driver": GPU, "pool": {"name": "p", "resourceSliceCount": 1},
        "perDeviceNodeSelection": True, "devices": [
            {"name": "a", "nodeName": "n2"},
            {"name": "b", "nodeName": "n1", "attributes": {"model": {"string": "x"}}}]})]
    with pytest.raises(AllocationError, match="no such key: model"):
        Allocator([claim("c1", [exactly()])], classes, slices, set()).allocate("n1", {})


def test_match_attribute_compares_versions_as_written() -> None:
    slices = [slice_("s", [{"name": "a", "attributes": {"v": {"version": "1.0.0+a"}}},
                           {"name": "b", "attributes": {"v": {"version": "1.0.0+b"}}}])]
    wanted = claim("c1", [exactly("x"), exactly("y")],
                   constraints=[{"matchAttribute": f"{GPU}/v"}])
    assert Allocator([wanted], CLASSES, slices, set()).allocate("n1", {}) is None


def test_all_reports_an_earlier_pool_s_selector_error_before_a_later_pool_s_update() -> None:
    classes = {"gpu": parse_device_class({"name": "gpu", "selectors": [
        {"cel": {"expression": f'device.attributes["{GPU}"].model == "x"'}}]})}
    slices = [slice_("a", [{"name": "d0"}], pool="a"), slice_("b", [{"name": "d1"}], pool="b",
                                                               count=2)]
    with pytest.raises(AllocationError, match="no such key: model"):
        Allocator([claim("c1", [exactly(allocationMode="All")])], classes, slices,
                  set()).allocate("n1", {})


def test_a_selector_is_compiled_when_first_evaluated() -> None:
    """No device to evaluate it on: the node simply has no solution."""
    bad = exactly(selectors=[{"cel": {"expression": "device.driver =="}}])
    allocator = Allocator([claim("c1", [bad])], CLASSES, [], set())
    assert allocator.allocate("n1", {}) is None
    with pytest.raises(AllocationError, match="CEL compile error"):
        Allocator([claim("c1", [bad])], CLASSES, [slice_("s", [{"name": "d0"}])],
                  set()).allocate("n1", {})


# -- partitionable devices (shared counters) -------------------------------------------------

def _partitioned() -> list[ResourceSlice]:
    """A GPU of 80 GB shared out as the whole card or two halves (MIG-like)."""
    counters = parse_resource_slice({
        "name": "gpu0-counters", "driver": GPU, "pool": {"name": "n1", "resourceSliceCount": 2},
        "sharedCounters": [{"name": "gpu0", "counters": {"memory": {"value": "80Gi"}}}]})
    devices = parse_resource_slice({
        "name": "gpu0-devices", "driver": GPU, "nodeName": "n1",
        "pool": {"name": "n1", "resourceSliceCount": 2},
        "devices": [
            {"name": "full", "attributes": {"size": {"string": "full"}}, "consumesCounters": [
                {"counterSet": "gpu0", "counters": {"memory": {"value": "80Gi"}}}]},
            {"name": "half-0", "attributes": {"size": {"string": "half"}}, "consumesCounters": [
                {"counterSet": "gpu0", "counters": {"memory": {"value": "40Gi"}}}]},
            {"name": "half-1", "attributes": {"size": {"string": "half"}}, "consumesCounters": [
                {"counterSet": "gpu0", "counters": {"memory": {"value": "40Gi"}}}]}]})
    return [counters, devices]


def test_a_device_whose_counters_are_used_up_is_not_taken() -> None:
    halves = exactly(selectors=[{"cel": {"expression":
                                        f'device.attributes["{GPU}"].size == "half"'}}])
    in_use = {(GPU, "n1", "full")}
    assert Allocator([claim("c1", [halves])], CLASSES, _partitioned(), in_use).allocate(
        "n1", {}) is None


def test_partitions_share_their_card_s_counters() -> None:
    answer = Allocator([claim("c1", [exactly(count=2)])], CLASSES, _partitioned(),
                       set()).allocate("n1", {})
    # "full" takes all 80 GB: the search backtracks to the two halves.
    assert answer is not None and devices_of(answer) == ["r:half-0", "r:half-1"]
    assert Allocator([claim("c1", [exactly(count=3)])], CLASSES, _partitioned(),
                     set()).allocate("n1", {}) is None


def test_a_device_consuming_an_undeclared_counter_makes_its_pool_invalid() -> None:
    slices = _partitioned()
    broken = parse_resource_slice({
        "name": "gpu0-devices", "driver": GPU, "nodeName": "n1",
        "pool": {"name": "n1", "resourceSliceCount": 2},
        "devices": [{"name": "odd", "consumesCounters": [
            {"counterSet": "gpu9", "counters": {"memory": {"value": "1Gi"}}}]}]})
    allocator = Allocator([claim("c1", [exactly()])], CLASSES, [slices[0], broken], set())
    assert allocator.allocate("n1", {}) is None
    assert allocator.last_failure == INVALID_POOLS


# -- consumable capacity ----------------------------------------------------------------------

def _shared_gpu(**policy: Any) -> list[ResourceSlice]:
    memory: dict[str, Any] = {"value": "40Gi"}
    if policy:
        memory["requestPolicy"] = policy
    return [slice_("s", [{"name": "gpu", "allowMultipleAllocations": True,
                          "capacity": {"memory": memory}}])]


def asking(memory: str | None = None, name: str = "r") -> dict[str, Any]:
    spec: dict[str, Any] = {"capacity": {"requests": {"memory": memory}}} if memory else {}
    return exactly(name, **spec)


def test_claims_share_a_device_within_its_capacity() -> None:
    claims = [claim(f"c{i}", [asking("16Gi")]) for i in range(2)]
    answer = Allocator(claims, CLASSES, _shared_gpu(), set()).allocate("n1", {})
    assert answer is not None
    first, second = (allocation.results[0] for allocation in answer.results)
    assert first.device == second.device == "gpu"
    assert first.share_id and second.share_id and first.share_id != second.share_id
    assert first.consumed_capacity == {"memory": 16 * 2**30}
    three = [claim(f"c{i}", [asking("16Gi")]) for i in range(3)]
    assert Allocator(three, CLASSES, _shared_gpu(), set()).allocate("n1", {}) is None


def test_shares_already_allocated_count_against_the_capacity() -> None:
    taken = {(GPU, "n1", "gpu"): {"memory": Fraction(30 * 2**30)}}
    assert Allocator([claim("c1", [asking("16Gi")])], CLASSES, _shared_gpu(), set(),
                     shared=taken).allocate("n1", {}) is None
    assert Allocator([claim("c1", [asking("8Gi")])], CLASSES, _shared_gpu(), set(),
                     shared=taken).allocate("n1", {}) is not None


@pytest.mark.parametrize(("policy", "asked", "consumed"), [
    ({"default": "8Gi", "validRange": {"min": "8Gi", "step": "8Gi"}}, "10Gi", 16 * 2**30),
    ({"default": "8Gi", "validRange": {"min": "8Gi"}}, "2Gi", 8 * 2**30),
    ({"default": "10Gi", "validValues": ["10Gi", "20Gi"]}, "15Gi", 20 * 2**30),
    ({"default": "1", "validRange": {"min": "500m", "step": "1"}}, "2", 2),
    ({"default": "4Gi"}, None, 4 * 2**30),
    ({}, None, 40 * 2**30),
])
def test_a_request_policy_rounds_what_a_share_consumes(policy: dict[str, Any], asked: str | None,
                                                       consumed: int) -> None:
    answer = Allocator([claim("c1", [asking(asked)])], CLASSES, _shared_gpu(**policy),
                       set()).allocate("n1", {})
    assert answer is not None
    assert answer.results[0].results[0].consumed_capacity == {"memory": consumed}


@pytest.mark.parametrize(("policy", "asked"), [
    ({"default": "10Gi", "validValues": ["10Gi", "20Gi"]}, "25Gi"),
    ({"default": "8Gi", "validRange": {"min": "8Gi", "max": "16Gi"}}, "20Gi"),
])
def test_a_request_policy_refuses_an_amount_out_of_bounds(policy: dict[str, Any],
                                                         asked: str) -> None:
    assert Allocator([claim("c1", [asking(asked)])], CLASSES, _shared_gpu(**policy),
                     set()).allocate("n1", {}) is None


def test_a_device_without_the_capacity_asked_for_is_passed_over() -> None:
    request = exactly(capacity={"requests": {"cores": "10"}})
    assert Allocator([claim("c1", [request])], CLASSES, _shared_gpu(), set()).allocate(
        "n1", {}) is None


def test_a_whole_device_must_hold_what_is_asked() -> None:
    slices = [slice_("s", [{"name": "small", "capacity": {"memory": {"value": "8Gi"}}},
                           {"name": "big", "capacity": {"memory": {"value": "40Gi"}}}])]
    answer = Allocator([claim("c1", [asking("16Gi")])], CLASSES, slices, set()).allocate(
        "n1", {})
    assert answer is not None and devices_of(answer) == ["r:big"]
    assert not answer.results[0].results[0].share_id  # a whole device, not a share


@pytest.mark.parametrize(("document", "path"), [
    ({"name": "s", "driver": GPU, "nodeName": "n1", "pool": {"name": "p"},
      "devices": [{"name": "d0", "basic": {"attributes": {}}}]}, "resourceSlice.devices[0].basic"),
    ({"name": "s", "driver": GPU, "nodeName": "n1", "pool": {"name": "p"}, "colour": "red"},
     "resourceSlice.colour"),
    ({"metadata": {"name": "s"}, "spec": {"driver": GPU, "allNodes": True,
                                          "pool": {"name": "p"}, "name": "x"}},
     "resourceSlice.spec.name"),
])
def test_slices_the_api_does_not_know(document: dict[str, Any], path: str) -> None:
    """Unknown fields (the v1beta1 shape among them) are refused, never ignored."""
    with pytest.raises(DraObjectError) as raised:
        parse_resource_slice(document)
    assert raised.value.path == path


# -- shares and counters together (a second review's cases; each failed before its fix) ---------

def _card(*devices: dict[str, Any], total: int = 10) -> list[ResourceSlice]:
    counters = parse_resource_slice({
        "name": "card-counters", "driver": GPU,
        "pool": {"name": "n1", "generation": 1, "resourceSliceCount": 2},
        "sharedCounters": [{"name": "card", "counters": {"mem": {"value": str(total)}}}]})
    return [counters, slice_("card-devices", list(devices), count=2)]


def _consuming(name: str, amount: int, **extra: Any) -> dict[str, Any]:
    return {"name": name, "consumesCounters": [
        {"counterSet": "card", "counters": {"mem": {"value": str(amount)}}}], **extra}


def test_a_device_held_through_shares_takes_its_counters() -> None:
    slices = _card(_consuming("shared", 10, allowMultipleAllocations=True),
                   _consuming("whole", 10))
    wanted = claim("c1", [exactly(selectors=[{"cel": {"expression":
                                               "!device.allowMultipleAllocations"}}])])
    taken = {(GPU, "n1", "shared"): {}}
    assert Allocator([wanted], CLASSES, slices, set(), shared=taken).allocate("n1", {}) is None


def test_a_device_shared_twice_in_one_search_takes_its_counters_once() -> None:
    slices = _card(_consuming("m", 6, allowMultipleAllocations=True))
    answer = Allocator([claim("c1", [exactly()]), claim("c2", [exactly()])], CLASSES, slices,
                       set()).allocate("n1", {})
    assert answer is not None
    assert [r.device for allocation in answer.results for r in allocation.results] == ["m", "m"]


def test_a_share_that_consumed_no_capacity_leaves_the_counter_check_on() -> None:
    """Kubernetes tracks a share's capacity only when it consumed some: another claim's
    share of a device without capacities does not spare the next one the counters,
    which that share holds already."""
    slices = _card(_consuming("m", 10, allowMultipleAllocations=True))
    taken: dict[Any, dict[str, Fraction]] = {(GPU, "n1", "m"): {}}
    assert Allocator([claim("c1", [exactly()])], CLASSES, slices, set(),
                     shared=taken).allocate("n1", {}) is None


def test_a_share_undone_in_the_search_keeps_the_device_shared_when_it_consumed_nothing() -> None:
    """Kubernetes' undo forgets a share's capacity only when it consumed some: r1's
    share of m, undone for the distinct constraint, still spares r2 the counters m's
    first share took."""
    devices = [_consuming("m", 10, allowMultipleAllocations=True,
                          attributes={"kind": {"string": "a"}}),
               {"name": "x", "attributes": {"kind": {"string": "b"}}}]
    wanted = claim("c", [exactly("r1"), exactly("r2", selectors=[{"cel": {"expression":
                   f'device.attributes["{GPU}"].kind == "a"'}}])],
                   constraints=[{"distinctAttribute": f"{GPU}/kind"}])
    answer = Allocator([wanted], CLASSES, _card(*devices), set()).allocate("n1", {})
    assert answer is not None and devices_of(answer) == ["r1:x", "r2:m"]


def test_a_multi_allocatable_device_allocated_whole_is_in_use() -> None:
    slices = [slice_("s", [{"name": "m", "allowMultipleAllocations": True}])]
    assert Allocator([claim("c1", [exactly()])], CLASSES, slices,
                     {(GPU, "n1", "m")}).allocate("n1", {}) is None


def test_pools_of_one_name_share_their_counters() -> None:
    """Kubernetes keys a pool's counters by its name alone."""
    def pool(driver: str, device: str) -> list[ResourceSlice]:
        return [parse_resource_slice({
            "name": f"{driver}-counters", "driver": driver,
            "pool": {"name": "n1", "resourceSliceCount": 2},
            "sharedCounters": [{"name": "cs", "counters": {"c": {"value": "10"}}}]}),
            parse_resource_slice({
                "name": f"{driver}-devices", "driver": driver, "nodeName": "n1",
                "pool": {"name": "n1", "resourceSliceCount": 2},
                "devices": [{"name": device, "consumesCounters": [
                    {"counterSet": "cs", "counters": {"c": {"value": "6"}}}]}]})]
    classes = {"any": parse_device_class({"name": "any"})}
    wanted = claim("c1", [{"name": "a", "exactly": {"deviceClassName": "any", "count": 2}}])
    assert Allocator([wanted], classes, [*pool("gpu.example.com", "g0"),
                                         *pool("nic.example.com", "n0")],
                     set()).allocate("n1", {}) is None
