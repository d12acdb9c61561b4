"""What plugin and action authors import.

>>> from batchsched.plugin import hookimpl, PluginSpec, ActionSpec, Arguments, Vote

A plugin is any object with ``name``, ``on_session_open(ssn)`` and
``on_session_close(ssn)``; in ``on_session_open`` it registers what it decides
with ``ssn.add_<point>_fn(self.name, fn)`` (``add_job_order_fn``,
``add_predicate_fn``, ``add_node_order_fn``, ``add_job_enqueueable_fn``, ...) and
``ssn.add_event_handler(EventHandler(...))``. The points and the rules that
combine plugins across tiers are listed in
:mod:`batchsched.framework.extension_points`.

An action is any object with ``name``, ``initialize()``, ``execute(ssn)`` and
``uninitialize()``. It reads ``ssn.jobs``, ``ssn.nodes``, ``ssn.queues``, asks
the session (``ssn.job_valid(job)``, ``ssn.predicate(task, node)``, ...) and
decides through a :class:`~batchsched.framework.statement.Statement`.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

import attrs
import pluggy

from batchsched.api.job import JobInfo
from batchsched.api.types import Vote
from batchsched.framework.arguments import Arguments
from batchsched.framework.combine import compare_by_key

if TYPE_CHECKING:
    from batchsched.framework.session import Session

__all__ = [
    "Action",
    "ActionSpec",
    "Arguments",
    "JobKeyOrderPlugin",
    "Plugin",
    "PluginSpec",
    "Vote",
    "hookimpl",
]

hookimpl = pluggy.HookimplMarker("batchsched")


@runtime_checkable
class Plugin(Protocol):
    """The shape of a plugin object."""

    name: str

    def on_session_open(self, ssn: Session) -> None: ...

    def on_session_close(self, ssn: Session) -> None: ...


@runtime_checkable
class Action(Protocol):
    """The shape of an action object."""

    name: str

    def initialize(self) -> None: ...

    def execute(self, ssn: Session) -> None: ...

    def uninitialize(self) -> None: ...


@attrs.frozen
class PluginSpec:
    """A plugin a distribution provides: its configuration name and factory.

    ``factory(arguments)`` returns a new plugin object for one session.
    """

    name: str = attrs.field(validator=attrs.validators.instance_of(str))
    factory: Callable[[Arguments], Any] = attrs.field(validator=attrs.validators.is_callable())
    description: str = ""


@attrs.frozen
class ActionSpec:
    """An action a distribution provides: its configuration name and factory.

    ``factory()`` (or ``factory(arguments)``) returns a new action object.
    """

    name: str = attrs.field(validator=attrs.validators.instance_of(str))
    factory: Callable[..., Any] = attrs.field(validator=attrs.validators.is_callable())
    description: str = ""


class JobKeyOrderPlugin:
    """Base of a plugin whose job order is "smaller key first".

    A subclass names itself and defines :meth:`key`; the key of each job is
    worked out once per session, at its opening (with the session's clock), and two
    jobs with equal keys are left to the next plugin, then to the session's own
    rule (creation time, then id). The keys are registered as a sort key
    (:meth:`Session.add_job_order_key_fn`), unless one of them is NaN. The HPC
    orders (``sjf``, ``wfp3``, ``unicep``, ``f1``) are written this way::

        class ShortestFirst(JobKeyOrderPlugin):
            name = "shortest-first"

            def key(self, job, now):
                return job.requested_runtime or math.inf
    """

    name = ""
    #: The arguments the subclass reads (any other is reported as not read).
    arguments_read: tuple[str, ...] = ()

    def __init__(self, arguments: Arguments) -> None:
        self.arguments = arguments
        arguments.warn_unknown(self.name, self.arguments_read)

    def key(self, job: JobInfo, now: float) -> Any:
        """The job's key at ``now`` (smaller goes first). Keys of one session should
        be totally ordered; when one is a NaN, the session falls back to comparing
        pairs, where it ties with every key, as a comparison of
        keys always did."""
        raise NotImplementedError

    def on_session_open(self, ssn: Session) -> None:
        now = ssn.now
        key = self.key
        keys: dict[str, Any] = {uid: key(job, now) for uid, job in ssn.jobs.items()}

        def job_key(job: JobInfo) -> Any:
            kept = keys.get(job.uid)
            if kept is None:
                kept = keys[job.uid] = key(job, now)
            return kept

        if not any(isinstance(value, float) and math.isnan(value) for value in keys.values()):
            ssn.add_job_order_key_fn(self.name, job_key)
            return
        ssn.add_job_order_fn(self.name, compare_by_key(job_key))

    def on_session_close(self, ssn: Session) -> None:
        pass
