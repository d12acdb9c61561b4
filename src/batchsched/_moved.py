"""Old module paths that keep working, with a DeprecationWarning, for one release.

Modules that moved when the tree was laid out by concern (Kubernetes semantics
in :mod:`batchsched.kube`, the columnar fast path in :mod:`batchsched.columnar`,
helpers of one plugin inside that plugin's package) are still importable under
their old names. The old name is served by a finder at the end of
``sys.meta_path``, so it is consulted only when no file exists under that name:
the package tree itself holds no stub modules. The module it gives is a view
of the new modules (attributes are looked up in them, in order), so there is
one object per class and ``isinstance`` checks agree across old and new
imports.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import sys
import warnings
from collections.abc import Sequence
from types import ModuleType
from typing import Any

__all__ = ["MOVED", "REMOVED_IN", "install"]

#: The release in which the old paths stop working.
REMOVED_IN = "0.3"

#: old module path -> the modules that now hold its names, searched in order.
MOVED: dict[str, tuple[str, ...]] = {
    "batchsched.api.quantity": ("batchsched.kube.quantity",),
    "batchsched.plugins.k8s_matching": ("batchsched.kube.affinity", "batchsched.kube.taints"),
    "batchsched.plugins.kube_view": ("batchsched.kube.pod_view",),
    "batchsched.framework.node_columns": ("batchsched.columnar.node_columns",),
    "batchsched.framework.vectorized": ("batchsched.columnar.forms",),
    "batchsched.actions.fast_placement": ("batchsched.columnar.selector",),
    "batchsched.actions.kept_answers": ("batchsched.columnar.kept_answers",),
    "batchsched.plugins.kube_columns": ("batchsched.columnar.kube_columns",),
    "batchsched.plugins.node_vectors": ("batchsched.columnar.scores",),
    "batchsched.plugins.queue_accounting": ("batchsched.api.queue_accounting",),
    "batchsched.plugins.card_detection": ("batchsched.plugins.capacity_card.cards",),
    "batchsched.plugins.drf_hierarchy": ("batchsched.plugins.drf.hierarchy",),
    "batchsched.plugins.capacity_hierarchy": ("batchsched.plugins.capacity.hierarchy",),
}


class _MovedModuleLoader(importlib.abc.Loader):
    def __init__(self, targets: Sequence[str]) -> None:
        self.targets = tuple(targets)

    def exec_module(self, module: ModuleType) -> None:
        warnings.warn(
            f"{module.__name__} moved to {' and '.join(self.targets)}; the old path "
            f"goes away in batchsched {REMOVED_IN}",
            DeprecationWarning,
            # warnings skips the import system's own frames: 2 is the importer.
            stacklevel=2,
        )
        modules = [importlib.import_module(name) for name in self.targets]
        public: list[str] = []
        for target in modules:
            public.extend(getattr(target, "__all__", ()))

        def lookup(name: str) -> Any:
            for target in modules:
                if hasattr(target, name):
                    return getattr(target, name)
            raise AttributeError(f"module {module.__name__!r} has no attribute {name!r}")

        module.__getattr__ = lookup  # type: ignore[method-assign]
        module.__dict__["__all__"] = public
        module.__doc__ = f"Moved to {', '.join(self.targets)}."


class _MovedModuleFinder(importlib.abc.MetaPathFinder):
    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        targets = MOVED.get(fullname)
        if targets is None:
            return None
        return importlib.machinery.ModuleSpec(fullname, _MovedModuleLoader(targets))


def install() -> None:
    """Put the finder at the end of ``sys.meta_path`` (once per process)."""
    if not any(isinstance(finder, _MovedModuleFinder) for finder in sys.meta_path):
        sys.meta_path.append(_MovedModuleFinder())
