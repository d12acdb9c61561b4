"""Kubernetes label selectors, node affinity and inter-pod affinity terms.

Everything here is pure: it reads a task's Kubernetes-shaped fields (node
selector, affinity, tolerations, labels) and a node's labels and taints, and
answers the way kube-scheduler and ``k8s.io/component-helpers`` do:

* **label requirements** (``In``, ``NotIn``, ``Exists``, ``DoesNotExist``,
  ``Gt``, ``Lt``) and label selectors (``matchLabels`` AND ``matchExpressions``;
  a missing selector matches nothing, an empty one ``{}`` everything);
* **node selector and node affinity**: every ``nodeSelector`` pair must be a node
  label; at least one required ``nodeSelectorTerm`` must match (an empty term, or
  an empty list of terms, matches no node); ``matchFields`` knows only
  ``metadata.name``;
* **inter-pod affinity terms**: a term of pod P matches pod Q when Q's namespace
  is one of the term's namespaces (default: P's own; an empty
  ``namespaceSelector: {}`` means every namespace) and the term's label selector
  matches Q's labels. ``topologyKey`` names a node label; two nodes are in the
  same domain when they carry the same value for it.

The affinity document is the Kubernetes ``Affinity`` object. :func:`parse_affinity`
checks it as the API server would (operators, value counts, integer values for
``Gt``/``Lt``, weights 1-100) and raises :class:`AffinityError` naming the field;
the scenario loader calls it so that a bad document is reported when it is
read. Namespaces carry no labels in this model, so a non-empty
``namespaceSelector`` selects every namespace if it matches an empty label set
(e.g. only ``NotIn``/``DoesNotExist``) and none otherwise.

>>> aff = parse_affinity({"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
...     "nodeSelectorTerms": [{"matchExpressions": [
...         {"key": "zone", "operator": "In", "values": ["a", "b"]}]}]}}})
>>> aff.node.required_matches({"zone": "b"}, "n1"), aff.node.required_matches({}, "n1")
(True, False)
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import attrs

from batchsched.kube.go_strconv import parse_int
from batchsched.kube.names import is_label_value, is_qualified_name

__all__ = [
    "ALL_NAMESPACES",
    "NAMESPACE_NAME_LABEL",
    "Affinity",
    "AffinityError",
    "AffinityTerm",
    "LabelSelector",
    "NodeAffinity",
    "NodeSelectorTerm",
    "PodAffinityTerm",
    "PreferredSchedulingTerm",
    "Requirement",
    "UnparsableSelectorError",
    "WeightedAffinityTerm",
    "WeightedPodAffinityTerm",
    "node_selector_matches",
    "parse_affinity",
    "parse_label_selector",
    "parse_node_selector_term",
    "stored_pod_affinity",
    "stored_pod_term",
]

#: The node field ``matchFields`` may name.
NODE_NAME_FIELD = "metadata.name"
#: The label the API server puts on every namespace: its name.
NAMESPACE_NAME_LABEL = "kubernetes.io/metadata.name"

_NODE_OPERATORS = frozenset({"In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt"})
_LABEL_OPERATORS = frozenset({"In", "NotIn", "Exists", "DoesNotExist"})


class AffinityError(ValueError):
    """An affinity document Kubernetes would reject; ``path`` is the dotted field."""

    def __init__(self, path: str, message: str) -> None:
        self.path = path
        self.problem = message
        super().__init__(f"{path}: {message}" if path else message)


class UnparsableSelectorError(AffinityError):
    """A selector the API server may store where no validation reads it (a custom
    resource's, such as a pod group's ``subGroupPolicy``) but Kubernetes cannot turn
    into a selector (``LabelSelectorAsSelector`` fails): an unknown operator, values
    where none or some are needed, a key that is no label name."""


class _AllNamespaces:
    """Marker for "every namespace" (a term with ``namespaceSelector: {}``)."""

    def __repr__(self) -> str:
        return "ALL_NAMESPACES"


ALL_NAMESPACES = _AllNamespaces()

# -- label requirements ---------------------------------------------------------------------


def _parse_int64(text: str) -> int | None:
    """Go's ``strconv.ParseInt(text, 10, 64)``: None when it would fail."""
    number, ok = parse_int(text, 64)
    return number if ok else None


