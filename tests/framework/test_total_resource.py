"""``Session.total_resource`` (Volcano's ``TotalResource``): every Ready node's
allocatable summed. Sessions over a cache that hands unchanged nodes out again carry
the sum over; it must still follow every change of the nodes' allocatable."""

from __future__ import annotations

from batchsched.api.node import NodeInfo
from batchsched.api.resource import Resource
from batchsched.cache.memory import MemoryCache
from batchsched.conf import configuration_from_text
from batchsched.framework.session import Session

CONFIG = configuration_from_text("""
actions: allocate
tiers:
- plugins:
  - name: gang
""")


def _node(name: str, cpu: int, gpus: int = 0) -> NodeInfo:
    figures: dict[str, object] = {"cpu": cpu, "memory": "8Gi", "pods": 10}
    if gpus:
        figures["nvidia.com/gpu"] = gpus
    return NodeInfo.create(name, Resource.from_mapping(figures))


def _total(cache: MemoryCache) -> Resource:
    ssn = Session.open(cache, CONFIG)
    try:
        total = ssn.total_resource
        assert total == Resource.sum(node.allocatable for node in ssn.node_list)
        return total.clone()
    finally:
        ssn.close()


def test_the_total_follows_the_nodes_from_session_to_session() -> None:
    cache = MemoryCache(incremental_snapshots=True)
    cache.add_node(_node("n1", 4))
    cache.add_node(_node("n2", 8, gpus=2))
    first = _total(cache)
    assert (first.milli_cpu, first.get("nvidia.com/gpu")) == (12000, 2000)
    assert _total(cache) == first  # carried over
    cache.add_node(_node("n1", 16))  # an update: new figures
    assert _total(cache).milli_cpu == 24000
    cache.add_node(_node("n3", 2, gpus=1))
    assert (_total(cache).milli_cpu, _total(cache).get("nvidia.com/gpu")) == (26000, 3000)
    cache.delete_node("n2")
    assert (_total(cache).milli_cpu, _total(cache).get("nvidia.com/gpu")) == (18000, 1000)


def test_a_plugin_changing_its_session_s_total_leaves_the_next_one_alone() -> None:
    cache = MemoryCache(incremental_snapshots=True)
    cache.add_node(_node("n1", 4))
    ssn = Session.open(cache, CONFIG)
    ssn.total_resource.add(Resource(1000.0))
    ssn.close()
    assert _total(cache).milli_cpu == 4000
