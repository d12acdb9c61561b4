"""Sub-jobs: a job's tasks split into gangs of their own by the pod group's
``subGroupPolicy`` (Volcano's ``SubJobInfo``, ``pkg/scheduler/api/sub_job_info.go``).

A policy takes the tasks its label selector matches (all, without one) and splits
them by the values of its ``matchLabelKeys``: tasks with the same values form one
sub-job, a gang of ``subGroupSize`` tasks, optionally confined to a network
topology of its own; the job is ready once ``minSubGroups`` sub-jobs of each policy
are. A task joins the first policy (in order) for which it has a non-empty value
of every key (a policy without keys takes none, as in Volcano); the others form
the job's default sub-job (a gang of 1 when the pod group has policies, of
``minMember`` when it has none, with the job's network topology).

:func:`sub_jobs_of` builds them from a job's tasks; a sub-job holds its tasks
themselves, so its counts follow their statuses.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import attrs

from batchsched.api.hypernode import NetworkTopology
from batchsched.api.resource import Resource
from batchsched.api.task import TaskInfo
from batchsched.api.types import ALLOCATED_STATUSES, TaskStatus
from batchsched.kube.affinity import LabelSelector
from batchsched.kube.go_strconv import parse_int

if TYPE_CHECKING:
    from batchsched.api.job import JobInfo

__all__ = ["SubGroupPolicy", "SubJobInfo", "check_sub_jobs", "gang_ready", "min_sub_jobs",
           "sub_job_of", "sub_job_uid", "sub_jobs_of"]

_READY = ALLOCATED_STATUSES | {TaskStatus.SUCCEEDED}
_MAX_ID_BYTES = 128
# Kubernetes' rand.SafeEncodeString alphabet.
_SAFE = "bcdfghjklmnpqrstvwxz2456789"


@attrs.frozen
class SubGroupPolicy:
    """One ``spec.subGroupPolicy`` entry of a pod group."""

    name: str
    network_topology: NetworkTopology | None = None
    sub_group_size: int = 1
    min_sub_groups: int = 0
    label_selector: LabelSelector | None = None
    match_label_keys: tuple[str, ...] = ()
    #: Why the written selector is no selector Kubernetes can read ("" when it is): the
    #: policy then takes no task, as Volcano's.
    selector_error: str = ""

    def match_values(self, labels: Mapping[str, str]) -> list[str] | None:
        """Volcano's ``getSubJobMatchValues``: the values of the keys (None when the
        selector does not match, cannot be read, or a key is missing or empty; []
        without keys)."""
        if self.selector_error or (self.label_selector is not None
                                   and not self.label_selector.matches(labels)):
            return None
        values = []
        for key in self.match_label_keys:
            value = labels.get(key)
            if not value:
                return None
            values.append(value)
        return values


def sub_job_uid(job_uid: str, policy: str, values: list[str]) -> str:
    """``<job>/<policy>-<values joined by ->``; joined values over 128 bytes are
    replaced by their FNV-1a 32-bit hash, safely encoded, as Volcano does."""
    joined = "-".join(values)
    raw = joined.encode()
    if len(raw) > _MAX_ID_BYTES:
        digest = 2166136261
        for byte in raw:
            digest = ((digest ^ byte) * 16777619) % 2**32
        joined = "".join(_SAFE[ord(c) % len(_SAFE)] for c in str(digest))
    return f"{job_uid}/{policy}-{joined}"


def _match_index(value: str) -> int:
    """Go's ``strconv.Atoi``: a signed decimal that fits 64 bits, else 0."""
    number, ok = parse_int(value, 64)
    return number if ok else 0


@attrs.define(eq=False)
class SubJobInfo:
    """One sub-job: its gang size, order index, topology as the policy gives it, and
    its tasks (the job's own objects)."""

    uid: str
    gid: str
    job: str
    min_available: int
    match_index: int
    #: The policy's network topology (the job's, for the default sub-job).
    policy_topology: NetworkTopology | None
    tasks: dict[str, TaskInfo]
    #: True for the job's default sub-job (tasks no policy took).
    default: bool = False

    @property
    def priority(self) -> int:
        """The highest task priority, at least 0 (Volcano's ``SubJobInfo.Priority``)."""
        return max(0, max((task.priority for task in self.tasks.values()), default=0))

    def tasks_in(self, status: TaskStatus) -> list[TaskInfo]:
        return [task for task in self.tasks.values() if task.status is status]

    def ready_task_num(self) -> int:
        return sum(1 for task in self.tasks.values() if task.status in _READY)

    def waiting_task_num(self) -> int:
        return sum(1 for task in self.tasks.values() if task.status is TaskStatus.PIPELINED)

    def pending_best_effort_task_num(self) -> int:
        return sum(1 for task in self.tasks.values()
                   if task.status is TaskStatus.PENDING and task.best_effort)

    def allocated_task_num(self) -> int:
        return sum(1 for task in self.tasks.values() if task.status in ALLOCATED_STATUSES)

    def is_ready(self) -> bool:
        return self.ready_task_num() + self.pending_best_effort_task_num() >= self.min_available

    def is_pipelined(self) -> bool:
        return (self.waiting_task_num() + self.ready_task_num()
                + self.pending_best_effort_task_num()) >= self.min_available

    def min_resources(self) -> Resource:
        """What its pending tasks need (Volcano's ``GetMinResources``)."""
        total = Resource()
        for task in self.tasks.values():
            if task.status is TaskStatus.PENDING:
                total.add(task.init_resreq)
        return total


