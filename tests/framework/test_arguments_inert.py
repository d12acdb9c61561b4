"""A switch a Volcano user turns on, that batchsched cannot honour yet, is said, never silent."""

from __future__ import annotations

import logging
import threading

import pytest

from batchsched.framework import arguments as arguments_module
from batchsched.framework.arguments import Arguments, collect_warnings, parse_duration
from batchsched.plugins.nodeorder import NodeOrderPlugin
from batchsched.plugins.predicates import PredicatesPlugin


@pytest.fixture(autouse=True)
def _fresh() -> None:
    arguments_module._WARNED_INERT.clear()


def test_an_enabled_volume_switch_is_reported_once(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with caplog.at_level(logging.WARNING, logger="batchsched"):
        PredicatesPlugin(Arguments({"predicate.VolumeZoneEnable": True,
                                    "predicate.VolumeBindingEnable": "true"}))
        PredicatesPlugin(Arguments({"predicate.VolumeBindingEnable": "true"}))
    messages = [r.getMessage() for r in caplog.records]
    assert len(messages) == 2
    assert any("predicate.VolumeZoneEnable=True has no effect" in m for m in messages)
    assert any("predicate.VolumeBindingEnable='true' has no effect" in m for m in messages)


def test_a_switch_turned_off_or_left_out_says_nothing(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="batchsched"):
        PredicatesPlugin(Arguments({"predicate.VolumeZoneEnable": False}))
        NodeOrderPlugin(Arguments({"podtopologyspread.weight": 0}))
        NodeOrderPlugin(Arguments({}))
    assert caplog.records == []


def test_topology_spread_switches_are_honoured_not_reported(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Topology spread constraints are modelled now (tests/kube/test_topology_spread.py)."""
    with caplog.at_level(logging.WARNING, logger="batchsched"):
        PredicatesPlugin(Arguments({"predicate.PodTopologySpreadEnable": True}))
        NodeOrderPlugin(Arguments({"podtopologyspread.weight": 3}))
    assert caplog.records == []


def test_collecting_warnings_leaves_the_once_per_process_memory_as_it_was(
        caplog: pytest.LogCaptureFixture) -> None:
    switch = {"demo.Collected": "why"}
    with collect_warnings() as said:
        Arguments({"demo.Collected": True}).warn_inert("demo-collect", switch)
    assert said == ["plugin 'demo-collect': demo.Collected=True has no effect: why"]
    with caplog.at_level(logging.WARNING, logger="batchsched"):
        Arguments({"demo.Collected": True}).warn_inert("demo-collect", switch)
    assert "demo.Collected=True has no effect" in caplog.text  # still logged once, after


def test_collections_nest_and_leave_other_threads_alone(
        caplog: pytest.LogCaptureFixture) -> None:
    logger = logging.getLogger("batchsched")
    seen_elsewhere: list[bool] = []

    def elsewhere() -> None:
        logger.warning("from another thread")
        seen_elsewhere.append(True)

    with caplog.at_level(logging.WARNING, logger="batchsched"):
        with collect_warnings() as outer:
            logger.warning("outer")
            with collect_warnings() as inner:
                logger.warning("inner")
            thread = threading.Thread(target=elsewhere)
            thread.start()
            thread.join()
        logger.warning("after")
    assert (outer, inner) == (["outer"], ["inner"])
    assert seen_elsewhere and "from another thread" in caplog.text
    assert "after" in caplog.text and "outer" not in caplog.text
    assert logger.propagate


@pytest.mark.parametrize(("text", "seconds"), [
    ("1h2m3s", 3723.0), ("-90s", -90.0), ("0", 0.0), ("1.5m", 90.0), ("300ms", 0.3),
])
def test_go_durations(text: str, seconds: float) -> None:
    assert parse_duration(text) == pytest.approx(seconds)


@pytest.mark.parametrize("text", [" 10m", "10m ", "10", "", "-", "1x", "1h 2m"])
def test_what_go_refuses_is_refused(text: str) -> None:
    """Go's time.ParseDuration refuses spaces and bare numbers: so does batchsched
    (a cooldown or a waiting time written " 10m" is not one, as in Volcano)."""
    with pytest.raises(ValueError, match="invalid duration"):
        parse_duration(text)


def test_a_duration_past_int64_nanoseconds_does_not_read() -> None:
    """Go's ParseDuration overflows past about 292 years."""
    assert parse_duration("2562047h") == 2562047 * 3600
    with pytest.raises(ValueError, match="overflows"):
        parse_duration("2562048h")


@pytest.mark.parametrize(("getter", "default"), [
    ("get_int", 3), ("get_float", 1.5), ("get_bool", True), ("get_str", "x"),
    ("get_duration", 30.0),
])
def test_an_argument_written_without_a_value_keeps_the_default_and_is_said(
    getter: str, default: object,
) -> None:
    """``key:`` with nothing after it is YAML's null: Volcano's getters warn ("Could not
    parse argument: <nil>") and keep the default; so do these, naming plugin and key."""
    arguments = Arguments({"weight": None})
    with collect_warnings() as said:
        assert getattr(arguments, getter)("weight", default, owner="demo") == default
        assert getattr(arguments, getter)("absent", default, owner="demo") == default
    assert len(said) == 1
    assert said[0].startswith("plugin 'demo': argument 'weight' has no value")


def test_an_unreadable_value_is_said_once_per_process(caplog: pytest.LogCaptureFixture) -> None:
    """A plugin is built for every session (thousands in a replay): its unreadable
    argument is said the first time, not at every session."""
    arguments_module._WARNED_UNREADABLE.clear()
    with caplog.at_level(logging.WARNING, logger="batchsched"):
        for _ in range(3):
            Arguments({"seed": "abc"}).get_int("seed", 0, owner="gpu-random")
        Arguments({"seed": "abd"}).get_int("seed", 0, owner="gpu-random")
    assert [r.getMessage().split(" = ")[1][:5] for r in caplog.records] == ["'abc'", "'abd'"]
