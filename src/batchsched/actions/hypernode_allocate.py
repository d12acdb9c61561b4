"""allocate for a job whose network topology confines it (Volcano's
``allocateForJob`` and ``allocateForSubJob``).

A hard topology (and a soft one, which the session turns into hard with the whole
cluster as its limit, :mod:`batchsched.framework.network_topology`) places the job
within one hypernode of a tier no higher than it allows. The gradient plugin
(network-topology-aware) lists the hypernodes to try, tier by tier, lowest first.
For each hypernode of a tier the job's tasks are placed, as a dry run, on that
hypernode's nodes only, then undone; among the hypernodes where the job ended
ready or pipelined, the one the hypernode-order plugins score highest wins and its
placements are made again for real. A higher tier is tried only when no hypernode
of a lower one worked.

The same search runs a second time within the hypernode tried for the job, for
the job's one sub-job (batchsched has no sub-group policies: Volcano's default
sub-job, every task): a job allowed up to tier 2 whose tasks all fit in one tier-1
hypernode lands there. The job keeps both answers as its allocated hypernodes
(the lowest common ancestor of the old and the new), which bound its later tasks.

Ties: Volcano picks among equal hypernode scores at random (Go map order and
``rand.Intn``); batchsched takes the first in gradient order (the plugin lists a
tier's hypernodes by name).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from batchsched.api.hypernode import CLUSTER_TOP
from batchsched.api.job import JobInfo
from batchsched.api.node import NodeInfo
from batchsched.api.priority_queue import PriorityQueue
from batchsched.api.queue import QueueInfo
from batchsched.api.task import TaskInfo
from batchsched.framework.statement import Operation, OperationKind, Statement

if TYPE_CHECKING:
    from batchsched.actions.allocate import _AllocateRun

__all__ = ["ALLOCATE", "EVICT", "allocate_in_hyper_nodes"]

#: The purposes a gradient is asked for (Volcano's ``PurposeAllocate``/``PurposeEvict``).
ALLOCATE = "allocate"
EVICT = "evict"


def allocate_in_hyper_nodes(
    run: _AllocateRun, queue: QueueInfo, job: JobInfo, tasks: PriorityQueue[TaskInfo]
) -> bool:
    """One round for a topology-confined job: True when it was committed."""
    ssn = run.ssn
    found = _search_for_job(run, queue, job, tasks)
    if found is None:
        return False
    stmt, for_job, for_sub_job = found
    if not ssn.job_ready(job):
        return False  # pipelined only: the placements stay for the session, unbound
    stmt.commit()
    topology = ssn.topology
    job.allocated_hyper_node = topology.lca(job.allocated_hyper_node, for_job)
    if for_sub_job:
        job.sub_job_allocated_hyper_node = topology.lca(job.sub_job_allocated_hyper_node,
                                                        for_sub_job)
    return True


def _search_for_job(
    run: _AllocateRun, queue: QueueInfo, job: JobInfo, tasks: PriorityQueue[TaskInfo]
) -> tuple[Statement, str, str] | None:
    ssn = run.ssn
    held = job.sub_job_allocated_hyper_node
    for gradient in ssn.hyper_node_gradient(job, CLUSTER_TOP, ALLOCATE):
        tried: dict[str, tuple[list[Operation], PriorityQueue[TaskInfo], float, str]] = {}
        for hyper_node in gradient:
            if hyper_node not in ssn.topology:
                continue
            job.job_fit_errors = ""
            job.nodes_fit_errors = {}
            left = tasks.clone()
            placed: list[Statement] = []
            score = 0.0
            decided = ""
            while left:
                outcome = _search_for_sub_job(run, queue, job, left, hyper_node)
                if outcome is None:
                    break
                stmt, sub_score, decided = outcome
                if not stmt.operations:
                    break
                placed.append(stmt)
                score += sub_score
                if ssn.job_ready(job):
                    break
            job.sub_job_allocated_hyper_node = held
            operations = [op for stmt in placed for op in stmt.operations]
            if operations and (ssn.job_ready(job) or ssn.job_pipelined(job)):
                tried[hyper_node] = (operations, left, score, decided)
            for stmt in reversed(placed):
                stmt.discard()
        if not tried:
            continue
        best = max(tried, key=lambda name: tried[name][2])  # the first of the highest
        operations, left, _, decided = tried[best]
        tasks.adopt(left)
        return _replay(run, operations), best, decided
    return None


def _search_for_sub_job(
    run: _AllocateRun, queue: QueueInfo, job: JobInfo, tasks: PriorityQueue[TaskInfo],
    within: str,
) -> tuple[Statement, float, str] | None:
    ssn = run.ssn
    topology = ssn.topology
    for gradient in ssn.hyper_node_gradient(job, within, ALLOCATE, sub_job=True):
        tried: dict[str, tuple[list[Operation], PriorityQueue[TaskInfo]]] = {}
        for hyper_node in gradient:
            nodes: list[NodeInfo] = topology.real_node_list.get(hyper_node, [])
            for task in job.tasks.values():
                job.nodes_fit_errors.pop(task.uid, None)
            left = tasks.clone()
            stmt = run.place_tasks(queue, job, left, nodes,
                                   hyper_node if hyper_node != CLUSTER_TOP else "")
            if stmt is not None and stmt.operations:
                tried[hyper_node] = (list(stmt.operations), left)
                stmt.discard()
        if not tried:
            continue
        scores = ssn.hyper_node_order(job, list(tried))
        best = max(tried, key=lambda name: scores[name])
        operations, left = tried[best]
        tasks.adopt(left)
        job.sub_job_allocated_hyper_node = topology.lca(job.sub_job_allocated_hyper_node, best)
        return _replay(run, operations), scores[best], job.sub_job_allocated_hyper_node
    return None


def _replay(run: _AllocateRun, operations: list[Operation]) -> Statement:
    """Volcano's ``RecoverOperations``: the dry run's placements, made again."""
    ssn = run.ssn
    stmt = Statement(ssn)
    for op in operations:
        node = ssn.nodes[op.node_name]
        if op.kind is OperationKind.PIPELINE:
            stmt.pipeline(op.task, node)
        else:
            stmt.allocate(op.task, node)
    return stmt
