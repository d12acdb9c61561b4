"""shuffle: evict the running tasks plugins name as victims (Volcano's ``actions/shuffle``).

The running tasks of every job are handed to the session's victim-tasks point
(``ssn.victim_tasks``: per tier the union of the enabled plugins' answers, the
first tier with any victim wins), and each victim is evicted with the reason
``shuffle``. This is how the victim choices of tdm (preemptable tasks on
revocable nodes outside their window) and pdb (tasks a disruption budget lets
go) take effect. An eviction the cache refuses is logged and the others go on,
as in Volcano. It takes no arguments.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from batchsched.actions.victims import commit_with_events
from batchsched.api.types import TaskStatus
from batchsched.framework.arguments import Arguments
from batchsched.framework.statement import Statement

if TYPE_CHECKING:
    from batchsched.framework.session import Session

__all__ = ["SHUFFLE_REASON", "ShuffleAction"]

log = logging.getLogger("batchsched")

#: The eviction reason Volcano's shuffle gives.
SHUFFLE_REASON = "shuffle"


class ShuffleAction:
    """Volcano's shuffle action (see the module docstring)."""

    name = "shuffle"

    def __init__(self, arguments: Arguments | None = None) -> None:
        self.arguments = arguments if arguments is not None else Arguments()
        self.arguments.warn_unknown(self.name, kind="action")

    def initialize(self) -> None:
        """Nothing to prepare."""

    def uninitialize(self) -> None:
        """Nothing to release."""

    def execute(self, ssn: Session) -> None:
        running = [task for job in ssn.jobs.values() for task in job.tasks.values()
                   if task.status == TaskStatus.RUNNING]
        victims = ssn.victim_tasks(running)
        seen: set[str] = set()
        for victim in victims:
            if victim.uid in seen or victim.status != TaskStatus.RUNNING:
                continue
            seen.add(victim.uid)
            evicted_before = ssn.evicted_count
            statement = Statement(ssn)
            statement.evict(victim, SHUFFLE_REASON)
            commit_with_events(ssn, statement)  # Volcano's ssn.Evict records both events
            if ssn.evicted_count == evicted_before:
                log.warning("shuffle: the eviction of task %s did not go through", victim.uid)
