"""Plugin arguments that cannot be read keep Volcano's silent fallback, but are logged
as warnings naming the plugin and the argument."""

from __future__ import annotations

from typing import Any

import pytest

from batchsched.framework.arguments import Arguments
from batchsched.plugins.binpack import BinpackPlugin
from batchsched.plugins.capacity import CapacityPlugin
from batchsched.plugins.deviceshare import DeviceSharePlugin
from batchsched.plugins.drf import DrfPlugin
from batchsched.plugins.nodegroup import NodeGroupPlugin
from batchsched.plugins.nodeorder import NodeOrderPlugin
from batchsched.plugins.overcommit import DEFAULT_OVERCOMMIT_FACTOR, OvercommitPlugin
from batchsched.plugins.predicates import PredicatesPlugin
from batchsched.plugins.proportion import ProportionPlugin
from batchsched.plugins.sla import SlaPlugin


@pytest.mark.parametrize(("factory", "arguments", "kept", "logged"), [
    (CapacityPlugin, {"ancestorReclaimLevel": "two"}, ("ancestor_reclaim_level", 0),
     "plugin 'capacity': argument 'ancestorReclaimLevel' = 'two' is not an integer; using 0"),
    # Volcano's GetInt reads YAML integers only: neither "1" nor 1.0 is one.
    (CapacityPlugin, {"ancestorReclaimLevel": "1"}, ("ancestor_reclaim_level", 0),
     "plugin 'capacity': argument 'ancestorReclaimLevel' = '1' is not an integer; using 0"),
    (CapacityPlugin, {"ancestorReclaimLevel": 1.0}, ("ancestor_reclaim_level", 0),
     "plugin 'capacity': argument 'ancestorReclaimLevel' = 1.0 is not an integer; using 0"),
    (OvercommitPlugin, {"overcommit-factor": "lots"}, ("factor", DEFAULT_OVERCOMMIT_FACTOR),
     "plugin 'overcommit': argument 'overcommit-factor' = 'lots' is not a number; using 1.2"),
    (OvercommitPlugin, {"overcommit-factor": 0.5}, ("factor", DEFAULT_OVERCOMMIT_FACTOR),
     "plugin 'overcommit': argument 'overcommit-factor' = 0.5 is not at least 1; using 1.2"),
    (NodeGroupPlugin, {"strict": "maybe"}, ("strict", True),
     "plugin 'nodegroup': argument 'strict' = 'maybe' is not true or false; using True"),
    (SlaPlugin, {"sla-waiting-time": 3600}, ("waiting_time", None),
     "plugin 'sla': argument 'sla-waiting-time' = 3600 is not a Go duration"),
    (SlaPlugin, {"sla-waiting-time": "-1m"}, ("waiting_time", None),
     "plugin 'sla': argument 'sla-waiting-time' = '-1m' is not a positive duration"),
    (DrfPlugin, {"drf.weight": 2}, None,
     "plugin 'drf': ignoring argument(s) 'drf.weight' (it reads: no arguments)"),
    (ProportionPlugin, {"weight": 2}, None,
     "plugin 'proportion': ignoring argument(s) 'weight'"),
    # Volcano's GetString (or a .(string) assertion) reads YAML strings only.
    (DeviceSharePlugin, {"deviceshare.VGPUEnable": True, "deviceshare.KnownGeometriesCMName": 123},
     ("config_map_name", "volcano-vgpu-device-config"),
     "plugin 'deviceshare': argument 'deviceshare.KnownGeometriesCMName' = 123 is not a "
     "string; using 'volcano-vgpu-device-config'"),
    (BinpackPlugin, {"binpack.resources": True}, None,
     "plugin 'binpack': argument 'binpack.resources' = True is not a string; using ''"),
    # These three said "arguments" instead of the plugin's name.
    (BinpackPlugin, {"binpack.weight": "10"}, None,
     "plugin 'binpack': argument 'binpack.weight' = '10' is not an integer; using 1"),
    (NodeOrderPlugin, {"leastrequested.weight": "2"}, None,
     "plugin 'nodeorder': argument 'leastrequested.weight' = '2' is not an integer"),
    (PredicatesPlugin, {"predicate.NodeAffinityEnable": "maybe"}, None,
     "plugin 'predicates': argument 'predicate.NodeAffinityEnable' = 'maybe' is not true or "
     "false; using True"),
    (CapacityPlugin, {"ancestorReclaimLevl": 2}, ("ancestor_reclaim_level", 0),
     "plugin 'capacity': ignoring argument(s) 'ancestorReclaimLevl' "
     "(it reads: ancestorReclaimLevel, "),
])
def test_an_unreadable_argument_falls_back_with_a_warning(
    caplog: pytest.LogCaptureFixture, factory: Any, arguments: dict[str, Any],
    kept: tuple[str, Any] | None, logged: str,
) -> None:
    with caplog.at_level("WARNING", logger="batchsched"):
        plugin = factory(Arguments(arguments))
    if kept is not None:
        attribute, fallback = kept
        assert getattr(plugin, attribute) == fallback
    assert logged in caplog.text


