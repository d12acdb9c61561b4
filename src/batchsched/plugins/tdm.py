"""tdm: revocable nodes usable only in their time windows (Volcano's ``plugins/tdm``).

A node is *revocable* when it has the label ``volcano.sh/revocable-zone: Z``.
Each zone Z is configured by an argument ``tdm.revocable-zone.Z: "H:MM-H:MM"``
(hour of one or two digits, minutes of two; when the start is not before the
end the window ends the next day, so ``"0:00-0:00"`` is a whole day). **The
window is read in UTC** against the session clock ``ssn.now`` (Volcano uses the
scheduler's local time zone; a library has none to assume). A zone is active
while ``start <= now <= end`` in whole seconds, start and end on the UTC date of
``now``.

A task may use revocable nodes when its annotation ``volcano.sh/revocable-zone``
is ``"*"``, or, without that annotation, when ``volcano.sh/preemptable`` is true
(Volcano's rule; any other zone value means "no"). ``TaskInfo.create`` derives
this once, as ``task.revocable_zone`` (``"*"`` or ``""``).

* **predicate**: a non-revocable node passes; a revocable node fails
  (UnschedulableAndUnresolvable) when its zone is inactive (``current time beyond
  revocable zone Z:RAW``), unknown (``revocable zone Z not support``) or
  malformed, or when the task may not use revocable nodes (``not allow to
  dispatch to revocable node``).
* **node order**: 100 for a revocable node in an active zone and a task that may
  use it, else 0; a revocable node whose zone is inactive or unknown gets no
  score (the node-order function fails for it).
* **preemptable**: a preemptable or revocable-capable task evicts nobody; any
  other may evict Running preemptable tasks on non-revocable nodes, per job
  within the job's disruption budget (below).
* **victim tasks**: for every configured zone that is inactive, the Running
  preemptable tasks on its nodes, per job within the budget -- at most once per
  ``tdm.evict.period`` (Go duration, default ``1m``) per scheduler cache (the
  time of the last selection is kept on the cache object, so it spans sessions
  and two schedulers on different caches never share it; a session opened on a
  bare snapshot keeps it for that session only). The ``shuffle`` action evicts
  them.
* **job order**: non-preemptable jobs first; **job pipelined**: permit when the
  job is pipelined, else reject; **job starving**: a non-preemptable job with
  Pending tasks.

Arguments: ``tdm.revocable-zone.<zone>`` (a window, see above) and
``tdm.evict.period``. A period that is not a Go duration, or a window that cannot
be parsed, is logged as a warning (Volcano's fallback is kept: the default period;
the zone's nodes are never usable), as is any other argument. A value that is not
a string at all (a number, a boolean, an empty value) is a ConfigError naming the
argument: Volcano's scheduler panics on it. A zone argument with an empty name
(``tdm.revocable-zone.``) names no node: only labelled nodes are revocable.

Budget (pod-group annotations, read as Volcano's ``extractBudget`` reads them:
``volcano.sh/jdb-min-available`` whenever it is there, else
``volcano.sh/jdb-max-unavailable``; each a count or a percentage of the job's
tasks, rounded up, as Go's ``intstr`` reads it): with a max-unavailable a job may
lose ``max - (tasks - finished - running)`` more tasks; with a min-available,
``running - min`` if positive; else (or with an empty value) 1.

Determinism: zones are visited in name order, nodes in session order, and a
job's candidates in task id order; victims are taken from the front.
"""

from __future__ import annotations

import datetime as dt
import logging
import math
from collections.abc import Mapping

from batchsched.api.fit import FitError, FitStatus
from batchsched.api.job import JobInfo
from batchsched.api.node import NodeInfo
from batchsched.api.task import TaskInfo
from batchsched.api.types import COMPLETED_STATUSES, FitStatusCode, TaskStatus, Vote
from batchsched.errors import ConfigError
from batchsched.framework.arguments import Arguments, warned_once
from batchsched.framework.session import Session
from batchsched.kube.go_strconv import parse_int
from batchsched.kube.go_strings import trim_space

__all__ = [
    "JDB_MAX_UNAVAILABLE",
    "JDB_MIN_AVAILABLE",
    "REASON_NOT_ALLOWED",
    "TdmPlugin",
    "max_pod_evict_num",
    "parse_revocable_zone",
    "zone_error",
]

log = logging.getLogger("batchsched")
#: The unreadable windows already said (key, value), once per process.
_WARNED_WINDOWS: set[tuple[str, str]] = warned_once()

