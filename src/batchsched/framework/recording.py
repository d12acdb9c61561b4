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

Tasks named in ``watch`` are also scored when a statement places them: just
before the placement, every node that passes the predicates and has room is
scored by each node-order plugin (:class:`Placement`: the chosen node and the
runners-up, plugin by plugin). Scoring every node costs what the scalar path
costs, so only watched tasks pay it.

A plugin that keeps per-queue quotas may offer ``queue_quota(queue_name)``
returning a :class:`QueueQuota` (proportion and capacity do): explanations then
show how far a job's request is from each ceiling. One whose checks also weigh other
queues (hierarchical capacity: every ancestor) may offer ``queue_quota_chain(name)``,
the ``(queue, quota)`` pairs it checks, the queue's own last.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any

import attrs

from batchsched.api.fit import FitError
from batchsched.api.resource import Resource
from batchsched.errors import NodeOrderError
from batchsched.framework.combine import Blame, flatten

if TYPE_CHECKING:
    from batchsched.api.node import NodeInfo
    from batchsched.api.task import TaskInfo
    from batchsched.framework.session import Session

__all__ = ["DEFAULT_POINTS", "NodeScore", "Placement", "PluginAnswer", "QueueQuota", "Recorder"]

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
    #: When it was given, among all the answers the recorder kept (0 first); not part
    #: of what the answer is (equal answers given twice are the same answer).
    order: int = attrs.field(default=0, eq=False)


@attrs.frozen
class QueueQuota:
    """A queue's figures as a quota plugin sees them in this session: what it has
    allocated, and each ceiling it enforces (``deserved``, ``capability``...)."""

    allocated: Resource
    ceilings: Mapping[str, Resource]
    #: The ceilings that refuse a job not yet admitted (enqueue) and those that refuse
    #: a task (allocatable); None: every ceiling.
    admission: frozenset[str] | None = None
    allocation: frozenset[str] | None = None
    #: What admission counts as taken (allocated + inqueue - elastic, as Volcano's
    #: enqueue checks weigh it); None: ``allocated``.
    admitted: Resource | None = None
    #: Per ceiling, what bounds it where that is not the queue's own spec, and on which
    #: dimensions (proportion's capability: the cluster less the other queues'
    #: guarantees).
    bounds: Mapping[str, tuple[str, frozenset[str]]] = attrs.field(factory=dict)


@attrs.frozen
class NodeScore:
    """One node's score for a task: the total allocate ranks it by, and each plugin's
    part (node order plus batch node order; None: the plugin could not score it)."""

    node: str
    total: float
    by_plugin: Mapping[str, float | None]


