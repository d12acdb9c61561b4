"""numa-aware's CPU hint provider and CPU assignment: Volcano's cases, then the rules.

Transcribed from volcano-sh/volcano (Apache-2.0),
pkg/scheduler/plugins/numaaware/provider/cpumanager/cpu_mng_test.go, on its
topology (8 CPUs; NUMA node and socket 0: CPUs 0-3, cores 0 and 1; NUMA node and
socket 1: CPUs 4-7, cores 2 and 3):

* ``Test_GetTopologyHints``: test-1 to test-6;
* ``Test_Allocate``: test-1 to test-5.

Volcano's containers request ``cpu`` only; here a container is the requests given.
"""

from __future__ import annotations

import random

import pytest

from batchsched.api.numa import CpuDetails, CPUInfo, NumaTopology, parse_cpuset
from batchsched.api.resource import Resource
from batchsched.plugins.numaaware.cpu_assignment import CpuAssignmentError, take_by_topology
from batchsched.plugins.numaaware.cpu_provider import CpuHintProvider, exclusive_cpus
from batchsched.plugins.numaaware.gosort import sort_slice
from batchsched.plugins.numaaware.policy import TopologyHint

DETAILS = CpuDetails({
    0: CPUInfo(numa=0, core=0, socket=0), 1: CPUInfo(numa=0, core=0, socket=0),
    2: CPUInfo(numa=0, core=1, socket=0), 3: CPUInfo(numa=0, core=1, socket=0),
    4: CPUInfo(numa=1, core=2, socket=1), 5: CPUInfo(numa=1, core=2, socket=1),
    6: CPUInfo(numa=1, core=3, socket=1), 7: CPUInfo(numa=1, core=3, socket=1),
})
TOPOLOGY = NumaTopology(cpu_detail=DETAILS)
PROVIDER = CpuHintProvider()


def cpus(request: str | int) -> Resource:
    return Resource.from_mapping({"cpu": request})


def free(cpuset: str) -> dict[str, frozenset[int]]:
    return {"cpu": parse_cpuset(cpuset)}


def hint(*numa: int, preferred: bool) -> TopologyHint:
    return TopologyHint(frozenset(numa), preferred)


# -- cpu_mng_test.go -----------------------------------------------------------------------

HINT_CASES = {
    "test-1": (4, "0-7", [hint(0, preferred=True), hint(1, preferred=True),
                          hint(0, 1, preferred=False)]),
    "test-2": (4, "1-7", [hint(1, preferred=True), hint(0, 1, preferred=False)]),
    "test-3": (5, "0-7", [hint(0, 1, preferred=True)]),
    "test-4": (8, "0-7", [hint(0, 1, preferred=True)]),
    "test-5": (9, "0-7", []),
    "test-6": (4, "2-5", [hint(0, 1, preferred=False)]),
}


@pytest.mark.parametrize("case", sorted(HINT_CASES))
def test_get_topology_hints(case: str) -> None:
    """Test_GetTopologyHints, case by case (the hints in Volcano's order)."""
    request, cpuset, expected = HINT_CASES[case]
    assert PROVIDER.topology_hints(cpus(request), TOPOLOGY, free(cpuset)) == {"cpu": expected}


ALLOCATE_CASES = {
    "test-1": (4, "0-7", hint(0, preferred=True), "0-3"),
    "test-2": (4, "1-7", hint(1, preferred=True), "4-7"),
    "test-3": (5, "0-7", hint(0, 1, preferred=True), "0-4"),
    "test-4": (5, "1-7", hint(0, 1, preferred=True), "1,4-7"),
    "test-5": (8, "1-7", hint(0, 1, preferred=True), ""),
}


@pytest.mark.parametrize("case", sorted(ALLOCATE_CASES))
def test_allocate(case: str) -> None:
    """Test_Allocate, case by case (test-5: 8 CPUs asked, 7 free: none assigned)."""
    request, cpuset, best, expected = ALLOCATE_CASES[case]
    assert PROVIDER.allocate(cpus(request), best, TOPOLOGY, free(cpuset)) == {
        "cpu": parse_cpuset(expected)}


