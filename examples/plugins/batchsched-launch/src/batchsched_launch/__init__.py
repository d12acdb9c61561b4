"""The 'launch' action and 'fewest-tasks' plugin, found through the batchsched entry point."""

from __future__ import annotations

from batchsched import Session, Statement, TaskStatus
from batchsched.api import NodeInfo, TaskInfo
from batchsched.plugin import ActionSpec, Arguments, PluginSpec, hookimpl

__all__ = ["FewestTasksPlugin", "LaunchAction"]


class LaunchAction:
    """Place every pending task of a valid job on the node with the fewest tasks."""

    name = "launch"

    def initialize(self) -> None:
        pass

    def uninitialize(self) -> None:
        pass

    def execute(self, ssn: Session) -> None:
        for job in sorted(ssn.jobs.values(), key=lambda j: j.uid):
            verdict = ssn.job_valid(job)
            if verdict is not None and not verdict.passed:
                continue
            stmt = Statement(ssn)
            for task in sorted(job.tasks_in(TaskStatus.PENDING).values(), key=lambda t: t.uid):
                # The predicates' per-task state first (Volcano's PrePredicate): without
                # it the predicates plugin fails every node.
                if ssn.pre_predicate(task) is not None:
                    continue
                node = self._emptiest(ssn, task)
                if node is not None:
                    stmt.allocate(task, node)
            if ssn.job_ready(job):
                stmt.commit()
            else:
                stmt.discard()

    @staticmethod
    def _emptiest(ssn: Session, task: TaskInfo) -> NodeInfo | None:
        fitting = [n for n in ssn.node_list
                   if task.init_resreq.less_equal(n.idle) and ssn.predicate(task, n) is None]
        return min(fitting, key=lambda n: (len(n.tasks), n.name), default=None)


class FewestTasksPlugin:
    """Node order: 100 minus the node's task count, times ``fewest-tasks.weight``."""

    name = "fewest-tasks"

    def __init__(self, arguments: Arguments) -> None:
        self.weight = arguments.get_float("fewest-tasks.weight", 1.0, owner=self.name)

    def on_session_open(self, ssn: Session) -> None:
        ssn.add_node_order_fn(self.name, lambda task, node: self.weight * (100 - len(node.tasks)))

    def on_session_close(self, ssn: Session) -> None:
        pass


@hookimpl
def batchsched_register_actions() -> list[ActionSpec]:
    return [ActionSpec(name="launch", factory=LaunchAction)]


@hookimpl
def batchsched_register_plugins() -> list[PluginSpec]:
    return [PluginSpec(name="fewest-tasks", factory=FewestTasksPlugin)]
