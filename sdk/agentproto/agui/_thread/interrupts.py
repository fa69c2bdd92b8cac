"""Interrupts and resume: what a run left open, and the answers the next run carries.

Theory of operation
-------------------
The draft's "Interrupts and Resume" page: a run that needs something from outside
ends with ``RUN_FINISHED`` carrying the interrupt outcome, and the run that
continues from it carries one ``ResumeEntry`` per interrupt in its input's
``resume`` list. :class:`OpenInterrupts` holds the interrupts of the run being
continued, judges their expiry with an injectable clock, records the answers
(:meth:`~OpenInterrupts.resolve`, :meth:`~OpenInterrupts.cancel`) and checks a
resume list against them. The rules:

* **The run being continued** is the most recent interrupted run on the thread.
  For a consumer (:meth:`OpenInterrupts.of`) that is its last run when that run
  ended with the interrupt outcome (status ``interrupted``); a last run that
  succeeded, was cancelled or failed (a late ``RUN_ERROR`` included) leaves
  nothing open. An agent knows it from its own record of the thread: the
  interrupts it issued, given to :class:`~agentproto.agui.RunProducer`
  (``interrupts=``) or to :func:`~agentproto.agui.agent_app` (a lookup), since
  the input's messages never name an interrupt.
* **Linkage**: each entry's ``interruptId`` names an interrupt of that run
  (``resume.unknown-interrupt``); one entry per interrupt (``resume.duplicate``).
* **Coverage**: every open interrupt has an entry, resolved or cancelled;
  omission is not abandonment (``resume.uncovered``), so an input that omits
  ``resume`` while interrupts are open is refused too.
* **Expiry**: an interrupt judged expired can be cancelled, never resolved
  (``resume.expired``). ``expiresAt`` has no format in the schema; it is read as
  ISO 8601 (:meth:`datetime.fromisoformat`: ``Z`` or an offset, a date alone
  meaning midnight; a value without an offset is read as UTC) and the interrupt
  is expired when that instant is now or earlier, as the reference client
  judges. A value that does not parse leaves the interrupt never expired (the
  schema's reading) and is reported once (``interrupt.expiry-unreadable``).

The client that builds the input refuses a violation with
:class:`~agentproto.UsageError` (:func:`~agentproto.agui.next_run_input`: by
default a resume list, entries or :class:`OpenInterrupts`, is held to what the
conversation recorded of its last run, :meth:`OpenInterrupts.of` a
:class:`~agentproto.agui.Conversation`; ``check=False`` opts out); the
agent that receives one refuses it with :class:`~agentproto.ProtocolError`
before the run starts (``agent_app`` answers 400), except an entry it cannot
match, which the page tells a producer to drop with a warning and proceed.
Every code's message names the interrupt ids involved.
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any, TypeAlias

import attrs

from agentproto._core.diagnostics import Diagnostic, log_diagnostics
from agentproto._core.errors import ProtocolError, UsageError
from agentproto._core.json.codec import dumps
from agentproto._core.readonly import thaw
from agentproto.agui._consume.consumer import Consumer
from agentproto.agui._generated import (
    Interrupt,
    ResumeEntry,
    RunAgentInput,
    RunFinishedEvent,
    RunFinishedInterruptOutcome,
)
from agentproto.agui._protocol.wire import CONVERTER
from agentproto.agui._reduce.conversation import Conversation
from agentproto.agui._verify.runs import RunRecord, quoted
from agentproto.agui._verify.verifier import Verifier

__all__ = ["InterruptLookup", "OpenInterrupts"]

_logger = logging.getLogger("agentproto.agui")

IssuedInterrupts: TypeAlias = "OpenInterrupts | Iterable[Interrupt | Mapping[str, Any]] | None"
InterruptLookup: TypeAlias = Callable[
    [RunAgentInput], "IssuedInterrupts | Awaitable[IssuedInterrupts]"
]
"""``lookup(run_input)``: the interrupts the agent's previous run on the input's thread
ended with (typed, wire JSON, or an :class:`OpenInterrupts`), ``None`` or ``()`` when it
did not end interrupted; it may be a coroutine function."""


def _utc_now() -> datetime:
    return datetime.now(UTC)


def _named(ids: Iterable[str]) -> str:
    """``interrupt 'a'`` or ``interrupts 'a', 'b'``."""
    listed = list(ids)
    return f"interrupt{'s' if len(listed) != 1 else ''} {quoted(listed)}"


def _parse_expiry(value: str) -> datetime | None:
    """``expiresAt`` read as ISO 8601 (no offset: UTC), or ``None`` when it is not one."""
    try:
        moment = datetime.fromisoformat(value)
    except (ValueError, TypeError, OverflowError):
        return None
    return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment


def _copy_interrupt(interrupt: Interrupt | Mapping[str, Any]) -> Interrupt:
    """An independent, schema-checked copy (wire JSON is parsed strictly)."""
    wire = dict(interrupt) if isinstance(interrupt, Mapping) else CONVERTER.dump(interrupt)
    return CONVERTER.load(thaw(wire), Interrupt)  # type: ignore[no-any-return]


def _copy_entry(entry: ResumeEntry) -> ResumeEntry:
    return attrs.evolve(entry, payload=thaw(entry.payload), metadata=thaw(entry.metadata))


class OpenInterrupts:
    """The interrupts the run being continued left open, and the answers to them.

    Build it from what a consumer read (:meth:`of`) or from the interrupts an agent
    issued; answer each interrupt with :meth:`resolve` or :meth:`cancel`, then give it
    to :func:`~agentproto.agui.next_run_input` as ``resume=``, which sends the
    answers as the input's ``resume`` list once every interrupt has one.

    Args:
        interrupts: the interrupts (typed or wire JSON; copied and checked against
            the schema), in the order the run listed them; none when the run being
            continued did not end interrupted.
        run_id: the run that issued them, when known.
        thread_id: that run's thread, when known: the continuing run must be on it.
        clock: what "now" is when expiry is judged: a callable returning an aware
            :class:`~datetime.datetime` (default: the current UTC time).

    Attributes:
        run_id: the run that issued the interrupts, if known.
        thread_id: its thread, if known.
        diagnostics: ``interrupt.expiry-unreadable`` for each ``expiresAt`` that is
            not an ISO 8601 date (that interrupt never expires), with the path
            under the ``RUN_FINISHED`` event that carried it.

    Raises:
        SchemaError: an interrupt does not match the schema.
        UsageError: ``interrupt.duplicate-id``: two interrupts share an id.
    """

    def __init__(
        self,
        interrupts: Iterable[Interrupt | Mapping[str, Any]] = (),
        *,
        run_id: str | None = None,
        thread_id: str | None = None,
        clock: Callable[[], datetime] = _utc_now,
    ) -> None:
        self.run_id = run_id
        self.thread_id = thread_id
        self.diagnostics: list[Diagnostic] = []
        self._clock = clock
        self._open: dict[str, Interrupt] = {}
        self._expiry: dict[str, datetime | None] = {}
        self._answers: dict[str, ResumeEntry] = {}
        for index, given in enumerate(interrupts):
            interrupt = _copy_interrupt(given)
            if interrupt.id in self._open:
                raise UsageError(
                    "interrupt.duplicate-id",
                    f"two interrupts share the id '{interrupt.id}': ids are unique in a run",
                )
            self._open[interrupt.id] = interrupt
            self._expiry[interrupt.id] = self._read_expiry(interrupt, index)

    def _read_expiry(self, interrupt: Interrupt, index: int) -> datetime | None:
        value = interrupt.expires_at
        if value is None:
            return None
        moment = _parse_expiry(value)
        if moment is None:
            self.diagnostics.append(
                Diagnostic(
                    code="interrupt.expiry-unreadable",
                    message=f"interrupt '{interrupt.id}' has expiresAt {value[:64]!r}, which is "
                    "not an ISO 8601 date: it is judged never to expire",
                    path=f"/outcome/interrupts/{index}/expiresAt",
                    subject=interrupt.id,
                )
            )
        return moment

    @classmethod
    def of(
        cls,
        source: Consumer | Verifier | RunRecord | Conversation | None,
        *,
        clock: Callable[[], datetime] = _utc_now,
    ) -> OpenInterrupts:
        """The interrupts the last run a consumer read left open.

        Args:
            source: a :class:`~agentproto.agui.Consumer`, its
                :class:`~agentproto.agui.Verifier`, one run's
                :class:`~agentproto.agui.RunRecord`, or a
                :class:`~agentproto.agui.Conversation` (its
                :attr:`~agentproto.agui.Conversation.last_run_event`); ``None``: no
                run at all.
            clock: as for the constructor.

        Returns:
            the last run's interrupts when its status is ``interrupted``; none
            otherwise (a run that succeeded, was cancelled or failed asks for nothing).
        """
        if isinstance(source, Conversation):
            event = source.last_run_event
            if not isinstance(event, RunFinishedEvent) or not isinstance(
                event.outcome, RunFinishedInterruptOutcome
            ):
                return cls(clock=clock)
            interrupts = event.outcome.interrupts
            return cls(interrupts, run_id=event.run_id, thread_id=event.thread_id, clock=clock)
        record = source
        if isinstance(record, Consumer):
            record = record.verifier
        if isinstance(record, Verifier):
            record = record.runs[-1] if record.runs else None
        outcome = record.outcome if record is not None else None
        if record is None or record.status != "interrupted":
            return cls(clock=clock)
        assert isinstance(outcome, RunFinishedInterruptOutcome)
        return cls(
            outcome.interrupts, run_id=record.run_id, thread_id=record.thread_id, clock=clock
        )

    # ---- reading -------------------------------------------------------------------------

    @property
    def interrupts(self) -> tuple[Interrupt, ...]:
        """Every open interrupt, in the run's order (copies: changing one changes nothing)."""
        return tuple(_copy_interrupt(i) for i in self._open.values())

    @property
    def ids(self) -> tuple[str, ...]:
        """The open interrupts' ids, in the run's order."""
        return tuple(self._open)

    def __len__(self) -> int:
        return len(self._open)

    def __contains__(self, interrupt_id: object) -> bool:
        return interrupt_id in self._open

    def __repr__(self) -> str:
        return f"<OpenInterrupts of run {self.run_id!r}: {list(self._open)}>"

    def get(self, interrupt_id: str) -> Interrupt:
        """The open interrupt with this id (a copy).

        Raises:
            UsageError: ``resume.unknown-interrupt``: no open interrupt has this id.
        """
        return _copy_interrupt(self._known(interrupt_id))

    def expires_at(self, interrupt_id: str) -> datetime | None:
        """When the interrupt expires (aware), or ``None``: no ``expiresAt``, or one
        that is not an ISO 8601 date (see :attr:`diagnostics`).

        Raises:
            UsageError: ``resume.unknown-interrupt``.
        """
        self._known(interrupt_id)
        return self._expiry[interrupt_id]

    def is_expired(self, interrupt_id: str) -> bool:
        """Whether the interrupt is expired now, by the clock: its expiry is now or earlier.

        Raises:
            UsageError: ``resume.unknown-interrupt``; ``interrupt.clock``: the clock
                returned something other than an aware datetime.
        """
        moment = self.expires_at(interrupt_id)
        return moment is not None and moment <= self._now()

    def _now(self) -> datetime:
        now = self._clock()
        if not isinstance(now, datetime) or now.utcoffset() is None:
            raise UsageError(
                "interrupt.clock",
                f"the clock must return an aware datetime (with a UTC offset), not {now!r}",
            )
        return now

    def unanswered(self) -> tuple[Interrupt, ...]:
        """The open interrupts :meth:`resolve` or :meth:`cancel` has not answered yet."""
        return tuple(_copy_interrupt(i) for k, i in self._open.items() if k not in self._answers)

    @property
    def answers(self) -> tuple[ResumeEntry, ...]:
        """The answers recorded so far, in the run's order of the interrupts (copies)."""
        return tuple(_copy_entry(self._answers[k]) for k in self._open if k in self._answers)

    # ---- answering -----------------------------------------------------------------------

    def resolve(
        self, interrupt_id: str, payload: Any = None, *, metadata: dict[str, Any] | None = None
    ) -> ResumeEntry:
        """Answer an interrupt: a ``resolved`` entry carrying ``payload``.

        Args:
            interrupt_id: the interrupt answered.
            payload: the answer, any JSON value (copied); ``None`` sends none (the
                schema forbids a ``null`` payload).
            metadata: envelope information about the answer (copied).

        Returns:
            the entry recorded (a copy).

        Raises:
            UsageError: ``resume.unknown-interrupt``; ``resume.already-answered``;
                ``resume.expired``: the interrupt is judged expired (cancel it).
            SchemaError: ``payload`` or ``metadata`` is not JSON.
        """
        self._answerable(interrupt_id)
        if self.is_expired(interrupt_id):
            code, message, _ = _expired([interrupt_id])
            raise UsageError(code, message)
        return self._record(interrupt_id, "resolved", payload, metadata)

    def cancel(self, interrupt_id: str, *, metadata: dict[str, Any] | None = None) -> ResumeEntry:
        """Abandon an interrupt: a ``cancelled`` entry (allowed once it has expired).

        Raises:
            UsageError: ``resume.unknown-interrupt``; ``resume.already-answered``.
            SchemaError: ``metadata`` is not JSON.
        """
        self._answerable(interrupt_id)
        return self._record(interrupt_id, "cancelled", None, metadata)

    def _answerable(self, interrupt_id: str) -> None:
        self._known(interrupt_id)
        if interrupt_id in self._answers:
            raise UsageError(
                "resume.already-answered",
                f"interrupt '{interrupt_id}' is answered already "
                f"({self._answers[interrupt_id].status}); each interrupt gets one answer",
            )

    def _record(self, interrupt_id: str, status: Any, payload: Any, metadata: Any) -> ResumeEntry:
        dumps(payload)  # a SchemaError naming where a value is not JSON
        dumps(metadata)
        entry = ResumeEntry(
            interrupt_id=interrupt_id, status=status, payload=thaw(payload), metadata=thaw(metadata)
        )
        self._answers[interrupt_id] = entry
        return _copy_entry(entry)

    def _known(self, interrupt_id: str) -> Interrupt:
        interrupt = self._open.get(interrupt_id)
        if interrupt is None:
            raise UsageError(
                "resume.unknown-interrupt",
                f"no open interrupt has the id '{interrupt_id}' (open: {self._describe_open()})",
            )
        return interrupt

    def _of_run(self) -> str:
        return "" if self.run_id is None else f" of run '{self.run_id}'"

    def _describe_open(self) -> str:
        return quoted(self._open) or "none"

    # ---- the resume list -----------------------------------------------------------------

    def resume(self) -> list[ResumeEntry]:
        """The ``resume`` list of the continuing run: every answer, checked now.

        Raises:
            UsageError: ``resume.uncovered`` (interrupts left unanswered) or
                ``resume.expired`` (a resolved interrupt has expired since).
        """
        entries = list(self.answers)
        self.check(entries)
        return entries

    def check(self, entries: Sequence[ResumeEntry]) -> None:
        """Hold a resume list to the rules (this module's docstring), as a client must.

        Raises:
            UsageError: ``resume.duplicate``, ``resume.unknown-interrupt``,
                ``resume.expired`` or ``resume.uncovered``, naming the ids.
        """
        problem = _duplicates(entries) or _unknown(self, entries) or _problem(self, entries)
        if problem is not None:
            raise UsageError(problem[0], problem[1])

    def _pinned(self) -> OpenInterrupts:
        """The same interrupts and answers, with "now" fixed at this instant."""
        now = self._now()
        pinned = OpenInterrupts(run_id=self.run_id, thread_id=self.thread_id, clock=lambda: now)
        pinned._open, pinned._expiry = self._open, self._expiry
        pinned._answers = dict(self._answers)
        pinned.diagnostics = list(self.diagnostics)
        return pinned


