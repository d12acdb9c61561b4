"""What a session does with network topologies when it opens (Volcano's
``openSession``: ``adjustNetworkTopologySpec``, ``removeInvalidAllocatedHyperNode``
and ``recoverAllocatedHyperNode``).

Each job with a pod group ``networkTopology`` gets the session's reading of it in
``job.network_topology``: a ``highestTierName`` becomes the tier of the hypernodes
of that name (left unresolved when none has it: the job is then not hard), and a
soft topology becomes hard up to the tier of the cluster's virtual root, so that
soft jobs take the hard path with the whole cluster as their limit. A sub-job's
topology (:mod:`batchsched.api.sub_job`) is read the same way, a soft one up to the
job's tier (:func:`sub_job_session_topology`). The pod group itself is never changed.

A job's and each sub-job's allocated hypernode (where their placed tasks lie, kept
by allocate) is dropped when that hypernode is gone or no task of theirs is
allocated, and worked out again from the nodes their tasks run on when empty: the
lowest-tier hypernode holding them all (ties: by name); the job's is then the
lowest common ancestor of its sub-jobs'.
"""

from __future__ import annotations

from collections.abc import Iterable

from batchsched.api.hypernode import HARD, SOFT, NetworkTopology, Topology
from batchsched.api.job import JobInfo
from batchsched.api.sub_job import SubJobInfo, sub_jobs_of
from batchsched.api.types import ALLOCATED_STATUSES

__all__ = ["asks_network_topology", "contains_network_topology", "open_network_topologies",
           "session_topology_of", "sub_job_session_topology", "touches_topology"]


def asks_network_topology(job: JobInfo) -> bool:
    """The pod group, or one of its sub-group policies, names a network topology."""
    podgroup = job.podgroup
    return podgroup.network_topology is not None or any(
        policy.network_topology is not None for policy in podgroup.sub_group_policies)


def contains_network_topology(job: JobInfo) -> bool:
    """Volcano's ``ContainsNetworkTopology``: the pod group asks for a network topology,
    or one of its sub-jobs does (a sub-group policy that some task falls under)."""
    if job.podgroup.network_topology is not None:
        return True
    return asks_network_topology(job) and any(
        sub_job.policy_topology is not None for sub_job in sub_jobs_of(job).values())


def touches_topology(job: JobInfo) -> bool:
    """Whether a session without hypernodes must still open the job's topology: it
    has one (or a sub-group policy has), or holds a reading or hypernodes from before."""
    return bool(job.network_topology is not None or job.allocated_hyper_node
                or job.sub_job_hyper_nodes or asks_network_topology(job))


def _translated(spec: NetworkTopology, topology: Topology) -> NetworkTopology:
    if spec.highest_tier_allowed is None and spec.highest_tier_name:
        tier = topology.tier_names.get(spec.highest_tier_name)
        if tier is not None:
            return NetworkTopology(spec.mode, tier, "")
    return spec


def session_topology_of(spec: NetworkTopology, topology: Topology) -> NetworkTopology:
    """The pod group's topology as the session reads it."""
    spec = _translated(spec, topology)
    if spec.mode == SOFT:
        spec = NetworkTopology(HARD, topology.top_tier, "")
    return spec


def sub_job_session_topology(spec: NetworkTopology, job_spec: NetworkTopology | None,
                             topology: Topology) -> NetworkTopology:
    """A sub-job's topology as the session reads it: a soft one is hard up to the
    job's tier (the virtual root's when the job has none)."""
    spec = _translated(spec, topology)
    if spec.mode == SOFT:
        limit = job_spec.highest_tier_allowed if job_spec is not None else None
        spec = NetworkTopology(HARD, limit if limit is not None else topology.top_tier, "")
    return spec


def open_network_topologies(jobs: Iterable[JobInfo], topology: Topology, *,
                            ready: bool = True) -> None:
    """Set each job's session topology and, when the hypernodes are ``ready`` (they
    form a tree), check or recover its allocated hypernodes: a broken tree says
    nothing about where a job lies (Volcano's ``OpenSession`` skips both then)."""
    for job in jobs:
        spec = job.podgroup.network_topology
        job.network_topology = None if spec is None else session_topology_of(spec, topology)
        if not ready:
            continue
        has_topology = asks_network_topology(job)
        if not (job.allocated_hyper_node or job.sub_job_hyper_nodes or has_topology):
            continue
        sub_jobs = sub_jobs_of(job)
        if job.allocated_hyper_node and (job.allocated_hyper_node not in topology or not any(
                job.tasks_in(status) for status in ALLOCATED_STATUSES)):
            job.allocated_hyper_node = ""
        for uid in list(job.sub_job_hyper_nodes or ()):
            sub_job = sub_jobs.get(uid)
            held = job.sub_job_hyper_node(uid)
            if sub_job is None or held not in topology or not sub_job.allocated_task_num():
                job.set_sub_job_hyper_node(uid, "")
        if not has_topology:
            continue
        updated = False
        for sub_job in sub_jobs.values():
            if sub_job.policy_topology is None or job.sub_job_hyper_node(sub_job.uid):
                continue
            recovered = _lowest_holding(sub_job, topology)
            if recovered:
                job.set_sub_job_hyper_node(sub_job.uid, recovered)
                updated = True
        if not job.allocated_hyper_node or updated:
            common = ""
            for sub_job in sub_jobs.values():
                held = job.sub_job_hyper_node(sub_job.uid)
                if held:
                    common = topology.lca(common, held)
                    if not common:
                        break
            job.allocated_hyper_node = common


def _lowest_holding(sub_job: SubJobInfo, topology: Topology) -> str:
    candidates: set[str] | None = None
    for task in sub_job.tasks.values():
        if task.status not in ALLOCATED_STATUSES or not task.node_name:
            continue
        within = topology.tiers_of if candidates is None else candidates
        candidates = {name for name in within
                      if task.node_name in topology.real_nodes.get(name, ())}
        if not candidates:
            return ""
    if not candidates:
        return ""
    return min(candidates, key=lambda name: (topology.tier(name), name))
