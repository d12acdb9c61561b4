"""A node's NUMA topology, as its resource exporter reports it (Volcano's
``Numatopology`` custom resource, ``nodeinfo.volcano.sh/v1alpha1``, read into the
scheduler's ``NumatopoInfo``).

:class:`NumaTopology` holds what the ``numa-aware`` plugin reads:

* the kubelet's policies: the CPU manager policy (``static`` hands out whole CPUs
  exclusively; ``none`` does not) and the topology manager policy (``none``,
  ``best-effort``, ``restricted``, ``single-numa-node``);
* ``res_reserved``: what the kubelet keeps for the system (only ``cpu`` is read:
  that many CPUs, rounded up, are never handed out);
* ``resources`` (the resource's ``numares``): per resource, the ids still free to
  hand out (``allocatable``, a Linux cpuset list such as ``"0-3,8"``) and how many
  there are in all (``capacity``);
* ``cpu_detail``: each logical CPU's NUMA node, socket and core
  (:class:`CpuDetails`, with the kubelet's queries over them).

The model is immutable: a node's topology is shared by its clones, and the plugin
keeps what a session hands out on its own side. :meth:`NumaTopology.allocate` and
:meth:`NumaTopology.release` give the topology with CPUs taken or given back, for a
host that pre-occupies CPUs the scheduler assigned before the exporter reports them
(Volcano's ``NumatopoInfo.Allocate`` and ``Release``).

>>> topology = NumaTopology(
...     cpu_detail=CpuDetails({cpu: CPUInfo(numa=cpu // 4, socket=cpu // 4, core=cpu // 2)
...                            for cpu in range(8)}),
...     resources={"cpu": NumaResource(parse_cpuset("0-7"), 8)},
...     cpu_manager_policy="static", topology_manager_policy="single-numa-node")
>>> topology.numa_nodes(), format_cpuset(topology.cpu_detail.cpus_in_numa_nodes(1))
((0, 1), '4-7')
>>> format_cpuset(topology.allocate({"cpu": frozenset({0, 1, 5})}).free_sets()["cpu"])
'2-4,6-7'
"""

from __future__ import annotations

import re
import types
from collections.abc import Iterable, Iterator, Mapping

import attrs

__all__ = [
    "CPU_MANAGER_POLICY",
    "MAX_NUMA_NODES",
    "TOPOLOGY_MANAGER_POLICY",
    "CPUInfo",
    "CpuDetails",
    "NumaResource",
    "NumaTopology",
    "ResourceSets",
    "format_cpuset",
    "parse_cpuset",
]

#: The policy names of the custom resource's ``policies`` map.
CPU_MANAGER_POLICY = "CPUManagerPolicy"
TOPOLOGY_MANAGER_POLICY = "TopologyManagerPolicy"
#: NUMA node ids are bits of a 64-bit mask in the kubelet (ids 0 to 63).
MAX_NUMA_NODES = 64

#: Resource name -> a set of ids (for ``cpu``, CPU ids): Volcano's ``ResNumaSets``.
ResourceSets = Mapping[str, frozenset[int]]

_CPUSET_PART = re.compile(r"(\d+)(?:-(\d+))?")


def parse_cpuset(text: str) -> frozenset[int]:
    """The ids of a Linux cpuset list (``"0-3,8"``; ``""`` is empty), as the
    kubelet's ``cpuset.Parse`` reads it.

    Raises ``ValueError`` for anything else (spaces, signs, a reversed range).

    >>> sorted(parse_cpuset("0-2,7"))
    [0, 1, 2, 7]
    """
    if text == "":
        return frozenset()
    ids: set[int] = set()
    for part in text.split(","):
        match = _CPUSET_PART.fullmatch(part)
        if match is None:
            raise ValueError(f"{text!r} is not a cpuset list (such as \"0-3,8\")")
        start = int(match[1])
        end = int(match[2]) if match[2] is not None else start
        if start > end:
            raise ValueError(f"{text!r}: range {part!r} runs backwards")
        ids.update(range(start, end + 1))
    return frozenset(ids)


