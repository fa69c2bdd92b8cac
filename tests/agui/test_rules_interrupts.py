"""Interrupts and resume (issue 10, rule 3; the draft's "Interrupts and Resume" page).

The next run's ``resume`` covers every open interrupt, names only interrupts of the run
being continued, answers each once, and resolves none judged expired. The client that
builds the input (``next_run_input``) refuses a violation with ``UsageError``; the agent
that receives it (``RunProducer``, ``agent_app``) refuses it before the run starts,
except an entry it cannot match, which it drops with a warning.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from agentproto import UsageError
from agentproto.agui import (
    Consumer,
    OpenInterrupts,
    dump_run_input,
    next_run_input,
    schema,
)

NOW = datetime(2026, 5, 1, 12, 0, tzinfo=UTC)
PAST = "2026-05-01T11:59:59Z"
FUTURE = "2026-05-01T12:00:01Z"
ASKED: list[dict[str, Any]] = [
    {"id": "i1", "reason": "tool_call", "toolCallId": "tc-1"},
    {"id": "i2", "reason": "input_required", "expiresAt": FUTURE},
]


def _interrupted(*interrupts: dict[str, Any], run_id: str = "r1") -> list[dict[str, Any]]:
    return [
        {"type": "RUN_STARTED", "threadId": "t", "runId": run_id},
        {"type": "RUN_FINISHED", "threadId": "t", "runId": run_id,
         "outcome": {"type": "interrupt", "interrupts": list(interrupts)}},
    ]  # fmt: skip


def _succeeded(run_id: str = "r1") -> list[dict[str, Any]]:
    return [
        {"type": "RUN_STARTED", "threadId": "t", "runId": run_id},
        {"type": "RUN_FINISHED", "threadId": "t", "runId": run_id},
    ]


def _consumer(events: list[dict[str, Any]]) -> Consumer:
    consumer = Consumer()
    consumer.feed_all(events)
    consumer.close()
    return consumer


def _pending(*interrupts: dict[str, Any], now: datetime = NOW) -> OpenInterrupts:
    return OpenInterrupts.of(_consumer(_interrupted(*interrupts)), clock=lambda: now)


def _entry(interrupt_id: str, status: str = "resolved", **extra: Any) -> schema.ResumeEntry:
    return schema.ResumeEntry(interrupt_id=interrupt_id, status=status, **extra)  # type: ignore[arg-type]


def _next(pending: OpenInterrupts | None, resume: Any = None) -> schema.RunAgentInput:
    return next_run_input(
        Consumer().conversation, thread_id="t", run_id="r2", interrupts=pending, resume=resume
    )


def _refused(code: str, names: list[str], call: Any) -> str:
    with pytest.raises(UsageError) as info:
        call()
    assert info.value.code == code
    for name in names:
        assert f"'{name}'" in str(info.value)
    return str(info.value)


# ---- the client: next_run_input -------------------------------------------------------------


def test_a_resume_answering_every_interrupt_is_sent() -> None:
    """Every open interrupt answered (resolved or cancelled) goes out as the resume list,
    in the run's order of the interrupts."""
    pending = _pending(*ASKED)
    pending.cancel("i2")
    pending.resolve("i1", {"approved": True})
    wire = dump_run_input(_next(pending))
    assert wire["resume"] == [
        {"interruptId": "i1", "status": "resolved", "payload": {"approved": True}},
        {"interruptId": "i2", "status": "cancelled"},
    ]


def test_a_resume_leaving_an_interrupt_uncovered_is_refused() -> None:
    """A resume list missing an open interrupt is refused, naming the missing id."""
    message = _refused("resume.uncovered", ["i2"], lambda: _next(_pending(*ASKED), [_entry("i1")]))
    assert "'i1'" not in message


def test_omitting_resume_is_not_abandoning() -> None:
    """With interrupts open and nothing answered, no input is built: omission is not
    cancellation."""
    _refused("resume.uncovered", ["i1", "i2"], lambda: _next(_pending(*ASKED)))
    _refused("resume.uncovered", ["i1", "i2"], lambda: _next(_pending(*ASKED), []))


def test_an_entry_naming_no_open_interrupt_is_refused() -> None:
    """Each entry names an interrupt of the run being continued."""
    entries = [_entry("i1"), _entry("i2"), _entry("ghost", "cancelled")]
    _refused("resume.unknown-interrupt", ["ghost"], lambda: _next(_pending(*ASKED), entries))


@pytest.mark.parametrize(
    "events",
    [[], _succeeded(), [*_interrupted(*ASKED), *_succeeded("r2")]],
    ids=["no-run", "succeeded", "interrupted-then-resumed"],
)
def test_a_resume_with_no_interrupted_run_is_refused(events: list[dict[str, Any]]) -> None:
    """When the last run did not end interrupted, nothing is open: any entry is unknown,
    and an input without resume is fine."""
    consumer = Consumer()
    consumer.feed_all(events)
    pending = OpenInterrupts.of(consumer, clock=lambda: NOW)
    _refused("resume.unknown-interrupt", ["i1"], lambda: _next(pending, [_entry("i1")]))
    assert _next(pending).resume is None


@pytest.mark.parametrize("with_interrupts", [True, False])
def test_duplicate_entries_are_refused(with_interrupts: bool) -> None:
    """Two entries for one interrupt are refused, with or without the open interrupts."""
    pending = _pending(*ASKED) if with_interrupts else None
    entries = [_entry("i1"), _entry("i2", "cancelled"), _entry("i1", "cancelled")]
    _refused("resume.duplicate", ["i1"], lambda: _next(pending, entries))


def test_an_expired_interrupt_can_be_cancelled_not_resolved() -> None:
    """An interrupt judged expired (its expiry now or earlier) is refused as resolved and
    accepted as cancelled."""
    pending = _pending({"id": "late", "reason": "r", "expiresAt": NOW.isoformat()})
    _refused("resume.expired", ["late"], lambda: _next(pending, [_entry("late", payload=1)]))
    assert _next(pending, [_entry("late", "cancelled")]).resume == [_entry("late", "cancelled")]


def test_expiry_is_judged_again_when_the_input_is_built() -> None:
    """An answer recorded before the expiry is refused once the clock has passed it."""
    clock = [NOW]
    pending = OpenInterrupts.of(_consumer(_interrupted(*ASKED)), clock=lambda: clock[0])
    pending.resolve("i1", {"approved": True})
    pending.resolve("i2", {"q": 1})
    clock[0] = NOW + timedelta(seconds=1)  # i2 expires at NOW + 1s
    _refused("resume.expired", ["i2"], lambda: _next(pending))


def test_resume_entries_are_copied() -> None:
    """The built input shares nothing with the entries given."""
    entry = _entry("i1", payload={"approved": True})
    run_input = _next(_pending(ASKED[0]), [entry])
    entry.payload["approved"] = False
    assert run_input.resume is not None and run_input.resume[0].payload == {"approved": True}
