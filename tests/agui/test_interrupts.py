"""The interrupts API (issue 10, "Interrupts"): the open interrupts of the last run, their
expiry by an injectable clock, answering them, and the documented example."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import pytest

from agentproto import SchemaError, UsageError
from agentproto.agui import (
    Consumer,
    OpenInterrupts,
    Verifier,
    dump_run_input,
    next_run_input,
    schema,
)
from tests.docblocks import run_doc_block

NOW = datetime(2026, 5, 1, 12, 0, tzinfo=UTC)
FULL: dict[str, Any] = {
    "id": "i1",
    "reason": "tool_call",
    "message": "Send the email?",
    "toolCallId": "tc-1",
    "responseSchema": {"type": "object", "required": ["approved"]},
    "expiresAt": "2026-05-01T13:00:00+01:00",
    "metadata": {"x-app": {"card": 3}},
    "subagentRunId": "sub-1",
}


def _run(outcome: dict[str, Any] | None, run_id: str = "r1") -> list[dict[str, Any]]:
    finished: dict[str, Any] = {"type": "RUN_FINISHED", "threadId": "t", "runId": run_id}
    if outcome is not None:
        finished["outcome"] = outcome
    return [{"type": "RUN_STARTED", "threadId": "t", "runId": run_id}, finished]


def _interrupt(*interrupts: dict[str, Any]) -> dict[str, Any]:
    return {"type": "interrupt", "interrupts": list(interrupts)}


def _consumer(*events: dict[str, Any]) -> Consumer:
    consumer = Consumer()
    consumer.feed_all(events)
    return consumer


def _open(*interrupts: dict[str, Any], now: datetime = NOW) -> OpenInterrupts:
    return OpenInterrupts(interrupts, run_id="r1", clock=lambda: now)


# ---- the open interrupts of the last run -----------------------------------------------------


def test_the_interrupts_that_ended_the_last_run_are_open() -> None:
    """Every field of each interrupt the interrupt outcome carried is there, typed."""
    consumer = _consumer(*_run(_interrupt(FULL, {"id": "i2", "reason": "x"})))
    pending = OpenInterrupts.of(consumer, clock=lambda: NOW)
    assert pending.ids == ("i1", "i2") and len(pending) == 2
    assert (pending.run_id, pending.thread_id) == ("r1", "t")
    first = pending.get("i1")
    assert isinstance(first, schema.Interrupt)
    assert (first.id, first.reason, first.message, first.tool_call_id) == (
        "i1", "tool_call", "Send the email?", "tc-1"
    )  # fmt: skip
    assert first.response_schema == FULL["responseSchema"]
    assert first.metadata == FULL["metadata"] and first.subagent_run_id == "sub-1"
    assert first.expires_at == FULL["expiresAt"]
    assert pending.expires_at("i1") == datetime(2026, 5, 1, 12, 0, tzinfo=UTC)
    assert pending.expires_at("i2") is None and not pending.is_expired("i2")
    assert [i.id for i in pending.interrupts] == ["i1", "i2"] and "i2" in pending
    assert pending.diagnostics == []


@pytest.mark.parametrize(
    "events",
    [
        [],
        _run(None),
        _run({"type": "success"}),
        _run({"type": "cancelled"}),
        [*_run(_interrupt(FULL)), {"type": "RUN_ERROR", "message": "late"}],
        [*_run(_interrupt(FULL)), *_run(None, "r2")],
    ],
    ids=["no-run", "no-outcome", "success", "cancelled", "late-error", "resumed-since"],
)
def test_a_last_run_not_interrupted_leaves_nothing_open(events: list[dict[str, Any]]) -> None:
    """A last run that succeeded, was cancelled or failed (a late RUN_ERROR included),
    or no run at all, asks for nothing."""
    pending = OpenInterrupts.of(_consumer(*events))
    assert pending.ids == () and pending.unanswered() == () and pending.resume() == []


def test_the_source_may_be_a_consumer_its_verifier_or_a_run_record() -> None:
    """``of`` reads a Consumer, a Verifier or one RunRecord alike; ``None`` is no run."""
    consumer = _consumer(*_run(_interrupt({"id": "a", "reason": "r"})))
    verifier: Verifier = consumer.verifier
    for source in (consumer, verifier, verifier.runs[-1]):
        assert OpenInterrupts.of(source).ids == ("a",)
    assert OpenInterrupts.of(None).ids == ()


def test_the_open_interrupts_are_copies() -> None:
    """Changing what the API returns, or the interrupts it was built from, changes nothing."""
    given = schema.Interrupt(id="a", reason="r", metadata={"k": 1})
    pending = OpenInterrupts([given])
    given.metadata["k"] = 2  # type: ignore[index]
    pending.get("a").metadata["k"] = 3  # type: ignore[index]
    pending.interrupts[0].metadata["k"] = 4  # type: ignore[index]
    assert pending.get("a").metadata == {"k": 1}


def test_bad_interrupts_are_refused() -> None:
    """Two interrupts sharing an id, or one the schema rejects, are clear errors."""
    with pytest.raises(UsageError) as info:
        OpenInterrupts([{"id": "a", "reason": "r"}, {"id": "a", "reason": "s"}])
    assert info.value.code == "interrupt.duplicate-id"
    with pytest.raises(SchemaError) as schema_info:
        OpenInterrupts([{"id": "a"}])
    assert schema_info.value.keyword == "required"
    with pytest.raises(SchemaError):
        OpenInterrupts([{"id": "a", "reason": "r", "expiresAt": 20260501}])


# ---- expiry, by the clock ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("2026-05-01T12:00:00Z", datetime(2026, 5, 1, 12, tzinfo=UTC)),
        ("2026-05-01T14:00:00+02:00", datetime(2026, 5, 1, 12, tzinfo=UTC)),
        ("2026-05-01T12:00:00.250Z", datetime(2026, 5, 1, 12, 0, 0, 250000, tzinfo=UTC)),
        ("2026-05-01T12:00:00", datetime(2026, 5, 1, 12, tzinfo=UTC)),  # no offset: UTC
        ("2026-05-01", datetime(2026, 5, 1, tzinfo=UTC)),  # a date: its midnight
        ("20260501T120000Z", datetime(2026, 5, 1, 12, tzinfo=UTC)),  # basic format
    ],
)
def test_expires_at_is_read_as_iso_8601(value: str, expected: datetime) -> None:
    """``expiresAt`` is read as ISO 8601 into an aware instant (UTC when no offset)."""
    pending = _open({"id": "a", "reason": "r", "expiresAt": value})
    assert pending.expires_at("a") == expected
    assert pending.expires_at("a").utcoffset() is not None  # type: ignore[union-attr]


def test_an_interrupt_is_expired_from_its_expiry_on() -> None:
    """Expired when the expiry is now or earlier, by the injected clock."""
    interrupt = {"id": "a", "reason": "r", "expiresAt": "2026-05-01T12:00:00Z"}
    assert not _open(interrupt, now=NOW - timedelta(microseconds=1)).is_expired("a")
    assert _open(interrupt, now=NOW).is_expired("a")
    assert _open(interrupt, now=NOW.astimezone(timezone(timedelta(hours=-5)))).is_expired("a")


def test_the_default_clock_is_the_current_utc_time() -> None:
    """Without a clock, expiry is judged against the current time."""
    past = (datetime.now(UTC) - timedelta(minutes=5)).isoformat()
    future = (datetime.now(UTC) + timedelta(days=1)).isoformat()
    pending = OpenInterrupts(
        [{"id": "old", "reason": "r", "expiresAt": past},
         {"id": "new", "reason": "r", "expiresAt": future}]
    )  # fmt: skip
    assert pending.is_expired("old") and not pending.is_expired("new")


UNREADABLE = ["", "soon", "tomorrow at noon", "2026-13-01", "2026-05-01T25:00:00Z",
              "1714564800", "2026-05-01T12:00:00+99:00", "x" * 10_000,
              "\uff12\uff10\uff12\uff16-05-01"]  # fmt: skip
"""Values that are not ISO 8601 dates (the last in fullwidth digits)."""


@pytest.mark.parametrize("value", UNREADABLE)
def test_an_unreadable_expiry_never_expires_and_is_reported(value: str) -> None:
    """A value that is not an ISO 8601 date leaves the interrupt never expired (the
    schema's reading), with one ``interrupt.expiry-unreadable`` diagnostic; it can be
    resolved."""
    unreadable = {"id": "a", "reason": "r", "expiresAt": value}
    consumer = _consumer(*_run(_interrupt({"id": "ok", "reason": "r"}, unreadable)))
    pending = OpenInterrupts.of(consumer, clock=lambda: datetime.max.replace(tzinfo=UTC))
    assert pending.expires_at("a") is None and not pending.is_expired("a")
    [found] = pending.diagnostics
    assert (found.code, found.subject, found.path) == (
        "interrupt.expiry-unreadable", "a", "/outcome/interrupts/1/expiresAt"
    )  # fmt: skip
    assert len(found.message) < 300
    assert pending.resolve("a", "yes").status == "resolved"


@pytest.mark.parametrize("now", [datetime(2026, 5, 1, 12), "2026-05-01T12:00:00Z", None])
def test_a_clock_that_is_not_aware_is_a_usage_error(now: Any) -> None:
    """The clock must give an aware datetime; anything else is the caller's error, named."""
    pending = _open({"id": "a", "reason": "r", "expiresAt": "2026-05-01T12:00:00Z"}, now=now)
    with pytest.raises(UsageError) as info:
        pending.is_expired("a")
    assert info.value.code == "interrupt.clock"


# ---- answering ----------------------------------------------------------------------------------


def test_answers_are_recorded_once_each_and_the_rest_listed() -> None:
    """Each interrupt gets one answer; ``unanswered`` lists the rest, ``answers`` the
    entries in the run's order."""
    pending = _open(
        {"id": "a", "reason": "r"}, {"id": "b", "reason": "r"}, {"id": "c", "reason": "r"}
    )
    assert [i.id for i in pending.unanswered()] == ["a", "b", "c"]
    entry = pending.resolve("c", {"approved": True}, metadata={"sig": "z"})
    assert entry == schema.ResumeEntry(
        interrupt_id="c", status="resolved", payload={"approved": True}, metadata={"sig": "z"}
    )
    pending.cancel("a")
    assert [i.id for i in pending.unanswered()] == ["b"]
    assert [(e.interrupt_id, e.status) for e in pending.answers] == [
        ("a", "cancelled"), ("c", "resolved")
    ]  # fmt: skip
    for again in (lambda: pending.resolve("c", 1), lambda: pending.cancel("a")):
        with pytest.raises(UsageError) as info:
            again()
        assert info.value.code == "resume.already-answered"


@pytest.mark.parametrize("call", ["get", "expires_at", "is_expired", "resolve", "cancel"])
def test_an_unknown_id_is_refused(call: str) -> None:
    """Every call naming an interrupt that is not open says so, listing the open ones."""
    pending = _open({"id": "a", "reason": "r"})
    with pytest.raises(UsageError) as info:
        getattr(pending, call)("ghost")
    assert info.value.code == "resume.unknown-interrupt"
    assert "'ghost'" in str(info.value) and "'a'" in str(info.value)


def test_resolving_an_expired_interrupt_is_refused_cancelling_is_not() -> None:
    """Once judged expired an interrupt can be cancelled, not resolved."""
    pending = _open({"id": "a", "reason": "r", "expiresAt": "2026-04-20T17:00:00Z"})
    with pytest.raises(UsageError) as info:
        pending.resolve("a", {"approved": True})
    assert info.value.code == "resume.expired" and "'a'" in str(info.value)
    assert pending.unanswered() != ()
    assert pending.cancel("a").status == "cancelled"
    assert pending.resume() == [schema.ResumeEntry(interrupt_id="a", status="cancelled")]


def test_a_payload_that_is_not_json_is_refused_and_nothing_recorded() -> None:
    """A payload or metadata that is not JSON is a SchemaError; the interrupt stays open."""
    pending = _open({"id": "a", "reason": "r"})
    with pytest.raises(SchemaError):
        pending.resolve("a", {"when": datetime.now(UTC)})
    with pytest.raises(SchemaError):
        pending.cancel("a", metadata={"n": float("nan")})
    assert [i.id for i in pending.unanswered()] == ["a"]


def test_answers_are_copies() -> None:
    """The payload is copied in, and the entries handed out are copies."""
    payload: dict[str, Any] = {"approved": True}
    pending = _open({"id": "a", "reason": "r"})
    entry = pending.resolve("a", payload)
    payload["approved"] = False
    entry.payload["approved"] = None
    pending.answers[0].payload["approved"] = 0
    assert pending.resume()[0].payload == {"approved": True}


def test_a_payload_of_none_sends_none() -> None:
    """The schema forbids a null payload: ``None`` leaves it out."""
    pending = _open({"id": "a", "reason": "r"})
    assert pending.resolve("a").payload is None
    run_input = next_run_input(Consumer().conversation, thread_id="t", run_id="r2", resume=pending)
    assert dump_run_input(run_input)["resume"] == [{"interruptId": "a", "status": "resolved"}]


def test_resume_refuses_until_every_interrupt_is_answered() -> None:
    """``resume()`` gives the list only once every open interrupt has an answer."""
    pending = _open({"id": "a", "reason": "r"}, {"id": "b", "reason": "r"})
    pending.resolve("a", 1)
    with pytest.raises(UsageError) as info:
        pending.resume()
    assert info.value.code == "resume.uncovered" and "'b'" in str(info.value)
    assert "of run 'r1'" in str(info.value)
    pending.cancel("b")
    assert [e.interrupt_id for e in pending.resume()] == ["a", "b"]


# ---- the documented example ---------------------------------------------------------------------


def test_guide_example_runs_as_written() -> None:
    """The client authors' guide's "Interrupts and resume" example runs, and shows
    what it says."""
    namespace = run_doc_block("docs/guides/client-authors.md", "Interrupts and resume")
    pending, producer = namespace["pending"], namespace["producer"]
    assert pending.ids == ("send-email", "form") and pending.is_expired("form")
    assert dump_run_input(namespace["run_input"])["resume"] == [
        {"interruptId": "send-email", "status": "resolved", "payload": {"approved": True}},
        {"interruptId": "form", "status": "cancelled"},
    ]
    assert [e.interrupt_id for e in producer.resume] == ["send-email", "form"]
    assert callable(namespace["app"])