# ---- the rules, for both sides ---------------------------------------------------------------

_Problem: TypeAlias = tuple[str, str, list[str]]
"""A broken rule: (code, message, the interrupt ids involved)."""


def _expired(ids: Sequence[str]) -> _Problem:
    message = f"resolving is refused for {_named(ids)}, judged expired: cancel instead"
    return "resume.expired", message, list(ids)


def _unknown(open_: OpenInterrupts, entries: Sequence[ResumeEntry]) -> _Problem | None:
    unknown = [e.interrupt_id for e in entries if e.interrupt_id not in open_]
    if not unknown:
        return None
    message = (
        f"the resume list names {_named(unknown)}, which the run being continued did not "
        f"issue (open: {open_._describe_open()})"
    )
    return "resume.unknown-interrupt", message, unknown


def _duplicates(entries: Sequence[ResumeEntry]) -> _Problem | None:
    seen: set[str] = set()
    twice: dict[str, None] = {}
    for entry in entries:
        if entry.interrupt_id in seen:
            twice[entry.interrupt_id] = None
        seen.add(entry.interrupt_id)
    if not twice:
        return None
    message = f"the resume list answers {_named(twice)} more than once: one entry each"
    return "resume.duplicate", message, list(twice)


def _problem(open_: OpenInterrupts, entries: Sequence[ResumeEntry]) -> _Problem | None:
    """The first rule but linkage that ``entries`` break against ``open_``, or ``None``."""
    duplicates = _duplicates(entries)
    if duplicates is not None:
        return duplicates
    expired = [
        e.interrupt_id
        for e in entries
        if e.status == "resolved" and e.interrupt_id in open_ and open_.is_expired(e.interrupt_id)
    ]
    if expired:
        return _expired(expired)
    answered = {e.interrupt_id for e in entries}
    uncovered = [k for k in open_.ids if k not in answered]
    if uncovered:
        message = (
            f"the resume list leaves {_named(uncovered)}{open_._of_run()} without an entry: "
            f"resolve or cancel every open interrupt (omitting one is not cancelling it)"
        )
        return "resume.uncovered", message, uncovered
    return None


