"""Card models for the capacity-card plugin: what each node offers, and what queues, jobs
and tasks say about cards in their annotations.

**Nodes.** A node's whole-card model comes from its labels
``<vendor-domain>/<type>.product`` together with ``<vendor-domain>/<type>.memory``
(memory per card in MiB; ``<vendor-domain>/<type>.count``, the number of cards, is
read when present and only informs). Its allocatable resources then give the card
names the node offers and how many (milli-units, like every scalar):

* ``nvidia.com/gpu.shared`` (MPS) with the ``nvidia.com/gpu.replicas`` label:
  ``<model>/mps-<memory in GiB, rounded>g*1/<replicas>``, e.g. ``NVIDIA-H800/mps-80g*1/2``;
* ``nvidia.com/mig-<profile>`` (MIG, mixed strategy): ``<model>/mig-<profile>-mixed``,
  e.g. ``NVIDIA-H200/mig-1g.18gb-mixed``;
* the whole card: the allocatable resource named like the label's prefix
  (``nvidia.com/gpu`` for ``nvidia.com/gpu.product``), or else the first (by name)
  other resource under the vendor domain that is not a slice: ``<model>``.

Any other scalar resource (RDMA devices, ``pods``, ...) is not a card. A node
without a product label offers no card. When several product labels match, the
first by label name is used (a node carries one card model).

**Annotations.** ``volcano.sh/card.quota`` on a queue and ``volcano.sh/card.request``
on a job are JSON objects of card name to a whole, non-negative count;
``volcano.sh/card.name`` on a task is one card name or alternatives ``A|B`` in
preference order. Malformed text raises :class:`CardAnnotationError` naming what is
wrong; the plugin turns it into an event and lets the work wait.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable, Mapping
from typing import Any

import attrs

from batchsched.api.node import NodeInfo

__all__ = [
    "CARD_NAME_ANNOTATION",
    "CARD_QUOTA_ANNOTATION",
    "CARD_REQUEST_ANNOTATION",
    "MIG_RESOURCE_PREFIX",
    "MPS_REPLICAS_LABEL",
    "MPS_RESOURCE",
    "MULTI_CARD_SEPARATOR",
    "CardAnnotationError",
    "CardCatalog",
    "NodeCards",
    "detect_node_cards",
    "mig_card_name",
    "mps_card_name",
    "parse_card_counts",
    "parse_card_name",
]

CARD_QUOTA_ANNOTATION = "volcano.sh/card.quota"
CARD_REQUEST_ANNOTATION = "volcano.sh/card.request"
CARD_NAME_ANNOTATION = "volcano.sh/card.name"
MULTI_CARD_SEPARATOR = "|"

MPS_RESOURCE = "nvidia.com/gpu.shared"
MPS_REPLICAS_LABEL = "nvidia.com/gpu.replicas"
MIG_RESOURCE_PREFIX = "nvidia.com/mig-"

#: Card counts are held in milli-units, like every scalar resource.
MILLI = 1000.0
#: The largest count a quota or request may give (Go's int64).
_MOST_CARDS = 2**63 - 1

_PRODUCT_LABEL = re.compile(r"^((.+?)/(\w+))\.product$")
_MPS_NAME = re.compile(r"^.+/mps-\d+g\*1/\d+$")
_MIG_NAME = re.compile(r"^.+/mig-(.+)-mixed$")


class CardAnnotationError(ValueError):
    """A card annotation that cannot be read; the message says what is wrong."""


def mps_card_name(model: str, memory_mib: int, replicas: int) -> str:
    """``<model>/mps-<GiB>g*1/<replicas>``; the memory is rounded half up to whole GiB.

    >>> mps_card_name("NVIDIA-H800", 81559, 2)
    'NVIDIA-H800/mps-80g*1/2'
    """
    return f"{model}/mps-{math.floor(memory_mib / 1024 + 0.5)}g*1/{replicas}"


def mig_card_name(model: str, profile: str) -> str:
    """``<model>/mig-<profile>-mixed``.

    >>> mig_card_name("NVIDIA-H200", "1g.18gb")
    'NVIDIA-H200/mig-1g.18gb-mixed'
    """
    return f"{model}/mig-{profile}-mixed"


@attrs.frozen
class NodeCards:
    """The cards one node offers.

    ``model`` is the whole-card model of the node's labels; ``resources`` maps each
    card name the node offers (the model itself, its MIG and MPS slices) to the
    allocatable resource behind it, ``amounts`` to how many (milli-units).
    """

    node: str
    model: str
    vendor_domain: str
    memory_mib: int | None
    count: int | None
    resources: Mapping[str, str]
    amounts: Mapping[str, float]

    def offers(self, card: str) -> bool:
        return card in self.resources

    def card_for_resource(self, resource: str) -> str | None:
        """The card name the node offers through ``resource``, if any."""
        for card, name in self.resources.items():
            if name == resource:
                return card
        return None


def _int_label(labels: Mapping[str, str], key: str) -> int | None:
    raw = labels.get(key, "").strip()
    try:
        return int(raw)
    except ValueError:
        return None


def detect_node_cards(node: NodeInfo) -> NodeCards | None:
    """The cards ``node`` offers, or None when its labels name no card model."""
    labels = node.labels
    for key in sorted(labels):
        if key.startswith(MIG_RESOURCE_PREFIX):
            continue
        match = _PRODUCT_LABEL.match(key)
        if match is None or not labels[key].strip():
            continue
        label_prefix, vendor_domain = match[1], match[2]
        memory_key = f"{label_prefix}.memory"
        if memory_key not in labels:
            continue
        return _node_cards(node, labels[key].strip(), label_prefix, vendor_domain,
                           memory_mib=_int_label(labels, memory_key),
                           count=_int_label(labels, f"{label_prefix}.count"))
    return None


def _node_cards(node: NodeInfo, model: str, label_prefix: str, vendor_domain: str, *,
                memory_mib: int | None, count: int | None) -> NodeCards:
    resources: dict[str, str] = {}
    amounts: dict[str, float] = {}

    def offer(card: str, resource: str, amount: float) -> None:
        resources[card] = resource
        amounts[card] = amount

    whole: list[str] = []
    for resource in sorted(node.allocatable.scalars):
        amount = node.allocatable.scalars[resource]
        if amount <= 0:
            continue
        if resource == MPS_RESOURCE:
            replicas = _int_label(node.labels, MPS_REPLICAS_LABEL)
            if replicas is not None and replicas > 0 and memory_mib is not None:
                offer(mps_card_name(model, memory_mib, replicas), resource, amount)
        elif resource.startswith(MIG_RESOURCE_PREFIX):
            profile = resource[len(MIG_RESOURCE_PREFIX):]
            if profile:
                offer(mig_card_name(model, profile), resource, amount)
        elif resource.startswith(f"{vendor_domain}/"):
            whole.append(resource)
    if whole:
        resource = label_prefix if label_prefix in whole else whole[0]
        offer(model, resource, node.allocatable.scalars[resource])
    return NodeCards(node.name, model, vendor_domain, memory_mib, count, resources, amounts)


@attrs.define
class CardCatalog:
    """Every card the session's nodes offer.

    ``nodes`` maps a node name to its cards (nodes without a card model are absent);
    ``resource_of`` maps a card name to its resource name (the first node, in the
    order given, decides if nodes disagree); ``totals`` is the cluster's amount of
    each card (milli-units).
    """

    nodes: dict[str, NodeCards] = attrs.field(factory=dict)
    resource_of: dict[str, str] = attrs.field(factory=dict)
    totals: dict[str, float] = attrs.field(factory=dict)

    @classmethod
    def from_nodes(cls, nodes: Iterable[NodeInfo]) -> CardCatalog:
        catalog = cls()
        for node in nodes:
            cards = detect_node_cards(node)
            if cards is None:
                continue
            catalog.nodes[node.name] = cards
            for card, resource in cards.resources.items():
                catalog.resource_of.setdefault(card, resource)
                catalog.totals[card] = catalog.totals.get(card, 0.0) + cards.amounts[card]
        return catalog

    @property
    def card_resources(self) -> frozenset[str]:
        """The resource names that are cards on some node."""
        return frozenset(self.resource_of.values())

    def resource_for(self, card: str) -> str | None:
        """The resource a card uses: from the nodes, else from the MIG/MPS naming rule
        (so that slices on nodes that left keep their meaning); None when unknown."""
        known = self.resource_of.get(card)
        if known is not None:
            return known
        if _MPS_NAME.match(card):
            return MPS_RESOURCE
        mig = _MIG_NAME.match(card)
        if mig is not None:
            return f"{MIG_RESOURCE_PREFIX}{mig[1]}"
        return None


# -- annotations ----------------------------------------------------------------------------


def parse_card_name(text: str) -> tuple[str, ...]:
    """The card names of ``volcano.sh/card.name``, in preference order (duplicates
    dropped). Raises :class:`CardAnnotationError` for an empty alternative.

    >>> parse_card_name(" NVIDIA-A100 | NVIDIA-H100 ")
    ('NVIDIA-A100', 'NVIDIA-H100')
    """
    parts = [part.strip() for part in text.split(MULTI_CARD_SEPARATOR)]
    if any(not part for part in parts):
        raise CardAnnotationError(f"{text!r} has an empty card name")
    return tuple(dict.fromkeys(parts))


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise CardAnnotationError(f"card {key!r} is given twice")
        out[key] = value
    return out


def parse_card_counts(text: str, *, alternatives: bool) -> dict[str, float]:
    """Card name (or, with ``alternatives``, ``A|B``) to count in milli-units, from a JSON
    object such as ``{"NVIDIA-H200": 3}``. Blank text is an empty mapping.

    Raises :class:`CardAnnotationError` when the text is not a JSON object, a count is
    not a whole non-negative number, or a name is empty (or holds ``|`` when
    alternatives are not allowed). Names of alternatives are normalised (``A | B`` is
    ``A|B``).

    >>> parse_card_counts('{"NVIDIA-H200": 3}', alternatives=False)
    {'NVIDIA-H200': 3000.0}
    """
    if not text.strip():
        return {}
    try:
        raw = json.loads(text, object_pairs_hook=_no_duplicates)
    except CardAnnotationError:
        raise
    except ValueError as exc:
        raise CardAnnotationError(f"not valid JSON ({exc})") from None
    if not isinstance(raw, dict):
        raise CardAnnotationError(
            f"expected a JSON object of card name to count, got {type(raw).__name__}"
        )
    out: dict[str, float] = {}
    for name, count in raw.items():
        if alternatives:
            key = MULTI_CARD_SEPARATOR.join(parse_card_name(name))
        else:
            key = name.strip()
            if not key:
                raise CardAnnotationError("a card name is empty")
            if MULTI_CARD_SEPARATOR in key:
                raise CardAnnotationError(
                    f"card {name!r}: a quota names one card model, not alternatives"
                )
        if isinstance(count, bool) or not isinstance(count, (int, float)):
            raise CardAnnotationError(f"card {name!r}: count {count!r} is not a number")
        if isinstance(count, int) and count > _MOST_CARDS:
            # Past Go's int64 (and past a float: the count would not even compare).
            raise CardAnnotationError(f"card {name!r}: count {count} is out of range")
        if not math.isfinite(count) or count < 0 or count != int(count):
            raise CardAnnotationError(
                f"card {name!r}: count {count!r} is not a whole non-negative number"
            )
        if key in out:
            raise CardAnnotationError(f"card {key!r} is given twice")
        out[key] = float(int(count)) * MILLI
    return out