# -- the provider's rules --------------------------------------------------------------------


@pytest.mark.parametrize(("request_", "whole"), [
    (0, 0), ("500m", 0), ("1500m", 0), (1, 1), ("2000m", 2), (16, 16), (1000.5, 0)])
def test_only_whole_cpus_are_exclusive(request_: str | int, whole: int) -> None:
    assert exclusive_cpus(cpus(request_).milli_cpu) == whole


def test_a_fractional_request_has_no_preference_and_gets_nothing() -> None:
    assert PROVIDER.topology_hints(cpus("1500m"), TOPOLOGY, free("0-7")) is None
    assert PROVIDER.topology_hints(Resource(), TOPOLOGY, free("0-7")) is None
    assert PROVIDER.allocate(cpus("1500m"), hint(0, preferred=True), TOPOLOGY,
                             free("0-7")) == {"cpu": frozenset()}


def test_no_free_cpu_set_known_means_no_preference() -> None:
    assert PROVIDER.topology_hints(cpus(2), TOPOLOGY, {}) is None


def test_reserved_cpus_are_never_hinted_nor_assigned() -> None:
    # One CPU reserved (1500m rounds up to 2): take_by_topology picks 0 and 1 (core 0).
    reserved = NumaTopology(cpu_detail=DETAILS, res_reserved={"cpu": 1500.0})
    assert PROVIDER.topology_hints(cpus(4), reserved, free("0-7")) == {
        "cpu": [hint(1, preferred=True), hint(0, 1, preferred=False)]}
    assert PROVIDER.allocate(cpus(2), hint(0, preferred=True), reserved, free("0-7")) == {
        "cpu": parse_cpuset("2-3")}


def test_without_a_hint_the_cpus_come_from_anywhere() -> None:
    # Policy none's hint names no NUMA node. Core 3 is the only "free core" (a core id
    # that is a free CPU id, Volcano's reading): its CPUs 6 and 7 are taken.
    assert PROVIDER.allocate(cpus(2), TopologyHint(), TOPOLOGY, free("3-7")) == {
        "cpu": parse_cpuset("6-7")}


def test_a_hint_short_of_cpus_takes_the_rest_elsewhere() -> None:
    # NUMA node 1 has 3 free CPUs; the fourth comes from NUMA node 0.
    assert PROVIDER.allocate(cpus(4), hint(1, preferred=False), TOPOLOGY, free("0,5-7")) == {
        "cpu": parse_cpuset("0,5-7")}


# -- take_by_topology ------------------------------------------------------------------------


def test_take_nothing_and_too_much() -> None:
    assert take_by_topology(DETAILS, parse_cpuset("0-7"), 0) == frozenset()
    with pytest.raises(CpuAssignmentError, match="not enough cpus"):
        take_by_topology(DETAILS, parse_cpuset("0-2"), 4)


def test_whole_sockets_are_taken_first() -> None:
    assert take_by_topology(DETAILS, parse_cpuset("0-7"), 6) == parse_cpuset("0-5")


def test_a_free_socket_is_a_socket_id_that_is_a_free_cpu_id() -> None:
    # Volcano's reading, kept: socket 1 is "free" because CPU 1 is, and its free CPUs
    # (5-7, not a whole socket) are taken together; CPU 1 then completes the request.
    assert take_by_topology(DETAILS, parse_cpuset("1-3,5-7"), 4) == parse_cpuset("1,5-7")
    # With CPUs 0 and 1 taken, no socket is "free": cores 2 and 3 are taken whole, and
    # core 1, though entirely free, is not a "free core" (CPU 1 is not free).
    assert take_by_topology(DETAILS, parse_cpuset("2-7"), 4) == parse_cpuset("4-7")


