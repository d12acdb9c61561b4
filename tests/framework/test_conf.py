from __future__ import annotations

import re
from pathlib import Path

import pytest

from batchsched.conf import (
    configuration_from_text,
    default_configuration,
    load_configuration,
    parse_configuration,
)
from batchsched.errors import ConfigError
from batchsched.framework.registry import Registry


def test_default_configuration_is_volcanos() -> None:
    conf = default_configuration()
    assert conf.actions == ("enqueue", "allocate", "backfill")
    assert [p.name for p in conf.tiers[0].plugins] == ["priority", "gang", "conformance"]
    assert [p.name for p in conf.tiers[1].plugins] == [
        "overcommit", "drf", "predicates", "proportion", "nodeorder"]


def test_omitted_flags_take_configuration_file_defaults() -> None:
    conf = configuration_from_text("tiers: [{plugins: [{name: gang, enablePreemptable: false}]}]")
    option = conf.tiers[0].plugins[0]
    assert not option.enabled("enablePreemptable")
    assert option.enabled("enableJobReady")
    assert not option.enabled("enableHierarchy")
    assert not option.enabled("enabledClusterOrder")
    assert option.enabled(None)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("actions: [allocate]", "actions: must be a comma-separated string"),
        ("tiers: [{plugins: [{name: gang, enablePreemptable: 'yes'}]}]",
         "tiers[0].plugins[0].enablePreemptable: must be true or false"),
        ("tiers: [{plugins: [{name: gang, enablePreemtable: false}]}]",
         "did you mean 'enablePreemptable'"),
        ("tiers: [{plugins: [{arguments: {}}]}]", "a plugin needs a 'name'"),
        ("tier: []", "unknown key 'tier'"),
        ("tiers: [{plugins: [{name: x, arguments: [1]}]}]", "arguments: must be a mapping"),
    ],
)
def test_shape_errors_name_the_key(text: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message.replace("[", r"\[").replace("]", r"\]")):
        configuration_from_text(text, source="sched.conf")


def test_malformed_yaml_names_the_file(tmp_path: Path) -> None:
    path = tmp_path / "bad.conf"
    path.write_text("actions: [unclosed")
    with pytest.raises(ConfigError, match=r"bad.conf: malformed YAML \(line"):
        load_configuration(path)


def test_configmap_shape_is_accepted(tmp_path: Path) -> None:
    path = tmp_path / "cm.yaml"
    path.write_text("data:\n  volcano-scheduler.conf: |\n    actions: \"allocate\"\n"
                    "    tiers:\n    - plugins:\n      - name: gang\n")
    assert load_configuration(path).actions == ("allocate",)


@pytest.mark.parametrize("value", ["7", "[a]", "null", "{a: 1}", "true"])
def test_a_configmap_whose_conf_is_no_string_is_named(value: str) -> None:
    text = f"kind: ConfigMap\ndata:\n  volcano-scheduler.conf: {value}\n"
    with pytest.raises(ConfigError, match=r"cm.yaml: data.volcano-scheduler.conf: must be "
                                          r"a string \(the configuration's text\), not "):
        configuration_from_text(text, source="cm.yaml")


def test_unknown_names_list_the_known_ones() -> None:
    registry = Registry(autoload=False)
    conf = parse_configuration({"actions": "alocate"}, source="s.conf")
    expected = r"s.conf: actions\[0\]: unknown action 'alocate'"
    with pytest.raises(ConfigError, match=expected) as info:
        conf.validate(registry)
    assert info.value.known == tuple(sorted(registry.actions))


def test_a_plugin_listed_twice_names_both_positions() -> None:
    registry = Registry(autoload=False)
    conf = parse_configuration(
        {"tiers": [{"plugins": [{"name": "gang"}, {"name": "priority"}]},
                   {"plugins": [{"name": "drf"}, {"name": "gang"}]}]},
        source="s.conf",
    )
    expected = (r"s.conf: tiers\[1\].plugins\[1\].name: plugin 'gang' is listed twice "
                r"\(first at tiers\[0\].plugins\[0\].name\)")
    with pytest.raises(ConfigError, match=expected):
        conf.validate(registry)


def test_a_plugin_listed_twice_in_one_tier_is_rejected() -> None:
    registry = Registry(autoload=False)
    conf = parse_configuration({"tiers": [{"plugins": [{"name": "drf"}, {"name": "drf"}]}]})
    with pytest.raises(ConfigError, match=r"tiers\[0\].plugins\[1\].name.*tiers\[0\].plugins\[0\]"):
        conf.validate(registry)


def test_the_metrics_section_is_kept() -> None:
    conf = configuration_from_text(
        "actions: allocate\ntiers: []\nmetrics: {type: prometheus, address: 'http://p:9090', "
        "interval: 30s}\n")
    assert conf.metrics == {"type": "prometheus", "address": "http://p:9090",
                            "interval": "30s"}
    assert configuration_from_text("actions: allocate\n").metrics == {}


