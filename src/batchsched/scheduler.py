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

from batchsched.cache.protocol import Cache
from batchsched.conf import SchedulerConfiguration, default_configuration, load_configuration
from batchsched.errors import BatchSchedError, PluginError
from batchsched.framework.registry import Registry, default_registry
from batchsched.framework.session import Session

__all__ = ["Scheduler", "create_actions", "run_actions"]

log = logging.getLogger("batchsched")


def create_actions(
    configuration: SchedulerConfiguration, registry: Registry | None = None
) -> dict[str, Any]:
    """One instance of each action the configuration names, with its arguments."""
    registry = registry or default_registry()
    return {
        name: registry.create_action(name, configuration.action_arguments(name))
        for name in configuration.actions
    }


def run_actions(ssn: Session, actions: Mapping[str, Any] | None = None) -> None:
    """Run the configuration's actions on an open session, in order.

    ``actions`` (from :func:`create_actions`) are instances kept from session to
    session, as Volcano keeps its actions for the scheduler's life (an action may
    remember what it decided earlier, ``strict-allocate`` its blocked head); by
    default each session gets new ones.
    """
    registry = ssn.registry or default_registry()
    for name in ssn.configuration.actions:
        action = actions.get(name) if actions is not None else None
        if action is None:
            action = registry.create_action(name, ssn.configuration.action_arguments(name))
        try:
            action.initialize()
            action.execute(ssn)
            action.uninitialize()
        except BatchSchedError:
            raise
        except Exception as exc:
            raise PluginError(
                f"action {name!r} raised: {type(exc).__name__}: {exc}", plugin=name,
                point="execute",
            ) from exc


class Scheduler:
    """Runs sessions against a cache with a configuration.

    ``configuration`` is a :class:`SchedulerConfiguration`, a path to a Volcano
    configuration file (reloaded when it changes, checked before each session;
    a broken edit keeps the last good configuration and is logged), or ``None``
    for Volcano's default.
    """

    def __init__(
        self,
        cache: Cache,
        configuration: SchedulerConfiguration | str | Path | None = None,
        *,
        registry: Registry | None = None,
    ) -> None:
        self.cache = cache
        self.registry = registry or default_registry()
        self._path: Path | None = None
        self._mtime: float | None = None
        if configuration is None:
            self.configuration = default_configuration()
        elif isinstance(configuration, SchedulerConfiguration):
            self.configuration = configuration
        else:
            self._path = Path(configuration)
            self.configuration = load_configuration(self._path)
            self._mtime = self._path.stat().st_mtime
        self.configuration.validate(self.registry)
        self._actions = create_actions(self.configuration, self.registry)

    def _reload_if_changed(self) -> None:
        if self._path is None:
            return
        try:
            mtime = self._path.stat().st_mtime
        except OSError:
            return
        if mtime == self._mtime:
            return
        self._mtime = mtime
        try:
            configuration = load_configuration(self._path)
            configuration.validate(self.registry)
            actions = create_actions(configuration, self.registry)
        except BatchSchedError as exc:
            log.error("batchsched: keeping the previous configuration: %s", exc)
            return
        self.configuration, self._actions = configuration, actions
        log.info("batchsched: configuration reloaded from %s", self._path)

    def run_once(self) -> Session:
        """One scheduling cycle; returns the closed session (for inspection)."""
        self._reload_if_changed()
        ssn = Session.open(self.cache, self.configuration, registry=self.registry)
        try:
            run_actions(ssn, self._actions)
        except BaseException:
            ssn.abort()
            raise
        ssn.close()
        return ssn

    def run(
        self,
        period: float = 1.0,
        stop: threading.Event | Callable[[], bool] | None = None,
    ) -> None:
        """Call :meth:`run_once` every ``period`` seconds until ``stop`` says so.

        A cycle that fails with a batchsched error is logged and the loop goes on.
        """
        def stopped() -> bool:
            if stop is None:
                return False
            if isinstance(stop, threading.Event):
                return stop.is_set()
            return stop()

        while not stopped():
            started = time.monotonic()
            try:
                self.run_once()
            except BatchSchedError:
                # One bad cycle (a plugin that raised) must not stop the scheduler: the
                # next cycle starts from a fresh snapshot.
                log.exception("batchsched: scheduling cycle failed")
            delay = max(0.0, period - (time.monotonic() - started))
            if isinstance(stop, threading.Event):
                stop.wait(delay)
            elif delay:
                time.sleep(delay)
