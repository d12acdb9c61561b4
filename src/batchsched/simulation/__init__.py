"""Simulation over time: workloads replayed through real scheduling sessions.

>>> from batchsched.simulation import Simulator, swf_workload
>>> # timeline = Simulator(swf_workload("lublin_256.swf").window(1981, 1024), conf).run()
>>> # timeline.metrics()["averageBoundedSlowdown"]
"""

from batchsched.simulation.engine import Simulator, simulate
from batchsched.simulation.swf import swf_workload
from batchsched.simulation.timeline import JobRecord, Timeline, bounded_slowdown, jain
from batchsched.simulation.workload import (
    RESTART_GANG,
    RESTART_TASK,
    Skipped,
    Workload,
    WorkloadJob,
)

__all__ = [
    "RESTART_GANG",
    "RESTART_TASK",
    "JobRecord",
    "Simulator",
    "Skipped",
    "Timeline",
    "Workload",
    "WorkloadJob",
    "bounded_slowdown",
    "jain",
    "simulate",
    "swf_workload",
]
