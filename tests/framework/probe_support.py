"""Sessions of probe plugins: plugins whose registrations the test gives, for tests of
the session's combination rules."""

from __future__ import annotations

from collections.abc import Callable

from batchsched.api import ClusterInfo
from batchsched.conf import configuration_from_text
from batchsched.framework import Session
from batchsched.framework.registry import Registry
from batchsched.plugin import PluginSpec, hookimpl

Registration = Callable[[Session, str], None]


class Probe:
    """A plugin whose registrations are given by the test."""

    def __init__(self, name: str, register: Registration) -> None:
        self.name = name
        self._register = register

    def on_session_open(self, ssn: Session) -> None:
        self._register(ssn, self.name)

    def on_session_close(self, ssn: Session) -> None:
        pass


def session(tiers: list[list[tuple[str, Registration]]], flags: str = "") -> Session:
    """A session of probe plugins, tier by tier; ``flags`` are added to every plugin."""
    registry = Registry(autoload=False)
    specs = [PluginSpec(name, lambda args, n=name, r=reg: Probe(n, r))
             for tier in tiers for name, reg in tier]

    class Provider:
        @hookimpl
        def batchsched_register_plugins(self) -> list[PluginSpec]:
            return specs
    registry.register(Provider(), name="probes")
    text = "actions: ''\ntiers:\n" + "".join(
        "- plugins:\n" + "".join(f"  - name: {name}\n{flags}" for name, _ in tier) for tier in tiers
    )
    return Session.open(ClusterInfo(now=1.0), configuration_from_text(text), registry=registry)
