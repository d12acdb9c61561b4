"""Kubernetes taints and tolerations, and the rules that match them.

A node's ``NoSchedule`` and ``NoExecute`` taints repel every pod without a
matching toleration (kube-scheduler's TaintToleration filter);
``PreferNoSchedule`` taints only lower the node's score (its TaintToleration
score).

>>> taint = Taint("dedicated", "gpu", NO_SCHEDULE)
>>> Toleration("dedicated", "Equal", "gpu").tolerates(taint), Toleration("other").tolerates(taint)
(True, False)
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import attrs

__all__ = [
    "NO_EXECUTE",
    "NO_SCHEDULE",
    "PREFER_NO_SCHEDULE",
    "UNSCHEDULABLE_TAINT_KEY",
    "Taint",
    "Toleration",
    "count_intolerable_taints",
    "find_untolerated_taint",
    "tolerations_tolerate",
]

NO_SCHEDULE = "NoSchedule"
NO_EXECUTE = "NoExecute"
PREFER_NO_SCHEDULE = "PreferNoSchedule"
#: The taint an unschedulable (cordoned) node is treated as carrying.
UNSCHEDULABLE_TAINT_KEY = "node.kubernetes.io/unschedulable"


@attrs.frozen
class Taint:
    """A Kubernetes node taint; ``effect`` is NoSchedule, PreferNoSchedule or NoExecute."""

    key: str
    value: str = ""
    effect: str = "NoSchedule"

    def __str__(self) -> str:
        return f"{{{self.key}: {self.value}}}"


@attrs.frozen
class Toleration:
    """A Kubernetes toleration; ``operator`` is ``Equal`` or ``Exists``."""

    key: str = ""
    operator: str = "Equal"
    value: str = ""
    effect: str = ""

    def tolerates(self, taint: Taint) -> bool:
        """Kubernetes' ``Toleration.ToleratesTaint``."""
        if self.effect and self.effect != taint.effect:
            return False
        if self.key and self.key != taint.key:
            return False
        if self.operator == "Exists":
            return True
        if self.operator in ("Equal", ""):
            return self.value == taint.value
        return False


def tolerations_tolerate(tolerations: Iterable[Toleration], taint: Taint) -> bool:
    """Some toleration tolerates the taint."""
    return any(t.tolerates(taint) for t in tolerations)


def find_untolerated_taint(
    taints: Sequence[Taint], tolerations: Sequence[Toleration], effects: frozenset[str]
) -> Taint | None:
    """The first taint (in node order) with one of ``effects`` that no toleration tolerates."""
    for taint in taints:
        if taint.effect in effects and not tolerations_tolerate(tolerations, taint):
            return taint
    return None


def count_intolerable_taints(
    taints: Sequence[Taint], tolerations: Sequence[Toleration]
) -> int:
    """How many ``PreferNoSchedule`` taints the tolerations do not tolerate.

    Only tolerations with no effect or ``PreferNoSchedule`` are considered, as in
    kube-scheduler's TaintToleration score.
    """
    usable = [t for t in tolerations if t.effect in ("", PREFER_NO_SCHEDULE)]
    return sum(
        1 for taint in taints
        if taint.effect == PREFER_NO_SCHEDULE and not tolerations_tolerate(usable, taint)
    )
