"""resource-strategy-fit: UNIT-CASES-nodes.md (Test_checkNodeResourceIsProportional), the
strategy-fit and sra scores, and argument handling."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from node_support import document, open_session, plugin, predicates, reasons, scores

from batchsched.api import NodeInfo, Resource, TaskInfo
from batchsched.api.types import FitStatusCode
from batchsched.errors import PluginError
from batchsched.framework.arguments import Arguments
from batchsched.plugins.resource_strategy_fit import (
    LEAST_ALLOCATED,
    MOST_ALLOCATED,
    ResourceStrategy,
    ResourceStrategyFitPlugin,
    SraConfig,
    check_proportional,
    find_strategy,
    least_allocated_part,
    most_allocated_part,
    sra_score,
    strategy_fit_score,
)

GPU = "nvidia.com/gpu"
RATES = {GPU: (4.0, 4.0)}


def _task(**requests: Any) -> TaskInfo:
    return TaskInfo.create("c1", "p", "c1/pg", Resource.from_mapping(requests))


def _node(name: str, **allocatable: Any) -> NodeInfo:
    return NodeInfo.create(name, Resource.from_mapping(allocatable))


N1 = {"cpu": 30, "memory": "30G", GPU: 6}
N2 = {"cpu": 26, "memory": "26G", GPU: 2}


@pytest.mark.parametrize(("requests", "node", "fails"), [
    ({"cpu": 4, "memory": "4G"}, N1, False),              # cpu_task_less_than_reserved_resource
    ({"cpu": 10, "memory": "10G"}, N1, True),             # cpu_task_greater_than_reserved_resource
    ({"cpu": 10, "memory": "10G", GPU: 1}, N1, False),    # gpu_task_no_proportional_check
    ({"cpu": 10, "memory": "10G"}, N2, False),            # cpu_task_less_than_idle_resource
])
def test_check_node_resource_is_proportional(requests: dict[str, Any], node: dict[str, Any],
                                             fails: bool) -> None:
    failed = check_proportional(_task(**requests), _node("n", **node), RATES)
    assert failed == (GPU if fails else None)


def test_proportional_predicate_fails_unresolvable_with_reason() -> None:
    body = """