def format_cpuset(ids: Iterable[int]) -> str:
    """The Linux cpuset list of ``ids``, runs of consecutive ids as ranges.

    >>> format_cpuset({0, 1, 2, 3, 8, 10, 11})
    '0-3,8,10-11'
    """
    parts: list[str] = []
    run: list[int] = []
    for cpu in sorted(ids):
        if run and cpu != run[-1] + 1:
            parts.append(_run_text(run))
            run = []
        run.append(cpu)
    if run:
        parts.append(_run_text(run))
    return ",".join(parts)


def _run_text(run: list[int]) -> str:
    return str(run[0]) if len(run) == 1 else f"{run[0]}-{run[-1]}"


@attrs.frozen
class CPUInfo:
    """Where one logical CPU sits: its NUMA node, socket and core (the ids the
    exporter reports; core ids may repeat from one socket to the next)."""

    numa: int = 0
    socket: int = 0
    core: int = 0


class CpuDetails(Mapping[int, CPUInfo]):
    """CPU id -> :class:`CPUInfo`, read-only, with the kubelet's ``CPUDetails``
    queries. Each query answers a set of ids; :meth:`keep_only` narrows the
    details to some CPUs (the free ones, say) for further queries."""

    __slots__ = ("_cpus",)

    def __init__(self, cpus: Mapping[int, CPUInfo] | None = None) -> None:
        self._cpus: dict[int, CPUInfo] = dict(cpus or {})

    def __getitem__(self, cpu: int) -> CPUInfo:
        return self._cpus[cpu]

    def __iter__(self) -> Iterator[int]:
        return iter(self._cpus)

    def __len__(self) -> int:
        return len(self._cpus)

    def __repr__(self) -> str:
        return f"CpuDetails({self._cpus!r})"

    def keep_only(self, cpus: Iterable[int]) -> CpuDetails:
        """The details of those of ``cpus`` described here."""
        kept = frozenset(cpus)
        return CpuDetails({cpu: info for cpu, info in self._cpus.items() if cpu in kept})

    def cpus(self) -> frozenset[int]:
        return frozenset(self._cpus)

    def numa_nodes(self) -> frozenset[int]:
        return frozenset(info.numa for info in self._cpus.values())

    def sockets(self) -> frozenset[int]:
        return frozenset(info.socket for info in self._cpus.values())

    def cores(self) -> frozenset[int]:
        return frozenset(info.core for info in self._cpus.values())

    def cpus_in_numa_nodes(self, *ids: int) -> frozenset[int]:
        return frozenset(cpu for cpu, info in self._cpus.items() if info.numa in ids)

    def cpus_in_sockets(self, *ids: int) -> frozenset[int]:
        return frozenset(cpu for cpu, info in self._cpus.items() if info.socket in ids)

    def cpus_in_cores(self, *ids: int) -> frozenset[int]:
        return frozenset(cpu for cpu, info in self._cpus.items() if info.core in ids)

    def cores_in_sockets(self, *ids: int) -> frozenset[int]:
        return frozenset(info.core for info in self._cpus.values() if info.socket in ids)

    def physical_cores(self) -> int:
        """How many distinct (socket, core) pairs there are: the number of physical
        cores when core ids are unique only within a socket."""
        return len({(info.socket, info.core) for info in self._cpus.values()})


def _resources(mapping: Mapping[str, NumaResource]) -> Mapping[str, NumaResource]:
    return types.MappingProxyType(dict(mapping))


def _quantities(mapping: Mapping[str, float]) -> Mapping[str, float]:
    return types.MappingProxyType(dict(mapping))


@attrs.frozen
class NumaResource:
    """One resource of ``numares``: the ids free to hand out, and how many in all."""

    allocatable: frozenset[int] = frozenset()
    capacity: int = 0


