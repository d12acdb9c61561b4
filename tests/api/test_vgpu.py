"""The vGPU device model (``batchsched.api.vgpu``), with the cases of Volcano's own
unit tests of ``pkg/scheduler/api/devices/nvidia/vgpu`` (utils_test.go,
device_info_test.go, spread_integration_test.go) transcribed: the same inputs and
the same answers. Volcano's tests build pods with containers; batchsched's tasks are
one container, so the multi-container request case reads one container."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from batchsched.api.resource import Resource
from batchsched.api.vgpu import (
    ASSIGNED_IDS_ANNOTATION,
    KUBE_GROUP_NAME_ANNOTATION,
    NO_USE_TYPE_ANNOTATION,
    NO_USE_UUID_ANNOTATION,
    NODE_REGISTER_ANNOTATION,
    PODGROUP_POLICY_ANNOTATION,
    USE_TYPE_ANNOTATION,
    USE_UUID_ANNOTATION,
    VOLCANO_GROUP_NAME_ANNOTATION,
    ContainerDevice,
    DeviceRequest,
    PodUsage,
    UuidFilter,
    VgpuDevice,
    VgpuDevices,
    container_requests,
    decode_container_devices,
    encode_pod_devices,
    gpu_score,
    gpu_type_allowed,
    group_key,
)


def make_devices(gpus: int, memory: int = 16384, sharing: int = 4) -> VgpuDevices:
    """Volcano's ``makeGPUDevices``: GPUs ``GPU-0000A``, ``GPU-0000B``, ... of one node."""
    return VgpuDevices("node-1", "hami-core", {
        i: VgpuDevice(index=i, uuid="GPU-0000" + chr(ord("A") + i), number=sharing,
                      memory=memory, type="NVIDIA")
        for i in range(gpus)})


#: Volcano's ``makeVGPUPod``: one GPU, ``memory`` MiB, 25 cores.
def request(memory: int = 4096) -> tuple[DeviceRequest, ...]:
    return container_requests(Resource.from_mapping({
        "volcano.sh/vgpu-number": 1, "volcano.sh/vgpu-memory": memory,
        "volcano.sh/vgpu-cores": 25}))


def pod_annotations(spread: bool, group: str = "") -> dict[str, str]:
    annotations = {}
    if spread:
        annotations[PODGROUP_POLICY_ANNOTATION] = "spread"
    if group:
        annotations[KUBE_GROUP_NAME_ANNOTATION] = group
    return annotations


def allocate(devices: VgpuDevices, uid: str, annotations: dict[str, str],
             policy: str = "binpack") -> str | None:
    """Volcano's ``simulateAllocate``: fit with the devices taken; the UUID chosen."""
    fit = devices.fit(uid, annotations, request(), group_key(annotations, "default", ""),
                      policy, reserve=True)
    return fit.devices[0][0].uuid if fit.fits else None


# -- utils_test.go ---------------------------------------------------------------------

@pytest.mark.parametrize(("annotations", "card", "want"), [
    ({USE_TYPE_ANNOTATION: "NVIDIA"}, "NVIDIA", True),
    ({USE_TYPE_ANNOTATION: "nvidia"}, "NVIDIA", True),
    ({USE_TYPE_ANNOTATION: "AMD,NVIDIA,INTEL"}, "NVIDIA", True),
    ({USE_TYPE_ANNOTATION: "AMD,INTEL,MLU"}, "NVIDIA", False),
    ({NO_USE_TYPE_ANNOTATION: "NVIDIA"}, "NVIDIA", False),
    ({NO_USE_TYPE_ANNOTATION: "nvidia"}, "NVIDIA", False),
    ({NO_USE_TYPE_ANNOTATION: "AMD,NVIDIA,INTEL"}, "NVIDIA", False),
    ({NO_USE_TYPE_ANNOTATION: "AMD,INTEL,MLU"}, "NVIDIA", True),
    ({}, "NVIDIA", True),
    (None, "NVIDIA", True),
], ids=["single use matches", "use mixed case", "use list one matches", "use list none",
        "single nouse", "nouse mixed case", "nouse list one matches", "nouse list none",
        "empty", "nil"])
