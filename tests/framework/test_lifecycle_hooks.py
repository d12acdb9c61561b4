"""An observer of the lifecycle hooks that raises fails the cycle with a PluginError
naming itself and the hook, not the action or the session it was called from."""

from __future__ import annotations

from typing import Any

import pytest

from batchsched import Scheduler, hookimpl
from batchsched.errors import PluginError
from batchsched.framework.registry import Registry
from batchsched.scenario import parse_scenario

SCENARIO = {
    "version": 1, "name": "observed",
    "config": {"actions": "enqueue, allocate",
               "tiers": [{"plugins": [{"name": "gang"}, {"name": "predicates"}]}]},
    "nodes": [{"name": "n1", "allocatable": {"cpu": 2, "memory": "2Gi", "pods": 10}}],
    "jobs": [{"name": "pg", "minMember": 1}],
    "tasks": [{"name": "p", "job": "pg", "requests": {"cpu": 1}}],
}


class Observer:
    def __init__(self, raises_in: str) -> None:
        self.raises_in = raises_in

    def _maybe(self, hook: str) -> None:
        if hook == self.raises_in:
            raise RuntimeError(f"observer boom in {hook}")

    @hookimpl
    def batchsched_session_opened(self, session: Any) -> None:
        self._maybe("batchsched_session_opened")

    @hookimpl
    def batchsched_statement_committed(self, session: Any, operations: Any) -> None:
        self._maybe("batchsched_statement_committed")

    @hookimpl
    def batchsched_session_closed(self, session: Any) -> None:
        self._maybe("batchsched_session_closed")


@pytest.mark.parametrize("hook", ["batchsched_session_opened", "batchsched_statement_committed",
                                  "batchsched_session_closed"])
def test_a_raising_observer_is_named_with_its_hook(hook: str) -> None:
    scenario = parse_scenario(SCENARIO)
    registry = Registry(autoload=False)
    registry.register(Observer(hook), name="my-observer", distribution="obs-dist")
    scheduler = Scheduler(scenario.build_cache(),
                          scenario.configuration, registry=registry)
    with pytest.raises(PluginError) as caught:
        scheduler.run_once()
    assert caught.value.plugin == "my-observer (obs-dist)"
    assert caught.value.point == hook
    assert str(caught.value) == (f"{hook} of my-observer (obs-dist) raised: RuntimeError: "
                                 f"observer boom in {hook}")


def test_of_two_observers_of_one_class_the_one_that_raised_is_named() -> None:
    scenario = parse_scenario(SCENARIO)
    registry = Registry(autoload=False)
    registry.register(Observer("batchsched_session_opened"), name="faulty", distribution="a")
    registry.register(Observer("none"), name="healthy", distribution="b")
    scheduler = Scheduler(scenario.build_cache(), scenario.configuration, registry=registry)
    with pytest.raises(PluginError) as caught:
        scheduler.run_once()
    assert caught.value.plugin == "faulty (a)"


class Parsing:
    @hookimpl
    def batchsched_session_opened(self, session: Any) -> None:
        from batchsched.api import Resource

        Resource.from_mapping({"memory": "lots"})


def test_an_observer_s_quantity_error_is_blamed_on_the_observer() -> None:
    scenario = parse_scenario(SCENARIO)
    registry = Registry(autoload=False)
    registry.register(Parsing(), name="parser", distribution="obs-dist")
    scheduler = Scheduler(scenario.build_cache(), scenario.configuration, registry=registry)
    with pytest.raises(PluginError, match="batchsched_session_opened of parser \\(obs-dist\\) "
                                          "raised: QuantityError"):
        scheduler.run_once()
