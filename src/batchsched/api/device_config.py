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
    """A ``device-config.yaml`` text read as Volcano's yaml.v2 ``Unmarshal`` reads it into
    its ``Config``: the first document; a string field takes any scalar's text (null:
    ""); a value of the wrong kind anywhere in the ``nvidia`` section, or a ``vnpus``
    that is neither a mapping nor a list, makes the whole file unreadable (ValueError
    saying why), and Volcano then uses its default configuration."""
    try:
        document = next(iter(yaml.compose_all(text, Loader=yaml.SafeLoader)), None)
    except yaml.YAMLError as exc:
        raise ValueError(f"not YAML: {exc}") from exc
    names = dict.fromkeys(_NAME_KEYS.values(), "")
    if document is None or _is_null(document):
        return DeviceConfig(VgpuResourceNames(**names), source)
    if not isinstance(document, yaml.MappingNode):
        raise ValueError("not a mapping")
    sections = _members(document)
    vnpus = sections.get("vnpus")
    if vnpus is not None and not _is_null(vnpus) and not isinstance(
            vnpus, yaml.MappingNode | yaml.SequenceNode):
        raise ValueError("vnpus: neither a mapping nor a list")
    nvidia = sections.get("nvidia")
    if nvidia is None or _is_null(nvidia):
        return DeviceConfig(VgpuResourceNames(**names), source)
    if not isinstance(nvidia, yaml.MappingNode):
        raise ValueError("nvidia: not a mapping")
    for key, node in _members(nvidia).items():
        kind = _FIELD_KINDS.get(key)
        if kind is None or _is_null(node):
            continue
        if not kind(node):
            raise ValueError(f"nvidia.{key}: not {_KIND_WORDS[kind]}")
        if key in _NAME_KEYS:
            names[_NAME_KEYS[key]] = node.value
    return DeviceConfig(VgpuResourceNames(**names), source)


def _members(node: yaml.MappingNode) -> dict[str, yaml.Node]:
    return {key.value: value for key, value in node.value
            if isinstance(key, yaml.ScalarNode)}


def _is_null(node: yaml.Node) -> bool:
    return isinstance(node, yaml.ScalarNode) and node.tag == "tag:yaml.org,2002:null"


def _scalar(node: yaml.Node) -> bool:
    return isinstance(node, yaml.ScalarNode)


def _unsigned(node: yaml.Node) -> bool:
    if not isinstance(node, yaml.ScalarNode) or node.tag not in (_INT, _FLOAT):
        return False
    try:
        return float(yaml.safe_load(node.value)) >= 0
    except (TypeError, ValueError):
        return False


def _number(node: yaml.Node) -> bool:
    return isinstance(node, yaml.ScalarNode) and node.tag in (_INT, _FLOAT)


def _boolean(node: yaml.Node) -> bool:
    return isinstance(node, yaml.ScalarNode) and node.tag == "tag:yaml.org,2002:bool"


def _list(node: yaml.Node) -> bool:
    return isinstance(node, yaml.SequenceNode)


_INT = "tag:yaml.org,2002:int"
_FLOAT = "tag:yaml.org,2002:float"
#: The kinds of Volcano's ``NvidiaConfig`` fields (yaml.v2 refuses another kind).
_FIELD_KINDS = {
    **dict.fromkeys(("resourceCountName", "resourceMemoryName", "resourceCoreName",
                     "resourceMemoryPercentageName", "resourcePriorityName"), _scalar),
    **dict.fromkeys(("defaultMemory", "defaultCores", "defaultGPUNum", "deviceSplitCount",
                     "gpuMemoryFactor"), _unsigned),
    **dict.fromkeys(("deviceMemoryScaling", "deviceCoreScaling"), _number),
    **dict.fromkeys(("overwriteEnv", "disableCoreLimit"), _boolean),
    "knownMigGeometries": _list,
}
_KIND_WORDS = {_scalar: "a scalar", _unsigned: "a non-negative number", _number: "a number",
               _boolean: "a boolean", _list: "a list"}


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
