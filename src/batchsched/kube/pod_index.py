"""Placed pods indexed by label, for inter-pod (anti-)affinity in O(matching pods).

kube-scheduler's InterPodAffinity counts, for an incoming pod, the placed pods
its terms select and the placed pods whose terms select it, per topology
domain (the required terms for the filter, the preferred ones for the score).
Scanning every placed pod for every incoming pod makes a session quadratic. A
label selector is a conjunction of requirements, so a pod it selects satisfies
each of them: when one requirement is ``key In (values)`` (``matchLabels`` are
written so), only the pods carrying one of those label pairs can match.
:class:`PlacedPodIndex` keeps

* the placed pods by label pair, to find the pods a term may select;
* the terms of placed pods (required anti-affinity; preferred affinity and
  anti-affinity) by the label pairs their selector requires (an "anchor"), to
  find the terms that may select a pod; terms without an anchor are kept apart
  and always returned.

Candidates are then checked with the term itself, so the answers are exactly
those of a full scan; only the pods and terms that cannot match are skipped.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from typing import TYPE_CHECKING, Generic, TypeVar

from batchsched.kube.affinity import AffinityTerm

if TYPE_CHECKING:
    from batchsched.kube.pod_view import PodInfo

__all__ = ["PlacedPodIndex", "PlacedTerm", "anchor_pairs"]

LabelPair = tuple[str, str]
#: (pod uid, which list of the pod, index of the term in it)
TermId = tuple[str, str, int]
Record = TypeVar("Record")


def anchor_pairs(term: AffinityTerm) -> tuple[LabelPair, ...] | None:
    """The label pairs one of which every pod the term selects carries (the ``In``
    requirement with the fewest values), or None when the selector has none."""
    selector = term.selector
    if selector is None:
        return ()  # selects nothing
    best: tuple[LabelPair, ...] | None = None
    for requirement in selector.requirements:
        if requirement.operator != "In":
            continue
        pairs = tuple((requirement.key, value) for value in requirement.values)
        if best is None or len(pairs) < len(best):
            best = pairs
    return best


class _TermIndex(Generic[Record]):
    """Terms by the label pairs their selector requires."""

    def __init__(self) -> None:
        self._by_anchor: dict[LabelPair, dict[TermId, Record]] = {}
        self._unanchored: dict[TermId, Record] = {}

    def add(self, uid: TermId, term: AffinityTerm, record: Record) -> None:
        anchor = anchor_pairs(term)
        if anchor is None:
            self._unanchored[uid] = record
            return
        for pair in anchor:
            self._by_anchor.setdefault(pair, {})[uid] = record

    def remove(self, uid: TermId, term: AffinityTerm) -> None:
        anchor = anchor_pairs(term)
        if anchor is None:
            self._unanchored.pop(uid, None)
            return
        for pair in anchor:
            held = self._by_anchor.get(pair)
            if held is not None:
                held.pop(uid, None)
                if not held:
                    del self._by_anchor[pair]

    def selecting(self, labels: Mapping[str, str]) -> Iterable[Record]:
        """The terms that may select a pod with ``labels``, each once."""
        found: dict[TermId, Record] = dict(self._unanchored)
        for pair in labels.items():
            held = self._by_anchor.get(pair)
            if held:
                found.update(held)
        return found.values()


#: A placed pod's term: (the term, its weight (1 for required terms; negative for
#: preferred anti-affinity), the node it is on, the pod carrying it).
PlacedTerm = tuple[AffinityTerm, int, str, "PodInfo"]


class PlacedPodIndex:
    """The placed pods of a session, by label pair, and their terms by anchor."""

    def __init__(self) -> None:
        #: label pair -> uid -> (pod, node name)
        self._by_label: dict[LabelPair, dict[str, tuple[PodInfo, str]]] = {}
        self._all: dict[str, tuple[PodInfo, str]] = {}
        self._anti: _TermIndex[PlacedTerm] = _TermIndex()
        self._preferred: _TermIndex[PlacedTerm] = _TermIndex()

    @staticmethod
    def _terms(pod: PodInfo) -> Iterator[tuple[str, TermId, AffinityTerm, int]]:
        uid = pod.uid
        for i, term in enumerate(pod.required_anti_affinity):
            yield "anti", (uid, "anti", i), term, 1
        for i, weighted in enumerate(pod.preferred_affinity):
            yield "preferred", (uid, "affinity", i), weighted.term, weighted.weight
        for i, weighted in enumerate(pod.preferred_anti_affinity):
            yield "preferred", (uid, "anti-affinity", i), weighted.term, -weighted.weight

    def add(self, pod: PodInfo, node: str) -> None:
        """``pod`` is placed on ``node``."""
        uid = pod.uid
        entry = (pod, node)
        self._all[uid] = entry
        for pair in pod.labels.items():
            self._by_label.setdefault(pair, {})[uid] = entry
        for kind, term_id, term, weight in self._terms(pod):
            index = self._anti if kind == "anti" else self._preferred
            index.add(term_id, term, (term, weight, node, pod))

    def remove(self, pod: PodInfo) -> None:
        uid = pod.uid
        if self._all.pop(uid, None) is None:
            return
        for pair in pod.labels.items():
            holders = self._by_label.get(pair)
            if holders is not None:
                holders.pop(uid, None)
                if not holders:
                    del self._by_label[pair]
        for kind, term_id, term, _ in self._terms(pod):
            (self._anti if kind == "anti" else self._preferred).remove(term_id, term)

    def selected_by(self, term: AffinityTerm) -> Iterator[tuple[PodInfo, str]]:
        """(pod, node) of every placed pod ``term`` may select: a superset of those it
        does select (check with ``term.matches``), each once."""
        anchor = anchor_pairs(term)
        if anchor is None:
            yield from self._all.values()
            return
        if len(anchor) == 1:
            yield from self._by_label.get(anchor[0], {}).values()
            return
        seen: set[str] = set()
        for pair in anchor:
            for uid, entry in self._by_label.get(pair, {}).items():
                if uid not in seen:
                    seen.add(uid)
                    yield entry

    def anti_terms_selecting(self, labels: Mapping[str, str]) -> Iterable[PlacedTerm]:
        """The placed pods' required anti-affinity terms that may select a pod with
        ``labels`` (check with ``term.matches``), each once."""
        return self._anti.selecting(labels)

    def preferred_terms_selecting(self, labels: Mapping[str, str]) -> Iterable[PlacedTerm]:
        """The placed pods' preferred affinity (positive weight) and anti-affinity
        (negative weight) terms that may select a pod with ``labels``, each once."""
        return self._preferred.selecting(labels)
