"""batchsched's pytest plugin: fixtures for platform tests and plugin authors.

Installed with batchsched (a ``pytest11`` entry point), so pytest loads it in any
project that has batchsched installed. It adds nothing to a test that does not
ask for it. Fixtures:

* ``scenario_builder``: a fresh :class:`~batchsched.testing.ScenarioBuilder`
  (Volcano's default configuration);
* ``run_session``: :func:`batchsched.testing.run` (one session, its decisions);
* ``assert_decisions``: :func:`batchsched.testing.assert_decisions` (one line
  per difference);
* ``simulate_workload``: :func:`batchsched.testing.simulate` (a replay over time).

Plugin authors get batchsched's plugin check suite as parametrised tests: a test
taking ``batchsched_plugin_check`` and marked
``@pytest.mark.batchsched_plugin("NAME", arguments={...})`` runs once per check
(orderings, votes and scores, read-only answers, determinism, no leak between
sessions)::

    import pytest

    @pytest.mark.batchsched_plugin("my-plugin", arguments={"my.weight": 2})
    def test_my_plugin(batchsched_plugin_check):
        batchsched_plugin_check()
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from batchsched.testing import ScenarioBuilder

__all__ = ["assert_decisions", "run_session", "scenario_builder", "simulate_workload"]

_MARKER = "batchsched_plugin"
_CHECK_ARGUMENT = "batchsched_plugin_check"


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        f"{_MARKER}(name, arguments=None): run batchsched's plugin check suite on plugin "
        f"NAME through the {_CHECK_ARGUMENT} argument",
    )


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    marker = metafunc.definition.get_closest_marker(_MARKER)
    where = metafunc.definition.nodeid
    if _CHECK_ARGUMENT not in metafunc.fixturenames:
        # Only a mark on the test itself: a module's or class's pytestmark marks its
        # other tests too.
        if any(own.name == _MARKER for own in metafunc.definition.own_markers):
            # The checks run through the argument: without it the test would pass
            # having checked nothing.
            raise pytest.UsageError(f"{where}: a test marked {_MARKER} must take the "
                                    f"{_CHECK_ARGUMENT} argument and call it")
        return
    if marker is None or len(marker.args) != 1 or not isinstance(marker.args[0], str):
        raise pytest.UsageError(
            f"{where}: a test taking {_CHECK_ARGUMENT} needs "
            f"@pytest.mark.{_MARKER}('plugin name')")
    unknown = sorted(set(marker.kwargs) - {"arguments"})
    if unknown:
        raise pytest.UsageError(f"{where}: @pytest.mark.{_MARKER} takes the plugin name "
                                f"and arguments=, not {', '.join(unknown)}")
    from batchsched.testing.checks import plugin_checks

    checks = list(plugin_checks(marker.args[0], arguments=marker.kwargs.get("arguments")))
    metafunc.parametrize(_CHECK_ARGUMENT, checks, ids=[check.name for check in checks])


@pytest.fixture
def scenario_builder() -> ScenarioBuilder:
    """A new scenario builder with Volcano's default configuration."""
    from batchsched.testing import ScenarioBuilder

    return ScenarioBuilder()


@pytest.fixture
def run_session() -> Callable[..., Any]:
    """``run_session(builder_or_document, scores=None)``: one session's decisions."""
    from batchsched.testing import run

    return run


@pytest.fixture
def assert_decisions() -> Callable[..., None]:
    """``assert_decisions(decisions, binds=..., evicted=..., ...)``."""
    from batchsched.testing import assert_decisions as check

    return check


@pytest.fixture
def simulate_workload() -> Callable[..., Any]:
    """``simulate_workload(builder, until=..., schedule_period=...)``: a timeline."""
    from batchsched.testing import simulate

    return simulate
