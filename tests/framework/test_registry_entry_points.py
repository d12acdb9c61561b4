"""Distributions found through their entry points: names are each distribution's own,
and whatever they declare ends in a registered plugin or a clear error, never a
traceback or a silent drop."""

from __future__ import annotations

import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from batchsched.errors import PluginError
from batchsched.framework.registry import Registry
from batchsched.plugin import PluginSpec, hookimpl

MODULE = """
from batchsched.plugin import PluginSpec, hookimpl


class {cls}:
    name = "{plugin}"

    def __init__(self, arguments):
        pass

    def on_session_open(self, ssn):
        pass

    def on_session_close(self, ssn):
        pass


@hookimpl
def batchsched_register_plugins():
    return [PluginSpec(name="{plugin}", factory={cls})]
"""


def distribution(site: Path, name: str, entry_points: dict[str, str],
                 modules: dict[str, str]) -> None:
    """A distribution installed in ``site``: its metadata and its modules (module ->
    the plugin name it registers)."""
    info = site / f"{name.replace('-', '_')}-1.0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 1.0\n")
    lines = "".join(f"{ep} = {module}\n" for ep, module in entry_points.items())
    (info / "entry_points.txt").write_text(f"[batchsched]\n{lines}")
    for module, plugin in modules.items():
        (site / f"{module}.py").write_text(textwrap.dedent(MODULE.format(
            cls=f"Plugin{abs(hash(plugin))}", plugin=plugin)))


