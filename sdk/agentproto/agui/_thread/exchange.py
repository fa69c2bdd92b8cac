"""One thread of an agent reached over HTTP, sans-I/O: its conversation, and each run's exchange.

Theory of operation. :class:`AgentThread` keeps what a thread's runs said
(:attr:`~AgentThread.conversation`, :attr:`~AgentThread.runs`,
:attr:`~AgentThread.diagnostics`) and builds each next request with
:func:`~agentproto.agui.next_run_input`. A run is one :class:`Exchange`:

1. **building** (before any I/O): ``next_run_input`` builds the typed input from
   the thread's conversation (every keyword the caller gave passed through, so its
   own checks, of ``resume`` or of unanswered tool calls, hold: by default against
   what the thread's conversation recorded, the interrupts its last run left open
   and the tools the previous input declared), the new messages are appended,
   ``dump_run_input`` checks it all and gives the body. When the thread's last run
   ended interrupted (:attr:`AgentThread.interrupts`), the input's ``resume`` list
   must answer each open interrupt, as the reference client requires before it
   sends (:meth:`OpenInterrupts.check <agentproto.agui.OpenInterrupts.check>`). A
   bad input raises here, and nothing is sent; ``check=False`` (a run option,
   passed to ``next_run_input``) opts out of the checks against the thread.
2. **opening**: the response's status and ``content-type`` decide: a non-2xx answer
   is :class:`HttpStatusError`, a type that is neither SSE nor JSON Lines is
   ``ProtocolError("http.content-type")``; else a :class:`Consumer` is built for the
   transport the response declares, from the run input plus the thread's activity
   messages (which run input never carries), so that the run's fold continues the
   thread's.
3. **streaming**: bytes go through the consumer (the adapters of
   :mod:`agentproto.agui._consume.stream`);
   a connection that breaks or goes silent after every run reached its terminal
   event ends the stream with an ``http.connection-lost`` diagnostic; before that it
   fails the run (``stream.truncated``, or :class:`HttpTimeoutError`).
4. **settling**, whatever happened: the run records and diagnostics join the
   thread's; the run's conversation becomes the thread's only when the stream held
   no fatal problem and left no run open. After a failure or a cancellation the
   conversation is the one from before the run (the new messages were not sent,
   as far as the thread knows) and :attr:`AgentThread.last_consumer` holds the
   partial fold. What the adopted run left open becomes
   :attr:`AgentThread.interrupts`; a run not adopted leaves it as it was, so its
   answers can be sent again.

:class:`RunResult` is what a run came to, for the clients' ``run_to_end``: the
run's record, the messages it added, the state after it, what it left open.

The I/O (httpx, sync and async) is :mod:`agentproto.agui._http.client`; nothing here imports it.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any, Final, cast, get_args

import attrs

from agentproto._core.describe import describe
from agentproto._core.diagnostics import Diagnostic
from agentproto._core.errors import (
    AgentProtoError,
    HttpError,
    HttpStatusError,
    HttpTimeoutError,
    ProtocolError,
    UsageError,
)
from agentproto._core.json.codec import dumps, loads
from agentproto.agui._consume.consumer import Consumer
from agentproto.agui._consume.decoder import Middleware
from agentproto.agui._generated import Event, Message, RunAgentInput, RunStartedEvent, UserMessage
from agentproto.agui._protocol.encoding import JSONL_CONTENT_TYPE, Transport
from agentproto.agui._protocol.wire import dump_event
from agentproto.agui._reduce.conversation import Conversation
from agentproto.agui._thread.interrupts import OpenInterrupts
from agentproto.agui._thread.run_input import dump_run_input, next_run_input
from agentproto.agui._verify.runs import RunStatus, quoted
from agentproto.agui._verify.verifier import RunRecord

__all__ = ["AgentThread", "RunResult", "running"]

_ACCEPT: Final[dict[str, str]] = {
    "sse": "text/event-stream",
    # JSON Lines preferred; a server that only speaks SSE still answers usefully
    "jsonl": f"{JSONL_CONTENT_TYPE}, text/event-stream;q=0.5",
}
_MEDIA: Final[dict[str, Transport]] = {
    "text/event-stream": "sse",
    JSONL_CONTENT_TYPE: "jsonl",
    "application/x-ndjson": "jsonl",
    "application/jsonlines": "jsonl",
}
_MESSAGE_CLASSES: Final = get_args(Message)
ERROR_BODY_BYTES: Final = 64 * 1024
"""How much of a non-2xx answer's body is read for :class:`HttpStatusError`."""


