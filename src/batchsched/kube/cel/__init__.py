"""Common Expression Language: the part Kubernetes' device selectors use.

Dynamic Resource Allocation selects devices with CEL expressions over a
``device`` variable (``device.driver == "gpu.example.com" &&
device.capacity["gpu.example.com"].memory.compareTo(quantity("40Gi")) >= 0``).
This module compiles such an expression once (:func:`compile_expression`,
cached per text) into a :class:`Program` whose :meth:`~Program.evaluate` takes
the variables.

What is covered, with CEL's semantics:

* literals: ``int`` (decimal, hex), ``uint`` (``1u``), ``double``, strings (single,
  double, triple quotes, raw ``r"..."``, escapes), ``bytes`` (``b"..."``),
  ``true``/``false``/``null``, lists and maps;
* operators ``?:`` ``||`` ``&&`` ``!`` ``==`` ``!=`` ``<`` ``<=`` ``>`` ``>=``
  ``in`` ``+`` ``-`` ``*`` ``/`` ``%`` and unary ``-``, with CEL's error rules:
  ``&&`` and ``||`` absorb an error when the other side decides (``false && e``
  is false either way round), 64-bit overflow and division by zero are errors,
  numbers of different types compare by value, other different types are unequal;
* field selection and indexing of maps (a missing key is the error ``no such
  key: K``) and lists, the ``has()`` macro, and the list and map macros ``all``,
  ``exists``, ``exists_one``, ``map`` and ``filter``;
* the standard functions ``size``, ``int``, ``uint``, ``double``, ``string``,
  ``bool``, ``bytes``, ``dyn``, ``matches``, ``startsWith``, ``endsWith``,
  ``contains``, Kubernetes' string extensions (``lowerAscii``, ``upperAscii``,
  ``trim``, ``indexOf``, ``lastIndexOf``, ``split``, ``join``, ``replace``),
  its quantity library (``quantity``, ``isQuantity``, ``compareTo``,
  ``isGreaterThan``, ``isLessThan``, ``add``, ``sub``, ``asInteger``,
  ``asApproximateFloat``, ``isInteger``, ``sign``) and its semver library
  (``semver``, ``isSemver``, ``major``, ``minor``, ``patch``, ``compareTo``,
  ``isGreaterThan``, ``isLessThan``).

A syntax error or an unknown function raises :class:`CelSyntaxError` when
compiling; an error while evaluating raises :class:`CelEvaluationError` with
cel-go's wording. There is no static type checker and no cost limit: the
expressions Kubernetes accepts were checked by the API server already.

>>> compile_expression('device.driver == "a" && size(device.name) > 1').evaluate(
...     {"device": {"driver": "a", "name": "gpu-0"}})
True
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from typing import Any

from batchsched.kube.cel.parser import Parser
from batchsched.kube.cel.values import (
    CelEvaluationError,
    CelSyntaxError,
    Node,
    Quantity,
    Semver,
    UInt,
)

__all__ = [
    "CelEvaluationError",
    "CelSyntaxError",
    "Program",
    "Quantity",
    "Semver",
    "UInt",
    "compile_expression",
    "evaluate_all",
]


class Program:
    """A compiled expression (:func:`compile_expression`)."""

    __slots__ = ("_root", "text")

    def __init__(self, text: str, root: Node) -> None:
        self.text = text
        self._root = root

    def evaluate(self, variables: Mapping[str, Any]) -> Any:
        """The expression's value, or :class:`CelEvaluationError`."""
        try:
            return self._root(variables)
        except RecursionError:
            raise CelEvaluationError("expression nested too deeply") from None


@functools.lru_cache(maxsize=1024)
def compile_expression(text: str, variables: frozenset[str] | None = None) -> Program:
    """Parse ``text`` (cached per text); :class:`CelSyntaxError` when it does not parse
    or, with ``variables`` given, names a variable that is not one of them."""
    try:
        return Program(text, Parser(text, variables).parse())
    except RecursionError:
        raise CelSyntaxError("expression nested too deeply") from None


def evaluate_all(programs: Sequence[Program], variables: Mapping[str, Any]) -> bool:
    """Whether every program is true for ``variables`` (a non-bool result is an error)."""
    for program in programs:
        result = program.evaluate(variables)
        if type(result) is not bool:
            raise CelEvaluationError(f"expression {program.text!r} does not return a bool")
        if not result:
            return False
    return True

