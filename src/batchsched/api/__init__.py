"""The data model: resources, tasks, jobs, queues, nodes and the cluster snapshot."""

from batchsched.api.cluster import (
    BudgetLedger,
    ClusterInfo,
    PodDisruptionBudget,
    PriorityClass,
    ResourceQuota,
)
from batchsched.api.fit import FitError, FitErrors, FitStatus
from batchsched.api.job import JobInfo, PodGroup
from batchsched.api.node import NodeInfo, NodeUsage
from batchsched.api.priority_queue import PriorityQueue
from batchsched.api.queue import NodeGroupAffinity, QueueInfo
from batchsched.api.resource import MIN_RESOURCE, DimensionDefault, Resource
from batchsched.api.task import Taint, TaskInfo, Toleration, TransactionContext
from batchsched.api.types import (
    FitStatusCode,
    NodePhase,
    PodGroupCondition,
    PodGroupConditionType,
    PodGroupPhase,
    QueueState,
    TaskStatus,
    Vote,
    allocated_status,
    completed_status,
    preemptable_status,
    scheduled_status,
)

__all__ = [
    "MIN_RESOURCE",
    "BudgetLedger",
    "ClusterInfo",
    "DimensionDefault",
    "FitError",
    "FitErrors",
    "FitStatus",
    "FitStatusCode",
    "JobInfo",
    "NodeGroupAffinity",
    "NodeInfo",
    "NodePhase",
    "NodeUsage",
    "PodDisruptionBudget",
    "PodGroup",
    "PodGroupCondition",
    "PodGroupConditionType",
    "PodGroupPhase",
    "PriorityClass",
    "PriorityQueue",
    "QueueInfo",
    "QueueState",
    "Resource",
    "ResourceQuota",
    "Taint",
    "TaskInfo",
    "TaskStatus",
    "Toleration",
    "TransactionContext",
    "Vote",
    "allocated_status",
    "completed_status",
    "preemptable_status",
    "scheduled_status",
]