# ---- what a run came to -------------------------------------------------------------------


@attrs.frozen(kw_only=True)
class RunResult:
    """What one run of an agent thread came to (``run_to_end`` returns it).

    The TypeScript client's ``runAgent()`` resolves to the run's new messages and
    result; this is that, with the rest a caller looks at next: the run's status and
    outcome, the state after it, and the interrupts it left open (answer them, then
    pass them as the next run's ``resume``). A run the agent ends with ``RUN_ERROR``
    is a result too (``status == "failed"``, ``record.error``), as it is an event for
    ``run()``: only a broken exchange (HTTP, the stream, a protocol rule) raises.

    Attributes:
        record: the run's :class:`~agentproto.agui.RunRecord` (its status, outcome,
            ``RUN_FINISHED`` and ``RUN_ERROR``); of the last run when one stream
            carried several.
        new_messages: the messages the run added to the thread, in conversation
            order: those whose ids neither the thread nor the run's input held
            (activities included; the input's own new messages are not).
        state: the thread's state after the run (an independent copy).
        interrupts: the interrupts the run left open, the thread's
            :attr:`AgentThread.interrupts` (empty unless ``status`` is
            ``interrupted``): resolve or cancel each, then
            ``run_to_end(resume=result.interrupts)``.
        diagnostics: what the run's stream tolerated (stripped, skipped), in order.
    """

    record: RunRecord
    new_messages: tuple[Message, ...]
    state: Any
    interrupts: OpenInterrupts
    diagnostics: tuple[Diagnostic, ...] = ()

    @property
    def status(self) -> RunStatus:
        """``succeeded``, ``interrupted``, ``cancelled`` or ``failed`` (a ``RUN_ERROR``)."""
        return self.record.status

    @property
    def succeeded(self) -> bool:
        """Whether the run ended in success."""
        return self.record.succeeded

    @property
    def result(self) -> Any:
        """The ``result`` its ``RUN_FINISHED`` carried (any JSON), ``None`` without one."""
        finished = self.record.finished
        return None if finished is None else finished.result


# ---- the thread ---------------------------------------------------------------------------