def test_check_gpu_type(annotations: dict[str, str] | None, card: str, want: bool) -> None:
    assert gpu_type_allowed(annotations, card) is want


@pytest.mark.parametrize(("annotations", "uuid", "want"), [
    (None, "GPU-0", True),
    ({USE_UUID_ANNOTATION: "  "}, "GPU-0", True),
    ({USE_UUID_ANNOTATION: ", ,"}, "GPU-0", True),
    ({USE_UUID_ANNOTATION: "GPU-0, GPU-1"}, "GPU-1", True),
    ({USE_UUID_ANNOTATION: "GPU-0,, GPU-1,"}, "GPU-1", True),
    ({USE_UUID_ANNOTATION: "GPU-10"}, "GPU-1", False),
    ({USE_UUID_ANNOTATION: "GPU-0,"}, "", False),
    ({NO_USE_UUID_ANNOTATION: "GPU-0, GPU-1"}, "GPU-1", False),
    ({NO_USE_UUID_ANNOTATION: "GPU-0,"}, "", False),
    ({USE_UUID_ANNOTATION: "GPU-1", NO_USE_UUID_ANNOTATION: "GPU-1"}, "GPU-1", False),
], ids=["no constraint", "blank allowlist", "separators only", "exact match",
        "empty entries ignored", "no partial match", "allowlist and empty uuid",
        "denylist match", "denylist and empty uuid", "denylist wins"])
def test_check_gpu_uuid(annotations: dict[str, str] | None, uuid: str, want: bool) -> None:
    assert UuidFilter.of(annotations).matches(uuid) is want


@pytest.mark.parametrize(("annotations", "fits", "uuid", "error"), [
    ({USE_UUID_ANNOTATION: "GPU-0000A"}, True, "GPU-0000A", ""),
    ({NO_USE_UUID_ANNOTATION: "GPU-0000B"}, True, "GPU-0000A", ""),
    ({USE_UUID_ANNOTATION: "GPU-unknown"}, False, "", USE_UUID_ANNOTATION),
    ({NO_USE_UUID_ANNOTATION: "GPU-0000A,GPU-0000B"}, False, "", NO_USE_UUID_ANNOTATION),
], ids=["allowlist selects", "denylist excludes", "unknown allowed uuid", "all denied"])
def test_gpu_uuid_constraints(annotations: dict[str, str], fits: bool, uuid: str,
                              error: str) -> None:
    devices = make_devices(2)
    fit = devices.fit("uid", annotations, request(), "", "")
    assert fit.fits is fits, fit.reason
    if fits:
        assert fit.devices[0][0].uuid == uuid
    else:
        assert error in fit.reason


@pytest.mark.parametrize(("annotations", "namespace", "want"), [
    ({}, "ns", "ns/the-job"),  # no annotation: the task's job (Volcano: no group)
    ({KUBE_GROUP_NAME_ANNOTATION: "my-pg"}, "default", "default/my-pg"),
    ({VOLCANO_GROUP_NAME_ANNOTATION: "job-pg"}, "ns1", "ns1/job-pg"),
    ({KUBE_GROUP_NAME_ANNOTATION: "k8s-pg", VOLCANO_GROUP_NAME_ANNOTATION: "volcano-pg"},
     "ns", "ns/k8s-pg"),
], ids=["job", "kubernetes annotation", "volcano annotation", "kubernetes first"])
def test_pod_group_key(annotations: dict[str, str], namespace: str, want: str) -> None:
    assert group_key(annotations, namespace, "ns/the-job") == want


@pytest.mark.parametrize(("usage", "group", "want"), [
    (PodUsage(1000, 0, "ns/pg"), "", False),
    (PodUsage(1000, 0, "ns/other"), "ns/my-pg", False),
    (PodUsage(1000, 50, "ns/my-pg"), "ns/my-pg", True),
    (PodUsage(0, 0, "ns/my-pg"), "ns/my-pg", False),
    (None, "ns/pg", False),
], ids=["no group", "other group", "same group", "same group released", "no pods"])
def test_device_has_pod_from_same_group(usage: PodUsage | None, group: str,
                                        want: bool) -> None:
    device = VgpuDevice(index=0, uuid="GPU-0", number=4, memory=16384, type="NVIDIA")
    if usage is not None:
        device.pods["uid1"] = usage
    assert device.holds_group(group) is want


