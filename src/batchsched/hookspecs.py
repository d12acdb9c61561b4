"""The discovery contract: every pluggy hook batchsched calls.

A distribution makes plugins and actions available by declaring an entry point
in the ``batchsched`` group whose module implements some of these hooks::

    # pyproject.toml of the third-party distribution
    [project.entry-points.batchsched]
    launch = "batchsched_launch"

    # batchsched_launch.py
    import batchsched.plugin

    @batchsched.plugin.hookimpl
    def batchsched_register_actions():
        return [batchsched.plugin.ActionSpec(name="launch", factory=LaunchAction)]

Registration hooks return typed records; they are called once, when the registry
is built. Lifecycle hooks are called once per session (never per task or node),
so observers may attach metrics or logging without slowing the hot paths.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

import pluggy

if TYPE_CHECKING:
    from batchsched.framework.session import Session
    from batchsched.framework.statement import Operation
    from batchsched.kubesched.registry import KubePluginSpec
    from batchsched.plugin import ActionSpec, PluginSpec

__all__ = ["hookspec"]

hookspec = pluggy.HookspecMarker("batchsched")


@hookspec
def batchsched_register_plugins() -> Iterable[PluginSpec]:
    """Return the plugins this distribution provides.

    Each :class:`~batchsched.plugin.PluginSpec` names the plugin as it appears in a
    configuration's ``tiers`` and gives a factory that receives the plugin's
    :class:`~batchsched.plugin.Arguments` and returns a plugin object (see
    :class:`~batchsched.plugin.Plugin`). A name claimed by two distributions is an
    error naming both.

    Example::

        @hookimpl
        def batchsched_register_plugins():
            yield PluginSpec(name="fewest-tasks", factory=FewestTasksPlugin)
    """
    raise NotImplementedError


@hookspec
def batchsched_register_actions() -> Iterable[ActionSpec]:
    """Return the actions this distribution provides.

    Each :class:`~batchsched.plugin.ActionSpec` names the action as it appears in a
    configuration's ``actions`` string; its factory takes no argument, or the
    action's :class:`~batchsched.plugin.Arguments` (from ``configurations``) if it
    declares one parameter.
    """
    raise NotImplementedError


@hookspec
def batchsched_register_kube_plugins() -> Iterable[KubePluginSpec]:
    """Return the kube-style plugins (:mod:`batchsched.kubesched`) this distribution
    provides.

    Each :class:`~batchsched.kubesched.registry.KubePluginSpec` names the plugin as
    a kube profile enables it and gives ``factory(arguments, handle)``. A name
    claimed by two distributions is an error naming it.
    """
    raise NotImplementedError


@hookspec
def batchsched_session_opened(session: Session) -> None:
    """Called after every plugin's ``on_session_open``, before the first action."""


@hookspec
def batchsched_session_closed(session: Session) -> None:
    """Called after the session's job status update, once its decisions are final."""


@hookspec
def batchsched_statement_committed(session: Session, operations: list[Operation]) -> None:
    """Called when a statement commits: ``operations`` are the binds, pipelines and
    evictions it handed to the cache, in order."""