class AgentThread:
    """The thread state an HTTP agent client keeps across runs (base of the clients).

    Attributes:
        url: the agent's URL.
        thread_id: the thread every run belongs to.
        conversation: the messages (activities included) and state the thread's
            completed runs built; the next run starts from it.
        runs: every run's record, in order, failed and cancelled ones included.
        diagnostics: every tolerated problem of every run, in order.
        last_consumer: the consumer of the latest run (its partial fold after a
            failure or a cancellation), ``None`` before the first answer.
        interrupts: what the thread's last completed run left open (an
            :class:`~agentproto.agui.OpenInterrupts`, empty unless that run ended
            interrupted; at first, what the ``conversation`` given recorded). The
            next run must answer each: resolve or cancel them here and pass
            ``resume=thread.interrupts``; a run that leaves one unanswered is
            refused before anything is sent.
    """

    def __init__(
        self,
        url: str,
        *,
        thread_id: str | None,
        conversation: Conversation | None,
        transport: Transport,
        run_timeout: float | None,
        middleware: Callable[[], Sequence[Middleware]] | None,
        consumer_options: Mapping[str, Any],
    ) -> None:
        if transport not in _ACCEPT:
            raise UsageError("http.transport", f"transport must be 'sse' or 'jsonl': {transport!r}")
        for reserved in ("run_input", "transport", "middleware"):
            if reserved in consumer_options:
                raise UsageError(
                    "http.consumer-option",
                    f"{reserved!r} is set by the client, per run"
                    + (" (pass a factory as middleware=)" if reserved == "middleware" else ""),
                )
        if run_timeout is not None and (
            isinstance(run_timeout, bool)
            or not isinstance(run_timeout, int | float)
            or not run_timeout > 0
        ):
            raise UsageError(
                "http.run-timeout", f"run_timeout must be positive or None: {describe(run_timeout)}"
            )
        self.url = url
        self.thread_id = thread_id if thread_id is not None else str(uuid.uuid4())
        self.conversation = conversation if conversation is not None else Conversation()
        self.runs: list[RunRecord] = []
        self.diagnostics: list[Diagnostic] = []
        self.last_consumer: Consumer | None = None
        left_open = OpenInterrupts.of(self.conversation)  # a conversation= may know some
        self.interrupts = left_open if len(left_open) else OpenInterrupts(thread_id=self.thread_id)
        self._transport = transport
        self._run_timeout = run_timeout
        self._consumer_options = dict(consumer_options)
        self._middleware = middleware
        self._busy = False
        self._generation = 0  # settled runs so far: an exchange built before one is stale

    def _restore(self, runs: Iterable[Sequence[Event]]) -> None:
        """Take the thread as recorded ``runs`` (each a run's events, ``RUN_STARTED``
        first) make it: each folded from its ``RUN_STARTED``'s ``input`` plus what the
        thread held (:func:`_local_input`: activities, which no input carries, stay where
        they were), as the run folded when it ran; the conversation, runs, diagnostics
        and open interrupts become the last run's. Nothing changes when it raises.

        Raises:
            UsageError: a run is in progress (``http.run-in-progress``), or a run is of
                another thread (``http.thread-mismatch``).
            AgentProtoError: a recorded run breaks a rule (the consumer's error).
        """
        if self._busy:
            raise UsageError("http.run-in-progress", "this thread is running; one run at a time")
        conversation = Conversation()
        records: list[RunRecord] = []
        diagnostics: list[Diagnostic] = []
        consumer: Consumer | None = None
        for events in runs:
            started = events[0]
            if not isinstance(started, RunStartedEvent) or started.thread_id != self.thread_id:
                raise UsageError(
                    "http.thread-mismatch",
                    f"a recorded run is not a run of thread {self.thread_id!r}",
                )
            recorded = started.input or next_run_input(
                conversation, thread_id=self.thread_id, run_id=started.run_id, check=False
            )
            consumer = Consumer(
                run_input=_local_input(conversation, recorded), **self._consumer_options
            )
            consumer.feed_all(dump_event(event) for event in events)
            consumer.close()
            conversation = consumer.conversation
            records += consumer.verifier.runs
            diagnostics += consumer.diagnostics
        self.conversation, self.runs, self.diagnostics = conversation, records, diagnostics
        self.last_consumer = consumer
        left_open = OpenInterrupts.of(consumer)
        self.interrupts = left_open if len(left_open) else OpenInterrupts(thread_id=self.thread_id)
        self._generation += 1

    def _prepare(
        self, messages: Sequence[Message | str], run_id: str | None, options: dict[str, Any]
    ) -> Exchange:
        """The next run's exchange, its input built and checked (before any I/O)."""
        if self._busy:
            raise UsageError("http.run-in-progress", "this thread is running; one run at a time")
        for name in ("thread_id", "run_id"):
            if name in options:
                raise UsageError("http.option", f"{name!r} is not a run option here")
        check = options.get("check", True)
        if check:
            self._refuse_no_answers(options.get("resume"))
        run_input = next_run_input(
            self.conversation,
            thread_id=self.thread_id,
            run_id=run_id or str(uuid.uuid4()),
            **options,
        )
        if check:
            self._check_resume(run_input)
        added = [_as_message(message) for message in messages]
        if added:
            _check_new_ids([*self.conversation.messages, *run_input.messages], added)
            run_input = attrs.evolve(run_input, messages=[*run_input.messages, *added])
        body = dumps(dump_run_input(run_input))
        return Exchange(self, run_input, _local_input(self.conversation, run_input), body)

    def _refuse_no_answers(self, resume: object) -> None:
        """Refuse a run that answers none of the open interrupts of the thread's last run
        (no ``resume``, or an empty list), saying how to answer them."""
        open_ = self.interrupts
        if len(open_) and (resume is None or (isinstance(resume, list | tuple) and not resume)):
            several = len(open_) != 1
            raise UsageError(
                "resume.uncovered",
                f"the thread's last run {open_.run_id!r} ended interrupted, and "
                f"interrupt{'s' if several else ''} {quoted(open_.ids)} "
                f"{'are' if several else 'is'} open: resolve or cancel each "
                f"(agent.interrupts.resolve(id, payload), agent.interrupts.cancel(id)) "
                f"and pass resume=agent.interrupts; nothing was sent",
            )

    def _check_resume(self, run_input: RunAgentInput) -> None:
        """Refuse an input whose ``resume`` breaks a resume rule against the open
        interrupts of the thread's last run, before anything is sent."""
        if len(self.interrupts):
            self.interrupts.check(run_input.resume or [])


