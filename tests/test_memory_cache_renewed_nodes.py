"""MemoryCache with incremental snapshots counts its snapshots and tells which nodes a
snapshot handed out a new copy of since an earlier one (what sessions that carry node
state read again); it says it does not know when it cannot tell."""

from __future__ import annotations

from batchsched import (
    JobInfo,
    MemoryCache,
    NodeInfo,
    PodGroup,
    Resource,
    TaskInfo,
    TaskStatus,
)
from batchsched.conf import configuration_from_text
from batchsched.framework.session import Session

CONFIG = configuration_from_text("""
actions: allocate
tiers:
- plugins:
  - name: gang
""")


def _node(name: str) -> NodeInfo:
    return NodeInfo.create(name, Resource.from_mapping({"cpu": 4, "memory": "8Gi",
                                                        "pods": 10}))


def _cache() -> MemoryCache:
    cache = MemoryCache(incremental_snapshots=True)
    for name in ("n1", "n2", "n3"):
        cache.add_node(_node(name))
    return cache


def test_the_nodes_with_new_copies_since_a_snapshot() -> None:
    cache = _cache()
    first = cache.snapshot()
    assert cache.snapshot_serial == 1
    assert cache.nodes_renewed_since(0) == {"n1", "n2", "n3"}  # all copied at first
    assert cache.nodes_renewed_since(1) == frozenset()
    second = cache.snapshot()
    assert cache.nodes_renewed_since(1) == frozenset()
    assert all(second.nodes[name] is first.nodes[name] for name in first.nodes)
    cache.add_job(JobInfo.from_podgroup(PodGroup("j", "ns", min_member=1)))
    cache.add_task(TaskInfo.create("ns", "p", "ns/j", Resource.from_mapping({"cpu": 1}),
                                   status=TaskStatus.RUNNING, node_name="n2"))
    third = cache.snapshot()
    assert cache.nodes_renewed_since(2) == {"n2"}
    assert cache.nodes_renewed_since(1) == {"n2"}
    assert third.nodes["n2"] is not second.nodes["n2"]
    cache.add_node(_node("n1"))  # an update: a new object
    cache.snapshot()
    assert cache.nodes_renewed_since(3) == {"n1"}
    assert cache.nodes_renewed_since(2) == {"n1", "n2"}


def test_a_copy_a_session_changed_is_new_in_the_next_snapshot() -> None:
    cache = _cache()
    cache.snapshot()
    handed = cache.snapshot()
    handed.nodes["n3"].add_task(TaskInfo.create(
        "ns", "q", "", Resource.from_mapping({"cpu": 1}), status=TaskStatus.ALLOCATED))
    cache.snapshot()
    assert cache.nodes_renewed_since(2) == {"n3"}


def test_when_the_cache_cannot_tell() -> None:
    cache = _cache()
    for _ in range(70):
        cache.snapshot()
    assert cache.nodes_renewed_since(1) is None  # too far back
    assert cache.nodes_renewed_since(69) == frozenset()
    full = MemoryCache()
    full.add_node(_node("n1"))
    full.snapshot()
    full.snapshot()
    assert full.nodes_renewed_since(1) is None  # every snapshot copies everything


def test_a_session_asks_its_cache() -> None:
    cache = _cache()
    first = Session.open(cache, CONFIG)
    serial = first.snapshot_serial
    first.close()
    cache.add_node(_node("n2"))
    second = Session.open(cache, CONFIG)
    assert second.snapshot_serial == (serial or 0) + 1
    assert second.nodes_renewed_since(serial) == {"n2"}
    assert second.nodes_renewed_since(None) is None
    second.close()
    plain = Session.open(MemoryCache(), CONFIG)
    assert plain.snapshot_serial is None and plain.nodes_renewed_since(0) is None
    plain.close()