@attrs.frozen
class NumaTopology:
    """A node's NUMA topology (see the module docstring).

    Raises ``ValueError`` when a free CPU of ``resources["cpu"]`` is not described
    in ``cpu_detail``, or a NUMA node id is outside 0 to 63.
    """

    cpu_detail: CpuDetails = attrs.field(factory=CpuDetails)
    #: Resource name -> its free ids and capacity (read-only).
    resources: Mapping[str, NumaResource] = attrs.field(factory=dict, converter=_resources)
    cpu_manager_policy: str = ""
    topology_manager_policy: str = ""
    #: What the kubelet reserves, in batchsched's units (cpu in millicores, memory in
    #: bytes, others in milli-units), by resource name (read-only).
    res_reserved: Mapping[str, float] = attrs.field(factory=dict, converter=_quantities)
    #: The pods the node's exporter reports it assigned NUMA ids to (its Numatopology's
    #: ``podAllocations``): their uids, and their ``namespace/name``.
    assigned_pod_uids: frozenset[str] = frozenset()
    assigned_pod_names: frozenset[str] = frozenset()

    def fresh(self) -> NumaTopology:
        """The topology as a node just added would report it: every CPU free, no pod
        reported. The other resources' ids stay as reported: only CPUs are handed out
        (Volcano's one hint provider is the CPU manager's), and a count such as
        memory's bytes is no set of ids to build."""
        cpu = self.resources.get("cpu")
        if cpu is None:
            resources = self.resources
        else:
            resources = {**self.resources,
                         "cpu": attrs.evolve(cpu, allocatable=self.cpu_detail.cpus())}
        return attrs.evolve(self, resources=resources, assigned_pod_uids=frozenset(),
                            assigned_pod_names=frozenset())

    def reports(self, pod_uid: str, pod_name: str) -> bool:
        """Whether the exporter reports the pod (by uid, or by ``namespace/name``: it
        reads one or the other; Volcano's ``CheckNumaPodAssigned``)."""
        return pod_uid in self.assigned_pod_uids or pod_name in self.assigned_pod_names

    def __attrs_post_init__(self) -> None:
        cpu = self.resources.get("cpu")
        unknown = cpu.allocatable - self.cpu_detail.cpus() if cpu is not None else frozenset()
        if unknown:
            raise ValueError(f"free CPU(s) {format_cpuset(unknown)} not described in the "
                             "CPU details")
        wrong = [n for n in self.cpu_detail.numa_nodes() if not 0 <= n < MAX_NUMA_NODES]
        if wrong:
            raise ValueError(f"NUMA node id {min(wrong)} is outside 0 to "
                             f"{MAX_NUMA_NODES - 1}")

    def numa_nodes(self) -> tuple[int, ...]:
        """The NUMA node ids of the node's CPUs, ascending."""
        return tuple(sorted(self.cpu_detail.numa_nodes()))

    def free_sets(self) -> dict[str, frozenset[int]]:
        """Each resource's free ids (a new dict: Volcano's ``GenerateNodeResNumaSets``
        for one node)."""
        return {name: resource.allocatable for name, resource in self.resources.items()}

    def allocate(self, sets: ResourceSets) -> NumaTopology:
        """This topology with ``sets`` no longer free (resources it does not have are
        ignored)."""
        return self._with_free(sets, taken=True)

    def release(self, sets: ResourceSets) -> NumaTopology:
        """This topology with ``sets`` free again."""
        return self._with_free(sets, taken=False)

    def _with_free(self, sets: ResourceSets, *, taken: bool) -> NumaTopology:
        resources = dict(self.resources)
        for name, ids in sets.items():
            held = resources.get(name)
            if held is None:
                continue
            free = held.allocatable - ids if taken else held.allocatable | ids
            resources[name] = attrs.evolve(held, allocatable=free)
        return attrs.evolve(self, resources=resources)
