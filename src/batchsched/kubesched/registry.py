"""The kube-style plugin registry: names to factories (seed 002 §2.2).

``Register`` refuses a name already there, ``Unregister`` a name not there, and
``Merge`` registers every entry of another registry, failing on the first name
both hold. Distributions provide kube-style plugins through the
``batchsched_register_kube_plugins`` hook of the ``batchsched`` entry-point
group, like every other plugin (:func:`from_entry_points`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from typing import Any

import attrs

from batchsched.errors import PluginError

__all__ = ["KubePluginSpec", "PluginFactory", "Registry", "from_entry_points",
           "kube_plugin_specs"]

#: ``factory(arguments, handle)`` -> a plugin object; ``handle`` is the framework it
#: belongs to (for plugins that reach waiting pods, as coscheduling does).
PluginFactory = Callable[[Mapping[str, Any], Any], Any]


@attrs.frozen
class KubePluginSpec:
    """A kube-style plugin a distribution provides."""

    name: str
    factory: PluginFactory
    description: str = ""


class Registry(Mapping[str, PluginFactory]):
    """kube-scheduler's ``runtime.Registry``."""

    def __init__(self, factories: Mapping[str, PluginFactory] | None = None) -> None:
        self._factories: dict[str, PluginFactory] = {}
        #: Names several installed distributions claim (name -> why none has it).
        self.contested: dict[str, str] = {}
        for name, factory in (factories or {}).items():
            self.register(name, factory)

    def register(self, name: str, factory: PluginFactory) -> None:
        if name in self._factories:
            raise PluginError(f"a kube plugin named {name!r} already exists in the registry",
                              plugin=name)
        self._factories[name] = factory

    def unregister(self, name: str) -> None:
        if name not in self._factories:
            raise PluginError(f"no kube plugin named {name!r} exists in the registry",
                              plugin=name)
        del self._factories[name]

    def merge(self, other: Mapping[str, PluginFactory]) -> None:
        """Register every entry of ``other``; the first name both hold is an error (the
        entries before it stay registered, as in kube-scheduler)."""
        for name, factory in other.items():
            self.register(name, factory)

    def __getitem__(self, name: str) -> PluginFactory:
        try:
            return self._factories[name]
        except KeyError:
            if name in self.contested:
                raise PluginError(self.contested[name], plugin=name) from None
            known = ", ".join(sorted(self._factories)) or "none"
            raise PluginError(f"unknown kube plugin {name!r} (known: {known})",
                              plugin=name) from None

    def __iter__(self) -> Iterator[str]:
        return iter(self._factories)

    def __len__(self) -> int:
        return len(self._factories)


def from_entry_points(registry: Any | None = None) -> Registry:
    """The kube-style plugins every installed distribution provides (the
    ``batchsched_register_kube_plugins`` hook), through the batchsched registry."""
    kube = Registry()
    contested: dict[str, str] = {}
    for spec in kube_plugin_specs(registry, contested=contested):
        kube.register(spec.name, spec.factory)
    kube.contested = contested
    return kube


def kube_plugin_specs(registry: Any | None = None, *,
                      contested: dict[str, str] | None = None) -> list[KubePluginSpec]:
    """The specs of every distribution's ``batchsched_register_kube_plugins`` hook. A
    hook that raises or returns anything but a list of :class:`KubePluginSpec` is
    skipped whole, with a warning, and named in the registry's ``broken`` (as a
    distribution's broken plugin hook is): one bad distribution must not take the
    others, and the built-ins, down with it."""
    if registry is None:
        from batchsched.framework.registry import default_registry

        registry = default_registry()
    claims: dict[str, list[tuple[str, KubePluginSpec]]] = {}
    hook = registry.manager.hook.batchsched_register_kube_plugins
    for impl in reversed(hook.get_hookimpls()):
        try:
            produced: Any = impl.function()
            if isinstance(produced, KubePluginSpec):
                raise TypeError(f"returned {produced!r}, not a list of KubePluginSpec")
            given = list(produced or ())
            for spec in given:
                if not isinstance(spec, KubePluginSpec):
                    raise TypeError(f"returned {spec!r} in its list; expected KubePluginSpec")
        except Exception as exc:
            dist = registry.distribution_of(impl.plugin_name)
            registry.note_broken(impl.plugin_name, "batchsched_register_kube_plugins",
                                 f"({dist}) {type(exc).__name__}: {exc}")
            continue
        for spec in given:
            claims.setdefault(spec.name, []).append((impl.plugin_name, spec))
    return _resolved(registry, claims, {} if contested is None else contested)


def _resolved(registry: Any, claims: dict[str, list[tuple[str, KubePluginSpec]]],
              contested: dict[str, str]) -> list[KubePluginSpec]:
    """One spec per name, as the batchsched registry resolves plugin names: a name
    installed distributions claim again is a built-in's if one holds it, else none's,
    and the distributions are named broken; a program's own claims are left for the
    kube registry to refuse (it names the name)."""
    role = getattr(registry, "role_of", None)
    specs: list[KubePluginSpec] = []
    said: dict[str, list[str]] = {}  # registrant -> why its claims were skipped
    for name, claimed in claims.items():
        roles = {who: role(who) if role is not None else "program" for who, _ in claimed}
        if len(claimed) == 1 or "program" in roles.values():
            specs.extend(spec for _, spec in claimed)
            continue
        kept, message, losers = registry.settle_claims("kube plugin", name, claimed)
        if kept is not None:
            specs.append(kept)
        else:
            contested[name] = message
        for who in losers:
            said.setdefault(who, []).append(message)
    for who, messages in said.items():
        # One note per registrant and hook: all of its skipped claims in it.
        registry.note_broken(who, "batchsched_register_kube_plugins", "; ".join(messages))
    return specs
