"""Which CPUs to hand out for a request: Volcano's ``takeByTopology``, the
topology-aware best fit it took from an early kubelet CPU manager.

From the free CPUs, for a request of ``n`` CPUs:

1. while ``n`` is at least a socket's worth (the node's CPUs / sockets), take the
   free CPUs of whole sockets, lowest id first;
2. while it is at least a core's worth (CPUs / physical cores), take the free CPUs
   of cores, the sockets with fewer such cores first;
3. then single CPUs, preferring cores on sockets where CPUs were already taken,
   then sockets and cores with fewer free CPUs, then lower socket and core ids.

Volcano's code differs from that description in ways that decide which CPUs are
taken, and batchsched keeps them as they are:

* the "free sockets" of step 1 are the socket ids that are also ids of free CPUs,
  and each takes whatever CPUs of that socket are free (a partly used socket
  included); likewise the cores of step 2 are the core ids that are also ids of
  free CPUs;
* the orders of steps 2 and 3 compare with "better on any criterion", which is not
  an order: the result is what Go's ``sort.Slice`` makes of it
  (:mod:`~batchsched.plugins.numaaware.gosort` reproduces it). Step 2 starts from
  Go's map order, which is random; batchsched starts from ascending socket ids.

Taking whole sockets or cores may take more CPUs than asked when sockets or cores
are uneven; that too is kept.
"""

from __future__ import annotations

from batchsched.api.numa import CpuDetails
from batchsched.plugins.numaaware.gosort import sort_slice

__all__ = ["CpuAssignmentError", "take_by_topology"]


class CpuAssignmentError(ValueError):
    """The free CPUs cannot serve the request."""


class _Accumulator:
    """The CPUs taken so far, the free ones left, and how many are still needed."""

    def __init__(self, topology: CpuDetails, free: frozenset[int], needed: int) -> None:
        self.topology = topology
        self.free = topology.keep_only(free)
        self.needed = needed
        self.taken: frozenset[int] = frozenset()
        cpus = len(topology)
        sockets = len(topology.sockets())
        cores = topology.physical_cores()
        self.cpus_per_socket = cpus // sockets if sockets else 0
        self.cpus_per_core = cpus // cores if cores else 0

    def take(self, cpus: frozenset[int]) -> None:
        self.taken |= cpus
        self.free = self.free.keep_only(self.free.cpus() - self.taken)
        self.needed -= len(cpus)

    def needs(self, count: int) -> bool:
        return self.needed >= count

    @property
    def satisfied(self) -> bool:
        return self.needed < 1

    def free_sockets(self) -> list[int]:
        return sorted(self.free.sockets() & self.free.cpus())

    def free_cores(self) -> list[int]:
        free_cpus = self.free.cpus()
        cores = {socket: self.free.cores_in_sockets(socket) & free_cpus
                 for socket in self.free.sockets()}
        sockets = sorted(cores)
        sort_slice(sockets, lambda left, right: (
            len(cores[left]) < len(cores[right]) or left < right))
        return [core for socket in sockets for core in sorted(cores[socket])]

    def free_cpus_in_order(self) -> list[int]:
        # Each core's standing, worked out once: nothing changes while sorting.
        standing: dict[int, tuple[int, int, int, int]] = {}
        for core in self.free.cores():
            socket = self.topology[min(self.topology.cpus_in_cores(core))].socket
            standing[core] = (
                len(self.topology.cpus_in_sockets(socket) & self.taken),
                len(self.free.cpus_in_sockets(socket)),
                len(self.free.cpus_in_cores(core)),
                socket,
            )

        def before(left: int, right: int) -> bool:
            (l_colocated, l_socket_free, l_core_free, l_socket) = standing[left]
            (r_colocated, r_socket_free, r_core_free, r_socket) = standing[right]
            return (l_colocated > r_colocated or l_socket_free < r_socket_free
                    or l_core_free < r_core_free or l_socket < r_socket or left < right)

        cores = sorted(standing)
        sort_slice(cores, before)
        return [cpu for core in cores for cpu in sorted(self.free.cpus_in_cores(core))]


def take_by_topology(topology: CpuDetails, free: frozenset[int], count: int) -> frozenset[int]:
    """``count`` of the ``free`` CPUs of a node whose CPUs ``topology`` describes,
    chosen as the module docstring says.

    Raises :class:`CpuAssignmentError` when fewer than ``count`` of them are free (or
    the steps end short).
    """
    acc = _Accumulator(topology, free, count)
    if acc.satisfied:
        return acc.taken
    if acc.needed > len(acc.free):
        raise CpuAssignmentError("not enough cpus available to satisfy request")
    if acc.needs(acc.cpus_per_socket):
        for socket in acc.free_sockets():
            acc.take(acc.free.cpus_in_sockets(socket))
            if acc.satisfied:
                return acc.taken
            if not acc.needs(acc.cpus_per_socket):
                break
    if acc.needs(acc.cpus_per_core):
        for core in acc.free_cores():
            acc.take(acc.free.cpus_in_cores(core))
            if acc.satisfied:
                return acc.taken
            if not acc.needs(acc.cpus_per_core):
                break
    for cpu in acc.free_cpus_in_order():
        if acc.needs(1):
            acc.take(frozenset({cpu}))
        if acc.satisfied:
            return acc.taken
    raise CpuAssignmentError("failed to allocate cpus")