@pytest.fixture
def site(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    monkeypatch.syspath_prepend(str(tmp_path))
    yield tmp_path
    for module in [m for m in sys.modules if m.startswith("tp_")]:
        del sys.modules[module]


def test_two_distributions_may_give_their_entry_points_one_name(site: Path) -> None:
    distribution(site, "tp-one", {"plugins": "tp_one"}, {"tp_one": "one-plugin"})
    distribution(site, "tp-two", {"plugins": "tp_two"}, {"tp_two": "two-plugin"})
    registry = Registry(autoload=True)
    assert {"one-plugin", "two-plugin"} <= set(registry.plugins)
    assert registry.plugins["one-plugin"].distribution == "tp-one"
    assert registry.plugins["two-plugin"].distribution == "tp-two"


def test_an_entry_point_named_like_batchsched_s_own_is_loaded(site: Path) -> None:
    distribution(site, "tp-named", {"batchsched": "tp_named"}, {"tp_named": "named-plugin"})
    registry = Registry(autoload=True)
    assert "named-plugin" in registry.plugins and "gang" in registry.plugins


def test_two_entry_points_of_one_module_register_it_once(site: Path) -> None:
    distribution(site, "tp-twice", {"a": "tp_twice", "b": "tp_twice"},
                 {"tp_twice": "twice-plugin"})
    registry = Registry(autoload=True)
    assert registry.plugins["twice-plugin"].distribution == "tp-twice"
    assert registry.broken == []


def test_registering_one_object_under_two_names_is_a_plugin_error(site: Path) -> None:
    distribution(site, "tp-local", {}, {"tp_local": "local-plugin"})
    import tp_local  # type: ignore[import-not-found]

    registry = Registry(autoload=False)
    registry.register(tp_local, name="x")
    with pytest.raises(PluginError, match="could not register 'y'"):
        registry.register(tp_local, name="y")


def test_a_distribution_whose_hook_pluggy_refuses_is_broken_not_fatal(site: Path) -> None:
    """A hook whose arguments are not the hookspec's: that distribution is skipped and
    reported in ``broken``; batchsched and the others still load."""
    distribution(site, "tp-good", {"plugins": "tp_good"}, {"tp_good": "good-plugin"})
    distribution(site, "tp-badsig", {"plugins": "tp_badsig"}, {})
    (site / "tp_badsig.py").write_text(
        "from batchsched.plugin import hookimpl\n\n\n"
        "@hookimpl\ndef batchsched_register_plugins(registry):\n    return []\n")
    registry = Registry(autoload=True)
    assert "good-plugin" in registry.plugins and "gang" in registry.plugins
    (key, message), = registry.broken
    assert key == "tp-badsig:plugins" and not registry.manager.has_plugin(key)
    assert "tp-badsig" in message and "registry" in message
    import tp_badsig  # type: ignore[import-not-found]

    with pytest.raises(PluginError, match=r"could not register 'local'.*registry"):
        Registry(autoload=False).register(tp_badsig, name="local")


def test_a_misspelt_hook_is_refused_not_silently_ignored(site: Path) -> None:
    """A hook no hookspec names would never be called: registering it says so, and a
    distribution carrying it is reported in ``broken``."""
    distribution(site, "tp-typo", {"plugins": "tp_typo"}, {})
    (site / "tp_typo.py").write_text(
        "from batchsched.plugin import hookimpl\n\n\n"
        "@hookimpl\ndef batchsched_register_plugin():\n    return []\n")
    import tp_typo  # type: ignore[import-not-found]

    registry = Registry(autoload=False)
    with pytest.raises(PluginError, match="batchsched_register_plugin"):
        registry.register(tp_typo, name="typo")
    assert not registry.manager.is_registered(tp_typo)
    loaded = Registry(autoload=True)
    assert [key for key, _ in loaded.broken] == ["tp-typo:plugins"]


def test_a_registration_hook_that_fails_fails_an_explicit_register() -> None:
    """A hook returning one spec instead of a list: the program that registered it is
    told, by the hook's name, instead of finding the plugin missing later."""
    class One:
        @hookimpl
        def batchsched_register_plugins(self) -> PluginSpec:
            return PluginSpec("one", lambda arguments: None)

    registry = Registry(autoload=False)
    with pytest.raises(PluginError, match=r"not a list of PluginSpec"):
        registry.register(One(), name="one-plugin")
    assert "one" not in registry.plugins and registry.broken == []


@pytest.mark.parametrize(("name", "factory"), [(object, "one"), ("one", "not callable")])
def test_a_spec_checks_its_name_and_factory(name: object, factory: object) -> None:
    with pytest.raises(TypeError):
        PluginSpec(name, factory)  # type: ignore[arg-type]


def test_an_unknown_plugin_names_the_distributions_that_failed_to_load(site: Path) -> None:
    distribution(site, "tp-gone", {"plugins": "tp_gone"}, {})
    (site / "tp_gone.py").write_text("import tp_module_that_is_not_installed\n")
    from batchsched.conf import parse_configuration
    from batchsched.errors import ConfigError

    registry = Registry(autoload=True)
    configuration = parse_configuration(
        {"actions": "allocate", "tiers": [{"plugins": [{"name": "gone-plugin"}]}]})
    with pytest.raises(ConfigError, match=r"unknown plugin 'gone-plugin'.*failed to load: "
                                          r".*tp-gone.*tp_module_that_is_not_installed"):
        configuration.validate(registry)


def test_a_hook_returning_something_else_than_specs_skips_its_distribution(site: Path) -> None:
    """A hook whose list holds the plugin class instead of its spec: that distribution
    is skipped and named in ``broken``, the built-ins and the others still load."""
    distribution(site, "tp-good", {"plugins": "tp_good"}, {"tp_good": "good-plugin"})
    distribution(site, "tp-wrongitem", {"plugins": "tp_wrongitem"}, {})
    (site / "tp_wrongitem.py").write_text(
        "from batchsched.plugin import hookimpl\n\n\n"
        "class WrongItem:\n    name = 'wrong'\n\n\n"
        "@hookimpl\ndef batchsched_register_plugins():\n    return [WrongItem]\n")
    registry = Registry(autoload=True)
    assert "good-plugin" in registry.plugins and "gang" in registry.plugins
    (key, message), = registry.broken
    assert key == "tp-wrongitem:plugins"
    assert "tp-wrongitem" in message and "expected PluginSpec" in message


def test_a_distribution_whose_plugin_hook_raises_registers_none_of_its_actions(
        site: Path) -> None:
    """Skipped whole: its actions without its plugins would fail later, far from the
    cause (as an explicit register refuses the whole module)."""
    distribution(site, "tp-halfraise", {"plugins": "tp_halfraise"}, {})
    (site / "tp_halfraise.py").write_text(
        "from batchsched.plugin import ActionSpec, hookimpl\n\n\n"
        "class Act:\n    name = 'half-action'\n\n    def execute(self, ssn):\n"
        "        pass\n\n\n"
        "@hookimpl\ndef batchsched_register_plugins():\n    raise RuntimeError('boom')\n\n\n"
        "@hookimpl\ndef batchsched_register_actions():\n"
        "    return [ActionSpec(name='half-action', factory=Act)]\n")
    registry = Registry(autoload=True)
    assert "half-action" not in registry.actions and "allocate" in registry.actions
    (key, message), = registry.broken
    assert key == "tp-halfraise:plugins" and "RuntimeError: boom" in message


def test_a_distribution_with_an_entry_point_that_fails_skips_its_others(site: Path) -> None:
    distribution(site, "tp-twoparts", {"good": "tp_twoparts_good", "bad": "tp_not_there"},
                 {"tp_twoparts_good": "twoparts-plugin"})
    distribution(site, "tp-other", {"plugins": "tp_other"}, {"tp_other": "other-plugin"})
    registry = Registry(autoload=True)
    assert "twoparts-plugin" not in registry.plugins
    assert "other-plugin" in registry.plugins and "gang" in registry.plugins
    assert [key for key, _ in registry.broken] == ["tp-twoparts:bad"]


def test_a_hand_registration_named_like_a_broken_distribution_registers(site: Path) -> None:
    distribution(site, "acme", {"plugins": "tp_acme_not_there"}, {})
    registry = Registry(autoload=True)
    assert [key for key, _ in registry.broken] == ["acme:plugins"]

    class Mine:
        @hookimpl
        def batchsched_register_plugins(self) -> list[PluginSpec]:
            return [PluginSpec("mine", lambda arguments: object())]
    registry.register(Mine(), name="acme")
    assert "mine" in registry.plugins


def test_a_hook_not_marked_hookimpl_is_refused_not_silently_ignored(site: Path) -> None:
    distribution(site, "tp-nodeco", {"plugins": "tp_nodeco"}, {})
    (site / "tp_nodeco.py").write_text(
        "from batchsched.plugin import PluginSpec\n\n\n"
        "def batchsched_register_plugins():  # @hookimpl forgotten\n    return []\n")
    registry = Registry(autoload=True)
    (key, message), = registry.broken
    assert key == "tp-nodeco:plugins"
    assert "batchsched_register_plugins not marked @hookimpl" in message
    with pytest.raises(PluginError, match="not marked @hookimpl"):
        Registry(autoload=False).register(sys.modules["tp_nodeco"], name="by-hand")


@pytest.mark.parametrize("hook", ["clash", "wrong item"])
def test_a_refused_register_leaves_the_registry_as_it_was(hook: str) -> None:
    """register() raising must not leave the refused object behind: the next good
    registration works, and the refused object's lifecycle hooks never run."""
    calls: list[str] = []

    class Refused:
        @hookimpl
        def batchsched_register_plugins(self) -> list[object]:
            if hook == "clash":
                return [PluginSpec("gang", lambda arguments: None)]
            return [object()]

        @hookimpl
        def batchsched_session_opened(self, session: object) -> None:
            calls.append("refused")

    class Good:
        @hookimpl
        def batchsched_register_plugins(self) -> list[PluginSpec]:
            return [PluginSpec("good-one", lambda arguments: None)]

    registry = Registry(autoload=False)
    before = (sorted(registry.plugins), sorted(registry.actions))
    refused = Refused()
    with pytest.raises(PluginError):
        registry.register(refused, name="refused")
    assert not registry.manager.is_registered(refused)
    assert (sorted(registry.plugins), sorted(registry.actions)) == before
    assert registry.broken == []
    registry.register(Good(), name="good")
    assert "good-one" in registry.plugins
    registry.notify("batchsched_session_opened", session=None)
    assert calls == []


@pytest.mark.parametrize("body", ["    raise RuntimeError('boom')\n", "    return [object()]\n"])
def test_a_broken_kube_plugin_hook_skips_its_distribution(
    site: Path, body: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A distribution whose kube-plugin hook raises or returns no specs is skipped and
    named, as for the other hooks: the built-in kube plugins and the listing stay."""
    from batchsched.cli import main
    from batchsched.framework import registry as registry_module
    from batchsched.kubesched import from_entry_points

    distribution(site, "tp-kubebad", {"plugins": "tp_kubebad"}, {})
    (site / "tp_kubebad.py").write_text(
        "from batchsched.plugin import hookimpl\n\n\n"
        f"@hookimpl\ndef batchsched_register_kube_plugins():\n{body}")
    registry = Registry(autoload=True)
    kube = from_entry_points(registry)
    assert "NodeResourcesFit" in kube
    assert any(key == "tp-kubebad:plugins" for key, _ in registry.broken)
    monkeypatch.delenv("BATCHSCHED_DISABLE_PLUGIN_AUTOLOAD", raising=False)
    registry_module.reset_default_registry()
    try:
        assert main(["plugins"]) == 0
    finally:
        registry_module.reset_default_registry()
    out = capsys.readouterr().out
    assert "kube    NodeResourcesFit" in out and "tp-kubebad" in out


def test_a_broken_distribution_blocks_no_later_registration(site: Path) -> None:
    """A skipped distribution stays named once, however often the registry refreshes,
    and a program's own registration is judged on its own hooks."""
    distribution(site, "tp-wrong2", {"plugins": "tp_wrong2"}, {})
    (site / "tp_wrong2.py").write_text(
        "from batchsched.plugin import hookimpl\n\n\n"
        "@hookimpl\ndef batchsched_register_plugins():\n    return [object()]\n")

    class Mine:
        @hookimpl
        def batchsched_register_plugins(self) -> list[PluginSpec]:
            return [PluginSpec("mine", lambda arguments: None)]

    registry = Registry(autoload=True)
    registry.refresh()
    registry.refresh()
    assert [key for key, _ in registry.broken] == ["tp-wrong2:plugins"]
    registry.register(Mine(), name="mine")
    assert "mine" in registry.plugins
    assert [key for key, _ in registry.broken] == ["tp-wrong2:plugins"]


def test_a_kube_plugin_hook_failing_differently_each_time_is_named_once(site: Path) -> None:
    from batchsched.kubesched import from_entry_points

    distribution(site, "tp-kubecount", {"plugins": "tp_kubecount"}, {})
    (site / "tp_kubecount.py").write_text(
        "import itertools\n"
        "from batchsched.plugin import hookimpl\n\n"
        "calls = itertools.count()\n\n\n"
        "@hookimpl\ndef batchsched_register_kube_plugins():\n"
        "    raise RuntimeError(f'call {next(calls)}')\n")
    registry = Registry(autoload=True)
    for _ in range(5):
        from_entry_points(registry)
    (entry,) = [e for e in registry.broken if e[0] == "tp-kubecount:plugins"]
    assert "call 4" in entry[1]


def test_an_unregistered_kube_hook_is_no_longer_named_broken() -> None:
    """``broken`` names what is registered now: a program that takes its failing
    kube-plugin hook out finds the registry clean after the next refresh."""
    from batchsched.kubesched import from_entry_points

    class Failing:
        @hookimpl
        def batchsched_register_kube_plugins(self) -> list[object]:
            raise RuntimeError("no specs today")

    registry = Registry(autoload=False)
    failing = Failing()
    registry.manager.register(failing, name="failing-kube")
    from_entry_points(registry)
    assert any(who == "failing-kube" for who, _ in registry.broken)
    registry.manager.unregister(failing)
    registry.refresh()
    assert not any(who == "failing-kube" for who, _ in registry.broken)


def test_a_name_two_installed_distributions_claim_breaks_only_that_name(site: Path) -> None:
    """Neither claim is used and both are named broken; everything else works, and a
    configuration naming the contested plugin fails naming both (one unrelated package
    conflict used to make every Registry, and so every command, fail)."""
    from batchsched.conf import configuration_from_text
    from batchsched.errors import ConfigError

    distribution(site, "tp-first", {"plugins": "tp_first"}, {"tp_first": "same-name"})
    distribution(site, "tp-second", {"plugins": "tp_second"}, {"tp_second": "same-name"})
    distribution(site, "tp-gang", {"plugins": "tp_gang"}, {"tp_gang": "gang"})
    distribution(site, "tp-gang-too", {"plugins": "tp_gang_too"}, {"tp_gang_too": "gang"})
    registry = Registry(autoload=True)
    assert "same-name" not in registry.plugins
    assert registry.plugins["gang"].distribution == "batchsched"  # a built-in keeps it
    broken = dict(registry.broken)
    claimed = "plugin name 'same-name' is claimed by tp-first and tp-second: none of them"
    assert broken["tp-first:plugins"].startswith(claimed)
    assert broken["tp-second:plugins"].startswith(claimed)
    assert broken["tp-gang-too:plugins"].startswith(
        "plugin name 'gang' is batchsched's; tp-gang and tp-gang-too claimed it too")
    assert not any(who.startswith("batchsched") for who in broken)
    with pytest.raises(PluginError, match=claimed):
        registry.create_plugin("same-name")
    with pytest.raises(PluginError, match="unknown action 'same-name'"):
        registry.create_action("same-name")  # a plugin's contest, not an action's
    configuration = configuration_from_text(
        "actions: allocate\ntiers:\n- plugins:\n  - name: same-name\n")
    with pytest.raises(ConfigError, match=r"plugins\[0\]\.name: " + claimed):
        configuration.validate(registry)
    configuration_from_text("actions: allocate\ntiers:\n- plugins:\n  - name: gang\n"
                            ).validate(registry)


KUBE_MODULE = """
from batchsched.kubesched import KubePluginSpec
from batchsched.plugin import hookimpl


class Foo:
    def __init__(self, args, handle):
        pass


@hookimpl
def batchsched_register_kube_plugins():
    return [KubePluginSpec("{name}", Foo), KubePluginSpec("{own}", Foo)]
"""


def test_a_kube_plugin_name_claimed_again_follows_the_same_rule(site: Path) -> None:
    """A kube plugin name two installed distributions claim is none's, one a built-in
    holds stays the built-in's, and each distribution's other kube plugins are kept (a
    kube registry refused the whole set, so every session with kube-plugins failed)."""
    from batchsched.kubesched import from_entry_points
    from batchsched.kubesched.builtin_plugins import NodeResourcesFit

    for dist, name, own in (("tp-k1", "Foo", "Own1"), ("tp-k2", "Foo", "Own2"),
                            ("tp-k3", "NodeResourcesFit", "Own3"),
                            ("tp-k4", "Foo", "PrioritySort")):
        module = dist.replace("-", "_")
        info = site / f"{module}-1.0.dist-info"
        info.mkdir()
        (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\nVersion: 1.0\n")
        (info / "entry_points.txt").write_text(f"[batchsched]\nkube = {module}\n")
        (site / f"{module}.py").write_text(KUBE_MODULE.format(name=name, own=own))
    registry = Registry(autoload=True)
    kube = from_entry_points(registry)
    assert "Foo" not in set(kube) and {"Own1", "Own2", "Own3"} <= set(kube)
    built = kube["NodeResourcesFit"]({}, None)
    assert isinstance(built, NodeResourcesFit)
    broken = dict(registry.broken)
    foo = "kube plugin name 'Foo' is claimed by tp-k1, tp-k2 and tp-k4: none of them gets it"
    assert foo in broken["tp-k1:kube"]
    assert "kube plugin name 'NodeResourcesFit' is batchsched's; tp-k3 claimed it" in broken[
        "tp-k3:kube"]
    # Both of tp-k4's skipped claims are named (one replaced the other).
    assert foo in broken["tp-k4:kube"] and "'PrioritySort' is batchsched's" in broken[
        "tp-k4:kube"]
    with pytest.raises(PluginError, match=foo):
        kube["Foo"]
