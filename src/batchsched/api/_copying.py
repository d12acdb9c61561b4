"""Field-by-field copies of attrs classes, for the objects every snapshot copies."""

from __future__ import annotations

from typing import Any

import attrs


def field_copier(cls: type[Any]) -> Any:
    """A function copying every attrs field of ``cls`` into a new instance, without
    running ``__init__`` (what ``attrs.evolve`` amounts to for plain fields, an order
    of magnitude faster; the caller replaces what must not be shared)."""
    names = [field.name for field in attrs.fields(cls)]
    body = "".join(f"    twin.{name} = self.{name}\n" for name in names)
    namespace: dict[str, Any] = {"_new": object.__new__, "_cls": cls}
    exec(f"def copy(self):\n    twin = _new(_cls)\n{body}    return twin\n", namespace)
    return namespace["copy"]
