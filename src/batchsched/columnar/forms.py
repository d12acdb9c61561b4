"""Column forms: vectorised variants of the node extension points, and how they combine.

A plugin may offer, next to its scalar ``predicate``, ``node_order`` or
``batch_node_order`` function, a variant that answers for many nodes at once
over the session's :class:`~batchsched.columnar.node_columns.NodeColumns`. It
registers it here, in ``on_session_open``; the session itself never learns
which plugins have one, and a plugin that offers none is simply served by the
scalar path:

==========================================  ==================================================
registration                                function receives -> returns
==========================================  ==================================================
``add_predicate_fn(ssn, name, fn)``         ``(task, columns)`` -> ``None`` (every node passes),
                                            a bool array over all nodes (True: the scalar
                                            function returns None there), or a pair
                                            ``(passes, harmless)`` whose second array marks the
                                            nodes where the scalar function returns a FitError
                                            with no failing status
``add_node_order_fn(ssn, name, fn)``        ``(task, columns, candidates)`` -> float array over
                                            the candidates, or one float for all of them; NaN
                                            where the scalar function raises FitError (the
                                            node then gets no node-order score)
``add_batch_node_order_fn(ssn, name, fn)``  ``(task, columns, candidates)`` -> float array over
                                            the candidates, or one float for all of them (0.0
                                            for a node the scalar function leaves out)
``add_template_fn(ssn, name, fn)``          ``(task)`` -> a hashable "template" of the task, or
                                            None (optional; see :func:`template_fns`)
``many=`` of the two score registrations    ``(tasks, columns, candidates)`` -> float array of
                                            shape ``(len(tasks), len(candidates))``, row ``k``
                                            the variant's answer for ``tasks[k]``, or one float
                                            for every task and candidate (optional; used for
                                            tasks with templates, see :func:`many_tiers`)
==========================================  ==================================================

A variant must give **exactly** the scalar function's answer (the same float
operations in the same order), so that both paths make the same decisions;
returned arrays are read, never modified, so a variant may hand out views. A
variant that cannot answer exactly for a given task raises
:class:`VectorFallback`; the node selector then takes the scalar path for that
task.

The variants are consulted only when they cover the point completely:
:func:`vector_tiers` returns the enabled functions of a point with each
replaced by its plugin's variant, or ``None`` as soon as one enabled plugin has
none. The enable flags and tiers are the scalar point's
(:meth:`Session.tiers_for`), and the combination rules are those of
:mod:`batchsched.framework.combine`: predicates stop at the first plugin
reporting a FitError, which fails the node only if one of its statuses fails;
node-order scores are summed, a FitError leaving the node unscored; batch
scores are summed.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, Generic, TypeVar

import numpy as np

from batchsched.api.task import TaskInfo
from batchsched.columnar.node_columns import BoolArray, Candidates, FloatArray, NodeColumns
from batchsched.errors import BatchSchedError, PluginError
from batchsched.framework.combine import Blame

if TYPE_CHECKING:
    from batchsched.framework.session import Session

__all__ = [
    "VECTOR_POINTS",
    "TaskSetCache",
    "VectorFallback",
    "VectorTiers",
    "add_batch_node_order_fn",
    "add_node_order_fn",
    "add_predicate_fn",
    "add_preempt_predicate_fn",
    "add_template_fn",
    "batch_node_order_scores",
    "check_mask",
    "checked_scores",
    "many_scores",
    "many_tiers",
    "node_order_scores",
    "predicate_mask",
    "preempt_predicate_tiers",
    "register",
    "register_template",
    "stacked",
    "template_fns",
    "vector_tiers",
]

#: The points that may have vectorised variants.
VECTOR_POINTS = ("predicate", "node_order", "batch_node_order")

VectorFn = Callable[..., Any]
_PREEMPT_KEY = "batchsched.vector_preempt_predicates"
VectorTiers = Sequence[Sequence[tuple[str, VectorFn]]]

_EXTRA_KEY = "batchsched.vector_fns"
_MANY_KEY = "batchsched.vector_many_fns"
_TEMPLATES_KEY = "batchsched.vector_templates"


class VectorFallback(BatchSchedError):  # noqa: N818  (a signal, not a failure)
    """Raised by a vectorised variant that cannot answer exactly for this task."""


def _registry(ssn: Session) -> dict[str, dict[str, VectorFn]]:
    registry: dict[str, dict[str, VectorFn]] | None = ssn.extra.get(_EXTRA_KEY)
    if registry is None:
        registry = {point: {} for point in VECTOR_POINTS}
        ssn.extra[_EXTRA_KEY] = registry
    return registry


def register(
    ssn: Session, point: str, plugin: str, fn: VectorFn, *, many: VectorFn | None = None
) -> None:
    """Record ``plugin``'s vectorised variant of ``point`` (and its variant for several
    tasks at once, for the score points)."""
    if point not in VECTOR_POINTS:
        raise ValueError(f"no vectorised variant exists for extension point {point!r}")
    _registry(ssn)[point][plugin] = fn
    if many is not None:
        if point == "predicate":
            raise ValueError("predicates have no variant for several tasks")
        manies: dict[str, dict[str, VectorFn]] = ssn.extra.setdefault(_MANY_KEY, {})
        manies.setdefault(point, {})[plugin] = many


def add_predicate_fn(ssn: Session, plugin: str, fn: VectorFn) -> None:
    """Offer ``fn(task, columns)`` as ``plugin``'s predicate over every node at once."""
    register(ssn, "predicate", plugin, fn)


