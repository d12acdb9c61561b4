"""conformance: never evict system-critical pods (Volcano's ``plugins/conformance``).

A candidate is dropped from every victim list (preemptable, reclaimable and
gang-level unified evictable) when it runs in the ``kube-system`` namespace or
its pod's ``priorityClassName`` is ``system-cluster-critical`` or
``system-node-critical``. The rest are returned unchanged. An empty result ends
the tier with no decision: it does not veto, a later tier may still pick victims
(Volcano's rule). Unified evictable is what the ``gangpreempt`` and
``gangreclaim`` actions ask. It takes no arguments.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from batchsched.api.task import TaskInfo
from batchsched.framework.arguments import Arguments
from batchsched.framework.session import Session

__all__ = ["CRITICAL_PRIORITY_CLASSES", "SYSTEM_NAMESPACE", "ConformancePlugin", "evictable"]

#: Priority classes whose pods are never evicted.
CRITICAL_PRIORITY_CLASSES = frozenset({"system-cluster-critical", "system-node-critical"})
#: Namespace whose pods are never evicted.
SYSTEM_NAMESPACE = "kube-system"


class ConformancePlugin:
    """Volcano's conformance plugin: keeps critical system pods out of every victim list."""

    name = "conformance"

    def __init__(self, arguments: Arguments) -> None:
        self.arguments = arguments
        arguments.warn_unknown(self.name)

    def on_session_open(self, ssn: Session) -> None:
        def filter_victims(_actor: Any, candidates: list[TaskInfo]) -> list[TaskInfo]:
            return evictable(candidates)

        ssn.add_preemptable_fn(self.name, filter_victims)
        ssn.add_reclaimable_fn(self.name, filter_victims)
        ssn.add_unified_evictable_fn(self.name, filter_victims)

    def on_session_close(self, ssn: Session) -> None:
        pass


def evictable(candidates: Iterable[TaskInfo]) -> list[TaskInfo]:
    """The candidates that are neither in ``kube-system`` nor of a critical class."""
    return [
        task for task in candidates
        if task.namespace != SYSTEM_NAMESPACE
        and task.priority_class_name not in CRITICAL_PRIORITY_CLASSES
    ]