nodes:
- {name: n1, allocatable: {cpu: 30, memory: 30G, nvidia.com/gpu: 6, pods: 10}}
- {name: n2, allocatable: {cpu: 26, memory: 26G, nvidia.com/gpu: 2, pods: 10}}
jobs: [{name: pg, namespace: c1}]
tasks:
- {name: p, namespace: c1, job: pg, requests: {cpu: 10, memory: 10G}}
"""
    args = {"proportional": {"enable": True, "resources": "nvidia.com/gpu",
                             "resourceProportion": {"nvidia.com/gpu.cpu": 4,
                                                    "nvidia.com/gpu.memory": 4}}}
    ssn = open_session(document(body, plugin("resource-strategy-fit", args)))
    got = predicates(ssn, "c1/p")
    assert reasons(got["n1"]) == [(int(FitStatusCode.UNSCHEDULABLE_AND_UNRESOLVABLE),
                                   "proportional of resource nvidia.com/gpu check failed")]
    assert got["n2"] is None


def test_default_rates_are_one_and_negative_means_one() -> None:
    plugin_ = ResourceStrategyFitPlugin(Arguments({"proportional": {
        "enable": True, "resources": " a, b ,",
        "resourceProportion": {"a.cpu": -2, "b.memory": 8}}}))
    assert plugin_.proportional == {"a": (1.0, 1.0), "b": (1.0, 8.0)}
    assert ResourceStrategyFitPlugin(Arguments({})).proportional is None


# -- strategy fit ---------------------------------------------------------------------------------

SCORE_NODES = """
nodes:
- {name: n1, allocatable: {cpu: 4, memory: 8Gi, nvidia.com/gpu: 4, pods: 10}}
- {name: n2, allocatable: {cpu: 8, memory: 8Gi, pods: 10}}
jobs: [{name: pg, namespace: c1}]
"""


def _scores(arguments: dict[str, Any], task_yaml: str) -> dict[str, float]:
    doc = document(SCORE_NODES + "tasks:\n" + task_yaml,
                   plugin("resource-strategy-fit", arguments))
    return scores(open_session(doc))["c1/p"]


def test_default_resources_are_cpu_and_memory_least_allocated() -> None:
    got = _scores({}, "- {name: p, namespace: c1, job: pg, requests: {cpu: 2, memory: 2Gi}}\n")
    # n1: cpu (4-2)/4 = 0.5, memory (8-2)/8 = 0.75 -> 0.625 * 100 * 10
    assert got == pytest.approx({"n1": 625.0, "n2": (0.75 + 0.75) / 2 * 1000})


def test_prefix_pattern_and_exact_key() -> None:
    strategies = {"nvidia.com/*": ResourceStrategy(MOST_ALLOCATED, 3),
                  "nvidia.com/gpu": ResourceStrategy(LEAST_ALLOCATED, 1),
                  "nvidia.*": ResourceStrategy(LEAST_ALLOCATED, 9)}
    assert find_strategy("nvidia.com/gpu", strategies) == ResourceStrategy(LEAST_ALLOCATED, 1)
    assert find_strategy("nvidia.com/t4", strategies) == ResourceStrategy(MOST_ALLOCATED, 3)
    assert find_strategy("nvidia.x", strategies) == ResourceStrategy(LEAST_ALLOCATED, 9)
    assert find_strategy("cpu", strategies) is None


def test_invalid_patterns_are_dropped_and_bad_types_default() -> None:
    p = ResourceStrategyFitPlugin(Arguments({"resources": {
        "*": {"type": "MostAllocated", "weight": 2},
        "a*b": {"type": "MostAllocated", "weight": 2},
        "gpu*": {"type": "RequestedToCapacityRatio", "weight": 0},
        "cpu": {"type": "MostAllocated", "weight": 5}}}))
    assert p.strategies == {"gpu*": ResourceStrategy(LEAST_ALLOCATED, 1),
                            "cpu": ResourceStrategy(MOST_ALLOCATED, 5)}
    assert p.weight == 10


def test_not_enough_on_a_configured_resource_zeroes_the_fit_part_only() -> None:
    args = {"resources": {"cpu": {"type": "MostAllocated", "weight": 1}},
            "sra": {"enable": True, "resources": "nvidia.com/gpu", "weight": 1}}
    got = _scores(args, "- {name: p, namespace: c1, job: pg, requests: {cpu: 6}}\n")
    # n1 has 4 cpu: fit part 0; sra: n1 has the scarce GPU -> 0.
    # n2: fit 6/8 * 1000 = 750; sra: no GPU -> (1 - 0/1) * 100 * 1 = 100.
    assert got == pytest.approx({"n1": 0.0, "n2": 850.0})


def _pod_weighted(weights: str) -> str:
    """A task asking 2 cpu and 2Gi that sets its own strategy: MostAllocated, with the
    weight annotation ``weights`` (JSON text)."""
    return f"""- name: p
  namespace: c1
  job: pg
  requests: {{cpu: 2, memory: 2Gi}}
  annotations:
    volcano.sh/resource-strategy-scoring-type: MostAllocated
    volcano.sh/resource-strategy-weight: '{weights}'
"""


def test_pod_level_strategy_annotations() -> None:
    got = _scores({"resourceStrategyFitWeight": 1}, _pod_weighted('{"cpu": 1}'))
    assert got == pytest.approx({"n1": 50.0, "n2": 25.0})
    broken = _pod_weighted('{"cpu": ')
    assert _scores({"resourceStrategyFitWeight": 1}, broken) == {"n1": 0.0, "n2": 0.0}


def test_a_pod_s_own_weights_name_resources_exactly() -> None:
    """Volcano looks a pod's weights up by exact name: ``c*`` is no pattern there."""
    got = _scores({"resourceStrategyFitWeight": 1}, _pod_weighted('{"c*": 1}'))
    assert got == {"n1": 0.0, "n2": 0.0}