@pytest.mark.parametrize("text", ["metrics: [1]", "metrics: {interval: [30s]}"])
def test_a_malformed_metrics_section_names_the_field(text: str) -> None:
    with pytest.raises(ConfigError, match="metrics"):
        configuration_from_text(f"actions: allocate\n{text}\n")


def test_nested_metrics_keys_are_refused_as_volcano_refuses_them() -> None:
    """Volcano's metrics are a map[string]string: yaml.v2 cannot read the nested
    ``tls: {insecureSkipVerify: ...}`` of its usage guide into it, and refuses the
    whole file (Volcano then schedules with its default configuration)."""
    with pytest.raises(ConfigError, match=r"metrics\.tls: must be a string"):
        configuration_from_text(
            "actions: allocate\nmetrics:\n  type: prometheus\n"
            "  tls: {insecureSkipVerify: 'false'}\n")
    conf = configuration_from_text(
        "actions: allocate\nmetrics: {type: prometheus, interval: 1.50, enabled: yes, x: }\n")
    # Each value as written, as yaml.v2 reads a scalar into a string.
    assert conf.metrics == {"type": "prometheus", "interval": "1.50", "enabled": "yes",
                            "x": ""}




def test_the_file_is_trimmed_as_volcano_trims_it() -> None:
    """Volcano reads ``strings.TrimSpace`` of the file: an indented first line is read
    from its text, and the rest of the file with it."""
    conf = configuration_from_text('   actions: "enqueue, allocate"\ntiers:\n- plugins:\n'
                                   "  - name: gang\n")
    assert conf.actions == ("enqueue", "allocate")
    assert conf.plugin_names() == ["gang"]


def test_errors_still_name_the_file_s_line_after_the_trim() -> None:
    with pytest.raises(ConfigError, match=r"line 4"):
        configuration_from_text("\n\n  actions: allocate\ntiers: [\n")


def test_action_names_are_trimmed_of_what_go_trims_only() -> None:
    """Go's TrimSpace keeps the information separators Python's strip() removes: Volcano
    finds no action 'enqueue\\x1c'."""
    conf = configuration_from_text('actions: "enqueue\\x1c, allocate"\n')
    assert conf.actions == ("enqueue\x1c", "allocate")
    assert configuration_from_text('actions: "\\u00a0enqueue ,\\tallocate"\n').actions == (
        "enqueue", "allocate")


def test_a_map_field_given_twice_is_merged_as_yaml_v2_merges_it() -> None:
    # yaml.v2 decodes a repeated map field of a struct into the map it already made.
    conf = configuration_from_text(
        "actions: allocate\n"
        "tiers:\n- plugins:\n  - name: binpack\n"
        "    arguments: {binpack.weight: 5}\n"
        "    arguments: {binpack.cpu: 3}\n"
        "metrics: {type: prometheus}\nmetrics: {interval: 30s}\n")
    binpack = conf.plugin_option("binpack")
    assert binpack is not None
    assert binpack.arguments.get("binpack.weight") == 5
    assert binpack.arguments.get("binpack.cpu") == 3
    assert conf.metrics == {"type": "prometheus", "interval": "30s"}


def test_a_key_given_twice_inside_an_argument_keeps_its_last_value() -> None:
    """A mapping inside an argument's value is a fresh interface{} map in yaml.v2: a
    key given twice there keeps its last value (only a struct's map fields merge)."""
    conf = configuration_from_text(
        "actions: allocate\ntiers:\n- plugins:\n  - name: resource-strategy-fit\n"
        "    arguments:\n      resources:\n        cpu: {type: LeastAllocated, weight: 100}\n"
        "      resources:\n        memory: {type: MostAllocated, weight: 1}\n"
        "configurations:\n- name: allocate\n  arguments: {a: {p: 1}, a: {q: 2}}\n")
    option = conf.plugin_option("resource-strategy-fit")
    assert option is not None
    assert option.arguments["resources"] == {"memory": {"type": "MostAllocated", "weight": 1}}
    assert dict(conf.action_arguments("allocate")) == {"a": {"q": 2}}


def test_merge_keys_merge_where_they_stand_as_yaml_v2_merges_them() -> None:
    """yaml.v2 merges a ``<<`` in document order: a merge after a key overrides it; of a
    sequence of merged mappings the first wins."""
    conf = configuration_from_text(
        "actions: allocate\ntiers:\n- plugins:\n"
        "  - name: predicates\n    enablePredicate: true\n    <<: {enablePredicate: false}\n"
        "  - name: binpack\n    <<: {enableNodeOrder: false}\n    enableNodeOrder: true\n"
        "  - name: gang\n    <<: [{enableJobOrder: false}, {enableJobOrder: true}]\n")
    flags = {option.name: option.flags for option in conf.tiers[0].plugins}
    assert flags == {"predicates": {"enablePredicate": False},
                     "binpack": {"enableNodeOrder": True}, "gang": {"enableJobOrder": False}}