PLUGIN_NAME = "tdm"
ZONE_PREFIX = "tdm.revocable-zone."
EVICT_PERIOD = "tdm.evict.period"
DEFAULT_EVICT_PERIOD = 60.0
MAX_NODE_SCORE = 100.0
JDB_MIN_AVAILABLE = "volcano.sh/jdb-min-available"
JDB_MAX_UNAVAILABLE = "volcano.sh/jdb-max-unavailable"
REASON_NOT_ALLOWED = "not allow to dispatch to revocable node"


# Where the time of the last victim selection is kept: an attribute of the cache
# object, else (no cache, or one that takes no attributes) the session's extra.
_CACHE_ATTRIBUTE = "_batchsched_tdm_state"
_EXTRA_KEY = "tdm.state"
_LAST_EVICT = "last-evict"
_DAY = 86400


def _clock(text: str) -> tuple[int, int]:
    """Go's ``time.Parse("15:04", text)``: an hour of one or two digits, ``:``, a
    minute of exactly two; its error texts word for word (they are tdm's reasons)."""

    def cannot_parse(value_elem: str, layout_elem: str) -> ValueError:
        return ValueError(f"parsing time {_go_time_quote(text)} as \"15:04\": cannot parse "
                          f"{_go_time_quote(value_elem)} as {_go_time_quote(layout_elem)}")

    def said(message: str) -> ValueError:  # Go's ParseError with a message of its own
        return ValueError(f"parsing time {_go_time_quote(text)}{message}")

    def digit(i: int, rest: str) -> bool:
        return i < len(rest) and "0" <= rest[i] <= "9"

    if not digit(0, text):
        raise cannot_parse(text, "15")
    width = 2 if digit(1, text) else 1
    hour, rest = int(text[:width]), text[width:]
    if hour >= 24:
        raise said(": hour out of range")
    if not rest.startswith(":"):
        raise cannot_parse(rest, ":")
    rest = rest[1:]
    if not (digit(0, rest) and digit(1, rest)):
        raise cannot_parse(rest, "04")
    minute, rest = int(rest[:2]), rest[2:]
    if minute >= 60:
        raise said(": minute out of range")
    if rest:
        raise said(f": extra text: {_go_time_quote(rest)}")
    return hour, minute


def _go_time_quote(text: str) -> str:
    """Go's ``time.quote``: in double quotes, ``"`` and ``\\`` escaped, each byte of a
    control or non-ASCII character as ``\\xNN``."""
    out = ['"']
    for char in text:
        if char < " " or char >= "\x80":
            out.extend(f"\\x{byte:02x}" for byte in char.encode("utf-8", "surrogatepass"))
        else:
            out.append("\\" + char if char in '"\\' else char)
    out.append('"')
    return "".join(out)


def parse_revocable_zone(raw: str, now: float) -> tuple[float, float]:
    """The (start, end) UNIX times of a ``"H:MM-H:MM"`` window on the UTC day of ``now``.

    Raises ValueError for a malformed window.

    >>> start, end = parse_revocable_zone(" 1:00-0:00 ", 0.0)
    >>> end - start
    82800.0
    """
    parts = trim_space(raw).split("-")
    if len(parts) != 2:
        raise ValueError(f"revocable zone {raw} format error")
    (h1, m1), (h2, m2) = _clock(parts[0]), _clock(parts[1])
    day = dt.datetime.fromtimestamp(math.floor(now), dt.timezone.utc).replace(
        hour=0, minute=0, second=0, microsecond=0)
    start = day + dt.timedelta(hours=h1, minutes=m1)
    end = day + dt.timedelta(hours=h2, minutes=m2)
    if (h1, m1) >= (h2, m2):
        end += dt.timedelta(days=1)
    return start.timestamp(), end.timestamp()


def zone_error(zones: Mapping[str, str], zone: str, now: float) -> str | None:
    """Why ``zone`` is not usable at ``now``, or None when it is active."""
    raw = zones.get(zone)
    if raw is None:
        return f"revocable zone {zone} not support"
    try:
        start, end = parse_revocable_zone(raw, now)
    except ValueError as exc:
        return str(exc)
    second = math.floor(now)
    if second < start or second > end:
        return f"current time beyond revocable zone {zone}:{raw}"
    return None


def _state(ssn: Session) -> dict[str, float]:
    """tdm's state that outlives a session: on the scheduler cache (Volcano keeps one
    process-wide clock; per cache, schedulers on different caches never share it),
    else in ``ssn.extra`` for this session only."""
    cache = ssn.cache
    if cache is not None:
        state = getattr(cache, _CACHE_ATTRIBUTE, None)
        if state is None:
            state = {}
            try:
                setattr(cache, _CACHE_ATTRIBUTE, state)
            except (AttributeError, TypeError):
                state = None
        if isinstance(state, dict):
            return state
    extra: dict[str, float] = ssn.extra.setdefault(_EXTRA_KEY, {})
    return extra