def resume_for(
    resume: Iterable[ResumeEntry] | OpenInterrupts | None,
    thread_id: str,
    known: Conversation | None = None,
) -> list[ResumeEntry] | None:
    """The resume list :func:`~agentproto.agui.next_run_input` sends (copies).

    An :class:`OpenInterrupts` gives the answers it recorded, held to every rule
    (``None`` when nothing is open); entries are copied and refused for duplicates.
    With ``known``, the conversation being continued, once it has seen a run end
    (:attr:`~agentproto.agui.Conversation.last_run_event`), the list is also held to
    what that run left open: every rule, expiry judged by the given
    :class:`OpenInterrupts`' clock (else now). Without it, or before any run ended,
    nothing says what is open and entries are refused only for duplicates.

    Raises:
        UsageError: a ``resume.*`` code (see :meth:`OpenInterrupts.check`);
            ``resume.thread-mismatch``: interrupts open on another thread.
    """
    clock = _utc_now
    if isinstance(resume, OpenInterrupts):
        clock = resume._clock
        entries = _answers_of(resume, thread_id)
    else:
        entries = None if resume is None else [_copy_entry(e) for e in resume]
        duplicates = _duplicates(entries or [])
        if duplicates is not None:
            raise UsageError(duplicates[0], duplicates[1])
    if known is not None and known.last_run_event is not None:
        left_open = OpenInterrupts.of(known, clock=clock)
        _same_thread(left_open, thread_id)
        left_open.check(entries or [])
    return entries


