"""Which resource names Volcano counts.

Volcano builds every resource list it reads (node allocatable, pod requests, a pod
group's ``minResources``, queue quotas) with ``NewResource``: cpu, memory, pods and
ephemeral storage, and the names Kubernetes calls scalar (extended resources such as
``nvidia.com/gpu``, ``hugepages-*``, ``attachable-volumes-*``, names under
``kubernetes.io/``); a quota's object count (``count/pods``) and any other name
(``requests.cpu``, ``limits.memory``) are left out. A pod group's ``minResources``
written by Volcano's controllers holds such quota names too; only the resourcequota
plugin reads them, from the list as written.
"""

from __future__ import annotations

import functools

from batchsched.kube.names import is_qualified_name
from batchsched.kube.quota import is_extended_resource

__all__ = ["counted_by_volcano", "is_qualified_name", "is_scalar_resource"]

@functools.lru_cache(maxsize=4096)
def counted_by_volcano(name: str) -> bool:
    """Whether Volcano's ``NewResource`` keeps the resource ``name``.

    >>> [counted_by_volcano(n) for n in ("cpu", "ephemeral-storage", "nvidia.com/gpu",
    ...                                  "count/pods", "requests.cpu", "a/b/c")]
    [True, True, True, False, False, False]
    """
    if name in ("cpu", "memory", "pods", "ephemeral-storage"):
        return True
    if name.startswith("count/"):
        return False  # a quota's object count
    if name.startswith(("hugepages-", "attachable-volumes-")) or "kubernetes.io/" in name:
        return True
    return is_extended_resource(name)


def is_scalar_resource(name: str) -> bool:
    """Kubernetes' ``IsScalarResourceName``: an extended resource, ``hugepages-*``,
    ``attachable-volumes-*`` or a name under ``kubernetes.io/``; not cpu, memory,
    pods or ephemeral storage.

    >>> [is_scalar_resource(n) for n in ("nvidia.com/gpu", "hugepages-2Mi", "cpu", "pods")]
    [True, True, False, False]
    """
    return name not in ("cpu", "memory", "pods", "ephemeral-storage") and counted_by_volcano(name)