def add_preempt_predicate_fn(ssn: Session, plugin: str, fn: VectorFn) -> None:
    """Offer ``fn(task, columns) -> (ok, resolvable)`` as ``plugin``'s predicate as
    preempt and reclaim read it, over every node at once: ``ok`` where the plugin
    reports no error, ``resolvable`` where its error has only statuses that
    evicting pods may resolve (none of ``PREEMPT_FAILING_CODES``)."""
    variants: dict[str, VectorFn] = ssn.extra.setdefault(_PREEMPT_KEY, {})
    variants[plugin] = fn


def preempt_predicate_tiers(ssn: Session) -> VectorTiers | None:
    """The enabled predicates as preempt column forms, tier by tier, or None when an
    enabled predicate plugin has none (:func:`predicate_mask` combines them)."""
    return _enabled_variants(ssn, "predicate", ssn.extra.get(_PREEMPT_KEY, {}))


def add_node_order_fn(
    ssn: Session, plugin: str, fn: VectorFn, *, many: VectorFn | None = None
) -> None:
    """Offer ``fn(task, columns, candidates)`` as ``plugin``'s node-order scores over the
    candidates at once, and ``many(tasks, columns, candidates)`` for several tasks."""
    register(ssn, "node_order", plugin, fn, many=many)


def add_batch_node_order_fn(
    ssn: Session, plugin: str, fn: VectorFn, *, many: VectorFn | None = None
) -> None:
    """Offer ``fn(task, columns, candidates)`` as ``plugin``'s batch node-order scores;
    ``many`` as for :func:`add_node_order_fn`."""
    register(ssn, "batch_node_order", plugin, fn, many=many)


def add_template_fn(ssn: Session, plugin: str, fn: Callable[[TaskInfo], Any]) -> None:
    """Offer ``fn(task)``: what ``plugin``'s column answers depend on (see
    :func:`template_fns`)."""
    register_template(ssn, plugin, fn)


def register_template(ssn: Session, plugin: str, fn: Callable[[TaskInfo], Any]) -> None:
    """Record ``plugin``'s template function (see :func:`template_fns`)."""
    templates: dict[str, Callable[[TaskInfo], Any]] = ssn.extra.setdefault(_TEMPLATES_KEY, {})
    templates[plugin] = fn


def template_fns(
    ssn: Session, plugins: Sequence[str]
) -> list[Callable[[TaskInfo], Any]] | None:
    """The template functions of ``plugins``, or None if one of them has none.

    A plugin's template function ``fn(task)`` returns a hashable value, or None.
    A value promises that the plugin's vectorised answers (predicate mask,
    node-order and batch node-order scores) for any node depend only on that
    value, on the node's own figures and on what does not change during the
    session: not on other nodes (no normalisation over the candidates) and not on
    placements elsewhere. Tasks with equal values then get equal answers, and an
    answer for a node stays right until that node changes, which lets the node
    selector work out several tasks' windows at once. None makes no promise.
    """
    templates: dict[str, Callable[[TaskInfo], Any]] = ssn.extra.get(_TEMPLATES_KEY, {})
    fns = []
    for plugin in plugins:
        fn = templates.get(plugin)
        if fn is None:
            return None
        fns.append(fn)
    return fns


def registered(ssn: Session, point: str) -> dict[str, VectorFn]:
    """The vectorised variants of a point, by plugin (enabled or not)."""
    return dict(_registry(ssn)[point])


def vector_tiers(ssn: Session, point: str) -> VectorTiers | None:
    """The enabled functions of ``point`` as vectorised variants, tier by tier, or
    None when an enabled plugin serving the point has no variant."""
    return _enabled_variants(ssn, point, _registry(ssn)[point])


