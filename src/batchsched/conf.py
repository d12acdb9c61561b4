"""The scheduler configuration, in Volcano's YAML shape, unchanged.

.. code-block:: yaml

    actions: "enqueue, allocate, backfill"
    tiers:
    - plugins:
      - name: priority
      - name: gang
        enablePreemptable: false
    - plugins:
      - name: binpack
        arguments: {binpack.weight: 10}
    configurations:
    - name: preempt
      arguments: {enableTopologyAwarePreemption: true}

An omitted enable flag takes Volcano's configuration-file default (true, except
``enableHierarchy`` and ``enabledClusterOrder``). Names of actions and plugins
are checked against a registry by :meth:`SchedulerConfiguration.validate`.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import attrs
import yaml

from batchsched.api.sharding import Sharding, ShardingMode
from batchsched.errors import ConfigError, PluginError
from batchsched.framework.arguments import Arguments, log
from batchsched.framework.extension_points import ENABLE_FLAGS
from batchsched.kube.go_strings import GO_SPACE
from batchsched.kube.go_yaml import GoScalar, load_first_document, resolved, text_keys

if TYPE_CHECKING:
    from batchsched.framework.registry import Registry

__all__ = [
    "DEFAULT_CONFIGURATION_YAML",
    "NodesToFind",
    "PluginOption",
    "SchedulerConfiguration",
    "Tier",
    "as_volcano_reads",
    "check_tier_conflicts",
    "configuration_from_text",
    "default_configuration",
    "load_configuration",
    "parse_configuration",
    "require_actions",
]

DEFAULT_CONFIGURATION_YAML = """\
actions: "enqueue, allocate, backfill"
tiers:
- plugins:
  - name: priority
  - name: gang
  - name: conformance
- plugins:
  - name: overcommit
  - name: drf
  - name: predicates
  - name: proportion
  - name: nodeorder
