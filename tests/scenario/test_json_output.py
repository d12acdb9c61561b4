"""The CLI's JSON writer is json.dumps(obj, indent=1), byte for byte, on any object."""

from __future__ import annotations

import collections
import enum
import io
import json
import math
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from batchsched.cli import main
from batchsched.framework.registry import Registry
from batchsched.scenario import json_output, load_scenario, run_scenario, scenario_files
from batchsched.scenario.json_output import decision_pieces, dumps_decisions

CONFORMANCE = Path(__file__).parent.parent / "conformance"


def same_as_json(obj: Any) -> None:
    expected = json.dumps(obj, indent=1)
    assert dumps_decisions(obj) == expected
    # The CLI writes the text in pieces of a few thousand members; two here, so that
    # small objects are cut too.
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(json_output, "_PIECE_MEMBERS", 2)
        assert "".join(decision_pieces(obj)) == expected
        out = io.StringIO()
        json_output.write_decisions(obj, out)
        assert out.getvalue() == expected


# -- decision-shaped objects ---------------------------------------------------------------------

# Every code point, lone surrogates, quotes, backslashes and control characters included.
texts = st.text(st.characters(exclude_categories=()), max_size=12)
short_texts = st.one_of(
    texts, st.sampled_from(["", '"', "\\", "\n", "\u00e9", "\ud800", "\U0001f600"]))
str_maps = st.dictionaries(short_texts, short_texts, max_size=6)
count_maps = st.dictionaries(short_texts, st.integers(), max_size=4)
score_maps = st.dictionaries(short_texts, st.floats(), max_size=4)  # NaN, infinities, -0.0

decisions = st.fixed_dictionaries(
    {
        "binds": str_maps,
        "evicted": st.lists(short_texts, max_size=5),
        "pipelined": st.dictionaries(short_texts, str_maps, max_size=3),
        "podGroupPhases": str_maps,
        "taskStatusCounts": st.dictionaries(short_texts, count_maps, max_size=4),
        "events": st.lists(str_maps, max_size=4),
        "bindFailures": st.lists(short_texts, max_size=3),
        "nominated": str_maps,
        "gpuDevices": st.dictionaries(short_texts, st.lists(st.integers(0, 7), max_size=4),
                                      max_size=3),
        "queueStatus": st.dictionaries(short_texts, st.fixed_dictionaries(
            {"allocated": str_maps, "podGroups": count_maps}), max_size=3),
    },
    optional={"scores": st.dictionaries(short_texts, score_maps, max_size=4)},
)


@settings(max_examples=300)
@given(decisions)
def test_decision_shaped_objects(obj: dict[str, Any]) -> None:
    same_as_json(obj)


def test_the_decisions_shape_is_written_by_the_fast_writer(monkeypatch: pytest.MonkeyPatch
                                                           ) -> None:
    """The whole decisions object (queueStatus's four levels included) never falls
    back to json.dumps, whose indent=1 output costs far more memory on large runs."""
    def no_fallback(*args: Any, **kwargs: Any) -> str:
        raise AssertionError("fell back to json.dumps")

    obj = {"binds": {"a/b": "n1"}, "queueStatus": {"q": {"allocated": {"cpu": "1"},
                                                         "podGroups": {"Running": 1}}}}
    expected = json.dumps(obj, indent=1)
    monkeypatch.setattr(json_output.json, "dumps", no_fallback)
    assert dumps_decisions(obj) == expected


# -- anything else: other scalars, subclasses, other shapes ---------------------------------------


class Phase(str, enum.Enum):
    RUNNING = "Running"


class Level(enum.IntEnum):
    HIGH = 7


class Ratio(float):
    pass


class Tagged(dict[str, Any]):
    pass


scalars = st.one_of(
    short_texts, st.integers(), st.floats(), st.booleans(), st.none(),
    st.sampled_from([Phase.RUNNING, Level.HIGH, Ratio(0.5), Ratio(math.inf), 10**40]),
)
keys = st.one_of(short_texts, short_texts, st.integers(), st.floats(), st.booleans(), st.none(),
                 st.just(Phase.RUNNING))