def many_tiers(ssn: Session, point: str) -> VectorTiers | None:
    """As :func:`vector_tiers`, with each plugin's variant for several tasks at once, or
    None when an enabled plugin serving the point has none."""
    return _enabled_variants(ssn, point, ssn.extra.get(_MANY_KEY, {}).get(point, {}))


def _enabled_variants(
    ssn: Session, point: str, variants: dict[str, VectorFn]
) -> VectorTiers | None:
    tiers: list[list[tuple[str, VectorFn]]] = []
    for tier in ssn.tiers_for(point):
        row: list[tuple[str, VectorFn]] = []
        for name, _ in tier:
            variant = variants.get(name)
            if variant is None:
                return None
            row.append((name, variant))
        tiers.append(row)
    return tiers


def _flat(tiers: VectorTiers) -> list[tuple[str, VectorFn]]:
    return [entry for tier in tiers for entry in tier]


def predicate_mask(
    tiers: VectorTiers, task: TaskInfo, columns: NodeColumns
) -> BoolArray | None:
    """Which nodes pass the predicates (None: all of them), over all nodes.

    Per node the first plugin reporting an error decides, as
    ``combine.first_failure`` does; the node fails unless that error is harmless.
    The array returned may be one a plugin shares: read it, do not modify it.
    """
    passes: BoolArray | None = None
    undecided: BoolArray | None = None
    failed: BoolArray | None = None
    with Blame("vector predicate") as blame:
        for blame.plugin, fn in _flat(tiers):
            answer = fn(task, columns)
            if answer is None:
                continue
            check_mask(blame.plugin, answer, len(columns))
            if isinstance(answer, tuple):
                ok, harmless = answer
                if undecided is None:
                    undecided = passes.copy() if passes is not None else np.ones(
                        len(columns), dtype=np.bool_)
                    failed = ~undecided
                assert failed is not None
                failed |= undecided & ~ok & ~harmless
                undecided &= ok
                continue
            if undecided is not None:
                assert failed is not None
                failed |= undecided & ~answer
                undecided &= answer
            elif passes is None:
                passes = answer  # read only: the next mask makes a new array
            else:
                passes = passes & answer
    if failed is not None:
        return ~failed
    return passes


def _is_mask(answer: object, size: int) -> bool:
    return (isinstance(answer, np.ndarray) and answer.dtype == np.bool_
            and answer.shape == (size,))


def check_mask(plugin: str, answer: object, size: int) -> None:
    """A vector predicate answers None, a bool array of one entry per node, or a pair
    of them (passes, harmless): anything else is the plugin's error, named here
    rather than by what it breaks later (a length-1 array would even broadcast)."""
    if _is_mask(answer, size) or (isinstance(answer, tuple) and len(answer) == 2
                                  and all(_is_mask(part, size) for part in answer)):
        return
    raise PluginError(
        f"plugin {plugin!r}: a vector predicate must return None, a bool array of one "
        f"entry per node ({size}) or a pair of them, not {_described(answer)}",
        plugin=plugin, point="vector predicate")


def checked_scores(plugin: str, point: str, scores: object,
                    shape: int | tuple[int, int]) -> Any:
    """A vector score's answer: a number for every candidate (a numpy number read as
    a float), or an array of numbers of the candidates' shape."""
    if isinstance(scores, float | int | np.integer | np.floating) and not isinstance(
            scores, bool | np.bool_):
        return scores if type(scores) in (float, int) else float(scores)
    expected = (shape,) if isinstance(shape, int) else shape
    if (isinstance(scores, np.ndarray) and scores.dtype.kind in "iuf"
            and scores.shape == expected):
        return scores
    raise PluginError(
        f"plugin {plugin!r}: a {point} must return a number or an array of numbers of "
        f"shape {expected} (one per candidate), not {_described(scores)}",
        plugin=plugin, point=point)


def _described(answer: object) -> str:
    if isinstance(answer, np.ndarray):
        return f"an array of {answer.dtype} of shape {answer.shape}"
    if isinstance(answer, tuple):
        return f"a tuple of {len(answer)}: ({', '.join(_described(a) for a in answer)})"
    return repr(answer) if len(repr(answer)) <= 60 else type(answer).__name__


class _Sum:
    """Per-candidate scores added up as the scalar path adds them (from 0.0, plugin
    after plugin). A float answer counts for every candidate: floats before the
    first array are summed on their own, then added to it (the same sums, as
    addition is commutative), and adding 0.0 is skipped (it changes nothing).
    ``shape`` is ``(candidates,)``, or ``(tasks, candidates)`` for several tasks."""

    __slots__ = ("array", "constant", "shape")

    def __init__(self, shape: int | tuple[int, int]) -> None:
        self.shape = shape
        self.array: FloatArray | None = None
        self.constant = 0.0

    def add(self, score: Any) -> None:
        if isinstance(score, float | int):
            if self.array is None:
                self.constant += score
            elif score != 0.0:
                self.array += score
        elif self.array is None:
            self.array = score + self.constant
        else:
            self.array += score

    def result(self) -> FloatArray:
        if self.array is None:
            return np.full(self.shape, self.constant)
        return self.array


