"""Scheduler sharding: the nodes a scheduler owns among several (Volcano's
``--scheduler-sharding-mode`` and ``--scheduler-sharding-name`` flags, and its
``NodeShard`` objects, ``shard.volcano.sh/v1alpha1``).

A :class:`NodeShard` names the nodes a scheduler wants (``nodesDesired``) and, in its
status, those it uses (``nodesInUse``). A scheduler named ``name`` schedules, in a
session, on the nodes its shard wants that no *other* shard uses
(:func:`nodes_in_shard`; none while its shard does not exist). The mode says what that
means:

* ``none`` (the default): nothing, every node as ever;
* ``hard``: only those nodes; every other node fails the node scan with the error
  ``node isn't in scheduler node shard``;
* ``soft``: every node, but the shard's nodes are tried first, as a group, before the
  others (never scored against them).
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Mapping

import attrs

__all__ = ["NOT_IN_SHARD", "NodeShard", "Sharding", "ShardingMode", "nodes_in_shard"]

#: The node scan's error for a node outside the shard in hard mode (Volcano's words).
NOT_IN_SHARD = "node isn't in scheduler node shard"


class ShardingMode(str, enum.Enum):
    NONE = "none"
    HARD = "hard"
    SOFT = "soft"


@attrs.frozen
class Sharding:
    """The scheduler's sharding flags: its mode and the name of its shard."""

    mode: ShardingMode = ShardingMode.NONE
    #: The ``NodeShard`` this scheduler owns (Volcano's default ``volcano``).
    name: str = "volcano"

    @property
    def active(self) -> bool:
        return self.mode is not ShardingMode.NONE


@attrs.frozen
class NodeShard:
    """A ``NodeShard`` object: the nodes a scheduler wants, and those it uses."""

    name: str
    nodes_desired: tuple[str, ...] = ()
    #: ``status.nodesInUse``: the nodes the scheduler reported using.
    nodes_in_use: tuple[str, ...] = ()


def nodes_in_shard(shards: Iterable[NodeShard], name: str,
                   gone: Mapping[str, frozenset[str]] | None = None) -> frozenset[str]:
    """The nodes a scheduler owning the shard ``name`` schedules on: what its shard
    wants, less what every other shard uses (Volcano's ``InUseNodesInShard``). Without
    such a shard: the nodes it had when it was deleted (``gone``, by shard name: Volcano
    keeps the last set until its shard comes back), else none."""
    every = list(shards)
    mine = next((shard for shard in every if shard.name == name), None)
    if mine is None:
        return (gone or {}).get(name, frozenset())
    taken: set[str] = set()
    for shard in every:
        if shard.name != name:
            taken.update(shard.nodes_in_use)
    return frozenset(node for node in mine.nodes_desired if node not in taken)