anything = st.recursive(
    scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4),
        st.lists(inner, max_size=3).map(tuple),
        st.dictionaries(keys, inner, max_size=4),
        st.dictionaries(short_texts, inner, max_size=3).map(Tagged),
    ),
    max_leaves=30,
)


@settings(max_examples=500)
@given(anything)
def test_any_json_value(obj: Any) -> None:
    same_as_json(obj)


@pytest.mark.parametrize(
    "obj",
    [
        {}, [], "", 0, None, {"a": {}}, {"a": []}, {"a": [[]]}, {"a": {"b": {"c": {}}}},
        {"a": {"b": {"c": {"d": 1}}}},  # deeper than the decisions: json.dumps writes it
        {"a": ["x", 1, "y"]}, {"a": {"x": "y", "z": 2}}, {"a": {"x": 2, "z": "y"}},
        {"a": ["x", Phase.RUNNING]}, {"a": {"x": Phase.RUNNING}}, {"a": {Phase.RUNNING: "x"}},
        {"a": {"x": "y", 1: "z"}}, {"a": [True, False, None, -0.0, 1e300, math.nan]},
        {"scores": {"t": {"n1": math.inf, "n2": -math.inf, "n3": math.nan, "n4": 5e-324}}},
        # lists of maps (the events), with members of every other kind among them
        {"e": [{"a": "b"}, {"a": 1}]}, {"e": [{"a": "b"}, "x", None, [], {}]},
        {"e": [{"a": "b"}, {1: "x"}]}, {"e": [{"a": "b"}, {"a": Phase.RUNNING}]},
        {"e": [{"a": "b"}, collections.OrderedDict(a="b")]}, {"e": [{"a": {"b": "c"}}]},
        {"e": {"f": [{"a": "b"}]}}, {"e": {"f": {"g": [{"a": "b"}]}}},
    ],
)
def test_edge_cases(obj: Any) -> None:
    same_as_json(obj)


@settings(max_examples=50)
@given(decisions)
def test_decision_shaped_objects_need_no_fallback(obj: dict[str, Any]) -> None:
    def no_fallback(*args: Any, **kwargs: Any) -> str:
        raise AssertionError("the writer handed a decision-shaped object to json.dumps")

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(json_output.json, "dumps", no_fallback)
        text = dumps_decisions(obj)
    assert text == json.dumps(obj, indent=1)


def test_errors_are_json_errors() -> None:
    looped: dict[str, Any] = {}
    looped["self"] = {"again": looped}
    with pytest.raises(ValueError, match="Circular reference detected"):
        dumps_decisions(looped)
    with pytest.raises(TypeError, match="Object of type set is not JSON serializable"):
        dumps_decisions({"binds": {"t": {"n"}}})
    # In pieces, a bad value in a late piece still fails before anything is written.
    out = io.StringIO()
    with pytest.raises(TypeError, match="Object of type set is not JSON serializable"):
        json_output.write_decisions({"binds": {f"t{i}": "n" for i in range(10_000)},
                                     "evicted": [{"n"}]}, out)
    assert out.getvalue() == ""


# -- real decisions --------------------------------------------------------------------------------

_registry = Registry(autoload=False)


def _runnable(path: Path) -> bool:
    configuration = load_scenario(path).configuration
    return all(a in _registry.actions for a in configuration.actions) and all(
        p in _registry.plugins for p in configuration.plugin_names())


FILES = [p for p in scenario_files(CONFORMANCE) if _runnable(p)]


@pytest.mark.parametrize("path", FILES, ids=[str(p.relative_to(CONFORMANCE)) for p in FILES])
def test_conformance_scenarios(path: Path) -> None:
    decisions = run_scenario(load_scenario(path), scores=True, registry=_registry, consume=True)
    same_as_json(decisions.to_json())


def test_cli_writes_json_dumps_text(capsys: pytest.CaptureFixture[str]) -> None:
    path = CONFORMANCE / "capacity-card" / "card-02-allocate-stops-at-quota.yaml"
    assert main(["run", str(path), "--output", "json", "--scores"]) == 0
    out = capsys.readouterr().out
    assert out == json.dumps(json.loads(out), indent=1) + "\n"
    assert json.loads(out)["binds"]