@attrs.define
class Exchange:
    """One run's request and response, with the thread it settles into."""

    thread: AgentThread
    run_input: RunAgentInput
    local_input: RunAgentInput  # run_input plus the thread's activities: the consumer's start
    body: bytes
    consumer: Consumer | None = None
    deadline: float | None = None
    generation: int = attrs.field(init=False)

    def __attrs_post_init__(self) -> None:
        self.generation = self.thread._generation

    @property
    def url(self) -> str:
        return self.thread.url

    def headers(self) -> dict[str, str]:
        """The request's own headers."""
        return {"content-type": "application/json", "accept": _ACCEPT[self.thread._transport]}

    def begin(self) -> None:
        """Mark the thread running (the first step of the run's iterator)."""
        thread = self.thread
        if thread._busy:
            raise UsageError("http.run-in-progress", "this thread is running; one run at a time")
        if thread._generation != self.generation:
            raise UsageError(
                "http.stale-run",
                "another run of this thread settled after this run was built; call run() again",
            )
        thread._busy = True
        if thread._run_timeout is not None:
            self.deadline = time.monotonic() + thread._run_timeout

    def open(self, status: int, reason: str, content_type: str | None) -> Consumer:
        """The consumer for a 2xx answer of a stream type.

        Raises:
            ProtocolError: ``http.content-type``: not SSE or JSON Lines.
        """
        media = (content_type or "").split(";", 1)[0].strip().lower()
        transport = _MEDIA.get(media)
        if transport is None:
            raise ProtocolError(
                "http.content-type",
                f"the agent answered {status} {reason} with content-type {content_type!r},"
                " which is neither an SSE stream (text/event-stream) nor JSON Lines"
                f" ({JSONL_CONTENT_TYPE})",
                subject=content_type,
            )
        thread = self.thread
        self.consumer = Consumer(
            run_input=self.local_input,
            transport=transport,
            middleware=thread._middleware() if thread._middleware is not None else (),
            **thread._consumer_options,
        )
        self.thread.last_consumer = self.consumer
        return self.consumer

    def status_error(
        self, status: int, reason: str, headers: Mapping[str, str], raw: bytes
    ) -> HttpStatusError:
        """The error for a non-2xx answer whose body starts with ``raw``."""
        text = raw[:ERROR_BODY_BYTES].decode("utf-8", "replace")
        body = None
        if "json" in headers.get("content-type", "").lower():
            try:
                body = loads(raw)
            except AgentProtoError:
                body = None
        location = headers.get("location")
        if location and not text:
            text = f"(location: {location})"
        return HttpStatusError(status, reason, url=self.url, body=body, text=text)

    def late(self) -> bool:
        """Whether to stop reading, asked after each chunk: ``False`` within ``run_timeout``.

        Past it, ``True`` when every run had ended (the stream then ends, with an
        ``http.connection-lost`` diagnostic).

        Raises:
            HttpTimeoutError: ``http.run-timeout``, past ``run_timeout`` with a run
                still open (the run fails with it).
        """
        if self.deadline is None or time.monotonic() <= self.deadline:
            return False
        error = HttpTimeoutError(
            "http.run-timeout",
            f"the run did not end within run_timeout={self.thread._run_timeout}s",
            url=self.url,
            timeout=self.thread._run_timeout,
        )
        if self.lost(error):
            return True
        raise error

    def lost(self, error: AgentProtoError) -> bool:
        """The connection broke or went silent mid-stream (``error`` says how).

        Returns ``True`` when every run had ended (the stream then ends, with an
        ``http.connection-lost`` diagnostic); otherwise the caller lets the
        consumer close (a timeout fails the run with ``error`` first).
        """
        consumer = self.consumer
        if consumer is None or consumer.failure is not None:
            return False
        verifier = consumer.verifier
        if verifier.runs and verifier.current_run is None:
            consumer.diagnostics.append(
                Diagnostic(
                    code="http.connection-lost",
                    message=f"the connection ended badly after the run ended: {error}",
                    subject=verifier.runs[-1].run_id,
                )
            )
            return True
        if isinstance(error, HttpTimeoutError):
            consumer.decoder.fail(error)
        return False

    def cancel(self, error: AgentProtoError | None) -> None:
        """The run stopped early, for ``error`` or (``None``) because the client stopped
        reading (a ``break``, a cancelled task): a run still open fails with it."""
        consumer = self.consumer
        if consumer is None or consumer.failure is not None:
            return
        run = consumer.verifier.current_run
        if run is not None:
            consumer.decoder.fail(
                error
                or HttpError(
                    "http.cancelled",
                    f"the client stopped reading run {run.run_id!r} before it ended",
                    url=self.url,
                )
            )

    def settle(self) -> None:
        """Fold the run into the thread (see the module notes); the thread is idle again."""
        thread = self.thread
        thread._busy = False
        consumer = self.consumer
        if consumer is None:
            return
        thread._generation += 1
        verifier = consumer.verifier
        thread.runs += verifier.runs
        thread.diagnostics += consumer.diagnostics
        if self.adopted:
            thread.conversation = consumer.conversation
            thread.interrupts = OpenInterrupts.of(consumer)

    @property
    def adopted(self) -> bool:
        """Whether the run's conversation is the thread's (a stream that ended cleanly)."""
        consumer = self.consumer
        return (
            consumer is not None
            and consumer.failure is None
            and bool(consumer.verifier.runs)
            and consumer.verifier.current_run is None
        )

    def result(self) -> RunResult:
        """What the settled run came to (see :class:`RunResult`).

        Raises:
            UsageError: ``http.no-result``: the run's stream did not end cleanly (its
                error was raised from the iteration).
        """
        consumer = self.consumer
        if consumer is None or not self.adopted or self.thread._busy:
            raise UsageError("http.no-result", "the run did not end cleanly: it has no result")
        known = {message.id for message in self.local_input.messages}
        conversation = consumer.conversation
        return RunResult(
            record=consumer.verifier.runs[-1],
            new_messages=tuple(m for m in conversation.messages if m.id not in known),
            state=conversation.state_json(),
            interrupts=self.thread.interrupts,
            diagnostics=tuple(consumer.diagnostics),
        )


