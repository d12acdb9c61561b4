"""k8s_matching: label requirements, node selector terms, pod affinity terms, tolerations,
and the validation of affinity documents (also applied by the scenario loader)."""

from __future__ import annotations

from typing import Any

import pytest

from batchsched.api import Taint, Toleration
from batchsched.errors import ScenarioError
from batchsched.kube.affinity import (
    ALL_NAMESPACES,
    AffinityError,
    LabelSelector,
    PodAffinityTerm,
    Requirement,
    parse_affinity,
)
from batchsched.kube.taints import count_intolerable_taints, find_untolerated_taint
from batchsched.scenario import parse_scenario

LABELS = {"zone": "a", "rank": "5", "neg": "-3"}


@pytest.mark.parametrize(("requirement", "expected"), [
    (Requirement("zone", "In", ("a", "b")), True),
    (Requirement("zone", "In", ("b",)), False),
    (Requirement("missing", "In", ("a",)), False),
    (Requirement("zone", "NotIn", ("b",)), True),
    (Requirement("missing", "NotIn", ("a",)), True),
    (Requirement("zone", "Exists"), True),
    (Requirement("missing", "DoesNotExist"), True),
    (Requirement("rank", "Gt", ("4",)), True),
    (Requirement("rank", "Gt", ("5",)), False),
    (Requirement("rank", "Lt", ("6",)), True),
    (Requirement("neg", "Lt", ("0",)), True),
    (Requirement("zone", "Gt", ("0",)), False),       # label is not an integer
    (Requirement("missing", "Lt", ("9",)), False),
])
def test_requirements(requirement: Requirement, expected: bool) -> None:
    assert requirement.matches(LABELS) is expected


def test_null_selector_matches_nothing_and_empty_selector_everything() -> None:
    term = PodAffinityTerm(None, "zone").resolve("c1")
    assert not term.matches("c1", {"app": "x"})
    everything = PodAffinityTerm(LabelSelector(), "zone").resolve("c1")
    assert everything.matches("c1", {})
    assert not everything.matches("c2", {})


def test_term_namespaces() -> None:
    sel = LabelSelector()
    assert PodAffinityTerm(sel, "z").resolve("own").namespaces == frozenset({"own"})
    assert PodAffinityTerm(sel, "z", ("x", "y")).resolve("own").namespaces == {"x", "y"}
    assert PodAffinityTerm(sel, "z", (), LabelSelector()).resolve("own").namespaces \
        is ALL_NAMESPACES
    # A namespace's only label is its name: a selector needing another label selects
    # none of them, one refusing another label selects them all.
    needs = LabelSelector((Requirement("team", "In", ("a",)),))
    assert not PodAffinityTerm(sel, "z", (), needs).resolve("own").matches("own", {})
    refuses = LabelSelector((Requirement("team", "DoesNotExist"),))
    everywhere = PodAffinityTerm(sel, "z", (), refuses).resolve("own")
    assert everywhere.matches("own", {}) and everywhere.matches("elsewhere", {})


def test_match_label_keys_copy_the_owner_labels() -> None:
    required = "requiredDuringSchedulingIgnoredDuringExecution"
    affinity = parse_affinity({"podAntiAffinity": {required: [
        {"labelSelector": {"matchLabels": {"app": "web"}}, "topologyKey": "zone",
         "matchLabelKeys": ["version"], "mismatchLabelKeys": ["tenant"]}]}},
        {"version": "v2", "tenant": "t1"})
    term = affinity.required_anti_affinity[0].resolve("c1")
    assert term.matches("c1", {"app": "web", "version": "v2", "tenant": "t2"})
    assert not term.matches("c1", {"app": "web", "version": "v1", "tenant": "t2"})
    assert not term.matches("c1", {"app": "web", "version": "v2", "tenant": "t1"})


