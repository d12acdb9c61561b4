"""deviceshare's vGPU column forms decide exactly as the scalar fit: on random ledgers,
node by node, the same fits and the same scores (float for float)."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from batchsched.api.node import NodeInfo
from batchsched.api.resource import Resource
from batchsched.api.vgpu import (
    DeviceRequest,
    PodUsage,
    VgpuDevice,
    VgpuDevices,
    container_requests,
)
from batchsched.columnar.forms import VectorFallback
from batchsched.columnar.vgpu_columns import VgpuColumns, vgpu_fit_rows

devices = st.lists(st.tuples(st.sampled_from([8192, 16384, 24576, 0]),   # memory
                             st.integers(1, 4),                           # sharing count
                             st.integers(0, 4),                           # users
                             st.integers(0, 24576),                       # memory used
                             st.sampled_from([0, 10, 50, 90, 100]),       # cores used
                             st.sampled_from(["NVIDIA-A10", "NVIDIA-T4", "MLU-370"])),
                   min_size=0, max_size=5)
requests = st.builds(DeviceRequest,
                     count=st.integers(0, 4),
                     memory=st.sampled_from([0, 1024, 4096, 12000, 30000]),
                     memory_percentage=st.sampled_from([101, 100, 50, 25, 33]),
                     cores=st.sampled_from([0, 10, 25, 50, 100]))


def node_of(index: int, gpus: list[tuple[int, int, int, int, int, str]]) -> NodeInfo:
    node = NodeInfo.create(f"n{index}", Resource.from_mapping({"cpu": 8}))
    if gpus:
        node.vgpu = VgpuDevices(node.name, "hami-core", {
            slot: VgpuDevice(slot, f"GPU-{index}-{slot}", number=number, memory=memory,
                             type=kind, used_num=users, used_memory=used, used_cores=cores,
                             pods={f"p{k}": PodUsage() for k in range(users)})
            for slot, (memory, number, users, used, cores, kind) in enumerate(gpus)})
    return node


@settings(max_examples=600, deadline=None)
@given(st.lists(devices, min_size=1, max_size=6), requests,
       st.sampled_from(["binpack", "spread", ""]))
def test_the_column_fit_and_score_are_the_scalar_ones(
        cluster: list[list[tuple[int, int, int, int, int, str]]], request: DeviceRequest,
        policy: str) -> None:
    nodes = [node_of(i, gpus) for i, gpus in enumerate(cluster)]
    columns = VgpuColumns(nodes)
    columns.refresh()
    fits, scores = vgpu_fit_rows(columns, request, policy, slice(None))
    for i, node in enumerate(nodes):
        if node.vgpu is None:
            assert fits[i] and scores[i] == 0.0
            continue
        want = node.vgpu.fit("t", {}, (request,), "", policy)
        assert bool(fits[i]) is want.fits, (i, want.reason)
        if want.fits:
            # A GPU registering no memory scores NaN, as in Go (0/0).
            assert scores[i] == want.score or (math.isnan(scores[i]) and math.isnan(want.score))


def test_rows_are_read_again_when_their_node_changes() -> None:
    node = node_of(0, [(16384, 4, 0, 0, 0, "NVIDIA-A10")])
    columns = VgpuColumns([node])
    columns.refresh()
    asked = DeviceRequest(count=1, memory=12000, memory_percentage=101, cores=10)
    assert vgpu_fit_rows(columns, asked, "binpack", slice(None))[0][0]
    assert node.vgpu is not None
    node.vgpu.devices[0].used_memory = 8000
    node.mutations += 1
    columns.refresh()
    assert not vgpu_fit_rows(columns, asked, "binpack", slice(None))[0][0]


@pytest.mark.parametrize("asked, want", [
    # Volcano's ExtractResourceRequest: Quantity.AsInt64, then a 32-bit integer.
    ({"volcano.sh/vgpu-number": "1", "volcano.sh/vgpu-memory": "1e19"},
     DeviceRequest(count=1, memory=0, memory_percentage=100, cores=0)),
    ({"volcano.sh/vgpu-number": "1", "volcano.sh/vgpu-memory": "4096",
      "volcano.sh/vgpu-cores": "1e19"},
     DeviceRequest(count=1, memory=4096, memory_percentage=101, cores=0)),
    ({"volcano.sh/vgpu-number": "1", "volcano.sh/vgpu-memory": str(2**32 + 5)},
     DeviceRequest(count=1, memory=5, memory_percentage=101, cores=0)),
    ({"volcano.sh/vgpu-number": "2.5", "volcano.sh/vgpu-memory": "100"},
     DeviceRequest(count=0, memory=100, memory_percentage=101, cores=0)),
    ({"volcano.sh/vgpu-memory": "100"},
     DeviceRequest(count=1, memory=100, memory_percentage=101, cores=0)),
])
def test_requests_read_as_volcano_reads_them(asked: dict[str, str],
                                              want: DeviceRequest) -> None:
    assert container_requests(Resource.from_mapping(asked)) == (want,)


def test_a_gpu_memory_beyond_exact_float_arithmetic_is_the_scalar_form_s() -> None:
    node = node_of(0, [(10**17, 4, 0, 0, 0, "NVIDIA-A10")])
    columns = VgpuColumns([node])
    columns.refresh()
    with pytest.raises(VectorFallback):
        vgpu_fit_rows(columns, DeviceRequest(count=1, memory=0, memory_percentage=100,
                                             cores=0), "binpack", slice(None))
