"""kube-scheduler's plugin framework (seed 002), beside Volcano's session.

Plugins written against kube-scheduler's extension points (PreEnqueue,
QueueSort, PreFilter with AddPod/RemovePod, Filter, PostFilter, PreScore, Score
with NormalizeScore, Reserve/Unreserve, Permit, PreBind, Bind, PostBind) run
here with kube-scheduler's rules, found through the same entry points as every
batchsched plugin (the ``batchsched_register_kube_plugins`` hook):

* pod by pod, through :class:`PodScheduler` over a host cache (scheduling
  queue, assumed pods, waiting pods at Permit with timeouts);
* inside Volcano sessions, where the ``kube-plugins`` plugin runs a profile's
  PreFilter, Filter, PreScore and Score as the session's predicate and node
  order (as Volcano's predicates and nodeorder plugins wrap kube-scheduler's).

========================================  ==================================================
module                                    holds
========================================  ==================================================
:mod:`~batchsched.kubesched.status`       Status and its codes
:mod:`~batchsched.kubesched.cycle_state`  CycleState (per cycle, cloneable)
:mod:`~batchsched.kubesched.registry`     the plugin registry (Register, Unregister, Merge)
:mod:`~batchsched.kubesched.framework`    profiles, the framework's run rules, waiting pods
:mod:`~batchsched.kubesched.events`       cluster events and queueing hints
:mod:`~batchsched.kubesched.informer`     the changes between two snapshots, as events
:mod:`~batchsched.kubesched.queue`        the scheduling queue (active, backoff,
                                          unschedulable)
:mod:`~batchsched.kubesched.scheduler`    the per-pod scheduling and binding cycles
:mod:`~batchsched.kubesched.builtin_plugins`  PrioritySort, NodeResourcesFit,
                                          NodeResourcesLeastAllocated, DefaultBinder
========================================  ==================================================
"""

from batchsched.kubesched.builtin_plugins import default_profile
from batchsched.kubesched.cycle_state import (
    PODS_TO_ACTIVATE_KEY,
    CycleState,
    PodsToActivate,
    StateData,
    StateNotFoundError,
)
from batchsched.kubesched.events import (
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    QueueingHint,
)
from batchsched.kubesched.framework import (
    MAX_NODE_SCORE,
    Framework,
    PluginRef,
    Profile,
    WaitingPod,
)
from batchsched.kubesched.queue import SchedulingQueue
from batchsched.kubesched.registry import KubePluginSpec, Registry, from_entry_points
from batchsched.kubesched.scheduler import CycleResult, PodScheduler
from batchsched.kubesched.status import Code, Status

__all__ = [
    "MAX_NODE_SCORE",
    "PODS_TO_ACTIVATE_KEY",
    "ActionType",
    "ClusterEvent",
    "ClusterEventWithHint",
    "Code",
    "CycleResult",
    "CycleState",
    "Framework",
    "KubePluginSpec",
    "PluginRef",
    "PodScheduler",
    "PodsToActivate",
    "Profile",
    "QueueingHint",
    "Registry",
    "SchedulingQueue",
    "StateData",
    "StateNotFoundError",
    "Status",
    "WaitingPod",
    "default_profile",
    "from_entry_points",
]
