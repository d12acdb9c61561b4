"""The exceptions batchsched raises.

Every error derives from :class:`BatchSchedError` and from the builtin that
fits it (``ConfigError`` is also a ``ValueError``), so callers can catch either.
Each carries the data it talks about as attributes, and its message names the
object, the field and the offending value.
"""

from __future__ import annotations

from collections.abc import Iterable

__all__ = [
    "BatchSchedError",
    "CacheError",
    "ConfigError",
    "DryRunError",
    "NodeOrderError",
    "PluginError",
    "QuantityError",
    "ScenarioError",
    "SchedulingError",
    "WorkloadError",
]


class BatchSchedError(Exception):
    """Base class of every error batchsched raises on purpose.

    Errors pickle whole (message and attributes): a sweep's replays run in worker
    processes, which send back what they raise.
    """

    def __reduce__(self) -> tuple[object, ...]:
        # Exception's own pickling calls the class with the formatted message, which
        # the subclasses' constructors would format again (or refuse).
        return (_rebuilt, (type(self), self.args), self.__dict__)


def _rebuilt(cls: type[BatchSchedError], args: tuple[object, ...]) -> BatchSchedError:
    error = cls.__new__(cls)
    error.args = args
    return error


class QuantityError(BatchSchedError, ValueError):
    """A resource quantity could not be parsed.

    >>> str(QuantityError("1Qi"))
    '"1Qi" is not a quantity'
    """

    def __init__(self, value: object, reason: str = "") -> None:
        self.value = value
        self.reason = reason
        text = f"{value!r}" if not isinstance(value, str) else f'"{value}"'
        super().__init__(f"{text} is not a quantity" + (f" ({reason})" if reason else ""))


class ConfigError(BatchSchedError, ValueError):
    """A scheduler configuration is invalid.

    ``source`` is the file (or ``"<string>"``), ``key`` the dotted path of the
    offending key, ``known`` the accepted alternatives when there is a closed set.
    """

    def __init__(
        self,
        message: str,
        *,
        source: str = "<configuration>",
        key: str = "",
        known: Iterable[str] = (),
    ) -> None:
        self.source = source
        self.key = key
        self.known = tuple(known)
        self.message = message
        where = f"{source}: {key}: " if key else f"{source}: "
        tail = f" (known: {', '.join(self.known)})" if self.known else ""
        super().__init__(f"{where}{message}{tail}")


class PluginError(BatchSchedError, RuntimeError):
    """A plugin or action could not be registered, built or run.

    ``plugin`` names the plugin (or action), ``point`` the extension point that
    was being called when a plugin raised, if any.
    """

    def __init__(self, message: str, *, plugin: str = "", point: str = "") -> None:
        self.plugin = plugin
        self.point = point
        super().__init__(message)


class ScenarioError(BatchSchedError, ValueError):
    """A scenario document is invalid.

    The message reads ``FILE: OBJECT.FIELD: problem``, e.g.
    ``s.yaml: tasks[3] (c1/p4).requests.memory: "1Qi" is not a quantity``.
    """

    def __init__(self, message: str, *, source: str = "<scenario>", path: str = "") -> None:
        self.source = source
        self.path = path
        self.problem = message
        where = f"{source}: {path}: " if path else f"{source}: "
        super().__init__(f"{where}{message}")


class SchedulingError(BatchSchedError, RuntimeError):
    """A scheduling operation was asked for something impossible.

    Raised, for example, by a Statement asked to allocate a task of a job the
    session does not know, or onto a node that does not exist. The session's
    state is unchanged when it is raised.
    """


class WorkloadError(BatchSchedError, ValueError):
    """A workload trace is invalid.

    The message reads ``FILE:LINE: problem`` (or ``FILE: problem`` when no line
    is to blame), e.g. ``lublin.swf:12: field 4 (run time) "x" is not a number``.
    """

    def __init__(
        self, message: str, *, source: str = "<workload>", line: int | None = None
    ) -> None:
        self.source = source
        self.line = line
        self.problem = message
        where = f"{source}:{line}: " if line is not None else f"{source}: "
        super().__init__(f"{where}{message}")


class CacheError(BatchSchedError, RuntimeError):
    """The host's cache failed: ``operation`` is what batchsched asked of it
    (``snapshot``, ``bind``, ``evict``, ``update_job_status``, ``update_job_statuses``,
    ``record_event``),
    ``obj`` the task or job concerned, and the host's exception is ``__cause__``.
    """

    def __init__(self, message: str, *, operation: str, obj: str = "") -> None:
        self.operation = operation
        self.obj = obj
        super().__init__(message)


class DryRunError(BatchSchedError, RuntimeError):
    """A plugin cannot follow a preemption dry run (its ``simulate_remove_task`` or
    ``simulate_add_task``): Volcano's simulate functions return an error then (no
    state from the pre-predicate, a task of a job or queue the session lacks), and
    the node is no candidate. Raised before the plugin changes anything; the session
    undoes the plugins that already followed the step, and the preempt action
    passes over the node."""


class NodeOrderError(BatchSchedError, RuntimeError):
    """A node-order or batch node-order function could not score the nodes for a
    task (an extender that failed, a kube Score plugin's error status).

    As Volcano's ``PrioritizeNodes`` logs such an error and returns no scores, the
    task gets no node in that pass (it is not placed; preempt and reclaim find no
    node for it); the session goes on. ``plugin`` names the plugin.
    """

    def __init__(self, message: str, *, plugin: str = "") -> None:
        self.plugin = plugin
        super().__init__(message)
