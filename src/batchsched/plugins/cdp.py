"""cdp: cooldown protection, a task that started recently is not evicted (Volcano's
``plugins/cdp``).

Elastic jobs grow and shrink: without protection a pod that has just started
can be preempted or reclaimed again at once, and a service never settles. A task
opts in with the label, else the annotation, ``volcano.sh/cooldown-time``, a Go
duration (``"600s"``, ``"10m"``). While such a task is Running and less than that
long has passed since it was scheduled, the plugin keeps it out of the victims it
passes on at the **preemptable** and **reclaimable** points; every other candidate
(no cooldown, an unreadable one, a task not Running, a task whose start is
unknown, or one whose cooldown is over) stays a victim. The plugin always
answers; an empty list ends its tier without a decision, and a later tier may still
name the task (as for any preemptable answer).

Protected means ``start + cooldown > now``, strictly: at exactly ``start +
cooldown`` the task may go. Volcano reads the start from the pod's
``PodScheduled`` condition (its last transition) and the wall clock; batchsched
reads the task's ``start_time`` (scenario ``startTime``; the simulator sets it
when a task starts) and the session clock ``ssn.now``. An unreadable cooldown is
logged once per value and ignored, as in Volcano.

No arguments.
"""

from __future__ import annotations

import logging

from batchsched.api.task import TaskInfo
from batchsched.api.types import TaskStatus
from batchsched.framework.arguments import Arguments, parse_duration, warned_once
from batchsched.framework.session import Session

__all__ = ["COOLDOWN_TIME", "CooldownProtectionPlugin", "cooldown_of"]

log = logging.getLogger("batchsched")

#: The label (or annotation) that gives a task its cooldown (Volcano's ``v1beta1.CooldownTime``).
COOLDOWN_TIME = "volcano.sh/cooldown-time"

_warned: set[str] = warned_once()


def cooldown_of(task: TaskInfo) -> float | None:
    """The task's cooldown in seconds (its label, else its annotation), None when it
    has none or it does not parse."""
    value = task.labels.get(COOLDOWN_TIME)
    if value is None:
        value = task.annotations.get(COOLDOWN_TIME)
        if value is None:
            return None
    try:
        return parse_duration(value)
    except ValueError:
        if value not in _warned:
            _warned.add(value)
            log.warning("plugin 'cdp': invalid time duration %s=%s on task %s",
                        COOLDOWN_TIME, value, task.uid)
        return None


class CooldownProtectionPlugin:
    """Volcano's cdp plugin."""

    name = "cdp"

    def __init__(self, arguments: Arguments) -> None:
        self.arguments = arguments
        arguments.warn_unknown(self.name)

    def on_session_open(self, ssn: Session) -> None:
        now = ssn.now

        def victims(preemptor: TaskInfo, candidates: list[TaskInfo]) -> list[TaskInfo]:
            kept = []
            for task in candidates:
                ends = _cooldown_end(task)
                if ends is not None and ends > now:
                    # A victim once its cooldown ends, with no cluster event: the host
                    # is told when (a simulator opens a session then).
                    ssn.wake_up_at(self.name, ends)
                else:
                    kept.append(task)
            return kept

        ssn.add_preemptable_fn(self.name, victims)
        ssn.add_reclaimable_fn(self.name, victims)

    def on_session_close(self, ssn: Session) -> None:
        pass


def _cooldown_end(task: TaskInfo) -> float | None:
    """When the task's cooldown ends; None when it has none (not Running, no start
    time, no readable cooldown)."""
    cooldown = cooldown_of(task)
    if cooldown is None or task.status != TaskStatus.RUNNING or task.start_time is None:
        return None
    return task.start_time + cooldown