def test_a_pod_weight_given_twice_is_read_twice_as_go_reads_it() -> None:
    """Go decodes both values of the key: a string first is an error (no score at
    all), though the last, kept, is a number."""
    twice = _pod_weighted('{"cpu": "2", "cpu": 1}')
    assert _scores({"resourceStrategyFitWeight": 1}, twice) == {"n1": 0.0, "n2": 0.0}
    last = _pod_weighted('{"cpu": 5, "cpu": 1}')
    assert _scores({"resourceStrategyFitWeight": 1}, last) == pytest.approx(
        {"n1": 50.0, "n2": 25.0})


def test_a_null_weight_in_the_pod_annotation_is_zero() -> None:
    """Go's json.Unmarshal leaves a null at the zero weight, without an error."""
    got = _scores({"resourceStrategyFitWeight": 1}, _pod_weighted('{"cpu": 1, "memory": null}'))
    assert got == pytest.approx({"n1": 50.0, "n2": 25.0})


def test_a_scarce_resource_listed_twice_counts_twice_in_the_total() -> None:
    """Volcano's ``calculateSraWeight`` adds each listing to the sum."""
    from batchsched.plugins.resource_strategy_fit import read_sra

    sra = read_sra(Arguments({"sra": {"enable": True, "weight": 1,
                                      "resources": "nvidia.com/gpu, nvidia.com/gpu, a"}}))
    assert sra.resources == {GPU: 1, "a": 1}
    assert sra.weight_sum == 3
    request = Resource.from_mapping({"cpu": 1, "pods": 1})
    with_gpu = Resource.from_mapping({"cpu": 4, GPU: 1, "pods": 10})
    assert sra_score(request, with_gpu, sra) == pytest.approx((1 - 1 / 3) * 100)


@pytest.mark.parametrize("arguments", [
    {"sra": {"enable": False, "weight": "ten"}},
    {"sra": {"resourceWeight": {"a": "x"}}},
    {"proportional": {"enable": False, "resourceProportion": {"a.cpu": "x"}}},
    {"proportional": {"resources": 3}},
])
def test_a_disabled_block_with_a_bad_value_is_still_an_error(
        arguments: dict[str, Any]) -> None:
    """Volcano decodes the whole block before it reads ``enable`` (and exits)."""
    doc = document(SCORE_NODES, plugin("resource-strategy-fit", arguments))
    with pytest.raises(PluginError, match="argument"):
        open_session(doc)


def test_an_entry_without_a_value_is_the_zero_value() -> None:
    from batchsched.plugins.resource_strategy_fit import read_proportional, read_sra

    sra = read_sra(Arguments({"sra": {"enable": True, "weight": 1, "resources": "a,b",
                                      "resourceWeight": {"a": None}}}))
    assert sra.resources == {"a": 0, "b": 1}
    rates = read_proportional(Arguments({"proportional": {
        "enable": True, "resources": "a", "resourceProportion": {"a.cpu": None}}}))
    assert rates == {"a": (0.0, 1.0)}


@pytest.mark.parametrize("weight", [0, None])
def test_weight_zero_registers_no_score(weight: int | None) -> None:
    # None: the key written with no value, which Go's Get[int] decodes as 0.
    doc = document(SCORE_NODES + "tasks: [{name: p, namespace: c1, job: pg, requests: {cpu: 1}}]",
                   plugin("resource-strategy-fit", {"resourceStrategyFitWeight": weight}))
    ssn = open_session(doc)
    assert "resource-strategy-fit" not in ssn.registered("node_order")


