"""The node NUMA topology (batchsched.api.numa) and the scenario key ``numaTopology``.

A scenario node's ``numaTopology`` is the spec of Volcano's ``Numatopology``
resource; a file without it (every version 1 file so far) loads as before.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import pytest
import yaml

from batchsched.api.node import NodeInfo
from batchsched.api.numa import (
    CpuDetails,
    CPUInfo,
    NumaResource,
    NumaTopology,
    format_cpuset,
    parse_cpuset,
)
from batchsched.api.resource import Resource
from batchsched.errors import ScenarioError
from batchsched.scenario import parse_scenario

SCENARIO = """
version: 1
name: numa topology
config:
  actions: ""
  tiers: [{plugins: [{name: predicates}]}]
nodes:
  - name: n1
    allocatable: {cpu: 8, memory: 32Gi, pods: 110}
    numaTopology:
      policies: {CPUManagerPolicy: static, TopologyManagerPolicy: single-numa-node}
      resReserved: {cpu: 1, memory: 1Gi}
      numares:
        cpu: {allocatable: "1-3,5-7", capacity: 8}
      cpuDetail:
        0: {numa: 0, socket: 0, core: 0}
        1: {socket: 0, core: 0}
        "2": {numa: 0, socket: 0, core: 1}
        3: {numa: 0, socket: 0, core: 1}
        4: {numa: 1, socket: 1, core: 2}
        5: {numa: 1, socket: 1, core: 2}
        6: {numa: 1, socket: 1, core: 3}
        7: {numa: 1, socket: 1, core: 3}
  - name: n2
    allocatable: {cpu: 8, memory: 32Gi, pods: 110}
