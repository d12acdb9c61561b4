"""Scheduler: the loop a host embeds (seed 000 §4.1).

>>> # sched = Scheduler(cache, "volcano-scheduler.conf")
>>> # sched.run_once()                 # one session: snapshot, actions, close
>>> # sched.run(period=1.0, stop=event)  # every second until event is set
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import attrs

from batchsched.api.queue_accounting import dominant_share
from batchsched.cache.protocol import Cache
from batchsched.conf import SchedulerConfiguration, default_configuration, load_configuration
from batchsched.errors import (
    BatchSchedError,
    CacheError,
    ConfigError,
    PluginError,
    SchedulingError,
)
from batchsched.framework.arguments import Arguments
from batchsched.framework.combine import passes_through
from batchsched.framework.registry import Registry, default_registry
from batchsched.framework.session import Session
from batchsched.metrics import Metrics

__all__ = ["LoopStatus", "Scheduler", "create_actions", "run_actions"]

log = logging.getLogger("batchsched")


def create_actions(
    configuration: SchedulerConfiguration, registry: Registry | None = None
) -> dict[str, Any]:
    """One instance of each action the configuration names, with its arguments."""
    registry = registry or default_registry()
    return {name: _create_action(registry, configuration, name)
            for name in configuration.actions}


def check_builds(configuration: SchedulerConfiguration, registry: Registry | None = None
                 ) -> None:
    """Build every plugin and action the configuration names, once, and drop them:
    an argument one of them refuses is a PluginError naming the configuration's file
    and the argument's place, raised here rather than when a session opens (``conf
    validate`` and ``compare`` check a configuration so, before any run)."""
    registry = registry or default_registry()
    _check_plugins_build(configuration, registry)
    create_actions(configuration, registry)


def _check_plugins_build(configuration: SchedulerConfiguration, registry: Registry) -> None:
    """Build every plugin the configuration names once; one that cannot be built is a
    PluginError naming the file and the plugin's place."""
    for t, tier in enumerate(configuration.tiers):
        for p, option in enumerate(tier.plugins):
            try:
                registry.create_plugin(option.name, option.arguments)
            except PluginError as exc:
                raise configuration.refused_arguments(exc, place=(t, p)) from exc.__cause__


def _create_action(registry: Registry, configuration: SchedulerConfiguration, name: str
                   ) -> Any:
    """The action, or an error naming the configuration's file and its arguments."""
    try:
        return registry.create_action(name, configuration.action_arguments(name))
    except PluginError as exc:
        raise configuration.refused_arguments(exc, action=name) from exc.__cause__


#: Errors that name their source whatever raised them: a plugin (PluginError), the
#: host (CacheError), a configuration (ConfigError). A refusal (SchedulingError) an
#: action lets escape is the action's failure, and is named as its own.
_NAMED_ALREADY = (PluginError, CacheError, ConfigError)


def run_actions(ssn: Session, actions: Mapping[str, Any] | None = None) -> None:
    """Run the configuration's actions on an open session, in order.

    ``actions`` (from :func:`create_actions`) are instances kept from session to
    session, as Volcano keeps its actions for the scheduler's life (an action may
    remember what it decided earlier, ``strict-allocate`` its blocked head); by
    default each session gets new ones.
    """
    if ssn._closed:
        raise SchedulingError(f"session {ssn.uid} is closed: its actions would decide on "
                              "nothing; open a new session (Session.open)")
    registry = ssn.registry or default_registry()
    metrics = ssn.metrics
    for name in ssn.configuration.actions:
        action = actions.get(name) if actions is not None else None
        if action is None:
            action = _create_action(registry, ssn.configuration, name)
        began = time.perf_counter()
        try:
            action.initialize()
            action.execute(ssn)
            action.uninitialize()
        except Exception as exc:
            ssn.discard_open_statements()
            if isinstance(exc, _NAMED_ALREADY) or (passes_through(exc)
                                                   and not isinstance(exc, SchedulingError)):
                raise
            fault = ssn.order_key_fault(exc) if isinstance(exc, TypeError) else None
            if fault is not None:
                raise fault from exc
            raise PluginError(
                f"action {name!r} raised: {type(exc).__name__}: {exc}", plugin=name,
                point="execute",
            ) from exc
        if metrics is not None:
            metrics.observe("action_scheduling_latency_milliseconds",
                            (time.perf_counter() - began) * 1e3, action=name)


