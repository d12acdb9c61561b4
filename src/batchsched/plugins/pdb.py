"""pdb: evictions respect PodDisruptionBudgets (Volcano's ``plugins/pdb``).

For one list of candidates, each budget starts at its ``disruptionsAllowed``.
Candidates are taken in the order given; every budget of the candidate's
namespace whose (non-empty) selector matches the candidate's labels, and which
does not already list the pod (by pod name) among its disrupted pods, is charged
one disruption. The candidate stays a victim only if none of its budgets went
below zero. A pod without labels matches no budget and, as in Volcano, is never a
victim of this filter. The budgets are spent through
:class:`~batchsched.api.cluster.BudgetLedger`, the same ledger topology-aware
preemption uses, so both read a budget the same way.

The filter serves the **preemptable**, **reclaimable** and **victim tasks**
points (the ``shuffle`` action evicts the victim tasks). Budgets are fresh for
every call. It takes no arguments.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from batchsched.api.cluster import BudgetLedger, PodDisruptionBudget
from batchsched.api.task import TaskInfo
from batchsched.framework.arguments import Arguments
from batchsched.framework.session import Session

__all__ = ["PdbPlugin", "within_budgets"]


class PdbPlugin:
    """Volcano's pdb plugin."""

    name = "pdb"

    def __init__(self, arguments: Arguments) -> None:
        self.arguments = arguments
        arguments.warn_unknown(self.name)

    def on_session_open(self, ssn: Session) -> None:
        def victim_tasks(tasks: list[TaskInfo]) -> list[TaskInfo]:
            return within_budgets(ssn.pdbs, tasks)

        def filter_victims(_actor: Any, candidates: list[TaskInfo]) -> list[TaskInfo]:
            return within_budgets(ssn.pdbs, candidates)

        ssn.add_victim_tasks_fn(self.name, victim_tasks)
        ssn.add_reclaimable_fn(self.name, filter_victims)
        ssn.add_preemptable_fn(self.name, filter_victims)

    def on_session_close(self, ssn: Session) -> None:
        pass


def within_budgets(
    budgets: Sequence[PodDisruptionBudget], tasks: Iterable[TaskInfo]
) -> list[TaskInfo]:
    """The tasks that may be evicted together, in order, without breaking a budget.

    A rejected task still uses up one disruption of each budget it matches, as in
    Volcano; a task without labels is never kept.
    """
    ledger = BudgetLedger(budgets)
    return [task for task in tasks if task.labels and ledger.charge(task)]
