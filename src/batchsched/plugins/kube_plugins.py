"""kube-plugins: kube-style Filter and Score plugins inside a Volcano session.

Volcano's predicates and nodeorder plugins wrap kube-scheduler's own plugins;
this plugin wraps any kube-style plugin (:mod:`batchsched.kubesched`, found
through the entry points) the same way. Its ``kube.profile`` argument is a
kube-scheduler profile (the ``plugins`` and ``pluginConfig`` of a
``KubeSchedulerProfile``); of it the session uses

* **PreFilter** (once per task and session) and **Filter** as a predicate: a
  node passes when every Filter plugin succeeds; a rejection is a FitError with
  the plugin's reasons and code (UnschedulableAndUnresolvable stays so, which
  tells preempt that evicting cannot help);
* **PreScore**, **Score** and **NormalizeScore**, with the profile's weights,
  as a batch node-order score over the candidate nodes; a Score plugin's error
  status leaves the task without scores, so without a node in that pass (Volcano's
  PrioritizeNodes logs such an error and returns none).

The other points (QueueSort, Reserve, Permit, Bind, ...) belong to the per-pod
loop (:class:`~batchsched.kubesched.PodScheduler`); in a Volcano session the
session's own plugins (gang, priority, ...) decide those, so a profile that
enables them here is refused with a ConfigError naming the point.
"""

from __future__ import annotations

from collections.abc import Sequence

from batchsched.api.fit import FitError, FitStatus
from batchsched.api.node import NodeInfo
from batchsched.api.task import TaskInfo
from batchsched.errors import ConfigError, NodeOrderError
from batchsched.framework.arguments import Arguments
from batchsched.framework.session import Session
from batchsched.kubesched.cycle_state import CycleState
from batchsched.kubesched.framework import Framework, Profile, ScoreError
from batchsched.kubesched.registry import from_entry_points
from batchsched.kubesched.status import Status

__all__ = ["KubePluginsPlugin"]

PLUGIN_NAME = "kube-plugins"
PROFILE_KEY = "kube.profile"
_SESSION_POINTS = {"preFilter", "filter", "preScore", "score"}


class KubePluginsPlugin:
    """Runs a kube profile's filter and score plugins in the session."""

    name = PLUGIN_NAME

    def __init__(self, arguments: Arguments) -> None:
        arguments.warn_unknown(PLUGIN_NAME, [PROFILE_KEY])
        raw = arguments.get(PROFILE_KEY) or {}
        if not isinstance(raw, dict):
            raise ConfigError("must be a kube-scheduler profile (a mapping)",
                              key=f"{PLUGIN_NAME}.{PROFILE_KEY}")
        self.profile = Profile.from_mapping(raw, source=f"{PLUGIN_NAME} {PROFILE_KEY}")
        extra = sorted(set(self.profile.plugins) - _SESSION_POINTS)
        if extra:
            raise ConfigError(f"extension point {extra[0]!r} does not run in a Volcano session "
                              "(use the session's own plugins, or the per-pod PodScheduler)",
                              key=f"{PLUGIN_NAME}.{PROFILE_KEY}.plugins.{extra[0]}")
        self.framework: Framework | None = None
        self._states: dict[str, tuple[CycleState, Status]] = {}

    def on_session_open(self, ssn: Session) -> None:
        self.framework = Framework(from_entry_points(ssn.registry), self.profile)
        self.framework.cluster = ssn
        self._states = {}
        if self.profile.plugins.get("preFilter") or self.profile.plugins.get("filter"):
            ssn.add_predicate_fn(self.name, self.predicate)
        if self.profile.plugins.get("score"):
            ssn.add_batch_node_order_fn(self.name, self.scores)

    def on_session_close(self, ssn: Session) -> None:
        self.framework = None
        self._states = {}

    def _state(self, task: TaskInfo) -> tuple[CycleState, Status]:
        assert self.framework is not None
        kept = self._states.get(task.uid)
        if kept is None:
            state = CycleState()
            kept = self._states[task.uid] = (state, self.framework.run_pre_filter(state, task))
        return kept

    def predicate(self, task: TaskInfo, node: NodeInfo) -> FitError | None:
        assert self.framework is not None
        state, status = self._state(task)
        if status.is_success() and state.pre_filter_nodes is not None \
                and node.name not in state.pre_filter_nodes:
            # Outside the nodes PreFilter left: unresolvable, as kube-scheduler says.
            status = Status.unschedulable(
                "node(s) didn't satisfy plugin(s) "
                f"[{' '.join(state.pre_filter_node_plugins)}]", unresolvable=True)
        if status.is_success():
            status = self.framework.run_filter(state, task, node)
        if status.is_success():
            return None
        return FitError(task.namespace, task.name, node.name,
                        [FitStatus(status.code, reason, status.plugin or self.name)
                         for reason in status.reasons or ("rejected",)])

    def scores(self, task: TaskInfo, nodes: Sequence[NodeInfo]) -> dict[str, float]:
        assert self.framework is not None
        state = self._state(task)[0].clone()
        if not self.framework.run_pre_score(state, task, nodes).is_success():
            return {}
        try:
            totals = self.framework.run_score(state, task, nodes)
        except ScoreError as exc:
            # Volcano's PrioritizeNodes logs a scoring error and returns no scores.
            raise NodeOrderError(str(exc), plugin=self.name) from exc
        return {name: float(total) for name, total in totals.items()}