@attrs.define
class LoopStatus:
    """What the loop has been through, for the host to read (and export as metrics)."""

    #: Cycles attempted, and those that failed.
    cycles: int = 0
    failures: int = 0
    #: Failed cycles in a row (0 after a good one): the backoff grows with it.
    consecutive_failures: int = 0
    #: The last failure; the pause chosen after the last cycle (the period, or the
    #: backoff after a failure) and what was left of it once the cycle's own time
    #: was taken off.
    last_error: BatchSchedError | None = None
    pause: float = 0.0
    next_delay: float = 0.0
    #: Configuration reloads taken, and why the file on disk is not in force ("" if it is).
    reloads: int = 0
    reload_error: str = ""


class Scheduler:
    """Runs sessions against a cache with a configuration.

    ``configuration`` is a :class:`SchedulerConfiguration`, a path to a Volcano
    configuration file (reloaded when it changes, checked before each session),
    or ``None`` for Volcano's default.

    The error policy (docs/embedding.md):

    * a cycle fails when the cache's snapshot fails, or a plugin or action
      raises: :meth:`run_once` raises a :class:`~batchsched.errors.BatchSchedError`
      (:class:`~batchsched.errors.CacheError`, :class:`~batchsched.errors.PluginError`,
      or :class:`~batchsched.errors.SchedulingError` wrapping anything else), with
      the cause chained; what statements committed before stands;
    * a bind or eviction the cache refuses or fails is a decision not taken (a
      gang below its minimum has its other binds taken back); a status or event
      the cache fails to take is logged and kept in ``session.host_errors``: the
      cycle goes on;
    * an edit of the configuration file that does not load (empty, not UTF-8,
      malformed YAML, a wrong shape, an unknown plugin or action, no action at
      all) keeps the last good configuration; :attr:`status` says why;
    * :meth:`run` survives every failed cycle: it logs it and waits
      ``min(max_backoff, period * 2**consecutive_failures)`` before the next (with
      ``period`` 0, cycles back to back, 0.1 s stands for the period, the first wait
      0.2 s: failures do not spin); it ends only when ``stop`` says so (or on
      KeyboardInterrupt / SystemExit).

    With ``metrics`` (:class:`~batchsched.metrics.Metrics`), every cycle records
    its latency, its actions' and plugins' latencies, binds, evictions and queue
    shares under Volcano's metric names (docs/metrics.md).
    """

    def __init__(
        self,
        cache: Cache,
        configuration: SchedulerConfiguration | str | Path | None = None,
        *,
        registry: Registry | None = None,
        metrics: Metrics | None = None,
    ) -> None:
        if not isinstance(cache, Cache):
            # A path or a configuration given first: say so now, not at every cycle.
            raise TypeError(f"Scheduler's first argument is the cache (a MemoryCache or "
                            f"another batchsched.Cache), not {type(cache).__name__} "
                            f"{cache!r:.60}")
        self.cache = cache
        self.metrics = metrics
        self.registry = registry or default_registry()
        self.status = LoopStatus()
        self._path: Path | None = None
        self._mtime: float | None = None
        if configuration is None:
            self.configuration = default_configuration()
        elif isinstance(configuration, SchedulerConfiguration):
            self.configuration = configuration
        elif isinstance(configuration, Mapping) or (
                isinstance(configuration, str) and "\n" in configuration):
            # What is meant is clear; the file name it would be taken for is not.
            raise ConfigError(
                "Scheduler takes a configuration file's path or a SchedulerConfiguration: "
                "build one from a mapping with batchsched.conf.parse_configuration, or from "
                "the file's text with batchsched.conf.configuration_from_text",
                source="<Scheduler>")
        else:
            self._path = Path(configuration)
            self._mtime = _mtime(self._path)
            self.configuration = load_configuration(self._path)
        self.configuration.validate(self.registry)
        if not self.configuration.actions:
            log.warning("batchsched: %s names no action: the scheduler decides nothing",
                        self.configuration.source)
        # A plugin whose arguments are refused is refused now, as a reload refuses it,
        # not at every cycle.
        _check_plugins_build(self.configuration, self.registry)
        self._actions = create_actions(self.configuration, self.registry)
        #: Actions a reload dropped, with their arguments: restored with the same
        #: arguments, an action is the same instance (Volcano keeps one per action for
        #: the process's life), with what it remembers.
        self._retired_actions: dict[str, tuple[Any, dict[str, Any], Arguments]] = {}
        #: Each action's arguments as its instance holds them: Volcano keeps one instance
        #: of each action for the scheduler's life and each cycle reads into it only the
        #: keys the configuration gives, so a key a reload drops keeps its value.
        self._action_arguments: dict[str, dict[str, Any]] = {
            name: dict(self.configuration.action_arguments(name))
            for name in self.configuration.actions}
        #: The Arguments each action was built from: a value a reload gives that its
        #: getter cannot read leaves the reading of these (Volcano's getter does not
        #: write the field).
        self._action_readings: dict[str, Arguments] = {
            name: self.configuration.action_arguments(name)
            for name in self.configuration.actions}

    def _actions_after_reload(
        self, configuration: SchedulerConfiguration
    ) -> tuple[dict[str, Any], dict[str, dict[str, Any]], dict[str, Arguments]]:
        """The actions of a reloaded configuration, their arguments and what each was
        built from: an action that ran before keeps the arguments the new file leaves
        out (and its instance, with what it remembers, when its arguments did not
        change), and the value it read before where the new one cannot be read."""
        kept = dict(self._action_arguments)
        actions: dict[str, Any] = {}
        readings: dict[str, Arguments] = {}
        for name in configuration.actions:
            arguments = {**kept.get(name, {}), **configuration.action_arguments(name)}
            previous = self._actions.get(name)
            retired = self._retired_actions.get(name)
            if previous is not None and arguments == self._action_arguments.get(name):
                actions[name], readings[name] = previous, self._action_readings[name]
            elif previous is None and retired is not None and arguments == retired[1]:
                actions[name], readings[name] = retired[0], retired[2]
            else:
                before = self._action_readings.get(name) if previous is not None else (
                    retired[2] if retired is not None else None)
                readings[name] = Arguments(arguments, kind="action", previous=before)
                try:
                    actions[name] = self.registry.create_action(name, readings[name])
                except PluginError as exc:
                    raise configuration.refused_arguments(exc, action=name) \
                        from exc.__cause__
            kept[name] = arguments
        return actions, kept, readings

    def _check_edit(self, configuration: SchedulerConfiguration) -> None:
        configuration.validate(self.registry)
        if not configuration.actions:
            # Most likely a file caught half-written: never stop scheduling silently.
            raise ConfigError("names no action: the scheduler would stop deciding",
                              source=configuration.source)
        # Every plugin is built once, as a session would: one that cannot be (its
        # arguments refused, its constructor raising) keeps the last good configuration.
        _check_plugins_build(configuration, self.registry)

    def _reload_if_changed(self) -> None:
        if self._path is None:
            return
        mtime = _mtime(self._path)
        if mtime == self._mtime:
            return
        self._mtime = mtime
        try:
            configuration = load_configuration(self._path)
            self._check_edit(configuration)
            actions, arguments, readings = self._actions_after_reload(configuration)
        except BatchSchedError as exc:
            self.status.reload_error = str(exc)
            log.error("batchsched: keeping the previous configuration: %s", exc)
            return
        for name, action in self._actions.items():
            if name not in actions:
                self._retired_actions[name] = (action, self._action_arguments[name],
                                               self._action_readings[name])
        self.configuration, self._actions = configuration, actions
        self._action_arguments, self._action_readings = arguments, readings
        self.status.reloads += 1
        self.status.reload_error = ""
        log.info("batchsched: configuration reloaded from %s", self._path)

    def run_once(self) -> Session:
        """One scheduling cycle; returns the closed session (for inspection).

        Raises a :class:`~batchsched.errors.BatchSchedError` when the cycle fails
        (see the class docstring); nothing else leaves it but KeyboardInterrupt and
        SystemExit.
        """
        self.status.cycles += 1
        began = time.perf_counter()
        ssn: Session | None = None
        try:
            self._reload_if_changed()
            opening = time.perf_counter()
            ssn = Session.open(self.cache, self.configuration, registry=self.registry,
                               metrics=self.metrics)
            if self.metrics is not None:  # Volcano's open_session_duration_milliseconds
                self.metrics.observe("open_session_duration_milliseconds",
                                     (time.perf_counter() - opening) * 1e3)
            try:
                run_actions(ssn, self._actions)
                if self.metrics is not None:
                    _record_queue_shares(ssn, self.metrics)  # plugins forget them at close
            except BaseException:
                # What went through stands, and what it implies for the next cycle
                # (nominations, NUMA CPUs) is handed over; no status is.
                ssn.close_after_failure()
                raise
            ssn.close()
        except BatchSchedError as exc:
            self._failed(exc, ssn)
            raise
        except Exception as exc:
            error = SchedulingError(f"scheduling cycle failed: {type(exc).__name__}: {exc}")
            self._failed(error, ssn)
            raise error from exc
        self.status.consecutive_failures = 0
        if self.metrics is not None:
            self._record(ssn, time.perf_counter() - began)
        return ssn

    def _record(self, ssn: Session, seconds: float) -> None:
        metrics = self.metrics
        assert metrics is not None
        metrics.observe("e2e_scheduling_latency_milliseconds", seconds * 1e3)
        metrics.inc("schedule_attempts_total", result="scheduled")
        metrics.inc("pod_schedule_successes_total", ssn.bound_count)

    def _failed(self, error: BatchSchedError, ssn: Session | None) -> None:
        if self.metrics is not None:
            self.metrics.inc("schedule_attempts_total", result="error")
            if ssn is not None:  # the binds the cache took before the failure count
                self.metrics.inc("pod_schedule_successes_total", ssn.bound_count)
        self.status.failures += 1
        self.status.consecutive_failures += 1
        self.status.last_error = error

    def run(
        self,
        period: float = 1.0,
        stop: threading.Event | Callable[[], bool] | None = None,
        *,
        max_backoff: float = 60.0,
    ) -> None:
        """Call :meth:`run_once` every ``period`` seconds until ``stop`` says so.

        A failed cycle is logged and the loop goes on, after a capped exponential
        backoff (see the class docstring).
        """
        def stopped() -> bool:
            if stop is None:
                return False
            if isinstance(stop, threading.Event):
                return stop.is_set()
            return stop()

        while not stopped():
            started = time.monotonic()
            wait = period
            try:
                self.run_once()
            except BatchSchedError:
                # A bad cycle must not stop the scheduler: the next one starts from a
                # fresh snapshot, later when the failures repeat.
                log.exception("batchsched: scheduling cycle failed")
                base = period if period > 0 else _ZERO_PERIOD_BACKOFF
                # The exponent is capped: 2.0 ** 1024 overflows, and a host down for
                # hours must not end the loop.
                doublings = min(self.status.consecutive_failures, _MOST_DOUBLINGS)
                wait = min(max_backoff, base * 2.0 ** doublings)
            delay = max(0.0, wait - (time.monotonic() - started))
            self.status.pause, self.status.next_delay = wait, delay
            if isinstance(stop, threading.Event):
                stop.wait(delay)
            else:
                # A callable is asked again every so often: stopping waits no pause out.
                ends = time.monotonic() + delay
                while delay > 0 and not stopped():
                    time.sleep(min(delay, _STOP_POLL))
                    delay = ends - time.monotonic()


