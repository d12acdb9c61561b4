"""Finding actions and plugins: every distribution's entry points, built-ins included.

Every distribution, batchsched itself among them, declares an entry point in
the ``batchsched`` group naming a module whose pluggy hooks return its
actions and plugins. batchsched's own entry point (:mod:`batchsched.builtin`)
is loaded first and always; the others follow unless
``BATCHSCHED_DISABLE_PLUGIN_AUTOLOAD`` is set. The registry imports no
action or plugin module itself: it knows them only through entry points.
An entry point that fails to import is reported in :attr:`Registry.broken`
and skipped; a plugin or action name two installed distributions claim is used by
neither (both are named in :attr:`Registry.broken`, and a configuration naming it
fails with the error naming both; a built-in keeps its name), while a name a
program's own :meth:`Registry.register` claims again is a
:class:`~batchsched.errors.PluginError` naming both. Nothing
is instantiated here: sessions build only the plugins their configuration
names.
"""

from __future__ import annotations

import importlib
import inspect
import logging
import os
from collections.abc import Iterable, Sequence
from importlib import metadata
from types import ModuleType
from typing import Any, TypeVar

import attrs
import pluggy

from batchsched import hookspecs
from batchsched._version import __version__
from batchsched.errors import PluginError
from batchsched.framework.arguments import Arguments
from batchsched.framework.combine import passes_through
from batchsched.plugin import ActionSpec, PluginSpec

__all__ = ["AUTOLOAD_ENV", "Registered", "Registry", "default_registry"]

_T = TypeVar("_T")

log = logging.getLogger("batchsched")

AUTOLOAD_ENV = "BATCHSCHED_DISABLE_PLUGIN_AUTOLOAD"
ENTRY_POINT_GROUP = "batchsched"
DISTRIBUTION = "batchsched"
#: batchsched's own entry point, as its pyproject.toml declares it.
BUILTIN_ENTRY_POINT = metadata.EntryPoint(
    name="batchsched", value="batchsched.builtin", group=ENTRY_POINT_GROUP
)


@attrs.frozen
class Registered:
    """A plugin or action spec with the distribution that provides it."""

    spec: PluginSpec | ActionSpec
    distribution: str
    version: str
    module: str

    @property
    def name(self) -> str:
        return self.spec.name


