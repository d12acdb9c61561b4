"""The device configuration Volcano's deviceshare plugin reads from a ConfigMap.

Volcano's scheduler reads ``device-config.yaml`` from the ConfigMap that
``deviceshare.KnownGeometriesCMName`` / ``KnownGeometriesCMNamespace`` name (by default
``kube-system/volcano-vgpu-device-config``, which the vGPU device plugin installs);
without it, or when it does not parse, it uses its default configuration. batchsched
finds the ConfigMap among the snapshot's (a scenario's ``configMaps``, a kubectl dump's
ConfigMaps holding ``device-config.yaml``, or ``MemoryCache.set_config_map``).

What is read: the ``nvidia`` section's request names (``resourceCountName``,
``resourceMemoryName``, ``resourceMemoryPercentageName``, ``resourceCoreName``), and the
``vnpus`` section's Ascend chip types (:mod:`batchsched.api.ascend`), either as
``{hamiVnpuCore, configs: [...]}`` or, as older files have it, the list of chip types
itself. A file without a section names no vGPU request, or no chip type, at all, as
in Volcano (whose default configuration, used when the file is missing or unreadable,
has both). MIG geometries are not modelled.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping

import attrs
import yaml

from batchsched.api.ascend import DEFAULT_VNPU_CONFIG, AscendChip, VnpuConfig, VnpuTemplate
from batchsched.api.vgpu import DEFAULT_NAMES, VgpuResourceNames
from batchsched.kube.go_yaml import resolve

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
    vnpus: VnpuConfig = DEFAULT_VNPU_CONFIG
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
        return DeviceConfig(VgpuResourceNames(**names), VnpuConfig(), source)
    if not isinstance(document, yaml.MappingNode):
        raise ValueError("not a mapping")
    sections = _members(document)
    vnpus = _vnpus(sections.get("vnpus"))
    nvidia = sections.get("nvidia")
    if nvidia is None or _is_null(nvidia):
        return DeviceConfig(VgpuResourceNames(**names), vnpus, source)
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
    return DeviceConfig(VgpuResourceNames(**names), vnpus, source)


def _vnpus(node: yaml.Node | None) -> VnpuConfig:
    """The ``vnpus`` section: a mapping (``hamiVnpuCore``, ``configs``) or the list of
    chip types itself (Volcano tries the mapping first)."""
    if node is None or _is_null(node):
        return VnpuConfig()
    if isinstance(node, yaml.SequenceNode):
        return VnpuConfig(_one_per_word(_chip(item, f"vnpus[{i}]")
                                        for i, item in enumerate(node.value)))
    if not isinstance(node, yaml.MappingNode):
        raise ValueError("vnpus: failed to parse as either wrapper struct or direct array")
    members = _members(node)
    hami_core = members.get("hamiVnpuCore")
    if hami_core is not None and not _is_null(hami_core) and not _boolean(hami_core):
        raise ValueError("vnpus.hamiVnpuCore: not a boolean")
    configs = members.get("configs")
    chips: tuple[AscendChip, ...] = ()
    if configs is not None and not _is_null(configs):
        if not isinstance(configs, yaml.SequenceNode):
            raise ValueError("vnpus.configs: not a list")
        chips = _one_per_word(_chip(item, f"vnpus.configs[{i}]")
                              for i, item in enumerate(configs.value))
    return VnpuConfig(chips, hami_core is not None and _is_true(hami_core))


def _one_per_word(chips: Iterable[AscendChip]) -> tuple[AscendChip, ...]:
    """One chip type per common word, the last given, where the first stood: Volcano
    keeps a node's devices by common word."""
    kept: dict[str, AscendChip] = {}
    for chip in chips:
        kept[chip.common_word] = chip
    return tuple(kept.values())


def _chip(node: yaml.Node, where: str) -> AscendChip:
    if not isinstance(node, yaml.MappingNode):
        raise ValueError(f"{where}: not a mapping")
    fields = {key: value for key, value in _members(node).items() if not _is_null(value)}
    for key, value in fields.items():
        kind = _CHIP_KINDS.get(key)
        if kind is not None and not kind(value):
            raise ValueError(f"{where}.{key}: not {_KIND_WORDS[kind]}")
    templates = []
    if "templates" in fields:
        for i, item in enumerate(fields["templates"].value):
            if _is_null(item):
                templates.append(VnpuTemplate("", 0))  # yaml.v2's zero template
                continue
            if not isinstance(item, yaml.MappingNode):
                raise ValueError(f"{where}.templates[{i}]: not a mapping")
            own = {key: value for key, value in _members(item).items() if not _is_null(value)}
            if "name" in own and not _scalar(own["name"]):
                raise ValueError(f"{where}.templates[{i}].name: not a scalar")
            for key, bits in (("memory", 64), ("aiCore", 32), ("aiCPU", 32)):
                if key in own and not _integer(own[key], bits):
                    raise ValueError(f"{where}.templates[{i}].{key}: not an integer of "
                                     f"{bits} bits")
            templates.append(VnpuTemplate(_text(own.get("name")), _int(own.get("memory"))))
    return AscendChip(
        common_word=_text(fields.get("commonWord")), chip_name=_text(fields.get("chipName")),
        resource_name=_text(fields.get("resourceName")),
        resource_memory_name=_text(fields.get("resourceMemoryName")),
        memory_allocatable=_int(fields.get("memoryAllocatable")),
        memory_capacity=_int(fields.get("memoryCapacity")), templates=tuple(templates))


def _text(node: yaml.Node | None) -> str:
    return "" if node is None else str(node.value)


