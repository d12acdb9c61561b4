"""What a session does with network topologies when it opens (Volcano's
``openSession``: ``adjustNetworkTopologySpec``, ``removeInvalidAllocatedHyperNode``
and ``recoverAllocatedHyperNode``).

Each job with a pod group ``networkTopology`` gets the session's reading of it in
``job.network_topology``: a ``highestTierName`` becomes the tier of the hypernodes
of that name (left unresolved when none has it: the job is then not hard), and a
soft topology becomes hard up to the tier of the cluster's virtual root, so that
soft jobs take the hard path with the whole cluster as their limit. The pod group
itself is never changed.

A job's allocated hypernode (where its placed tasks lie, kept by allocate) is
dropped when that hypernode is gone or the job holds no allocated task, and worked
out again from the nodes its tasks run on when empty: the lowest-tier hypernode
holding them all (ties: by name).

batchsched has no sub-group policies, so a job has one sub-job (Volcano's default
sub-job, holding every task, with the job's topology): its allocated hypernode is
``job.sub_job_allocated_hyper_node``.
"""

from __future__ import annotations

from collections.abc import Iterable

from batchsched.api.hypernode import HARD, SOFT, NetworkTopology, Topology
from batchsched.api.job import JobInfo
from batchsched.api.types import ALLOCATED_STATUSES

__all__ = ["open_network_topologies", "session_topology_of"]


def session_topology_of(spec: NetworkTopology, topology: Topology) -> NetworkTopology:
    """The pod group's topology as the session reads it."""
    if spec.highest_tier_allowed is None and spec.highest_tier_name:
        tier = topology.tier_names.get(spec.highest_tier_name)
        if tier is not None:
            spec = NetworkTopology(spec.mode, tier, "")
    if spec.mode == SOFT:
        spec = NetworkTopology(HARD, topology.top_tier, "")
    return spec


def open_network_topologies(jobs: Iterable[JobInfo], topology: Topology) -> None:
    """Set each job's session topology and check or recover its allocated hypernodes."""
    for job in jobs:
        spec = job.podgroup.network_topology
        job.network_topology = None if spec is None else session_topology_of(spec, topology)
        if job.allocated_hyper_node or job.sub_job_allocated_hyper_node:
            holds = any(job.tasks_in(status) for status in ALLOCATED_STATUSES)
            if not holds or job.allocated_hyper_node not in topology:
                job.allocated_hyper_node = ""
            if not holds or job.sub_job_allocated_hyper_node not in topology:
                job.sub_job_allocated_hyper_node = ""
        if spec is None:
            continue
        updated = False
        if not job.sub_job_allocated_hyper_node:
            recovered = _lowest_holding(job, topology)
            if recovered:
                job.sub_job_allocated_hyper_node = recovered
                updated = True
        if not job.allocated_hyper_node or updated:
            job.allocated_hyper_node = job.sub_job_allocated_hyper_node


def _lowest_holding(job: JobInfo, topology: Topology) -> str:
    candidates: set[str] | None = None
    for status in ALLOCATED_STATUSES:
        for task in job.tasks_in(status).values():
            if not task.node_name:
                continue
            within = topology.tiers_of if candidates is None else candidates
            candidates = {name for name in within
                          if task.node_name in topology.real_nodes.get(name, ())}
            if not candidates:
                return ""
    if not candidates:
        return ""
    return min(candidates, key=lambda name: (topology.tier(name), name))
