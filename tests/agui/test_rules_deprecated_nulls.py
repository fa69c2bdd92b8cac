"""Retired whole-field nulls at the compatibility boundary (issue 10, rule 1).

The closed list is the upstream deprecation registry's (DEPRECATIONS.md); each row
applies until its expiry date and not a day longer.
"""

from __future__ import annotations

from datetime import date
from typing import Any

import attrs
import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentproto import SchemaError
from agentproto._core.wire.converter import STRICT, Context
from agentproto.agui import Consumer
from agentproto.agui import _generated as g
from agentproto.agui._protocol.compat import NULL_RETIREMENTS, CompatibilityBoundary
from agentproto.agui._protocol.kinds import EVENT_CLASSES
from agentproto.agui._protocol.wire import CONVERTER
from tests.strategies import instances

START = {"type": "RUN_STARTED", "threadId": "t", "runId": "r"}
FINISH = {"type": "RUN_FINISHED", "threadId": "t", "runId": "r"}


def _codes(consumer: Consumer) -> list[str]:
    return [d.code for d in consumer.diagnostics]


def _both_ways(events: list[dict[str, Any]]) -> Consumer:
    """A consumer fed ``events`` as JSON, after checking that one fed them as SSE bytes
    (where the decoder loads the common events without the boundary, unless their
    loader refuses them) delivers and reports the same."""
    by_json, by_bytes = Consumer(), Consumer()
    delivered = by_json.feed_all(events)
    sse = b"".join(b"data: " + orjson.dumps(event) + b"\n\n" for event in events)
    assert by_bytes.feed_bytes(sse) == delivered
    assert by_bytes.diagnostics == by_json.diagnostics
    return by_json


@pytest.mark.parametrize(
    ("event", "path"),
    [
        ({**FINISH, "outcome": None}, "/outcome"),
        ({**FINISH, "result": None}, "/result"),
        ({**FINISH, "rawEvent": None}, "/rawEvent"),
    ],
)
def test_a_listed_null_on_run_finished_reads_as_absent_with_one_warning(
    event: dict[str, Any], path: str
) -> None:
    """RUN_FINISHED.outcome / result / rawEvent null: the run succeeds, one warning each."""
    consumer = _both_ways([START, event])
    consumer.close()
    assert consumer.verifier.runs[-1].succeeded
    found = [d for d in consumer.diagnostics if d.code == "compat.deprecated-null"]
    assert [(d.path, d.index) for d in found] == [(path, 1)]


def test_tool_call_parent_null_reads_as_absent_for_start_and_chunk() -> None:
    """TOOL_CALL_START / TOOL_CALL_CHUNK parentMessageId null is an absent parent."""
    consumer = _both_ways(
        [
            START,
            {
                "type": "TOOL_CALL_START",
                "toolCallId": "c1",
                "toolCallName": "f",
                "parentMessageId": None,
            },
            {"type": "TOOL_CALL_END", "toolCallId": "c1"},
            {
                "type": "TOOL_CALL_CHUNK",
                "toolCallId": "c2",
                "toolCallName": "f",
                "parentMessageId": None,
                "delta": "{}",
            },
            FINISH,
        ]
    )
    consumer.close()
    assert _codes(consumer).count("compat.deprecated-null") == 2
    assert consumer.conversation.tool_call("c1") is not None
    assert consumer.conversation.tool_call("c2") is not None


def test_nested_listed_nulls_in_run_started_input_and_snapshots() -> None:
    """Nulls the list names inside RUN_STARTED.input and MESSAGES_SNAPSHOT are stripped."""
    image = {"type": "image", "source": {"type": "url", "value": "https://x"}, "metadata": None}
    run_input = {
        "threadId": "t",
        "runId": "r",
        "messages": [{"id": "u", "role": "user", "content": [image]}],
        "tools": [{"name": "f", "description": "d", "parameters": None}],
        "forwardedProps": None,
        "resume": [{"interruptId": "i", "status": "cancelled", "payload": None}],
    }
    consumer = _both_ways(
        [
            {**START, "input": run_input},
            {"type": "MESSAGES_SNAPSHOT", "messages": run_input["messages"]},
            {"type": "SUBAGENT_STARTED", "subagentRunId": "s", "name": "n"},
            {"type": "SUBAGENT_FINISHED", "subagentRunId": "s", "result": None},
            FINISH,
        ]
    )
    consumer.close()
    paths = [d.path for d in consumer.diagnostics if d.code == "compat.deprecated-null"]
    assert paths == [
        "/input/forwardedProps",
        "/input/messages/0/content/0/metadata",
        "/input/tools/0/parameters",
        "/input/resume/0/payload",
        "/messages/0/content/0/metadata",
        "/result",
    ]
    assert consumer.verifier.runs[-1].succeeded


