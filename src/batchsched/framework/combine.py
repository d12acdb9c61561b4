"""The rules that combine plugins' answers across tiers, one function per rule.

Each takes ``tiers``: for one extension point, the enabled functions of each
tier in configuration order, as ``(plugin_name, fn)`` pairs. A plugin that
raises becomes a :class:`~batchsched.errors.PluginError` naming the plugin and
the point (the session's state is whatever it was before the call).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, TypeVar

from batchsched.api.fit import FitError
from batchsched.errors import (
    BatchSchedError,
    PluginError,
    QuantityError,
    ScenarioError,
    WorkloadError,
)

__all__ = [
    "Blame",
    "Bound",
    "all_pass",
    "any_true",
    "blamed",
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


#: batchsched's errors that say which input was wrong but not who read it (a plugin
#: parsing an annotation with Resource.from_mapping, say): escaping a plugin, they are
#: blamed on it like any other exception. Every other BatchSchedError passes through:
#: it is a signal the session acts on (a refused placement, a dry run a plugin cannot
#: follow, VectorFallback...) or names its source already (PluginError, ConfigError).
_UNATTRIBUTED = (QuantityError, ScenarioError, WorkloadError)


def passes_through(exc: BaseException) -> bool:
    """Whether ``exc``, escaping a plugin, goes on as it is (see ``_UNATTRIBUTED``)."""
    return isinstance(exc, BatchSchedError) and not isinstance(exc, _UNATTRIBUTED)


def blamed(point: str, plugin: str, exc: Exception) -> Exception:
    """What to raise for ``exc`` escaping ``plugin`` at ``point``: the error itself
    when it passes through, else a PluginError naming the plugin and the point."""
    return exc if passes_through(exc) else plugin_failed(point, plugin, exc)


class Blame:
    """Turns an exception escaping a plugin into a PluginError naming it.

    The loops assign the plugin being called to ``blame.plugin``
    (``for blame.plugin, fn in tier``); the errors :func:`passes_through` lets go
    pass through untouched.
    """

    __slots__ = ("plugin", "point")

    def __init__(self, point: str) -> None:
        self.point = point
        self.plugin = "<unknown>"

    def __enter__(self) -> Blame:
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                 tb: object) -> None:
        if isinstance(exc, Exception) and not passes_through(exc):
            raise plugin_failed(self.point, self.plugin, exc) from exc


# The three rules below run for every task or every heap comparison: they blame
# with try/except (free when nothing raises) rather than the Blame context
# manager, with exactly Blame's effect.


def compare_by_key(key: Callable[[Any], Any]) -> Callable[[Any, Any], int]:
    """The three-way comparison of ``key(left)`` and ``key(right)`` (<0: left first; 0
    when neither key is smaller), as an order plugin registers it."""

    def compare(left: Any, right: Any) -> int:
        lkey, rkey = key(left), key(right)
        if lkey < rkey:
            return -1
        return 1 if rkey < lkey else 0

    return compare


def first_nonzero(point: str, tiers: Bound, *args: Any) -> int:
    plugin = "<unknown>"
    try:
        for tier in tiers:
            for plugin, fn in tier:  # noqa: B007 (named in the error)
                result = fn(*args)
                if result:
                    return -1 if result < 0 else 1
    except Exception as exc:
        raise blamed(point, plugin, exc)  # noqa: B904 (blamed sets the cause)
    return 0


def all_pass(point: str, tiers: Bound, *args: Any) -> bool:
    plugin = "<unknown>"
    try:
        for tier in tiers:
            for plugin, fn in tier:  # noqa: B007 (named in the error)
                if not fn(*args):
                    return False
    except Exception as exc:
        raise blamed(point, plugin, exc)  # noqa: B904 (blamed sets the cause)
    return True


def first_failure(point: str, tiers: Bound, *args: Any) -> FitError | None:
    """Predicates: None when all pass, else the first FitError (returned or raised)."""
    plugin = "<unknown>"
    try:
        for tier in tiers:
            for plugin, fn in tier:
                try:
                    err = fn(*args)
                except FitError as fit:
                    return fit
                if err is None:
                    continue
                if not isinstance(err, FitError):
                    raise PluginError(
                        f"plugin {plugin!r}: {point} must return None or a FitError, "
                        f"not {err!r}", plugin=plugin, point=point)
                return err
    except Exception as exc:
        raise blamed(point, plugin, exc)  # noqa: B904 (blamed sets the cause)
    return None


def first_invalid(point: str, tiers: Bound, *args: Any) -> Any:
    """Job valid: the first result that did not pass, else None (asked for every job
    of every session: it blames with try/except, as the rules above)."""
    plugin = "<unknown>"
    try:
        for tier in tiers:
            for plugin, fn in tier:  # noqa: B007 (named in the error)
                result = fn(*args)
                if result is not None and not result.passed:
                    return result
    except Exception as exc:
        raise blamed(point, plugin, exc)  # noqa: B904 (blamed sets the cause)
    return None


def any_true(point: str, tiers: Bound, *args: Any) -> bool:
    with Blame(point) as blame:
        for tier in tiers:
            for blame.plugin, fn in tier:
                if fn(*args):
                    return True
    return False


def vote(point: str, tiers: Bound, *args: Any) -> bool:
    """Job enqueueable / pipelined: each answer is a
    :class:`~batchsched.api.types.Vote` (an int: below 0 rejects, 0 abstains,
    above 0 permits). Any reject gives no; a tier with a permit gives yes; with no
    vote at all, yes. (Asked for every pending job by enqueue: it blames with
    try/except, as the rules above.)"""
    plugin = "<unknown>"
    try:
        for tier in tiers:
            permitted = False
            for plugin, fn in tier:  # noqa: B007 (named in the error)
                answer = fn(*args)
                if answer < 0:
                    return False
                if answer > 0:
                    permitted = True
            if permitted:
                return True
    except Exception as exc:
        raise blamed(point, plugin, exc)  # noqa: B904 (blamed sets the cause)
    return True


def first_tier_decides(point: str, tiers: Bound, *args: Any) -> bool:
    with Blame(point) as blame:
        for tier in tiers:
            if not tier:
                continue
            return all(fn(*args) for blame.plugin, fn in tier)
    return False


def intersect_per_tier(point: str, tiers: Bound, actor: Any, candidates: list[T]) -> list[T]:
    """Volcano's Preemptable/Reclaimable, quirks included.

    Per tier: a plugin that returns None abstains; an empty answer ends the tier
    with no decision; otherwise the answers are intersected (by task uid, in the
    first answer's order). An empty intersection counts as "no answer yet", so the
    next plugin's answer starts over, as Go's nil slice does. The first tier with a
    non-empty result wins; with none, there are no victims.
    """
    known: Callable[[Any], T | None] | None = None
    with Blame(point) as blame:
        for tier in tiers:
            victims: list[T] | None = None
            for blame.plugin, fn in tier:
                answer = fn(actor, candidates)
                if answer is None:
                    continue
                if not answer:
                    victims = None
                    break
                if known is None:  # built once, for the first answer that names tasks
                    known = _offered_by_uid({task.uid: task  # type: ignore[attr-defined]
                                             for task in candidates})
                chosen = _among(point, blame.plugin, answer, known)
                if victims is None:
                    victims = chosen
                else:
                    keep = {v.uid for v in chosen}  # type: ignore[attr-defined]
                    victims = [v for v in victims if v.uid in keep] or None  # type: ignore[attr-defined]
            if victims:
                return victims
    return []


def _offered_by_uid(offered: Mapping[str, T]) -> Callable[[Any], T | None]:
    def known(victim: Any) -> T | None:
        uid = getattr(victim, "uid", None)
        return offered.get(uid) if isinstance(uid, str) else None
    return known


def _among(point: str, plugin: str, answer: Iterable[Any],
           known: Callable[[Any], T | None]) -> list[T]:
    """The answer's tasks as the caller knows them (``known(victim)``, None for a
    stranger); a PluginError naming the plugin when it names anything else (a task of
    another node, one the session does not have, a task id instead of a task): the
    action would evict what it never weighed."""
    chosen = []
    for victim in answer:
        task = known(victim)
        if task is None:
            raise PluginError(f"plugin {plugin!r}: {point} answered {victim!r}, which is not "
                              "one of the tasks it may name", plugin=plugin, point=point)
        chosen.append(task)
    return chosen


def union_first_nonempty(point: str, tiers: Bound, tasks: list[T],
                         known: Callable[[Any], T | None] | None = None) -> list[T]:
    """Victim tasks: per tier the union of the answers, the first tier with any victim
    wins. A victim is one of ``tasks`` (as offered) or one ``known`` gives (a task the
    plugin picked itself, such as tdm's from the nodes), each once."""
    by_uid = _offered_by_uid({task.uid: task for task in tasks})  # type: ignore[attr-defined]

    def resolve(victim: Any) -> T | None:
        task = by_uid(victim)
        return task if task is not None or known is None else known(victim)

    with Blame(point) as blame:
        for tier in tiers:
            seen: dict[str, T] = {}
            for blame.plugin, fn in tier:
                for victim in _among(point, blame.plugin, fn(tasks) or (), resolve):
                    seen.setdefault(victim.uid, victim)  # type: ignore[attr-defined]
            if seen:
                return list(seen.values())
    return []


def first_answer(point: str, tiers: Bound, *args: Any) -> Any:
    with Blame(point) as blame:
        for tier in tiers:
            for blame.plugin, fn in tier:
                answer = fn(*args)
                if answer is not None:
                    return answer
    return None


def sum_scores(point: str, tiers: Bound, *args: Any) -> float:
    """Node order: the sum of the scores. A plugin that cannot score the node raises
    FitError, which is passed on as is (Volcano leaves such a node unscored)."""
    total = 0.0
    unscored: FitError | None = None
    with Blame(point) as blame:
        for tier in tiers:
            for blame.plugin, fn in tier:
                try:
                    score = fn(*args)
                except FitError as err:
                    unscored = err
                    break
                if isinstance(score, float) and math.isnan(score):
                    # No order at all (a node that cannot be scored says so with a
                    # FitError).
                    raise PluginError(f"plugin {blame.plugin!r}: {point} answered NaN",
                                      plugin=blame.plugin, point=point)
                total += score
            if unscored is not None:
                break
    if unscored is not None:
        raise unscored
    return total


def sum_batch_scores(point: str, tiers: Bound, *args: Any) -> dict[str, float]:
    """Batch node order: each node's scores summed. NaN orders nothing, as in
    :func:`sum_scores`: a plugin answering it is an error."""
    totals: dict[str, float] = {}
    with Blame(point) as blame:
        for tier in tiers:
            for blame.plugin, fn in tier:
                for node, score in (fn(*args) or {}).items():
                    if isinstance(score, float) and math.isnan(score):
                        raise PluginError(f"plugin {blame.plugin!r}: {point} answered NaN "
                                          f"for node {node!r}",
                                          plugin=blame.plugin, point=point)
                    totals[node] = totals.get(node, 0.0) + score
    return totals


def call_all(point: str, tiers: Bound, *args: Any) -> None:
    with Blame(point) as blame:
        for tier in tiers:
            for blame.plugin, fn in tier:
                fn(*args)


def flatten(tiers: Bound) -> Iterable[tuple[str, Callable[..., Any]]]:
    for tier in tiers:
        yield from tier

