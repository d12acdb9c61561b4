"""batchsched: Volcano's batch-scheduling brain, without Kubernetes.

The flow::

    cache.snapshot() -> Session.open(...) -> actions (allocate, preempt, ...)
    decide through Statement -> Session.close() -> binds/evictions to the cache

>>> import batchsched
>>> batchsched.TaskStatus.PENDING
<TaskStatus.PENDING: 1>
"""

from batchsched import _moved, plugin
from batchsched._version import __version__
from batchsched.api import (
    ClusterInfo,
    JobInfo,
    NodeInfo,
    PodGroup,
    PodGroupPhase,
    QueueInfo,
    Resource,
    TaskInfo,
    TaskStatus,
)
from batchsched.cache import Cache, MemoryCache
from batchsched.conf import (
    SchedulerConfiguration,
    default_configuration,
    load_configuration,
)
from batchsched.errors import (
    BatchSchedError,
    CacheError,
    ConfigError,
    DryRunError,
    PluginError,
    QuantityError,
    ScenarioError,
    SchedulingError,
    WorkloadError,
)
from batchsched.framework import Arguments, EventHandler, Session, Statement, ValidateResult
from batchsched.plugin import ActionSpec, PluginSpec, Vote, hookimpl
from batchsched.scheduler import LoopStatus, Scheduler, run_actions

_moved.install()

__all__ = [
    "ActionSpec",
    "Arguments",
    "BatchSchedError",
    "Cache",
    "CacheError",
    "ClusterInfo",
    "ConfigError",
    "DryRunError",
    "EventHandler",
    "JobInfo",
    "LoopStatus",
    "MemoryCache",
    "NodeInfo",
    "PluginError",
    "PluginSpec",
    "PodGroup",
    "PodGroupPhase",
    "QuantityError",
    "QueueInfo",
    "Resource",
    "ScenarioError",
    "Scheduler",
    "SchedulerConfiguration",
    "SchedulingError",
    "Session",
    "Statement",
    "TaskInfo",
    "TaskStatus",
    "ValidateResult",
    "Vote",
    "WorkloadError",
    "__version__",
    "default_configuration",
    "hookimpl",
    "load_configuration",
    "plugin",
    "run_actions",
]
