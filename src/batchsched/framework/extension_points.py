"""Every extension point, declared once, with the enable flag that gates it and the
rule that combines the plugins' answers across tiers.

The session, the configuration checks and the docs all read :data:`EXTENSION_POINTS`.
Rules (Volcano's ``framework/session_plugins.go``):

``compare``
    the first non-zero comparison across tiers and plugins wins, then a fallback
    (creation time, then id).
``all``
    every enabled plugin must agree; the first veto wins.
``any``
    one enabled plugin saying yes is enough.
``vote``
    any REJECT gives no; a tier in which some plugin PERMITs gives yes; with no
    vote at all, yes.
``intersect``
    per tier, intersect the victim lists of the enabled plugins that answered
    (None abstains); an empty answer ends that tier with no decision (it does not
    veto: the next tier decides); an empty intersection resets, so the next
    plugin's answer stands alone; the first tier with victims wins, and with none
    there are no victims.
``union``
    per tier, the union of the victims; the first non-empty tier wins.
``first-tier``
    the first tier that has an enabled function decides (all of its plugins must
    agree); with none, no.
``first``
    the first plugin with an answer wins.
``sum``
    the scores are added up.
``call-all``
    every enabled function is called.

Predicates (``predicate``, ``pre_predicate``, ``simulate_predicate``) return None
when the task passes or a :class:`~batchsched.api.fit.FitError` when it does not;
raising the FitError also works. Any other return value is a PluginError naming
the plugin. Which status codes of a predicate's FitError fail a node depends on
the action (:mod:`batchsched.actions.node_search`): allocate and backfill fail
it on Error, Unschedulable, UnschedulableAndUnresolvable, Wait or Skip; preempt
and reclaim only on UnschedulableAndUnresolvable, Error, Wait or Skip (an
Unschedulable node stays a candidate, since evicting may make room). A
pre-predicate FitError rules the task out whatever its codes.

Not every point has a caller among the built-in actions: ``target_job``,
``reserved_nodes`` and ``cluster_order`` are registered and dispatched by the
session, but no built-in action consults them yet (Volcano's reservation actions
are not implemented); ``gangpreempt`` and ``gangreclaim`` consult
``unified_evictable``, the ``shuffle`` action ``victim_tasks``. A host or
third-party action may call them all.
"""

from __future__ import annotations

import enum

import attrs

__all__ = ["ENABLE_FLAGS", "EXTENSION_POINTS", "ExtensionPoint", "Rule", "point"]


class Rule(str, enum.Enum):
    COMPARE = "compare"
    ALL = "all"
    ANY = "any"
    VOTE = "vote"
    INTERSECT = "intersect"
    UNION = "union"
    FIRST_TIER = "first-tier"
    FIRST = "first"
    SUM = "sum"
    CALL_ALL = "call-all"


@attrs.frozen
class ExtensionPoint:
    """One extension point.

    ``name`` is the snake_case name (``ssn.add_<name>_fn``), ``volcano`` Volcano's
    ``AddXxxFn`` spelling, ``flag`` the YAML enable flag gating it (``None``: not
    gated, always on), ``signature`` what the registered function receives and
    returns. ``or_flag``, when set, is a second flag that also enables the
    point (Volcano gates the simulated add/remove-task points by
    ``enablePreemptable`` or ``enabledAllocatable``).
    """

    name: str
    volcano: str
    flag: str | None
    rule: Rule
    signature: str
    doc: str
    or_flag: str | None = None


