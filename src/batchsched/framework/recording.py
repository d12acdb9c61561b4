"""Recording what each plugin answered, for explanations (off by default).

A :class:`Recorder` given to :meth:`Session.open <batchsched.framework.session.Session.open>`
wraps, as plugins register them, the functions of the points it records; each
call then leaves a :class:`PluginAnswer` filed under the job or task it was
about. Without a recorder nothing is wrapped and nothing is kept.

The points recorded by default are the job- and queue-level ones that decide
whether a job may start (``job_valid``, ``job_enqueueable``, ``allocatable``,
``job_ready``, ``job_pipelined``, ``overused``, ``job_starving``). Per-node
answers (predicates) are summarised by the session's fit errors instead.

A plugin may attach reasons of its own: ``recorder.note(subject, plugin, text)``
(through ``ssn.recorder`` when one is set).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

import attrs

__all__ = ["DEFAULT_POINTS", "PluginAnswer", "Recorder"]

DEFAULT_POINTS = frozenset({
    "job_valid", "job_enqueueable", "allocatable", "job_ready", "job_pipelined", "overused",
    "job_starving",
})

Fn = Callable[..., Any]


@attrs.frozen
class PluginAnswer:
    """One plugin's answer at one point about one job, task or queue."""

    point: str
    plugin: str
    subject: str
    answer: str
    #: The queue or node the question was asked with, if any.
    about: str = ""


def _subject(args: tuple[Any, ...]) -> tuple[str, str]:
    """(what the question is about, what it was asked with)."""
    uids: list[str] = []
    for arg in args:
        uid = getattr(arg, "uid", None) or getattr(arg, "name", None)
        if isinstance(uid, str):
            uids.append(uid)
    if len(args) == 2 and uids:  # (queue, task): the task is the subject
        return uids[-1], uids[0] if len(uids) > 1 else ""
    return (uids[0] if uids else ""), ""


def _describe(result: Any) -> str:
    if result is None:
        return "ok"
    if isinstance(result, bool):
        return "yes" if result else "no"
    passed = getattr(result, "passed", None)
    if passed is not None:
        return "ok" if passed else f"invalid: {getattr(result, 'reason', '')} " \
                                   f"{getattr(result, 'message', '')}".rstrip()
    if isinstance(result, int):
        return {1: "permit", 0: "abstain", -1: "reject"}.get(result, str(result))
    return str(result)


class Recorder:
    """Keeps the answers of the recorded points, by subject (job, task or queue id)."""

    def __init__(self, points: Iterable[str] = DEFAULT_POINTS, *, per_subject: int = 200) -> None:
        self.points = frozenset(points)
        self.per_subject = per_subject
        self.answers: dict[str, list[PluginAnswer]] = {}
        self.notes: dict[str, list[tuple[str, str]]] = {}

    def wrap(self, point: str, plugin: str, fn: Fn) -> Fn:
        """``fn`` itself if ``point`` is not recorded, else a function that records."""
        if point not in self.points:
            return fn

        def recorded(*args: Any) -> Any:
            result = fn(*args)
            subject, about = _subject(args)
            kept = self.answers.setdefault(subject, [])
            if len(kept) < self.per_subject:
                kept.append(PluginAnswer(point, plugin, subject, _describe(result), about))
            return result

        return recorded

    def note(self, subject: str, plugin: str, text: str) -> None:
        """A reason a plugin wants shown with ``subject`` (a job, task or queue id)."""
        self.notes.setdefault(subject, []).append((plugin, text))

    def about(self, subject: str) -> list[PluginAnswer]:
        """The answers about ``subject``, each distinct answer once, in order."""
        seen: set[PluginAnswer] = set()
        out = []
        for answer in self.answers.get(subject, []):
            if answer not in seen:
                seen.add(answer)
                out.append(answer)
        return out