def _busy_first(devices: VgpuDevices) -> None:
    devices.devices[0].used_memory = 4096
    devices.devices[0].used_num = 1


@pytest.mark.parametrize(("gpus", "seed", "policy", "want"), [
    (2, _busy_first, "binpack", 0),
    (2, _busy_first, "spread", 1),
    (3, lambda devices: None, "", 2),
], ids=["binpack picks busier", "spread picks idle", "no policy: highest index"])
def test_policy_picks_the_expected_device(gpus: int, seed: Callable[[VgpuDevices], None],
                                          policy: str, want: int) -> None:
    devices = make_devices(gpus)
    seed(devices)
    fit = devices.fit("uid", {}, request(), "", policy)
    assert fit.fits
    assert fit.devices[0][0].uuid == devices.devices[want].uuid


@pytest.mark.parametrize(("policy", "used", "want"), [
    ("spread", (0, 0), 100.0),
    ("spread", (1, 4096), 0.0),
    ("spread", (4, 16384), 0.0),
    ("binpack", (4, 16384), 100.0),
    ("binpack", (0, 0), 0.0),
    ("", (1, 4096), 0.0),
], ids=["spread idle", "spread shared", "spread full", "binpack full", "binpack idle",
        "no policy"])
def test_gpu_score(policy: str, used: tuple[int, int], want: float) -> None:
    device = VgpuDevice(index=0, uuid="GPU-0", number=4, memory=16384, type="NVIDIA",
                        used_num=used[0], used_memory=used[1])
    assert gpu_score(policy, device) == want


def test_binpack_stacks_sequential_pods() -> None:
    devices = make_devices(3)
    chosen = {allocate(devices, name, {}) for name in ("a", "b", "c")}
    assert len(chosen) == 1 and None not in chosen


@pytest.mark.parametrize(("text", "want"), [
    ("GPU-0,NVIDIA,4096,30:", (ContainerDevice("GPU-0", "NVIDIA", 4096, 30),)),
    ("GPU-0,NVIDIA,-5,30:", ()),
    ("GPU-0,NVIDIA,4096,-1:", ()),
    ("GPU-0,NVIDIA,abc,30:", ()),
    ("GPU-0,NVIDIA:", ()),
    ("GPU-0,NVIDIA,-5,30:GPU-1,NVIDIA,2048,10:",
     (ContainerDevice("GPU-1", "NVIDIA", 2048, 10),)),
], ids=["valid", "negative memory", "negative cores", "not a number", "missing fields",
        "valid kept among invalid"])
def test_decode_container_devices_rejects_invalid_usage(
        text: str, want: tuple[ContainerDevice, ...]) -> None:
    assert decode_container_devices(text) == want


# -- device_info_test.go -----------------------------------------------------------------

def test_requests_of_a_container() -> None:
    """TestGetGPUMemoryOfPod, its first container (a task is one container)."""
    (got,) = container_requests(Resource.from_mapping(
        {"volcano.sh/vgpu-number": 1, "volcano.sh/vgpu-memory": 3000}))
    assert (got.count, got.memory) == (1, 3000)
    (got,) = container_requests(Resource.from_mapping(
        {"volcano.sh/vgpu-number": 3, "volcano.sh/vgpu-memory": 5000}))
    assert (got.count, got.memory) == (3, 5000)


def test_requests_default_to_one_whole_gpu() -> None:
    """Memory alone asks one GPU; no memory asks all of each GPU's (100%)."""
    (memory_only,) = container_requests(Resource.from_mapping({"volcano.sh/vgpu-memory": 10}))
    assert (memory_only.count, memory_only.memory_percentage) == (1, 101)
    (count_only,) = container_requests(Resource.from_mapping({"volcano.sh/vgpu-number": 2}))
    assert (count_only.count, count_only.memory, count_only.memory_percentage) == (2, 0, 100)
    assert container_requests(Resource.from_mapping({"cpu": 1})) == ()