#: The first backoff of a loop with no pause between cycles (``run(period=0)``).
_ZERO_PERIOD_BACKOFF = 0.1
#: Doublings of the backoff counted at most (far past any ``max_backoff``).
_MOST_DOUBLINGS = 60
#: How often a callable ``stop`` is asked during a pause, in seconds.
_STOP_POLL = 0.05


def _record_queue_shares(ssn: Session, metrics: Metrics) -> None:
    """Each queue's share as the quota plugins hold it (proportion's and capacity's
    ``share``, which capacity sets to 1 for a queue without deserved), else worked
    out from their ``queue_quota`` (allocated over deserved, the largest dimension)."""
    for plugin in ssn.plugins.values():
        quota = getattr(plugin, "queue_quota", None)
        if quota is None:
            continue
        attrs = getattr(plugin, "queue_attrs", None)
        for queue in ssn.queues:
            held = getattr(attrs.get(queue), "share", None) if isinstance(attrs, dict) else None
            if isinstance(held, float):
                metrics.set("queue_share", held, queue_name=queue)
                continue
            figures = quota(queue)
            deserved = figures.ceilings.get("deserved") if figures is not None else None
            if figures is not None and deserved is not None:
                metrics.set("queue_share", dominant_share(figures.allocated, deserved),
                            queue_name=queue)


def _mtime(path: Path) -> float | None:
    try:
        return path.stat().st_mtime_ns / 1e9
    except OSError:
        return None