def _answers_of(open_: OpenInterrupts, thread_id: str) -> list[ResumeEntry] | None:
    """The answers ``open_`` recorded, every rule held (``None``: nothing is open)."""
    if not len(open_):
        return None
    _same_thread(open_, thread_id)
    return open_.resume()


def _same_thread(open_: OpenInterrupts, thread_id: str) -> None:
    """Refuse continuing on another thread the run that left interrupts open."""
    if len(open_) and open_.thread_id not in (None, thread_id):
        raise UsageError(
            "resume.thread-mismatch",
            f"the open {_named(open_.ids)} belong to thread '{open_.thread_id}', "
            f"not '{thread_id}': a run continues on the thread it resumes",
        )


def _issued(interrupts: IssuedInterrupts) -> OpenInterrupts | None:
    if interrupts is None or isinstance(interrupts, OpenInterrupts):
        return interrupts
    return OpenInterrupts(interrupts)


def check_resume(run_input: RunAgentInput, interrupts: IssuedInterrupts) -> None:
    """Refuse a received input that breaks a resume rule (linkage aside), changing
    nothing; with ``interrupts=None`` (no record of the thread) only duplicates.

    Raises:
        ProtocolError: ``resume.duplicate``, ``resume.expired`` or ``resume.uncovered``
            (``subject``: the first id involved).
    """
    issued = _issued(interrupts)
    entries = run_input.resume or []
    problem = _duplicates(entries) if issued is None else _problem(issued, entries)
    if problem is not None:
        code, message, ids = problem
        raise ProtocolError(code, message, subject=ids[0])