def test_the_callers_event_is_not_changed() -> None:
    """The boundary copies on write: the dict fed in keeps its null."""
    event = {**FINISH, "outcome": None}
    consumer = Consumer()
    consumer.feed_all([START, event])
    assert event == {**FINISH, "outcome": None}


@pytest.mark.parametrize(
    "event",
    [
        {**FINISH, "usage": None},  # not on the list
        {**START, "parentRunId": None},  # named by the registry as still invalid
        {**START, "metadata": None},  # event metadata: still invalid
    ],
)
def test_a_null_the_list_does_not_name_stays_fatal(event: dict[str, Any]) -> None:
    """Only the listed fields are tolerated; any other whole-field null is malformed."""
    consumer = Consumer()
    with pytest.raises(SchemaError):
        consumer.feed_all([START, event] if event["type"] != "RUN_STARTED" else [event])


def test_a_null_that_is_a_value_is_untouched() -> None:
    """A null under a metadata key, as CUSTOM.value or inside RAW.event is data."""
    consumer = Consumer()
    consumer.feed_all(
        [
            START,
            {"type": "CUSTOM", "name": "n", "value": None},
            {"type": "RAW", "event": {"rawEvent": None, "outcome": None}},
            {"type": "TEXT_MESSAGE_START", "messageId": "m", "metadata": {"k": None}},
            {"type": "TEXT_MESSAGE_END", "messageId": "m"},
            FINISH,
        ]
    )
    assert "compat.deprecated-null" not in _codes(consumer)
    assert consumer.conversation.messages[0].metadata == {"k": None}


def test_a_row_expires_the_day_after_its_date() -> None:
    """On the expiry date the null is still read as absent; the day after, it is left
    for enforcement, which rejects it."""
    outcome_expiry = next(d for c, w, d in NULL_RETIREMENTS if w == "outcome")
    event = {**FINISH, "outcome": None}
    on_the_day = CompatibilityBoundary(today=lambda: outcome_expiry)
    found: list[Any] = []
    assert on_the_day.translate(event, found) == FINISH
    assert [d.code for d in found] == ["compat.deprecated-null"]
    after = CompatibilityBoundary(today=lambda: date.fromordinal(outcome_expiry.toordinal() + 1))
    found = []
    assert after.translate(event, found) is event
    assert found == []


def test_every_row_names_an_optional_field_of_the_generated_schema() -> None:
    """The published list, checked against the generated classes."""
    for definition, wire, _ in NULL_RETIREMENTS:
        owners = (
            [
                c
                for c in EVENT_CLASSES.values()
                if any(f.metadata.get("wire") == wire for f in attrs.fields(c))
            ]
            if definition is None
            else [getattr(g, definition)]
        )
        assert owners, (definition, wire)
        for cls in owners:
            field = next(f for f in attrs.fields(cls) if f.metadata.get("wire") == wire)
            assert not field.metadata["required"]


def _owners(definition: str | None, wire: str) -> list[type]:
    if definition is not None:
        return [getattr(g, definition)]
    return [
        c
        for c in EVENT_CLASSES.values()
        if any(f.metadata.get("wire") == wire for f in attrs.fields(c))
    ]


ROWS = [
    (cls, wire) for definition, wire, _ in NULL_RETIREMENTS for cls in _owners(definition, wire)
]


@pytest.mark.parametrize(("cls", "wire"), ROWS, ids=lambda v: getattr(v, "__name__", v))
@settings(max_examples=10, deadline=None)
@given(data=st.data())
def test_the_schema_refuses_every_retired_null(cls: type, wire: str, data: st.DataObject) -> None:
    """Each retired null stands where the current schema refuses a null (what lets the
    decoder load an event of these types without the boundary, and send it there only
    when its loader refuses it)."""
    document = CONVERTER.dump(data.draw(instances(cls, g)))
    document[wire] = None
    for ctx in (STRICT, Context([])):
        with pytest.raises(SchemaError):
            CONVERTER.loader(cls)(document, "", ctx)
