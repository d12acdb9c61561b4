"""Why a task does not fit a node, and the summaries Volcano prints for it.

>>> errs = FitErrors()
>>> for n in ("n1", "n2"):
...     errs.set_node_error(n, FitError.of("c1", "p1", n, "Insufficient cpu"))
>>> errs.set_node_error("n3", FitError.of("c1", "p1", "n3", "node(s) pod number exceeded"))
>>> str(errs)
'0/3 nodes are unavailable: 1 node(s) pod number exceeded, 2 Insufficient cpu.'
"""

from __future__ import annotations

import attrs

from batchsched.api.types import FitStatusCode

__all__ = [
    "ALL_NODES_UNAVAILABLE",
    "NODE_POD_NUMBER_EXCEEDED",
    "FitError",
    "FitErrors",
    "FitStatus",
    "insufficient_resource_reason",
]

NODE_POD_NUMBER_EXCEEDED = "node(s) pod number exceeded"
#: Volcano's ``AllNodeUnavailableMsg``: a pod's message when nothing more is known.
ALL_NODES_UNAVAILABLE = "all nodes are unavailable"
NODE_RESOURCE_FIT_FAILED = "node(s) resource fit failed"


@attrs.frozen
class FitStatus:
    """Why a node fails a task: ``reason`` is what events and messages say (Volcano's
    words); ``detail``, when a plugin gives one, is what ``batchsched explain`` adds
    (a reason Volcano words generically, say)."""

    code: FitStatusCode
    reason: str
    plugin: str = ""
    detail: str = ""

    @property
    def explained(self) -> str:
        """The reason, with its detail when there is one."""
        return f"{self.reason} ({self.detail})" if self.detail else self.reason


class FitError(Exception):
    """A task does not fit one node; carries one or more statuses.

    Predicates return (or raise) a ``FitError``; the session collects them per
    node. A status of code ``UNSCHEDULABLE_AND_UNRESOLVABLE`` also rules the node
    out for preemption.
    """

    def __init__(
        self, task_namespace: str, task_name: str, node_name: str, statuses: list[FitStatus]
    ) -> None:
        self.task_namespace = task_namespace
        self.task_name = task_name
        self.node_name = node_name
        self.statuses = statuses
        super().__init__(str(self))

    @classmethod
    def of(
        cls,
        task_namespace: str,
        task_name: str,
        node_name: str,
        *reasons: str,
        code: FitStatusCode = FitStatusCode.ERROR,
        plugin: str = "",
        detail: str = "",
    ) -> FitError:
        return cls(task_namespace, task_name, node_name,
                   [FitStatus(code, r, plugin, detail) for r in reasons])

    @property
    def reasons(self) -> list[str]:
        return [s.reason for s in self.statuses]

    @property
    def unresolvable(self) -> bool:
        """Some status says preempting on this node cannot help."""
        return any(
            s.code == FitStatusCode.UNSCHEDULABLE_AND_UNRESOLVABLE for s in self.statuses
        )

    def __str__(self) -> str:
        return (
            f"task {self.task_namespace}/{self.task_name} on node {self.node_name} "
            f"fit failed: {', '.join(self.reasons)}"
        )


class FitErrors:
    """Per-node fit errors of one task, summarised as Volcano does."""

    def __init__(self) -> None:
        self.nodes: dict[str, FitError] = {}
        self.error = ""
        #: The hypernode the nodes were those of, when a job's network topology
        #: confined the search ("In hyperNode s0: 0/2 nodes are unavailable: ...").
        self.hyper_node = ""

    def set_error(self, message: str) -> None:
        self.error = message

    def set_node_error(self, node_name: str, err: FitError | Exception) -> None:
        if isinstance(err, FitError):
            err.node_name = node_name
            self.nodes[node_name] = err
        else:
            self.nodes[node_name] = FitError(
                "", "", node_name, [FitStatus(FitStatusCode.ERROR, str(err))]
            )

    def unresolvable_nodes(self) -> set[str]:
        return {name for name, err in self.nodes.items() if err.unresolvable}

    def __str__(self) -> str:
        head = self.error or f"0/{len(self.nodes)} nodes are unavailable"
        if not self.nodes:
            return head
        histogram: dict[str, int] = {}
        for err in self.nodes.values():
            for reason in err.reasons:
                histogram[reason] = histogram.get(reason, 0) + 1
        parts = sorted(f"{count} {reason}" for reason, count in histogram.items())
        message = f"{head}: {', '.join(parts)}."
        return f"In hyperNode {self.hyper_node}: {message}" if self.hyper_node else message

    def __bool__(self) -> bool:
        return bool(self.nodes) or bool(self.error)


def insufficient_resource_reason(resources: list[str]) -> str:
    """``"Insufficient cpu"`` for the first short dimension, as Volcano words it."""
    return f"Insufficient {resources[0]}" if resources else ""
