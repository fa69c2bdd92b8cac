"""Interrupts and resume (issue 10, rule 3; the draft's "Interrupts and Resume" page).

The next run's ``resume`` covers every open interrupt, names only interrupts of the run
being continued, answers each once, and resolves none judged expired. The client that
builds the input (``next_run_input``) refuses a violation with ``UsageError``; the agent
that receives it (``RunProducer``, ``agent_app``) refuses it before the run starts,
except an entry it cannot match, which it drops with a warning.
"""

from __future__ import annotations

import asyncio
import json
import logging
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from agentproto import ProtocolError, UsageError
from agentproto.agui import (
    Consumer,
    OpenInterrupts,
    RunProducer,
    agent_app,
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


def _next(resume: Any, thread_id: str = "t") -> schema.RunAgentInput:
    return next_run_input(Consumer().conversation, thread_id=thread_id, run_id="r2", resume=resume)


def _refused(code: str, names: list[str], call: Any) -> str:
    with pytest.raises(UsageError) as info:
        call()
    assert info.value.code == code
    for name in names:
        assert f"'{name}'" in str(info.value)
    return str(info.value)


# ---- the client: next_run_input and OpenInterrupts.check ------------------------------------


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
    """A resume missing an open interrupt is refused, naming the missing id."""
    pending = _pending(*ASKED)
    pending.resolve("i1", {"approved": True})
    message = _refused("resume.uncovered", ["i2"], lambda: _next(pending))
    assert "'i1'" not in message
    _refused("resume.uncovered", ["i2"], lambda: _pending(*ASKED).check([_entry("i1")]))


def test_omitting_an_answer_is_not_abandoning() -> None:
    """With interrupts open and nothing answered, no input is built: omission is not
    cancellation."""
    _refused("resume.uncovered", ["i1", "i2"], lambda: _next(_pending(*ASKED)))
    _refused("resume.uncovered", ["i1", "i2"], lambda: _pending(*ASKED).check([]))


def test_an_entry_naming_no_open_interrupt_is_refused() -> None:
    """Each entry names an interrupt of the run being continued: answering another is
    refused, as is a list naming one."""
    pending = _pending(*ASKED)
    _refused("resume.unknown-interrupt", ["ghost"], lambda: pending.resolve("ghost", 1))
    entries = [_entry("i1"), _entry("i2"), _entry("ghost", "cancelled")]
    _refused("resume.unknown-interrupt", ["ghost"], lambda: pending.check(entries))


@pytest.mark.parametrize(
    "events",
    [[], _succeeded(), [*_interrupted(*ASKED), *_succeeded("r2")]],
    ids=["no-run", "succeeded", "interrupted-then-resumed"],
)
def test_a_resume_with_no_interrupted_run_is_refused(events: list[dict[str, Any]]) -> None:
    """When the last run did not end interrupted, nothing is open: any entry is unknown,
    and the input carries no resume."""
    consumer = Consumer()
    consumer.feed_all(events)
    pending = OpenInterrupts.of(consumer, clock=lambda: NOW)
    _refused("resume.unknown-interrupt", ["i1"], lambda: pending.cancel("i1"))
    _refused("resume.unknown-interrupt", ["i1"], lambda: pending.check([_entry("i1")]))
    assert _next(pending).resume is None


def test_duplicate_entries_are_refused() -> None:
    """Two entries for one interrupt are refused: by next_run_input for a list given as
    it is, by the open interrupts' check, and answering one twice."""
    entries = [_entry("i1"), _entry("i2", "cancelled"), _entry("i1", "cancelled")]
    _refused("resume.duplicate", ["i1"], lambda: _next(entries))
    _refused("resume.duplicate", ["i1"], lambda: _pending(*ASKED).check(entries))
    pending = _pending(*ASKED)
    pending.resolve("i1", 1)
    _refused("resume.already-answered", ["i1"], lambda: pending.cancel("i1"))


def test_an_expired_interrupt_can_be_cancelled_not_resolved() -> None:
    """An interrupt judged expired (its expiry now or earlier) is refused as resolved and
    accepted as cancelled."""
    pending = _pending({"id": "late", "reason": "r", "expiresAt": NOW.isoformat()})
    _refused("resume.expired", ["late"], lambda: pending.resolve("late", 1))
    _refused("resume.expired", ["late"], lambda: pending.check([_entry("late", payload=1)]))
    pending.cancel("late")
    assert _next(pending).resume == [_entry("late", "cancelled")]


def test_expiry_is_judged_again_when_the_input_is_built() -> None:
    """An answer recorded before the expiry is refused once the clock has passed it."""
    clock = [NOW]
    pending = OpenInterrupts.of(_consumer(_interrupted(*ASKED)), clock=lambda: clock[0])
    pending.resolve("i1", {"approved": True})
    pending.resolve("i2", {"q": 1})
    clock[0] = NOW + timedelta(seconds=1)  # i2 expires at NOW + 1s
    _refused("resume.expired", ["i2"], lambda: _next(pending))


def test_a_resume_continues_on_the_interrupted_thread() -> None:
    """The continuing run carries the interrupted run's threadId."""
    pending = _pending(ASKED[0])
    pending.cancel("i1")
    _refused("resume.thread-mismatch", ["t", "other", "i1"], lambda: _next(pending, "other"))


def test_resume_entries_are_copied() -> None:
    """The built input shares nothing with the entries given."""
    entry = _entry("i1", payload={"approved": True})
    run_input = _next([entry])
    entry.payload["approved"] = False
    assert run_input.resume is not None and run_input.resume[0].payload == {"approved": True}


# ---- the client: checked against the conversation by default (issue 25) ----------------------

LONG_AGO = "2020-01-01T00:00:00Z"


def _after(events: list[dict[str, Any]], resume: Any, **kwargs: Any) -> schema.RunAgentInput:
    """The next input of the conversation ``events`` built, with ``resume``."""
    conversation = _consumer(events).conversation
    return next_run_input(conversation, thread_id="t", run_id="r2", resume=resume, **kwargs)


def test_a_plain_list_naming_no_open_interrupt_is_refused() -> None:
    """Entries built by hand are held to what the conversation's last run left open: an
    entry naming another interrupt is refused, after an interrupted run and after a run
    that left nothing open."""
    entries = [_entry("i1"), _entry("i2", "cancelled"), _entry("ghost", "cancelled")]
    _refused("resume.unknown-interrupt", ["ghost"], lambda: _after(_interrupted(*ASKED), entries))
    _refused("resume.unknown-interrupt", ["i1"], lambda: _after(_succeeded(), [_entry("i1")]))


def test_a_plain_list_leaving_an_interrupt_uncovered_is_refused() -> None:
    """Entries that leave an open interrupt without an answer, or no resume at all, are
    refused, naming the interrupt left open."""
    events = _interrupted(*ASKED)
    _refused("resume.uncovered", ["i2"], lambda: _after(events, [_entry("i1")]))
    _refused("resume.uncovered", ["i1", "i2"], lambda: _after(events, None))
    _refused("resume.uncovered", ["i1", "i2"], lambda: _after(events, []))


def test_a_plain_list_resolving_an_expired_interrupt_is_refused() -> None:
    """Resolving an interrupt whose expiry has passed is refused; cancelling it is sent."""
    events = _interrupted({"id": "old", "reason": "input_required", "expiresAt": LONG_AGO})
    _refused("resume.expired", ["old"], lambda: _after(events, [_entry("old")]))
    assert _after(events, [_entry("old", "cancelled")]).resume == [_entry("old", "cancelled")]


def test_a_plain_list_answering_every_interrupt_is_sent() -> None:
    """A list answering each open interrupt once goes out as given."""
    entries = [_entry("i2", "cancelled"), _entry("i1", payload={"ok": True})]
    assert _after(_interrupted(*ASKED), entries).resume == entries


def test_open_interrupts_of_another_run_do_not_cover_the_conversations() -> None:
    """An OpenInterrupts read from elsewhere (here: nothing open) does not answer what the
    conversation's own last run left open."""
    events = _interrupted(*ASKED)
    _refused("resume.uncovered", ["i1", "i2"], lambda: _after(events, OpenInterrupts()))


def test_a_conversation_interrupted_on_another_thread_is_not_resumed_here() -> None:
    """The interrupts the conversation recorded belong to their run's thread."""
    conversation = _consumer(_interrupted(*ASKED)).conversation
    entries = [_entry("i1"), _entry("i2", "cancelled")]
    _refused(
        "resume.thread-mismatch",
        ["i1", "i2"],
        lambda: next_run_input(conversation, thread_id="t2", run_id="r2", resume=entries),
    )


def test_check_false_sends_what_the_caller_built() -> None:
    """``check=False`` opts out of the conversation's record: only duplicates are refused."""
    events = _interrupted(*ASKED)
    entries = [_entry("ghost", "cancelled")]
    assert _after(events, entries, check=False).resume == entries
    assert _after(events, None, check=False).resume is None
    _refused("resume.duplicate", ["i1"], lambda: _after(events, [_entry("i1")] * 2, check=False))


def test_a_conversation_that_saw_no_run_checks_only_duplicates() -> None:
    """A conversation that never saw a run end knows nothing about interrupts: its
    entries are refused only for duplicates (an OpenInterrupts says what is open)."""
    assert next_run_input(Consumer().conversation, thread_id="t", run_id="r2",
                          resume=[_entry("i9")]).resume == [_entry("i9")]  # fmt: skip


def test_a_late_run_error_leaves_nothing_open() -> None:
    """A RUN_ERROR after an interrupted RUN_FINISHED fails that run: nothing is open."""
    events = [*_interrupted(*ASKED), {"type": "RUN_ERROR", "message": "late"}]
    consumer = Consumer()
    consumer.feed_all(events)
    assert not len(OpenInterrupts.of(consumer.conversation))
    assert next_run_input(consumer.conversation, thread_id="t", run_id="r2").resume is None


# ---- the agent: RunProducer -------------------------------------------------------------------


def _input(resume: list[dict[str, Any]] | None) -> dict[str, Any]:
    body: dict[str, Any] = {"threadId": "t", "runId": "r2", "messages": []}
    if resume is not None:
        body["resume"] = resume
    return body


def _wire(interrupt_id: str, status: str = "resolved") -> dict[str, Any]:
    return {"interruptId": interrupt_id, "status": status}


def _issued(now: datetime = NOW) -> OpenInterrupts:
    return OpenInterrupts(ASKED, run_id="r1", clock=lambda: now)


@pytest.mark.parametrize(
    ("resume", "code", "named"),
    [
        ([_wire("i1")], "resume.uncovered", "i2"),
        (None, "resume.uncovered", "i1"),
        ([_wire("i1"), _wire("i2"), _wire("i1", "cancelled")], "resume.duplicate", "i1"),
    ],
    ids=["partial", "omitted", "duplicate"],
)
def test_a_producer_refuses_a_violating_resume(
    resume: list[dict[str, Any]] | None, code: str, named: str
) -> None:
    """An agent given the interrupts it issued refuses, before the run starts, an input
    whose resume leaves one uncovered (or omits resume) or answers one twice."""
    with pytest.raises(ProtocolError) as info:
        RunProducer(_input(resume), interrupts=_issued())
    assert info.value.code == code and info.value.subject == named
    assert f"'{named}'" in str(info.value)


def test_a_producer_refuses_resolving_an_expired_interrupt() -> None:
    """The agent's clock judges i2 expired: resolving it is refused, cancelling is not."""
    late = NOW + timedelta(minutes=1)
    with pytest.raises(ProtocolError) as info:
        RunProducer(_input([_wire("i1"), _wire("i2")]), interrupts=_issued(late))
    assert info.value.code == "resume.expired" and info.value.subject == "i2"
    producer = RunProducer(
        _input([_wire("i1"), _wire("i2", "cancelled")]), interrupts=_issued(late)
    )
    assert [e.status for e in producer.resume] == ["resolved", "cancelled"]


def test_a_producer_without_a_record_still_refuses_duplicates() -> None:
    """With no record of the thread only duplicate entries can be found, and are refused."""
    with pytest.raises(ProtocolError) as info:
        RunProducer(_input([_wire("x"), _wire("x", "cancelled")]))
    assert info.value.code == "resume.duplicate"
    assert [e.interrupt_id for e in RunProducer(_input([_wire("x")])).resume] == ["x"]


def test_a_producer_proceeds_without_an_unknown_entry_and_warns(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """An entry naming no interrupt the agent issued is dropped: the run proceeds, with a
    ``resume.unknown-interrupt`` diagnostic and a logged warning."""
    resume = [_wire("i1"), _wire("ghost"), _wire("i2", "cancelled")]
    with caplog.at_level(logging.WARNING, logger="agentproto.agui"):
        producer = RunProducer(_input(resume), interrupts=ASKED)
    assert [e.interrupt_id for e in producer.resume] == ["i1", "i2"]
    found = [d for d in producer.diagnostics if d.code == "resume.unknown-interrupt"]
    assert [(d.subject, d.path) for d in found] == [("ghost", "/resume/1")]
    assert any("ghost" in r.getMessage() and r.levelno == logging.WARNING for r in caplog.records)
    producer.run_started()
    producer.run_finished()


@pytest.mark.parametrize("issued", [(), OpenInterrupts()], ids=["empty-list", "empty-open"])
def test_a_resume_on_a_run_that_continues_no_interrupted_run_is_unrecognised(issued: Any) -> None:
    """A resume list on a run that does not continue an interrupted run answers nothing:
    each entry is unrecognised, the run proceeds."""
    producer = RunProducer(_input([_wire("i1"), _wire("i2")]), interrupts=issued)
    assert producer.resume == ()
    assert [d.subject for d in producer.diagnostics] == ["i1", "i2"]


# ---- the agent: agent_app answers 400 ----------------------------------------------------------


async def _post(app: Any, body: dict[str, Any]) -> tuple[int, bytes, list[dict[str, Any]]]:
    messages = [{"type": "http.request", "body": json.dumps(body).encode(), "more_body": False}]
    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        if messages:
            return messages.pop(0)
        await asyncio.Event().wait()
        raise AssertionError("unreachable")

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    scope = {"type": "http", "method": "POST", "path": "/", "headers": []}
    await asyncio.wait_for(app(scope, receive, send), 5)
    body_bytes = b"".join(m.get("body", b"") for m in sent[1:])
    return sent[0]["status"], body_bytes, sent


async def _not_called(run_input: Any, producer: RunProducer) -> None:
    raise AssertionError("the handler must not run")


@pytest.mark.parametrize(
    ("resume", "code", "named"),
    [
        ([_wire("i1")], "resume.uncovered", "i2"),
        ([_wire("i1"), _wire("i1"), _wire("i2")], "resume.duplicate", "i1"),
        ([_wire("i1"), _wire("i2")], "resume.expired", "i2"),
    ],
    ids=["uncovered", "duplicate", "expired"],
)
async def test_agent_app_answers_a_violating_resume_with_400(
    resume: list[dict[str, Any]], code: str, named: str
) -> None:
    """``agent_app`` answers 400 with a JSON error naming the rule and the interrupt,
    before the handler runs and before any stream starts."""
    late = OpenInterrupts(ASKED, clock=lambda: NOW + timedelta(minutes=1))
    issued = late if code == "resume.expired" else _issued()
    app = agent_app(_not_called, interrupts=lambda run_input: issued)
    status, body, sent = await _post(app, _input(resume))
    assert status == 400
    assert dict(sent[0]["headers"])[b"content-type"] == b"application/json"
    error = json.loads(body)
    assert error["error"] == "invalid-resume" and error["code"] == code
    assert error["interruptId"] == named and f"'{named}'" in error["detail"]


async def test_agent_app_without_a_lookup_refuses_duplicates() -> None:
    """Without a lookup the app still refuses an input answering one interrupt twice."""
    status, body, _ = await _post(agent_app(_not_called), _input([_wire("x"), _wire("x")]))
    assert status == 400 and json.loads(body)["code"] == "resume.duplicate"


async def test_agent_app_serves_a_conforming_resume_through_an_async_lookup(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """An async lookup is awaited; a conforming resume is served, and the handler's
    producer holds the entries it recognised (the unknown one dropped with a warning)."""
    seen: list[Any] = []

    async def lookup(run_input: schema.RunAgentInput) -> list[dict[str, Any]]:
        assert run_input.thread_id == "t"
        return ASKED

    async def handler(run_input: Any, producer: RunProducer) -> None:
        seen.append([e.interrupt_id for e in producer.resume])
        producer.run_started()
        producer.run_finished()

    resume = [_wire("i1"), _wire("ghost", "cancelled"), _wire("i2", "cancelled")]
    with caplog.at_level(logging.WARNING, logger="agentproto.agui"):
        status, body, _ = await _post(agent_app(handler, interrupts=lookup), _input(resume))
    assert status == 200 and b"RUN_FINISHED" in body
    assert seen == [["i1", "i2"]]
    assert any("ghost" in r.getMessage() for r in caplog.records)


async def test_agent_app_lookup_finding_nothing_open_serves_and_warns(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A lookup answering ``None`` (the thread's last run asked nothing) makes every
    entry unrecognised: the run is served without them, with a warning each."""
    seen: list[Any] = []

    def handler(run_input: Any, producer: RunProducer) -> None:
        seen.append((producer.resume, [d.subject for d in producer.diagnostics]))
        producer.run_started()
        producer.run_finished()

    app = agent_app(handler, interrupts=lambda run_input: None)
    with caplog.at_level(logging.WARNING, logger="agentproto.agui"):
        status, _, _ = await _post(app, _input([_wire("i1")]))
    assert status == 200 and seen == [((), ["i1"])]
    assert any("'i1'" in r.getMessage() for r in caplog.records)