_SUB_JOBS_KEY = "sub-jobs"
_DEFAULT_KEY = "sub-jobs.default"


def sub_jobs_of(job: JobInfo) -> dict[str, SubJobInfo]:
    """The job's sub-jobs by uid, in the order their first task comes.

    Without policies there is one, the default, holding every task (``job.tasks``
    itself). Which sub-job a task joins depends on its labels only, so the split is
    kept with the job (its ``memo``) until a task is added or removed.
    """
    policies = job.podgroup.sub_group_policies
    if not policies:
        kept: Any = job.memo.get(_DEFAULT_KEY)
        if kept is not None and kept[0] is job.tasks:
            return kept[1]  # type: ignore[no-any-return]
        only = SubJobInfo(job.uid, job.uid, job.uid, job.min_available, 0,
                          job.podgroup.network_topology, job.tasks, default=True)
        split = {job.uid: only}
        job.memo[_DEFAULT_KEY] = (job.tasks, split)
        return split
    kept = job.memo.get(_SUB_JOBS_KEY)
    if kept is not None and kept[2] == job.mutations:
        return kept[1]  # type: ignore[no-any-return]
    members = frozenset(job.tasks)
    if kept is not None and kept[0] == members:
        # The same tasks; a status change may have put a new object under an id.
        for sub_job in kept[1].values():
            for uid in sub_job.tasks:
                sub_job.tasks[uid] = job.tasks[uid]
        job.memo[_SUB_JOBS_KEY] = (members, kept[1], job.mutations)
        return kept[1]  # type: ignore[no-any-return]
    split = {}
    for task in job.tasks.values():
        for policy in policies:
            values = policy.match_values(task.labels)
            if values:
                uid = sub_job_uid(job.uid, policy.name, values)
                sub_job = split.get(uid)
                if sub_job is None:
                    sub_job = split[uid] = SubJobInfo(
                        uid, f"{job.uid}/{policy.name}", job.uid, policy.sub_group_size,
                        _match_index(values[0]), policy.network_topology, {})
                break
        else:
            sub_job = split.get(job.uid)
            if sub_job is None:
                sub_job = split[job.uid] = SubJobInfo(
                    job.uid, job.uid, job.uid, 1, 0, job.podgroup.network_topology, {},
                    default=True)
        sub_job.tasks[task.uid] = task
    job.memo[_SUB_JOBS_KEY] = (members, split, job.mutations)
    return split


def sub_job_of(job: JobInfo, task_uid: str) -> SubJobInfo | None:
    """The sub-job holding the task (None: not a task of the job)."""
    return next((s for s in sub_jobs_of(job).values() if task_uid in s.tasks), None)


def min_sub_jobs(job: JobInfo) -> dict[str, int]:
    """``MinSubJobs``: per policy group id, how many of its sub-jobs the job needs."""
    out: dict[str, int] = {}
    for policy in job.podgroup.sub_group_policies:
        out[f"{job.uid}/{policy.name}"] = policy.min_sub_groups
    return out


def check_sub_jobs(job: JobInfo, condition: str) -> bool:
    """Volcano's ``CheckSubJobValid`` (``condition="valid"``: sub-jobs present),
    ``CheckSubJobReady`` (``"ready"``) and ``CheckSubJobPipelined`` (``"pipelined"``):
    each policy has at least ``minSubGroups`` such sub-jobs. True without policies."""
    if not job.podgroup.sub_group_policies:
        return True
    counts: dict[str, int] = {}
    for sub_job in sub_jobs_of(job).values():
        if (condition == "valid" or (condition == "ready" and sub_job.is_ready())
                or (condition == "pipelined" and sub_job.is_pipelined())):
            counts[sub_job.gid] = counts.get(sub_job.gid, 0) + 1
    for gid, minimum in min_sub_jobs(job).items():
        if condition != "valid" and minimum == 0:
            continue
        if counts.get(gid, 0) < minimum:
            return False
    return True


def gang_ready(job: JobInfo) -> bool:
    """The gang's readiness (the gang plugin's job-ready answer): enough tasks hold
    resources overall (``minMember``), per role (``minTaskMember``) and per sub-group
    policy (``minSubGroups``)."""
    return job.check_task_ready() and check_sub_jobs(job, "ready") and job.is_ready()
