"""Every built-in plugin passes the checks third-party authors run on theirs."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from batchsched import columnar
from batchsched.api.fit import FitError, FitStatus
from batchsched.api.types import FitStatusCode
from batchsched.builtin import PLUGINS
from batchsched.framework.registry import Registry
from batchsched.plugin import PluginSpec, hookimpl
from batchsched.testing.checks import PluginCheck, check_plugin, plugin_checks

REGISTRY = Registry(autoload=False)
CHECKS = [check for name in sorted(PLUGINS) for check in plugin_checks(name, registry=REGISTRY)]


@pytest.mark.parametrize("check", CHECKS, ids=str)
def test_builtin_plugin(check: PluginCheck) -> None:
    check()


def _registry_with(plugin: Any) -> Registry:
    """A registry holding the built-ins and ``plugin`` (a class with a ``name``)."""
    class Provider:
        @hookimpl
        def batchsched_register_plugins(self) -> list[PluginSpec]:
            return [PluginSpec(plugin.name, plugin)]

    registry = Registry(autoload=False)
    registry.register(Provider(), name=plugin.name)
    return registry


def test_a_broken_ordering_is_reported() -> None:
    class Always:
        name = "always-first"

        def __init__(self, arguments: object) -> None: ...

        def on_session_open(self, ssn: object) -> None:
            ssn.add_job_order_fn(self.name, lambda left, right: -1)  # type: ignore[attr-defined]

        def on_session_close(self, ssn: object) -> None: ...

    registry = _registry_with(Always)
    with pytest.raises(AssertionError, match="job_order is not antisymmetric"):
        check_plugin("always-first", registry=registry)


@pytest.mark.parametrize("change", ["node-labels", "task-priority", "job-min-available",
                                    "queue-weight", "node-allocatable"])
def test_a_predicate_that_changes_what_sessions_read_is_reported(change: str) -> None:
    """A predicate that lowers a gang's minimum (and so binds part of it) or relabels a
    node is no read-only answer, whatever it leaves of the resource figures."""

    changes: dict[str, Any] = {
        "node-labels": lambda ssn, task, node: setattr(node, "labels", {**node.labels,
                                                                       "x": "1"}),
        "task-priority": lambda ssn, task, node: setattr(task, "priority", task.priority + 1),
        "job-min-available": lambda ssn, task, node: setattr(ssn.jobs[task.job],
                                                             "min_available", 0),
        "queue-weight": lambda ssn, task, node: setattr(
            ssn.queues[ssn.jobs[task.job].queue], "weight", 7),
        "node-allocatable": lambda ssn, task, node: node.allocatable.add(node.allocatable),
    }

    class Meddling:
        name = "meddling"

        def __init__(self, arguments: object) -> None: ...

        def on_session_open(self, ssn: Any) -> None:
            def predicate(task: Any, node: Any) -> None:
                changes[change](ssn, task, node)

            ssn.add_predicate_fn(self.name, predicate)

        def on_session_close(self, ssn: object) -> None: ...

    registry = _registry_with(Meddling)
    (read_only,) = [check for check in plugin_checks("meddling", registry=registry)
                    if check.name == "read_only"]
    with pytest.raises(AssertionError):
        read_only()


def test_a_column_form_that_disagrees_with_its_scalar_function_is_reported() -> None:
    class Lenient:
        """Its scalar predicate refuses node n0; its column form lets every node pass."""

        name = "lenient-columns"

        def __init__(self, arguments: object) -> None: ...

        def on_session_open(self, ssn: Any) -> None:
            ssn.add_predicate_fn(self.name, lambda task, node: FitError.of(
                task.namespace, task.name, node.name, "not n0") if node.name == "n0" else None)
            columnar.add_predicate_fn(ssn, self.name, lambda task, columns: np.ones(
                len(columns), dtype=np.bool_))

        def on_session_close(self, ssn: object) -> None: ...

    registry = _registry_with(Lenient)
    with pytest.raises(AssertionError, match="the column form of predicate answers 'passes' "
                                             r"for .* on n0, its scalar function 'fails'"):
        check_plugin("lenient-columns", registry=registry)


def test_a_plain_mask_passing_a_node_its_scalar_predicate_stops_at_is_reported() -> None:
    """A harmless error stops the chain of predicates (the next plugin's is not asked):
    a plain mask's True says the scalar function returns None, so it disagrees (the
    pair ``(passes, harmless)`` says it)."""
    class Soft:
        name = "soft-columns"

        def __init__(self, arguments: object) -> None: ...

        def on_session_open(self, ssn: Any) -> None:
            ssn.add_predicate_fn(self.name, lambda task, node: FitError(
                task.namespace, task.name, node.name,
                [FitStatus(FitStatusCode.SUCCESS,
                           "soft")]) if node.name == "n0" else None)
            columnar.add_predicate_fn(ssn, self.name, lambda task, columns: np.ones(
                len(columns), dtype=np.bool_))

        def on_session_close(self, ssn: object) -> None: ...

    registry = _registry_with(Soft)
    with pytest.raises(AssertionError, match=r"answers 'passes' for .* on n0, its scalar "
                                             r"function 'harmless'"):
        check_plugin("soft-columns", registry=registry)


def test_a_column_form_answering_what_the_fast_path_refuses_is_reported() -> None:
    class ZeroD:
        name = "zero-d"

        def __init__(self, arguments: object) -> None: ...

        def on_session_open(self, ssn: Any) -> None:
            ssn.add_node_order_fn(self.name, lambda task, node: 2.0)
            columnar.add_node_order_fn(ssn, self.name,
                                       lambda task, columns, candidates: np.array(2.0))

        def on_session_close(self, ssn: object) -> None: ...

    registry = _registry_with(ZeroD)
    with pytest.raises(AssertionError, match=r"a vector node order must return a number"):
        check_plugin("zero-d", registry=registry)