def test_free_cores_may_be_partly_used() -> None:
    # Cores 0 and 2 count as free (CPUs 0 and 2 are): their free CPUs, 0 and 4, are
    # taken as cores; the last CPU is the first of core 1 (2), not its sibling.
    assert take_by_topology(DETAILS, parse_cpuset("0,2-4"), 3) == parse_cpuset("0,2,4")


def test_single_cpus_fill_the_socket_already_used() -> None:
    # No socket or core is taken whole for one CPU at a time: the cores of the socket
    # holding CPUs already taken come first (none yet), then the socket with fewer
    # free CPUs, then the core with fewer.
    assert take_by_topology(DETAILS, parse_cpuset("1,3,4-7"), 1) == parse_cpuset("1")
    assert take_by_topology(DETAILS, parse_cpuset("3-7"), 1) == parse_cpuset("3")


def test_uneven_sockets_may_give_more_than_asked() -> None:
    # 3 sockets, 6 CPUs: a socket's worth is 2; socket 0 has 4 CPUs, all taken.
    details = CpuDetails({0: CPUInfo(0, 0, 0), 1: CPUInfo(0, 0, 1), 2: CPUInfo(0, 0, 2),
                          3: CPUInfo(0, 0, 3), 4: CPUInfo(1, 1, 4), 5: CPUInfo(2, 2, 5)})
    assert take_by_topology(details, details.cpus(), 2) == parse_cpuset("0-3")


# -- Go's sort order -----------------------------------------------------------------------


@pytest.mark.parametrize("length", [0, 1, 2, 12, 13, 49, 50, 51, 200])
def test_with_an_order_the_go_sort_sorts(length: int) -> None:
    rng = random.Random(length)
    items = [rng.randrange(20) for _ in range(length)]
    sort_slice(items, lambda left, right: left < right)
    assert items == sorted(items)


def test_the_go_sort_of_a_relation_that_is_no_order() -> None:
    # Orders Go 1.19+ gives for "better on any criterion" (computed with Go's sort.Slice).
    keys = {0: (2, 1), 1: (1, 2), 2: (3, 0), 3: (0, 3)}
    items = [0, 1, 2, 3]
    sort_slice(items, lambda a, b: keys[a][0] < keys[b][0] or keys[a][1] < keys[b][1])
    assert items == [3, 2, 1, 0]
    pattern = list(range(40))
    sort_slice(pattern, lambda a, b: (a * 7) % 13 < (b * 7) % 13 or a % 5 < b % 5)
    assert pattern == GO_ORDER_OF_PATTERN


#: Go's sort.Slice on range(40) with ``(a*7)%13 < (b*7)%13 || a%5 < b%5``.
GO_ORDER_OF_PATTERN = [0, 15, 30, 26, 6, 21, 13, 2, 17, 32, 39, 28, 4, 19, 8, 34, 10, 25, 5,
                       36, 23, 12, 20, 35, 38, 1, 16, 31, 11, 27, 14, 3, 18, 29, 7, 22, 37,
                       33, 9, 24]


def test_more_than_twelve_cores_are_ordered_as_go_1_26_orders_them() -> None:
    # Four sockets (one NUMA node each) of eight two-thread cores. Taking 40 of these
    # 48 free CPUs sorts the 16 free cores of sockets 2 and 3 with a `less` that is no
    # strict order, so Go's pdqsort breaks patterns with its xorshift: since Go's fix of
    # golang/go#70144 (shifts 13, 7, 17; the Go release Volcano builds with), the
    # CPUs left are all on NUMA node 3 (the older shifts 13, 17, 5 left six on node 2).
    details = CpuDetails({cpu: CPUInfo(numa=cpu // 16, core=cpu // 2, socket=cpu // 16)
                          for cpu in range(64)})
    free_cpus = parse_cpuset("0-7,9-17,20,22-26,29-33,35-37,39-44,46-48,51,53-54,56-58,60,63")
    taken = take_by_topology(details, free_cpus, 40)
    assert free_cpus - taken == parse_cpuset("51,53-54,56-58,60,63")
