"""Kubernetes' rules for names and label values (apimachinery's validation)."""

from __future__ import annotations

import re

__all__ = ["is_label_value", "is_qualified_name"]

_NAME = re.compile(r"[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?")
_DNS_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?")
_LABEL_VALUE = re.compile(r"(?:(?:[A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?")


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


def is_label_value(text: str) -> bool:
    """Kubernetes' ``IsValidLabelValue``: empty, or at most 63 characters
    (alphanumerics, ``-``, ``_``, ``.``, beginning and ending alphanumeric).

    >>> is_label_value(""), is_label_value("v1.2"), is_label_value("-5"), is_label_value("a b")
    (True, True, False, False)
    """
    return len(text) <= 63 and _LABEL_VALUE.fullmatch(text) is not None