def test_sra_score_formula() -> None:
    sra = SraConfig(weight=5, resources={"a": 2, "b": 1})
    request = Resource.from_mapping({"cpu": 1, "pods": 1})
    with_a = Resource.from_mapping({"cpu": 4, "a": 1, "pods": 10})
    plain = Resource.from_mapping({"cpu": 4, "pods": 10})
    no_pods = Resource.from_mapping({"cpu": 4})
    assert sra_score(request, with_a, sra) == pytest.approx((1 - 2 / 3) * 500)
    assert sra_score(request, plain, sra) == pytest.approx(500)
    assert sra_score(request, no_pods, sra) == 0.0


@pytest.mark.parametrize("arguments", [
    {"resourceStrategyFitWeight": "ten"},
    {"resources": {"cpu": {"weight": "heavy"}}},
    {"resources": ["cpu"]},
    {"sra": {"enable": "yes"}},
    {"proportional": {"enable": True, "resourceProportion": {"a.cpu": "x"}, "resources": "a"}},
])
def test_bad_argument_types_are_clear_errors(arguments: dict[str, Any]) -> None:
    doc = document(SCORE_NODES, plugin("resource-strategy-fit", arguments))
    with pytest.raises(PluginError, match="argument"):
        open_session(doc)


amounts = st.integers(min_value=0, max_value=64_000)


@given(request=amounts, used=amounts, capacity=amounts, weight=st.integers(0, 10))
def test_parts_stay_between_zero_and_weight(request: int, used: int, capacity: int,
                                             weight: int) -> None:
    for part in (most_allocated_part(request, used, capacity, weight),
                 least_allocated_part(request, used, capacity, weight)):
        if part is None:
            assert request + used > capacity > 0 and weight > 0
        else:
            assert 0.0 <= part <= weight + 1e-9


@given(cpu=st.integers(1, 8000), used=st.integers(0, 8000), weight=st.integers(1, 20))
def test_fit_score_is_bounded_by_100_times_weight(cpu: int, used: int, weight: int) -> None:
    request = Resource(cpu, 0, {"pods": 1})
    score = strategy_fit_score(request, Resource(8000, 0), Resource(used, 0),
                               {"cpu": ResourceStrategy(MOST_ALLOCATED, 2)}, weight)
    assert 0.0 <= score <= 100 * weight + 1e-6


def test_integers_are_decoded_as_mapstructure_decodes_a_go_int() -> None:
    """A float that is not finite is Go's int64 of it (-2^63), not an error: a disabled
    block holding one builds, as in Volcano."""
    from batchsched.plugins.resource_strategy_fit import _int, read_sra

    assert _int(float("inf"), "w") == _int(float("nan"), "w") == -(2**63)
    assert _int(2.9, "w") == 2 and _int(2**63, "w") == -(2**63)
    assert read_sra(Arguments({"sra": {"enable": False, "weight": float("inf")}})) == SraConfig()


def test_the_weight_sum_is_a_go_int() -> None:
    """Weights past int64 wrap in the sum: the division is then skipped, as in Go."""
    strategies = {"cpu": ResourceStrategy(MOST_ALLOCATED, 2**63 - 1),
                  "memory": ResourceStrategy(MOST_ALLOCATED, 1)}
    request = Resource.from_mapping({"cpu": 1, "memory": "1Gi"})
    node = Resource.from_mapping({"cpu": 4, "memory": "4Gi"})
    got = strategy_fit_score(request, node, Resource(), strategies, 1)
    assert got == ((2**63 - 1) * 1000 / 4000 + 1 * 2**30 / 2**32) * 100.0


def test_a_field_spelt_as_go_s_wins_over_one_equal_in_another_case() -> None:
    """mapstructure looks the struct field's own name up first (Weight), then any key
    equal to it in another case (weight)."""
    p = ResourceStrategyFitPlugin(Arguments({
        "resources": {"cpu": {"type": "MostAllocated", "weight": 1, "Weight": 4}},
        "sra": {"enable": True, "resources": "nvidia.com/gpu", "weight": 1, "Weight": 5}}))
    assert p.strategies == {"cpu": ResourceStrategy(MOST_ALLOCATED, 4)}
    assert p.sra.weight == 5
