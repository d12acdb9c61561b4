"""Node oversubscription: what Volcano's cache adds to a node's resources.

A node annotated ``volcano.sh/oversubscription-cpu`` (milli-cpu) or
``volcano.sh/oversubscription-memory`` (bytes) offers that much more to Volcano's
scheduler: ``NewNodeInfo`` adds it to the node's allocatable, capacity and idle.
The Kubernetes node object itself (``node.Status``) keeps its own figures, and
what reads those (the rescheduling plugin's utilisation) sees no oversubscription:
:func:`without_oversubscription` gives them back.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

from batchsched.api.resource import Resource
from batchsched.kube.go_strconv import parse_float

__all__ = ["OVERSUBSCRIPTION_CPU", "OVERSUBSCRIPTION_MEMORY", "node_oversubscription",
           "without_oversubscription"]

OVERSUBSCRIPTION_CPU = "volcano.sh/oversubscription-cpu"
OVERSUBSCRIPTION_MEMORY = "volcano.sh/oversubscription-memory"


def node_oversubscription(annotations: Mapping[str, str]
                          ) -> tuple[Resource | None, list[tuple[str, str]]]:
    """What the annotations add (Go's ``ParseFloat``: a value that is no number adds
    0, a negative one takes away, as in Volcano), or None when they name none; and
    the ``(key, value)`` of each infinite or NaN amount, which adds nothing (Volcano
    would make the node's figures infinite or NaN)."""
    extra = Resource()
    found = False
    ignored: list[tuple[str, str]] = []
    for key, dimension in ((OVERSUBSCRIPTION_CPU, "milli_cpu"),
                           (OVERSUBSCRIPTION_MEMORY, "memory")):
        text = annotations.get(key)
        if text is None:
            continue
        amount, _ = parse_float(text)
        if not math.isfinite(amount):
            ignored.append((key, text))
            continue
        setattr(extra, dimension, amount)
        found = True
    return (extra if found else None), ignored


def without_oversubscription(figure: Resource, annotations: Mapping[str, str]) -> Resource:
    """A node's allocatable or capacity as its Kubernetes object states it: ``figure``
    less what the oversubscription annotations added (``figure`` itself without
    them)."""
    extra, _ = node_oversubscription(annotations)
    if extra is None:
        return figure
    return figure.clone().sub_unchecked(extra)