def test_tolerations_and_taints() -> None:
    taints = (Taint("a", "1", "PreferNoSchedule"), Taint("b", "2", "NoSchedule"),
              Taint("c", "3", "NoExecute"))
    blocking = frozenset({"NoSchedule", "NoExecute"})
    assert find_untolerated_taint(taints, (), blocking) == taints[1]
    assert find_untolerated_taint(taints, (Toleration("b", "Exists"),), blocking) == taints[2]
    assert find_untolerated_taint(taints, (Toleration(operator="Exists"),), blocking) is None
    assert count_intolerable_taints(taints, ()) == 1
    # A toleration for another effect does not count for PreferNoSchedule.
    assert count_intolerable_taints(taints, (Toleration("a", "Exists", effect="NoSchedule"),)) == 1
    assert count_intolerable_taints(taints, (Toleration("a", "Equal", "1"),)) == 0


REQ = "requiredDuringSchedulingIgnoredDuringExecution"
PREF = "preferredDuringSchedulingIgnoredDuringExecution"


@pytest.mark.parametrize(("document", "path"), [
    ({"nodeAffinity": {REQ: {"nodeSelectorTerms": [
        {"matchExpressions": [{"key": "a", "operator": "Near", "values": ["x"]}]}]}}},
     f"nodeAffinity.{REQ}.nodeSelectorTerms[0].matchExpressions[0].operator"),
    ({"nodeAffinity": {REQ: {"nodeSelectorTerms": [
        {"matchExpressions": [{"key": "a", "operator": "In"}]}]}}},
     f"nodeAffinity.{REQ}.nodeSelectorTerms[0].matchExpressions[0].values"),
    ({"nodeAffinity": {REQ: {"nodeSelectorTerms": [
        {"matchExpressions": [{"key": "a", "operator": "Exists", "values": ["x"]}]}]}}},
     f"nodeAffinity.{REQ}.nodeSelectorTerms[0].matchExpressions[0].values"),
    ({"nodeAffinity": {REQ: {"nodeSelectorTerms": [
        {"matchFields": [{"key": "metadata.labels", "operator": "In", "values": ["x"]}]}]}}},
     f"nodeAffinity.{REQ}.nodeSelectorTerms[0].matchFields[0].key"),
    ({"nodeAffinity": {PREF: [{"weight": 0, "preference": {}}]}}, f"nodeAffinity.{PREF}[0].weight"),
    ({"nodeAffinity": {PREF: [{"weight": 101, "preference": {}}]}},
     f"nodeAffinity.{PREF}[0].weight"),
    ({"podAffinity": {REQ: [{"labelSelector": {}}]}}, f"podAffinity.{REQ}[0].topologyKey"),
    ({"podAntiAffinity": {REQ: [{"topologyKey": "z", "labelSelector": {"matchExpressions": [
        {"key": "a", "operator": "Gt", "values": ["1"]}]}}]}},
     f"podAntiAffinity.{REQ}[0].labelSelector.matchExpressions[0].operator"),
    ({"podAffinity": {REQ: {"topologyKey": "z"}}}, f"podAffinity.{REQ}"),
    # What the API server refuses in matchLabelKeys / mismatchLabelKeys.
    ({"podAffinity": {REQ: [{"topologyKey": "z", "matchLabelKeys": ["app"]}]}},
     f"podAffinity.{REQ}[0].matchLabelKeys"),
    ({"podAffinity": {REQ: [{"topologyKey": "z", "labelSelector": {"matchLabels": {"app": "x"}},
                             "matchLabelKeys": ["app"]}]}},
     f"podAffinity.{REQ}[0].matchLabelKeys[0]"),
    ({"podAffinity": {REQ: [{"topologyKey": "z", "labelSelector": {},
                             "matchLabelKeys": ["v"], "mismatchLabelKeys": ["v"]}]}},
     f"podAffinity.{REQ}[0].mismatchLabelKeys[0]"),
    ({"podAffinity": {"required": []}}, "podAffinity.required"),
])
def test_invalid_documents_name_the_field(document: dict[str, Any], path: str) -> None:
    with pytest.raises(AffinityError) as info:
        parse_affinity(document)
    assert info.value.path == path