@pytest.mark.parametrize(("annotations", "added"), [
    ({ASSIGNED_IDS_ANNOTATION: "GPU-1234,NVIDIA,16384,0"}, True),
    ({ASSIGNED_IDS_ANNOTATION: "GPU-5678,NVIDIA,16384,0"}, False),
    ({}, False),
], ids=["known uuid", "unknown uuid", "no annotation"])
def test_add_resource(annotations: dict[str, str], added: bool) -> None:
    devices = VgpuDevices("n", "hami-core", {0: VgpuDevice(0, "GPU-1234", 10, 16384, "NVIDIA")})
    devices.add_task("pod-abc", annotations, "")
    assert devices.holds("pod-abc") is added


def test_add_resource_sets_pod_group_key() -> None:
    devices = VgpuDevices("n", "hami-core", {0: VgpuDevice(0, "GPU-1234", 10, 16384, "NVIDIA")})
    annotations = {ASSIGNED_IDS_ANNOTATION: "GPU-1234,NVIDIA,4096,0",
                   KUBE_GROUP_NAME_ANNOTATION: "my-job-pg"}
    devices.add_task("pod-with-group", annotations, group_key(annotations, "default", ""))
    assert devices.devices[0].pods["pod-with-group"].group == "default/my-job-pg"


def test_a_task_is_counted_once_and_given_back_once() -> None:
    """AddPod and SubPod key on the pod: a second add or remove changes nothing."""
    devices = VgpuDevices("n", "hami-core", {0: VgpuDevice(0, "GPU-1", 10, 16384, "NVIDIA")})
    annotations = {ASSIGNED_IDS_ANNOTATION: "GPU-1,NVIDIA,4096,30:"}
    for _ in range(2):
        devices.add_task("p", annotations, "")
    device = devices.devices[0]
    assert (device.used_num, device.used_memory, device.used_cores) == (1, 4096, 30)
    for _ in range(2):
        devices.remove_task("p", annotations)
    assert (device.used_num, device.used_memory, device.used_cores) == (0, 0, 0)
    devices.check([])


# -- spread_integration_test.go ------------------------------------------------------------

def test_spread_prevents_co_location() -> None:
    devices = make_devices(2)
    first = allocate(devices, "uid-aaa", pod_annotations(True, "job-1"))
    second = allocate(devices, "uid-bbb", pod_annotations(True, "job-1"))
    assert first is not None and second is not None and first != second


def test_binpack_allows_co_location() -> None:
    devices = make_devices(2)
    assert allocate(devices, "uid-aaa", pod_annotations(False, "job-1")) is not None
    assert allocate(devices, "uid-bbb", pod_annotations(False, "job-1")) is not None


def test_spread_different_groups_can_share() -> None:
    devices = make_devices(1)
    first = allocate(devices, "uid-aaa", pod_annotations(True, "job-1"))
    second = allocate(devices, "uid-bbb", pod_annotations(True, "job-2"))
    assert first is not None and first == second


def test_spread_with_no_room_fails() -> None:
    devices = make_devices(1)
    assert allocate(devices, "uid-aaa", pod_annotations(True, "job-1")) is not None
    assert allocate(devices, "uid-bbb", pod_annotations(True, "job-1")) is None


def test_mixed_annotations() -> None:
    devices = make_devices(2)
    assert allocate(devices, "uid-aaa", pod_annotations(True, "job-1")) is not None
    assert allocate(devices, "uid-bbb", pod_annotations(False, "job-1")) is not None


# -- the rest of the fit ---------------------------------------------------------------------

def test_a_fit_that_is_not_reserved_changes_nothing() -> None:
    devices = make_devices(2)
    before = [(d.used_num, d.used_memory, d.used_cores) for d in devices.devices.values()]
    assert devices.fit("p", {}, request(), "", "binpack").fits
    assert not devices.fit("p", {}, request(memory=20000), "", "binpack").fits
    assert [(d.used_num, d.used_memory, d.used_cores)
            for d in devices.devices.values()] == before