"""


@attrs.frozen
class PluginOption:
    """One plugin in a tier: its name, enable flags and arguments."""

    name: str
    flags: Mapping[str, bool] = attrs.field(factory=dict)
    arguments: Arguments = attrs.field(factory=Arguments)

    def enabled(self, flag: str | None) -> bool:
        """Whether the flag is on (``None``, an ungated point, always is)."""
        if flag is None:
            return True
        value = self.flags.get(flag)
        if value is None:
            return ENABLE_FLAGS.get(flag, True)
        return value

    @property
    def hierarchy(self) -> bool:
        return self.enabled("enableHierarchy")


@attrs.frozen
class Tier:
    plugins: tuple[PluginOption, ...]


@attrs.frozen
class NodesToFind:
    """How many feasible nodes a scan collects before it stops.

    Volcano's (and kube-scheduler's) command-line flags ``--percentage-nodes-to-find``,
    ``--minimum-feasible-nodes`` and ``--minimum-percentage-nodes-to-find``; in a
    configuration file they are the top-level mapping ``nodesToFind`` with the keys
    ``percentageOfNodesToFind`` (0: adaptive, 100: every node), ``minNodesToFind``
    and ``minPercentageOfNodesToFind``.

    >>> NodesToFind().count(1000), NodesToFind(percentage=100).count(1000)
    (420, 1000)
    """

    percentage: int = 0
    minimum: int = 100
    min_percentage: int = 5

    def count(self, total: int) -> int:
        """All nodes up to ``minimum`` (or with a percentage of 100); above, the
        percentage of them (adaptive: ``max(50 - total // 125, min_percentage)``),
        never fewer than ``minimum``."""
        if total <= self.minimum or self.percentage >= 100:
            return total
        percentage = self.percentage
        if percentage <= 0:
            percentage = max(50 - total // 125, self.min_percentage)
        return max(total * percentage // 100, self.minimum)


@attrs.frozen
class SchedulerConfiguration:
    """Actions in order, tiers of plugins, per-action arguments, and how many feasible
    nodes a node scan collects."""

    actions: tuple[str, ...]
    tiers: tuple[Tier, ...]
    configurations: Mapping[str, Arguments] = attrs.field(factory=dict)
    source: str = "<configuration>"
    nodes_to_find: NodesToFind = attrs.field(factory=NodesToFind)
    #: The scheduler's sharding flags (``--scheduler-sharding-mode``, ``-name``;
    #: :mod:`batchsched.api.sharding`): off unless set.
    sharding: Sharding = attrs.field(factory=Sharding)
    #: Volcano's ``metrics`` section (``type``, ``address``, ``interval``...): where node
    #: load comes from. batchsched reads node load from the cache (``NodeInfo.usage``);
    #: the usage plugin reads ``interval`` from here.
    metrics: Mapping[str, str] = attrs.field(factory=dict)
    #: Where the configuration sits in its source (``config`` in a scenario): errors
    #: name their key from there.
    location: str = ""
    #: Each action's entry in the source's ``configurations`` list (its index), for
    #: errors; empty for a configuration built in code.
    configuration_positions: Mapping[str, int] = attrs.field(factory=dict, eq=False,
                                                              repr=False)

    def refused_arguments(self, exc: PluginError, *, action: str | None = None,
                          place: tuple[int, int] | None = None) -> PluginError:
        """``exc`` (an action or plugin refusing its arguments as it is built) as one
        error naming this configuration's file and the arguments' place in it (the
        action's ``configurations`` entry, or the plugin's ``tiers[t].plugins[p]``);
        ``exc`` itself when it is about something else."""
        cause = exc.__cause__
        if not isinstance(cause, (ValueError, TypeError, PluginError)):
            return exc
        said = str(cause)
        inner_key = ""
        if isinstance(cause, ConfigError):
            said, inner_key = cause.message, cause.key
        at = f"{self.location}." if self.location else ""
        if action is not None:
            position = self.configuration_positions.get(action)
            prefix = f"configurations[{action}].arguments"
            suffix = inner_key[len(prefix):] if inner_key.startswith(prefix) else ""
            key = (f"{at}configurations[{position}].arguments{suffix}" if position is not None
                   else f"{at}actions")
            who = f"action {action!r}"
        else:
            assert place is not None
            key = f"{at}tiers[{place[0]}].plugins[{place[1]}].arguments"
            if inner_key and not inner_key.startswith(("tiers[", "configurations[")):
                said = f"{inner_key}: {said}"
            who = f"plugin {exc.plugin!r}"
        return PluginError(f"{self.source}: {key}: {who}: {said}", plugin=exc.plugin)

    def plugin_names(self) -> list[str]:
        return [p.name for t in self.tiers for p in t.plugins]

    def plugin_option(self, name: str) -> PluginOption | None:
        for tier in self.tiers:
            for option in tier.plugins:
                if option.name == name:
                    return option
        return None

    def action_arguments(self, name: str) -> Arguments:
        return self.configurations.get(name, Arguments())

    def validate(self, registry: Registry) -> None:
        """Raise :class:`ConfigError` for names the registry does not know, and for a
        plugin listed more than once (the error names both positions).

        Combinations Volcano refuses when it reads a configuration file are checked
        by :func:`check_tier_conflicts` when a file (or text) is read, not here: a
        configuration built in code (or in a scenario) may combine them, as Volcano's
        own tests do."""
        at = f"{self.location}." if self.location else ""
        known_actions = sorted(registry.actions)
        contested: dict[tuple[str, str], str] = getattr(registry, "contested", {})
        for i, name in enumerate(self.actions):
            if ("action", name) in contested:
                raise ConfigError(contested["action", name], source=self.source,
                                  key=f"{at}actions[{i}]")
            if name not in registry.actions:
                raise ConfigError(
                    f"unknown action {name!r}{_did_you_mean(name, known_actions)}"
                    f"{_broken(registry)}",
                    source=self.source, key=f"{at}actions[{i}]", known=known_actions,
                )
        for i, name in enumerate(self.configurations):
            if name not in registry.actions:
                position = self.configuration_positions.get(name, i)
                raise ConfigError(
                    f"unknown action {name!r}{_did_you_mean(name, known_actions)}",
                    source=self.source, key=f"{at}configurations[{position}].name",
                    known=known_actions,
                )
        known_plugins = sorted(registry.plugins)
        first_seen: dict[str, str] = {}
        for t, tier in enumerate(self.tiers):
            for p, option in enumerate(tier.plugins):
                key = f"{at}tiers[{t}].plugins[{p}].name"
                if ("plugin", option.name) in contested:
                    raise ConfigError(contested["plugin", option.name], source=self.source,
                                      key=key)
                if option.name not in registry.plugins:
                    raise ConfigError(
                        f"unknown plugin {option.name!r}"
                        f"{_did_you_mean(option.name, known_plugins)}{_broken(registry)}",
                        source=self.source, key=key, known=known_plugins,
                    )
                # A session holds one instance per name: a second entry would replace
                # the first one's functions while both kept their event handlers.
                if option.name in first_seen:
                    raise ConfigError(
                        f"plugin {option.name!r} is listed twice (first at "
                        f"{first_seen[option.name]}); a plugin may appear once",
                        source=self.source, key=key,
                    )
                first_seen[option.name] = key


def _did_you_mean(name: str, known: list[str]) -> str:
    close = difflib.get_close_matches(name, known, n=1)
    return f" (did you mean {close[0]!r}?)" if close else ""


def _broken(registry: Registry) -> str:
    """What plugin distributions failed to load, the likeliest reason a name is unknown
    (their warning was logged once, when the registry was built)."""
    if not registry.broken:
        return ""
    return "; plugin distributions that failed to load: " + "; ".join(
        dict.fromkeys(message for _, message in registry.broken))


_NODES_TO_FIND_KEYS = {"percentageOfNodesToFind": "percentage", "minNodesToFind": "minimum",
                       "minPercentageOfNodesToFind": "min_percentage"}


def _nodes_to_find(raw: Any, source: str) -> NodesToFind:
    if raw is None:
        return NodesToFind()
    if not isinstance(raw, Mapping):
        raise ConfigError("must be a mapping", source=source, key="nodesToFind")
    values: dict[str, int] = {}
    for key, amount in raw.items():
        field = _NODES_TO_FIND_KEYS.get(key)
        if field is None:
            raise ConfigError(f"unknown key {key!r}", source=source, key=f"nodesToFind.{key}",
                              known=sorted(_NODES_TO_FIND_KEYS))
        if isinstance(amount, bool) or not isinstance(amount, int) or amount < 0:
            raise ConfigError(f"must be a non-negative integer, not {amount!r}", source=source,
                              key=f"nodesToFind.{key}")
        values[field] = amount
    return NodesToFind(**values)


_SHARDING_KEYS = ("mode", "name")


def _sharding(raw: Any, source: str) -> Sharding:
    """The ``sharding`` block: Volcano's ``--scheduler-sharding-mode`` (``none``,
    ``hard``, ``soft``) and ``--scheduler-sharding-name``."""
    if raw is None:
        return Sharding()
    if not isinstance(raw, Mapping):
        raise ConfigError("must be a mapping", source=source, key="sharding")
    for key in raw:
        if key not in _SHARDING_KEYS:
            raise ConfigError(f"unknown key {key!r}", source=source, key=f"sharding.{key}",
                              known=list(_SHARDING_KEYS))
    mode = raw.get("mode", "none")
    modes = [m.value for m in ShardingMode]
    if mode not in modes:
        raise ConfigError(f"must be one of {', '.join(modes)}, not {mode!r}", source=source,
                          key="sharding.mode")
    name = raw.get("name", "volcano")
    if not isinstance(name, str) or not name:
        raise ConfigError(f"must be a shard's name, not {name!r}", source=source,
                          key="sharding.name")
    return Sharding(ShardingMode(mode), name)


def parse_configuration(
    document: Mapping[str, Any] | None, *, source: str = "<configuration>"
) -> SchedulerConfiguration:
    """Build a configuration from an already-parsed YAML mapping.

    Shape errors (unknown keys, a flag that is not a boolean, a plugin without a
    name) raise :class:`ConfigError` naming ``source`` and the key path.
    """
    if document is None:
        document = {}
    if not isinstance(document, Mapping):
        raise ConfigError("the configuration must be a mapping", source=source)
    allowed = {"actions", "tiers", "configurations", "metrics", "nodesToFind", "sharding"}
    for key in document:
        if key not in allowed:
            raise ConfigError(f"unknown key {key!r}", source=source, key=str(key),
                              known=sorted(allowed))
    raw_actions = document.get("actions", "")
    if raw_actions is None:
        raw_actions = ""
    if not isinstance(raw_actions, str):
        raise ConfigError("must be a comma-separated string", source=source, key="actions")
    actions = (tuple(a.strip(GO_SPACE) for a in raw_actions.split(","))
               if raw_actions.strip(GO_SPACE) else ())
    if "" in actions:
        raise ConfigError(f"action {actions.index('') + 1} of {len(actions)} is empty (a "
                          "trailing or doubled comma): Volcano refuses such a file "
                          "(failed to find Action \"\")", source=source, key="actions")
    tiers = []
    for t, entry in enumerate(_list(document.get("tiers"), source, "tiers")):
        key = f"tiers[{t}]"
        # yaml.v2 reads a null entry as an empty Tier, as {}.
        raw_tier = {} if entry is None else entry
        if not isinstance(raw_tier, Mapping):
            raise ConfigError("must be a mapping with 'plugins'", source=source, key=key)
        for k in raw_tier:
            if k != "plugins":
                raise ConfigError(f"unknown key {k!r}", source=source, key=f"{key}.{k}",
                                  known=["plugins"])
        plugins = [
            _plugin_option(raw, source, f"{key}.plugins[{p}]")
            for p, raw in enumerate(_list(raw_tier.get("plugins"), source, f"{key}.plugins"))
        ]
        tiers.append(Tier(tuple(plugins)))
    configurations: dict[str, Arguments] = {}
    positions: dict[str, int] = {}
    for c, raw in enumerate(_list(document.get("configurations"), source, "configurations")):
        key = f"configurations[{c}]"
        if not isinstance(raw, Mapping) or not isinstance(raw.get("name"), str):
            raise ConfigError("must be a mapping with a 'name'", source=source, key=key)
        for k in raw:
            if k not in ("name", "arguments"):
                raise ConfigError(f"unknown key {k!r}", source=source, key=f"{key}.{k}",
                                  known=["arguments", "name"])
        arguments = raw.get("arguments")
        if arguments is None:
            arguments = {}
        if not isinstance(arguments, Mapping):
            raise ConfigError("must be a mapping", source=source, key=f"{key}.arguments")
        if raw["name"] in configurations:
            # Volcano reads an action's arguments from the first entry naming it.
            log.warning("%s: %s: a second entry for action %r; its arguments are ignored "
                        "(the first entry's are read)", source, key, raw["name"])
            continue
        configurations[raw["name"]] = Arguments(arguments, kind="action")
        positions[raw["name"]] = c
    return SchedulerConfiguration(
        actions=actions, tiers=tuple(tiers), configurations=configurations, source=source,
        configuration_positions=positions,
        nodes_to_find=_nodes_to_find(document.get("nodesToFind"), source),
        sharding=_sharding(document.get("sharding"), source),
        metrics=_metrics(document.get("metrics"), source),
    )


def _metrics(raw: Any, source: str) -> dict[str, str]:
    """Volcano's ``metrics`` section, a ``map[string]string``: each value a scalar's
    text (a file read by :func:`configuration_from_text` keeps it as written, ``1.50``
    or ``yes``; a null is ""); a mapping or a list makes Volcano refuse the file."""
    if raw is None:
        return {}
    if not isinstance(raw, Mapping):
        raise ConfigError("must be a mapping", source=source, key="metrics")
    out: dict[str, str] = {}
    for key, value in raw.items():
        if isinstance(value, (Mapping, list)):
            raise ConfigError(f"must be a string, not {value!r} (Volcano reads the metrics "
                              "as strings, and refuses the file)", source=source,
                              key=f"metrics.{key}")
        out[str(key)] = "" if value is None else (
            ("true" if value else "false") if isinstance(value, bool) else str(value))
    return out


def _list(value: Any, source: str, key: str) -> list[Any]:
    if value is None:
        return []
    if not isinstance(value, list):
        raise ConfigError("must be a list", source=source, key=key)
    return value


def _plugin_option(raw: Any, source: str, key: str) -> PluginOption:
    if not isinstance(raw, Mapping):
        raise ConfigError("must be a mapping with a 'name'", source=source, key=key)
    name = raw.get("name")
    if not isinstance(name, str) or not name:
        raise ConfigError("a plugin needs a 'name'", source=source, key=f"{key}.name")
    flags: dict[str, bool] = {}
    arguments: Mapping[str, Any] = {}
    for field, value in raw.items():
        if field == "name":
            continue
        if field == "arguments":
            if value is None:
                continue
            if not isinstance(value, Mapping):
                raise ConfigError("must be a mapping", source=source, key=f"{key}.arguments")
            arguments = value
            continue
        if field in ENABLE_FLAGS or (field.startswith("enable") and field in _EXTRA_FLAGS):
            if value is None:
                continue
            if not isinstance(value, bool):
                raise ConfigError(
                    f"must be true or false, not {value!r}", source=source,
                    key=f"{key}.{field}",
                )
            flags[field] = value
            continue
        known = sorted([*ENABLE_FLAGS, "arguments", "name"])
        raise ConfigError(
            f"unknown key {field!r} for plugin {name!r}{_did_you_mean(field, known)}",
            source=source, key=f"{key}.{field}", known=known,
        )
    return PluginOption(name=name, flags=flags, arguments=Arguments(arguments))


# Flags of Volcano features this library does not model: accepted so that a real
# Volcano configuration loads unchanged, and ignored. (None at present.)
_EXTRA_FLAGS: frozenset[str] = frozenset()


def load_configuration(source: str | Path) -> SchedulerConfiguration:
    """Read a Volcano scheduler configuration file.

    A file may be the configuration itself or a Kubernetes ConfigMap-style
    document whose ``volcano-scheduler.conf`` key holds it. It is read as Volcano
    reads it (yaml.v2's scalars, the first document), and a file Volcano would
    refuse is a :class:`ConfigError`: one naming no action, or an empty one.
    """
    path = Path(source)
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise ConfigError(f"cannot read: {exc.strerror}", source=str(path)) from exc
    try:
        if data[:2] in (b"\xff\xfe", b"\xfe\xff"):
            # yaml.v2 reads a UTF-16 file by its byte-order mark, after Volcano's
            # strings.TrimSpace on the file's bytes: the mark keeps the start (an
            # indented first line stays indented), and a trimmed end may split a
            # character.
            trimmed = data.rstrip(b" \t\n\r\x0b\x0c")
            if len(trimmed) % 2:
                raise ConfigError("yaml: incomplete UTF-16 character (as Volcano reads the "
                                  "file once its bytes are trimmed)", source=str(path))
            text = trimmed.decode("utf-16-le" if data[:2] == b"\xff\xfe" else "utf-16-be")
        else:
            text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        if exc.encoding.startswith("utf-16"):
            unit = data[exc.start:exc.start + 2].hex()
            named = "UTF-16LE" if exc.encoding.endswith("le") else "UTF-16BE"
            raise ConfigError(f"not {named} text: "
                              f"{exc.reason}, code unit 0x{unit} at offset {exc.start}",
                              source=str(path)) from exc
        raise ConfigError(f"not UTF-8 text: byte 0x{data[exc.start]:02x} at offset {exc.start}",
                          source=str(path)) from exc
    return require_actions(configuration_from_text(text, source=str(path)))


def require_actions(configuration: SchedulerConfiguration) -> SchedulerConfiguration:
    """``configuration`` if it names an action; else the :class:`ConfigError` Volcano's
    refusal of such a file calls for (it splits an empty actions string into one
    empty name it cannot find, and keeps its default configuration)."""
    if not configuration.actions:
        raise ConfigError("names no action: Volcano refuses such a file (failed to find "
                          "Action \"\") and keeps its default configuration",
                          source=configuration.source, key="actions")
    return configuration


def _parse_yaml(text: str, source: str, first_line: int = 0) -> Any:
    """YAML read as Volcano's yaml.v2 reads it (:mod:`batchsched.kube.go_yaml`: ``n``
    is false, ``3e0`` a number, the first document only) once trimmed as Volcano trims
    the file (``strings.TrimSpace``: an indented first line is read from its text), or
    a ConfigError naming the line (``first_line``: where ``text`` starts in the file,
    for a configuration embedded in a ConfigMap)."""
    trimmed = text.strip(GO_SPACE)
    if trimmed != text:
        # The blank lines trimmed off the top stay as line breaks: error lines still
        # count from the top of the file.
        text = "\n" * text[:len(text) - len(text.lstrip(GO_SPACE))].count("\n") + trimmed
    try:
        return as_volcano_reads(load_first_document(text))
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"line {first_line + mark.line + 1}" if mark is not None else "document"
        raise ConfigError(f"malformed YAML ({where}): {getattr(exc, 'problem', exc)}",
                          source=source) from exc


def as_volcano_reads(document: Any) -> Any:
    """A configuration document from :func:`~batchsched.kube.go_yaml.load_first_document`
    with each value as Volcano's struct types take it: the text of a plain scalar in
    its string fields (``actions``, names, ``metrics``, whose ``n`` or ``1.50`` stay
    text) and the resolved value in its booleans (enable flags, where ``n`` is false)
    and ``interface{}`` values (arguments, where ``3e0`` is a number)."""
    if not isinstance(document, dict):
        return resolved(document)
    out: dict[Any, Any] = {}
    for raw_key, value in document.items():
        key = str(raw_key)  # a struct's field: its text
        if key == "actions" and isinstance(value, str):
            out[key] = str(value)
        elif key == "metrics" and isinstance(value, dict):
            out[key] = {str(k): str(v) if isinstance(v, GoScalar) else resolved(v)
                        for k, v in value.items()}
        elif key in ("tiers", "configurations") and isinstance(value, list):
            out[key] = [_named_entries(entry) for entry in value]
        else:
            out[key] = resolved(value)
    return out


def _named_entries(entry: Any) -> Any:
    """A tier (its plugins) or an action's configuration: names as text."""
    if not isinstance(entry, dict):
        return resolved(entry)
    out: dict[Any, Any] = {}
    for raw_key, value in entry.items():
        key = str(raw_key)  # a struct's field: its text
        if key == "name" and isinstance(value, str):
            out[key] = str(value)
        elif key == "plugins" and isinstance(value, list):
            out[key] = [_named_entries(plugin) for plugin in value]
        elif key == "arguments":
            # map[string]interface{}: keys as text, values (nested keys too) resolved.
            out[key] = text_keys(value)
        else:
            out[key] = resolved(value)
    return out


def _embedded_line(text: str, path: tuple[str, ...]) -> int:
    """The 0-based line of the file where the string at ``path`` starts (its first
    content line for a block scalar)."""
    node: Any = yaml.compose(text)
    for key in path:
        node = next(value for name, value in node.value if name.value == key)
    block = node.style in ("|", ">")
    return int(node.start_mark.line) + (1 if block else 0)


def configuration_from_text(text: str, *, source: str = "<string>") -> SchedulerConfiguration:
    document = _parse_yaml(text, source)
    if isinstance(document, Mapping) and "volcano-scheduler.conf" in document:
        inner = document["volcano-scheduler.conf"]
        if isinstance(inner, str):
            first = _embedded_line(text, ("volcano-scheduler.conf",))
            document = _parse_yaml(inner, source, first)
        else:
            document = inner
    elif (
        isinstance(document, Mapping)
        and isinstance(document.get("data"), Mapping)
        and "volcano-scheduler.conf" in document["data"]
    ):
        inner = document["data"]["volcano-scheduler.conf"]
        if not isinstance(inner, str):
            # A ConfigMap's data values are strings: the configuration's text.
            raise ConfigError(f"must be a string (the configuration's text), not {inner!r}",
                              source=source, key="data.volcano-scheduler.conf")
        first = _embedded_line(text, ("data", "volcano-scheduler.conf"))
        document = _parse_yaml(inner, source, first)
    if document is None:
        raise ConfigError("the configuration is empty: it names no action and no tier",
                          source=source)
    configuration = parse_configuration(document, source=source)
    check_tier_conflicts(configuration)
    return configuration


def check_tier_conflicts(configuration: SchedulerConfiguration) -> None:
    """Volcano's rule when it reads a scheduler configuration file: within one tier,
    ``drf`` with ``enableHierarchy: true`` and ``proportion`` conflict (both order
    queues by their own notion of share). The same pair in different tiers is
    accepted, as Volcano accepts it.

    Raises :class:`ConfigError` naming the tier.
    """
    for t, tier in enumerate(configuration.tiers):
        hierarchical_drf = any(
            p.name == "drf" and p.flags.get("enableHierarchy") is True for p in tier.plugins
        )
        if hierarchical_drf and any(p.name == "proportion" for p in tier.plugins):
            raise ConfigError(
                "proportion and drf with hierarchy enabled conflicts: a tier may not hold "
                "both drf with enableHierarchy: true and proportion (both order queues by "
                "share); remove one, or put them in different tiers",
                source=configuration.source, key=f"tiers[{t}]",
            )


def default_configuration() -> SchedulerConfiguration:
    """Volcano's default: enqueue, allocate, backfill with its two default tiers."""
    return configuration_from_text(DEFAULT_CONFIGURATION_YAML, source="<default>")


def flags_help() -> Iterable[tuple[str, bool]]:
    """Every enable flag with its configuration-file default."""
    return ENABLE_FLAGS.items()