def _int_or_percent(text: str, total: int) -> int:
    """Volcano's ``parseIntStr``: ``intstr.Parse`` (an int32 as Go's ``ParseInt`` reads
    it, sign allowed, is a number), else the deprecated ``GetValueFromIntOrPercent``,
    which reads any other text as a percentage of ``total`` once every ``%`` is taken
    out (``"50%"``, ``"50%%"``, ``"%50"`` and ``"3000000000"`` alike), rounded up in
    floating point; 0 when what is left is no integer."""
    number, ok = parse_int(text, 64)
    if ok and -(2**31) <= number < 2**31:
        return number
    percent, ok = parse_int(text.replace("%", ""), 64)
    return math.ceil(float(percent) * float(total) / 100) if ok else 0


def max_pod_evict_num(job: JobInfo) -> int:
    """How many more tasks the job's disruption budget lets go (see the module docstring).

    As Volcano's ``extractBudget`` reads the budget: ``jdb-min-available`` when the
    annotation is there at all (an empty value then means no budget: the default
    1), else ``jdb-max-unavailable``."""
    annotations = job.podgroup.annotations
    total = len(job.tasks)
    running = len(job.tasks_in(TaskStatus.RUNNING))
    if JDB_MIN_AVAILABLE in annotations:
        minimum_text, maximum_text = annotations[JDB_MIN_AVAILABLE], ""
    else:
        minimum_text, maximum_text = "", annotations.get(JDB_MAX_UNAVAILABLE, "")
    if maximum_text:
        allowed = _int_or_percent(maximum_text, total)
        finished = sum(len(job.tasks_in(s)) for s in COMPLETED_STATUSES)
        unavailable = total - finished - running
        return 0 if unavailable >= allowed else allowed - unavailable
    if minimum_text:
        minimum = _int_or_percent(minimum_text, total)
        if running >= minimum:
            return running - minimum
    return 1


def _max_victims(job: JobInfo, candidates: list[TaskInfo]) -> list[TaskInfo]:
    return candidates[:min(max_pod_evict_num(job), len(candidates))]


_PERIOD_WANTED = 'a Go duration string such as "1m"'
_WINDOW_WANTED = 'a window string such as "0:00-6:00"'