def _as_message(message: object) -> Message:
    """A new message: a typed message as it is, text as a new user message."""
    if isinstance(message, str):
        return UserMessage(id=str(uuid.uuid4()), content=message)
    if not isinstance(message, _MESSAGE_CLASSES):
        raise UsageError(
            "http.message", f"a new message is a Message or text, not {describe(message)}"
        )
    return cast(Message, message)


def _check_new_ids(messages: Sequence[Message], added: Sequence[Message]) -> None:
    """Refuse a new message whose id the conversation (or another new one) has."""
    seen = {message.id for message in messages}
    for message in added:
        if message.id in seen:
            raise UsageError(
                "http.duplicate-id", f"a message with the id {message.id!r} is in the thread"
            )
        seen.add(message.id)


def _local_input(base: Conversation, run_input: RunAgentInput) -> RunAgentInput:
    """``run_input`` with every message of ``base`` (activities included) in the
    conversation's order, then the input's messages ``base`` lacks."""
    messages: list[Message] = list(base.messages)
    known = {message.id for message in messages}
    messages += [message for message in run_input.messages if message.id not in known]
    return attrs.evolve(run_input, messages=messages)


@contextmanager
def running(exchange: Exchange) -> Iterator[list[BaseException]]:
    """One run's stream, from :meth:`~Exchange.begin` to :meth:`~Exchange.settle`.

    Gives the list where the stream's reader puts the transport failure behind a
    truncation (the cause of the error it ends with). A stream that stops early
    cancels the run: for its error, or for a ``break``, a cancelled task, a
    ``KeyboardInterrupt``, ...
    """
    exchange.begin()
    cause: list[BaseException] = []
    try:
        yield cause
    except AgentProtoError as error:
        if cause and error.__cause__ is None:
            error.__cause__ = cause[0]
        exchange.cancel(error)
        raise
    except BaseException:
        exchange.cancel(None)
        raise
    finally:
        exchange.settle()