def test_a_failed_reservation_gives_back_what_it_took() -> None:
    """Two GPUs asked, one fits: the one taken is given back (rollbackTentative)."""
    devices = make_devices(2)
    devices.devices[1].used_memory = 16000
    two = container_requests(Resource.from_mapping(
        {"volcano.sh/vgpu-number": 2, "volcano.sh/vgpu-memory": 4096}))
    fit = devices.fit("p", {}, two, "", "", reserve=True)
    assert not fit.fits and fit.reason == "not enough gpu fitted on this node"
    assert devices.devices[0].used_num == 0 and devices.devices[0].used_memory == 0


@pytest.mark.parametrize(("used", "cores", "fits"), [
    ((0, 0), 100, True),     # an idle GPU may be taken whole
    ((1, 10), 100, False),   # 100 cores wants the GPU to itself
    ((1, 100), 0, False),    # no core-less task on a GPU whose cores are all taken
    ((1, 80), 30, False),    # at most 100 cores in all
    ((4, 0), 10, False),     # at most `number` tasks share it
], ids=["exclusive on idle", "exclusive on shared", "zero cores on full",
        "cores over 100", "sharing count"])
def test_core_and_sharing_limits(used: tuple[int, int], cores: int, fits: bool) -> None:
    devices = make_devices(1)
    devices.devices[0].used_num, devices.devices[0].used_cores = used
    asked = container_requests(Resource.from_mapping(
        {"volcano.sh/vgpu-number": 1, "volcano.sh/vgpu-memory": 100,
         "volcano.sh/vgpu-cores": cores}))
    assert devices.fit("p", {}, asked, "", "").fits is fits


def test_more_gpus_than_the_node_has() -> None:
    asked = container_requests(Resource.from_mapping({"volcano.sh/vgpu-number": 3}))
    fit = make_devices(2).fit("p", {}, asked, "", "")
    assert not fit.fits and fit.reason == "no enough gpu cards on node node-1"


def test_a_task_asking_another_sharing_mode_does_not_fit() -> None:
    fit = make_devices(1).fit("p", {"volcano.sh/vgpu-mode": "mig"}, request(), "", "")
    assert not fit.fits and "mig" in fit.reason


def test_node_registration() -> None:
    allocatable = Resource.from_mapping({"volcano.sh/vgpu-number": 20,
                                         "volcano.sh/vgpu-memory": 32768,
                                         "volcano.sh/vgpu-cores": 200})
    text = "GPU-a,10,16384,NVIDIA-Tesla-T4,true,hami-core:GPU-b,10,16384,NVIDIA-A100,false,mig:"
    devices = VgpuDevices.from_node("n", {NODE_REGISTER_ANNOTATION: text}, allocatable)
    assert devices is not None and devices.mode == "hami-core"
    assert [(d.uuid, d.number, d.memory, d.type, d.health)
            for d in devices.devices.values()] == [
        ("GPU-a", 10, 16384, "NVIDIA-Tesla-T4", True), ("GPU-b", 10, 16384, "NVIDIA-A100", False)]
    # No vGPU resources in the allocatable, or a malformed entry: no devices.
    assert VgpuDevices.from_node("n", {NODE_REGISTER_ANNOTATION: text}, Resource()) is None
    assert VgpuDevices.from_node("n", {NODE_REGISTER_ANNOTATION: "GPU-a,10,16384:"},
                                 allocatable) is None
    # Volcano reads nothing without a ':' after the entries.
    assert VgpuDevices.from_node("n", {NODE_REGISTER_ANNOTATION: text.rstrip(":").split(":")[0]},
                                 allocatable) is None


def test_encoding_round_trip() -> None:
    containers = ((ContainerDevice("GPU-a", "NVIDIA", 4096, 25),
                   ContainerDevice("GPU-b", "NVIDIA", 4096, 25)),)
    text = encode_pod_devices(containers)
    assert text == "GPU-a,NVIDIA,4096,25:GPU-b,NVIDIA,4096,25:"
    assert decode_container_devices(text) == containers[0]


