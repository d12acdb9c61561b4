"""Every built-in plugin passes the checks third-party authors run on theirs."""

from __future__ import annotations

import pytest

from batchsched.builtin import PLUGINS
from batchsched.framework.registry import Registry
from batchsched.testing.checks import PluginCheck, check_plugin, plugin_checks

REGISTRY = Registry(autoload=False)
CHECKS = [check for name in sorted(PLUGINS) for check in plugin_checks(name, registry=REGISTRY)]


@pytest.mark.parametrize("check", CHECKS, ids=str)
def test_builtin_plugin(check: PluginCheck) -> None:
    check()


def test_a_broken_ordering_is_reported() -> None:
    from batchsched.plugin import PluginSpec, hookimpl

    class Always:
        name = "always-first"

        def __init__(self, arguments: object) -> None: ...

        def on_session_open(self, ssn: object) -> None:
            ssn.add_job_order_fn(self.name, lambda left, right: -1)  # type: ignore[attr-defined]

        def on_session_close(self, ssn: object) -> None: ...

    class Provider:
        @hookimpl
        def batchsched_register_plugins(self) -> list[PluginSpec]:
            return [PluginSpec("always-first", Always)]

    registry = Registry(autoload=False)
    registry.register(Provider(), name="broken")
    with pytest.raises(AssertionError, match="job_order is not antisymmetric"):
        check_plugin("always-first", registry=registry)
