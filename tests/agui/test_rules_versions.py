"""Version declarations and the reserved metadata key (issue 10, rules 6 and 9)."""

from __future__ import annotations

from typing import Any

import pytest

from agentproto import UsageError
from agentproto.agui import Conversation, RunProducer
from agentproto.agui._thread.run_input import dump_run_input, next_run_input
from agentproto.agui.schema import (
    Interrupt,
    RunAgentInput,
    RunFinishedInterruptOutcome,
    TextPart,
    UserMessage,
)

INPUT: dict[str, Any] = {"threadId": "t", "runId": "r", "messages": []}


@pytest.mark.parametrize("version", ["draft", "1", "1.0.0", "v1.0", ""])
def test_next_run_input_never_declares_what_is_not_major_minor(version: str) -> None:
    """ "draft" (or anything not MAJOR.MINOR) is never declared by a consumer."""
    with pytest.raises(UsageError) as info:
        next_run_input(Conversation(), thread_id="t", run_id="r", protocol_version=version)
    assert info.value.code == "version.not-declarable"


def test_next_run_input_declares_a_published_version() -> None:
    """1.0 (ours), another MAJOR.MINOR, or nothing at all are declarable."""
    for version in ("1.0", "1.1", None):
        built = next_run_input(Conversation(), thread_id="t", run_id="r", protocol_version=version)
        assert built.protocol_version == version


def test_dump_run_input_refuses_a_hand_built_draft_declaration() -> None:
    """A typed input declaring "draft" is refused before anything is sent."""
    typed = RunAgentInput(thread_id="t", run_id="r", messages=[], protocol_version="draft")
    with pytest.raises(UsageError) as info:
        dump_run_input(typed)
    assert info.value.code == "version.not-declarable"


def test_run_started_never_declares_draft_and_the_producer_stays_usable() -> None:
    """RunProducer refuses RUN_STARTED declaring "draft", helper or wire dict alike."""
    producer = RunProducer(INPUT)
    with pytest.raises(UsageError) as info:
        producer.run_started(protocol_version="draft")
    assert info.value.code == "version.not-declarable"
    with pytest.raises(UsageError):
        producer.emit(
            {"type": "RUN_STARTED", "threadId": "t", "runId": "r", "protocolVersion": "draft"}
        )
    assert producer.failure is None and not producer.events
    assert producer.run_started().protocol_version == "1.0"


@pytest.mark.parametrize(
    ("declared", "code"),
    [
        ("1.1", "version.newer"),
        ("1.10", "version.newer"),
        ("2.0", "version.newer"),
        ("draft", "version.uninterpretable"),
    ],
)
def test_a_producer_serves_a_newer_or_odd_consumer_version_and_warns(
    declared: str, code: str
) -> None:
    """A newer minor of the line is served, answered with our own version, and warned of."""
    producer = RunProducer({**INPUT, "protocolVersion": declared})
    assert [d.code for d in producer.diagnostics] == [code]
    assert producer.run_started().protocol_version == "1.0"
    producer.run_finished()
    producer.close()


def test_a_producer_is_quiet_for_its_own_or_an_older_version() -> None:
    """1.0, 0.9 or no declaration at all need no warning."""
    for extra in ({"protocolVersion": "1.0"}, {"protocolVersion": "0.9"}, {}):
        assert RunProducer({**INPUT, **extra}).diagnostics == []


def _started() -> RunProducer:
    producer = RunProducer(INPUT)
    producer.run_started()
    return producer


def test_the_reserved_metadata_key_is_refused_on_an_event() -> None:
    """metadata {"ag-ui": ...} on an event is refused, and nothing is emitted."""
    producer = _started()
    with pytest.raises(UsageError) as info:
        producer.text_message_start("m", metadata={"ag-ui": {"x": 1}})
    assert info.value.code == "producer.reserved-metadata-key"
    assert "/metadata" in str(info.value)
    assert producer.failure is None
    assert len(producer.drain()) == 1  # RUN_STARTED only


def test_the_reserved_metadata_key_is_refused_inside_what_the_producer_builds() -> None:
    """Content-part and interrupt metadata are metadata objects too."""
    producer = _started()
    call = producer.tool_call("f")
    call.end()
    with pytest.raises(UsageError) as info:
        producer.tool_result(call.tool_call_id, [TextPart(text="x", metadata={"ag-ui": 1})])
    assert info.value.code == "producer.reserved-metadata-key"
    assert "/content/0/metadata" in str(info.value)
    interrupt = Interrupt(id="i", reason="r", metadata={"ag-ui": True})
    with pytest.raises(UsageError):
        producer.run_finished(outcome=RunFinishedInterruptOutcome(interrupts=[interrupt]))


def test_the_key_as_data_and_an_echoed_input_are_not_refused() -> None:
    """Open material may hold the key as data; an echoed run input is the client's."""
    message = UserMessage(id="u", content="hi", metadata={"ag-ui": 1})
    echoed = RunAgentInput(thread_id="t", run_id="r", messages=[message])
    producer = RunProducer(INPUT)
    producer.run_started(input=echoed)
    producer.custom("c", {"metadata": {"ag-ui": 1}})
    producer.state_snapshot({"ag-ui": 1})
    producer.text_message_start("m", metadata={"vendor:ag-ui": 1})
