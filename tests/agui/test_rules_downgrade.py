"""A lossy downgrade for an old peer always warns (issue 10, rule 5)."""

from __future__ import annotations

import logging

import pytest

from agentproto._core.diagnostics import Diagnostic
from agentproto.agui._thread.run_input import dump_run_input
from agentproto.agui.schema import ImagePart, RunAgentInput, TextPart, UrlSource, UserMessage


def _input() -> RunAgentInput:
    image = ImagePart(source=UrlSource(value="https://example.com/cat.png"))
    message = UserMessage(id="u1", content=[TextPart(text="What is this?"), image])
    return RunAgentInput(thread_id="t", run_id="r", messages=[message])


def test_strict_dump_for_an_old_peer_logs_the_dropped_part(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Without a diagnostics list the warning goes to the agentproto.agui logger."""
    with caplog.at_level(logging.WARNING, logger="agentproto.agui"):
        wire = dump_run_input(_input(), peer_version="0.0.39")
    assert wire["messages"][0]["content"] == "What is this?"
    records = [r for r in caplog.records if "compat.content-flattened" in r.getMessage()]
    assert len(records) == 1 and records[0].levelno == logging.WARNING
    assert "'image'" in records[0].getMessage() and "'u1'" in records[0].getMessage()


def test_tolerant_dump_for_an_old_peer_reports_the_dropped_part(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """With a list the warning is the caller's (and is not logged twice)."""
    found: list[Diagnostic] = []
    with caplog.at_level(logging.WARNING, logger="agentproto.agui"):
        dump_run_input(_input(), peer_version="0.0.39", diagnostics=found)
    assert [d.code for d in found] == ["compat.content-flattened"]
    assert found[0].path == "/messages/0/content"
    assert not caplog.records


def test_a_lossless_downgrade_is_quiet(caplog: pytest.LogCaptureFixture) -> None:
    """Leaving protocolVersion out for a pre-1.0 peer loses nothing: no warning."""
    typed = RunAgentInput(thread_id="t", run_id="r", messages=[], protocol_version="1.0")
    with caplog.at_level(logging.WARNING, logger="agentproto.agui"):
        wire = dump_run_input(typed, peer_version="0.0.45")
    assert "protocolVersion" not in wire and not caplog.records