class Registry:
    """The actions and plugins available to sessions."""

    def __init__(self, *, autoload: bool | None = None) -> None:
        self.manager = pluggy.PluginManager("batchsched")
        self.manager.add_hookspecs(hookspecs)
        #: (registrant, why) of every distribution or hook skipped: the entry points
        #: that failed to load, then the registration hooks that failed at the last
        #: :meth:`refresh`, then what :meth:`note_broken` was told.
        self.broken: list[tuple[str, str]] = []
        self._unloadable: list[tuple[str, str]] = []
        self._noted: dict[tuple[str, str], str] = {}
        self._warned: set[tuple[str, str]] = set()
        self._origin: dict[str, tuple[str, str]] = {}
        #: A third-party distribution's entry points (registrant -> distribution): one
        #: that fails skips the distribution's others too.
        self._third_party: dict[str, str] = {}
        self.plugins: dict[str, Registered] = {}
        self.actions: dict[str, Registered] = {}
        #: Plugin and action names several installed distributions claim
        #: (("plugin" or "action", name) -> the error naming them): none is used; a
        #: configuration naming one fails with that error.
        self.contested: dict[tuple[str, str], str] = {}
        if autoload is None:
            autoload = not os.environ.get(AUTOLOAD_ENV)
        self._load_entry_points(autoload=autoload)
        self.refresh()

    def _load_entry_points(self, *, autoload: bool) -> None:
        own: list[metadata.EntryPoint] = []
        others: list[metadata.EntryPoint] = []
        for ep in metadata.entry_points(group=ENTRY_POINT_GROUP):
            (own if _distribution_name(ep) == DISTRIBUTION else others).append(ep)
        if not own:
            # Run from a source tree, or bundled without its metadata: the built-ins
            # come through the same entry point, declared here instead of on disk.
            own = [BUILTIN_ENTRY_POINT]
        for ep in [*own, *(others if autoload else ())]:
            dist_name = _distribution_name(ep) or DISTRIBUTION
            version = ep.dist.version if ep.dist is not None else __version__
            # An entry point's name is its distribution's business: two distributions
            # may both call theirs "plugins" (the names they register may not clash).
            key = ep.name if dist_name == DISTRIBUTION else f"{dist_name}:{ep.name}"
            if self.manager.has_plugin(key):
                continue  # the same distribution seen twice on the path
            if dist_name != DISTRIBUTION:
                self._third_party[key] = dist_name
            try:
                module = ep.load()
            except Exception as exc:
                message = f"entry point {ep.name!r} of {dist_name}: {type(exc).__name__}: {exc}"
                self._unloadable.append((key, message))
                log.warning("batchsched: skipping broken plugin %s", message)
                continue
            if self.manager.is_registered(module):
                continue  # a second entry point for the same module: one is enough
            try:
                self.register(module, name=key, distribution=dist_name, version=version,
                              refresh=False)
            except PluginError as exc:  # a hook pluggy refuses (a wrong signature)
                message = f"entry point {ep.name!r} of {dist_name}: {exc}"
                self._unloadable.append((key, message))
                log.warning("batchsched: skipping broken plugin %s", message)

    def register(
        self,
        obj: ModuleType | object,
        *,
        name: str | None = None,
        distribution: str = "<local>",
        version: str = "",
        refresh: bool = True,
    ) -> None:
        """Register an object (usually a module) whose hookimpls provide specs.

        Programs and tests use this to add plugins without packaging them.
        """
        try:
            registered = self.manager.register(obj, name=name)
            # A hook implementation no hookspec knows (a misspelt name) would never be
            # called: refused, as pluggy's check says.
            self.manager.check_pending()
        except (ValueError, pluggy.PluginValidationError) as exc:
            # pluggy: the name or the object is registered already, or a hook's
            # signature is not the hookspec's. pluggy before 1.7 keeps the name and
            # the hooks it took before the bad one: none of them may stay.
            if isinstance(exc, pluggy.PluginValidationError) and self.manager.is_registered(obj):
                self.manager.unregister(obj)
            why = "; ".join(line.strip() for line in str(exc).splitlines() if line.strip())
            raise PluginError(f"could not register {name or obj!r}: {why}") from exc
        if registered is None:
            raise PluginError(f"could not register {name or obj!r} (blocked or duplicate)")
        unmarked = self._unmarked_hooks(obj)
        if unmarked:
            # pluggy takes only marked functions: these would never be called.
            self.manager.unregister(obj)
            raise PluginError(f"could not register {name or obj!r}: "
                              f"{', '.join(unmarked)} not marked @hookimpl "
                              "(batchsched.plugin.hookimpl): never called")
        self._origin[registered] = (distribution, version)
        if refresh:
            try:
                self.refresh()
            except PluginError:  # a name claimed twice: the registry stays as it was
                self._forget(obj, registered)
                raise
            mine = [message for who, message in self.broken if who == registered]
            if mine:
                # What a program registers itself must not go missing in a log line.
                self._forget(obj, registered)
                raise PluginError(f"could not register {name or obj!r}: {'; '.join(mine)}")

    def _unmarked_hooks(self, obj: object) -> list[str]:
        """The functions of ``obj`` named like a hook of batchsched that pluggy did
        not take as implementations (no ``@hookimpl``)."""
        taken = {caller.name for caller in self.manager.get_hookcallers(obj) or ()}
        return sorted(
            name for name in dir(hookspecs)
            if name.startswith("batchsched_") and name not in taken
            and callable(getattr(obj, name, None)))

    def _forget(self, obj: object, registered: str) -> None:
        """Undo a registration that refresh refused."""
        self.manager.unregister(obj)
        self._origin.pop(registered, None)
        self.refresh()

    def note_broken(self, registrant: str, hook: str, message: str) -> None:
        """Name ``registrant``'s ``hook`` in :attr:`broken` (skipped: ``message`` says
        why), once per registrant and hook however often it fails, with a warning the
        first time (the kube-plugin hook, asked by every session that uses them)."""
        key = (registrant, hook)
        known = key in self._noted
        self._noted[key] = message
        self.broken = [entry for entry in self.broken
                       if not (entry[0] == registrant and entry[1].startswith(f"{hook}: "))]
        self.broken.append((registrant, f"{hook}: {message}"))
        if not known:
            log.warning("batchsched: registration hook failed: %s (%s)", registrant, message)

    def notify(self, hook_name: str, **kwargs: Any) -> None:
        """Call a lifecycle hook (``batchsched_session_opened`` and the like). An
        observer that raises fails it with a PluginError naming the registrant, its
        distribution and the hook, whatever was calling."""
        hook = getattr(self.manager.hook, hook_name)
        try:
            hook(**kwargs)
        except Exception as exc:
            if passes_through(exc):
                raise
            who = self._raiser(hook, exc)
            raise PluginError(f"{hook_name} of {who} raised: {type(exc).__name__}: {exc}",
                              plugin=who, point=hook_name) from exc

    def _raiser(self, hook: Any, exc: BaseException) -> str:
        """The registrant whose implementation of ``hook`` raised ``exc`` (the outermost
        implementation frame in its traceback)."""
        # Two registrants may share one function (instances of one observer class):
        # the frame's own ``self`` tells them apart.
        owners: dict[object, list[tuple[object, str]]] = {}
        for impl in hook.get_hookimpls():
            code = getattr(impl.function, "__code__", None)
            if code is not None:
                owners.setdefault(code, []).append((impl.plugin, impl.plugin_name))
        tb = exc.__traceback__
        while tb is not None:
            candidates = owners.get(tb.tb_frame.f_code)
            if candidates:
                bound = tb.tb_frame.f_locals.get("self")
                name = next((name for plugin, name in candidates if plugin is bound),
                            candidates[0][1])
                dist, _ = self._origin.get(name, ("<unknown>", ""))
                return f"{name} ({dist})"
            tb = tb.tb_next
        return "an observer"

    def distribution_of(self, registrant: str) -> str:
        """The distribution a registrant (an entry point's key, or the name given to
        :meth:`register`) came from."""
        return self._origin.get(registrant, ("<unknown>", ""))[0]

    def refresh(self) -> None:
        """Collect specs from every registered hookimpl; raise on a name claimed twice.
        :attr:`broken` is worked out anew: a hook that fails again is named once."""
        plugins: dict[str, Registered] = {}
        actions: dict[str, Registered] = {}
        failures: list[tuple[str, str]] = []
        produced_by: list[tuple[Any, dict[str, Registered], list[Any]]] = []
        # What fails is skipped whole: a third-party distribution, else a registrant.
        def unit(registrant: str) -> tuple[str, str]:
            dist = self._third_party.get(registrant)
            return ("distribution", dist) if dist is not None else ("registrant", registrant)

        failed = {unit(key) for key, _ in self._unloadable}
        for hook, table in (
            (self.manager.hook.batchsched_register_plugins, plugins),
            (self.manager.hook.batchsched_register_actions, actions),
        ):
            for impl in reversed(hook.get_hookimpls()):
                dist = self._origin.get(impl.plugin_name, ("<unknown>", ""))[0]
                who = impl.plugin_name if not impl.plugin_name.isdigit() else repr(impl.plugin)
                expected = PluginSpec if table is plugins else ActionSpec
                try:
                    produced: Any = impl.function()
                    if isinstance(produced, (PluginSpec, ActionSpec)):
                        raise TypeError(f"{hook.name} returned {produced!r}, not a list of "
                                        f"{type(produced).__name__}")
                    specs: list[Any] = list(produced or ())
                    for spec in specs:
                        if not isinstance(spec, expected):
                            raise TypeError(f"{hook.name} returned {spec!r} in its list; "
                                            f"expected {expected.__name__}")
                except Exception as exc:
                    message = f"{who} ({dist}): {type(exc).__name__}: {exc}"
                    failures.append((impl.plugin_name, message))
                    failed.add(unit(impl.plugin_name))
                    if (impl.plugin_name, message) not in self._warned:
                        self._warned.add((impl.plugin_name, message))
                        log.warning("batchsched: registration hook failed: %s", message)
                    continue
                produced_by.append((impl, table, specs))
        # Every claim of each (kind, name), the latest registrant first: a name claimed once
        # is its claimant's; one claimed again is resolved below.
        claims: dict[tuple[str, str], list[tuple[str, Registered]]] = {}
        tables = {"plugin": plugins, "action": actions}
        for impl, table, specs in produced_by:
            if unit(impl.plugin_name) in failed:
                # Half registered (its actions without its plugins, say), a
                # distribution would fail later, far from its cause.
                continue
            dist, version = self._origin.get(impl.plugin_name, ("<unknown>", ""))
            module = getattr(impl.plugin, "__name__", type(impl.plugin).__name__)
            kind = "plugin" if table is plugins else "action"
            for spec in specs:
                claims.setdefault((kind, spec.name), []).append(
                    (impl.plugin_name, Registered(spec, dist, version, module)))
        contested: dict[tuple[str, str], str] = {}
        for (kind, name), claimed in claims.items():
            if len(claimed) == 1:
                tables[kind][name] = claimed[0][1]
                continue
            roles = {registrant: self.role_of(registrant) for registrant, _ in claimed}
            claimants = list(dict.fromkeys(f"{entry.distribution} ({entry.module})"
                                           for _, entry in claimed))
            if "program" in roles.values():
                # What a program registers itself is refused at once.
                raise PluginError(f"{kind} name {name!r} is claimed more than once: by "
                                  f"{listed_names(claimants)}"
                                  + (" (twice)" if len(claimants) == 1 else ""), plugin=name)
            kept, message, losers = self.settle_claims(kind, name, claimed)
            if kept is not None:
                tables[kind][name] = kept
            else:
                contested[kind, name] = message
            failures.extend((registrant, message) for registrant in losers)
            if ("", message) not in self._warned:  # said once, not once per claimant
                self._warned.add(("", message))
                log.warning("batchsched: skipping a name claimed more than once: %s", message)
        self.contested = contested
        self.plugins = plugins
        self.actions = actions
        # A registrant taken out since its hook failed is broken no more.
        self._noted = {key: message for key, message in self._noted.items()
                       if self.manager.has_plugin(key[0])}
        self.broken = [*self._unloadable, *failures,
                       *((who, f"{hook}: {message}")
                         for (who, hook), message in self._noted.items())]

    def settle_claims(self, kind: str, name: str, claimed: Sequence[tuple[str, _T]]
                      ) -> tuple[_T | None, str, list[str]]:
        """A name installed distributions (and perhaps batchsched itself) claim more
        than once: what keeps it (the built-in's claim; None: no claim, the name is
        none's), the message naming the claimants, and the registrants whose claims
        are skipped. Everything else the distributions provide works on."""
        roles = {registrant: self.role_of(registrant) for registrant, _ in claimed}
        builtin = next((value for registrant, value in claimed
                        if roles[registrant] == "builtin"), None)
        losers = list(dict.fromkeys(registrant for registrant, _ in claimed
                                    if roles[registrant] == "installed"))
        dists = sorted({self.distribution_of(registrant) for registrant in losers})
        if builtin is not None:
            return builtin, (f"{kind} name {name!r} is batchsched's; {listed_names(dists)} "
                             "claimed it too: their claim is skipped"), losers
        claimants = f"{dists[0]} (more than once)" if len(dists) == 1 else listed_names(dists)
        return None, f"{kind} name {name!r} is claimed by {claimants}: none of them gets it", \
            losers

    def role_of(self, registrant: str) -> str:
        """``installed`` (a distribution's entry point), ``builtin`` or ``program`` (a
        program's own :meth:`register`)."""
        if registrant in self._third_party:
            return "installed"
        builtin = self._origin.get(registrant, ("", ""))[0] == DISTRIBUTION
        return "builtin" if builtin else "program"

    def create_plugin(self, name: str, arguments: Arguments | None = None) -> Any:
        try:
            entry = self.plugins[name]
        except KeyError:
            raise PluginError(
                self.contested.get(("plugin", name))
                or f"unknown plugin {name!r} (known: {', '.join(sorted(self.plugins))})",
                plugin=name,
            ) from None
        try:
            return entry.spec.factory(arguments if arguments is not None else Arguments())
        except Exception as exc:
            raise PluginError(
                f"plugin {name!r} ({entry.distribution}) failed to build: "
                f"{type(exc).__name__}: {exc}", plugin=name,
            ) from exc

    def create_action(self, name: str, arguments: Arguments | None = None) -> Any:
        try:
            entry = self.actions[name]
        except KeyError:
            raise PluginError(
                self.contested.get(("action", name))
                or f"unknown action {name!r} (known: {', '.join(sorted(self.actions))})",
                plugin=name,
            ) from None
        factory: Any = entry.spec.factory
        if arguments is None or arguments.kind != "action":
            arguments = Arguments(arguments, kind="action")  # its warnings say "action"
        try:
            if _takes_argument(factory):
                return factory(arguments)
            return factory()
        except Exception as exc:
            raise PluginError(
                f"action {name!r} ({entry.distribution}) failed to build: "
                f"{type(exc).__name__}: {exc}", plugin=name,
            ) from exc

    def describe(self) -> Iterable[tuple[str, Registered]]:
        """("action"|"plugin", entry) for everything registered, sorted by name."""
        for name in sorted(self.actions):
            yield "action", self.actions[name]
        for name in sorted(self.plugins):
            yield "plugin", self.plugins[name]


def _distribution_name(ep: metadata.EntryPoint) -> str | None:
    dist = ep.dist
    return None if dist is None else str(dist.metadata["Name"])


def _takes_argument(factory: Any) -> bool:
    try:
        signature = inspect.signature(factory)
    except (TypeError, ValueError):
        return False
    required = [
        p for p in signature.parameters.values()
        if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
    ]
    return bool(required)


_default: list[Registry] = []  # one slot: the process-wide registry once built


def default_registry() -> Registry:
    """The process-wide registry, built on first use."""
    if not _default:
        _default.append(Registry())
    return _default[0]


def reset_default_registry() -> None:
    """Forget the process-wide registry (after installing a distribution, in tests)."""
    _default.clear()
    importlib.invalidate_caches()


def listed_names(names: list[str]) -> str:
    """``a``, ``a and b``, ``a, b and c`` (the claimants of a name, in messages)."""
    return names[0] if len(names) == 1 else f"{', '.join(names[:-1])} and {names[-1]}"