@attrs.frozen
class Placement:
    """Where a watched task went and the nodes it was weighed against, best first."""

    task: str
    kind: str
    chosen: NodeScore | None
    runners_up: tuple[NodeScore, ...]
    #: Nodes that pass the predicates and have room (the chosen one included).
    feasible: int


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

    def __init__(self, points: Iterable[str] = DEFAULT_POINTS, *, per_subject: int = 200,
                 watch: Iterable[str] = (), runners_up: int = 3) -> None:
        self.points = frozenset(points)
        self.per_subject = per_subject
        self.answers: dict[str, list[PluginAnswer]] = {}
        self.notes: dict[str, list[tuple[str, str]]] = {}
        #: Task ids whose placements are scored (see the module docstring).
        self.watch = frozenset(watch)
        self.runners_up = runners_up
        #: Each watched task's placements in this session, in order (a placement a
        #: statement later discarded stays: it shows what was tried).
        self.placements: dict[str, list[Placement]] = {}
        self._given = itertools.count()
        #: Per subject and (point, plugin, about), the runs of one answer given again
        #: and again ([first order, last order, answer]): what ``last_answers`` reads,
        #: complete whatever ``per_subject`` keeps for display.
        self._runs: dict[str, dict[tuple[str, str, str], list[list[Any]]]] = {}

    def wrap(self, point: str, plugin: str, fn: Fn) -> Fn:
        """``fn`` itself if ``point`` is not recorded, else a function that records."""
        if point not in self.points:
            return fn

        def recorded(*args: Any) -> Any:
            result = fn(*args)
            subject, about = _subject(args)
            self._keep(PluginAnswer(point, plugin, subject, _describe(result), about,
                                    next(self._given)))
            return result

        return recorded

    def _keep(self, answer: PluginAnswer) -> None:
        kept = self.answers.setdefault(answer.subject, [])
        if len(kept) < self.per_subject:
            kept.append(answer)
        runs = self._runs.setdefault(answer.subject, {}).setdefault(
            (answer.point, answer.plugin, answer.about), [])
        if runs and runs[-1][2].answer == answer.answer:
            runs[-1][1] = answer.order
            runs[-1][2] = answer
        else:
            runs.append([answer.order, answer.order, answer])

    def refused_placement(self, task: str, plugin: str, node: str, reason: str) -> None:
        """A plugin's allocate event handler refused to place ``task`` on ``node`` (the
        statement undid the placement): kept as its answer at ``allocate event``."""
        self._keep(PluginAnswer("allocate event", plugin, task, f"refused: {reason}", node,
                                next(self._given)))

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

    def last_answers(self, subject: str, *, until: float = math.inf) -> list[PluginAnswer]:
        """Each plugin's last answer at each point about ``subject`` (and what it was
        asked with), given no later than ``until`` (an ``order``), in the order given: a
        later answer replaces an earlier one (a queue with room again, a task a
        later round placed)."""
        last: list[tuple[float, PluginAnswer]] = []
        for runs in self._runs.get(subject, {}).values():
            run = next((r for r in reversed(runs) if r[0] <= until), None)
            if run is not None:
                # Within a run the answer is the same: its latest occurrence by then.
                last.append((min(run[1], until), run[2]))
        return [answer for _, answer in sorted(last, key=lambda item: item[0])]

    def last_given(self, subjects: Iterable[str], *,
                   points: Iterable[str] | None = None) -> int | None:
        """When the last answer about any of ``subjects`` was given (at one of
        ``points``, when given; None: none was)."""
        kept = None if points is None else frozenset(points)
        orders = [runs[-1][1] for subject in subjects
                  for key, runs in self._runs.get(subject, {}).items()
                  if kept is None or key[0] in kept]
        return max(orders) if orders else None

    def before_placement(self, ssn: Session, task: TaskInfo, node: NodeInfo, kind: str) -> None:
        """Score a watched task on every node it could go to, just before a statement
        places it on ``node`` (called by the statement; cheap for other tasks)."""
        if task.uid not in self.watch:
            return
        # Allocate prefers the nodes the task fits now; only a pipelined placement
        # competes for room being freed (as allocate weighs them, by the init request).
        def room(candidate: NodeInfo) -> Resource:
            return candidate.idle if kind == "allocate" else candidate.future_idle()

        with ssn.for_report():
            feasible = [
                candidate for candidate in ssn.node_list
                if (candidate is node or task.init_resreq.less_equal(room(candidate)))
                and ssn.predicate(task, candidate) is None
            ]
        if ssn.sharding.active:
            # Sharded, allocate ranks the nodes of the chosen one's side only: the
            # shard's, or (soft) the others' (hard sharding has no other side).
            inside = node.name in ssn.nodes_in_shard
            feasible = [candidate for candidate in feasible
                        if (candidate.name in ssn.nodes_in_shard) == inside]
        if node not in feasible:
            feasible.append(node)
        scored = score_nodes(ssn, task, feasible)
        chosen = next((s for s in scored if s.node == node.name), None)
        others = tuple(s for s in scored if s.node != node.name)[: self.runners_up]
        self.placements.setdefault(task.uid, []).append(
            Placement(task.uid, kind, chosen, others, len(feasible)))


def score_nodes(ssn: Session, task: TaskInfo, nodes: list[NodeInfo]) -> list[NodeScore]:
    """Each node's score as allocate ranks it (node order plus batch node order; a
    node that a node-order function cannot score keeps only its batch score), best
    first, ties by node name; and each plugin's part of it, for display (None: the
    plugin could not score the node)."""
    try:
        batch = ssn.batch_node_order(task, nodes)
    except NodeOrderError:
        batch = {}  # the explanation still shows what the other functions said
    totals: dict[str, float] = {}
    for node in nodes:
        try:
            ordered = ssn.node_order(task, node)
        except FitError:
            ordered = 0.0
        totals[node.name] = ordered + batch.get(node.name, 0.0)
    parts: dict[str, dict[str, float | None]] = {node.name: {} for node in nodes}
    with Blame("node_order") as blame:
        for blame.plugin, fn in flatten(ssn.tiers_for("node_order")):
            for node in nodes:
                try:
                    parts[node.name][blame.plugin] = float(fn(task, node))
                except FitError:
                    parts[node.name][blame.plugin] = None
    with Blame("batch_node_order") as blame:
        for blame.plugin, fn in flatten(ssn.tiers_for("batch_node_order")):
            answers = fn(task, nodes) or {}
            for node in nodes:
                earlier = parts[node.name].get(blame.plugin) or 0.0
                parts[node.name][blame.plugin] = earlier + float(answers.get(node.name, 0.0))
    scored = [NodeScore(name, totals[name], by_plugin) for name, by_plugin in parts.items()]
    scored.sort(key=lambda s: (-s.total, s.node))
    return scored