# -- plugins/deviceshare/deviceshare_test.go -----------------------------------------------

def test_vgpu_score() -> None:
    """TestVgpuScore: binpack scores the GPU's memory use once the task is counted
    (3000 + 1000 of 30000); spread, read after the task is counted, scores 0 on an idle
    GPU (Volcano's test only checks the score does not exceed 100)."""
    asked = container_requests(Resource.from_mapping(
        {"volcano.sh/vgpu-number": 1, "volcano.sh/vgpu-memory": 1000}))
    busy = VgpuDevices("node1", "hami-core", {
        0: VgpuDevice(0, "GPU-0", number=10, memory=30000, type="NVIDIA", used_num=1,
                      used_memory=3000)})
    fit = busy.fit("p3", {}, asked, "", "binpack")
    assert fit.fits and fit.score == pytest.approx(4000 * 100 / 30000)
    idle = VgpuDevices("node2", "hami-core", {
        0: VgpuDevice(0, "GPU-0", number=10, memory=30000, type="NVIDIA")})
    fit = idle.fit("p4", {}, asked, "", "spread")
    assert fit.fits and fit.score == 0.0


def test_filter_node_three_cards_of_different_memory() -> None:
    """Test_FilterNode case 0: three GPUs (30000, 20000, 30000 MiB), a pod asking three
    with 100 cores and no memory (all of each) fits."""
    devices = VgpuDevices("node1", "hami-core", {
        i: VgpuDevice(i, f"GPU-{i}", number=10, memory=memory, type="NVIDIA")
        for i, memory in enumerate((30000, 20000, 30000))})
    asked = container_requests(Resource.from_mapping(
        {"volcano.sh/vgpu-number": 3, "volcano.sh/vgpu-cores": 100}))
    fit = devices.fit("p1", {}, asked, "", "binpack")
    assert fit.fits
    assert sorted((d.uuid, d.memory) for d in fit.devices[0]) == [
        ("GPU-0", 30000), ("GPU-1", 20000), ("GPU-2", 30000)]


# -- the device configuration ------------------------------------------------------------------

def test_the_device_configuration_names_the_requests() -> None:
    from batchsched.api.device_config import parse_device_config, read_device_config

    config = parse_device_config(
        "nvidia:\n  resourceCountName: nvidia.com/gpu\n  resourceMemoryName: nvidia.com/gpumem\n"
        "  resourceMemoryPercentageName: nvidia.com/gpumem-percentage\n"
        "  resourceCoreName: nvidia.com/gpucores\n  deviceSplitCount: 10\n")
    names = config.vgpu_names
    assert (names.count, names.memory, names.memory_percentage, names.cores) == (
        "nvidia.com/gpu", "nvidia.com/gpumem", "nvidia.com/gpumem-percentage",
        "nvidia.com/gpucores")
    (asked,) = container_requests(Resource.from_mapping(
        {"nvidia.com/gpu": 1, "nvidia.com/gpumem-percentage": 50, "nvidia.com/gpucores": 30}),
        names)
    assert (asked.count, asked.memory, asked.memory_percentage, asked.cores) == (1, 0, 50, 30)
    # Without the nvidia section no request names vGPUs (Volcano's empty names).
    assert parse_device_config("vnpus: []\n").vgpu_names.count == ""
    # A ConfigMap that is absent, lacks the key or does not parse: the default.
    maps = {"kube-system/broken": {"device-config.yaml": "nvidia: [1"},
            "kube-system/empty": {}}
    assert read_device_config(maps, "kube-system", "absent")[1] is None
    for name in ("broken", "empty"):
        config, problem = read_device_config(maps, "kube-system", name)
        assert config.vgpu_names.count == "volcano.sh/vgpu-number"
        assert problem is not None and f"kube-system/{name}" in problem


