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
import re

__all__ = ["counted_by_volcano", "is_qualified_name"]

_NAME = re.compile(r"[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?")
_DNS_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?")


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
    # An extended resource: a prefixed name that stays a qualified name as a quota's
    # "requests." name (Kubernetes' IsExtendedResourceName).
    return ("/" in name and not name.startswith("requests.")
            and is_qualified_name(f"requests.{name}"))


def is_qualified_name(text: str) -> bool:
    """Kubernetes' ``IsQualifiedName``: an optional DNS subdomain prefix and ``/``, then
    a name of at most 63 characters (alphanumerics, ``-``, ``_``, ``.``, beginning and
    ending alphanumeric).

    >>> is_qualified_name("example.com/gpu"), is_qualified_name("a/b/c")
    (True, False)
    """
    parts = text.split("/")
    if len(parts) > 2:
        return False
    if len(parts) == 2:
        prefix, name = parts
        if not prefix or len(prefix) > 253 or not all(
                _DNS_LABEL.fullmatch(label) for label in prefix.split(".")):
            return False
    else:
        name = parts[0]
    return 0 < len(name) <= 63 and _NAME.fullmatch(name) is not None