def test_a_gt_value_that_is_no_integer_leaves_its_term_unmatched_not_the_pod_refused() -> None:
    # The API server counts Gt/Lt values only; kube-scheduler skips a term it cannot
    # parse, and the other terms (ORed) still match.
    affinity = parse_affinity({"nodeAffinity": {REQ: {"nodeSelectorTerms": [
        {"matchExpressions": [{"key": "gen", "operator": "Gt", "values": ["v4"]}]},
        {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}]}]}}})
    assert affinity.node.required_matches({"gen": "5", "zone": "a"}, "n1")
    assert not affinity.node.required_matches({"gen": "5", "zone": "b"}, "n1")


def test_a_namespace_selector_reads_the_namespace_s_name_label() -> None:
    # The API server labels every namespace kubernetes.io/metadata.name=<name>.
    affinity = parse_affinity({"podAffinity": {REQ: [{
        "topologyKey": "zone", "labelSelector": {"matchLabels": {"app": "db"}},
        "namespaceSelector": {"matchExpressions": [{
            "key": "kubernetes.io/metadata.name", "operator": "In", "values": ["other"]}]}}]}})
    term = affinity.required_affinity[0].resolve("mine")
    assert term.matches("other", {"app": "db"})
    assert not term.matches("mine", {"app": "db"})
    assert not term.matches("third", {"app": "db"})


def test_loader_reports_a_bad_affinity_with_its_path() -> None:
    doc = {
        "version": 1, "name": "bad affinity", "config": {"actions": "", "tiers": []},
        "nodes": [{"name": "n1", "allocatable": {"pods": 1}}],
        "jobs": [{"name": "pg", "namespace": "c1"}],
        "tasks": [{"name": "p", "namespace": "c1", "job": "pg", "affinity": {
            "podAffinity": {REQ: [{"labelSelector": {}}]}}}],
    }
    with pytest.raises(ScenarioError) as info:
        parse_scenario(doc, source="s.yaml")
    assert str(info.value) == (
        f"s.yaml: tasks[0] (c1/p).affinity.podAffinity.{REQ}[0].topologyKey: is required")


def test_a_term_kube_cannot_parse_matches_no_node_whatever_its_operator() -> None:
    # labels.NewRequirement checks every value as a label value: NotIn of a value no
    # label can have is a parse error, and the term is skipped, not matched everywhere.
    # "-5" is no label value either, though an integer.
    for expression in ({"key": "zone", "operator": "NotIn", "values": ["a b"]},
                       {"key": "gen", "operator": "Gt", "values": ["-5"]}):
        affinity = parse_affinity({"nodeAffinity": {REQ: {"nodeSelectorTerms": [
            {"matchExpressions": [expression]}]}}})
        assert not affinity.node.required_matches({"zone": "b", "gen": "7"}, "n1")


def _preferred_only(*documents: dict[str, Any]) -> Any:
    return parse_affinity({"nodeAffinity": {
        "preferredDuringSchedulingIgnoredDuringExecution": list(documents)}}).node


def test_preferred_terms_kube_cannot_parse_are_an_error_for_the_score() -> None:
    # kube's NewPreferredSchedulingTerms fails the whole list for one bad term
    # (NodeAffinity's PreScore then errors); it skips a term of weight 0 unparsed.
    bad = {"matchExpressions": [{"key": "rank", "operator": "Gt", "values": ["six"]}]}
    good = {"matchExpressions": [{"key": "rank", "operator": "Exists"}]}
    node = _preferred_only({"weight": 5, "preference": good}, {"weight": 10, "preference": bad})
    error = node.preferred_parse_error()
    assert error is not None and "six" in error and "must be an integer" in error
    assert _preferred_only({"weight": 5, "preference": good}).preferred_parse_error() is None


def test_a_key_that_is_no_label_name_is_refused_as_the_api_server_refuses_it() -> None:
    with pytest.raises(AffinityError) as info:
        parse_affinity({"nodeAffinity": {REQ: {"nodeSelectorTerms": [
            {"matchExpressions": [{"key": "a/b/c", "operator": "Exists"}]}]}}})
    assert info.value.path.endswith("matchExpressions[0].key")
