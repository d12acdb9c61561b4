"""The package's layout is its architecture: no import circle, plugins/ holds plugins,
built-ins come through the entry point, and moved modules still import (with a warning).

The import graph is read from the source, not from ``sys.modules``: every
``import`` and ``from ... import`` that runs, at module level or deferred inside a
function, is an edge. Imports under ``if TYPE_CHECKING:`` are not: they never run,
and they are how a module names a type of a module that depends on it.
``from package import name`` is an edge to ``package.name`` when that is a module,
else to the package; importing a submodule does not count as importing its
parent packages (their ``__init__`` re-exports are a facade, not a dependency).
"""

from __future__ import annotations

import ast
import importlib
import re
import warnings
from collections.abc import Iterator
from importlib import metadata
from pathlib import Path

import pytest

import batchsched
from batchsched import _moved
from batchsched.builtin import ACTIONS, PLUGINS
from batchsched.framework import registry as registry_module
from batchsched.framework.registry import BUILTIN_ENTRY_POINT, Registry

PACKAGE = Path(batchsched.__file__).parent
ROOT = Path(__file__).parent.parent


def _module_names() -> dict[str, Path]:
    modules: dict[str, Path] = {}
    for path in PACKAGE.rglob("*.py"):
        parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        modules[".".join(parts)] = path
    return modules


MODULES = _module_names()


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _runtime_imports(tree: ast.AST) -> Iterator[ast.Import | ast.ImportFrom]:
    for node in ast.iter_child_nodes(tree):
        if isinstance(node, ast.If) and _is_type_checking(node.test):
            for child in node.orelse:
                yield from _runtime_imports(ast.Module(body=[child], type_ignores=[]))
            continue
        if isinstance(node, ast.Import | ast.ImportFrom):
            yield node
        yield from _runtime_imports(node)


def _owning_module(name: str) -> str | None:
    while name and name not in MODULES:
        name = name.rpartition(".")[0]
    return name or None


def import_graph() -> dict[str, set[str]]:
    graph: dict[str, set[str]] = {name: set() for name in MODULES}
    for name, path in MODULES.items():
        is_package = path.name == "__init__.py"
        for node in _runtime_imports(ast.parse(path.read_text(encoding="utf-8"))):
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            else:
                base = node.module or ""
                if node.level:
                    anchor = name.split(".")[: len(name.split(".")) - (not is_package)]
                    anchor = anchor[: len(anchor) - (node.level - 1)]
                    base = ".".join([*anchor, *([node.module] if node.module else [])])
                for alias in node.names:
                    full = f"{base}.{alias.name}"
                    targets.append(full if full in MODULES else base)
            for target in targets:
                owner = _owning_module(target)
                if owner is not None and owner != name:
                    graph[name].add(owner)
    return graph


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One cycle of ``graph`` as a path that returns to its start, or None."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        path.append(node)
        for successor in sorted(graph[node]):
            if state.get(successor) == 1:
                return [*path[path.index(successor):], successor]
            if successor not in state and (cycle := visit(successor)) is not None:
                return cycle
        path.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state and (cycle := visit(node)) is not None:
            return cycle
    return None


def test_the_module_import_graph_has_no_cycle() -> None:
    cycle = find_cycle(import_graph())
    assert cycle is None, "import cycle: " + " -> ".join(cycle or [])


def test_the_cycle_finder_finds_a_cycle() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert find_cycle(graph) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": set()}) is None


def test_the_graph_sees_deferred_imports_and_skips_type_only_ones() -> None:
    graph = import_graph()
    # Session.open imports the default registry inside the method.
    assert "batchsched.framework.registry" in graph["batchsched.framework.session"]
    # hookspecs names Session only for its annotations.
    assert "batchsched.framework.session" not in graph["batchsched.hookspecs"]


def test_the_registry_imports_no_action_or_plugin() -> None:
    graph = import_graph()
    reachable, frontier = set(), ["batchsched.framework.registry"]
    while frontier:
        for successor in graph[frontier.pop()] - reachable:
            reachable.add(successor)
            frontier.append(successor)
    assert not {m for m in reachable if m.startswith(("batchsched.plugins", "batchsched.actions"))}
    assert "batchsched.builtin" not in reachable


def test_plugins_holds_only_plugins() -> None:
    plugin_modules = {target.partition(":")[0] for target in PLUGINS.values()}
    top_level = {
        name for name in MODULES
        if name.startswith("batchsched.plugins.") and name.count(".") == 2
    }
    assert top_level == plugin_modules
    # A plugin package's submodules serve that plugin only.
    graph = import_graph()
    for name in MODULES:
        if name.startswith("batchsched.plugins.") and name.count(".") == 3:
            owner = name.rpartition(".")[0]
            users = {m for m, targets in graph.items() if name in targets}
            assert users <= {m for m in MODULES if m == owner or m.startswith(owner + ".")}, (
                f"{name} is used outside its plugin: {sorted(users)}"
            )