@pytest.mark.parametrize(("text", "names"), [
    # A string field takes any scalar's text (yaml.v2), null is "".
    ("nvidia: {resourceCountName: 123, resourceMemoryName: yes, resourceCoreName: ~}\n",
     ("123", "yes", "", "")),
    # Only the first document is read.
    ("nvidia: {resourceCountName: a}\n---\nnvidia: {resourceCountName: b}\n",
     ("a", "", "", "")),
    # No nvidia section: no name at all.
    ("vnpus: {configs: []}\n", ("", "", "", "")),
    ("", ("", "", "", "")),
], ids=["scalar text", "first document", "no nvidia", "empty"])
def test_the_device_configuration_reads_as_yaml_v2(text: str,
                                                   names: tuple[str, str, str, str]) -> None:
    from batchsched.api.device_config import parse_device_config

    got = parse_device_config(text).vgpu_names
    assert (got.count, got.memory, got.cores, got.memory_percentage) == names


@pytest.mark.parametrize("text", [
    "nvidia: []\n",
    "nvidia: ''\n",
    "nvidia: {resourceCountName: [a]}\n",
    "nvidia: {defaultMemory: -1}\n",
    "nvidia: {deviceSplitCount: ten}\n",
    "nvidia: {overwriteEnv: maybe}\n",
    "nvidia: {knownMigGeometries: {a: 1}}\n",
    "vnpus: 5\n",
    "[1, 2]\n",
    "nvidia: [unclosed\n",
], ids=["nvidia list", "nvidia string", "name list", "negative uint", "uint text",
        "bool text", "geometries mapping", "vnpus scalar", "top list", "not yaml"])
def test_a_device_configuration_yaml_v2_refuses_is_unreadable(text: str) -> None:
    from batchsched.api.device_config import parse_device_config

    with pytest.raises(ValueError, match=r"\S"):
        parse_device_config(text)


def test_gpus_are_numbered_in_the_order_of_their_entries() -> None:
    """An empty entry in the register annotation leaves no gap (Volcano would panic
    when its default order met the gap); the column form agrees with the scalar."""
    from batchsched.columnar.vgpu_columns import VgpuColumns, vgpu_fit_rows

    allocatable = Resource.from_mapping({"volcano.sh/vgpu-number": 20, "cpu": 8,
                                         "volcano.sh/vgpu-memory": 32768,
                                         "volcano.sh/vgpu-cores": 200})
    annotations = {NODE_REGISTER_ANNOTATION: "GPU-a,10,16384,NVIDIA-T4,true,hami-core::"
                                             "GPU-b,10,16384,NVIDIA-T4,true,hami-core:"}
    from batchsched.api.node import NodeInfo

    node = NodeInfo.create("n1", allocatable, annotations=annotations)
    assert node.vgpu is not None and sorted(node.vgpu.devices) == [0, 1]
    asked = container_requests(Resource.from_mapping({"volcano.sh/vgpu-number": 2}))
    columns = VgpuColumns([node])
    columns.refresh()
    for policy in ("", "binpack", "spread"):
        want = node.vgpu.fit("t", {}, asked, "", policy)
        fits, scores = vgpu_fit_rows(columns, asked[0], policy, slice(None))
        assert want.fits and bool(fits[0]) and scores[0] == want.score
    negative = {NODE_REGISTER_ANNOTATION: "GPU-a,10,-5,NVIDIA-T4,true,hami-core:"}
    assert NodeInfo.create("n2", allocatable, annotations=negative).vgpu is None


# -- hamicore_test.go ---------------------------------------------------------------------------

def hami_device() -> VgpuDevices:
    return VgpuDevices("n", "hami-core", {0: VgpuDevice(0, "GPU-0", number=4, memory=16384,
                                                        type="NVIDIA")})


SHARE = {ASSIGNED_IDS_ANNOTATION: "GPU-0,NVIDIA,1000,25:"}


def counters(devices: VgpuDevices) -> tuple[int, int, int]:
    device = devices.devices[0]
    return device.used_num, device.used_memory, device.used_cores


