"""Kubernetes semantics that are not scheduling policy, usable on their own.

==============================  ==========================================================
module                          what it answers, as Kubernetes does
==============================  ==========================================================
:mod:`batchsched.kube.quantity`  resource quantities (``"500m"``, ``"1Gi"``), exactly
:mod:`batchsched.kube.affinity`  label selectors, node selectors, node affinity and
                                 inter-pod affinity terms (parsed and checked as the API
                                 server does)
:mod:`batchsched.kube.taints`    taints, tolerations and which taints a pod tolerates
:mod:`batchsched.kube.pod_view`  a session's tasks and nodes as kube-scheduler's filter
                                 and score plugins see them (pods, host ports, pod
                                 affinity counts)
==============================  ==========================================================

The first three depend on nothing else in batchsched (the data model builds on
them); :mod:`~batchsched.kube.pod_view` reads the data model and is imported on
first use of its names here.

>>> from batchsched.kube import milli_value, Taint, Toleration
>>> milli_value("1.5"), Toleration(operator="Exists").tolerates(Taint("dedicated"))
(1500, True)
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from batchsched.kube.affinity import (
    Affinity,
    AffinityError,
    LabelSelector,
    NodeAffinity,
    node_selector_matches,
    parse_affinity,
)
from batchsched.kube.quantity import milli_value, parse_quantity, value
from batchsched.kube.taints import (
    NO_EXECUTE,
    NO_SCHEDULE,
    PREFER_NO_SCHEDULE,
    Taint,
    Toleration,
    find_untolerated_taint,
    tolerations_tolerate,
)

if TYPE_CHECKING:
    from batchsched.kube.pod_view import KubeView, NodeView, PodInfo, pod_info

__all__ = [
    "NO_EXECUTE",
    "NO_SCHEDULE",
    "PREFER_NO_SCHEDULE",
    "Affinity",
    "AffinityError",
    "KubeView",
    "LabelSelector",
    "NodeAffinity",
    "NodeView",
    "PodInfo",
    "Taint",
    "Toleration",
    "find_untolerated_taint",
    "milli_value",
    "node_selector_matches",
    "parse_affinity",
    "parse_quantity",
    "pod_info",
    "tolerations_tolerate",
    "value",
]

_POD_VIEW_NAMES = frozenset({"KubeView", "NodeView", "PodInfo", "pod_info"})


def __getattr__(name: str) -> Any:
    # The pod view reads the data model, which itself builds on this package's
    # value modules: importing it here eagerly would make the two a circle.
    if name in _POD_VIEW_NAMES:
        from batchsched.kube import pod_view

        return getattr(pod_view, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