EXTENSION_POINTS: dict[str, ExtensionPoint] = {
    p.name: p
    for p in (
        ExtensionPoint("job_order", "AddJobOrderFn", "enableJobOrder", Rule.COMPARE,
                       "(JobInfo, JobInfo) -> int", "which job goes first"),
        ExtensionPoint("queue_order", "AddQueueOrderFn", "enableQueueOrder", Rule.COMPARE,
                       "(QueueInfo, QueueInfo) -> int", "which queue goes first"),
        ExtensionPoint("task_order", "AddTaskOrderFn", "enableTaskOrder", Rule.COMPARE,
                       "(TaskInfo, TaskInfo) -> int", "which task of a job goes first"),
        ExtensionPoint("cluster_order", "AddClusterOrderFn", "enabledClusterOrder", Rule.COMPARE,
                       "(object, object) -> int",
                       "which cluster goes first (no built-in action asks)"),
        ExtensionPoint("victim_queue_order", "AddVictimQueueOrderFn", None, Rule.COMPARE,
                       "(QueueInfo, QueueInfo, QueueInfo) -> int",
                       "which queue's victims are evicted first (third: preemptor's queue)"),
        ExtensionPoint("predicate", "AddPredicateFn", "enablePredicate", Rule.ALL,
                       "(TaskInfo, NodeInfo) -> FitError | None (raising FitError works too)",
                       "may the task run on the node"),
        ExtensionPoint("pre_predicate", "AddPrePredicateFn", "enablePredicate", Rule.ALL,
                       "(TaskInfo) -> FitError | None (raising FitError works too)",
                       "may the task run at all (node-independent checks)"),
        ExtensionPoint("allocatable", "AddAllocatableFn", "enabledAllocatable", Rule.ALL,
                       "(QueueInfo, TaskInfo) -> bool", "may the queue take this task now"),
        ExtensionPoint("preemptive", "AddPreemptiveFn", "enablePreemptive", Rule.ALL,
                       "(QueueInfo, TaskInfo) -> bool", "may the queue reclaim for this task"),
        ExtensionPoint("job_ready", "AddJobReadyFn", "enableJobReady", Rule.ALL,
                       "(JobInfo) -> bool", "is the job placed enough to bind"),
        ExtensionPoint("job_valid", "AddJobValidFn", None, Rule.ALL,
                       "(JobInfo) -> ValidateResult | None", "can the job be scheduled at all"),
        ExtensionPoint("overused", "AddOverusedFn", "enabledOverused", Rule.ANY,
                       "(QueueInfo) -> bool", "has the queue used its share"),
        ExtensionPoint("job_enqueueable", "AddJobEnqueueableFn", "enableJobEnqueued", Rule.VOTE,
                       "(JobInfo) -> Vote", "may the pending job be admitted (Inqueue)"),
        ExtensionPoint("job_pipelined", "AddJobPipelinedFn", "enableJobPipelined", Rule.VOTE,
                       "(JobInfo) -> Vote", "may the job keep pipelined (waiting) tasks"),
        ExtensionPoint("preemptable", "AddPreemptableFn", "enablePreemptable", Rule.INTERSECT,
                       "(TaskInfo, list[TaskInfo]) -> list[TaskInfo] | None",
                       "which candidates may the preemptor evict (same queue)"),
        ExtensionPoint("reclaimable", "AddReclaimableFn", "enableReclaimable", Rule.INTERSECT,
                       "(TaskInfo, list[TaskInfo]) -> list[TaskInfo] | None",
                       "which candidates may the reclaimer evict (other queues)"),
        ExtensionPoint("unified_evictable", "AddUnifiedEvictableFn", None, Rule.INTERSECT,
                       "(EvictionContext, list[TaskInfo]) -> list[TaskInfo] | None",
                       "which candidates gangpreempt and gangreclaim may evict"),
        ExtensionPoint("victim_tasks", "AddVictimTasksFns", "enabledVictim", Rule.UNION,
                       "(list[TaskInfo]) -> list[TaskInfo]",
                       "tasks a plugin wants evicted on its own account (the shuffle action asks)"),
        ExtensionPoint("job_starving", "AddJobStarvingFns", "enableJobStarving",
                       Rule.FIRST_TIER, "(JobInfo) -> bool", "does the job need preemption"),
        ExtensionPoint("target_job", "AddTargetJobFn", "enableTargetJob", Rule.FIRST,
                       "(list[JobInfo]) -> JobInfo | None",
                       "which job to favour (no built-in action asks)"),
        ExtensionPoint("best_node", "AddBestNodeFn", "enableBestNode", Rule.FIRST,
                       "(TaskInfo, dict[float, list[NodeInfo]]) -> NodeInfo | None",
                       "pick the node from the scored candidates"),
        ExtensionPoint("device_select", "AddDeviceSelectFn", "enableNodeOrder", Rule.FIRST,
                       "(TaskInfo, NodeInfo) -> tuple[int, ...] | None",
                       "which of the node's GPUs a placed task gets (batchsched's own point)"),
        ExtensionPoint("queue_resource", "Devices.AddQueueResource", None, Rule.CALL_ALL,
                       "(TaskInfo, NodeInfo) -> dict[str, float]",
                       "what a placed task's shared devices count in its queue's status "
                       "(resource name -> milli; replaces the request's figure)"),
        ExtensionPoint("node_order", "AddNodeOrderFn", "enableNodeOrder", Rule.SUM,
                       "(TaskInfo, NodeInfo) -> float", "score one node for the task"),
        ExtensionPoint("batch_node_order", "AddBatchNodeOrderFn", "enableNodeOrder", Rule.SUM,
                       "(TaskInfo, list[NodeInfo]) -> dict[str, float]",
                       "score all candidate nodes at once"),
        ExtensionPoint("sub_job_ready", "AddSubJobReadyFn", "enabledSubJobReady", Rule.ALL,
                       "(SubJobInfo) -> bool",
                       "is the sub-job placed enough (jobs with sub-group policies)"),
        ExtensionPoint("sub_job_pipelined", "AddSubJobPipelinedFn", "enabledSubJobPipelined",
                       Rule.VOTE, "(SubJobInfo) -> Vote",
                       "may the sub-job keep pipelined tasks (jobs with sub-group policies)"),
        ExtensionPoint("sub_job_order", "AddSubJobOrderFn", "enabledSubJobOrder", Rule.COMPARE,
                       "(SubJobInfo, SubJobInfo) -> int",
                       "which sub-job of a job goes first (then match index, then id)"),
        ExtensionPoint("hyper_node_order", "AddHyperNodeOrderFn", "enabledHyperNodeOrder",
                       Rule.SUM, "(SubJobInfo, list[str]) -> dict[str, float]",
                       "score the hypernodes a (sub-)job could be placed in"),
        ExtensionPoint("hyper_node_gradient_for_job", "AddHyperNodeGradientForJobFn",
                       "enabledHyperNodeGradient", Rule.FIRST,
                       "(JobInfo, str, str) -> list[list[str]] | None",
                       "the hypernodes to try for a job, tier by tier, under a hypernode "
                       "(purpose: allocate or evict); with none enabled, that hypernode"),
        ExtensionPoint("hyper_node_gradient_for_sub_job", "AddHyperNodeGradientForSubJobFn",
                       "enabledHyperNodeGradient", Rule.FIRST,
                       "(SubJobInfo, str, str) -> list[list[str]] | None",
                       "the same for a sub-job's tasks within the hypernode tried for the job"),
        ExtensionPoint("job_enqueued", "AddJobEnqueuedFn", "enableJobEnqueued", Rule.CALL_ALL,
                       "(JobInfo) -> None", "the job was admitted"),
        ExtensionPoint("reserved_nodes", "AddReservedNodesFn", "enableReservedNodes",
                       Rule.CALL_ALL, "() -> None",
                       "reserve nodes for a target job (no built-in action asks)"),
        ExtensionPoint("simulate_add_task", "AddSimulateAddTaskFn", "enablePreemptable",
                       Rule.CALL_ALL, "(TaskInfo preemptor, TaskInfo added, NodeInfo) -> None",
                       "dry-run preemption: a task returns to a node",
                       or_flag="enabledAllocatable"),
        ExtensionPoint("simulate_remove_task", "AddSimulateRemoveTaskFn", "enablePreemptable",
                       Rule.CALL_ALL, "(TaskInfo preemptor, TaskInfo removed, NodeInfo) -> None",
                       "dry-run preemption: a task leaves a node",
                       or_flag="enabledAllocatable"),
        ExtensionPoint("simulate_allocatable", "AddSimulateAllocatableFn",
                       "enabledAllocatable", Rule.ALL, "(QueueInfo, TaskInfo) -> bool",
                       "dry-run preemption: may the queue take the task"),
        ExtensionPoint("simulate_predicate", "AddSimulatePredicateFn", "enablePredicate",
                       Rule.ALL,
                       "(TaskInfo, NodeInfo) -> FitError | None (raising FitError works too)",
                       "dry-run preemption: may the task run on the node"),
    )
}

