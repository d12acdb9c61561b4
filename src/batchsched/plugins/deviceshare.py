"""deviceshare: GPUs shared device by device (Volcano's ``plugins/deviceshare``).

With ``deviceshare.GPUSharingEnable: true`` (or ``deviceshare.GPUNumberEnable:
true``, Volcano's whole-GPU mode, deprecated there since v1.9) a task's
``nvidia.com/gpu`` request is served by the node's GPUs one by one
(:mod:`batchsched.api.devices`): whole GPUs (a multiple of ``1``) need that many
entirely free devices; a share (less than ``1``, e.g. ``460m``) needs one device
with that much free. The
predicate refuses a node that cannot serve the task, with the reason; a request
no device can serve (``1500m``) is refused on every node, naming the task and
field. Which devices a placed task gets is the device-select point: a GPU
placement policy (``gpu-*``, ``fgd``) names them, else the node's best fit.

Volcano keys its GPU sharing on ``volcano.sh/gpu-memory`` and its vGPUs on
``volcano.sh/vgpu-*``; batchsched shares ``nvidia.com/gpu`` in milli, as the
Alibaba GPU trace and the FGD paper do (Volcano's GPU number mode counts
``volcano.sh/gpu-number``; here both switches turn on the same device-by-device
accounting of ``nvidia.com/gpu``). ``deviceshare.VGPUEnable``, the Ascend vNPU
switches, ``deviceshare.NodeLockEnable``, ``deviceshare.SchedulePolicy``,
``deviceshare.ScheduleWeight`` and the known-geometries config map are accepted
and reported as having no effect; other arguments are reported as not read.

The predicate has a column form over every node (:class:`GpuColumns`), equal
node for node. It also answers the **simulate predicate** of topology-aware
preemption, on the node copy from which the dry run removed its victims (whose
devices are then free), as Volcano's predicates plugin checks devices there.
"""

from __future__ import annotations

import numpy as np

from batchsched import columnar
from batchsched.api.devices import GpuAsk, fits_devices, gpu_ask
from batchsched.api.fit import FitError
from batchsched.api.node import NodeInfo
from batchsched.api.task import TaskInfo
from batchsched.api.types import FitStatusCode
from batchsched.columnar.gpu_columns import GpuColumns
from batchsched.columnar.node_columns import BoolArray, NodeColumns
from batchsched.errors import ConfigError, SchedulingError
from batchsched.framework.arguments import Arguments
from batchsched.framework.session import Session

__all__ = ["DeviceSharePlugin", "device_fit_error"]

PLUGIN_NAME = "deviceshare"
SHARING_KEY = "deviceshare.GPUSharingEnable"
NUMBER_KEY = "deviceshare.GPUNumberEnable"
_INERT = {
    "deviceshare.VGPUEnable": "vGPUs (volcano.sh/vgpu-*) are not modelled",
    "deviceshare.AscendMindClusterVNPUEnable": "Ascend vNPUs are not modelled",
    "deviceshare.AscendHAMiVNPUEnable": "Ascend vNPUs are not modelled",
    "deviceshare.KnownGeometriesCMName": "vGPU geometries are not modelled",
    "deviceshare.KnownGeometriesCMNamespace": "vGPU geometries are not modelled",
    "deviceshare.NodeLockEnable": "there is no node lock to take outside Kubernetes",
    "deviceshare.SchedulePolicy": "use a GPU placement policy plugin (gpu-*, fgd)",
    "deviceshare.ScheduleWeight": "use a GPU placement policy plugin (gpu-*, fgd)",
}


def device_fit_error(task: TaskInfo, node: NodeInfo) -> FitError | None:
    """Why the node's GPUs cannot serve the task, or None when they can (or the
    task asks no GPU, or the node counts its GPUs in aggregate only)."""
    try:
        ask = gpu_ask(task.resreq, owner=task.uid)
    except SchedulingError as exc:
        return FitError.of(task.namespace, task.name, node.name, str(exc),
                           code=FitStatusCode.UNSCHEDULABLE_AND_UNRESOLVABLE, plugin=PLUGIN_NAME)
    free = node.gpu_free
    if ask is None or free is None or fits_devices(free, ask):
        return None
    return FitError.of(task.namespace, task.name, node.name, _shortage(ask),
                       code=FitStatusCode.UNSCHEDULABLE, plugin=PLUGIN_NAME)


def _shortage(ask: GpuAsk) -> str:
    if ask.whole:
        return f"fewer than {ask.count} entirely free GPU(s)"
    return f"no GPU with {ask.milli}m free"


class DeviceSharePlugin:
    """Volcano's deviceshare plugin, GPU sharing part (see the module docstring)."""

    name = PLUGIN_NAME

    def __init__(self, arguments: Arguments) -> None:
        self.arguments = arguments
        sharing = arguments.get_bool(SHARING_KEY, False, owner=PLUGIN_NAME)
        number = arguments.get_bool(NUMBER_KEY, False, owner=PLUGIN_NAME)
        if sharing and number:  # Volcano's scheduler refuses to start
            raise ConfigError(f"{SHARING_KEY} and {NUMBER_KEY} cannot both be true",
                              key=f"{PLUGIN_NAME}.arguments")
        self.sharing = sharing or number
        arguments.warn_inert(PLUGIN_NAME, _INERT)
        arguments.warn_unknown(PLUGIN_NAME, [SHARING_KEY, NUMBER_KEY, *_INERT])

    def on_session_open(self, ssn: Session) -> None:
        if not self.sharing:
            return
        ssn.add_predicate_fn(self.name, device_fit_error)
        # The dry run of topology-aware preemption asks it on a node copy its victims
        # left, whose freed devices count (Volcano's predicates checks devices there).
        ssn.add_simulate_predicate_fn(self.name, device_fit_error)
        columnar.add_predicate_fn(ssn, self.name, lambda task, columns: self.fits_all(
            ssn, task, columns))

    def on_session_close(self, ssn: Session) -> None:
        """Nothing to write back."""

    def fits_all(self, ssn: Session, task: TaskInfo, columns: NodeColumns) -> BoolArray | None:
        """:func:`device_fit_error` is None, over every node of the session."""
        try:
            ask = gpu_ask(task.resreq, owner=task.uid)
        except SchedulingError:
            return np.zeros(len(ssn.node_list), dtype=np.bool_)
        if ask is None:
            return None
        gpus = GpuColumns.of(ssn)
        fits: BoolArray = np.asarray(gpus.whole_free() >= ask.count if ask.whole
                                     else (gpus.free >= ask.milli).any(axis=1))
        # A node counting its GPUs in aggregate only passes, as in the scalar form.
        passes: BoolArray = fits | (gpus.device_count == 0)
        return passes