@pytest.mark.parametrize(("factory", "arguments"), [
    (CapacityPlugin, {"ancestorReclaimLevel": 2}),
    (OvercommitPlugin, {"overcommit-factor": 2}),
    (NodeGroupPlugin, {"strict": "false", "enablePreferredOrder": True}),
    (SlaPlugin, {"sla-waiting-time": "1h"}),
    (DrfPlugin, {}),
])
def test_readable_arguments_log_nothing(
    caplog: pytest.LogCaptureFixture, factory: Any, arguments: dict[str, Any]
) -> None:
    with caplog.at_level("WARNING", logger="batchsched"):
        factory(Arguments(arguments))
    assert caplog.text == ""


def test_getters_without_an_owner_still_warn(caplog: pytest.LogCaptureFixture) -> None:
    args = Arguments({"n": 1.5, "flag": 3, "d": "soon", "f": True})
    with caplog.at_level("WARNING", logger="batchsched"):
        assert args.get_int("n", 7) == 7
        assert args.get_bool("flag", False) is False
        assert args.get_duration("d", 60.0) == 60.0
        assert args.get_float("f", 1.0) == 1.0
        assert args.get_int("missing", 3) == 3
    assert caplog.text.count("arguments: argument") == 4


def test_unread_arguments_are_reported_once_per_process(
        caplog: pytest.LogCaptureFixture) -> None:
    """A plugin is built for every session: a replay of thousands of sessions reports
    a typo once, and ``batchsched conf validate`` still sees it."""
    from batchsched.framework.arguments import collect_warnings

    with caplog.at_level("WARNING", logger="batchsched"):
        for _ in range(3):
            DrfPlugin(Arguments({"drf.typo": 1}))
    assert caplog.text.count("ignoring argument(s) 'drf.typo'") == 1
    with collect_warnings() as said:
        DrfPlugin(Arguments({"drf.typo": 1}))
    assert any("'drf.typo'" in line for line in said)


@pytest.mark.parametrize(("value", "read"), [
    ("1", True), ("t", True), ("T", True), ("TRUE", True), ("true", True), ("True", True),
    ("0", False), ("f", False), ("F", False), ("FALSE", False), ("false", False),
    ("False", False), (True, True), (False, False),
    # Go's strconv.ParseBool refuses these: Volcano keeps the default.
    ("yes", None), ("no", None), ("tRUE", None), (" true", None), ("on", None), (1, None),
])
def test_switches_read_strings_as_volcano_s_get_bool_does(value: object, read: bool | None,
                                                          caplog: pytest.LogCaptureFixture
                                                          ) -> None:
    for default in (False, True):
        with caplog.at_level("WARNING", logger="batchsched"):
            got = Arguments({"switch": value}).get_bool("switch", default, owner="demo")
        assert got is (default if read is None else read)
    assert ("is not true or false" in caplog.text) is (read is None)

