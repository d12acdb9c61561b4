"""The device configuration Volcano's deviceshare plugin reads from a ConfigMap.

Volcano's scheduler reads ``device-config.yaml`` from the ConfigMap that
``deviceshare.KnownGeometriesCMName`` / ``KnownGeometriesCMNamespace`` name (by default
``kube-system/volcano-vgpu-device-config``, which the vGPU device plugin installs);
without it, or when it does not parse, it uses its default configuration. batchsched
finds the ConfigMap among the snapshot's (a scenario's ``configMaps``, a kubectl dump's
ConfigMaps holding ``device-config.yaml``, or ``MemoryCache.set_config_map``).

What is read: the ``nvidia`` section's request names (``resourceCountName``,
``resourceMemoryName``, ``resourceMemoryPercentageName``, ``resourceCoreName``). A file
without that section names no vGPU request at all, as in Volcano. MIG geometries and
the ``vnpus`` section (Ascend) are not modelled.
"""

from __future__ import annotations

from collections.abc import Mapping

import attrs
import yaml

from batchsched.api.vgpu import DEFAULT_NAMES, VgpuResourceNames

__all__ = [
    "DEFAULT_CONFIG_MAP_NAME",
    "DEFAULT_CONFIG_MAP_NAMESPACE",
    "DEVICE_CONFIG_KEY",
    "DeviceConfig",
    "parse_device_config",
    "read_device_config",
]

DEVICE_CONFIG_KEY = "device-config.yaml"
DEFAULT_CONFIG_MAP_NAME = "volcano-vgpu-device-config"
DEFAULT_CONFIG_MAP_NAMESPACE = "kube-system"

_NAME_KEYS = {"resourceCountName": "count", "resourceMemoryName": "memory",
              "resourceMemoryPercentageName": "memory_percentage",
              "resourceCoreName": "cores"}


@attrs.frozen
class DeviceConfig:
    """What batchsched reads of a device configuration."""

    vgpu_names: VgpuResourceNames = DEFAULT_NAMES
    #: Where it came from (``namespace/name``); "" for Volcano's default.
    source: str = ""


DEFAULT = DeviceConfig()


def parse_device_config(text: str, source: str = "") -> DeviceConfig:
    """A ``device-config.yaml`` text; ValueError saying why it is not one."""
    try:
        document = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise ValueError(f"not YAML: {exc}") from exc
    if document is None:
        document = {}
    if not isinstance(document, Mapping):
        raise ValueError("not a mapping")
    nvidia = document.get("nvidia") or {}
    if not isinstance(nvidia, Mapping):
        raise ValueError("nvidia: not a mapping")
    names: dict[str, str] = {}
    for key, field in _NAME_KEYS.items():
        value = nvidia.get(key, "")
        if not isinstance(value, str):
            raise ValueError(f"nvidia.{key}: not a string")
        names[field] = value
    return DeviceConfig(VgpuResourceNames(**names), source)


def read_device_config(config_maps: Mapping[str, Mapping[str, str]], namespace: str,
                       name: str) -> tuple[DeviceConfig, str | None]:
    """The configuration the named ConfigMap holds, else Volcano's default, with why the
    default is used when the ConfigMap exists but cannot be read (None otherwise)."""
    key = f"{namespace}/{name}"
    data = config_maps.get(key)
    if data is None:
        return DEFAULT, None
    text = data.get(DEVICE_CONFIG_KEY)
    if text is None:
        return DEFAULT, f"ConfigMap {key} has no {DEVICE_CONFIG_KEY}"
    try:
        return parse_device_config(text, key), None
    except ValueError as exc:
        return DEFAULT, f"ConfigMap {key}: {DEVICE_CONFIG_KEY}: {exc}"