#: Every enable flag a plugin option accepts (Volcano's spellings), with the default
#: a configuration file gives it when omitted.
ENABLE_FLAGS: dict[str, bool] = {
    "enableJobOrder": True,
    "enableHierarchy": False,
    "enableJobReady": True,
    "enableJobPipelined": True,
    "enableTaskOrder": True,
    "enablePreemptable": True,
    "enableReclaimable": True,
    "enablePreemptive": True,
    "enableQueueOrder": True,
    "enabledClusterOrder": False,
    "enablePredicate": True,
    "enableBestNode": True,
    "enableNodeOrder": True,
    "enableTargetJob": True,
    "enableReservedNodes": True,
    "enableJobEnqueued": True,
    "enabledVictim": True,
    "enableJobStarving": True,
    "enabledOverused": True,
    "enabledAllocatable": True,
    "enabledHyperNodeOrder": True,
    "enabledHyperNodeGradient": True,
    "enabledSubJobReady": True,
    "enabledSubJobPipelined": True,
    "enabledSubJobOrder": True,
}


def point(name: str) -> ExtensionPoint:
    """The extension point of that name (``KeyError`` listing the known ones otherwise)."""
    try:
        return EXTENSION_POINTS[name]
    except KeyError:
        raise KeyError(
            f"unknown extension point {name!r}; known: {', '.join(EXTENSION_POINTS)}"
        ) from None
