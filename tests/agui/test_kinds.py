"""Tests of agentproto.agui._protocol.kinds: the event tables read from the generated code."""

from __future__ import annotations

import typing

from agentproto.agui import schema
from agentproto.agui._protocol import kinds as _kinds
from tests.agui.synthetic import FutureEvent


def test_event_classes_are_the_generated_union_by_type_tag() -> None:
    """Every member of the Event union is listed under its type const, and nothing else."""
    assert set(_kinds.EVENT_CLASSES.values()) == set(typing.get_args(schema.Event))
    for tag, cls in _kinds.EVENT_CLASSES.items():
        assert _kinds.event_type(cls) == tag
    assert set(schema.ENUM_VALUES["EventType"]) == _kinds.EVENT_TYPES


def test_event_type_reads_the_tag_of_any_event_class() -> None:
    """A class with a type const is an event class; other objects are not."""
    assert _kinds.event_type(FutureEvent) == "FUTURE_EVENT"
    assert _kinds.event_type(schema.UserMessage) is None
    assert _kinds.event_type(dict) is None


def test_lane_categories_do_not_overlap() -> None:
    """An event type closes every lane, its own lane, or none: never two of these."""
    sets = (_kinds.CLOSES_EVERY_LANE, _kinds.CLOSES_OWN_LANE, _kinds.CLOSES_NO_LANE)
    assert sum(len(s) for s in sets) == len(frozenset().union(*sets))
    assert not _kinds.CHUNK_TYPES & frozenset().union(*sets)


def test_attribution_is_read_from_the_schema_fields() -> None:
    """ATTRIBUTED: the types with a subagentRunId, except those it identifies an invocation in."""
    assert "TEXT_MESSAGE_START" in _kinds.ATTRIBUTED
    assert "RUN_STARTED" not in _kinds.ATTRIBUTED
    assert not _kinds.ATTRIBUTED & _kinds.SUBAGENT_LIFECYCLE


def test_families_name_their_id_field_on_every_event() -> None:
    """Each family's id attribute exists on its START, continuations and chunk."""
    for family in _kinds.FAMILIES.values():
        for tag in (family.start, *family.continuations, family.chunk):
            if tag is not None:
                assert _kinds.attribute(_kinds.EVENT_CLASSES[tag], family.id_wire) == (
                    family.id_attr
                )