def test_large_sections_in_pieces() -> None:
    obj = {"binds": {f"ns/t{i}": f"n{i % 7}" for i in range(10_000)},
           "events": [{"object": f"ns/t{i}", "message": "x"} for i in range(9_000)],
           "evicted": []}
    out = io.StringIO()
    json_output.write_decisions(obj, out)
    assert out.getvalue() == json.dumps(obj, indent=1)
    assert len(decision_pieces(obj)) > 6  # cut, not written whole


def test_pieces_are_written_as_they_are_encoded() -> None:
    """The CLI's output is never held whole: each piece is written before the next
    is encoded (100,000 pod groups print about 60 MB)."""
    obj = {"binds": {f"ns/t{i}": "n" for i in range(10_000)}, "evicted": ["ns/t0"]}
    encoded = 0
    written: list[int] = []
    real = json_output._dict_members

    def counting(mapping: dict[Any, Any], depth: int) -> list[str]:
        nonlocal encoded
        encoded += 1
        return real(mapping, depth)

    class Out(io.StringIO):
        def write(self, text: str) -> int:
            written.append(encoded)
            return super().write(text)

    out = Out()
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(json_output, "_dict_members", counting)
        json_output.write_decisions(obj, out)
    assert out.getvalue() == json.dumps(obj, indent=1)
    # The first chunk of binds is written before the second is encoded.
    assert 1 in written and written.index(1) < written.index(2)


def _event_section(events: list[Any]) -> str:
    from batchsched.framework.events import EVENT_FIELDS, RecordedEvent
    out = io.StringIO()
    json_output.write_decisions({"binds": {}, "events": json_output.MappedMembers(
        events, RecordedEvent.to_dict, fields=EVENT_FIELDS)}, out)
    return out.getvalue()


@settings(max_examples=50, deadline=None)
@given(st.lists(st.tuples(*[st.text()] * 4), max_size=9000))
def test_events_written_from_their_fields_are_json_s_text_of_their_maps(
        fields: list[tuple[str, str, str, str]]) -> None:
    from batchsched.framework.events import RecordedEvent
    events = [RecordedEvent(*f) for f in fields]
    assert _event_section(events) == json.dumps(
        {"binds": {}, "events": [e.to_dict() for e in events]}, indent=1)


def test_an_event_field_that_is_no_string_is_written_as_json_writes_it() -> None:
    from batchsched.framework.events import RecordedEvent
    events = [RecordedEvent("a", "Normal", "R", "m"), RecordedEvent("b", "Warning", "R", 7)]  # type: ignore[arg-type]
    assert _event_section(events) == json.dumps(
        {"binds": {}, "events": [e.to_dict() for e in events]}, indent=1)


def test_members_made_from_one_field_are_json_s_text_of_their_maps() -> None:
    import attrs as _attrs

    @_attrs.frozen
    class Named:
        name: str

        def to_dict(self) -> dict[str, str]:
            return {"name": self.name}

    items = [Named("a"), Named("bb"), Named("é")]
    out = io.StringIO()
    json_output.write_decisions({"binds": {}, "events": json_output.MappedMembers(
        items, Named.to_dict, fields=("name",))}, out)
    assert out.getvalue() == json.dumps(
        {"binds": {}, "events": [item.to_dict() for item in items]}, indent=1)


def test_members_without_the_fields_are_written_through_convert() -> None:
    import attrs as _attrs

    @_attrs.frozen
    class Named:
        name: str

    class Bare:
        pass

    def convert(item: Any) -> dict[str, str]:
        return {"name": getattr(item, "name", "?")}

    items = [Named("a"), Bare()]
    out = io.StringIO()
    json_output.write_decisions({"binds": {}, "events": json_output.MappedMembers(
        items, convert, fields=("name",))}, out)
    assert out.getvalue() == json.dumps(
        {"binds": {}, "events": [convert(item) for item in items]}, indent=1)
