"""resource-strategy-fit argument handling, transcribed from Volcano's Go unit tests.

Source: volcano-sh/volcano at commit ed72c7c815a9fd547a787134676f73d42e9d049c
(Apache-2.0):

* pkg/scheduler/plugins/resource-strategy-fit/resource_strategy_fit_test.go:
  ``Test_calculateWeight`` (7 cases), ``Test_findResourceConfigWithPrefix`` (5 cases);
* pkg/scheduler/plugins/resource-strategy-fit/sra_test.go: ``TestArguments``.

Mapping of Go to Python:

* ``calculateWeight(args)`` returns ``ResourceStrategyFit{Weight, Resources}``; here
  ``ResourceStrategyFitPlugin(Arguments(args))`` gives ``.weight`` and ``.strategies``
  (``read_strategies`` alone has no weight).
* ``ResourcesType{Type, Weight}`` is ``ResourceStrategy(type, weight)``.
* ``findResourceConfigWithPrefix`` returns ``(config, found)``; ``find_strategy``
  returns the strategy or None, so ``found == false`` with the zero
  ``ResourcesType{}`` is ``None``.
* ``rsf.Sra.Weight`` / ``.ResourcesWeightSum`` / ``.Resources`` are
  ``plugin.sra.weight`` / ``.weight_sum`` / ``.resources``; ``rsf.Proportional`` is
  ``plugin.proportional`` (resource -> ``(cpu rate, memory rate)``, Go's
  ``{CPU, Memory}``).
"""

from __future__ import annotations

from typing import Any

import pytest

from batchsched.framework.arguments import Arguments
from batchsched.plugins.resource_strategy_fit import (
    LEAST_ALLOCATED,
    MOST_ALLOCATED,
    ResourceStrategy,
    ResourceStrategyFitPlugin,
    find_strategy,
    read_proportional,
    read_sra,
    read_strategies,
)


def _res(kind: str, weight: int) -> dict[str, Any]:
    return {"type": kind, "weight": weight}


# -- Test_calculateWeight ------------------------------------------------------------------

CALCULATE_WEIGHT_CASES = [
    pytest.param(
        {"resourceStrategyFitWeight": 10,
         "resources": {"cpu": _res("MostAllocated", 1), "memory": _res("LeastAllocated", 2)}},
        10,
        {"cpu": ResourceStrategy(MOST_ALLOCATED, 1),
         "memory": ResourceStrategy(LEAST_ALLOCATED, 2)},
        id="test1"),
    pytest.param(
        {"resources": {"cpu": _res("MostAllocated", 1), "memory": _res("LeastAllocated", 2)}},
        10,
        {"cpu": ResourceStrategy(MOST_ALLOCATED, 1),
         "memory": ResourceStrategy(LEAST_ALLOCATED, 2)},
        id="test2"),
    pytest.param(
        {"resourceStrategyFitWeight": 10},
        10,
        {"cpu": ResourceStrategy(LEAST_ALLOCATED, 1),
         "memory": ResourceStrategy(LEAST_ALLOCATED, 1)},
        id="test3"),
    # Tests 4-7 spell the weight key "ResourceStrategyFitPlusWeight", which neither
    # Volcano nor batchsched reads: the weight is the default 10.
    pytest.param(
        {"ResourceStrategyFitPlusWeight": 10,
         "resources": {"cpu": _res("LeastAllocated", 1), "*": _res("MostAllocated", 2)}},
        10,
        {"cpu": ResourceStrategy(LEAST_ALLOCATED, 1)},
        id="test4"),
    pytest.param(
        {"ResourceStrategyFitPlusWeight": 10,
         "resources": {"nvidia.com/gpu/*": _res("MostAllocated", 3),
                       "cloudml.gpu**": _res("LeastAllocated", 2)}},
        10,
        {"nvidia.com/gpu/*": ResourceStrategy(MOST_ALLOCATED, 3)},
        id="test5"),
    pytest.param(
        {"ResourceStrategyFitPlusWeight": 10,
         "resources": {"memory": _res("LeastAllocated", 1),
                       "cloudml.*.gpu": _res("MostAllocated", 2),
                       "*.com/gpu": _res("MostAllocated", 3)}},
        10,
        {"memory": ResourceStrategy(LEAST_ALLOCATED, 1)},
        id="test6"),
    pytest.param(
        {"ResourceStrategyFitPlusWeight": 10,
         "resources": {"nvidia.com/gpu/*": _res("MostAllocated", 3),
                       "example.com/foo/*": _res("LeastAllocated", 2),
                       "*test*resource*": _res("MostAllocated", 4),
                       "*": _res("LeastAllocated", 1)}},
        10,
        {"nvidia.com/gpu/*": ResourceStrategy(MOST_ALLOCATED, 3),
         "example.com/foo/*": ResourceStrategy(LEAST_ALLOCATED, 2)},
        id="test7"),
]


