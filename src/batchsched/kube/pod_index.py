"""Placed pods indexed by label, for inter-pod (anti-)affinity in O(matching pods).

kube-scheduler's InterPodAffinity pre-filter counts, for an incoming pod, the
placed pods its required terms select and the placed pods whose required
anti-affinity selects it, per topology domain. Scanning every placed pod for
every incoming pod makes a session quadratic. A label selector is a conjunction
of requirements, so a pod it selects satisfies each of them: when one
requirement is ``key In (values)`` (``matchLabels`` are written so), only the
pods carrying one of those label pairs can match. :class:`PlacedPodIndex` keeps

* the placed pods by label pair, to find the pods a term may select;
* the required anti-affinity terms of placed pods by the label pairs their
  selector requires (an "anchor"), to find the terms that may select a pod;
  terms without an anchor are kept apart and always checked.

Candidates are then checked with the term itself, so the answers are exactly
those of a full scan; only the pods and terms that cannot match are skipped.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from typing import TYPE_CHECKING

from batchsched.kube.affinity import AffinityTerm

if TYPE_CHECKING:
    from batchsched.kube.pod_view import PodInfo

__all__ = ["PlacedPodIndex", "anchor_pairs"]

LabelPair = tuple[str, str]
#: (pod uid, index of the term in the pod's required anti-affinity)
TermId = tuple[str, int]


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


class PlacedPodIndex:
    """The placed pods of a session, by label pair and by anti-affinity anchor."""

    def __init__(self) -> None:
        #: label pair -> uid -> (pod, node name)
        self._by_label: dict[LabelPair, dict[str, tuple[PodInfo, str]]] = {}
        self._anti_by_anchor: dict[LabelPair, dict[TermId, tuple[AffinityTerm, str, PodInfo]]] = {}
        self._anti_unanchored: dict[TermId, tuple[AffinityTerm, str, PodInfo]] = {}
        self._all: dict[str, tuple[PodInfo, str]] = {}

    def add(self, pod: PodInfo, node: str) -> None:
        """``pod`` (a :class:`~batchsched.kube.pod_view.PodInfo`) is placed on ``node``."""
        uid = pod.uid
        entry = (pod, node)
        self._all[uid] = entry
        for pair in pod.labels.items():
            self._by_label.setdefault(pair, {})[uid] = entry
        terms = pod.required_anti_affinity
        for i, term in enumerate(terms):
            anchor = anchor_pairs(term)
            record = (term, node, pod)
            if anchor is None:
                self._anti_unanchored[(uid, i)] = record
            else:
                for pair in anchor:
                    self._anti_by_anchor.setdefault(pair, {})[(uid, i)] = record

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
        terms = pod.required_anti_affinity
        for i, term in enumerate(terms):
            anchor = anchor_pairs(term)
            if anchor is None:
                self._anti_unanchored.pop((uid, i), None)
                continue
            for pair in anchor:
                held = self._anti_by_anchor.get(pair)
                if held is not None:
                    held.pop((uid, i), None)
                    if not held:
                        del self._anti_by_anchor[pair]

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

    def anti_terms_selecting(self, labels: Mapping[str, str]
                             ) -> Iterable[tuple[AffinityTerm, str, PodInfo]]:
        """(term, node, owner pod) of the placed pods' required anti-affinity terms
        that may select a pod with ``labels`` (check with ``term.matches``), each once."""
        found: dict[TermId, tuple[AffinityTerm, str, PodInfo]] = dict(self._anti_unanchored)
        for pair in labels.items():
            held = self._anti_by_anchor.get(pair)
            if held:
                found.update(held)
        return found.values()
