"""The CPU hint provider: which NUMA nodes a container's exclusive CPUs could come
from, and which CPUs it gets once a hint is chosen (Volcano's ``cpumanager``
provider, after the kubelet's static CPU manager).

Only a whole number of CPUs is handed out exclusively: a request of ``1500m`` (or
none) gives no hints (no preference) and no CPUs.

**Hints.** The CPUs the kubelet reserves for the system (``res_reserved`` cpu,
rounded up, chosen by :func:`~batchsched.plugins.numaaware.cpu_assignment.take_by_topology`
among all the node's CPUs) are never free. For each set of the node's NUMA nodes
(one node, then pairs, ..., in ascending order), a hint when the free CPUs on them
cover the request; the hints on the fewest NUMA nodes whose CPUs (free or not)
could cover the request are preferred. No free combination gives an empty list
(cannot be served).

**Assignment.** With a hint's NUMA nodes, as many of the request's CPUs as the free
CPUs there allow are taken there, then the rest anywhere; with no hint (policy
``none``), all anywhere. When the free CPUs cannot cover the request, nothing is
assigned (the resource fit check is another plugin's).
"""

from __future__ import annotations

import contextlib
import itertools
import math
from collections import Counter

from batchsched.api.numa import NumaTopology, ResourceSets
from batchsched.api.resource import CPU, Resource
from batchsched.plugins.numaaware.cpu_assignment import CpuAssignmentError, take_by_topology
from batchsched.plugins.numaaware.policy import TopologyHint

__all__ = ["CpuHintProvider", "exclusive_cpus"]


def exclusive_cpus(milli_cpu: float) -> int:
    """How many whole CPUs a cpu request of ``milli_cpu`` asks for; 0 when it is not
    a whole number (Volcano's ``guaranteedCPUs``)."""
    milli = math.ceil(milli_cpu)
    return milli // 1000 if milli % 1000 == 0 else 0


class CpuHintProvider:
    """Hints and assignments for the ``cpu`` resource (see the module docstring)."""

    name = "cpuMng"

    def __init__(self) -> None:
        # The reserved CPUs of each topology seen (topologies are immutable), with the
        # topology itself so that its id stays its own.
        self._reserved: dict[int, tuple[NumaTopology, frozenset[int]]] = {}

    def topology_hints(self, requests: Resource, topology: NumaTopology,
                       free: ResourceSets) -> dict[str, list[TopologyHint]] | None:
        """The ``cpu`` hints for a container of ``requests``; None when the provider
        has no preference (no whole number of CPUs asked, or no free CPUs known)."""
        request = exclusive_cpus(requests.milli_cpu)
        if request == 0:
            return None
        available = free.get(CPU)
        if available is None:
            return None
        return {CPU: _cpu_hints(available - self.reserved(topology), topology, request)}

    def allocate(self, requests: Resource, hint: TopologyHint, topology: NumaTopology,
                 free: ResourceSets) -> dict[str, frozenset[int]]:
        """The CPUs a container of ``requests`` gets under ``hint``."""
        details = topology.cpu_detail
        request = exclusive_cpus(requests.milli_cpu)
        available = free.get(CPU, frozenset()) - self.reserved(topology)
        taken: frozenset[int] = frozenset()
        try:
            if hint.affinity is not None:
                aligned = available & details.cpus_in_numa_nodes(*hint.affinity)
                taken = take_by_topology(details, aligned, min(request, len(aligned)))
            taken |= take_by_topology(details, available - taken, request - len(taken))
        except CpuAssignmentError:
            return {CPU: frozenset()}
        return {CPU: taken}

    def reserved(self, topology: NumaTopology) -> frozenset[int]:
        """The CPUs the kubelet keeps for the system: ``res_reserved`` cpu rounded up,
        chosen among all the node's CPUs (none when they cannot be chosen)."""
        kept = self._reserved.get(id(topology))
        if kept is not None and kept[0] is topology:
            return kept[1]
        cpus: frozenset[int] = frozenset()
        milli = topology.res_reserved.get(CPU)
        if milli is not None:
            with contextlib.suppress(CpuAssignmentError):
                cpus = take_by_topology(topology.cpu_detail, topology.cpu_detail.cpus(),
                                        math.ceil(milli / 1000))
        self._reserved[id(topology)] = (topology, cpus)
        return cpus


def _cpu_hints(available: frozenset[int], topology: NumaTopology,
               request: int) -> list[TopologyHint]:
    details = topology.cpu_detail
    numa_nodes = sorted(details.numa_nodes())
    in_all = Counter(info.numa for info in details.values())
    free = Counter(details[cpu].numa for cpu in available)
    narrowest = len(numa_nodes)
    candidates: list[frozenset[int]] = []
    for size in range(1, len(numa_nodes) + 1):
        for combination in itertools.combinations(numa_nodes, size):
            if size < narrowest and sum(in_all[n] for n in combination) >= request:
                narrowest = size
            if sum(free[n] for n in combination) >= request:
                candidates.append(frozenset(combination))
    return [TopologyHint(nodes, len(nodes) == narrowest) for nodes in candidates]
