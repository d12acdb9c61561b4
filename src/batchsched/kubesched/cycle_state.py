"""CycleState: what plugins share during one pod's scheduling cycle (seed 002 §2.4).

Any plugin may write, read and delete entries; each entry is a
:class:`StateData` that knows how to copy itself, so that :meth:`CycleState.clone`
gives a dry run (preemption's "what if these pods were gone") a state of its own:
writes to the clone never reach the original, nor the other way round.
"""

from __future__ import annotations

import threading
from typing import Protocol, runtime_checkable

from batchsched.errors import PluginError, SchedulingError

__all__ = ["PODS_TO_ACTIVATE_KEY", "CycleState", "PodsToActivate", "StateData",
           "StateNotFoundError"]


@runtime_checkable
class StateData(Protocol):
    """An entry of a cycle state."""

    def clone(self) -> StateData:
        """A copy for a cloned cycle state (shallow where the owner never mutates)."""
        ...


class StateNotFoundError(SchedulingError, KeyError):
    """No entry under that key in this cycle's state."""


#: kube-scheduler's ``framework.PodsToActivateKey``: every cycle state has it.
PODS_TO_ACTIVATE_KEY = "kubernetes.io/pods-to-activate"


class PodsToActivate:
    """The pods a plugin wants retried now (a gang waking its other members): the
    scheduler moves them to the active queue once the scheduling cycle, and again
    once the binding cycle, succeeds (kube-scheduler's ``PodsToActivate``)."""

    def __init__(self) -> None:
        #: Pod uid -> pod.
        self.pods: dict[str, object] = {}

    def clone(self) -> PodsToActivate:
        return self  # shared by a cycle's dry runs, as kube-scheduler shares it


class CycleState:
    """A pod's scheduling-cycle state (kube-scheduler's ``framework.CycleState``)."""

    def __init__(self) -> None:
        self._storage: dict[str, StateData] = {}
        self._lock = threading.RLock()
        #: Filter and Score plugins that asked, at PreFilter / PreScore, to be skipped.
        self.skip_filter_plugins: set[str] = set()
        self.skip_score_plugins: set[str] = set()
        #: The nodes PreFilter plugins left (kube-scheduler's ``PreFilterResult``,
        #: intersected over the plugins); None: every node.
        self.pre_filter_nodes: frozenset[str] | None = None
        #: The PreFilter plugins that named nodes, sorted (what kube's messages cite).
        self.pre_filter_node_plugins: tuple[str, ...] = ()
        #: The PreFilter plugins that turned the pod down (kube's diagnosis
        #: ``UnschedulablePlugins``: what the pod's queueing hints are asked of).
        self.pre_filter_rejectors: tuple[str, ...] = ()

    def read(self, key: str) -> StateData:
        with self._lock:
            try:
                return self._storage[key]
            except KeyError:
                raise StateNotFoundError(f"no cycle state under {key!r}") from None

    def write(self, key: str, data: StateData) -> None:
        if not isinstance(data, StateData):
            raise TypeError(f"cycle state {key!r}: {type(data).__name__} has no clone()")
        with self._lock:
            self._storage[key] = data

    def delete(self, key: str) -> None:
        with self._lock:
            self._storage.pop(key, None)

    def clone(self) -> CycleState:
        """A state whose entries are the entries' own clones; an entry whose
        ``clone()`` raises is a :class:`~batchsched.errors.PluginError` naming its key
        (the pod being scheduled fails, not the scheduler)."""
        twin = CycleState()
        with self._lock:
            for key, data in self._storage.items():
                try:
                    twin._storage[key] = data.clone()
                except Exception as exc:
                    raise PluginError(f"cycle state {key!r}: {type(data).__name__}.clone() "
                                      f"raised {type(exc).__name__}: {exc}") from exc
        twin.skip_filter_plugins = set(self.skip_filter_plugins)
        twin.skip_score_plugins = set(self.skip_score_plugins)
        twin.pre_filter_nodes = self.pre_filter_nodes
        twin.pre_filter_node_plugins = self.pre_filter_node_plugins
        twin.pre_filter_rejectors = self.pre_filter_rejectors
        return twin

    def __contains__(self, key: object) -> bool:
        return key in self._storage