@pytest.mark.parametrize("setup", ["fresh", "duplicate", "after allocate"])
def test_hami_core_add_pod(setup: str) -> None:
    """TestHAMICoreFactory_AddPod: a fresh add counts; adding a pod already counted,
    or one an allocation reserved, changes nothing."""
    devices = hami_device()
    if setup == "duplicate":
        devices.add_task("pod-a", SHARE, "")
    elif setup == "after allocate":
        asked = container_requests(Resource.from_mapping(
            {"volcano.sh/vgpu-number": 1, "volcano.sh/vgpu-memory": 1000,
             "volcano.sh/vgpu-cores": 25}))
        assert devices.fit("pod-a", {}, asked, "", "", reserve=True).fits
    devices.add_task("pod-a", SHARE, "")
    assert counters(devices) == (1, 1000, 25)
    assert devices.holds("pod-a")


def test_hami_core_distinct_pods_accumulate() -> None:
    devices = hami_device()
    for uid in ("pod-a", "pod-b", "pod-c"):
        devices.add_task(uid, SHARE, "")
    assert counters(devices) == (3, 3000, 75)


def test_hami_core_sub_pod_removes_the_entry() -> None:
    devices = hami_device()
    devices.add_task("pod-a", SHARE, "")
    devices.remove_task("pod-a", SHARE)
    assert not devices.holds("pod-a") and counters(devices) == (0, 0, 0)
    devices.add_task("pod-a", SHARE, "")
    assert counters(devices)[:2] == (1, 1000)


#: Whether yaml.v2 (v2.4.0, into Volcano's NvidiaConfig) accepts the field, as Go
#: printed it.
YAML_V2_NVIDIA_FIELDS = [
    ('defaultMemory: -1', False),
    ('defaultMemory: -1.5', True),
    ('defaultMemory: 1.5', True),
    ('defaultMemory: 1e30', False),
    ('defaultMemory: .inf', False),
    ('defaultMemory: .nan', False),
    ('defaultMemory: "5"', False),
    ('defaultMemory: 0x10', True),
    ('defaultMemory: 1_000', True),
    ('defaultMemory: true', False),
    ('defaultMemory: 18446744073709551615', True),
    ('defaultMemory: 18446744073709551616', True),
    ('deviceSplitCount: -0.0', True),
    ('deviceMemoryScaling: "1"', False),
    ('deviceMemoryScaling: .inf', True),
    ('deviceMemoryScaling: true', False),
    ('deviceMemoryScaling: 1_5', True),
    ('overwriteEnv: "true"', False),
    ('overwriteEnv: 1', False),
    ('overwriteEnv: yes', True),
    ('overwriteEnv: on', True),
    ('disableCoreLimit: y', True),
    ('resourceCoreName: 12', True),
    ('resourceCoreName: true', True),
    ('resourceCoreName: [a]', False),
    ('resourceCoreName: {a: b}', False),
    ('resourceCoreName: 1.50', True),
    ('resourceCoreName: 0x1F', True),
    ('resourceCoreName: ~', True),
    ('knownMigGeometries: [1]', False),
    ('knownMigGeometries: {}', False),
    ('knownMigGeometries: []', True),
    ('knownMigGeometries: [{models: A100}]', False),
    ("knownMigGeometries: [{models: [A100], allowedGeometries: [{group: g, geometries: "
     "[{name: x, memory: -5}]}]}]", False),
    ("knownMigGeometries: [{models: [A100], allowedGeometries: [{group: g, geometries: "
     "[{name: x, memory: 5, count: 1.5}]}]}]", True),
    ('knownMigGeometries: [{models: [1, 2]}]', True),
    ('knownMigGeometries: [{unknownKey: 3}]', True),
    ('knownMigGeometries: [~]', True),
    ('gpuMemoryFactor: 2', True),
    ('unknownField: [1, 2]', True),
]


@pytest.mark.parametrize(("field", "accepted"), YAML_V2_NVIDIA_FIELDS)
def test_a_device_configuration_field_reads_as_yaml_v2_reads_it(field: str,
                                                                 accepted: bool) -> None:
    from batchsched.api.device_config import parse_device_config

    text = "nvidia:\n  resourceCountName: example.com/gpu\n  " + field + "\n"
    try:
        parse_device_config(text)
    except ValueError:
        read = False
    else:
        read = True
    assert read is accepted
