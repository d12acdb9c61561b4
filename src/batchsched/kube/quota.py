"""What a ResourceQuota charges a pod: Kubernetes' pod evaluator (``PodUsageFunc``)."""

from __future__ import annotations

from collections.abc import Mapping
from fractions import Fraction
from typing import TypeVar

from batchsched.kube.names import is_qualified_name

__all__ = ["REQUESTS_PREFIX", "is_extended_resource", "pod_quota_usage"]

REQUESTS_PREFIX = "requests."
#: The resources a quota charges under their own name and as ``requests.`` names.
_CHARGED_BOTH_WAYS = ("cpu", "memory", "ephemeral-storage")

Amount = TypeVar("Amount", float, Fraction)


def is_extended_resource(name: str) -> bool:
    """Kubernetes' ``IsExtendedResourceName``: a prefixed name outside
    ``kubernetes.io/`` that stays a qualified name as a quota's ``requests.`` name.

    >>> is_extended_resource("nvidia.com/gpu"), is_extended_resource("cpu")
    (True, False)
    """
    return ("/" in name and "kubernetes.io/" not in name
            and not name.startswith(REQUESTS_PREFIX)
            and is_qualified_name(REQUESTS_PREFIX + name))


def pod_quota_usage(requests: Mapping[str, Amount], limits: Mapping[str, Amount], *,
                    pods: Amount, counted: bool = True) -> dict[str, Amount]:
    """The usage the pod evaluator charges ``pods`` pods of these summed ``requests``
    and ``limits``: the object count ``count/pods``; unless the pods are not
    ``counted`` (ended), ``pods``, cpu, memory, ephemeral storage and ``hugepages-*``
    under their names and as ``requests.`` names, extended resources as ``requests.``
    names, and each limit as a ``limits.`` name."""
    usage: dict[str, Amount] = {"count/pods": pods}
    if not counted:
        return usage
    usage["pods"] = pods
    for name, amount in requests.items():
        if name in _CHARGED_BOTH_WAYS or name.startswith("hugepages-"):
            usage[name] = usage[REQUESTS_PREFIX + name] = amount
        elif is_extended_resource(name):
            usage[REQUESTS_PREFIX + name] = amount
    for name, amount in limits.items():
        usage[f"limits.{name}"] = amount
    return usage