@pytest.mark.parametrize(("arguments", "want_weight", "want_resources"), CALCULATE_WEIGHT_CASES)
def test_calculate_weight(arguments: dict[str, Any], want_weight: int,
                          want_resources: dict[str, ResourceStrategy]) -> None:
    plugin = ResourceStrategyFitPlugin(Arguments(arguments))
    # Go compares the whole struct with reflect.DeepEqual: weight and the resources map.
    assert plugin.weight == want_weight
    assert plugin.strategies == want_resources
    assert read_strategies(Arguments(arguments)) == want_resources


# -- Test_findResourceConfigWithPrefix -------------------------------------------------------

FIND_CASES = [
    pytest.param(
        "nvidia.com/gpu",
        {"nvidia.com/gpu": ResourceStrategy(MOST_ALLOCATED, 3),
         "nvidia.com/*": ResourceStrategy(LEAST_ALLOCATED, 1)},
        ResourceStrategy(MOST_ALLOCATED, 3),
        id="exact_match_priority"),
    pytest.param(
        "nvidia.com/gpu/v100",
        {"nvidia.com/gpu/*": ResourceStrategy(MOST_ALLOCATED, 2),
         "nvidia.com/*": ResourceStrategy(LEAST_ALLOCATED, 1)},
        ResourceStrategy(MOST_ALLOCATED, 2),
        id="longest_prefix_match"),
    pytest.param(
        "example.com/foo",
        {"nvidia.com/gpu/*": ResourceStrategy(MOST_ALLOCATED, 2)},
        None,  # Go: (ResourcesType{}, false)
        id="no_match_found"),
    pytest.param(
        "any.resource",
        {},
        None,  # Go: (ResourcesType{}, false)
        id="empty_resources_map"),
    pytest.param(
        "cloudml.gpu/tensorflow/v2",
        {"cloudml.gpu/tensorflow/*": ResourceStrategy(MOST_ALLOCATED, 3),
         "cloudml.gpu/*": ResourceStrategy(LEAST_ALLOCATED, 2),
         "cloudml/*": ResourceStrategy(MOST_ALLOCATED, 1)},
        ResourceStrategy(MOST_ALLOCATED, 3),
        id="multiple_valid_wildcards_longest_match"),
]


@pytest.mark.parametrize(("resource_name", "resources", "want"), FIND_CASES)
def test_find_resource_config_with_prefix(resource_name: str,
                                          resources: dict[str, ResourceStrategy],
                                          want: ResourceStrategy | None) -> None:
    got = find_strategy(resource_name, resources)
    assert got == want
    assert (got is not None) == (want is not None)  # Go's wantFound


# -- TestArguments (sra_test.go) ---------------------------------------------------------------

SRA_ARGUMENTS: dict[str, Any] = {
    "sra": {
        "enable": True,
        "resources": "nvidia.com/t4, nvidia.com/a10",
        "weight": 3,
        "resourceWeight": {"nvidia.com/t4": 1, "nvidia.com/a10": 2},
    },
    "proportional": {
        "enable": True,
        "resources": "nvidia.com/t4, nvidia.com/a10",
        "resourceProportion": {
            "nvidia.com/t4.cpu": 3,
            "nvidia.com/t4.memory": 6,
            "nvidia.com/a10.cpu": 4,
            "nvidia.com/a10.memory": 8,
        },
    },
}


def test_arguments() -> None:
    # Go builds the plugin through the registered builder (framework.GetPluginBuilder);
    # here the plugin class is built directly.
    plugin = ResourceStrategyFitPlugin(Arguments(SRA_ARGUMENTS))
    sra = plugin.sra
    assert sra.weight == 3
    assert sra.weight_sum == 3
    # Go: every name in sra.Resources must be t4 (1) or a10 (2); no other may appear.
    for name, weight in sra.resources.items():
        assert name in ("nvidia.com/t4", "nvidia.com/a10"), f"resource {name} should not appear"
        assert weight == {"nvidia.com/t4": 1, "nvidia.com/a10": 2}[name]
    assert read_sra(Arguments(SRA_ARGUMENTS)) == sra

    # Go's loop over rsf.Proportional switches on "nvidia.com/t4.cpu" and
    # "nvidia.com/a10.cpu", but the map is keyed by resource name ("nvidia.com/t4"), so
    # no case matches and Go checks nothing here. The values it means to check are
    # checked below, keyed as the Python map (and Volcano's) is keyed.
    proportional = plugin.proportional
    assert proportional is not None
    for name, (cpu, memory) in proportional.items():
        if name == "nvidia.com/t4":
            assert (cpu, memory) == (3, 6)
        elif name == "nvidia.com/a10":
            assert (cpu, memory) == (4, 8)
    assert read_proportional(Arguments(SRA_ARGUMENTS)) == proportional


