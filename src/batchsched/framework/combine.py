"""The rules that combine plugins' answers across tiers, one function per rule.

Each takes ``tiers``: for one extension point, the enabled functions of each
tier in configuration order, as ``(plugin_name, fn)`` pairs. A plugin that
raises becomes a :class:`~batchsched.errors.PluginError` naming the plugin and
the point (the session's state is whatever it was before the call).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any, TypeVar

from batchsched.api.fit import FitError
from batchsched.api.types import Vote
from batchsched.errors import BatchSchedError, PluginError

__all__ = [
    "Bound",
    "all_pass",
    "any_true",
    "call_all",
    "first_answer",
    "first_nonzero",
    "first_tier_decides",
    "intersect_per_tier",
    "plugin_failed",
    "sum_scores",
    "union_first_nonempty",
    "vote",
]

T = TypeVar("T")
Bound = Sequence[Sequence[tuple[str, Callable[..., Any]]]]


def plugin_failed(point: str, plugin: str, exc: Exception) -> PluginError:
    err = PluginError(
        f"plugin {plugin!r} raised in {point}: {type(exc).__name__}: {exc}",
        plugin=plugin, point=point,
    )
    err.__cause__ = exc
    return err


def first_nonzero(point: str, tiers: Bound, *args: Any) -> int:
    for tier in tiers:
        for name, fn in tier:
            try:
                result = fn(*args)
            except BatchSchedError:
                raise
            except Exception as exc:
                raise plugin_failed(point, name, exc) from exc
            if result:
                return -1 if result < 0 else 1
    return 0


def all_pass(point: str, tiers: Bound, *args: Any) -> bool:
    for tier in tiers:
        for name, fn in tier:
            try:
                ok = fn(*args)
            except BatchSchedError:
                raise
            except Exception as exc:
                raise plugin_failed(point, name, exc) from exc
            if not ok:
                return False
    return True


def first_failure(point: str, tiers: Bound, *args: Any) -> FitError | None:
    """Predicates: None when all pass, else the first FitError (returned or raised)."""
    for tier in tiers:
        for name, fn in tier:
            try:
                err = fn(*args)
            except FitError as fit:
                return fit
            except BatchSchedError:
                raise
            except Exception as exc:
                raise plugin_failed(point, name, exc) from exc
            if err is not None:
                return err  # type: ignore[no-any-return]
    return None


def first_invalid(point: str, tiers: Bound, *args: Any) -> Any:
    """Job valid: the first result that did not pass, else None."""
    for tier in tiers:
        for name, fn in tier:
            try:
                result = fn(*args)
            except BatchSchedError:
                raise
            except Exception as exc:
                raise plugin_failed(point, name, exc) from exc
            if result is not None and not result.passed:
                return result
    return None


def any_true(point: str, tiers: Bound, *args: Any) -> bool:
    for tier in tiers:
        for name, fn in tier:
            try:
                if fn(*args):
                    return True
            except BatchSchedError:
                raise
            except Exception as exc:
                raise plugin_failed(point, name, exc) from exc
    return False


def vote(point: str, tiers: Bound, *args: Any) -> bool:
    for tier in tiers:
        permitted = False
        for name, fn in tier:
            try:
                answer = fn(*args)
            except BatchSchedError:
                raise
            except Exception as exc:
                raise plugin_failed(point, name, exc) from exc
            if answer < 0:
                return False
            if answer > 0:
                permitted = True
        if permitted:
            return True
    return True


def first_tier_decides(point: str, tiers: Bound, *args: Any) -> bool:
    for tier in tiers:
        if not tier:
            continue
        for name, fn in tier:
            try:
                if not fn(*args):
                    return False
            except BatchSchedError:
                raise
            except Exception as exc:
                raise plugin_failed(point, name, exc) from exc
        return True
    return False


def intersect_per_tier(point: str, tiers: Bound, actor: Any, candidates: list[T]) -> list[T]:
    """Volcano's Preemptable/Reclaimable, quirks included.

    Per tier: a plugin that returns None abstains; an empty answer ends the tier
    with no decision; otherwise the answers are intersected (by task uid, in the
    first answer's order). An empty intersection counts as "no answer yet", so the
    next plugin's answer starts over, as Go's nil slice does. The first tier with a
    non-empty result wins; with none, there are no victims.
    """
    for tier in tiers:
        victims: list[T] | None = None
        for name, fn in tier:
            try:
                answer = fn(actor, candidates)
            except BatchSchedError:
                raise
            except Exception as exc:
                raise plugin_failed(point, name, exc) from exc
            if answer is None:
                continue
            if not answer:
                victims = None
                break
            if victims is None:
                victims = list(answer)
            else:
                keep = {v.uid for v in answer}
                victims = [v for v in victims if v.uid in keep] or None  # type: ignore[attr-defined]
        if victims:
            return victims
    return []


def union_first_nonempty(point: str, tiers: Bound, tasks: list[T]) -> list[T]:
    for tier in tiers:
        seen: dict[int, T] = {}
        for name, fn in tier:
            try:
                for victim in fn(tasks) or ():
                    seen.setdefault(id(victim), victim)
            except BatchSchedError:
                raise
            except Exception as exc:
                raise plugin_failed(point, name, exc) from exc
        if seen:
            return list(seen.values())
    return []


def first_answer(point: str, tiers: Bound, *args: Any) -> Any:
    for tier in tiers:
        for name, fn in tier:
            try:
                answer = fn(*args)
            except BatchSchedError:
                raise
            except Exception as exc:
                raise plugin_failed(point, name, exc) from exc
            if answer is not None:
                return answer
    return None


def sum_scores(point: str, tiers: Bound, *args: Any) -> float:
    """Node order: the sum of the scores. A plugin that cannot score the node raises
    FitError, which is passed on as is (Volcano leaves such a node unscored)."""
    total = 0.0
    for tier in tiers:
        for name, fn in tier:
            try:
                total += fn(*args)
            except (FitError, BatchSchedError):
                raise
            except Exception as exc:
                raise plugin_failed(point, name, exc) from exc
    return total


def sum_batch_scores(point: str, tiers: Bound, *args: Any) -> dict[str, float]:
    totals: dict[str, float] = {}
    for tier in tiers:
        for name, fn in tier:
            try:
                scores = fn(*args)
            except BatchSchedError:
                raise
            except Exception as exc:
                raise plugin_failed(point, name, exc) from exc
            for node, score in (scores or {}).items():
                totals[node] = totals.get(node, 0.0) + score
    return totals


def call_all(point: str, tiers: Bound, *args: Any) -> None:
    for tier in tiers:
        for name, fn in tier:
            try:
                fn(*args)
            except BatchSchedError:
                raise
            except Exception as exc:
                raise plugin_failed(point, name, exc) from exc


def flatten(tiers: Bound) -> Iterable[tuple[str, Callable[..., Any]]]:
    for tier in tiers:
        yield from tier


_ = Vote  # votes are plain ints compared with 0; the enum documents their values