def test_tagged_scalars_are_read_or_refused_as_yaml_v2_reads_them() -> None:
    conf = configuration_from_text(
        "actions: enqueue\ntiers:\n- plugins:\n  - name: gang\n    enableJobOrder: !!bool n\n"
        "  - name: overcommit\n    arguments: {overcommit-factor: !!float 2, x: !!str 12}\n")
    assert conf.tiers[0].plugins[0].flags == {"enableJobOrder": False}
    arguments = conf.tiers[0].plugins[1].arguments
    assert arguments["overcommit-factor"] == 2.0 and type(arguments["overcommit-factor"]) is float
    assert arguments["x"] == "12"
    for written, message in (("!!int 1:30", "cannot decode !!str `1:30` as a !!int"),
                             ("!!float 1.5x", "cannot decode !!str `1.5x` as a !!float"),
                             ("!!null foo", "cannot decode !!str `foo` as a !!null"),
                             ("!!bool 1", "cannot decode !!int `1` as a !!bool")):
        with pytest.raises(ConfigError, match=re.escape(message)):
            configuration_from_text("actions: enqueue\ntiers:\n- plugins:\n"
                                    f"  - name: overcommit\n    arguments: {{f: {written}}}\n")


def test_tagged_scalars_keep_their_text_where_go_reads_text() -> None:
    """yaml.v2 puts a scalar's text in a string field whatever its tag, resolves a
    tagged key in an interface{} map, decodes !!binary from base64, refuses a
    !!timestamp that is none and a !!float past int64, and reads a local tag's text."""
    conf = configuration_from_text(
        "actions: allocate\ntiers:\n- plugins:\n  - name: !!bool y\n"
        "  - name: binpack\n    arguments:\n      bin: !!binary bnZpZGlhLmNvbS9ncHU=\n"
        "      nested: {!!int 6: b, ? !!bool y : c}\n      own: !custom text\n"
        "metrics: {a: !!bool y, b: !!float 3, c: !!int 010}\n")
    assert [option.name for option in conf.tiers[0].plugins] == ["y", "binpack"]
    arguments = conf.tiers[0].plugins[1].arguments
    assert arguments["bin"] == "nvidia.com/gpu"
    assert arguments["nested"] == {6: "b", True: "c"}
    assert arguments["own"] == "text"
    assert conf.metrics == {"a": "y", "b": "3", "c": "010"}
    for written, message in (("!!timestamp foo", "cannot decode !!str `foo` as a !!timestamp"),
                             ("!!float 18446744073709551615", "as a !!float"),
                             ("!!binary 'no base64!'",
                              "!!binary value contains invalid base64 data")):
        with pytest.raises(ConfigError, match=re.escape(message)):
            configuration_from_text("actions: enqueue\ntiers:\n- plugins:\n"
                                    f"  - name: overcommit\n    arguments: {{f: {written}}}\n")


def test_a_null_between_two_arguments_blocks_starts_them_anew() -> None:
    """yaml.v2 sets a map field given as null to nil: the block after it is a new map."""
    conf = configuration_from_text(
        "actions: allocate\ntiers:\n- plugins:\n  - name: binpack\n"
        "    arguments: {a: 1}\n    arguments:\n    arguments: {b: 2}\n")
    assert dict(conf.tiers[0].plugins[0].arguments) == {"b": 2}


def test_a_configmap_whose_configuration_is_a_mapping_merges_its_plugin_arguments() -> None:
    from batchsched.kube.go_yaml import load_first_document, resolved

    document = load_first_document(
        "data:\n  volcano-scheduler.conf: {actions: allocate, tiers: [{plugins: [{name: binpack,"
        " arguments: {binpack.cpu: 5}, arguments: {binpack.memory: 3}}]}]}\n")
    plugin = document["data"]["volcano-scheduler.conf"]["tiers"][0]["plugins"][0]
    assert resolved(plugin["arguments"]) == {"binpack.cpu": 5, "binpack.memory": 3}


def test_a_null_tier_is_an_empty_tier() -> None:
    conf = configuration_from_text("actions: allocate\ntiers:\n-\n- plugins:\n  - name: gang\n")
    assert [len(tier.plugins) for tier in conf.tiers] == [0, 1]


@pytest.mark.parametrize("text", ["? [a]\n: 1\nactions: allocate\n",
                                  "actions: allocate\ntiers:\n- plugins:\n  - name: binpack\n"
                                  "    arguments: {? {a: 1} : 2}\n"])
def test_a_sequence_or_mapping_as_a_key_is_malformed(text: str) -> None:
    with pytest.raises(ConfigError, match="as a key, which is no text"):
        configuration_from_text(text)