def test_actions_holds_the_actions_and_their_shared_steps() -> None:
    action_modules = {target.partition(":")[0] for target in ACTIONS.values()}
    present = {name for name in MODULES if name.startswith("batchsched.actions.")}
    assert action_modules <= present


def test_the_built_ins_come_through_batchsched_s_own_entry_point() -> None:
    declared = [
        ep for ep in metadata.entry_points(group="batchsched")
        if ep.dist is not None and ep.dist.metadata["Name"] == "batchsched"
    ]
    assert [(ep.name, ep.value) for ep in declared] == [
        (BUILTIN_ENTRY_POINT.name, BUILTIN_ENTRY_POINT.value)
    ]
    registry = Registry(autoload=False)
    assert registry.plugins["gang"].distribution == "batchsched"
    assert registry.plugins["gang"].module == "batchsched.builtin"


def test_without_distribution_metadata_the_built_ins_still_load(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(registry_module.metadata, "entry_points", lambda **_: [])
    registry = Registry(autoload=True)
    assert set(PLUGINS) <= set(registry.plugins)
    assert set(ACTIONS) <= set(registry.actions)


@pytest.mark.parametrize("old", sorted(_moved.MOVED))
def test_a_moved_module_imports_under_its_old_path_with_a_warning(old: str) -> None:
    targets = [importlib.import_module(name) for name in _moved.MOVED[old]]
    with pytest.warns(DeprecationWarning, match=re.escape(old) + " moved to"):
        module = importlib.import_module(old)
    try:
        for target in targets:
            for name in getattr(target, "__all__", ()):
                assert getattr(module, name) is getattr(target, name)
        with pytest.raises(AttributeError):
            module.no_such_name  # noqa: B018
    finally:
        importlib.sys.modules.pop(old, None)  # type: ignore[attr-defined]


def test_the_deprecated_session_registrations_forward_to_columnar() -> None:
    from batchsched import columnar
    from batchsched.columnar import forms

    ssn = batchsched.Session.open(batchsched.ClusterInfo())
    try:
        def fn(task: object, columns: object) -> None:
            return None

        with pytest.warns(DeprecationWarning, match="columnar.add_predicate_fn"):
            ssn.add_vector_predicate_fn("probe", fn)
        assert forms.registered(ssn, "predicate")["probe"] is fn
        columnar.add_predicate_fn(ssn, "other", fn)
        assert forms.registered(ssn, "predicate")["other"] is fn
    finally:
        ssn.close()


DOTTED = re.compile(r"\bbatchsched(?:\.[a-z_]+)+(?::[A-Za-z_]+)?(?![\w*/])")


def _documented_paths() -> set[str]:
    texts = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
    found: set[str] = set()
    for path in texts:
        found.update(DOTTED.findall(path.read_text(encoding="utf-8")))
    return found


def test_every_module_and_name_the_docs_mention_imports() -> None:
    missing = []
    with warnings.catch_warnings():
        warnings.simplefilter("error", DeprecationWarning)
        for dotted in sorted(_documented_paths()):
            module_path, _, attr = dotted.partition(":")
            parts = module_path.split(".")
            # The longest importable prefix is the module; the rest are attributes.
            for cut in range(len(parts), 0, -1):
                try:
                    obj: object = importlib.import_module(".".join(parts[:cut]))
                except ModuleNotFoundError:
                    continue
                rest = [*parts[cut:], *([attr] if attr else [])]
                for name in rest:
                    if not hasattr(obj, name):
                        missing.append(dotted)
                        break
                    obj = getattr(obj, name)
                break
            else:
                missing.append(dotted)
    assert not missing, f"documented but not importable: {missing}"


FROM_IMPORT = re.compile(r"^\s*from (batchsched[\w.]*) import ([\w, ]+)$", re.M)


def test_every_name_the_docs_import_imports() -> None:
    texts = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
    missing = []
    with warnings.catch_warnings():
        warnings.simplefilter("error", DeprecationWarning)
        for path in texts:
            for module_name, names in FROM_IMPORT.findall(path.read_text(encoding="utf-8")):
                module = importlib.import_module(module_name)
                for name in (n.strip() for n in names.split(",")):
                    if name and not hasattr(module, name):
                        try:
                            importlib.import_module(f"{module_name}.{name}")
                        except ModuleNotFoundError:
                            missing.append(f"{path.name}: from {module_name} import {name}")
    assert not missing, missing


def test_the_package_declares_its_type_hints() -> None:
    """PEP 561: type checkers read batchsched's hints only if the package says so."""
    from importlib.resources import files

    assert files("batchsched").joinpath("py.typed").is_file()