def _go_quote(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def requirement_parse_errors(requirement: Requirement, path: str) -> list[str]:
    """What apimachinery's ``labels.NewRequirement`` refuses in a node selector
    expression the API server let through (it checks the key and the count of values
    only): a ``Gt``/``Lt`` value that is no integer, a value no label can have. Each
    as Go words it, under ``path``."""
    errors = []
    for i, value in enumerate(requirement.values):
        where = f"{path}.values[{i}]"
        if requirement.operator in ("Gt", "Lt") and _parse_int64(value) is None:
            errors.append(f"{where}: Invalid value: {_go_quote(value)}: "
                          "for 'Gt', 'Lt' operators, the value must be an integer")
        if len(value) > 63:
            errors.append(f"{where}[{requirement.key}]: Invalid value: {_go_quote(value)}: "
                          "must be no more than 63 characters")
        elif not is_label_value(value):
            errors.append(
                f"{where}[{requirement.key}]: Invalid value: {_go_quote(value)}: a valid label "
                "must be an empty string or consist of alphanumeric characters, '-', '_' or "
                "'.', and must start and end with an alphanumeric character")
    return errors


@attrs.frozen
class Requirement:
    """One ``key operator values`` requirement on a label set."""

    key: str
    operator: str
    values: tuple[str, ...] = ()

    def matches(self, labels: Mapping[str, str]) -> bool:
        """Kubernetes' ``labels.Requirement.Matches``."""
        op = self.operator
        present = self.key in labels
        if op == "In":
            return present and labels[self.key] in self.values
        if op == "NotIn":
            return not present or labels[self.key] not in self.values
        if op == "Exists":
            return present
        if op == "DoesNotExist":
            return not present
        if not present:
            return False
        have = _parse_int64(labels[self.key])
        want = _parse_int64(self.values[0]) if self.values else None
        if have is None or want is None:
            return False
        return have > want if op == "Gt" else have < want


# -- node selector terms and node affinity ----------------------------------------------------


@attrs.frozen
class NodeSelectorTerm:
    """A ``nodeSelectorTerm``: all its expressions and fields must hold."""

    match_expressions: tuple[Requirement, ...] = ()
    match_fields: tuple[Requirement, ...] = ()
    #: What kube-scheduler cannot parse in the expressions (see
    #: :func:`requirement_parse_errors`), each under its path within the term.
    parse_errors: tuple[str, ...] = attrs.field(init=False, eq=False, repr=False)

    def __attrs_post_init__(self) -> None:
        object.__setattr__(self, "parse_errors", tuple(
            error for i, requirement in enumerate(self.match_expressions)
            for error in requirement_parse_errors(requirement, f"matchExpressions[{i}]")))

    def matches(self, labels: Mapping[str, str], node_name: str) -> bool:
        """An empty term matches nothing (Kubernetes' rule); nor does a term
        kube-scheduler cannot parse (its LazyErrorNodeSelector skips it)."""
        if self.parse_errors or (not self.match_expressions and not self.match_fields):
            return False
        if not all(r.matches(labels) for r in self.match_expressions):
            return False
        fields = {NODE_NAME_FIELD: node_name}
        return all(r.matches(fields) for r in self.match_fields)


@attrs.frozen
class PreferredSchedulingTerm:
    weight: int
    preference: NodeSelectorTerm


@attrs.frozen
class NodeAffinity:
    """``required`` is None when the pod has no required node affinity."""

    required: tuple[NodeSelectorTerm, ...] | None = None
    preferred: tuple[PreferredSchedulingTerm, ...] = ()

    def required_matches(self, labels: Mapping[str, str], node_name: str) -> bool:
        """At least one required term matches (true when nothing is required)."""
        if self.required is None:
            return True
        return any(term.matches(labels, node_name) for term in self.required)

    def preferred_parse_error(self) -> str | None:
        """Why kube's ``NewPreferredSchedulingTerms`` refuses the preferred terms (one
        term it cannot parse fails them all; a term of weight 0 or an empty one is
        skipped unread), as its flattened error reads; None when it accepts them.
        NodeAffinity's PreScore then fails, and with it Volcano's batch node order."""
        errors = [f"[{i}].{error}" for i, term in enumerate(self.preferred)
                  if term.weight and (term.preference.match_expressions
                                      or term.preference.match_fields)
                  for error in term.preference.parse_errors]
        if not errors:
            return None
        return errors[0] if len(errors) == 1 else "[" + ", ".join(errors) + "]"

    def preferred_score(self, labels: Mapping[str, str], node_name: str) -> int:
        """Sum of the weights of the preferred terms the node matches."""
        return sum(
            term.weight for term in self.preferred
            if term.weight and term.preference.matches(labels, node_name)
        )

    def conflicting_node_names(self) -> bool:
        """Every required term pins ``metadata.name In [...]`` and the pins leave no node.

        Kubernetes rejects such a pod before looking at any node ("pod affinity
        terms conflict").
        """
        if not self.required:
            return False
        names: set[str] = set()
        for term in self.required:
            pinned: set[str] | None = None
            for field in term.match_fields:
                if field.key == NODE_NAME_FIELD and field.operator == "In":
                    values = set(field.values)
                    pinned = values if pinned is None else pinned & values
            if pinned is None:
                return False
            names |= pinned
        return not names


def node_selector_matches(selector: Mapping[str, str], labels: Mapping[str, str]) -> bool:
    """Every ``nodeSelector`` pair is a label of the node (exact string match)."""
    return all(labels.get(key) == value for key, value in selector.items())


# -- label selectors and pod affinity terms ----------------------------------------------------


@attrs.frozen
class LabelSelector:
    """A ``LabelSelector``: ``matchLabels`` AND ``matchExpressions``."""

    requirements: tuple[Requirement, ...] = ()

    def matches(self, labels: Mapping[str, str]) -> bool:
        return all(r.matches(labels) for r in self.requirements)


@attrs.frozen
class PodAffinityTerm:
    """A ``podAffinityTerm`` as written on a pod (namespaces not yet resolved)."""

    label_selector: LabelSelector | None
    topology_key: str
    namespaces: tuple[str, ...] = ()
    namespace_selector: LabelSelector | None = None

    def resolve(self, owner_namespace: str) -> AffinityTerm:
        """The term as it applies to pods, given the namespace of the pod carrying it."""
        spaces: frozenset[str] | _AllNamespaces = frozenset(self.namespaces)
        selector = self.namespace_selector
        if selector is not None and not selector.requirements:
            spaces, selector = ALL_NAMESPACES, None
        elif not self.namespaces and selector is None:
            spaces = frozenset({owner_namespace})
        return AffinityTerm(self.label_selector, spaces, self.topology_key, selector)


@attrs.frozen
class WeightedPodAffinityTerm:
    weight: int
    term: PodAffinityTerm


@attrs.frozen
class AffinityTerm:
    """A pod affinity term resolved for its owner: which pods it selects, and the
    node label that defines its topology domains."""

    selector: LabelSelector | None
    namespaces: frozenset[str] | _AllNamespaces
    topology_key: str
    #: Selects namespaces besides ``namespaces``, by their labels: a namespace here has
    #: the one label the API server gives every namespace, its name under
    #: ``kubernetes.io/metadata.name``.
    namespace_selector: LabelSelector | None = None

    def matches(self, namespace: str, labels: Mapping[str, str]) -> bool:
        """Does a pod in ``namespace`` with ``labels`` fall under this term?"""
        if self.selector is None:
            return False
        if self.namespaces is not ALL_NAMESPACES:
            assert isinstance(self.namespaces, frozenset)
            if namespace not in self.namespaces and not (
                    self.namespace_selector is not None
                    and self.namespace_selector.matches({NAMESPACE_NAME_LABEL: namespace})):
                return False
        return self.selector.matches(labels)


@attrs.frozen
class WeightedAffinityTerm:
    weight: int
    term: AffinityTerm


@attrs.frozen
class Affinity:
    """A pod's ``affinity``: node affinity and the four inter-pod term lists.

    ``has_pod_affinity`` / ``has_pod_anti_affinity`` say whether the section was
    written at all (Kubernetes tracks "pods with affinity" by that).
    """

    node: NodeAffinity = NodeAffinity()
    required_affinity: tuple[PodAffinityTerm, ...] = ()
    preferred_affinity: tuple[WeightedPodAffinityTerm, ...] = ()
    required_anti_affinity: tuple[PodAffinityTerm, ...] = ()
    preferred_anti_affinity: tuple[WeightedPodAffinityTerm, ...] = ()
    has_pod_affinity: bool = False
    has_pod_anti_affinity: bool = False


# -- parsing -----------------------------------------------------------------------------------

_Raw = Mapping[str, Any]


def _mapping(value: Any, path: str) -> _Raw:
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise AffinityError(path, f"must be a mapping, not {type(value).__name__}")
    return value


def _sequence(value: Any, path: str) -> list[Any]:
    if value is None:
        return []
    if isinstance(value, (str, bytes)) or not isinstance(value, Sequence):
        raise AffinityError(path, f"must be a list, not {type(value).__name__}")
    return list(value)


def _keys(obj: _Raw, allowed: set[str], path: str) -> None:
    unknown = sorted(str(k) for k in obj if k not in allowed)
    if unknown:
        where = f"{path}.{unknown[0]}" if path else unknown[0]
        raise AffinityError(where, f"unknown field (known: {', '.join(sorted(allowed))})")


def _text(value: Any, path: str) -> str:
    if isinstance(value, bool) or not isinstance(value, (str, int, float)):
        raise AffinityError(path, f"must be a string, not {type(value).__name__}")
    return str(value)


def _requirement(
    raw: Any, path: str, operators: frozenset[str], *, field: bool = False,
    unvalidated: bool = False,
) -> Requirement:
    obj = _mapping(raw, path)
    _keys(obj, {"key", "operator", "values"}, path)
    key = obj.get("key")
    if unvalidated and key == "":
        raise UnparsableSelectorError(f"{path}.key", "'' is not a valid label name")
    if not isinstance(key, str) or not key:
        raise AffinityError(f"{path}.key", "is required")
    if not field and not is_qualified_name(key):
        raise UnparsableSelectorError(f"{path}.key", f"{key!r} is not a valid label name")
    operator = obj.get("operator")
    if not isinstance(operator, str) or operator not in operators:
        error = UnparsableSelectorError if isinstance(operator, str) else AffinityError
        raise error(f"{path}.operator",
                    f"{operator!r} is not one of {', '.join(sorted(operators))}")
    values = tuple(_text(v, f"{path}.values[{i}]")
                   for i, v in enumerate(_sequence(obj.get("values"), f"{path}.values")))
    if field:
        if key != NODE_NAME_FIELD:
            raise AffinityError(f"{path}.key", f"only {NODE_NAME_FIELD!r} is supported")
        if len(values) != 1:
            raise AffinityError(f"{path}.values", "must have exactly one value")
    elif operator in ("In", "NotIn") and not values:
        raise UnparsableSelectorError(f"{path}.values", f"must not be empty for {operator}")
    elif operator in ("Exists", "DoesNotExist") and values:
        raise UnparsableSelectorError(f"{path}.values", f"must be empty for {operator}")
    elif operator in ("Gt", "Lt") and len(values) != 1:
        # The API server checks the count only: a value that is no integer makes the
        # term match no node (kube-scheduler skips a term it cannot parse).
        raise UnparsableSelectorError(f"{path}.values",
                                 f"must have exactly one value for {operator}")
    if unvalidated:
        _check_label_values(values, f"{path}.values")
    return Requirement(key, str(operator), values)


def _check_label_values(values: tuple[str, ...], path: str) -> None:
    """``labels.NewRequirement`` checks every value of a label selector, whatever the
    operator: one that no label can have makes the selector unreadable."""
    for i, value in enumerate(values):
        if not is_label_value(value):
            raise UnparsableSelectorError(f"{path}[{i}]", f"{value!r} is not a valid label "
                                          "value")


def parse_node_selector_term(raw: Any, path: str) -> NodeSelectorTerm:
    """A ``nodeSelectorTerm`` document, checked as the API server does (raises
    :class:`AffinityError` naming the field)."""
    obj = _mapping(raw, path)
    _keys(obj, {"matchExpressions", "matchFields"}, path)
    expressions = tuple(
        _requirement(r, f"{path}.matchExpressions[{i}]", _NODE_OPERATORS)
        for i, r in enumerate(_sequence(obj.get("matchExpressions"), f"{path}.matchExpressions"))
    )
    fields = tuple(
        _requirement(r, f"{path}.matchFields[{i}]", frozenset({"In", "NotIn"}), field=True)
        for i, r in enumerate(_sequence(obj.get("matchFields"), f"{path}.matchFields"))
    )
    return NodeSelectorTerm(expressions, fields)


def _weight(obj: _Raw, path: str) -> int:
    weight = obj.get("weight")
    if isinstance(weight, bool) or not isinstance(weight, int) or not 1 <= weight <= 100:
        raise AffinityError(f"{path}.weight", f"{weight!r} is not an integer from 1 to 100")
    return weight


def _node_affinity(raw: Any, path: str) -> NodeAffinity:
    obj = _mapping(raw, path)
    req_key = "requiredDuringSchedulingIgnoredDuringExecution"
    pref_key = "preferredDuringSchedulingIgnoredDuringExecution"
    _keys(obj, {req_key, pref_key}, path)
    required: tuple[NodeSelectorTerm, ...] | None = None
    if obj.get(req_key) is not None:
        req = _mapping(obj[req_key], f"{path}.{req_key}")
        _keys(req, {"nodeSelectorTerms"}, f"{path}.{req_key}")
        tpath = f"{path}.{req_key}.nodeSelectorTerms"
        required = tuple(parse_node_selector_term(t, f"{tpath}[{i}]")
                         for i, t in enumerate(_sequence(req.get("nodeSelectorTerms"), tpath)))
    preferred = []
    for i, item in enumerate(_sequence(obj.get(pref_key), f"{path}.{pref_key}")):
        ipath = f"{path}.{pref_key}[{i}]"
        entry = _mapping(item, ipath)
        _keys(entry, {"weight", "preference"}, ipath)
        preferred.append(PreferredSchedulingTerm(
            _weight(entry, ipath),
            parse_node_selector_term(entry.get("preference"), f"{ipath}.preference"),
        ))
    return NodeAffinity(required, tuple(preferred))


def parse_label_selector(raw: Any, path: str, *, unvalidated: bool = False) -> LabelSelector:
    """A Kubernetes ``labelSelector`` (``matchLabels``, ``matchExpressions``);
    AffinityError naming ``path`` and the field when malformed.

    ``unvalidated``: the selector of a custom resource, which the API server stores
    as written (a pod group's ``subGroupPolicy``): whatever
    ``LabelSelectorAsSelector`` cannot read (an empty or invalid key, a value no
    label can have) is an :class:`UnparsableSelectorError`."""
    obj = _mapping(raw, path)
    _keys(obj, {"matchLabels", "matchExpressions"}, path)
    requirements = []
    for k, v in _mapping(obj.get("matchLabels"), f"{path}.matchLabels").items():
        value = _text(v, f"{path}.matchLabels.{k}")
        if unvalidated:
            if not is_qualified_name(str(k)):
                raise UnparsableSelectorError(f"{path}.matchLabels",
                                              f"{str(k)!r} is not a valid label name")
            if not is_label_value(value):
                raise UnparsableSelectorError(f"{path}.matchLabels.{k}",
                                              f"{value!r} is not a valid label value")
        requirements.append(Requirement(str(k), "In", (value,)))
    requirements.extend(
        _requirement(r, f"{path}.matchExpressions[{i}]", _LABEL_OPERATORS,
                     unvalidated=unvalidated)
        for i, r in enumerate(_sequence(obj.get("matchExpressions"), f"{path}.matchExpressions"))
    )
    return LabelSelector(tuple(requirements))


def stored_pod_term(term: Any, labels: Mapping[str, str]) -> Any:
    """A pod (anti-)affinity term or topology spread constraint of a pod as an API
    server stores it, made what a scenario's own pod says: the API server merged each
    ``matchLabelKeys`` key (``In`` the pod's value) and ``mismatchLabelKeys`` key
    (``NotIn``) into the labelSelector when the pod was created (pod affinity since
    Kubernetes 1.31, topology spread since 1.34). A key whose merged requirement is
    there is dropped from its list, so that the loader, which merges as the API server
    does, does not merge it twice (which the API server refuses). Anything else, a
    term from an older cluster among it, is returned as it is."""
    if not isinstance(term, Mapping) or not isinstance(term.get("labelSelector"), Mapping):
        return term
    expressions = term["labelSelector"].get("matchExpressions")
    merged = {(e.get("key"), e.get("operator"), tuple(e["values"]))
              for e in (expressions if isinstance(expressions, list) else ())
              if isinstance(e, Mapping) and isinstance(e.get("values"), list)
              and len(e["values"]) == 1 and isinstance(e["values"][0], str)}
    out = dict(term)
    for field, operator in (("matchLabelKeys", "In"), ("mismatchLabelKeys", "NotIn")):
        keys = term.get(field)
        if not isinstance(keys, list):
            continue
        kept = [key for key in keys if not (isinstance(key, str) and key in labels
                                            and (key, operator, (labels[key],)) in merged)]
        if len(kept) < len(keys):
            if kept:
                out[field] = kept
            else:
                del out[field]
    return out


def stored_pod_affinity(affinity: Any, labels: Mapping[str, str]) -> Any:
    """:func:`stored_pod_term` over every pod (anti-)affinity term of a pod's
    ``affinity`` document (required and preferred)."""
    if not isinstance(affinity, Mapping):
        return affinity
    out = dict(affinity)
    for kind in ("podAffinity", "podAntiAffinity"):
        section = affinity.get(kind)
        if not isinstance(section, Mapping):
            continue
        section = dict(section)
        required = section.get("requiredDuringSchedulingIgnoredDuringExecution")
        if isinstance(required, list):
            section["requiredDuringSchedulingIgnoredDuringExecution"] = [
                stored_pod_term(term, labels) for term in required]
        preferred = section.get("preferredDuringSchedulingIgnoredDuringExecution")
        if isinstance(preferred, list):
            section["preferredDuringSchedulingIgnoredDuringExecution"] = [
                {**entry, "podAffinityTerm": stored_pod_term(entry["podAffinityTerm"], labels)}
                if isinstance(entry, Mapping) and "podAffinityTerm" in entry else entry
                for entry in preferred]
        out[kind] = section
    return out


def _pod_affinity_term(raw: Any, path: str, owner_labels: Mapping[str, str]) -> PodAffinityTerm:
    obj = _mapping(raw, path)
    _keys(obj, {"labelSelector", "namespaces", "namespaceSelector", "topologyKey",
                "matchLabelKeys", "mismatchLabelKeys"}, path)
    topology_key = obj.get("topologyKey")
    if not isinstance(topology_key, str) or not topology_key:
        raise AffinityError(f"{path}.topologyKey", "is required")
    if not is_qualified_name(topology_key):  # the API server validates it so
        raise AffinityError(f"{path}.topologyKey", f"{topology_key!r} is not a valid label name")
    selector = (parse_label_selector(obj["labelSelector"], f"{path}.labelSelector")
                if obj.get("labelSelector") is not None else None)
    # matchLabelKeys / mismatchLabelKeys copy the owner's label values into the
    # selector, as the API server does when the pod is created.
    extra: list[Requirement] = []
    selected = {r.key for r in selector.requirements} if selector is not None else set()
    named: dict[str, str] = {}
    for field, operator in (("matchLabelKeys", "In"), ("mismatchLabelKeys", "NotIn")):
        for i, raw_key in enumerate(_sequence(obj.get(field), f"{path}.{field}")):
            key = _text(raw_key, f"{path}.{field}[{i}]")
            # What the API server refuses in a pod.
            if not is_qualified_name(key):
                raise AffinityError(f"{path}.{field}[{i}]", f"{key!r} is not a valid label name")
            if selector is None:
                raise AffinityError(f"{path}.{field}", "may only be set with a labelSelector")
            if key in selected:
                raise AffinityError(f"{path}.{field}[{i}]",
                                    f"{key!r} is also a key of the labelSelector")
            if named.setdefault(key, field) != field:
                raise AffinityError(f"{path}.{field}[{i}]",
                                    f"{key!r} is in both matchLabelKeys and mismatchLabelKeys")
            if key in owner_labels:
                extra.append(Requirement(key, operator, (owner_labels[key],)))
    if extra and selector is not None:
        selector = LabelSelector(selector.requirements + tuple(extra))
    namespaces = tuple(
        _text(n, f"{path}.namespaces[{i}]")
        for i, n in enumerate(_sequence(obj.get("namespaces"), f"{path}.namespaces"))
    )
    ns_selector = (parse_label_selector(obj["namespaceSelector"], f"{path}.namespaceSelector")
                   if obj.get("namespaceSelector") is not None else None)
    return PodAffinityTerm(selector, topology_key, namespaces, ns_selector)


def _pod_affinity(
    raw: Any, path: str, owner_labels: Mapping[str, str]
) -> tuple[tuple[PodAffinityTerm, ...], tuple[WeightedPodAffinityTerm, ...]]:
    obj = _mapping(raw, path)
    req_key = "requiredDuringSchedulingIgnoredDuringExecution"
    pref_key = "preferredDuringSchedulingIgnoredDuringExecution"
    _keys(obj, {req_key, pref_key}, path)
    required = tuple(
        _pod_affinity_term(t, f"{path}.{req_key}[{i}]", owner_labels)
        for i, t in enumerate(_sequence(obj.get(req_key), f"{path}.{req_key}"))
    )
    preferred = []
    for i, item in enumerate(_sequence(obj.get(pref_key), f"{path}.{pref_key}")):
        ipath = f"{path}.{pref_key}[{i}]"
        entry = _mapping(item, ipath)
        _keys(entry, {"weight", "podAffinityTerm"}, ipath)
        preferred.append(WeightedPodAffinityTerm(
            _weight(entry, ipath),
            _pod_affinity_term(entry.get("podAffinityTerm"), f"{ipath}.podAffinityTerm",
                               owner_labels),
        ))
    return required, tuple(preferred)


def parse_affinity(
    raw: Mapping[str, Any] | None, owner_labels: Mapping[str, str] | None = None
) -> Affinity:
    """Read a Kubernetes ``affinity`` document.

    ``owner_labels`` are the labels of the pod that carries it (used by
    ``matchLabelKeys``/``mismatchLabelKeys``). Raises :class:`AffinityError`
    naming the offending field for anything the API server would reject.
    """
    if raw is None:
        return Affinity()
    obj = _mapping(raw, "")
    _keys(obj, {"nodeAffinity", "podAffinity", "podAntiAffinity"}, "")
    labels = owner_labels or {}
    node = (_node_affinity(obj["nodeAffinity"], "nodeAffinity")
            if obj.get("nodeAffinity") is not None else NodeAffinity())
    has_affinity = obj.get("podAffinity") is not None
    has_anti = obj.get("podAntiAffinity") is not None
    req_aff, pref_aff = _pod_affinity(obj.get("podAffinity"), "podAffinity", labels)
    req_anti, pref_anti = _pod_affinity(obj.get("podAntiAffinity"), "podAntiAffinity", labels)
    return Affinity(node, req_aff, pref_aff, req_anti, pref_anti, has_affinity, has_anti)