"""


def load(document: dict[str, Any]) -> dict[str, NodeInfo]:
    return {node.name: node for node in parse_scenario(document, source="s.yaml").nodes}


def document() -> dict[str, Any]:
    doc: dict[str, Any] = yaml.safe_load(SCENARIO)
    return doc


# -- loading -------------------------------------------------------------------------------


def test_a_node_s_numa_topology_loads() -> None:
    nodes = load(document())
    topology = nodes["n1"].numa_topology
    assert topology is not None
    assert (topology.cpu_manager_policy, topology.topology_manager_policy) == (
        "static", "single-numa-node")
    assert topology.res_reserved == {"cpu": 1000.0, "memory": float(2**30)}
    assert topology.resources == {"cpu": NumaResource(parse_cpuset("1-3,5-7"), 8)}
    # Keys as numbers or strings; an id left out is 0 (the resource omits zeros).
    assert topology.cpu_detail[1] == CPUInfo(numa=0, socket=0, core=0)
    assert topology.cpu_detail[2] == CPUInfo(numa=0, socket=0, core=1)
    assert topology.numa_nodes() == (0, 1)
    assert nodes["n2"].numa_topology is None


def test_an_empty_numa_topology_is_a_topology_with_nothing() -> None:
    doc = document()
    doc["nodes"][1]["numaTopology"] = {}
    assert load(doc)["n2"].numa_topology == NumaTopology()


def _set(path: str, value: Any) -> Callable[[dict[str, Any]], None]:
    """Set the field at ``path`` (dot-separated, under n1's numaTopology)."""
    def edit(doc: dict[str, Any]) -> None:
        target = doc["nodes"][0]
        *parents, last = ["numaTopology", *path.split(".")] if path else ["numaTopology"]
        for key in parents:
            target = target[int(key) if key.isdigit() and int(key) in target else key]
        target[int(last) if last.isdigit() and int(last) in target else last] = value
    return edit


WHERE = "s.yaml: nodes[0] (n1).numaTopology"
MALFORMED = {
    "not a mapping": (_set("", 5), "", "must be a mapping, not a number"),
    "unknown key": (_set("numaRes", {}), ".numaRes", "unknown key (known: cpuDetail, "
                                                     "numares, podAllocations, policies, "
                                                     "resReserved)"),
    "unknown pod allocation key": (_set("podAllocations", [{"pod": "x"}]),
                                   ".podAllocations[0].pod", "unknown key"),
    "unknown policy": (_set("policies.MemoryManagerPolicy", "static"),
                       ".policies.MemoryManagerPolicy", "unknown key"),
    "bad topology policy": (_set("policies.TopologyManagerPolicy", "single"),
                            ".policies.TopologyManagerPolicy",
                            "'single' is not one of none, best-effort, restricted, "
                            "single-numa-node"),
    "bad cpu manager policy": (_set("policies.CPUManagerPolicy", True),
                               ".policies.CPUManagerPolicy", "True is not one of none, static"),
    "bad reserved quantity": (_set("resReserved.cpu", "one"), ".resReserved.cpu",
                              '"one" is not a quantity'),
    "cpu id not a number": (_set("cpuDetail.a", {}), ".cpuDetail.a",
                            "a CPU id must be a non-negative integer"),
    "negative cpu id": (_set("cpuDetail.-1", {}), ".cpuDetail.-1",
                        "a CPU id must be a non-negative integer"),
    "cpu not a mapping": (_set("cpuDetail.0", [0]), ".cpuDetail.0",
                          "must be a mapping, not a list"),
    "numa id not a number": (_set("cpuDetail.0.numa", "0"), ".cpuDetail.0.numa",
                             "must be an integer, not '0'"),
    "negative socket": (_set("cpuDetail.0.socket", -1), ".cpuDetail.0.socket",
                        "must not be negative"),
    "numa id too large": (_set("cpuDetail.0.numa", 64), ".cpuDetail.0.numa", "must be below 64"),
    "unknown cpu key": (_set("cpuDetail.0.node", 0), ".cpuDetail.0.node", "unknown key"),
    "malformed cpuset": (_set("numares.cpu.allocatable", "0-x"), ".numares.cpu.allocatable",
                         "'0-x' is not a cpuset list"),
    "reversed range": (_set("numares.cpu.allocatable", "3-1"), ".numares.cpu.allocatable",
                       "range '3-1' runs backwards"),
    "cpuset with spaces": (_set("numares.cpu.allocatable", "0, 1"),
                           ".numares.cpu.allocatable", "is not a cpuset list"),
    "undescribed free cpu": (_set("numares.cpu.allocatable", "6-9"),
                             ".numares.cpu.allocatable", "CPU(s) 8-9 not described in cpuDetail"),
    "capacity not a number": (_set("numares.cpu.capacity", "8"), ".numares.cpu.capacity",
                              "must be an integer, not '8'"),
    "negative capacity": (_set("numares.cpu.capacity", -8), ".numares.cpu.capacity",
                          "must not be negative"),
    "unknown resource key": (_set("numares.cpu.free", "0"), ".numares.cpu.free", "unknown key"),
    "resource not a mapping": (_set("numares.cpu", "0-7"), ".numares.cpu",
                               "must be a mapping, not a string"),
}


@pytest.mark.parametrize("case", sorted(MALFORMED))
def test_a_malformed_numa_topology_names_the_field(case: str) -> None:
    edit, path, problem = MALFORMED[case]
    doc = document()
    edit(doc)
    with pytest.raises(ScenarioError) as raised:
        load(doc)
    assert str(raised.value).startswith(f"{WHERE}{path}: ")
    assert problem in str(raised.value)


def test_a_single_free_cpu_may_be_a_number() -> None:
    doc = document()
    _set("numares.cpu.allocatable", 5)(doc)
    topology = load(doc)["n1"].numa_topology
    assert topology is not None and topology.resources["cpu"].allocatable == {5}


def test_the_scenario_format_example_loads() -> None:
    """The example of docs/scenario-format.md, nodes section."""
    node = yaml.safe_load("""
name: n1
allocatable: {cpu: 8, memory: 32Gi, pods: 110}
numaTopology:
  policies:
    CPUManagerPolicy: static
    TopologyManagerPolicy: single-numa-node
  resReserved: {cpu: 1}
  numares:
    cpu: {allocatable: "0-7", capacity: 8}
  cpuDetail:
    0: {numa: 0, socket: 0, core: 0}
    1: {numa: 0, socket: 0, core: 0}
    2: {numa: 0, socket: 0, core: 1}
    3: {numa: 0, socket: 0, core: 1}
    4: {numa: 1, socket: 1, core: 2}
    5: {numa: 1, socket: 1, core: 2}
    6: {numa: 1, socket: 1, core: 3}
    7: {numa: 1, socket: 1, core: 3}
""")
    doc = document()
    doc["nodes"] = [node]
    topology = load(doc)["n1"].numa_topology
    assert topology is not None
    assert format_cpuset(topology.cpu_detail.cpus_in_numa_nodes(1)) == "4-7"


# -- the model -----------------------------------------------------------------------------

DETAILS = CpuDetails({cpu: CPUInfo(numa=cpu // 4, socket=cpu // 4, core=cpu // 2)
                      for cpu in range(8)})


@pytest.mark.parametrize(("text", "ids"), [
    ("", []), ("0", [0]), ("0-3", [0, 1, 2, 3]), ("1-1,3", [1, 3]), ("5,0-1", [0, 1, 5])])
def test_cpuset_lists(text: str, ids: list[int]) -> None:
    assert sorted(parse_cpuset(text)) == ids
    assert parse_cpuset(format_cpuset(ids)) == frozenset(ids)


@pytest.mark.parametrize("text", [" 0", "0-", "-1", "a", "0,,1", "+1", "0-1-2", "3-2"])
def test_malformed_cpuset_lists(text: str) -> None:
    with pytest.raises(ValueError, match=r"cpuset|backwards"):
        parse_cpuset(text)


def test_cpu_details_queries() -> None:
    assert DETAILS.cpus() == frozenset(range(8))
    assert DETAILS.sockets() == DETAILS.numa_nodes() == {0, 1}
    assert DETAILS.cores() == {0, 1, 2, 3}
    assert DETAILS.cpus_in_sockets(1) == {4, 5, 6, 7}
    assert DETAILS.cpus_in_cores(0, 3) == {0, 1, 6, 7}
    assert DETAILS.cores_in_sockets(0) == {0, 1}
    assert DETAILS.keep_only({1, 2, 9}) == CpuDetails({1: DETAILS[1], 2: DETAILS[2]})
    # Core ids repeated across sockets count once per socket.
    repeated = CpuDetails({0: CPUInfo(0, 0, 0), 1: CPUInfo(1, 1, 0)})
    assert (len(repeated.cores()), repeated.physical_cores()) == (1, 2)


def test_a_topology_must_describe_its_free_cpus() -> None:
    with pytest.raises(ValueError, match="free CPU\\(s\\) 8 not described"):
        NumaTopology(cpu_detail=DETAILS, resources={"cpu": NumaResource(parse_cpuset("6-8"))})
    with pytest.raises(ValueError, match="NUMA node id 64"):
        NumaTopology(cpu_detail=CpuDetails({0: CPUInfo(numa=64)}))


def test_allocate_and_release_give_new_topologies() -> None:
    topology = NumaTopology(cpu_detail=DETAILS, resources={"cpu": NumaResource(DETAILS.cpus(), 8)})
    taken = topology.allocate({"cpu": frozenset({0, 5}), "nvidia.com/gpu": frozenset({0})})
    assert taken.free_sets() == {"cpu": parse_cpuset("1-4,6-7")}
    assert topology.free_sets() == {"cpu": DETAILS.cpus()}
    assert taken.release({"cpu": frozenset({5})}).free_sets() == {"cpu": parse_cpuset("1-7")}
    assert taken.resources["cpu"].capacity == 8


def test_nodes_share_their_topology_with_their_clones() -> None:
    topology = NumaTopology(cpu_detail=DETAILS)
    node = NodeInfo.create("n1", Resource.from_mapping({"cpu": 8}), numa_topology=topology)
    assert node.numa_topology is topology
    assert node.clone().numa_topology is topology
    assert NodeInfo.create("n2", Resource()).numa_topology is None


def test_a_version_1_file_without_the_key_loads_unchanged() -> None:
    doc = document()
    del doc["nodes"][0]["numaTopology"]
    original = copy.deepcopy(doc)
    assert all(node.numa_topology is None for node in load(doc).values())
    assert doc == original
