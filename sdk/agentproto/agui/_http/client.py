"""Run an AG-UI agent over HTTP with httpx: :class:`HttpAgent` (sync) and :class:`AsyncHttpAgent`.

The I/O edge around :mod:`agentproto.agui._thread.exchange` (which keeps the thread and judges each
answer): POST the run input as JSON with ``Accept: text/event-stream`` (or
JSON Lines), feed the response's bytes through a :class:`Consumer`, translate
httpx's failures into the SDK's errors. httpx is imported here and only here:
it is the ``agentproto[http]`` extra, and ``agentproto.agui`` imports this
module on first use of a name it defines.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Iterator, Mapping, Sequence
from contextlib import aclosing, suppress
from typing import Any, Final, Generic, TypeVar, cast

import httpx

from agentproto._core.errors import (
    AgentProtoError,
    HttpError,
    HttpStatusError,
    HttpTimeoutError,
    UsageError,
)
from agentproto._core.json.codec import loads
from agentproto.agui._consume.consumer import Consumer
from agentproto.agui._consume.decoder import Middleware
from agentproto.agui._consume.stream import aiter_events, iter_events
from agentproto.agui._generated import Event, Message
from agentproto.agui._history.history import History
from agentproto.agui._http.reconnect import DEFAULT_RECONNECT, Reconnect, Resumption
from agentproto.agui._protocol.encoding import SSE_CONTENT_TYPE, Transport
from agentproto.agui._reduce.conversation import Conversation
from agentproto.agui._thread.exchange import (
    ERROR_BODY_BYTES,
    AgentThread,
    Exchange,
    RunResult,
    running,
)

__all__ = ["DEFAULT_TIMEOUT", "AsyncHttpAgent", "HttpAgent"]

DEFAULT_TIMEOUT: Final = httpx.Timeout(60.0, connect=10.0)
"""10 s to connect, 60 s for each read (and write, and a pooled connection)."""

SSE_MEDIA: Final = SSE_CONTENT_TYPE.split(";", 1)[0]

_Client = TypeVar("_Client", httpx.Client, httpx.AsyncClient)

_TIMEOUTS: Final = (
    (httpx.ConnectTimeout, "http.connect-timeout", "connect", "could not connect to {url}"),
    (httpx.ReadTimeout, "http.read-timeout", "read", "no bytes from {url}"),
    (httpx.WriteTimeout, "http.write-timeout", "write", "could not send the request to {url}"),
    (httpx.PoolTimeout, "http.pool-timeout", "pool", "no free connection to {url}"),
)


class _HttpBase(AgentThread, Generic[_Client]):
    """What both clients share: the options, the request, the translation of errors."""

    _new_client: Callable[[], _Client]

    def __init__(
        self,
        url: str,
        *,
        thread_id: str | None = None,
        conversation: Conversation | None = None,
        headers: Mapping[str, str] | None = None,
        timeout: float | httpx.Timeout | None = DEFAULT_TIMEOUT,
        client: _Client | None = None,
        transport: Transport = "sse",
        run_timeout: float | None = None,
        middleware: Callable[[], Sequence[Middleware]] | None = None,
        consumer_options: Mapping[str, Any] | None = None,
        reconnect: Reconnect | None = DEFAULT_RECONNECT,
    ) -> None:
        try:
            httpx.URL(url)
        except (httpx.InvalidURL, TypeError) as exc:
            raise UsageError("http.url", f"not a URL: {url!r} ({exc})") from exc
        super().__init__(
            url,
            thread_id=thread_id,
            conversation=conversation,
            transport=transport,
            run_timeout=run_timeout,
            middleware=middleware,
            consumer_options=consumer_options or {},
        )
        self._headers = httpx.Headers(headers or {})
        self._timeout = httpx.Timeout(timeout)
        self._owns_client = client is None
        self._client: _Client = client if client is not None else type(self)._new_client()
        if reconnect is not None and not isinstance(reconnect, Reconnect):
            raise UsageError(
                "http.reconnect", f"reconnect must be a Reconnect or None: {reconnect!r}"
            )
        self._reconnect = reconnect

    def _request(self, exchange: Exchange, last_event_id: str | None = None) -> httpx.Request:
        headers = httpx.Headers(self._headers)
        headers.update(exchange.headers())
        if last_event_id is not None:
            headers["last-event-id"] = last_event_id
        return self._client.build_request(
            "POST", self.url, content=exchange.body, headers=headers, timeout=self._timeout
        )

    def _thread_request(self) -> httpx.Request:
        return self._client.build_request(
            "GET",
            self.url,
            params={"threadId": self.thread_id},
            headers=httpx.Headers(self._headers),
            timeout=self._timeout,
        )

    def _loaded(self, response: httpx.Response) -> History:
        """The thread a ``GET ?threadId=`` answered, restored (raises for a refusal)."""
        raw = response.content
        if not response.is_success:
            text = raw[:ERROR_BODY_BYTES].decode("utf-8", "replace")
            try:
                body = loads(raw) if "json" in response.headers.get("content-type", "") else None
            except AgentProtoError:
                body = None
            raise HttpStatusError(
                response.status_code, response.reason_phrase, url=self.url, body=body, text=text
            )
        history = History.from_json(loads(raw))
        self.restore(history)
        return history

    def restore(self, history: History) -> None:
        """Make the thread what ``history`` records (what :meth:`load_thread` fetches;
        any History of this thread will do): each run is folded from its
        ``RUN_STARTED``'s ``input`` plus what the thread held before it (activities,
        which no run input carries, stay where they were), as the client folded it
        when it ran; the conversation, runs, diagnostics and open interrupts become
        what the last run leaves. Nothing changes when it raises.

        Raises:
            UsageError: a run is in progress (``http.run-in-progress``), or a run is
                of another thread (``http.thread-mismatch``).
            AgentProtoError: a recorded run breaks a rule (the consumer's error).
        """
        self._restore([run.events for run in history.runs])

    def _error(self, exc: httpx.HTTPError) -> AgentProtoError:
        """The SDK error for an httpx failure."""
        for kind, code, phase, what in _TIMEOUTS:
            if isinstance(exc, kind):
                limit = getattr(self._timeout, phase)
                return HttpTimeoutError(
                    code,
                    f"{what.format(url=self.url)} within the {phase} timeout of {limit}s",
                    url=self.url,
                    timeout=limit,
                )
        if isinstance(exc, httpx.ConnectError):
            return HttpError(
                "http.connect-failed", f"could not connect to {self.url}: {exc}", url=self.url
            )
        return HttpError(
            "http.network",
            f"the exchange with {self.url} failed: {type(exc).__name__}: {exc}",
            url=self.url,
        )

    def _opened(self, exchange: Exchange, response: httpx.Response) -> Consumer:
        """The consumer for a 2xx answer (raises for a type that is not a stream)."""
        return exchange.open(
            response.status_code, response.reason_phrase, response.headers.get("content-type")
        )

    def _refused(self, exchange: Exchange, response: httpx.Response, raw: bytes) -> HttpStatusError:
        """The error for a non-2xx answer whose body starts with ``raw``."""
        return exchange.status_error(
            response.status_code, response.reason_phrase, response.headers, raw
        )

    def _resumption(self, exchange: Exchange, response: httpx.Response) -> Resumption | None:
        """What resumes an SSE answer after a break (``None``: it is not resumed)."""
        media = response.headers.get("content-type", "").split(";", 1)[0].strip().lower()
        if self._reconnect is None or not self._reconnect.attempts or media != SSE_MEDIA:
            return None
        return Resumption(exchange, self._reconnect)

    def _resumed(
        self, exchange: Exchange, resumption: Resumption, response: httpx.Response
    ) -> bool:
        """Whether a reconnection's answer is the stream's rest (``False``: retry);
        raises for a refusal."""
        if response.is_success:
            return True
        if resumption.retryable(response.status_code):
            return False
        raise self._refused(exchange, response, b"")

    def _broke(self, exchange: Exchange, exc: httpx.HTTPError, cause: list[BaseException]) -> None:
        """The stream broke with ``exc``: returns (the stream then ends) when every run
        had ended, or when the consumer's close will say it was truncated; raises a
        timeout."""
        cause.append(exc)
        error = self._error(exc)
        if not exchange.lost(error) and isinstance(error, HttpTimeoutError):
            raise error from exc


def _generator(events: AsyncIterator[Event]) -> AsyncGenerator[Event, None]:
    """``aiter_events``'s iterator as what it is, an async generator (closable)."""
    return cast(AsyncGenerator[Event, None], events)


class HttpAgent(_HttpBase[httpx.Client]):
    """Run an AG-UI agent over HTTP, one thread, run after run (sync, httpx).

    Each :meth:`run` POSTs the thread's next run input and yields the verified,
    typed events as they arrive; the thread's :attr:`conversation` (messages,
    activities, state), :attr:`runs` and :attr:`diagnostics` carry over to the
    next run. Only a run whose stream ended cleanly (a run ending in RUN_ERROR
    included) changes :attr:`conversation`; after a failure, a timeout or a
    cancellation it is the conversation from before that run, the failed run's
    record is the last of :attr:`runs` and :attr:`last_consumer` holds the partial
    fold.

    Args:
        url: the agent's endpoint (``agent_app`` answers at any path).
        thread_id: the thread's id; a new UUID by default.
        conversation: the conversation so far (copied in by the first run's
            input); empty by default.
        headers: request headers to send with every run (``authorization``, ...);
            ``content-type`` and ``accept`` are the client's.
        timeout: seconds, or an ``httpx.Timeout`` (connect, read, write, pool),
            applied to every run; ``None`` waits forever. The read timeout is the
            longest silence accepted mid-stream.
        client: an ``httpx.Client`` to reuse (its pool, proxies, TLS, auth); it is
            not closed by :meth:`close`. By default the agent makes its own.
        transport: ``"sse"`` (``Accept: text/event-stream``) or ``"jsonl"`` (asks
            for ``application/jsonl``, accepting SSE). The answer's
            ``content-type`` decides how it is read.
        run_timeout: the longest a whole run may stream, in seconds (checked as
            bytes arrive; the read timeout covers silence); ``None``: no limit.
        middleware: called at each run for that stream's middleware (for example
            ``lambda: [quirks.LangGraphRunId()]``): a repair object serves one stream.
        consumer_options: other :class:`~agentproto.agui.Consumer` keywords for
            each run (limits, versions).
        reconnect: how a broken SSE stream is resumed (:class:`~agentproto.agui.Reconnect`):
            when the server gives its frames cursors (``agent_app(log=...)``) and the
            connection breaks (or ends) before the run ended, the same request is sent
            again with ``Last-Event-ID`` and the stream goes on after the last frame
            seen, each event handed out once; a stream without cursors is never
            resumed. ``None``: never reconnect.

    Attributes:
        url: the agent's URL.
        thread_id: the thread every run belongs to.
        conversation: what the thread's runs built (messages, activities, state);
            the next run starts from it.
        runs: every run's :class:`~agentproto.agui.RunRecord`, in order, failed and
            cancelled ones included.
        diagnostics: every tolerated problem of every run, in order.
        last_consumer: the latest run's :class:`~agentproto.agui.Consumer`.
        interrupts: what the last completed run left open
            (:class:`~agentproto.agui.OpenInterrupts`): the next run must answer
            each (``agent.interrupts.resolve(id, payload)`` or ``.cancel(id)``, then
            ``run(..., resume=agent.interrupts)``); a run that leaves one unanswered
            is refused with ``UsageError("resume.uncovered")`` naming the ids, before
            anything is sent.

    Raises:
        UsageError: a bad URL or option.

    Example::

        with HttpAgent("http://127.0.0.1:8000/agent") as agent:
            for event in agent.run("What is AG-UI?"):
                print(event.type)
            agent.conversation.messages  # the question, the answer, ...
            result = agent.run_to_end("And ACP?")  # the whole run, in one call
            result.new_messages  # the answer
    """

    _new_client = httpx.Client

    def run(
        self, *messages: Message | str, run_id: str | None = None, **options: Any
    ) -> Iterator[Event]:
        """Run the agent once; yields the run's verified events as they arrive.

        The input is built (and checked) at once, before anything is sent; the
        request goes out when iteration starts. Leaving the loop early (``break``)
        closes the response and cancels the run (see the class notes).

        Args:
            *messages: new messages for this run, appended to the conversation:
                typed messages, or text for a user message.
            run_id: the run's id; a new UUID by default.
            **options: passed to :func:`~agentproto.agui.next_run_input`
                (``tools``, ``context``, ``forwarded_props``, ``resume``,
                ``parent_run_id``, ``protocol_version``, ``state``, ...). The input
                is held to what the thread knows by default: its last run's open
                interrupts, calls to the tools the previous run's input declared
                (answer them with ``tool_results``); ``check=False`` opts out.

        Raises:
            UsageError: a run of this thread is in progress, a bad option, or a
                ``resume`` that leaves an interrupt the last run left open unanswered
                (``resume.uncovered``, naming the ids; ``resume.*`` for the other
                resume rules), or a call to the client's tools left unanswered
                (``toolcall.unanswered``), raised by this call.
            SchemaError: the input does not match the schema (raised by this call).
            HttpStatusError: the agent answered with a non-2xx status.
            ProtocolError: ``http.content-type`` (not a stream), ``stream.truncated``
                (the stream ended, or the connection broke, before the run
                ended), or a rule of the protocol the stream broke.
            HttpTimeoutError: a connect, read, write or pool timeout, or
                ``run_timeout``, before the run ended.
            HttpError: the connection failed.
        """
        return self._stream(self._prepare(messages, run_id, options))

    def run_to_end(
        self, *messages: Message | str, run_id: str | None = None, **options: Any
    ) -> RunResult:
        """Run the agent once, to the end of its stream; returns what the run came to.

        :meth:`run` iterated to its end, in one call: the Python form of the
        TypeScript client's ``runAgent()``, which resolves to the run's new messages
        and result. Named for what it does to :meth:`run` (the same run, driven to
        the end) rather than with a second verb that would say nothing of how the
        two differ; the events are folded into the thread as :meth:`run` folds them.

        Args:
            *messages: as for :meth:`run`.
            run_id: as for :meth:`run`.
            **options: as for :meth:`run` (``resume=agent.interrupts`` answers
                what the last run left open).

        Returns:
            The :class:`~agentproto.agui.RunResult`: the run's record and status,
            ``new_messages``, ``state``, ``result``, the ``interrupts`` left open.
            An agent's ``RUN_ERROR`` is a result (``status == "failed"``), not an
            exception.

        Raises:
            UsageError, SchemaError, HttpStatusError, ProtocolError, HttpTimeoutError,
            HttpError: as for :meth:`run`; ``resume.uncovered`` (raised before
                anything is sent) when the thread's last run left an interrupt open
                that ``resume`` does not answer.

        Example::

            result = agent.run_to_end("What is AG-UI?")
            result.status, [m.content for m in result.new_messages]
        """
        exchange = self._prepare(messages, run_id, options)
        for _ in self._stream(exchange):
            pass
        return exchange.result()

    def _stream(self, exchange: Exchange) -> Iterator[Event]:
        with running(exchange) as cause:
            try:
                response = self._client.send(self._request(exchange), stream=True)
            except httpx.HTTPError as exc:
                raise self._error(exc) from exc
            try:
                consumer = self._open(exchange, response)
                yield from iter_events(self._chunks(exchange, response, cause), consumer=consumer)
            finally:
                response.close()

    def _open(self, exchange: Exchange, response: httpx.Response) -> Consumer:
        if response.is_success:
            return self._opened(exchange, response)
        raw = b""
        with suppress(httpx.HTTPError):  # what arrived is what the error shows
            for chunk in response.iter_bytes():
                raw += chunk
                if len(raw) >= ERROR_BODY_BYTES:
                    break
        raise self._refused(exchange, response, raw)

    def _chunks(
        self, exchange: Exchange, response: httpx.Response, cause: list[BaseException]
    ) -> Iterator[bytes]:
        resumption = self._resumption(exchange, response)
        current: httpx.Response | None = response
        try:
            while current is not None:
                error: httpx.HTTPError | None = None
                try:
                    for chunk in current.iter_bytes():
                        yield chunk if resumption is None else resumption.forward(chunk)
                        if exchange.late():
                            return
                except httpx.HTTPError as exc:
                    error = exc
                current.close()
                current = None
                while resumption is not None and resumption.resume():
                    time.sleep(resumption.backoff())
                    request = self._request(exchange, resumption.last_event_id)
                    try:
                        current = self._client.send(request, stream=True)
                    except httpx.HTTPError as exc:
                        error = exc
                        continue
                    if self._resumed(exchange, resumption, current):
                        break
                    current.close()
                    current = None
                if current is None and error is not None:
                    self._broke(exchange, error, cause)
        finally:
            if current is not None:
                current.close()

    def load_thread(self) -> History:
        """Restore the thread from the agent's record of it (after a page reload: the
        thread id is all the client kept): ``GET ?threadId=...``, answered by an
        :func:`~agentproto.agui.agent_app` with a thread store, then
        :meth:`restore`. Returns the :class:`~agentproto.agui.History` it read.

        Raises:
            HttpStatusError: the agent refused (404 ``unknown-thread``: it recorded no
                run of the thread).
            HttpError: the exchange failed.
            AgentProtoError: the record is not a History (``DecodeError``,
                ``SchemaError``) or breaks a rule.
        """
        try:
            response = self._client.send(self._thread_request())
        except httpx.HTTPError as exc:
            raise self._error(exc) from exc
        return self._loaded(response)

    def close(self) -> None:
        """Close the client the agent made (a client given to it stays open)."""
        if self._owns_client:
            self._client.close()

    def __enter__(self) -> HttpAgent:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


class AsyncHttpAgent(_HttpBase[httpx.AsyncClient]):
    """:class:`HttpAgent` for asyncio (``httpx.AsyncClient``); the same arguments.

    ``run()`` returns an async iterator. Cancelling the task that iterates it
    closes the response and cancels the run; to leave the loop early, iterate
    inside ``contextlib.aclosing(agent.run(...))`` so that the response closes at
    once (an async generator left unclosed is closed only when collected).
    """

    _new_client = httpx.AsyncClient

    def run(
        self, *messages: Message | str, run_id: str | None = None, **options: Any
    ) -> AsyncIterator[Event]:
        """Run the agent once; see :meth:`HttpAgent.run`."""
        return self._stream(self._prepare(messages, run_id, options))

    async def run_to_end(
        self, *messages: Message | str, run_id: str | None = None, **options: Any
    ) -> RunResult:
        """Run the agent once, to the end of its stream; see :meth:`HttpAgent.run_to_end`.

        Cancelling the awaiting task closes the response and cancels the run, as
        for :meth:`run`.
        """
        exchange = self._prepare(messages, run_id, options)
        async with aclosing(_generator(self._stream(exchange))) as events:
            async for _ in events:
                pass
        return exchange.result()

    async def _stream(self, exchange: Exchange) -> AsyncIterator[Event]:
        with running(exchange) as cause:
            try:
                request = self._request(exchange)
                response = await self._client.send(request, stream=True)
            except httpx.HTTPError as exc:
                raise self._error(exc) from exc
            try:
                consumer = await self._open(exchange, response)
                async with (
                    aclosing(self._chunks(exchange, response, cause)) as chunks,
                    aclosing(_generator(aiter_events(chunks, consumer=consumer))) as events,
                ):
                    async for event in events:
                        yield event
            finally:
                await response.aclose()

    async def _open(self, exchange: Exchange, response: httpx.Response) -> Consumer:
        if response.is_success:
            return self._opened(exchange, response)
        raw = b""
        with suppress(httpx.HTTPError):  # what arrived is what the error shows
            async for chunk in response.aiter_bytes():
                raw += chunk
                if len(raw) >= ERROR_BODY_BYTES:
                    break
        raise self._refused(exchange, response, raw)

    async def _chunks(
        self, exchange: Exchange, response: httpx.Response, cause: list[BaseException]
    ) -> AsyncGenerator[bytes, None]:
        resumption = self._resumption(exchange, response)
        current: httpx.Response | None = response
        try:
            while current is not None:
                error: httpx.HTTPError | None = None
                try:
                    async for chunk in current.aiter_bytes():
                        yield chunk if resumption is None else resumption.forward(chunk)
                        if exchange.late():
                            return
                except httpx.HTTPError as exc:
                    error = exc
                await current.aclose()
                current = None
                while resumption is not None and resumption.resume():
                    await asyncio.sleep(resumption.backoff())
                    request = self._request(exchange, resumption.last_event_id)
                    try:
                        current = await self._client.send(request, stream=True)
                    except httpx.HTTPError as exc:
                        error = exc
                        continue
                    if self._resumed(exchange, resumption, current):
                        break
                    await current.aclose()
                    current = None
                if current is None and error is not None:
                    self._broke(exchange, error, cause)
        finally:
            if current is not None:
                await current.aclose()

    async def load_thread(self) -> History:
        """As :meth:`HttpAgent.load_thread`."""
        try:
            response = await self._client.send(self._thread_request())
        except httpx.HTTPError as exc:
            raise self._error(exc) from exc
        return self._loaded(response)

    async def aclose(self) -> None:
        """Close the client the agent made (a client given to it stays open)."""
        if self._owns_client:
            await self._client.aclose()

    async def __aenter__(self) -> AsyncHttpAgent:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()