class TdmPlugin:
    """Volcano's tdm plugin (see the module docstring)."""

    name = PLUGIN_NAME

    def __init__(self, arguments: Arguments) -> None:
        self.arguments = arguments
        zone_keys = [key for key in arguments if ZONE_PREFIX in key]
        # Volcano asserts both to be strings (``v.(string)``) and panics otherwise: a
        # number, a boolean or an empty value.
        for key in (*zone_keys, EVICT_PERIOD):
            if key in arguments and not isinstance(arguments[key], str):
                wanted = _PERIOD_WANTED if key == EVICT_PERIOD else _WINDOW_WANTED
                raise ConfigError(f"must be {wanted}, not {arguments[key]!r} (Volcano's "
                                  "scheduler panics on it)", key=key)
        self.zones: dict[str, str] = {
            key.replace(ZONE_PREFIX, "", 1): str(arguments[key]) for key in zone_keys
        }
        for key in zone_keys:
            try:
                parse_revocable_zone(str(arguments[key]), 0.0)
            except ValueError as exc:
                said = (key, str(arguments[key]))
                if said in _WARNED_WINDOWS:
                    continue  # a plugin is built for every session: once per process
                _WARNED_WINDOWS.add(said)
                log.warning("plugin %r: argument %r = %r is not a window \"H:MM-H:MM\" (%s); "
                            "the zone's nodes are never usable", self.name, key,
                            arguments[key], exc)
        period = arguments.get_duration(EVICT_PERIOD, DEFAULT_EVICT_PERIOD, owner=self.name)
        self.evict_period = DEFAULT_EVICT_PERIOD if period is None else period
        arguments.warn_unknown(self.name, [EVICT_PERIOD, *zone_keys])

    def on_session_open(self, ssn: Session) -> None:
        ssn.add_predicate_fn(self.name, lambda task, node: self.predicate(ssn, task, node))
        ssn.add_node_order_fn(self.name, lambda task, node: self.score(ssn, task, node))
        ssn.add_preemptable_fn(self.name, lambda p, c: self.preemptable(ssn, p, c))
        ssn.add_victim_tasks_fn(self.name, lambda tasks: self.victims(ssn))
        ssn.add_job_order_key_fn(self.name, job_order_key)
        ssn.add_job_pipelined_fn(self.name, job_pipelined)
        ssn.add_job_starving_fn(self.name, job_starving)
        if any(node.revocable_zone for node in ssn.node_list):
            self._ask_wake_up(ssn)

    def _ask_wake_up(self, ssn: Session) -> None:
        """Tell the host when the answers change with time alone: a zone's window
        opens or closes (or the day it is read on turns), or the evict period since
        the last victims ends."""
        now = ssn.now
        midnight = (math.floor(now) // _DAY + 1) * _DAY
        for raw in self.zones.values():
            try:
                start, end = parse_revocable_zone(raw, now)
            except ValueError:
                continue  # never active: nothing changes
            # Active from ``start`` through the second ``end``; read on the UTC day.
            for change in (start, end + 1, midnight):
                ssn.wake_up_at(self.name, change)
        last = _state(ssn).get(_LAST_EVICT)
        if last is not None:
            ssn.wake_up_at(self.name, last + self.evict_period)

    def on_session_close(self, ssn: Session) -> None:
        pass

    def predicate(self, ssn: Session, task: TaskInfo, node: NodeInfo) -> FitError | None:
        zone = node.revocable_zone
        if not zone:
            return None
        reason = zone_error(self.zones, zone, ssn.now)
        if reason is None and not task.revocable_zone:
            reason = REASON_NOT_ALLOWED
        if reason is None:
            return None
        return FitError(task.namespace, task.name, node.name, [FitStatus(
            FitStatusCode.UNSCHEDULABLE_AND_UNRESOLVABLE, reason, self.name)])

    def score(self, ssn: Session, task: TaskInfo, node: NodeInfo) -> float:
        zone = node.revocable_zone
        if not zone:
            return 0.0
        reason = zone_error(self.zones, zone, ssn.now)
        if reason is not None:
            # Volcano's node-order function errors here: the node gets no score.
            raise FitError(task.namespace, task.name, node.name, [FitStatus(
                FitStatusCode.ERROR, reason, self.name)])
        return MAX_NODE_SCORE if task.revocable_zone else 0.0

    def preemptable(
        self, ssn: Session, preemptor: TaskInfo, candidates: list[TaskInfo]
    ) -> list[TaskInfo]:
        if preemptor.preemptable or preemptor.revocable_zone:
            return []
        by_job: dict[str, list[TaskInfo]] = {}
        for task in candidates:
            if not task.preemptable or task.status != TaskStatus.RUNNING:
                continue
            node = ssn.nodes.get(task.node_name)
            if node is None or node.revocable_zone:
                continue
            by_job.setdefault(task.job, []).append(task)
        victims: list[TaskInfo] = []
        for job_uid, tasks in by_job.items():
            job = ssn.jobs.get(job_uid)
            if job is not None:
                victims.extend(_max_victims(job, tasks))
        return victims

    def victims(self, ssn: Session) -> list[TaskInfo]:
        """Preemptable Running tasks on the nodes of inactive zones, within budgets;
        nothing while the evict period since the last selection has not passed."""
        state = _state(ssn)
        last = state.get(_LAST_EVICT)
        if last is not None and last + self.evict_period > ssn.now:
            return []
        victims: list[TaskInfo] = []
        for zone in sorted(self.zones):
            if zone_error(self.zones, zone, ssn.now) is None:
                continue
            by_job: dict[str, list[TaskInfo]] = {}
            for node in ssn.node_list:
                # Only revocable nodes (Volcano's RevocableNodes): a zone argument with
                # an empty name names none.
                if not node.revocable_zone or node.revocable_zone != zone:
                    continue
                for uid in sorted(node.tasks):
                    job = ssn.jobs.get(node.tasks[uid].job)
                    task = job.tasks.get(uid) if job is not None else None
                    if task is not None and task.preemptable and task.status == TaskStatus.RUNNING:
                        by_job.setdefault(task.job, []).append(task)
            for job_uid, tasks in by_job.items():
                victims.extend(_max_victims(ssn.jobs[job_uid], tasks))
        state[_LAST_EVICT] = ssn.now
        return victims


def job_order(left: JobInfo, right: JobInfo) -> int:
    """Non-preemptable jobs first."""
    if left.preemptable == right.preemptable:
        return 0
    return 1 if left.preemptable else -1


def job_order_key(job: JobInfo) -> bool:
    """:func:`job_order` as a sort key (False, non-preemptable, first)."""
    return job.preemptable


def job_pipelined(job: JobInfo) -> int:
    return Vote.PERMIT if job.is_pipelined() else Vote.REJECT


def job_starving(job: JobInfo) -> bool:
    """A non-preemptable job that still has Pending tasks."""
    return not job.preemptable and bool(job.tasks_in(TaskStatus.PENDING))
