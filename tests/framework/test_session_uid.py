"""Session ids are unique across processes, as Volcano's (a uuid per session).

A host that keeps pod group conditions (an API server) and restarts must never take an
old condition's transition id for its new session's: gang's phase rule reads an
``Unschedulable`` condition of the current session as current, and a running job
would be written Unknown.
"""

from __future__ import annotations

import subprocess
import sys

from batchsched import JobInfo, MemoryCache, NodeInfo, PodGroup, Resource, Scheduler, TaskInfo
from batchsched.api.types import PodGroupCondition, PodGroupConditionType, PodGroupPhase, TaskStatus

_FIRST_SESSION_UID = """
from batchsched import MemoryCache, Scheduler
print(Scheduler(MemoryCache()).run_once().uid)
"""


def test_two_processes_never_share_a_session_id() -> None:
    first, second = (subprocess.run([sys.executable, "-c", _FIRST_SESSION_UID], check=True,
                                    capture_output=True, text=True).stdout.strip()
                     for _ in range(2))
    assert first and second and first != second


def test_a_running_job_keeps_running_under_another_process_unschedulable_condition() -> None:
    # What a restarted host reads back: the job ran, its pod group still carries the
    # Unschedulable condition an earlier process's session wrote.
    uid = subprocess.run([sys.executable, "-c", _FIRST_SESSION_UID], check=True,
                         capture_output=True, text=True).stdout.strip()
    cache = MemoryCache()
    cache.add_node(NodeInfo.create("n1", Resource.from_mapping({"cpu": 4, "pods": 10})))
    job = JobInfo.from_podgroup(PodGroup("j", "ns", min_member=1,
                                         phase=PodGroupPhase.RUNNING))
    job.podgroup.conditions = [PodGroupCondition(
        PodGroupConditionType.UNSCHEDULABLE, "True", "NotEnoughResources", "old", uid)]
    job.add_task(TaskInfo.create("ns", "j-0", job.uid, Resource.from_mapping({"cpu": 2}),
                                 node_name="n1", status=TaskStatus.RUNNING))
    cache.add_job(job)
    Scheduler(cache).run_once()
    assert cache.jobs["ns/j"].podgroup.phase == PodGroupPhase.RUNNING
