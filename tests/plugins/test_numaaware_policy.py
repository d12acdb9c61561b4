"""numa-aware's topology manager policies: Volcano's cases, then the merging rules.

Transcribed from volcano-sh/volcano (Apache-2.0),
pkg/scheduler/plugins/numaaware/policy:

* policy_none_test.go, ``Test_none_predicate``: test-1;
* policy_best_effort_test.go, ``Test_best_effort_predicate``: test-1 to test-6;
* policy_restricted_test.go, ``Test_restricted_predicate``: test-1 to test-6;
* policy_single_numa_node_test.go, ``Test_single_numa_node_predicate``: test-1 to
  test-5.

Each case gives the hints of two providers (``cpu``, then ``gpu``) over NUMA nodes
0 and 1 and the best hint expected; Volcano's cases check the best hint only, and
the admission is checked here too.
"""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from batchsched.plugins.numaaware.policy import (
    BEST_EFFORT,
    NONE,
    RESTRICTED,
    SINGLE_NUMA_NODE,
    ProviderHints,
    TopologyHint,
    policy_for,
)


def hint(*numa: int, preferred: bool) -> TopologyHint:
    return TopologyHint(frozenset(numa), preferred)


def two_providers(cpu: list[TopologyHint], gpu: list[TopologyHint]) -> list[ProviderHints]:
    return [{"cpu": cpu}, {"gpu": gpu}]


#: The hints of Volcano's test-1 to test-6 (the same in the three merging policies).
PROVIDERS = {
    "test-1": two_providers([hint(0, 1, preferred=False), hint(0, preferred=True)],
                            [hint(0, 1, preferred=False), hint(0, preferred=True)]),
    "test-2": two_providers([hint(0, 1, preferred=False), hint(1, preferred=True)],
                            [hint(0, 1, preferred=False), hint(1, preferred=True)]),
    "test-3": two_providers(
        [hint(0, 1, preferred=False), hint(0, preferred=True), hint(1, preferred=True)],
        [hint(0, 1, preferred=False), hint(0, preferred=True), hint(1, preferred=True)]),
    "test-4": two_providers([hint(0, 1, preferred=False), hint(0, preferred=True)],
                            [hint(0, 1, preferred=False), hint(1, preferred=True)]),
    "test-5": two_providers([hint(0, 1, preferred=False), hint(0, preferred=True)],
                            [hint(0, 1, preferred=True)]),
    "test-6": two_providers([hint(0, 1, preferred=True)], [hint(0, 1, preferred=True)]),
}

#: (policy, Volcano case) -> (the best hint, admitted).
EXPECTED = {
    (BEST_EFFORT, "test-1"): (hint(0, preferred=True), True),
    (BEST_EFFORT, "test-2"): (hint(1, preferred=True), True),
    (BEST_EFFORT, "test-3"): (hint(0, preferred=True), True),
    (BEST_EFFORT, "test-4"): (hint(0, preferred=False), True),
    (BEST_EFFORT, "test-5"): (hint(0, preferred=True), True),
    (BEST_EFFORT, "test-6"): (hint(0, 1, preferred=True), True),
    (RESTRICTED, "test-1"): (hint(0, preferred=True), True),
    (RESTRICTED, "test-2"): (hint(1, preferred=True), True),
    (RESTRICTED, "test-3"): (hint(0, preferred=True), True),
    (RESTRICTED, "test-4"): (hint(0, preferred=False), False),
    (RESTRICTED, "test-5"): (hint(0, preferred=True), True),
    (RESTRICTED, "test-6"): (hint(0, 1, preferred=True), True),
    (SINGLE_NUMA_NODE, "test-1"): (hint(0, preferred=True), True),
    (SINGLE_NUMA_NODE, "test-2"): (hint(1, preferred=True), True),
    (SINGLE_NUMA_NODE, "test-3"): (hint(0, preferred=True), True),
    (SINGLE_NUMA_NODE, "test-4"): (hint(0, 1, preferred=False), False),
    (SINGLE_NUMA_NODE, "test-5"): (hint(0, 1, preferred=False), False),
}


@pytest.mark.parametrize(("policy", "case"), sorted(EXPECTED))
def test_volcano_predicate_cases(policy: str, case: str) -> None:
    """Test_best_effort_predicate, Test_restricted_predicate and
    Test_single_numa_node_predicate, case by case."""
    assert policy_for(policy, [0, 1]).predicate(PROVIDERS[case]) == EXPECTED[(policy, case)]


def test_none_predicate_test_1() -> None:
    """policy_none_test.go, Test_none_predicate test-1: no hint, admitted."""
    assert policy_for(NONE, [0, 1]).predicate([]) == (TopologyHint(), True)


# -- the merging rules, beyond Volcano's cases ---------------------------------------------


def predicate(policy: str, providers: Sequence[ProviderHints],
              numa_nodes: Sequence[int] = (0, 1)) -> tuple[TopologyHint, bool]:
    return policy_for(policy, numa_nodes).predicate(providers)


def test_an_unknown_policy_works_as_none() -> None:
    assert predicate("numa-please", PROVIDERS["test-1"]) == (TopologyHint(), True)
    assert policy_for("", [0]).name == NONE


@pytest.mark.parametrize("policy", [BEST_EFFORT, RESTRICTED, SINGLE_NUMA_NODE])
def test_a_provider_without_preference_admits_anywhere(policy: str) -> None:
    # No provider, or one answering None: a preferred "anywhere", i.e. every NUMA node.
    assert predicate(policy, []) == (hint(0, 1, preferred=True), True)
    assert predicate(policy, [None]) == (hint(0, 1, preferred=True), True)
    assert predicate(policy, [{"cpu": None}]) == (hint(0, 1, preferred=True), True)


@pytest.mark.parametrize(("policy", "admitted"),
                         [(BEST_EFFORT, True), (RESTRICTED, False), (SINGLE_NUMA_NODE, False)])
def test_a_resource_nothing_can_serve(policy: str, admitted: bool) -> None:
    # An empty list of hints: a non-preferred "anywhere"; best-effort still admits.
    assert predicate(policy, [{"cpu": []}]) == (hint(0, 1, preferred=False), admitted)


def test_an_empty_intersection_is_skipped() -> None:
    best, admitted = predicate(RESTRICTED, two_providers([hint(0, preferred=True)],
                                                         [hint(1, preferred=True)]))
    assert (best, admitted) == (hint(0, 1, preferred=False), False)


def test_among_as_many_numa_nodes_the_smaller_bit_mask_wins() -> None:
    hints: list[ProviderHints] = [{"cpu": [hint(2, 3, preferred=True),
                                           hint(1, 3, preferred=True)]}]
    assert predicate(BEST_EFFORT, hints, [0, 1, 2, 3])[0] == hint(1, 3, preferred=True)
    assert hint(0, 3, preferred=False).narrower_than(hint(1, 2, preferred=False)) is False
    assert hint(5, preferred=False).narrower_than(hint(0, 1, preferred=False))


def test_single_numa_node_keeps_an_anywhere_hint() -> None:
    # A preferred "anywhere" survives the single-NUMA-node filter: it reads as every
    # NUMA node, which on a one-NUMA-node machine is a single one.
    hints: list[ProviderHints] = [{"cpu": [TopologyHint(None, True)]}]
    assert predicate(SINGLE_NUMA_NODE, hints, [0]) == (hint(0, preferred=True), True)
    assert predicate(SINGLE_NUMA_NODE, hints) == (hint(0, 1, preferred=True), True)
