"""Kubernetes pod topology spread constraints (``spec.topologySpreadConstraints``).

kube-scheduler's PodTopologySpread plugin, as pure functions over node labels,
taints and the pods placed on each node:

* **parsing** (:func:`parse_topology_spread`): the constraint list as the API
  server accepts it (``maxSkew`` >= 1, ``topologyKey``, ``whenUnsatisfiable``
  ``DoNotSchedule`` or ``ScheduleAnyway``, ``labelSelector``, optional
  ``minDomains`` (DoNotSchedule only), ``nodeAffinityPolicy`` (default Honor),
  ``nodeTaintsPolicy`` (default Ignore), ``matchLabelKeys``, whose values are
  taken from the owner's labels into the selector); a bad document raises
  :class:`TopologySpreadError` naming the field.
* **counting** (:func:`domain_counts`): per constraint, the pods in the incoming
  pod's namespace its selector matches, summed per topology domain over the
  *eligible* nodes: nodes carrying every topology key of the constraints
  considered and, per constraint, passing its inclusion policies (Honor node
  affinity: the pod's ``nodeSelector`` and required node affinity match the node;
  Honor taints: the pod tolerates the node's NoSchedule/NoExecute taints).
* **filter** (:func:`spread_filter`, DoNotSchedule constraints): a node without a
  topology key fails unresolvably; otherwise placing the pod in domain ``d`` must
  keep ``count(d) + self - min <= maxSkew``, ``self`` being 1 when the pod's own
  labels match the selector, ``min`` the smallest count over the eligible domains
  (0 when there are fewer than ``minDomains`` of them; no eligible domain at all:
  no limit).
* **score** (:func:`spread_scores`, ScheduleAnyway constraints): over the
  candidate nodes, a candidate lacking a topology key is ignored (scores 0);
  every other gets ``round(sum(count(d) * log(domains + 2) + maxSkew - 1))``,
  ``domains`` being the number of distinct domains among the candidates (for
  ``kubernetes.io/hostname``: the number of candidates, the count being the
  node's own pods), counts taken over all eligible nodes of those domains; then
  ``100 * (max + min - score) // max`` (100 everywhere when max is 0), so the
  emptier domains score higher.

Pods are anything with ``namespace`` and ``labels``; the caller leaves out
terminating pods and the incoming pod itself.

>>> (c,) = parse_topology_spread([{"maxSkew": 1, "topologyKey": "zone",
...     "whenUnsatisfiable": "DoNotSchedule", "labelSelector": {"matchLabels": {"app": "x"}}}])
>>> c.hard, c.selects({"app": "x"}), c.selects({"app": "y"})
(True, True, False)
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Protocol

import attrs

from batchsched.kube.affinity import (
    Affinity,
    AffinityError,
    LabelSelector,
    Requirement,
    node_selector_matches,
    parse_label_selector,
)
from batchsched.kube.names import is_qualified_name
from batchsched.kube.taints import (
    NO_EXECUTE,
    NO_SCHEDULE,
    Taint,
    Toleration,
    find_untolerated_taint,
)

__all__ = [
    "DO_NOT_SCHEDULE",
    "HONOR",
    "IGNORE",
    "LABEL_HOSTNAME",
    "REASON_CONSTRAINTS_NOT_MATCH",
    "REASON_NODE_LABEL_NOT_MATCH",
    "SCHEDULE_ANYWAY",
    "SpreadConstraint",
    "TopologySpreadError",
    "domain_counts",
    "parse_topology_spread",
    "spread_filter",
    "spread_scores",
]

DO_NOT_SCHEDULE = "DoNotSchedule"
SCHEDULE_ANYWAY = "ScheduleAnyway"
HONOR = "Honor"
IGNORE = "Ignore"
LABEL_HOSTNAME = "kubernetes.io/hostname"
MAX_NODE_SCORE = 100

REASON_NODE_LABEL_NOT_MATCH = (
    "node(s) didn't match pod topology spread constraints (missing required label)")
REASON_CONSTRAINTS_NOT_MATCH = "node(s) didn't match pod topology spread constraints"

_WHEN = frozenset({DO_NOT_SCHEDULE, SCHEDULE_ANYWAY})
_POLICIES = frozenset({HONOR, IGNORE})
_BLOCKING_EFFECTS = frozenset({NO_SCHEDULE, NO_EXECUTE})
_KEYS = frozenset({"maxSkew", "topologyKey", "whenUnsatisfiable", "labelSelector", "minDomains",
                   "nodeAffinityPolicy", "nodeTaintsPolicy", "matchLabelKeys"})


class TopologySpreadError(ValueError):
    """A constraint list Kubernetes would reject; ``path`` is the dotted field
    (``[0].maxSkew``)."""

    def __init__(self, path: str, message: str) -> None:
        self.path = path
        self.problem = message
        super().__init__(f"{path}: {message}" if path else message)


@attrs.frozen
class SpreadConstraint:
    """One topology spread constraint (``matchLabelKeys`` already merged into
    ``selector``; a missing selector matches no pod)."""

    max_skew: int
    topology_key: str
    when_unsatisfiable: str
    selector: LabelSelector | None
    min_domains: int = 1
    node_affinity_policy: str = HONOR
    node_taints_policy: str = IGNORE

    @property
    def hard(self) -> bool:
        """A ``DoNotSchedule`` constraint (a filter; the others are scores)."""
        return self.when_unsatisfiable == DO_NOT_SCHEDULE

    def selects(self, labels: Mapping[str, str]) -> bool:
        """Whether the selector matches ``labels`` (the incoming pod's self-match)."""
        return self.selector is not None and self.selector.matches(labels)

    def counts(self, labels: Mapping[str, str]) -> bool:
        """Whether a placed pod with ``labels`` counts in its domain: as kube-scheduler's
        ``countPodsMatchSelector``, an empty selector (``labelSelector: {}``) counts
        none, though it matches every pod."""
        selector = self.selector
        return selector is not None and bool(selector.requirements) and selector.matches(labels)


class SpreadPod(Protocol):
    """The incoming pod: what the inclusion policies and the counts read."""

    @property
    def namespace(self) -> str: ...
    @property
    def labels(self) -> Mapping[str, str]: ...
    @property
    def node_selector(self) -> Mapping[str, str]: ...
    @property
    def affinity(self) -> Affinity: ...
    @property
    def tolerations(self) -> Sequence[Toleration]: ...


class SpreadNode(Protocol):
    @property
    def name(self) -> str: ...
    @property
    def labels(self) -> Mapping[str, str]: ...
    @property
    def taints(self) -> Sequence[Taint]: ...


class PlacedPod(Protocol):
    @property
    def namespace(self) -> str: ...
    @property
    def labels(self) -> Mapping[str, str]: ...


Placements = Iterable[tuple[SpreadNode, Iterable[PlacedPod]]]


# -- parsing -----------------------------------------------------------------------------------


def _int(obj: Mapping[str, Any], key: str, path: str, minimum: int) -> int:
    value = obj.get(key)
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise TopologySpreadError(f"{path}.{key}",
                                  f"{value!r} is not an integer of at least {minimum}")
    return value


def _choice(obj: Mapping[str, Any], key: str, path: str, allowed: frozenset[str],
            default: str | None) -> str:
    value = obj.get(key)
    if value is None and default is not None:
        return default
    if not (isinstance(value, str) and value in allowed):
        raise TopologySpreadError(f"{path}.{key}",
                                  f"{value!r} is not one of {', '.join(sorted(allowed))}")
    return str(value)


def _constraint(raw: Any, path: str, owner_labels: Mapping[str, str]) -> SpreadConstraint:
    if not isinstance(raw, Mapping):
        raise TopologySpreadError(path, f"must be a mapping, not {type(raw).__name__}")
    unknown = sorted(str(k) for k in raw if k not in _KEYS)
    if unknown:
        raise TopologySpreadError(f"{path}.{unknown[0]}",
                                  f"unknown field (known: {', '.join(sorted(_KEYS))})")
    max_skew = _int(raw, "maxSkew", path, 1)
    key = raw.get("topologyKey")
    if not isinstance(key, str) or not key:
        raise TopologySpreadError(f"{path}.topologyKey", "is required")
    when = _choice(raw, "whenUnsatisfiable", path, _WHEN, None)
    min_domains = 1
    if raw.get("minDomains") is not None:
        if when != DO_NOT_SCHEDULE:
            raise TopologySpreadError(f"{path}.minDomains",
                                      "may only be set with whenUnsatisfiable DoNotSchedule")
        min_domains = _int(raw, "minDomains", path, 1)
    selector: LabelSelector | None = None
    if raw.get("labelSelector") is not None:
        try:
            selector = parse_label_selector(raw["labelSelector"], "labelSelector")
        except AffinityError as exc:
            raise TopologySpreadError(f"{path}.{exc.path}", exc.problem) from exc
    keys = raw.get("matchLabelKeys")
    if keys is not None:
        if isinstance(keys, (str, bytes)) or not isinstance(keys, Sequence):
            raise TopologySpreadError(f"{path}.matchLabelKeys", "must be a list of label keys")
        if keys and selector is None:
            # What the API server refuses in a pod.
            raise TopologySpreadError(f"{path}.matchLabelKeys",
                                      "may only be set with a labelSelector")
        selected = {r.key for r in selector.requirements} if selector is not None else set()
        extra: list[Requirement] = []
        for i, label in enumerate(keys):
            if not isinstance(label, str) or not label:
                raise TopologySpreadError(f"{path}.matchLabelKeys[{i}]", "must be a label key")
            if not is_qualified_name(label):
                raise TopologySpreadError(f"{path}.matchLabelKeys[{i}]",
                                          f"{label!r} is not a valid label name")
            if label in selected:
                raise TopologySpreadError(f"{path}.matchLabelKeys[{i}]",
                                          f"{label!r} is also a key of the labelSelector")
            if label in owner_labels:
                extra.append(Requirement(label, "In", (owner_labels[label],)))
        if extra and selector is not None:
            # Like kube-scheduler: the owner's values AND the selector.
            selector = LabelSelector((*extra, *selector.requirements))
    return SpreadConstraint(
        max_skew, key, when, selector, min_domains,
        _choice(raw, "nodeAffinityPolicy", path, _POLICIES, HONOR),
        _choice(raw, "nodeTaintsPolicy", path, _POLICIES, IGNORE),
    )


def parse_topology_spread(
    raw: Any, owner_labels: Mapping[str, str] | None = None
) -> tuple[SpreadConstraint, ...]:
    """Read a ``topologySpreadConstraints`` list (None: no constraints).

    ``owner_labels`` are the labels of the pod carrying it (for ``matchLabelKeys``).
    Raises :class:`TopologySpreadError` for anything the API server would reject,
    including two constraints with the same topologyKey and whenUnsatisfiable.
    """
    if raw is None:
        return ()
    if isinstance(raw, (str, bytes)) or not isinstance(raw, Sequence):
        raise TopologySpreadError("", f"must be a list, not {type(raw).__name__}")
    labels = owner_labels or {}
    out: list[SpreadConstraint] = []
    seen: set[tuple[str, str]] = set()
    for i, item in enumerate(raw):
        constraint = _constraint(item, f"[{i}]", labels)
        pair = (constraint.topology_key, constraint.when_unsatisfiable)
        if pair in seen:
            raise TopologySpreadError(f"[{i}]", f"duplicate topologyKey {pair[0]!r} with "
                                                f"whenUnsatisfiable {pair[1]}")
        seen.add(pair)
        out.append(constraint)
    return tuple(out)


# -- counting ------------------------------------------------------------------------------------


def _has_keys(labels: Mapping[str, str], constraints: Sequence[SpreadConstraint]) -> bool:
    return all(c.topology_key in labels for c in constraints)


def node_included(constraint: SpreadConstraint, pod: SpreadPod, node: SpreadNode) -> bool:
    """The constraint's node inclusion policies let ``node`` count for ``pod``."""
    if constraint.node_affinity_policy == HONOR and not (
        node_selector_matches(pod.node_selector, node.labels)
        and pod.affinity.node.required_matches(node.labels, node.name)
    ):
        return False
    return not (constraint.node_taints_policy == HONOR and find_untolerated_taint(
        node.taints, tuple(pod.tolerations), _BLOCKING_EFFECTS) is not None)


def _matching(constraint: SpreadConstraint, namespace: str, pods: Iterable[PlacedPod]) -> int:
    return sum(1 for p in pods if p.namespace == namespace and constraint.counts(p.labels))


def domain_counts(
    pod: SpreadPod, constraints: Sequence[SpreadConstraint], placements: Placements
) -> list[dict[str, int]]:
    """Per constraint, topology value -> matching pods, over the eligible nodes
    (every eligible domain present, with 0 when it holds none)."""
    counts: list[dict[str, int]] = [{} for _ in constraints]
    for node, pods in placements:
        labels = node.labels
        if not _has_keys(labels, constraints):
            continue
        listed = list(pods)
        for i, c in enumerate(constraints):
            if not node_included(c, pod, node):
                continue
            value = labels[c.topology_key]
            counts[i][value] = counts[i].get(value, 0) + _matching(c, pod.namespace, listed)
    return counts


def spread_filter(
    pod: SpreadPod, constraints: Sequence[SpreadConstraint], counts: Sequence[Mapping[str, int]],
    node_labels: Mapping[str, str],
) -> str | None:
    """None when ``pod`` may go to a node with ``node_labels``, else the reason:
    :data:`REASON_NODE_LABEL_NOT_MATCH` (unresolvable) or
    :data:`REASON_CONSTRAINTS_NOT_MATCH` (the skew would exceed maxSkew)."""
    for c, domains in zip(constraints, counts, strict=True):
        value = node_labels.get(c.topology_key)
        if value is None:
            return REASON_NODE_LABEL_NOT_MATCH
        if not domains:
            continue  # no eligible domain: no global minimum to keep to
        minimum = 0 if len(domains) < c.min_domains else min(domains.values())
        skew = domains.get(value, 0) + (1 if c.selects(pod.labels) else 0) - minimum
        if skew > c.max_skew:
            return REASON_CONSTRAINTS_NOT_MATCH
    return None


# -- scoring -------------------------------------------------------------------------------------


def _go_round(x: float) -> int:
    """Go's ``math.Round`` (half away from zero) for x >= 0."""
    low = math.floor(x)
    return int(low) + (1 if x - low >= 0.5 else 0)


def spread_scores(
    pod: SpreadPod, constraints: Sequence[SpreadConstraint], candidates: Sequence[SpreadNode],
    placements: Placements,
) -> list[int]:
    """kube-scheduler's PreScore, Score and NormalizeScore of ``constraints`` (the
    ScheduleAnyway ones) for each candidate node: 0..100, fewer matching pods
    scoring higher; all 0 without constraints."""
    if not constraints:
        return [0] * len(candidates)
    ignored = [not _has_keys(n.labels, constraints) for n in candidates]
    kept = len(candidates) - sum(ignored)
    counts: list[dict[str, int]] = [{} for _ in constraints]
    for node, skip in zip(candidates, ignored, strict=True):
        if skip:
            continue
        for i, c in enumerate(constraints):
            if c.topology_key != LABEL_HOSTNAME:
                counts[i].setdefault(node.labels[c.topology_key], 0)
    weights = [
        math.log(float((kept if c.topology_key == LABEL_HOSTNAME else len(counts[i])) + 2))
        for i, c in enumerate(constraints)
    ]
    on_node: dict[str, list[PlacedPod]] = {}
    for node, pods in placements:
        listed = list(pods)
        on_node[node.name] = listed
        labels = node.labels
        if not _has_keys(labels, constraints):
            continue
        for i, c in enumerate(constraints):
            value = labels[c.topology_key]
            if value not in counts[i] or not node_included(c, pod, node):
                continue
            counts[i][value] += _matching(c, pod.namespace, listed)
    raw: list[int] = []
    for node, skip in zip(candidates, ignored, strict=True):
        if skip:
            raw.append(0)
            continue
        score = 0.0
        for i, c in enumerate(constraints):
            value = node.labels[c.topology_key]
            if c.topology_key == LABEL_HOSTNAME:
                count = _matching(c, pod.namespace, on_node.get(node.name, ()))
            else:
                count = counts[i][value]
            score += float(count) * weights[i] + float(c.max_skew - 1)
        raw.append(_go_round(score))
    scored = [s for s, skip in zip(raw, ignored, strict=True) if not skip]
    if not scored:
        return [0] * len(candidates)
    low, high = min(scored), max(0, *scored)
    out: list[int] = []
    for s, skip in zip(raw, ignored, strict=True):
        if skip:
            out.append(0)
        elif high == 0:
            out.append(MAX_NODE_SCORE)
        else:
            out.append(MAX_NODE_SCORE * (high + low - s) // high)
    return out