def accept_resume(
    run_input: RunAgentInput | None, interrupts: IssuedInterrupts, diagnostics: list[Diagnostic]
) -> tuple[ResumeEntry, ...]:
    """What a producer does with a received input's resume list: refuse it when it breaks
    a rule, else the entries the run acts on. An entry naming no interrupt the agent
    issued (``interrupts``) is dropped with a ``resume.unknown-interrupt`` warning, in
    ``diagnostics`` and on the ``agentproto.agui`` logger; with ``interrupts=None`` the
    agent keeps no record, and only duplicates are checked.

    Raises:
        ProtocolError: see :func:`check_resume`.
    """
    if run_input is None:
        return ()
    issued = _issued(interrupts)
    check_resume(run_input, issued)
    entries = tuple(run_input.resume or ())
    if issued is None:
        return entries
    diagnostics.extend(issued.diagnostics)
    found = [
        Diagnostic(
            code="resume.unknown-interrupt",
            message=f"the resume entry for '{entry.interrupt_id}' names no interrupt the "
            f"run being continued issued (issued: {issued._describe_open()}); the run "
            f"proceeds without it",
            path=f"/resume/{index}",
            subject=entry.interrupt_id,
        )
        for index, entry in enumerate(entries)
        if entry.interrupt_id not in issued
    ]
    diagnostics.extend(found)
    log_diagnostics(found, _logger)
    return tuple(e for e in entries if e.interrupt_id in issued)


async def screen_resume(
    lookup: InterruptLookup | None, run_input: RunAgentInput
) -> tuple[OpenInterrupts | None, dict[str, Any] | None]:
    """What ``agent_app`` does before a run starts: the interrupts ``lookup`` gives for
    the input (awaited when awaitable; ``None`` means nothing is open), with expiry
    judged at this one instant so that the producer made next reaches the same
    verdict, and the JSON body of the 400 answer when the input breaks a rule
    (``None`` when it does not)."""
    issued: OpenInterrupts | None = None
    if lookup is not None:
        found = lookup(run_input)
        if inspect.isawaitable(found):
            found = await found
        issued = _issued(found)
        issued = (OpenInterrupts() if issued is None else issued)._pinned()
    try:
        check_resume(run_input, issued)
    except ProtocolError as exc:
        body = {"error": "invalid-resume", "code": exc.code, "detail": str(exc),
                "interruptId": exc.subject}  # fmt: skip
        return issued, body
    return issued, None
