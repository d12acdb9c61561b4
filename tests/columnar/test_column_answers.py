"""A column form's malformed answer is the plugin's error, named at once (as the scalar
points name a predicate returning the wrong type), not a numpy error blamed on the
action, nor an array that numpy quietly broadcasts over every node."""

from __future__ import annotations

import types
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from batchsched import columnar
from batchsched.errors import PluginError
from batchsched.framework import Session
from batchsched.framework.registry import Registry
from batchsched.plugin import PluginSpec, hookimpl
from batchsched.testing import ScenarioBuilder, run

NODES = 5


def _registry(predicate: Callable[..., Any], score: Callable[..., Any]) -> Registry:
    class Columns:
        name = "columns"

        def __init__(self, arguments: object) -> None:
            pass

        def on_session_open(self, ssn: Session) -> None:
            ssn.add_predicate_fn(self.name, lambda task, node: None)
            ssn.add_node_order_fn(self.name, lambda task, node: 0.0)
            columnar.add_predicate_fn(ssn, self.name, predicate)
            columnar.add_node_order_fn(ssn, self.name, score)

        def on_session_close(self, ssn: Session) -> None:
            pass
    registry = Registry(autoload=False)
    registry.register(types.SimpleNamespace(batchsched_register_plugins=hookimpl(
        lambda: [PluginSpec("columns", Columns)])), name="columns")
    return registry


def _scenario() -> ScenarioBuilder:
    builder = ScenarioBuilder(config={"actions": "enqueue, allocate", "tiers": [
        {"plugins": [{"name": "gang"}, {"name": "columns"}]}]})
    for i in range(NODES):
        builder.node(f"n{i}", cpu=4, memory="8Gi")
    return builder.job("j", min_member=1).task("t", job="j", cpu=1, memory="1Gi")


def _everywhere(task: Any, columns: Any) -> Any:
    return np.ones(len(columns), dtype=np.bool_)


def _flat(task: Any, columns: Any, candidates: Any) -> Any:
    return 0.0


@pytest.mark.parametrize(("predicate", "score", "point"), [
    (lambda t, c: np.ones(len(c), dtype=np.int64), _flat, "vector predicate"),
    (lambda t, c: np.array([True, True]), _flat, "vector predicate"),
    (lambda t, c: np.array([False]), _flat, "vector predicate"),  # would broadcast
    (lambda t, c: True, _flat, "vector predicate"),
    (lambda t, c: (np.ones(len(c), dtype=np.bool_),) * 3, _flat, "vector predicate"),
    (_everywhere, lambda t, c, cand: np.zeros(1), "vector node order"),
    (_everywhere, lambda t, c, cand: np.array(["1"] * len(cand)), "vector node order"),
    (_everywhere, lambda t, c, cand: None, "vector node order"),
])
def test_a_malformed_column_answer_is_an_error_naming_the_plugin(
        predicate: Callable[..., Any], score: Callable[..., Any], point: str,
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BATCHSCHED_FAST_PATH", "1")
    with pytest.raises(PluginError, match=f"plugin 'columns': a {point} must return") as err:
        run(_scenario(), registry=_registry(predicate, score))
    assert (err.value.plugin, err.value.point) == ("columns", point)


def test_well_formed_column_answers_place_the_task(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BATCHSCHED_FAST_PATH", "1")
    only_n3 = lambda t, c: np.arange(len(c)) == 3  # noqa: E731
    prefer_n3 = lambda t, c, cand: np.zeros(len(cand), dtype=np.int64)  # noqa: E731
    assert run(_scenario(), registry=_registry(only_n3, prefer_n3)).binds == {
        "default/t": "n3"}


@pytest.mark.parametrize("flat", [np.int64(2), np.float32(2.0), 2, 2.0])
def test_a_numpy_number_is_a_score_for_every_candidate(
        flat: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BATCHSCHED_FAST_PATH", "1")
    assert run(_scenario(), registry=_registry(_everywhere, lambda t, c, cand: flat)).binds == {
        "default/t": "n0"}