def node_order_scores(
    tiers: VectorTiers, task: TaskInfo, columns: NodeColumns, candidates: Candidates
) -> FloatArray:
    """The summed node-order scores of the candidates (0.0 for an unscored node)."""
    total = _Sum(len(candidates))
    with Blame("vector node order") as blame:
        for blame.plugin, fn in _flat(tiers):
            total.add(checked_scores(blame.plugin, "vector node order",
                                      fn(task, columns, candidates), total.shape))
    scores = total.result()
    if math.isnan(float(scores.sum())):
        scores[np.isnan(scores)] = 0.0
    return scores


def batch_node_order_scores(
    tiers: VectorTiers, task: TaskInfo, columns: NodeColumns, candidates: Candidates
) -> FloatArray:
    """The summed batch node-order scores of the candidates."""
    total = _Sum(len(candidates))
    with Blame("vector batch node order") as blame:
        for blame.plugin, fn in _flat(tiers):
            total.add(_no_nan(blame.plugin, checked_scores(
                blame.plugin, "vector batch node order", fn(task, columns, candidates),
                total.shape)))
    return total.result()


def _no_nan(plugin: str, scores: Any) -> Any:
    """A batch score variant's answer, refused if NaN is among it (the scalar point
    refuses NaN alike: see :func:`batchsched.framework.combine.sum_batch_scores`)."""
    if np.isnan(scores).any():
        raise PluginError(f"plugin {plugin!r}: batch_node_order answered NaN",
                          plugin=plugin, point="batch_node_order")
    return scores


def many_scores(
    node_orders: VectorTiers, batch_orders: VectorTiers, tasks: Sequence[TaskInfo],
    columns: NodeColumns, candidates: Candidates,
) -> FloatArray:
    """Row ``k``: :func:`node_order_scores` plus :func:`batch_node_order_scores` for
    ``tasks[k]`` (the tiers hold the variants for several tasks, see :func:`many_tiers`)."""
    shape = (len(tasks), len(candidates))
    orders, batches = _flat(node_orders), _flat(batch_orders)
    if not orders and not batches:
        return np.zeros(shape)  # no scoring plugin: every node scores 0
    total = _Sum(shape)
    with Blame("vector node order") as blame:
        for blame.plugin, fn in orders:
            total.add(checked_scores(blame.plugin, "vector node order",
                                      fn(tasks, columns, candidates), shape))
    scores = total.result()
    if math.isnan(float(scores.sum())):
        scores[np.isnan(scores)] = 0.0
    batch = _Sum(shape)
    with Blame("vector batch node order") as blame:
        for blame.plugin, fn in batches:
            batch.add(_no_nan(blame.plugin, checked_scores(
                blame.plugin, "vector batch node order", fn(tasks, columns, candidates),
                shape)))
    scores += batch.result()
    return scores


def stacked(
    fn: VectorFn, tasks: Sequence[TaskInfo], columns: NodeColumns, candidates: Candidates
) -> FloatArray:
    """A variant for several tasks made of a single-task variant ``fn``: its answers,
    one row per task (a float answer fills its row). For the cases a plugin's own
    variant for several tasks does not cover."""
    rows = np.empty((len(tasks), len(candidates)))
    for row, task in enumerate(tasks):
        rows[row] = fn(task, columns, candidates)
    return rows


V = TypeVar("V")


class TaskSetCache(Generic[V]):
    """Values a variant for several tasks works out once per set of tasks.

    The fast path asks about the same tasks (one per kept template) again and again
    until a template comes or goes, so what depends only on the tasks (their requests
    side by side, how they group) is worth keeping; at most ``limit`` sets are kept
    (all are dropped beyond that).
    """

    __slots__ = ("_values", "limit")

    def __init__(self, limit: int = 256) -> None:
        self.limit = limit
        self._values: dict[tuple[str, ...], V] = {}

    def get(self, tasks: Sequence[TaskInfo], compute: Callable[[], V]) -> V:
        """The value for ``tasks`` (by their ids, in order), computed on first use."""
        key = tuple(task.uid for task in tasks)
        value = self._values.get(key)
        if value is None:
            if len(self._values) >= self.limit:
                self._values.clear()
            value = self._values[key] = compute()
        return value