def _int(node: yaml.Node | None) -> int:
    """An integer field; yaml.v2 truncates a float into it."""
    if node is None:
        return 0
    value = _resolved(node)[1]
    return int(float(value)) if isinstance(value, (int, float)) else 0


def _is_true(node: yaml.Node) -> bool:
    if node.value in _SHORT_BOOLEANS:
        return node.value in ("y", "Y")
    return bool(yaml.safe_load(node.value))


def _resolved(node: yaml.Node) -> tuple[str, object]:
    """A scalar's tag and value as yaml.v2 resolves them: a plain scalar by yaml.v2's
    rules (``2e3`` is a float, ``0o17`` an integer, where PyYAML reads strings), a
    quoted or tagged one as written."""
    if isinstance(node, yaml.ScalarNode) and node.style is None and node.tag in (
            _INT, _FLOAT, "tag:yaml.org,2002:str"):
        return resolve(node.value)
    try:
        return node.tag, yaml.safe_load(node.value)
    except yaml.YAMLError:
        return node.tag, node.value


def _integer(node: yaml.Node, bits: int = 64) -> bool:
    """A number yaml.v2 decodes into an integer field of ``bits`` bits (a float is
    truncated; a value out of the field's range is refused)."""
    if not isinstance(node, yaml.ScalarNode):
        return False
    tag, value = _resolved(node)
    if tag not in (_INT, _FLOAT) or not isinstance(value, (int, float)):
        return False
    number = float(value)
    return math.isfinite(number) and -(2 ** (bits - 1)) <= int(number) < 2 ** (bits - 1)


def _int32(node: yaml.Node) -> bool:
    return _integer(node, 32)


def _members(node: yaml.MappingNode) -> dict[str, yaml.Node]:
    return {key.value: value for key, value in node.value
            if isinstance(key, yaml.ScalarNode)}


def _is_null(node: yaml.Node) -> bool:
    return isinstance(node, yaml.ScalarNode) and node.tag == "tag:yaml.org,2002:null"


def _scalar(node: yaml.Node) -> bool:
    return isinstance(node, yaml.ScalarNode)


def _unsigned(node: yaml.Node) -> bool:
    """A number yaml.v2 decodes into a ``uint`` field: an integer from 0 (one past
    uint64 is resolved as a float), or a float up to uint64's largest, negative ones
    included (yaml.v2 checks only the upper bound of floats)."""
    if not isinstance(node, yaml.ScalarNode) or node.tag not in (_INT, _FLOAT):
        return False
    try:
        value = yaml.safe_load(node.value)
    except yaml.YAMLError:
        return False
    if isinstance(value, int) and value < _UINT64_LIMIT:
        return value >= 0
    number = float(value)
    return not math.isnan(number) and number <= float(_UINT64_LIMIT - 1)


def _number(node: yaml.Node) -> bool:
    return isinstance(node, yaml.ScalarNode) and _resolved(node)[0] in (_INT, _FLOAT)


def _boolean(node: yaml.Node) -> bool:
    """A YAML 1.1 boolean as yaml.v2 resolves one: PyYAML's, and ``y``/``n`` too."""
    return isinstance(node, yaml.ScalarNode) and (
        node.tag == "tag:yaml.org,2002:bool"
        or (node.style is None and node.value in _SHORT_BOOLEANS))


def _mig_geometries(node: yaml.Node) -> bool:
    """``knownMigGeometries`` as yaml.v2 decodes it into ``[]AllowedMigGeometries``:
    each entry null or a mapping whose ``models`` are scalars and whose
    ``allowedGeometries`` hold groups of templates (name, ``uint`` memory, ``int``
    count); other keys are ignored."""
    def each(items: yaml.Node, check: Callable[[yaml.Node], bool]) -> bool:
        if _is_null(items):
            return True
        return isinstance(items, yaml.SequenceNode) and all(
            _is_null(item) or check(item) for item in items.value)

    def fields(item: yaml.Node, checks: Mapping[str, Callable[[yaml.Node], bool]]) -> bool:
        if not isinstance(item, yaml.MappingNode):
            return False
        return all(_is_null(value) or checks[key](value)
                   for key, value in _members(item).items() if key in checks)

    def template(item: yaml.Node) -> bool:
        return fields(item, {"name": _scalar, "memory": _unsigned, "count": _integer})

    def group(item: yaml.Node) -> bool:
        return fields(item, {"group": _scalar,
                             "geometries": lambda node: each(node, template)})

    def allowed(item: yaml.Node) -> bool:
        return fields(item, {"models": lambda node: each(node, _scalar),
                             "allowedGeometries": lambda node: each(node, group)})

    return isinstance(node, yaml.SequenceNode) and each(node, allowed)


def _list(node: yaml.Node) -> bool:
    return isinstance(node, yaml.SequenceNode)


_UINT64_LIMIT = 2**64
#: Plain scalars yaml.v2 (YAML 1.1) reads as booleans and PyYAML does not.
_SHORT_BOOLEANS = frozenset({"y", "Y", "n", "N"})
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
    "knownMigGeometries": _mig_geometries,
}
#: The kinds of Volcano's ``VNPUConfig`` fields.
_CHIP_KINDS = {
    **dict.fromkeys(("commonWord", "chipName", "resourceName", "resourceMemoryName"), _scalar),
    **dict.fromkeys(("memoryAllocatable", "memoryCapacity"), _integer),
    **dict.fromkeys(("aiCore", "aiCPU"), _int32),
    "templates": _list,
}
_KIND_WORDS = {_scalar: "a scalar", _unsigned: "a non-negative number", _number: "a number",
               _boolean: "a boolean", _list: "a list", _integer: "an integer",
               _int32: "an integer of 32 bits",
               _mig_geometries: "a list of MIG geometries"}


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