@pytest.mark.parametrize(("reader", "arguments"), [
    (read_strategies, {"resources": {1: _res(MOST_ALLOCATED, 1)}}),
    (read_sra, {"sra": {"enable": False, "resourceWeight": {1: 2}}}),
    (read_proportional, {"proportional": {"enable": False, "resourceProportion": {True: 2}}}),
])
def test_a_resource_name_that_is_no_string_fails_as_in_volcano(reader: Any,
                                                               arguments: dict[str, Any]) -> None:
    # mapstructure decodes map keys into a string type without weak typing: Volcano's
    # scheduler stops, even for a disabled block.
    with pytest.raises(ValueError, match="expected a resource name"):
        reader(Arguments(arguments))


def test_resource_names_are_trimmed_as_go_trims_them() -> None:
    """Volcano trims each listed name with ``strings.TrimSpace``, which keeps the
    information separators (U+001C to U+001F) that Python's ``strip`` removes: such a
    name matches no resource."""
    sra = read_sra(Arguments({"sra": {"enable": True, "resources": " nvidia.com/gpu\x1f, ,a10 ",
                                      "weight": 1}}))
    assert dict(sra.resources) == {"nvidia.com/gpu\x1f": 1, "a10": 1}
    proportional = read_proportional(Arguments({"proportional": {
        "enable": True, "resources": "\x1cnvidia.com/gpu\t"}}))
    assert proportional is not None and list(proportional) == ["\x1cnvidia.com/gpu"]


# -- what Volcano replaces or drops is said -------------------------------------------------


def test_values_replaced_by_volcano_s_fallbacks_are_said() -> None:
    """Volcano turns a strategy type it does not know into LeastAllocated, a weight
    below 1 into 1, a negative plugin weight into 10 and drops a pattern it cannot
    read (only the last with a log line): the same values here, each said."""
    from batchsched.framework.arguments import collect_warnings

    with collect_warnings() as said:
        plugin = ResourceStrategyFitPlugin(Arguments({
            "resourceStrategyFitWeight": -3,
            "resources": {"*": _res(MOST_ALLOCATED, 2), "a/*b": _res(MOST_ALLOCATED, 2),
                          "cpu": {"type": "MostAlocated", "weight": -1}},
            "sra": {"enable": True, "resources": "nvidia.com/gpu", "weight": 10,
                    "resourceWeight": {"nvidia.com/gpu": -2}},
            "proportional": {"enable": True, "resources": "nvidia.com/gpu",
                             "resourceProportion": {"nvidia.com/gpu.cpu": -4}},
        }))
    assert plugin.weight == 10
    assert plugin.strategies == {"cpu": ResourceStrategy(LEAST_ALLOCATED, 1)}
    assert plugin.sra.resources == {"nvidia.com/gpu": 1}
    assert plugin.proportional == {"nvidia.com/gpu": (1.0, 1.0)}
    joined = "\n".join(said)
    for part in ("'resourceStrategyFitWeight' = -3", "'resources.*'", "'resources.a/*b'",
                 "'resources.cpu.type' = 'MostAlocated'", "'resources.cpu.weight' = -1",
                 "'sra.resourceWeight.nvidia.com/gpu' = -2",
                 "'proportional.resourceProportion.nvidia.com/gpu.cpu' = -4.0"):
        assert part in joined
    assert len(said) == 7


def test_a_misspelt_key_inside_a_block_is_said() -> None:
    from batchsched.framework.arguments import collect_warnings

    with collect_warnings() as said:
        ResourceStrategyFitPlugin(Arguments({
            "resources": {"nvidia.com/gpu": {"type": MOST_ALLOCATED, "wieght": 5}},
            "sra": {"enable": True, "resources": "nvidia.com/gpu", "Weight": 1,
                    "wieght": 10},
            "proportional": {"enabled": True},
        }))
    joined = "\n".join(said)
    assert "'resources.nvidia.com/gpu.wieght'" in joined
    assert "'sra.wieght'" in joined and "'sra.Weight'" not in joined  # any case is a field
    assert "'proportional.enabled'" in joined


def test_defaults_left_out_say_nothing() -> None:
    from batchsched.framework.arguments import collect_warnings

    with collect_warnings() as said:
        ResourceStrategyFitPlugin(Arguments({"resources": {"cpu": {"type": MOST_ALLOCATED}},
                                             "sra": {"enable": False}}))
        ResourceStrategyFitPlugin(Arguments({}))
    assert said == []
